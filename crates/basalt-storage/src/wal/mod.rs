//! The write-ahead log: one per database, shared by all regions (docs/formats/wal.md).
//!
//! # Thread safety
//! Any number of threads append and sync concurrently. `state` (buffer and current segment) and
//! `sync` (what is durable) are separate locks; the lock order is `roll` before `state` before
//! `sync`, and the sync leader never holds `sync` while it takes `state`.
//!
//! # Rolling
//! An append that takes a segment past the roll size only asks for a roll and wakes the
//! background sync thread; that thread, or any sync leader before it, performs the roll once
//! its sync is done (HBase's LogRoller), holding `roll` but not
//! `state` while the next segment is created and synced. Under `state` it only swaps segments,
//! and only when every byte written to the old one is synced, so no fsync ever runs under
//! the append lock on this path. Segment ids come from one counter, so a segment made ahead of
//! time and a heal never take the same id; a segment made ahead and overtaken by a heal is
//! removed, never installed out of order.
//!
//! # Invariants
//! 1. `SyncState::synced <= WalState::appended`: positions count bytes ever appended, so a
//!    writer's ticket is covered once `synced >= ticket`.
//! 2. Bytes reach the file in append order: only the holder of `state` writes the buffer.
//! 3. After a failed write or sync no write is acknowledged until the log heals: the failed
//!    segment is cut back to its last synced byte and everything after that byte (kept in
//!    memory in `unsynced` and `buffer`) is written to a new segment and synced. So an
//!    acknowledged write is never followed by a silent gap, a torn record is never left in a
//!    segment that is not the last, and writing resumes once the disk does (space freed).
//! 4. `unsynced` holds exactly the bytes from absolute position `unsynced_from` written to the
//!    current segment and not yet known synced; `segment_start` is the absolute position of
//!    the current segment's first record.
//! 5. A log another writer has fenced (shared storage: it took the log's next chunk) never
//!    heals: healing would cut the fencer's chunk away and write on in a new segment.
//! 6. A local segment is made at its full size (the roll size and a buffer more), zeros past
//!    its records, so a synced append does not grow the file: fdatasync then flushes the
//!    data alone, not the file's new size with it (a third less time a sync on ext4,
//!    `BENCHMARKS.md`). Up to `ZEROED_AHEAD_BYTES` past its records are written zeros,
//!    kept so as appends go on, so a synced append does not allocate blocks either: those
//!    are allocated once every half window, by the write of the next zeros. Closing a
//!    segment cuts it back to its records; after a crash, a segment may still end in zeros,
//!    which replay takes as the end of its records ([`replay`]). Every segment but the
//!    current one was synced whole before the next was begun, so those zeros never stand
//!    for a record that was acknowledged.
//! 7. A writer waiting for a sync parks in `SyncState::waiters`, registered under `sync`
//!    while a leader syncs, and the leader's end releases exactly the writers its sync
//!    covered (all of them when it failed) and one other, who leads the next sync. So every
//!    parked writer is covered, failed, or behind a leader to come, and a sync's end wakes
//!    the writers it freed at once, each on its own: a condition variable woke them all, and
//!    each then waited its turn for the lock (`BENCHMARKS.md`, fillsync32).

mod group_commit;
mod record;
pub mod replay;
pub mod split;

use group_commit::{unpark_all, SyncState};
pub use record::WalEdit;
pub use replay::SegmentInfo;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use basalt_model::{Cell, Durability, Error, Result};
use parking_lot::{Condvar, Mutex};

use crate::env::{Env, WritableFile};

/// Default size at which a segment is rolled.
pub const DEFAULT_ROLL_SIZE_BYTES: u64 = 64 << 20;
/// How long an ASYNC_WAL edit may wait for its sync at most.
pub const ASYNC_SYNC_INTERVAL: Duration = Duration::from_millis(100);
/// Buffered bytes beyond which an appender writes the buffer out itself.
const MAX_BUFFER_BYTES: usize = 1 << 20;
/// How far past its records a local segment keeps zeros written, at most (invariant 6): a
/// sync into blocks not yet allocated writes their allocation too. With 1 MiB, 32 synced
/// writers made 85–88k puts a second against 57–67k with a hole; 256 KiB and 4 MiB did no
/// better (`BENCHMARKS.md`).
const ZEROED_AHEAD_BYTES: u64 = 1 << 20;

/// A position in the log that a writer waits on.
pub type Ticket = u64;

/// The write-ahead log.
#[derive(Debug)]
pub struct Wal {
    dir: PathBuf,
    env: Env,
    roll_size_bytes: u64,
    state: Mutex<WalState>,
    sync: Mutex<SyncState>,
    shutdown: Mutex<bool>,
    shutdown_cond: Condvar,
    /// Successful syncs of the log (group commits).
    syncs: std::sync::atomic::AtomicU64,
    /// `WalState::closed.len()`, readable without the lock (the write path checks it).
    closed_count: std::sync::atomic::AtomicUsize,
    /// The next segment id to hand out.
    next_segment_id: std::sync::atomic::AtomicU64,
    /// Held by the one thread rolling (lock order: before `state`).
    roll: Mutex<()>,
    /// `WalState::roll_wanted`, readable without the lock (ASYNC_WAL writers check it).
    roll_asked: std::sync::atomic::AtomicBool,
    /// Called after each roll, `roll` held (HBase's `WALActionsListener.postLogRoll`): the
    /// region server checks whether too many segments are kept.
    roll_listener: std::sync::OnceLock<Listener>,
}

/// What [`Wal::on_roll`] registers.
pub type RollListener = Box<dyn Fn() + Send + Sync>;

struct Listener(RollListener);

impl std::fmt::Debug for Listener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RollListener")
    }
}

#[derive(Debug)]
struct WalState {
    buffer: Vec<u8>,
    appended: u64,
    segment: WritableFile,
    segment_id: u64,
    segment_bytes: u64,
    segment_max_seq: u64,
    /// Segments no longer written, oldest first: `(max seq id, path)`.
    closed: Vec<(u64, PathBuf)>,
    failed: Option<String>,
    /// Another writer took the log on shared storage (`wal-chunks.md`, "Fencing"): the
    /// failure is final, and the log never heals (invariant 5).
    fenced: bool,
    unsynced: Vec<u8>,
    unsynced_from: u64,
    segment_start: u64,
    /// The current segment passed the roll size: the next sync leader rolls.
    roll_wanted: bool,
    /// A next segment made ahead of time (created, header synced), with its id.
    spare: Option<(u64, WritableFile)>,
}

impl Wal {
    /// Opens the log in `dir` and starts a new segment after the existing ones, which stay
    /// for [`Wal::recover`] to read.
    ///
    /// # Errors
    /// `Io` listing the directory or creating the segment.
    pub fn open(env: &Env, dir: &Path, roll_size_bytes: u64) -> Result<Arc<Wal>> {
        env.create_dir_all(dir)?;
        let existing = replay::list_segments(env, dir)?;
        let next_id = existing.last().map_or(1, |id| id + 1);
        let segment = new_segment(env, dir, next_id, roll_size_bytes)?;
        // Until recovery reads them, old segments must be kept whatever is flushed.
        let closed: Vec<(u64, PathBuf)> = existing
            .iter()
            .map(|id| (u64::MAX, dir.join(replay::segment_name(*id))))
            .collect();
        let closed_count = std::sync::atomic::AtomicUsize::new(closed.len());
        Ok(Arc::new(Wal {
            dir: dir.to_owned(),
            env: env.clone(),
            roll_size_bytes,
            state: Mutex::new(WalState {
                buffer: Vec::with_capacity(64 << 10),
                appended: 0,
                segment,
                segment_id: next_id,
                segment_bytes: record::HEADER_LEN as u64,
                segment_max_seq: 0,
                closed,
                failed: None,
                fenced: false,
                unsynced: Vec::new(),
                unsynced_from: 0,
                segment_start: 0,
                roll_wanted: false,
                spare: None,
            }),
            sync: Mutex::new(SyncState::default()),
            shutdown: Mutex::new(false),
            shutdown_cond: Condvar::new(),
            syncs: std::sync::atomic::AtomicU64::new(0),
            closed_count,
            next_segment_id: std::sync::atomic::AtomicU64::new(next_id + 1),
            roll: Mutex::new(()),
            roll_asked: std::sync::atomic::AtomicBool::new(false),
            roll_listener: std::sync::OnceLock::new(),
        }))
    }

    /// Replays the segments that existed at open through `apply`, in order; a torn tail of
    /// the newest of them is truncated. Returns the highest sequence id seen.
    ///
    /// # Errors
    /// Corruption of a segment, `Io`, or an error from `apply`.
    pub fn recover(&self, apply: impl FnMut(WalEdit) -> Result<()>) -> Result<u64> {
        let paths: Vec<PathBuf> = self
            .state
            .lock()
            .closed
            .iter()
            .map(|(_, p)| p.clone())
            .collect();
        let infos = replay::replay_paths(&self.env, &paths, apply)?;
        let mut st = self.state.lock();
        for (slot, info) in st.closed.iter_mut().zip(&infos) {
            slot.0 = info.max_seq_id;
        }
        Ok(infos.iter().map(|s| s.max_seq_id).max().unwrap_or(0))
    }

    /// Starts the background thread that syncs ASYNC_WAL edits. It holds only a weak
    /// reference, so it ends when the log is dropped or [`Wal::shutdown`] is called.
    pub fn start_background_sync(self: &Arc<Self>) {
        let weak = Arc::downgrade(self);
        std::thread::Builder::new()
            .name("basalt-wal-sync".into())
            .spawn(move || loop {
                let Some(wal) = weak.upgrade() else { return };
                {
                    let mut stop = wal.shutdown.lock();
                    if *stop {
                        return;
                    }
                    wal.shutdown_cond.wait_for(&mut stop, ASYNC_SYNC_INTERVAL);
                    if *stop {
                        return;
                    }
                }
                let target = wal.state.lock().appended;
                // A failure is sticky in the log's state; writers see it on their next call.
                let _ = wal.sync(target, false);
                wal.maybe_roll();
            })
            .map(drop)
            .unwrap_or_else(|_| ());
    }

    /// Appends one edit (a row mutation's cells, all with `seq_id`) and returns the ticket to
    /// wait on for durability. Nothing is written for `SkipWal`.
    ///
    /// # Errors
    /// The log's sticky failure, or an I/O error writing a full buffer or rolling a segment.
    pub fn append(&self, region_id: u64, seq_id: u64, cells: &[Cell]) -> Result<Ticket> {
        let mut st = self.state.lock();
        if st.failed.is_some() {
            self.heal(&mut st)?;
        }
        self.push(&mut st, region_id, seq_id, cells)
    }

    /// Encodes one edit into the buffer (state locked); writes the buffer when full and rolls
    /// the segment when it is.
    fn push(
        &self,
        st: &mut WalState,
        region_id: u64,
        seq_id: u64,
        cells: &[Cell],
    ) -> Result<Ticket> {
        let before = st.buffer.len();
        record::encode_record(&mut st.buffer, region_id, seq_id, cells);
        let len = (st.buffer.len() - before) as u64;
        st.appended += len;
        st.segment_bytes += len;
        st.segment_max_seq = st.segment_max_seq.max(seq_id);
        let ticket = st.appended;
        if st.segment_bytes >= self.roll_size_bytes && !st.roll_wanted {
            st.roll_wanted = true;
            self.roll_asked
                .store(true, std::sync::atomic::Ordering::Relaxed);
            // Wakes the background sync thread, the roller when no writer syncs (ASYNC_WAL).
            self.shutdown_cond.notify_all();
        }
        if st.buffer.len() >= MAX_BUFFER_BYTES {
            write_buffer(st)?;
        }
        Ok(ticket)
    }

    /// Appends one edit whose sequence id `begin` hands out while the log is locked, so that
    /// edits enter the log in sequence-id order: a group sync that covers an edit then covers
    /// every edit with a smaller id, and a writer waiting for the ids below its own to
    /// complete (HBase's `completeAndWait`) waits for no later sync. Returns the id and the
    /// append's outcome; `Err` when the log could not take the edit and no id was handed out.
    ///
    /// # Errors
    /// The log's sticky failure could not be healed (no id handed out); or, inside the
    /// returned pair, an I/O error writing a full buffer or rolling a segment.
    pub fn append_sequenced(
        &self,
        region_id: u64,
        cells: &mut [Cell],
        begin: impl FnOnce() -> u64,
    ) -> Result<(u64, Result<Ticket>)> {
        let mut st = self.state.lock();
        if st.failed.is_some() {
            self.heal(&mut st)?;
        }
        let seq_id = begin();
        cells.iter_mut().for_each(|c| c.seq_id = seq_id);
        Ok((seq_id, self.push(&mut st, region_id, seq_id, cells)))
    }

    /// Waits until `ticket` is durable as `durability` requires: returns at once for
    /// `AsyncWal` and `SkipWal`.
    ///
    /// # Errors
    /// The write or sync failed; the log refuses further writes.
    pub fn sync_for(&self, ticket: Ticket, durability: Durability) -> Result<()> {
        match durability {
            Durability::SyncWal | Durability::UseDefault => self.sync(ticket, false),
            Durability::FsyncWal => self.sync(ticket, true),
            Durability::AsyncWal | Durability::SkipWal => {
                // No sync leader may come by soon: a writer that finds a roll asked for does
                // it (outside the append lock), so segments stay near the roll size.
                if self.roll_asked.load(std::sync::atomic::Ordering::Relaxed) {
                    self.maybe_roll();
                }
                Ok(())
            }
        }
    }

    /// The position up to which every byte is synced (tickets at or below it are durable).
    #[must_use]
    pub fn synced(&self) -> Ticket {
        self.sync.lock().synced
    }

    /// Waits until every byte up to `ticket` is written and synced (group commit: one waiter
    /// syncs for all).
    ///
    /// # Errors
    /// The write or sync failed.
    pub fn sync(&self, ticket: Ticket, fsync: bool) -> Result<()> {
        let mut s = self.sync.lock();
        s.fsync_wanted |= fsync;
        loop {
            if let Some(why) = &s.failed {
                if why.contains("fenced") {
                    // Final: the log never heals (invariant 5).
                    return Err(Error::DoNotRetry(format!("WAL sync failed: {why}")));
                }
                // Retryable: the next append heals the log (invariant 3).
                return Err(Error::io(
                    "WAL sync failed",
                    std::io::Error::other(why.clone()),
                ));
            }
            if s.synced >= ticket {
                return Ok(());
            }
            if s.syncing {
                // Parked until a sync's end releases this writer (invariant 7).
                let me = std::thread::current();
                if !s.waiters.iter().any(|(_, t)| t.id() == me.id()) {
                    s.waiters.push((ticket, me));
                }
                drop(s);
                std::thread::park();
                s = self.sync.lock();
                continue;
            }
            s.syncing = true;
            // A writer woken early (a spurious wake-up) leads with its entry still parked.
            let me = std::thread::current().id();
            s.waiters.retain(|(_, t)| t.id() != me);
            let full = std::mem::take(&mut s.fsync_wanted);
            drop(s);
            let result = self.write_and_sync(full);
            s = self.sync.lock();
            s.syncing = false;
            let rolled = match result {
                Ok(target) => {
                    s.synced = s.synced.max(target);
                    true
                }
                Err(e) => {
                    s.failed = Some(e.to_string());
                    false
                }
            };
            let released = s.released();
            drop(s);
            unpark_all(released);
            if rolled {
                // The group is released first: the roll's fsyncs delay no waiter.
                self.maybe_roll();
            }
            s = self.sync.lock();
        }
    }

    /// Rolls to a new segment if an append asked for it (see the module's "Rolling"): makes
    /// the next segment without holding `state`, then swaps it in once everything written to
    /// the current one is synced. A failure to make the segment is logged and tried again at
    /// the next sync; the log goes on in the current segment.
    pub fn maybe_roll(&self) {
        // One roller at a time; a sync inside this roll, or another thread, finds it held.
        let Some(_roll) = self.roll.try_lock() else {
            return;
        };
        for _ in 0..3 {
            let (wanted, spare) = {
                let st = self.state.lock();
                (st.roll_wanted && st.failed.is_none(), st.spare.is_some())
            };
            if !wanted {
                return;
            }
            if !spare {
                let id = self.take_segment_id();
                match new_segment(&self.env, &self.dir, id, self.roll_size_bytes) {
                    Ok(f) => self.state.lock().spare = Some((id, f)),
                    Err(e) => {
                        tracing::warn!(error = %e, "making the next WAL segment failed; will retry");
                        return;
                    }
                }
            }
            let target = {
                let mut st = self.state.lock();
                if st.failed.is_some() {
                    return;
                }
                if st.unsynced.is_empty() {
                    let closed = self.swap_to_spare(&mut st);
                    drop(st);
                    // Cut back to its records (invariant 6) outside `state`.
                    drop(closed);
                    if let Some(Listener(f)) = self.roll_listener.get() {
                        f();
                    }
                    return;
                }
                st.appended
            };
            // A full buffer went to the old segment after the last sync: sync it, outside
            // `state`, and look again.
            if self.sync(target, false).is_err() {
                return;
            }
        }
    }

    /// Registers what to call after each roll (once; later calls are ignored). It runs with
    /// the roll lock held and no other lock of the log, and must take none of the log's.
    pub fn on_roll(&self, f: RollListener) {
        let _ = self.roll_listener.set(Listener(f));
    }

    /// Whether a roll is asked for or running.
    #[must_use]
    pub fn roll_pending(&self) -> bool {
        self.roll.is_locked() || self.state.lock().roll_wanted
    }

    /// Installs the spare as the current segment; the old one, every byte of it written and
    /// synced, is closed and returned for the caller to drop once `state` is released. The
    /// buffer (not yet written) goes to the new segment.
    fn swap_to_spare(&self, st: &mut WalState) -> Option<WritableFile> {
        let (id, segment) = self.valid_spare(st)?;
        let old = std::mem::replace(&mut st.segment, segment);
        st.closed.push((st.segment_max_seq, old.path().to_owned()));
        self.closed_count
            .store(st.closed.len(), std::sync::atomic::Ordering::Relaxed);
        st.segment_id = id;
        let buffered = st.buffer.len() as u64;
        st.segment_bytes = record::HEADER_LEN as u64 + buffered;
        // The buffered records' own maximum is not tracked: the old segment's serves as an
        // upper bound, which only keeps the new segment a little longer.
        if buffered == 0 {
            st.segment_max_seq = 0;
        }
        st.segment_start = st.appended - buffered;
        st.unsynced.clear();
        st.unsynced_from = st.segment_start;
        st.roll_wanted = false;
        self.roll_asked
            .store(false, std::sync::atomic::Ordering::Relaxed);
        Some(old)
    }

    /// The spare, if it is newer than the current segment; a spare a heal or a roll has
    /// overtaken is removed (installing it would put segments out of order).
    fn valid_spare(&self, st: &mut WalState) -> Option<(u64, WritableFile)> {
        let (id, f) = st.spare.take()?;
        if id > st.segment_id {
            return Some((id, f));
        }
        let path = f.path().to_owned();
        drop(f);
        if let Err(e) = self.env.remove_log(&path) {
            tracing::warn!(error = %e, "leaving an unused WAL segment behind");
        }
        None
    }

    /// A new segment for a heal or a roll under `state`: the spare if there is a valid one,
    /// else one made now.
    fn next_segment(&self, st: &mut WalState) -> Result<(u64, WritableFile)> {
        if let Some(spare) = self.valid_spare(st) {
            return Ok(spare);
        }
        let id = self.take_segment_id();
        Ok((
            id,
            new_segment(&self.env, &self.dir, id, self.roll_size_bytes)?,
        ))
    }

    fn take_segment_id(&self) -> u64 {
        self.next_segment_id
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst)
    }

    /// Leader's work: write the buffer, then sync without holding the state lock.
    fn write_and_sync(&self, full: bool) -> Result<u64> {
        let (target, mut file) = {
            let mut st = self.state.lock();
            write_buffer(&mut st)?;
            invariant!(
                st.unsynced_from + st.unsynced.len() as u64 == st.appended,
                "WAL unsynced bytes do not end at the appended position (invariant 4)"
            );
            (st.appended, st.segment.try_clone()?)
        };
        let r = if full {
            file.sync_all()
        } else {
            file.sync_data()
        };
        let mut st = self.state.lock();
        match &r {
            Err(e) => fail(&mut st, e),
            Ok(()) => {
                self.syncs
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                // A heal may have moved on to a new segment meanwhile; it left nothing unsynced
                // before its own start.
                let done = usize::try_from(target.saturating_sub(st.unsynced_from))
                    .unwrap_or(usize::MAX)
                    .min(st.unsynced.len());
                st.unsynced.drain(..done);
                st.unsynced_from += done as u64;
            }
        }
        r.map(|()| target)
    }

    /// Recovers from a failed write or sync (invariant 3). On failure the log stays failed
    /// and the next append tries again.
    fn heal(&self, st: &mut WalState) -> Result<()> {
        if st.fenced {
            return Err(Error::DoNotRetry(format!(
                "the WAL in {} was fenced by another writer ({}); this server writes nothing more to it",
                self.dir.display(),
                st.failed.as_deref().unwrap_or("fenced")
            )));
        }
        let synced = self.sync.lock().synced.max(st.segment_start);
        let skip = usize::try_from(synced.saturating_sub(st.unsynced_from))
            .unwrap_or(usize::MAX)
            .min(st.unsynced.len());
        let mut tail = st.unsynced[skip..].to_vec();
        tail.extend_from_slice(&st.buffer);
        let keep = record::HEADER_LEN as u64 + (synced - st.segment_start);
        self.env.truncate(st.segment.path(), keep)?;
        let (next, mut segment) = self.next_segment(st)?;
        if let Err(e) = segment.write_all(&tail).and_then(|()| segment.sync_data()) {
            let path = segment.path().to_owned();
            drop(segment);
            let _ = self.env.remove_log(&path);
            return Err(e);
        }
        let old = std::mem::replace(&mut st.segment, segment);
        st.closed.push((st.segment_max_seq, old.path().to_owned()));
        self.closed_count
            .store(st.closed.len(), std::sync::atomic::Ordering::Relaxed);
        st.segment_id = next;
        st.segment_bytes = record::HEADER_LEN as u64 + tail.len() as u64;
        st.segment_start = synced;
        st.roll_wanted = false;
        self.roll_asked
            .store(false, std::sync::atomic::Ordering::Relaxed);
        st.buffer.clear();
        st.unsynced.clear();
        st.unsynced_from = st.appended;
        st.failed = None;
        let mut s = self.sync.lock();
        s.synced = s.synced.max(st.appended);
        s.failed = None;
        unpark_all(s.all_waiters());
        tracing::warn!(segment = next, "the WAL recovered from a failed write");
        Ok(())
    }

    /// Closes the current segment now, whatever its size (at a clean close, after every
    /// region flushed, so the closed segment can be retired and nothing is left to replay).
    ///
    /// # Errors
    /// `Io` writing, syncing or creating a segment; the log is then failed until it heals.
    pub fn roll_now(&self) -> Result<()> {
        let _roll = self.roll.lock();
        let mut st = self.state.lock();
        if st.failed.is_some() {
            self.heal(&mut st)?;
        }
        self.roll(&mut st)
    }

    /// Closes the current segment (written and synced) and starts the next, all under
    /// `state`: only for [`Wal::roll_now`], at a clean close, when no writer waits.
    fn roll(&self, st: &mut WalState) -> Result<()> {
        let res = write_buffer(st).and_then(|()| st.segment.sync_data());
        if let Err(e) = res {
            fail(st, &e);
            return Err(e);
        }
        let (next, segment) = self.next_segment(st)?;
        let old = std::mem::replace(&mut st.segment, segment);
        st.closed.push((st.segment_max_seq, old.path().to_owned()));
        self.closed_count
            .store(st.closed.len(), std::sync::atomic::Ordering::Relaxed);
        st.segment_id = next;
        st.segment_bytes = record::HEADER_LEN as u64;
        st.segment_max_seq = 0;
        st.segment_start = st.appended;
        st.unsynced.clear();
        st.unsynced_from = st.appended;
        st.roll_wanted = false;
        self.roll_asked
            .store(false, std::sync::atomic::Ordering::Relaxed);
        let appended = st.appended;
        let mut s = self.sync.lock();
        s.synced = s.synced.max(appended);
        invariant!(
            s.synced <= st.appended,
            "WAL synced {} past appended {} (invariant 1)",
            s.synced,
            st.appended
        );
        unpark_all(s.all_waiters());
        Ok(())
    }

    /// Deletes closed segments whose every edit is at or below `flushed_through`: no region
    /// needs them for recovery any more.
    ///
    /// # Errors
    /// `Io` removing a segment.
    pub fn retire_segments(&self, flushed_through: u64) -> Result<()> {
        let doomed: Vec<PathBuf> = {
            let mut st = self.state.lock();
            let keep_from = st.closed.iter().position(|(max, _)| *max > flushed_through);
            let n = keep_from.unwrap_or(st.closed.len());
            let doomed = st.closed.drain(..n).map(|(_, p)| p).collect();
            self.closed_count
                .store(st.closed.len(), std::sync::atomic::Ordering::Relaxed);
            doomed
        };
        let mut dirs: Vec<&Path> = Vec::new();
        for p in &doomed {
            self.env.remove_log(p)?;
            if let Some(d) = p.parent().filter(|d| !dirs.contains(d)) {
                dirs.push(d);
            }
        }
        for d in dirs {
            self.env.sync_dir(d)?;
        }
        Ok(())
    }

    /// Takes over the segments of an earlier log (a previous server's, already replayed
    /// with [`replay::replay_paths`]) as closed segments older than its own: each goes, as
    /// its own do, once every region has flushed past its highest sequence id.
    pub fn adopt(&self, segments: Vec<(u64, PathBuf)>) {
        let mut st = self.state.lock();
        let own = std::mem::replace(&mut st.closed, segments);
        st.closed.extend(own);
        self.closed_count
            .store(st.closed.len(), std::sync::atomic::Ordering::Relaxed);
    }

    /// Whether another writer fenced the log (the master recovering this server): it will
    /// never take a write again.
    #[must_use]
    pub fn is_fenced(&self) -> bool {
        let s = self.sync.lock();
        s.failed
            .as_deref()
            .is_some_and(|why| why.contains("fenced"))
    }

    /// Successful syncs of the log since it opened (each may cover many writers).
    #[must_use]
    pub fn sync_count(&self) -> u64 {
        self.syncs.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// How many closed segments the log keeps (no lock taken).
    #[must_use]
    pub fn closed_segments(&self) -> usize {
        self.closed_count.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// How many closed segments the log keeps, and the highest sequence id in the oldest of
    /// them (the edits a forced flush must cover for it to go).
    #[must_use]
    pub fn oldest_closed(&self) -> Option<(usize, u64)> {
        let st = self.state.lock();
        st.closed.first().map(|(max, _)| (st.closed.len(), *max))
    }

    /// Number of segment files the log currently keeps (closed plus current).
    #[must_use]
    pub fn segment_count(&self) -> usize {
        self.state.lock().closed.len() + 1
    }

    /// Writes and syncs everything appended, stops the background thread, and cuts the
    /// segments back to their records (invariant 6) now, though a thread may hold the log a
    /// little longer.
    ///
    /// # Errors
    /// The final sync failed.
    pub fn shutdown(&self) -> Result<()> {
        *self.shutdown.lock() = true;
        self.shutdown_cond.notify_all();
        let target = self.state.lock().appended;
        self.sync(target, false)?;
        let mut st = self.state.lock();
        st.segment.cut_back();
        if let Some((_, spare)) = &mut st.spare {
            spare.cut_back();
        }
        Ok(())
    }
}

/// Records a failed write or sync; a fence is final (invariant 5).
fn fail(st: &mut WalState, e: &Error) {
    st.failed = Some(e.to_string());
    st.fenced |= matches!(e, Error::DoNotRetry(m) if m.contains("fenced"));
}

fn write_buffer(st: &mut WalState) -> Result<()> {
    if st.buffer.is_empty() {
        return Ok(());
    }
    if let Err(e) = st.segment.write_all(&st.buffer) {
        // Part of the buffer may be in the file: nothing more may follow it there.
        st.failed = Some(e.to_string());
        return Err(e);
    }
    let WalState {
        buffer, unsynced, ..
    } = st;
    unsynced.extend_from_slice(buffer);
    buffer.clear();
    Ok(())
}

/// Makes segment `id`: its header synced, then its room for a segment's records
/// (invariant 6), and that synced too. The header is synced first, so no crash leaves a
/// segment of the full size without its header.
fn new_segment(env: &Env, dir: &Path, id: u64, roll_size_bytes: u64) -> Result<WritableFile> {
    let path = dir.join(replay::segment_name(id));
    let mut f = env.create_log(&path)?;
    let room = roll_size_bytes.saturating_add(MAX_BUFFER_BYTES as u64);
    let made = f
        .write_all(&record::header())
        .and_then(|()| f.sync_data())
        .and_then(|()| f.preallocate(room, ZEROED_AHEAD_BYTES.min(roll_size_bytes)))
        .and_then(|()| f.sync_data())
        .and_then(|()| env.sync_dir(dir));
    if let Err(e) = made {
        drop(f);
        let _ = env.remove_log(&path);
        return Err(e);
    }
    Ok(f)
}

#[cfg(test)]
mod tests;
