//! The master (HBase's `HMaster`): owns the catalog (namespaces, tables, their regions and
//! each region's state), DDL, the decision and catalog switch of splits and merges, the
//! catalog janitor, the archive cleaner and the `hbase:meta` view.
//!
//! It reaches its region server only through [`RegionServerServices`] and hears from it
//! through [`MasterRequest`]s, which its chore thread serves ([`Master::serve`]). A table's
//! enabled state lives in the catalog alone: a disabled table's regions are closed (HBase
//! unassigns them), so a request finds none online and asks the catalog why.
//!
//! # Lock order
//! Locks are taken in this order, never against it:
//! 0. a table's `procedure` lock (DDL of the table, its splits and merges: the table lock of
//!    an HBase procedure). Region work (closing, flushing, waiting for a compaction) is done
//!    under this lock alone, so a long split holds up DDL of its own table, never another's.
//! 1. `catalog`: held to read or commit the catalog, and to create a new table's empty
//!    regions; never across a region close, a flush or a wait for a compaction.
//! 2. `tables`;
//! 3. a `TableState`'s `regions` (the online and the failed ones);
//! 4. `meta`'s rows (the `hbase:meta` mirror, written after a catalog commit);
//! 5. a region's own locks (`region/mod.rs`), then the WAL's (`wal/mod.rs`) and the MVCC's.
//!
//! Guards of 2 and 3 are held only to read or replace an entry, never across a call into a
//! region, the region server or the workers: clone the `Arc`s out first
//! ([`TableState::online`]), *binding them before* an `if let`, `match` or `for` (a
//! temporary guard in a scrutinee lives to the end of the block; the workspace turns on
//! clippy's `significant_drop_in_scrutinee`, which flags it).

mod chores;
pub(crate) mod ddl;
mod janitor;
pub(crate) mod meta;
pub(crate) mod split;

pub(crate) use chores::Chores;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use basalt_model::{Error, Result, TableName};
use parking_lot::{Mutex, RwLock};

use crate::catalog::{Catalog, TableEntry};
use crate::regionserver::RegionServerServices;
use basalt_storage::archive::Archive;
use basalt_storage::env::Env;
use basalt_storage::manifest::VersionedFile;
use basalt_storage::region::{Region, RegionInfo};

/// The master of one data directory.
#[derive(Debug)]
pub(crate) struct Master {
    dir: PathBuf,
    env: Env,
    rs: Arc<dyn RegionServerServices>,
    archive: Arc<Archive>,
    /// How long archived files are kept.
    archive_retention_ms: i64,
    /// Lock order 1.
    catalog: Mutex<(VersionedFile, Catalog)>,
    /// Lock order 2. Every read and write looks its table up here, a Get twice: foldhash
    /// hashes a name in about a sixth of SipHash's instructions (SipHash's lookups were 2%
    /// of a point read's server instructions), and its seed is random per process as
    /// SipHash's is.
    tables: RwLock<HashMap<TableName, Arc<TableState>, foldhash::fast::RandomState>>,
    meta: meta::MetaMirror,
    chores: Chores,
}

/// A table's online regions, in key order, as the master assigned them (its view of
/// `hbase:meta`'s locations), and the regions that failed to open.
#[derive(Debug)]
pub(crate) struct TableState {
    pub name: TableName,
    /// Lock order 0: one procedure of the table at a time.
    procedure: Mutex<()>,
    /// The online regions and those that failed to open. Lock order 3.
    regions: RwLock<Assignment>,
}

/// A table's regions as the master assigned them. The two lists are under one lock: a
/// lookup takes it once (every Get and Put makes one), and sees both as they were set
/// together.
#[derive(Debug, Default)]
struct Assignment {
    /// Online regions in key order; empty while the table is disabled.
    online: Vec<Arc<Region>>,
    /// Regions that failed to open, in key order: their rows answer `RegionOffline`.
    failed: Vec<FailedRegion>,
}

/// A region that failed to open (HBase's FAILED_OPEN): damaged or missing files.
#[derive(Clone, Debug)]
pub(crate) struct FailedRegion {
    pub info: RegionInfo,
    /// Why, as the error said.
    pub reason: String,
}

impl Master {
    /// A master over `dir` whose catalog was loaded as `catalog` (version file `vf`).
    pub fn new(
        dir: &Path,
        env: &Env,
        rs: Arc<dyn RegionServerServices>,
        archive: Arc<Archive>,
        archive_retention_ms: i64,
        catalog: (VersionedFile, Catalog),
    ) -> Master {
        Master {
            dir: dir.to_owned(),
            env: env.clone(),
            rs,
            archive,
            archive_retention_ms,
            catalog: Mutex::new(catalog),
            tables: RwLock::new(HashMap::default()),
            meta: meta::MetaMirror::default(),
            chores: Chores::default(),
        }
    }

    /// Assigns every table the catalog lists at start: archives what the catalog does not
    /// know, opens the enabled tables' regions (a region that fails to open is recorded as
    /// failed, and the others serve). Returns whether any region failed.
    ///
    /// # Errors
    /// `Io` listing or archiving orphans.
    pub fn assign_all(&self) -> Result<bool> {
        let catalog = self.catalog.lock().1.clone();
        self.archive_orphans(&catalog)?;
        for entry in catalog.tables.values() {
            let state = TableState::new(entry.descriptor.table_name());
            if entry.enabled {
                self.assign(&state, entry);
            }
            self.write_table_info(entry);
            self.tables.write().insert(state.name.clone(), state);
        }
        Ok(!self.failed_regions().is_empty())
    }

    /// Finishes the start once the region server has replayed its log: commits a catalog
    /// that is new (or gained a cluster id) and builds `hbase:meta`.
    ///
    /// # Errors
    /// `Io` committing the catalog or writing the mirror.
    pub fn finish_start(&self, commit: bool) -> Result<()> {
        let mut g = self.catalog.lock();
        if commit {
            let (vf, doc) = &mut *g;
            vf.commit(&self.env, doc)?;
        }
        let catalog = g.1.clone();
        drop(g);
        self.open_meta(&catalog)?;
        self.clean_retired()?;
        self.clean_archive();
        Ok(())
    }

    /// The cluster's id.
    pub fn cluster_id(&self) -> String {
        self.catalog.lock().1.cluster_id.clone()
    }

    /// The chores' queue (its waiters).
    pub fn chores(&self) -> &Chores {
        &self.chores
    }

    /// Opens the regions of `entry` on the region server and lists them in `state`.
    fn assign(&self, state: &TableState, entry: &TableEntry) {
        let desc = Arc::new(entry.descriptor.clone());
        let tdir = self.table_dir(&state.name);
        let (mut regions, mut failed) = (Vec::new(), Vec::new());
        for info in &entry.regions {
            let rdir = tdir.join(info.id.to_string());
            match self.rs.open_region(&rdir, info, &desc) {
                Ok(r) => regions.push(r),
                Err(e) => {
                    let region = info.region_name_string(&state.name);
                    tracing::error!(%region, error = %e, "region failed to open; it stays offline and its files stay where they are");
                    failed.push(FailedRegion {
                        info: info.clone(),
                        reason: e.to_string(),
                    });
                }
            }
        }
        *state.regions.write() = Assignment {
            online: regions,
            failed,
        };
    }

    /// Closes every region of `state` (flushed first) and lists none: the table is
    /// disabled. Stops at the first region that fails to close; it and those after it still
    /// serve.
    fn unassign(&self, state: &TableState) -> Result<()> {
        state.regions.write().failed.clear();
        for r in state.online() {
            self.rs.close_region(&r)?;
            state.regions.write().online.retain(|x| !Arc::ptr_eq(x, &r));
        }
        self.rs.retire_wal()
    }

    /// The descriptor copy `basalt hbck` rebuilds a lost catalog from; the catalog is the
    /// truth, so a failure is logged.
    fn write_table_info(&self, entry: &TableEntry) {
        let name = entry.descriptor.table_name();
        let tdir = self.table_dir(&name);
        if let Err(e) =
            basalt_storage::region::repair::write_table_info(&self.env, &tdir, &entry.descriptor)
        {
            tracing::warn!(table = %name, error = %e, "could not write the table's descriptor file");
        }
    }

    fn table_dir(&self, t: &TableName) -> PathBuf {
        self.dir
            .join("data")
            .join(t.namespace())
            .join(t.qualifier())
    }

    /// The table's state.
    ///
    /// # Errors
    /// `TableNotFound`.
    pub fn state(&self, name: &TableName) -> Result<Arc<TableState>> {
        self.tables
            .read()
            .get(name)
            .cloned()
            .ok_or_else(|| Error::TableNotFound(name.to_string()))
    }

    /// Why a table has no online region for a request: it is disabled or gone; otherwise its
    /// regions are moving (`NotServingRegion`, which callers retry).
    pub fn why_not_serving(&self, name: &TableName) -> Error {
        match self.catalog.lock().1.table(name) {
            Ok(e) if !e.enabled => Error::TableNotEnabled(name.to_string()),
            Ok(_) => Error::NotServingRegion(format!("{name}: its regions are being assigned")),
            Err(e) => e,
        }
    }

    /// Changes the catalog all or nothing (see [`Master::edit_locked`]).
    fn edit_catalog<R>(&self, edit: impl FnOnce(&mut Catalog) -> Result<R>) -> Result<R> {
        self.edit_locked(&mut self.catalog.lock(), edit)
    }

    /// Changes the catalog all or nothing under its guard `g`: `edit` works on a copy, which
    /// is committed and only then replaces the catalog in memory (a failed commit leaves
    /// memory as the disk is).
    fn edit_locked<R>(
        &self,
        g: &mut (VersionedFile, Catalog),
        edit: impl FnOnce(&mut Catalog) -> Result<R>,
    ) -> Result<R> {
        let mut next = g.1.clone();
        let out = edit(&mut next)?;
        g.0.commit(&self.env, &next)?;
        g.1 = next;
        self.refresh_meta(&g.1);
        Ok(out)
    }

    /// Regions that failed to open, with their table, in table and key order.
    pub fn failed_regions(&self) -> Vec<(TableName, FailedRegion)> {
        let tables: Vec<Arc<TableState>> = self.tables.read().values().cloned().collect();
        let mut out: Vec<(TableName, FailedRegion)> = tables
            .iter()
            .flat_map(|t| {
                t.regions
                    .read()
                    .failed
                    .iter()
                    .map(|f| (t.name.clone(), f.clone()))
                    .collect::<Vec<_>>()
            })
            .collect();
        out.sort_by(|a, b| (&a.0, &a.1.info.start_key).cmp(&(&b.0, &b.1.info.start_key)));
        out
    }
}

impl TableState {
    fn new(name: TableName) -> Arc<TableState> {
        Arc::new(TableState {
            name,
            procedure: Mutex::new(()),
            regions: RwLock::new(Assignment::default()),
        })
    }

    /// The online regions now, in key order. The guard is dropped before this returns, so
    /// the caller can call into the regions (lock order, see the module).
    pub fn online(&self) -> Vec<Arc<Region>> {
        self.regions.read().online.clone()
    }

    /// Whether any region is online (without copying the list: a scan asks at every start).
    pub fn has_online(&self) -> bool {
        !self.regions.read().online.is_empty()
    }

    /// Regions that failed to open.
    pub fn failed(&self) -> Vec<FailedRegion> {
        self.regions.read().failed.clone()
    }

    /// The last region whose start key passes `starts_before` (regions are in key order):
    /// `Ok(None)` when no region is online (the table is disabled, or being assigned), and
    /// `RegionOffline` when the row's region is one that failed to open.
    ///
    /// # Errors
    /// `RegionOffline`.
    pub fn region_where(
        &self,
        starts_before: impl Fn(&[u8]) -> bool,
    ) -> Result<Option<Arc<Region>>> {
        let regions = self.regions.read();
        let (online, failed) = (&regions.online, &regions.failed);
        let n = online.partition_point(|r| starts_before(&r.info().start_key));
        let online = n.checked_sub(1).and_then(|i| online.get(i));
        let n = failed.partition_point(|f| starts_before(&f.info.start_key));
        // Ranges do not overlap: of the two candidates, the one starting later holds the row.
        if let Some(f) = n.checked_sub(1).and_then(|i| failed.get(i)) {
            let later = online.is_none_or(|r| r.info().start_key < f.info.start_key);
            if later {
                return Err(Error::RegionOffline(format!(
                    "Region {} is offline: it failed to open ({}); run `basalt hbck` on the server",
                    f.info.region_name_string(&self.name),
                    basalt_model::error::redact_paths(&f.reason)
                )));
            }
        }
        Ok(online.cloned())
    }
}

#[cfg(test)]
mod tests;
