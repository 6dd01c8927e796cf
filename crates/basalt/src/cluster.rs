//! `basalt master` and `basalt regionserver`: a cluster's processes, on ZooKeeper and
//! shared storage. Flags override a TOML file's keys; the file takes HBase's names.

use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use basalt_server::roles::{self, Role, RoleConfig};
use serde::Deserialize;

/// Which process to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Master,
    RegionServer,
}

/// The flags of `basalt master` and `basalt regionserver`.
#[derive(clap::Args, Debug, Default)]
pub struct RoleArgs {
    /// ZooKeeper's quorum, `host:port[,host:port...]` (`hbase.zookeeper.quorum`).
    #[arg(long)]
    zookeeper: Option<String>,
    /// The shared storage: `file:///path` or `s3://bucket/prefix` (with the `AWS_*`
    /// variables).
    #[arg(long)]
    storage: Option<String>,
    /// The native API's port (16000 for a master, 16020 for a region server); 0 picks one.
    #[arg(long)]
    port: Option<u16>,
    /// The page's and `/metrics`' port (16010, 16030); 0 picks one.
    #[arg(long)]
    info_port: Option<u16>,
    /// The address to listen on (127.0.0.1 unless given).
    #[arg(long)]
    bind: Option<IpAddr>,
    /// The host name other processes reach this one by (the listen address, or this
    /// machine's name when listening on every interface).
    #[arg(long)]
    hostname: Option<String>,
    /// A TOML file of settings (`basalt.toml` in the working directory when present).
    #[arg(long)]
    config: Option<PathBuf>,
}

/// The file's keys: HBase's names, or short ones.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RoleFile {
    #[serde(alias = "hbase.zookeeper.quorum")]
    zookeeper: Option<String>,
    #[serde(alias = "zookeeper.znode.parent")]
    znode_parent: Option<String>,
    /// Milliseconds.
    #[serde(alias = "zookeeper.session.timeout")]
    session_timeout_ms: Option<u64>,
    storage: Option<String>,
    bind: Option<IpAddr>,
    #[serde(rename = "hbase.master.port")]
    master_port: Option<u16>,
    #[serde(rename = "hbase.master.info.port")]
    master_info_port: Option<u16>,
    #[serde(rename = "hbase.regionserver.port")]
    regionserver_port: Option<u16>,
    #[serde(rename = "hbase.regionserver.info.port")]
    regionserver_info_port: Option<u16>,
    #[serde(alias = "hbase.regionserver.hostname")]
    hostname: Option<String>,
    /// Milliseconds.
    #[serde(alias = "hbase.master.maxclockskew")]
    max_clock_skew_ms: Option<u64>,
    /// Milliseconds.
    #[serde(alias = "hbase.balancer.period")]
    balancer_period_ms: Option<u64>,
    #[serde(alias = "hbase.client.scanner.timeout.period")]
    scanner_timeout_ms: Option<u64>,
    block_cache_mib: Option<usize>,
    global_memstore_mib: Option<usize>,
}

fn read_file(path: Option<&Path>) -> anyhow::Result<RoleFile> {
    let (path, required) = match path {
        Some(p) => (p.to_owned(), true),
        None => (PathBuf::from("basalt.toml"), false),
    };
    match std::fs::read_to_string(&path) {
        Ok(text) => toml::from_str(&text).with_context(|| format!("reading {}", path.display())),
        Err(e) if !required && e.kind() == std::io::ErrorKind::NotFound => Ok(RoleFile::default()),
        Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
    }
}

/// The settings `args` and the file give a process of `kind`.
fn config(kind: Kind, args: RoleArgs) -> anyhow::Result<RoleConfig> {
    let f = read_file(args.config.as_deref())?;
    let zookeeper = args.zookeeper.or(f.zookeeper).context(
        "no ZooKeeper quorum: give --zookeeper HOST:PORT (or hbase.zookeeper.quorum in the config file)",
    )?;
    let storage = args.storage.or(f.storage).context(
        "no shared storage: give --storage file:///path or s3://bucket/prefix (or storage in the config file)",
    )?;
    let bind = args.bind.or(f.bind).unwrap_or(IpAddr::from([127, 0, 0, 1]));
    let (port, info_port) = match kind {
        Kind::Master => (
            args.port.or(f.master_port).unwrap_or(roles::MASTER_PORT),
            args.info_port
                .or(f.master_info_port)
                .unwrap_or(roles::MASTER_INFO_PORT),
        ),
        Kind::RegionServer => (
            args.port
                .or(f.regionserver_port)
                .unwrap_or(roles::REGIONSERVER_PORT),
            args.info_port
                .or(f.regionserver_info_port)
                .unwrap_or(roles::REGIONSERVER_INFO_PORT),
        ),
    };
    let mut c = RoleConfig::new(&zookeeper, &storage, SocketAddr::new(bind, port));
    c.server.info_listen = Some(SocketAddr::new(bind, info_port));
    if let Some(h) = args.hostname.or(f.hostname) {
        c.hostname = h;
    }
    if let Some(p) = f.znode_parent {
        c.znode_parent = p;
    }
    if let Some(ms) = f.session_timeout_ms {
        c.session_timeout = Duration::from_millis(ms);
    }
    if let Some(ms) = f.max_clock_skew_ms {
        c.max_clock_skew = Duration::from_millis(ms);
    }
    if let Some(ms) = f.balancer_period_ms {
        c.balancer_period = Duration::from_millis(ms);
    }
    if let Some(ms) = f.scanner_timeout_ms {
        c.server.scanner_lease = Duration::from_millis(ms);
    }
    if let Some(m) = f.block_cache_mib {
        c.server.options.block_cache_bytes = m << 20;
    }
    if let Some(m) = f.global_memstore_mib {
        c.server.options.background.global_memstore_limit_bytes = m << 20;
    }
    Ok(c)
}

/// Runs a master or region server until SIGINT or SIGTERM.
///
/// # Errors
/// Bad settings; a port taken; storage or ZooKeeper unusable; the role could not go on.
pub fn run(kind: Kind, args: RoleArgs) -> anyhow::Result<()> {
    crate::server::init_logs();
    let config = config(kind, args)?;
    let runtime = tokio::runtime::Runtime::new()?;
    let served = runtime.block_on(async move {
        let role = match kind {
            Kind::Master => Role::master(config).await?,
            Kind::RegionServer => Role::region_server(config).await?,
        };
        let what = match kind {
            Kind::Master => "master",
            Kind::RegionServer => "region server",
        };
        // Lines on stdout, for scripts and tests that start processes on port 0.
        println!(
            "Basalt {what} {} listening on {}",
            role.name(),
            role.local_addr()?
        );
        if let Some(info) = role.info_addr()? {
            println!("Web page and metrics on http://{info}/");
        }
        role.serve(crate::server::shutdown_signal()).await?;
        anyhow::Ok(())
    });
    runtime.shutdown_timeout(Duration::from_secs(1));
    served
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn hbase_names_in_the_file_and_flags_over_them() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("cluster.toml");
        std::fs::write(
            &file,
            "\"hbase.zookeeper.quorum\" = \"zk1:2181,zk2:2181\"\n\
             \"zookeeper.session.timeout\" = 30000\n\
             \"zookeeper.znode.parent\" = \"/prod\"\n\
             storage = \"file:///srv/basalt\"\n\
             \"hbase.master.port\" = 17000\n\
             \"hbase.regionserver.port\" = 17020\n\
             \"hbase.regionserver.info.port\" = 17030\n\
             \"hbase.balancer.period\" = 60000\n\
             \"hbase.master.maxclockskew\" = 2500\n",
        )
        .unwrap();
        let args = |port| RoleArgs {
            config: Some(file.clone()),
            port,
            ..RoleArgs::default()
        };
        let m = config(Kind::Master, args(None)).unwrap();
        assert_eq!(m.zookeeper, "zk1:2181,zk2:2181");
        assert_eq!(m.session_timeout, Duration::from_secs(30));
        assert_eq!(m.znode_parent, "/prod");
        assert_eq!(m.storage, "file:///srv/basalt");
        assert_eq!(m.server.listen.port(), 17000);
        assert_eq!(
            m.server.info_listen.unwrap().port(),
            roles::MASTER_INFO_PORT
        );
        assert_eq!(m.balancer_period, Duration::from_secs(60));
        assert_eq!(m.max_clock_skew, Duration::from_millis(2500));
        assert_eq!(m.hostname, "127.0.0.1");
        let rs = config(Kind::RegionServer, args(None)).unwrap();
        assert_eq!(rs.server.listen.port(), 17020);
        assert_eq!(rs.server.info_listen.unwrap().port(), 17030);
        let rs = config(Kind::RegionServer, args(Some(18020))).unwrap();
        assert_eq!(rs.server.listen.port(), 18020);
        // Without a quorum or storage, the message names the flag.
        let e = config(Kind::Master, RoleArgs::default()).unwrap_err();
        assert!(format!("{e:#}").contains("--zookeeper"), "{e:#}");
        std::fs::write(&file, "zookeper = \"x\"\n").unwrap();
        let e = config(Kind::Master, args(None)).unwrap_err();
        assert!(format!("{e:#}").contains("cluster.toml"), "{e:#}");
    }
}
