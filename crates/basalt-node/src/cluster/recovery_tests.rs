//! Recovery of dead region servers on a deterministic cluster (see `tests.rs`): the log is
//! fenced and split, the regions reopen elsewhere with every acknowledged write, a server
//! taken for dead cannot write, flush or serve, and a new master finishes what the last one
//! began.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::path::Path;

use basalt_model::ops::{Mutation, Put};
use basalt_model::Error;
use basalt_storage::env::Env;
use basalt_storage::region::Region;

use super::tests::{assert_catalog_matches_servers, counts, create, Cluster};
use super::*;
use crate::coordination::memory::MemoryCoordinator;

const ROOT: &str = "memory://cluster";

/// Kills `rs` (no stop: its log keeps what it did not flush) by expiring its session; it
/// is gone from the master's directory, though a test may hold on to it (a zombie).
fn kill(
    cluster: &Cluster,
    rs: &ClusterRegionServer,
    session: &crate::coordination::memory::MemoryCoordinator,
) {
    cluster.servers.0.lock().remove(&rs.name());
    cluster.ensemble.expire(session);
}

/// A master, and a region server that wrote `rows` rows over `regions` regions (in its log
/// only: no flush) and died: the table and the dead server's name.
fn a_dead_server(
    cluster: &Cluster,
    regions: usize,
    rows: usize,
) -> (ClusterMaster, Arc<MemoryCoordinator>, TableName, String) {
    let (m, mc) = cluster.master("m1,16000,1");
    let (doomed, session) = cluster.region_server(16021);
    let t = create(&m, "t", regions);
    cluster.fill(&m, &t, rows);
    let name = doomed.name();
    kill(cluster, &doomed, &session);
    drop(doomed);
    (m, mc, t, name)
}

fn put_row(
    rs: &ClusterRegionServer,
    m: &ClusterMaster,
    t: &TableName,
    row: &str,
    v: &str,
) -> basalt_model::Result<()> {
    let (info, _) = m.locate(t, row.as_bytes()).unwrap();
    let region = rs.region(info.id)?;
    region.mutate(&Mutation::Put(Put::new(row.to_owned()).add("f", "q", v)))?;
    Ok(())
}

/// The objects in the dead server's log directory that hold bytes: a split log keeps only
/// its fence marker (and its segments' fences, which are empty).
fn log_dir(cluster: &Cluster, server: &str) -> Vec<String> {
    use basalt_storage::env::ObjectStore as _;
    let keys = cluster.store.list_all(&format!("wal/{server}/")).unwrap();
    keys.into_iter()
        .filter(|k| cluster.store.size(k).unwrap() != Some(0))
        .collect()
}

#[test]
fn a_dead_servers_unflushed_writes_reopen_elsewhere_and_its_recovery_ends() {
    let cluster = Cluster::new();
    let (m, _mc) = cluster.master("m1,16000,1");
    let (doomed, session) = cluster.region_server(16021);
    let t = create(&m, "t", 4);
    cluster.fill(&m, &t, 40); // in the log only: no flush
    let (_other, _os) = cluster.region_server(16022);
    let name = doomed.name();
    kill(&cluster, &doomed, &session);
    drop(doomed);
    m.assign_all().unwrap();
    let c = counts(&m);
    assert_eq!(c.len(), 1, "{c:?}");
    assert!(!c.contains_key(&name), "{c:?}");
    assert_catalog_matches_servers(&cluster, &m);
    cluster.assert_rows(&m, &t, 40);
    assert!(m.recoveries().is_empty(), "{:?}", m.recoveries());
    assert_eq!(
        m.recovery_stats()
            .completed
            .load(std::sync::atomic::Ordering::Relaxed),
        1
    );
    // The log's records are gone; its fences are kept for good.
    assert_eq!(log_dir(&cluster, &name), [format!("wal/{name}/FENCED")]);
    // Each region replayed and flushed its edits and deleted them.
    use basalt_storage::env::ObjectStore as _;
    let leftovers: Vec<String> = cluster
        .store
        .list_all("data/")
        .unwrap()
        .into_iter()
        .filter(|k| k.contains("recovered.edits"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn a_server_taken_for_dead_can_neither_write_nor_flush_nor_serve() {
    let cluster = Cluster::new();
    let (m, _mc) = cluster.master("m1,16000,1");
    let (zombie, session) = cluster.region_server(16021);
    let t = create(&m, "t", 2);
    cluster.fill(&m, &t, 20);
    let (_other, _os) = cluster.region_server(16022);
    // Its session ends, but the process runs on, holding its regions (a long pause).
    let held: Vec<std::sync::Arc<Region>> = zombie
        .hosted_regions()
        .iter()
        .map(|r| zombie.region(r.info.id).unwrap())
        .collect();
    kill(&cluster, &zombie, &session);
    m.assign_all().unwrap();
    cluster.assert_rows(&m, &t, 20);
    // A write that got past its lease check before the pause: the log is fenced.
    let region = &held[0];
    let late = region.mutate(&Mutation::Put(Put::new("row0001").add("f", "q", "stale")));
    let e = late.unwrap_err();
    assert!(
        matches!(e, Error::DoNotRetry(ref m) if m.contains("fenced")),
        "{e}"
    );
    // A flush or compaction cannot commit: the new owner committed the manifest first (and
    // its own flush of the replayed edits took the file name this flush would write).
    let e = held[1].flush().unwrap_err();
    let taken = matches!(&e, Error::Io { source, .. } if source.kind() == std::io::ErrorKind::AlreadyExists);
    assert!(
        taken || matches!(e, Error::DoNotRetry(ref m) if m.contains("fenced")),
        "{e}"
    );
    // It knows it must abort, and serves nothing from then on.
    assert!(zombie.must_abort().is_some());
    assert!(put_row(&zombie, &m, &t, "row0002", "stale").is_err());
    zombie.stop().unwrap();
    assert!(matches!(
        zombie.region(held[0].info().id),
        Err(Error::NotServingRegion(_))
    ));
    cluster.assert_rows(&m, &t, 20);
}

#[test]
fn a_new_master_finishes_a_recovery_its_predecessor_began() {
    let cluster = Cluster::new();
    let (m1, m1_session) = cluster.master("m1,16000,1");
    let (doomed, session) = cluster.region_server(16021);
    let t = create(&m1, "t", 3);
    cluster.fill(&m1, &t, 30);
    let name = doomed.name();
    kill(&cluster, &doomed, &session);
    drop(doomed);
    // The first master finds the server dead, fences and splits its log, then dies before
    // it assigns the regions (no server was there to take them).
    m1.assign_all().unwrap();
    assert!(m1.recoveries().contains_key(&name));
    assert_eq!(log_dir(&cluster, &name), [format!("wal/{name}/FENCED")]);
    cluster.ensemble.expire(&m1_session);
    drop(m1);
    let (_rs, _s) = cluster.region_server(16022);
    let (m2, _m2s) = cluster.master("m2,16000,2");
    assert!(
        m2.recoveries().contains_key(&name),
        "the catalog carries it over"
    );
    m2.assign_all().unwrap();
    assert!(m2.recoveries().is_empty());
    assert_catalog_matches_servers(&cluster, &m2);
    cluster.assert_rows(&m2, &t, 30);
}

#[test]
fn a_split_run_twice_writes_each_edit_once() {
    let cluster = Cluster::new();
    let (m, _mc, t, name) = a_dead_server(&cluster, 2, 20);
    m.split_into_recovered_edits(&name).unwrap();
    // A master that died before deleting the segments: its successor splits them again.
    let files = recovered_files(&cluster);
    assert_eq!(files.len(), 2, "one per region: {files:?}");
    let env = Env::on_shared(
        std::sync::Arc::new(basalt_storage::env::SystemClock),
        cluster.store.clone(),
        ROOT.into(),
    );
    let before: Vec<Vec<u8>> = files
        .iter()
        .map(|f| env.read_all(&Path::new(ROOT).join(f)).unwrap())
        .collect();
    m.split_into_recovered_edits(&name).unwrap();
    let after: Vec<Vec<u8>> = files
        .iter()
        .map(|f| env.read_all(&Path::new(ROOT).join(f)).unwrap())
        .collect();
    assert_eq!(recovered_files(&cluster), files);
    assert_eq!(before, after);
    let (_rs, _s) = cluster.region_server(16022);
    m.assign_all().unwrap();
    cluster.assert_rows(&m, &t, 20);
}

#[test]
fn the_server_receiving_a_dead_servers_regions_dies_before_it_replays_them() {
    let cluster = Cluster::new();
    let (m, _mc) = cluster.master("m1,16000,1");
    let (first, s1) = cluster.region_server(16021);
    let t = create(&m, "t", 2);
    cluster.fill(&m, &t, 20);
    let first_name = first.name();
    kill(&cluster, &first, &s1);
    drop(first);
    // The log is split, and the regions' recovered edits wait in their directories; the
    // server that was to open them dies too (it never opened them: it was unreachable).
    let (second, s2) = cluster.region_server(16022);
    cluster.servers.0.lock().remove(&second.name());
    m.assign_all().unwrap();
    assert!(!recovered_files(&cluster).is_empty());
    kill(&cluster, &second, &s2);
    drop(second);
    let (_third, _s3) = cluster.region_server(16023);
    m.assign_all().unwrap();
    assert!(
        m.recoveries().is_empty(),
        "{:?} ({first_name})",
        m.recoveries()
    );
    assert_catalog_matches_servers(&cluster, &m);
    cluster.assert_rows(&m, &t, 20);
    assert!(recovered_files(&cluster).is_empty());
}

#[test]
fn a_region_assigned_to_a_live_server_that_does_not_hold_it_is_assigned_again() {
    let cluster = Cluster::new();
    let (m, _mc) = cluster.master("m1,16000,1");
    let servers = cluster.region_servers(16020, 2);
    let t = create(&m, "t", 4);
    cluster.fill(&m, &t, 40);
    // A master died between committing an assignment and the open: the server has it not.
    let (info, server) = m.locate(&t, b"row0015").unwrap();
    let holder = servers.iter().find(|s| Some(s.name()) == server).unwrap();
    holder.close_region(m.epoch(), info.id).unwrap();
    m.assign_all().unwrap();
    assert_catalog_matches_servers(&cluster, &m);
    cluster.assert_rows(&m, &t, 40);
}

fn recovered_files(cluster: &Cluster) -> Vec<String> {
    use basalt_storage::env::ObjectStore as _;
    cluster
        .store
        .list_all("data/")
        .unwrap()
        .into_iter()
        .filter(|k| k.contains("recovered.edits/"))
        .collect()
}

#[test]
fn a_dead_servers_regions_wait_while_its_log_cannot_be_split() {
    use basalt_storage::env::ObjectStore as _;
    let cluster = Cluster::new();
    let (m, _mc) = cluster.master("m1,16000,1");
    let (doomed, session) = cluster.region_server(16021);
    let t = create(&m, "t", 4);
    cluster.put(&m, &t, "row0001", "v1"); // in the log only: no flush
    let (_other, _os) = cluster.region_server(16022);
    let name = doomed.name();
    kill(&cluster, &doomed, &session);
    drop(doomed);
    // A segment with a chunk missing in its middle: damage, not an end.
    for n in [0u64, 2] {
        let key = format!("wal/{name}/00000000000000000099.wal/{n:020}");
        cluster
            .store
            .put_if_absent(&key, bytes::Bytes::from_static(b"x"))
            .unwrap();
    }
    m.assign_all().unwrap();
    let c = counts(&m);
    assert_eq!(
        c.get(&name),
        Some(&4),
        "its regions stay assigned to it: {c:?}"
    );
    assert!(m.recoveries().contains_key(&name));
    let failed = &m.recovery_stats().failed_splits;
    assert_eq!(failed.load(std::sync::atomic::Ordering::Relaxed), 1);
}

#[test]
fn a_region_server_whose_clock_is_off_is_refused_and_aborts() {
    use crate::coordination::Coordinator as _;
    use crate::options::Options;
    use basalt_storage::env::{Clock as _, ManualClock};
    let cluster = Cluster::new();
    let (m, _mc) = cluster.master("m1,16000,1");
    m.set_max_clock_skew(std::time::Duration::from_secs(1));
    let (_good, _gs) = cluster.region_server(16021);
    // A server whose clock runs five seconds ahead.
    let ahead = ManualClock::new(basalt_storage::env::SystemClock.now_ms() + 5_000);
    let options = Options {
        env: Env::on_shared(
            std::sync::Arc::new(ahead),
            cluster.store.clone(),
            ROOT.into(),
        ),
        server_port: 16022,
        ..Options::default()
    };
    let coordinator = std::sync::Arc::new(cluster.ensemble.connect());
    let skewed = std::sync::Arc::new(
        ClusterRegionServer::start(Path::new(ROOT), "memory:///", &options, coordinator.clone())
            .unwrap(),
    );
    cluster
        .servers
        .0
        .lock()
        .insert(skewed.name(), skewed.clone());
    let t = create(&m, "t", 4);
    let c = counts(&m);
    assert_eq!(c.len(), 1, "every region on the good server: {c:?}");
    assert!(!c.contains_key(&skewed.name()));
    let why = skewed.must_abort().expect("it aborted");
    assert!(why.contains("hbase.master.maxclockskew"), "{why}");
    let (live, _) = coordinator.live_servers().unwrap();
    assert!(!live.contains(&skewed.name()), "it left at once: {live:?}");
    cluster.fill(&m, &t, 40);
    cluster.assert_rows(&m, &t, 40);
}

#[test]
fn a_scan_under_way_returns_no_row_once_the_lease_runs_out() {
    use basalt_api::Connection as _;
    let cluster = Cluster::new();
    let (m, _mc) = cluster.master("m1,16000,1");
    let (rs, session) = cluster.region_server(16021);
    let t = create(&m, "t", 1);
    cluster.fill(&m, &t, 10);
    let table = RegionServerConnection::new(rs).table(&t).unwrap();
    let mut scan = table.scan(basalt_model::ops::Scan::new()).unwrap();
    assert!(scan.next_row().unwrap().is_some());
    // The server is paused past its lease while the scan holds its region: the next row
    // is read from the region it already has, and must not go out.
    cluster.ensemble.disconnect(
        &session,
        std::time::Instant::now() - std::time::Duration::from_secs(60),
    );
    let e = scan.next_row().unwrap_err();
    assert!(
        matches!(e, Error::NotServingRegion(ref m) if m.contains("lost its coordination session")),
        "{e}"
    );
}

#[test]
fn a_split_run_again_over_a_log_cut_short_keeps_the_files_it_cannot_read() {
    use basalt_storage::env::{MemoryStore, ObjectStore as _};
    let store = MemoryStore::new();
    let flaky = super::simulation::flaky::FlakyStore::new(store.clone(), 0);
    let cluster = Cluster::over(store, flaky.clone());
    let (m, _mc, t, name) = a_dead_server(&cluster, 1, 20);
    m.split_into_recovered_edits(&name).unwrap();
    let files = recovered_files(&cluster);
    assert_eq!(files.len(), 1, "{files:?}");
    let written = cluster.store.get(&files[0]).unwrap();
    // The clearing of the log stopped part-way: its later records are gone. A split run
    // again then reads the log cut short, and the file it wrote cannot be read just now.
    let segment = format!("wal/{name}/00000000000000000001.wal/");
    let mut chunks = cluster.store.list_all(&segment).unwrap();
    chunks.sort();
    assert!(chunks.len() > 12, "a chunk per write: {chunks:?}");
    for key in &chunks[chunks.len() / 2..chunks.len() - 1] {
        cluster.store.delete(key).unwrap();
    }
    flaky.fail_reads_of(Some("recovered.edits/"));
    assert!(m.split_into_recovered_edits(&name).is_err());
    flaky.fail_reads_of(None);
    assert_eq!(
        cluster.store.get(&files[0]).unwrap(),
        written,
        "the file stays whole"
    );
    m.split_into_recovered_edits(&name).unwrap();
    assert_eq!(cluster.store.get(&files[0]).unwrap(), written);
    let (_rs, _s) = cluster.region_server(16022);
    m.assign_all().unwrap();
    cluster.assert_rows(&m, &t, 20);
}

#[test]
fn a_region_that_has_not_replayed_its_recovered_edits_is_not_merged() {
    let cluster = Cluster::new();
    let (m, _mc, t, name) = a_dead_server(&cluster, 2, 20);
    let (other, _os) = cluster.region_server(16022);
    m.split_into_recovered_edits(&name).unwrap();
    // A master assigned the regions to the live server and died before they opened there.
    m.edit(|c| {
        for a in c.assignments.values_mut() {
            a.server = Some(other.name());
        }
        Ok(())
    })
    .unwrap();
    let ids: Vec<u64> = m
        .catalog()
        .table(&t)
        .unwrap()
        .regions
        .iter()
        .map(|r| r.id)
        .collect();
    let e = m.merge_regions(&ids, false).unwrap_err();
    assert!(matches!(e, Error::NotServingRegion(_)), "{e}");
    // Nor does the region's directory hand on its files while the edits wait.
    let dir = Path::new(ROOT)
        .join("data/default/t")
        .join(ids[0].to_string());
    let e = Region::stored_handed_files(&cluster.env(), &dir, ids[0]).unwrap_err();
    assert!(
        matches!(e, Error::NotServingRegion(ref m) if m.contains("recovered")),
        "{e}"
    );
    m.assign_all().unwrap();
    assert!(recovered_files(&cluster).is_empty());
    m.merge_regions(&ids, false).unwrap();
    cluster.assert_rows(&m, &t, 20);
}
