//! SEMANTICS.md §1, case by case. Each test names the case number and the HBase test it mirrors.

use basalt_model::filter::parse_filter;
use basalt_model::ops::{CheckAndMutate, CompareOp, Delete, Get, Increment, Put, Scan};
use basalt_model::{KeepDeletedCells, TimeRange};

use super::support::*;

#[test]
fn case_01_default_versions_is_one() {
    let fx = Fixture::new();
    let t = fx.create("t", vec![basalt_model::ColumnFamilyDescriptor::new("cf")]);
    t.put(Put::new("r").add("cf", "q", "v1")).unwrap();
    fx.clock.advance(1);
    t.put(Put::new("r").add("cf", "q", "v2")).unwrap();
    let r = t.get(Get::new("r").all_versions()).unwrap();
    assert_eq!(values(&r), ["v2"]);
}

#[test]
fn case_02_newest_timestamp_wins_not_last_written() {
    let fx = Fixture::new();
    let t = fx.create("t", vec![cf("f", 3)]);
    t.put(Put::new("r").add_at("f", "q", 20, "new")).unwrap();
    t.put(Put::new("r").add_at("f", "q", 10, "old")).unwrap();
    assert_eq!(values(&t.get(Get::new("r")).unwrap()), ["new"]);
}

#[test]
fn case_03_same_coordinates_overwrite_before_and_after_compaction() {
    // TestFromClientSide#testUpdates / #testUpdatesWithMajorCompaction
    for compact_between in [false, true] {
        let fx = Fixture::new();
        let t = fx.create("t", vec![cf("f", 10)]);
        for (ts, v) in [(1, "AAA"), (2, "BBB"), (3, "EEE")] {
            t.put(Put::new("r").add_at("f", "q", ts, v)).unwrap();
        }
        if compact_between {
            fx.flush("t");
            fx.major("t");
        }
        t.put(Put::new("r").add_at("f", "q", 1, "CCC")).unwrap();
        t.put(Put::new("r").add_at("f", "q", 2, "DDD")).unwrap();
        for _ in 0..2 {
            let r = t.get(Get::new("r").all_versions()).unwrap();
            assert_eq!(values(&r), ["EEE", "DDD", "CCC"]);
            fx.flush("t");
            fx.major("t");
        }
    }
}

#[test]
fn case_04_overwrite_across_memstore_and_file() {
    // TestFromClientSide#testDuplicateVersions
    let fx = Fixture::new();
    let t = fx.create("t", vec![cf("f", 10)]);
    for ts in [1, 2, 4, 5] {
        t.put(Put::new("r").add_at("f", "q", ts, format!("v{ts}")))
            .unwrap();
    }
    fx.flush("t");
    t.put(
        Put::new("r")
            .add_at("f", "q", 4, "v14")
            .add_at("f", "q", 3, "v3")
            .add_at("f", "q", 6, "v6")
            .add_at("f", "q", 7, "v7")
            .add_at("f", "q", 8, "v8"),
    )
    .unwrap();
    let r = t.get(Get::new("r").with_max_versions(7)).unwrap();
    assert_eq!(r.timestamps(b"f", b"q"), [8, 7, 6, 5, 4, 3, 2]);
    assert_eq!(r.column_cells(b"f", b"q").nth(4).unwrap().value(), b"v14");
}

#[test]
fn case_05_exact_timestamp_never_falls_back() {
    let fx = Fixture::new();
    let t = fx.create("t", vec![cf("f", 10)]);
    t.put(Put::new("r").add_at("f", "q", 12345, "v")).unwrap();
    for ts in [12344, 12346] {
        assert!(t
            .get(Get::new("r").with_timestamp(ts).unwrap())
            .unwrap()
            .is_empty());
    }
    assert_eq!(
        values(&t.get(Get::new("r").with_timestamp(12345).unwrap()).unwrap()),
        ["v"]
    );
}

#[test]
fn case_06_07_query_and_family_version_limits() {
    let fx = Fixture::new();
    let t = fx.create("t", vec![cf("f1", 1), cf("f3", 3), cf("f5", 5)]);
    let mut p = Put::new("r");
    for f in ["f1", "f3", "f5"] {
        for ts in 1..=6 {
            p = p.add_at(f, "q", ts, format!("{f}-{ts}"));
        }
    }
    t.put(p).unwrap();
    let r = t.get(Get::new("r").all_versions()).unwrap();
    assert_eq!(r.cells.len(), 9);
    assert_eq!(versions(&t, "r", "f5", "q"), [6, 5, 4, 3, 2]);
    let r = t
        .get(Get::new("r").add_family("f5").with_max_versions(2))
        .unwrap();
    assert_eq!(r.timestamps(b"f5", b"q"), [6, 5]);
    let rows = scan_all(&t, Scan::new().with_max_versions(2));
    assert_eq!(rows[0].cells.len(), 5);
}

#[test]
fn case_08_versions_beyond_max_reappear_after_delete_until_major_compaction() {
    // TestFromClientSide#testVersions
    let fx = Fixture::new();
    let t = fx.create("t", vec![cf("f", 10)]);
    for ts in 1..=8 {
        t.put(Put::new("r").add_at("f", "q", ts, "v")).unwrap();
    }
    fx.flush("t");
    for ts in [9, 11, 13, 15] {
        t.put(Put::new("r").add_at("f", "q", ts, "v")).unwrap();
    }
    assert_eq!(
        versions(&t, "r", "f", "q"),
        [15, 13, 11, 9, 8, 7, 6, 5, 4, 3]
    );
    t.delete(
        Delete::new("r")
            .add_column_at("f", "q", 11)
            .add_column_at("f", "q", 7),
    )
    .unwrap();
    assert_eq!(
        versions(&t, "r", "f", "q"),
        [15, 13, 9, 8, 6, 5, 4, 3, 2, 1]
    );
    fx.flush("t");
    fx.major("t");
    assert_eq!(
        versions(&t, "r", "f", "q"),
        [15, 13, 9, 8, 6, 5, 4, 3, 2, 1]
    );
    // After the major compaction, versions beyond max are gone for good.
    t.delete(Delete::new("r").add_column_at("f", "q", 15))
        .unwrap();
    fx.flush("t");
    fx.major("t");
    t.put(Put::new("r").add_at("f", "q", 0, "v")).unwrap();
    assert_eq!(versions(&t, "r", "f", "q"), [13, 9, 8, 6, 5, 4, 3, 2, 1, 0]);
}

#[test]
fn case_09_version_limit_counts_only_cells_in_range_and_flush_drops_extra() {
    let fx = Fixture::new();
    let t = fx.create("t", vec![cf("f", 3)]);
    for ts in 1..=4 {
        t.put(Put::new("r").add_at("f", "q", ts, format!("T{ts}")))
            .unwrap();
    }
    let get = || {
        Get::new("r")
            .all_versions()
            .with_time_range(TimeRange::new(0, 3).unwrap())
    };
    assert_eq!(values(&t.get(get()).unwrap()), ["T2", "T1"]);
    fx.flush("t");
    assert_eq!(values(&t.get(get()).unwrap()), ["T2"]);
}

#[test]
fn case_10_11_column_selection_and_empty_qualifier() {
    let fx = Fixture::new();
    let t = fx.create("t", vec![cf("f", 1), cf("g", 1)]);
    t.put(
        Put::new("r")
            .add("f", "", "empty")
            .add("f", "q", "x")
            .add("g", "q", "y"),
    )
    .unwrap();
    assert_eq!(t.get(Get::new("r")).unwrap().cells.len(), 3);
    assert_eq!(t.get(Get::new("r").add_family("f")).unwrap().cells.len(), 2);
    assert_eq!(
        values(&t.get(Get::new("r").add_column("f", "")).unwrap()),
        ["empty"]
    );
    assert!(t.get(Get::new("missing")).unwrap().is_empty());
    assert!(t
        .get(Get::new("r").add_column("f", "nope"))
        .unwrap()
        .is_empty());
    t.put(Put::new("n").add("f", "q", "")).unwrap();
    assert_eq!(values(&t.get(Get::new("n")).unwrap()), [""]);
}

fn delete_fixture() -> (Fixture, basalt_node::Table) {
    let fx = Fixture::new();
    let t = fx.create("t", vec![cf("f", 3), cf("g", 3)]);
    (fx, t)
}

#[test]
fn case_12_family_delete_at_timestamp() {
    let (_fx, t) = delete_fixture();
    t.put(
        Put::new("r")
            .add_at("f", "q", 1000, "a")
            .add_at("f", "q", 2000, "b"),
    )
    .unwrap();
    t.delete(Delete::new("r").add_family_at("f", 1000)).unwrap();
    assert_eq!(versions(&t, "r", "f", "q"), [2000]);
}

#[test]
fn case_13_14_delete_latest_version_and_repeats() {
    let (fx, t) = delete_fixture();
    for ts in [2000, 3000, 4000, 5000] {
        t.put(Put::new("r").add_at("f", "q", ts, "v")).unwrap();
    }
    t.delete(Delete::new("r").add_column("f", "q")).unwrap();
    assert_eq!(versions(&t, "r", "f", "q"), [4000, 3000, 2000]);
    // ROWS[2]: f:q@{1000,2000}, g:q@{3000,4000}; addColumn(f,q) twice + addColumn(g,q)
    t.put(
        Put::new("s")
            .add_at("f", "q", 1000, "a")
            .add_at("f", "q", 2000, "b"),
    )
    .unwrap();
    t.put(
        Put::new("s")
            .add_at("g", "q", 3000, "c")
            .add_at("g", "q", 4000, "d"),
    )
    .unwrap();
    fx.flush("t");
    t.delete(
        Delete::new("s")
            .add_column("f", "q")
            .add_column("f", "q")
            .add_column("g", "q"),
    )
    .unwrap();
    let r = t.get(Get::new("s").all_versions()).unwrap();
    assert_eq!(render(&[r]), ["s/g:q@3000=c"]);
}

#[test]
fn case_15_family_and_column_deletes_without_timestamp() {
    let (fx, t) = delete_fixture();
    for row in ["a", "b"] {
        t.put(
            Put::new(row)
                .add_at("f", "q", 1, "1")
                .add_at("f", "q", 2, "2")
                .add_at("g", "q", 1, "3")
                .add_at("g", "q", 2, "4"),
        )
        .unwrap();
    }
    fx.clock.advance(10);
    t.delete(Delete::new("a").add_family("g")).unwrap();
    t.delete(Delete::new("b").add_columns("f", "q")).unwrap();
    let a = t.get(Get::new("a").all_versions()).unwrap();
    assert!(a.cells.iter().all(|c| &c.family[..] == b"f") && a.cells.len() == 2);
    let b = t.get(Get::new("b").all_versions()).unwrap();
    assert!(b.cells.iter().all(|c| &c.family[..] == b"g") && b.cells.len() == 2);
}

#[test]
fn case_16_17_family_version_delete_and_mixed_deletes() {
    let fx = Fixture::new();
    let t = fx.create("t", vec![cf("f", 5)]);
    let mut p = Put::new("r");
    for q in 0..5 {
        for ts in [1000, 2000, 3000, 4000, 5000] {
            p = p.add_at("f", format!("q{q}"), ts, "v");
        }
    }
    t.put(p).unwrap();
    fx.flush("t");
    t.delete(
        Delete::new("r")
            .add_family_at("f", 2000)
            .add_family_version("f", 4000)
            .add_columns_at("f", "q0", 3000)
            .add_columns_at("f", "q2", 5000)
            .add_column_at("f", "q4", 5000),
    )
    .unwrap();
    assert_eq!(versions(&t, "r", "f", "q0"), [5000]);
    assert_eq!(versions(&t, "r", "f", "q1"), [5000, 3000]);
    assert!(versions(&t, "r", "f", "q2").is_empty());
    assert_eq!(versions(&t, "r", "f", "q3"), [5000, 3000]);
    assert_eq!(versions(&t, "r", "f", "q4"), [3000]);
}

#[test]
fn case_18_19_deletes_elsewhere_have_no_effect_and_new_puts_after_row_delete_show() {
    let (_fx, t) = delete_fixture();
    t.put(Put::new("r").add_at("f", "q", 5, "v")).unwrap();
    t.delete(Delete::new("r").add_columns("g", "q")).unwrap();
    t.delete(Delete::new("nobody")).unwrap();
    assert_eq!(versions(&t, "r", "f", "q"), [5]);
    t.delete(Delete::at("x", 10)).unwrap();
    t.put(Put::new("x").add_at("g", "q", 11, "after")).unwrap();
    t.put(Put::new("y").add_at("f", "q", 1, "next")).unwrap();
    let rows = scan_all(&t, Scan::new().with_start_row("x", true));
    assert_eq!(render(&rows), ["x/g:q@11=after", "y/f:q@1=next"]);
}

#[test]
fn case_20_delete_beats_put_at_same_timestamp_in_any_order() {
    let (fx, t) = delete_fixture();
    t.delete(Delete::new("r").add_column_at("f", "q", 7))
        .unwrap();
    t.put(Put::new("r").add_at("f", "q", 7, "later put"))
        .unwrap();
    assert!(t.get(Get::new("r")).unwrap().is_empty());
    fx.flush("t");
    assert!(t.get(Get::new("r")).unwrap().is_empty());
}

#[test]
fn case_21_23_deletes_mask_later_puts_until_major_compaction() {
    let (fx, t) = delete_fixture();
    t.put(Put::new("r").add_at("f", "q", 1000, "v")).unwrap();
    fx.flush("t");
    t.delete(Delete::new("r").add_family_at("f", 1000)).unwrap();
    assert!(t.get(Get::new("r")).unwrap().is_empty());
    fx.flush("t");
    t.put(Put::new("r").add_at("f", "q", 1000, "again"))
        .unwrap();
    assert!(
        t.get(Get::new("r")).unwrap().is_empty(),
        "a later put at ts <= the marker stays masked"
    );
    fx.minor("t");
    assert!(t.get(Get::new("r")).unwrap().is_empty());
    fx.flush("t");
    fx.major("t");
    t.put(Put::new("r").add_at("f", "q", 1000, "third"))
        .unwrap();
    assert_eq!(values(&t.get(Get::new("r")).unwrap()), ["third"]);
}

#[test]
fn case_22_time_travel_does_not_see_through_deletes_by_default() {
    let (_fx, t) = delete_fixture();
    t.put(Put::new("r").add_at("f", "q", 100, "v")).unwrap();
    t.delete(Delete::new("r").add_column_at("f", "q", 100))
        .unwrap();
    let g = Get::new("r").with_time_range(TimeRange::new(0, 101).unwrap());
    assert!(t.get(g).unwrap().is_empty());
}

#[test]
fn case_24_future_deletes_are_purged_by_major_compaction() {
    let (fx, t) = delete_fixture();
    let future = T0 * 2;
    t.put(Put::new("r").add_at("f", "q", future, "v")).unwrap();
    t.delete(Delete::new("r").add_column_at("f", "q", future))
        .unwrap();
    assert!(t.get(Get::new("r")).unwrap().is_empty());
    fx.flush("t");
    fx.major("t");
    t.put(Put::new("r").add_at("f", "q", future, "v")).unwrap();
    assert_eq!(values(&t.get(Get::new("r")).unwrap()), ["v"]);
}

#[test]
fn case_25_26_markers_survive_flush_and_minor_but_not_major() {
    let (fx, t) = delete_fixture();
    t.put(Put::new("r").add_at("f", "q", 5, "v")).unwrap();
    t.delete(Delete::new("r").add_column_at("f", "q", 5))
        .unwrap();
    let raw = || scan_all(&t, Scan::new().raw().all_versions());
    assert_eq!(render(&raw()), ["r/f:q@5/Delete", "r/f:q@5=v"]);
    fx.flush("t");
    assert_eq!(render(&raw()), ["r/f:q@5/Delete"]);
    t.put(Put::new("z").add("f", "q", "v")).unwrap();
    fx.flush("t");
    fx.minor("t");
    assert_eq!(render(&raw())[0], "r/f:q@5/Delete");
    fx.major("t");
    assert!(render(&raw()).iter().all(|c| !c.starts_with("r/")));
}

fn kdc_table(fx: &Fixture, kdc: KeepDeletedCells, versions: u32) -> basalt_node::Table {
    fx.create(
        "k",
        vec![
            cf("f", versions).with_keep_deleted_cells(kdc),
            cf("g", versions).with_keep_deleted_cells(kdc),
        ],
    )
}

#[test]
fn case_29_keep_deleted_cells_allows_point_in_time_reads() {
    // TestFromClientSide#testKeepDeletedCells
    let fx = Fixture::new();
    let t = kdc_table(&fx, KeepDeletedCells::True, 3);
    let ts = 1000;
    t.put(Put::new("r").add_at("f", "c0", ts, "T1")).unwrap();
    t.put(Put::new("r").add_at("f", "c0", ts + 2, "T2"))
        .unwrap();
    t.put(Put::new("r").add_at("f", "c0", ts + 4, "T3"))
        .unwrap();
    t.delete(Delete::at("r", ts + 3)).unwrap();
    t.delete(Delete::new("r").add_columns_at("f", "c0", ts + 3))
        .unwrap();
    let tr = TimeRange::new(0, ts + 3).unwrap();
    assert_eq!(
        values(
            &t.get(Get::new("r").add_family("f").with_time_range(tr))
                .unwrap()
        ),
        ["T2"]
    );
    let rows = scan_all(
        &t,
        Scan::new()
            .add_family("f")
            .with_time_range(tr)
            .all_versions(),
    );
    assert_eq!(values(&rows[0]), ["T2", "T1"]);
    let raw = scan_all(&t, Scan::new().add_family("f").raw().all_versions());
    assert_eq!(
        render(&raw),
        [
            "r/f:@1003/DeleteFamily",
            "r/f:c0@1004=T3",
            "r/f:c0@1003/DeleteColumn",
            "r/f:c0@1002=T2",
            "r/f:c0@1000=T1"
        ]
    );
}

#[test]
fn case_30_31_marker_counts_only_inside_the_range_with_keep_deleted_cells() {
    let fx = Fixture::new();
    let t = kdc_table(&fx, KeepDeletedCells::True, 3);
    let ts = 1000;
    t.put(
        Put::new("r")
            .add_at("f", "q", ts, "T1")
            .add_at("f", "q", ts + 1, "T2")
            .add_at("g", "q", ts, "G1"),
    )
    .unwrap();
    t.delete(Delete::new("r").add_family_at("f", ts + 2))
        .unwrap();
    let get = |max| {
        Get::new("r")
            .all_versions()
            .with_time_range(TimeRange::new(0, max).unwrap())
    };
    assert_eq!(values(&t.get(get(ts + 2)).unwrap()), ["T2", "T1", "G1"]);
    assert_eq!(values(&t.get(get(ts + 3)).unwrap()), ["G1"]);
    // an older family marker has no effect on newer cells
    t.delete(Delete::new("r").add_family_at("g", ts - 10))
        .unwrap();
    assert_eq!(values(&t.get(get(ts + 3)).unwrap()), ["G1"]);
}

#[test]
fn case_37_raw_scan_with_columns_is_refused() {
    let fx = Fixture::new();
    let t = fx.create("t", vec![cf("f", 1)]);
    let e = t.scan(Scan::new().raw().add_column("f", "q")).unwrap_err();
    assert_eq!(
        e.exception_name(),
        "org.apache.hadoop.hbase.DoNotRetryIOException"
    );
}

#[test]
fn case_38_raw_scan_honours_time_ranges() {
    // TestKeepDeletes#testRawScan
    let fx = Fixture::new();
    let t = kdc_table(&fx, KeepDeletedCells::True, 3);
    let ts = 1000;
    t.put(Put::new("r").add_at("f", "c", ts, "T1")).unwrap();
    t.put(Put::new("r").add_at("f", "c", ts + 2, "T2")).unwrap();
    t.put(Put::new("r").add_at("f", "c", ts + 4, "T3")).unwrap();
    t.delete(Delete::at("r", ts + 1)).unwrap();
    t.delete(Delete::new("r").add_column_at("f", "c", ts + 2))
        .unwrap();
    t.delete(Delete::new("r").add_columns_at("f", "c", ts + 3))
        .unwrap();
    let raw = |min, max| {
        render(&scan_all(
            &t,
            Scan::new()
                .raw()
                .all_versions()
                .with_time_range(TimeRange::new(min, max).unwrap()),
        ))
    };
    assert_eq!(
        raw(0, i64::MAX),
        [
            "r/f:@1001/DeleteFamily",
            "r/f:c@1004=T3",
            "r/f:c@1003/DeleteColumn",
            "r/f:c@1002/Delete",
            "r/f:c@1002=T2",
            "r/f:c@1000=T1",
            "r/g:@1001/DeleteFamily"
        ]
    );
    assert!(raw(0, 1).is_empty());
    assert_eq!(
        raw(0, ts + 2),
        [
            "r/f:@1001/DeleteFamily",
            "r/f:c@1000=T1",
            "r/g:@1001/DeleteFamily"
        ]
    );
    assert_eq!(
        raw(ts + 3, ts + 5),
        ["r/f:c@1004=T3", "r/f:c@1003/DeleteColumn"]
    );
}

#[test]
fn case_39_family_ttl_in_seconds() {
    let fx = Fixture::new();
    let t = fx.create("t", vec![cf("f", 1).with_ttl_seconds(10)]);
    t.put(Put::new("r").add("f", "q", "v")).unwrap();
    fx.clock.advance(9_000);
    assert!(!t.get(Get::new("r")).unwrap().is_empty());
    fx.clock.advance(2_000);
    assert!(t.get(Get::new("r")).unwrap().is_empty());
    fx.flush("t");
    fx.major("t");
    assert!(scan_all(&t, Scan::new().raw()).is_empty());
}

#[test]
fn case_40_cell_ttl_shortens_life_and_reveals_older_version() {
    let fx = Fixture::new();
    let t = fx.create("t", vec![cf("f", 3).with_ttl_seconds(10)]);
    t.put(Put::new("r").add("f", "c", 1i64.to_be_bytes()))
        .unwrap();
    fx.clock.advance(1);
    t.increment(Increment::new("r").add("f", "c", 1).with_ttl_ms(5000))
        .unwrap();
    let read = || {
        t.get(Get::new("r"))
            .unwrap()
            .value(b"f", b"c")
            .map(|v| i64::from_be_bytes(v[..].try_into().unwrap()))
    };
    assert_eq!(read(), Some(2));
    fx.clock.advance(5_001);
    assert_eq!(read(), Some(1));
    fx.clock.advance(5_000);
    assert_eq!(read(), None);
}

#[test]
fn case_41_min_versions_keep_expired_cells() {
    // TestMinVersions#testBaseCase (min=2, TTL=1s, 4 versions written 2s ago)
    let fx = Fixture::new();
    let t = fx.create(
        "t",
        vec![cf("f", 1000).with_min_versions(2).with_ttl_seconds(1)],
    );
    let ts = T0 - 2000;
    for (i, v) in ["T1", "T2", "T3", "T4"].iter().enumerate() {
        t.put(Put::new("r").add_at("f", "c", ts - 3 + i as i64, *v))
            .unwrap();
    }
    assert_eq!(values(&t.get(Get::new("r")).unwrap()), ["T4"]);
    assert_eq!(
        values(&t.get(Get::new("r").all_versions()).unwrap()),
        ["T4", "T3"]
    );
    let tr = |max| {
        Get::new("r")
            .all_versions()
            .with_time_range(TimeRange::new(0, max).unwrap())
    };
    assert_eq!(values(&t.get(tr(ts - 2)).unwrap()), ["T1"]);
    fx.flush("t");
    assert!(t.get(tr(ts - 2)).unwrap().is_empty());
    fx.major("t");
    assert_eq!(
        values(
            &t.get(Get::new("r").with_time_range(TimeRange::new(0, ts + 1).unwrap()))
                .unwrap()
        ),
        ["T4"]
    );
    assert_eq!(
        values(
            &t.get(Get::new("r").with_time_range(TimeRange::new(0, ts).unwrap()))
                .unwrap()
        ),
        ["T3"]
    );
    assert!(t
        .get(Get::new("r").with_time_range(TimeRange::new(0, ts - 1).unwrap()))
        .unwrap()
        .is_empty());
}

#[test]
fn case_46_time_ranges_are_half_open() {
    let fx = Fixture::new();
    let t = fx.create("t", vec![cf("f", 10)]);
    for ts in [10, 20, 30, 40] {
        t.put(Put::new("r").add_at("f", "q", ts, "v")).unwrap();
    }
    let g = Get::new("r")
        .all_versions()
        .with_time_range(TimeRange::new(20, 31).unwrap());
    assert_eq!(t.get(g).unwrap().timestamps(b"f", b"q"), [30, 20]);
    let g = Get::new("r")
        .all_versions()
        .with_time_range(TimeRange::new(11, i64::MAX).unwrap());
    assert_eq!(t.get(g).unwrap().timestamps(b"f", b"q"), [40, 30, 20]);
}

fn rows_table(fx: &Fixture) -> basalt_node::Table {
    let t = fx.create("s", vec![cf("f", 1)]);
    for r in ["a", "b", "ba", "bb", "c", "d"] {
        t.put(Put::new(r).add("f", "q", r)).unwrap();
    }
    t
}

fn row_keys(rows: &[basalt_model::RowResult]) -> Vec<String> {
    rows.iter()
        .map(|r| String::from_utf8_lossy(r.row()).into_owned())
        .collect()
}

#[test]
fn case_50_51_52_53_scan_bounds_prefix_reverse_limit_batch() {
    let fx = Fixture::new();
    let t = rows_table(&fx);
    assert_eq!(
        row_keys(&scan_all(
            &t,
            Scan::new()
                .with_start_row("b", true)
                .with_stop_row("c", false)
        )),
        ["b", "ba", "bb"]
    );
    assert_eq!(
        row_keys(&scan_all(
            &t,
            Scan::new()
                .with_start_row("b", false)
                .with_stop_row("c", true)
        )),
        ["ba", "bb", "c"]
    );
    assert_eq!(
        row_keys(&scan_all(
            &t,
            Scan::new().with_start_row("a", true).with_row_prefix("b")
        )),
        ["b", "ba", "bb"]
    );
    assert_eq!(
        row_keys(&scan_all(&t, Scan::new().reversed())),
        ["d", "c", "bb", "ba", "b", "a"]
    );
    assert_eq!(
        row_keys(&scan_all(
            &t,
            Scan::new()
                .reversed()
                .with_start_row("c", true)
                .with_stop_row("b", false)
        )),
        ["c", "bb", "ba"]
    );
    fx.flush("s");
    assert_eq!(
        row_keys(&scan_all(
            &t,
            Scan::new().reversed().with_start_row("bb", false)
        )),
        ["ba", "b", "a"]
    );
    assert_eq!(
        row_keys(&scan_all(&t, Scan::new().with_limit(2))),
        ["a", "b"]
    );
    t.put(
        Put::new("w")
            .add("f", "1", "x")
            .add("f", "2", "x")
            .add("f", "3", "x"),
    )
    .unwrap();
    let parts = scan_all(&t, Scan::new().with_start_row("w", true).with_batch(2));
    assert_eq!(
        parts.iter().map(|r| r.cells.len()).collect::<Vec<_>>(),
        [2, 1]
    );
    assert!(parts[0].partial && !parts[1].partial);
}

#[test]
fn case_57_58_60_filters_in_the_read_path() {
    let fx = Fixture::new();
    let t = rows_table(&fx);
    let f = |s: &str| Scan::new().with_filter(parse_filter(s).unwrap());
    assert_eq!(
        row_keys(&scan_all(&t, f("ValueFilter(>, 'binary:bb')"))),
        ["c", "d"]
    );
    assert_eq!(
        row_keys(&scan_all(&t, f("PrefixFilter('b') AND PageFilter(2)"))),
        ["b", "ba"]
    );
    assert_eq!(
        row_keys(&scan_all(&t, f("WHILE RowFilter(<, 'binary:c')"))),
        ["a", "b", "ba", "bb"]
    );
    assert_eq!(
        row_keys(&scan_all(
            &t,
            f("SingleColumnValueFilter('f', 'q', =, 'binary:ba')")
        )),
        ["ba"]
    );
    t.put(Put::new("e").add("f", "other", "x")).unwrap();
    // a row without the tested column passes unless filterIfMissing
    assert!(row_keys(&scan_all(
        &t,
        f("SingleColumnValueFilter('f', 'q', =, 'binary:ba')")
    ))
    .contains(&"e".to_owned()));
    assert!(!row_keys(&scan_all(
        &t,
        f("SingleColumnValueFilter('f', 'q', =, 'binary:ba', true, true)")
    ))
    .contains(&"e".to_owned()));
    let keys = scan_all(&t, f("KeyOnlyFilter()"));
    assert!(keys
        .iter()
        .all(|r| r.cells.iter().all(|c| c.value().is_empty())));
    assert_eq!(
        row_keys(&scan_all(
            &t,
            Scan::new()
                .reversed()
                .with_filter(parse_filter("PrefixFilter('b')").unwrap())
        )),
        ["bb", "ba", "b"]
    );
}

#[test]
fn case_63_check_and_mutate_operand_order() {
    let fx = Fixture::new();
    let t = fx.create("t", vec![cf("f", 1)]);
    t.put(Put::new("r").add("f", "q", "bbbb")).unwrap();
    for (op, expect) in [
        (CompareOp::Less, true),
        (CompareOp::LessOrEqual, true),
        (CompareOp::NotEqual, true),
        (CompareOp::Greater, false),
        (CompareOp::Equal, false),
        (CompareOp::GreaterOrEqual, false),
    ] {
        let cam = CheckAndMutate::if_matches("r", "f", "q", op, "aaaa")
            .then_put(Put::new("r").add("f", "hit", "1"));
        assert_eq!(t.check_and_mutate(cam).unwrap(), expect, "{op:?}");
    }
    let cam =
        CheckAndMutate::if_not_exists("r", "f", "new").then_put(Put::new("r").add("f", "new", "1"));
    assert!(t.check_and_mutate(cam.clone()).unwrap());
    assert!(!t.check_and_mutate(cam).unwrap());
}

#[test]
fn case_64_65_66_67_increments() {
    let fx = Fixture::new();
    let t = fx.create("t", vec![cf("f", 1)]);
    assert_eq!(t.increment_column_value("r", "f", "c", 5).unwrap(), 5);
    assert_eq!(t.increment_column_value("r", "f", "c", -7).unwrap(), -2);
    assert_eq!(t.increment_column_value("r", "f", "zero", 0).unwrap(), 0);
    let r = t
        .increment(
            Increment::new("r")
                .add("f", "B", 1)
                .add("f", "A", 1)
                .add("f", "C", 1),
        )
        .unwrap();
    let quals: Vec<_> = r
        .cells
        .iter()
        .map(basalt_model::Cell::qualifier_bytes)
        .collect();
    assert_eq!(quals, ["A", "B", "C"]);
    assert_eq!(
        t.increment(Increment::new("s").add("f", "c", 1).add("f", "c", 1))
            .unwrap()
            .value(b"f", b"c")
            .unwrap()[..],
        1i64.to_be_bytes()
    );
    t.put(Put::new("bad").add("f", "c", 1i32.to_be_bytes()))
        .unwrap();
    let e = t.increment_column_value("bad", "f", "c", 1).unwrap_err();
    assert_eq!(
        e.to_string(),
        "Attempted to increment field that isn't 64 bits wide"
    );
    assert_eq!(
        e.exception_name(),
        "org.apache.hadoop.hbase.DoNotRetryIOException"
    );
    t.increment_column_value("d", "f", "c", 5).unwrap();
    fx.flush("t");
    fx.clock.advance(1);
    t.delete(Delete::new("d")).unwrap();
    fx.clock.advance(1);
    assert_eq!(t.increment_column_value("d", "f", "c", 5).unwrap(), 5);
}
