//! A region server of a cluster: a [`RegionServer`] on shared storage, registered in the
//! coordinator, opening and closing regions as the master says.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use basalt_model::{Error, Result, TableDescriptor, TableName};
use basalt_storage::region::{Region, RegionInfo};
use parking_lot::{Mutex, RwLock};

use super::{Compaction, RegionReport, RegionServerAdmin, ServerReport};
use crate::catalog::Catalog;
use crate::coordination::{Coordinator, SessionHealth};
use crate::database::table::At;
use crate::options::Options;
use crate::regionserver::{MasterQueue, RegionServer, RegionServerServices, ServerName};

/// A region server in a cluster.
///
/// # Lock order
/// `epochs` is held across a whole open or close (so a check of an epoch and the open it
/// allows are one step), before the region server's own locks; `hosted` is a leaf, changed
/// under `epochs` and read alone.
#[derive(Debug)]
pub struct ClusterRegionServer {
    root: PathBuf,
    rs: RegionServer,
    coordinator: Arc<dyn Coordinator>,
    /// `hbase.server.keyvalue.maxsize`.
    max_cell_size_bytes: usize,
    /// The highest master epoch a call has carried, and the epoch each online region was
    /// opened at.
    epochs: Mutex<Epochs>,
    /// The online regions by table, in key order: the data path's lookup, so a request
    /// finds its region without going through every region the server holds.
    hosted: RwLock<HashMap<TableName, Vec<Arc<Region>>>>,
    /// Why the server aborted, once it has.
    aborted: std::sync::OnceLock<String>,
}

#[derive(Debug, Default)]
struct Epochs {
    master: u64,
    regions: HashMap<u64, u64>,
}

impl Epochs {
    /// Refuses a call from a master older than one already heard from; remembers a newer.
    fn check_master(&mut self, epoch: u64) -> Result<()> {
        if epoch < self.master {
            return Err(Error::DoNotRetry(format!(
                "a master with epoch {} has taken over; this call from epoch {epoch} is stale",
                self.master
            )));
        }
        self.master = epoch;
        Ok(())
    }
}

impl ClusterRegionServer {
    /// Starts a region server over the shared storage at `root` (whose URL is `storage`)
    /// and registers it. It joins only the cluster the coordinator describes: the same
    /// storage, and a catalog there with the same cluster id.
    ///
    /// # Errors
    /// `DoNotRetry` when no master has published the cluster yet, or it is another
    /// cluster's; `PleaseHold` while the master has not written its first catalog; `Io`.
    pub fn start(
        root: &Path,
        storage: &str,
        options: &Options,
        coordinator: Arc<dyn Coordinator>,
    ) -> Result<ClusterRegionServer> {
        check_cluster(root, storage, options, coordinator.as_ref())?;
        // Split requests have no master to go to yet: the queue's far end is dropped, and
        // a region asks again at the workers' next check.
        let (queue, _) = MasterQueue::new();
        // Registered before its log exists: the master takes a log whose server is not
        // registered for a dead server's (`recovery.rs`, "Detection").
        let name = ServerName::starting_now(options);
        coordinator.register_server(&name.to_string())?;
        let started = RegionServer::start_with(root, options, queue, false, name.clone())
            .and_then(|rs| rs.recover(false).map(|()| rs));
        let rs = match started {
            Ok(rs) => rs,
            Err(e) => {
                let _ = coordinator.deregister_server(&name.to_string());
                return Err(e);
            }
        };
        Ok(ClusterRegionServer {
            root: root.to_owned(),
            rs,
            coordinator,
            max_cell_size_bytes: options.max_cell_size_bytes,
            epochs: Mutex::new(Epochs::default()),
            hosted: RwLock::new(HashMap::new()),
            aborted: std::sync::OnceLock::new(),
        })
    }

    /// Why this server must stop serving at once, if it must: its session has ended (its
    /// regions may be on their way elsewhere), or the master fenced its log. Checked by the
    /// process every half second; [`ClusterRegionServer::abort`] follows.
    #[must_use]
    pub fn must_abort(&self) -> Option<String> {
        if let Some(why) = self.aborted.get() {
            return Some(why.clone());
        }
        if self.rs.wal_fenced() {
            return Some(format!(
                "the master fenced the log of region server {}: it was taken for dead",
                self.name()
            ));
        }
        matches!(self.coordinator.session(), SessionHealth::Expired).then(|| {
            format!(
                "region server {} lost its coordination session; its regions go to other servers",
                self.name()
            )
        })
    }

    /// Stops serving at once, flushing nothing (the master recovers the regions from the
    /// log), and removes the registration first thing, so the master sees the death now
    /// rather than when the session expires (HBase's abort).
    pub fn abort(&self, why: &str) {
        tracing::error!(server = %self.name(), why, "aborting");
        let _ = self.aborted.set(why.to_owned());
        self.hosted.write().clear();
        if let Err(e) = self.coordinator.deregister_server(&self.name()) {
            tracing::warn!(error = %e, "deregistering at abort failed; the session's end removes it");
        }
        self.rs.shutdown();
    }

    /// `host,port,start code`.
    #[must_use]
    pub fn name(&self) -> String {
        self.rs.name().to_string()
    }

    /// The online region `id`: refused once the session's lease has run out (the master may
    /// be giving the region to another server).
    ///
    /// # Errors
    /// `NotServingRegion` without a lease (the client looks the region up again), or when
    /// the region is not open here.
    pub fn region(&self, id: u64) -> Result<Arc<Region>> {
        self.check_lease()?;
        self.rs.region(id).ok_or_else(|| {
            Error::NotServingRegion(format!("region {id} is not online on {}", self.name()))
        })
    }

    /// The online region of `table` holding the rows `at` wants: refused once the
    /// session's lease has run out (the master may be giving its regions to another server).
    ///
    /// # Errors
    /// `NotServingRegion` without a lease, or when the region is not here.
    pub(crate) fn locate(&self, table: &TableName, at: At<'_>) -> Result<Arc<Region>> {
        self.check_lease()?;
        let hosted = self.hosted.read();
        let regions = hosted.get(table).map_or(&[][..], Vec::as_slice);
        let n = regions.partition_point(|r| at.starts_before(&r.info().start_key));
        match n.checked_sub(1).map(|i| &regions[i]) {
            Some(r) if at.held_by(r.info()) => Ok(Arc::clone(r)),
            _ => Err(Error::NotServingRegion(format!(
                "the region of {table} holding {at:?} is not online on {}",
                self.name()
            ))),
        }
    }

    /// Lists `region` in the data path's index (in key order, once).
    fn host(&self, region: Arc<Region>) {
        let mut hosted = self.hosted.write();
        let list = hosted.entry(region.table().table_name()).or_default();
        list.retain(|r| r.info().id != region.info().id);
        let at = list.partition_point(|r| r.info().start_key < region.info().start_key);
        list.insert(at, region);
    }

    /// Takes region `id` out of the data path's index.
    fn unhost(&self, id: u64) {
        for list in self.hosted.write().values_mut() {
            list.retain(|r| r.info().id != id);
        }
    }

    /// Flow control before a write (see `RegionServer::before_write`).
    pub(crate) fn before_write(&self, region: &Region) -> Result<()> {
        self.rs.before_write(region)
    }

    /// Flushes a write may have made due.
    pub(crate) fn after_write(&self, region: &Region) {
        self.rs.after_write(region);
    }

    /// `hbase.server.keyvalue.maxsize`.
    pub(crate) fn max_cell_size_bytes(&self) -> usize {
        self.max_cell_size_bytes
    }

    /// A clean stop: every region is flushed and closed (so it reopens elsewhere without
    /// replay), the log retired, and the registration removed.
    ///
    /// # Errors
    /// The final WAL sync failed.
    pub fn stop(&self) -> Result<()> {
        if let Some(why) = self.must_abort() {
            // Its regions are the master's to recover: nothing is flushed or retired.
            self.abort(&why);
            return Ok(());
        }
        self.hosted.write().clear();
        for r in self.rs.online_regions() {
            if let Err(e) = self.rs.close_region(&r) {
                tracing::warn!(region = %r.name(), error = %e, "closing at stop failed");
            }
        }
        self.epochs.lock().regions.clear();
        let closed = self.rs.close();
        if let Err(e) = self.coordinator.deregister_server(&self.name()) {
            tracing::warn!(error = %e, "deregistering at stop failed; the session's end removes it");
        }
        closed
    }

    /// Its online regions with their loads, by id.
    #[must_use]
    pub fn hosted_regions(&self) -> Vec<RegionReport> {
        let epochs = self.epochs.lock().regions.clone();
        let mut regions: Vec<RegionReport> = self
            .rs
            .online_regions()
            .iter()
            .map(|r| RegionReport {
                table: r.table().table_name(),
                info: r.info().clone(),
                open_epoch: epochs.get(&r.info().id).copied().unwrap_or(0),
                load: r.load(),
                wants_split: r.should_split(),
            })
            .collect();
        regions.sort_by_key(|r| r.info.id);
        regions
    }

    /// Waits until no flush or compaction is queued or running (tests).
    ///
    /// # Errors
    /// A flush or compaction failed since the last wait.
    pub fn wait_idle(&self) -> Result<()> {
        self.rs.wait_idle()
    }

    /// The engine's counters (the page and `/metrics`).
    #[must_use]
    pub fn engine_stats(&self) -> crate::EngineStatsSnapshot {
        self.rs.stats()
    }

    /// The block cache's counters and size.
    #[must_use]
    pub fn block_cache_stats(&self) -> crate::CacheStats {
        self.rs.block_cache_stats()
    }

    /// Recent flushes and compactions.
    #[must_use]
    pub fn recent_events(&self) -> Vec<basalt_storage::region::BackgroundEvent> {
        self.rs.recent_events()
    }

    /// The coordinator this server is registered in.
    #[must_use]
    pub fn coordinator(&self) -> Arc<dyn Coordinator> {
        Arc::clone(&self.coordinator)
    }

    /// Refuses when the session's lease has run out: the master may be moving this server's
    /// regions elsewhere.
    pub(crate) fn check_lease(&self) -> Result<()> {
        let c = &self.coordinator;
        if let Some(why) = self.aborted.get() {
            return Err(Error::NotServingRegion(format!(
                "region server {} has aborted ({why}); it serves nothing",
                self.name()
            )));
        }
        if c.session()
            .lease_valid(c.session_timeout(), std::time::Instant::now())
        {
            Ok(())
        } else {
            Err(Error::NotServingRegion(format!(
                "region server {} has lost its coordination session ({:?}); it serves nothing",
                self.name(),
                c.session()
            )))
        }
    }

    fn region_dir(&self, table: &TableDescriptor, id: u64) -> PathBuf {
        let name = table.table_name();
        self.root
            .join("data")
            .join(name.namespace())
            .join(name.qualifier())
            .join(id.to_string())
    }
}

/// Refuses to join a cluster other than the one at `storage`.
fn check_cluster(
    root: &Path,
    storage: &str,
    options: &Options,
    coordinator: &dyn Coordinator,
) -> Result<()> {
    let Some(published) = coordinator.cluster()? else {
        return Err(Error::DoNotRetry(
            "no master has started this cluster yet: start a master first".to_owned(),
        ));
    };
    if published.storage != storage {
        return Err(Error::DoNotRetry(format!(
            "this region server's storage is {storage}, but the cluster's is {}; it would not see the cluster's files",
            published.storage
        )));
    }
    let (_, catalog) = Catalog::load(&options.env, &root.join("catalog"))?;
    let Some(id) = catalog.map(|c| c.cluster_id) else {
        // A new cluster's master publishes it, then writes its first catalog.
        return Err(Error::PleaseHold(format!(
            "the master has not written the cluster's catalog to {storage} yet"
        )));
    };
    if id != published.cluster_id {
        return Err(Error::DoNotRetry(format!(
            "the storage {storage} belongs to cluster {id:?}, but the coordinator's cluster is {:?}",
            published.cluster_id
        )));
    }
    Ok(())
}

impl RegionServerAdmin for ClusterRegionServer {
    fn open_region(
        &self,
        master_epoch: u64,
        table: &TableDescriptor,
        info: &RegionInfo,
        open_epoch: u64,
    ) -> Result<()> {
        self.check_lease()?;
        let mut epochs = self.epochs.lock();
        epochs.check_master(master_epoch)?;
        if let Some(&at) = epochs.regions.get(&info.id) {
            if at >= open_epoch {
                return Err(Error::DoNotRetry(format!(
                    "region {} is open here at epoch {at}; an open at epoch {open_epoch} is stale",
                    info.id
                )));
            }
        }
        if let Some(r) = self.rs.region(info.id) {
            // Open at an older epoch: the master reassigned it here; it stays open.
            tracing::info!(region = %r.name(), open_epoch, "region reassigned to the server holding it");
        } else {
            let dir = self.region_dir(table, info.id);
            let r = self.rs.open_region(&dir, info, &Arc::new(table.clone()))?;
            // A split's or merge's new region reads its parents' files until a compaction
            // rewrites them; only then may it split or merge again, and the parents go.
            if r.has_references() {
                self.rs.request_compaction(&r);
            }
            self.host(r);
        }
        epochs.regions.insert(info.id, open_epoch);
        Ok(())
    }

    fn close_region(&self, master_epoch: u64, region_id: u64) -> Result<()> {
        let mut epochs = self.epochs.lock();
        epochs.check_master(master_epoch)?;
        if let Some(r) = self.rs.region(region_id) {
            // Out of the data path first: requests then find it gone, not closing.
            self.unhost(region_id);
            if let Err(e) = self.rs.close_region(&r) {
                self.host(r);
                return Err(e);
            }
        }
        epochs.regions.remove(&region_id);
        Ok(())
    }

    fn report(&self, master_epoch: u64) -> Result<ServerReport> {
        self.epochs.lock().check_master(master_epoch)?;
        Ok(ServerReport {
            server: self.name(),
            regions: self.hosted_regions(),
        })
    }

    fn split_point(&self, master_epoch: u64, region_id: u64) -> Result<Option<bytes::Bytes>> {
        self.epochs.lock().check_master(master_epoch)?;
        let r = self.region(region_id)?;
        if r.has_references() {
            return Err(Error::DoNotRetry(format!(
                "Split region {} failed: it still reads its parent's files; compact it first",
                r.name()
            )));
        }
        r.split_point()
    }

    fn check_clock(&self, master_epoch: u64, master_now_ms: i64, max_skew_ms: u64) -> Result<()> {
        self.epochs.lock().check_master(master_epoch)?;
        let now = self.rs.now_ms();
        let skew = now.abs_diff(master_now_ms);
        if skew <= max_skew_ms {
            return Ok(());
        }
        let why = format!(
            "region server {}'s clock ({now} ms) is {skew} ms from the master's ({master_now_ms} ms), more than the {max_skew_ms} ms allowed (hbase.master.maxclockskew); fix the clock (NTP) and start it again",
            self.name()
        );
        self.abort(&why);
        Err(Error::DoNotRetry(why))
    }

    fn flush_region(&self, master_epoch: u64, region_id: u64, how: Compaction) -> Result<()> {
        self.epochs.lock().check_master(master_epoch)?;
        let Some(r) = self.rs.region(region_id) else {
            return Ok(());
        };
        r.flush()?;
        match how {
            Compaction::None => Ok(()),
            Compaction::Minor => r.compact(false),
            Compaction::Major => r.compact(true),
        }
    }
}
