//! Failover, simulated (the first tier of its proof): a whole cluster in one thread —
//! masters, region servers and their clients — over an in-memory object store that fails
//! at random ([`flaky`]) and an in-memory coordination ensemble whose sessions the
//! simulation cuts off, resumes and expires. A seed drives a schedule of client operations
//! (gets, puts, deletes, check-and-puts, increments, linked-list nodes), region server
//! kills, pauses and their late writes, master failovers, flushes, splits, merges, moves
//! and recoveries; the run ends with every checker ([`checks`]): per-cell linearizability
//! of what the clients saw, which holds the acknowledged-write ledger; the big linked
//! list; the invariant sweep.
//!
//! A seed replays the same schedule: `BASALT_SIM_SEED=N` runs that one seed and prints its
//! schedule; `BASALT_SIM_SEEDS=N` runs seeds 0..N (CI runs the default, 200; a soak runs
//! thousands: `BASALT_SIM_SEEDS=5000`).
//!
//! Time: the driver is the only thread that acts. A pause is modelled by its effect on
//! the lease: a cut-off server's lease holds until the simulation expires its session,
//! and an expiry first moves the cut-off instant past the session timeout (the ensemble
//! expires a session only after that long without a heartbeat).
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod checks;
pub(super) mod flaky;

use std::sync::Arc;
use std::time::{Duration, Instant};

use basalt_api::Connection as _;
use basalt_model::ops::{CheckAndMutate, CompareOp, Delete, Get, Increment, Mutation, Put};
use basalt_model::{Error, Result, TableName};
use basalt_storage::env::MemoryStore;
use basalt_storage::region::Region;
use basalt_testkit::checkers::linearizability::{CellAnswer, CellOp, Operation, Outcome};
use basalt_testkit::checkers::linked_list::Generator;
use bytes::Bytes;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};

use super::tests::{create, Cluster};
use super::*;
use crate::coordination::memory::MemoryCoordinator;
use crate::database::table::At;
use flaky::FlakyStore;

/// The registers clients read and write: two per region of the first table, each with a
/// value column and a counter column.
const ROWS: usize = 12;
const REGIONS: usize = 6;
const STEPS: usize = 240;
const LISTS: u32 = 3;

/// How a region server process is, as the simulation left it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Health {
    Live,
    /// Cut off from the ensemble (paused, or partitioned from it but not from clients and
    /// storage): its session and lease hold until the simulation expires it.
    CutOff,
    /// Its session expired; it runs on until it notices.
    Zombie,
}

struct Server {
    rs: Arc<ClusterRegionServer>,
    session: Arc<MemoryCoordinator>,
    health: Health,
    /// Regions that requests under way when the server was cut off hold: they passed the
    /// lease check before the pause and reach the region after it.
    in_flight: Vec<Arc<Region>>,
}

struct Master {
    master: ClusterMaster,
    session: Arc<MemoryCoordinator>,
}

pub(super) struct Sim {
    seed: u64,
    rng: StdRng,
    cluster: Cluster,
    flaky: Arc<FlakyStore>,
    master: Option<Master>,
    masters_started: u32,
    servers: Vec<Server>,
    next_port: u16,
    table: TableName,
    /// A logical clock for the history: calls and returns in the order they happened.
    time: u64,
    history: Vec<(String, Operation<CellOp, CellAnswer>)>,
    lists: Vec<Generator>,
    /// Every linked-list key written or attempted, for reading them back.
    list_keys: Vec<Bytes>,
    next_value: u64,
    /// The schedule, printed when a check fails.
    log: Vec<String>,
}

/// A register's row: spread over the table's regions (split at row0010, row0020, ...).
fn register_row(i: usize) -> String {
    format!("row{:04}", i * 5)
}

/// A linked-list node's row: its key behind a row prefix that spreads the nodes over the
/// regions.
fn list_row(key: &[u8]) -> Bytes {
    let spread = key.iter().fold(0usize, |h, b| {
        h.wrapping_mul(31).wrapping_add(usize::from(*b))
    }) % (REGIONS * 10);
    let mut row = format!("row{spread:04}-").into_bytes();
    row.extend_from_slice(key);
    Bytes::from(row)
}

impl Sim {
    fn new(seed: u64) -> Sim {
        let store = MemoryStore::new();
        let flaky = FlakyStore::new(store.clone(), seed ^ 0x5eed);
        let cluster = Cluster::over(store, flaky.clone());
        let mut sim = Sim {
            seed,
            rng: StdRng::seed_from_u64(seed),
            cluster,
            flaky,
            master: None,
            masters_started: 0,
            servers: Vec::new(),
            next_port: 16020,
            table: TableName::parse("t").unwrap(),
            time: 0,
            history: Vec::new(),
            lists: (0..LISTS)
                .map(|i| Generator::new(i, seed.wrapping_mul(31) + u64::from(i)))
                .collect(),
            list_keys: Vec::new(),
            next_value: 0,
            log: Vec::new(),
        };
        sim.start_master();
        for _ in 0..3 {
            sim.start_server();
        }
        let m = &sim.master.as_ref().unwrap().master;
        sim.table = create(m, "t", REGIONS);
        sim
    }

    fn note(&mut self, what: String) {
        tracing::info!(target: "sim", "{what}");
        self.log.push(what);
    }

    fn tick(&mut self) -> u64 {
        self.time += 1;
        self.time
    }

    /// Runs `steps` random steps.
    fn run(&mut self, steps: usize) {
        for step in 0..steps {
            let roll = self.rng.gen_range(0..100);
            self.note(format!("step {step}"));
            match roll {
                0..=44 => self.client_op(),
                45..=52 => self.list_node(),
                53..=57 => self.flush(),
                58..=60 => self.kill_server(),
                61..=63 => self.cut_off_server(),
                64..=66 => self.expire_cut_off(),
                67..=68 => self.resume_cut_off(),
                69..=72 => self.late_write(),
                73..=74 => self.zombie_exits(),
                75..=77 => self.start_server(),
                78..=85 => self.chore(),
                86 => self.fail_over_master(),
                87 => self.master_dies_at_work(),
                88..=90 => self.split(),
                91..=92 => self.merge(),
                93..=94 => self.move_region(),
                _ => self.set_fault_rate(),
            }
            self.settle_background();
        }
    }

    // ---- processes -------------------------------------------------------------------

    fn start_master(&mut self) {
        self.masters_started += 1;
        let n = self.masters_started;
        match self.cluster.try_master(&format!("m{n},16000,{n}")) {
            Ok((master, session)) => {
                self.note(format!("master m{n} took over"));
                self.master = Some(Master { master, session });
            }
            Err(e) => self.note(format!("master m{n} failed to take over: {e}")),
        }
    }

    fn start_server(&mut self) {
        self.next_port += 1;
        match self.cluster.try_region_server(self.next_port) {
            Ok((rs, session)) => {
                self.note(format!("started {}", rs.name()));
                self.servers.push(Server {
                    rs,
                    session,
                    health: Health::Live,
                    in_flight: Vec::new(),
                });
            }
            Err(e) => self.note(format!("a region server failed to start: {e}")),
        }
    }

    fn pick(&mut self, health: Health) -> Option<usize> {
        let of: Vec<usize> = (0..self.servers.len())
            .filter(|&i| self.servers[i].health == health)
            .collect();
        of.choose(&mut self.rng).copied()
    }

    /// `kill -9`: the process and its memstores are gone; its log stays.
    fn kill_server(&mut self) {
        let Some(i) = self.pick(Health::Live) else {
            return;
        };
        let s = self.servers.remove(i);
        self.note(format!("killed {}", s.rs.name()));
        self.cluster.servers.0.lock().remove(&s.rs.name());
        self.cluster.ensemble.expire(&s.session);
    }

    fn cut_off_server(&mut self) {
        let Some(i) = self.pick(Health::Live) else {
            return;
        };
        let s = &mut self.servers[i];
        self.cluster.ensemble.disconnect(&s.session, Instant::now());
        s.health = Health::CutOff;
        s.in_flight =
            s.rs.hosted_regions()
                .iter()
                .filter_map(|r| s.rs.region(r.info.id).ok())
                .collect();
        let name = s.rs.name();
        self.note(format!("cut off {name}"));
    }

    /// The session of a cut-off server ends, a session timeout after its last heartbeat.
    fn expire_cut_off(&mut self) {
        let Some(i) = self.pick(Health::CutOff) else {
            return;
        };
        let s = &mut self.servers[i];
        let long_ago = Instant::now() - Duration::from_secs(3600);
        self.cluster.ensemble.disconnect(&s.session, long_ago);
        self.cluster.ensemble.expire(&s.session);
        s.health = Health::Zombie;
        let name = s.rs.name();
        self.note(format!("expired {name}"));
    }

    fn resume_cut_off(&mut self) {
        let Some(i) = self.pick(Health::CutOff) else {
            return;
        };
        let s = &mut self.servers[i];
        self.cluster.ensemble.reconnect(&s.session);
        s.health = Health::Live;
        s.in_flight.clear();
        let name = s.rs.name();
        self.note(format!("resumed {name}"));
    }

    /// A zombie notices it lost its session and stops, flushing nothing.
    fn zombie_exits(&mut self) {
        let Some(i) = self.pick(Health::Zombie) else {
            return;
        };
        let s = self.servers.remove(i);
        let why = s.rs.must_abort();
        assert!(why.is_some(), "a server whose session expired must abort");
        let stopped = s.rs.stop();
        self.cluster.servers.0.lock().remove(&s.rs.name());
        self.note(format!("{} exited ({stopped:?})", s.rs.name()));
    }

    fn fail_over_master(&mut self) {
        if let Some(old) = self.master.take() {
            self.cluster.ensemble.expire(&old.session);
            self.note(format!("master {} killed", old.master.name()));
        }
        self.start_master();
    }

    /// The master dies part-way through its work (`kill -9`): between fencing a dead
    /// server's log and splitting it, between the split and the assignment, in the middle
    /// of a split, merge or move. Its successor must finish or undo what it began.
    fn master_dies_at_work(&mut self) {
        let after = self.rng.gen_range(0..40);
        self.note(format!(
            "the master dies after {after} more store operations"
        ));
        self.flaky.crash_after(after);
        match self.rng.gen_range(0..4) {
            0 => self.chore(),
            1 => self.split(),
            2 => self.merge(),
            _ => self.move_region(),
        }
        self.flaky.recover();
        self.fail_over_master();
    }

    fn set_fault_rate(&mut self) {
        let rate = *[0, 0, 10, 60].choose(&mut self.rng).unwrap();
        self.flaky.set_rate(rate);
        self.note(format!("fault rate {rate}/1000"));
    }

    // ---- the master's work -----------------------------------------------------------

    fn master(&mut self) -> Option<&ClusterMaster> {
        if self.master.is_none() {
            self.start_master();
        }
        self.master.as_ref().map(|m| &m.master)
    }

    /// The master's chore: recovery and assignment, then the janitor.
    fn chore(&mut self) {
        let Some(m) = self.master() else { return };
        let assigned = m.assign_all();
        let janitor = m.run_catalog_janitor();
        self.note(format!("chore: {assigned:?} {janitor:?}"));
        self.settle_background();
    }

    fn region_ids(&mut self) -> Vec<u64> {
        let Some(m) = self.master() else {
            return Vec::new();
        };
        let c = m.catalog();
        c.tables
            .values()
            .flat_map(|e| e.regions.iter().map(|r| r.id))
            .collect()
    }

    fn split(&mut self) {
        let Some(&id) = self.region_ids().choose(&mut self.rng) else {
            return;
        };
        let done = self.master().map(|m| m.split_region(id, None));
        self.note(format!("split {id}: {done:?}"));
        self.settle_background();
    }

    fn merge(&mut self) {
        let ids = self.region_ids();
        if ids.len() < 2 {
            return;
        }
        let at = self.rng.gen_range(0..ids.len() - 1);
        let pair = [ids[at], ids[at + 1]];
        let done = self.master().map(|m| m.merge_regions(&pair, false));
        self.note(format!("merge {pair:?}: {done:?}"));
        self.settle_background();
    }

    fn move_region(&mut self) {
        let Some(&id) = self.region_ids().choose(&mut self.rng) else {
            return;
        };
        let done = self.master().map(|m| m.move_region(id, None));
        self.note(format!("move {id}: {done:?}"));
    }

    fn flush(&mut self) {
        let Some(i) = self.pick(Health::Live) else {
            return;
        };
        let rs = Arc::clone(&self.servers[i].rs);
        let Some(r) = rs.hosted_regions().choose(&mut self.rng).cloned() else {
            return;
        };
        let done = rs.region(r.info.id).and_then(|region| region.flush());
        self.note(format!("flush {} on {}: {done:?}", r.info.id, rs.name()));
        self.settle_background();
    }

    /// Lets the live servers' background work (compactions a flush, split or merge asked
    /// for) finish, so the next step meets the same state in every run of the seed.
    /// Waits until no server, zombies included, has a flush or compaction queued or
    /// running: the driver's next step then finds the same storage on every replay.
    fn settle_background(&mut self) {
        for s in &self.servers {
            let _ = s.rs.wait_idle();
        }
    }

    // ---- clients ---------------------------------------------------------------------

    /// The table as a client reaches it for `row`: through the server the master names,
    /// or, one time in five, through any server (a client whose location cache is stale).
    fn table_for(&mut self, row: &[u8]) -> Result<Arc<dyn basalt_api::Table>> {
        let stale = self.rng.gen_ratio(1, 5);
        self.table_via(row, stale)
    }

    /// The table through the server the master names for `row`, or through any server
    /// when the client's cache is `stale`.
    fn table_via(&mut self, row: &[u8], stale: bool) -> Result<Arc<dyn basalt_api::Table>> {
        let name = if stale {
            let i = self.rng.gen_range(0..self.servers.len().max(1));
            self.servers.get(i).map(|s| s.rs.name())
        } else {
            let table = self.table.clone();
            let m = self
                .master()
                .ok_or_else(|| Error::PleaseHold("no active master".into()))?;
            m.locate(&table, row)?.1
        };
        let server = name
            .and_then(|n| self.servers.iter().find(|s| s.rs.name() == n))
            .ok_or_else(|| Error::NotServingRegion("no server holds the row".into()))?;
        let held = server.rs.locate(&self.table, At::Row(row));
        let via = match held {
            Ok(r) => format!("{} (region {})", server.rs.name(), r.info().id),
            Err(_) => format!("{} (not holding the row)", server.rs.name()),
        };
        let table = RegionServerConnection::new(Arc::clone(&server.rs)).table(&self.table);
        self.note(format!("  via {via}"));
        table
    }

    fn value(&mut self) -> Bytes {
        self.next_value += 1;
        Bytes::from(format!("v{}", self.next_value))
    }

    /// The last value a client saw acknowledged in `cell`, or a value from long ago: the
    /// expectation of a check-and-put.
    fn expectation(&mut self, cell: &str) -> Option<Bytes> {
        let seen: Vec<Option<Bytes>> = self
            .history
            .iter()
            .filter(|(c, _)| c == cell)
            .filter_map(|(_, op)| match (&op.input, &op.output) {
                (CellOp::Put(v), Outcome::Returned(_)) => Some(Some(v.clone())),
                (_, Outcome::Returned(CellAnswer::Value(v))) => Some(v.clone()),
                _ => None,
            })
            .collect();
        match seen.last() {
            Some(last) if self.rng.gen_ratio(3, 4) => last.clone(),
            _ => seen.choose(&mut self.rng).cloned().flatten(),
        }
    }

    fn client_op(&mut self) {
        let i = self.rng.gen_range(0..ROWS);
        let row = register_row(i);
        let counter = self.rng.gen_ratio(1, 3);
        let cell = format!("{row}/{}", if counter { "n" } else { "v" });
        let input = if counter {
            if self.rng.gen_ratio(2, 3) {
                CellOp::Increment(self.rng.gen_range(1..4))
            } else {
                CellOp::Get
            }
        } else {
            match self.rng.gen_range(0..10) {
                0..=3 => CellOp::Get,
                4..=6 => CellOp::Put(self.value()),
                7 => CellOp::Delete,
                _ => CellOp::CheckAndPut {
                    expected: self.expectation(&cell),
                    new: self.value(),
                },
            }
        };
        let table = self.table_for(row.as_bytes());
        let call = self.tick();
        let answer = table.and_then(|t| apply(t.as_ref(), &row, counter, &input));
        self.record(cell, input, call, answer);
    }

    /// Adds an operation to the history: a failed read changed nothing and is left out; a
    /// failed write may or may not have taken effect.
    fn record(&mut self, cell: String, input: CellOp, call: u64, answer: Result<CellAnswer>) {
        let (output, ret) = match answer {
            Ok(a) => (Outcome::Returned(a), Some(self.tick())),
            Err(_) if input == CellOp::Get => return,
            Err(_) => (Outcome::Unknown, None),
        };
        self.note(format!("{cell} {input:?} -> {output:?}"));
        self.history.push((
            cell,
            Operation {
                client: 0,
                input,
                call,
                output,
                ret,
            },
        ));
    }

    /// A write that passed a cut-off or expired server's lease check before its pause
    /// reaches the region after it: it must fail once the log is fenced, or count.
    fn late_write(&mut self) {
        let candidates: Vec<usize> = (0..self.servers.len())
            .filter(|&i| !self.servers[i].in_flight.is_empty())
            .collect();
        let Some(&i) = candidates.choose(&mut self.rng) else {
            return;
        };
        let region = Arc::clone(self.servers[i].in_flight.choose(&mut self.rng).unwrap());
        let rows: Vec<usize> = (0..ROWS)
            .filter(|&r| region.info().contains(register_row(r).as_bytes()))
            .collect();
        let Some(&r) = rows.choose(&mut self.rng) else {
            return;
        };
        let row = register_row(r);
        let v = self.value();
        let call = self.tick();
        let put = Put::new(row.clone()).add("f", "v", v.clone());
        let done = region.mutate(&Mutation::Put(put)).map(|_| CellAnswer::Done);
        self.note(format!("late write on {}", self.servers[i].rs.name()));
        self.record(format!("{row}/v"), CellOp::Put(v), call, done);
    }

    /// The next node of a linked list: a generator writes it only after the node before
    /// it was acknowledged.
    fn list_node(&mut self) {
        let g = self.rng.gen_range(0..self.lists.len());
        let (key, value) = self.lists[g].next_node();
        let row = list_row(&key);
        self.list_keys.push(key.clone());
        let done = self
            .table_for(&row)
            .and_then(|t| t.put(Put::new(row).add("f", "ll", value)));
        self.note(format!("list {g} node: {}", done.is_ok()));
        match done {
            Ok(()) => self.lists[g].acknowledged(key),
            Err(_) => self.lists[g].abandoned(),
        }
    }
}

/// Carries out one register operation through the client API.
fn apply(t: &dyn basalt_api::Table, row: &str, counter: bool, op: &CellOp) -> Result<CellAnswer> {
    let q = if counter { "n" } else { "v" };
    Ok(match op {
        CellOp::Get => {
            let r = t.get(Get::new(row.to_owned()).add_column("f", q))?;
            CellAnswer::Value(
                r.value(b"f", q.as_bytes())
                    .map(bytes::Bytes::copy_from_slice),
            )
        }
        CellOp::Put(v) => {
            t.put(Put::new(row.to_owned()).add("f", q, v.clone()))?;
            CellAnswer::Done
        }
        CellOp::Delete => {
            t.delete(Delete::new(row.to_owned()).add_columns("f", q))?;
            CellAnswer::Done
        }
        CellOp::CheckAndPut { expected, new } => {
            let cam = match expected {
                None => CheckAndMutate::if_not_exists(row.to_owned(), "f", q),
                Some(e) => {
                    CheckAndMutate::if_matches(row.to_owned(), "f", q, CompareOp::Equal, e.clone())
                }
            };
            let put = Put::new(row.to_owned()).add("f", q, new.clone());
            CellAnswer::Applied(t.check_and_mutate(cam.then_put(put))?)
        }
        CellOp::Increment(by) => {
            let r = t.increment(Increment::new(row.to_owned()).add("f", q, *by))?;
            let v = r
                .value(b"f", q.as_bytes())
                .map(bytes::Bytes::copy_from_slice)
                .unwrap_or_default();
            let bytes: [u8; 8] = v[..]
                .try_into()
                .map_err(|_| Error::Internal(format!("a counter of {} bytes", v.len())))?;
            CellAnswer::Counter(i64::from_be_bytes(bytes))
        }
    })
}

/// Runs one seed: its schedule, the settling, and every check.
pub(super) fn run_seed(seed: u64, steps: usize) -> Sim {
    let mut sim = Sim::new(seed);
    sim.run(steps);
    sim.settle();
    sim.check_all();
    sim
}

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

#[test]
fn seeded_schedules_of_kills_pauses_and_failovers_lose_nothing_and_serve_nothing_stale() {
    let seeds = match env_u64("BASALT_SIM_SEED") {
        Some(one) => one..one + 1,
        None => 0..env_u64("BASALT_SIM_SEEDS").unwrap_or(200),
    };
    let steps = env_u64("BASALT_SIM_STEPS").map_or(STEPS, |s| s as usize);
    let one = seeds.end - seeds.start == 1;
    if one {
        // The replay of one seed shows the engine's log too, filtered by `RUST_LOG`.
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_test_writer()
            .try_init();
    }
    let (mut ops, mut faults) = (0, 0);
    for seed in seeds {
        let sim = run_seed(seed, steps);
        if one {
            eprintln!("{}", sim.log.join("\n"));
        }
        ops += sim.history.len();
        faults += sim.flaky.injected();
    }
    eprintln!("{ops} operations checked, {faults} store faults injected");
}

#[test]
fn a_seed_replays_the_same_history() {
    let history = |s: &Sim| format!("{:?}", s.history);
    let (a, b) = (run_seed(7, 120), run_seed(7, 120));
    assert_eq!(history(&a), history(&b));
    assert!(a.history.len() > 40, "{}", a.history.len());
}
