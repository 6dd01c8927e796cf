//! `hbase:meta`: the catalog as a table, in HBase's row format, readable with every read the
//! API has (get, scan, filters, versions).
//!
//! The catalog file is the truth; `hbase:meta` is its mirror. It is one in-memory region
//! rebuilt at open and updated after each catalog commit (changed rows are written again,
//! vanished rows deleted), so it never needs a WAL. Users cannot write to it (it is read
//! only); the engine writes through [`Region::write_system`].
//!
//! # Rows (as HBase 2 writes them)
//! - `<table>,<start key>,<region id>.<encoded name>.` for each online region: `info:regioninfo`
//!   (`PBUF` + the RegionInfo protobuf), `info:server`, `info:serverstartcode`, `info:sn`,
//!   `info:state` = `OPEN`; a region merged from others also has `info:merge0000`, ...
//!   naming them until the janitor frees them.
//! - the same for a split parent still referenced: offline and split in its regioninfo,
//!   `info:state` = `SPLIT`, `info:splitA` / `info:splitB` naming the daughters.
//! - `<table>`: `table:state` (`PBUF` + TableState: ENABLED or DISABLED).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use basalt_model::region::{encode_meta_region_info, encode_meta_table_state};
use basalt_model::{Cell, CellType, ColumnFamilyDescriptor, Result, TableDescriptor, TableName};
use bytes::Bytes;
use parking_lot::Mutex;

use super::{Master, TableState};
use crate::catalog::{Catalog, RegionState, TableEntry};
use basalt_storage::region::{Region, RegionInfo};

/// The meta table's name.
pub const META_TABLE: &str = "hbase:meta";

/// One row's cells as (family, qualifier, value).
pub(crate) type MetaRow = Vec<(&'static str, &'static str, Bytes)>;

/// The mirror's state: the rows last written.
#[derive(Debug, Default)]
pub(crate) struct MetaMirror {
    /// The rows last written, and the timestamp of that write.
    rows: Mutex<(BTreeMap<Bytes, MetaRow>, i64)>,
}

impl MetaMirror {
    /// Writes to `region` what makes it show `want`: rows that changed are written again,
    /// rows that vanished are deleted.
    pub(crate) fn sync(
        &self,
        region: &Region,
        want: BTreeMap<Bytes, MetaRow>,
        now_ms: i64,
    ) -> Result<()> {
        let mut guard = self.rows.lock();
        let (have, last_ts) = &mut *guard;
        // Strictly increasing, so a row deleted and written again in one millisecond (a
        // table dropped and created again) is not masked by its own delete.
        let now = now_ms.max(*last_ts + 1);
        let empty = MetaRow::new();
        let mut by_row: BTreeMap<Bytes, Vec<Cell>> = BTreeMap::new();
        for row in have.keys().chain(want.keys()) {
            let (old, new) = (
                have.get(row).unwrap_or(&empty),
                want.get(row).unwrap_or(&empty),
            );
            if old == new || by_row.contains_key(row) {
                continue;
            }
            let cells = by_row.entry(row.clone()).or_default();
            for (f, q, _) in old
                .iter()
                .filter(|o| !new.iter().any(|n| (n.0, n.1) == (o.0, o.1)))
            {
                let (f, q) = (
                    Bytes::from_static(f.as_bytes()),
                    Bytes::from_static(q.as_bytes()),
                );
                cells.push(Cell::marker(row.clone(), f, q, now, CellType::DeleteColumn));
            }
            for (f, q, v) in new {
                cells.push(Cell::put(row.clone(), *f, *q, now, v.clone()));
            }
        }
        // Each row is its own edit, as HBase's catalog updates are.
        for (_, cells) in by_row {
            region.write_system(cells)?;
        }
        *have = want;
        *last_ts = now;
        Ok(())
    }
}

/// The meta table's name.
#[must_use]
pub fn meta_table() -> TableName {
    TableName::parse(META_TABLE).unwrap_or_else(|_| unreachable!("a valid system table name"))
}

/// `hbase:meta`'s schema (HBase's: `info`, `rep_barrier` and `table`), read only.
#[must_use]
pub fn meta_descriptor() -> TableDescriptor {
    let family = |n: &str| {
        ColumnFamilyDescriptor::new(n.to_owned())
            .with_max_versions(3)
            .with_in_memory(true)
            .with_block_size_bytes(8192)
    };
    let mut desc = TableDescriptor::new(
        &meta_table(),
        [family("info"), family("rep_barrier"), family("table")],
    );
    desc.read_only = true;
    desc
}

/// `hbase:meta`'s one region (HBase's `1588230740` is its encoded name; ours is its id's).
#[must_use]
pub fn meta_region() -> RegionInfo {
    RegionInfo {
        id: 1,
        start_key: Bytes::new(),
        end_key: Bytes::new(),
    }
}

impl Master {
    /// Creates the meta table's region (its directory is rebuilt at every open) and fills it.
    pub fn open_meta(&self, catalog: &Catalog) -> Result<()> {
        let name = meta_table();
        let dir = self.table_dir(&name);
        self.env.remove_dir_all(&dir)?;
        let info = meta_region();
        let rdir = dir.join("1");
        Region::create_empty(&self.env, &rdir, info.id)?;
        let region = self
            .rs
            .open_unmanaged(&rdir, &info, &Arc::new(meta_descriptor()))?;
        let state = TableState::new(name.clone());
        state.regions.write().online = vec![Arc::new(region)];
        self.tables.write().insert(name, state);
        self.sync_meta(catalog)
    }

    /// Brings `hbase:meta` in line with `catalog`.
    fn sync_meta(&self, catalog: &Catalog) -> Result<()> {
        let Some(state) = self.tables.read().get(&meta_table()).cloned() else {
            return Ok(());
        };
        let Some(region) = state.regions.read().online.first().cloned() else {
            return Ok(());
        };
        // Regions that failed to open show as HBase shows them: `info:state` FAILED_OPEN.
        let failed: BTreeSet<u64> = self
            .failed_regions()
            .into_iter()
            .map(|(_, f)| f.info.id)
            .collect();
        let server = self.rs.server_name().to_string();
        let want = meta_rows(catalog, |_| Some(server.clone()), &failed);
        self.meta.sync(&region, want, self.env.now_ms())
    }

    /// [`Master::sync_meta`] after a catalog commit: the commit stands whatever happens to
    /// the mirror, so a failure is logged (the next commit or open repairs it).
    pub(super) fn refresh_meta(&self, catalog: &Catalog) {
        if let Err(e) = self.sync_meta(catalog) {
            tracing::warn!(error = %e, "hbase:meta is behind the catalog");
        }
    }
}

/// Every row `hbase:meta` shows for `catalog`, with each region on the server
/// `server_of(id)` names (`host,port,start code`; none while unassigned).
pub(crate) fn meta_rows(
    catalog: &Catalog,
    server_of: impl Fn(u64) -> Option<String>,
    failed: &BTreeSet<u64>,
) -> BTreeMap<Bytes, MetaRow> {
    let mut rows = BTreeMap::new();
    for entry in catalog.tables.values() {
        let table = entry.descriptor.table_name();
        rows.insert(
            Bytes::from(table.to_string()),
            vec![("table", "state", encode_meta_table_state(entry.enabled))],
        );
        for info in &entry.regions {
            let server = server_of(info.id);
            let state = match &server {
                _ if failed.contains(&info.id) => "FAILED_OPEN",
                Some(_) => "OPEN",
                None => "CLOSED",
            };
            let mut cols = region_columns(&table, info, false, state, server.as_deref());
            for (i, p) in merged_parents(entry, info.id).enumerate() {
                let q: &'static str = MERGE_QUALIFIERS.get(i).copied().unwrap_or("merge9999");
                cols.push(("info", q, encode_meta_region_info(&table, p, false, false)));
            }
            cols.sort_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
            rows.insert(info.region_name(&table), cols);
        }
        for r in entry
            .retired
            .iter()
            .filter(|r| r.state == RegionState::Split)
        {
            let server = server_of(r.info.id);
            let mut cols = region_columns(&table, &r.info, true, "SPLIT", server.as_deref());
            let daughter = |id: u64| find_region(entry, id);
            for (q, id) in ["splitA", "splitB"].into_iter().zip(&r.successors) {
                if let Some(d) = daughter(*id) {
                    cols.push(("info", q, encode_meta_region_info(&table, d, false, false)));
                }
            }
            cols.sort_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
            rows.insert(r.info.region_name(&table), cols);
        }
    }
    rows
}

const MERGE_QUALIFIERS: [&str; 8] = [
    "merge0000",
    "merge0001",
    "merge0002",
    "merge0003",
    "merge0004",
    "merge0005",
    "merge0006",
    "merge0007",
];

/// A region's columns; `server` is `host,port,start code`, and a region with none shows
/// only its `regioninfo` and `state` (as HBase shows a closed region).
fn region_columns(
    table: &TableName,
    info: &RegionInfo,
    split: bool,
    state: &'static str,
    server: Option<&str>,
) -> MetaRow {
    let mut cols = vec![
        (
            "info",
            "regioninfo",
            encode_meta_region_info(table, info, split, split),
        ),
        ("info", "state", Bytes::from_static(state.as_bytes())),
    ];
    let parts = server.map(|s| s.rsplitn(3, ',').collect::<Vec<_>>());
    if let (Some(sn), Some([start, port, host])) = (server, parts.as_deref()) {
        let start_code = start.parse::<i64>().unwrap_or_default();
        cols.extend([
            ("info", "server", Bytes::from(format!("{host}:{port}"))),
            (
                "info",
                "serverstartcode",
                Bytes::copy_from_slice(&start_code.to_be_bytes()),
            ),
            ("info", "sn", Bytes::from(sn.to_owned())),
        ]);
    }
    cols
}

/// The retired regions merged into region `id`.
fn merged_parents(entry: &TableEntry, id: u64) -> impl Iterator<Item = &RegionInfo> {
    entry
        .retired
        .iter()
        .filter(move |r| r.state == RegionState::Merged && r.successors == [id])
        .map(|r| &r.info)
}

fn find_region(entry: &TableEntry, id: u64) -> Option<&RegionInfo> {
    entry
        .regions
        .iter()
        .chain(entry.retired.iter().map(|r| &r.info))
        .find(|r| r.id == id)
}
