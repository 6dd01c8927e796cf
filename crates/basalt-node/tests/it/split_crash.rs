//! Crashes at every step of a split and of a merge: the process dies at the Nth file
//! operation of the split (or merge), for every N until one completes, unsynced bytes are
//! lost (or torn), and the reopened database must serve either the parents or the new
//! regions (never both, never neither) with every acknowledged cell, and no leftover
//! directory of the other side.

use std::collections::BTreeSet;
use std::sync::Arc;

use basalt_model::ops::{Get, Put, Scan};
use basalt_model::{Durability, TableDescriptor, TableName};
use basalt_node::{Database, Options};
use basalt_storage::env::{Env, FaultInjector, SystemClock};
use bytes::Bytes;

use crate::regions::assert_covering;
use crate::support::{cf, region_dirs};

const ROWS: u32 = 300;

fn row(i: u32) -> String {
    format!("row{i:05}")
}

fn options(env: Env) -> Options {
    let mut o = Options {
        env,
        ..Options::default()
    };
    o.background.compaction.automatic = false;
    o
}

/// A table of two regions split at row 150, with rows in files and in memstores.
fn setup(dir: &std::path::Path, env: Env) -> Database {
    let db = Database::open_with(dir, options(env)).unwrap();
    let name = TableName::parse("t").unwrap();
    let desc = TableDescriptor::new(&name, [cf("f", 1), cf("g", 1)]);
    db.create_table(desc, &[Bytes::from(row(150))]).unwrap();
    let t = db.table("t").unwrap();
    for i in 0..ROWS {
        if i == ROWS / 2 {
            db.flush(&name).unwrap();
        }
        let p = Put::new(row(i))
            .add("f", "q", format!("v{i}"))
            .add("g", "q", "x")
            .with_durability(Durability::SyncWal);
        t.put(p).unwrap();
    }
    db
}

type Bounds = Vec<(Bytes, Bytes)>;

fn bounds(db: &Database) -> Bounds {
    let regions = db.regions(&TableName::parse("t").unwrap()).unwrap();
    assert_covering(&regions);
    regions
        .into_iter()
        .map(|r| (r.start_key, r.end_key))
        .collect()
}

/// Every row, by Gets and by scans both ways, and no stray region directory.
fn check(db: &Database, dir: &std::path::Path) {
    let t = db.table("t").unwrap();
    for i in 0..ROWS {
        let r = t.get(Get::new(row(i))).unwrap();
        assert_eq!(
            r.value(b"f", b"q"),
            Some(format!("v{i}").as_bytes()),
            "row {i}"
        );
    }
    let n = t.scan(Scan::new()).unwrap().collect_rows().unwrap().len();
    assert_eq!(n, ROWS as usize);
    let n = t.scan(Scan::new().reversed()).unwrap().count();
    assert_eq!(n, ROWS as usize);
    let name = TableName::parse("t").unwrap();
    let online: BTreeSet<String> = db
        .regions(&name)
        .unwrap()
        .iter()
        .map(|r| r.id.to_string())
        .collect();
    let on_disk: BTreeSet<String> = std::fs::read_dir(dir.join("data/default/t"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with('.')) // the table's descriptor directory
        .collect();
    // Retired parents may still be on disk while references to them remain.
    assert!(online.is_subset(&on_disk), "{online:?} vs {on_disk:?}");
    assert!(
        on_disk.len() <= online.len() + 2,
        "{online:?} vs {on_disk:?}"
    );
}

/// Runs `change` with a crash at its 1st, 2nd, ... file operation until it completes.
fn crash_at_every_step(
    change: impl Fn(&Database) -> basalt_model::Result<()>,
    want_after: &Bounds,
) {
    let mut step = 1;
    // Crashes that left the old regions serving, and the new ones.
    let (mut old, mut new) = (0, 0);
    loop {
        let dir = tempfile::tempdir().unwrap();
        let faults = Arc::new(FaultInjector::new(step));
        let env = Env::with_faults(Arc::new(SystemClock), Arc::clone(&faults));
        let db = setup(dir.path(), env);
        let before = bounds(&db);
        faults.crash_after(step, step % 2 == 0);
        let result = change(&db);
        let crashed = faults.crashed();
        drop(db);
        faults.simulate_crash().unwrap();
        let db = Database::open_with(dir.path(), options(Env::default())).unwrap();
        let after = bounds(&db);
        if !crashed {
            result.unwrap();
            assert_eq!(&after, want_after, "no crash");
            check(&db, dir.path());
            // The new regions compact their references away and the janitor frees parents.
            db.major_compact(&TableName::parse("t").unwrap()).unwrap();
            check(&db, dir.path());
            let on_disk = region_dirs(&dir.path().join("data/default/t"));
            assert_eq!(on_disk, want_after.len());
            // Both outcomes were met: crashes before and after the catalog switch.
            assert!(
                old > 5 && new > 0,
                "{old} crashes kept the parents, {new} the successors"
            );
            eprintln!("{step} steps: {old} crashes kept the parents, {new} the successors");
            return;
        }
        if after == before {
            old += 1;
        } else {
            assert_eq!(&after, want_after, "crash at step {step}");
            new += 1;
        }
        check(&db, dir.path());
        step += 1;
    }
}

fn key(i: u32) -> Bytes {
    Bytes::from(row(i))
}

#[test]
fn a_crash_at_any_step_of_a_split_leaves_parent_or_daughters() {
    let want = vec![
        (Bytes::new(), key(75)),
        (key(75), key(150)),
        (key(150), Bytes::new()),
    ];
    let name = TableName::parse("t").unwrap();
    crash_at_every_step(|db| db.split_table(&name, Some(row(75).as_bytes())), &want);
}

#[test]
fn a_crash_at_any_step_of_a_merge_leaves_parents_or_merged() {
    let want = vec![(Bytes::new(), Bytes::new())];
    let name = TableName::parse("t").unwrap();
    crash_at_every_step(
        |db| {
            let regions = db.regions(&name)?;
            let names: Vec<String> = regions.iter().map(|r| r.encoded_name(&name)).collect();
            let refs: Vec<&[u8]> = names.iter().map(String::as_bytes).collect();
            db.merge_regions(&refs, false)
        },
        &want,
    );
}
