//! A cluster region server's data path: the operation layer over the regions it hosts.
//! Reads and writes go through the same [`Table`] as a standalone node's (validation, flow
//! control, mini-batches, scans across regions); only where regions come from differs. A
//! row whose region is not here is `NotServingRegion`, and the client asks the master again.
//! Administration is the master's: a region server refuses it, saying so.

use std::sync::Arc;
use std::time::Duration;

use basalt_api::{Admin, Connection, RegionLocation};
use basalt_model::{Result, TableName};
use basalt_storage::region::Region;

use super::{ClusterRegionServer, NotMaster};
use crate::database::table::{At, RegionSource};
use crate::Table;

/// A table as one region server sees it: the regions of it that the server hosts.
#[derive(Debug)]
struct HostedTable {
    rs: Arc<ClusterRegionServer>,
    name: TableName,
}

impl RegionSource for HostedTable {
    fn name(&self) -> &TableName {
        &self.name
    }

    fn locate(&self, at: At<'_>) -> Result<Arc<Region>> {
        self.rs.locate(&self.name, at)
    }

    /// A region server cannot tell a disabled table from one it hosts nothing of: the
    /// client learns that from the master.
    fn check_scan(&self) -> Result<()> {
        Ok(())
    }

    fn before_write(&self, region: &Region) -> Result<()> {
        self.rs.before_write(region)
    }

    fn after_write(&self, region: &Region) {
        self.rs.after_write(region);
    }

    /// A region here is either serving or gone elsewhere: the client, not the server,
    /// should look again.
    fn retry_limit(&self) -> Duration {
        Duration::ZERO
    }

    fn max_cell_size_bytes(&self) -> usize {
        self.rs.max_cell_size_bytes()
    }

    /// The lease is checked again after the read: a server paused past it may have lost
    /// the region to another server, which may have taken writes since.
    fn confirm_read(&self) -> Result<()> {
        self.rs.check_lease()
    }
}

/// The operation layer of a cluster region server: tables over the regions it hosts.
#[derive(Debug)]
pub struct RegionServerConnection {
    rs: Arc<ClusterRegionServer>,
    admin: NotMaster,
}

impl RegionServerConnection {
    /// The data path of `rs`.
    #[must_use]
    pub fn new(rs: Arc<ClusterRegionServer>) -> Self {
        RegionServerConnection {
            admin: NotMaster::region_server(rs.coordinator(), rs.name()),
            rs,
        }
    }
}

impl Connection for RegionServerConnection {
    fn admin(&self) -> &dyn Admin {
        &self.admin
    }

    fn table(&self, name: &TableName) -> Result<Arc<dyn basalt_api::Table>> {
        let src = HostedTable {
            rs: Arc::clone(&self.rs),
            name: name.clone(),
        };
        Ok(Arc::new(Table::over(Arc::new(src))))
    }

    fn locate_region(&self, table: &TableName, row: &[u8]) -> Result<RegionLocation> {
        let src = HostedTable {
            rs: Arc::clone(&self.rs),
            name: table.clone(),
        };
        Ok(RegionLocation {
            region: src.locate(At::Row(row))?.info().clone(),
            server: self.rs.name(),
        })
    }

    /// The hosted regions are in memory.
    fn serves_from_memory(&self) -> bool {
        true
    }
}
