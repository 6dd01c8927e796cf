//! Failover between processes: a real ZooKeeper with a 2 s session timeout, `basalt
//! master` and three `basalt regionserver`s over a shared directory, twenty regions, and
//! eight writers running SYNC_WAL puts, increments and check-and-mutates through the
//! client. The region server holding the most regions is killed with SIGKILL; another is
//! paused (SIGSTOP) for three session timeouts and resumed; then the active master is
//! killed with SIGKILL and a backup takes over. In another test, a region server in a
//! network namespace of its own is cut off from ZooKeeper alone. After each, every checker
//! of the load (`cluster/load.rs`: the acknowledged-write ledger, per-cell linearizability,
//! the big linked list) and:
//! - the invariant sweep: every region open on a live server, the catalog agreeing, no
//!   recovery left, the killed and paused servers gone (the paused one exits on waking);
//! - the master's `/metrics` counts the recoveries.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod cluster;
mod http;
mod process;

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use basalt_api::ClusterStatus;
use basalt_client::Connection;
use basalt_model::ops::Put;
use basalt_model::{ColumnFamilyDescriptor, TableDescriptor, TableName};
use basalt_storage::failpoint;
use basalt_testkit::services::{SeaweedFs, ZooKeeper};
use bytes::Bytes;
use cluster::load::under_load;
use cluster::netns::Netns;
use cluster::{all_assigned, wait_for, Cluster, Process};

const SESSION_TIMEOUT_MS: u64 = 2000;
const REGIONS: usize = 20;

/// The invariant sweep: every region open on a live server, and the catalog agreeing.
async fn sweep(conn: &Connection, table: &TableName, live: usize) -> ClusterStatus {
    sweep_of(conn, table, live, REGIONS).await
}

/// [`sweep`] of a table that has `regions` regions.
async fn sweep_of(
    conn: &Connection,
    table: &TableName,
    live: usize,
    regions: usize,
) -> ClusterStatus {
    let admin = conn.admin();
    let s = wait_for(&admin, "recovered", |s| {
        all_assigned(live)(s) && s.recoveries.is_empty()
    })
    .await;
    let names: BTreeSet<&String> = s.servers.iter().map(|x| &x.name).collect();
    let reports = admin.region_loads(table).await.unwrap();
    assert_eq!(reports.len(), regions);
    for (region, _, server) in &reports {
        assert!(
            names.contains(server),
            "region {} on {server}, not a live server",
            region.id
        );
    }
    assert_eq!(
        s.servers.iter().map(|x| x.regions).sum::<usize>(),
        regions,
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
    exits_with_an_error(&mut paused, "the paused server, after waking").await;
}

/// Waits (polling the process, for up to a minute) until `p` exits, and checks it failed.
async fn exits_with_an_error(p: &mut Process, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(st) = p.child.try_wait().unwrap() {
            break st;
        }
        assert!(Instant::now() < deadline, "{what} did not exit");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(!status.success(), "{what} exits with an error: {status}");
}

/// Kills the active master with SIGKILL: the backup takes over, and the writers, which
/// find it through their seeds, go on.
async fn kill_the_master(cluster: &mut Cluster, conn: &Connection) {
    let zk = cluster.zookeeper.address.clone();
    let backup = Process::start("master", &zk, &cluster.storage, &cluster.env, &cluster.args);
    take_over_by(cluster, conn, backup, 1).await;
}

/// Kills the active master (the first) with SIGKILL once `backup` waits behind it, which
/// then takes over, becomes the first, and finds `live` region servers.
async fn take_over_by(cluster: &mut Cluster, conn: &Connection, backup: Process, live: usize) {
    let backup_name = backup.name.clone();
    let admin = conn.admin();
    wait_for(&admin, "a backup master", |s| {
        s.backup_masters == [backup_name.clone()]
    })
    .await;
    let mut active = cluster.masters.remove(0);
    active.child.kill().unwrap();
    active.child.wait().unwrap();
    cluster.masters.insert(0, backup);
    wait_for(&admin, "the backup took over", |s| {
        s.master == backup_name && all_assigned(live)(s)
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

/// A cluster on a shared directory (held by the returned directory) whose processes have
/// a session timeout of `timeout_ms`, a client, and the table of 20 regions, all assigned.
async fn start(timeout_ms: u64) -> (tempfile::TempDir, Cluster, Connection, TableName) {
    start_on(ZooKeeper::start(), timeout_ms, None, None).await
}

/// As [`start`], on `zookeeper`, with a fourth region server started by `fourth` (in
/// another network namespace, listening on the address given) when there is one, and over
/// `store` (a storage URL and the environment that reaches it) when there is one.
async fn start_on(
    zookeeper: ZooKeeper,
    timeout_ms: u64,
    fourth: Option<(std::process::Command, String)>,
    store: Option<(String, Vec<(&'static str, String)>)>,
) -> (tempfile::TempDir, Cluster, Connection, TableName) {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("basalt.toml");
    std::fs::write(
        &config,
        format!("\"zookeeper.session.timeout\" = {timeout_ms}\n"),
    )
    .unwrap();
    let (storage, env) = store.unwrap_or_else(|| {
        let shared = format!("file://{}", dir.path().join("storage").display());
        (shared, Vec::new())
    });
    let args = vec!["--config".to_owned(), config.display().to_string()];
    let mut cluster = Cluster::start_on(zookeeper, storage, env, args);
    let mut live = 3;
    if let Some((program, bind)) = fourth {
        let zk = cluster.zookeeper.address.clone();
        let mut args = cluster.args.clone();
        args.extend(["--bind".to_owned(), bind]);
        let rs = Process::start_by(
            program,
            "regionserver",
            &zk,
            &cluster.storage,
            &cluster.env,
            &args,
        );
        cluster.servers.push(rs);
        live += 1;
    }
    let conn = Connection::connect(&cluster.seeds()).await.unwrap();
    wait_for(&conn.admin(), "every region server", |s| {
        s.servers.len() == live
    })
    .await;
    let table = create_table(&conn).await;
    sweep(&conn, &table, live).await;
    (dir, cluster, conn, table)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn killed_and_paused_region_servers_and_a_killed_master_lose_no_acknowledged_write() {
    let (_dir, mut cluster, conn, table) = start(SESSION_TIMEOUT_MS).await;

    let mut took = Duration::ZERO;
    let load = under_load(&conn, 1, async {
        took = kill_the_busiest(&mut cluster, &conn).await;
    })
    .await;
    eprintln!(
        "SIGKILL of the busiest region server: every region serving again {} ms after the kill",
        took.as_millis()
    );
    load.check(&conn).await;
    let s = sweep(&conn, &table, 2).await;
    // The master's page lists the dead server, and no recovery under way.
    let page = http::get(&cluster.masters[0].info);
    let dead = format!(
        "<ul id=\"dead-servers\"><li>{}</li></ul>",
        s.dead_servers[0]
    );
    assert!(page.contains(&dead), "{page}");
    assert!(page.contains("<ul id=\"recoveries\"></ul>"), "{page}");

    let load = under_load(&conn, 2, pause_one(&mut cluster, &conn)).await;
    load.check(&conn).await;
    sweep(&conn, &table, 1).await;

    let metrics = http::get(&format!("{}metrics", cluster.masters[0].info));
    assert!(
        metrics.contains("basalt_master_recoveries_total 2"),
        "{metrics}"
    );

    let load = under_load(&conn, 3, kill_the_master(&mut cluster, &conn)).await;
    load.check(&conn).await;
    sweep(&conn, &table, 1).await;
    let metrics = http::get(&format!("{}metrics", cluster.masters[0].info));
    assert!(
        metrics.contains("basalt_master_recoveries_in_progress 0"),
        "{metrics}"
    );
    cluster.stop_all();
}

/// The nastiest partition: a region server cut off from ZooKeeper but not from storage,
/// clients or the master. Its lease runs out, so it refuses reads and writes; its session
/// ends, the master fences its log and reopens its regions elsewhere; writers go on; once
/// the link is back it learns the session ended and exits.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_region_server_cut_off_from_zookeeper_alone_loses_nothing_and_exits() {
    let net = Netns::create(1);
    let zookeeper = ZooKeeper::start_on(&net.service_ip);
    let program = net.command(env!("CARGO_BIN_EXE_basalt"));
    let fourth = Some((program, net.ns_ip.clone()));
    let (_dir, mut cluster, conn, table) =
        start_on(zookeeper, SESSION_TIMEOUT_MS, fourth, None).await;
    let mut cut = cluster.servers.pop().unwrap();
    let name = cut.name.clone();
    assert!(name.starts_with(&net.ns_ip), "{name}");
    let admin = conn.admin();
    wait_for(&admin, "the namespace's server holds regions", |s| {
        s.servers.iter().any(|x| x.name == name && x.regions > 0)
    })
    .await;

    let load = under_load(&conn, 1, async {
        net.cut();
        wait_for(&admin, "the cut-off server's regions reopened", |s| {
            all_assigned(3)(s) && s.recoveries.is_empty() && s.dead_servers.contains(&name)
        })
        .await;
    })
    .await;
    load.check(&conn).await;
    sweep(&conn, &table, 3).await;
    // It learns that its session ended when it reaches ZooKeeper again, if not sooner.
    net.heal();
    exits_with_an_error(&mut cut, "the cut-off server, once the link is back").await;
    cluster.stop_all();
}

/// Makes a master armed to die at failpoint `point` the active one: it starts as the
/// backup, the active master is killed, and it takes over; a plain backup then waits
/// behind it.
async fn arm_the_master(cluster: &mut Cluster, conn: &Connection, point: &str) {
    let mut env = cluster.env.clone();
    env.push((failpoint::ARMED_BY, point.to_owned()));
    let zk = cluster.zookeeper.address.clone();
    let armed = Process::start("master", &zk, &cluster.storage, &env, &cluster.args);
    let armed_name = armed.name.clone();
    let live = cluster.servers.len();
    take_over_by(cluster, conn, armed, live).await;
    let plain = Process::start("master", &zk, &cluster.storage, &cluster.env, &cluster.args);
    let plain_name = plain.name.clone();
    cluster.masters.push(plain);
    wait_for(&conn.admin(), "a plain backup master", |s| {
        s.master == armed_name && s.backup_masters == [plain_name.clone()]
    })
    .await;
}

/// The armed master died at its failpoint, and the plain backup took over.
async fn the_armed_master_died(cluster: &mut Cluster, conn: &Connection) {
    let mut armed = cluster.masters.remove(0);
    exits_with_an_error(&mut armed, "the armed master").await;
    let backup = cluster.masters[0].name.clone();
    wait_for(&conn.admin(), "the backup took over", |s| {
        s.master == backup
    })
    .await;
}

fn start_region_server(cluster: &mut Cluster, env: &[(&'static str, String)]) {
    let zk = cluster.zookeeper.address.clone();
    let rs = Process::start("regionserver", &zk, &cluster.storage, env, &cluster.args);
    cluster.servers.push(rs);
}

/// Two adjacent regions' encoded names, and the key splitting one of them.
async fn merge_and_split_targets(conn: &Connection, table: &TableName) -> (Vec<String>, Bytes) {
    let regions = conn.admin().regions(table).await.unwrap();
    let names = regions[..2].iter().map(|r| r.encoded_name(table)).collect();
    let mut key = regions[4].start_key.to_vec();
    key.extend_from_slice(b"5");
    (names, Bytes::from(key))
}

/// `kill -9` of the active master at each step HBase's procedures must survive: between a
/// dead server's fence and its log's split, between the split and the assignment, with a
/// split's parent closed, and with a merge's parents closed. The plain backup finishes or
/// undoes the work; under load every checker passes and every region ends open on exactly
/// one live server. Last, the server receiving a dead server's regions dies too, as it
/// replays their edits.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn masters_and_a_receiving_server_killed_part_way_lose_nothing() {
    let (_dir, mut cluster, conn, table) = start(SESSION_TIMEOUT_MS).await;
    let plain_env = cluster.env.clone();
    for (seed, point) in [
        (11, "master.recovery.fenced"),
        (12, "master.recovery.split"),
    ] {
        arm_the_master(&mut cluster, &conn, point).await;
        let load = under_load(&conn, seed, async {
            kill_the_busiest(&mut cluster, &conn).await;
            the_armed_master_died(&mut cluster, &conn).await;
        })
        .await;
        load.check(&conn).await;
        sweep(&conn, &table, 2).await;
        start_region_server(&mut cluster, &plain_env);
        sweep(&conn, &table, 3).await;
    }

    let (names, key) = merge_and_split_targets(&conn, &table).await;
    arm_the_master(&mut cluster, &conn, "master.split.closed").await;
    let admin = conn.admin();
    let load = under_load(&conn, 13, async {
        // The client asks the backup again once the armed master is gone; either way the
        // split is whole or not at all.
        let _ = admin.split_table(&table, Some(&key)).await;
        the_armed_master_died(&mut cluster, &conn).await;
    })
    .await;
    load.check(&conn).await;
    let regions = admin.regions(&table).await.unwrap().len();
    assert!((REGIONS..=REGIONS + 1).contains(&regions), "{regions}");
    sweep_of(&conn, &table, 3, regions).await;

    arm_the_master(&mut cluster, &conn, "master.merge.closed").await;
    let load = under_load(&conn, 14, async {
        let names: Vec<&[u8]> = names.iter().map(String::as_bytes).collect();
        let _ = admin.merge_regions(&names, false).await;
        the_armed_master_died(&mut cluster, &conn).await;
    })
    .await;
    load.check(&conn).await;
    let after = admin.regions(&table).await.unwrap().len();
    assert!(
        (regions - 1..=regions).contains(&after),
        "{regions} then {after}"
    );
    sweep_of(&conn, &table, 3, after).await;

    // A fourth server that dies as it replays a dead server's edits: it holds no region
    // yet, so it receives the most.
    let mut armed_env = plain_env.clone();
    armed_env.push((failpoint::ARMED_BY, "region.replaying".to_owned()));
    start_region_server(&mut cluster, &armed_env);
    let receiving = cluster.servers.pop().unwrap();
    wait_for(&admin, "four region servers", |s| s.servers.len() == 4).await;
    let load = under_load(&conn, 15, async {
        kill_the_busiest(&mut cluster, &conn).await;
    })
    .await;
    load.check(&conn).await;
    let mut receiving = receiving;
    exits_with_an_error(&mut receiving, "the receiving server").await;
    let s = sweep_of(&conn, &table, 2, after).await;
    assert!(s.dead_servers.contains(&receiving.name), "{s:#?}");
    cluster.stop_all();
}

/// The same recovery over SeaweedFS's S3, whose volumes keep two copies on three volume
/// servers: the busiest region server is killed, then one volume server. Writes go on once
/// the store has rerouted them; the longest a probe write waited is printed (the pause).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn on_seaweedfs_a_killed_region_server_and_volume_server_lose_nothing() {
    let mut weed = SeaweedFs::start_replicated();
    let store = Some((weed.url("failover"), weed.aws_env()));
    let (_dir, mut cluster, conn, table) =
        start_on(ZooKeeper::start(), SESSION_TIMEOUT_MS, None, store).await;
    let load = under_load(&conn, 21, async {
        kill_the_busiest(&mut cluster, &conn).await;
    })
    .await;
    load.check(&conn).await;
    sweep(&conn, &table, 2).await;

    let probe = conn.table(&table.to_string()).unwrap();
    let mut longest = Duration::ZERO;
    let load = under_load(&conn, 22, async {
        weed.kill_volume_server(1);
        for i in 0..200 {
            let put = Put::new(format!("probe{i:04}")).add("f", "q", "v");
            let started = Instant::now();
            probe.put(put).await.unwrap();
            longest = longest.max(started.elapsed());
        }
    })
    .await;
    eprintln!(
        "a SeaweedFS volume server killed: the longest a write waited was {} ms",
        longest.as_millis()
    );
    load.check(&conn).await;
    sweep(&conn, &table, 2).await;
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
    let load = under_load(&conn, 1, async {
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
    load.check(&conn).await;
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
