// These tests damage and inspect files on purpose, beneath the engine's `Env`.
#![allow(clippy::disallowed_methods)]

use std::sync::Arc;

use basalt_model::{BloomType, Cell, CellType, ColumnFamilyDescriptor, Compression, Error};
use bytes::Bytes;

use super::*;
use crate::block_cache::BlockCache;
use crate::env::Env;
use crate::store::scanner::CellSource;
use block::BlockChecksum;

/// The checksum of the blocks the writer writes.
const WRITTEN: BlockChecksum = BlockChecksum::WRITTEN;

fn family(codec: Compression, bloom: BloomType) -> ColumnFamilyDescriptor {
    ColumnFamilyDescriptor::new("f")
        .with_compression(codec)
        .with_bloom_filter(bloom)
        .with_block_size_bytes(1024)
}

fn sample(n: usize) -> Vec<Cell> {
    let mut cells: Vec<Cell> = (0..n)
        .flat_map(|i| {
            let row = format!("row{i:05}");
            let mut put = Cell::put(
                row.clone(),
                "f",
                format!("q{}", i % 3),
                100 + i as i64,
                format!("value-{i}"),
            );
            put.seq_id = i as u64 + 1;
            put.ttl_ms = (i % 7 == 0).then_some(5000);
            let mut del = Cell::marker(row, "f", "", 50, CellType::DeleteFamily);
            del.seq_id = i as u64 + 1;
            [put, del]
        })
        .collect();
    cells.sort();
    cells
}

fn write(dir: &std::path::Path, f: &ColumnFamilyDescriptor, cells: &[Cell]) -> Arc<StoreFile> {
    let path = dir.join("1.sf");
    let mut w = StoreFileWriter::create(&Env::default(), &path, f, 42).unwrap();
    for c in cells {
        w.add(c).unwrap();
    }
    w.finish(true).unwrap();
    Arc::new(open(&path).unwrap())
}

fn cache() -> Arc<BlockCache> {
    BlockCache::new(1 << 20)
}

fn open(path: &std::path::Path) -> basalt_model::Result<StoreFile> {
    StoreFile::open(
        &Env::default(),
        path,
        super::FileId { region: 1, file: 1 },
        &Bytes::from_static(b"f"),
        &cache(),
    )
}

/// A scanner seeked to the file's first cell.
fn from_start(f: &Arc<StoreFile>, read_point: u64) -> StoreFileScanner {
    let mut s = f.scanner(read_point, Caching::QUERY);
    s.seek(&Cell::first_on_row(&Bytes::new())).unwrap();
    s
}

fn drain(s: &mut StoreFileScanner) -> Vec<Cell> {
    let mut out = Vec::new();
    while let Some(c) = s.peek() {
        out.push(c.clone());
        s.advance().unwrap();
    }
    out
}

#[test]
fn every_codec_round_trips_every_cell_field() {
    for codec in [
        Compression::None,
        Compression::Lz4,
        Compression::Zstd,
        Compression::Snappy,
        Compression::Gz,
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let cells = sample(500);
        let f = write(tmp.path(), &family(codec, BloomType::Row), &cells);
        assert!(
            f.block_count().unwrap() > 5,
            "{codec:?}: small blocks expected"
        );
        assert_eq!(drain(&mut from_start(&f, u64::MAX)), cells, "{codec:?}");
        let info = f.info();
        assert_eq!(info.cell_count, 1000);
        assert_eq!(info.delete_family_count, 500);
        assert_eq!(info.max_seq_id, 500);
        assert_eq!((info.min_ts, info.max_ts), (50, 599));
        assert_eq!(info.earliest_put_ts, 100);
        assert!(info.major_compacted);
        assert_eq!(info.created_ms, 42);
    }
}

#[test]
fn a_writer_refuses_cells_out_of_order_and_search_keys() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("1.sf");
    let cells = sample(200);
    let mut w = StoreFileWriter::create(
        &Env::default(),
        &path,
        &family(Compression::None, BloomType::RowCol),
        42,
    )
    .unwrap();
    let search_key = Cell::first_on_row(b"row00005");
    for (i, c) in cells.iter().enumerate() {
        w.add(c).unwrap();
        // The same cell again, and one before it (in the open block, or in a block already
        // written once a block has been), are refused and leave the writer as it was.
        let again = w.add(c).unwrap_err();
        assert!(
            matches!(&again, Error::IllegalArgument(m) if m.contains("out of key order")),
            "{again:?}"
        );
        if i > 0 {
            assert!(w.add(&cells[i / 2]).is_err(), "cell {} after {i}", i / 2);
        }
        let refused = w.add(&search_key).unwrap_err();
        assert!(
            matches!(&refused, Error::IllegalArgument(m) if m.contains("search key")),
            "{refused:?}"
        );
    }
    // A row longer than a key holds, after every cell, is refused too (its length would
    // not fit the key's 16 bits, or would pass HBase's 32767).
    let last_row = cells[cells.len() - 1].row().to_vec();
    let long = [last_row, vec![b'z'; basalt_model::limits::MAX_ROW_LENGTH]].concat();
    let refused = w.add(&Cell::put(long, "f", "q", 1, "v")).unwrap_err();
    assert!(
        matches!(&refused, Error::IllegalArgument(m) if m.contains("a row of 32775 bytes")),
        "{refused:?}"
    );
    let (_, info) = w.finish(false).unwrap();
    let f = Arc::new(open(&path).unwrap());
    assert!(f.block_count().unwrap() > 5, "small blocks expected");
    assert_eq!(drain(&mut from_start(&f, u64::MAX)), cells);
    // The first and last keys: the cells' keys, without their values or TTLs.
    let key = |c: &Cell| {
        (
            c.row().to_vec(),
            c.qualifier().to_vec(),
            c.timestamp,
            c.cell_type,
            c.seq_id,
        )
    };
    for (got, want) in [
        (&info.first_key, &cells[0]),
        (&info.last_key, &cells[cells.len() - 1]),
    ] {
        let got = got.as_ref().unwrap();
        assert_eq!(key(got), key(want));
        assert!(got.value().is_empty() && got.ttl_ms.is_none(), "{got:?}");
    }
    assert_eq!(f.info(), &info);
}

/// A file of several MiB is written in whole chunks ([`writer::WRITE_CHUNK`]) and the last
/// piece, not a write a block, and reads back whole.
#[test]
fn a_file_is_written_in_whole_chunks() {
    let tmp = tempfile::tempdir().unwrap();
    let faults = Arc::new(crate::env::FaultInjector::new(1));
    let env = Env::with_faults(Arc::new(crate::env::SystemClock), Arc::clone(&faults));
    let f = ColumnFamilyDescriptor::new("f").with_compression(Compression::None);
    let cells: Vec<Cell> = (0..4000)
        .map(|i| Cell::put(format!("row{i:05}"), "f", "q", 1, vec![b'v'; 1000]))
        .collect();
    let path = tmp.path().join("1.sf");
    let mut w = StoreFileWriter::create(&env, &path, &f, 42).unwrap();
    for c in &cells {
        w.add(c).unwrap();
    }
    w.finish(true).unwrap();
    let len = std::fs::metadata(&path).unwrap().len();
    assert!(len > 3 << 20, "{len} bytes: the test wants several chunks");
    let chunk = writer::WRITE_CHUNK as u64;
    assert_eq!(faults.done_count(crate::env::Op::Write), len / chunk + 1);
    let file = Arc::new(open(&path).unwrap());
    assert_eq!(drain(&mut from_start(&file, u64::MAX)), cells);
}

#[test]
fn seek_and_last_row_before_use_the_index() {
    let tmp = tempfile::tempdir().unwrap();
    let cells = sample(300);
    let f = write(
        tmp.path(),
        &family(Compression::Lz4, BloomType::RowCol),
        &cells,
    );
    let mut s = from_start(&f, u64::MAX);
    let row = Bytes::from("row00150");
    s.seek(&Cell::first_on_row(&row)).unwrap();
    assert_eq!(s.peek().unwrap().row(), row);
    assert_eq!(
        s.last_row_before(Some(&Cell::first_on_row(&row))).unwrap(),
        Some(Bytes::from("row00149"))
    );
    assert_eq!(
        s.last_row_before(Some(&Cell::first_on_row(&Bytes::from("row"))))
            .unwrap(),
        None
    );
    assert_eq!(
        s.last_row_before(Some(&Cell::first_on_row(&Bytes::from("zzz"))))
            .unwrap(),
        Some(Bytes::from("row00299"))
    );
    assert_eq!(
        s.last_row_before(None).unwrap(),
        Some(Bytes::from("row00299"))
    );
    s.seek(&Cell::first_on_row(&Bytes::from("zzz"))).unwrap();
    assert!(s.peek().is_none());
    // seeks go backwards too (reversed scans)
    s.seek(&Cell::first_on_row(&Bytes::from("row00001")))
        .unwrap();
    assert_eq!(s.peek().unwrap().row(), b"row00001");
    s.seek(&Cell::first_on_row(&Bytes::from("zzz"))).unwrap();
    assert!(s.peek().is_none());
    // read point hides newer cells
    let visible = drain(&mut from_start(&f, 10));
    assert!(visible.iter().all(|c| c.seq_id <= 10) && visible.len() == 20);
}

#[test]
fn blooms_answer_for_rows_and_columns() {
    let tmp = tempfile::tempdir().unwrap();
    let f = write(
        tmp.path(),
        &family(Compression::None, BloomType::Row),
        &sample(100),
    );
    assert!(f.may_contain(b"row00007", None).unwrap());
    let misses = (0..1000)
        .filter(|i| f.may_contain(format!("nope{i}").as_bytes(), None).unwrap())
        .count();
    assert!(misses < 50, "{misses}");
    let tmp2 = tempfile::tempdir().unwrap();
    let g = write(
        tmp2.path(),
        &family(Compression::None, BloomType::RowCol),
        &sample(100),
    );
    assert!(g.may_contain(b"row00007", Some(b"q1")).unwrap());
    // Family markers are indexed under the empty qualifier, so any column of a row with one passes.
    assert!(g.may_contain(b"row00007", Some(b"other")).unwrap());
}

#[test]
fn corruption_is_reported_with_file_and_offset() {
    let tmp = tempfile::tempdir().unwrap();
    let f = write(
        tmp.path(),
        &family(Compression::None, BloomType::Row),
        &sample(200),
    );
    let path = f.path().to_owned();
    drop(f);
    let mut data = std::fs::read(&path).unwrap();
    data[10] ^= 0x55; // inside the first data block
    std::fs::write(&path, &data).unwrap();
    let f = Arc::new(open(&path).unwrap());
    let mut s = f.scanner(u64::MAX, Caching::QUERY);
    let err = s.seek(&Cell::first_on_row(&Bytes::new())).unwrap_err();
    assert!(matches!(err, Error::Corruption { .. }));
    let msg = err.to_string();
    assert!(
        msg.contains("checksum mismatch") && msg.contains("offset 0") && msg.contains("1.sf"),
        "{msg}"
    );
    // A damaged trailer fails at open.
    let n = data.len();
    data[n - 1] ^= 1;
    std::fs::write(&path, &data).unwrap();
    let err = open(&path).unwrap_err();
    assert!(err.to_string().contains("bad magic"), "{err}");
    std::fs::write(&path, b"short").unwrap();
    assert!(matches!(open(&path), Err(Error::Corruption { .. })));
}

/// A block is checked with the checksum of its file's format version: CRC-32C up to
/// version 4, XXH3 from version 5. A block framed with the other one, or damaged under
/// either, is refused.
#[test]
fn blocks_are_checked_with_their_versions_checksum() {
    assert_eq!(WRITTEN, BlockChecksum::Xxh3);
    for version in [
        LEGACY_FORMAT_VERSION,
        FORMAT_VERSION_2,
        FORMAT_VERSION_3,
        FORMAT_VERSION_4,
    ] {
        assert_eq!(BlockChecksum::of_version(version), BlockChecksum::Crc32c);
    }
    assert_eq!(
        BlockChecksum::of_version(FORMAT_VERSION_5),
        BlockChecksum::Xxh3
    );
    let body: Vec<u8> = (0u32..5000).map(|i| (i * 7 % 251) as u8).collect();
    let path = std::path::Path::new("f");
    let kinds = [BlockChecksum::Crc32c, BlockChecksum::Xxh3];
    for framed_with in kinds {
        let framed = block::frame(&body, Compression::None, framed_with).unwrap();
        for checked_with in kinds {
            let read = block::unframe(framed.clone(), checked_with, path, 0);
            if checked_with == framed_with {
                assert_eq!(read.unwrap(), body, "{framed_with:?}");
            } else {
                let err = read.unwrap_err().to_string();
                assert!(err.contains("checksum mismatch"), "{framed_with:?}: {err}");
            }
        }
        let mut damaged = framed.clone();
        damaged[100] ^= 0x10;
        let err = block::unframe(damaged, framed_with, path, 0).unwrap_err();
        assert!(err.to_string().contains("checksum mismatch"), "{err}");
    }
}

/// An entry damaged under a valid checksum (what a writer's bug would leave) is refused when
/// a read reaches it, naming the file and the block, and the block's other entries still read.
#[test]
fn a_damaged_entry_is_reported_with_file_and_offset() {
    let tmp = tempfile::tempdir().unwrap();
    let fam = family(Compression::None, BloomType::Row);
    let cells = sample(200);
    let f = write(tmp.path(), &fam, &cells);
    let path = f.path().to_owned();
    drop(f);
    let mut data = std::fs::read(&path).unwrap();
    let name = Bytes::from_static(b"f");
    let index = leaves(&data).remove(0);
    let (at, len) = index.block(1);
    let (at, len) = (at as usize, len as usize);
    let mut body = block::unframe(data[at..at + len].to_vec(), WRITTEN, &path, at as u64)
        .unwrap()
        .to_vec();
    // The first entry of the block without a TTL: its header is three one-byte fields, and
    // its key's type byte lies nine bytes before the key's end, or one when the key leaves
    // out its sequence id. The count's top bit says the offsets are two bytes each.
    let word = u32::from_le_bytes(body[body.len() - 4..].try_into().unwrap());
    let (count, width) = (
        (word << 1 >> 1) as usize,
        if word >> 31 == 1 { 2 } else { 4 },
    );
    let offsets = body.len() - 4 - width * count;
    let offset = |i: usize| {
        let o = &body[offsets + width * i..][..width];
        o.iter().rev().fold(0, |n, &b| n << 8 | usize::from(b))
    };
    let (i, o) = (0..count)
        .map(|i| (i, offset(i)))
        .find(|&(_, o)| body[o + 2] & 1 == 0)
        .unwrap();
    let key_len = usize::from(body[o]);
    let type_from_end = if body[o + 2] & 2 == 0 { 9 } else { 1 };
    let damaged = DataBlock::new(name.clone(), Bytes::from(body.clone()))
        .unwrap()
        .cell(i)
        .unwrap();
    body[o + 3 + key_len - type_from_end] = 0xEE;
    let framed = block::frame(&body, Compression::None, WRITTEN).unwrap();
    assert_eq!(framed.len(), len);
    data[at..at + len].copy_from_slice(&framed);
    std::fs::write(&path, &data).unwrap();

    let f = Arc::new(open(&path).unwrap());
    let mut s = f.scanner(u64::MAX, Caching::QUERY);
    s.seek(&Cell::first_on_row(&Bytes::new())).unwrap();
    let err = loop {
        match s.advance() {
            Ok(()) => assert!(s.peek().is_some(), "the scan ended before entry {i}"),
            Err(e) => break e,
        }
    };
    // The scanner failed over: it stands on nothing, not on the cell before the damage.
    assert!(s.peek().is_none());
    assert!(matches!(err, Error::Corruption { .. }));
    let msg = err.to_string();
    assert!(
        msg.contains("malformed key")
            && msg.contains(&format!("offset {at}"))
            && msg.contains("1.sf"),
        "{msg}"
    );
    // A seek to the damaged cell reaches its entry.
    let mut s = f.scanner(u64::MAX, Caching::QUERY);
    let err = s.seek(&damaged).unwrap_err();
    assert!(err.to_string().contains("malformed key"), "{err}");
}

/// The cells of rows `rows` (named `row` and three digits), sorted, and the highest sequence
/// id among them: row `r` has `1 + r % 12` columns and its column `q` has `1 + (r + q) % 5`
/// versions, each with a sequence id of its own.
fn versioned_rows(rows: impl IntoIterator<Item = u64>) -> (Vec<Cell>, u64) {
    let mut cells = Vec::new();
    let mut seq = 0;
    for r in rows {
        for q in 0..1 + r % 12 {
            for ts in 0..1 + (r + q) % 5 {
                seq += 1;
                let mut c = Cell::put(
                    format!("row{r:03}"),
                    "f",
                    format!("q{q:02}"),
                    ts as i64,
                    "v",
                );
                c.seq_id = seq;
                cells.push(c);
            }
        }
    }
    cells.sort();
    (cells, seq)
}

/// Rows of one to twelve columns of one to five versions, in blocks of 1 KiB: a skip from
/// any cell, to a key or past the cell's column or row, lands where a fresh seek does, within
/// a block and across blocks, at read points that hide some cells.
#[test]
fn skips_land_where_a_seek_does() {
    let (cells, seq) = versioned_rows(0..60);
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        dir.path(),
        &family(Compression::None, BloomType::None),
        &cells,
    );
    // Blocks of 1 KiB: the cells span dozens of them.
    let bytes = std::fs::metadata(dir.path().join("1.sf")).unwrap().len();
    assert!(bytes > 16 << 10, "{bytes} bytes");
    let at = |read_point: u64, from: &Cell| {
        let mut s = file.scanner(read_point, Caching::QUERY);
        s.seek(from).unwrap();
        s
    };
    for read_point in [seq, seq / 2] {
        for (i, from) in cells.iter().enumerate().step_by(3) {
            let Some(start) = at(read_point, from).peek().cloned() else {
                continue;
            };
            let targets = [
                cells[(i + 1) % cells.len()].clone(),
                cells[(i + 7) % cells.len()].clone(),
                cells[(i + 40) % cells.len()].clone(),
                start.last_on_its_column(),
            ];
            for target in &targets {
                let mut skipping = at(read_point, from);
                skipping.skip_to(target).unwrap();
                let expected = if start >= *target {
                    Some(start.clone())
                } else {
                    at(read_point, target).peek().cloned()
                };
                assert_eq!(
                    skipping.peek().cloned(),
                    expected,
                    "from {start:?} to {target:?}"
                );
            }
            let mut skipping = at(read_point, from);
            skipping.skip_column(&start).unwrap();
            let past = start.last_on_its_column();
            assert_eq!(
                skipping.peek(),
                at(read_point, &past).peek(),
                "past {start:?}'s column"
            );
            let mut skipping = at(read_point, from);
            skipping.skip_row(start.row()).unwrap();
            let next = crate::store::scanner::first_on_next_row(start.row());
            assert_eq!(
                skipping.peek(),
                at(read_point, &next).peek(),
                "past {start:?}'s row"
            );
        }
    }
}

/// A row scanner reads what the whole file's scanner reads of its row, and nothing after it:
/// rows spanning block ends, read points that hide some cells, rows the file lacks; also
/// after a column is skipped.
#[test]
fn a_row_scanner_reads_its_row_alone() {
    // The even rows: each odd one is a row the file lacks.
    let (cells, seq) = versioned_rows((0..40).map(|r| r * 2));
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        dir.path(),
        &family(Compression::None, BloomType::None),
        &cells,
    );
    assert!(file.block_count().unwrap() > 4);
    for read_point in [seq, seq / 2] {
        let everything = drain(&mut from_start(&file, read_point));
        for r in 0..81u64 {
            let row = Bytes::from(format!("row{r:03}"));
            let want: Vec<Cell> = everything
                .iter()
                .filter(|c| c.row() == row)
                .cloned()
                .collect();
            let at_row = || {
                let mut s = file.row_scanner(read_point, Caching::QUERY, &row);
                s.seek(&Cell::first_on_row(&row)).unwrap();
                s
            };
            assert_eq!(drain(&mut at_row()), want, "row {row:?} at {read_point}");
            let mut s = at_row();
            if let Some(first) = s.peek().cloned() {
                s.skip_column(&first).unwrap();
                let later: Vec<Cell> = want
                    .iter()
                    .filter(|c| !c.same_column(&first))
                    .cloned()
                    .collect();
                assert_eq!(drain(&mut s), later, "row {row:?} at {read_point}");
            }
        }
    }
}

/// A file's index root, decoded from its bytes.
fn index_root(data: &[u8]) -> Index {
    let path = std::path::Path::new("f");
    let at = parse_trailer(&data[data.len() - TRAILER_LEN..], path)
        .unwrap()
        .sections[0];
    decode_index_block(&section(data, at), &Bytes::from_static(b"f"), at.0).unwrap()
}

/// The body of the block stored at `at`.
fn section(data: &[u8], (at, len): (u64, u32)) -> Bytes {
    let stored = data[at as usize..][..len as usize].to_vec();
    block::unframe(stored, WRITTEN, std::path::Path::new("f"), at).unwrap()
}

/// A file's index leaves, decoded from its bytes.
fn leaves(data: &[u8]) -> Vec<Index> {
    let name = Bytes::from_static(b"f");
    index_root(data)
        .blocks()
        .map(|leaf| decode_index_block(&section(data, leaf), &name, u64::MAX).unwrap())
        .collect()
}

/// A file's bloom filter, stored in chunks of at most a block's size: its layout (decoded
/// from the file's bytes) and where the layout block lies.
fn bloom_layout(data: &[u8]) -> (BloomLayout, (u64, u32)) {
    let trailer = parse_trailer(&data[data.len() - TRAILER_LEN..], std::path::Path::new("f"));
    let at = trailer.unwrap().sections[1];
    (BloomLayout::decode(&section(data, at)).unwrap(), at)
}

/// A file of `rows` rows with a `bloom` filter in 128-byte blocks, index leaves and bloom
/// chunks (75 leaves of about eight rows for 600): its cells, its path and its bytes.
fn small_blocks(
    dir: &std::path::Path,
    bloom: BloomType,
    rows: usize,
) -> (Vec<Cell>, std::path::PathBuf, Vec<u8>) {
    let fam = family(Compression::None, bloom).with_block_size_bytes(128);
    let cells = sample(rows);
    let path = write(dir, &fam, &cells).path().to_owned();
    let data = std::fs::read(&path).unwrap();
    (cells, path, data)
}

/// A read loads and caches only the chunk of the filter its key's line lies in; a damaged
/// chunk fails the reads that need it, naming the file and its offset, and no other.
#[test]
fn a_bloom_filter_is_read_a_chunk_at_a_time() {
    let tmp = tempfile::tempdir().unwrap();
    // 2,000 rows at 10 bits each: 40 lines, two to a chunk of a 128-byte block.
    let (_, path, mut data) = small_blocks(tmp.path(), BloomType::Row, 2000);
    let (layout, _) = bloom_layout(&data);
    assert_eq!(layout.chunks(), 20);
    // A cache too small to take the file's index and filter at open (`StoreFile::warm`).
    let cache = BlockCache::new(64 << 10);
    let f = open_with(&path, &cache);
    assert_eq!(cache.stats().blocks, 0, "nothing is cached at open");
    let row = |i: usize| format!("row{i:05}");
    assert!(f.may_contain(row(7).as_bytes(), None).unwrap());
    assert_eq!(cache.stats().blocks, 1, "one chunk read");
    assert!((0..2000).all(|i| f.may_contain(row(i).as_bytes(), None).unwrap()));
    assert_eq!(cache.stats().blocks, 20, "every chunk read once");
    let absent = (0..2000)
        .filter(|i| f.may_contain(format!("nope{i}").as_bytes(), None).unwrap())
        .count();
    assert!(absent < 100, "{absent}");
    drop(f);

    let chunk_of = |i: usize| layout.chunk_of(row_hash(row(i).as_bytes()));
    let (at, _) = layout.chunk_at(chunk_of(0));
    data[at as usize + 3] ^= 0x10;
    std::fs::write(&path, &data).unwrap();
    let f = open_with(&path, &BlockCache::new(64 << 10));
    let err = f.may_contain(row(0).as_bytes(), None).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("checksum mismatch") && msg.contains(&format!("offset {at}")),
        "{msg}"
    );
    let elsewhere = (0..2000).find(|&i| chunk_of(i) != chunk_of(0)).unwrap();
    assert!(f.may_contain(row(elsewhere).as_bytes(), None).unwrap());
}

/// A layout whose chunks would not end where it begins is refused at open.
#[test]
fn a_bloom_layout_that_misplaces_its_chunks_is_refused_at_open() {
    let tmp = tempfile::tempdir().unwrap();
    let (_, path, mut data) = small_blocks(tmp.path(), BloomType::Row, 500);
    let (_, (off, len)) = bloom_layout(&data);
    let (off, len) = (off as usize, len as usize);
    let mut body = data[off..off + len - block::BLOCK_TRAILER_LEN].to_vec();
    // Where the chunks start: one byte later.
    body[17] = body[17].wrapping_add(1);
    let mut framed = Vec::new();
    block::frame_into(&mut framed, &body, Compression::None, WRITTEN).unwrap();
    data.splice(off..off + len, framed);
    std::fs::write(&path, &data).unwrap();
    let err = open(&path).unwrap_err();
    assert!(
        err.to_string()
            .contains("its chunks do not end where its layout begins"),
        "{err}"
    );
}

fn open_with(path: &std::path::Path, cache: &Arc<BlockCache>) -> Arc<StoreFile> {
    let id = super::FileId { region: 1, file: 1 };
    let f = StoreFile::open(&Env::default(), path, id, &Bytes::from_static(b"f"), cache);
    Arc::new(f.unwrap())
}

fn row_name(i: usize) -> Bytes {
    Bytes::from(format!("row{i:05}"))
}

/// Row `i`'s cells, read as a Get reads them.
fn get_row(f: &Arc<StoreFile>, i: usize) -> basalt_model::Result<Vec<Cell>> {
    let mut s = f.row_scanner(u64::MAX, Caching::QUERY, &row_name(i));
    s.seek(&Cell::first_on_row(&row_name(i)))?;
    let mut out = Vec::new();
    while s.take_into(&mut out)? {}
    Ok(out)
}

fn cells_of_row(cells: &[Cell], i: usize) -> Vec<Cell> {
    let row = row_name(i);
    cells
        .iter()
        .filter(|c| c.row() == &row[..])
        .cloned()
        .collect()
}

/// An index of many leaves: a Get reads the one leaf its row falls in; scans and reverse
/// steps cross leaves; the middle row and the block count go through every leaf.
#[test]
fn an_index_is_read_a_leaf_at_a_time() {
    let tmp = tempfile::tempdir().unwrap();
    let (cells, path, data) = small_blocks(tmp.path(), BloomType::None, 600);
    let leaves = leaves(&data);
    assert!(leaves.len() > 50, "{} leaves", leaves.len());
    let blocks: usize = leaves.iter().map(Index::len).sum();
    // A cache too small to take the file's index at open (`StoreFile::warm`).
    let cache = BlockCache::new(64 << 10);
    let f = open_with(&path, &cache);
    assert_eq!(cache.stats().blocks, 0, "nothing is cached at open");
    assert_eq!(get_row(&f, 300).unwrap(), cells_of_row(&cells, 300));
    assert_eq!(cache.stats().blocks, 2, "one leaf and one data block read");
    assert_eq!(f.block_count().unwrap(), blocks);
    assert_eq!(drain(&mut from_start(&f, u64::MAX)), cells);
    let mid = f.mid_row().unwrap().unwrap();
    assert!(
        (&b"row00250"[..]..&b"row00350"[..]).contains(&&mid[..]),
        "{mid:?}"
    );
    for i in [0, 1, 299, 598, 599] {
        let mut s = f.scanner(u64::MAX, Caching::QUERY);
        let before = s.last_row_before(Some(&Cell::first_on_row(&row_name(i))));
        assert_eq!(
            before.unwrap(),
            i.checked_sub(1).map(row_name),
            "before row {i}"
        );
    }
    let mut s = f.scanner(u64::MAX, Caching::QUERY);
    assert_eq!(s.last_row_before(None).unwrap(), Some(row_name(599)));
}

/// A damaged leaf fails the reads that need it, naming its offset, and no other.
#[test]
fn a_damaged_index_leaf_fails_only_the_reads_through_it() {
    let tmp = tempfile::tempdir().unwrap();
    let (cells, path, mut data) = small_blocks(tmp.path(), BloomType::None, 600);
    let (leaf_at, _) = index_root(&data).block(40);
    data[leaf_at as usize + 2] ^= 0x40;
    std::fs::write(&path, &data).unwrap();
    let f = open_with(&path, &BlockCache::new(64 << 10));
    let (mut failed, mut read) = (0, 0);
    for i in 0..600 {
        match get_row(&f, i) {
            Ok(got) => {
                assert_eq!(got, cells_of_row(&cells, i), "row {i}");
                read += 1;
            }
            Err(e) => {
                let msg = e.to_string();
                assert!(msg.contains(&format!("offset {leaf_at}")), "row {i}: {msg}");
                failed += 1;
            }
        }
    }
    assert!(
        failed > 0 && failed < 20 && read + failed == 600,
        "{failed} failed"
    );
}

/// A file whose index leaves and bloom chunks take at most a sixteenth of the cache has them
/// read, checked and cached at open; a larger one (here, for a smaller cache) does not.
#[test]
fn an_index_and_filter_that_fit_are_read_at_open() {
    let tmp = tempfile::tempdir().unwrap();
    let (_, path, mut data) = small_blocks(tmp.path(), BloomType::Row, 600);
    let (layout, _) = bloom_layout(&data);
    let pieces = leaves(&data).len() as u64 + layout.chunks();
    let cache = BlockCache::new(4 << 20);
    let f = open_with(&path, &cache);
    assert_eq!(
        cache.stats().blocks,
        pieces,
        "every leaf and chunk cached at open"
    );
    assert!(f.may_contain(b"row00042", None).unwrap());
    assert_eq!(get_row(&f, 42).unwrap().len(), 2);
    assert_eq!(
        cache.stats().misses,
        pieces + 1,
        "only the data block read after open"
    );
    drop(f);
    let small = BlockCache::new(64 << 10);
    drop(open_with(&path, &small));
    assert_eq!(small.stats().blocks, 0, "too large for a small cache");

    let (at, _) = layout.chunk_at(3);
    data[at as usize + 1] ^= 0x08;
    std::fs::write(&path, &data).unwrap();
    // `open`'s cache of 1 MiB takes the pieces at open too.
    let msg = open(&path).unwrap_err().to_string();
    assert!(msg.contains(&format!("offset {at}")), "{msg}");
    drop(open_with(&path, &BlockCache::new(64 << 10)));
}
