//! Randomized crash test: many cycles of "write under SYNC_WAL while flushes and compactions
//! run, crash at a random fault point (possibly tearing the write in flight), lose what was
//! not synced, reopen, compare with the model".
//!
//! The model: ops carry strictly increasing timestamps, so a row's visible versions are a pure
//! function of which ops were applied, whatever was flushed or compacted. After recovery the
//! store must equal the model after some prefix of the attempted ops that contains every
//! acknowledged op: nothing acknowledged is lost, and nothing unacknowledged appears out of
//! order. Ops that failed without a crash (an injected I/O error) have an unknown outcome and
//! may be in or out, as may the failed items of a batch (a batch writes region by region, so
//! an item later in its list may be applied and acknowledged before an earlier one fails).
//!
//! `BASALT_CRASH_CYCLES` sets the number of cycles (CI runs a few dozen; run it for hours with
//! a large number and `BASALT_CRASH_SEED`).

use std::collections::BTreeMap;
use std::sync::Arc;

use basalt_model::ops::{Delete, Get, Mutation, Put, Scan};
use basalt_model::{ColumnFamilyDescriptor, Durability, TableDescriptor, TableName};
use basalt_node::{BackgroundConfig, Database, Options};
use basalt_storage::compaction::CompactionConfig;
use basalt_storage::env::{Env, FaultInjector, Op, SystemClock};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const ROWS: u64 = 40;
const VERSIONS: usize = 3;

#[derive(Clone, Debug)]
enum WriteOp {
    Put { row: u64, ts: i64, value: Vec<u8> },
    DeleteColumn { row: u64, ts: i64 },
}

/// Each row's live puts (timestamp, value), oldest first.
type State = BTreeMap<u64, Vec<(i64, Vec<u8>)>>;

fn apply(state: &mut State, op: &WriteOp) {
    match op {
        WriteOp::Put { row, ts, value } => {
            state.entry(*row).or_default().push((*ts, value.clone()));
        }
        WriteOp::DeleteColumn { row, ts } => {
            if let Some(v) = state.get_mut(row) {
                v.retain(|(t, _)| t > ts);
            }
        }
    }
}

/// What a Get of every version shows: the newest VERSIONS puts of each row.
fn visible(state: &State) -> BTreeMap<u64, Vec<(i64, Vec<u8>)>> {
    state
        .iter()
        .map(|(row, puts)| {
            let mut v: Vec<_> = puts.iter().rev().take(VERSIONS).cloned().collect();
            v.reverse();
            (*row, v)
        })
        .filter(|(_, v)| !v.is_empty())
        .collect()
}

fn row_key(row: u64) -> String {
    format!("row{row:04}")
}

fn options(env: Env) -> Options {
    let mut background = BackgroundConfig {
        compaction: CompactionConfig {
            min_files: 2,
            ..CompactionConfig::default()
        },
        compaction_throughput: None,
        ..BackgroundConfig::default()
    };
    background.busy_wait = std::time::Duration::from_secs(2);
    Options {
        env,
        wal_roll_size_bytes: 64 << 10,
        // Regions split past 16 KiB, so crashes land in splits and the compactions after.
        max_filesize_bytes: 16 << 10,
        // A split that failed at its catalog commit and could not restore the old catalog
        // leaves its region closed until the database reopens: give up on it soon.
        region_retry_timeout: std::time::Duration::from_secs(2),
        background,
        ..Options::default()
    }
}

fn create_table(db: &Database) {
    let name = TableName::parse("crash").unwrap();
    let family = ColumnFamilyDescriptor::new("f")
        .with_max_versions(VERSIONS as u32)
        .with_block_size_bytes(2048);
    let mut desc = TableDescriptor::new(&name, [family]);
    desc.memstore_flushsize_bytes = 24 << 10;
    desc.configuration
        .insert("hbase.table.sanity.checks".into(), "false".into());
    db.create_table(desc, &[]).unwrap();
}

/// Reads what the store holds, by Gets and by one scan, which must agree.
fn observe(db: &Database) -> BTreeMap<u64, Vec<(i64, Vec<u8>)>> {
    let t = db.table("crash").unwrap();
    let mut out = BTreeMap::new();
    for row in 0..ROWS {
        let r = t.get(Get::new(row_key(row)).all_versions()).unwrap();
        let mut v: Vec<(i64, Vec<u8>)> = r
            .cells
            .iter()
            .map(|c| (c.timestamp, c.value().to_vec()))
            .collect();
        v.reverse();
        if !v.is_empty() {
            out.insert(row, v);
        }
    }
    let scanned = t
        .scan(Scan::new().all_versions())
        .unwrap()
        .collect_rows()
        .unwrap();
    assert_eq!(scanned.len(), out.len(), "scan and gets disagree");
    out
}

/// One random write of the workload.
fn next_op(rng: &mut StdRng, next_ts: &mut i64) -> WriteOp {
    let row = rng.gen_range(0..ROWS);
    *next_ts += 1;
    if rng.gen_bool(0.85) {
        let len = rng.gen_range(10..600);
        let value = format!("v{next_ts}-")
            .into_bytes()
            .into_iter()
            .cycle()
            .take(len)
            .collect();
        WriteOp::Put {
            row,
            ts: *next_ts,
            value,
        }
    } else {
        WriteOp::DeleteColumn { row, ts: *next_ts }
    }
}

fn mutation(op: &WriteOp) -> Mutation {
    match op {
        WriteOp::Put { row, ts, value } => Mutation::Put(
            Put::new(row_key(*row))
                .add_at("f", "q", *ts, value.clone())
                .with_durability(Durability::SyncWal),
        ),
        WriteOp::DeleteColumn { row, ts } => Mutation::Delete(
            Delete::new(row_key(*row))
                .add_columns_at("f", "q", *ts)
                .with_durability(Durability::SyncWal),
        ),
    }
}

/// The workload of one cycle: returns the attempted ops, whether each was acknowledged, and
/// which failed without a crash. A quarter of the writes go in batches (one WAL sync each).
fn run_cycle(
    db: &Database,
    faults: &FaultInjector,
    rng: &mut StdRng,
    next_ts: &mut i64,
) -> Vec<(WriteOp, Outcome)> {
    let t = db.table("crash").unwrap();
    let name = TableName::parse("crash").unwrap();
    let mut ops = Vec::new();
    let n = rng.gen_range(50..400);
    let mut i = 0;
    while i < n {
        let k = if rng.gen_bool(0.25) {
            rng.gen_range(2..6)
        } else {
            1
        };
        let chunk: Vec<WriteOp> = (0..k).map(|_| next_op(rng, next_ts)).collect();
        let results: Vec<bool> = if k == 1 {
            vec![t.mutate(mutation(&chunk[0])).is_ok()]
        } else {
            let batch = chunk.iter().map(mutation).collect();
            t.batch(batch).iter().map(Result::is_ok).collect()
        };
        let crashed = faults.crashed();
        for (op, ok) in chunk.into_iter().zip(results) {
            // A batch writes region by region, not in list order: a failed item of a batch
            // may or may not be applied, whatever came after it in the list.
            let outcome = match ok {
                true => Outcome::Acked,
                false if crashed && k == 1 => Outcome::Crashed,
                false => Outcome::Unknown,
            };
            ops.push((op, outcome));
        }
        if crashed {
            break;
        }
        for j in i..i + k {
            if j % 60 == 59 {
                let _ = db.flush(&name);
            }
            if j % 150 == 149 {
                let _ = if rng.gen_bool(0.5) {
                    db.compact(&name)
                } else {
                    db.major_compact(&name)
                };
            }
        }
        i += k;
    }
    ops
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Outcome {
    Acked,
    /// Failed with an injected error, no crash: may or may not have been applied.
    Unknown,
    /// The op during which the process "died": may or may not have been applied.
    Crashed,
}

/// Finds a state reachable from `base` by a prefix of `ops` that holds every acknowledged op,
/// where ops of unknown outcome may each be in or out; panics with the evidence otherwise.
fn recovered_state(
    base: &State,
    ops: &[(WriteOp, Outcome)],
    seen: &BTreeMap<u64, Vec<(i64, Vec<u8>)>>,
    cycle: u64,
) -> State {
    let last_acked = ops
        .iter()
        .rposition(|(_, o)| *o == Outcome::Acked)
        .map_or(0, |i| i + 1);
    let unknown: Vec<usize> = ops
        .iter()
        .enumerate()
        .filter(|(_, (_, o))| *o == Outcome::Unknown)
        .map(|(i, _)| i)
        .collect();
    assert!(unknown.len() <= 12, "too many unknown outcomes to search");
    for cut in last_acked..=ops.len() {
        for mask in 0u32..(1 << unknown.len()) {
            let mut state = base.clone();
            for (i, (op, outcome)) in ops[..cut].iter().enumerate() {
                if *outcome == Outcome::Unknown {
                    let bit = unknown.iter().position(|u| *u == i).unwrap_or(0);
                    if mask & (1 << bit) == 0 {
                        continue;
                    }
                }
                apply(&mut state, op);
            }
            if &visible(&state) == seen {
                return state;
            }
        }
    }
    let mut full = base.clone();
    ops.iter().for_each(|(op, _)| apply(&mut full, op));
    let want = visible(&full);
    let diff: Vec<String> = (0..ROWS)
        .filter(|r| want.get(r) != seen.get(r))
        .map(|r| {
            let ts = |m: &BTreeMap<u64, Vec<(i64, Vec<u8>)>>| {
                m.get(&r)
                    .map(|v| v.iter().map(|(t, _)| *t).collect::<Vec<_>>())
            };
            format!("row {r}: want {:?} seen {:?}", ts(&want), ts(seen))
        })
        .collect();
    let tail: Vec<String> = ops
        .iter()
        .rev()
        .take(3)
        .map(|(op, o)| format!("{op:?} {o:?}").chars().take(80).collect())
        .collect();
    panic!(
        "{diff:#?}\nlast ops: {tail:#?}\ncycle {cycle}: recovered store matches no prefix of the ops holding all {last_acked} \
         acknowledged ones ({} attempted)",
        ops.len()
    );
}

#[test]
fn random_crashes_lose_no_acknowledged_write_and_corrupt_nothing() {
    let cycles: u64 = std::env::var("BASALT_CRASH_CYCLES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(25);
    let seed: u64 = std::env::var("BASALT_CRASH_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x5EED);
    let mut rng = StdRng::seed_from_u64(seed);
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Database::open_with(dir.path(), options(Env::default())).unwrap();
        create_table(&db);
        db.close().unwrap();
    }
    let mut base = State::new();
    let mut next_ts = 1_000;
    let kinds = [Op::Write, Op::Sync, Op::Create, Op::SyncDir, Op::Remove];
    let mut most_regions = 0;
    for cycle in 0..cycles {
        let faults = Arc::new(FaultInjector::new(rng.gen()));
        let env = Env::with_faults(Arc::new(SystemClock), Arc::clone(&faults));
        let db = Database::open_with(dir.path(), options(env)).unwrap();
        faults.crash_after(rng.gen_range(1..1500), rng.gen_bool(0.5));
        if rng.gen_bool(0.3) {
            faults.fail_nth(kinds[rng.gen_range(0..kinds.len())], rng.gen_range(1..200));
        }
        let ops = run_cycle(&db, &faults, &mut rng, &mut next_ts);
        faults.crash_after(1, false); // the process dies here if it has not yet
        drop(db);
        faults.simulate_crash().unwrap();
        let db = Database::open_with(dir.path(), options(Env::default()))
            .unwrap_or_else(|e| panic!("cycle {cycle}: reopen after the crash failed: {e}"));
        let seen = observe(&db);
        base = recovered_state(&base, &ops, &seen, cycle);
        let regions = db.regions(&TableName::parse("crash").unwrap()).unwrap();
        crate::regions::assert_covering(&regions);
        most_regions = most_regions.max(regions.len());
        db.close().unwrap();
    }
    assert!(cycles < 10 || most_regions > 1, "no region ever split");
}
