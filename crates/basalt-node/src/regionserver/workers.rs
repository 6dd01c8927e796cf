//! Background flushes and compactions, and the flow control that keeps writers from outrunning
//! them (HBase's MemStoreFlusher, CompactSplit, CompactionChecker and HRegion.checkResources).
//!
//! One flusher thread and one compactor thread serve every region. Writers never flush: they
//! ask for a flush when a region passes its flush size. A writer waits only when a region's
//! memstore passes `flush size × block multiplier` or all memstores pass the global limit; it
//! is refused with a retryable `RegionTooBusy` if that lasts longer than `busy_wait`.
//! A flush of a region with a store at `blockingStoreFiles` waits (up to `blockingWaitTime`)
//! for a compaction first, so memory, not file count, absorbs the burst, and then the writers.
//!
//! A region that grew past its split size, or stopped reading its parents' files, is
//! reported to the master ([`MasterRequest`]); splits and the janitor are the master's.
//!
//! # Thread safety
//! `state` guards both queues; `work` wakes the workers, `progress` wakes waiting writers and
//! [`Workers::wait_idle`]. Workers find regions in the server's online set by id and hold one
//! only while working on it, so a closed region is released.

use std::collections::{HashSet, VecDeque};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use basalt_model::{Error, Result};
use parking_lot::{Condvar, Mutex};

use super::{MasterQueue, MasterRequest, OnlineRegions};
use basalt_storage::compaction::{CompactionConfig, ThroughputBounds};
use basalt_storage::env::Env;
use basalt_storage::region::{EngineStats, Region, RegionServices};
use basalt_storage::wal::Wal;

/// Flow-control and background-work settings, with HBase's defaults.
#[derive(Clone, Debug, PartialEq)]
pub struct BackgroundConfig {
    pub compaction: CompactionConfig,
    /// Compaction throughput limit bounds; `None` for unlimited.
    pub compaction_throughput: Option<ThroughputBounds>,
    /// `hbase.regionserver.global.memstore.size` as bytes (1 GiB).
    pub global_memstore_limit_bytes: usize,
    /// `hbase.hregion.memstore.block.multiplier` (4).
    pub memstore_block_multiplier: u64,
    /// `hbase.hstore.blockingWaitTime` (90 s): how long a flush waits for a compaction when a
    /// store has `blockingStoreFiles`.
    pub blocking_wait: Duration,
    /// How long a writer waits for memory before `RegionTooBusy` (10 s).
    pub busy_wait: Duration,
    /// How often every region is checked for due compactions and periodic flushes (10 s).
    pub compaction_check_interval: Duration,
    /// `hbase.regionserver.maxlogs` (32): past this many closed WAL segments, the regions
    /// holding edits of the oldest are flushed so it can go.
    pub max_logs: usize,
    /// `hbase.regionserver.optionalcacheflushinterval` (1 h): a region whose memstore holds
    /// edits and which has not flushed for this long is flushed; `None` turns it off.
    pub periodic_flush_interval: Option<Duration>,
}

impl Default for BackgroundConfig {
    fn default() -> Self {
        BackgroundConfig {
            compaction: CompactionConfig::default(),
            compaction_throughput: Some(ThroughputBounds::default()),
            global_memstore_limit_bytes: 1 << 30,
            memstore_block_multiplier: 4,
            blocking_wait: Duration::from_secs(90),
            busy_wait: Duration::from_secs(10),
            compaction_check_interval: Duration::from_secs(10),
            max_logs: 32,
            periodic_flush_interval: Some(Duration::from_secs(3600)),
        }
    }
}

/// A queued flush: the region, and when it was first asked for.
#[derive(Debug)]
struct FlushRequest {
    region: u64,
    since: Instant,
}

#[derive(Debug, Default)]
struct State {
    flushes: VecDeque<FlushRequest>,
    /// Regions whose flush is queued or running. A region stays here until its flush ends,
    /// so the writes that come in meanwhile ask for no second one (HBase's
    /// `writestate.flushRequested`, cleared as the flush ends). Its memstore size counts the
    /// snapshot being written until then, and each write saw the region over its flush size:
    /// the second flush, taken right after the first, wrote what had come in meanwhile as a
    /// small file, one more for the compactions to take in and for reads to merge.
    flush_queued: HashSet<u64>,
    compactions: VecDeque<u64>,
    compaction_queued: HashSet<u64>,
    /// Workers in the middle of a job.
    busy: usize,
    shutdown: bool,
}

#[derive(Debug)]
pub(crate) struct Shared {
    cfg: BackgroundConfig,
    env: Env,
    wal: Arc<Wal>,
    seq: Arc<AtomicU64>,
    memstore_total: Arc<AtomicUsize>,
    stats: Arc<EngineStats>,
    online: Arc<OnlineRegions>,
    /// Where splits and the catalog janitor are asked for.
    master: MasterQueue,
    state: Mutex<State>,
    work: Condvar,
    progress: Condvar,
    errors: AtomicU64,
    /// Closed WAL segments when the write path last checked `max_logs`.
    logs_seen: AtomicUsize,
    /// Periodic checks finished (tests wait on it instead of sleeping).
    periodic_checks: AtomicU64,
    /// Set while a region failed to open: its unflushed edits are only in the WAL, so no
    /// segment may go until it is repaired and replayed.
    hold_wal: std::sync::atomic::AtomicBool,
    /// `errors` as the last wait saw it.
    errors_reported: AtomicU64,
    last_error: Mutex<Option<String>>,
}

/// The background workers of one region server.
#[derive(Debug)]
pub(crate) struct Workers {
    shared: Arc<Shared>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

impl Workers {
    /// Starts the flusher and the compactor of the server whose regions get `services`.
    pub fn start(
        cfg: BackgroundConfig,
        services: &RegionServices,
        online: Arc<OnlineRegions>,
        master: MasterQueue,
    ) -> Result<Workers> {
        let shared = Arc::new(Shared {
            cfg,
            env: services.env.clone(),
            wal: Arc::clone(&services.wal),
            seq: Arc::clone(&services.seq),
            memstore_total: Arc::clone(&services.config.memstore_total),
            stats: Arc::clone(&services.config.stats),
            online,
            master,
            state: Mutex::new(State::default()),
            work: Condvar::new(),
            progress: Condvar::new(),
            errors: AtomicU64::new(0),
            periodic_checks: AtomicU64::new(0),
            logs_seen: AtomicUsize::new(0),
            hold_wal: std::sync::atomic::AtomicBool::new(false),
            errors_reported: AtomicU64::new(0),
            last_error: Mutex::new(None),
        });
        // After each roll, as HBase's LogRoller does: too many segments flush the regions
        // that pin the oldest. (Weak: the log must not keep the workers alive.)
        let weak = Arc::downgrade(&shared);
        services.wal.on_roll(Box::new(move || {
            if let Some(s) = weak.upgrade() {
                s.check_logs();
            }
        }));
        let spawn = |name: &str, f: fn(&Shared)| {
            let s = Arc::clone(&shared);
            std::thread::Builder::new()
                .name(name.to_owned())
                .spawn(move || f(&s))
                .map_err(|e| Error::io("starting a background thread", e))
        };
        let threads = vec![
            spawn("basalt-flusher", flusher)?,
            spawn("basalt-compactor", compactor)?,
        ];
        Ok(Workers {
            shared,
            threads: Mutex::new(threads),
        })
    }

    /// Asks the compactor to look at `region` (a region that just took over from split or
    /// merged parents rewrites their files).
    pub fn request_compaction(&self, region: u64) {
        self.shared.request_compaction(region);
    }

    /// Waits while `region` or the database holds too much unflushed data; `RegionTooBusy`
    /// when that lasts past the busy wait.
    ///
    /// # Errors
    /// `RegionTooBusy` (retryable).
    pub fn before_write(&self, region: &Region) -> Result<()> {
        let s = &*self.shared;
        let blocking = region.flush_size_bytes() * s.cfg.memstore_block_multiplier.max(1);
        let over = || {
            let region_over = region.memstore_size_bytes() as u64 >= blocking;
            let global_over =
                s.memstore_total.load(Ordering::Relaxed) >= s.cfg.global_memstore_limit_bytes;
            (region_over, global_over)
        };
        if over() == (false, false) {
            return Ok(());
        }
        s.stats.delayed_writes.fetch_add(1, Ordering::Relaxed);
        let deadline = Instant::now() + s.cfg.busy_wait;
        loop {
            let (region_over, global_over) = over();
            if !region_over && !global_over {
                return Ok(());
            }
            if region_over {
                s.request_flush(region.info().id);
            }
            if global_over {
                s.flush_largest();
            }
            let mut st = s.state.lock();
            if Instant::now() >= deadline || st.shutdown {
                drop(st);
                s.stats.refused_writes.fetch_add(1, Ordering::Relaxed);
                return Err(too_busy(region, blocking, global_over));
            }
            // Re-checked every few milliseconds: a flush elsewhere may free global memory
            // without a notification this writer is waiting on.
            s.progress.wait_for(
                &mut st,
                Duration::from_millis(20).min(deadline - Instant::now()),
            );
        }
    }

    /// Asks for a flush once `region` passes its flush size (or the database its low mark),
    /// and for forced flushes once the WAL holds more than `max_logs` closed segments.
    pub fn after_write(&self, region: &Region) {
        let s = &*self.shared;
        s.check_logs();
        if region.memstore_size_bytes() as u64 >= region.flush_size_bytes() {
            s.request_flush(region.info().id);
        }
        let low_mark = s.cfg.global_memstore_limit_bytes / 100 * 95;
        if s.memstore_total.load(Ordering::Relaxed) >= low_mark {
            s.flush_largest();
        }
    }

    /// After a flush done outside the flusher (an explicit one): asks for a compaction when
    /// the region's stores have gathered enough files, as the flusher does after its own.
    pub fn after_flush(&self, region: &Region) {
        self.shared.after_flush(region);
    }

    /// Waits until no flush or compaction is queued or running.
    ///
    /// # Errors
    /// A flush or compaction failed since the last wait (it is retried, so waiting on would
    /// not end while the cause lasts, a full disk say): the error says which and why. The
    /// next wait reports only later failures.
    pub fn wait_idle(&self) -> Result<()> {
        let s = &*self.shared;
        let mut st = s.state.lock();
        loop {
            let errors = s.errors.load(Ordering::Relaxed);
            if s.errors_reported.swap(errors, Ordering::Relaxed) != errors {
                let why = s.last_error.lock().clone().unwrap_or_default();
                return Err(Error::io(
                    "background work failed",
                    std::io::Error::other(why),
                ));
            }
            let idle = st.busy == 0 && st.flushes.is_empty() && st.compactions.is_empty();
            if st.shutdown || idle {
                return Ok(());
            }
            s.progress.wait_for(&mut st, Duration::from_millis(50));
        }
    }

    /// Whether no flush or compaction is queued or running.
    pub fn is_idle(&self) -> bool {
        let st = self.shared.state.lock();
        st.busy == 0 && st.flushes.is_empty() && st.compactions.is_empty()
    }

    /// Deletes WAL segments every region has flushed past.
    ///
    /// # Errors
    /// `Io` removing a segment.
    pub fn retire_wal(&self) -> Result<()> {
        self.shared.retire_wal()
    }

    /// Keeps every WAL segment (a region failed to open, and its edits are only there).
    pub fn hold_wal(&self) {
        self.shared.hold_wal.store(true, Ordering::Relaxed);
    }

    /// Periodic checks (due compactions, periodic flushes, the archive cleaner) finished.
    pub fn periodic_checks(&self) -> u64 {
        self.shared.periodic_checks.load(Ordering::Relaxed)
    }

    /// Background jobs that failed (they are retried).
    pub fn error_count(&self) -> u64 {
        self.shared.errors.load(Ordering::Relaxed)
    }

    /// Stops the workers after their current job; queued work is dropped (the WAL has it).
    pub fn shutdown(&self) {
        self.shared.state.lock().shutdown = true;
        self.shared.work.notify_all();
        self.shared.progress.notify_all();
        let me = std::thread::current().id();
        for t in self.threads.lock().drain(..) {
            // A worker may hold the last handle on the database and end up here itself.
            if t.thread().id() != me {
                let _ = t.join();
            }
        }
    }
}

impl Drop for Workers {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn too_busy(region: &Region, blocking: u64, global: bool) -> Error {
    let name = region.name();
    if global {
        return Error::RegionTooBusy(format!(
            "Above global memstore limit, regionName={name}, server=localhost"
        ));
    }
    Error::RegionTooBusy(format!(
        "Over memstore limit={}, regionName={name}, server=localhost",
        binary_prefix(blocking)
    ))
}

/// Sizes as HBase's `TraditionalBinaryPrefix.long2String(n, "", 1)` writes them: "512.0 M".
fn binary_prefix(n: u64) -> String {
    const UNITS: [&str; 6] = ["", " K", " M", " G", " T", " P"];
    let mut v = n as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit < UNITS.len() - 1 {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        return n.to_string();
    }
    format!("{v:.1}{}", UNITS[unit])
}

impl Shared {
    fn region(&self, id: u64) -> Option<Arc<Region>> {
        self.online.get(id)
    }

    fn all_regions(&self) -> Vec<Arc<Region>> {
        self.online.all()
    }

    fn request_flush(&self, region: u64) {
        let mut st = self.state.lock();
        if st.flush_queued.insert(region) {
            st.flushes.push_back(FlushRequest {
                region,
                since: Instant::now(),
            });
            self.work.notify_all();
        }
    }

    fn request_compaction(&self, region: u64) {
        let mut st = self.state.lock();
        if st.compaction_queued.insert(region) {
            st.compactions.push_back(region);
            self.work.notify_all();
        }
    }

    fn after_flush(&self, region: &Region) {
        let compact = self.cfg.compaction.automatic
            && region.max_store_files() >= self.cfg.compaction.min_files;
        // The compactor also splits: a region grown past its split threshold goes there.
        if compact || region.should_split() {
            self.request_compaction(region.info().id);
        }
    }

    /// What the master must hear after a compaction of `region`: that it has grown past its
    /// split size, or that it stopped reading its parents' files (the janitor may free them).
    /// A master that has gone (the server is stopping) hears nothing, and loses nothing: the
    /// next compaction check asks again.
    fn report_to_master(&self, region: &Region, had_references: bool) {
        if had_references && !region.has_references() {
            self.master.send(MasterRequest::RunJanitor);
        }
        if region.should_split() {
            self.master.send(MasterRequest::Split(region.info().id));
        }
    }

    /// Lets `region`, whose flush ended, be asked for another (`State::flush_queued`). The
    /// writes that came in while it ran asked for none: when they filled the memstore
    /// again, the flush they would have asked for is asked for now.
    fn flush_ended(&self, region: &Region, flushed: bool) {
        let id = region.info().id;
        self.state.lock().flush_queued.remove(&id);
        if flushed && region.memstore_size_bytes() as u64 >= region.flush_size_bytes() {
            self.request_flush(id);
        }
    }

    fn flush_largest(&self) {
        let largest = self
            .all_regions()
            .into_iter()
            .map(|r| (r.memstore_size_bytes(), r.info().id))
            .filter(|(n, _)| *n > 0)
            .max();
        if let Some((_, id)) = largest {
            self.request_flush(id);
        }
    }

    fn retire_wal(&self) -> Result<()> {
        if self.hold_wal.load(Ordering::Relaxed) {
            return Ok(());
        }
        self.retire_segments()?;
        self.flush_for_too_many_logs();
        Ok(())
    }

    /// Checks `maxlogs` once per newly closed segment (after each roll, and on the write
    /// path).
    fn check_logs(&self) {
        let closed = self.wal.closed_segments();
        if closed > self.cfg.max_logs && self.logs_seen.swap(closed, Ordering::Relaxed) != closed {
            self.flush_for_too_many_logs();
        }
    }

    /// HBase's `maxlogs`: past the limit, asks for flushes of the regions whose unflushed
    /// edits keep the oldest segment, so that one quiet region cannot pin the whole log.
    fn flush_for_too_many_logs(&self) {
        let Some((closed, oldest_max)) = self.wal.oldest_closed() else {
            return;
        };
        if closed <= self.cfg.max_logs {
            return;
        }
        for r in self.all_regions() {
            if r.min_unflushed_seq_id() <= oldest_max {
                tracing::info!(region = %r.name(), segments = closed, "flushing for too many WAL segments");
                self.request_flush(r.info().id);
            }
        }
    }

    /// Asks for flushes of regions with edits that have waited longer than the periodic
    /// flush interval since their last flush (HBase's PeriodicMemstoreFlusher).
    fn flush_old_edits(&self, now_ms: i64) {
        let Some(interval) = self.cfg.periodic_flush_interval else {
            return;
        };
        let interval_ms = i64::try_from(interval.as_millis()).unwrap_or(i64::MAX);
        for r in self.all_regions() {
            if r.memstore_size_bytes() > 0 && now_ms - r.last_flush_ms() >= interval_ms {
                self.request_flush(r.info().id);
            }
        }
    }

    fn retire_segments(&self) -> Result<()> {
        // Read before the regions: a write that takes an id after this is above it anyway.
        let issued = self.seq.load(Ordering::SeqCst);
        let min = self
            .all_regions()
            .iter()
            .map(|r| r.min_unflushed_seq_id())
            .min()
            .unwrap_or(u64::MAX);
        let through = if min == u64::MAX {
            issued
        } else {
            issued.min(min - 1)
        };
        self.wal.retire_segments(through)
    }

    /// Ends a job: wakes writers and idle-waiters.
    fn finish_job(&self) {
        self.state.lock().busy -= 1;
        self.progress.notify_all();
    }

    fn note_error(&self, what: &str, region: &Region, e: &Error) {
        *self.last_error.lock() = Some(format!("{what} of {} failed: {e}", region.name()));
        self.errors.fetch_add(1, Ordering::Relaxed);
        tracing::warn!(region = %region.name(), error = %e, "{what} failed; will retry");
    }
}

/// Takes the next flush that may run now. A region whose store is at the blocking file count
/// waits (up to `blocking_wait`) for a compaction, which is requested.
fn next_flush(s: &Shared) -> Option<(FlushRequest, Arc<Region>)> {
    let mut st = s.state.lock();
    loop {
        if st.shutdown {
            return None;
        }
        let mut delayed = None;
        for _ in 0..st.flushes.len() {
            let Some(req) = st.flushes.pop_front() else {
                break;
            };
            let Some(region) = s.region(req.region) else {
                st.flush_queued.remove(&req.region);
                continue;
            };
            let stuck = region.max_store_files() >= s.cfg.compaction.blocking_store_files;
            if stuck && req.since.elapsed() < s.cfg.blocking_wait {
                delayed = Some(req.region);
                st.flushes.push_back(req);
                continue;
            }
            st.busy += 1;
            return Some((req, region));
        }
        if let Some(id) = delayed {
            drop(st);
            s.request_compaction(id);
            st = s.state.lock();
        }
        s.work.wait_for(&mut st, Duration::from_millis(100));
    }
}

fn flusher(s: &Shared) {
    while let Some((req, region)) = next_flush(s) {
        let flushed = region.flush();
        s.flush_ended(&region, flushed.is_ok());
        match flushed.and_then(|()| s.retire_wal()) {
            Ok(()) => s.after_flush(&region),
            Err(e) => {
                s.note_error("flush", &region, &e);
                // The snapshot stays in memory; try again after a pause (a full disk, say).
                std::thread::sleep(Duration::from_millis(200));
                s.request_flush(req.region);
            }
        }
        drop(region);
        s.finish_job();
    }
}

fn compactor(s: &Shared) {
    let mut last_check = Instant::now();
    loop {
        let job = {
            let mut st = s.state.lock();
            loop {
                if st.shutdown {
                    return;
                }
                if let Some(id) = st.compactions.pop_front() {
                    st.compaction_queued.remove(&id);
                    st.busy += 1;
                    break Some(id);
                }
                if last_check.elapsed() >= s.cfg.compaction_check_interval {
                    break None;
                }
                let left = s.cfg.compaction_check_interval - last_check.elapsed();
                s.work.wait_for(&mut st, left);
            }
        };
        let Some(id) = job else {
            // The periodic check (HBase's CompactionChecker): due major compactions, and
            // stores that gathered files without a flush asking.
            last_check = Instant::now();
            if s.cfg.compaction.automatic {
                for r in s.all_regions() {
                    s.request_compaction(r.info().id);
                }
            }
            // The periodic flusher's check.
            s.flush_old_edits(s.env.now_ms());
            s.periodic_checks.fetch_add(1, Ordering::Relaxed);
            continue;
        };
        if let Some(region) = s.region(id) {
            let had_references = region.has_references();
            if s.cfg.compaction.automatic {
                let bounds = s.cfg.compaction_throughput.as_ref();
                if let Err(e) = region.compact_by_policy(&s.cfg.compaction, bounds) {
                    s.note_error("compaction", &region, &e);
                }
            }
            s.report_to_master(&region, had_references);
        }
        // A delayed flush may go ahead now.
        s.work.notify_all();
        s.finish_job();
    }
}

#[cfg(test)]
mod tests {
    use super::binary_prefix;

    #[test]
    fn sizes_print_as_hbase_prints_them() {
        assert_eq!(binary_prefix(512 << 20), "512.0 M");
        assert_eq!(binary_prefix(4 << 10), "4.0 K");
        assert_eq!(binary_prefix(1536 << 20), "1.5 G");
        assert_eq!(binary_prefix(100), "100");
    }
}
