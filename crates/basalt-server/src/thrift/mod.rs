//! HBase's Thrift1 gateway (`Hbase.thrift`), so that happybase and every other Thrift1 client
//! can use Basalt unchanged.
//!
//! One port serves every client setting: the first bytes of a connection say whether it is
//! buffered or framed, binary or compact (`transport`). Each connection has a thread, as in
//! HBase's thread-pool server, that decodes requests with length-checked protocols
//! (`protocol`) and answers them with the generated `Hbase` processor over `handler`, which
//! calls the same engine and regions as the native API. Scanners are leases, like the native
//! API's.
//!
//! Connections (RELIABILITY.md D6, D18): at most `max_connections` are served at once, and
//! past that the gateway stops accepting, so new clients wait in the accept queue instead of
//! being reset; a connection that sends nothing for `read_timeout` (HBase's
//! `hbase.thrift.server.socket.read.timeout`, 60 s), before, inside or between requests, is
//! closed; request bytes count against the server's budget as they arrive (`budget`).

mod convert;
mod handler;
pub(crate) mod protocol;
mod schema;
mod stand_in;
mod transport;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use basalt_api::Connection;
use parking_lot::Mutex;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::budget::RequestBudget;

use crate::metrics::RequestMetrics;
use basalt_api::leases::Scanners;

pub use handler::{Handler, ThriftScanner};

/// File descriptors one connection holds: its socket, the clone its writer uses and the clone
/// a stop closes it by.
pub const DESCRIPTORS_PER_CONNECTION: u64 = 3;

/// Default port of the Thrift gateway (HBase's `hbase.regionserver.thrift.port`).
pub const DEFAULT_THRIFT_PORT: u16 = 9090;

/// The methods of `Hbase.thrift`, in the order of the IDL; metrics count requests by them.
pub const METHODS: [&str; 49] = [
    "enableTable",
    "disableTable",
    "isTableEnabled",
    "compact",
    "majorCompact",
    "getTableNames",
    "getTableNamesWithIsTableEnabled",
    "getColumnDescriptors",
    "getTableRegions",
    "createTable",
    "deleteTable",
    "get",
    "getVer",
    "getVerTs",
    "getRow",
    "getRowWithColumns",
    "getRowTs",
    "getRowWithColumnsTs",
    "getRows",
    "getRowsWithColumns",
    "getRowsTs",
    "getRowsWithColumnsTs",
    "mutateRow",
    "mutateRowTs",
    "mutateRows",
    "mutateRowsTs",
    "atomicIncrement",
    "deleteAll",
    "deleteAllTs",
    "deleteAllRow",
    "increment",
    "incrementRows",
    "deleteAllRowTs",
    "scannerOpenWithScan",
    "scannerOpen",
    "scannerOpenWithStop",
    "scannerOpenWithPrefix",
    "scannerOpenTs",
    "scannerOpenWithStopTs",
    "scannerGet",
    "scannerGetList",
    "scannerClose",
    "getRegionInfo",
    "append",
    "checkAndPut",
    "getThriftServerType",
    "getClusterId",
    "grant",
    "revoke",
];

/// The gateway's settings.
#[derive(Clone, Debug)]
pub struct ThriftConfig {
    /// Where the gateway listens (`0.0.0.0:9090`).
    pub listen: SocketAddr,
    /// The largest request, framed or not (`hbase.regionserver.thrift.framed.max_frame_size_in_mb`).
    pub max_message_bytes: usize,
    /// Connections served at once (`hbase.thrift.maxWorkerThreads`); more wait to be
    /// accepted.
    pub max_connections: usize,
    /// How long a connection may send nothing (`hbase.thrift.server.socket.read.timeout`).
    pub read_timeout: Duration,
}

impl Default for ThriftConfig {
    fn default() -> Self {
        ThriftConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], DEFAULT_THRIFT_PORT)),
            max_message_bytes: crate::MAX_MESSAGE_BYTES,
            max_connections: 1000,
            read_timeout: Duration::from_secs(60),
        }
    }
}

/// What every connection of the gateway shares.
#[derive(Debug)]
pub struct Gateway {
    pub(crate) handler: Handler,
    pub(crate) config: ThriftConfig,
    /// Open connections by id: a clone of each socket, so that a stop can close them.
    connections: Mutex<HashMap<u64, std::net::TcpStream>>,
    next_connection: AtomicU64,
    /// One permit per connection served.
    permits: Arc<Semaphore>,
    pub(crate) budget: Arc<RequestBudget>,
}

impl Gateway {
    pub(crate) fn new(
        conn: Arc<dyn Connection>,
        scanners: Arc<Scanners<handler::ThriftScanner>>,
        metrics: Arc<RequestMetrics>,
        config: ThriftConfig,
        budget: Arc<RequestBudget>,
    ) -> Gateway {
        Gateway {
            handler: Handler::new(conn, scanners, metrics),
            permits: Arc::new(Semaphore::new(config.max_connections)),
            config,
            connections: Mutex::new(HashMap::new()),
            next_connection: AtomicU64::new(1),
            budget,
        }
    }

    /// Serves one accepted connection on a thread of its own, which holds `permit` until the
    /// connection ends.
    pub(crate) fn accept(
        self: &Arc<Self>,
        stream: std::net::TcpStream,
        peer: SocketAddr,
        permit: OwnedSemaphorePermit,
    ) {
        let id = self.next_connection.fetch_add(1, Ordering::Relaxed);
        if let Err(e) = stream.set_read_timeout(Some(self.config.read_timeout)) {
            tracing::warn!(%peer, error = %e, "cannot serve a Thrift connection");
            return;
        }
        {
            let mut open = self.connections.lock();
            match stream.try_clone() {
                Ok(s) => open.insert(id, s),
                Err(e) => {
                    tracing::warn!(%peer, error = %e, "cannot serve a Thrift connection");
                    return;
                }
            };
        }
        let gateway = Arc::clone(self);
        let spawned = std::thread::Builder::new()
            .name(format!("thrift-{id}"))
            .spawn(move || {
                transport::serve_connection(&gateway, stream, peer);
                gateway.connections.lock().remove(&id);
                drop(permit);
            });
        if let Err(e) = spawned {
            tracing::warn!(%peer, error = %e, "cannot start a thread for a Thrift connection");
            self.connections.lock().remove(&id);
        }
    }

    /// Closes every connection and waits (up to `patience`) for their threads to finish the
    /// call they are in.
    pub(crate) fn close_all(&self, patience: Duration) {
        for s in self.connections.lock().values() {
            let _ = s.shutdown(std::net::Shutdown::Both);
        }
        let deadline = Instant::now() + patience;
        while !self.connections.lock().is_empty() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Connections open now.
    #[must_use]
    pub fn open_connections(&self) -> usize {
        self.connections.lock().len()
    }
}

/// The gateway's listening socket. Its connections inherit TCP keepalive, so the thread of a
/// client whose machine vanished without closing its connection ends when the kernel gives
/// up on the peer, while an idle connection that is alive stays open for as long as the
/// client keeps it.
///
/// # Errors
/// The address cannot be bound.
pub fn listen(addr: SocketAddr) -> std::io::Result<tokio::net::TcpListener> {
    let socket = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.set_keepalive(true)?;
    socket.bind(addr)?;
    socket.listen(1024)
}

/// Accepts connections until `stop` turns true, then closes them all.
pub(crate) async fn serve(
    listener: tokio::net::TcpListener,
    gateway: Arc<Gateway>,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    let stopped = async move {
        let _ = stop.wait_for(|s| *s).await.map(drop);
    };
    tokio::pin!(stopped);
    loop {
        // Backpressure: past the limit, clients wait in the accept queue.
        let permit = tokio::select! {
            () = &mut stopped => break,
            p = Arc::clone(&gateway.permits).acquire_owned() => match p {
                Ok(p) => p,
                Err(_) => break,
            },
        };
        tokio::select! {
            () = &mut stopped => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    let stream = stream.into_std().and_then(|s| {
                        s.set_nonblocking(false)?;
                        s.set_nodelay(true)?;
                        Ok(s)
                    });
                    match stream {
                        Ok(s) => gateway.accept(s, peer, permit),
                        Err(e) => tracing::warn!(%peer, error = %e, "cannot set up a Thrift connection"),
                    }
                }
                Err(e) => {
                    // Out of descriptors, most likely: pause rather than spin.
                    tracing::warn!(error = %e, "accepting a Thrift connection failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }
    }
    let g = Arc::clone(&gateway);
    let _ = tokio::task::spawn_blocking(move || g.close_all(Duration::from_secs(30))).await;
}
