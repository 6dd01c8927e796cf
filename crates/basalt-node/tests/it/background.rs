//! Flushes and compactions off the write path, and the flow control around them.

use std::sync::Arc;
use std::time::{Duration, Instant};

use basalt_model::ops::{Get, Put, Scan};
use basalt_model::{ColumnFamilyDescriptor, Durability, Error, TableDescriptor, TableName};
use basalt_node::{BackgroundConfig, Database, Options, Table};
use basalt_storage::compaction::CompactionConfig;
use basalt_storage::env::{Env, FaultInjector, ManualClock, Op};

use crate::support::T0;

const MIB: u64 = 1 << 20;

fn open(dir: &std::path::Path, clock: &Arc<ManualClock>, bg: BackgroundConfig) -> Database {
    let options = Options {
        env: Env::with_clock(Arc::clone(clock) as _),
        background: bg,
        ..Options::default()
    };
    Database::open_with(dir, options).unwrap()
}

/// A table flushing at `flush_mib` (the sanity check that forbids small sizes is off).
fn create(db: &Database, name: &str, flush_mib: u64) -> Table {
    let t = TableName::parse(name).unwrap();
    let mut desc = TableDescriptor::new(&t, [ColumnFamilyDescriptor::new("f")]);
    desc.memstore_flushsize_bytes = flush_mib * MIB;
    desc.configuration
        .insert("hbase.table.sanity.checks".into(), "false".into());
    db.create_table(desc, &[]).unwrap();
    db.table(name).unwrap()
}

fn put(i: u64) -> Put {
    Put::new(format!("row{i:08}"))
        .add("f", "q", vec![b'v'; 1000])
        .with_durability(Durability::AsyncWal)
}

fn files(db: &Database, name: &str) -> usize {
    db.store_file_counts(&TableName::parse(name).unwrap())
        .unwrap()[&b"f"[..]]
}

/// Waits until the background has finished `n` more periodic checks (and the work they
/// queued), so a test can assert that something did *not* happen.
fn after_periodic_checks(db: &Database, n: u64) {
    let start = db.engine_stats().periodic_checks;
    eventually("periodic checks", || {
        db.engine_stats().periodic_checks >= start + n
    });
    db.wait_for_background().unwrap();
}

/// Polls `cond` for up to ten seconds.
fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn flushes_and_minor_compactions_run_in_the_background() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(T0));
    let db = open(dir.path(), &clock, BackgroundConfig::default());
    let t = create(&db, "bg", 1);
    for i in 0..20_000 {
        t.put(put(i)).unwrap();
    }
    db.wait_for_background().unwrap();
    let s = db.engine_stats();
    assert!(s.flushes >= 10, "{s:?}");
    assert!(s.minor_compactions + s.major_compactions >= 2, "{s:?}");
    assert!(
        files(&db, "bg") < 10,
        "compactions keep the file count down"
    );
    assert_eq!(s.refused_writes, 0);
    let rows = t.scan(Scan::new()).unwrap().collect_rows().unwrap();
    assert_eq!(rows.len(), 20_000);
    drop(t);
    db.close().unwrap();
    let db = open(dir.path(), &clock, BackgroundConfig::default());
    let rows = db.table("bg").unwrap().scan(Scan::new()).unwrap();
    assert_eq!(rows.collect_rows().unwrap().len(), 20_000);
}

#[test]
fn memstore_accounting_is_exact() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(T0));
    let db = open(dir.path(), &clock, BackgroundConfig::default());
    let t = create(&db, "acct", 64);
    let u = create(&db, "acct2", 64);
    for i in 0..500 {
        t.put(put(i)).unwrap();
        u.put(put(i).add("f", "q", "repeated: the last wins and is counted once"))
            .unwrap();
    }
    // Each cell is counted at its skip-list node, whatever its row's number.
    let per_cell = basalt_storage::memstore::MemStore::entry_bytes;
    let cell = basalt_model::Cell::put("row00000000", "f", "q", T0, vec![b'v'; 1000]);
    let expect_t = 500 * per_cell(&cell);
    let short = basalt_model::Cell::put(
        "row00000000",
        "f",
        "q",
        T0,
        "repeated: the last wins and is counted once",
    );
    let expect_u = 500 * per_cell(&short);
    assert_eq!(
        db.engine_stats().memstore_bytes,
        (expect_t + expect_u) as u64
    );
    db.flush(&TableName::parse("acct").unwrap()).unwrap();
    assert_eq!(db.engine_stats().memstore_bytes, expect_u as u64);
    drop(u);
    let name = TableName::parse("acct2").unwrap();
    db.disable_table(&name).unwrap();
    db.delete_table(&name).unwrap();
    assert_eq!(db.engine_stats().memstore_bytes, 0);
}

#[test]
fn writes_stall_then_fail_retryably_while_store_files_pile_up() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(T0));
    let bg = BackgroundConfig {
        compaction: CompactionConfig {
            automatic: false,
            blocking_store_files: 2,
            ..CompactionConfig::default()
        },
        memstore_block_multiplier: 2,
        blocking_wait: Duration::from_secs(60),
        busy_wait: Duration::from_millis(300),
        ..BackgroundConfig::default()
    };
    let db = open(dir.path(), &clock, bg);
    let t = create(&db, "stall", 1);
    let mut acked = 0;
    let err = loop {
        match t.put(put(acked)) {
            Ok(()) => acked += 1,
            Err(e) => break e,
        }
        assert!(acked < 100_000, "writes never stalled");
    };
    assert!(matches!(err, Error::RegionTooBusy(_)), "{err}");
    assert!(err.is_retryable());
    assert_eq!(
        err.exception_name(),
        "org.apache.hadoop.hbase.RegionTooBusyException"
    );
    assert!(
        err.to_string()
            .contains("Over memstore limit=2.0 M, regionName=stall,,"),
        "{err}"
    );
    let s = db.engine_stats();
    assert!(s.delayed_writes >= 1 && s.refused_writes >= 1, "{s:?}");
    assert!(
        s.memstore_bytes < 3 * MIB,
        "memory stays bounded while flushes wait: {s:?}"
    );
    // A compaction clears the pile; the waiting flush goes ahead and writes resume.
    db.compact(&TableName::parse("stall").unwrap()).unwrap();
    eventually("the stalled flush", || {
        db.engine_stats().memstore_bytes < MIB
    });
    t.put(put(acked)).unwrap();
    acked += 1;
    for i in 0..acked {
        let r = t.get(Get::new(format!("row{i:08}"))).unwrap();
        assert!(!r.is_empty(), "acknowledged row {i} lost");
    }
}

#[test]
fn the_global_memstore_limit_flushes_the_largest_region() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(T0));
    let bg = BackgroundConfig {
        global_memstore_limit_bytes: 4 << 20,
        ..BackgroundConfig::default()
    };
    let db = open(dir.path(), &clock, bg);
    // Flush sizes far above the limit: only the global limit can trigger flushes.
    let a = create(&db, "a", 128);
    let b = create(&db, "b", 128);
    let mut peak = 0;
    for i in 0..12_000 {
        a.put(put(i)).unwrap();
        if i % 3 == 0 {
            b.put(put(i)).unwrap();
        }
        peak = peak.max(db.engine_stats().memstore_bytes);
    }
    let s = db.engine_stats();
    assert!(s.flushes >= 2, "{s:?}");
    assert!(peak < 6 << 20, "peak {peak} far above the 4 MiB limit");
    assert_eq!(s.refused_writes, 0);
}

#[test]
fn periodic_major_compaction_follows_the_clock() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(T0));
    let bg = BackgroundConfig {
        compaction: CompactionConfig {
            major_period_ms: 3_600_000,
            major_jitter: 0.0,
            ..CompactionConfig::default()
        },
        compaction_check_interval: Duration::from_millis(20),
        ..BackgroundConfig::default()
    };
    let db = open(dir.path(), &clock, bg);
    let t = create(&db, "periodic", 64);
    let name = TableName::parse("periodic").unwrap();
    for round in 0..2 {
        t.put(put(round)).unwrap();
        db.flush(&name).unwrap();
    }
    after_periodic_checks(&db, 2);
    assert_eq!(
        files(&db, "periodic"),
        2,
        "two files are below the minor threshold"
    );
    assert_eq!(db.engine_stats().major_compactions, 0);
    clock.advance(3_600_001);
    eventually("the periodic major compaction", || {
        db.engine_stats().major_compactions == 1 && files(&db, "periodic") == 1
    });
    // One major-compacted file is not compacted again.
    clock.advance(10 * 3_600_000);
    after_periodic_checks(&db, 2);
    assert_eq!(db.engine_stats().major_compactions, 1);
}

#[test]
fn background_compactions_keep_to_the_throughput_limit() {
    use basalt_storage::compaction::ThroughputBounds;
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(T0));
    let limit = 4 << 20;
    let bg = BackgroundConfig {
        compaction_throughput: Some(ThroughputBounds {
            lower_bytes_per_sec: limit,
            higher_bytes_per_sec: limit,
        }),
        ..BackgroundConfig::default()
    };
    let db = open(dir.path(), &clock, bg);
    let t = create(&db, "slow", 64);
    let name = TableName::parse("slow").unwrap();
    for file in 0..3 {
        for i in 0..2000 {
            t.put(put(file * 2000 + i)).unwrap();
        }
        db.flush(&name).unwrap();
    }
    // The third flush asked for a compaction of about 6 MiB of cells.
    let start = Instant::now();
    db.wait_for_background().unwrap();
    let took = start.elapsed().as_secs_f64();
    let s = db.engine_stats();
    assert_eq!(s.minor_compactions + s.major_compactions, 1, "{s:?}");
    let floor = s.compacted_bytes_written as f64 / limit as f64 * 0.7;
    assert!(
        took >= floor,
        "compacted {} bytes in {took:.2}s",
        s.compacted_bytes_written
    );
    assert_eq!(files(&db, "slow"), 1);
}

/// A database on a fresh directory under a fault injector seeded with `seed`.
fn open_on_faults(seed: u64) -> (tempfile::TempDir, Arc<FaultInjector>, Database) {
    let dir = tempfile::tempdir().unwrap();
    let faults = Arc::new(FaultInjector::new(seed));
    let clock = Arc::new(ManualClock::new(T0));
    let options = Options {
        env: Env::with_faults(clock as _, Arc::clone(&faults)),
        ..Options::default()
    };
    let db = Database::open_with(dir.path(), options).unwrap();
    (dir, faults, db)
}

#[test]
fn a_failed_background_flush_is_reported_to_waiters_and_retried() {
    let (_dir, faults, db) = open_on_faults(3);
    let t = create(&db, "retry", 1);
    // The next file created is the flush's store file: it fails once.
    faults.fail_nth(Op::Create, 1);
    for i in 0..1500 {
        t.put(put(i)).unwrap();
    }
    eventually("the failed flush", || {
        db.engine_stats().background_errors >= 1
    });
    let err = db.wait_for_background().unwrap_err();
    assert!(err.to_string().contains("flush of retry,,"), "{err}");
    assert!(err.to_string().contains("injected I/O error"), "{err}");
    eventually("the retried flush", || db.engine_stats().flushes >= 1);
    db.wait_for_background().unwrap();
    assert_eq!(
        t.scan(Scan::new()).unwrap().collect_rows().unwrap().len(),
        1500
    );
}

/// A database whose table `name` (1 MiB flush size) is in the middle of a flush on a disk
/// whose syncs take a second, with the rows written to fill it (`row0..`, their count).
fn in_mid_flush(name: &str) -> (tempfile::TempDir, Arc<FaultInjector>, Database, Table, u64) {
    let (dir, faults, db) = open_on_faults(5);
    let t = create(&db, name, 1);
    faults.set_sync_delay(Some(Duration::from_secs(1)));
    let created = faults.done_count(Op::Create);
    let mut rows = 0;
    while db.engine_stats().memstore_bytes < MIB {
        t.put(put(rows)).unwrap();
        rows += 1;
    }
    // The flush creates its file once it has taken the memstore's snapshot.
    eventually("the flush's file", || {
        faults.done_count(Op::Create) > created
    });
    (dir, faults, db, t, rows)
}

/// Writes `n` more rows after `from`, and checks that the flush was still running after them.
fn write_during_the_flush(db: &Database, t: &Table, from: u64, n: u64) {
    for i in from..from + n {
        t.put(put(i)).unwrap();
    }
    let s = db.engine_stats();
    assert_eq!(
        s.flushes, 0,
        "the writes came in while the flush ran: {s:?}"
    );
}

/// Writes that come in while a region's flush runs ask for no second flush (HBase's
/// `flushRequested`, cleared as the flush ends). The region counts the snapshot being
/// written until then, so each of them finds it over its flush size; they stay in memory
/// until they fill it themselves, where a second flush, right after the first, wrote them
/// out as a small file of their own.
#[test]
fn writes_during_a_flush_ask_for_no_second_one() {
    let (_dir, faults, db, t, before) = in_mid_flush("during");
    let during = 50;
    write_during_the_flush(&db, &t, before, during);
    faults.set_sync_delay(None);
    db.wait_for_background().unwrap();
    let s = db.engine_stats();
    assert_eq!(s.flushes, 1, "{s:?}");
    assert_eq!(files(&db, "during"), 1);
    let cell = basalt_model::Cell::put("row00000000", "f", "q", T0, vec![b'v'; 1000]);
    let per_cell = basalt_storage::memstore::MemStore::entry_bytes(&cell) as u64;
    assert_eq!(s.memstore_bytes, during * per_cell, "still in memory");
    let rows = t.scan(Scan::new()).unwrap().collect_rows().unwrap();
    assert_eq!(rows.len() as u64, before + during);
}

/// Writes that fill the memstore again while its flush runs get their flush as it ends,
/// though the requests they made were not taken.
#[test]
fn writes_that_fill_the_memstore_during_a_flush_are_flushed_after_it() {
    let (_dir, faults, db, t, before) = in_mid_flush("refill");
    write_during_the_flush(&db, &t, before, before);
    faults.set_sync_delay(None);
    db.wait_for_background().unwrap();
    let s = db.engine_stats();
    assert_eq!(s.flushes, 2, "{s:?}");
    assert_eq!(s.memstore_bytes, 0);
    let rows = t.scan(Scan::new()).unwrap().collect_rows().unwrap();
    assert_eq!(rows.len() as u64, 2 * before);
}

/// RELIABILITY.md D8: one quiet region must not pin every WAL segment. Past `max_logs`
/// closed segments the regions holding the oldest are flushed.
#[test]
fn too_many_wal_segments_flush_the_regions_that_pin_them() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(T0));
    let options = Options {
        env: Env::with_clock(Arc::clone(&clock) as _),
        wal_roll_size_bytes: 128 << 10,
        background: BackgroundConfig {
            max_logs: 4,
            periodic_flush_interval: None,
            ..BackgroundConfig::default()
        },
        ..Options::default()
    };
    let db = Database::open_with(dir.path(), options).unwrap();
    let quiet = create(&db, "quiet", 64);
    let busy = create(&db, "busy", 1);
    quiet.put(put(0)).unwrap();
    for i in 0..6_000 {
        busy.put(put(i)).unwrap();
    }
    db.wait_for_background().unwrap();
    assert_eq!(files(&db, "quiet"), 1, "the quiet region was not flushed");
    // 6 MB went through the log in 128 KiB segments; the log keeps about max_logs of them.
    let segments = db.wal_segment_count();
    assert!(segments <= 4 + 2, "{segments} WAL segments kept");
}

/// RELIABILITY.md D8: edits older than the periodic flush interval are flushed
/// (`hbase.regionserver.optionalcacheflushinterval`), and not before.
#[test]
fn old_unflushed_edits_are_flushed_periodically() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(T0));
    let bg = BackgroundConfig {
        compaction_check_interval: Duration::from_millis(20),
        periodic_flush_interval: Some(Duration::from_secs(3600)),
        ..BackgroundConfig::default()
    };
    let db = open(dir.path(), &clock, bg);
    let t = create(&db, "old", 64);
    t.put(put(1)).unwrap();
    after_periodic_checks(&db, 2);
    assert_eq!(files(&db, "old"), 0, "flushed before the interval passed");
    clock.advance(3_600_000);
    eventually("the periodic flush", || files(&db, "old") == 1);
    assert_eq!(
        t.get(Get::new(put(1).row)).unwrap().cells.len(),
        1,
        "the flushed row reads back"
    );
}

/// RELIABILITY.md D8: a clean close flushes every region and leaves no WAL to replay.
#[test]
fn a_clean_close_flushes_and_leaves_no_wal_to_replay() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(T0));
    let db = open(dir.path(), &clock, BackgroundConfig::default());
    let t = create(&db, "closing", 64);
    for i in 0..100 {
        t.put(put(i).with_durability(Durability::SyncWal)).unwrap();
    }
    drop(t);
    db.close().unwrap();
    // Every log's segments: the server's own directory, and any an earlier run left.
    let mut wal_bytes = 0;
    let mut dirs = vec![dir.path().join("wal")];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(d).unwrap() {
            let e = e.unwrap();
            if e.file_type().unwrap().is_dir() {
                dirs.push(e.path());
            } else {
                wal_bytes += e.metadata().unwrap().len();
            }
        }
    }
    // One empty segment: its header only.
    assert!(
        wal_bytes <= 64,
        "{wal_bytes} bytes of WAL left after a clean close"
    );
    let db = open(dir.path(), &clock, BackgroundConfig::default());
    assert_eq!(files(&db, "closing"), 1);
    let rows = db.table("closing").unwrap().scan(Scan::new()).unwrap();
    assert_eq!(rows.collect_rows().unwrap().len(), 100);
}
