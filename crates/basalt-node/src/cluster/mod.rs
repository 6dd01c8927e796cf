//! Cluster mode: a master and many region servers on shared storage, coordinated through
//! ZooKeeper (HBase's distributed mode).
//!
//! - [`ClusterRegionServer`] is a [`RegionServer`](crate::regionserver) whose files and log
//!   live on shared storage, registered in the coordinator for as long as its session
//!   lives. It opens and closes regions when the master says so, at the open epoch the
//!   master gives, and refuses to while its session's lease has run out.
//! - [`ClusterMaster`] is the active master, elected through the coordinator, with an epoch
//!   every catalog commit carries. It owns the catalog on shared storage, which records each
//!   region's assignment (server and open epoch); it assigns, moves and unassigns regions,
//!   balances them by count, and decommissions servers.
//!
//! The master reaches a region server only through [`RegionServerAdmin`] (HBase's
//! `AdminService`), found by name in a [`ServerDirectory`]: in process for the deterministic
//! tests, over the network between processes.

mod admin;
mod balancer;
mod ddl;
mod master;
mod meta;
mod not_master;
mod recovery;
mod regionserver;
mod serving;
mod split;
mod status;

pub use admin::MasterConnection;
pub use balancer::{plan_moves, Move};
pub use master::ClusterMaster;
pub use not_master::NotMaster;
pub use recovery::RecoveryStats;
pub use regionserver::ClusterRegionServer;
pub use serving::RegionServerConnection;

use std::sync::Arc;

use basalt_model::{Result, TableDescriptor, TableName};
use basalt_storage::region::{RegionInfo, RegionLoad};

/// One region as its server reports it.
#[derive(Clone, Debug)]
pub struct RegionReport {
    pub table: TableName,
    pub info: RegionInfo,
    /// The epoch it was opened at.
    pub open_epoch: u64,
    pub load: RegionLoad,
    /// Its largest store has passed the table's `MAX_FILESIZE` (HBase's split policy, which
    /// the server applies; the master decides and splits).
    pub wants_split: bool,
}

/// What a region server reports to the master (HBase's `RegionServerReport`).
#[derive(Clone, Debug)]
pub struct ServerReport {
    /// `host,port,start code`.
    pub server: String,
    /// Its online regions.
    pub regions: Vec<RegionReport>,
}

/// What the master asks of a region server. Every call carries the epoch of the master
/// making it: a server remembers the highest it has seen and refuses calls from a lower one,
/// so a deposed master cannot open or close regions behind its successor's back.
pub trait RegionServerAdmin: Send + Sync + std::fmt::Debug {
    /// Opens a region of `table` at `open_epoch`, above any epoch it was opened at before.
    ///
    /// # Errors
    /// The region's files cannot be read; `DoNotRetry` when the server's session has lost
    /// its lease, or the open or master epoch is stale.
    fn open_region(
        &self,
        master_epoch: u64,
        table: &TableDescriptor,
        info: &RegionInfo,
        open_epoch: u64,
    ) -> Result<()>;

    /// Stops serving a region, flushes it and releases it; a region it does not hold is
    /// not an error.
    ///
    /// # Errors
    /// `DoNotRetry` for a stale master epoch; the flush failed: the region serves on.
    fn close_region(&self, master_epoch: u64, region_id: u64) -> Result<()>;

    /// The server's regions and their loads.
    ///
    /// # Errors
    /// `DoNotRetry` for a stale master epoch; the server cannot be reached.
    fn report(&self, master_epoch: u64) -> Result<ServerReport>;

    /// Flushes a region it holds, then compacts it as `how` says (`flush`, `compact`,
    /// `major_compact`); a region it does not hold is not an error.
    ///
    /// # Errors
    /// `DoNotRetry` for a stale master epoch; `Io`.
    fn flush_region(&self, master_epoch: u64, region_id: u64, how: Compaction) -> Result<()>;

    /// Where a region it holds would split (its largest store's middle key); `None` when
    /// it has too little data.
    ///
    /// # Errors
    /// `DoNotRetry` for a stale master epoch, or a region that still reads its parent's
    /// files (it must compact first); `NotServingRegion` when it does not hold the region.
    fn split_point(&self, master_epoch: u64, region_id: u64) -> Result<Option<bytes::Bytes>>;

    /// Checks the server's clock against the master's (`master_now_ms`, when the master
    /// sent the call) before the master gives it regions: off by more than `max_skew_ms`,
    /// the server refuses and aborts (HBase's `ClockOutOfSyncException`), since a region
    /// moved to it would give its rows timestamps below those they already have.
    ///
    /// # Errors
    /// `DoNotRetry` for a stale master epoch or a clock too far off.
    fn check_clock(&self, master_epoch: u64, master_now_ms: i64, max_skew_ms: u64) -> Result<()>;
}

/// The default `hbase.master.maxclockskew`.
pub const DEFAULT_MAX_CLOCK_SKEW: std::time::Duration = std::time::Duration::from_secs(1);

/// What follows a flush of a region.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compaction {
    None,
    Minor,
    Major,
}

/// How the master reaches a region server by name.
pub trait ServerDirectory: Send + Sync + std::fmt::Debug {
    /// The server called `name` (`host,port,start code`).
    ///
    /// # Errors
    /// It cannot be reached.
    fn connect(&self, name: &str) -> Result<Arc<dyn RegionServerAdmin>>;
}

#[cfg(test)]
mod recovery_tests;
#[cfg(test)]
mod simulation;
#[cfg(test)]
mod split_tests;
#[cfg(test)]
mod tests;
