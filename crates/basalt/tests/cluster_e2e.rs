//! A cluster as separate processes: a real ZooKeeper, `basalt master` and three
//! `basalt regionserver`s on loopback, over a shared directory and over SeaweedFS's S3.
//! Thirty regions spread over the servers, written and read through the client and the
//! shell; a server decommissioned and recommissioned; the balancer; 100 moves under eight
//! writers that see no error and lose nothing; happybase through a `basalt thrift` gateway
//! seeded with the cluster's addresses; a whole-cluster restart; a backup master taking over
//! from one that stops cleanly.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod cluster;
mod http;
mod process;
mod python;

use cluster::{all_assigned, wait_for, Cluster, Process};

use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use basalt_api::ClusterStatus;
use basalt_client::{Admin, Connection};
use basalt_model::ops::{Get, Mutation, Put, Scan};
use basalt_model::{ColumnFamilyDescriptor, TableDescriptor, TableName};
use basalt_testkit::services::SeaweedFs;
use bytes::Bytes;

const ROWS: usize = 3000;

fn counts(s: &ClusterStatus) -> Vec<usize> {
    s.servers.iter().map(|x| x.regions).collect()
}

fn spread_within_one(s: &ClusterStatus) -> bool {
    let c = counts(s);
    c.iter().max().unwrap() - c.iter().min().unwrap() <= 1
}

fn row(i: usize) -> String {
    format!("row{i:05}")
}

async fn create_table(admin: &Admin) -> TableName {
    let desc = TableDescriptor::new(
        &TableName::parse("t").unwrap(),
        [ColumnFamilyDescriptor::new("f")],
    );
    let splits: Vec<Bytes> = (1..30).map(|i| Bytes::from(row(i * ROWS / 30))).collect();
    admin.create_table(&desc, &splits).await.unwrap();
    desc.table_name()
}

async fn count_rows(conn: &Connection) -> usize {
    conn.table("t")
        .unwrap()
        .scan(Scan::new())
        .await
        .unwrap()
        .collect()
        .await
        .unwrap()
        .len()
}

/// Eight writers put distinct rows until `stop`; each returns the rows it had acknowledged.
fn writers(conn: &Connection, stop: &Arc<AtomicBool>) -> Vec<tokio::task::JoinHandle<Vec<String>>> {
    (0..8)
        .map(|w| {
            let t = conn.table("t").unwrap();
            let stop = Arc::clone(stop);
            tokio::spawn(async move {
                let mut done = Vec::new();
                let mut n = 0usize;
                while !stop.load(Ordering::SeqCst) {
                    let key = format!("{}-w{w}", row(n * 7919 % ROWS));
                    t.put(Put::new(key.clone()).add("f", "w", "x"))
                        .await
                        .unwrap();
                    done.push(key);
                    n += 1;
                }
                done
            })
        })
        .collect()
}

/// 100 moves of regions to another server, timed.
async fn hundred_moves(admin: &Admin, table: &TableName, servers: &[String]) -> Vec<Duration> {
    let mut took = Vec::new();
    for i in 0..100 {
        let reports = admin.region_loads(table).await.unwrap();
        let (region, _, from) = &reports[(i * 7) % reports.len()];
        let to = servers.iter().find(|s| *s != from).unwrap();
        let started = Instant::now();
        admin
            .move_region(region.encoded_name(table).as_bytes(), Some(to))
            .await
            .unwrap();
        took.push(started.elapsed());
    }
    took
}

async fn scenario(cluster: &mut Cluster) {
    let conn = Connection::connect(&cluster.seeds()).await.unwrap();
    let table = write_and_read(&conn).await;
    split_and_merge(&conn, &table).await;
    drain_and_balance(cluster, &conn).await;
    thrift_on_cluster(cluster);
    let written = moves_under_load(cluster, &conn, &table).await;
    shell_on_cluster(cluster);
    let total = ROWS
        + written
            .iter()
            .collect::<std::collections::BTreeSet<_>>()
            .len();
    restart_and_take_over(cluster, &table, total).await;
}

/// Thirty regions over three servers, written and read through the client.
async fn write_and_read(conn: &Connection) -> TableName {
    let admin = conn.admin();
    wait_for(&admin, "three servers", all_assigned(3)).await;
    let table = create_table(&admin).await;
    let s = wait_for(&admin, "30 regions assigned", all_assigned(3)).await;
    assert_eq!(counts(&s).iter().sum::<usize>(), 30, "{s:#?}");
    assert!(spread_within_one(&s), "{s:#?}");
    // Written and read through the client, each row on its region's server.
    let t = conn.table("t").unwrap();
    let puts: Vec<Mutation> = (0..ROWS)
        .map(|i| Mutation::Put(Put::new(row(i)).add("f", "q", format!("v{i}"))))
        .collect();
    for r in t.batch(puts).await.unwrap() {
        r.unwrap();
    }
    // Flushes and compactions go to each region's server; loads come back from them.
    admin.flush(&table).await.unwrap();
    for (region, load, server) in admin.region_loads(&table).await.unwrap() {
        assert_eq!(load.store_files, 1, "{region:?} on {server}");
        assert!(server.contains(','), "{region:?} on {server:?}");
    }
    admin.compact(&table, true).await.unwrap();
    let got = t.get(Get::new(row(1234))).await.unwrap();
    assert_eq!(got.value(b"f", b"q").unwrap(), &Bytes::from("v1234"));
    assert_eq!(count_rows(conn).await, ROWS);
    let mut reversed = Scan::new();
    reversed.reversed = true;
    reversed.start_row = Bytes::from(row(2500));
    reversed.stop_row = Bytes::from(row(1500));
    let rows = t.scan(reversed).await.unwrap().collect().await.unwrap();
    assert_eq!(rows.len(), 1000);
    assert_eq!(rows[0].row(), row(2500).as_bytes());
    assert_eq!(rows[999].row(), row(1501).as_bytes());
    table
}

/// The janitor run until it has freed `n` retired regions: it frees a parent only once its
/// server has compacted the references to it away, in the background.
async fn janitor_frees(admin: &Admin, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut freed = 0;
    while freed < n {
        freed += admin.run_catalog_janitor().await.unwrap();
        assert!(
            Instant::now() < deadline,
            "the janitor freed {freed} of {n}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(freed, n);
}

/// A split decided by the master under the client's feet, then a merge back: every row
/// stays readable, and the table ends as it began.
async fn split_and_merge(conn: &Connection, table: &TableName) {
    let admin = conn.admin();
    let before = admin.regions(table).await.unwrap();
    let at = row(1234);
    let parent = before
        .iter()
        .find(|r| r.contains(at.as_bytes()))
        .unwrap()
        .encoded_name(table);
    admin
        .split_region(parent.as_bytes(), Some(at.as_bytes()))
        .await
        .unwrap();
    let split = admin.regions(table).await.unwrap();
    assert_eq!(split.len(), 31);
    let t = conn.table("t").unwrap();
    let got = t.get(Get::new(at.clone())).await.unwrap();
    assert_eq!(got.value(b"f", b"q").unwrap(), &Bytes::from("v1234"));
    assert_eq!(count_rows(conn).await, ROWS);
    janitor_frees(&admin, 1).await;

    let daughters: Vec<String> = split
        .iter()
        .filter(|r| r.end_key == at.as_bytes() || r.start_key == at.as_bytes())
        .map(|r| r.encoded_name(table))
        .collect();
    let names: Vec<&[u8]> = daughters.iter().map(String::as_bytes).collect();
    admin.merge_regions(&names, false).await.unwrap();
    let merged = admin.regions(table).await.unwrap();
    let keys = |v: &[basalt_model::region::RegionInfo]| -> Vec<(Bytes, Bytes)> {
        v.iter()
            .map(|r| (r.start_key.clone(), r.end_key.clone()))
            .collect()
    };
    assert_eq!(keys(&merged), keys(&before));
    assert_eq!(count_rows(conn).await, ROWS);
    janitor_frees(&admin, 2).await;
    wait_for(&admin, "30 regions assigned", all_assigned(3)).await;
}

/// A decommissioned server gives its regions away; recommissioned and balanced, it takes
/// its share back.
async fn drain_and_balance(cluster: &Cluster, conn: &Connection) {
    let admin = conn.admin();
    let drained = cluster.servers[0].name.clone();
    admin
        .decommission(std::slice::from_ref(&drained), true)
        .await
        .unwrap();
    assert_eq!(
        admin.list_decommissioned().await.unwrap(),
        vec![drained.clone()]
    );
    let s = admin.cluster_status().await.unwrap();
    let on_drained = s
        .servers
        .iter()
        .find(|x| x.name == drained)
        .unwrap()
        .regions;
    assert_eq!(on_drained, 0, "{s:#?}");
    pages_while_drained(cluster, &drained, &s);
    assert_eq!(count_rows(conn).await, ROWS);
    admin.recommission(&drained).await.unwrap();
    assert!(admin.list_decommissioned().await.unwrap().is_empty());
    assert!(admin.balance().await.unwrap());
    let s = admin.cluster_status().await.unwrap();
    assert!(spread_within_one(&s), "{s:#?}");
}

/// The master's page lists the live servers with their regions, marks the drained one; each
/// region server's page lists the regions it hosts, and its `/metrics` its engine.
fn pages_while_drained(cluster: &Cluster, drained: &str, status: &ClusterStatus) {
    let page = http::get(&cluster.masters[0].info);
    assert!(page.contains("<h2>Cluster</h2>"), "{page}");
    let master = &cluster.masters[0].name;
    assert!(
        page.contains(&format!("id=\"active-master\">{master}<")),
        "{page}"
    );
    for s in &status.servers {
        let out = if s.name == drained { "yes" } else { "no" };
        let row = format!(
            "<tr data-server=\"{0}\"><td>{0}</td><td class=\"regions\">{1}</td>",
            s.name, s.regions
        );
        let at = page.find(&row).unwrap_or_else(|| panic!("{row} in {page}"));
        let tr = &page[at..at + page[at..].find("</tr>").unwrap()];
        let mark = format!("<td class=\"decommissioned\">{out}</td>");
        assert!(tr.ends_with(&mark), "{tr}");
    }
    assert!(page.contains(&format!(
        "<ul id=\"decommissioned-servers\"><li>{drained}</li></ul>"
    )));
    assert!(
        page.contains("<ul id=\"regions-in-transition\"></ul>"),
        "{page}"
    );
    for p in &cluster.servers {
        let page = http::get(&p.info);
        assert!(
            page.contains(&format!("<h2>Region server {}</h2>", p.name)),
            "{page}"
        );
        let hosted = status
            .servers
            .iter()
            .find(|s| s.name == p.name)
            .unwrap()
            .regions;
        let rows = page
            .matches(&format!("<td class=\"server\">{}</td>", p.name))
            .count();
        assert_eq!(rows, hosted, "{}: {page}", p.name);
        let metrics = http::get(&format!("{}metrics", p.info));
        assert!(
            metrics.contains("basalt_block_cache_capacity_bytes"),
            "{metrics}"
        );
        assert!(metrics.contains("basalt_requests_total{"), "{metrics}");
    }
}

/// 100 moves under 8 writers: the writers see retries only, and every acknowledged row is
/// there afterwards. Returns the rows the writers wrote.
async fn moves_under_load(cluster: &Cluster, conn: &Connection, table: &TableName) -> Vec<String> {
    let admin = conn.admin();
    let t = conn.table("t").unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let writing = writers(conn, &stop);
    let names: Vec<String> = cluster.servers.iter().map(|p| p.name.clone()).collect();
    let took = hundred_moves(&admin, table, &names).await;
    stop.store(true, Ordering::SeqCst);
    let mut written = Vec::new();
    for w in writing {
        written.extend(w.await.unwrap());
    }
    assert!(written.len() > 100, "only {} writes", written.len());
    for key in &written {
        let r = t.get(Get::new(key.clone())).await.unwrap();
        assert!(!r.is_empty(), "{key} was acknowledged and is gone");
    }
    let mut took: Vec<u128> = took.iter().map(Duration::as_micros).collect();
    took.sort_unstable();
    eprintln!(
        "region moves under load: p50 {} us, p99 {} us",
        took[took.len() / 2],
        took[took.len() * 99 / 100]
    );
    written
}

/// The shell on the cluster, exactly as on one server.
fn shell_on_cluster(cluster: &Cluster) {
    let out = Command::new(env!("CARGO_BIN_EXE_basalt"))
        .args(["shell", "-n", "--server", &cluster.seeds()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            use std::io::Write;
            c.stdin.take().unwrap().write_all(
                concat!(
                    "get 't', 'row00042'\n",
                    "status 'simple'\n",
                    "scan 'hbase:meta', {COLUMNS => 'info:sn'}\n",
                )
                .as_bytes(),
            )?;
            c.wait_with_output()
        })
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("value=v42"), "{text}");
    assert!(text.contains("3 live servers"), "{text}");
    // hbase:meta, served by the master: a row per region, naming a live server.
    assert!(text.contains("30 row(s)"), "{text}");
    let named: Vec<&str> = text
        .lines()
        .filter(|l| l.contains(" column=info:sn, timestamp="))
        .filter_map(|l| l.rsplit_once("value=").map(|(_, v)| v))
        .collect();
    assert_eq!(named.len(), 30, "{text}");
    let live: Vec<&str> = cluster.servers.iter().map(|p| p.name.as_str()).collect();
    assert!(named.iter().all(|n| live.contains(n)), "{text}");
}

/// happybase through a Thrift gateway whose only knowledge of the cluster is the seed list:
/// the 30-region table read, written and cleaned up, and happybase's own test module.
fn thrift_on_cluster(cluster: &Cluster) {
    let gateway = Process::thrift_gateway(&cluster.seeds());
    python::python(&["cluster_check.py", &gateway.addr, "t", &ROWS.to_string()]);
    python::python(&[
        "upstream.py",
        "happybase",
        &python::sdists(),
        "--thrift",
        &gateway.addr,
    ]);
    gateway.stop();
}

/// A whole-cluster stop and start keeps every row; a backup master takes over when the
/// active one stops cleanly.
async fn restart_and_take_over(cluster: &mut Cluster, table: &TableName, total: usize) {
    cluster.stop_all();
    cluster.start_processes();
    let conn = Connection::connect(&cluster.seeds()).await.unwrap();
    let admin = conn.admin();
    wait_for(
        &admin,
        "regions reopened after the restart",
        all_assigned(3),
    )
    .await;
    assert_eq!(count_rows(&conn).await, total);

    // A backup master takes over when the active one stops cleanly.
    let zk = cluster.zookeeper.address.clone();
    let backup = Process::start("master", &zk, &cluster.storage, &cluster.env, &[]);
    let backup_name = backup.name.clone();
    let s = wait_for(&admin, "a backup master", |s| s.backup_masters.len() == 1).await;
    assert_eq!(s.backup_masters, vec![backup_name.clone()]);
    cluster.masters.remove(0).stop();
    cluster.masters.push(backup);
    let s = wait_for(&admin, "the backup took over", |s| {
        s.master == backup_name && all_assigned(3)(s)
    })
    .await;
    assert!(s.backup_masters.is_empty(), "{s:#?}");
    assert_eq!(count_rows(&conn).await, total);
    // The new master serves administration; writes go on.
    let desc = admin.describe(table).await.unwrap();
    assert_eq!(&desc.table_name(), table);
    let t = conn.table("t").unwrap();
    t.put(Put::new("after-takeover").add("f", "q", "v"))
        .await
        .unwrap();
    assert!(!t.get(Get::new("after-takeover")).await.unwrap().is_empty());
    cluster.stop_all();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_cluster_on_a_shared_directory() {
    let dir = tempfile::tempdir().unwrap();
    let storage = format!("file://{}", dir.path().display());
    let mut cluster = Cluster::start(storage, Vec::new());
    scenario(&mut cluster).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_cluster_on_seaweedfs() {
    let weed = SeaweedFs::start();
    let mut cluster = Cluster::start(weed.url("cluster"), weed.aws_env());
    scenario(&mut cluster).await;
}

/// A master or region server whose port is taken is refused at start, naming the address.
#[test]
fn a_process_on_a_taken_port_is_refused_naming_the_address() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let dir = tempfile::tempdir().unwrap();
    let storage = format!("file://{}", dir.path().display());
    for kind in ["master", "regionserver"] {
        let out = Command::new(env!("CARGO_BIN_EXE_basalt"))
            .args([kind, "--zookeeper", "127.0.0.1:1", "--storage", &storage])
            .args(["--bind", "127.0.0.1", "--port", &port, "--info-port", "0"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{kind}: {err}");
        assert!(
            err.contains(&format!("binding 127.0.0.1:{port}")),
            "{kind}: {err}"
        );
        assert!(err.contains("in use"), "{kind}: {err}");
    }
}
