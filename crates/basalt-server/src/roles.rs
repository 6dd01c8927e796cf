//! The processes of a cluster: `basalt master` and `basalt regionserver`, each on
//! ZooKeeper and shared storage, serving the native API (`basalt.v1`) on its port and its
//! page with `/metrics` on its info port.
//!
//! - A master registers for election at start and serves at once: while a backup, its
//!   administration answers `PleaseHold` naming the active master; once elected it takes
//!   over the catalog and runs its chore (assign regions not open on a live server when the
//!   live servers change or every few seconds, and balance every balancer period).
//! - A region server waits for a master to publish the cluster, joins it, serves the
//!   regions it is told to open, and stops serving when it loses its ZooKeeper session.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use basalt_api::leases::Scanners;
use basalt_api::{Admin, Connection, RegionLocation};
use basalt_model::{Result, TableName};
use basalt_node::cluster::{
    ClusterMaster, ClusterRegionServer, MasterConnection, NotMaster, RegionServerConnection,
};
use basalt_node::coordination::ZooKeeperCoordinator;
use basalt_node::coordination::{Coordinator, Election};
use basalt_node::env::{Env, SystemClock};
use tokio::net::TcpListener;

use crate::cluster::{GrpcServerDirectory, RegionServerAdminService};
use crate::grpc::{self, Services};
use crate::{metrics, Server, ServerConfig, ServerError};

/// Where a cluster's files live under its storage URL.
pub const CLUSTER_ROOT: &str = "/basalt";
/// `hbase.master.port`.
pub const MASTER_PORT: u16 = 16000;
/// `hbase.master.info.port`.
pub const MASTER_INFO_PORT: u16 = 16010;
/// `hbase.regionserver.port`.
pub const REGIONSERVER_PORT: u16 = 16020;
/// `hbase.regionserver.info.port`.
pub const REGIONSERVER_INFO_PORT: u16 = 16030;
/// How often the master's chore looks for regions to assign when nothing wakes it.
const ASSIGN_PERIOD: Duration = Duration::from_secs(3);
/// How often the catalog janitor frees what splits and merges retired
/// (`hbase.catalogjanitor.interval`).
const JANITOR_PERIOD: Duration = Duration::from_secs(300);
/// How often a region server checks its ZooKeeper session.
const SESSION_CHECK: Duration = Duration::from_millis(500);

/// What a master or region server runs with.
#[derive(Clone, Debug)]
pub struct RoleConfig {
    /// `hbase.zookeeper.quorum`: `host:port[,host:port...]`.
    pub zookeeper: String,
    /// `zookeeper.znode.parent`.
    pub znode_parent: String,
    /// `zookeeper.session.timeout`.
    pub session_timeout: Duration,
    /// The shared storage's URL (`file:///path`, `s3://bucket/prefix`).
    pub storage: String,
    /// The host other processes reach this one by, as its server name carries it.
    pub hostname: String,
    /// The native API's and the page's listeners, and everything else a server has.
    pub server: ServerConfig,
    /// `hbase.balancer.period`.
    pub balancer_period: Duration,
    /// `hbase.master.maxclockskew`: a region server whose clock is further from the
    /// master's is refused.
    pub max_clock_skew: Duration,
}

impl RoleConfig {
    /// Settings for a role listening on `listen` (port 0 picks one).
    #[must_use]
    pub fn new(zookeeper: &str, storage: &str, listen: SocketAddr) -> RoleConfig {
        RoleConfig {
            zookeeper: zookeeper.to_owned(),
            znode_parent: "/basalt".to_owned(),
            session_timeout: basalt_node::coordination::DEFAULT_SESSION_TIMEOUT,
            storage: storage.to_owned(),
            hostname: default_hostname(listen),
            server: ServerConfig {
                listen,
                info_listen: None,
                thrift: None,
                bigtable: None,
                rest: None,
                ..ServerConfig::default()
            },
            balancer_period: Duration::from_secs(300),
            max_clock_skew: basalt_node::cluster::DEFAULT_MAX_CLOCK_SKEW,
        }
    }
}

/// The address a server listening on `listen` is reached at: that address, or this
/// machine's host name when it listens on every interface.
#[must_use]
pub fn default_hostname(listen: SocketAddr) -> String {
    if listen.ip().is_unspecified() {
        std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|h| h.trim().to_owned())
            .unwrap_or_else(|_| "localhost".to_owned())
    } else {
        listen.ip().to_string()
    }
}

/// A master or region server bound to its ports, ready to serve.
pub struct Role {
    server: Server,
    name: String,
    /// Stops the role's own work once serving has stopped.
    stop: Box<dyn FnOnce() -> Result<()> + Send>,
    /// Completes when the role cannot go on (a region server lost its session, a master
    /// failed to take over).
    fatal: tokio::sync::oneshot::Receiver<String>,
}

impl std::fmt::Debug for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Role")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

fn services(
    conn: Arc<dyn Connection>,
    hosted: Option<Arc<ClusterRegionServer>>,
    lease: Duration,
) -> Services {
    Services {
        conn,
        node: None,
        hosted,
        scanners: Arc::new(Scanners::new(lease)),
        region_names: Arc::default(),
        mini_batches: Arc::default(),
        metrics: Arc::new(metrics::RequestMetrics::new(&[("native", &grpc::OPS)])),
    }
}

async fn bind(config: &ServerConfig) -> Result<(TcpListener, Option<TcpListener>), ServerError> {
    let l = TcpListener::bind(config.listen)
        .await
        .map_err(|e| ServerError(format!("binding {}: {e}", config.listen)))?;
    let info = match config.info_listen {
        Some(a) => Some(
            TcpListener::bind(a)
                .await
                .map_err(|e| ServerError(format!("binding {a}: {e}")))?,
        ),
        None => None,
    };
    Ok((l, info))
}

/// Storage and coordinator, opened off the async threads.
async fn connect(config: &RoleConfig) -> Result<(Env, Arc<dyn Coordinator>), ServerError> {
    let c = config.clone();
    let joined = tokio::task::spawn_blocking(move || -> Result<(Env, Arc<dyn Coordinator>)> {
        let store = basalt_node::storage::open(&c.storage)?;
        let env = Env::on_shared(Arc::new(SystemClock), store, PathBuf::from(CLUSTER_ROOT));
        let zk = ZooKeeperCoordinator::connect(&c.zookeeper, &c.znode_parent, c.session_timeout)?;
        Ok((env, Arc::new(zk)))
    })
    .await
    .map_err(|e| ServerError(format!("starting: {e}")))?;
    joined.map_err(|e| ServerError(format!("starting: {e}")))
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

impl Role {
    /// Binds a master's ports, connects to storage and ZooKeeper, and starts its election.
    ///
    /// # Errors
    /// A port is taken; the storage fails its self-test; ZooKeeper cannot be reached.
    pub async fn master(config: RoleConfig) -> Result<Role, ServerError> {
        let (listener, info) = bind(&config.server).await?;
        let port = local_port(&listener)?;
        let (env, coordinator) = connect(&config).await?;
        let name = format!("{},{port},{}", config.hostname, now_ms());
        let role = Arc::new(MasterRole {
            active: OnceLock::new(),
            backup: NotMaster::backup_master(
                Arc::clone(&coordinator),
                name.clone(),
                env.clone(),
                Path::new(CLUSTER_ROOT),
            ),
        });
        let (fatal_tx, fatal) = tokio::sync::oneshot::channel();
        let stopping = Arc::new(AtomicBool::new(false));
        let chores = {
            let (role, stopping, name) = (Arc::clone(&role), Arc::clone(&stopping), name.clone());
            let config = config.clone();
            let run = move || {
                if let Err(e) = master_loop(&role, &env, coordinator, &name, &config, &stopping) {
                    tracing::error!(error = %e, "the master cannot go on");
                    let _ = fatal_tx.send(format!("master {name}: {e}"));
                }
            };
            std::thread::Builder::new()
                .name("basalt-master".into())
                .spawn(run)
                .map_err(|e| ServerError(format!("starting the master: {e}")))?
        };
        let services = services(role.clone(), None, config.server.scanner_lease);
        recovery_metrics(&services.metrics, &role);
        let stop = Box::new(move || {
            stopping.store(true, Ordering::SeqCst);
            let _ = chores.join();
            match role.active.get() {
                Some(m) => m.master().stop(),
                None => Ok(()),
            }
        });
        let server = Server::for_role(listener, info, services, None, &config.server);
        Ok(Role {
            server,
            name,
            stop,
            fatal,
        })
    }

    /// Binds a region server's ports, connects to storage and ZooKeeper, waits for a master
    /// to have published the cluster, and joins it.
    ///
    /// # Errors
    /// A port is taken; the storage fails its self-test or is another cluster's; ZooKeeper
    /// cannot be reached.
    pub async fn region_server(config: RoleConfig) -> Result<Role, ServerError> {
        let (listener, info) = bind(&config.server).await?;
        let port = local_port(&listener)?;
        let (env, coordinator) = connect(&config).await?;
        let mut options = config.server.options.clone();
        options.env = env;
        options.server_host.clone_from(&config.hostname);
        options.server_port = port;
        let storage = config.storage.clone();
        let c = Arc::clone(&coordinator);
        let rs = tokio::task::spawn_blocking(move || loop {
            wait_for_cluster(c.as_ref())?;
            match ClusterRegionServer::start(Path::new(CLUSTER_ROOT), &storage, &options, c.clone())
            {
                Err(basalt_model::Error::PleaseHold(why)) => {
                    tracing::info!(%why, "waiting for the master");
                    std::thread::sleep(Duration::from_millis(250));
                }
                started => break started,
            }
        })
        .await
        .map_err(|e| ServerError(format!("starting: {e}")))?
        .map_err(|e| ServerError(format!("starting the region server: {e}")))?;
        let rs = Arc::new(rs);
        let name = rs.name();
        let (fatal_tx, fatal) = tokio::sync::oneshot::channel();
        watch_session(Arc::clone(&rs), fatal_tx)?;
        let conn = Arc::new(RegionServerConnection::new(Arc::clone(&rs)));
        let services = services(conn, Some(Arc::clone(&rs)), config.server.scanner_lease);
        let admin = RegionServerAdminService::new(rs.clone());
        let stop = Box::new(move || rs.stop());
        let server = Server::for_role(listener, info, services, Some(admin), &config.server);
        Ok(Role {
            server,
            name,
            stop,
            fatal,
        })
    }

    /// `host,port,start code`.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The native API's address.
    ///
    /// # Errors
    /// The socket has no local address.
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.server.local_addr()
    }

    /// The page's address, when it is on.
    ///
    /// # Errors
    /// The socket has no local address.
    pub fn info_addr(&self) -> std::io::Result<Option<SocketAddr>> {
        self.server.info_addr()
    }

    /// Serves until `shutdown` completes or the role cannot go on; then stops the role's
    /// work (a master resigns, a region server closes its regions and leaves).
    ///
    /// # Errors
    /// The role could not go on (why), or its stop failed.
    pub async fn serve(
        self,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> Result<(), ServerError> {
        let Role {
            server,
            name,
            stop,
            fatal,
        } = self;
        let (why_tx, mut why_rx) = tokio::sync::oneshot::channel::<String>();
        let ending = async move {
            tokio::select! {
                () = shutdown => {}
                Ok(why) = fatal => { let _ = why_tx.send(why); }
            }
        };
        server.serve(ending).await?;
        let stopped = tokio::task::spawn_blocking(stop)
            .await
            .map_err(|e| ServerError(format!("stopping {name}: {e}")))?;
        if let Ok(why) = why_rx.try_recv() {
            return Err(ServerError(why));
        }
        stopped.map_err(|e| ServerError(format!("stopping {name}: {e}")))
    }
}

fn local_port(l: &TcpListener) -> Result<u16, ServerError> {
    l.local_addr()
        .map(|a| a.port())
        .map_err(|e| ServerError(format!("the listener has no address: {e}")))
}

/// Waits (polling ZooKeeper, an outside service) until a master has published the cluster.
fn wait_for_cluster(c: &dyn Coordinator) -> Result<()> {
    let mut told = false;
    while c.cluster()?.is_none() {
        if !told {
            tracing::info!("waiting for a master to start the cluster");
            told = true;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    Ok(())
}

/// Ends the region server when it must abort: its ZooKeeper session expired (its regions
/// may already be on their way to other servers) or the master fenced its log. It stops
/// serving and removes its registration at once (HBase aborts the server).
fn watch_session(
    rs: Arc<ClusterRegionServer>,
    fatal: tokio::sync::oneshot::Sender<String>,
) -> Result<(), ServerError> {
    let run = move || loop {
        if let Some(why) = rs.must_abort() {
            rs.abort(&why);
            let _ = fatal.send(why);
            return;
        }
        if fatal.is_closed() {
            return;
        }
        std::thread::sleep(SESSION_CHECK);
    };
    std::thread::Builder::new()
        .name("basalt-session".into())
        .spawn(run)
        .map(drop)
        .map_err(|e| ServerError(format!("starting the session watch: {e}")))
}

/// Elects; as a backup, waits for the active master to go and elects again; once active,
/// takes over and runs the chore until `stopping`.
fn master_loop(
    role: &MasterRole,
    env: &Env,
    coordinator: Arc<dyn Coordinator>,
    name: &str,
    config: &RoleConfig,
    stopping: &AtomicBool,
) -> Result<()> {
    let epoch = loop {
        if stopping.load(Ordering::SeqCst) {
            return Ok(());
        }
        match coordinator.elect(name)? {
            Election::Active { epoch } => break epoch,
            Election::Backup { active, watch } => {
                tracing::info!(%active, "a backup master, waiting for the active one to go");
                while !watch.wait(Duration::from_millis(250)) {
                    if stopping.load(Ordering::SeqCst) {
                        return Ok(());
                    }
                }
            }
        }
    };
    tracing::info!(epoch, "the active master; taking over");
    let directory = Arc::new(GrpcServerDirectory::new()?);
    let master = Arc::new(ClusterMaster::take_over(
        Path::new(CLUSTER_ROOT),
        &config.storage,
        env,
        Arc::clone(&coordinator),
        directory,
        name,
        epoch,
    )?);
    master.set_max_clock_skew(config.max_clock_skew);
    let _ = role.active.set(MasterConnection::new(Arc::clone(&master))?);
    let (mut balanced, mut cleaned) = (Instant::now(), Instant::now());
    while !stopping.load(Ordering::SeqCst) {
        let (_, changed) = coordinator.live_servers()?;
        if let Err(e) = master.assign_all() {
            tracing::warn!(error = %e, "assigning regions failed; trying again shortly");
        }
        if let Err(e) = master.split_large_regions() {
            tracing::warn!(error = %e, "splitting large regions failed; trying again shortly");
        }
        if balanced.elapsed() >= config.balancer_period {
            balanced = Instant::now();
            if let Err(e) = master.balance() {
                tracing::warn!(error = %e, "the balancer's run failed");
            }
        }
        if cleaned.elapsed() >= JANITOR_PERIOD {
            cleaned = Instant::now();
            if let Err(e) = master.run_catalog_janitor() {
                tracing::warn!(error = %e, "the catalog janitor's run failed");
            }
            let retention = config.server.options.archive_retention_ms;
            if let Err(e) = master.clean_archive(retention) {
                tracing::warn!(error = %e, "cleaning the archive failed; will retry");
            }
        }
        let until = Instant::now() + ASSIGN_PERIOD;
        while Instant::now() < until && !stopping.load(Ordering::SeqCst) {
            if changed.wait(Duration::from_millis(250)) {
                break;
            }
        }
    }
    Ok(())
}

/// The master's recoveries of dead region servers on `/metrics` (zero while a backup).
fn recovery_metrics(metrics: &metrics::RequestMetrics, role: &Arc<MasterRole>) {
    type Read = fn(&ClusterMaster) -> u64;
    let read = |f: Read| {
        let role = Arc::clone(role);
        move || role.active.get().map_or(0, |m| f(m.master()))
    };
    metrics.register_gauge(
        "basalt_master_recoveries_in_progress",
        "Dead region servers whose recovery (log split, reassignment) is under way.",
        read(|m| m.recoveries().len() as u64),
    );
    metrics.register_counter(
        "basalt_master_recoveries_total",
        "Recoveries of dead region servers this master finished.",
        read(|m| m.recovery_stats().completed.load(Ordering::Relaxed)),
    );
    metrics.register_counter(
        "basalt_master_recovery_failed_splits_total",
        "Splits of a dead server's log that failed (each is tried again).",
        read(|m| m.recovery_stats().failed_splits.load(Ordering::Relaxed)),
    );
    metrics.register_gauge(
        "basalt_master_recovery_last_milliseconds",
        "How long the last recovery took, from finding the server dead to its last region reassigned.",
        read(|m| m.recovery_stats().last_ms.load(Ordering::Relaxed)),
    );
}

/// A master process's operation layer: a backup's until it is elected, then the active
/// master's (a master is elected once in its life; after it stops, the process ends).
#[derive(Debug)]
struct MasterRole {
    active: OnceLock<MasterConnection>,
    backup: NotMaster,
}

impl Connection for MasterRole {
    fn admin(&self) -> &dyn Admin {
        match self.active.get() {
            Some(m) => m,
            None => &self.backup,
        }
    }

    fn table(&self, name: &TableName) -> Result<Arc<dyn basalt_api::Table>> {
        match self.active.get() {
            Some(m) => m.table(name),
            None => Err(not_active()),
        }
    }

    fn locate_region(&self, table: &TableName, row: &[u8]) -> Result<RegionLocation> {
        match self.active.get() {
            Some(m) => m.locate_region(table, row),
            None => self.backup.locate_region(table, row),
        }
    }
}

fn not_active() -> basalt_model::Error {
    basalt_model::Error::PleaseHold("this master is not the active one".to_owned())
}
