//! DDL while regions split on their own under load (RELIABILITY.md D1): the compactor's split
//! and a create, drop or truncate must never wait on each other for ever.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use basalt_model::ops::{Mutation, Put};
use basalt_model::{TableDescriptor, TableName};
use basalt_node::{Database, Options};
use basalt_storage::env::{Env, ManualClock};

use super::support::*;

/// How long one DDL call may take before the test calls it a hang (a healthy one takes
/// milliseconds; a busy CI machine, far less than this).
const DDL_LIMIT: Duration = Duration::from_secs(60);

#[test]
fn create_drop_and_truncate_go_on_while_a_table_splits_under_load() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(T0));
    let mut options = Options {
        env: Env::with_clock(Arc::clone(&clock) as _),
        max_filesize_bytes: 1 << 20,
        ..Options::default()
    };
    options.background.compaction.automatic = true;
    let db = Database::open_with(dir.path(), options).unwrap();
    let name = TableName::parse("splitme").unwrap();
    let mut desc = TableDescriptor::new(&name, [cf("f", 1)]);
    desc.memstore_flushsize_bytes = 1 << 20;
    db.create_table(desc, &[]).unwrap();

    let stop = Arc::new(AtomicBool::new(false));
    let written = Arc::new(AtomicUsize::new(0));
    let writer = spawn_writer(&db, &stop, &written);

    // Each DDL call runs on its own thread and must answer within the limit.
    let ddl = |what: String, f: Box<dyn FnOnce(&Database) + Send>| {
        let (tx, rx) = mpsc::channel();
        let db = db.clone();
        std::thread::spawn(move || {
            f(&db);
            let _ = tx.send(());
        });
        rx.recv_timeout(DDL_LIMIT)
            .unwrap_or_else(|_| panic!("{what} hung: no answer in {DDL_LIMIT:?}"));
    };
    let regions = || db.regions(&name).unwrap().len();
    let mut iterations = 0;
    while iterations < 400 && (regions() < 6 || iterations < 40) {
        let t = TableName::parse(&format!("ddl{}", iterations % 3)).unwrap();
        let t2 = t.clone();
        ddl(
            format!("create {t}"),
            Box::new(move |db| {
                db.create_table(TableDescriptor::new(&t2, [cf("f", 1)]), &[])
                    .unwrap();
            }),
        );
        let t2 = t.clone();
        ddl(
            format!("disable+truncate {t}"),
            Box::new(move |db| {
                db.disable_table(&t2).unwrap();
                db.truncate_table(&t2, false).unwrap();
            }),
        );
        let t2 = t.clone();
        ddl(
            format!("disable+drop {t}"),
            Box::new(move |db| {
                db.disable_table(&t2).unwrap();
                db.delete_table(&t2).unwrap();
            }),
        );
        ddl(
            "list".to_owned(),
            Box::new(|db| {
                db.list_tables(None).unwrap();
            }),
        );
        iterations += 1;
    }
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
    let splits = regions();
    assert!(
        splits >= 6,
        "only {splits} regions after {iterations} DDL rounds and {} rows: the splits the test needs did not happen",
        written.load(Ordering::Relaxed)
    );
    db.close().unwrap();
}

/// Writes 1 KiB rows spread over the key space, 200 a batch, until `stop`.
fn spawn_writer(
    db: &Database,
    stop: &Arc<AtomicBool>,
    written: &Arc<AtomicUsize>,
) -> std::thread::JoinHandle<()> {
    let (db, stop, written) = (db.clone(), Arc::clone(stop), Arc::clone(written));
    std::thread::spawn(move || {
        let t = db.table("splitme").unwrap();
        let value = vec![b'v'; 1024];
        let mut i: u64 = 0;
        while !stop.load(Ordering::Relaxed) {
            let batch: Vec<Mutation> = (0..200)
                .map(|_| {
                    i += 1;
                    // Spread over the key space, so every region keeps growing.
                    let key = format!("{:016x}", i.wrapping_mul(0x9E37_79B9_7F4A_7C15));
                    Mutation::Put(Put::new(key).add("f", "q", value.clone()))
                })
                .collect();
            for r in t.batch(batch) {
                r.unwrap();
            }
            written.fetch_add(200, Ordering::Relaxed);
        }
    })
}
