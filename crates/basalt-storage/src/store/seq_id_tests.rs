//! The sequence ids a major compaction clears ([`super::clear_seq_ids`]): which
//! cells lose theirs, which keep them, and that no read's answer changes.

use basalt_model::{Cell, CellType, ColumnFamilyDescriptor, TimeRange};
use bytes::Bytes;

use super::model_tests::{insert_at, open_store, read_store, store_scanner, NOW};
use super::query_matcher::Mode;
use super::{clear_seq_ids, ReadHint, Store};
use crate::compaction::Throttle;
use crate::env::Env;
use crate::store::scanner::CellSource;
use crate::storefile::Caching;

fn put(row: &str, q: &str, ts: i64, value: &str, seq: u64) -> Cell {
    let mut c = Cell::put(row.to_owned(), "f", q.to_owned(), ts, value.to_owned());
    c.seq_id = seq;
    c
}

/// Only a cell whose row, column, timestamp and type no neighbour shares loses its id:
/// cells of one key keep theirs, at a row's start, middle and end.
#[test]
fn only_cells_of_a_key_of_their_own_lose_their_ids() {
    let marker = |q: &'static str, ts: i64, seq: u64| {
        let mut c = Cell::marker("r", "f", q, ts, CellType::DeleteColumn);
        c.seq_id = seq;
        c
    };
    let mut row = vec![
        put("r", "a", 5, "x", 9),
        put("r", "a", 5, "y", 4),
        marker("b", 5, 8),
        put("r", "b", 5, "z", 7),
        put("r", "c", 6, "w", 6),
        put("r", "c", 5, "v", 5),
        put("r", "d", 5, "u", 3),
        put("r", "d", 5, "t", 2),
    ];
    let mut sorted = row.clone();
    sorted.sort();
    assert_eq!(row, sorted, "the row is in key order");
    clear_seq_ids(&mut row);
    let ids: Vec<u64> = row.iter().map(|c| c.seq_id).collect();
    assert_eq!(ids, [9, 4, 0, 0, 0, 0, 3, 2]);
    let mut one = vec![put("r", "a", 5, "x", 9)];
    clear_seq_ids(&mut one);
    assert_eq!(one[0].seq_id, 0);
}

/// Every cell of the store's files with its sequence id, as the files hold them.
fn stored(store: &Store) -> Vec<(Bytes, i64, u64)> {
    let mut out = Vec::new();
    for f in store.files() {
        let mut s = f.scanner(u64::MAX, Caching::QUERY);
        s.seek(&Cell::first_on_row(&Bytes::new())).unwrap();
        let mut cells = Vec::new();
        while s.take_into(&mut cells).unwrap() {}
        out.extend(
            cells
                .iter()
                .map(|c| (c.value_bytes(), c.timestamp, c.seq_id)),
        );
    }
    out
}

/// Compacts the store's newest `files` (a major compaction takes them all).
fn compact(store: &Store, file_id: u64, major: bool, files: usize) {
    let all = store.files();
    let inputs = &all[all.len() - files..];
    let mut throttle = Throttle::new(None, Env::default().instant());
    let out = store
        .write_compaction(inputs, file_id, major, NOW, 0, &mut throttle)
        .unwrap();
    store.finish_compaction(inputs, out);
}

fn flush(store: &Store, cells: &[Cell], file_id: u64) {
    for c in cells {
        insert_at(store, std::slice::from_ref(c), c.seq_id);
    }
    let snap = store.take_snapshot().unwrap();
    let f = store.write_flush(&snap, file_id, NOW, 0, u64::MAX).unwrap();
    store.finish_flush(f);
}

/// The values a read of every version sees, newest first.
fn values(store: &Store) -> Vec<Bytes> {
    read_store(store, false, u32::MAX, TimeRange::all(), None)
        .iter()
        .map(Cell::value_bytes)
        .collect()
}

/// A major compaction clears the ids of the cells every reader sees; a minor one, or a
/// major one under NEW_VERSION_BEHAVIOR, keeps them all. The file still says the highest
/// id, a write at a compacted cell's timestamp still wins over it, and the file is eight
/// bytes a cell smaller.
#[test]
fn a_major_compaction_clears_ids_and_reads_the_same() {
    for new_version_behavior in [false, true] {
        let family = ColumnFamilyDescriptor::new("f")
            .with_max_versions(3)
            .with_new_version_behavior(new_version_behavior);
        let (_dir, _cache, store) = open_store(family);
        flush(&store, &[put("r", "a", 5, "old", 1)], 1);
        flush(&store, &[put("r", "a", 6, "six", 2)], 2);
        flush(&store, &[put("r", "a", 7, "seven", 3)], 3);
        let before = values(&store);
        assert_eq!(before, ["seven", "six", "old"]);
        // Two of the three files: the ids stay.
        compact(&store, 4, false, 2);
        assert_eq!(store.files().len(), 2);
        assert!(stored(&store).iter().all(|&(_, _, seq)| seq != 0));
        assert_eq!(values(&store), before);
        let size = |store: &Store| store.files().iter().map(|f| f.size_bytes()).sum::<u64>();
        let kept = size(&store);
        compact(&store, 5, true, 2);
        let ids: Vec<u64> = stored(&store).iter().map(|&(_, _, seq)| seq).collect();
        let want = if new_version_behavior {
            vec![3, 2, 1]
        } else {
            vec![0, 0, 0]
        };
        assert_eq!(ids, want, "new_version_behavior {new_version_behavior}");
        // The file still says the highest id its cells had: repair and replay read it.
        let infos: Vec<u64> = store.files().iter().map(|f| f.info().max_seq_id).collect();
        assert_eq!(infos, [3]);
        assert_eq!(values(&store), before);
        if !new_version_behavior {
            // Two files' blocks, indexes and infos became one's; each cell left out eight
            // bytes more.
            assert!(size(&store) + 3 * 8 <= kept, "{} then {kept}", size(&store));
        }
        // A later write at the timestamp of a cell whose id was cleared wins, in the
        // memstore and flushed.
        insert_at(&store, &[put("r", "a", 5, "new", 10)], 10);
        assert_eq!(values(&store), ["seven", "six", "new"]);
        let snap = store.take_snapshot().unwrap();
        store.finish_flush(store.write_flush(&snap, 6, NOW, 0, u64::MAX).unwrap());
        assert_eq!(values(&store), ["seven", "six", "new"]);
    }
}

/// A read whose read point is below a major compaction's file's highest id (a file
/// installed after the read point was taken) is sent for a new read point: the file, whose
/// cell of id 2 had its id cleared, would show that cell to a read at 1. A flush's file
/// keeps its ids, and the read filters them.
#[test]
fn a_file_above_the_read_point_sends_the_read_for_a_new_one() {
    let (_dir, _cache, store) = open_store(ColumnFamilyDescriptor::new("f"));
    let read_at = |read_point: u64| -> Option<Vec<Bytes>> {
        let mode = Mode::User {
            raw: false,
            time_range: TimeRange::all(),
            max_versions: 1,
            has_filter: false,
            explicit_columns: None,
        };
        let hint = ReadHint {
            get: None,
            time_range: TimeRange::all(),
            cache_blocks: true,
            cache_only: false,
        };
        let mut s = store_scanner(&store, mode, read_point, &hint)?;
        s.seek_to_first().unwrap();
        let mut cells = Vec::new();
        while let Some(row) = s.peek_row_bytes() {
            s.read_row(&row, &mut cells, None).unwrap();
        }
        Some(cells.iter().map(Cell::value_bytes).collect())
    };
    flush(&store, &[put("r", "a", 5, "first", 1)], 1);
    flush(&store, &[put("r", "b", 5, "second", 2)], 2);
    assert_eq!(
        read_at(1).unwrap(),
        ["first"],
        "a flush's file keeps its ids"
    );
    compact(&store, 3, true, 2);
    assert!(stored(&store).iter().all(|&(_, _, seq)| seq == 0));
    assert_eq!(read_at(1), None, "a read at 1 would see the cell of id 2");
    assert_eq!(read_at(2).unwrap(), ["first", "second"]);
}
