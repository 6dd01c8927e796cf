//! The server keeps serving its clients under hostile connection load (RELIABILITY.md D6, D7,
//! D18) and stops in bounded time with a request stuck: real sockets, a real server.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use basalt_proto::pb;
use basalt_server::listener::ConnectionLimits;
use common::{metric_value, metrics, Running};
use hbase_thrift::hbase::{HbaseSyncClient, THbaseSyncClient};
use thrift::protocol::{TBinaryInputProtocol, TBinaryOutputProtocol};
use thrift::transport::{TBufferedReadTransport, TBufferedWriteTransport, TIoChannel, TTcpChannel};

/// `n` connections that send nothing.
fn silent(addr: SocketAddr, n: usize) -> Vec<TcpStream> {
    (0..n).map(|_| TcpStream::connect(addr).unwrap()).collect()
}

/// Whether the server closed `s` (it reads end-of-file or a reset, after whatever the server
/// sent first, such as HTTP/2's settings) within `within`.
fn closed_by_server(s: &mut TcpStream, within: Duration) -> bool {
    let deadline = Instant::now() + within;
    let mut b = [0u8; 256];
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        s.set_read_timeout(Some(left.max(Duration::from_millis(1))))
            .unwrap();
        match s.read(&mut b) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e) => return e.kind() == std::io::ErrorKind::ConnectionReset,
        }
    }
    false
}

/// `getTableNames` through a new happybase-like connection (buffered, binary).
fn thrift_call(addr: SocketAddr) -> Result<Vec<Vec<u8>>, String> {
    let stream = TcpStream::connect(addr).map_err(|e| e.to_string())?;
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let (r, w) = TTcpChannel::with_stream(stream).split().unwrap();
    let mut client = HbaseSyncClient::new(
        TBinaryInputProtocol::new(TBufferedReadTransport::new(r), true),
        TBinaryOutputProtocol::new(TBufferedWriteTransport::new(w), true),
    );
    client.get_table_names().map_err(|e| e.to_string())
}

/// `ListNamespaces` through the native API.
fn native_call(addr: SocketAddr) -> Result<Vec<String>, String> {
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async move {
        let mut c = pb::admin_client::AdminClient::connect(format!("http://{addr}"))
            .await
            .map_err(|e| e.to_string())?;
        let names = c
            .list_namespaces(pb::Empty {})
            .await
            .map_err(|e| e.to_string())?;
        Ok(names.into_inner().names)
    })
}

/// D6: silent connections past the Thrift limit neither lock clients out for ever nor get
/// them reset: new clients wait in the accept queue and are served once the silent ones
/// time out.
#[test]
fn silent_thrift_connections_time_out_and_clients_wait_instead_of_being_reset() {
    let srv = Running::start(|c| {
        let t = c.thrift.as_mut().unwrap();
        t.max_connections = 8;
        t.read_timeout = Duration::from_secs(1);
    });
    let mut hogs = silent(srv.thrift, 40);
    let started = Instant::now();
    // More silent connections than the limit: the client waits behind them, then is served.
    assert_eq!(thrift_call(srv.thrift).unwrap(), Vec::<Vec<u8>>::new());
    assert!(started.elapsed() < Duration::from_secs(25));
    // The first ones were accepted and timed out; none got a reset at connect time.
    assert!(closed_by_server(&mut hogs[0], Duration::from_secs(10)));
}

/// D7: silent connections to the native API and the web page are closed after their first
/// byte deadline; both keep answering real clients meanwhile or right after.
#[test]
fn silent_native_and_web_connections_are_closed_and_service_goes_on() {
    let limits = ConnectionLimits {
        max_connections: 8,
        first_byte: Duration::from_millis(500),
        idle: Duration::from_secs(5),
    };
    let srv = Running::start(move |c| {
        c.native_limits = limits;
        c.info_limits = limits;
    });
    let mut native_hogs = silent(srv.native, 40);
    let mut info_hogs = silent(srv.info, 40);
    let names = native_call(srv.native).unwrap();
    assert!(names.contains(&"default".to_owned()), "{names:?}");
    assert!(metrics(srv.info).contains("basalt_request_bytes_in_flight"));
    assert!(closed_by_server(
        &mut native_hogs[0],
        Duration::from_secs(10)
    ));
    assert!(closed_by_server(&mut info_hogs[0], Duration::from_secs(10)));
}

/// D18: a frame that only announces a large size holds nothing; one that sends past the
/// server's budget is refused and gives its bytes back; service goes on.
#[test]
fn request_bytes_in_flight_stay_within_the_budget() {
    let srv = Running::start(|c| c.request_budget_bytes = 4 << 20);
    let frame_header = |len: u32| {
        let mut h = len.to_be_bytes().to_vec();
        h.push(0x80); // a framed binary message starts here
        h
    };
    let mut announcer = TcpStream::connect(srv.thrift).unwrap();
    announcer.write_all(&frame_header(200 << 20)).unwrap();
    let mut sender = TcpStream::connect(srv.thrift).unwrap();
    sender.write_all(&frame_header(200 << 20)).unwrap();
    let chunk = vec![0u8; 1 << 20];
    let mut sent = 0;
    while sent < 16 {
        if sender.write_all(&chunk).is_err() {
            break; // refused: the server closed it
        }
        sent += 1;
    }
    assert!(closed_by_server(&mut sender, Duration::from_secs(10)));
    // The announcer holds at most its first byte; the refused one gave everything back.
    let held = metric_value(&metrics(srv.info), "basalt_request_bytes_in_flight");
    assert!(held < 64 << 10, "{held} bytes held");
    assert_eq!(thrift_call(srv.thrift).unwrap(), Vec::<Vec<u8>>::new());
    // The native API shares the budget: a 5 MiB request is refused as RESOURCE_EXHAUSTED.
    let rt = tokio::runtime::Runtime::new().unwrap();
    let code = rt.block_on(async {
        let mut c = pb::admin_client::AdminClient::connect(format!("http://{}", srv.native))
            .await
            .unwrap();
        let big = pb::NamespaceRequest {
            name: "n".repeat(5 << 20),
            ..pb::NamespaceRequest::default()
        };
        c.create_namespace(big).await.unwrap_err().code()
    });
    assert_eq!(code, tonic::Code::ResourceExhausted);
    drop(announcer);
}

/// A stop finishes within its grace period even while a request is stuck (here, in a WAL
/// sync on a disk that takes 30 s per sync).
#[test]
fn a_stop_is_bounded_even_with_a_request_stuck() {
    use basalt_node::env::{Env, FaultInjector, SystemClock};
    let faults = Arc::new(FaultInjector::new(1));
    let f = Arc::clone(&faults);
    let mut srv = Running::start(move |c| {
        c.options.env = Env::with_faults(Arc::new(SystemClock), f);
        c.shutdown_grace = Duration::from_secs(1);
    });
    assert_eq!(thrift_call(srv.thrift).unwrap(), Vec::<Vec<u8>>::new());
    faults.set_sync_delay(Some(Duration::from_secs(30)));
    let native = srv.native;
    let ops_before = faults.op_count();
    let _stuck = std::thread::spawn(move || {
        let req = pb::NamespaceRequest {
            name: "stuck".to_owned(),
            ..pb::NamespaceRequest::default()
        };
        let rt = tokio::runtime::Runtime::new().unwrap();
        rt.block_on(async move {
            let mut c = pb::admin_client::AdminClient::connect(format!("http://{native}"))
                .await
                .unwrap();
            let _ = c.create_namespace(req).await;
        });
    });
    // The request has reached the disk: its catalog commit is in a slow sync.
    let deadline = Instant::now() + Duration::from_secs(20);
    while faults.op_count() == ops_before {
        assert!(
            Instant::now() < deadline,
            "the request never reached the disk"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let (took, _) = srv.stop();
    assert!(took < Duration::from_secs(10), "the stop took {took:?}");
}

/// The idle deadline closes silent peers, not live clients waiting on a long call: the
/// server's HTTP/2 pings keep them talking. Here a call takes 4 s (a slow disk) against a
/// 1.5 s idle deadline.
#[test]
fn a_call_longer_than_the_idle_deadline_keeps_its_connection() {
    use basalt_node::env::{Env, FaultInjector, SystemClock};
    let faults = Arc::new(FaultInjector::new(1));
    let f = Arc::clone(&faults);
    let srv = Running::start(move |c| {
        c.options.env = Env::with_faults(Arc::new(SystemClock), f);
        c.native_limits = ConnectionLimits {
            max_connections: 64,
            first_byte: Duration::from_secs(10),
            idle: Duration::from_millis(1500),
        };
    });
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let mut c = pb::admin_client::AdminClient::connect(format!("http://{}", srv.native))
            .await
            .unwrap();
        faults.set_sync_delay(Some(Duration::from_secs(4)));
        let req = pb::NamespaceRequest {
            name: "slow".to_owned(),
            ..pb::NamespaceRequest::default()
        };
        let started = Instant::now();
        c.create_namespace(req).await.unwrap();
        assert!(started.elapsed() >= Duration::from_secs(3));
        faults.set_sync_delay(None);
        let names = c.list_namespaces(pb::Empty {}).await.unwrap();
        assert!(names.into_inner().names.contains(&"slow".to_owned()));
    });
}
