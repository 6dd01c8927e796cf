//! ddl: create, alter, describe, enable, disable, drop, exists, list, truncate.

use basalt_model::split::{parse_splits_file, SplitAlgorithm};
use basalt_model::{ColumnFamilyDescriptor, TableDescriptor, TableName};
use bytes::Bytes;

use super::schema::{apply_family_option, apply_table_option, family_line, table_line};
use crate::args::{get, int, key_name, list as value_list, Args};
use crate::parser::Value;
use crate::{Returned, Shell, ShellError};

/// A family from a hash with NAME, or a bare name.
fn family_spec(
    v: &Value,
    base: Option<&ColumnFamilyDescriptor>,
) -> Result<ColumnFamilyDescriptor, ShellError> {
    let Value::Hash(pairs) = v else {
        let name = crate::args::to_bytes(v, "family")?;
        return Ok(ColumnFamilyDescriptor::new(name));
    };
    let name = get(pairs, "NAME").ok_or_else(|| ShellError::usage("a family needs a NAME"))?;
    let mut f = base
        .cloned()
        .unwrap_or_else(|| ColumnFamilyDescriptor::new(name.to_s()));
    for (k, v) in pairs {
        let key = key_name(k);
        if key != "NAME" && key != "METHOD" && !apply_family_option(&mut f, &key, v)? {
            f.metadata.insert(key, v.to_s());
        }
    }
    Ok(f)
}

fn has_name(v: &Value) -> bool {
    matches!(v, Value::Hash(p) if get(p, "NAME").is_some())
}

/// Split keys from SPLITS, SPLITS_FILE or NUMREGIONS with SPLITALGO.
fn split_keys(opts: &[(Value, Value)]) -> Result<Vec<Bytes>, ShellError> {
    if let Some(v) = get(opts, "SPLITS") {
        return Ok(value_list(v, "SPLITS")?
            .into_iter()
            .map(Bytes::from)
            .collect());
    }
    if let Some(v) = get(opts, "SPLITS_FILE") {
        let path = v.to_s();
        let text = std::fs::read_to_string(&path)
            .map_err(|e| ShellError::usage(format!("cannot read the splits file {path}: {e}")))?;
        return Ok(parse_splits_file(&text));
    }
    if let Some(n) = get(opts, "NUMREGIONS") {
        let n = u32::try_from(int(n, "NUMREGIONS")?)
            .map_err(|_| ShellError::usage("bad NUMREGIONS"))?;
        let algo: SplitAlgorithm = get(opts, "SPLITALGO")
            .ok_or_else(|| ShellError::usage("NUMREGIONS needs a SPLITALGO"))?
            .to_s()
            .parse()
            .map_err(ShellError::Model)?;
        return algo.split(n).map_err(ShellError::Model);
    }
    Ok(Vec::new())
}

pub fn create(sh: &mut Shell<'_>, mut a: Args) -> Result<Returned, ShellError> {
    let name = a.table()?;
    let mut desc = TableDescriptor::new(&name, []);
    let mut splits = Vec::new();
    for v in a.rest() {
        if has_name(&v) || !matches!(v, Value::Hash(_)) {
            desc.add_family(family_spec(&v, None)?)?;
            continue;
        }
        let Value::Hash(opts) = &v else { continue };
        splits.extend(split_keys(opts)?);
        for (k, v) in opts {
            let key = key_name(k);
            let known =
                ["SPLITS", "SPLITS_FILE", "NUMREGIONS", "SPLITALGO"].contains(&key.as_str());
            if !known && !apply_table_option(&mut desc, &key, v)? {
                desc.metadata.insert(key, v.to_s());
            }
        }
    }
    if desc.families.is_empty() {
        return Err(ShellError::usage(
            "Table should have at least one column family.",
        ));
    }
    sh.admin().create_table(desc, &splits)?;
    sh.println(format!("Created table {name}"))?;
    Ok(Returned::Table(name))
}

pub fn alter(sh: &mut Shell<'_>, mut a: Args) -> Result<Returned, ShellError> {
    let name = a.table()?;
    let mut desc = sh.admin().describe(&name)?;
    for v in a.rest() {
        alter_one(&mut desc, &v)?;
    }
    let regions = sh.admin().regions(&name).map_or(1, |r| r.len());
    sh.admin().modify_table(desc)?;
    sh.println("Updating all regions with the new schema...")?;
    sh.println(format!("{regions}/{regions} regions updated."))?;
    sh.println("Done.")?;
    Ok(Returned::Nothing)
}

/// One alteration: a family added or changed, a family deleted, table attributes.
fn alter_one(desc: &mut TableDescriptor, v: &Value) -> Result<(), ShellError> {
    let Value::Hash(pairs) = v else {
        let f = family_spec(v, None)?;
        desc.families.entry(f.name.clone()).or_insert(f);
        return Ok(());
    };
    let method = get(pairs, "METHOD").map(Value::to_s);
    if let Some(family) = get(pairs, "delete") {
        return delete_family(desc, family);
    }
    match (method.as_deref(), get(pairs, "NAME")) {
        (Some("delete"), Some(family)) => delete_family(desc, family),
        (Some("table_att_unset"), Some(attr)) => {
            let fresh = TableDescriptor::new(&desc.table_name(), []);
            match attr.to_s().as_str() {
                "MAX_FILESIZE" => desc.max_filesize_bytes = fresh.max_filesize_bytes,
                "MEMSTORE_FLUSHSIZE" => {
                    desc.memstore_flushsize_bytes = fresh.memstore_flushsize_bytes;
                }
                "DURABILITY" => desc.durability = fresh.durability,
                other => {
                    desc.metadata.remove(other);
                }
            }
            Ok(())
        }
        (Some("table_conf_unset"), Some(key)) => {
            desc.configuration.remove(&key.to_s());
            Ok(())
        }
        (_, Some(family)) => {
            let key = Bytes::from(family.to_s());
            let f = family_spec(v, desc.families.get(&key))?;
            desc.families.insert(f.name.clone(), f);
            Ok(())
        }
        (_, None) => {
            for (k, v) in pairs {
                let key = key_name(k);
                if key != "METHOD" && !apply_table_option(desc, &key, v)? {
                    desc.metadata.insert(key, v.to_s());
                }
            }
            Ok(())
        }
    }
}

fn delete_family(desc: &mut TableDescriptor, family: &Value) -> Result<(), ShellError> {
    let key = Bytes::from(family.to_s());
    if desc.families.remove(&key).is_none() {
        return Err(ShellError::Model(basalt_model::Error::NoSuchColumnFamily {
            table: desc.table_name().to_string(),
            family: family.to_s(),
        }));
    }
    Ok(())
}

pub fn describe(sh: &mut Shell<'_>, mut a: Args) -> Result<Returned, ShellError> {
    let name = a.table()?;
    let desc = sh.admin().describe(&name)?;
    let enabled = sh.admin().is_enabled(&name).unwrap_or(true);
    let state = if enabled { "ENABLED" } else { "DISABLED" };
    sh.println(format!("Table {name} is {state}"))?;
    sh.println(table_line(&desc))?;
    sh.println("COLUMN FAMILIES DESCRIPTION")?;
    for f in desc.families.values() {
        sh.println(family_line(f))?;
        sh.println("")?;
    }
    sh.println(format!("{} row(s)", desc.families.len()))?;
    sh.println("Quota is disabled")?;
    Ok(Returned::Nothing)
}

pub fn enable(sh: &mut Shell<'_>, mut a: Args) -> Result<Returned, ShellError> {
    let name = a.table()?;
    sh.admin().enable_table(&name)?;
    Ok(Returned::Nothing)
}

pub fn disable(sh: &mut Shell<'_>, mut a: Args) -> Result<Returned, ShellError> {
    let name = a.table()?;
    sh.admin().disable_table(&name)?;
    Ok(Returned::Nothing)
}

pub fn drop(sh: &mut Shell<'_>, mut a: Args) -> Result<Returned, ShellError> {
    let name = a.table()?;
    sh.admin().delete_table(&name)?;
    Ok(Returned::Nothing)
}

pub fn exists(sh: &mut Shell<'_>, mut a: Args) -> Result<Returned, ShellError> {
    let name = a.table()?;
    let yes = sh.admin().table_exists(&name)?;
    let does = if yes { "does" } else { "does not" };
    sh.println(format!("Table {name} {does} exist"))?;
    Ok(Returned::Value(yes.to_string()))
}

fn enabled_state(sh: &Shell<'_>, a: &mut Args) -> Result<bool, ShellError> {
    let name = a.table()?;
    Ok(sh.admin().is_enabled(&name)?)
}

pub fn is_enabled(sh: &mut Shell<'_>, mut a: Args) -> Result<Returned, ShellError> {
    let yes = enabled_state(sh, &mut a)?;
    sh.println(yes.to_string())?;
    Ok(Returned::Value(yes.to_string()))
}

pub fn is_disabled(sh: &mut Shell<'_>, mut a: Args) -> Result<Returned, ShellError> {
    let yes = !enabled_state(sh, &mut a)?;
    sh.println(yes.to_string())?;
    Ok(Returned::Value(yes.to_string()))
}

pub fn get_table(sh: &mut Shell<'_>, mut a: Args) -> Result<Returned, ShellError> {
    let name = a.table()?;
    if !sh.admin().table_exists(&name)? {
        return Err(basalt_model::Error::TableNotFound(name.to_string()).into());
    }
    Ok(Returned::Table(name))
}

pub fn list(sh: &mut Shell<'_>, mut a: Args) -> Result<Returned, ShellError> {
    let pattern = if a.is_empty() {
        None
    } else {
        Some(a.string("pattern")?)
    };
    let names = sh.admin().list_tables(pattern.as_deref())?;
    print_tables(sh, &names)
}

/// The `TABLE` listing of `list` and `list_namespace_tables`, returning the names as a
/// Ruby array.
pub fn print_tables(sh: &mut Shell<'_>, names: &[String]) -> Result<Returned, ShellError> {
    sh.println("TABLE")?;
    for n in names {
        sh.println(n)?;
    }
    sh.println(format!("{} row(s)", names.len()))?;
    let quoted: Vec<String> = names.iter().map(|n| format!("\"{n}\"")).collect();
    Ok(Returned::Value(format!("[{}]", quoted.join(", "))))
}

fn truncate_with(
    sh: &mut Shell<'_>,
    name: &TableName,
    preserve: bool,
) -> Result<Returned, ShellError> {
    sh.println(format!("Truncating '{name}' table (it may take a while):"))?;
    if sh.admin().is_enabled(name)? {
        sh.println("Disabling table...")?;
        sh.admin().disable_table(name)?;
    }
    sh.println("Truncating table...")?;
    sh.admin().truncate_table(name, preserve)?;
    Ok(Returned::Nothing)
}

pub fn truncate(sh: &mut Shell<'_>, mut a: Args) -> Result<Returned, ShellError> {
    let name = a.table()?;
    truncate_with(sh, &name, false)
}

pub fn truncate_preserve(sh: &mut Shell<'_>, mut a: Args) -> Result<Returned, ShellError> {
    let name = a.table()?;
    truncate_with(sh, &name, true)
}
