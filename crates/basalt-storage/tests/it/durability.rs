//! Durability: writes survive reopen and `kill -9`; corrupt files give clear errors.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use basalt_model::ops::{Get, Put, Scan};
use basalt_model::{ColumnFamilyDescriptor, Error, TableDescriptor, TableName};
use basalt_storage::Database;

use super::support::*;

#[test]
fn writes_survive_reopen_from_wal_and_files() {
    let fx = Fixture::new();
    {
        let t = fx.create("t", vec![cf("f", 3)]);
        for i in 0..500 {
            t.put(Put::new(format!("r{i:04}")).add_at("f", "q", 1, format!("v{i}")))
                .unwrap();
        }
        fx.flush("t");
        for i in 500..1000 {
            t.put(Put::new(format!("r{i:04}")).add_at("f", "q", 1, format!("v{i}")))
                .unwrap();
        }
    }
    let fx = fx.reopen();
    let fx = fx.reopen();
    let t = fx.db.table("t").unwrap();
    let rows = scan_all(&t, Scan::new());
    assert_eq!(rows.len(), 1000);
    assert_eq!(values(&t.get(Get::new("r0999")).unwrap()), ["v999"]);
}

/// The child half of `kill_9_loses_no_acknowledged_write`: writes under SYNC_WAL, printing
/// each acknowledged row, until it is killed.
#[test]
#[ignore = "runs only as the child process of kill_9_loses_no_acknowledged_write"]
fn sync_wal_writer_child() {
    let Ok(dir) = std::env::var("BASALT_CHILD_DIR") else {
        return;
    };
    let db = Database::open(&dir).unwrap();
    let t = db.table("t").unwrap();
    for i in 0.. {
        t.put(Put::new(format!("row{i:08}")).add("f", "q", vec![b'x'; 100]))
            .unwrap();
        println!("acked row{i:08}");
        if i % 500 == 499 {
            db.flush(&TableName::parse("t").unwrap()).unwrap();
        }
    }
}

#[test]
fn kill_9_loses_no_acknowledged_write() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Database::open(dir.path()).unwrap();
        let name = TableName::parse("t").unwrap();
        db.create_table(
            TableDescriptor::new(&name, [ColumnFamilyDescriptor::new("f")]),
            &[],
        )
        .unwrap();
        db.close().unwrap();
    }
    let mut acked_total = Vec::new();
    for round in 0..3 {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "durability::sync_wal_writer_child",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("BASALT_CHILD_DIR", dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let out = BufReader::new(child.stdout.take().unwrap());
        let mut acked = Vec::new();
        for line in out.lines() {
            let line = line.unwrap();
            if let Some(row) = line.strip_prefix("acked ") {
                acked.push(row.to_owned());
                if acked.len() >= 700 + round * 311 {
                    break;
                }
            }
        }
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        assert!(!acked.is_empty(), "the child acknowledged nothing");
        acked_total.extend(acked);
        let db = Database::open(dir.path()).unwrap();
        let t = db.table("t").unwrap();
        for row in &acked_total {
            assert!(
                !t.get(Get::new(row.clone())).unwrap().is_empty(),
                "round {round}: acknowledged {row} lost"
            );
        }
        db.close().unwrap();
    }
}

#[test]
fn corrupt_store_file_and_wal_record_give_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    seed(dir.path(), 100, true);
    let sf = walk(dir.path())
        .into_iter()
        .find(|p| p.extension().is_some_and(|e| e == "sf"))
        .unwrap();
    let mut data = std::fs::read(&sf).unwrap();
    data[20] ^= 0xff;
    std::fs::write(&sf, &data).unwrap();
    let db = Database::open(dir.path()).unwrap();
    let e = db.table("t").unwrap().get(Get::new("r1")).unwrap_err();
    assert!(matches!(e, Error::Corruption { .. }), "{e}");
    assert!(
        e.to_string().contains(".sf") && e.to_string().contains("checksum mismatch"),
        "{e}"
    );
    drop(db);

    // A WAL record in the middle of a segment, damaged: opening fails and says where.
    let dir = tempfile::tempdir().unwrap();
    seed(dir.path(), 50, false);
    let wal = walk(dir.path())
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "wal"))
        .max_by_key(|p| std::fs::metadata(p).unwrap().len())
        .unwrap();
    let mut data = std::fs::read(&wal).unwrap();
    data[40] ^= 0xff;
    std::fs::write(&wal, &data).unwrap();
    let e = Database::open(dir.path()).unwrap_err();
    assert!(matches!(e, Error::Corruption { .. }), "{e}");
    assert!(
        e.to_string().contains(".wal") && e.to_string().contains("offset"),
        "{e}"
    );
}

/// Creates table `t` in `dir` with `rows` rows, flushed to a store file or left in the WAL.
fn seed(dir: &std::path::Path, rows: usize, flush: bool) {
    let db = Database::open(dir).unwrap();
    let name = TableName::parse("t").unwrap();
    db.create_table(
        TableDescriptor::new(&name, [ColumnFamilyDescriptor::new("f")]),
        &[],
    )
    .unwrap();
    let t = db.table("t").unwrap();
    for i in 0..rows {
        t.put(Put::new(format!("r{i}")).add("f", "q", "v")).unwrap();
    }
    if flush {
        db.flush(&name).unwrap();
    }
    drop(t);
    db.close().unwrap();
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}
