//! The native API's scanner calls through a server: leases, how many calls a scan takes,
//! and batched rows answered in parts.

use basalt_client::{ClientConfig, Connection};
use basalt_model::ops::{Put, Scan};
use basalt_model::{Error, TableName};
use std::time::Duration;

use super::{http, table_desc, ServerProcess};

/// A connection to `server` made with `config`, and table `t` created through it.
async fn table_t(
    server: &ServerProcess,
    config: ClientConfig,
) -> (Connection, basalt_client::Table) {
    let conn = Connection::connect_with(&server.addr, config)
        .await
        .unwrap();
    conn.admin()
        .create_table(&table_desc("t"), &[])
        .await
        .unwrap();
    let t = conn.table("t").unwrap();
    (conn, t)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scanner_leases_expire_and_free_the_scanner() {
    let dir = tempfile::tempdir().unwrap();
    let server = ServerProcess::start(dir.path(), &["--scanner-timeout-ms", "300"]);
    let (_conn, t) = table_t(&server, one_row_per_call()).await;
    for i in 0..5 {
        t.put(Put::new(format!("r{i}")).add("f", "q", "v"))
            .await
            .unwrap();
    }
    // Fetches within the lease renew it.
    let mut s = t.scan(Scan::new()).await.unwrap();
    for _ in 0..3 {
        assert!(s.next().await.unwrap().is_some());
        tokio::time::sleep(Duration::from_millis(150)).await;
    }
    // Left alone past the lease, the scanner is gone.
    tokio::time::sleep(Duration::from_millis(900)).await;
    let e = s.next().await.unwrap_err();
    assert!(matches!(e, Error::UnknownScanner(_)), "{e}");
    assert!(e.to_string().contains("lease expired"), "{e}");
}

/// A client whose scanner calls answer one row each (a byte's worth, at least one row).
fn one_row_per_call() -> ClientConfig {
    ClientConfig {
        scanner_max_result_bytes: 1,
        ..ClientConfig::default()
    }
}

/// Calls of `op` the server counted, from its `/metrics`.
fn calls(info: &str, op: &str) -> u64 {
    let metrics = http::get(&format!("{info}metrics"));
    let line = format!("basalt_requests_total{{op=\"{op}\"}} ");
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(&line))
        .map_or(0, |n| n.parse().unwrap())
}

/// A scan whose rows fit one answer is one call: the first rows come back with the open,
/// and the server closes the scanner they exhaust. Answered a row at a time, the same scan
/// takes one call per row after the open, and one more that finds the end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scan_that_fits_one_answer_is_one_call() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = ServerProcess::start(dir.path(), &[]);
    let info = server.info_url();
    let (_conn, t) = table_t(&server, ClientConfig::default()).await;
    for row in ["a", "b", "c"] {
        t.put(Put::new(row).add("f", "q", "v")).await.unwrap();
    }
    let scanner_calls = || ["open_scanner", "next", "close_scanner"].map(|op| calls(&info, op));
    let before = scanner_calls();
    let rows = t.scan(Scan::new()).await.unwrap().collect().await.unwrap();
    assert_eq!(rows.len(), 3);
    let after = scanner_calls();
    assert_eq!(
        [
            after[0] - before[0],
            after[1] - before[1],
            after[2] - before[2]
        ],
        [1, 0, 0]
    );

    let one_by_one = Connection::connect_with(&server.addr, one_row_per_call())
        .await
        .unwrap();
    let t = one_by_one.table("t").unwrap();
    let rows = t.scan(Scan::new()).await.unwrap().collect().await.unwrap();
    assert_eq!(rows.len(), 3);
    let last = scanner_calls();
    assert_eq!(
        [last[0] - after[0], last[1] - after[1], last[2] - after[2]],
        [1, 3, 0]
    );
    server.stop();
}

/// A batched scan's rows come back in parts, each part's cells in order with its row and
/// whether more of the row follows, whether the answers hold many rows or one: rows read
/// from store files and from memory, and a row that is both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batched_scan_answers_each_row_in_parts() {
    let dir = tempfile::tempdir().unwrap();
    let server = ServerProcess::start(dir.path(), &[]);
    let (conn, t) = table_t(&server, ClientConfig::default()).await;
    let put_row = |row: &str, qualifiers: std::ops::Range<u32>| {
        qualifiers.fold(Put::new(row.to_owned()), |p, q| {
            p.add("f", format!("q{q}"), format!("{row}-{q}"))
        })
    };
    t.put(put_row("a", 0..5)).await.unwrap();
    t.put(put_row("b", 0..3)).await.unwrap();
    conn.admin()
        .flush(&TableName::parse("t").unwrap())
        .await
        .unwrap();
    t.put(put_row("b", 3..5)).await.unwrap();
    t.put(put_row("c", 0..4)).await.unwrap();
    // Each row's parts: its qualifiers two at a time, every part but the last partial.
    let mut want = Vec::new();
    for (row, width) in [("a", 5), ("b", 5), ("c", 4)] {
        for first in (0..width).step_by(2) {
            let last = (first + 2).min(width);
            let values: Vec<String> = (first..last).map(|q| format!("{row}-{q}")).collect();
            want.push((row.to_owned(), values, last < width));
        }
    }
    let parts = |rows: Vec<basalt_model::RowResult>| -> Vec<(String, Vec<String>, bool)> {
        rows.into_iter()
            .map(|r| {
                let values = r
                    .cells
                    .iter()
                    .map(|c| String::from_utf8_lossy(c.value()).into());
                let row = String::from_utf8_lossy(r.row()).into_owned();
                (row, values.collect(), r.partial)
            })
            .collect()
    };
    let batched = || Scan::new().with_batch(2);
    let all = t.scan(batched()).await.unwrap().collect().await.unwrap();
    assert_eq!(parts(all), want);
    let one_by_one = Connection::connect_with(&server.addr, one_row_per_call())
        .await
        .unwrap();
    let t = one_by_one.table("t").unwrap();
    let all = t.scan(batched()).await.unwrap().collect().await.unwrap();
    assert_eq!(parts(all), want);
    server.stop();
}
