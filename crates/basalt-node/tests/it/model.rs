//! Model-based property test: random histories of writes, reads, flushes, compactions,
//! reopens, splits and merges run against `Database` and the in-memory oracle (one per
//! region); every read must agree.
//! Storage settings vary per case (block size, codec, bloom, KEEP_DELETED_CELLS) — the answers
//! must not (a metamorphic check across configurations). NEW_VERSION_BEHAVIOR varies too, and
//! the oracle answers as it says: with it, the reopens, splits and merges check that later
//! writes are numbered above the markers a region inherits.

use std::sync::Arc;

use basalt_model::ops::{CheckAndMutate, CompareOp, Mutation, Put};
use basalt_model::{
    BloomType, Cell, ColumnFamilyDescriptor, Compression, Durability, KeepDeletedCells, RowResult,
    TableDescriptor, TableName,
};
use basalt_storage::env::{Env, ManualClock, MemoryStore, ObjectStore};
use basalt_testkit::oracle::regions::RegionedOracle;
use basalt_testkit::oracle::Oracle;
use basalt_testkit::strategies::{op, Op};
use bytes::Bytes;
use proptest::prelude::*;

use super::support::{open, open_with_env, scan_in_place, T0};

#[derive(Clone, Debug)]
struct Config {
    kdc: KeepDeletedCells,
    nvb: bool,
    codec: Compression,
    bloom: BloomType,
    block_size_bytes: u32,
}

fn config() -> impl Strategy<Value = Config> {
    (
        prop::sample::select(vec![KeepDeletedCells::False, KeepDeletedCells::True]),
        any::<bool>(),
        prop::sample::select(vec![Compression::None, Compression::Lz4, Compression::Zstd]),
        prop::sample::select(vec![BloomType::None, BloomType::Row, BloomType::RowCol]),
        prop::sample::select(vec![1024u32, 65536]),
    )
        .prop_map(|(kdc, nvb, codec, bloom, block_size_bytes)| Config {
            kdc,
            nvb,
            codec,
            bloom,
            block_size_bytes,
        })
}

fn families(c: &Config) -> Vec<ColumnFamilyDescriptor> {
    let tune = |f: ColumnFamilyDescriptor| {
        f.with_keep_deleted_cells(c.kdc)
            .with_new_version_behavior(c.nvb)
            .with_compression(c.codec)
            .with_bloom_filter(c.bloom)
            .with_block_size_bytes(c.block_size_bytes)
    };
    vec![
        tune(ColumnFamilyDescriptor::new("f").with_max_versions(3)),
        tune(ColumnFamilyDescriptor::new("g")),
        tune(
            ColumnFamilyDescriptor::new("h")
                .with_max_versions(2)
                .with_min_versions(1)
                .with_ttl_seconds(3),
        ),
    ]
}

/// A cell as the comparison sees it: everything but the sequence id.
fn show(rows: &[RowResult]) -> Vec<String> {
    rows.iter()
        .flat_map(|r| r.cells.iter())
        .map(|c: &Cell| {
            format!(
                "{}/{}:{}@{}/{}={}",
                String::from_utf8_lossy(c.row()),
                String::from_utf8_lossy(&c.family),
                String::from_utf8_lossy(c.qualifier()),
                c.timestamp,
                c.cell_type.name(),
                String::from_utf8_lossy(c.value())
            )
        })
        .collect()
}

fn async_wal(m: Mutation) -> Mutation {
    match m {
        Mutation::Put(p) => Mutation::Put(p.with_durability(Durability::AsyncWal)),
        Mutation::Delete(d) => Mutation::Delete(d.with_durability(Durability::AsyncWal)),
        other => other,
    }
}

/// A step of a history: an operation, or a change of the table's regions.
#[allow(clippy::large_enum_variant)] // test input, built once per step
#[derive(Clone, Debug)]
enum Step {
    Op(Op),
    /// Split the region holding this row there.
    Split(Bytes),
    /// Merge region `i % (n - 1)` with the next.
    Merge(usize),
}

fn step() -> impl Strategy<Value = Step> {
    let keys = ["r1", "r2", "r2x", "r3", "r4"].map(|k| Bytes::from_static(k.as_bytes()));
    prop_oneof![
        30 => op().prop_map(Step::Op),
        2 => prop::sample::select(keys.to_vec()).prop_map(Step::Split),
        1 => (0usize..4).prop_map(Step::Merge),
    ]
}

/// A refusal the model allows: a region that still reads its parents' files is neither
/// split nor merged until a compaction rewrites them.
fn refused_for_references(r: basalt_model::Result<()>) -> Result<bool, TestCaseError> {
    match r {
        Ok(()) => Ok(false),
        Err(e) if e.to_string().contains("compact it first") => Ok(true),
        Err(e) => Err(TestCaseError::fail(format!("unexpected error: {e}"))),
    }
}

/// Applies a split or merge to the database and, when it happened, to the oracle.
fn change_regions(
    db: &basalt_node::Database,
    name: &TableName,
    oracle: &mut RegionedOracle,
    step: &Step,
    now: i64,
) -> Result<(), TestCaseError> {
    match step {
        Step::Split(key) => {
            let starts = oracle.starts();
            if starts.contains(key) {
                return Ok(());
            }
            if !refused_for_references(db.split_table(name, Some(key)))? {
                prop_assert!(oracle.split(key, now));
            }
        }
        Step::Merge(i) => {
            let regions = db.regions(name).unwrap();
            prop_assert_eq!(regions.len(), oracle.starts().len());
            if regions.len() < 2 {
                return Ok(());
            }
            let i = i % (regions.len() - 1);
            let enc: Vec<String> = regions[i..i + 2]
                .iter()
                .map(|r| r.encoded_name(name))
                .collect();
            let both = [enc[0].as_bytes(), enc[1].as_bytes()];
            if !refused_for_references(db.merge_regions(&both, false))? {
                oracle.merge(i, now);
            }
        }
        Step::Op(_) => {}
    }
    let starts: Vec<Bytes> = db
        .regions(name)
        .unwrap()
        .into_iter()
        .map(|r| r.start_key)
        .collect();
    prop_assert_eq!(starts, oracle.starts());
    Ok(())
}

#[allow(clippy::too_many_lines)] // one arm per operation, each a few lines
fn run(config: &Config, steps: &[Step], place: &Place) -> Result<(), TestCaseError> {
    let clock = Arc::new(ManualClock::new(T0));
    let name = TableName::parse("m").unwrap();
    let fams = families(config);
    let mut db = place.open(&clock);
    db.create_table(TableDescriptor::new(&name, fams.clone()), &[])
        .unwrap();
    let side = TableName::parse("side").unwrap();
    db.create_table(TableDescriptor::new(&side, fams.clone()), &[])
        .unwrap();
    let mut table = db.table("m").unwrap();
    let mut oracle = RegionedOracle::new(Oracle::new(&fams));
    for (step, s) in steps.iter().enumerate() {
        let now = clock.now_ms_for_tests();
        let Step::Op(o) = s else {
            change_regions(&db, &name, &mut oracle, s, now)?;
            clock.advance(1);
            continue;
        };
        match o {
            Op::Put(p) => {
                table.mutate(async_wal(Mutation::Put(p.clone()))).unwrap();
                oracle.put(p, now);
            }
            Op::Delete(d) => {
                table
                    .mutate(async_wal(Mutation::Delete(d.clone())))
                    .unwrap();
                oracle.delete(d, now);
            }
            Op::Increment(i) => {
                let got = table.increment(i.clone()).unwrap();
                let want = oracle.increment(i, now);
                prop_assert_eq!(show(&[got]), show(&[want]), "step {}: {:?}", step, o);
            }
            Op::Append(a) => {
                let got = table.append(a.clone()).unwrap();
                let want = oracle.append(a, now);
                prop_assert_eq!(show(&[got]), show(&[want]), "step {}: {:?}", step, o);
            }
            Op::CheckAndPut {
                row,
                family,
                qualifier,
                expected,
                then,
            } => {
                let cam = match expected {
                    Some(v) => CheckAndMutate::if_matches(
                        row.clone(),
                        family.clone(),
                        qualifier.clone(),
                        CompareOp::Equal,
                        v.clone(),
                    ),
                    None => CheckAndMutate::if_not_exists(
                        row.clone(),
                        family.clone(),
                        qualifier.clone(),
                    ),
                };
                let got = table.check_and_mutate(cam.then_put(then.clone())).unwrap();
                let current = oracle.current(row, family, qualifier, now);
                let want = match (expected.as_ref().filter(|v| !v.is_empty()), &current) {
                    (None, None) => true,
                    (None, Some(c)) => c.value().is_empty(),
                    (Some(v), Some(c)) => c.value() == v,
                    (Some(_), None) => false,
                };
                prop_assert_eq!(got, want, "step {}: {:?}", step, o);
                if want {
                    oracle.put(then, now);
                }
            }
            Op::Get(g) => {
                let got = table.get(g.clone()).unwrap();
                let want = oracle.get(g, now);
                prop_assert_eq!(show(&[got]), show(&[want]), "step {}: {:?}", step, o);
            }
            Op::Scan(s) => {
                let got = table.scan(s.clone()).unwrap().collect_rows().unwrap();
                let want = oracle.scan(s, now);
                prop_assert_eq!(show(&got), show(&want), "step {}: {:?}", step, o);
                let read_in_place = scan_in_place(&table, s.clone());
                prop_assert_eq!(
                    show(&read_in_place),
                    show(&want),
                    "step {}: {:?} in place",
                    step,
                    o
                );
            }
            Op::Flush => {
                db.flush(&name).unwrap();
                oracle.flush(now);
            }
            Op::Compact => {
                db.compact(&name).unwrap();
                oracle.compact(false, now);
            }
            Op::MajorCompact => {
                db.major_compact(&name).unwrap();
                oracle.compact(true, now);
            }
            Op::Reopen => {
                drop(table);
                db.close().unwrap();
                db = place.open(&clock);
                table = db.table("m").unwrap();
                // A clean close flushes every region, as HBase's region close does.
                oracle.flush(now);
                oracle.reopen();
            }
            Op::Crash => {
                // The history writes with ASYNC_WAL, which a crash may lose in part; a
                // synced write to another table first makes every edit durable (one sync
                // covers the whole log), so the crash loses nothing the oracle holds.
                let side = db.table("side").unwrap();
                side.put(Put::new("s").add("f", "q", "v")).unwrap();
                drop((side, table));
                drop(db);
                db = place.open(&clock);
                table = db.table("m").unwrap();
                oracle.reopen();
            }
            Op::Tick(ms) => clock.advance(*ms),
        }
        clock.advance(1);
    }
    // A full raw scan at the end compares every physical cell the reads can reach.
    let all = basalt_model::ops::Scan::new().raw().all_versions();
    let got = table.scan(all.clone()).unwrap().collect_rows().unwrap();
    prop_assert_eq!(
        show(&got),
        show(&oracle.scan(&all, clock.now_ms_for_tests()))
    );
    Ok(())
}

/// Where the database keeps its files: a local directory, or shared storage with object
/// semantics (create-if-absent, get, list, delete: no rename, append or overwrite).
enum Place {
    Local(tempfile::TempDir),
    Shared(Arc<MemoryStore>),
}

impl Place {
    fn open(&self, clock: &Arc<ManualClock>) -> basalt_node::Database {
        match self {
            Place::Local(dir) => open(dir.path(), clock),
            Place::Shared(store) => {
                let root = std::path::PathBuf::from("memory://model");
                let env = Env::on_shared(Arc::clone(clock) as _, store.clone(), root.clone());
                open_with_env(&root, env)
            }
        }
    }
}

trait NowForTests {
    fn now_ms_for_tests(&self) -> i64;
}

impl NowForTests for ManualClock {
    fn now_ms_for_tests(&self) -> i64 {
        basalt_storage::env::Clock::now_ms(self)
    }
}

fn cases() -> u32 {
    std::env::var("BASALT_MODEL_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(96)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), max_shrink_iters: 2000, ..ProptestConfig::default() })]

    #[test]
    fn database_agrees_with_the_oracle(config in config(), steps in prop::collection::vec(step(), 1..80)) {
        run(&config, &steps, &Place::Local(tempfile::tempdir().unwrap()))?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), max_shrink_iters: 2000, ..ProptestConfig::default() })]

    /// The same histories with every file on object storage: store files and manifests as
    /// objects created if absent, the WAL as chunks, the archive by copy and delete.
    #[test]
    fn database_on_shared_storage_agrees_with_the_oracle(config in config(), steps in prop::collection::vec(step(), 1..80)) {
        run(&config, &steps, &Place::Shared(MemoryStore::new()))?;
    }
}

#[test]
fn oracle_sanity_put_then_get() {
    // Guards the harness itself: a trivial history must compare equal and non-empty.
    let config = Config {
        kdc: KeepDeletedCells::False,
        nvb: false,
        codec: Compression::None,
        bloom: BloomType::Row,
        block_size_bytes: 1024,
    };
    let steps = [
        Step::Op(Op::Put(Put::new("r1").add_at("f", "a", 1, "x"))),
        Step::Op(Op::Flush),
        Step::Split(Bytes::from_static(b"r1")),
        Step::Op(Op::Get(basalt_model::ops::Get::new("r1"))),
    ];
    run(&config, &steps, &Place::Local(tempfile::tempdir().unwrap())).unwrap();
    let store = MemoryStore::new();
    run(&config, &steps, &Place::Shared(store.clone())).unwrap();
    // Every file went to the store: catalog and manifest versions, store files, the log.
    let keys = store.list_all("").unwrap();
    for prefix in ["catalog/CATALOG-", "data/default/m/", "wal/"] {
        assert!(
            keys.iter().any(|k| k.starts_with(prefix)),
            "{prefix}: {keys:?}"
        );
    }
    assert!(keys.iter().any(|k| k.ends_with(".sf")), "{keys:?}");
    let mut o = Oracle::new(&families(&config));
    o.put(&Put::new("r1").add_at("f", "a", 1, "x"), T0);
    assert_eq!(
        show(&[o.get(&basalt_model::ops::Get::new("r1"), T0)]),
        ["r1/f:a@1/Put=x"]
    );
}

#[test]
fn oracle_sanity_new_version_behavior_changes_the_answer() {
    // Guards the harness: with NEW_VERSION_BEHAVIOR the oracle shows a put written after a
    // delete at the same timestamp, and the database agrees; without, neither shows it.
    let delete = basalt_model::ops::Delete::new("r1").add_columns_at("f", "a", 1);
    let put = Put::new("r1").add_at("f", "a", 1, "x");
    let get = basalt_model::ops::Get::new("r1");
    let steps = [
        Step::Op(Op::Delete(delete.clone())),
        Step::Op(Op::Put(put.clone())),
        Step::Op(Op::Flush),
        Step::Op(Op::Get(get.clone())),
    ];
    for nvb in [false, true] {
        let config = Config {
            kdc: KeepDeletedCells::False,
            nvb,
            codec: Compression::None,
            bloom: BloomType::Row,
            block_size_bytes: 1024,
        };
        run(&config, &steps, &Place::Local(tempfile::tempdir().unwrap())).unwrap();
        let mut o = Oracle::new(&families(&config));
        o.delete(&delete, T0);
        o.put(&put, T0);
        let want: &[&str] = if nvb { &["r1/f:a@1/Put=x"] } else { &[] };
        assert_eq!(show(&[o.get(&get, T0)]), want, "nvb {nvb}");
    }
}
