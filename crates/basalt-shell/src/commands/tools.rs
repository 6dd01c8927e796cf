//! general and tools: status, version, whoami, flush, compact, split, merge_region, regions.

use basalt_api::RegionReport;
use basalt_model::bytes_fmt::to_string_binary;
use basalt_model::TableName;

use crate::args::{to_bytes, Args};
use crate::parser::Value;
use crate::{Returned, Shell, ShellError};

/// The filter-language names, in the order HBase's `show_filters` prints them.
pub const FILTERS: [&str; 19] = [
    "DependentColumnFilter",
    "KeyOnlyFilter",
    "ColumnCountGetFilter",
    "SingleColumnValueFilter",
    "PrefixFilter",
    "SingleColumnValueExcludeFilter",
    "FirstKeyOnlyFilter",
    "ColumnRangeFilter",
    "ColumnValueFilter",
    "TimestampsFilter",
    "FamilyFilter",
    "QualifierFilter",
    "ColumnPrefixFilter",
    "RowFilter",
    "MultipleColumnPrefixFilter",
    "InclusiveStopFilter",
    "PageFilter",
    "ValueFilter",
    "ColumnPaginationFilter",
];

pub fn version(sh: &mut Shell<'_>, _a: Args) -> Result<Returned, ShellError> {
    sh.println(format!(
        "Basalt {}, HBase 2.5 compatible",
        env!("CARGO_PKG_VERSION")
    ))?;
    Ok(Returned::Nothing)
}

pub fn whoami(sh: &mut Shell<'_>, _a: Args) -> Result<Returned, ShellError> {
    let user = std::env::var("USER").unwrap_or_else(|_| "basalt".to_owned());
    sh.println(format!("{user} (auth:SIMPLE)"))?;
    sh.println(format!("    groups: {user}"))?;
    Ok(Returned::Nothing)
}

pub fn table_help(sh: &mut Shell<'_>, _a: Args) -> Result<Returned, ShellError> {
    sh.println(crate::help::TABLE_HELP)?;
    Ok(Returned::Nothing)
}

pub fn show_filters(sh: &mut Shell<'_>, _a: Args) -> Result<Returned, ShellError> {
    for f in FILTERS {
        sh.println(f)?;
    }
    Ok(Returned::Nothing)
}

/// A table name, when `v` names an existing table (else a region name).
fn as_table(sh: &Shell<'_>, v: &[u8]) -> Option<TableName> {
    let name = TableName::parse(std::str::from_utf8(v).ok()?).ok()?;
    sh.admin().table_exists(&name).ok()?.then_some(name)
}

pub fn flush(sh: &mut Shell<'_>, mut a: Args) -> Result<Returned, ShellError> {
    let name = a.table()?;
    a.done()?;
    sh.admin().flush(&name)?;
    Ok(Returned::Nothing)
}

fn compact_with(sh: &mut Shell<'_>, mut a: Args, major: bool) -> Result<Returned, ShellError> {
    let name = a.table()?;
    if !a.is_empty() {
        // A family: every family of the table is compacted (a superset of what was asked).
        let family = a.bytes("family")?;
        let desc = sh.admin().describe(&name)?;
        if !desc.families.contains_key(&family[..]) {
            return Err(basalt_model::Error::NoSuchColumnFamily {
                table: name.to_string(),
                family: to_string_binary(&family),
            }
            .into());
        }
    }
    a.done()?;
    sh.admin().compact(&name, major)?;
    Ok(Returned::Nothing)
}

pub fn compact(sh: &mut Shell<'_>, a: Args) -> Result<Returned, ShellError> {
    compact_with(sh, a, false)
}

pub fn major_compact(sh: &mut Shell<'_>, a: Args) -> Result<Returned, ShellError> {
    compact_with(sh, a, true)
}

pub fn split(sh: &mut Shell<'_>, mut a: Args) -> Result<Returned, ShellError> {
    let target = a.bytes("table or region name")?;
    let key = if a.is_empty() {
        None
    } else {
        Some(a.bytes("split key")?)
    };
    a.done()?;
    match as_table(sh, &target) {
        Some(t) => sh.admin().split_table(&t, key.as_deref())?,
        None => sh.admin().split_region(&target, key.as_deref())?,
    }
    Ok(Returned::Nothing)
}

pub fn merge_region(sh: &mut Shell<'_>, mut a: Args) -> Result<Returned, ShellError> {
    let mut names: Vec<Vec<u8>> = Vec::new();
    let mut force = false;
    for v in a.rest() {
        match v {
            Value::Array(items) => {
                for i in items {
                    names.push(to_bytes(&i, "region name")?);
                }
            }
            Value::Bool(b) => force = b,
            other => names.push(to_bytes(&other, "region name")?),
        }
    }
    let refs: Vec<&[u8]> = names.iter().map(Vec::as_slice).collect();
    sh.admin().merge_regions(&refs, force)?;
    Ok(Returned::Nothing)
}

pub fn get_splits(sh: &mut Shell<'_>, mut a: Args) -> Result<Returned, ShellError> {
    let name = a.table()?;
    a.done()?;
    let regions = sh.admin().regions(&name)?;
    let keys: Vec<String> = regions
        .iter()
        .skip(1)
        .map(|r| to_string_binary(&r.start_key))
        .collect();
    sh.println(format!("Total number of splits = {}", regions.len()))?;
    for k in &keys {
        sh.println(k)?;
    }
    let quoted: Vec<String> = keys.iter().map(|k| format!("\"{k}\"")).collect();
    Ok(Returned::Value(format!("[{}]", quoted.join(", "))))
}

/// HBase's `list_regions` table: right-aligned columns between `|`, sizes in MB, requests
/// as reads plus writes, locality 1.0 (the files are local).
pub fn list_regions(sh: &mut Shell<'_>, mut a: Args) -> Result<Returned, ShellError> {
    let name = a.table()?;
    a.opt_hash();
    a.done()?;
    let titles = [
        "SERVER_NAME",
        "REGION_NAME",
        "START_KEY",
        "END_KEY",
        "SIZE",
        "REQ",
        "LOCALITY",
    ];
    let rows: Vec<[String; 7]> = sh
        .admin()
        .region_reports(&name)?
        .iter()
        .map(
            |RegionReport {
                 region: r,
                 load,
                 server,
             }| {
                [
                    // A region that failed to open has no server serving it.
                    if load.failed_open.is_some() {
                        "FAILED_OPEN".to_owned()
                    } else {
                        server.clone()
                    },
                    r.region_name_string(&name),
                    to_string_binary(&r.start_key),
                    to_string_binary(&r.end_key),
                    (load.store_file_bytes >> 20).to_string(),
                    (load.read_requests + load.write_requests).to_string(),
                    "1.0".to_owned(),
                ]
            },
        )
        .collect();
    let widths: Vec<usize> = (0..titles.len())
        .map(|i| {
            rows.iter()
                .map(|r| r[i].len())
                .chain([titles[i].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |cells: Vec<&str>| {
        let parts: Vec<String> = cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:>w$}"))
            .collect();
        format!(" {} |", parts.join(" | "))
    };
    sh.println(line(titles.to_vec()))?;
    let dashes: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
    sh.println(format!(" {} |", dashes.join(" | ")))?;
    for r in &rows {
        sh.println(line(r.iter().map(String::as_str).collect()))?;
    }
    sh.println(format!(" {} rows", rows.len()))?;
    Ok(Returned::Nothing)
}

pub fn catalogjanitor_run(sh: &mut Shell<'_>, a: Args) -> Result<Returned, ShellError> {
    a.done()?;
    let n = sh.admin().run_catalog_janitor()?;
    Ok(Returned::Value(n.to_string()))
}
