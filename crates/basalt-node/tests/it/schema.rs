//! Tables over time: online alter (SEMANTICS.md §L), truncate, automatic flushes, WAL
//! retirement and durability levels.

use basalt_model::ops::{Get, Put, Scan};
use basalt_model::{Compression, Durability, TableDescriptor, TableName};
use basalt_node::{Database, Options};

use super::support::*;

#[test]
fn alter_changes_reads_at_once_and_files_at_their_next_rewrite() {
    let fx = Fixture::new();
    let name = TableName::parse("t").unwrap();
    let t = fx.create("t", vec![cf("f", 3)]);
    for ts in 1..=3 {
        t.put(Put::new("r").add_at("f", "q", ts, format!("v{ts}")))
            .unwrap();
    }
    fx.flush("t");
    // VERSIONS takes effect on reads immediately...
    fx.db
        .put_family(&name, cf("f", 1).with_compression(Compression::Zstd))
        .unwrap();
    assert_eq!(versions(&t, "r", "f", "q"), [3]);
    // ...and physically at the next major compaction; raising it again shows what survived.
    fx.db.put_family(&name, cf("f", 3)).unwrap();
    assert_eq!(versions(&t, "r", "f", "q"), [3, 2, 1]);
    fx.db.put_family(&name, cf("f", 1)).unwrap();
    fx.major("t");
    fx.db.put_family(&name, cf("f", 3)).unwrap();
    assert_eq!(versions(&t, "r", "f", "q"), [3]);
    // adding a family online, writing to it, deleting it: its data is gone at once
    fx.db.put_family(&name, cf("g", 1)).unwrap();
    t.put(Put::new("r").add("g", "q", "x")).unwrap();
    fx.flush("t");
    let gdir = fx.dir.path().join("data/default/t");
    fx.db.delete_family(&name, b"g").unwrap();
    assert!(t.get(Get::new("r").add_family("g")).is_err());
    assert_eq!(t.get(Get::new("r")).unwrap().cells.len(), 1);
    let leftovers: Vec<_> = walk_names(&gdir)
        .into_iter()
        .filter(|n| n.contains("/67/"))
        .collect();
    assert!(
        leftovers.is_empty(),
        "family g's files remain: {leftovers:?}"
    );
}

fn walk_names(dir: &std::path::Path) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        out.push(p.display().to_string() + if p.is_dir() { "/" } else { "" });
        if p.is_dir() {
            out.extend(walk_names(&p));
        }
    }
    out
}

#[test]
fn truncate_empties_the_table_and_keeps_schema_and_optionally_splits() {
    let fx = Fixture::new();
    let name = TableName::parse("t").unwrap();
    fx.db
        .create_table(TableDescriptor::new(&name, [cf("f", 4)]), &["m".into()])
        .unwrap();
    {
        let t = fx.db.table("t").unwrap();
        t.put(Put::new("a").add("f", "q", "v")).unwrap();
        t.put(Put::new("z").add("f", "q", "v")).unwrap();
    }
    fx.db.disable_table(&name).unwrap();
    fx.db.truncate_table(&name, true).unwrap();
    assert!(fx.db.is_enabled(&name).unwrap());
    assert_eq!(fx.db.regions(&name).unwrap().len(), 2);
    assert_eq!(
        fx.db.describe(&name).unwrap().families[&b"f"[..]].max_versions,
        4
    );
    let t = fx.db.table("t").unwrap();
    assert!(scan_all(&t, Scan::new()).is_empty());
    drop(t);
    fx.db.disable_table(&name).unwrap();
    fx.db.truncate_table(&name, false).unwrap();
    assert_eq!(fx.db.regions(&name).unwrap().len(), 1);
    let fx = fx.reopen();
    assert!(scan_all(&fx.db.table("t").unwrap(), Scan::new()).is_empty());
}

#[test]
fn memstore_flushes_by_itself_at_the_flush_size_and_old_wal_segments_go() {
    let dir = tempfile::tempdir().unwrap();
    let options = Options {
        wal_roll_size_bytes: 256 * 1024,
        ..Options::default()
    };
    let db = Database::open_with(dir.path(), options).unwrap();
    let name = TableName::parse("t").unwrap();
    let mut desc = TableDescriptor::new(&name, [cf("f", 1)]);
    desc.memstore_flushsize_bytes = 1024 * 1024;
    db.create_table(desc, &[]).unwrap();
    let t = db.table("t").unwrap();
    for i in 0..3000 {
        t.put(
            Put::new(format!("row{i:06}"))
                .add("f", "q", vec![b'x'; 1000])
                .with_durability(Durability::AsyncWal),
        )
        .unwrap();
    }
    db.wait_for_background().unwrap();
    let flushes = db.engine_stats().flushes;
    assert!(flushes >= 2, "expected automatic flushes, found {flushes}");
    // About 3 MiB went through 256 KiB segments; background flushes retired all but those
    // holding the unflushed tail (under 1 MiB).
    let kept = db.wal_segment_count();
    assert!((1..=5).contains(&kept), "{kept} segments kept");
    db.flush(&name).unwrap();
    assert_eq!(db.wal_segment_count(), 1, "every segment is flushed past");
    drop(t);
    db.close().unwrap();
    let db = Database::open(dir.path()).unwrap();
    assert_eq!(scan_all(&db.table("t").unwrap(), Scan::new()).len(), 3000);
}

#[test]
fn skip_wal_writes_are_lost_on_a_crash_and_the_others_are_not() {
    let dir = tempfile::tempdir().unwrap();
    let name = TableName::parse("t").unwrap();
    {
        let db = Database::open(dir.path()).unwrap();
        db.create_table(TableDescriptor::new(&name, [cf("f", 1)]), &[])
            .unwrap();
        let t = db.table("t").unwrap();
        for (row, d) in [
            ("skip", Durability::SkipWal),
            ("sync", Durability::SyncWal),
            ("fsync", Durability::FsyncWal),
        ] {
            t.put(Put::new(row).add("f", "q", "v").with_durability(d))
                .unwrap();
        }
        // no close and no flush: the process "dies" with the memstore unflushed
        std::mem::forget(t);
        std::mem::forget(db);
    }
    // The dead process's lock is released when its descriptors close; here it is the same
    // process, so take a fresh copy of the directory as a restarted server would see it.
    let copy = tempfile::tempdir().unwrap();
    copy_dir(dir.path(), copy.path());
    let db = Database::open(copy.path()).unwrap();
    let t = db.table("t").unwrap();
    assert!(t.get(Get::new("skip")).unwrap().is_empty());
    assert!(!t.get(Get::new("sync")).unwrap().is_empty());
    assert!(!t.get(Get::new("fsync")).unwrap().is_empty());
}

fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        let target = to.join(p.file_name().unwrap());
        if p.is_dir() {
            copy_dir(&p, &target);
        } else {
            std::fs::copy(&p, &target).unwrap();
        }
    }
}

#[test]
fn numregions_with_a_split_algorithm_pre_splits_the_table() {
    use basalt_model::split::{parse_splits_file, SplitAlgorithm};
    let fx = Fixture::new();
    let name = TableName::parse("hex").unwrap();
    fx.db
        .create_table_pre_split(
            TableDescriptor::new(&name, [cf("f", 1)]),
            SplitAlgorithm::HexStringSplit,
            4,
        )
        .unwrap();
    let bounds: Vec<(String, String)> = fx
        .db
        .regions(&name)
        .unwrap()
        .iter()
        .map(|r| {
            (
                String::from_utf8_lossy(&r.start_key).into_owned(),
                String::from_utf8_lossy(&r.end_key).into_owned(),
            )
        })
        .collect();
    let want = [
        ("", "40000000"),
        ("40000000", "80000000"),
        ("80000000", "c0000000"),
        ("c0000000", ""),
    ];
    assert_eq!(
        bounds,
        want.map(|(a, b)| (a.to_owned(), b.to_owned())).to_vec()
    );
    // Rows land in their regions and a scan crosses them in order.
    let t = fx.db.table("hex").unwrap();
    for row in ["0a", "7f", "90", "ff"] {
        t.put(Put::new(row).add("f", "q", row)).unwrap();
    }
    let rows: Vec<String> = scan_all(&t, Scan::new())
        .iter()
        .map(|r| String::from_utf8_lossy(r.row()).into_owned())
        .collect();
    assert_eq!(rows, ["0a", "7f", "90", "ff"]);
    // A splits file: lines of binary strings.
    let keys = parse_splits_file("b\n\\x00\\xFF\nm\n");
    let name = TableName::parse("fromfile").unwrap();
    fx.db
        .create_table(TableDescriptor::new(&name, [cf("f", 1)]), &keys)
        .unwrap();
    assert_eq!(fx.db.regions(&name).unwrap().len(), 4);
    let err = fx
        .db
        .create_table_pre_split(
            TableDescriptor::new(&TableName::parse("one").unwrap(), [cf("f", 1)]),
            SplitAlgorithm::UniformSplit,
            1,
        )
        .unwrap_err();
    assert!(err.to_string().contains("must be greater than 1"), "{err}");
}
