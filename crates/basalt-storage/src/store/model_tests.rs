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
use super::{ReadHint, Store};
use crate::block_cache::BlockCache;
use crate::env::Env;

const NOW: i64 = 1_000_000;

#[derive(Clone, Debug)]
enum StoreOp {
    Put(Put),
    Delete(Delete),
    Flush,
    Compact {
        major: bool,
    },
    Read {
        raw: bool,
        versions: u32,
        tr: TimeRange,
    },
    /// A Get of one row, which leaves out the memstores and files that rule its row out.
    Get {
        row: Bytes,
    },
}

fn store_op() -> impl Strategy<Value = StoreOp> {
    let row = (0u8..4).prop_map(|r| Bytes::from(format!("r{r}")));
    let qual =
        prop::sample::select(vec!["", "a", "b"]).prop_map(|q: &str| Bytes::from(q.to_owned()));
    let ts = 1i64..7;
    prop_oneof![
        8 => (row.clone(), qual.clone(), ts.clone(), 0u8..3).prop_map(|(r, q, t, v)| StoreOp::Put(Put::new(r).add_at("f", q, t, format!("v{v}")))),
        4 => (row, qual, ts, 0u8..4).prop_map(|(r, q, t, kind)| StoreOp::Delete(match kind {
            0 => Delete::new(r).add_column_at("f", q, t),
            1 => Delete::new(r).add_columns_at("f", q, t),
            2 => Delete::new(r).add_family_at("f", t),
            _ => Delete::new(r).add_family_version("f", t),
        })),
        2 => Just(StoreOp::Flush),
        1 => any::<bool>().prop_map(|major| StoreOp::Compact { major }),
        3 => (any::<bool>(), 1u32..4, 0i64..7, 1i64..8).prop_map(|(raw, versions, a, n)| StoreOp::Read { raw, versions, tr: TimeRange::new(a, a + n).unwrap() }),
        3 => (0u8..5).prop_map(|r| StoreOp::Get { row: Bytes::from(format!("r{r}")) }),
    ]
}

/// A scanner of the newest version of each column of `row`, opened as a Get opens it: the
/// memstores and files that rule the row out are left out.
fn get_scanner(store: &Store, row: &Bytes) -> super::StoreScanner {
    let mode = Mode::User {
        raw: false,
        time_range: TimeRange::all(),
        max_versions: 1,
        has_filter: false,
        explicit_columns: None,
    };
    let hint = ReadHint {
        get: Some((row, None)),
        time_range: TimeRange::all(),
        cache_blocks: true,
        cache_only: false,
    };
    store.scanner(mode, u64::MAX, NOW, 0, &hint).unwrap()
}

/// The newest version of each column of `row`, read as a Get reads it.
fn get_row(store: &Store, row: &Bytes) -> Vec<Cell> {
    let mut s = get_scanner(store, row);
    s.seek(&Cell::first_on_row(row)).unwrap();
    let mut out = Vec::new();
    if s.peek_row() == Some(row) {
        s.read_row(row, &mut out, None).unwrap();
    }
    out
}

fn read_store(store: &Store, raw: bool, versions: u32, tr: TimeRange) -> Vec<Cell> {
    let max_versions = if raw {
        versions
    } else {
        versions.min(store.family().max_versions)
    };
    let mode = Mode::User {
        raw,
        time_range: tr,
        max_versions,
        has_filter: false,
        explicit_columns: None,
    };
    let mut s = store
        .scanner(
            mode,
            u64::MAX,
            NOW,
            0,
            &ReadHint {
                get: None,
                time_range: tr,
                cache_blocks: true,
                cache_only: false,
            },
        )
        .unwrap();
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
        ops in prop::collection::vec(store_op(), 1..60),
    ) {
        let kdc = if keep { KeepDeletedCells::True } else { KeepDeletedCells::False };
        let family = ColumnFamilyDescriptor::new("f").with_max_versions(versions).with_keep_deleted_cells(kdc).with_new_version_behavior(nvb).with_block_size_bytes(1024);
        let tmp = tempfile::tempdir().unwrap();
        let store = Store::open(&Env::default(), tmp.path(), &whole_table(), family.clone(), &[], &BlockCache::new(1 << 20)).unwrap();
        let mut oracle = Oracle::new(std::slice::from_ref(&family));
        let (mut seq, mut file_id) = (0u64, 0u64);
        for op in &ops {
            match op {
                StoreOp::Put(p) => {
                    seq += 1;
                    p.cells.iter().for_each(|c| { store.insert(&{ let mut c = c.clone(); c.seq_id = seq; c }); });
                    oracle.put(p, NOW);
                }
                StoreOp::Delete(d) => {
                    seq += 1;
                    d.markers.iter().for_each(|c| { store.insert(&{ let mut c = c.clone(); c.seq_id = seq; c }); });
                    oracle.delete(d, NOW);
                }
                StoreOp::Flush => {
                    if let Some(snap) = store.take_snapshot() {
                        file_id += 1;
                        let f = store.write_flush(&snap, file_id, NOW, 0, u64::MAX).unwrap();
                        store.finish_flush(f);
                    }
                    oracle.flush(NOW);
                }
                StoreOp::Compact { major } => {
                    let inputs = store.files();
                    if !inputs.is_empty() && (*major || inputs.len() >= 2) {
                        file_id += 1;
                        let out = store.write_compaction(&inputs, file_id, *major, NOW, 0, &mut crate::compaction::Throttle::new(None, crate::env::Env::default().instant())).unwrap();
                        store.finish_compaction(&inputs, out);
                    }
                    oracle.compact(*major, NOW);
                }
                StoreOp::Read { raw, versions, tr } => {
                    let mut scan = Scan::new().with_max_versions(*versions).with_time_range(*tr);
                    if *raw {
                        scan = scan.raw();
                    }
                    let want: Vec<_> = oracle.scan(&scan, NOW).iter().flat_map(|r| r.cells.iter().map(key)).collect();
                    let got: Vec<_> = read_store(&store, *raw, *versions, *tr).iter().map(key).collect();
                    prop_assert_eq!(got, want, "{:?}", op);
                }
                StoreOp::Get { row } => {
                    let want: Vec<_> = oracle.get(&Get::new(row.clone()), NOW).cells.iter().map(key).collect();
                    let got: Vec<_> = get_row(&store, row).iter().map(key).collect();
                    prop_assert_eq!(got, want, "{:?}", op);
                }
            }
        }
        // every physical cell, raw
        let want: Vec<_> = oracle.scan(&Scan::new().raw().all_versions(), NOW).iter().flat_map(|r| r.cells.iter().map(key)).collect();
        let got: Vec<_> = read_store(&store, true, u32::MAX, TimeRange::all()).iter().map(key).collect();
        prop_assert_eq!(got, want);
    }
}

#[test]
fn a_get_leaves_out_the_memstores_and_files_that_rule_its_row_out() {
    let family = ColumnFamilyDescriptor::new("f");
    let tmp = tempfile::tempdir().unwrap();
    let cache = BlockCache::new(1 << 20);
    let store = Store::open(
        &Env::default(),
        tmp.path(),
        &whole_table(),
        family,
        &[],
        &cache,
    )
    .unwrap();
    let put = |row: &str, seq: u64| {
        let mut c = Cell::put(row.to_owned(), "f", "q", 1, "v");
        c.seq_id = seq;
        c
    };
    store.insert(&put("in-file", 1));
    let snap = store.take_snapshot().unwrap();
    store.finish_flush(store.write_flush(&snap, 1, NOW, 0, u64::MAX).unwrap());
    store.insert(&put("in-memstore", 2));
    let sources =
        |row: &str| get_scanner(&store, &Bytes::copy_from_slice(row.as_bytes())).sources();
    assert_eq!(sources("in-memstore"), 1);
    assert_eq!(sources("in-file"), 1);
    assert_eq!(sources("in-neither"), 0);
    for row in ["in-memstore", "in-file"] {
        let got = get_row(&store, &Bytes::from(row));
        assert_eq!(
            got.iter().map(basalt_model::Cell::row).collect::<Vec<_>>(),
            [row.as_bytes()]
        );
    }
}

fn whole_table() -> crate::region::RegionInfo {
    crate::region::RegionInfo {
        id: 1,
        start_key: bytes::Bytes::new(),
        end_key: bytes::Bytes::new(),
    }
}
