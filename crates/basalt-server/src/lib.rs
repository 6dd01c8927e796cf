//! Basalt's standalone server: the native gRPC API (`basalt.v1`) and HBase's Thrift1 gateway
//! (`thrift`) over one embedded database, with scanners as leases, and the status page with
//! `/metrics` (`info`). `basalt server` runs it.

#![allow(clippy::missing_errors_doc)] // gRPC handlers answer with statuses, documented in the proto

pub mod bigtable;
pub mod budget;
pub mod cluster;
mod event_loops;
pub mod fuzzing;
pub mod gateway;
pub mod grpc;
pub mod http2;
pub mod info;
pub mod listener;
pub mod metrics;
mod mini_batch;
pub mod rest;
pub mod roles;
mod rpc_server;
pub mod thrift;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use basalt_api::leases::Scanners;
use basalt_node::{Database, Options};
use basalt_proto::pb;
use tokio::net::TcpListener;

use event_loops::EventLoops;
use grpc::Services;
use listener::{Accepted, ConnectionLimits};

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
    /// Google Bigtable's v2 APIs (`127.0.0.1:8086`); `None` turns them off.
    pub bigtable: Option<bigtable::BigtableConfig>,
    /// HBase's REST gateway (`127.0.0.1:8080`); `None` turns it off.
    pub rest: Option<rest::RestConfig>,
    /// `hbase.client.scanner.timeout.period`: a scanner left alone this long is closed
    /// (native and Thrift scanners alike).
    pub scanner_lease: Duration,
    /// The engine's settings (memory limits, flush and compaction behaviour).
    pub options: Options,
    /// Connection rules of the native API and of the web page (cap, deadlines).
    pub native_limits: ConnectionLimits,
    pub info_limits: ConnectionLimits,
    /// How long a stop waits for requests in flight before it gives up on them (every
    /// acknowledged write is durable already; the database is closed either way).
    pub shutdown_grace: Duration,
    /// Bytes of requests in flight the server holds at most, all protocols together
    /// (`hbase.ipc.server.max.callqueue.size`, 1 GiB).
    pub request_budget_bytes: usize,
    /// Threads serving the native API's connections, each a connection's only thread
    /// (`hbase.netty.eventloop.rpcserver.thread.count`); one per core by default.
    pub event_loops: usize,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            data_dir: PathBuf::from("./basalt-data"),
            listen: SocketAddr::from(([127, 0, 0, 1], DEFAULT_PORT)),
            info_listen: Some(SocketAddr::from(([127, 0, 0, 1], DEFAULT_INFO_PORT))),
            thrift: Some(thrift::ThriftConfig::default()),
            bigtable: Some(bigtable::BigtableConfig::default()),
            rest: Some(rest::RestConfig::default()),
            scanner_lease: Duration::from_secs(60),
            options: Options::default(),
            native_limits: ConnectionLimits::native(),
            info_limits: ConnectionLimits::info(),
            shutdown_grace: Duration::from_secs(30),
            request_budget_bytes: budget::DEFAULT_REQUEST_BUDGET_BYTES,
            event_loops: EventLoops::default_count(),
        }
    }
}

/// A server bound to its port, not yet serving.
#[derive(Debug)]
pub struct Server {
    listener: TcpListener,
    info_listener: Option<TcpListener>,
    thrift: Option<(TcpListener, Arc<thrift::Gateway>)>,
    bigtable: Option<(TcpListener, bigtable::Gateway)>,
    rest: Option<(TcpListener, rest::Gateway)>,
    services: Services,
    lease: Duration,
    limits: (ConnectionLimits, ConnectionLimits),
    shutdown_grace: Duration,
    budget: Arc<budget::RequestBudget>,
    /// A cluster region server's `RegionServerAdmin`, served beside the native API.
    region_server_admin: Option<cluster::RegionServerAdminService>,
    event_loops: usize,
}

impl Server {
    /// A server of a cluster role (master or region server) over `services`, on listeners
    /// bound already; only `config`'s limits, lease, budget and grace are used.
    #[must_use]
    pub fn for_role(
        listener: TcpListener,
        info_listener: Option<TcpListener>,
        services: Services,
        region_server_admin: Option<cluster::RegionServerAdminService>,
        config: &ServerConfig,
    ) -> Server {
        Server {
            listener,
            info_listener,
            thrift: None,
            bigtable: None,
            rest: None,
            services,
            lease: config.scanner_lease,
            limits: (config.native_limits, config.info_limits),
            shutdown_grace: config.shutdown_grace,
            budget: budget::RequestBudget::new(config.request_budget_bytes),
            region_server_admin,
            event_loops: config.event_loops,
        }
    }

    /// Opens the data directory and binds the port.
    ///
    /// # Errors
    /// The directory is in use or damaged, or the port cannot be bound.
    pub async fn bind(mut config: ServerConfig) -> Result<Server, ServerError> {
        fit_caps_to_descriptors(&mut config);
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
            conn: Arc::new(db.clone()),
            node: Some(db),
            hosted: None,
            scanners: Arc::new(Scanners::new(config.scanner_lease)),
            region_names: Arc::default(),
            mini_batches: Arc::default(),
            metrics: Arc::new(metrics::RequestMetrics::new(&[
                ("native", &grpc::OPS),
                ("thrift", &thrift::METHODS),
                ("bigtable", &bigtable::METHODS),
                ("rest", &rest::METHODS),
            ])),
        };
        let budget = budget::RequestBudget::new(config.request_budget_bytes);
        let b = Arc::clone(&budget);
        services.metrics.register_gauge(
            "basalt_request_bytes_in_flight",
            "Bytes of requests being read or served, against the server's budget.",
            move || b.used() as u64,
        );
        let thrift = match config.thrift {
            Some(t) => Some(start_gateway(
                t,
                &services.conn,
                &services.metrics,
                config.scanner_lease,
                &budget,
            )?),
            None => None,
        };
        let bigtable = match &config.bigtable {
            Some(b) => Some((
                bigtable::listen(b.listen).await?,
                bigtable::Gateway::new(Arc::clone(&services.conn), Arc::clone(&services.metrics)),
            )),
            None => None,
        };
        let rest = bind_rest(config.rest.as_ref(), &services).await?;
        Ok(Server {
            listener,
            info_listener,
            thrift,
            bigtable,
            rest,
            services,
            lease: config.scanner_lease,
            limits: (config.native_limits, config.info_limits),
            shutdown_grace: config.shutdown_grace,
            budget,
            region_server_admin: None,
            event_loops: config.event_loops,
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

    /// The address of the Bigtable API, when it is on.
    ///
    /// # Errors
    /// The socket has no local address.
    pub fn bigtable_addr(&self) -> std::io::Result<Option<SocketAddr>> {
        self.bigtable
            .as_ref()
            .map(|(l, _)| l.local_addr())
            .transpose()
    }

    /// The address of the REST gateway, when it is on.
    ///
    /// # Errors
    /// The socket has no local address.
    pub fn rest_addr(&self) -> std::io::Result<Option<SocketAddr>> {
        self.rest.as_ref().map(|(l, _)| l.local_addr()).transpose()
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
            bigtable,
            rest,
            services,
            lease,
            limits,
            shutdown_grace,
            budget,
            region_server_admin,
            event_loops,
        } = self;
        // One shutdown signal for both listeners.
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        let stopped = |mut rx: tokio::sync::watch::Receiver<bool>| async move {
            let _ = rx.wait_for(|s| *s).await;
        };
        let info = info_listener
            .map(|l| serve_info(l, limits.1, &services, stopped(stop_rx.clone())))
            .transpose()?;
        // The gateways' accepting tasks, awaited after the native API stops.
        let mut gateways = Vec::new();
        let gateway = thrift.map(|(l, gateway)| {
            let g = Arc::clone(&gateway);
            gateways.push(tokio::spawn(thrift::serve(l, g, stop_rx.clone())));
            gateway
        });
        gateways.extend(bigtable.map(|(l, g)| bigtable::serve(l, &g, stopped(stop_rx.clone()))));
        if let Some((l, g)) = rest {
            gateways.push(rest::serve(l, &g, stopped(stop_rx.clone()))?);
        }
        let (stopping_tx, stopping) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(async move {
            shutdown.await;
            let _ = stop_tx.send(true);
            let _ = stopping_tx.send(());
        });
        let reaper = reap_scanners(&services, gateway.as_ref(), lease);
        let node = services.node.clone();
        let native = Accepted::start(listener, limits.0, "native API")
            .map_err(|e| ServerError(format!("serving the native API: {e}")))?;
        let routes = native_routes(services, region_server_admin, budget);
        // A live client answers the server's pings, so a call that runs longer than the idle
        // deadline (a major compaction, say) keeps its connection; a peer that answers
        // nothing is closed.
        let ping = (limits.0.idle / 3).min(Duration::from_secs(30));
        let serving = EventLoops::start("basalt-rpc", event_loops, &routes, ping, native, &stop_rx)
            .map_err(|e| ServerError(format!("starting the native API's event loops: {e}")))?
            .stopped();
        let finishing = async move {
            let result = serving.await;
            if let Some(info) = info {
                let _ = info.await;
            }
            for accepting in gateways {
                let _ = accepting.await;
            }
            result
        };
        let result = bounded_stop(finishing, stopping, shutdown_grace).await;
        reaper.abort();
        result?;
        match node {
            Some(db) => close_database(db, shutdown_grace).await,
            None => Ok(()),
        }
    }
}

/// The native API's services: administration, the region server's (in a cluster), and
/// tables, each within the request budget.
fn native_routes(
    services: Services,
    region_server_admin: Option<cluster::RegionServerAdminService>,
    budget: Arc<budget::RequestBudget>,
) -> rpc_server::Routes {
    rpc_server::Routes {
        admin: budget::Budgeted::new(
            pb::admin_server::AdminServer::new(services.clone())
                .max_decoding_message_size(MAX_MESSAGE_BYTES)
                .max_encoding_message_size(MAX_MESSAGE_BYTES),
            Arc::clone(&budget),
        ),
        region_server_admin: region_server_admin
            .map(cluster::RegionServerAdminService::into_server),
        table: grpc::TableCalls::new(services, budget, MAX_MESSAGE_BYTES),
    }
}

/// Binds the REST gateway over the server's connection, when it is on.
async fn bind_rest(
    config: Option<&rest::RestConfig>,
    services: &Services,
) -> Result<Option<(TcpListener, rest::Gateway)>, ServerError> {
    let Some(r) = config else {
        return Ok(None);
    };
    let gateway = rest::Gateway::new(
        Arc::clone(&services.conn),
        Arc::clone(&services.metrics),
        r.clone(),
    );
    Ok(Some((rest::listen(r.listen).await?, gateway)))
}

/// Lowers the listeners' connection caps to what the descriptor limit allows.
fn fit_caps_to_descriptors(config: &mut ServerConfig) {
    let mut thrift_cap = config.thrift.as_ref().map_or(0, |t| t.max_connections);
    listener::fit_to_descriptors(&mut [
        (&mut config.native_limits.max_connections, 1),
        (&mut config.info_limits.max_connections, 1),
        (&mut thrift_cap, thrift::DESCRIPTORS_PER_CONNECTION),
    ]);
    if let Some(t) = config.thrift.as_mut() {
        t.max_connections = thrift_cap;
    }
}

/// Binds the Thrift gateway over `conn` and registers its gauges.
fn start_gateway(
    t: thrift::ThriftConfig,
    conn: &Arc<dyn basalt_api::Connection>,
    metrics: &Arc<metrics::RequestMetrics>,
    lease: Duration,
    budget: &Arc<budget::RequestBudget>,
) -> Result<(TcpListener, Arc<thrift::Gateway>), ServerError> {
    let l =
        thrift::listen(t.listen).map_err(|e| ServerError(format!("binding {}: {e}", t.listen)))?;
    // Thrift's scanner ids are i32s.
    let scanners = Arc::new(Scanners::with_max_id(lease, i32::MAX.unsigned_abs().into()));
    let gateway = Arc::new(thrift::Gateway::new(
        Arc::clone(conn),
        scanners,
        Arc::clone(metrics),
        t,
        Arc::clone(budget),
    ));
    let g = Arc::downgrade(&gateway);
    metrics.register_gauge(
        "basalt_thrift_connections",
        "Thrift gateway connections open.",
        move || g.upgrade().map_or(0, |g| g.open_connections() as u64),
    );
    let g = Arc::downgrade(&gateway);
    metrics.register_gauge(
        "basalt_thrift_open_scanners",
        "Thrift gateway scanner leases held.",
        move || {
            g.upgrade()
                .map_or(0, |g| g.handler.scanners().open_count() as u64)
        },
    );
    Ok((l, gateway))
}

/// Serves the web page and `/metrics` on `l` until `stop`.
fn serve_info(
    l: TcpListener,
    limits: ConnectionLimits,
    services: &Services,
    stop: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<tokio::task::JoinHandle<()>, ServerError> {
    let accepted = Accepted::start(l, limits, "web page")
        .map_err(|e| ServerError(format!("serving the web page: {e}")))?;
    let app = info::router(services.clone());
    Ok(tokio::spawn(async move {
        if let Err(e) = axum::serve(accepted, app)
            .with_graceful_shutdown(stop)
            .await
        {
            tracing::warn!(error = %e, "the web page stopped");
        }
    }))
}

/// Expires the native API's and the Thrift gateway's scanner leases.
fn reap_scanners(
    services: &Services,
    gateway: Option<&Arc<thrift::Gateway>>,
    lease: Duration,
) -> tokio::task::JoinHandle<()> {
    let native = Arc::clone(&services.scanners);
    let thrift = gateway.map(|g| g.handler.scanners());
    spawn_reaper(lease, move || {
        native.expire();
        if let Some(t) = &thrift {
            t.expire();
        }
    })
}

/// Expires scanner leases (`expire` does it) a few times per lease period.
fn spawn_reaper(
    lease: Duration,
    expire: impl Fn() + Send + 'static,
) -> tokio::task::JoinHandle<()> {
    let tick = (lease / 4).clamp(Duration::from_millis(50), Duration::from_secs(1));
    tokio::spawn(async move {
        let mut every = tokio::time::interval(tick);
        loop {
            every.tick().await;
            expire();
        }
    })
}

/// Closes the database (every region flushed), giving up after `grace`: a disk that hangs
/// must not hang the stop either.
async fn close_database(db: Database, grace: Duration) -> Result<(), ServerError> {
    let closing = tokio::task::spawn_blocking(move || db.close());
    match tokio::time::timeout(grace, closing).await {
        Ok(closed) => {
            closed.map_err(|e| ServerError(format!("closing the database: {e}")))??;
            tracing::info!("server stopped; the database is closed");
            Ok(())
        }
        Err(_) => Err(ServerError(format!(
            "closing the database took longer than {} s; stopping anyway (the WAL holds every acknowledged write)",
            grace.as_secs()
        ))),
    }
}

/// Runs `serving` to its end, but once `stopping` fires gives it at most `grace` to finish
/// the requests in flight: a stuck request must not keep a stopped server alive.
async fn bounded_stop<E: std::fmt::Display>(
    serving: impl std::future::Future<Output = Result<(), E>>,
    stopping: tokio::sync::oneshot::Receiver<()>,
    grace: Duration,
) -> Result<(), ServerError> {
    tokio::pin!(serving);
    let outcome = tokio::select! {
        r = &mut serving => Some(r),
        _ = stopping => None,
    };
    let result = match outcome {
        Some(r) => r,
        None => match tokio::time::timeout(grace, &mut serving).await {
            Ok(r) => r,
            Err(_) => {
                tracing::error!(
                    grace_s = grace.as_secs(),
                    "requests still running after the stop's grace period; stopping without them (every acknowledged write is durable)"
                );
                return Ok(());
            }
        },
    };
    result.map_err(|e| ServerError(format!("serving: {e}")))
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
