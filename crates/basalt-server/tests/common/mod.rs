//! A server in this process for the integration tests, and plain-socket helpers.
#![allow(dead_code, clippy::unwrap_used)] // each test binary uses a part

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use basalt_proto::pb;
use basalt_server::thrift::ThriftConfig;
use basalt_server::{Server, ServerConfig};

/// A server on free ports in this process, stopped when dropped.
pub struct Running {
    pub native: SocketAddr,
    pub info: SocketAddr,
    pub thrift: SocketAddr,
    pub bigtable: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<Result<(), String>>>,
    _dir: tempfile::TempDir,
}

impl Running {
    pub fn start(tune: impl FnOnce(&mut ServerConfig) + Send + 'static) -> Running {
        Running::start_in(tempfile::tempdir().unwrap(), tune)
    }

    /// A server on the data directory `dir`.
    pub fn start_in(
        dir: tempfile::TempDir,
        tune: impl FnOnce(&mut ServerConfig) + Send + 'static,
    ) -> Running {
        let data_dir = dir.path().to_owned();
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Runtime::new().unwrap();
            let served = rt.block_on(async move {
                let local = SocketAddr::from(([127, 0, 0, 1], 0));
                let mut config = ServerConfig {
                    data_dir,
                    listen: local,
                    info_listen: Some(local),
                    thrift: Some(ThriftConfig {
                        listen: local,
                        ..ThriftConfig::default()
                    }),
                    bigtable: Some(basalt_server::bigtable::BigtableConfig { listen: local }),
                    rest: Some(basalt_server::rest::RestConfig {
                        listen: local,
                        ..basalt_server::rest::RestConfig::default()
                    }),
                    ..ServerConfig::default()
                };
                tune(&mut config);
                let server = Server::bind(config).await.unwrap();
                let addrs = (
                    server.local_addr().unwrap(),
                    server.info_addr().unwrap().unwrap(),
                    server.thrift_addr().unwrap().unwrap(),
                    server.bigtable_addr().unwrap().unwrap(),
                );
                addr_tx.send(addrs).unwrap();
                server
                    .serve(async move {
                        let _ = stopped.await;
                    })
                    .await
                    .map_err(|e| e.to_string())
            });
            rt.shutdown_timeout(Duration::from_secs(1));
            served
        });
        let (native, info, thrift, bigtable) = addr_rx.recv().unwrap();
        Running {
            native,
            info,
            thrift,
            bigtable,
            stop: Some(stop),
            thread: Some(thread),
            _dir: dir,
        }
    }

    /// Stops the server and says how long the stop took and how it ended.
    pub fn stop(&mut self) -> (Duration, Result<(), String>) {
        let started = Instant::now();
        let _ = self.stop.take().map(|s| s.send(()));
        let result = self.thread.take().map_or(Ok(()), |t| t.join().unwrap());
        (started.elapsed(), result)
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

/// `GET path` over a plain socket: the whole response.
pub fn http_get(addr: SocketAddr, path: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes())
        .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

/// `GET /metrics`.
pub fn metrics(addr: SocketAddr) -> String {
    http_get(addr, "/metrics")
}

/// A Put of one cell (`f:q` = `v`) to `row`, as the native API carries it.
pub fn put_mutation(row: &str) -> pb::Mutation {
    let row = bytes::Bytes::copy_from_slice(row.as_bytes());
    pb::Mutation {
        kind: Some(pb::mutation::Kind::Put(pb::Put {
            row: row.clone(),
            cells: vec![pb::Cell {
                row,
                family: "f".into(),
                qualifier: "q".into(),
                timestamp: i64::MAX,
                r#type: pb::CellType::Put as i32,
                value: "v".into(),
                ttl_ms: None,
            }],
            ..pb::Put::default()
        })),
    }
}

/// The value of the metric `name` in a `/metrics` scrape.
pub fn metric_value(metrics: &str, name: &str) -> u64 {
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(name)?.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {name} in /metrics"))
}
