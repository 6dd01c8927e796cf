//! Property tests of the two cell sources a store merges — the memstore and a store file —
//! against the simplest model: a sorted vector filtered by read point.

// These tests damage and inspect files on purpose, beneath the engine's `Env`.
#![allow(clippy::disallowed_methods)]

use std::sync::Arc;

use basalt_model::{BloomType, Cell, CellType, ColumnFamilyDescriptor, Compression};
use bytes::Bytes;
use proptest::prelude::*;

use crate::block_cache::BlockCache;
use crate::env::Env;
use crate::memstore::MemStore;
use crate::store::scanner::CellSource;
use crate::storefile::{Caching, StoreFile, StoreFileWriter};

fn cell() -> impl Strategy<Value = Cell> {
    let types = prop::sample::select(vec![
        CellType::Put,
        CellType::Delete,
        CellType::DeleteColumn,
        CellType::DeleteFamily,
    ]);
    (
        0u8..6,
        0u8..4,
        0i64..5,
        types,
        // Zero among them: a store file leaves a zero id out of its entry.
        0u64..40,
        prop::collection::vec(any::<u8>(), 0..20),
        prop::option::of(1u64..9),
    )
        .prop_map(|(r, q, ts, t, seq, v, ttl)| {
            Cell::from(basalt_model::CellParts {
                row: Bytes::from(format!("row{r}")),
                family: Bytes::from_static(b"f"),
                qualifier: if t == CellType::DeleteFamily {
                    Bytes::new()
                } else {
                    Bytes::from(format!("q{q}"))
                },
                timestamp: ts,
                cell_type: t,
                seq_id: seq,
                value: if t == CellType::Put {
                    Bytes::from(v)
                } else {
                    Bytes::new()
                },
                ttl_ms: ttl,
            })
        })
}

/// What a source must yield: distinct keys in order, at or below the read point.
fn model(cells: &[Cell], read_point: u64) -> Vec<Cell> {
    let mut m: Vec<Cell> = Vec::new();
    for c in cells {
        // identical keys: the last written wins (memstore replace semantics)
        m.retain(|x| x.cmp(c) != std::cmp::Ordering::Equal);
        m.push(c.clone());
    }
    m.sort();
    m.retain(|c| c.seq_id <= read_point);
    m
}

fn drain(s: &mut dyn CellSource) -> Vec<Cell> {
    let mut out = Vec::new();
    while let Some(c) = s.peek() {
        out.push(c.clone());
        s.advance().unwrap();
    }
    out
}

/// Checks full iteration, seeks (forward and back) and reverse row lookups of `s`.
fn check_source(
    s: &mut dyn CellSource,
    want: &[Cell],
    probes: &[Cell],
) -> Result<(), TestCaseError> {
    s.seek(&Cell::first_on_row(&Bytes::new())).unwrap();
    prop_assert_eq!(&drain(s), want);
    // Keeping one version a column, as the store scanner does: the cell taken, then what is
    // left of its column passed; the first visible cell of each column.
    s.seek(&Cell::first_on_row(&Bytes::new())).unwrap();
    let mut newest = Vec::new();
    while s.take_last_version_into(&mut newest).unwrap() {
        s.skip_column(newest.last().unwrap()).unwrap();
    }
    let mut first_of_columns = want.to_vec();
    first_of_columns.dedup_by(|c, kept| c.same_column(kept));
    prop_assert_eq!(newest, first_of_columns);
    for p in probes {
        s.seek(p).unwrap();
        prop_assert_eq!(s.peek(), want.iter().find(|c| *c >= p), "seek to {:?}", p);
        let before = want
            .iter()
            .rev()
            .find(|c| *c < p)
            .map(basalt_model::Cell::row_bytes);
        prop_assert_eq!(s.last_row_before(Some(p)).unwrap(), before);
    }
    prop_assert_eq!(
        s.last_row_before(None).unwrap(),
        want.last().map(basalt_model::Cell::row_bytes)
    );
    Ok(())
}

fn probe() -> impl Strategy<Value = Cell> {
    (0u8..7, 0u8..5, 0i64..6).prop_map(|(r, q, ts)| {
        let row = Bytes::from(format!("row{r}"));
        match q {
            0 => Cell::first_on_row(&row),
            4 => crate::store::scanner::first_on_next_row(&row),
            _ => {
                let mut c = Cell::first_on_column(
                    &row,
                    &Bytes::from_static(b"f"),
                    &Bytes::from(format!("q{q}")),
                );
                c.timestamp = ts;
                c
            }
        }
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn memstore_scanner_matches_the_model(cells in prop::collection::vec(cell(), 0..150), read_point in 0u64..45, probes in prop::collection::vec(probe(), 0..10)) {
        let mem = Arc::new(MemStore::new());
        cells.iter().for_each(|c| { mem.insert(c); });
        let want = model(&cells, read_point);
        check_source(&mut mem.scanner(read_point), &want, &probes)?;
    }

    #[test]
    fn store_file_scanner_matches_the_model(
        cells in prop::collection::vec(cell(), 1..300),
        read_point in 0u64..45,
        probes in prop::collection::vec(probe(), 0..10),
        codec in prop::sample::select(vec![Compression::None, Compression::Lz4, Compression::Snappy, Compression::Gz, Compression::Zstd]),
        // Small blocks make an index of many leaves, through which scans, seeks and steps back
        // cross from leaf to leaf.
        block_size in prop::sample::select(vec![64u32, 256, 1024]),
    ) {
        let all = model(&cells, u64::MAX);
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("1.sf");
        let family = ColumnFamilyDescriptor::new("f").with_compression(codec).with_block_size_bytes(block_size).with_bloom_filter(BloomType::RowCol);
        let mut w = StoreFileWriter::create(&Env::default(), &path, &family, 0).unwrap();
        all.iter().for_each(|c| w.add(c).unwrap());
        w.finish(false).unwrap();
        let f = Arc::new(StoreFile::open(&Env::default(), &path, crate::storefile::FileId { region: 1, file: 1 }, &Bytes::from_static(b"f"), &BlockCache::new(1 << 20)).unwrap());
        let want = model(&cells, read_point);
        check_source(&mut f.scanner(read_point, Caching::QUERY), &want, &probes)?;
        for c in &all {
            // a bloom filter never denies a cell that is there
            let q: &[u8] = if c.cell_type.is_family_delete() { b"any" } else { c.qualifier() };
            prop_assert!(f.may_contain(c.row(), Some(q)).unwrap());
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Bytes from disk never cause a panic: a damaged store file opens and scans to the end or
    /// fails with an error.
    #[test]
    fn damaged_store_files_never_panic(cells in prop::collection::vec(cell(), 1..120), flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6), cut in prop::option::of(any::<prop::sample::Index>())) {
        let all = model(&cells, u64::MAX);
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("1.sf");
        let family = ColumnFamilyDescriptor::new("f").with_compression(Compression::Lz4).with_block_size_bytes(1024);
        let mut w = StoreFileWriter::create(&Env::default(), &path, &family, 0).unwrap();
        all.iter().for_each(|c| w.add(c).unwrap());
        w.finish(false).unwrap();
        let mut data = std::fs::read(&path).unwrap();
        for (at, x) in flips {
            let i = at.index(data.len());
            data[i] ^= x | 1;
        }
        if let Some(c) = cut {
            data.truncate(c.index(data.len()));
        }
        std::fs::write(&path, &data).unwrap();
        if let Ok(f) = StoreFile::open(&Env::default(), &path, crate::storefile::FileId { region: 1, file: 1 }, &Bytes::from_static(b"f"), &BlockCache::new(1 << 20)) {
            let f = Arc::new(f);
            let mut s = f.scanner(u64::MAX, Caching::QUERY);
            let _ = s.seek(&Cell::first_on_row(&Bytes::new()));
            let mut steps = 0;
            while s.peek().is_some() && steps < 10_000 {
                if s.advance().is_err() {
                    break;
                }
                steps += 1;
            }
            let _ = s.last_row_before(None);
        }
    }

    /// A damaged WAL is recovered up to a torn tail or refused with an error, never a panic.
    #[test]
    fn damaged_wal_segments_never_panic(edits in prop::collection::vec(prop::collection::vec(cell(), 1..5), 1..20), flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4)) {
        let tmp = tempfile::tempdir().unwrap();
        let wal = crate::wal::Wal::open(&Env::default(), tmp.path(), 1 << 20).unwrap();
        wal.recover(|_| Ok(())).unwrap();
        let mut ticket = 0;
        for (i, cells) in edits.iter().enumerate() {
            ticket = wal.append(1, i as u64 + 1, cells).unwrap();
        }
        wal.sync(ticket, false).unwrap();
        drop(wal);
        let seg = std::fs::read_dir(tmp.path()).unwrap().map(|e| e.unwrap().path()).max_by_key(|p| std::fs::metadata(p).unwrap().len()).unwrap();
        let mut data = std::fs::read(&seg).unwrap();
        for (at, x) in flips {
            let i = at.index(data.len());
            data[i] ^= x | 1;
        }
        std::fs::write(&seg, &data).unwrap();
        let wal = crate::wal::Wal::open(&Env::default(), tmp.path(), 1 << 20).unwrap();
        let mut seen = 0usize;
        if wal.recover(|_| { seen += 1; Ok(()) }).is_ok() {
            prop_assert!(seen <= edits.len());
        }
    }
}
