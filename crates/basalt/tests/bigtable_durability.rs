//! What Bigtable's API acknowledges survives `kill -9` of `basalt server` (the default
//! durability syncs the WAL before answering), and the HBase shell reads it afterwards:
//! one table, two front ends. And `basalt bigtable --server`, the gateway as its own
//! process over a server's native API, serves the same tables, admin settings included.
#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};

use admin::bigtable_table_admin_client::BigtableTableAdminClient;
use basalt_bigtable_proto::google::bigtable::admin::v2 as admin;
use basalt_bigtable_proto::google::bigtable::v2 as data;
use data::bigtable_client::BigtableClient;

const TABLE: &str = "projects/p/instances/i/tables/kept";
const ROWS: usize = 300;

/// A `basalt server` (or `basalt bigtable`) child and its Bigtable address; killed when
/// dropped. `native` is the server's native API address (empty for a gateway).
struct Server(Child, String, String);

impl Server {
    fn start(dir: &std::path::Path) -> Server {
        let mut args: Vec<std::ffi::OsString> = [
            "server",
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
        ]
        .map(Into::into)
        .into();
        args.push(dir.into());
        Server::spawn(&args)
    }

    /// `basalt bigtable --server NATIVE --port 0`.
    fn gateway(native: &str) -> Server {
        let args = ["bigtable", "--server", native, "--port", "0"].map(Into::into);
        Server::spawn(&args)
    }

    /// Starts `basalt ARGS` and reads its stdout up to the Bigtable line.
    fn spawn(args: &[std::ffi::OsString]) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_basalt"))
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let (mut line, mut native) = (String::new(), String::new());
        while !line.starts_with("Bigtable API on ") {
            line.clear();
            assert!(
                out.read_line(&mut line).unwrap() > 0,
                "the process stopped before serving Bigtable"
            );
            if line.starts_with("Basalt server listening on ") {
                native = line.split_whitespace().nth(4).unwrap().to_owned();
            }
        }
        // "Bigtable API on ADDR" or, from a gateway, "Bigtable API on ADDR, serving ...".
        let addr = line.split_whitespace().nth(3).unwrap();
        Server(child, addr.trim_end_matches(',').to_owned(), native)
    }

    fn kill9(mut self) {
        self.0.kill().unwrap();
        self.0.wait().unwrap();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

async fn client(addr: &str) -> BigtableClient<tonic::transport::Channel> {
    BigtableClient::connect(format!("http://{addr}"))
        .await
        .unwrap()
}

fn set(q: &str, ts: i64, v: String) -> data::Mutation {
    data::Mutation {
        mutation: Some(data::mutation::Mutation::SetCell(data::mutation::SetCell {
            family_name: "cf".into(),
            column_qualifier: q.as_bytes().to_vec().into(),
            timestamp_micros: ts,
            value: v.into_bytes().into(),
        })),
    }
}

/// Every row's (key, value), as Bigtable reads it.
async fn read_all(c: &mut BigtableClient<tonic::transport::Channel>) -> Vec<(String, String)> {
    let req = data::ReadRowsRequest {
        table_name: TABLE.into(),
        ..Default::default()
    };
    let mut stream = c.read_rows(req).await.unwrap().into_inner();
    let mut rows = Vec::new();
    let mut key = String::new();
    while let Some(r) = stream.message().await.unwrap() {
        for ch in r.chunks {
            if !ch.row_key.is_empty() {
                key = String::from_utf8(ch.row_key.to_vec()).unwrap();
            }
            rows.push((key.clone(), String::from_utf8(ch.value.to_vec()).unwrap()));
        }
    }
    rows
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_bigtable_writes_survive_kill_9_and_read_the_same_in_the_hbase_shell() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path());
    let mut admin = BigtableTableAdminClient::connect(format!("http://{}", server.1))
        .await
        .unwrap();
    admin
        .create_table(admin::CreateTableRequest {
            parent: "projects/p/instances/i".into(),
            table_id: "kept".into(),
            table: Some(admin::Table {
                column_families: [("cf".to_owned(), admin::ColumnFamily::default())].into(),
                ..Default::default()
            }),
            initial_splits: vec![admin::create_table_request::Split {
                key: "row-150".into(),
            }],
        })
        .await
        .unwrap();
    let mut c = client(&server.1).await;
    let mut expected = Vec::new();
    for i in 0..ROWS {
        let key = format!("row-{i:03}");
        let value = format!("value-{i}");
        c.mutate_row(data::MutateRowRequest {
            table_name: TABLE.into(),
            row_key: key.clone().into_bytes().into(),
            mutations: vec![set("q", 1_000_000 + i as i64 * 1000, value.clone())],
            ..Default::default()
        })
        .await
        .unwrap();
        expected.push((key, value));
    }
    expected.sort();
    server.kill9();
    let server = Server::start(dir.path());
    let mut c = client(&server.1).await;
    assert_eq!(read_all(&mut c).await, expected);
    drop(c);
    server.kill9();
    let mut shell = Command::new(env!("CARGO_BIN_EXE_basalt"))
        .args(["shell", "-n", "--data-dir"])
        .arg(dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    shell
        .stdin
        .take()
        .unwrap()
        .write_all(b"get 'kept', 'row-007'\ncount 'kept'\n")
        .unwrap();
    let out = shell.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Bigtable's microseconds are HBase's milliseconds: 1,007,000 us is 1.007 s.
    assert!(
        text.contains("cf:q timestamp=1970-01-01T00:00:01.007, value=value-7"),
        "{text}"
    );
    assert!(text.contains(&format!("{ROWS} row(s)")), "{text}");
}

async fn admin_client(addr: &str) -> BigtableTableAdminClient<tonic::transport::Channel> {
    BigtableTableAdminClient::connect(format!("http://{addr}"))
        .await
        .unwrap()
}

fn table_named(id: &str) -> admin::CreateTableRequest {
    admin::CreateTableRequest {
        parent: "projects/p/instances/i".into(),
        table_id: id.into(),
        table: Some(admin::Table {
            column_families: [("cf".to_owned(), admin::ColumnFamily::default())].into(),
            ..Default::default()
        }),
        initial_splits: vec![],
    }
}

/// Table names in pages of two, following the page tokens.
async fn names_in_pages(
    a: &mut BigtableTableAdminClient<tonic::transport::Channel>,
) -> Vec<Vec<String>> {
    let mut pages = Vec::new();
    let mut token = String::new();
    loop {
        let page = a
            .list_tables(admin::ListTablesRequest {
                parent: "projects/p/instances/i".into(),
                page_size: 2,
                page_token: token,
                view: 0,
            })
            .await
            .unwrap()
            .into_inner();
        pages.push(
            page.tables
                .into_iter()
                .map(|t| t.name.rsplit('/').next().unwrap().to_owned())
                .collect(),
        );
        if page.next_page_token.is_empty() {
            return pages;
        }
        token = page.next_page_token;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gateway_process_serves_the_servers_tables_and_their_admin_settings() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path());
    let gateway = Server::gateway(&server.2);
    let mut a = admin_client(&gateway.1).await;
    for id in ["t1", "t2", "t3"] {
        a.create_table(table_named(id)).await.unwrap();
    }
    assert_eq!(names_in_pages(&mut a).await, [vec!["t1", "t2"], vec!["t3"]]);
    // Written through the gateway, read through the server's own Bigtable port.
    let mut c = client(&gateway.1).await;
    c.mutate_row(data::MutateRowRequest {
        table_name: "projects/p/instances/i/tables/t1".into(),
        row_key: "k".into(),
        mutations: vec![set("q", 5000, "v".to_owned())],
        ..Default::default()
    })
    .await
    .unwrap();
    let mut direct = client(&server.1).await;
    let req = data::ReadRowsRequest {
        table_name: "projects/p/instances/i/tables/t1".into(),
        ..Default::default()
    };
    let mut stream = direct.read_rows(req).await.unwrap().into_inner();
    let chunk = stream.message().await.unwrap().unwrap().chunks.remove(0);
    assert_eq!(
        (&chunk.row_key[..], &chunk.value[..], chunk.timestamp_micros),
        (&b"k"[..], &b"v"[..], 5000)
    );
    // Deletion protection is kept and refuses DeleteTable until it is turned off.
    let protect = |on: bool| admin::UpdateTableRequest {
        table: Some(admin::Table {
            name: "projects/p/instances/i/tables/t2".into(),
            deletion_protection: on,
            ..Default::default()
        }),
        update_mask: Some(prost_types::FieldMask {
            paths: vec!["deletion_protection".into()],
        }),
        ignore_warnings: false,
    };
    let op = a.update_table(protect(true)).await.unwrap().into_inner();
    assert!(op.done);
    let delete = || admin::DeleteTableRequest {
        name: "projects/p/instances/i/tables/t2".into(),
    };
    let refused = a.delete_table(delete()).await.unwrap_err();
    assert_eq!(
        refused.code(),
        tonic::Code::FailedPrecondition,
        "{refused:?}"
    );
    a.update_table(protect(false)).await.unwrap();
    a.delete_table(delete()).await.unwrap();
    let bad_token = a
        .check_consistency(admin::CheckConsistencyRequest {
            name: "projects/p/instances/i/tables/t1".into(),
            consistency_token: "not-a-token".into(),
            mode: None,
        })
        .await
        .unwrap_err();
    assert_eq!(bad_token.code(), tonic::Code::InvalidArgument);
}
