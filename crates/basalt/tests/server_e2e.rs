//! A real `basalt server` process on a free port, driven by the Rust client: every
//! operation, errors as HBase names them, scanner leases, a restart with data intact.
#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

mod bench_table;
mod common;
mod http;
mod process;
mod scanner_calls;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use basalt_client::{BufferedMutator, Connection};
use basalt_model::filter::parse_filter;
use basalt_model::ops::{
    Append, CheckAndMutate, CompareOp, Delete, Get, Increment, Mutation, Put, RowMutations, Scan,
};
use basalt_model::{ColumnFamilyDescriptor, Error, TableDescriptor, TableName};
use bytes::Bytes;

/// A server child process; killed when dropped.
struct ServerProcess {
    child: Child,
    addr: String,
    stdout: BufReader<std::process::ChildStdout>,
}

impl ServerProcess {
    fn start(dir: &std::path::Path, extra: &[&str]) -> ServerProcess {
        ServerProcess::launch(Command::new(env!("CARGO_BIN_EXE_basalt")), dir, extra)
    }

    /// The server under `ulimit -n limit` (soft and hard), as on a machine with that default.
    fn start_with_descriptor_limit(dir: &std::path::Path, limit: u32) -> ServerProcess {
        let mut bash = Command::new("bash");
        bash.arg("-c")
            .arg(format!("ulimit -n {limit} && exec \"$0\" \"$@\""))
            .arg(env!("CARGO_BIN_EXE_basalt"));
        ServerProcess::launch(bash, dir, &[])
    }

    fn launch(mut command: Command, dir: &std::path::Path, extra: &[&str]) -> ServerProcess {
        let mut child = command
            .args([
                "server",
                "--bind",
                "127.0.0.1",
                "--port",
                "0",
                "--info-port",
                "0",
                "--thrift-port",
                "0",
                "--bigtable-port",
                "0",
                "--rest-port",
                "0",
                "--data-dir",
            ])
            .arg(dir)
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        stdout.read_line(&mut line).unwrap();
        let addr = line
            .split_whitespace()
            .nth(4)
            .unwrap_or_else(|| panic!("no address in {line:?}"))
            .to_owned();
        ServerProcess {
            child,
            addr,
            stdout,
        }
    }

    /// The web page's address, from the second line the server prints.
    fn info_url(&mut self) -> String {
        let mut line = String::new();
        self.stdout.read_line(&mut line).unwrap();
        line.split_whitespace()
            .last()
            .unwrap_or_else(|| panic!("no web address in {line:?}"))
            .to_owned()
    }

    /// The Thrift and REST gateways' addresses, from the start-up lines after the first.
    fn gateway_addrs(&mut self) -> (String, String) {
        let (mut thrift, mut rest) = (None, None);
        while thrift.is_none() || rest.is_none() {
            let mut line = String::new();
            assert!(self.stdout.read_line(&mut line).unwrap() > 0, "no gateways");
            if let Some(a) = line.strip_prefix("HBase Thrift gateway on ") {
                thrift = Some(a.trim().to_owned());
            } else if let Some(a) = line.strip_prefix("HBase REST gateway on http://") {
                rest = Some(a.trim().trim_end_matches('/').to_owned());
            }
        }
        (thrift.unwrap(), rest.unwrap())
    }

    /// SIGTERM, then the exit status must be success (a clean shutdown).
    fn stop(mut self) {
        process::terminate(&mut self.child, "server");
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn table_desc(name: &str) -> TableDescriptor {
    let t = TableName::parse(name).unwrap();
    TableDescriptor::new(
        &t,
        [
            ColumnFamilyDescriptor::new("f").with_max_versions(3),
            ColumnFamilyDescriptor::new("g"),
        ],
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_data_operation_through_the_client() {
    let dir = tempfile::tempdir().unwrap();
    let server = ServerProcess::start(dir.path(), &[]);
    let conn = Connection::connect(&server.addr).await.unwrap();
    let admin = conn.admin();
    admin
        .create_namespace("ns", Default::default())
        .await
        .unwrap();
    admin
        .create_table(&table_desc("ns:t"), &[Bytes::from_static(b"m")])
        .await
        .unwrap();
    let name = TableName::parse("ns:t").unwrap();
    assert_eq!(admin.list_namespace_tables("ns").await.unwrap(), ["t"]);
    assert_eq!(admin.regions(&name).await.unwrap().len(), 2);
    assert_eq!(admin.describe(&name).await.unwrap(), table_desc("ns:t"));
    let t = conn.table("ns:t").unwrap();
    for row in ["a", "k", "q", "z"] {
        t.put(Put::new(row).add_at("f", "q", 1, format!("v-{row}")))
            .await
            .unwrap();
    }
    t.put(Put::new("a").add_at("f", "q", 2, "v2"))
        .await
        .unwrap();
    let r = t.get(Get::new("a").all_versions()).await.unwrap();
    assert_eq!(r.timestamps(b"f", b"q"), [2, 1]);
    // Increments, appends, check-and-mutate, row mutations, batches.
    let n = t
        .increment(Increment::new("c").add("g", "n", 5))
        .await
        .unwrap();
    assert_eq!(n.value(b"g", b"n").unwrap()[..], 5i64.to_be_bytes());
    let s = t
        .append(Append::new("c").add("g", "s", "xy"))
        .await
        .unwrap();
    assert_eq!(s.value(b"g", b"s").unwrap(), &Bytes::from_static(b"xy"));
    let cam = CheckAndMutate::if_matches("k", "f", "q", CompareOp::Equal, "v-k")
        .then_put(Put::new("k").add("g", "ok", "1"));
    assert!(t.check_and_mutate(cam).await.unwrap());
    let cam = CheckAndMutate::if_not_exists("k", "f", "q").then_delete(Delete::new("k"));
    assert!(!t.check_and_mutate(cam).await.unwrap());
    let mut rm = RowMutations::new("q");
    rm.add(Put::new("q").add("g", "a", "1")).unwrap();
    rm.add(Delete::new("q").add_columns("f", "q")).unwrap();
    t.mutate_row(rm).await.unwrap();
    let results = t
        .batch(vec![
            Mutation::Put(Put::new("b").add("f", "q", "1")),
            Mutation::Put(Put::new("b").add("nope", "q", "1")),
        ])
        .await
        .unwrap();
    assert!(results[0].is_ok());
    assert!(
        matches!(results[1], Err(Error::NoSuchColumnFamily { .. })),
        "{:?}",
        results[1]
    );
    scans_and_buffered_writes(&t).await;
    server.stop();
}

/// Scans cross regions, forward and reversed, with filters; a buffered mutator's writes land.
async fn scans_and_buffered_writes(t: &basalt_client::Table) {
    // Scans cross regions, forward and reversed, with filters.
    let rows = |v: Vec<basalt_model::RowResult>| -> Vec<String> {
        v.iter()
            .map(|r| String::from_utf8_lossy(r.row()).into_owned())
            .collect()
    };
    let all = t.scan(Scan::new()).await.unwrap().collect().await.unwrap();
    assert_eq!(rows(all), ["a", "b", "c", "k", "q", "z"]);
    // As a stream.
    let streamed: Vec<basalt_model::RowResult> = {
        use futures_util::TryStreamExt;
        let s = t
            .scan(Scan::new().with_limit(3))
            .await
            .unwrap()
            .into_stream();
        s.try_collect().await.unwrap()
    };
    assert_eq!(rows(streamed), ["a", "b", "c"]);
    let rev = t
        .scan(Scan::new().reversed().with_limit(2))
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    assert_eq!(rows(rev), ["z", "q"]);
    let filtered = Scan::new().with_filter(parse_filter("ValueFilter(=, 'binary:v-z')").unwrap());
    assert_eq!(
        rows(t.scan(filtered).await.unwrap().collect().await.unwrap()),
        ["z"]
    );
    // A buffered mutator.
    let mut m = BufferedMutator::new(t.clone());
    for i in 0..500 {
        m.mutate(Mutation::Put(
            Put::new(format!("bulk{i:03}")).add("f", "q", "x"),
        ))
        .await
        .unwrap();
    }
    m.close().await.unwrap();
    let bulk = t
        .scan(Scan::new().with_row_prefix("bulk"))
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    assert_eq!(bulk.len(), 500);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admin_operations_through_the_client() {
    let dir = tempfile::tempdir().unwrap();
    let server = ServerProcess::start(dir.path(), &[]);
    let conn = Connection::connect(&server.addr).await.unwrap();
    let admin = conn.admin();
    let name = TableName::parse("t").unwrap();
    admin
        .create_table(&table_desc("t"), &[Bytes::from_static(b"m")])
        .await
        .unwrap();
    assert_eq!(admin.list_tables(None).await.unwrap(), ["t"]);
    let t = conn.table("t").unwrap();
    for i in 0..506 {
        t.put(Put::new(format!("r{i:03}")).add("f", "q", "v"))
            .await
            .unwrap();
    }
    admin.flush(&name).await.unwrap();
    admin.compact(&name, true).await.unwrap();
    admin.split_table(&name, Some(b"r2")).await.unwrap();
    let regions = admin.regions(&name).await.unwrap();
    assert_eq!(regions.len(), 3);
    admin.compact(&name, true).await.unwrap();
    let enc: Vec<String> = regions[..2].iter().map(|r| r.encoded_name(&name)).collect();
    admin
        .merge_regions(&[enc[0].as_bytes(), enc[1].as_bytes()], false)
        .await
        .unwrap();
    assert_eq!(admin.regions(&name).await.unwrap().len(), 2);
    assert_eq!(
        t.scan(Scan::new())
            .await
            .unwrap()
            .collect()
            .await
            .unwrap()
            .len(),
        506
    );
    admin.disable_table(&name).await.unwrap();
    assert!(!admin.is_enabled(&name).await.unwrap());
    admin.truncate_table(&name, true).await.unwrap();
    assert_eq!(admin.regions(&name).await.unwrap().len(), 2);
    assert!(t
        .scan(Scan::new())
        .await
        .unwrap()
        .collect()
        .await
        .unwrap()
        .is_empty());
    server.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_cross_the_wire_with_hbase_names() {
    let dir = tempfile::tempdir().unwrap();
    let server = ServerProcess::start(dir.path(), &[]);
    let conn = Connection::connect(&server.addr).await.unwrap();
    let admin = conn.admin();
    admin.create_table(&table_desc("t"), &[]).await.unwrap();
    let e = admin.create_table(&table_desc("t"), &[]).await.unwrap_err();
    assert!(matches!(e, Error::TableExists(_)), "{e}");
    assert_eq!(
        e.exception_name(),
        "org.apache.hadoop.hbase.TableExistsException"
    );
    let e = conn
        .table("nope")
        .unwrap()
        .get(Get::new("r"))
        .await
        .unwrap_err();
    assert!(matches!(e, Error::TableNotFound(_)), "{e}");
    let e = conn
        .table("t")
        .unwrap()
        .put(Put::new("r").add("zz", "q", "v"))
        .await
        .unwrap_err();
    assert!(matches!(e, Error::NoSuchColumnFamily { .. }), "{e}");
    assert!(!e.is_retryable());
    // A 9 MiB cell (under HBase's 10 MiB limit) crosses both ways; an 11 MiB one is refused
    // with HBase's message, and the connection goes on.
    let t = conn.table("t").unwrap();
    let big = vec![7u8; 9 << 20];
    t.put(Put::new("big").add("f", "q", big.clone()))
        .await
        .unwrap();
    let r = t.get(Get::new("big")).await.unwrap();
    assert_eq!(r.value(b"f", b"q").unwrap().len(), big.len());
    let e = t
        .put(Put::new("big").add("f", "q", vec![0u8; 11 << 20]))
        .await
        .unwrap_err();
    assert!(e.to_string().contains("KeyValue size too large"), "{e}");
    let e = admin.drop_namespace("default").await.unwrap_err();
    assert!(matches!(e, Error::Constraint(_)), "{e}");
    let e = admin
        .delete_table(&TableName::parse("t").unwrap())
        .await
        .unwrap_err();
    assert!(matches!(e, Error::TableNotDisabled(_)), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_server_has_every_row() {
    let dir = tempfile::tempdir().unwrap();
    let server = ServerProcess::start(dir.path(), &[]);
    let conn = Connection::connect(&server.addr).await.unwrap();
    conn.admin()
        .create_table(&table_desc("t"), &[])
        .await
        .unwrap();
    let t = conn.table("t").unwrap();
    for i in 0..200 {
        t.put(Put::new(format!("r{i:03}")).add("f", "q", format!("v{i}")))
            .await
            .unwrap();
    }
    server.stop();
    let server = ServerProcess::start(dir.path(), &[]);
    let conn = Connection::connect(&server.addr).await.unwrap();
    let t = conn.table("t").unwrap();
    let rows = t.scan(Scan::new()).await.unwrap().collect().await.unwrap();
    assert_eq!(rows.len(), 200);
    assert_eq!(
        t.get(Get::new("r123"))
            .await
            .unwrap()
            .value(b"f", b"q")
            .unwrap(),
        &Bytes::from_static(b"v123")
    );
    // A killed server (no clean shutdown) loses no acknowledged write either.
    t.put(Put::new("after").add("f", "q", "v")).await.unwrap();
    drop(server);
    let server = ServerProcess::start(dir.path(), &[]);
    let conn = Connection::connect(&server.addr).await.unwrap();
    let r = conn
        .table("t")
        .unwrap()
        .get(Get::new("after"))
        .await
        .unwrap();
    assert!(!r.is_empty());
    server.stop();
}

/// The same script prints the same through a server as on a data directory.
#[test]
fn the_shell_prints_the_same_through_a_server() {
    let script = "create_namespace 'my_ns'
create 'my_ns:my_table', 'fam', SPLITS => ['m']
put 'my_ns:my_table', 'r1', 'fam:a', 'v1', 5
put 'my_ns:my_table', 'x9', 'fam:b', \"\\x00\\xff\", 6
scan 'my_ns:my_table'
get 'my_ns:my_table', 'x9'
incr 'my_ns:my_table', 'c', 'fam:n', 3
count 'my_ns:my_table'
alter 'my_ns:my_table', NAME => 'fam', VERSIONS => 5
describe 'my_ns:my_table'
get_splits 'my_ns:my_table'
list_namespace_tables 'my_ns'
drop_namespace 'my_ns'
";
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.hb");
    std::fs::write(&file, script).unwrap();
    let embedded = Command::new(env!("CARGO_BIN_EXE_basalt"))
        .args(["shell", "--data-dir"])
        .arg(dir.path().join("embedded"))
        .arg(&file)
        .output()
        .unwrap();
    let server_dir = dir.path().join("served");
    let server = ServerProcess::start(&server_dir, &[]);
    let remote = Command::new(env!("CARGO_BIN_EXE_basalt"))
        .args(["shell", "--server", &server.addr])
        .arg(&file)
        .output()
        .unwrap();
    // The script ends with an error (the namespace is not empty): exit code 1 both ways.
    assert_eq!(embedded.status.code(), Some(1));
    assert_eq!(
        remote.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&remote.stderr)
    );
    let (a, b) = (
        common::masked(&embedded.stdout),
        common::masked(&remote.stdout),
    );
    assert_eq!(a, b);
    assert!(a.contains(" x9 column=fam:b, timestamp="), "{a}");
    assert!(a.contains("ERROR: org.apache.hadoop.hbase.constraint.ConstraintException: Only empty namespaces can be removed."), "{a}");
    server.stop();
}

/// The web page in a real headless browser: it loads, lists a table the test made, and its
/// numbers are the API's; `/metrics` counts the requests made.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_web_page_shows_what_the_api_says() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = ServerProcess::start(dir.path(), &[]);
    let info = server.info_url();
    let conn = Connection::connect(&server.addr).await.unwrap();
    let admin = conn.admin();
    admin
        .create_table(&table_desc("webcheck"), &[Bytes::from_static(b"m")])
        .await
        .unwrap();
    let t = conn.table("webcheck").unwrap();
    // Rows on both sides of the split key "m".
    let key = |i: u32| format!("{}{i:02}", if i.is_multiple_of(2) { "a" } else { "r" });
    for i in 0..30 {
        t.put(Put::new(key(i)).add("f", "q", "v")).await.unwrap();
    }
    for i in 0..7 {
        t.get(Get::new(key(i))).await.unwrap();
    }
    admin
        .flush(&TableName::parse("webcheck").unwrap())
        .await
        .unwrap();
    let dom = tokio::task::spawn_blocking({
        let info = info.clone();
        move || headless_dom(&info)
    })
    .await
    .unwrap();
    assert!(dom.contains("<h1>Basalt"), "{dom}");
    assert!(
        dom.contains("<td>webcheck</td><td>ENABLED</td><td>2</td>"),
        "{dom}"
    );
    // The region rows: 30 writes and 7 reads in all, files after the flush.
    let cells = |class: &str| -> Vec<u64> {
        dom.split(&format!("<td class=\"{class}\">"))
            .skip(1)
            .filter_map(|s| s.split('<').next()?.parse().ok())
            .collect()
    };
    assert_eq!(cells("write-requests").iter().sum::<u64>(), 30);
    assert_eq!(cells("read-requests").iter().sum::<u64>(), 7);
    assert_eq!(cells("store-files").iter().sum::<u64>(), 2);
    assert!(dom.contains("<td>flush</td>"), "{dom}");
    let metrics = tokio::task::spawn_blocking({
        let url = format!("{info}metrics");
        move || http::get(&url)
    })
    .await
    .unwrap();
    assert!(
        metrics.contains("basalt_requests_total{op=\"mutate\"} 30"),
        "{metrics}"
    );
    assert!(
        metrics.contains("basalt_requests_total{op=\"get\"} 7"),
        "{metrics}"
    );
    assert!(
        metrics.contains("basalt_request_duration_seconds_count{op=\"get\"} 7"),
        "{metrics}"
    );
    assert!(
        metrics.contains("# TYPE basalt_wal_syncs_total counter"),
        "{metrics}"
    );
}

/// The DOM of `url` as headless chromium renders it. The DOM goes to a file, not a pipe:
/// chromium's helper processes keep a pipe open after the browser exits.
fn headless_dom(url: &str) -> String {
    let profile = tempfile::tempdir().unwrap();
    let dom_path = profile.path().join("dom.html");
    let dom_file = std::fs::File::create(&dom_path).unwrap();
    let status = Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--dump-dom",
        ])
        .arg(format!(
            "--user-data-dir={}",
            profile.path().join("profile").display()
        ))
        .arg(url)
        .stdin(Stdio::null())
        .stdout(dom_file)
        .stderr(Stdio::null())
        .status()
        .expect("chromium must be installed (.ci/run installs Debian's chromium)");
    assert!(status.success());
    std::fs::read_to_string(dom_path).unwrap()
}

/// `basalt bench ycsb` runs each core workload against a server, through the native API
/// and through the Thrift gateway, and reports per operation; every read of a loaded
/// record found all its fields (the tool fails otherwise).
#[test]
fn ycsb_runs_every_core_workload() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = ServerProcess::start(dir.path(), &[]);
    let (thrift, _) = server.gateway_addrs();
    for (api, addr) in [("native", server.addr.clone()), ("thrift", thrift)] {
        ycsb_runs_every_core_workload_through(api, &addr);
    }
    server.stop();
}

fn ycsb_runs_every_core_workload_through(api: &str, addr: &str) {
    for (w, ops) in [
        ('a', &["READ", "UPDATE"][..]),
        ('b', &["READ", "UPDATE"]),
        ('c', &["READ"]),
        ('d', &["READ", "INSERT"]),
        ('e', &["SCAN", "INSERT"]),
        ('f', &["READ", "READ-MODIFY-WRITE"]),
    ] {
        let text = bench_table::stdout_of(
            Command::new(env!("CARGO_BIN_EXE_basalt"))
                .args(["bench", "ycsb", "--workload", &w.to_string()])
                .args(["--api", api, "--server", addr])
                .args(["--records", "300", "--operations", "400", "--threads", "2"]),
        );
        assert!(text.contains("[LOAD], Throughput(ops/sec), "), "{text}");
        assert!(text.contains("[OVERALL], Throughput(ops/sec), "), "{text}");
        // The client did work for its operations, so its CPU time per operation is above 0.
        let cpu = text
            .lines()
            .find_map(|l| l.strip_prefix("[OVERALL], ClientCpuPerOperation(us), "))
            .and_then(|v| v.parse::<f64>().ok());
        assert!(cpu.is_some_and(|us| us > 0.0), "{api} {w}: {text}");
        let mut total = 0;
        for op in ops {
            assert!(
                text.contains(&format!("[{op}], 99thPercentileLatency(us), ")),
                "{w} {op}: {text}"
            );
            let line = text
                .lines()
                .find(|l| l.starts_with(&format!("[{op}], Operations, ")))
                .unwrap();
            total += line.rsplit(' ').next().unwrap().parse::<u64>().unwrap();
        }
        assert_eq!(total, 400, "{api} {w}: {text}");
    }
}

/// `basalt bench gateways`: every line through REST (JSON and protobuf) and Thrift, with
/// each REST rate over Thrift's; scanner pages that do not divide a scan still count every
/// row once, and the load wrote every row.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gateway_bench_measures_every_line_on_each_gateway() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = ServerProcess::start(dir.path(), &[]);
    let (thrift, rest) = server.gateway_addrs();
    let text = bench_table::stdout_of(
        std::process::Command::new(env!("CARGO_BIN_EXE_basalt"))
            .args(["bench", "gateways", "--thrift", &thrift, "--rest", &rest])
            .args(["--rows", "2000", "--scan-rows", "100", "--page-rows", "7"])
            .args(["--seconds", "0.3", "--clients", "1,3"]),
    );
    let rows = bench_table::rows(&text);
    let lines = ["single-row writes", "point reads", "scans"];
    bench_table::assert_lines(&rows, &lines, &["1", "3"], &text);
    for r in &rows {
        let rate = |i| bench_table::number(r, i);
        let (json, protobuf, thrift) = (rate(2), rate(4), rate(6));
        bench_table::assert_ratio(json, thrift, rate(8), r);
        bench_table::assert_ratio(protobuf, thrift, rate(9), r);
    }
    let conn = Connection::connect(&server.addr).await.unwrap();
    let t = conn.table("bench").unwrap();
    let all = t.scan(Scan::new()).await.unwrap().collect().await.unwrap();
    assert_eq!(all.len(), 2000);
    assert!(
        all.iter().all(|r| r.cells.len() == 10),
        "a row short of its cells"
    );
    server.stop();
}

/// The client caches where regions are; after a split its stale entry gets
/// NotServingRegion, it looks the regions up again, and the call goes through.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_client_finds_rows_again_after_a_split() {
    let dir = tempfile::tempdir().unwrap();
    let server = ServerProcess::start(dir.path(), &[]);
    let conn = Connection::connect(&server.addr).await.unwrap();
    let name = TableName::parse("t").unwrap();
    conn.admin()
        .create_table(&table_desc("t"), &[])
        .await
        .unwrap();
    let t = conn.table("t").unwrap();
    t.put(Put::new("a").add("f", "q", "1")).await.unwrap();
    t.put(Put::new("x").add("f", "q", "1")).await.unwrap();
    assert_eq!(t.region_locations().await.unwrap().len(), 1);
    // Another client splits the table: this one's cache is now stale.
    let other = Connection::connect(&server.addr).await.unwrap();
    other.admin().split_table(&name, Some(b"m")).await.unwrap();
    assert_eq!(t.region_locations().await.unwrap().len(), 1);
    t.put(Put::new("x").add("f", "q", "2")).await.unwrap();
    assert_eq!(t.region_locations().await.unwrap().len(), 2);
    let r = t.get(Get::new("x")).await.unwrap();
    assert_eq!(r.value(b"f", b"q").unwrap(), &Bytes::from_static(b"2"));
    // A handle made later from the same connection shares the refreshed cache.
    assert_eq!(
        conn.table("t")
            .unwrap()
            .region_locations()
            .await
            .unwrap()
            .len(),
        2
    );
    server.stop();
}

/// RELIABILITY.md D7: under `ulimit -n 512`, 600 silent connections to the native port
/// cannot take the descriptors the engine needs: the server caps its connections to leave
/// them, and writes, flushes and reads keep working once the silent ones time out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_connections_cannot_starve_the_engine_of_file_descriptors() {
    let dir = tempfile::tempdir().unwrap();
    let server = ServerProcess::start_with_descriptor_limit(dir.path(), 512);
    let addr: std::net::SocketAddr = server.addr.parse().unwrap();
    let hogs: Vec<std::net::TcpStream> = (0..600)
        .map(|_| std::net::TcpStream::connect(addr).unwrap())
        .collect();
    let conn = Connection::connect(&server.addr).await.unwrap();
    let admin = conn.admin();
    admin.create_table(&table_desc("fds"), &[]).await.unwrap();
    let t = conn.table("fds").unwrap();
    for i in 0..200 {
        t.put(Put::new(format!("r{i:03}")).add("f", "q", "v"))
            .await
            .unwrap();
    }
    admin
        .flush(&TableName::parse("fds").unwrap())
        .await
        .unwrap();
    let rows = t.scan(Scan::new()).await.unwrap().collect().await.unwrap();
    assert_eq!(rows.len(), 200);
    drop(hogs);
}
