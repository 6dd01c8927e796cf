//! Golden files: a WAL segment and store files (every codec, a ROWCOL bloom, many blocks)
//! committed under `tests/golden/`: store files of format version 1 (`store-<codec>.sf`,
//! prefix-compressed keys), of version 2 (`store-v2-<codec>.sf`), of version 3
//! (`store-v3-<codec>.sf`, zero sequence ids left out, two-byte offsets), of version 4
//! (`store-v4-<codec>.sf`, the bloom filter in chunks, the index in two levels) and of
//! version 5 (`store-v5-<codec>.sf`, blocks checked with XXH3 instead of CRC-32C). Today's
//! readers must return exactly the cells they were written with, so a change to a writer
//! and its reader together that departs from `docs/formats/` fails here even though the
//! pair still round-trips. Where the output is deterministic (no codec library in between), the writer
//! must also still produce the very same bytes as the current version's file.
//!
//! `write_golden_files` (ignored) made them; run it only for a new format version, never to
//! make this test pass.

// These tests damage and inspect files on purpose, beneath the engine's `Env`.
#![allow(clippy::disallowed_methods)]
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::path::{Path, PathBuf};
use std::sync::Arc;

use basalt_model::{BloomType, Cell, CellType, ColumnFamilyDescriptor, Compression};
use basalt_storage::block_cache::BlockCache;
use basalt_storage::env::Env;
use basalt_storage::store::scanner::CellSource;
use basalt_storage::storefile::{Caching, FileId, StoreFile, StoreFileWriter, FORMAT_VERSION};
use basalt_storage::wal::replay::decode_segment;
use basalt_storage::wal::{Wal, WalEdit};
use bytes::Bytes;

const CODECS: [Compression; 5] = [
    Compression::None,
    Compression::Lz4,
    Compression::Zstd,
    Compression::Snappy,
    Compression::Gz,
];
/// `created_ms` of every golden store file.
const CREATED_MS: i64 = 1_700_000_000_000;

fn golden(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name)
}

/// The cells of the golden files of format `version`: [`cells`], and from version 3 on
/// every fourth row's of sequence id 0 (as a major compaction leaves cells every reader
/// sees), which the file stores without it.
fn cells_of(version: u32) -> Vec<Cell> {
    let mut cells = cells();
    if version >= 3 {
        for c in cells.iter_mut().filter(|c| c.seq_id % 4 == 1) {
            c.seq_id = 0;
        }
    }
    cells
}

/// The cells of every golden file: 60 rows, each with a DeleteFamily marker and three
/// versions-of-columns with distinct timestamps, one with a TTL.
fn cells() -> Vec<Cell> {
    let mut out = Vec::new();
    for r in 0..60u32 {
        let row = format!("row{r:04}");
        let mut marker = Cell::marker(row.clone(), "f", "", 100, CellType::DeleteFamily);
        marker.seq_id = u64::from(r) + 1;
        out.push(marker);
        for q in 0..3 {
            let mut c = Cell::put(
                row.clone(),
                "f",
                format!("q{q}"),
                50 - q,
                format!("v{r}-{q}"),
            );
            c.seq_id = u64::from(r) + 1;
            c.ttl_ms = (q == 1).then_some(60_000);
            out.push(c);
        }
    }
    out.sort();
    out
}

/// The edits of the golden WAL segment: the cells in groups of seven, region 7, each
/// cell carrying its edit's sequence id (a record stores the id once, for all its cells).
fn edits() -> Vec<WalEdit> {
    cells()
        .chunks(7)
        .enumerate()
        .map(|(i, chunk)| {
            let seq_id = i as u64 + 1;
            let cells = chunk
                .iter()
                .cloned()
                .map(|mut c| {
                    c.seq_id = seq_id;
                    c
                })
                .collect();
            WalEdit {
                region_id: 7,
                seq_id,
                cells,
            }
        })
        .collect()
}

fn family(codec: Compression) -> ColumnFamilyDescriptor {
    ColumnFamilyDescriptor::new("f")
        .with_compression(codec)
        .with_block_size_bytes(512)
        .with_bloom_filter(BloomType::RowCol)
}

/// The golden store file of `codec` written by format `version`.
fn store_file_name(codec: Compression, version: u32) -> String {
    match version {
        1 => format!("store-{codec:?}.sf"),
        v => format!("store-v{v}-{codec:?}.sf"),
    }
    .to_lowercase()
}

fn write_store_file(path: &Path, codec: Compression) {
    let mut w = StoreFileWriter::create(&Env::default(), path, &family(codec), CREATED_MS).unwrap();
    cells_of(FORMAT_VERSION)
        .iter()
        .for_each(|c| w.add(c).unwrap());
    w.finish(true).unwrap();
}

/// A WAL segment holding [`edits`], as the log writes it.
fn write_wal_segment(dir: &Path) -> Vec<u8> {
    let wal = Wal::open(&Env::default(), dir, 1 << 20).unwrap();
    wal.recover(|_| Ok(())).unwrap();
    let mut ticket = 0;
    for e in edits() {
        ticket = wal.append(e.region_id, e.seq_id, &e.cells).unwrap();
    }
    wal.sync(ticket, false).unwrap();
    drop(wal);
    let mut segments: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    segments.sort();
    std::fs::read(&segments[0]).unwrap()
}

#[test]
#[ignore = "writes tests/golden; only for a new format version, never to make a test pass"]
fn write_golden_files() {
    std::fs::create_dir_all(golden("")).unwrap();
    for codec in CODECS {
        write_store_file(&golden(&store_file_name(codec, FORMAT_VERSION)), codec);
    }
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(golden("wal-segment"), write_wal_segment(tmp.path())).unwrap();
}

#[test]
fn the_golden_wal_segment_replays_exactly_its_edits() {
    let data = std::fs::read(golden("wal-segment")).unwrap();
    let mut read = Vec::new();
    let decoded = decode_segment(&data, &golden("wal-segment"), &mut |e| {
        read.push(e);
        Ok(())
    })
    .unwrap();
    assert_eq!(decoded.stop, None, "the whole segment decodes");
    assert_eq!(decoded.max_seq_id, 35);
    let expected = edits();
    assert_eq!(read.len(), expected.len());
    for (got, want) in read.iter().zip(&expected) {
        assert!(got == want, "edit {} differs: {got:?}", want.seq_id);
    }
    // Framing and encoding have no library in between: today's writer makes the same bytes.
    let tmp = tempfile::tempdir().unwrap();
    assert!(
        write_wal_segment(tmp.path()) == data,
        "the WAL writer's bytes changed"
    );
}

fn open(path: &Path) -> Arc<StoreFile> {
    let id = FileId { region: 1, file: 1 };
    let cache = BlockCache::new(1 << 20);
    Arc::new(StoreFile::open(&Env::default(), path, id, &Bytes::from_static(b"f"), &cache).unwrap())
}

fn every_cell(f: &Arc<StoreFile>) -> Vec<Cell> {
    let mut s = f.scanner(u64::MAX, Caching::QUERY);
    s.seek(&Cell::first_on_row(&Bytes::new())).unwrap();
    let mut out = Vec::new();
    while s.take_into(&mut out).unwrap() {}
    out
}

#[test]
fn golden_store_files_of_every_codec_read_back_exactly_their_cells() {
    let files = CODECS.map(|c| [(c, 1), (c, 2), (c, 3), (c, 4), (c, FORMAT_VERSION)]);
    for (codec, version) in files.into_iter().flatten() {
        let expected = cells_of(version);
        let path = golden(&store_file_name(codec, version));
        let f = open(&path);
        assert_eq!(every_cell(&f), expected, "{codec:?} v{version}");
        assert!(
            f.block_count().unwrap() > 10,
            "{codec:?} v{version}: many blocks"
        );
        let info = f.info();
        assert_eq!(
            (info.cell_count, info.delete_count, info.delete_family_count),
            (240, 60, 60),
            "{codec:?} v{version}"
        );
        assert_eq!(
            (info.min_ts, info.max_ts, info.earliest_put_ts),
            (48, 100, 48)
        );
        assert_eq!(info.max_seq_id, 60);
        assert!(info.major_compacted);
        assert_eq!(info.created_ms, CREATED_MS);
        assert_eq!(
            info.first_key.as_ref().map(basalt_model::Cell::row),
            Some(&b"row0000"[..])
        );
        assert_eq!(
            info.last_key.as_ref().map(basalt_model::Cell::row),
            Some(&b"row0059"[..])
        );
        // The ROWCOL bloom holds every row and column written.
        for c in expected.iter().filter(|c| !c.qualifier().is_empty()) {
            assert!(
                f.may_contain(c.row(), Some(c.qualifier())).unwrap(),
                "{codec:?} v{version}"
            );
        }
        if codec == Compression::None && version == FORMAT_VERSION {
            let tmp = tempfile::tempdir().unwrap();
            let again = tmp.path().join("again.sf");
            write_store_file(&again, codec);
            let same = std::fs::read(&again).unwrap() == std::fs::read(&path).unwrap();
            assert!(same, "the store file writer's bytes changed");
        }
    }
}
