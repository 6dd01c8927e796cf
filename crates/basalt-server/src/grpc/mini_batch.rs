//! Mutate calls gathered into mini-batches: the Puts and Deletes that arrive while a write
//! waits for its thread are written together, with one WAL sync, as HBase's region server
//! writes the mutations its handlers take from the call queue (`doMiniBatchMutation`).
//!
//! A write waits for its WAL sync, so it runs on tokio's blocking pool, never on an event
//! loop. One writer on that pool takes the calls waiting, checks each as the call alone would
//! have been checked, writes the rest of each table's calls with one `Table::batch` (a
//! mini-batch per region, one WAL sync for it), answers each call, and takes the calls that
//! came meanwhile, until none wait. The first call to find no writer starts one.
//!
//! One writer, not one per batch: the log syncs one batch at a time, so a second writer only
//! waits for the first one's sync, and each hand-off of the sync between two writers is a
//! thread parked and woken. With a task started for every batch, YCSB A through the native
//! API ran at 0.84–1.18 times Thrift's rate (mean 0.99 in seven rounds); with one writer
//! that goes on from batch to batch, at 1.08–1.45 (mean 1.27; `BENCHMARKS.md`).
//!
//! A writer held up in a batch (its region blocks writes until a flush frees memory, for up
//! to `busy_wait`) must not hold up the other regions' writes: a call that comes when no
//! writer has taken a batch for [`STALLED`] starts another writer.
//!
//! What a client sees is what a call of its own would give: its own error for a mutation
//! refused before writing (malformed, wrong region, unknown family, oversized cell), its own
//! outcome otherwise. Calls of one row in one batch are applied in the order they came, as
//! one caller's would be; calls that overlap in time have no order between them.
//!
//! # Invariants
//! 1. Whenever calls wait in `forming`, a writer runs that will take them: a writer ends only
//!    when, under the lock calls are queued under, it finds none waiting.
//! 2. A batch takes at most [`GATHERED`] calls, so no call waits behind an unbounded batch.
//! 3. A call starts a writer only when none runs, or when none has taken a batch for
//!    [`STALLED`]; so one writer runs while batches keep going, and at most one more starts
//!    every [`STALLED`] while they are held up.

use std::sync::Arc;
use std::time::{Duration, Instant};

use basalt_model::ops::Mutation;
use basalt_model::{Error, Result, RowResult, TableName};
use basalt_proto::convert::mutation_from_pb;
use basalt_proto::pb;
use parking_lot::Mutex;
use tokio::sync::oneshot;

use super::region_check::check_region;
use super::{table, Services};

/// The most calls one batch writes; the rest wait for the next (invariant 2).
pub(crate) const GATHERED: usize = 64;
/// How long the writers may go without taking a batch, while calls wait, before a call
/// starts another (invariant 3): far longer than a batch takes (a WAL sync and at most
/// [`GATHERED`] calls' checks and inserts, well under a millisecond on a local disk), and
/// far shorter than the ten seconds a region blocking writes may hold its writer. On a disk
/// whose syncs take longer a second writer may start; it waits on the same sync, as every
/// batch's own task once did.
const STALLED: Duration = Duration::from_millis(5);

/// What a call's mutation came to.
pub(crate) type Outcome = Result<Option<RowResult>>;

/// The Mutate calls waiting for a writer (lock order: a leaf).
#[derive(Debug, Default)]
pub struct MiniBatches {
    forming: Mutex<Forming>,
}

#[derive(Debug, Default)]
struct Forming {
    calls: Vec<Waiting>,
    /// Writers started and not yet ended (invariant 1).
    writers: usize,
    /// When a writer last started or took a batch (invariant 3).
    progressed: Option<Instant>,
}

impl Forming {
    /// Queues a call; true when it must start a writer (invariant 3).
    fn queue(&mut self, call: Waiting, now: Instant) -> bool {
        self.calls.push(call);
        let stalled = self.progressed.is_none_or(|p| now - p >= STALLED);
        let start = self.writers == 0 || stalled;
        if start {
            self.writers += 1;
            self.progressed = Some(now);
        }
        start
    }

    /// Takes the next batch's calls; `None` when none wait, and then the writer taking them
    /// has ended (invariant 1).
    fn take(&mut self, now: Instant) -> Option<Vec<Waiting>> {
        if self.calls.is_empty() {
            self.writers -= 1;
            return None;
        }
        self.progressed = Some(now);
        let n = self.calls.len().min(GATHERED);
        Some(self.calls.drain(..n).collect())
    }
}

#[derive(Debug)]
struct Waiting {
    request: pb::MutateRequest,
    answer: oneshot::Sender<Outcome>,
}

/// Whether a Mutate call can join a mini-batch: a Put or a Delete. A read-modify-write
/// (Increment, Append) answers with what it read, and goes alone.
#[must_use]
pub(crate) fn joins(request: &pb::MutateRequest) -> bool {
    use pb::mutation::Kind;
    let kind = request.mutation.as_ref().and_then(|m| m.kind.as_ref());
    matches!(kind, Some(Kind::Put(_) | Kind::Delete(_)))
}

impl MiniBatches {
    /// Queues `request` for the next batch and returns where its outcome will come; starts
    /// a writer when invariant 3 asks for one.
    pub(crate) fn submit(
        &self,
        services: &Services,
        request: pb::MutateRequest,
    ) -> oneshot::Receiver<Outcome> {
        let (answer, outcome) = oneshot::channel();
        let start = self
            .forming
            .lock()
            .queue(Waiting { request, answer }, Instant::now());
        if start {
            let services = services.clone();
            tokio::task::spawn_blocking(move || writer(&services));
        }
        outcome
    }
}

/// A writer: writes batch after batch until no call waits.
fn writer(services: &Services) {
    let _writing = Writing(services);
    loop {
        // The lock is let go here, before the batch is written.
        let taken = services.mini_batches.forming.lock().take(Instant::now());
        let Some(calls) = taken else { return };
        write(services, calls);
    }
}

/// A running writer: one that panics (a bug) hands its place on, so invariant 1 holds and
/// the calls behind it are written; those it held are answered with an error when their
/// senders drop.
struct Writing<'a>(&'a Services);

impl Drop for Writing<'_> {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            return;
        }
        let mut forming = self.0.mini_batches.forming.lock();
        if forming.calls.is_empty() {
            forming.writers -= 1;
        } else {
            let services = self.0.clone();
            tokio::task::spawn_blocking(move || writer(&services));
        }
    }
}

/// Writes one batch: each call checked alone, then each table's calls that passed in one
/// `Table::batch`, and every call answered.
fn write(s: &Services, calls: Vec<Waiting>) {
    let mut tables: Vec<Gathered> = Vec::new();
    for Waiting { request, answer } in calls {
        match checked(s, request) {
            Ok((name, t, m)) => match tables.iter_mut().find(|g| g.name == name) {
                Some(g) => g.calls.push((m, answer)),
                None => tables.push(Gathered {
                    name,
                    table: t,
                    calls: vec![(m, answer)],
                }),
            },
            // The caller may have gone (its client reset the stream); nothing to tell.
            Err(e) => drop(answer.send(Err(e))),
        }
    }
    for g in tables {
        let (mutations, answers): (Vec<Mutation>, Vec<_>) = g.calls.into_iter().unzip();
        for (answer, outcome) in answers.into_iter().zip(g.table.batch(mutations)) {
            drop(answer.send(outcome));
        }
    }
}

/// One table's calls of a batch.
struct Gathered {
    name: TableName,
    table: Arc<dyn basalt_api::Table>,
    calls: Vec<(Mutation, oneshot::Sender<Outcome>)>,
}

/// The call's table and mutation, refused as the call alone would refuse it before writing:
/// malformed, sent to a region that does not hold its row, or failing the table's checks.
/// Those passing cannot make `Table::batch` refuse the whole batch, which it does only for
/// a mutation that fails the client's checks, a part of these.
fn checked(
    s: &Services,
    r: pb::MutateRequest,
) -> Result<(TableName, Arc<dyn basalt_api::Table>, Mutation)> {
    let m = r
        .mutation
        .ok_or_else(|| Error::illegal("malformed request: no mutation"))?;
    let m = mutation_from_pb(m)?;
    let name = table(&r.table)?;
    check_region(s, &name, m.row(), r.region.as_deref())?;
    let t = s.conn.table(&name)?;
    t.check(&m)?;
    Ok((name, t, m))
}

/// Awaits a submitted call's outcome, recording it as the `mutate` operation.
///
/// # Errors
/// The batch's task failed before it answered.
pub(crate) async fn outcome(
    s: &Services,
    started: Instant,
    outcome: oneshot::Receiver<Outcome>,
) -> std::result::Result<Outcome, tonic::Status> {
    let metrics = Arc::clone(&s.metrics);
    let out = outcome
        .await
        .map_err(|_| tonic::Status::internal("the write's task failed before it answered"))?;
    metrics.record("mutate", started.elapsed(), out.is_ok());
    Ok(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

    use basalt_model::ops::{Get, Put};
    use basalt_model::{ColumnFamilyDescriptor, TableDescriptor};
    use basalt_node::Database;
    use basalt_proto::convert::mutation_to_pb;

    use super::*;
    use crate::metrics::RequestMetrics;

    /// Services over a database with tables `t` and `u`, each of family `f`.
    fn services(dir: &std::path::Path) -> Services {
        let db = Database::open(dir).unwrap();
        for name in ["t", "u"] {
            let name = TableName::parse(name).unwrap();
            let desc = TableDescriptor::new(&name, [ColumnFamilyDescriptor::new("f")]);
            db.create_table(desc, &[]).unwrap();
        }
        services_over(db)
    }

    fn services_over(db: Database) -> Services {
        Services {
            conn: Arc::new(db.clone()),
            node: Some(db),
            hosted: None,
            scanners: Arc::new(basalt_api::leases::Scanners::new(
                std::time::Duration::from_secs(60),
            )),
            metrics: Arc::new(RequestMetrics::new(&[("native", &super::super::OPS)])),
            region_names: Arc::default(),
            mini_batches: Arc::default(),
        }
    }

    fn put(table: &str, row: &str, family: &str, value: &str) -> pb::MutateRequest {
        let m = Mutation::Put(Put::new(row.to_owned()).add(family.to_owned(), "q", value));
        pb::MutateRequest {
            table: table.to_owned(),
            mutation: Some(mutation_to_pb(&m)),
            region: None,
        }
    }

    fn value(s: &Services, table: &str, row: &str) -> Option<Vec<u8>> {
        let t = s.conn.table(&TableName::parse(table).unwrap()).unwrap();
        let r = t.get(Get::new(row.to_owned())).unwrap();
        r.cells.first().map(|c| c.value().to_vec())
    }

    #[test]
    fn each_call_of_a_batch_gets_its_own_outcome() {
        let dir = tempfile::tempdir().unwrap();
        let s = services(dir.path());
        let mut wrong_region = put("t", "r4", "f", "4");
        wrong_region.region = Some("no-such-region".to_owned());
        let requests = vec![
            put("t", "r1", "f", "1"),
            put("t", "r2", "x", "2"),
            pb::MutateRequest {
                table: "t".to_owned(),
                mutation: None,
                region: None,
            },
            put("u", "r1", "f", "u1"),
            put("t", "r1", "f", "later"),
            wrong_region,
            put("t", "r9", "f", "unheard"),
        ];
        let mut outcomes = Vec::new();
        let calls = requests
            .into_iter()
            .map(|request| {
                let (answer, outcome) = oneshot::channel();
                outcomes.push(outcome);
                Waiting { request, answer }
            })
            .collect();
        // The last caller has gone: its write is still made, and nothing fails for it.
        drop(outcomes.pop());
        write(&s, calls);
        let got: Vec<Outcome> = outcomes
            .into_iter()
            .map(|o| o.blocking_recv().unwrap())
            .collect();
        assert!(got[0].as_ref().is_ok_and(Option::is_none), "{:?}", got[0]);
        assert!(
            matches!(&got[1], Err(Error::NoSuchColumnFamily { family, .. }) if family == "x"),
            "{:?}",
            got[1]
        );
        assert!(
            matches!(&got[2], Err(Error::IllegalArgument(why)) if why.contains("no mutation")),
            "{:?}",
            got[2]
        );
        assert!(got[3].is_ok() && got[4].is_ok(), "{got:?}");
        assert!(
            matches!(&got[5], Err(Error::NotServingRegion(_))),
            "{:?}",
            got[5]
        );
        // Calls of one row are applied in the order they came; the refused ones not at all.
        assert_eq!(value(&s, "t", "r1").as_deref(), Some(&b"later"[..]));
        assert_eq!(value(&s, "u", "r1").as_deref(), Some(&b"u1"[..]));
        assert_eq!(value(&s, "t", "r2"), None);
        assert_eq!(value(&s, "t", "r4"), None);
        assert_eq!(value(&s, "t", "r9").as_deref(), Some(&b"unheard"[..]));
    }

    /// Queues `n` puts of table `t` straight into the forming batch (no writer started for
    /// them), with where each one's outcome will come.
    fn queued(batches: &MiniBatches, n: usize) -> Vec<oneshot::Receiver<Outcome>> {
        let mut forming = batches.forming.lock();
        (0..n)
            .map(|i| {
                let (answer, outcome) = oneshot::channel();
                let request = put("t", &format!("q{i:03}"), "f", "v");
                forming.calls.push(Waiting { request, answer });
                outcome
            })
            .collect()
    }

    fn runtime(workers: usize) -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(workers)
            .enable_time()
            .build()
            .unwrap()
    }

    /// `f`'s output; a call still unanswered after a minute fails the test.
    async fn answered<T>(f: impl std::future::Future<Output = T>) -> T {
        let waited = tokio::time::timeout(std::time::Duration::from_secs(60), f);
        waited.await.expect("a call was never answered")
    }

    fn rows_of(s: &Services, table: &str) -> usize {
        let t = s.conn.table(&TableName::parse(table).unwrap()).unwrap();
        t.scan(basalt_model::ops::Scan::new()).unwrap().count()
    }

    /// Polls `cond` for up to a minute.
    fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while !cond() {
            assert!(Instant::now() < deadline, "{what} never happened");
            std::thread::yield_now();
        }
    }

    #[test]
    fn puts_and_deletes_join_and_read_modify_writes_go_alone() {
        let joining = |m: Mutation| {
            joins(&pb::MutateRequest {
                table: "t".to_owned(),
                mutation: Some(mutation_to_pb(&m)),
                region: None,
            })
        };
        assert!(joining(Mutation::Put(Put::new("r").add("f", "q", "v"))));
        assert!(joining(Mutation::Delete(basalt_model::ops::Delete::new(
            "r"
        ))));
        let inc = basalt_model::ops::Increment::new("r").add("f", "q", 1);
        assert!(!joining(Mutation::Increment(inc)));
        let app = basalt_model::ops::Append::new("r").add("f", "q", "v");
        assert!(!joining(Mutation::Append(app)));
        let empty = pb::MutateRequest {
            table: "t".to_owned(),
            mutation: None,
            region: None,
        };
        assert!(!joins(&empty));
    }

    #[test]
    fn a_batch_takes_at_most_its_share_and_a_writer_ends_when_none_wait() {
        let batches = MiniBatches::default();
        let _outcomes = queued(&batches, 2 * GATHERED + 5);
        let mut forming = batches.forming.lock();
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
        let call = || Waiting {
            request: put("t", "r", "f", "v"),
            answer: oneshot::channel().0,
        };
        let ms = Duration::from_millis;
        let t0 = Instant::now();
        let mut f = Forming::default();
        assert!(f.queue(call(), t0), "no writer runs: the call starts one");
        assert!(
            !f.queue(call(), t0 + ms(1)),
            "one runs and has just started"
        );
        assert_eq!(f.take(t0 + ms(2)).map(|c| c.len()), Some(2));
        let took = t0 + ms(2);
        assert!(!f.queue(call(), took + STALLED - ms(1)));
        assert!(f.queue(call(), took + STALLED), "the writer is held up");
        assert_eq!(f.writers, 2);
        // One more writer an interval, however many calls come meanwhile.
        assert!(!f.queue(call(), took + STALLED + ms(1)));
        assert!(f.queue(call(), took + 2 * STALLED), "both are held up");
        assert_eq!(f.writers, 3);
        // The writers end one by one once the calls are taken; then a call starts one again.
        assert_eq!(f.take(took + 2 * STALLED).map(|c| c.len()), Some(4));
        for left in [2, 1, 0] {
            assert!(f.take(took + 2 * STALLED).is_none());
            assert_eq!(f.writers, left);
        }
        assert!(f.queue(call(), took + 2 * STALLED + ms(1)));
    }

    #[test]
    fn calls_beyond_one_batch_s_share_are_written_by_its_writer_s_next_batches() {
        let dir = tempfile::tempdir().unwrap();
        let s = services(dir.path());
        // More calls wait than one batch takes, and no writer runs yet: the submit below
        // starts one, which must go on to the calls its first batch left.
        let mut outcomes = queued(&s.mini_batches, 2 * GATHERED + 7);
        runtime(1).block_on(async {
            outcomes.push(s.mini_batches.submit(&s, put("t", "last", "f", "v")));
            for o in outcomes {
                let out = answered(o).await.unwrap();
                assert!(out.is_ok(), "{out:?}");
            }
        });
        assert_eq!(rows_of(&s, "t"), 2 * GATHERED + 8);
        eventually("the writer's end", || {
            s.mini_batches.forming.lock().writers == 0
        });
    }

    #[test]
    fn a_writer_that_panics_hands_its_place_on() {
        let dir = tempfile::tempdir().unwrap();
        let s = services(dir.path());
        let outcomes = queued(&s.mini_batches, 3);
        s.mini_batches.forming.lock().writers = 1;
        let panicking = |s: &Services| {
            let s = s.clone();
            tokio::task::spawn_blocking(move || {
                let _writing = Writing(&s);
                panic!("a writer's bug");
            })
        };
        runtime(1).block_on(async {
            // Calls wait behind it: another writer writes them.
            assert!(panicking(&s).await.is_err());
            for o in outcomes {
                assert!(answered(o).await.unwrap().is_ok());
            }
        });
        assert_eq!(rows_of(&s, "t"), 3);
        eventually("the writers' end", || {
            s.mini_batches.forming.lock().writers == 0
        });
        // None wait: it just ends.
        s.mini_batches.forming.lock().writers = 1;
        runtime(1).block_on(async { assert!(panicking(&s).await.is_err()) });
        assert_eq!(s.mini_batches.forming.lock().writers, 0);
    }

    #[test]
    fn every_call_submitted_at_once_is_answered_written_and_counted() {
        let dir = tempfile::tempdir().unwrap();
        let s = services(dir.path());
        let (callers, each) = (16, 40);
        runtime(2).block_on(async {
            let tasks: Vec<_> = (0..callers)
                .map(|c| {
                    let s = s.clone();
                    tokio::spawn(async move {
                        for i in 0..each {
                            let r = put("t", &format!("c{c:02}-{i:03}"), "f", "v");
                            let submitted = s.mini_batches.submit(&s, r);
                            let out = outcome(&s, Instant::now(), submitted).await.unwrap();
                            assert!(out.is_ok(), "{out:?}");
                        }
                    })
                })
                .collect();
            for t in tasks {
                answered(t).await.unwrap();
            }
        });
        assert_eq!(rows_of(&s, "t"), callers * each);
        // Each call is counted as one `mutate`, as a call of its own was.
        assert_eq!(s.metrics.requests("mutate"), (callers * each) as u64);
        eventually("the writers' end", || {
            s.mini_batches.forming.lock().writers == 0
        });
    }

    /// A database whose table `stall` blocks writes: its flushes wait while it has two store
    /// files (no compaction runs by itself), and it holds twice its 1 MiB flush size. Table
    /// `free` takes writes.
    fn with_a_region_blocking_writes(dir: &std::path::Path) -> Database {
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
            db.create_table(desc, &[]).unwrap();
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

    #[test]
    fn a_region_blocking_writes_holds_up_only_its_own_calls() {
        let dir = tempfile::tempdir().unwrap();
        let db = with_a_region_blocking_writes(dir.path());
        let s = services_over(db.clone());
        runtime(1).block_on(async {
            let held = s.mini_batches.submit(&s, put("stall", "held", "f", "v"));
            eventually("the write's delay", || {
                db.engine_stats().delayed_writes >= 1
            });
            // The one writer is inside its batch, and has been since it took the call
            // before this point: once STALLED has passed, the writers are held up.
            std::thread::sleep(STALLED);
            let free = s.mini_batches.submit(&s, put("free", "r", "f", "v"));
            let free = tokio::time::timeout(Duration::from_secs(30), free).await;
            let mut held = held;
            let held_meanwhile = held.try_recv().is_err();
            // A compaction clears the pile; the flush goes ahead and the write is made. (Done
            // before any assertion, so a failing test does not wait out the region's block.)
            db.compact(&TableName::parse("stall").unwrap()).unwrap();
            let free = free.expect("a write of another table waited on the blocked region");
            assert!(free.unwrap().is_ok());
            assert!(
                held_meanwhile,
                "the blocked write was answered before the compaction"
            );
            assert!(answered(held).await.unwrap().is_ok());
        });
        assert_eq!(value(&s, "stall", "held").as_deref(), Some(&b"v"[..]));
        assert_eq!(value(&s, "free", "r").as_deref(), Some(&b"v"[..]));
    }
}
