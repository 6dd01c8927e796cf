//! Replays the committed fuzz corpora (`fuzz/corpus/<target>/`) through the same entry points
//! the cargo-fuzz targets call, on stable Rust: every input that ever found its way into a
//! corpus keeps being decoded without a panic.
//!
//! `write_seed_corpus` (ignored) writes the seed inputs the corpora started from: real WAL
//! segments, blocks, blooms and trailers made by the engine's own writers, and filter strings.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::path::{Path, PathBuf};

use basalt_model::{BloomType, Cell, ColumnFamilyDescriptor, Compression};
use basalt_storage::env::Env;
use basalt_storage::fuzzing;
use basalt_storage::storefile::{decode_index_block, parse_trailer, StoreFileWriter};
use basalt_storage::wal::Wal;
use bytes::Bytes;

type Target = (&'static str, fn(&[u8]));

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
    let [index, bloom, _info] = parse_trailer(trailer, &path).unwrap();
    let body = |(off, len): (u64, u32)| {
        // Section frames: body, codec byte, crc32c.
        file[off as usize..off as usize + len as usize - 5].to_vec()
    };
    let index_body = body(index);
    let parsed = decode_index_block(&index_body, &Bytes::from_static(b"f"), u64::MAX).unwrap();
    let mut out: Vec<(&'static str, Vec<u8>)> = parsed
        .blocks()
        .take(4)
        .map(|(off, len)| {
            (
                "data_block",
                file[off as usize..(off + u64::from(len)) as usize].to_vec(),
            )
        })
        .collect();
    out.push(("index_block", index_body));
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
    let mut counts = std::collections::BTreeMap::new();
    for (target, data) in seeds {
        let dir = corpus_dir(target);
        std::fs::create_dir_all(&dir).unwrap();
        let n = counts.entry(target).or_insert(0);
        *n += 1;
        std::fs::write(dir.join(format!("seed-{n:03}")), data).unwrap();
    }
}
