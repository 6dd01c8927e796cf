//! Writes gathered into mini-batches: the writes that arrive while a batch is being written
//! are written together, with one WAL sync, as HBase's region server writes the mutations
//! its handlers take from the call queue (`doMiniBatchMutation`). The native API's Mutate
//! calls (`grpc::mini_batch`) and the Bigtable API's MutateRow requests
//! (`bigtable::combine`) are gathered here; each says how its calls are written
//! ([`Writer`]).
//!
//! A write waits for its WAL sync, so it runs on tokio's blocking pool, never on an event
//! loop. One writer on that pool takes the calls waiting, writes them, answers each, and
//! takes the calls that came meanwhile, until none wait. The first call to find no writer
//! starts one.
//!
//! One writer, not one per batch: the log syncs one batch at a time, so a second writer only
//! waits for the first one's sync, and each hand-off of the sync between two writers is a
//! thread parked and woken. With a task started for every batch, YCSB A through the native
//! API ran at 0.84–1.18 times Thrift's rate (mean 0.99 in seven rounds); with one writer
//! that goes on from batch to batch, at 1.08–1.45 (mean 1.27; `BENCHMARKS.md`).
//!
//! A writer that finds no call waiting waits [`LINGER`] for one before it ends. At YCSB A's
//! and F's rates the next calls come a round trip after a batch's answers; a writer that
//! ended at once left each to start another, on whichever of the pool's idle threads woke
//! (the pool keeps threads ten seconds, and after reads from disk it holds a dozen). Waiting,
//! the writer stays the one thread that writes: in twelve runs each, YCSB A 29.6k–36.4k
//! operations a second (mean 32.6k) and F 20.2k–23.1k (21.3k), against 26.5k–36.3k (31.2k)
//! and 16.9k–22.0k (19.9k) (`BENCHMARKS.md`).
//!
//! A writer held up in a batch (its region blocks writes until a flush frees memory, for up
//! to `busy_wait`) must not hold up the other regions' writes: a call that comes when no
//! writer has taken a batch for [`STALLED`] starts another writer.
//!
//! # Invariants
//! 1. Whenever calls wait in a [`Queue`], a writer runs that will take them: a writer ends
//!    only when, under the lock calls are queued under, it finds none waiting.
//! 2. A batch takes at most [`GATHERED`] calls, so no call waits behind an unbounded batch.
//! 3. A call starts a writer only when none runs, or when none has taken a batch for
//!    [`STALLED`]; so one writer runs while batches keep going, and at most one more starts
//!    every [`STALLED`] while they are held up.
//! 4. A writer that panics (a bug) hands its place on: with calls waiting it starts the
//!    writer that takes them, so invariant 1 holds; the calls it held are answered with an
//!    error when their senders drop.
//! 5. A writer waiting for a call is woken by the next one queued, which starts no writer:
//!    the wait counts as a batch taken (invariant 3), and it checks for calls under the lock
//!    they are queued under before it waits.

use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

/// The most calls one batch writes; the rest wait for the next (invariant 2).
pub(crate) const GATHERED: usize = 64;
/// How long the writers may go without taking a batch, while calls wait, before a call
/// starts another (invariant 3): far longer than a batch takes (a WAL sync and at most
/// [`GATHERED`] calls' checks and inserts, well under a millisecond on a local disk), and
/// far shorter than the ten seconds a region blocking writes may hold its writer. On a disk
/// whose syncs take longer a second writer may start; it waits on the same sync, as every
/// batch's own task once did.
pub(crate) const STALLED: Duration = Duration::from_millis(5);
/// How long a writer that found no call waiting waits for one before it ends: longer than
/// a round trip and a client's turn between a batch's answers and the next calls (a few
/// hundred microseconds), and far shorter than [`STALLED`]. Waiting costs a parked thread.
const LINGER: Duration = Duration::from_millis(1);

/// What gathers one kind of call into batches and writes them.
pub(crate) trait Writer: Clone + Send + 'static {
    /// A call waiting to be written, with where its answer goes.
    type Call: Send + 'static;
    /// Where the calls wait.
    fn queue(&self) -> &Queue<Self::Call>;
    /// Writes one batch and answers each of its calls.
    fn write(&self, calls: Vec<Self::Call>);
}

/// Calls waiting for a writer (lock order: a leaf).
pub struct Queue<C> {
    forming: Mutex<Forming<C>>,
    /// Where a writer that found no call waits for one (invariant 5).
    arrived: Condvar,
    linger: Duration,
}

impl<C> Default for Queue<C> {
    fn default() -> Self {
        Queue::with_linger(LINGER)
    }
}

impl<C> Queue<C> {
    fn with_linger(linger: Duration) -> Self {
        Queue {
            forming: Mutex::new(Forming {
                calls: Vec::new(),
                writers: 0,
                waiting: 0,
                progressed: None,
            }),
            arrived: Condvar::new(),
            linger,
        }
    }

    /// Queues `call`; true when it must start a writer (invariant 3). A waiting writer is
    /// woken for it (invariant 5).
    fn push(&self, call: C) -> bool {
        let (start, waiting) = {
            let mut forming = self.forming.lock();
            (forming.queue(call, Instant::now()), forming.waiting > 0)
        };
        if waiting {
            self.arrived.notify_one();
        }
        start
    }

    /// The next batch's calls, waiting up to the queue's linger for one when none wait;
    /// `None` when none came, and the writer taking them has then ended (invariant 1).
    fn next_batch(&self) -> Option<Vec<C>> {
        let mut forming = self.forming.lock();
        if forming.calls.is_empty() {
            let now = Instant::now();
            forming.wait_begins(now);
            let deadline = now + self.linger;
            while forming.calls.is_empty()
                && !self.arrived.wait_until(&mut forming, deadline).timed_out()
            {}
            forming.waiting -= 1;
        }
        forming.take(Instant::now())
    }

    /// Writers started and not yet ended.
    #[cfg(test)]
    pub(crate) fn writers(&self) -> usize {
        self.forming.lock().writers
    }
}

impl<C> std::fmt::Debug for Queue<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let forming = self.forming.lock();
        f.debug_struct("mini_batch::Queue")
            .field("waiting", &forming.calls.len())
            .field("writers", &forming.writers)
            .finish()
    }
}

struct Forming<C> {
    calls: Vec<C>,
    /// Writers started and not yet ended (invariant 1).
    writers: usize,
    /// Writers waiting for a call (invariant 5).
    waiting: usize,
    /// When a writer last started or took a batch (invariant 3).
    progressed: Option<Instant>,
}

impl<C> Forming<C> {
    /// Queues a call; true when it must start a writer (invariant 3).
    fn queue(&mut self, call: C, now: Instant) -> bool {
        self.calls.push(call);
        let stalled = self.progressed.is_none_or(|p| now - p >= STALLED);
        let start = self.writers == 0 || stalled;
        if start {
            self.writers += 1;
            self.progressed = Some(now);
        }
        start
    }

    /// A writer found no call and waits for one: it is ready to take a batch, so a call that
    /// comes meanwhile does not find the writers held up (invariant 5).
    fn wait_begins(&mut self, now: Instant) {
        self.waiting += 1;
        self.progressed = Some(now);
    }

    /// Takes the next batch's calls; `None` when none wait, and then the writer taking them
    /// has ended (invariant 1).
    fn take(&mut self, now: Instant) -> Option<Vec<C>> {
        if self.calls.is_empty() {
            self.writers -= 1;
            return None;
        }
        self.progressed = Some(now);
        let n = self.calls.len().min(GATHERED);
        Some(self.calls.drain(..n).collect())
    }
}

/// Queues `call` for the next batch; starts a writer when invariant 3 asks for one.
pub(crate) fn submit<W: Writer>(w: &W, call: W::Call) {
    if w.queue().push(call) {
        let w = w.clone();
        tokio::task::spawn_blocking(move || writer(&w));
    }
}

/// A writer: writes batch after batch until no call waits, nor comes while it waits.
fn writer<W: Writer>(w: &W) {
    let _writing = Writing(w);
    // The lock is let go before each batch is written.
    while let Some(calls) = w.queue().next_batch() {
        w.write(calls);
    }
}

/// A running writer, which hands its place on if it panics (invariant 4).
struct Writing<'a, W: Writer>(&'a W);

impl<W: Writer> Drop for Writing<'_, W> {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            return;
        }
        let mut forming = self.0.queue().forming.lock();
        if forming.calls.is_empty() {
            forming.writers -= 1;
        } else {
            let w = self.0.clone();
            tokio::task::spawn_blocking(move || writer(&w));
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    #![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

    use std::sync::Arc;

    use basalt_model::ops::Put;
    use basalt_model::{ColumnFamilyDescriptor, TableDescriptor, TableName};
    use basalt_node::Database;
    use tokio::sync::oneshot;

    use super::*;

    /// A call of the test writer: a number, answered with the batch it was written in.
    struct Numbered(u32, oneshot::Sender<usize>);

    /// Writes numbers into a list, one batch after another.
    #[derive(Clone, Default)]
    struct Recorder {
        queue: Arc<Queue<Numbered>>,
        batches: Arc<Mutex<Vec<Vec<u32>>>>,
    }

    impl Writer for Recorder {
        type Call = Numbered;
        fn queue(&self) -> &Queue<Numbered> {
            &self.queue
        }
        fn write(&self, calls: Vec<Numbered>) {
            let mut batches = self.batches.lock();
            batches.push(calls.iter().map(|c| c.0).collect());
            for Numbered(_, answer) in calls {
                let _ = answer.send(batches.len());
            }
        }
    }

    impl Recorder {
        /// Queues calls `0..n` without starting a writer for them.
        fn queued(&self, n: u32) -> Vec<oneshot::Receiver<usize>> {
            let mut forming = self.queue.forming.lock();
            (0..n)
                .map(|i| {
                    let (answer, batch) = oneshot::channel();
                    forming.calls.push(Numbered(i, answer));
                    batch
                })
                .collect()
        }
    }

    pub(crate) fn runtime(workers: usize) -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(workers)
            .enable_time()
            .build()
            .unwrap()
    }

    /// `f`'s output; a call still unanswered after a minute fails the test.
    pub(crate) async fn answered<T>(f: impl std::future::Future<Output = T>) -> T {
        let waited = tokio::time::timeout(Duration::from_secs(60), f);
        waited.await.expect("a call was never answered")
    }

    /// Polls `cond` for up to a minute.
    pub(crate) fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while !cond() {
            assert!(Instant::now() < deadline, "{what} never happened");
            std::thread::yield_now();
        }
    }

    #[test]
    fn a_batch_takes_at_most_its_share_and_a_writer_ends_when_none_wait() {
        let r = Recorder::default();
        let _batches = r.queued(2 * GATHERED as u32 + 5);
        let mut forming = r.queue.forming.lock();
        forming.writers = 1;
        let now = Instant::now();
        let sizes: Vec<usize> = (0..3)
            .map(|_| forming.take(now).map_or(0, |calls| calls.len()))
            .collect();
        assert_eq!(sizes, [GATHERED, GATHERED, 5]);
        assert_eq!(forming.writers, 1);
        assert!(forming.take(now).is_none());
        assert_eq!(forming.writers, 0);
    }

    #[test]
    fn a_call_starts_a_writer_only_when_none_runs_or_none_took_a_batch_lately() {
        let ms = Duration::from_millis;
        let t0 = Instant::now();
        let mut f = Queue::<u32>::default().forming.into_inner();
        assert!(f.queue(1, t0), "no writer runs: the call starts one");
        assert!(!f.queue(2, t0 + ms(1)), "one runs and has just started");
        assert_eq!(f.take(t0 + ms(2)), Some(vec![1, 2]));
        let took = t0 + ms(2);
        assert!(!f.queue(3, took + STALLED - ms(1)));
        assert!(f.queue(4, took + STALLED), "the writer is held up");
        assert_eq!(f.writers, 2);
        // One more writer an interval, however many calls come meanwhile.
        assert!(!f.queue(5, took + STALLED + ms(1)));
        assert!(f.queue(6, took + 2 * STALLED), "both are held up");
        assert_eq!(f.writers, 3);
        // The writers end one by one once the calls are taken; then a call starts one again.
        assert_eq!(f.take(took + 2 * STALLED), Some(vec![3, 4, 5, 6]));
        for left in [2, 1, 0] {
            assert!(f.take(took + 2 * STALLED).is_none());
            assert_eq!(f.writers, left);
        }
        assert!(f.queue(7, took + 2 * STALLED + ms(1)));
    }

    #[test]
    fn a_call_that_finds_a_writer_waiting_starts_none_however_long_since_its_last_batch() {
        let ms = Duration::from_millis;
        let t0 = Instant::now();
        let mut f = Queue::<u32>::default().forming.into_inner();
        assert!(f.queue(1, t0));
        assert_eq!(f.take(t0), Some(vec![1]));
        // Long after its batch, the writer finds no call and waits for one.
        f.wait_begins(t0 + 10 * STALLED);
        assert!(
            !f.queue(2, t0 + 10 * STALLED + ms(1)),
            "the waiting writer takes it"
        );
        assert_eq!(f.writers, 1);
    }

    #[test]
    fn a_waiting_writer_is_woken_by_the_next_call_and_ends_when_none_comes() {
        // A wait far longer than the test: only the call's wake-up can end it in time.
        let q = Arc::new(Queue::<u32>::with_linger(Duration::from_secs(600)));
        q.forming.lock().writers = 1;
        let (took, batch) = std::sync::mpsc::channel();
        let writer = std::thread::spawn({
            let q = Arc::clone(&q);
            move || took.send(q.next_batch()).unwrap()
        });
        eventually("the writer's wait", || q.forming.lock().waiting == 1);
        assert!(!q.push(7), "a call for a waiting writer starts none");
        let taken = batch.recv_timeout(Duration::from_secs(60));
        assert_eq!(taken, Ok(Some(vec![7])), "the call woke the writer");
        writer.join().unwrap();
        assert_eq!(q.forming.lock().waiting, 0);
        // No call comes: once its wait is over the writer ends.
        let q = Queue::<u32>::with_linger(Duration::from_millis(1));
        q.forming.lock().writers = 1;
        assert_eq!(q.next_batch(), None);
        assert_eq!(q.writers(), 0);
    }

    #[test]
    fn calls_beyond_one_batch_s_share_are_written_by_its_writer_s_next_batches() {
        let r = Recorder::default();
        // More calls wait than one batch takes, and no writer runs yet: the submit below
        // starts one, which must go on to the calls its first batch left.
        let n = 2 * GATHERED as u32 + 7;
        let mut answers = r.queued(n);
        runtime(1).block_on(async {
            let (answer, batch) = oneshot::channel();
            submit(&r, Numbered(n, answer));
            answers.push(batch);
            let mut got = Vec::new();
            for a in answers {
                got.push(answered(a).await.unwrap());
            }
            assert_eq!(got.iter().filter(|&&b| b == 1).count(), GATHERED);
            assert_eq!(
                got.last(),
                Some(&3),
                "the last call came into the third batch"
            );
        });
        let written: Vec<u32> = r.batches.lock().concat();
        assert_eq!(
            written,
            (0..=n).collect::<Vec<_>>(),
            "each call once, in order"
        );
        eventually("the writer's end", || r.queue.writers() == 0);
    }

    #[test]
    fn a_writer_that_panics_hands_its_place_on() {
        let r = Recorder::default();
        let answers = r.queued(3);
        r.queue.forming.lock().writers = 1;
        let panicking = |r: &Recorder| {
            let r = r.clone();
            tokio::task::spawn_blocking(move || {
                let _writing = Writing(&r);
                panic!("a writer's bug");
            })
        };
        runtime(1).block_on(async {
            // Calls wait behind it: another writer writes them.
            assert!(panicking(&r).await.is_err());
            for a in answers {
                assert_eq!(answered(a).await.unwrap(), 1);
            }
        });
        assert_eq!(r.batches.lock().concat(), [0, 1, 2]);
        eventually("the writers' end", || r.queue.writers() == 0);
        // None wait: it just ends.
        r.queue.forming.lock().writers = 1;
        runtime(1).block_on(async { assert!(panicking(&r).await.is_err()) });
        assert_eq!(r.queue.writers(), 0);
    }

    /// A database whose table `stall` has a region that blocks writes, the one of the rows
    /// before `s`: its flushes wait while it has two store files (no compaction runs by
    /// itself), and it holds twice its 1 MiB flush size. The region of the rows from `s` on
    /// and table `free` take writes. Both tables have the one family `f`.
    pub(crate) fn with_a_region_blocking_writes(dir: &std::path::Path) -> Database {
        let mut background = basalt_node::BackgroundConfig {
            memstore_block_multiplier: 2,
            blocking_wait: Duration::from_secs(600),
            busy_wait: Duration::from_secs(600),
            ..basalt_node::BackgroundConfig::default()
        };
        background.compaction.automatic = false;
        background.compaction.blocking_store_files = 2;
        let options = basalt_node::Options {
            background,
            ..basalt_node::Options::default()
        };
        let db = Database::open_with(dir, options).unwrap();
        for name in ["stall", "free"] {
            let name = TableName::parse(name).unwrap();
            let mut desc = TableDescriptor::new(&name, [ColumnFamilyDescriptor::new("f")]);
            desc.memstore_flushsize_bytes = 1 << 20;
            desc.configuration
                .insert("hbase.table.sanity.checks".into(), "false".into());
            let splits = if name.qualifier() == "stall" {
                vec![bytes::Bytes::from_static(b"s")]
            } else {
                Vec::new()
            };
            db.create_table(desc, &splits).unwrap();
        }
        let stall = db.table("stall").unwrap();
        let value = vec![b'v'; 1000];
        let mut i = 0;
        let mut put = || {
            i += 1;
            stall.put(Put::new(format!("r{i:06}")).add("f", "q", value.clone()))
        };
        for _ in 0..2 {
            put().unwrap();
            db.flush(&TableName::parse("stall").unwrap()).unwrap();
        }
        // Filled to the region's own blocking size, the size its writes are checked against.
        let name = TableName::parse("stall").unwrap();
        let held = || {
            let reports = basalt_api::Connection::admin(&db).region_reports(&name);
            reports.unwrap()[0].load.memstore_bytes
        };
        while held() < 2 << 20 {
            put().unwrap();
        }
        db
    }

    /// Checks that a write to the blocked region of [`with_a_region_blocking_writes`]'
    /// database is held while the region blocks writes, and that a write elsewhere that
    /// comes [`STALLED`] later is answered meanwhile; then frees the region. `held` submits
    /// the first write and `free` the second, each returning its answer: true when written.
    pub(crate) async fn only_the_blocked_region_s_calls_wait<H, F>(
        db: &Database,
        held: impl FnOnce() -> H,
        free: impl FnOnce() -> F,
    ) where
        H: std::future::Future<Output = bool> + Send + 'static,
        F: std::future::Future<Output = bool>,
    {
        let held = tokio::spawn(held());
        eventually("the write's delay", || {
            db.engine_stats().delayed_writes >= 1
        });
        // The one writer is inside its batch, and has been since it took the call before
        // this point: once STALLED has passed, the writers are held up.
        std::thread::sleep(STALLED);
        let free = tokio::time::timeout(Duration::from_secs(30), free()).await;
        let held_meanwhile = !held.is_finished();
        // A compaction clears the pile; the flush goes ahead and the write is made. (Done
        // before any assertion, so a failing test does not wait out the region's block.)
        db.compact(&TableName::parse("stall").unwrap()).unwrap();
        let free = free.expect("a write elsewhere waited on the blocked region");
        assert!(free, "the write elsewhere failed");
        assert!(
            held_meanwhile,
            "the blocked write was answered before the compaction"
        );
        assert!(answered(held).await.unwrap(), "the blocked write failed");
    }
}
