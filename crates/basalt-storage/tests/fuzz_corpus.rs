//! Replays the committed fuzz corpora (`fuzz/corpus/<target>/`) through the same entry points
//! the cargo-fuzz targets call, on stable Rust: every input that ever found its way into a
//! corpus keeps being decoded without a panic.
//!
//! The seeds whose content is known (`seed-NNN`, written by `write_seed_corpus`) must also
//! still decode to what they held, and the damaged ones among them must be refused: a decoder
//! that gave up on everything would pass the no-panic replay alone.
//!
//! `write_seed_corpus` (ignored) writes the seed inputs the corpora started from: real WAL
//! segments, blocks, blooms and trailers made by the engine's own writers, and filter strings.

// The corpus files are read as fuzz inputs, beneath the engine's `Env`.
#![allow(clippy::disallowed_methods)]
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::path::{Path, PathBuf};

use basalt_model::{BloomType, Cell, ColumnFamilyDescriptor, Compression};
use basalt_storage::env::Env;
use basalt_storage::fuzzing;
use basalt_storage::storefile::block::{
    decode_data_block, decode_legacy_data_block, unframe, BlockChecksum,
};
use basalt_storage::storefile::{
    decode_index_block, parse_trailer, Bloom, BloomLayout, StoreFileWriter, FORMAT_VERSION_4,
};
use basalt_storage::wal::replay::{decode_segment, DecodedSegment};
use basalt_storage::wal::{Wal, WalEdit};
use bytes::Bytes;

type Target = (&'static str, fn(&[u8]));

/// Data block seeds written by store file format version 1, before version 2's seeds.
const LEGACY_DATA_BLOCK_SEEDS: usize = 20;
/// Data block seeds written by format version 1 or 2, before version 3's seeds.
const OLDER_DATA_BLOCK_SEEDS: usize = 40;
/// Bloom block seeds written by format version 3 (filters stored whole), before version 4's
/// seeds (chunked filters' layouts).
const WHOLE_BLOOM_SEEDS: usize = 5;
/// Index block seeds written by format version 3 (an index of one block), before version
/// 4's seeds (the roots of indexes in two levels, whose entries are leaves).
const ONE_BLOCK_INDEX_SEEDS: usize = 5;

const TARGETS: [Target; 6] = [
    ("wal_segment", fuzzing::wal_segment),
    ("data_block", fuzzing::data_block),
    ("index_block", |d| drop(fuzzing::index_block(d))),
    ("bloom_block", fuzzing::bloom_block),
    ("trailer", fuzzing::trailer),
    ("filter_language", fuzzing::filter_language),
];

fn corpus_dir(target: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus")
        .join(target)
}

#[test]
fn committed_corpora_decode_without_panicking() {
    for (target, run) in TARGETS {
        let dir = corpus_dir(target);
        let mut n = 0;
        for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let data = std::fs::read(entry.unwrap().path()).unwrap();
            run(&data);
            n += 1;
        }
        assert!(
            n >= 5,
            "{target}: only {n} corpus inputs in {}",
            dir.display()
        );
    }
}

fn seed(target: &str, n: usize) -> Vec<u8> {
    std::fs::read(corpus_dir(target).join(format!("seed-{n:03}"))).unwrap()
}

/// A cell without its sequence id (a WAL record keeps one id for all its cells).
fn unsequenced(c: &Cell) -> Cell {
    let mut c = c.clone();
    c.seq_id = 0;
    c
}

fn decode_wal(data: &[u8]) -> (Vec<WalEdit>, basalt_model::Result<DecodedSegment>) {
    let mut edits = Vec::new();
    let decoded = decode_segment(data, Path::new("seed"), &mut |e| {
        edits.push(e);
        Ok(())
    });
    (edits, decoded)
}

#[test]
fn wal_seeds_decode_to_what_they_held_and_damage_is_refused() {
    let held: Vec<Cell> = cells().iter().map(unsequenced).collect();
    // seed-001: the whole segment (the cells in edits of seven, sequence ids 1..=35).
    let (edits, decoded) = decode_wal(&seed("wal_segment", 1));
    assert_eq!(decoded.unwrap().stop, None);
    let ids: Vec<u64> = edits.iter().map(|e| e.seq_id).collect();
    assert_eq!(ids, (1..=35).collect::<Vec<u64>>());
    let read: Vec<Cell> = edits
        .iter()
        .flat_map(|e| e.cells.iter().map(unsequenced))
        .collect();
    assert!(read == held, "seed-001 no longer decodes to its cells");
    // seed-002: the last record torn; seed-003: the first 200 bytes (torn too).
    for (n, whole) in [(2, 34), (3, 0)] {
        let (edits, decoded) = decode_wal(&seed("wal_segment", n));
        let stop = decoded.unwrap().stop.unwrap();
        assert!(stop.torn, "seed-{n:03}: {stop:?}");
        assert!(
            edits.len() >= whole && edits.len() < 35,
            "seed-{n:03}: {}",
            edits.len()
        );
    }
    // seed-004: the header alone, no records.
    let (edits, decoded) = decode_wal(&seed("wal_segment", 4));
    assert_eq!((edits.len(), decoded.unwrap().stop), (0, None));
    // seed-005: one bit flipped in the middle is damage, never a clean end.
    let (edits, decoded) = decode_wal(&seed("wal_segment", 5));
    assert!(edits.len() < 35);
    if let Ok(d) = decoded {
        assert!(
            d.stop.is_some_and(|s| !s.torn),
            "a flipped bit passed as {d:?}"
        );
    }
    // seed-006: zeros after the last record; every record before them still reads.
    let (edits, decoded) = decode_wal(&seed("wal_segment", 6));
    assert_eq!(edits.len(), 35);
    assert!(decoded.unwrap().stop.is_some());
}

#[test]
fn store_file_seeds_decode_to_what_they_held() {
    let held = cells();
    let family = Bytes::from_static(b"f");
    // Four data blocks of each codec's file, in the order of `store_file_pieces`: seeds 1 to
    // 20 written by format version 1 (prefix-compressed keys), 21 to 40 by version 2, 41 to
    // 60 by version 3 (row0000's cells, of sequence id 0, stored without it); all three
    // versions check their blocks with CRC-32C.
    for n in 1..=OLDER_DATA_BLOCK_SEEDS + 20 {
        let data = seed("data_block", n);
        let body = unframe(data, BlockChecksum::Crc32c, Path::new("seed"), 0).unwrap();
        let block = if n <= LEGACY_DATA_BLOCK_SEEDS {
            decode_legacy_data_block(&body, &family, Path::new("seed"), 0).unwrap()
        } else {
            decode_data_block(body, &family, Path::new("seed"), 0).unwrap()
        };
        let cells: Vec<Cell> = (0..block.len()).map(|i| block.cell(i).unwrap()).collect();
        assert!(!cells.is_empty(), "data_block seed-{n:03}");
        let first = held.iter().position(|c| *c == cells[0]).unwrap();
        assert!(
            held[first..].starts_with(&cells),
            "data_block seed-{n:03} no longer decodes to a run of its file's cells"
        );
    }
    for n in 1..=5 {
        let index = decode_index_block(&seed("index_block", n), &family, u64::MAX).unwrap();
        assert!(
            index.len() > 10,
            "index_block seed-{n:03}: {} blocks",
            index.len()
        );
        // The root of the same file's index in two levels: a few leaves of 512 bytes.
        let m = ONE_BLOCK_INDEX_SEEDS + n;
        let root = decode_index_block(&seed("index_block", m), &family, u64::MAX).unwrap();
        assert!(
            (2..index.len()).contains(&root.len()),
            "index_block seed-{m:03}: {} leaves",
            root.len()
        );
        let bloom = Bloom::decode(&seed("bloom_block", n)).unwrap();
        for c in held.iter().filter(|c| !c.qualifier().is_empty()) {
            assert!(
                bloom.may_contain_row_col(c.row(), c.qualifier()),
                "bloom seed-{n:03}"
            );
        }
        // The layout of the same filter in chunks: 240 keys, five lines, one 512-byte chunk.
        let m = WHOLE_BLOOM_SEEDS + n;
        let layout = BloomLayout::decode(&seed("bloom_block", m)).unwrap();
        assert_eq!(layout.kind, BloomType::RowCol, "bloom seed-{m:03}");
        assert_eq!(layout.chunks(), 1, "bloom seed-{m:03}");
        let (at, len) = layout.chunk_at(0);
        assert_eq!(len, 5 * 64 + 5, "bloom seed-{m:03}");
        assert_eq!(
            layout.chunks_end(),
            at + u64::from(len),
            "bloom seed-{m:03}"
        );
        let trailer = parse_trailer(&seed("trailer", n), Path::new("seed")).unwrap();
        let [index_at, bloom_at, info_at] = trailer.sections;
        assert_eq!(trailer.version, FORMAT_VERSION_4, "trailer seed-{n:03}");
        assert!(
            index_at.1 > 0 && bloom_at.1 > 0 && info_at.1 > 0,
            "trailer seed-{n:03}"
        );
    }
}

fn cells() -> Vec<Cell> {
    let mut out = Vec::new();
    for r in 0..60u32 {
        let row = format!("row{r:04}");
        out.push(Cell::marker(
            row.clone(),
            "f",
            "",
            100,
            basalt_model::CellType::DeleteFamily,
        ));
        for q in 0..3 {
            let mut c = Cell::put(
                row.clone(),
                "f",
                format!("q{q}"),
                50 - q,
                format!("v{r}-{q}"),
            );
            c.seq_id = u64::from(r);
            c.ttl_ms = (q == 1).then_some(60_000);
            out.push(c);
        }
    }
    out.sort();
    out
}

/// A store file's pieces: framed data blocks, index and bloom bodies, trailer.
fn store_file_pieces(dir: &Path, codec: Compression) -> Vec<(&'static str, Vec<u8>)> {
    let path = dir.join(format!("{codec:?}.sf"));
    let family = ColumnFamilyDescriptor::new("f")
        .with_compression(codec)
        .with_block_size_bytes(512)
        .with_bloom_filter(BloomType::RowCol);
    let mut w = StoreFileWriter::create(&Env::default(), &path, &family, 1).unwrap();
    cells().iter().for_each(|c| w.add(c).unwrap());
    w.finish(false).unwrap();
    let file = std::fs::read(&path).unwrap();
    let trailer = &file[file.len() - 52..];
    let [root, bloom, _info] = parse_trailer(trailer, &path).unwrap().sections;
    let body = |(off, len): (u64, u32)| {
        // Section frames: body, codec byte, crc32c.
        file[off as usize..off as usize + len as usize - 5].to_vec()
    };
    let root_body = body(root);
    let family = Bytes::from_static(b"f");
    let leaves = decode_index_block(&root_body, &family, u64::MAX).unwrap();
    let first_leaf = decode_index_block(&body(leaves.block(0)), &family, u64::MAX).unwrap();
    let mut out: Vec<(&'static str, Vec<u8>)> = first_leaf
        .blocks()
        .take(4)
        .map(|(off, len)| {
            (
                "data_block",
                file[off as usize..(off + u64::from(len)) as usize].to_vec(),
            )
        })
        .collect();
    out.push(("index_block", root_body));
    out.push(("bloom_block", body(bloom)));
    out.push(("trailer", trailer.to_vec()));
    out
}

fn wal_segments(dir: &Path) -> Vec<Vec<u8>> {
    let wal = Wal::open(&Env::default(), dir, 1 << 20).unwrap();
    wal.recover(|_| Ok(())).unwrap();
    let cells = cells();
    let mut t = 0;
    for (i, chunk) in cells.chunks(7).enumerate() {
        t = wal.append(1, i as u64 + 1, chunk).unwrap();
    }
    wal.sync(t, false).unwrap();
    drop(wal);
    let mut segments: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    segments.sort();
    let full = std::fs::read(&segments[0]).unwrap();
    let torn = full[..full.len() - 9].to_vec();
    let short = full[..200.min(full.len())].to_vec();
    let header_only = full[..12].to_vec();
    let mut flipped = full.clone();
    let mid = flipped.len() / 2;
    flipped[mid] ^= 0x40;
    let mut zero_tail = full.clone();
    zero_tail.extend_from_slice(&[0; 64]);
    vec![full, torn, short, header_only, flipped, zero_tail]
}

#[test]
#[ignore = "writes the seed corpora into fuzz/corpus; run by hand when a format changes"]
fn write_seed_corpus() {
    let tmp = tempfile::tempdir().unwrap();
    let mut seeds: Vec<(&'static str, Vec<u8>)> = Vec::new();
    for codec in [
        Compression::None,
        Compression::Lz4,
        Compression::Zstd,
        Compression::Snappy,
        Compression::Gz,
    ] {
        seeds.extend(store_file_pieces(tmp.path(), codec));
    }
    let wal_dir = tmp.path().join("wal");
    seeds.extend(
        wal_segments(&wal_dir)
            .into_iter()
            .map(|s| ("wal_segment", s)),
    );
    let filters = [
        "PrefixFilter('a') AND PageFilter(1) OR FirstKeyOnlyFilter()",
        "SingleColumnValueFilter('f', 'q', =, 'binary:v', true, false)",
        "(WHILE\tPrefixFilter('a'))",
        "SKIP ValueFilter(=,'binary:0')",
        "ColumnRangeFilter('abc', true, 'xyz', false)",
        "DependentColumnFilter('f', 'q', false, =, 'binary:v')",
        "TimestampsFilter(2, 4)",
        "MultipleColumnPrefixFilter('a', 'b')",
        "RowFilter(<, 'regexstring:^r[0-9]+$')",
        "FamilyFilter(>=, 'binaryprefix:f')",
        "ValueFilter(!=, 'substring:x')",
        "PrefixFilter('it''s')",
        "ColumnPaginationFilter(2, 0)",
        "PageFilter(99999999999999999999)",
        "KeyOnlyFilter(true) AND InclusiveStopFilter('r9')",
    ];
    seeds.extend(
        filters
            .iter()
            .map(|f| ("filter_language", f.as_bytes().to_vec())),
    );
    // The data block seeds of format versions 1 and 2, and the bloom and index block seeds
    // of version 3, stay as they were written.
    let mut counts = std::collections::BTreeMap::from([
        ("data_block", OLDER_DATA_BLOCK_SEEDS),
        ("bloom_block", WHOLE_BLOOM_SEEDS),
        ("index_block", ONE_BLOCK_INDEX_SEEDS),
    ]);
    for (target, data) in seeds {
        let dir = corpus_dir(target);
        std::fs::create_dir_all(&dir).unwrap();
        let n = counts.entry(target).or_insert(0);
        *n += 1;
        std::fs::write(dir.join(format!("seed-{n:03}")), data).unwrap();
    }
}
