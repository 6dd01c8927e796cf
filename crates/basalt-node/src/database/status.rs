//! A standalone node's answers to the cluster's operations: one server that is its own
//! master, holding every region. Moves and decommissions have nowhere to go and say so.

use std::sync::atomic::Ordering;

use basalt_api::{ClusterStatus, ServerStatus};
use basalt_model::region::RegionLoad;
use basalt_model::{Error, Result, TableName};

use super::Database;

/// Adds `load` to the server's total.
pub(crate) fn add_load(total: &mut RegionLoad, load: &RegionLoad) {
    total.store_files += load.store_files;
    total.store_file_bytes += load.store_file_bytes;
    total.memstore_bytes += load.memstore_bytes;
    total.read_requests += load.read_requests;
    total.write_requests += load.write_requests;
}

impl Database {
    /// `status`: this server as the active master and the one region server.
    ///
    /// # Errors
    /// None in practice (a table dropped while it is read is skipped).
    pub fn cluster_status(&self) -> Result<ClusterStatus> {
        let mut server = ServerStatus {
            name: self.server_name(),
            ..ServerStatus::default()
        };
        let mut in_transition = Vec::new();
        let mut tables: Vec<String> = self.list_tables(None)?;
        tables.push("hbase:meta".to_owned());
        for t in tables {
            let name = TableName::parse(&t)?;
            let Ok(loads) = self.region_loads(&name) else {
                continue;
            };
            for (info, load) in loads {
                match &load.failed_open {
                    Some(why) => in_transition.push(format!(
                        "{} FAILED_OPEN: {why}",
                        info.region_name_string(&name)
                    )),
                    None => {
                        server.regions += 1;
                        add_load(&mut server.load, &load);
                    }
                }
            }
        }
        Ok(ClusterStatus {
            cluster_id: self.cluster_id(),
            master: server.name.clone(),
            answered_by: server.name.clone(),
            servers: vec![server],
            in_transition,
            balancer_on: self.inner.balancer_on.load(Ordering::SeqCst),
            ..ClusterStatus::default()
        })
    }

    /// `move`: a region can only stay on the one server there is.
    ///
    /// # Errors
    /// `UnknownRegion`; `DoNotRetry` for another destination.
    pub fn move_region(&self, region: &[u8], dest: Option<&str>) -> Result<()> {
        self.inner.master.find_region(region)?;
        let me = self.server_name();
        match dest {
            Some(d) if d != me => Err(Error::DoNotRetry(format!(
                "{d} is not a live region server that takes regions (this standalone server, {me}, is the only one)"
            ))),
            _ => Ok(()),
        }
    }

    /// `assign`: every region of an enabled table is open already.
    ///
    /// # Errors
    /// `UnknownRegion`.
    pub fn assign(&self, region: &[u8]) -> Result<()> {
        self.inner.master.find_region(region).map(drop)
    }

    /// `balance_switch`: the previous setting.
    pub fn balance_switch(&self, on: bool) -> bool {
        self.inner.balancer_on.swap(on, Ordering::SeqCst)
    }

    /// `balancer`: runs (nothing to move with one server) when switched on.
    #[must_use]
    pub fn balance(&self) -> bool {
        self.inner.balancer_on.load(Ordering::SeqCst)
    }

    /// `decommission_regionservers`: refused, since it would leave no server.
    ///
    /// # Errors
    /// Always `DoNotRetry`, naming why.
    pub fn decommission(&self, servers: &[String]) -> Result<()> {
        Err(Error::DoNotRetry(format!(
            "decommissioning {} would leave no server to serve regions: this is a standalone server",
            servers.join(", ")
        )))
    }
}
