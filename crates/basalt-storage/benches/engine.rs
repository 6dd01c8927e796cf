//! Criterion micro-benchmarks of the engine's hot paths: block encode, checksum check, read
//! and search, bloom probes, memstore inserts, Gets from a memstore, a store file and both,
//! merging iteration (of memstores, and of store files with older versions to pass), the
//! query matcher, a flush's read of a memstore, a major compaction, a read point taken
//! beside a writer, and the block cache's lookups and inserts.
//!
//! `cargo bench -p basalt-storage --bench engine`
#![allow(clippy::unwrap_used, missing_docs)] // benchmark code

use std::hint::black_box;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use basalt_model::{
    BloomType, Cell, ColumnFamilyDescriptor, Compression, KeepDeletedCells, TimeRange,
};
use basalt_storage::block_cache::{Block, BlockCache, BlockKey, Priority};
use basalt_storage::compaction::Throttle;
use basalt_storage::env::Env;
use basalt_storage::memstore::MemStore;
use basalt_storage::region::mvcc::Mvcc;
use basalt_storage::store::query_matcher::{Mode, QueryMatcher, ScanInfo};
use basalt_storage::store::scanner::{CellSource, StoreScanner};
use basalt_storage::store::source::Source;
use basalt_storage::store::Store;
use basalt_storage::storefile::block::{
    decode_data_block, frame, unframe, BlockChecksum, DataBlockBuilder,
};
use basalt_storage::storefile::{
    bloom_key, row_hash, Bloom, BloomBuilder, Caching, FileId, StoreFile, StoreFileWriter,
};
use basalt_storage::RegionInfo;
use bytes::Bytes;
use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};

fn cell(i: u64, seq: u64) -> Cell {
    let mut c = Cell::put(
        i.to_be_bytes().repeat(2),
        "f",
        "q",
        1_700_000_000_000,
        vec![b'v'; 100],
    );
    c.seq_id = seq;
    c
}

/// Cells of one 64 KiB block: 16-byte rows, 100-byte values.
fn block_cells() -> Vec<Cell> {
    (0..460).map(|i| cell(i, i + 1)).collect()
}

fn blocks(c: &mut Criterion) {
    let cells = block_cells();
    let mut g = c.benchmark_group("data_block");
    g.throughput(Throughput::Elements(cells.len() as u64));
    g.bench_function("encode", |b| {
        let mut builder = DataBlockBuilder::default();
        b.iter(|| {
            cells.iter().for_each(|c| builder.add(c));
            black_box(builder.finish())
        });
    });
    let mut builder = DataBlockBuilder::default();
    cells.iter().for_each(|c| builder.add(c));
    let body = Bytes::from(builder.finish());
    let family = Bytes::from_static(b"f");
    // A block read from disk is checked whole: its checksum over about 64 KiB.
    let stored = frame(&body, Compression::None, BlockChecksum::WRITTEN).unwrap();
    g.throughput(Throughput::Bytes(stored.len() as u64));
    g.bench_function("check", |b| {
        b.iter_batched(
            || stored.clone(),
            |s| black_box(unframe(s, BlockChecksum::WRITTEN, Path::new("b"), 0).unwrap()),
            BatchSize::SmallInput,
        );
    });
    // A cache miss's read of the block from the page cache, and its check: the read lands in
    // a pooled buffer, which goes back when the block is dropped.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("block");
    let env = Env::default();
    let mut w = env.create(&path).unwrap();
    w.write_all(&stored).unwrap();
    drop(w);
    let file = env.open(&path).unwrap();
    g.bench_function("read", |b| {
        b.iter(|| {
            let read = file.read_at(0, stored.len()).unwrap();
            black_box(unframe(read, BlockChecksum::WRITTEN, &path, 0).unwrap())
        });
    });
    g.throughput(Throughput::Elements(cells.len() as u64));
    // What a cache miss costs beyond reading the block: its layout placed, then one search,
    // which checks the entries it touches.
    g.bench_function("miss", |b| {
        let key = Cell::first_on_row(&Bytes::from(230u64.to_be_bytes().repeat(2)));
        b.iter(|| {
            let block = decode_data_block(body.clone(), &family, Path::new("b"), 0).unwrap();
            black_box(block.lower_bound(&key).unwrap())
        });
    });
    let block = decode_data_block(body.clone(), &family, Path::new("b"), 0).unwrap();
    g.throughput(Throughput::Elements(1));
    g.bench_function("seek", |b| {
        let mut i = 0u64;
        b.iter(|| {
            i = (i + 97) % 460;
            black_box(
                block.lower_bound(&Cell::first_on_row(&Bytes::from(i.to_be_bytes().repeat(2)))),
            )
        });
    });
    g.finish();
}

fn blooms(c: &mut Criterion) {
    let mut builder = BloomBuilder::new(BloomType::Row);
    for i in 0..100_000u64 {
        builder.add(&bloom_key(BloomType::Row, &i.to_be_bytes(), b""));
    }
    // In chunks of a 64 KiB block, probed as a read probes them: the chunk of the key's line.
    let (layout, lines) = builder.finish(64 << 10, 0);
    let chunks: Vec<Bloom> = (0..)
        .zip(layout.split(&lines))
        .map(|(i, body)| layout.chunk(i, body).unwrap())
        .collect();
    let probe = |row: u64| {
        let h = row_hash(&row.to_be_bytes());
        chunks[layout.chunk_of(h) as usize].may_contain_hash(h)
    };
    let mut g = c.benchmark_group("bloom");
    g.throughput(Throughput::Elements(1));
    let mut i = 0u64;
    g.bench_function("probe_present", |b| {
        b.iter(|| {
            i = (i + 7919) % 100_000;
            black_box(probe(i))
        });
    });
    g.bench_function("probe_absent", |b| {
        b.iter(|| {
            i += 7919;
            black_box(probe(i + 1_000_000))
        });
    });
    g.finish();
}

fn memstore(c: &mut Criterion) {
    let mut g = c.benchmark_group("memstore");
    g.throughput(Throughput::Elements(10_000));
    g.bench_function("insert_10k_random", |b| {
        let cells: Vec<Cell> = (0..10_000u64)
            .map(|i| cell(i.wrapping_mul(0x9E37_79B9_7F4A_7C15), i))
            .collect();
        b.iter_batched(
            || cells.clone(),
            |cells| {
                let m = MemStore::new();
                cells.iter().for_each(|c| {
                    m.insert(c);
                });
                m
            },
            BatchSize::LargeInput,
        );
    });
    // The same into a memstore that follows one of a million cells, so its row bloom filter
    // has room for 1.25M rows (1.8 MiB, made before the timing): what the filter costs an insert
    // once it is larger than the caches nearest the core.
    g.bench_function("insert_10k_random_after_1m", |b| {
        // Built here, so a run that filters this benchmark out does not build it.
        let previous = MemStore::new();
        (0..1_000_000u64).for_each(|i| {
            previous.insert(&cell(i, i + 1));
        });
        let cells: Vec<Cell> = (0..10_000u64)
            .map(|i| cell(i.wrapping_mul(0x9E37_79B9_7F4A_7C15), i + 1))
            .collect();
        b.iter_batched(
            || {
                let m = MemStore::after(&previous);
                m.insert(&cell(u64::MAX, 0));
                (cells.clone(), m)
            },
            |(cells, m)| {
                cells.iter().for_each(|c| {
                    m.insert(c);
                });
                m
            },
            BatchSize::LargeInput,
        );
    });
    g.finish();
}

/// A memstore filled to about 48 MiB, in random order, after another one was filled and
/// dropped (a flush): the chunks it writes into are the dropped one's, taken from the pool,
/// or pages the system must fault in and clear when the pool does not hand them on.
fn memstore_refill(c: &mut Criterion) {
    let cells: Vec<Cell> = (0..400_000u64)
        .map(|i| cell(i.wrapping_mul(0x9E37_79B9_7F4A_7C15), i))
        .collect();
    let mut g = c.benchmark_group("memstore");
    g.sample_size(10);
    g.throughput(Throughput::Elements(cells.len() as u64));
    g.bench_function("refill_400k_random", |b| {
        b.iter_batched(
            MemStore::new,
            |m| {
                cells.iter().for_each(|c| {
                    m.insert(c);
                });
                m
            },
            BatchSize::PerIteration,
        );
    });
    g.finish();
}

/// A flush's read of a memstore of a million cells written in random order: the store
/// scanner walks the skip list's nodes in key order, which lie apart in the arena. And a
/// Get's seek in it.
fn flush_read(c: &mut Criterion) {
    let m = Arc::new(MemStore::new());
    for i in 0..1_000_000u64 {
        m.insert(&cell(i.wrapping_mul(0x9E37_79B9_7F4A_7C15), i + 1));
    }
    let mut g = c.benchmark_group("memstore");
    g.sample_size(10);
    g.throughput(Throughput::Elements(1_000_000));
    g.bench_function("flush_read_1m_random", |b| {
        b.iter(|| {
            let matcher = QueryMatcher::new(
                Mode::RetainDeletes,
                scan_info(),
                1_800_000_000_000,
                u64::MAX,
            );
            let mut s = StoreScanner::new(vec![Source::Memory(m.scanner(u64::MAX))], matcher);
            s.seek_to_first().unwrap();
            let mut n = 0usize;
            s.compact_into(|row| {
                n += row.len();
                black_box(row);
                Ok(())
            })
            .unwrap();
            assert_eq!(n, 1_000_000);
            n
        });
    });
    // A Get's seek in the same memstore: a search of the skip list from its top, through
    // nodes that lie apart in the arena (what a read beside a writer meets).
    g.throughput(Throughput::Elements(1));
    g.bench_function("seek_1m_random", |b| {
        let mut i = 0u64;
        b.iter(|| {
            i += 1;
            let row = (i.wrapping_mul(0x2545_F491_4F6C_DD1D) % 1_000_000)
                .wrapping_mul(0x9E37_79B9_7F4A_7C15)
                .to_be_bytes()
                .repeat(2);
            let mut s = m.row_scanner(u64::MAX, &row);
            s.seek(&Cell::first_on_row(&Bytes::from(row))).unwrap();
            assert!(s.peek().is_some());
        });
    });
    g.finish();
}

/// A Get of a row whose ten columns were each written `versions` times since the last
/// flush (a hot row under updates), among 10k rows of one cell: the store scanner keeps
/// each column's newest version and skips the rest. The row is a binary number, or a YCSB
/// row's string.
fn hot_row(c: &mut Criterion) {
    let mut g = c.benchmark_group("memstore");
    g.throughput(Throughput::Elements(1));
    // Rows of binary numbers (each with zero bytes, escaped in the memstore's keys), and a
    // YCSB row: a string without any.
    let binary = Bytes::from(5_000u64.to_be_bytes().repeat(2));
    let string = Bytes::from_static(b"user6284781860667377211");
    for (versions, row) in [(1, &binary), (4, &binary), (200, &binary), (1, &string)] {
        let m = Arc::new(MemStore::new());
        let mut seq = 0;
        for i in 0..10_000u64 {
            seq += 1;
            m.insert(&cell(i, seq));
        }
        for v in 0..versions {
            for q in 0..10 {
                seq += 1;
                let mut c = Cell::put(row.clone(), "f", format!("field{q}"), v, vec![b'v'; 100]);
                c.seq_id = seq;
                m.insert(&c);
            }
        }
        // The whole row (with the binary row's cell among the 10k), then one column named
        // (the Get then leaves the row early).
        for (what, named, cells) in [
            ("10_columns", None, 10 + usize::from(*row == binary)),
            ("column_3_of_10", Some("field3"), 1),
        ] {
            let kind = if *row == string { "string_row" } else { "row" };
            let name = format!("get_hot_{kind}_{what}_{versions}_versions");
            let mode = user_mode_naming(named.map(|q| vec![Bytes::from(q)]));
            g.bench_function(name, |b| {
                b.iter(|| {
                    let got = get_row(
                        vec![Source::Memory(m.row_scanner(u64::MAX, row))],
                        &mode,
                        row,
                    );
                    assert_eq!(got, cells);
                    black_box(got)
                });
            });
        }
    }
    g.finish();
}

/// A Get of `row` from `sources`, as `mode` reads it; returns the cells read. A Get of
/// named columns lets its files wait at the first column, as the store opens one (lazy
/// seek).
fn get_row(sources: Vec<Source>, mode: &Mode, row: &Bytes) -> usize {
    let matcher = QueryMatcher::new(mode.clone(), scan_info(), 1_800_000_000_000, u64::MAX);
    let mut s = StoreScanner::new(sources, matcher);
    s.seek_lazily(row, &Bytes::from_static(b"f"));
    s.seek(&Cell::first_on_row(row)).unwrap();
    let mut out = Vec::new();
    s.read_row(row, &mut out, None).unwrap();
    out.len()
}

fn scan_info() -> ScanInfo {
    ScanInfo {
        max_versions: 1,
        min_versions: 0,
        ttl_ms: None,
        keep_deleted_cells: KeepDeletedCells::False,
        time_to_purge_deletes_ms: 0,
        new_version_behavior: false,
    }
}

fn user_mode() -> Mode {
    user_mode_naming(None)
}

/// A user scan of the newest versions, of the columns named (every column for `None`).
fn user_mode_naming(explicit_columns: Option<Vec<Bytes>>) -> Mode {
    Mode::User {
        raw: false,
        time_range: TimeRange::default(),
        max_versions: 1,
        has_filter: false,
        explicit_columns,
    }
}

/// A store file of 10,000 rows of ten columns (`field0`..`field9`, 100-byte values), in
/// `dir`, its blocks cached as they are read.
fn ten_column_file(dir: &Path) -> Arc<StoreFile> {
    let path = dir.join("1.sf");
    let family = ColumnFamilyDescriptor::new("f");
    let mut w = StoreFileWriter::create(&Env::default(), &path, &family, 0).unwrap();
    let mut seq = 0;
    for i in 0..10_000u64 {
        for q in 0..10 {
            seq += 1;
            let mut c = Cell::put(
                i.to_be_bytes().repeat(2),
                "f",
                format!("field{q}"),
                1,
                vec![b'v'; 100],
            );
            c.seq_id = seq;
            w.add(&c).unwrap();
        }
    }
    w.finish(true).unwrap();
    let cache = BlockCache::new(64 << 20);
    let id = FileId { region: 1, file: 1 };
    Arc::new(
        StoreFile::open(
            &Env::default(),
            &path,
            id,
            &Bytes::from_static(b"f"),
            &cache,
        )
        .unwrap(),
    )
}

/// Gets of one row of ten columns from a store file (10,000 such rows, every block cached):
/// the whole row, then one column named (the Get then leaves the row early).
fn store_file_row(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let file = ten_column_file(dir.path());
    let row = Bytes::from(5_000u64.to_be_bytes().repeat(2));
    let mut g = c.benchmark_group("store_file");
    g.throughput(Throughput::Elements(1));
    for (what, named, cells) in [
        ("10_columns", None, 10),
        ("column_3_of_10", Some("field3"), 1),
    ] {
        let mode = user_mode_naming(named.map(|q| vec![Bytes::from(q)]));
        g.bench_function(format!("get_row_{what}"), |b| {
            b.iter(|| {
                let source = file.row_scanner(u64::MAX, Caching::QUERY, &row);
                let got = get_row(vec![Source::File(source)], &mode, &row);
                assert_eq!(got, cells);
                black_box(got)
            });
        });
    }
    g.finish();
}

/// A Get of a row of ten columns from a store file and a memstore holding a newer version
/// of one of them (as every row has after YCSB's workload A): the sources opened as a Get
/// opens them (each reads the one row), and, to show what that saves, as a scan opens them
/// (each moves on to the next row's first cell after the row).
fn get_after_updates(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let file = ten_column_file(dir.path());
    let m = Arc::new(MemStore::new());
    let mut seq = 1_000_000;
    for i in 0..10_000u64 {
        seq += 1;
        let q = format!("field{}", i % 10);
        let mut c = Cell::put(i.to_be_bytes().repeat(2), "f", q, 2, vec![b'u'; 100]);
        c.seq_id = seq;
        m.insert(&c);
    }
    let row = Bytes::from(5_000u64.to_be_bytes().repeat(2));
    let mode = user_mode();
    let mut g = c.benchmark_group("store");
    g.throughput(Throughput::Elements(1));
    for (what, one_row) in [("as_a_get", true), ("as_a_scan", false)] {
        g.bench_function(format!("get_row_file_and_memstore_{what}"), |b| {
            b.iter(|| {
                let sources: Vec<Source> = if one_row {
                    vec![
                        Source::Memory(m.row_scanner(u64::MAX, &row)),
                        Source::File(file.row_scanner(u64::MAX, Caching::QUERY, &row)),
                    ]
                } else {
                    vec![
                        Source::Memory(m.scanner(u64::MAX)),
                        Source::File(file.scanner(u64::MAX, Caching::QUERY)),
                    ]
                };
                let got = get_row(sources, &mode, &row);
                assert_eq!(got, 10);
                black_box(got)
            });
        });
    }
    g.finish();
}

/// Every row of `sources` merged by a store scanner, as a scan of the newest versions reads
/// them; the cells kept.
fn scan_all(sources: Vec<Source>) -> usize {
    let matcher = QueryMatcher::new(user_mode(), scan_info(), 1_800_000_000_000, u64::MAX);
    let mut s = StoreScanner::new(sources, matcher);
    s.seek_to_first().unwrap();
    let mut out = Vec::new();
    while let Some(row) = s.peek_row_bytes() {
        s.read_row(&row, &mut out, None).unwrap();
    }
    out.len()
}

/// Four memstores of interleaved rows, merged by a store scanner (a store with four sources).
fn merging(c: &mut Criterion) {
    let sources: Vec<Arc<MemStore>> = (0..4u64)
        .map(|s| {
            let m = Arc::new(MemStore::new());
            for i in (s..20_000).step_by(4) {
                m.insert(&cell(i, i + 1));
            }
            m
        })
        .collect();
    let mut g = c.benchmark_group("merge");
    g.throughput(Throughput::Elements(20_000));
    g.bench_function("four_sources_20k_rows", |b| {
        b.iter(|| {
            let merged: Vec<Source> = sources
                .iter()
                .map(|m| Source::Memory(m.scanner(u64::MAX)))
                .collect();
            black_box(scan_all(merged))
        });
    });
    g.finish();
}

/// A store file of `rows` (16-byte rows, one column, 100-byte values) at `timestamp`, in
/// `dir`, its blocks cached in `cache` as they are read.
fn file_of(
    dir: &Path,
    n: u64,
    rows: &[u64],
    timestamp: i64,
    cache: &Arc<BlockCache>,
) -> Arc<StoreFile> {
    let path = dir.join(format!("{n}.sf"));
    let family = ColumnFamilyDescriptor::new("f");
    let mut w = StoreFileWriter::create(&Env::default(), &path, &family, 0).unwrap();
    for &i in rows {
        let mut c = Cell::put(
            i.to_be_bytes().repeat(2),
            "f",
            "q",
            timestamp,
            vec![b'v'; 100],
        );
        c.seq_id = u64::try_from(timestamp).unwrap();
        w.add(&c).unwrap();
    }
    w.finish(true).unwrap();
    let id = FileId { region: 1, file: n };
    Arc::new(StoreFile::open(&Env::default(), &path, id, &Bytes::from_static(b"f"), cache).unwrap())
}

const THREE_FILES_ROWS: u64 = 20_000;

/// Three store files shaped as `basalt-vs-rocksdb` leaves a store after fillrandom and
/// overwrite, oldest first: the oldest holds every row, and 4 rows in 9 have a newer version
/// in one of the two others (rows 0 and 1 in the second).
fn three_files(dir: &Path, cache: &Arc<BlockCache>) -> [Arc<StoreFile>; 3] {
    let newer = |part: u64| {
        (0..THREE_FILES_ROWS)
            .filter(move |i| i % 9 / 2 == part)
            .collect::<Vec<_>>()
    };
    [
        file_of(dir, 1, &(0..THREE_FILES_ROWS).collect::<Vec<_>>(), 1, cache),
        file_of(dir, 2, &newer(0), 2, cache),
        file_of(dir, 3, &newer(1), 3, cache),
    ]
}

/// A scan of the three files of [`three_files`], which passes the older versions in the
/// oldest.
fn older_versions(c: &mut Criterion) {
    const ROWS: u64 = THREE_FILES_ROWS;
    let dir = tempfile::tempdir().unwrap();
    let cache = BlockCache::new(64 << 20);
    let files = three_files(dir.path(), &cache);
    let mut g = c.benchmark_group("merge");
    g.throughput(Throughput::Elements(ROWS));
    g.bench_function("three_files_older_versions_20k_rows", |b| {
        b.iter(|| {
            let sources: Vec<Source> = files
                .iter()
                .rev()
                .map(|f| Source::File(f.scanner(u64::MAX, Caching::QUERY)))
                .collect();
            let kept = scan_all(sources);
            assert_eq!(kept as u64, ROWS);
            black_box(kept)
        });
    });
    g.finish();
}

/// A Get of a row of [`three_files`] whose newest version is in the second file, from the
/// two files its bloom filters let through: of its column, which leaves the oldest file
/// unread (lazy seek), and of the whole row, which must read both.
fn get_over_files(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let cache = BlockCache::new(64 << 20);
    let [oldest, second, _] = three_files(dir.path(), &cache);
    let row = Bytes::from(1u64.to_be_bytes().repeat(2));
    let mut g = c.benchmark_group("store");
    g.throughput(Throughput::Elements(1));
    for (what, named) in [
        ("column", Some(vec![Bytes::from_static(b"q")])),
        ("row", None),
    ] {
        let mode = user_mode_naming(named);
        g.bench_function(format!("get_{what}_newest_in_a_newer_file"), |b| {
            b.iter(|| {
                let sources: Vec<Source> = [&second, &oldest]
                    .into_iter()
                    .map(|f| Source::File(f.row_scanner(u64::MAX, Caching::QUERY, &row)))
                    .collect();
                let got = get_row(sources, &mode, &row);
                assert_eq!(got, 1);
                black_box(got)
            });
        });
    }
    g.finish();
}

/// The matcher's decision for each of a row's 100 versions of one column, VERSIONS => 3.
fn matcher(c: &mut Criterion) {
    let row = Bytes::from_static(b"row");
    let versions: Vec<Cell> = (0..100)
        .map(|v| {
            let mut c = Cell::put(row.clone(), "f", "q", 1_000 - v, "v");
            c.seq_id = 1;
            c
        })
        .collect();
    let info = ScanInfo {
        max_versions: 3,
        ..scan_info()
    };
    let mut g = c.benchmark_group("query_matcher");
    g.throughput(Throughput::Elements(versions.len() as u64));
    g.bench_function("row_of_100_versions", |b| {
        b.iter(|| {
            let mut m = QueryMatcher::new(Mode::RetainDeletes, info, 2_000, u64::MAX);
            m.set_row(&row);
            for c in &versions {
                black_box(m.matches(c, None));
            }
        });
    });
    g.finish();
}

/// Rows in the base file of [`compaction`]; each of the two newer files holds a third as many.
const COMPACTED_ROWS: u64 = 300_000;

/// A major compaction of a store shaped as a readwhilewriting run leaves it: a base file of
/// every row, written in random order, and two flushes of newer versions of a third of the
/// rows each, all through the store's own flush and compaction. It reads through the page
/// cache (a compaction does not fill the block cache) and writes and syncs its output as a
/// compaction does; the output is removed after each run, the inputs kept.
fn compaction(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let env = Env::default();
    let cache = BlockCache::new(64 << 20);
    let region = RegionInfo {
        id: 1,
        start_key: Bytes::new(),
        end_key: Bytes::new(),
    };
    let family = ColumnFamilyDescriptor::new("f");
    let store = Store::open(&env, dir.path(), &region, family, &[], &cache).unwrap();
    // Every row in the base file; rows ≡ 0 and ≡ 1 (mod 3) again in the second and third.
    // The rows go in scrambled (a multiplier prime to the row count permutes them).
    let mut seq = 0;
    for (file, part) in [(1, None), (2, Some(0)), (3, Some(1))] {
        let ts = i64::try_from(file).unwrap();
        for i in 0..COMPACTED_ROWS {
            let row = i * 7_919 % COMPACTED_ROWS;
            if part.is_some_and(|p| row % 3 != p) {
                continue;
            }
            seq += 1;
            let mut c = Cell::put(format!("{row:016}"), "f", "q", ts, vec![b'v'; 100]);
            c.seq_id = seq;
            store.insert(&c);
        }
        let snapshot = store.take_snapshot().unwrap();
        let flushed = store.write_flush(&snapshot, file, 10, 0, u64::MAX).unwrap();
        store.finish_flush(flushed);
    }
    let inputs = store.files();
    let mut g = c.benchmark_group("compaction");
    g.sample_size(10);
    g.throughput(Throughput::Elements(COMPACTED_ROWS * 5 / 3));
    let mut id = 3;
    g.bench_function("major_3_files_300k_rows", |b| {
        b.iter(|| {
            id += 1;
            let mut throttle = Throttle::new(None, env.instant());
            let out = store
                .write_compaction(&inputs, id, true, 20, 0, &mut throttle)
                .unwrap()
                .unwrap();
            let cells = out.info().cell_count;
            assert_eq!(cells, COMPACTED_ROWS);
            env.remove_file(out.path()).unwrap();
            black_box(cells)
        });
    });
    g.finish();
}

/// A read point taken while another thread begins and finishes writes in the same region, as
/// a Get takes one beside a writer: what the reader pays for reading the state the writer
/// writes.
fn read_point(c: &mut Criterion) {
    let mvcc = Arc::new(Mvcc::new(Arc::new(AtomicU64::new(0))));
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (mvcc, stop) = (Arc::clone(&mvcc), Arc::clone(&stop));
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let id = mvcc.begin();
                mvcc.staged(id, None);
            }
        })
    };
    let mut g = c.benchmark_group("mvcc");
    g.throughput(Throughput::Elements(1));
    g.bench_function("read_point_beside_a_writer", |b| {
        b.iter(|| black_box(mvcc.read_point()));
    });
    g.finish();
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
}

/// The block cache as a random Get at 10M rows meets it: a cache of many blocks whose
/// entries, counts and blocks have left the CPU's caches. 512 MiB of 4 KiB entries (each a
/// small block of its own, charged 4 KiB), looked up in an order that jumps all over them.
fn block_cache(c: &mut Criterion) {
    const WEIGHT: usize = 4 << 10;
    const CAPACITY: usize = 512 << 20;
    const N: u64 = (CAPACITY / WEIGHT) as u64;
    let family = Bytes::from_static(b"f");
    let block = |i: u64| {
        let mut b = DataBlockBuilder::default();
        b.add(&cell(i, 1));
        let body = Bytes::from(b.finish());
        Block::Data(Arc::new(
            decode_data_block(body, &family, Path::new("b"), 0).unwrap(),
        ))
    };
    let key = |i: u64| BlockKey {
        file: 1,
        offset: i * WEIGHT as u64,
    };
    // Every index of 0..N once, scattered (N is a power of two, the step odd).
    let scattered = |i: u64| i.wrapping_mul(0x9E37_79B9_7F4A_7C15) % N;
    let cache = BlockCache::new(CAPACITY);
    for i in 0..N {
        cache.insert(key(i), block(i), WEIGHT, Priority::Normal);
    }
    let mut g = c.benchmark_group("block_cache");
    g.throughput(Throughput::Elements(1));
    g.bench_function("lookup_hit", |b| {
        let mut i = 0;
        b.iter(|| {
            i += 1;
            black_box(cache.lookup_data(&key(scattered(i)), true, true))
        });
    });
    g.bench_function("lookup_miss", |b| {
        let mut i = 0;
        b.iter(|| {
            i += 1;
            black_box(cache.lookup_data(&key(N + scattered(i)), true, true))
        });
    });
    // A miss's insert into the full cache, which evicts a block to make room. The blocks
    // inserted are made beforehand: a read from disk makes them in the real thing.
    let fresh: Vec<Block> = (0..1024).map(block).collect();
    g.bench_function("insert_evicting", |b| {
        let mut i = N;
        b.iter(|| {
            i += 1;
            let fresh = fresh[(i % 1024) as usize].clone();
            cache.insert(key(i), fresh, WEIGHT, Priority::Normal);
        });
    });
    g.finish();
}

criterion_group!(
    benches,
    blocks,
    block_cache,
    blooms,
    memstore,
    memstore_refill,
    flush_read,
    hot_row,
    store_file_row,
    get_after_updates,
    merging,
    older_versions,
    get_over_files,
    matcher,
    compaction,
    read_point
);
criterion_main!(benches);
