//! Basalt's standalone server: the native gRPC API (`basalt.v1`) and HBase's Thrift1 gateway
//! (`thrift`) over one embedded database, with scanners as leases, and the status page with
//! `/metrics` (`info`). `basalt server` runs it.

#![allow(clippy::missing_errors_doc)] // gRPC handlers answer with statuses, documented in the proto

pub mod info;
pub mod metrics;
pub mod scanners;
pub mod service;
pub mod thrift;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use basalt_proto::pb;
use basalt_storage::{Database, Options};
use tokio::net::TcpListener;
use tokio_stream::wrappers::TcpListenerStream;

use scanners::Scanners;
use service::Services;

/// Default port of the native API (HBase's region server port).
pub const DEFAULT_PORT: u16 = 16020;
/// The largest request or response message (`hbase.ipc.max.request.size`, 256 MiB): a
/// row of 10 MiB cells must cross, gRPC's default of 4 MiB would refuse it.
pub const MAX_MESSAGE_BYTES: usize = 256 << 20;

/// Default port of the web page and `/metrics` (HBase's master info port).
pub const DEFAULT_INFO_PORT: u16 = 16010;

/// What the server runs with; every field has a sane default.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    pub data_dir: PathBuf,
    /// Where the native API listens (`127.0.0.1:16020`: loopback, since there is no
    /// authentication yet); port 0 picks a free port.
    pub listen: SocketAddr,
    /// Where the web page and `/metrics` listen (`127.0.0.1:16010`); `None` turns them off.
    pub info_listen: Option<SocketAddr>,
    /// The HBase Thrift1 gateway (`0.0.0.0:9090`); `None` turns it off.
    pub thrift: Option<thrift::ThriftConfig>,
    /// `hbase.client.scanner.timeout.period`: a scanner left alone this long is closed
    /// (native and Thrift scanners alike).
    pub scanner_lease: Duration,
    /// The engine's settings (memory limits, flush and compaction behaviour).
    pub options: Options,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            data_dir: PathBuf::from("./basalt-data"),
            listen: SocketAddr::from(([127, 0, 0, 1], DEFAULT_PORT)),
            info_listen: Some(SocketAddr::from(([127, 0, 0, 1], DEFAULT_INFO_PORT))),
            thrift: Some(thrift::ThriftConfig::default()),
            scanner_lease: Duration::from_secs(60),
            options: Options::default(),
        }
    }
}

/// A server bound to its port, not yet serving.
#[derive(Debug)]
pub struct Server {
    listener: TcpListener,
    info_listener: Option<TcpListener>,
    thrift: Option<(TcpListener, Arc<thrift::Gateway>)>,
    services: Services,
    lease: Duration,
}

impl Server {
    /// Opens the data directory and binds the port.
    ///
    /// # Errors
    /// The directory is in use or damaged, or the port cannot be bound.
    pub async fn bind(config: ServerConfig) -> Result<Server, ServerError> {
        let listener = TcpListener::bind(config.listen)
            .await
            .map_err(|e| ServerError(format!("binding {}: {e}", config.listen)))?;
        // hbase:meta names the server by the port it really got (port 0 picks one).
        let mut options = config.options.clone();
        options.server_port = listener
            .local_addr()
            .map_or(config.listen.port(), |a| a.port());
        let dir = config.data_dir.clone();
        let db = tokio::task::spawn_blocking(move || Database::open_with(&dir, options))
            .await
            .map_err(|e| ServerError(format!("opening the database: {e}")))??;
        let info_listener = match config.info_listen {
            Some(addr) => Some(
                TcpListener::bind(addr)
                    .await
                    .map_err(|e| ServerError(format!("binding {addr}: {e}")))?,
            ),
            None => None,
        };
        let services = Services {
            db,
            scanners: Arc::new(Scanners::new(config.scanner_lease)),
            metrics: Arc::new(metrics::RequestMetrics::default()),
        };
        let thrift = match config.thrift {
            Some(t) => {
                let l = thrift::listen(t.listen)
                    .map_err(|e| ServerError(format!("binding {}: {e}", t.listen)))?;
                // Thrift's scanner ids are i32s.
                let scanners = Arc::new(Scanners::with_max_id(
                    config.scanner_lease,
                    i32::MAX.unsigned_abs().into(),
                ));
                let gateway = thrift::Gateway::new(
                    services.db.clone(),
                    scanners,
                    Arc::clone(&services.metrics),
                    t,
                );
                let gateway = Arc::new(gateway);
                let g = Arc::downgrade(&gateway);
                services.metrics.register_gauge(
                    "basalt_thrift_connections",
                    "Thrift gateway connections open.",
                    move || g.upgrade().map_or(0, |g| g.open_connections() as u64),
                );
                let g = Arc::downgrade(&gateway);
                services.metrics.register_gauge(
                    "basalt_thrift_open_scanners",
                    "Thrift gateway scanner leases held.",
                    move || {
                        g.upgrade()
                            .map_or(0, |g| g.handler.scanners().open_count() as u64)
                    },
                );
                Some((l, gateway))
            }
            None => None,
        };
        Ok(Server {
            listener,
            info_listener,
            thrift,
            services,
            lease: config.scanner_lease,
        })
    }

    /// The address the native API listens on.
    ///
    /// # Errors
    /// The socket has no local address.
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// The address of the web page and `/metrics`, when they are on.
    ///
    /// # Errors
    /// The socket has no local address.
    pub fn info_addr(&self) -> std::io::Result<Option<SocketAddr>> {
        self.info_listener
            .as_ref()
            .map(TcpListener::local_addr)
            .transpose()
    }

    /// The address of the Thrift gateway, when it is on.
    ///
    /// # Errors
    /// The socket has no local address.
    pub fn thrift_addr(&self) -> std::io::Result<Option<SocketAddr>> {
        self.thrift
            .as_ref()
            .map(|(l, _)| l.local_addr())
            .transpose()
    }

    /// Serves until `shutdown` completes, then closes the database (every acknowledged write
    /// is durable after that).
    ///
    /// # Errors
    /// The transport failed, or the final close did.
    pub async fn serve(
        self,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> Result<(), ServerError> {
        let Server {
            listener,
            info_listener,
            thrift,
            services,
            lease,
        } = self;
        // One shutdown signal for both listeners.
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        let stopped = |mut rx: tokio::sync::watch::Receiver<bool>| async move {
            let _ = rx.wait_for(|s| *s).await;
        };
        let info = info_listener.map(|l| {
            let app = info::router(services.clone());
            let stop = stopped(stop_rx.clone());
            tokio::spawn(async move {
                if let Err(e) = axum::serve(l, app).with_graceful_shutdown(stop).await {
                    tracing::warn!(error = %e, "the web page stopped");
                }
            })
        });
        let gateway = thrift.map(|(l, gateway)| {
            let stop = stop_rx.clone();
            let g = Arc::clone(&gateway);
            (tokio::spawn(thrift::serve(l, g, stop)), gateway)
        });
        tokio::spawn(async move {
            shutdown.await;
            let _ = stop_tx.send(true);
        });
        let reaper = {
            let scanners = Arc::clone(&services.scanners);
            let thrift_scanners = gateway.as_ref().map(|(_, g)| g.handler.scanners());
            let tick = (lease / 4).clamp(Duration::from_millis(50), Duration::from_secs(1));
            tokio::spawn(async move {
                let mut every = tokio::time::interval(tick);
                loop {
                    every.tick().await;
                    scanners.expire();
                    if let Some(t) = &thrift_scanners {
                        t.expire();
                    }
                }
            })
        };
        let db = services.db.clone();
        let result = tonic::transport::Server::builder()
            .add_service(
                pb::admin_server::AdminServer::new(services.clone())
                    .max_decoding_message_size(MAX_MESSAGE_BYTES)
                    .max_encoding_message_size(MAX_MESSAGE_BYTES),
            )
            .add_service(
                pb::table_server::TableServer::new(services)
                    .max_decoding_message_size(MAX_MESSAGE_BYTES)
                    .max_encoding_message_size(MAX_MESSAGE_BYTES),
            )
            .serve_with_incoming_shutdown(incoming(listener), stopped(stop_rx))
            .await;
        reaper.abort();
        if let Some(info) = info {
            let _ = info.await;
        }
        if let Some((accepting, _)) = gateway {
            let _ = accepting.await;
        }
        result.map_err(|e| ServerError(format!("serving: {e}")))?;
        tokio::task::spawn_blocking(move || db.close())
            .await
            .map_err(|e| ServerError(format!("closing the database: {e}")))??;
        tracing::info!("server stopped; the database is closed");
        Ok(())
    }
}

/// Accepted connections with Nagle's algorithm off: small responses go out at once instead
/// of waiting for the client's delayed ACK (tens of milliseconds a call).
fn incoming(
    listener: TcpListener,
) -> impl tokio_stream::Stream<Item = std::io::Result<tokio::net::TcpStream>> {
    use tokio_stream::StreamExt;
    TcpListenerStream::new(listener).map(|s| {
        if let Ok(s) = &s {
            if let Err(e) = s.set_nodelay(true) {
                tracing::debug!(error = %e, "could not turn Nagle's algorithm off");
            }
        }
        s
    })
}

/// Why the server could not start or stop cleanly.
#[derive(Debug)]
pub struct ServerError(pub String);

impl std::fmt::Display for ServerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ServerError {}

impl From<basalt_model::Error> for ServerError {
    fn from(e: basalt_model::Error) -> Self {
        ServerError(e.to_string())
    }
}
