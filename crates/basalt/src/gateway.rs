//! `basalt thrift --server HOST:PORT[,...]`: HBase's Thrift1 gateway as its own process, a
//! client of a Basalt server or cluster (HBase's `hbase thrift start`); `basalt bigtable
//! --server HOST:PORT[,...]`: Google Bigtable's v2 APIs the same way; `basalt rest --server
//! HOST:PORT[,...]`: HBase's REST gateway (`hbase rest start`).

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use basalt_server::gateway::{ThriftGateway, ThriftGatewayConfig};

use crate::server::{init_logs, shutdown_signal};

/// HBase's Thrift server port (`hbase.regionserver.thrift.port`).
const DEFAULT_THRIFT_PORT: u16 = 9090;

#[derive(clap::Args, Debug)]
pub struct ThriftArgs {
    /// The server whose tables the gateway serves: `host:port` of its native API; for a
    /// cluster, any of its masters and region servers as seeds (`host:port,host:port`).
    #[arg(long)]
    server: String,
    /// The address to listen on (loopback unless set: there is no authentication).
    #[arg(long, default_value_t = IpAddr::V4(Ipv4Addr::LOCALHOST))]
    bind: IpAddr,
    #[arg(long, default_value_t = DEFAULT_THRIFT_PORT)]
    port: u16,
    /// `hbase.client.scanner.timeout.period` of the gateway's scanners.
    #[arg(long)]
    scanner_timeout_ms: Option<u64>,
}

/// Connects to the server, then serves Thrift until SIGINT or SIGTERM.
///
/// # Errors
/// The server cannot be reached or the port bound.
pub fn run(args: &ThriftArgs) -> anyhow::Result<()> {
    init_logs();
    let mut config = ThriftGatewayConfig::default();
    config.thrift.listen = SocketAddr::new(args.bind, args.port);
    if let Some(ms) = args.scanner_timeout_ms {
        config.scanner_lease = Duration::from_millis(ms);
    }
    // Connected before the gateway's runtime starts: the client runs its own.
    let conn = basalt_client::blocking::Connection::connect(&args.server)
        .with_context(|| format!("connecting to the server at {}", args.server))?;
    let runtime = tokio::runtime::Runtime::new()?;
    let server = args.server.clone();
    let served = runtime.block_on(async move {
        let gateway = ThriftGateway::bind(Arc::new(conn), config)?;
        let addr = gateway.local_addr()?;
        // A line on stdout, for scripts and tests that start the gateway on port 0.
        println!("HBase Thrift gateway on {addr}, serving the server at {server}");
        tracing::info!(%addr, %server, "serving Thrift");
        gateway.serve(shutdown_signal()).await?;
        anyhow::Ok(())
    });
    runtime.shutdown_timeout(Duration::from_secs(1));
    served
}

#[derive(clap::Args, Debug)]
pub struct BigtableArgs {
    /// The server whose tables the gateway serves: `host:port` of its native API; for a
    /// cluster, any of its masters and region servers as seeds (`host:port,host:port`).
    #[arg(long)]
    server: String,
    /// The address to listen on (loopback unless set: there is no authentication).
    #[arg(long, default_value_t = IpAddr::V4(Ipv4Addr::LOCALHOST))]
    bind: IpAddr,
    /// 8086, the Bigtable emulator's port, unless set; 0 picks a free one (printed).
    #[arg(long, default_value_t = basalt_server::bigtable::DEFAULT_PORT)]
    port: u16,
}

/// Connects to the server, then serves the Bigtable API until SIGINT or SIGTERM.
///
/// # Errors
/// The server cannot be reached or the port bound.
pub fn run_bigtable(args: &BigtableArgs) -> anyhow::Result<()> {
    use basalt_server::bigtable;
    init_logs();
    // Connected before the gateway's runtime starts: the client runs its own.
    let conn = basalt_client::blocking::Connection::connect(&args.server)
        .with_context(|| format!("connecting to the server at {}", args.server))?;
    let runtime = tokio::runtime::Runtime::new()?;
    let server = args.server.clone();
    let listen = SocketAddr::new(args.bind, args.port);
    let served = runtime.block_on(async move {
        let metrics = Arc::new(basalt_server::metrics::RequestMetrics::new(&[(
            "bigtable",
            &bigtable::METHODS,
        )]));
        let gateway = bigtable::Gateway::new(Arc::new(conn), metrics);
        let listener = bigtable::listen(listen).await?;
        let addr = listener.local_addr()?;
        // A line on stdout, for scripts and tests that start the gateway on port 0.
        println!("Bigtable API on {addr}, serving the server at {server}");
        tracing::info!(%addr, %server, "serving Bigtable");
        bigtable::serve(listener, &gateway, shutdown_signal()).await?;
        anyhow::Ok(())
    });
    runtime.shutdown_timeout(Duration::from_secs(1));
    served
}

#[derive(clap::Args, Debug)]
pub struct RestArgs {
    /// The server whose tables the gateway serves: `host:port` of its native API; for a
    /// cluster, any of its masters and region servers as seeds (`host:port,host:port`).
    #[arg(long)]
    server: String,
    /// The address to listen on (loopback unless set: there is no authentication).
    #[arg(long, default_value_t = IpAddr::V4(Ipv4Addr::LOCALHOST))]
    bind: IpAddr,
    /// 8080 (`hbase.rest.port`) unless set; 0 picks a free one (printed).
    #[arg(long, default_value_t = basalt_server::rest::DEFAULT_PORT)]
    port: u16,
    /// `hbase.rest.readonly`: refuse every write, schema change and scanner with 403.
    #[arg(long)]
    read_only: bool,
    /// `hbase.rest.scannercache.expire.time` in ms: a scanner not read this long is closed.
    #[arg(long)]
    scanner_timeout_ms: Option<u64>,
}

/// Connects to the server, then serves HBase's REST API until SIGINT or SIGTERM.
///
/// # Errors
/// The server cannot be reached or the port bound.
pub fn run_rest(args: &RestArgs) -> anyhow::Result<()> {
    use basalt_server::rest;
    init_logs();
    // Connected before the gateway's runtime starts: the client runs its own.
    let conn = basalt_client::blocking::Connection::connect(&args.server)
        .with_context(|| format!("connecting to the server at {}", args.server))?;
    let runtime = tokio::runtime::Runtime::new()?;
    let server = args.server.clone();
    let mut config = rest::RestConfig {
        listen: SocketAddr::new(args.bind, args.port),
        read_only: args.read_only,
        ..rest::RestConfig::default()
    };
    if let Some(ms) = args.scanner_timeout_ms {
        config.scanner_lease = Duration::from_millis(ms);
    }
    let served = runtime.block_on(async move {
        let metrics = Arc::new(basalt_server::metrics::RequestMetrics::new(&[(
            "rest",
            &rest::METHODS,
        )]));
        let listener = rest::listen(config.listen).await?;
        let addr = listener.local_addr()?;
        let gateway = rest::Gateway::new(Arc::new(conn), metrics, config);
        // A line on stdout, for scripts and tests that start the gateway on port 0.
        println!("HBase REST gateway on http://{addr}/, serving the server at {server}");
        tracing::info!(%addr, %server, "serving REST");
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let serving = rest::serve(listener, &gateway, async move {
            let _ = stop_rx.await;
        })?;
        shutdown_signal().await;
        let _ = stop_tx.send(());
        let _ = tokio::time::timeout(Duration::from_secs(30), serving).await;
        anyhow::Ok(())
    });
    runtime.shutdown_timeout(Duration::from_secs(1));
    served
}
