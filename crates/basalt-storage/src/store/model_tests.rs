//! A store (memstore, snapshot, files, flush, compaction, store scanner and query matcher) on
//! its own against the oracle: random writes, flushes, minor and major compactions, and reads
//! of the whole store, raw and not, with time ranges and version limits, for families with
//! and without NEW_VERSION_BEHAVIOR.

use basalt_model::ops::{Delete, Get, Put, Scan};
use basalt_model::{Cell, ColumnFamilyDescriptor, KeepDeletedCells, TimeRange};
use basalt_testkit::oracle::Oracle;
use bytes::Bytes;
use proptest::prelude::*;

use super::query_matcher::Mode;
use super::scanner::StoreScanner;
use super::{ReadHint, Store};
use crate::block_cache::BlockCache;
use crate::env::Env;

pub(super) const NOW: i64 = 1_000_000;

#[derive(Clone, Debug)]
enum StoreOp {
    Put(Put),
    Delete(Delete),
    Flush,
    Compact {
        major: bool,
    },
    /// A scan of the whole store, of the columns named (all when `None`).
    Read {
        raw: bool,
        versions: u32,
        tr: TimeRange,
        columns: Option<Vec<Bytes>>,
    },
    /// A Get of one row, which leaves out the memstores and files that rule its row out; of
    /// the columns named (files without family markers then wait at the first of them).
    Get {
        row: Bytes,
        columns: Option<Vec<Bytes>>,
        versions: u32,
    },
}

/// A store operation; with `family_markers` false, deletes name columns only (files without
/// family markers are the ones a Get of named columns may leave unread). Gets weigh `gets`
/// against 21 for the rest.
fn store_op(family_markers: bool, gets: u32) -> impl Strategy<Value = StoreOp> {
    let kinds = if family_markers { 0u8..4 } else { 0u8..2 };
    let row = (0u8..4).prop_map(|r| Bytes::from(format!("r{r}")));
    let qual = prop::sample::select(vec!["", "a", "ab", "b"])
        .prop_map(|q: &str| Bytes::from(q.to_owned()));
    let ts = 1i64..7;
    prop_oneof![
        8 => (row.clone(), qual.clone(), ts.clone(), 0u8..3).prop_map(|(r, q, t, v)| StoreOp::Put(Put::new(r).add_at("f", q, t, format!("v{v}")))),
        4 => (row, qual, ts, kinds).prop_map(|(r, q, t, kind)| StoreOp::Delete(match kind {
            0 => Delete::new(r).add_column_at("f", q, t),
            1 => Delete::new(r).add_columns_at("f", q, t),
            2 => Delete::new(r).add_family_at("f", t),
            _ => Delete::new(r).add_family_version("f", t),
        })),
        2 => Just(StoreOp::Flush),
        1 => any::<bool>().prop_map(|major| StoreOp::Compact { major }),
        3 => (any::<bool>(), 1u32..4, 0i64..7, 1i64..8, get_columns()).prop_map(|(raw, versions, a, n, columns)| StoreOp::Read { raw, versions, tr: TimeRange::new(a, a + n).unwrap(), columns }),
        gets => (0u8..5, get_columns(), 1u32..3).prop_map(|(r, columns, versions)| StoreOp::Get { row: Bytes::from(format!("r{r}")), columns, versions }),
    ]
}

/// The writes of `ops` at the times a server's clock would give them, two writes a tick:
/// each file then holds cells no newer than every later write, as a store's files do, and
/// two writes of one tick share their timestamp, even across a flush.
fn stamped(mut ops: Vec<StoreOp>) -> Vec<StoreOp> {
    let mut writes = 2i64;
    for op in &mut ops {
        let cells = match op {
            StoreOp::Put(p) => &mut p.cells,
            StoreOp::Delete(d) => &mut d.markers,
            _ => continue,
        };
        cells.iter_mut().for_each(|c| c.timestamp = writes / 2);
        writes += 1;
    }
    ops
}

/// A Get's columns: none named (the whole family), or a sorted set of the written ones and
/// one never written.
fn get_columns() -> impl Strategy<Value = Option<Vec<Bytes>>> {
    let named = prop::sample::subsequence(vec!["", "a", "ab", "b", "c"], 1..=4)
        .prop_map(|qs| qs.into_iter().map(|q: &str| Bytes::from(q)).collect());
    prop_oneof![Just(None), named.prop_map(Some)]
}

/// A scanner of the newest `versions` of each of `columns` (all when `None`) of `row`, opened
/// as a Get opens it: the memstores and files that rule the row out are left out.
fn get_scanner(
    store: &Store,
    row: &Bytes,
    columns: Option<&[Bytes]>,
    versions: u32,
) -> super::StoreScanner {
    let mode = Mode::User {
        raw: false,
        time_range: TimeRange::all(),
        max_versions: versions.min(store.family().max_versions),
        has_filter: false,
        explicit_columns: columns.map(<[Bytes]>::to_vec),
    };
    let hint = ReadHint {
        get: Some((row, None)),
        time_range: TimeRange::all(),
        cache_blocks: true,
        cache_only: false,
    };
    store_scanner(store, mode, u64::MAX, &hint).unwrap()
}

/// The store's scanner for a read at `read_point`; `None` when the store asks for a new
/// read point.
pub(super) fn store_scanner(
    store: &Store,
    mode: Mode,
    read_point: u64,
    hint: &ReadHint<'_>,
) -> Option<StoreScanner> {
    let mut out = Vec::new();
    let built = store
        .scanner_into(mode, read_point, NOW, 0, hint, &mut out)
        .unwrap();
    assert_eq!(built, out.len() == 1);
    out.pop()
}

/// The newest `versions` of each of `columns` of `row`, read as a Get reads it.
fn get_row(store: &Store, row: &Bytes, columns: Option<&[Bytes]>, versions: u32) -> Vec<Cell> {
    let mut s = get_scanner(store, row, columns, versions);
    s.seek(&Cell::first_on_row(row)).unwrap();
    let mut out = Vec::new();
    if s.peek_row() == Some(row) {
        s.read_row(row, &mut out, None).unwrap();
    }
    out
}

/// Every row of the store as a scan of `columns` (all when `None`) reads it.
pub(super) fn read_store(
    store: &Store,
    raw: bool,
    versions: u32,
    tr: TimeRange,
    columns: Option<&[Bytes]>,
) -> Vec<Cell> {
    // Asked for as the client asks: the store keeps a user read within the family's
    // versions.
    let mode = Mode::User {
        raw,
        time_range: tr,
        max_versions: versions,
        has_filter: false,
        explicit_columns: columns.map(<[Bytes]>::to_vec),
    };
    let hint = ReadHint {
        get: None,
        time_range: tr,
        cache_blocks: true,
        cache_only: false,
    };
    let mut s = store_scanner(store, mode, u64::MAX, &hint).unwrap();
    s.seek_to_first().unwrap();
    let mut out = Vec::new();
    while let Some(row) = s.peek_row_bytes() {
        s.read_row(&row, &mut out, None).unwrap();
    }
    out
}

fn key(c: &Cell) -> (Bytes, Bytes, i64, &'static str, Bytes) {
    (
        c.row_bytes(),
        c.qualifier_bytes(),
        c.timestamp,
        c.cell_type.name(),
        c.value_bytes(),
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn store_agrees_with_the_oracle(
        versions in 1u32..4,
        keep in any::<bool>(),
        nvb in any::<bool>(),
        ops in any::<bool>().prop_flat_map(|clock| prop::collection::vec(store_op(true, 3), 1..60).prop_map(move |ops| if clock { stamped(ops) } else { ops })),
    ) {
        agrees_with_the_oracle(versions, keep, nvb, &ops)?;
    }

    /// Gets of named columns over files written in time order, half the histories without
    /// family markers: the files a Get may leave unread, and the column hints that keep
    /// them so.
    #[test]
    fn named_column_gets_agree_with_the_oracle(
        versions in 1u32..4,
        keep in any::<bool>(),
        nvb in any::<bool>(),
        ops in any::<bool>().prop_flat_map(|markers| prop::collection::vec(store_op(markers, 12), 1..60).prop_map(stamped)),
    ) {
        agrees_with_the_oracle(versions, keep, nvb, &ops)?;
    }
}

/// Runs `ops` on a store and the oracle, and checks every read, and at the end every cell.
fn agrees_with_the_oracle(
    versions: u32,
    keep: bool,
    nvb: bool,
    ops: &[StoreOp],
) -> Result<(), TestCaseError> {
    let kdc = if keep {
        KeepDeletedCells::True
    } else {
        KeepDeletedCells::False
    };
    let family = ColumnFamilyDescriptor::new("f")
        .with_max_versions(versions)
        .with_keep_deleted_cells(kdc)
        .with_new_version_behavior(nvb)
        .with_block_size_bytes(1024);
    let (_dir, _cache, store) = open_store(family.clone());
    let mut oracle = Oracle::new(std::slice::from_ref(&family));
    let mut counters = (0u64, 0u64);
    for op in ops {
        if !write(&store, &mut oracle, op, &mut counters) {
            check_read(&store, &oracle, op)?;
        }
    }
    // every physical cell, raw
    let want: Vec<_> = oracle
        .scan(&Scan::new().raw().all_versions(), NOW)
        .iter()
        .flat_map(|r| r.cells.iter().map(key))
        .collect();
    let got: Vec<_> = read_store(&store, true, u32::MAX, TimeRange::all(), None)
        .iter()
        .map(key)
        .collect();
    prop_assert_eq!(got, want);
    Ok(())
}

/// Inserts `cells` into the store's memstore at sequence id `seq`.
pub(super) fn insert_at(store: &Store, cells: &[Cell], seq: u64) {
    for c in cells {
        let mut c = c.clone();
        c.seq_id = seq;
        store.insert(&c);
    }
}

/// Applies `op` to the store and the oracle when it is a write, a flush or a compaction
/// (`counters`: the last sequence id and file id); false when it is a read.
fn write(store: &Store, oracle: &mut Oracle, op: &StoreOp, counters: &mut (u64, u64)) -> bool {
    let (seq, file_id) = counters;
    match op {
        StoreOp::Put(p) => {
            *seq += 1;
            insert_at(store, &p.cells, *seq);
            oracle.put(p, NOW);
        }
        StoreOp::Delete(d) => {
            *seq += 1;
            insert_at(store, &d.markers, *seq);
            oracle.delete(d, NOW);
        }
        StoreOp::Flush => {
            if let Some(snap) = store.take_snapshot() {
                *file_id += 1;
                let f = store
                    .write_flush(&snap, *file_id, NOW, 0, u64::MAX)
                    .unwrap();
                store.finish_flush(f);
            }
            oracle.flush(NOW);
        }
        StoreOp::Compact { major } => {
            let inputs = store.files();
            if !inputs.is_empty() && (*major || inputs.len() >= 2) {
                *file_id += 1;
                let out = store
                    .write_compaction(
                        &inputs,
                        *file_id,
                        *major,
                        NOW,
                        0,
                        &mut crate::compaction::Throttle::new(
                            None,
                            crate::env::Env::default().instant(),
                        ),
                    )
                    .unwrap();
                store.finish_compaction(&inputs, out);
            }
            oracle.compact(*major, NOW);
        }
        StoreOp::Read { .. } | StoreOp::Get { .. } => return false,
    }
    true
}

/// Checks a read (`op`) of the store against the oracle's.
fn check_read(store: &Store, oracle: &Oracle, op: &StoreOp) -> Result<(), TestCaseError> {
    match op {
        StoreOp::Read {
            raw,
            versions,
            tr,
            columns,
        } => {
            let mut scan = columns
                .iter()
                .flatten()
                .fold(Scan::new(), |s, q| s.add_column("f", q.clone()))
                .with_max_versions(*versions)
                .with_time_range(*tr);
            if *raw {
                scan = scan.raw();
            }
            let want: Vec<_> = oracle
                .scan(&scan, NOW)
                .iter()
                .flat_map(|r| r.cells.iter().map(key))
                .collect();
            let got: Vec<_> = read_store(store, *raw, *versions, *tr, columns.as_deref())
                .iter()
                .map(key)
                .collect();
            prop_assert_eq!(got, want, "{:?}", op);
        }
        StoreOp::Get {
            row,
            columns,
            versions,
        } => {
            let get = columns
                .iter()
                .flatten()
                .fold(Get::new(row.clone()), |g, q| g.add_column("f", q.clone()));
            let want: Vec<_> = oracle
                .get(&get.with_max_versions(*versions), NOW)
                .cells
                .iter()
                .map(key)
                .collect();
            let got: Vec<_> = get_row(store, row, columns.as_deref(), *versions)
                .iter()
                .map(key)
                .collect();
            prop_assert_eq!(got, want, "{:?}", op);
        }
        _ => {}
    }
    Ok(())
}

#[test]
fn a_get_leaves_out_the_memstores_and_files_that_rule_its_row_out() {
    let family = ColumnFamilyDescriptor::new("f");
    let (_dir, _cache, store) = open_store(family);
    let put = |row: &str, seq: u64| {
        let mut c = Cell::put(row.to_owned(), "f", "q", 1, "v");
        c.seq_id = seq;
        c
    };
    store.insert(&put("in-file", 1));
    let snap = store.take_snapshot().unwrap();
    store.finish_flush(store.write_flush(&snap, 1, NOW, 0, u64::MAX).unwrap());
    store.insert(&put("in-memstore", 2));
    let sources = |row: &str| {
        get_scanner(&store, &Bytes::copy_from_slice(row.as_bytes()), None, 1).source_count()
    };
    assert_eq!(sources("in-memstore"), 1);
    assert_eq!(sources("in-file"), 1);
    assert_eq!(sources("in-neither"), 0);
    for row in ["in-memstore", "in-file"] {
        let got = get_row(&store, &Bytes::from(row), None, 1);
        assert_eq!(
            got.iter().map(basalt_model::Cell::row).collect::<Vec<_>>(),
            [row.as_bytes()]
        );
    }
}

/// HBase's lazy seek: a Get of named columns reads an older file's block only when the newer
/// files leave it something to decide. Each case counts the data blocks the Get reads.
#[test]
fn a_get_of_named_columns_reads_an_older_file_only_when_it_must() {
    let family = ColumnFamilyDescriptor::new("f").with_max_versions(3);
    let (_dir, cache, store) = open_store(family);
    let mut seq = 0;
    let mut flush = |cells: &[Cell]| {
        for c in cells {
            seq += 1;
            insert_at(&store, std::slice::from_ref(c), seq);
        }
        let snap = store.take_snapshot().unwrap();
        store.finish_flush(store.write_flush(&snap, seq, NOW, 0, u64::MAX).unwrap());
    };
    let put = |row: &str, q: &str, ts: i64| {
        Cell::put(row.to_owned(), "f", q.to_owned(), ts, format!("{q}@{ts}"))
    };
    // The newer file holds newer versions of two of the older file's three columns.
    flush(&[put("r", "a", 1), put("r", "b", 1), put("r", "c", 1)]);
    flush(&[put("r", "a", 2), put("r", "c", 2)]);
    let reads = |columns: Option<&[&str]>, versions: u32| {
        let columns: Option<Vec<Bytes>> = columns.map(|qs| {
            qs.iter()
                .map(|q| Bytes::copy_from_slice(q.as_bytes()))
                .collect()
        });
        let before = cache.stats().data_block_reads;
        let got = get_row(&store, &Bytes::from("r"), columns.as_deref(), versions);
        let values: Vec<_> = got
            .iter()
            .map(|c| String::from_utf8_lossy(c.value()).into_owned())
            .collect();
        (values, cache.stats().data_block_reads - before)
    };
    let values = |vs: &[&str]| vs.iter().map(|v| (*v).to_owned()).collect::<Vec<_>>();
    // The newest versions of `a` and `c` are in the newer file, newer than anything in the
    // older one: after `a`, the older file waits at `c` instead of reading.
    assert_eq!(reads(Some(&["a"]), 1), (values(&["a@2"]), 1));
    assert_eq!(reads(Some(&["a", "c"]), 1), (values(&["a@2", "c@2"]), 1));
    // The older file must answer: for an older version, another column, or the whole row.
    assert_eq!(reads(Some(&["a"]), 2), (values(&["a@2", "a@1"]), 2));
    assert_eq!(reads(Some(&["a", "b"]), 1), (values(&["a@2", "b@1"]), 2));
    assert_eq!(
        reads(Some(&["a", "b", "c"]), 1),
        (values(&["a@2", "b@1", "c@2"]), 2)
    );
    assert_eq!(reads(None, 1), (values(&["a@2", "b@1", "c@2"]), 2));
    // A family marker sorts before every column of the row, so a file holding one seeks
    // at once: the newest file's marker masks the older versions in both files.
    let mut marker = Cell::put("r".to_owned(), "f", String::new(), 2, "");
    marker.cell_type = basalt_model::CellType::DeleteFamily;
    flush(&[marker, put("r", "b", 3)]);
    assert_eq!(reads(Some(&["a"]), 1), (values(&[]), 2));
    assert_eq!(reads(Some(&["b"]), 1), (values(&["b@3"]), 1));
}

/// A store of `family` over the whole table in a fresh directory, with its block cache.
pub(super) fn open_store(
    family: ColumnFamilyDescriptor,
) -> (tempfile::TempDir, std::sync::Arc<BlockCache>, Store) {
    let dir = tempfile::tempdir().unwrap();
    let cache = BlockCache::new(1 << 20);
    let env = Env::default();
    let store = Store::open(&env, dir.path(), &whole_table(), family, &[], &cache).unwrap();
    (dir, cache, store)
}

fn whole_table() -> crate::region::RegionInfo {
    crate::region::RegionInfo {
        id: 1,
        start_key: bytes::Bytes::new(),
        end_key: bytes::Bytes::new(),
    }
}
