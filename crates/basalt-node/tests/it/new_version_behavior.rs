//! NEW_VERSION_BEHAVIOR through the whole write and read path: a delete masks what exists
//! when it runs and never a later write, whatever that write's timestamp; in memory, after a
//! flush, after a major compaction, and after the region reopens, splits and merges (each of
//! which must keep later writes numbered above the markers it inherits). Every step runs on a
//! family with the attribute (`n`) and one without (`d`), which answers as HBase's default.

use basalt_model::ops::{Delete, Get, Put, Scan};
use basalt_model::TableName;
use basalt_node::Table;

use super::support::{cf, render, scan_all, Fixture};

fn fixture() -> (Fixture, Table) {
    let fx = Fixture::new();
    let t = fx.create(
        "t",
        vec![cf("n", 5).with_new_version_behavior(true), cf("d", 5)],
    );
    (fx, t)
}

/// The same mutation on both families.
fn put(t: &Table, row: &str, ts: i64, v: &str) {
    let p = Put::new(row.to_owned())
        .add_at("n", "q", ts, v)
        .add_at("d", "q", ts, v);
    t.put(p).unwrap();
}

/// Every version of `row`, both families, as `row/f:q@ts=value`.
fn read(t: &Table, row: &str) -> Vec<String> {
    render(&[t.get(Get::new(row.to_owned()).all_versions()).unwrap()])
}

/// Every physical cell, markers included.
fn raw(t: &Table) -> Vec<String> {
    render(&scan_all(t, Scan::new().raw().all_versions()))
}

#[test]
fn a_put_after_a_delete_shows_at_an_equal_or_older_timestamp_across_flush_and_major_compaction() {
    let (fx, t) = fixture();
    put(&t, "r", 100, "before");
    t.delete(
        Delete::new("r")
            .add_columns_at("n", "q", 100)
            .add_columns_at("d", "q", 100),
    )
    .unwrap();
    put(&t, "r", 100, "same ts");
    put(&t, "r", 50, "older ts");
    let want = ["r/n:q@100=same ts", "r/n:q@50=older ts"];
    assert_eq!(read(&t, "r"), want, "in memory");
    fx.flush("t");
    assert_eq!(read(&t, "r"), want, "after a flush");
    // The flush dropped the put the marker masks and kept the marker; the default family
    // keeps only the marker.
    assert_eq!(
        raw(&t),
        [
            "r/d:q@100/DeleteColumn",
            "r/n:q@100/DeleteColumn",
            "r/n:q@100=same ts",
            "r/n:q@50=older ts",
        ]
    );
    fx.major("t");
    assert_eq!(read(&t, "r"), want, "after a major compaction");
    assert_eq!(raw(&t), want, "markers gone, later puts kept");
}

#[test]
fn every_marker_kind_spares_later_writes() {
    let (fx, t) = fixture();
    for row in ["version", "family", "family version"] {
        put(&t, row, 7, "before");
    }
    let delete = |row: &str, d: fn(Delete, &'static str) -> Delete| {
        t.delete(d(d(Delete::new(row.to_owned()), "n"), "d"))
            .unwrap();
    };
    delete("version", |d, f| d.add_column_at(f, "q", 7));
    delete("family", |d, f| d.add_family_at(f, 7));
    delete("family version", |d, f| d.add_family_version(f, 7));
    fx.flush("t");
    for row in ["version", "family", "family version"] {
        assert!(read(&t, row).is_empty(), "{row}: the earlier put is masked");
        put(&t, row, 7, "after");
        assert_eq!(read(&t, row), [format!("{row}/n:q@7=after")], "{row}");
    }
    fx.flush("t");
    fx.major("t");
    for row in ["version", "family", "family version"] {
        assert_eq!(read(&t, row), [format!("{row}/n:q@7=after")], "{row}");
    }
}

#[test]
fn deleting_the_latest_version_masks_only_it_and_not_a_rewrite_of_it() {
    let (_fx, t) = fixture();
    put(&t, "r", 10, "a");
    put(&t, "r", 20, "b");
    // No timestamp: the marker goes at the newest version's time (20).
    t.delete(Delete::new("r").add_column("n", "q").add_column("d", "q"))
        .unwrap();
    assert_eq!(read(&t, "r"), ["r/d:q@10=a", "r/n:q@10=a"]);
    put(&t, "r", 20, "b again");
    assert_eq!(
        read(&t, "r"),
        ["r/d:q@10=a", "r/n:q@20=b again", "r/n:q@10=a"]
    );
}

#[test]
fn writes_after_a_reopen_split_or_merge_are_newer_than_the_markers_they_inherit() {
    let (fx, t) = fixture();
    let name = TableName::parse("t").unwrap();
    let put_and_delete = |t: &Table, row: &'static str| {
        put(t, row, 5, "before");
        t.delete(Delete::new(row).add_family_at("n", 9).add_family_at("d", 9))
            .unwrap();
    };
    put_and_delete(&t, "a");
    put_and_delete(&t, "m");
    drop(t);
    // A reopen numbers writes from the stored sequence ids on.
    let fx = fx.reopen();
    let t = fx.db.table("t").unwrap();
    put(&t, "a", 5, "after reopen");
    assert_eq!(read(&t, "a"), ["a/n:q@5=after reopen"]);
    // Daughters read the parent's files, markers included.
    fx.db.split_table(&name, Some(b"m")).unwrap();
    assert_eq!(fx.db.regions(&name).unwrap().len(), 2);
    put(&t, "m", 5, "after split");
    assert_eq!(read(&t, "m"), ["m/n:q@5=after split"]);
    // A merged region reads both daughters' files. Their references to the parent must be
    // compacted away first (dropping those markers), so this marker comes after.
    fx.major("t");
    put_and_delete(&t, "z");
    fx.flush("t");
    let enc: Vec<String> = fx
        .db
        .regions(&name)
        .unwrap()
        .iter()
        .map(|r| r.encoded_name(&name))
        .collect();
    fx.db
        .merge_regions(&[enc[0].as_bytes(), enc[1].as_bytes()], false)
        .unwrap();
    assert_eq!(fx.db.regions(&name).unwrap().len(), 1);
    put(&t, "z", 5, "after merge");
    assert_eq!(read(&t, "z"), ["z/n:q@5=after merge"]);
    assert_eq!(read(&t, "a"), ["a/n:q@5=after reopen"]);
    // Without the attribute the put written after the split was masked only until the major
    // compaction dropped the marker (it was still in memory, so the compaction kept it).
    assert_eq!(
        read(&t, "m"),
        ["m/d:q@5=after split", "m/n:q@5=after split"]
    );
}
