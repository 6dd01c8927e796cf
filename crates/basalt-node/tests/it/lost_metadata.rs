//! Damaged or missing metadata and store files never turn into deleted data
//! (RELIABILITY.md D2, D3, D10): a missing catalog refuses the open, a region that cannot open
//! stays offline on its own with its files in place, and what the engine drops goes to the
//! archive first.

use std::path::{Path, PathBuf};

use basalt_model::ops::{Get, Put, Scan};
use basalt_model::{ColumnFamilyDescriptor, Error, TableDescriptor, TableName};
use basalt_node::Database;

use super::support::*;

/// Every file below `dir`.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(files(&p));
        } else {
            out.push(p);
        }
    }
    out.sort();
    out
}

fn store_files(dir: &Path) -> Vec<PathBuf> {
    files(dir)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "sf"))
        .collect()
}

fn named(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    files(dir)
        .into_iter()
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(prefix))
        })
        .collect()
}

/// Table `c` (split at `m` when `split`) and table `other`, 200 rows each, flushed (so the
/// WAL holds nothing), and the database closed.
fn seed(dir: &Path, split: bool) {
    let db = Database::open(dir).unwrap();
    for (t, splits) in [("c", split), ("other", false)] {
        let name = TableName::parse(t).unwrap();
        let keys: Vec<bytes::Bytes> = if splits {
            vec![bytes::Bytes::from_static(b"m")]
        } else {
            Vec::new()
        };
        db.create_table(
            TableDescriptor::new(&name, [ColumnFamilyDescriptor::new("f")]),
            &keys,
        )
        .unwrap();
        let table = db.table(t).unwrap();
        for i in 0..200 {
            let row = format!("{}{i:03}", if i % 2 == 0 { "a" } else { "x" });
            table
                .put(Put::new(row).add("f", "q", format!("v{i}")))
                .unwrap();
        }
        db.flush(&name).unwrap();
    }
    db.close().unwrap();
}

/// `seed`, then a byte of the trailer (the file's last bytes) of the store file of `c`'s
/// lower region flipped: the file cannot even be opened. Returns the file.
fn seed_with_damaged_trailer(dir: &Path) -> PathBuf {
    seed(dir, true);
    let db = Database::open(dir).unwrap();
    let lower = db.regions(&TableName::parse("c").unwrap()).unwrap()[0].id;
    db.close().unwrap();
    let sf = store_files(&dir.join(format!("data/default/c/{lower}")))
        .pop()
        .unwrap();
    let mut data = std::fs::read(&sf).unwrap();
    let n = data.len();
    data[n - 3] ^= 0xff;
    std::fs::write(&sf, &data).unwrap();
    sf
}

fn count(db: &Database, t: &str) -> basalt_model::Result<usize> {
    Ok(db.table(t)?.scan(Scan::new())?.collect_rows()?.len())
}

#[test]
fn a_missing_catalog_refuses_the_open_and_deletes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    seed(dir.path(), false);
    let before = store_files(dir.path());
    assert!(!before.is_empty());
    for f in named(&dir.path().join("catalog"), "CATALOG-") {
        std::fs::remove_file(f).unwrap();
    }
    let e = Database::open(dir.path()).unwrap_err();
    let msg = e.to_string();
    assert!(msg.contains("the catalog is missing"), "{msg}");
    assert!(
        msg.contains("default:c") && msg.contains("default:other"),
        "{msg}"
    );
    assert!(msg.contains("basalt hbck"), "{msg}");
    // Refused again, and still nothing deleted or archived.
    assert!(Database::open(dir.path()).is_err());
    assert_eq!(store_files(dir.path()), before);
    assert!(!dir.path().join("archive").exists());
}

#[test]
fn a_region_without_its_manifest_stays_offline_and_keeps_its_files() {
    let dir = tempfile::tempdir().unwrap();
    seed(dir.path(), true);
    let before = store_files(dir.path());
    // The region of `c` that holds rows from `m` on.
    let db = Database::open(dir.path()).unwrap();
    let name = TableName::parse("c").unwrap();
    let upper = db.regions(&name).unwrap()[1].id;
    db.close().unwrap();
    let rdir = dir.path().join(format!("data/default/c/{upper}"));
    for f in named(&rdir, "MANIFEST-") {
        std::fs::remove_file(f).unwrap();
    }

    let db = Database::open(dir.path()).unwrap();
    let failed = db.failed_regions();
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert_eq!(failed[0].1.id, upper);
    assert!(failed[0].2.contains("no manifest"), "{}", failed[0].2);
    let c = db.table("c").unwrap();
    // The healthy region serves; the failed one answers RegionOffline, without retries.
    assert_eq!(c.get(Get::new("a000")).unwrap().cells.len(), 1);
    let e = c.get(Get::new("x001")).unwrap_err();
    assert!(matches!(e, Error::RegionOffline(_)), "{e}");
    assert!(!e.is_retryable());
    assert!(
        !e.to_string().contains(&*dir.path().to_string_lossy()),
        "{e}"
    );
    let e = c.put(Put::new("y").add("f", "q", "v")).unwrap_err();
    assert!(matches!(e, Error::RegionOffline(_)), "{e}");
    // A scan returns the healthy region's rows, then fails at the offline one.
    let mut scanner = c.scan(Scan::new()).unwrap();
    let mut rows = 0;
    let e = loop {
        match scanner.next_row() {
            Ok(Some(_)) => rows += 1,
            Ok(None) => panic!("the scan passed an offline region"),
            Err(e) => break e,
        }
    };
    assert_eq!(rows, 100);
    assert!(matches!(e, Error::RegionOffline(_)), "{e}");
    // The other table is untouched, and the failure is reported with the region's load.
    assert_eq!(count(&db, "other").unwrap(), 200);
    let loads = db.region_loads(&name).unwrap();
    assert_eq!(loads.len(), 2);
    assert!(loads[0].1.failed_open.is_none());
    assert!(loads[1].1.failed_open.is_some());
    // hbase:meta shows it as HBase does: info:state FAILED_OPEN.
    let meta = db.table("hbase:meta").unwrap();
    let states: Vec<String> = meta
        .scan(Scan::new().add_column("info", "state"))
        .unwrap()
        .collect_rows()
        .unwrap()
        .iter()
        .filter(|r| r.row().starts_with(b"c,"))
        .flat_map(|r| {
            r.cells
                .iter()
                .map(|c| String::from_utf8_lossy(c.value()).into_owned())
        })
        .collect();
    assert_eq!(states, ["OPEN", "FAILED_OPEN"]);
    drop(c);
    db.close().unwrap();
    // Nothing was deleted or set aside: every store file is where it was.
    assert_eq!(store_files(dir.path()), before);
    assert!(!dir.path().join("archive").exists());
}

#[test]
fn a_damaged_store_file_takes_only_its_region_offline() {
    let dir = tempfile::tempdir().unwrap();
    let sf = seed_with_damaged_trailer(dir.path());

    let db = Database::open(dir.path()).unwrap();
    let failed = db.failed_regions();
    assert_eq!(failed.len(), 1);
    let file_name = sf.file_name().unwrap().to_string_lossy().into_owned();
    assert!(failed[0].2.contains(&file_name), "{}", failed[0].2);
    let c = db.table("c").unwrap();
    assert!(matches!(
        c.get(Get::new("a000")),
        Err(Error::RegionOffline(_))
    ));
    assert_eq!(c.get(Get::new("x001")).unwrap().cells.len(), 1);
    assert_eq!(count(&db, "other").unwrap(), 200);
    drop(c);
    db.close().unwrap();
    assert!(sf.exists());
}

#[test]
fn a_damaged_newest_catalog_is_corruption_not_a_silent_rollback() {
    let dir = tempfile::tempdir().unwrap();
    seed(dir.path(), false);
    let newest = named(&dir.path().join("catalog"), "CATALOG-")
        .pop()
        .unwrap();
    let good = std::fs::read(&newest).unwrap();
    // An older, complete version beside it: a rollback would have somewhere to go.
    let older = newest.with_file_name("CATALOG-00000000000000000001");
    assert_ne!(older, newest);
    std::fs::write(&older, &good).unwrap();
    let mut bad = good.clone();
    bad[good.len() / 2] ^= 0x01;
    std::fs::write(&newest, &bad).unwrap();
    let e = Database::open(dir.path()).unwrap_err();
    assert!(matches!(e, Error::Corruption { .. }), "{e}");
    assert!(e.to_string().contains("checksum mismatch"), "{e}");
    assert!(e.to_string().contains("--fix-catalog"), "{e}");

    // A torn newest version (no end marker: a commit that crashed) falls back to the one
    // before it, which is what was last acknowledged.
    std::fs::write(&newest, &good).unwrap();
    let torn = newest.with_file_name(format!(
        "CATALOG-{:020}",
        newest.file_name().unwrap().to_string_lossy()[8..]
            .parse::<u64>()
            .unwrap()
            + 1
    ));
    std::fs::write(&torn, &good[..good.len() / 2]).unwrap();
    let db = Database::open(dir.path()).unwrap();
    assert_eq!(count(&db, "c").unwrap(), 200);
}

#[test]
fn files_no_manifest_lists_and_compacted_files_are_archived_then_cleaned() {
    let fx = Fixture::new();
    let t = fx.create("t", vec![cf("f", 1)]);
    for round in 0..3 {
        t.put(Put::new(format!("r{round}")).add("f", "q", "v"))
            .unwrap();
        fx.flush("t");
    }
    let data_dir = fx.dir.path().join("data");
    let inputs = store_files(&data_dir);
    assert_eq!(inputs.len(), 3);
    fx.major("t");
    assert_eq!(store_files(&data_dir).len(), 1);
    let archived = store_files(&fx.dir.path().join("archive"));
    assert_eq!(archived.len(), 3, "{archived:?}");
    // Each keeps its path below the data directory.
    for input in &inputs {
        let rel = input.strip_prefix(fx.dir.path()).unwrap();
        assert!(archived.iter().any(|a| a.ends_with(rel)), "{rel:?}");
    }

    // A file no manifest lists (a flush that crashed before its commit) is archived at the
    // next open, not deleted.
    let family_dir = store_files(&data_dir)[0].parent().unwrap().to_owned();
    let stray = family_dir.join("0000000000000099.sf");
    std::fs::write(&stray, b"partial").unwrap();
    drop(t);
    let fx = fx.reopen();
    assert!(!stray.exists());
    assert_eq!(store_files(&fx.dir.path().join("archive")).len(), 4);
    assert_eq!(count(&fx.db, "t").unwrap(), 3);

    // The cleaner removes archived files once they are past the retention (5 minutes).
    fx.clock.advance(5 * 60 * 1000);
    let fx = fx.reopen();
    assert!(store_files(&fx.dir.path().join("archive")).is_empty());
    assert_eq!(count(&fx.db, "t").unwrap(), 3);
}

#[test]
fn a_dropped_table_is_archived() {
    let fx = Fixture::new();
    let t = fx.create("gone", vec![cf("f", 1)]);
    t.put(Put::new("r").add("f", "q", "v")).unwrap();
    fx.flush("gone");
    drop(t);
    let name = TableName::parse("gone").unwrap();
    fx.db.disable_table(&name).unwrap();
    fx.db.delete_table(&name).unwrap();
    assert!(!fx.dir.path().join("data/default/gone").exists());
    let archived = store_files(&fx.dir.path().join("archive"));
    assert_eq!(archived.len(), 1);
    assert!(archived[0].to_string_lossy().contains("data/default/gone/"));
}

fn hbck(dir: &Path, repairs: basalt_node::hbck::Repairs) -> basalt_node::hbck::Report {
    basalt_node::hbck::run(&basalt_storage::env::Env::default(), dir, repairs).unwrap()
}

fn kinds(r: &basalt_node::hbck::Report) -> Vec<&'static str> {
    r.findings
        .iter()
        .filter(|f| f.problem)
        .map(|f| f.kind)
        .collect()
}

#[test]
fn hbck_finds_nothing_wrong_in_a_healthy_directory() {
    let dir = tempfile::tempdir().unwrap();
    seed(dir.path(), true);
    let r = hbck(dir.path(), basalt_node::hbck::Repairs::default());
    assert_eq!(r.unresolved(), 0, "{:?}", r.findings);
    assert_eq!((r.tables, r.regions), (2, 3));
    assert!(r.store_files >= 3);
}

#[test]
fn hbck_rebuilds_a_lost_catalog_with_every_region_and_row() {
    let dir = tempfile::tempdir().unwrap();
    seed(dir.path(), true);
    // A split whose parent the janitor has not cleaned up yet: the catalog must come back
    // with the daughters online and the parent retired.
    let db = Database::open(dir.path()).unwrap();
    let other = TableName::parse("other").unwrap();
    db.split_table(&other, Some(b"m")).unwrap();
    let want: Vec<_> = ["c", "other"]
        .iter()
        .map(|t| db.regions(&TableName::parse(t).unwrap()).unwrap())
        .collect();
    db.close().unwrap();
    for f in named(&dir.path().join("catalog"), "CATALOG-") {
        std::fs::remove_file(f).unwrap();
    }
    let r = hbck(dir.path(), basalt_node::hbck::Repairs::default());
    assert_eq!(kinds(&r), ["MISSING_CATALOG"]);
    let fix = basalt_node::hbck::Repairs {
        fix_catalog: true,
        ..Default::default()
    };
    let r = hbck(dir.path(), fix);
    assert_eq!(r.unresolved(), 0, "{:?}", r.findings);
    let db = Database::open(dir.path()).unwrap();
    for (t, regions) in ["c", "other"].iter().zip(&want) {
        assert_eq!(&db.regions(&TableName::parse(t).unwrap()).unwrap(), regions);
        assert_eq!(count(&db, t).unwrap(), 200, "{t}");
    }
    assert!(db.failed_regions().is_empty());
}

#[test]
fn hbck_rebuilds_a_lost_manifest_and_the_region_serves_again() {
    let dir = tempfile::tempdir().unwrap();
    seed(dir.path(), true);
    let db = Database::open(dir.path()).unwrap();
    let upper = db.regions(&TableName::parse("c").unwrap()).unwrap()[1].id;
    db.close().unwrap();
    let rdir = dir.path().join(format!("data/default/c/{upper}"));
    for f in named(&rdir, "MANIFEST-") {
        std::fs::remove_file(f).unwrap();
    }
    let r = hbck(dir.path(), basalt_node::hbck::Repairs::default());
    assert_eq!(kinds(&r), ["MISSING_MANIFEST"]);
    let fix = basalt_node::hbck::Repairs {
        fix_manifests: true,
        ..Default::default()
    };
    assert_eq!(hbck(dir.path(), fix).unresolved(), 0);
    let db = Database::open(dir.path()).unwrap();
    assert!(db.failed_regions().is_empty());
    assert_eq!(count(&db, "c").unwrap(), 200);
}

#[test]
fn hbck_sidelines_a_damaged_store_file_and_the_region_opens_without_it() {
    let dir = tempfile::tempdir().unwrap();
    let sf = seed_with_damaged_trailer(dir.path());
    let r = hbck(dir.path(), basalt_node::hbck::Repairs::default());
    assert_eq!(kinds(&r), ["DAMAGED_STORE_FILE"]);
    let fix = basalt_node::hbck::Repairs {
        sideline_corrupt_files: true,
        ..Default::default()
    };
    assert_eq!(hbck(dir.path(), fix).unresolved(), 0);
    // Kept, below hbck/, with its path.
    let rel = sf.strip_prefix(dir.path()).unwrap();
    let kept = store_files(&dir.path().join("hbck"));
    assert!(kept.iter().any(|k| k.ends_with(rel)), "{kept:?}");
    let db = Database::open(dir.path()).unwrap();
    assert!(db.failed_regions().is_empty());
    // The lower region's rows were in that one file; the upper region's are all there.
    assert_eq!(count(&db, "c").unwrap(), 100);
}

/// Table `w` with 50 rows left in the WAL alone (the database dropped without closing), and
/// the segment holding them.
fn rows_left_in_the_wal(dir: &Path) -> PathBuf {
    {
        let db = Database::open(dir).unwrap();
        let name = TableName::parse("w").unwrap();
        db.create_table(
            TableDescriptor::new(&name, [ColumnFamilyDescriptor::new("f")]),
            &[],
        )
        .unwrap();
        let t = db.table("w").unwrap();
        for i in 0..50 {
            t.put(Put::new(format!("r{i:02}")).add("f", "q", "v"))
                .unwrap();
        }
    }
    // A segment is made at its full size and may end in zeros past its records: the one
    // holding the most record bytes.
    files(&dir.join("wal"))
        .into_iter()
        .max_by_key(|p| records_end(&std::fs::read(p).unwrap()))
        .unwrap()
}

/// Where the bytes of `data` that are not zeros end.
fn records_end(data: &[u8]) -> usize {
    data.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1)
}

#[test]
fn hbck_cuts_a_wal_damaged_in_the_middle_keeping_the_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let wal = rows_left_in_the_wal(dir.path());
    let mut data = std::fs::read(&wal).unwrap();
    // The damage goes in the middle of the records.
    let at = records_end(&data) / 2;
    data[at] ^= 0xff;
    std::fs::write(&wal, &data).unwrap();
    assert!(Database::open(dir.path()).is_err());
    let r = hbck(dir.path(), basalt_node::hbck::Repairs::default());
    assert_eq!(kinds(&r), ["DAMAGED_WAL"]);
    let fix = basalt_node::hbck::Repairs {
        fix_wal: true,
        ..Default::default()
    };
    assert_eq!(hbck(dir.path(), fix).unresolved(), 0);
    let db = Database::open(dir.path()).unwrap();
    let n = count(&db, "w").unwrap();
    assert!(n > 0 && n < 50, "{n} rows");
    let kept = named(&dir.path().join("wal"), "");
    assert!(
        kept.iter()
            .any(|p| p.to_string_lossy().contains(".damaged-")),
        "{kept:?}"
    );
}

/// What a crash leaves of WAL segments made at their full size: the segment with the records
/// still ending in its zeros, and after it a segment made and never written (its header,
/// then zeros). Neither is damage: hbck finds nothing wrong, and the open replays every row.
#[test]
fn hbck_and_the_open_take_the_zeros_a_crash_leaves_in_the_wal_for_its_end() {
    let dir = tempfile::tempdir().unwrap();
    let wal = rows_left_in_the_wal(dir.path());
    let data = std::fs::read(&wal).unwrap();
    let grow = |path: &Path, len: u64| {
        std::fs::OpenOptions::new()
            .write(true)
            .open(path)
            .unwrap()
            .set_len(len)
            .unwrap();
    };
    grow(&wal, records_end(&data) as u64 + 65_536);
    let id: u64 = wal.file_stem().unwrap().to_str().unwrap().parse().unwrap();
    let next = wal.with_file_name(format!("{:020}.wal", id + 1));
    // The segment header: magic and version (docs/formats/wal.md).
    std::fs::write(&next, &data[..12]).unwrap();
    grow(&next, 65_536);
    let r = hbck(dir.path(), basalt_node::hbck::Repairs::default());
    assert_eq!(r.unresolved(), 0, "{:?}", r.findings);
    let db = Database::open(dir.path()).unwrap();
    assert_eq!(count(&db, "w").unwrap(), 50);
}

/// Commits a new catalog version, checksums and all, made by `edit` from the current one.
fn rewrite_catalog(dir: &Path, edit: impl FnOnce(&mut basalt_node::catalog::Catalog)) {
    let env = basalt_node::env::Env::default();
    let cdir = dir.join("catalog");
    let (mut vf, catalog) = basalt_storage::manifest::VersionedFile::load::<
        basalt_node::catalog::Catalog,
    >(&env, &cdir, "CATALOG")
    .unwrap();
    let mut catalog = catalog.unwrap();
    edit(&mut catalog);
    vf.commit(&env, &catalog).unwrap();
}

/// Bytes from disk never panic: a catalog whose checksum holds but whose contents break the
/// rules (an invalid table name; regions that leave a gap) is refused on open with an error
/// naming the problem, and hbck reports it as damage.
#[test]
fn a_checksum_valid_catalog_that_breaks_the_rules_is_refused_on_open() {
    type Edit = fn(&mut basalt_node::catalog::Catalog);
    let cases: [(&str, Edit); 2] = [
        ("invalid name", |c| {
            let mut entry = c.tables.remove("default:c").unwrap();
            entry.descriptor.name.1 = "bad name!".into();
            c.tables.insert("default:bad name!".into(), entry);
        }),
        ("do not cover the row keys", |c| {
            c.tables.get_mut("default:c").unwrap().regions.remove(0);
        }),
    ];
    for (why, edit) in cases {
        let dir = tempfile::tempdir().unwrap();
        seed(dir.path(), true);
        rewrite_catalog(dir.path(), edit);
        let err = Database::open(dir.path()).unwrap_err();
        assert!(matches!(err, Error::Corruption { .. }), "{why}: {err}");
        assert!(err.to_string().contains(why), "{why}: {err}");
        let r = hbck(dir.path(), basalt_node::hbck::Repairs::default());
        assert_eq!(kinds(&r), ["DAMAGED_CATALOG"], "{why}");
    }
}
