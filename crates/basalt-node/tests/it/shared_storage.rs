//! A database whose every file is on shared storage reached by URL: a shared directory
//! (`file://`) and a real S3-compatible store (SeaweedFS), each checked by the start-up
//! self-test first. Rows survive flushes, compactions, a split, a clean reopen and a reopen
//! after a crash (replay of the log's chunks).

use std::path::PathBuf;
use std::sync::Arc;

use basalt_model::ops::{Get, Put, Scan};
use basalt_model::{Error, TableDescriptor, TableName};
use basalt_node::{storage, Database, Options};
use basalt_storage::env::{Env, ObjectStore, SystemClock};
use basalt_testkit::services::SeaweedFs;

use super::support::{cf, scan_all, values};

fn open_on(url: &str) -> (Database, Arc<dyn ObjectStore>) {
    let store = storage::open(url).unwrap();
    let root = PathBuf::from(url);
    let env = Env::on_shared(Arc::new(SystemClock), Arc::clone(&store), root.clone());
    let options = Options {
        env,
        ..Options::default()
    };
    (Database::open_with(&root, options).unwrap(), store)
}

/// Writes, flushes, compacts and splits; reopens cleanly, then after a crash.
fn round_trip(url: &str) {
    let name = TableName::parse("t").unwrap();
    let (db, store) = open_on(url);
    db.create_table(TableDescriptor::new(&name, vec![cf("f", 3)]), &[])
        .unwrap();
    let t = db.table("t").unwrap();
    for i in 0..600 {
        t.put(Put::new(format!("r{i:04}")).add("f", "q", format!("v{i}")))
            .unwrap();
        if i % 200 == 199 {
            db.flush(&name).unwrap();
        }
    }
    db.major_compact(&name).unwrap();
    db.split_table(&name, Some(b"r0300")).unwrap();
    db.wait_for_background().unwrap();
    drop(t);
    db.close().unwrap();
    let keys = store.list_all("").unwrap();
    assert!(keys.iter().any(|k| k.ends_with(".sf")), "{keys:?}");
    // Reopen, write more, and crash (no close): the log's chunks hold the new rows.
    let (db, _) = open_on(url);
    let t = db.table("t").unwrap();
    assert_eq!(db.regions(&name).unwrap().len(), 2);
    for i in 600..700 {
        t.put(Put::new(format!("r{i:04}")).add("f", "q", format!("v{i}")))
            .unwrap();
    }
    drop(t);
    drop(db);
    let (db, _) = open_on(url);
    let t = db.table("t").unwrap();
    assert_eq!(scan_all(&t, Scan::new()).len(), 700);
    assert_eq!(values(&t.get(Get::new("r0650")).unwrap()), ["v650"]);
    assert_eq!(values(&t.get(Get::new("r0001")).unwrap()), ["v1"]);
    drop(t);
    db.close().unwrap();
}

#[test]
fn a_database_on_a_shared_directory_keeps_every_row() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("file://{}", dir.path().join("store").display());
    round_trip(&url);
    // The files are plain files in the directory; the log is a directory of chunks.
    let wal = dir.path().join("store/wal");
    let server = std::fs::read_dir(&wal)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let segment = std::fs::read_dir(&server)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    assert!(segment.is_dir(), "{}", segment.display());
}

#[test]
fn a_database_on_s3_keeps_every_row() {
    let s3 = SeaweedFs::start();
    for (k, v) in s3.aws_env() {
        std::env::set_var(k, v);
    }
    round_trip(&s3.url("cluster1"));
}

#[test]
fn a_bad_storage_url_is_refused_with_the_reason() {
    let e = storage::open("ftp://host/x").unwrap_err();
    assert!(matches!(e, Error::IllegalArgument(_)), "{e}");
    assert!(e.to_string().contains("expected file:///path"), "{e}");
    let e = storage::open("file://relative/path").unwrap_err();
    assert!(e.to_string().contains("absolute path"), "{e}");
}

/// A store whose first `failures` creates time out, then answers as a memory store.
#[derive(Debug)]
struct SlowAtFirst {
    inner: Arc<basalt_storage::env::MemoryStore>,
    failures: std::sync::atomic::AtomicUsize,
}

impl ObjectStore for SlowAtFirst {
    fn url(&self) -> &str {
        self.inner.url()
    }
    fn put_if_absent(&self, key: &str, data: bytes::Bytes) -> std::io::Result<()> {
        let left = self.failures.load(std::sync::atomic::Ordering::SeqCst);
        if left > 0 {
            self.failures
                .store(left - 1, std::sync::atomic::Ordering::SeqCst);
            return Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "no answer in 30 s",
            ));
        }
        self.inner.put_if_absent(key, data)
    }
    fn upload(&self, key: &str) -> std::io::Result<Box<dyn basalt_storage::env::object::Upload>> {
        self.inner.upload(key)
    }
    fn get(&self, key: &str) -> std::io::Result<Option<bytes::Bytes>> {
        self.inner.get(key)
    }
    fn get_range(&self, key: &str, offset: u64, len: usize) -> std::io::Result<bytes::Bytes> {
        self.inner.get_range(key, offset, len)
    }
    fn size(&self, key: &str) -> std::io::Result<Option<u64>> {
        self.inner.size(key)
    }
    fn list(&self, prefix: &str) -> std::io::Result<basalt_storage::env::object::Listing> {
        self.inner.list(prefix)
    }
    fn list_all(&self, prefix: &str) -> std::io::Result<Vec<String>> {
        self.inner.list_all(prefix)
    }
    fn delete(&self, key: &str) -> std::io::Result<()> {
        self.inner.delete(key)
    }
}

/// A store that fails to answer the self-test once or twice is tested again and used; one
/// that keeps failing is refused with the reason.
#[test]
fn a_store_slow_at_start_is_tested_again_before_it_is_refused() {
    let slow = |failures| -> Arc<dyn ObjectStore> {
        Arc::new(SlowAtFirst {
            inner: basalt_storage::env::MemoryStore::new(),
            failures: std::sync::atomic::AtomicUsize::new(failures),
        })
    };
    assert!(storage::checked(slow(2), "memory:///").is_ok());
    let e = storage::checked(slow(usize::MAX), "memory:///").unwrap_err();
    assert!(matches!(e, Error::Io { .. }), "{e}");
    assert!(e.to_string().contains("no answer in 30 s"), "{e}");
}
