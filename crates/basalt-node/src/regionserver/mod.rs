//! The region server (HBase's `HRegionServer`): hosts regions and owns what a server owns.
//!
//! A region server owns its WAL (`wal/<host>,<port>,<start code>/`: one log per server start,
//! so that another server can replay it), its sequence ids, the block cache, memstore
//! accounting and flow control, and the flush and compaction workers. It opens a region at
//! an open sequence id above everything the region has stored (HBase's openSeqNum), closes
//! it (stop serving, flush, release), and reports its regions and their loads.
//!
//! It knows nothing of the catalog. Where the master must act (a region grew past its split
//! size; a region stopped reading its parents' files) it sends a [`MasterRequest`] on a
//! channel, so a region server runs, and is tested, without a master; and the master asks
//! of it only what [`RegionServerServices`] lists.
//!
//! # Recovery at start
//! Segments of earlier servers' logs (the other directories under `wal/`, and the segments
//! older versions wrote in `wal/` itself) are replayed into the regions once they are open
//! ([`RegionServer::recover`]), then adopted by this server's log, which deletes them once
//! every region has flushed past them, as it deletes its own. Directories they leave empty
//! go at the next start.
//!
//! # Lock order
//! `online` is a leaf: held only to read or replace an entry, never across a call into a
//! region, the WAL or the workers. The workers' locks are leaves too (`workers.rs`).

mod workers;

pub use workers::BackgroundConfig;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::Sender;
use std::sync::Arc;

use basalt_model::{Result, TableDescriptor};
use parking_lot::RwLock;

use crate::options::{EngineStatsSnapshot, Options};
use basalt_storage::archive::Archive;
use basalt_storage::block_cache::{BlockCache, CacheStats};
use basalt_storage::env::Env;
use basalt_storage::region::{
    BackgroundEvent, EngineStats, Region, RegionConfig, RegionInfo, RegionServices,
};
use basalt_storage::wal::{replay, Wal};
use workers::Workers;

/// What a region server asks of the master (HBase's `RegionServerStatusService`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum MasterRequest {
    /// The region (by id) has grown past its split size.
    Split(u64),
    /// A region stopped reading the files of the regions it took over from: the catalog
    /// janitor may free them.
    RunJanitor,
    /// The master's own, at shutdown: ends its chore thread.
    Stop,
}

/// The channel from a region server to its master; it counts requests not yet served, so
/// that a wait for background work covers the master's part of it.
#[derive(Clone, Debug)]
pub(crate) struct MasterQueue {
    tx: Sender<MasterRequest>,
    pending: Arc<AtomicUsize>,
}

impl MasterQueue {
    /// A queue and the receiving end the master's chore thread reads.
    pub fn new() -> (MasterQueue, std::sync::mpsc::Receiver<MasterRequest>) {
        let (tx, rx) = std::sync::mpsc::channel();
        let pending = Arc::new(AtomicUsize::new(0));
        (MasterQueue { tx, pending }, rx)
    }

    /// Queues `r`; a master that has stopped drops it (it is asked again later).
    pub fn send(&self, r: MasterRequest) {
        self.pending.fetch_add(1, Ordering::SeqCst);
        if self.tx.send(r).is_err() {
            self.pending.fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// Requests queued and not yet served.
    pub fn pending(&self) -> &Arc<AtomicUsize> {
        &self.pending
    }
}

/// A server's name as `hbase:meta` and the WAL directory write it: `host,port,start code`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerName {
    pub host: String,
    pub port: u16,
    /// When the server started (ms): tells two runs of one host and port apart.
    pub start_code: i64,
}

impl ServerName {
    /// The name of a server starting now on the host and port `options` give.
    pub fn starting_now(options: &Options) -> ServerName {
        ServerName {
            host: options.server_host.clone(),
            port: options.server_port,
            start_code: options.env.now_ms(),
        }
    }
}

impl std::fmt::Display for ServerName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{},{},{}", self.host, self.port, self.start_code)
    }
}

/// What the master asks of a region server (HBase's `AdminService`: open, close, flush,
/// compact). The master holds a region server only as this.
pub(crate) trait RegionServerServices: Send + Sync + std::fmt::Debug {
    /// The server's name.
    fn server_name(&self) -> &ServerName;
    /// Opens the region stored in `dir` and starts serving it.
    fn open_region(
        &self,
        dir: &Path,
        info: &RegionInfo,
        table: &Arc<TableDescriptor>,
    ) -> Result<Arc<Region>>;
    /// Opens a region the workers do not look after and the global memstore measure does
    /// not count (`hbase:meta`'s mirror, which is never flushed).
    fn open_unmanaged(
        &self,
        dir: &Path,
        info: &RegionInfo,
        table: &Arc<TableDescriptor>,
    ) -> Result<Region>;
    /// Stops serving `region`, flushes it and releases it. On failure it serves on.
    fn close_region(&self, region: &Arc<Region>) -> Result<()>;
    /// Serves a region closed by [`RegionServerServices::close_region`] again (a split or
    /// merge that did not happen).
    fn reopen_region(&self, region: &Arc<Region>);
    /// Flushes `region` and lets the workers look at it after.
    fn flush_region(&self, region: &Region) -> Result<()>;
    /// Asks the compactor to look at `region` (a region reading its parents' files).
    fn request_compaction(&self, region: &Region);
    /// Deletes WAL segments every region has flushed past.
    fn retire_wal(&self) -> Result<()>;
}

/// Regions a server has open, by id.
#[derive(Debug, Default)]
pub(crate) struct OnlineRegions(RwLock<HashMap<u64, Arc<Region>>>);

impl OnlineRegions {
    pub fn get(&self, id: u64) -> Option<Arc<Region>> {
        self.0.read().get(&id).cloned()
    }

    /// Every online region now; the guard is dropped before this returns.
    pub fn all(&self) -> Vec<Arc<Region>> {
        self.0.read().values().cloned().collect()
    }

    fn insert(&self, r: Arc<Region>) {
        self.0.write().insert(r.info().id, r);
    }

    fn remove(&self, id: u64) {
        self.0.write().remove(&id);
    }
}

/// A region server.
#[derive(Debug)]
pub(crate) struct RegionServer {
    name: ServerName,
    /// What every region it opens gets of it.
    services: RegionServices,
    online: Arc<OnlineRegions>,
    workers: Workers,
    /// Earlier logs' segments, one list per log, until [`RegionServer::recover`] reads them.
    earlier: parking_lot::Mutex<Vec<Vec<PathBuf>>>,
}

impl RegionServer {
    /// Starts a region server over the data directory `root`: creates its log and starts its
    /// workers. Regions are opened afterwards, then [`RegionServer::recover`] replays
    /// earlier logs into them.
    ///
    /// # Errors
    /// `Io` creating the log or listing earlier ones; a worker thread failed to start.
    pub fn start(root: &Path, options: &Options, master: MasterQueue) -> Result<Self> {
        let name = ServerName::starting_now(options);
        RegionServer::start_with(root, options, master, true, name)
    }

    /// [`RegionServer::start`] as `name`, taking up earlier logs only with `adopt_earlier`:
    /// in a cluster the other directories under `wal/` are other servers' logs, live or
    /// left to the master's recovery, never this server's to replay.
    ///
    /// # Errors
    /// As [`RegionServer::start`].
    pub fn start_with(
        root: &Path,
        options: &Options,
        master: MasterQueue,
        adopt_earlier: bool,
        name: ServerName,
    ) -> Result<Self> {
        let env = options.env.clone();
        let wal_root = root.join("wal");
        let own = wal_root.join(name.to_string());
        env.create_dir_all(&wal_root)?;
        let earlier = if adopt_earlier {
            earlier_logs(&env, &wal_root, &own)?
        } else {
            Vec::new()
        };
        let wal = Wal::open(&env, &own, options.wal_roll_size_bytes)?;
        let config = RegionConfig {
            archive: Arc::new(Archive::new(&env, root)),
            time_to_purge_deletes_ms: options.time_to_purge_deletes_ms,
            max_cell_size_bytes: options.max_cell_size_bytes,
            max_row_size_bytes: options.max_row_size_bytes,
            max_filesize_bytes: options.max_filesize_bytes,
            block_cache: BlockCache::new(options.block_cache_bytes),
            memstore_total: Arc::new(AtomicUsize::new(0)),
            stats: Arc::new(EngineStats::default()),
        };
        let services = RegionServices {
            env,
            config,
            wal,
            seq: Arc::new(AtomicU64::new(0)),
        };
        let online = Arc::new(OnlineRegions::default());
        let workers = Workers::start(
            options.background.clone(),
            &services,
            Arc::clone(&online),
            master,
        )?;
        Ok(RegionServer {
            name,
            services,
            online,
            workers,
            earlier: parking_lot::Mutex::new(earlier),
        })
    }

    /// Replays the earlier logs (and this log's own segments, if a server of the same name
    /// wrote them) into the online regions and raises the sequence id past everything
    /// stored; then starts the log's background sync. With `hold`, every segment is kept
    /// (a region failed to open, and its unflushed edits are only there).
    ///
    /// # Errors
    /// A corrupt segment (a torn tail of a log's last segment is cut away, not an error);
    /// `Io`.
    pub fn recover(&self, hold: bool) -> Result<()> {
        if hold {
            self.workers.hold_wal();
        }
        let regions: HashMap<u64, Arc<Region>> = self
            .online
            .all()
            .into_iter()
            .map(|r| (r.info().id, r))
            .collect();
        let mut apply = |edit: basalt_storage::wal::WalEdit| {
            if let Some(r) = regions.get(&edit.region_id) {
                r.replay(edit.seq_id, edit.cells);
            }
            Ok(())
        };
        let env = &self.services.env;
        // This log's own segments first: `adopt` puts the earlier logs' among them.
        let mut max = self.services.wal.recover(&mut apply)?;
        let earlier = std::mem::take(&mut *self.earlier.lock());
        for log in earlier {
            let infos = replay::replay_paths(env, &log, &mut apply)?;
            max = infos.iter().map(|s| s.max_seq_id).fold(max, u64::max);
            let segments = infos.iter().map(|s| s.max_seq_id).zip(log).collect();
            self.services.wal.adopt(segments);
        }
        let stored = regions.values().map(|r| r.max_stored_seq_id()).max();
        let seq = &self.services.seq;
        seq.fetch_max(max.max(stored.unwrap_or(0)), Ordering::SeqCst);
        self.services.wal.start_background_sync();
        Ok(())
    }

    /// The server's name.
    pub fn name(&self) -> &ServerName {
        &self.name
    }

    /// The online region `id`.
    pub fn region(&self, id: u64) -> Option<Arc<Region>> {
        self.online.get(id)
    }

    /// Every online region.
    pub fn online_regions(&self) -> Vec<Arc<Region>> {
        self.online.all()
    }

    /// Waits while `region` or the server holds too much unflushed data (flow control).
    ///
    /// # Errors
    /// `RegionTooBusy` (retryable).
    pub fn before_write(&self, region: &Region) -> Result<()> {
        self.workers.before_write(region)
    }

    /// Asks for the flushes a write may have made due.
    pub fn after_write(&self, region: &Region) {
        self.workers.after_write(region);
    }

    /// Waits until no flush or compaction is queued or running, after any roll asked for.
    ///
    /// # Errors
    /// A flush or compaction failed since the last wait.
    pub fn wait_idle(&self) -> Result<()> {
        // A roll asked for is done first: it may ask for flushes (too many segments).
        self.services.wal.maybe_roll();
        self.workers.wait_idle()
    }

    /// Whether no flush, compaction or WAL roll is asked for or running.
    pub fn is_idle(&self) -> bool {
        self.workers.is_idle() && !self.services.wal.roll_pending()
    }

    /// Counters of flushes, compactions, write stalls and WAL syncs.
    pub fn stats(&self) -> EngineStatsSnapshot {
        let s = &self.services.config.stats;
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        EngineStatsSnapshot {
            flushes: get(&s.flushes),
            flushed_bytes: get(&s.flushed_bytes),
            minor_compactions: get(&s.minor_compactions),
            major_compactions: get(&s.major_compactions),
            compacted_bytes_read: get(&s.compacted_bytes_read),
            compacted_bytes_written: get(&s.compacted_bytes_written),
            delayed_writes: get(&s.delayed_writes),
            refused_writes: get(&s.refused_writes),
            background_errors: self.workers.error_count(),
            memstore_bytes: self.services.config.memstore_total.load(Ordering::Relaxed) as u64,
            wal_syncs: self.services.wal.sync_count(),
            periodic_checks: self.workers.periodic_checks(),
        }
    }

    /// The most recent flushes, compactions, splits and merges, oldest first.
    pub fn recent_events(&self) -> Vec<BackgroundEvent> {
        self.services
            .config
            .stats
            .events
            .lock()
            .iter()
            .cloned()
            .collect()
    }

    /// The block cache's counters and size.
    pub fn block_cache_stats(&self) -> CacheStats {
        self.services.config.block_cache.stats()
    }

    /// The server's clock (ms since the epoch).
    pub fn now_ms(&self) -> i64 {
        self.services.env.now_ms()
    }

    /// Whether the master fenced this server's log: the server must abort.
    pub fn wal_fenced(&self) -> bool {
        self.services.wal.is_fenced()
    }

    /// WAL segment files kept, earlier logs' included.
    pub fn wal_segment_count(&self) -> usize {
        self.services.wal.segment_count()
    }

    /// Where files the server's regions stop reading are set aside.
    pub fn archive(&self) -> &Arc<Archive> {
        &self.services.config.archive
    }

    /// Flushes every region (HBase flushes regions as it closes them, so the next start has
    /// no log to replay), retires the log and stops the workers.
    ///
    /// # Errors
    /// The final WAL sync failed. A failed flush is logged, not returned: the log keeps
    /// what it did not write.
    pub fn close(&self) -> Result<()> {
        let mut flushed = true;
        for r in self.online.all() {
            if let Err(e) = r.flush() {
                flushed = false;
                tracing::warn!(region = %r.name(), error = %e, "flush at close failed; the WAL keeps its edits");
            }
        }
        let wal = &self.services.wal;
        let retired = if flushed {
            wal.roll_now().and_then(|()| self.workers.retire_wal())
        } else {
            Ok(())
        };
        if let Err(e) = retired {
            tracing::warn!(error = %e, "retiring the WAL at close failed; the next start replays it");
        }
        self.workers.shutdown();
        wal.shutdown()
    }

    /// Stops the workers after their current job.
    pub fn shutdown(&self) {
        self.workers.shutdown();
    }
}

impl RegionServerServices for RegionServer {
    fn server_name(&self) -> &ServerName {
        &self.name
    }

    /// The region opens at an open sequence id above everything it has stored: the server's
    /// sequence id is raised past its files (and the recovered edits it replays and flushes
    /// first) before any write can take one.
    fn open_region(
        &self,
        dir: &Path,
        info: &RegionInfo,
        table: &Arc<TableDescriptor>,
    ) -> Result<Arc<Region>> {
        let r = Region::open(&self.services, dir, info.clone(), Arc::clone(table))?;
        // What a dead server's log held for it (a cluster's recovery) goes in before it serves.
        r.replay_recovered_edits()?;
        let stored = r.max_stored_seq_id();
        let seq = &self.services.seq;
        let open_seq_id = seq.fetch_max(stored, Ordering::SeqCst).max(stored) + 1;
        tracing::debug!(region = %r.name(), open_seq_id, "opened region");
        let r = Arc::new(r);
        self.online.insert(Arc::clone(&r));
        Ok(r)
    }

    fn open_unmanaged(
        &self,
        dir: &Path,
        info: &RegionInfo,
        table: &Arc<TableDescriptor>,
    ) -> Result<Region> {
        let mut services = self.services.clone();
        services.config.memstore_total = Arc::default();
        let r = Region::open(&services, dir, info.clone(), Arc::clone(table))?;
        self.services
            .seq
            .fetch_max(r.max_stored_seq_id(), Ordering::SeqCst);
        Ok(r)
    }

    fn close_region(&self, region: &Arc<Region>) -> Result<()> {
        region.close()?;
        self.online.remove(region.info().id);
        Ok(())
    }

    fn reopen_region(&self, region: &Arc<Region>) {
        region.reopen();
        self.online.insert(Arc::clone(region));
    }

    fn flush_region(&self, region: &Region) -> Result<()> {
        region.flush()?;
        self.workers.after_flush(region);
        Ok(())
    }

    fn request_compaction(&self, region: &Region) {
        self.workers.request_compaction(region.info().id);
    }

    fn retire_wal(&self) -> Result<()> {
        self.workers.retire_wal()
    }
}

/// The directories under `root` (the data directory's `wal/`) that hold logs, oldest first:
/// `root` itself (one log per data directory, as older versions kept it), then each
/// server's directory by start code.
///
/// # Errors
/// `Io` listing `root`.
pub(crate) fn log_dirs(env: &Env, root: &Path) -> Result<Vec<PathBuf>> {
    let mut servers: Vec<(i64, PathBuf)> = env
        .list(root)?
        .into_iter()
        .filter(|n| !n.ends_with(".wal") && !n.contains(".damaged-"))
        .map(|n| {
            let start_code = n.rsplit(',').next().and_then(|s| s.parse().ok());
            (start_code.unwrap_or(0), root.join(n))
        })
        .collect();
    servers.sort();
    let mut dirs = vec![root.to_owned()];
    dirs.extend(servers.into_iter().map(|(_, d)| d));
    Ok(dirs)
}

/// The segments of log directory `dir`, in order.
///
/// # Errors
/// `Io` listing `dir`.
pub(crate) fn log_segments(env: &Env, dir: &Path) -> Result<Vec<PathBuf>> {
    let ids = replay::list_segments(env, dir)?;
    Ok(ids
        .into_iter()
        .map(|id| dir.join(replay::segment_name(id)))
        .collect())
}

/// Segments of the logs in `root` other than `own`, one list per log, oldest first.
/// Server directories with nothing left in them are removed.
fn earlier_logs(env: &Env, root: &Path, own: &Path) -> Result<Vec<Vec<PathBuf>>> {
    let mut logs = Vec::new();
    for dir in log_dirs(env, root)?.into_iter().filter(|d| d != own) {
        let log = log_segments(env, &dir)?;
        if !log.is_empty() {
            logs.push(log);
        } else if dir != root && env.list(&dir)?.is_empty() {
            // Retired to the last segment. (Damaged copies set aside stay, with their
            // directory.)
            env.remove_dir_all(&dir)?;
        }
    }
    Ok(logs)
}

#[cfg(test)]
mod tests;
