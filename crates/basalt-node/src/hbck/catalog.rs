//! Rebuilding a lost catalog from the data directory: tables from their descriptor files,
//! regions from their region info files and manifests (HBase's hbck `fixMeta` from
//! `.tableinfo` and `.regioninfo`).
//!
//! Of regions whose key ranges overlap (a split or merge whose parents were not cleaned up
//! yet), the newest wins: region ids grow with time, and successors are younger than their
//! parents. A parent whose files an online region still reads is kept as retired, for the
//! janitor; the others are left as orphans, which the next open archives. A hole in a
//! table's key space is filled with a new, empty region.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use basalt_model::name::{validate_namespace, DEFAULT_NAMESPACE, SYSTEM_NAMESPACE};
use basalt_model::{ColumnFamilyDescriptor, Result, TableDescriptor, TableName};
use bytes::Bytes;

use super::Finding;
use crate::catalog::{table_key, Catalog, RegionState, RetiredRegion, TableEntry};
use basalt_storage::env::Env;
use basalt_storage::region::repair::{self, read_region_info, read_table_info};
use basalt_storage::region::RegionInfo;

/// A region found on disk.
struct Found {
    info: RegionInfo,
    /// Regions whose files it reads (its parents).
    reads: BTreeSet<u64>,
}

/// A catalog made from what `dir/data` holds, with what could not be recovered exactly.
///
/// # Errors
/// `Io` reading the directory or writing the regions made to fill holes.
pub fn rebuild(env: &Env, dir: &Path, now_ms: i64) -> Result<(Catalog, Vec<Finding>)> {
    let data = dir.join("data");
    let mut catalog = Catalog::default();
    let mut findings = Vec::new();
    let mut max_id = 0;
    for ns in env.list(&data)? {
        if validate_namespace(&ns).is_err() {
            continue;
        }
        if ns != DEFAULT_NAMESPACE && ns != SYSTEM_NAMESPACE {
            catalog.namespaces.insert(ns.clone(), BTreeMap::new());
            findings.push(Finding::note(
                "NAMESPACE_REBUILT",
                format!("namespace {ns} rebuilt without its properties"),
            ));
        }
        for t in env.list(&data.join(&ns))? {
            if ns == SYSTEM_NAMESPACE && t == "meta" {
                continue;
            }
            let Ok(name) = TableName::new(&ns, &t) else {
                continue;
            };
            let tdir = data.join(&ns).join(&t);
            let (entry, top) = rebuild_table(env, &tdir, &name, now_ms, &mut findings)?;
            max_id = max_id.max(top);
            catalog.tables.insert(table_key(&name), entry);
        }
    }
    catalog.next_region_id = catalog.next_region_id.max(max_id);
    Ok((catalog, findings))
}

fn rebuild_table(
    env: &Env,
    tdir: &Path,
    name: &TableName,
    now_ms: i64,
    findings: &mut Vec<Finding>,
) -> Result<(TableEntry, u64)> {
    let mut found = Vec::new();
    for r in env.list(tdir)? {
        if r.parse::<u64>().is_err() {
            continue;
        }
        let rdir = tdir.join(&r);
        match read_region_info(env, &rdir) {
            Ok(Some(f)) => {
                let reads = repair::manifest_files(env, &rdir, f.info.id)
                    .map(|files| {
                        files
                            .values()
                            .flatten()
                            .map(|id| id.region)
                            .filter(|r| *r != f.info.id)
                            .collect()
                    })
                    .unwrap_or_default();
                found.push(Found {
                    info: f.info,
                    reads,
                });
            }
            Ok(None) => findings.push(Finding::problem(
                "REGION_UNIDENTIFIED",
                format!(
                    "{name}: region directory {r} has no region info file; its key range is unknown, so it was left out (its files stay)"
                ),
            )),
            Err(e) => findings.push(Finding::problem(
                "REGION_UNIDENTIFIED",
                format!("{name}: region directory {r}: {e}"),
            )),
        }
    }
    let descriptor = match read_table_info(env, tdir) {
        Ok(Some(d)) => d,
        other => {
            let why = match other {
                Err(e) => e.to_string(),
                _ => "no descriptor file".to_owned(),
            };
            findings.push(Finding::problem(
                "SCHEMA_GUESSED",
                format!(
                    "{name}: {why}; rebuilt with its families' names and HBase's default settings"
                ),
            ));
            guess_schema(env, tdir, name)?
        }
    };
    let max_id = found.iter().map(|f| f.info.id).max().unwrap_or(0);
    let (mut regions, retired) = choose_online(found, now_ms);
    let filled = fill_holes(env, tdir, name, &mut regions, max_id, findings)?;
    findings.push(Finding::note(
        "TABLE_REBUILT",
        format!(
            "{name}: {} regions online, {} retired parents kept for the janitor",
            regions.len(),
            retired.len()
        ),
    ));
    let entry = TableEntry {
        descriptor,
        enabled: true,
        regions,
        retired,
    };
    Ok((entry, max_id.max(filled)))
}

/// The newest non-overlapping regions, in key order, and the parents they still read.
fn choose_online(mut found: Vec<Found>, now_ms: i64) -> (Vec<RegionInfo>, Vec<RetiredRegion>) {
    found.sort_by_key(|f| std::cmp::Reverse(f.info.id));
    let mut online: Vec<&Found> = Vec::new();
    for f in &found {
        if !online.iter().any(|o| overlaps(&o.info, &f.info)) {
            online.push(f);
        }
    }
    let read: BTreeSet<u64> = online
        .iter()
        .flat_map(|o| o.reads.iter().copied())
        .collect();
    let retired = found
        .iter()
        .filter(|f| read.contains(&f.info.id))
        .map(|f| RetiredRegion {
            info: f.info.clone(),
            state: RegionState::Split,
            successors: online
                .iter()
                .filter(|o| o.reads.contains(&f.info.id))
                .map(|o| o.info.id)
                .collect(),
            at_ms: now_ms,
        })
        .collect();
    let mut regions: Vec<RegionInfo> = online.into_iter().map(|f| f.info.clone()).collect();
    regions.sort_by(|a, b| a.start_key.cmp(&b.start_key));
    (regions, retired)
}

fn overlaps(a: &RegionInfo, b: &RegionInfo) -> bool {
    let below_end = |start: &Bytes, r: &RegionInfo| r.end_key.is_empty() || *start < r.end_key;
    below_end(&a.start_key, b) && below_end(&b.start_key, a)
}

/// Fills gaps between `regions` (in key order) with new empty regions; returns the highest
/// id used.
fn fill_holes(
    env: &Env,
    tdir: &Path,
    name: &TableName,
    regions: &mut Vec<RegionInfo>,
    mut max_id: u64,
    findings: &mut Vec<Finding>,
) -> Result<u64> {
    let mut bounds: Vec<(Bytes, Bytes)> = Vec::new();
    let mut at = Bytes::new();
    for r in regions.iter() {
        if r.start_key != at {
            bounds.push((at.clone(), r.start_key.clone()));
        }
        at = r.end_key.clone();
    }
    if regions.is_empty() || !at.is_empty() {
        bounds.push((at, Bytes::new()));
    }
    for (start, end) in bounds {
        max_id += 1;
        let info = RegionInfo {
            id: max_id,
            start_key: start,
            end_key: end,
        };
        repair::create_empty_region(env, &tdir.join(max_id.to_string()), &table_key(name), &info)?;
        findings.push(Finding::problem(
            "HOLE_FILLED",
            format!(
                "{name}: no region covered [{}, {}); an empty region {max_id} now does",
                basalt_model::bytes_fmt::to_string_binary(&info.start_key),
                basalt_model::bytes_fmt::to_string_binary(&info.end_key)
            ),
        ));
        regions.push(info);
    }
    regions.sort_by(|a, b| a.start_key.cmp(&b.start_key));
    Ok(max_id)
}

/// A descriptor with the families whose directories the table's regions hold.
fn guess_schema(env: &Env, tdir: &Path, name: &TableName) -> Result<TableDescriptor> {
    let mut families = BTreeSet::new();
    for r in env.list(tdir)? {
        if r.parse::<u64>().is_err() {
            continue;
        }
        for f in env.list(&tdir.join(&r))? {
            if let Some(bytes) = repair::family_name(&f) {
                families.insert(bytes);
            }
        }
    }
    Ok(TableDescriptor::new(
        name,
        families.into_iter().map(ColumnFamilyDescriptor::new),
    ))
}
