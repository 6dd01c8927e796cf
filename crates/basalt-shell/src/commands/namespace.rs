//! namespace: create, drop, alter, describe, list, list tables.

use std::collections::BTreeMap;

use crate::args::{get, key_name, Args};
use crate::{Returned, Shell, ShellError};

pub fn create(sh: &mut Shell<'_>, mut a: Args) -> Result<Returned, ShellError> {
    let name = a.string("namespace")?;
    let props: BTreeMap<String, String> = a
        .opt_hash()
        .iter()
        .map(|(k, v)| (key_name(k), v.to_s()))
        .collect();
    a.done()?;
    sh.admin().create_namespace(&name, props)?;
    Ok(Returned::Nothing)
}

pub fn drop(sh: &mut Shell<'_>, mut a: Args) -> Result<Returned, ShellError> {
    let name = a.string("namespace")?;
    a.done()?;
    sh.admin().drop_namespace(&name)?;
    Ok(Returned::Nothing)
}

pub fn alter(sh: &mut Shell<'_>, mut a: Args) -> Result<Returned, ShellError> {
    let name = a.string("namespace")?;
    let h = a.opt_hash();
    a.done()?;
    let method = get(&h, "METHOD").map(crate::parser::Value::to_s);
    match method.as_deref() {
        Some("set") => {
            let set = h
                .iter()
                .filter(|(k, _)| key_name(k) != "METHOD")
                .map(|(k, v)| (key_name(k), v.to_s()))
                .collect();
            sh.admin().alter_namespace(&name, set, &[])?;
        }
        Some("unset") => {
            let key = get(&h, "NAME")
                .ok_or_else(|| ShellError::usage("unset needs the NAME of the property"))?
                .to_s();
            sh.admin().alter_namespace(&name, BTreeMap::new(), &[key])?;
        }
        _ => {
            return Err(ShellError::usage(
                "Unknown method: use METHOD => 'set' or 'unset'",
            ))
        }
    }
    Ok(Returned::Nothing)
}

pub fn describe(sh: &mut Shell<'_>, mut a: Args) -> Result<Returned, ShellError> {
    let name = a.string("namespace")?;
    a.done()?;
    let props = sh.admin().namespace_properties(&name)?;
    let mut parts = vec![format!("NAME => '{name}'")];
    parts.extend(props.iter().map(|(k, v)| format!("{k} => '{v}'")));
    sh.println("DESCRIPTION")?;
    sh.println(format!("{{{}}}", parts.join(", ")))?;
    sh.println("Quota is disabled")?;
    Ok(Returned::Nothing)
}

pub fn list(sh: &mut Shell<'_>, a: Args) -> Result<Returned, ShellError> {
    a.done()?;
    let names = sh.admin().list_namespaces()?;
    sh.println("NAMESPACE")?;
    for n in &names {
        sh.println(n)?;
    }
    sh.println(format!("{} row(s)", names.len()))?;
    Ok(Returned::Nothing)
}

pub fn list_tables(sh: &mut Shell<'_>, mut a: Args) -> Result<Returned, ShellError> {
    let ns = a.string("namespace")?;
    a.done()?;
    let names = sh.admin().list_namespace_tables(&ns)?;
    super::ddl::print_tables(sh, &names)
}
