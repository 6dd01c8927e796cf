//! `hbase:meta` on a cluster. The catalog on shared storage is the truth; the active master
//! serves its mirror in HBase's row format, as the standalone master does, so `scan
//! 'hbase:meta'`, Thrift's `getRegionInfo` and every read the API has work on a cluster
//! too. The mirror is one region in the master's memory: built when the master takes over,
//! brought up to date with the catalog before each read, never written to storage (a backup
//! master that takes over builds its own).

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use basalt_model::{Error, Result, TableName};
use basalt_storage::env::{Clock, Env, MemoryStore};
use basalt_storage::region::Region;
use parking_lot::Mutex;

use super::ClusterMaster;
use crate::database::table::{At, RegionSource};
use crate::master::meta::{meta_descriptor, meta_region, meta_rows, meta_table, MetaMirror};
use crate::regionserver::{MasterQueue, RegionServer, RegionServerServices};
use crate::{Options, Table};

/// The active master's `hbase:meta`.
#[derive(Debug)]
pub(crate) struct ClusterMeta {
    /// Hosts the one region, on an environment in memory.
    _host: RegionServer,
    region: Arc<Region>,
    mirror: MetaMirror,
    /// The catalog version the region shows. Lock order: taken before the master's catalog
    /// lock (which is held only to copy the catalog), never while holding it.
    synced: Mutex<u64>,
    name: TableName,
}

impl ClusterMeta {
    /// An empty mirror, filled at its first read.
    ///
    /// # Errors
    /// `Io` from the in-memory environment (which does not fail in practice).
    pub fn new(clock: Arc<dyn Clock>) -> Result<ClusterMeta> {
        let root = PathBuf::from("/hbase-meta");
        let options = Options {
            env: Env::on_shared(clock, MemoryStore::new(), root.clone()),
            ..Options::default()
        };
        // The region never splits, so nothing reads the queue.
        let (queue, _) = MasterQueue::new();
        let name = crate::regionserver::ServerName::starting_now(&options);
        let host = RegionServer::start_with(&root, &options, queue, false, name)?;
        let info = meta_region();
        let dir = root.join("data").join("1");
        Region::create_empty(&options.env, &dir, info.id)?;
        let region = host.open_unmanaged(&dir, &info, &Arc::new(meta_descriptor()))?;
        Ok(ClusterMeta {
            _host: host,
            region: Arc::new(region),
            mirror: MetaMirror::default(),
            synced: Mutex::new(0),
            name: meta_table(),
        })
    }

    /// The table, showing `master`'s catalog as it is now.
    ///
    /// # Errors
    /// `Io` writing the mirror.
    pub fn table(self: &Arc<Self>, master: &ClusterMaster) -> Result<Table> {
        let mut synced = self.synced.lock();
        if let Some((version, catalog)) = master.catalog_if_changed(*synced) {
            let server = |id: u64| catalog.assignments.get(&id).and_then(|a| a.server.clone());
            let rows = meta_rows(&catalog, server, &BTreeSet::new());
            self.mirror.sync(&self.region, rows, master.env.now_ms())?;
            *synced = version;
        }
        Ok(Table::over(Arc::clone(self) as Arc<dyn RegionSource>))
    }

    /// The region, for locating it.
    pub fn region(&self) -> &Region {
        &self.region
    }
}

impl RegionSource for ClusterMeta {
    fn name(&self) -> &TableName {
        &self.name
    }

    fn locate(&self, _at: At<'_>) -> Result<Arc<Region>> {
        Ok(Arc::clone(&self.region))
    }

    fn check_scan(&self) -> Result<()> {
        Ok(())
    }

    /// `hbase:meta` is read only: the descriptor says so, and the write path refuses it.
    fn before_write(&self, _region: &Region) -> Result<()> {
        Err(Error::DoNotRetry(format!(
            "{} is kept by the master from the catalog; it cannot be written",
            self.name
        )))
    }

    fn after_write(&self, _region: &Region) {}

    fn retry_limit(&self) -> Duration {
        Duration::ZERO
    }

    fn max_cell_size_bytes(&self) -> usize {
        Options::default().max_cell_size_bytes
    }
}
