//! Administration asked of a server that is not the active master: a region server, or a
//! backup master. It tells who the active master and the live servers are (so a client that
//! reached it finds the master) and refuses the rest, saying where to go.

use std::collections::BTreeMap;
use std::sync::Arc;

use basalt_api::{Admin, ClusterStatus, RegionReport, ServerStatus};
use basalt_model::{Error, Result, TableDescriptor, TableName};
use basalt_storage::region::RegionInfo;
use bytes::Bytes;

use crate::coordination::Coordinator;

/// The administration of a server that is not the active master.
#[derive(Debug)]
pub struct NotMaster {
    coordinator: Arc<dyn Coordinator>,
    /// This server's name.
    name: String,
    backup_master: bool,
}

impl NotMaster {
    /// A region server's: administration is the master's.
    #[must_use]
    pub fn region_server(coordinator: Arc<dyn Coordinator>, name: String) -> Self {
        NotMaster {
            coordinator,
            name,
            backup_master: false,
        }
    }

    /// A backup master's: administration is the active master's, once there is one.
    #[must_use]
    pub fn backup_master(coordinator: Arc<dyn Coordinator>, name: String) -> Self {
        NotMaster {
            coordinator,
            name,
            backup_master: true,
        }
    }

    fn refuse<T>(&self) -> Result<T> {
        let active = self.coordinator.active_master().ok().flatten();
        if self.backup_master {
            Err(Error::PleaseHold(match active {
                Some(a) if a != self.name => {
                    format!("{} is a backup master; the active master is {a}", self.name)
                }
                _ => format!("master {} is taking over; try again shortly", self.name),
            }))
        } else {
            Err(Error::DoNotRetry(format!(
                "{} is a region server: administration is served by the master (active now: {})",
                self.name,
                active.as_deref().unwrap_or("none right now")
            )))
        }
    }

    /// The cluster as the coordinator shows it: the active master, backups and the live
    /// servers (their loads are the active master's to tell).
    fn view(&self) -> Result<ClusterStatus> {
        let c = &self.coordinator;
        let (live, _) = c.live_servers()?;
        Ok(ClusterStatus {
            cluster_id: c.cluster()?.map(|i| i.cluster_id).unwrap_or_default(),
            master: c.active_master()?.unwrap_or_default(),
            backup_masters: c.backup_masters()?,
            servers: live
                .into_iter()
                .map(|name| ServerStatus {
                    name,
                    ..ServerStatus::default()
                })
                .collect(),
            answered_by: self.name.clone(),
            ..ClusterStatus::default()
        })
    }
}

impl Admin for NotMaster {
    fn create_namespace(&self, _: &str, _: BTreeMap<String, String>) -> Result<()> {
        self.refuse()
    }
    fn drop_namespace(&self, _: &str) -> Result<()> {
        self.refuse()
    }
    fn alter_namespace(&self, _: &str, _: BTreeMap<String, String>, _: &[String]) -> Result<()> {
        self.refuse()
    }
    fn namespace_properties(&self, _: &str) -> Result<BTreeMap<String, String>> {
        self.refuse()
    }
    fn list_namespaces(&self) -> Result<Vec<String>> {
        self.refuse()
    }
    fn list_namespace_tables(&self, _: &str) -> Result<Vec<String>> {
        self.refuse()
    }
    fn create_table(&self, _: TableDescriptor, _: &[Bytes]) -> Result<()> {
        self.refuse()
    }
    fn describe(&self, _: &TableName) -> Result<TableDescriptor> {
        self.refuse()
    }
    fn modify_table(&self, _: TableDescriptor) -> Result<()> {
        self.refuse()
    }
    fn table_exists(&self, _: &TableName) -> Result<bool> {
        self.refuse()
    }
    fn is_enabled(&self, _: &TableName) -> Result<bool> {
        self.refuse()
    }
    fn enable_table(&self, _: &TableName) -> Result<()> {
        self.refuse()
    }
    fn disable_table(&self, _: &TableName) -> Result<()> {
        self.refuse()
    }
    fn delete_table(&self, _: &TableName) -> Result<()> {
        self.refuse()
    }
    fn truncate_table(&self, _: &TableName, _: bool) -> Result<()> {
        self.refuse()
    }
    fn list_tables(&self, _: Option<&str>) -> Result<Vec<String>> {
        self.refuse()
    }
    fn flush(&self, _: &TableName) -> Result<()> {
        self.refuse()
    }
    fn compact(&self, _: &TableName, _: bool) -> Result<()> {
        self.refuse()
    }
    fn split_table(&self, _: &TableName, _: Option<&[u8]>) -> Result<()> {
        self.refuse()
    }
    fn split_region(&self, _: &[u8], _: Option<&[u8]>) -> Result<()> {
        self.refuse()
    }
    fn merge_regions(&self, _: &[&[u8]], _: bool) -> Result<()> {
        self.refuse()
    }
    fn regions(&self, _: &TableName) -> Result<Vec<RegionInfo>> {
        self.refuse()
    }
    fn region_reports(&self, _: &TableName) -> Result<Vec<RegionReport>> {
        self.refuse()
    }
    fn run_catalog_janitor(&self) -> Result<usize> {
        self.refuse()
    }
    fn cluster_id(&self) -> Result<String> {
        self.refuse()
    }
    fn cluster_status(&self) -> Result<ClusterStatus> {
        self.view()
    }
    fn move_region(&self, _: &[u8], _: Option<&str>) -> Result<()> {
        self.refuse()
    }
    fn assign(&self, _: &[u8]) -> Result<()> {
        self.refuse()
    }
    fn unassign(&self, _: &[u8]) -> Result<()> {
        self.refuse()
    }
    fn balance(&self) -> Result<bool> {
        self.refuse()
    }
    fn balance_switch(&self, _: bool) -> Result<bool> {
        self.refuse()
    }
    fn decommission(&self, _: &[String], _: bool) -> Result<()> {
        self.refuse()
    }
    fn recommission(&self, _: &str) -> Result<()> {
        self.refuse()
    }
    fn list_decommissioned(&self) -> Result<Vec<String>> {
        self.refuse()
    }
}
