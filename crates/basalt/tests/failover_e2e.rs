//! Failover between processes: a real ZooKeeper with a 2 s session timeout, `basalt
//! master` and three `basalt regionserver`s over a shared directory, twenty regions, and
//! eight writers running SYNC_WAL puts, increments and check-and-mutates through the
//! client. The region server holding the most regions is killed with SIGKILL; another is
//! paused (SIGSTOP) for three session timeouts and resumed; then the active master is
//! killed with SIGKILL and a backup takes over. After each:
//! - the acknowledged-write ledger: every put a writer saw acknowledged is there, each
//!   counter holds at least its acknowledged increments and at most those attempted, and
//!   each writer's check-and-mutate row holds exactly the value its history leads to;
//! - the invariant sweep: every region open on a live server, the catalog agreeing, no
//!   recovery left, the killed and paused servers gone (the paused one exits on waking);
//! - the master's `/metrics` counts the recoveries.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod cluster;
mod http;
mod process;

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use basalt_api::ClusterStatus;
use basalt_client::{Connection, Table};
use basalt_model::ops::{CheckAndMutate, CompareOp, Get, Increment, Put, Scan};
use basalt_model::{ColumnFamilyDescriptor, TableDescriptor, TableName};
use bytes::Bytes;
use cluster::{all_assigned, wait_for, Cluster, Process};

const SESSION_TIMEOUT_MS: u64 = 2000;
const REGIONS: usize = 20;

/// What one writer saw.
#[derive(Debug, Default)]
struct Ledger {
    /// Its counter's row and its check-and-mutate row.
    counter: String,
    cam_row: String,
    /// Rows whose put was acknowledged.
    puts: Vec<String>,
    /// Increments acknowledged, and those whose outcome is unknown (an error).
    increments: (u64, u64),
    /// The value this writer's check-and-mutate row must hold.
    cam: u64,
    errors: usize,
}

fn key(i: usize) -> String {
    format!("k{:05}", i * 7919 % 100_000)
}

/// Eight writers until `stop`, each on rows of its own.
fn writers(
    conn: &Connection,
    stop: &Arc<AtomicBool>,
    phase: usize,
) -> Vec<tokio::task::JoinHandle<Ledger>> {
    (0..8)
        .map(|w| {
            let t = conn.table("f").unwrap();
            let stop = Arc::clone(stop);
            tokio::spawn(async move { write(&t, w, phase, &stop).await })
        })
        .collect()
}

async fn write(t: &Table, w: usize, phase: usize, stop: &AtomicBool) -> Ledger {
    let (counter, cam_row) = (
        format!("{}-ctr-p{phase}-w{w}", key(w)),
        format!("{}-cam-p{phase}-w{w}", key(w + 8)),
    );
    let mut l = Ledger {
        counter: counter.clone(),
        cam_row: cam_row.clone(),
        ..Ledger::default()
    };
    let mut in_doubt = false;
    let mut n = 0usize;
    while !stop.load(Ordering::SeqCst) {
        n += 1;
        match n % 4 {
            0 => match t
                .increment(Increment::new(counter.clone()).add("f", "n", 1))
                .await
            {
                Ok(_) => l.increments.0 += 1,
                Err(_) => {
                    l.increments.1 += 1;
                    l.errors += 1;
                }
            },
            1 => {
                if in_doubt {
                    // Learn what a check-and-mutate in doubt did before the next one.
                    match cam_value(t, &cam_row).await {
                        Some(v) => {
                            l.cam = v;
                            in_doubt = false;
                        }
                        None => continue,
                    }
                }
                let next = (l.cam + 1).to_string();
                let cam = if l.cam == 0 {
                    CheckAndMutate::if_not_exists(cam_row.clone(), "f", "v")
                } else {
                    CheckAndMutate::if_matches(
                        cam_row.clone(),
                        "f",
                        "v",
                        CompareOp::Equal,
                        l.cam.to_string(),
                    )
                };
                match t
                    .check_and_mutate(cam.then_put(Put::new(cam_row.clone()).add("f", "v", next)))
                    .await
                {
                    Ok(true) => l.cam += 1,
                    Ok(false) => panic!(
                        "writer {w}: {cam_row} is not at {} though only it writes the row",
                        l.cam
                    ),
                    Err(_) => {
                        in_doubt = true;
                        l.errors += 1;
                    }
                }
            }
            _ => {
                let row = format!("{}-p{phase}-w{w}", key(n));
                match t.put(Put::new(row.clone()).add("f", "q", "x")).await {
                    Ok(()) => l.puts.push(row),
                    Err(_) => l.errors += 1,
                }
            }
        }
    }
    if in_doubt {
        l.cam = cam_value(t, &cam_row)
            .await
            .expect("the row reads once the cluster has recovered");
    }
    l
}

async fn cam_value(t: &Table, row: &str) -> Option<u64> {
    let r = t.get(Get::new(row.to_owned())).await.ok()?;
    Some(
        r.value(b"f", b"v")
            .map_or(0, |v| std::str::from_utf8(v).unwrap().parse().unwrap()),
    )
}

async fn counter_value(t: &Table, row: &str) -> u64 {
    let r = t.get(Get::new(row.to_owned())).await.unwrap();
    r.value(b"f", b"n")
        .map_or(0, |v| u64::from_be_bytes(v[..].try_into().unwrap()))
}

/// Every acknowledged write is there (the ledger check).
async fn check_ledgers(conn: &Connection, ledgers: &[Ledger]) {
    let t = conn.table("f").unwrap();
    let rows: BTreeSet<Bytes> = t
        .scan(Scan::new())
        .await
        .unwrap()
        .collect()
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.row.clone())
        .collect();
    let mut lost = Vec::new();
    for (w, l) in ledgers.iter().enumerate() {
        lost.extend(
            l.puts
                .iter()
                .filter(|p| !rows.contains(p.as_bytes()))
                .cloned(),
        );
        let stored = counter_value(&t, &l.counter).await;
        let (acked, doubt) = l.increments;
        assert!(
            (acked..=acked + doubt).contains(&stored),
            "writer {w}: counter {stored}, {acked} increments acknowledged, {doubt} in doubt"
        );
        let cam = cam_value(&t, &l.cam_row).await.unwrap();
        assert_eq!(cam, l.cam, "writer {w}: its check-and-mutate row");
    }
    let acked: usize = ledgers.iter().map(|l| l.puts.len()).sum();
    assert!(
        lost.is_empty(),
        "{} of {acked} acknowledged puts lost: {:?}",
        lost.len(),
        &lost[..lost.len().min(10)]
    );
    assert!(acked > 100, "only {acked} puts acknowledged");
}

/// The invariant sweep: every region open on a live server, and the catalog agreeing.
async fn sweep(conn: &Connection, table: &TableName, live: usize) -> ClusterStatus {
    let admin = conn.admin();
    let s = wait_for(&admin, "recovered", |s| {
        all_assigned(live)(s) && s.recoveries.is_empty()
    })
    .await;
    let names: BTreeSet<&String> = s.servers.iter().map(|x| &x.name).collect();
    let reports = admin.region_loads(table).await.unwrap();
    assert_eq!(reports.len(), REGIONS);
    for (region, _, server) in &reports {
        assert!(
            names.contains(server),
            "region {} on {server}, not a live server",
            region.id
        );
    }
    assert_eq!(
        s.servers.iter().map(|x| x.regions).sum::<usize>(),
        REGIONS,
        "{s:#?}"
    );
    s
}

/// Kills the busiest region server under load and measures the time until every region
/// serves again.
async fn kill_the_busiest(cluster: &mut Cluster, conn: &Connection) -> Duration {
    let admin = conn.admin();
    let s = admin.cluster_status().await.unwrap();
    let busiest = s
        .servers
        .iter()
        .max_by_key(|x| x.regions)
        .unwrap()
        .name
        .clone();
    let i = cluster
        .servers
        .iter()
        .position(|p| p.name == busiest)
        .unwrap();
    let mut victim = cluster.servers.remove(i);
    let killed = Instant::now();
    victim.child.kill().unwrap();
    victim.child.wait().unwrap();
    wait_for(&admin, "the killed server's regions reopened", |s| {
        all_assigned(2)(s) && s.recoveries.is_empty() && s.dead_servers.contains(&busiest)
    })
    .await;
    killed.elapsed()
}

/// Pauses a region server for three session timeouts: its regions reopen elsewhere, and on
/// waking it finds itself fenced and exits.
async fn pause_one(cluster: &mut Cluster, conn: &Connection) {
    let admin = conn.admin();
    let mut paused = cluster.servers.remove(0);
    let pid = paused.child.id().to_string();
    signal("-STOP", &pid);
    let name = paused.name.clone();
    wait_for(&admin, "the paused server's regions reopened", |s| {
        all_assigned(1)(s) && s.recoveries.is_empty() && s.dead_servers.contains(&name)
    })
    .await;
    signal("-CONT", &pid);
    // It exits on its own, with an error: it lost its session and was fenced.
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(st) = paused.child.try_wait().unwrap() {
            break st;
        }
        assert!(
            Instant::now() < deadline,
            "the paused server did not exit after waking"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(!status.success(), "it exits with an error: {status}");
}

/// Kills the active master with SIGKILL: the backup takes over, and the writers, which
/// find it through their seeds, go on.
async fn kill_the_master(cluster: &mut Cluster, conn: &Connection) {
    let zk = cluster.zookeeper.address.clone();
    let backup = Process::start("master", &zk, &cluster.storage, &cluster.env, &cluster.args);
    let backup_name = backup.name.clone();
    let admin = conn.admin();
    wait_for(&admin, "a backup master", |s| {
        s.backup_masters == [backup_name.clone()]
    })
    .await;
    let mut active = cluster.masters.remove(0);
    active.child.kill().unwrap();
    active.child.wait().unwrap();
    cluster.masters.push(backup);
    wait_for(&admin, "the backup took over", |s| {
        s.master == backup_name && all_assigned(1)(s)
    })
    .await;
}

fn signal(sig: &str, pid: &str) {
    let sent = std::process::Command::new("kill").args([sig, pid]).status();
    assert!(sent.is_ok_and(|s| s.success()), "kill {sig} {pid}");
}

async fn create_table(conn: &Connection) -> TableName {
    let desc = TableDescriptor::new(
        &TableName::parse("f").unwrap(),
        [ColumnFamilyDescriptor::new("f")],
    );
    let splits: Vec<Bytes> = (1..REGIONS)
        .map(|i| Bytes::from(format!("k{:05}", i * 100_000 / REGIONS)))
        .collect();
    conn.admin().create_table(&desc, &splits).await.unwrap();
    desc.table_name()
}

/// Runs the writers of `phase` for a second, then `disrupt`, then a second more; returns
/// their ledgers.
async fn under_load<F: std::future::Future<Output = ()>>(
    conn: &Connection,
    phase: usize,
    disrupt: F,
) -> Vec<Ledger> {
    let stop = Arc::new(AtomicBool::new(false));
    let writing = writers(conn, &stop, phase);
    tokio::time::sleep(Duration::from_millis(1000)).await; // load running when it happens
    disrupt.await;
    tokio::time::sleep(Duration::from_millis(1000)).await; // writes after recovery too
    stop.store(true, Ordering::SeqCst);
    let mut ledgers = Vec::new();
    for w in writing {
        ledgers.push(w.await.unwrap());
    }
    ledgers
}

/// A cluster on a shared directory (held by the returned directory) whose processes have
/// a session timeout of `timeout_ms`, a client, and the table of 20 regions, all assigned.
async fn start(timeout_ms: u64) -> (tempfile::TempDir, Cluster, Connection, TableName) {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("basalt.toml");
    std::fs::write(
        &config,
        format!("\"zookeeper.session.timeout\" = {timeout_ms}\n"),
    )
    .unwrap();
    let storage = format!("file://{}", dir.path().join("storage").display());
    let args = vec!["--config".to_owned(), config.display().to_string()];
    let cluster = Cluster::start_with(storage, Vec::new(), args);
    let conn = Connection::connect(&cluster.seeds()).await.unwrap();
    let table = create_table(&conn).await;
    sweep(&conn, &table, 3).await;
    (dir, cluster, conn, table)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn killed_and_paused_region_servers_and_a_killed_master_lose_no_acknowledged_write() {
    let (_dir, mut cluster, conn, table) = start(SESSION_TIMEOUT_MS).await;

    let mut took = Duration::ZERO;
    let ledgers = under_load(&conn, 1, async {
        took = kill_the_busiest(&mut cluster, &conn).await;
    })
    .await;
    eprintln!(
        "SIGKILL of the busiest region server: every region serving again {} ms after the kill",
        took.as_millis()
    );
    check_ledgers(&conn, &ledgers).await;
    sweep(&conn, &table, 2).await;

    let ledgers = under_load(&conn, 2, pause_one(&mut cluster, &conn)).await;
    check_ledgers(&conn, &ledgers).await;
    sweep(&conn, &table, 1).await;

    let metrics = http::get(&format!("{}metrics", cluster.masters[0].info));
    assert!(
        metrics.contains("basalt_master_recoveries_total 2"),
        "{metrics}"
    );

    let ledgers = under_load(&conn, 3, kill_the_master(&mut cluster, &conn)).await;
    check_ledgers(&conn, &ledgers).await;
    sweep(&conn, &table, 1).await;
    let metrics = http::get(&format!("{}metrics", cluster.masters[0].info));
    assert!(
        metrics.contains("basalt_master_recoveries_in_progress 0"),
        "{metrics}"
    );
    cluster.stop_all();
}

/// Time to recovery over many kills (a soak, for `BENCHMARKS.md`): the busiest region
/// server is killed with SIGKILL `BASALT_FAILOVER_KILLS` times (20 by default) under eight
/// writers, a new one starting after each, with a session timeout of
/// `BASALT_SESSION_TIMEOUT_MS` (2000 by default). Prints p50, p99 and the worst, then
/// checks the ledger.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "a soak of many kills; the README gives the command"]
async fn time_to_recovery_over_many_kills() {
    let var = |name: &str, default: u64| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let (kills, timeout_ms) = (
        var("BASALT_FAILOVER_KILLS", 20),
        var("BASALT_SESSION_TIMEOUT_MS", SESSION_TIMEOUT_MS),
    );
    let (_dir, mut cluster, conn, table) = start(timeout_ms).await;
    let mut took = Vec::new();
    let ledgers = under_load(&conn, 1, async {
        for _ in 0..kills {
            took.push(kill_the_busiest(&mut cluster, &conn).await);
            let zk = cluster.zookeeper.address.clone();
            let rs = Process::start(
                "regionserver",
                &zk,
                &cluster.storage,
                &cluster.env,
                &cluster.args,
            );
            cluster.servers.push(rs);
            wait_for(&conn.admin(), "a new region server", all_assigned(3)).await;
        }
    })
    .await;
    check_ledgers(&conn, &ledgers).await;
    sweep(&conn, &table, 3).await;
    let mut ms: Vec<u128> = took.iter().map(Duration::as_millis).collect();
    ms.sort_unstable();
    let at = |q: usize| ms[(ms.len() * q / 100).min(ms.len() - 1)];
    eprintln!(
        "time to recovery over {} kills, session timeout {timeout_ms} ms: p50 {} ms, p99 {} ms, worst {} ms; all: {ms:?}",
        ms.len(),
        at(50),
        at(99),
        ms[ms.len() - 1]
    );
    cluster.stop_all();
}
