//! Coordination: who is alive and who leads, in ZooKeeper, as HBase keeps it.
//!
//! ZooKeeper holds liveness and leadership only; the catalog on shared storage is the truth
//! about tables and regions. The layout under the parent node (`zookeeper.znode.parent`,
//! `/basalt` by default):
//!
//! ```text
//! <parent>/cluster                    persistent: the cluster's id and storage URL (JSON)
//! <parent>/master                     ephemeral: the active master's name
//! <parent>/backup-masters/<name>      ephemeral: one per backup master
//! <parent>/rs/<host>,<port>,<start>   ephemeral: one per region server
//! <parent>/master-epoch               persistent: the master epoch, raised by each new master
//! ```
//!
//! [`Coordinator`] is that interface, blocking like the rest of the node. [`ZooKeeperCoordinator`]
//! implements it on a real ensemble; [`memory::MemoryEnsemble`] in memory, for deterministic
//! tests that expire sessions at will.
//!
//! # Sessions and the read lease
//! A session that expires loses its ephemeral nodes: a master that loses its session is no
//! longer the master, and a region server is taken for dead. A region server must stop
//! serving *before* the master can act on its death: [`Coordinator::session`] says when a
//! request the ensemble answered was last sent (the ZooKeeper implementation sends one every
//! sixth of the session timeout), and a server refuses requests once that is two thirds of
//! the session timeout ago ([`SessionHealth::lease_valid`]).

pub mod memory;
mod zookeeper;

pub use zookeeper::ZooKeeperCoordinator;

use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use basalt_model::Result;
use serde::{Deserialize, Serialize};

/// The default `zookeeper.znode.parent`.
pub const DEFAULT_PARENT: &str = "/basalt";
/// The default `zookeeper.session.timeout`.
pub const DEFAULT_SESSION_TIMEOUT: Duration = Duration::from_secs(10);

/// What every node of a cluster must agree on, published by the first master.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterInfo {
    /// The catalog's cluster id (HBase's `hbase.id`).
    pub cluster_id: String,
    /// The shared storage's URL.
    pub storage: String,
}

/// The outcome of [`Coordinator::elect`].
#[derive(Debug)]
pub enum Election {
    /// This master is active, with this epoch (above every earlier master's).
    Active { epoch: u64 },
    /// Another master is active; this one is registered as a backup. The watch fires when
    /// the active master's node changes (it stopped or lost its session): elect again.
    Backup { active: String, watch: Watch },
}

/// The state of this process's session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SessionHealth {
    /// Alive as far as this process knows: the ensemble last answered a request this
    /// process *sent* at `confirmed` (so the ensemble heard from it then, and cannot expire
    /// the session before `confirmed` plus the session timeout).
    Alive { confirmed: Instant },
    /// Expired or closed: every ephemeral node of this session is gone.
    Expired,
}

impl SessionHealth {
    /// Whether a server may still act on what its session holds: the ensemble confirmed the
    /// session less than two thirds of the session timeout ago, so the server stops before
    /// the ensemble can expire the session and the master reassign its regions.
    #[must_use]
    pub fn lease_valid(self, session_timeout: Duration, now: Instant) -> bool {
        match self {
            SessionHealth::Alive { confirmed } => {
                now.saturating_duration_since(confirmed) < session_timeout * 2 / 3
            }
            SessionHealth::Expired => false,
        }
    }
}

/// A one-shot notification that something watched changed (or the session ended).
#[derive(Debug)]
pub struct Watch(pub(crate) Receiver<()>);

impl Watch {
    /// Waits up to `timeout` for the change; whether it came.
    #[must_use]
    pub fn wait(&self, timeout: Duration) -> bool {
        !matches!(self.0.recv_timeout(timeout), Err(RecvTimeoutError::Timeout))
    }

    /// Whether the change has come, without waiting.
    #[must_use]
    pub fn fired(&self) -> bool {
        !matches!(self.0.try_recv(), Err(std::sync::mpsc::TryRecvError::Empty))
    }
}

/// Liveness and leadership for one process (one session).
pub trait Coordinator: Send + Sync + std::fmt::Debug {
    /// Publishes `info` if no cluster is published yet; returns what is published (this
    /// `info`, or the cluster's that was there).
    ///
    /// # Errors
    /// `Io` when the ensemble cannot be reached.
    fn publish_cluster(&self, info: &ClusterInfo) -> Result<ClusterInfo>;

    /// The published cluster, if any.
    ///
    /// # Errors
    /// `Io` when the ensemble cannot be reached.
    fn cluster(&self) -> Result<Option<ClusterInfo>>;

    /// Becomes the active master if there is none (raising the master epoch), or registers
    /// as a backup.
    ///
    /// # Errors
    /// `Io`; `DoNotRetry` when the session is gone.
    fn elect(&self, name: &str) -> Result<Election>;

    /// Gives up being the active master (a clean stop), so a backup takes over at once.
    ///
    /// # Errors
    /// `Io`.
    fn resign(&self, name: &str) -> Result<()>;

    /// The active master's name.
    ///
    /// # Errors
    /// `Io`.
    fn active_master(&self) -> Result<Option<String>>;

    /// The backup masters' names, sorted.
    ///
    /// # Errors
    /// `Io`.
    fn backup_masters(&self) -> Result<Vec<String>>;

    /// Registers a region server (ephemeral: it goes with the session).
    ///
    /// # Errors
    /// `Io`; `DoNotRetry` when a server of that name is registered already.
    fn register_server(&self, name: &str) -> Result<()>;

    /// Removes this process's region server registration (a clean stop).
    ///
    /// # Errors
    /// `Io`.
    fn deregister_server(&self, name: &str) -> Result<()>;

    /// The live region servers, sorted, and a watch that fires at the next change.
    ///
    /// # Errors
    /// `Io`.
    fn live_servers(&self) -> Result<(Vec<String>, Watch)>;

    /// This process's session now.
    fn session(&self) -> SessionHealth;

    /// The session timeout the ensemble granted.
    fn session_timeout(&self) -> Duration;
}
