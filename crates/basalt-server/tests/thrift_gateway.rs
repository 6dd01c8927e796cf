//! The Thrift gateway against another Thrift implementation (the `thrift` crate's client, with
//! the `hbase-thrift` crate's generated `Hbase` client) and against the oracle of HBase's data
//! model: random histories of timestamped puts and deletes sent through the gateway read back
//! exactly as the oracle says, over every transport and protocol.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, Ordering};

use basalt_model::ops::{Delete, Get, Put, Scan};
use basalt_model::{ColumnFamilyDescriptor, TimeRange};
use basalt_server::thrift::ThriftConfig;
use basalt_server::{Server, ServerConfig};
use basalt_testkit::oracle::Oracle;
use hbase_thrift::hbase::{
    ColumnDescriptor, HbaseSyncClient, Mutation, THbaseSyncClient, TRowResult, TScan,
};
use proptest::prelude::*;
use thrift::protocol::{
    TBinaryInputProtocol, TBinaryOutputProtocol, TCompactInputProtocol, TCompactOutputProtocol,
    TInputProtocol, TOutputProtocol,
};
use thrift::transport::{
    TBufferedReadTransport, TBufferedWriteTransport, TFramedReadTransport, TFramedWriteTransport,
    TIoChannel, TReadTransport, TTcpChannel, TWriteTransport,
};

/// A server on free ports, in this process; stopped when dropped.
struct Gateway {
    addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
    _dir: tempfile::TempDir,
}

impl Gateway {
    fn start() -> Gateway {
        let dir = tempfile::tempdir().unwrap();
        let data_dir = dir.path().to_owned();
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Runtime::new().unwrap();
            rt.block_on(async move {
                let local = SocketAddr::from(([127, 0, 0, 1], 0));
                let config = ServerConfig {
                    data_dir,
                    listen: local,
                    info_listen: None,
                    thrift: Some(ThriftConfig {
                        listen: local,
                        ..ThriftConfig::default()
                    }),
                    bigtable: None,
                    rest: None,
                    ..ServerConfig::default()
                };
                let server = Server::bind(config).await.unwrap();
                addr_tx
                    .send(server.thrift_addr().unwrap().unwrap())
                    .unwrap();
                server
                    .serve(async move {
                        let _ = stopped.await;
                    })
                    .await
                    .unwrap();
            });
        });
        Gateway {
            addr: addr_rx.recv().unwrap(),
            stop: Some(stop),
            thread: Some(thread),
            _dir: dir,
        }
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.stop.take().map(|s| s.send(()));
        if let Some(t) = self.thread.take() {
            t.join().unwrap();
        }
    }
}

type In = Box<dyn TInputProtocol + Send>;
type Out = Box<dyn TOutputProtocol + Send>;
type Client = HbaseSyncClient<In, Out>;

fn client(addr: SocketAddr, framed: bool, compact: bool) -> Client {
    let stream = std::net::TcpStream::connect(addr).unwrap();
    // Without this, a framed request's second write waits out the server's delayed ACK.
    stream.set_nodelay(true).unwrap();
    let (r, w) = TTcpChannel::with_stream(stream).split().unwrap();
    let (r, w): (
        Box<dyn TReadTransport + Send>,
        Box<dyn TWriteTransport + Send>,
    ) = if framed {
        (
            Box::new(TFramedReadTransport::new(r)),
            Box::new(TFramedWriteTransport::new(w)),
        )
    } else {
        (
            Box::new(TBufferedReadTransport::new(r)),
            Box::new(TBufferedWriteTransport::new(w)),
        )
    };
    let (i, o): (In, Out) = if compact {
        (
            Box::new(TCompactInputProtocol::new(r)),
            Box::new(TCompactOutputProtocol::new(w)),
        )
    } else {
        (
            Box::new(TBinaryInputProtocol::new(r, true)),
            Box::new(TBinaryOutputProtocol::new(w, true)),
        )
    };
    HbaseSyncClient::new(i, o)
}

fn family() -> ColumnDescriptor {
    ColumnDescriptor::new(
        b"cf:".to_vec(),
        3,
        "NONE".to_owned(),
        false,
        "ROW".to_owned(),
        0,
        0,
        true,
        i32::MAX,
    )
}

#[derive(Clone, Debug)]
enum Op {
    Put {
        row: u8,
        col: u8,
        ts: i64,
        value: u8,
    },
    DeleteColumn {
        row: u8,
        col: u8,
        ts: i64,
    },
    DeleteFamily {
        row: u8,
        ts: i64,
    },
    DeleteRow {
        row: u8,
        ts: i64,
    },
}

fn op() -> impl Strategy<Value = Op> {
    let (row, col, ts) = (0u8..4, 0u8..3, 1i64..12);
    prop_oneof![
        6 => (row.clone(), col.clone(), ts.clone(), any::<u8>())
            .prop_map(|(row, col, ts, value)| Op::Put { row, col, ts, value }),
        2 => (row.clone(), col, ts.clone()).prop_map(|(row, col, ts)| Op::DeleteColumn { row, col, ts }),
        1 => (row.clone(), ts.clone()).prop_map(|(row, ts)| Op::DeleteFamily { row, ts }),
        1 => (row, ts).prop_map(|(row, ts)| Op::DeleteRow { row, ts }),
    ]
}

fn row(r: u8) -> Vec<u8> {
    format!("row{r}").into_bytes()
}

fn col(c: u8) -> Vec<u8> {
    format!("q{c}").into_bytes()
}

fn apply(c: &mut Client, table: &[u8], oracle: &mut Oracle, op: &Op) {
    let t = table.to_vec();
    let none = BTreeMap::new;
    match *op {
        Op::Put {
            row: r,
            col: q,
            ts,
            value,
        } => {
            let m = Mutation::new(
                false,
                [b"cf:".as_slice(), &col(q)].concat(),
                vec![value],
                true,
            );
            c.mutate_row_ts(t, row(r), vec![m], ts, none()).unwrap();
            oracle.put(&Put::at(row(r), ts).add("cf", col(q), vec![value]), 0);
        }
        Op::DeleteColumn { row: r, col: q, ts } => {
            c.delete_all_ts(t, row(r), [b"cf:".as_slice(), &col(q)].concat(), ts, none())
                .unwrap();
            oracle.delete(&Delete::new(row(r)).add_columns_at("cf", col(q), ts), 0);
        }
        Op::DeleteFamily { row: r, ts } => {
            let m = Mutation::new(true, b"cf".to_vec(), None, true);
            c.mutate_row_ts(t, row(r), vec![m], ts, none()).unwrap();
            oracle.delete(&Delete::new(row(r)).add_family_at("cf", ts), 0);
        }
        Op::DeleteRow { row: r, ts } => {
            c.delete_all_row_ts(t, row(r), ts, none()).unwrap();
            oracle.delete(&Delete::at(row(r), ts), 0);
        }
    }
}

type Columns = BTreeMap<Vec<u8>, (Vec<u8>, i64)>;

fn thrift_columns(r: &TRowResult) -> Columns {
    r.columns
        .clone()
        .unwrap_or_default()
        .into_iter()
        .map(|(k, c)| (k, (c.value.unwrap_or_default(), c.timestamp.unwrap_or(-1))))
        .collect()
}

fn oracle_columns(cells: &[basalt_model::Cell]) -> Columns {
    cells
        .iter()
        .map(|c| {
            let name = [&c.family[..], b":", c.qualifier()].concat();
            (name, (c.value().to_vec(), c.timestamp))
        })
        .collect()
}

/// Every read the gateway offers, at several timestamp bounds, against the oracle.
fn check_reads(c: &mut Client, table: &[u8], oracle: &Oracle) -> Result<(), TestCaseError> {
    let t = table.to_vec();
    for bound in [3i64, 7, 12, i64::MAX] {
        let range = TimeRange::new(0, bound).unwrap();
        for r in 0..4 {
            let got = c
                .get_row_ts(t.clone(), row(r), bound, BTreeMap::new())
                .unwrap();
            let want = oracle.get(&Get::new(row(r)).with_time_range(range), 0);
            prop_assert_eq!(got.len(), usize::from(!want.is_empty()));
            let got = got.first().map(thrift_columns).unwrap_or_default();
            prop_assert_eq!(
                got,
                oracle_columns(&want.cells),
                "getRowTs {} < {}",
                r,
                bound
            );
            for q in 0..3 {
                let column = [b"cf:".as_slice(), &col(q)].concat();
                let got = c
                    .get_ver_ts(t.clone(), row(r), column, bound, 3, BTreeMap::new())
                    .unwrap();
                let got: Vec<_> = got
                    .into_iter()
                    .map(|c| (c.value.unwrap(), c.timestamp.unwrap()))
                    .collect();
                let get = Get::new(row(r))
                    .add_column("cf", col(q))
                    .with_max_versions(3)
                    .with_time_range(range);
                let want: Vec<_> = oracle
                    .get(&get, 0)
                    .cells
                    .iter()
                    .map(|c| (c.value().to_vec(), c.timestamp))
                    .collect();
                prop_assert_eq!(got, want, "getVerTs {}/q{} < {}", r, q, bound);
            }
        }
        let scan = TScan {
            timestamp: Some(bound),
            ..TScan::default()
        };
        let id = c
            .scanner_open_with_scan(t.clone(), scan, BTreeMap::new())
            .unwrap();
        let got: Vec<_> = c
            .scanner_get_list(id, 100)
            .unwrap()
            .iter()
            .map(|r| (r.row.clone().unwrap(), thrift_columns(r)))
            .collect();
        c.scanner_close(id).unwrap();
        let want: Vec<_> = oracle
            .scan(&Scan::new().with_time_range(range), 0)
            .iter()
            .map(|r| (r.row().to_vec(), oracle_columns(&r.cells)))
            .collect();
        prop_assert_eq!(got, want, "scan < {}", bound);
    }
    Ok(())
}

static GATEWAY: std::sync::OnceLock<Gateway> = std::sync::OnceLock::new();
static TABLES: AtomicU32 = AtomicU32::new(0);

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, max_shrink_iters: 500, ..ProptestConfig::default() })]

    #[test]
    fn histories_through_the_gateway_read_back_as_the_oracle_says(
        ops in proptest::collection::vec(op(), 1..40),
        framed in any::<bool>(),
        compact in any::<bool>(),
    ) {
        let gateway = GATEWAY.get_or_init(Gateway::start);
        let mut c = client(gateway.addr, framed, compact);
        let table = format!("h{}", TABLES.fetch_add(1, Ordering::Relaxed)).into_bytes();
        c.create_table(table.clone(), vec![family()]).unwrap();
        let mut oracle = Oracle::new(&[ColumnFamilyDescriptor::new("cf").with_max_versions(3)]);
        for op in &ops {
            apply(&mut c, &table, &mut oracle, op);
        }
        check_reads(&mut c, &table, &oracle)?;
    }
}

#[test]
fn every_transport_and_protocol_of_the_thrift_crate_is_understood() {
    let gateway = Gateway::start();
    for (framed, compact) in [(false, false), (false, true), (true, false), (true, true)] {
        let mut c = client(gateway.addr, framed, compact);
        let table = format!("t_{framed}_{compact}").into_bytes();
        c.create_table(table.clone(), vec![family()]).unwrap();
        assert!(c.get_table_names().unwrap().contains(&table));
        let m = Mutation::new(false, b"cf:q".to_vec(), b"v".to_vec(), true);
        c.mutate_row(table.clone(), b"r".to_vec(), vec![m], BTreeMap::new())
            .unwrap();
        let rows = c
            .get_row(table.clone(), b"r".to_vec(), BTreeMap::new())
            .unwrap();
        assert_eq!(
            thrift_columns(&rows[0]).keys().collect::<Vec<_>>(),
            [b"cf:q"]
        );
        assert_eq!(
            c.atomic_increment(table.clone(), b"n".to_vec(), b"cf:n".to_vec(), 5)
                .unwrap(),
            5
        );
        let thrift::Error::User(e) = c.scanner_get(12345).unwrap_err() else {
            panic!("not an IllegalArgument");
        };
        let e = e
            .downcast::<hbase_thrift::hbase::IllegalArgument>()
            .unwrap();
        assert_eq!(e.message.as_deref(), Some("scanner ID is invalid"));
    }
}

/// RELIABILITY.md D11: mutateRows with one row HBase's client would refuse (an oversized
/// cell) or the server would (an unknown family) writes none of the rows.
#[test]
fn mutate_rows_with_one_bad_row_writes_nothing() {
    use hbase_thrift::hbase::BatchMutation;
    let gateway = Gateway::start();
    let mut c = client(gateway.addr, false, false);
    let table = b"mr".to_vec();
    c.create_table(table.clone(), vec![family()]).unwrap();
    let row = |r: &[u8], column: &[u8], value: Vec<u8>| {
        BatchMutation::new(
            r.to_vec(),
            vec![Mutation::new(false, column.to_vec(), value, true)],
        )
    };
    for bad in [
        row(b"b", b"cf:q", vec![0u8; 10 * 1024 * 1024 + 1]),
        row(b"b", b"nope:q", b"v".to_vec()),
    ] {
        let batch = vec![
            row(b"a", b"cf:q", b"v".to_vec()),
            bad,
            row(b"c", b"cf:q", b"v".to_vec()),
        ];
        assert!(c
            .mutate_rows(table.clone(), batch, BTreeMap::new())
            .is_err());
        for r in [b"a", b"c"] {
            let got = c
                .get_row(table.clone(), r.to_vec(), BTreeMap::new())
                .unwrap();
            assert!(got.is_empty(), "row {:?} was written", r);
        }
    }
}
