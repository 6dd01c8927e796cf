//! SEMANTICS.md §1 cases beyond `semantics.rs`: KEEP_DELETED_CELLS retention, MIN_VERSIONS,
//! read options, filters through the engine, increments and appends, wide rows, atomicity.

use std::sync::Arc;

use basalt_model::filter::parse_filter;
use basalt_model::ops::{Append, Delete, Get, Increment, Put, Scan};
use basalt_model::{
    ColumnFamilyDescriptor, KeepDeletedCells, TableDescriptor, TableName, TimeRange,
};

use super::support::*;

fn markers(t: &basalt_node::Table) -> usize {
    scan_all(t, Scan::new().raw().all_versions())
        .iter()
        .flat_map(|r| &r.cells)
        .filter(|c| c.cell_type.is_delete())
        .count()
}

/// TestKeepDeletes' fixture: a DeleteColumn and a DeleteFamily at `ts` and version deletes at
/// `ts + 1` and `ts + 2` on `r/f:c`; all four survive a flush.
fn four_markers_survive_a_flush(fx: &Fixture, t: &basalt_node::Table, ts: i64) {
    t.delete(Delete::new("r").add_columns_at("f", "c", ts))
        .unwrap();
    t.delete(Delete::new("r").add_family_at("f", ts)).unwrap();
    t.delete(Delete::new("r").add_column_at("f", "c", ts + 1))
        .unwrap();
    t.delete(Delete::new("r").add_column_at("f", "c", ts + 2))
        .unwrap();
    assert_eq!(markers(t), 4);
    fx.flush("t");
    assert_eq!(markers(t), 4);
}

#[test]
fn case_27_markers_masking_nothing_go_at_major_compaction_even_when_kept() {
    // TestKeepDeletes#testDeleteMarkerExpirationEmptyStore
    let fx = Fixture::new();
    let t = fx.create(
        "t",
        vec![cf("f", 1).with_keep_deleted_cells(KeepDeletedCells::True)],
    );
    let ts = T0;
    four_markers_survive_a_flush(&fx, &t, ts);
    t.delete(Delete::new("other").add_family_at("f", ts))
        .unwrap();
    fx.flush("t");
    fx.minor("t");
    assert_eq!(markers(&t), 5);
    fx.major("t");
    assert_eq!(markers(&t), 0);
}

#[test]
fn case_32_deleted_cells_kept_by_keep_deleted_cells_still_obey_versions() {
    let fx = Fixture::new();
    let t = fx.create(
        "t",
        vec![cf("f", 3).with_keep_deleted_cells(KeepDeletedCells::True)],
    );
    for ts in [1, 2, 3] {
        t.put(Put::new("r").add_at("f", "c", ts, format!("T{ts}")))
            .unwrap();
    }
    t.delete(Delete::at("r", 4)).unwrap();
    let before = || {
        Get::new("r")
            .all_versions()
            .with_time_range(TimeRange::new(0, 4).unwrap())
    };
    assert_eq!(values(&t.get(before()).unwrap()), ["T3", "T2", "T1"]);
    assert!(t.get(Get::new("r")).unwrap().is_empty());
    // Two newer puts push two of the deleted cells beyond VERSIONS.
    t.put(Put::new("r").add_at("f", "c", 5, "T5")).unwrap();
    t.put(Put::new("r").add_at("f", "c", 6, "T6")).unwrap();
    fx.flush("t");
    fx.major("t");
    assert_eq!(values(&t.get(before()).unwrap()), ["T3"]);
    assert_eq!(
        values(&t.get(Get::new("r").all_versions()).unwrap()),
        ["T6", "T5"]
    );
}

#[test]
fn case_33_keep_deleted_cells_shell_demo_false_and_true() {
    // schema_design.adoc: puts @10,12,14 and a DeleteColumn at 11 (the book's old shell).
    for (kdc, after_flush, after_major) in [
        (
            KeepDeletedCells::False,
            3,
            vec!["r1/e:c1@14=v14", "r1/e:c1@12=v12"],
        ),
        (
            KeepDeletedCells::True,
            4,
            vec![
                "r1/e:c1@14=v14",
                "r1/e:c1@12=v12",
                "r1/e:c1@11/DeleteColumn",
                "r1/e:c1@10=v10",
            ],
        ),
    ] {
        let fx = Fixture::new();
        let t = fx.create(
            "test",
            vec![cf("e", i32::MAX as u32).with_keep_deleted_cells(kdc)],
        );
        for ts in [10, 12, 14] {
            t.put(Put::new("r1").add_at("e", "c1", ts, format!("v{ts}")))
                .unwrap();
        }
        t.delete(Delete::new("r1").add_columns_at("e", "c1", 11))
            .unwrap();
        let raw = || render(&scan_all(&t, Scan::new().raw().all_versions()));
        assert_eq!(
            raw(),
            [
                "r1/e:c1@14=v14",
                "r1/e:c1@12=v12",
                "r1/e:c1@11/DeleteColumn",
                "r1/e:c1@10=v10"
            ]
        );
        fx.flush("test");
        assert_eq!(raw().len(), after_flush, "{kdc:?}");
        fx.major("test");
        assert_eq!(raw(), after_major, "{kdc:?}");
    }
}

#[test]
fn case_34_markers_survive_flush_and_minor_under_keep_deleted_cells() {
    // TestKeepDeletes#testDeleteMarkerExpiration, first half: 1 family marker, 1 column
    // marker and 2 version markers that all affect a put are kept by flush and minor compaction.
    let fx = Fixture::new();
    let t = fx.create(
        "t",
        vec![
            cf("f", 1).with_keep_deleted_cells(KeepDeletedCells::True),
            cf("g", 1),
        ],
    );
    let ts = 1000;
    t.put(Put::new("r").add_at("f", "c", ts, "T1")).unwrap();
    t.put(Put::new("r").add_at("g", "c", ts - 10, "other store"))
        .unwrap();
    four_markers_survive_a_flush(&fx, &t, ts);
    t.put(Put::new("s").add("f", "c", "x")).unwrap();
    fx.flush("t");
    fx.minor("t");
    assert_eq!(markers(&t), 4);
    // The deleted put is kept (KEEP_DELETED_CELLS) and a raw scan still returns it.
    let raw = render(&scan_all(
        &t,
        Scan::new().raw().add_family("f").all_versions(),
    ));
    assert!(raw.contains(&"r/f:c@1000=T1".to_owned()), "{raw:?}");
}

#[test]
fn case_35_keep_deleted_cells_ttl_expires_markers_with_the_family_ttl() {
    // TestKeepDeletes#testWithTTL (min versions 1, TTL 1 s, KEEP_DELETED_CELLS=TTL)
    let fx = Fixture::new();
    let fam = |n: &str| {
        cf(n, 1)
            .with_min_versions(1)
            .with_ttl_seconds(1)
            .with_keep_deleted_cells(KeepDeletedCells::Ttl)
    };
    let t = fx.create("t", vec![fam("c0"), fam("c1")]);
    let ts = T0 - 2000;
    t.put(
        Put::new("r")
            .add_at("c0", "c0", ts, "T3")
            .add_at("c1", "c1", ts, "T3"),
    )
    .unwrap();
    t.delete(Delete::at("r", ts + 2)).unwrap();
    t.delete(Delete::new("r").add_columns_at("c0", "c0", ts + 2))
        .unwrap();
    let g = || {
        Get::new("r")
            .all_versions()
            .with_time_range(TimeRange::new(0, ts + 1).unwrap())
    };
    assert!(!t.get(g()).unwrap().is_empty());
    fx.flush("t");
    assert!(t.get(g()).unwrap().is_empty());
    assert_eq!(markers(&t), 3);
    fx.major("t");
    assert_eq!(markers(&t), 0);
}

fn min_versions_table(fx: &Fixture, min: u32) -> basalt_node::Table {
    fx.create(
        "t",
        vec![cf("f", 1000).with_min_versions(min).with_ttl_seconds(1)],
    )
}

#[test]
fn case_42_min_versions_with_deletes() {
    // TestMinVersions#testDelete (min 3)
    let fx = Fixture::new();
    let t = min_versions_table(&fx, 3);
    let ts = T0 - 2000;
    for (i, v) in ["T1", "T2", "T3"].iter().enumerate() {
        t.put(Put::new("r").add_at("f", "c", ts - 2 + i as i64, *v))
            .unwrap();
    }
    t.delete(Delete::at("r", ts - 1)).unwrap();
    let all = || values(&t.get(Get::new("r").all_versions()).unwrap());
    assert_eq!(all(), ["T3"]);
    fx.flush("t");
    fx.major("t");
    assert_eq!(all(), ["T3"]);
}

#[test]
fn case_43_min_versions_with_timestamps_filter() {
    // TestMinVersions#testFilters (min 2): of the versions at ts-1 and ts-2 only ts-1 is in the
    // user's view (the newest two are ts and ts-1), before and after compaction. SEMANTICS.md
    // lists [T2, T1] before compaction; HBase's own test asserts T2 alone, and we follow it.
    let fx = Fixture::new();
    let t = min_versions_table(&fx, 2);
    let ts = T0 - 2000;
    for (i, v) in ["T0", "T1", "T2", "T3"].iter().enumerate() {
        t.put(Put::new("r").add_at("f", "c", ts - 3 + i as i64, *v))
            .unwrap();
    }
    let filter = parse_filter(&format!("TimestampsFilter({}, {})", ts - 1, ts - 2)).unwrap();
    let get = || {
        Get::new("r")
            .add_column("f", "c")
            .all_versions()
            .with_filter(filter.clone())
    };
    assert_eq!(values(&t.get(get()).unwrap()), ["T2"]);
    fx.flush("t");
    fx.major("t");
    assert_eq!(values(&t.get(get()).unwrap()), ["T2"]);
}

#[test]
fn case_44_min_versions_across_memstore_and_files() {
    // TestMinVersions#testMemStore (min 2)
    let fx = Fixture::new();
    let t = min_versions_table(&fx, 2);
    let ts = T0 - 2000;
    t.put(Put::new("r").add_at("f", "c", ts - 2, "T2")).unwrap();
    t.put(Put::new("r").add_at("f", "c", ts - 1, "T3")).unwrap();
    t.put(Put::new("r").add_at("f", "c", ts, "T4")).unwrap();
    fx.flush("t");
    fx.major("t");
    t.put(Put::new("r").add_at("f", "c", ts - 3, "T1")).unwrap();
    assert_eq!(values(&t.get(Get::new("r")).unwrap()), ["T4"]);
    assert_eq!(
        values(&t.get(Get::new("r").all_versions()).unwrap()),
        ["T4", "T3"]
    );
    assert_eq!(
        values(
            &t.get(Get::new("r").add_column("f", "c").all_versions())
                .unwrap()
        ),
        ["T4", "T3"]
    );
    t.put(Put::new("r").add_at("f", "c", ts + 1, "T5")).unwrap();
    assert_eq!(
        values(&t.get(Get::new("r").all_versions()).unwrap()),
        ["T5", "T4"]
    );
}

#[test]
fn case_47_48_as_of_reads_and_per_family_time_ranges() {
    let fx = Fixture::new();
    let t = fx.create("t", vec![cf("f", 5), cf("g", 5)]);
    for ts in [10, 20, 30] {
        t.put(Put::new("r").add_at("f", "q", ts, format!("f{ts}")).add_at(
            "g",
            "q",
            ts,
            format!("g{ts}"),
        ))
        .unwrap();
    }
    let as_of = |ts: i64| {
        values(
            &t.get(
                Get::new("r")
                    .add_family("f")
                    .with_time_range(TimeRange::new(0, ts + 1).unwrap()),
            )
            .unwrap(),
        )
    };
    assert_eq!(as_of(25), ["f20"]);
    assert_eq!(as_of(30), ["f30"]);
    let g = Get::new("r").with_family_time_range("g", TimeRange::new(10, 11).unwrap());
    assert_eq!(values(&t.get(g).unwrap()), ["f30", "g10"]);
}

#[test]
fn case_49_timestamps_filter_skips_deleted_versions() {
    // TestTimestampsFilter#testWithVersionDeletes
    let fx = Fixture::new();
    let t = fx.create("t", vec![cf("f", 10)]);
    for ts in 1..=5 {
        t.put(Put::new("r").add_at("f", "c", ts, format!("v{ts}")))
            .unwrap();
    }
    t.delete(Delete::new("r").add_column_at("f", "c", 4))
        .unwrap();
    let get = || {
        Get::new("r")
            .all_versions()
            .with_filter(parse_filter("TimestampsFilter(2, 3, 4, 5)").unwrap())
    };
    assert_eq!(t.get(get()).unwrap().timestamps(b"f", b"c"), [5, 3, 2]);
    fx.flush("t");
    assert_eq!(t.get(get()).unwrap().timestamps(b"f", b"c"), [5, 3, 2]);
    // #testMultiColumns: one cell per column
    t.put(
        Put::new("m")
            .add_at("f", "a", 3, "x")
            .add_at("f", "b", 3, "y")
            .add_at("f", "b", 4, "z"),
    )
    .unwrap();
    let r = t
        .get(
            Get::new("m")
                .all_versions()
                .with_filter(parse_filter("TimestampsFilter(3)").unwrap()),
        )
        .unwrap();
    assert_eq!(values(&r), ["x", "y"]);
}

#[test]
fn case_59_page_filter_limits_rows_per_region() {
    let fx = Fixture::new();
    let name = TableName::parse("p").unwrap();
    fx.db
        .create_table(
            TableDescriptor::new(&name, [ColumnFamilyDescriptor::new("f")]),
            &["m".into()],
        )
        .unwrap();
    let t = fx.db.table("p").unwrap();
    for r in ["a", "b", "c", "n", "o", "p"] {
        t.put(Put::new(r).add("f", "q", "v")).unwrap();
    }
    assert_eq!(fx.db.regions(&name).unwrap().len(), 2);
    let rows = scan_all(
        &t,
        Scan::new().with_filter(parse_filter("PageFilter(2)").unwrap()),
    );
    let keys: Vec<_> = rows
        .iter()
        .map(|r| String::from_utf8_lossy(r.row()).into_owned())
        .collect();
    assert_eq!(keys, ["a", "b", "n", "o"]);
    // scans cross the region boundary in both directions
    assert_eq!(scan_all(&t, Scan::new()).len(), 6);
    let back: Vec<_> = scan_all(&t, Scan::new().reversed())
        .iter()
        .map(basalt_model::RowResult::row_bytes)
        .collect();
    assert_eq!(back, ["p", "o", "n", "c", "b", "a"]);
}

#[test]
fn case_61_62_column_count_and_dependent_column_filters() {
    let fx = Fixture::new();
    let t = fx.create("t", vec![cf("f", 3)]);
    t.put(
        Put::new("r1")
            .add("f", "a", "1")
            .add("f", "b", "2")
            .add("f", "c", "3"),
    )
    .unwrap();
    t.put(Put::new("r2").add("f", "a", "1")).unwrap();
    let get = Get::new("r1").with_filter(parse_filter("ColumnCountGetFilter(2)").unwrap());
    assert_eq!(values(&t.get(get).unwrap()), ["1", "2"]);
    // a row with more columns than the limit ends the scan after it
    let rows = scan_all(
        &t,
        Scan::new().with_filter(parse_filter("ColumnCountGetFilter(2)").unwrap()),
    );
    assert_eq!(rows.len(), 1);
    // DependentColumnFilter: only cells with the reference column's timestamps
    t.put(
        Put::new("d")
            .add_at("f", "ref", 5, "r")
            .add_at("f", "x", 5, "keep")
            .add_at("f", "y", 6, "drop"),
    )
    .unwrap();
    let g = |f: &str| {
        values(
            &t.get(Get::new("d").with_filter(parse_filter(f).unwrap()))
                .unwrap(),
        )
    };
    assert_eq!(g("DependentColumnFilter('f', 'ref')"), ["r", "keep"]);
    assert_eq!(g("DependentColumnFilter('f', 'ref', true)"), ["keep"]);
    assert!(g("DependentColumnFilter('f', 'nope')").is_empty());
    let cols = values(
        &t.get(Get::new("r1").with_filter(parse_filter("ColumnPaginationFilter(1, 1)").unwrap()))
            .unwrap(),
    );
    assert_eq!(cols, ["2"]);
}

#[test]
fn case_69_70_increment_timestamps_and_append() {
    let fx = Fixture::new();
    let t = fx.create("t", vec![cf("f", 3)]);
    let mut inc = Increment::new("r").add("f", "c", 1);
    inc.timestamp = 999;
    let r = t.increment(inc.clone()).unwrap();
    assert_eq!(
        r.cells[0].timestamp, 999,
        "a client timestamp is honoured when no value exists"
    );
    let r = t.increment(inc).unwrap();
    assert_eq!(
        r.cells[0].timestamp, T0,
        "later increments take max(now, old + 1)"
    );
    let r = t.append(Append::new("r").add("f", "s", "ab")).unwrap();
    assert_eq!(values(&r), ["ab"]);
    let r = t.append(Append::new("r").add("f", "s", "cd")).unwrap();
    assert_eq!(values(&r), ["abcd"]);
    assert_eq!(
        values(&t.get(Get::new("r").add_column("f", "s")).unwrap()),
        ["abcd"]
    );
}

#[test]
fn a_write_right_after_increments_in_the_same_millisecond_is_not_hidden() {
    // The clock stands still: increments run ahead of it (max(now, old + 1)); a Put or
    // Delete without a timestamp must still land at or above the counter's newest version.
    let fx = Fixture::new();
    let t = fx.create("t", vec![cf("f", 3)]);
    let counter = |t: &basalt_node::Table| t.increment_column_value("r", "f", "c", 0).unwrap();
    for _ in 0..3 {
        t.increment_column_value("r", "f", "c", 5).unwrap();
    }
    assert_eq!(counter(&t), 15);
    t.put(Put::new("r").add("f", "c", 0i64.to_be_bytes()))
        .unwrap();
    assert_eq!(
        counter(&t),
        0,
        "the Put after the increments is the newest value"
    );
    assert_eq!(t.increment_column_value("r", "f", "c", 1).unwrap(), 1);
    t.delete(Delete::new("r").add_columns("f", "c")).unwrap();
    assert!(
        t.get(Get::new("r")).unwrap().is_empty(),
        "the Delete covers every version"
    );
    // A Put right after a whole-row Delete, in the same millisecond, is not masked by it.
    t.put(Put::new("r").add("f", "c", "again")).unwrap();
    t.delete(Delete::new("r")).unwrap();
    t.put(Put::new("r").add("f", "c", "after")).unwrap();
    assert_eq!(values(&t.get(Get::new("r")).unwrap()), ["after"]);
    // Another row is not pushed ahead.
    t.put(Put::new("s").add("f", "c", "v")).unwrap();
    let r = t.get(Get::new("s")).unwrap();
    assert_eq!(r.cells[0].timestamp, T0);
}

#[test]
fn case_71_concurrent_increments_lose_nothing_and_never_go_back() {
    let fx = Fixture::new();
    let t = fx.create("t", vec![cf("f", 1)]);
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let reader = {
        let (t, stop) = (t.clone(), Arc::clone(&stop));
        std::thread::spawn(move || {
            let mut last = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                if let Some(v) = t.get(Get::new("ctr")).unwrap().value(b"f", b"c") {
                    let v = i64::from_be_bytes(v[..].try_into().unwrap());
                    assert!(v >= last, "counter went back from {last} to {v}");
                    last = v;
                }
            }
        })
    };
    let writers: Vec<_> = (0..4)
        .map(|_| {
            let t = t.clone();
            std::thread::spawn(move || {
                for _ in 0..250 {
                    t.increment_column_value("ctr", "f", "c", 1).unwrap();
                }
            })
        })
        .collect();
    writers.into_iter().for_each(|w| w.join().unwrap());
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    reader.join().unwrap();
    assert_eq!(t.increment_column_value("ctr", "f", "c", 0).unwrap(), 1000);
}

#[test]
fn case_78_wide_rows_come_back_whole_and_sorted() {
    // TestFromClientSide#testJiraTest867: 10 rows x 2000 columns
    let fx = Fixture::new();
    let t = fx.create("t", vec![cf("f", 1)]);
    for r in 0..10 {
        let p = (0..2000).fold(Put::new(format!("row{r}")), |p, c| {
            p.add("f", format!("q{c:05}"), "v")
        });
        t.put(p).unwrap();
    }
    let check = |cells: &[basalt_model::Cell]| {
        assert_eq!(cells.len(), 2000);
        assert!(cells
            .windows(2)
            .all(|w| w[0].qualifier() < w[1].qualifier()));
    };
    check(&t.get(Get::new("row3")).unwrap().cells);
    fx.flush("t");
    let rows = scan_all(&t, Scan::new());
    assert_eq!(rows.len(), 10);
    rows.iter().for_each(|r| check(&r.cells));
}

#[test]
fn case_79_80_81_row_mutations_are_atomic_across_families() {
    let fx = Fixture::new();
    let t = fx.create("t", vec![cf("a", 1), cf("b", 1), cf("c", 1)]);
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writers: Vec<_> = [b'1', b'2']
        .into_iter()
        .map(|v| {
            let (t, stop) = (t.clone(), Arc::clone(&stop));
            std::thread::spawn(move || {
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    t.put(
                        Put::new("row")
                            .add("a", "q", vec![v])
                            .add("b", "q", vec![v])
                            .add("c", "q", vec![v]),
                    )
                    .unwrap();
                }
            })
        })
        .collect();
    for i in 0..2000 {
        let r = if i % 2 == 0 {
            t.get(Get::new("row")).unwrap()
        } else {
            scan_all(&t, Scan::new()).pop().unwrap_or_default()
        };
        let vals = values(&r);
        if !vals.is_empty() {
            assert_eq!(vals.len(), 3);
            assert!(vals.iter().all(|v| v == &vals[0]), "mixed row {vals:?}");
        }
        if i == 1000 {
            fx.flush("t");
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    writers.into_iter().for_each(|w| w.join().unwrap());
}

#[test]
fn case_83_visibility_is_by_commit_not_timestamp() {
    let fx = Fixture::new();
    let t = fx.create("t", vec![cf("f", 1)]);
    t.put(Put::new("r").add_at("f", "q", T0 * 3, "from the future"))
        .unwrap();
    assert_eq!(values(&t.get(Get::new("r")).unwrap()), ["from the future"]);
}

#[test]
fn case_28_time_range_ending_before_the_marker_still_hides_by_default() {
    let fx = Fixture::new();
    let t = fx.create("t", vec![cf("f", 3)]);
    t.put(Put::new("r").add_at("f", "q", 100, "v")).unwrap();
    t.delete(Delete::new("r").add_columns_at("f", "q", 200))
        .unwrap();
    let g = Get::new("r")
        .all_versions()
        .with_time_range(TimeRange::new(0, 150).unwrap());
    assert!(t.get(g).unwrap().is_empty());
    let s = Scan::new()
        .all_versions()
        .with_time_range(TimeRange::new(0, 150).unwrap());
    assert!(scan_all(&t, s).is_empty());
}

#[test]
fn case_36_min_versions_with_keep_deleted_cells() {
    // TestKeepDeletes#testWithMinVersions (min 3, max 1000, TTL 1 s, KEEP_DELETED_CELLS=TRUE),
    // first part: deleted, expired cells stay readable before the markers up to MIN_VERSIONS.
    let fx = Fixture::new();
    let fam = |n: &str| {
        cf(n, 1000)
            .with_min_versions(3)
            .with_ttl_seconds(1)
            .with_keep_deleted_cells(KeepDeletedCells::True)
    };
    let t = fx.create("t", vec![fam("c0"), fam("c1"), fam("c2")]);
    let ts = T0 - 2000;
    for (i, v) in ["T0", "T1", "T2", "T3"].iter().enumerate() {
        t.put(Put::new("r").add_at("c0", "c0", ts - 4 + i as i64, *v))
            .unwrap();
    }
    t.delete(Delete::at("r", ts - 1)).unwrap();
    t.delete(Delete::new("r").add_columns_at("c0", "c0", ts - 1))
        .unwrap();
    let g = || {
        Get::new("r")
            .all_versions()
            .with_time_range(TimeRange::new(0, ts - 2).unwrap())
    };
    assert_eq!(values(&t.get(g()).unwrap()), ["T1", "T0"]);
    assert!(t.get(Get::new("r")).unwrap().is_empty());
    fx.flush("t");
    assert_eq!(values(&t.get(g()).unwrap()), ["T1"]);
    assert_eq!(markers(&t), 4);
}

#[test]
fn case_45_schema_sanity_checks() {
    let fx = Fixture::new();
    let name = TableName::parse("bad").unwrap();
    let bad = [
        cf("f", 2).with_min_versions(3),
        cf("f", 1).with_ttl_seconds(0),
        cf("f", 1).with_block_size_bytes(512),
        ColumnFamilyDescriptor::new("f").with_max_versions(0),
    ];
    for f in bad {
        let e = fx
            .db
            .create_table(TableDescriptor::new(&name, [f.clone()]), &[])
            .unwrap_err();
        assert_eq!(
            e.exception_name(),
            "org.apache.hadoop.hbase.DoNotRetryIOException",
            "{f:?}"
        );
    }
    assert!(!fx.db.table_exists(&name));
}

#[test]
fn case_54_rows_over_the_max_row_size_fail_unless_batched() {
    let dir = tempfile::tempdir().unwrap();
    let options = basalt_node::Options {
        max_row_size_bytes: 10_000,
        ..basalt_node::Options::default()
    };
    let db = basalt_node::Database::open_with(dir.path(), options).unwrap();
    let name = TableName::parse("t").unwrap();
    db.create_table(TableDescriptor::new(&name, [cf("f", 1)]), &[])
        .unwrap();
    let t = db.table("t").unwrap();
    let p = (0..100).fold(Put::new("wide"), |p, i| {
        p.add("f", format!("q{i:03}"), vec![b'v'; 200])
    });
    t.put(p).unwrap();
    t.put(Put::new("small").add("f", "q", "v")).unwrap();
    let e = t.get(Get::new("wide")).unwrap_err();
    assert_eq!(
        e.exception_name(),
        "org.apache.hadoop.hbase.regionserver.RowTooBigException"
    );
    assert!(t.get(Get::new("small")).is_ok());
    let parts = t
        .scan(Scan::new().with_start_row("wide", true).with_batch(10))
        .unwrap()
        .collect_rows()
        .unwrap();
    assert_eq!(parts.iter().map(|r| r.cells.len()).sum::<usize>(), 100);
}

#[test]
fn case_55_82_a_scan_sees_what_was_committed_before_it_opened() {
    let fx = Fixture::new();
    let t = fx.create("t", vec![cf("f", 1)]);
    t.put(Put::new("a").add("f", "q", "1")).unwrap();
    let mut s = t.scan(Scan::new()).unwrap();
    assert_eq!(s.next_row().unwrap().unwrap().row(), b"a");
    assert!(s.next_row().unwrap().is_none());
}
/// Each thread increments its own counter while the others write other rows: a write is not
/// acknowledged before readers see it, so no increment reads a stale value (a write of another
/// row still in flight used to hold the read point below it).
#[test]
fn case_71_counters_of_many_rows_lose_nothing_while_other_rows_are_written() {
    let fx = Fixture::new();
    let t = fx.create("t", vec![cf("f", 3)]);
    let threads: Vec<_> = (0..8)
        .map(|n| {
            let t = t.clone();
            std::thread::spawn(move || {
                for i in 0..2000 {
                    t.increment_column_value(format!("ctr-{n}"), "f", "n", 1)
                        .unwrap();
                    t.put(Put::new(format!("w-{n}-{i}")).add("f", "v", "x"))
                        .unwrap();
                }
            })
        })
        .collect();
    for th in threads {
        th.join().unwrap();
    }
    for n in 0..8 {
        assert_eq!(
            t.increment_column_value(format!("ctr-{n}"), "f", "n", 0)
                .unwrap(),
            2000,
            "ctr-{n}"
        );
    }
}
