//! The read path skips work: seeks instead of steps, blooms and ranges instead of file reads,
//! and a block cache with HBase's priorities.

use std::sync::Arc;

use basalt_model::ops::{Get, Put, Scan};
use basalt_model::{
    BloomType, ColumnFamilyDescriptor, Durability, TableDescriptor, TableName, TimeRange,
};
use basalt_node::{Database, Options, Table};
use basalt_storage::env::{Env, ManualClock};

use crate::support::{self, T0};

fn open(dir: &std::path::Path, cache_bytes: usize) -> Database {
    let mut options = Options {
        env: Env::with_clock(Arc::new(ManualClock::new(T0))),
        block_cache_bytes: cache_bytes,
        ..Options::default()
    };
    // These tests count the files a read touches: no compaction may merge them meanwhile.
    options.background.compaction.automatic = false;
    Database::open_with(dir, options).unwrap()
}

fn create(db: &Database, name: &str, families: Vec<ColumnFamilyDescriptor>) -> Table {
    let t = TableName::parse(name).unwrap();
    db.create_table(TableDescriptor::new(&t, families), &[])
        .unwrap();
    db.table(name).unwrap()
}

fn flush(db: &Database, name: &str) {
    db.flush(&TableName::parse(name).unwrap()).unwrap();
}

fn small_blocks(name: &str) -> ColumnFamilyDescriptor {
    ColumnFamilyDescriptor::new(name.to_owned()).with_block_size_bytes(4096)
}

#[test]
fn a_get_of_one_column_of_a_wide_row_reads_a_few_blocks() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path(), 64 << 20);
    let t = create(&db, "wide", vec![small_blocks("f").with_max_versions(5)]);
    for ts in 1..=5 {
        let mut p = Put::new("row");
        for q in 0..3000 {
            p = p.add_at("f", format!("q{q:05}"), ts, format!("value-{q}-{ts}"));
        }
        t.put(p).unwrap();
    }
    t.put(Put::new("row2").add("f", "q", "x")).unwrap();
    flush(&db, "wide");
    let blocks_in_file = db.block_cache_stats();
    let before = db.block_cache_stats().data_block_reads;
    let r = t.get(Get::new("row").add_column("f", "q01500")).unwrap();
    let read = db.block_cache_stats().data_block_reads - before;
    assert_eq!(r.cells.len(), 1);
    assert_eq!(r.cells[0].value(), b"value-1500-5");
    assert!(read <= 3, "read {read} data blocks");
    // The row spans hundreds of blocks, so stepping would have read far more.
    let before = db.block_cache_stats().data_block_reads;
    let whole = t.get(Get::new("row").all_versions()).unwrap();
    assert_eq!(whole.cells.len(), 15_000);
    let row_blocks = db.block_cache_stats().data_block_reads - before;
    assert!(row_blocks > 100, "{row_blocks} {blocks_in_file:?}");
}

#[test]
fn gets_skip_files_by_bloom_key_range_and_time_range() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path(), 64 << 20);
    let t = create(
        &db,
        "skip",
        vec![small_blocks("f").with_bloom_filter(BloomType::Row)],
    );
    // Ten files, each holding its own rows at its own timestamps.
    for file in 0..10 {
        for i in 0..200 {
            let row = format!("{file}-{i:04}");
            t.put(Put::new(row).add_at("f", "q", 1000 * (file + 1), "v"))
                .unwrap();
        }
        flush(&db, "skip");
    }
    let before = db.block_cache_stats().data_block_reads;
    for i in 0..200 {
        let r = t.get(Get::new(format!("5-{i:04}"))).unwrap();
        assert_eq!(r.cells.len(), 1);
    }
    // A row absent from every file: blooms and key ranges answer without a data block.
    for i in 0..200 {
        assert!(t.get(Get::new(format!("5-{i:04}x"))).unwrap().is_empty());
    }
    let reads = db.block_cache_stats().data_block_reads - before;
    assert!(
        reads <= 220,
        "{reads} data block reads for 200 hits and 200 misses"
    );
    // A time range older than every file but the first reads only the first.
    let before = db.block_cache_stats().data_block_reads;
    let r = t
        .get(Get::new("0-0007").with_time_range(TimeRange::new(0, 1001).unwrap()))
        .unwrap();
    assert_eq!(r.cells.len(), 1);
    assert_eq!(db.block_cache_stats().data_block_reads - before, 1);
}

#[test]
fn the_block_cache_serves_repeated_reads() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path(), 64 << 20);
    let t = create(&db, "hot", vec![small_blocks("f")]);
    for i in 0..2000 {
        t.put(Put::new(format!("r{i:05}")).add("f", "q", "value"))
            .unwrap();
    }
    flush(&db, "hot");
    let rows = |t: &Table| {
        for i in 0..2000 {
            assert!(!t.get(Get::new(format!("r{i:05}"))).unwrap().is_empty());
        }
    };
    rows(&t);
    let warm = db.block_cache_stats();
    rows(&t);
    let hot = db.block_cache_stats();
    assert!(warm.blocks > 5, "{warm:?}");
    assert_eq!(
        hot.misses, warm.misses,
        "a second pass is served from the cache"
    );
    assert!(hot.hits >= warm.hits + 2000);
    assert!(hot.size_bytes <= hot.capacity_bytes);
}

#[test]
fn blockcache_false_families_and_uncached_scans_leave_data_blocks_out() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path(), 64 << 20);
    let t = create(
        &db,
        "nocache",
        vec![small_blocks("f").with_block_cache(false)],
    );
    let u = create(&db, "cached", vec![small_blocks("f")]);
    for i in 0..2000 {
        let p = Put::new(format!("r{i:05}"))
            .add("f", "q", "value")
            .with_durability(Durability::AsyncWal);
        t.put(p.clone()).unwrap();
        u.put(p).unwrap();
    }
    flush(&db, "nocache");
    flush(&db, "cached");
    // Index leaves and bloom chunks are cached whatever the family says, as HBase caches
    // its meta blocks; data blocks are what BLOCKCACHE and `cache_blocks` govern.
    let data_blocks = || db.block_cache_stats().data_blocks;
    assert_eq!(data_blocks(), 0, "a flush caches no data block");
    assert_eq!(
        t.scan(Scan::new()).unwrap().collect_rows().unwrap().len(),
        2000
    );
    assert_eq!(data_blocks(), 0, "BLOCKCACHE => false");
    let mut scan = Scan::new();
    scan.cache_blocks = false;
    assert_eq!(u.scan(scan).unwrap().collect_rows().unwrap().len(), 2000);
    assert_eq!(data_blocks(), 0, "cache_blocks = false");
    assert_eq!(
        u.scan(Scan::new()).unwrap().collect_rows().unwrap().len(),
        2000
    );
    assert!(data_blocks() > 5, "{} data blocks", data_blocks());
}

#[test]
fn in_memory_families_survive_a_large_scan_of_another_family() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path(), 4 << 20);
    let t = create(
        &db,
        "mixed",
        vec![
            small_blocks("hot").with_in_memory(true),
            small_blocks("cold"),
        ],
    );
    let big = vec![b'x'; 1000];
    for i in 0..20_000 {
        let mut p = Put::new(format!("r{i:06}")).add("cold", "q", big.clone());
        if i % 100 == 0 {
            p = p.add("hot", "q", "small");
        }
        t.put(p.with_durability(Durability::AsyncWal)).unwrap();
    }
    flush(&db, "mixed");
    let hot_rows = |t: &Table| {
        for i in (0..20_000).step_by(100) {
            let g = Get::new(format!("r{i:06}")).add_family("hot");
            assert_eq!(t.get(g).unwrap().cells.len(), 1);
        }
    };
    hot_rows(&t);
    // Twenty MiB of cold data through a four MiB cache.
    let cold = Scan::new().add_family("cold");
    assert_eq!(t.scan(cold).unwrap().collect_rows().unwrap().len(), 20_000);
    let before = db.block_cache_stats();
    assert!(before.evictions > 100, "{before:?}");
    hot_rows(&t);
    assert_eq!(db.block_cache_stats().misses, before.misses);
}

#[test]
fn gets_over_several_files_see_newer_timestamps_and_markers_in_older_files() {
    use basalt_model::ops::Delete;
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path(), 64 << 20);
    let t = create(&db, "lazy", vec![small_blocks("f").with_max_versions(3)]);
    // The oldest file holds the newest timestamps.
    t.put(
        Put::new("a")
            .add_at("f", "q", 10, "a10")
            .add_at("f", "q", 8, "a8"),
    )
    .unwrap();
    t.delete(Delete::new("b").add_family_at("f", 100)).unwrap();
    flush(&db, "lazy");
    t.put(Put::new("a").add_at("f", "q", 9, "a9")).unwrap();
    t.put(Put::new("b").add_at("f", "q", 50, "masked")).unwrap();
    flush(&db, "lazy");
    t.put(Put::new("c").add_at("f", "q", 1, "c1")).unwrap();
    flush(&db, "lazy");
    t.put(Put::new("c").add_at("f", "q", 2, "c2")).unwrap();
    flush(&db, "lazy");
    let newest = t.get(Get::new("a")).unwrap();
    assert_eq!(support::values(&newest), ["a10"]);
    let all = t.get(Get::new("a").all_versions()).unwrap();
    assert_eq!(support::values(&all), ["a10", "a9", "a8"]);
    assert!(
        t.get(Get::new("b")).unwrap().is_empty(),
        "the older marker masks"
    );
    assert_eq!(support::values(&t.get(Get::new("c")).unwrap()), ["c2"]);
    let r = t.get(Get::new("c").add_column("f", "q")).unwrap();
    assert_eq!(support::values(&r), ["c2"]);
    let r = t.get(Get::new("a").add_column("f", "q")).unwrap();
    assert_eq!(support::values(&r), ["a10"]);
}

/// `get_cached` (what an async server answers on its own threads) reads memory alone: a
/// row whose block is not cached is `None` and nothing is read or counted; once a `get`
/// has read the block, the same row comes from memory, equal to `get`'s answer; rows the
/// memstore or the file's key range settle need no block at all; errors are `get`'s.
#[test]
fn a_get_from_memory_answers_only_without_the_disk() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = open(dir.path(), 64 << 20);
        let t = create(&db, "mem", vec![small_blocks("f")]);
        for i in 0..500 {
            t.put(Put::new(format!("r{i:03}")).add_at("f", "q", 1, format!("v{i}")))
                .unwrap();
        }
        flush(&db, "mem");
        db.close().unwrap();
    }
    // Reopened: the index and bloom are read at open; no data block is cached.
    let db = open(dir.path(), 64 << 20);
    let t = db.table("mem").unwrap();
    t.put(Put::new("a-memstore-row").add_at("f", "q", 2, "m"))
        .unwrap();
    let read_requests = || db.cluster_status().unwrap().servers[0].load.read_requests;
    let (before, requests) = (db.block_cache_stats(), read_requests());
    assert_eq!(t.get_cached(&Get::new("r100")).unwrap(), None);
    let after = db.block_cache_stats();
    assert_eq!(
        (
            after.misses,
            after.data_block_reads,
            after.inserts,
            read_requests()
        ),
        (
            before.misses,
            before.data_block_reads,
            before.inserts,
            requests
        ),
        "a memory-only read that missed counted a request or counted or cached a block"
    );
    let from_disk = t.get(Get::new("r100")).unwrap();
    assert_eq!(support::values(&from_disk), ["v100"]);
    assert_eq!(t.get_cached(&Get::new("r100")).unwrap(), Some(from_disk));
    // Each read that answered counts once, as the region's read requests.
    assert_eq!(read_requests(), requests + 2);
    // Outside the file's rows, or only in the memstore: no block is needed.
    let mem = t.get_cached(&Get::new("a-memstore-row")).unwrap().unwrap();
    assert_eq!(support::values(&mem), ["m"]);
    assert!(t.get_cached(&Get::new("zzz")).unwrap().unwrap().is_empty());
    // A bad Get is refused as `get` refuses it.
    let bad = Get::new("r100").add_column("nope", "q");
    assert_eq!(
        t.get_cached(&bad).unwrap_err().to_string(),
        t.get(bad).unwrap_err().to_string()
    );
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 24, ..Default::default() })]
    /// Whatever was written, flushed or read before, a memory-only Get is either no answer
    /// or exactly `get`'s.
    #[test]
    fn a_get_from_memory_is_none_or_what_get_answers(
        ops in proptest::collection::vec((0u8..4, 0u32..16, 0u32..4), 1..120),
        cache_kib in proptest::sample::select(vec![0usize, 64, 4096]),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let db = open(dir.path(), cache_kib << 10);
        let t = create(&db, "prop", vec![small_blocks("f").with_max_versions(2)]);
        for (op, row, q) in ops {
            let row = format!("row{row:02}");
            match op {
                0 => t.put(Put::new(row.clone()).add("f", format!("q{q}"), format!("{row}-{q}"))).unwrap(),
                1 => t.delete(basalt_model::ops::Delete::new(row.clone())).unwrap(),
                2 => flush(&db, "prop"),
                _ => {
                    // The whole row, or one column (whose files may wait: lazy seek).
                    let get = match q % 2 {
                        0 => Get::new(row.clone()),
                        _ => Get::new(row.clone()).add_column("f", format!("q{q}")),
                    }
                    .with_max_versions(2);
                    let cached = t.get_cached(&get).unwrap();
                    let read = t.get(get.clone()).unwrap();
                    if let Some(c) = cached {
                        proptest::prop_assert_eq!(c, read);
                    }
                }
            }
        }
    }
}

/// Rows a filter refuses by their key are passed whole: a filtered scan returns exactly the
/// rows of an unfiltered one that the filter keeps, with rows of one to thirty columns of
/// several versions, in the memstore and in store files of small blocks.
#[test]
fn rows_refused_by_their_key_are_passed_whole() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path(), 64 << 20);
    let t = create(&db, "refused", vec![small_blocks("f").with_max_versions(3)]);
    for round in 0..3i64 {
        for r in 0..200u32 {
            let mut p = Put::new(format!("{}-row{r:03}", ["a", "b", "c"][r as usize % 3]));
            for q in 0..1 + (r + round as u32) % 30 {
                p = p.add_at("f", format!("q{q:02}"), 10 + round, format!("v{round}"));
            }
            t.put(p).unwrap();
        }
        if round < 2 {
            flush(&db, "refused");
        }
    }
    let all = support::scan_all(&t, Scan::new());
    for filter in ["PrefixFilter('b')", "RowFilter(=, 'regexstring:row0[0-4]')"] {
        let scan = Scan::new().with_filter(basalt_model::filter::parse_filter(filter).unwrap());
        let kept = support::scan_all(&t, scan);
        let f = basalt_model::filter::parse_filter(filter).unwrap();
        let mut expected: Vec<_> = all.clone();
        expected.retain(|r| {
            let mut f = f.clone();
            !f.filter_row_key(r.row())
        });
        assert!(
            !expected.is_empty() && expected.len() < all.len(),
            "{filter}"
        );
        assert_eq!(
            support::render(&kept),
            support::render(&expected),
            "{filter}"
        );
    }
}

/// A scan read in place (`TableScanner::next_cells`, one vector for every row) answers what
/// `next_row` answers: a batched row in its parts, with their partial flags; no cell of a
/// row a filter drops after reading it, neither in the next row kept nor at the end; and a
/// limit's end. `support::scan_in_place` checks the vector is emptied at the start and end.
#[test]
fn a_scan_read_in_place_answers_what_next_row_answers() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path(), 1 << 20);
    let t = create(&db, "t", vec![ColumnFamilyDescriptor::new("f")]);
    let wide = (1..=5).fold(Put::new("w"), |p, q| p.add("f", q.to_string(), "x"));
    t.put(wide).unwrap();
    for row in ["a", "c"] {
        t.put(Put::new(row).add("f", "q", "ba")).unwrap();
    }
    // Rows "b" and "d" lack the column the filter tests, so it drops them once read.
    for row in ["b", "d"] {
        t.put(Put::new(row).add("f", "other", "x")).unwrap();
    }
    let batched = Scan::new().with_start_row("w", true).with_batch(2);
    let parts = support::scan_all(&t, batched.clone());
    let shape: Vec<(usize, bool)> = parts.iter().map(|r| (r.cells.len(), r.partial)).collect();
    assert_eq!(shape, [(2, true), (2, true), (1, false)]);
    assert_eq!(support::scan_in_place(&t, batched), parts);

    let filter = "SingleColumnValueFilter('f', 'q', =, 'binary:ba', true, true)";
    let filtered = Scan::new().with_filter(basalt_model::filter::parse_filter(filter).unwrap());
    let kept = support::scan_all(&t, filtered.clone());
    let rows: Vec<&[u8]> = kept.iter().map(basalt_model::RowResult::row).collect();
    assert_eq!(rows, [b"a", b"c"]);
    assert_eq!(support::scan_in_place(&t, filtered), kept);

    let limited = Scan::new().with_limit(2);
    let first_two = support::scan_all(&t, limited.clone());
    assert_eq!(first_two.len(), 2);
    assert_eq!(support::scan_in_place(&t, limited), first_two);
}
