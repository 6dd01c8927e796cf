//! `basalt server`: flags, an optional `basalt.toml`, logs, signals.

use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use basalt_server::{Server, ServerConfig, DEFAULT_PORT};
use serde::Deserialize;

/// The server's flags; each overrides the same key of the config file.
#[derive(clap::Args, Debug)]
pub struct ServerArgs {
    /// The data directory (created if missing).
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// The address to listen on (127.0.0.1 unless given: there is no authentication yet, so
    /// exposing the server to a network is a choice to make explicitly, `--bind 0.0.0.0`).
    #[arg(long)]
    bind: Option<IpAddr>,
    /// The native API's port; 0 picks a free one (printed at start).
    #[arg(long)]
    port: Option<u16>,
    /// The web page's and `/metrics`' port; 0 picks a free one (printed at start).
    #[arg(long)]
    info_port: Option<u16>,
    /// The HBase Thrift1 gateway's port (buffered or framed, binary or compact); 0 picks a
    /// free one (printed at start).
    #[arg(long)]
    thrift_port: Option<u16>,
    /// Google Bigtable's v2 APIs' port (8086, the emulator's); 0 picks a free one (printed
    /// at start).
    #[arg(long)]
    bigtable_port: Option<u16>,
    /// HBase's REST gateway's port (8080, `hbase.rest.port`); 0 picks a free one (printed
    /// at start).
    #[arg(long)]
    rest_port: Option<u16>,
    /// Scanner lease timeout in ms (`hbase.client.scanner.timeout.period`).
    #[arg(long)]
    scanner_timeout_ms: Option<u64>,
    /// A TOML file of settings (`basalt.toml` in the working directory when present).
    #[arg(long)]
    config: Option<PathBuf>,
}

/// `basalt.toml`: every key optional.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    data_dir: Option<PathBuf>,
    bind: Option<IpAddr>,
    port: Option<u16>,
    info_port: Option<u16>,
    thrift_port: Option<u16>,
    bigtable_port: Option<u16>,
    rest_port: Option<u16>,
    /// `hbase.rest.readonly`: the REST gateway refuses every write.
    rest_read_only: Option<bool>,
    /// The largest Thrift request or frame (`hbase.regionserver.thrift.framed.max_frame_size_in_mb`).
    thrift_max_frame_mib: Option<usize>,
    /// Thrift connections served at once (`hbase.thrift.maxWorkerThreads`).
    thrift_max_connections: Option<usize>,
    /// How long a Thrift connection may send nothing (`hbase.thrift.server.socket.read.timeout`).
    thrift_read_timeout_ms: Option<u64>,
    /// Bytes of requests in flight, all protocols (`hbase.ipc.server.max.callqueue.size`).
    request_budget_mib: Option<usize>,
    scanner_timeout_ms: Option<u64>,
    /// Block cache capacity.
    block_cache_mib: Option<usize>,
    /// `hbase.regionserver.global.memstore.size` as MiB.
    global_memstore_mib: Option<usize>,
}

fn read_config(path: Option<&Path>) -> anyhow::Result<FileConfig> {
    let (path, required) = match path {
        Some(p) => (p.to_owned(), true),
        None => (PathBuf::from("basalt.toml"), false),
    };
    match std::fs::read_to_string(&path) {
        Ok(text) => toml::from_str(&text).with_context(|| format!("reading {}", path.display())),
        Err(e) if !required && e.kind() == std::io::ErrorKind::NotFound => {
            Ok(FileConfig::default())
        }
        Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
    }
}

fn config(args: ServerArgs) -> anyhow::Result<ServerConfig> {
    let file = read_config(args.config.as_deref())?;
    let mut c = ServerConfig::default();
    if let Some(d) = args.data_dir.or(file.data_dir) {
        c.data_dir = d;
    }
    let bind = args.bind.or(file.bind).unwrap_or(c.listen.ip());
    let port = args.port.or(file.port).unwrap_or(DEFAULT_PORT);
    c.listen = SocketAddr::new(bind, port);
    let info_port = args
        .info_port
        .or(file.info_port)
        .unwrap_or(basalt_server::DEFAULT_INFO_PORT);
    c.info_listen = Some(SocketAddr::new(bind, info_port));
    let mut thrift = basalt_server::thrift::ThriftConfig::default();
    let thrift_port = args.thrift_port.or(file.thrift_port);
    thrift.listen = SocketAddr::new(bind, thrift_port.unwrap_or(thrift.listen.port()));
    if let Some(m) = file.thrift_max_frame_mib {
        thrift.max_message_bytes = m << 20;
    }
    if let Some(n) = file.thrift_max_connections {
        thrift.max_connections = n;
    }
    if let Some(ms) = file.thrift_read_timeout_ms {
        thrift.read_timeout = Duration::from_millis(ms);
    }
    if let Some(m) = file.request_budget_mib {
        c.request_budget_bytes = m << 20;
    }
    c.thrift = Some(thrift);
    let bigtable_port = args
        .bigtable_port
        .or(file.bigtable_port)
        .unwrap_or(basalt_server::bigtable::DEFAULT_PORT);
    c.bigtable = Some(basalt_server::bigtable::BigtableConfig {
        listen: SocketAddr::new(bind, bigtable_port),
    });
    let rest_port = args
        .rest_port
        .or(file.rest_port)
        .unwrap_or(basalt_server::rest::DEFAULT_PORT);
    c.rest = Some(basalt_server::rest::RestConfig {
        listen: SocketAddr::new(bind, rest_port),
        read_only: file.rest_read_only.unwrap_or(false),
        ..basalt_server::rest::RestConfig::default()
    });
    if let Some(ms) = args.scanner_timeout_ms.or(file.scanner_timeout_ms) {
        c.scanner_lease = Duration::from_millis(ms);
    }
    if let Some(m) = file.block_cache_mib {
        c.options.block_cache_bytes = m << 20;
    }
    if let Some(m) = file.global_memstore_mib {
        c.options.background.global_memstore_limit_bytes = m << 20;
    }
    Ok(c)
}

/// A line on stdout for whoever started the process. A reader that went away (a script
/// that read the address it wanted and closed the pipe) must not stop the server, so a
/// failed write is ignored where `println!` would panic.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($arg)*);
    }};
}

/// Runs the server until SIGINT or SIGTERM.
///
/// # Errors
/// Bad settings, a data directory in use, a port taken.
/// Logs to stderr, `info` unless `RUST_LOG` says otherwise.
pub fn init_logs() {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
}

pub fn run(args: ServerArgs) -> anyhow::Result<()> {
    init_logs();
    let config = config(args)?;
    let runtime = tokio::runtime::Runtime::new()?;
    let served = runtime.block_on(async move {
        let dir = config.data_dir.clone();
        let server = Server::bind(config).await?;
        let addr = server.local_addr()?;
        // Lines on stdout, for scripts and tests that start the server on port 0.
        say!(
            "Basalt server listening on {addr} (data directory {})",
            dir.display()
        );
        if let Some(info) = server.info_addr()? {
            say!("Web page and metrics on http://{info}/");
        }
        if let Some(thrift) = server.thrift_addr()? {
            say!("HBase Thrift gateway on {thrift}");
        }
        if let Some(bigtable) = server.bigtable_addr()? {
            say!("Bigtable API on {bigtable}");
        }
        if let Some(rest) = server.rest_addr()? {
            say!("HBase REST gateway on http://{rest}/");
        }
        if !addr.ip().is_loopback() {
            let warning = format!(
                "WARNING: listening on {}, beyond this machine, with no authentication: anyone who can reach these ports can read, write and drop every table",
                addr.ip()
            );
            say!("{warning}");
            tracing::warn!("{warning}");
        }
        tracing::info!(%addr, dir = %dir.display(), "serving");
        server.serve(shutdown_signal()).await?;
        Ok(())
    });
    // A request stuck past the stop's grace period still holds a blocking thread: the
    // process ends without waiting for it (every acknowledged write is durable).
    runtime.shutdown_timeout(Duration::from_secs(1));
    served
}

/// Completes on SIGINT or SIGTERM.
pub async fn shutdown_signal() {
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        () = term => {}
    }
    tracing::info!("shutting down");
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn args(config: Option<PathBuf>, port: Option<u16>) -> ServerArgs {
        ServerArgs {
            data_dir: None,
            bind: None,
            port,
            info_port: None,
            thrift_port: None,
            bigtable_port: None,
            rest_port: None,
            scanner_timeout_ms: None,
            config,
        }
    }

    #[test]
    fn the_config_file_sets_defaults_and_flags_override_it() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("basalt.toml");
        std::fs::write(
            &file,
            "data_dir = \"/srv/basalt\"\nport = 17000\ninfo_port = 17001\nthrift_port = 17002\nthrift_max_frame_mib = 16\nscanner_timeout_ms = 5000\nblock_cache_mib = 64\n",
        )
        .unwrap();
        let c = config(args(Some(file.clone()), None)).unwrap();
        assert_eq!(c.data_dir, PathBuf::from("/srv/basalt"));
        assert_eq!(c.listen.port(), 17000);
        assert_eq!(c.info_listen.unwrap().port(), 17001);
        let thrift = c.thrift.clone().unwrap();
        assert_eq!(thrift.listen.port(), 17002);
        assert_eq!(thrift.max_message_bytes, 16 << 20);
        assert_eq!(c.scanner_lease, Duration::from_secs(5));
        assert_eq!(c.options.block_cache_bytes, 64 << 20);
        let c = config(args(Some(file.clone()), Some(18000))).unwrap();
        assert_eq!(c.listen.port(), 18000);
        // Defaults without a file; an unknown key is refused with the file's name.
        let c = config(args(None, None)).unwrap();
        assert_eq!(
            (c.listen.port(), c.data_dir),
            (DEFAULT_PORT, PathBuf::from("./basalt-data"))
        );
        // RELIABILITY.md D22: with no authentication, every listener is on loopback unless
        // told otherwise.
        let loopback = IpAddr::from([127, 0, 0, 1]);
        assert_eq!(c.listen.ip(), loopback);
        assert_eq!(c.info_listen.unwrap().ip(), loopback);
        assert_eq!(c.thrift.unwrap().listen.ip(), loopback);
        let mut exposed = args(None, None);
        exposed.bind = Some(IpAddr::from([0, 0, 0, 0]));
        let c = config(exposed).unwrap();
        assert!(c.listen.ip().is_unspecified());
        assert!(c.thrift.unwrap().listen.ip().is_unspecified());
        std::fs::write(&file, "prot = 1\n").unwrap();
        let e = config(args(Some(file), None)).unwrap_err();
        assert!(format!("{e:#}").contains("basalt.toml"), "{e:#}");
    }
}
