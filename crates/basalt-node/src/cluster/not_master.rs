//! Administration asked of a server that is not the active master: a region server, or a
//! backup master. It tells who the active master and the live servers are (so a client that
//! reached it finds the master) and refuses changes, saying where to go. A backup master
//! also answers what the catalog says (tables, schemas, regions and where they are
//! assigned) from the latest catalog on shared storage, as any HBase master answers
//! region lookups.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use basalt_api::{Admin, ClusterStatus, RegionReport, ServerStatus};
use basalt_model::{Error, Result, TableDescriptor, TableName};
use basalt_storage::region::RegionInfo;
use bytes::Bytes;

use basalt_api::RegionLocation;
use basalt_storage::env::Env;

use super::admin::{assigned_location, namespace_tables, tables};
use crate::catalog::Catalog;
use crate::coordination::Coordinator;

/// The administration of a server that is not the active master.
#[derive(Debug)]
pub struct NotMaster {
    coordinator: Arc<dyn Coordinator>,
    /// This server's name.
    name: String,
    backup_master: bool,
    /// A backup master's way to the catalog: the storage and the catalog's directory.
    catalog: Option<(Env, PathBuf)>,
}

impl NotMaster {
    /// A region server's: administration is the master's.
    #[must_use]
    pub fn region_server(coordinator: Arc<dyn Coordinator>, name: String) -> Self {
        NotMaster {
            coordinator,
            name,
            backup_master: false,
            catalog: None,
        }
    }

    /// A backup master's: changes are the active master's, once there is one; what the
    /// catalog says is read from the cluster's storage `env` at `root`.
    #[must_use]
    pub fn backup_master(
        coordinator: Arc<dyn Coordinator>,
        name: String,
        env: Env,
        root: &Path,
    ) -> Self {
        NotMaster {
            coordinator,
            name,
            backup_master: true,
            catalog: Some((env, root.join("catalog"))),
        }
    }

    /// The latest catalog on storage (a backup master's); refused as [`NotMaster::refuse`]
    /// says for a region server, or while there is no catalog yet.
    fn stored(&self) -> Result<Catalog> {
        let Some((env, dir)) = &self.catalog else {
            return self.refuse();
        };
        match Catalog::load(env, dir)? {
            (_, Some(c)) => Ok(c),
            (_, None) => self.refuse(),
        }
    }

    /// Where the catalog says `row` of `table` is (a backup master's answer).
    ///
    /// # Errors
    /// As [`NotMaster::stored`]; `TableNotFound`, `TableNotEnabled`; `NotServingRegion`
    /// while the region is unassigned.
    pub fn locate_region(&self, table: &TableName, row: &[u8]) -> Result<RegionLocation> {
        assigned_location(table, self.stored()?.locate(table, row)?)
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
    fn namespace_properties(&self, name: &str) -> Result<BTreeMap<String, String>> {
        Ok(self.stored()?.namespace(name)?.clone())
    }
    fn list_namespaces(&self) -> Result<Vec<String>> {
        Ok(self.stored()?.namespaces.keys().cloned().collect())
    }
    fn list_namespace_tables(&self, ns: &str) -> Result<Vec<String>> {
        namespace_tables(&self.stored()?, ns)
    }
    fn create_table(&self, _: TableDescriptor, _: &[Bytes]) -> Result<()> {
        self.refuse()
    }
    fn describe(&self, name: &TableName) -> Result<TableDescriptor> {
        Ok(self.stored()?.table(name)?.descriptor.clone())
    }
    fn modify_table(&self, _: TableDescriptor) -> Result<()> {
        self.refuse()
    }
    fn table_exists(&self, name: &TableName) -> Result<bool> {
        Ok(self.stored()?.table(name).is_ok())
    }
    fn is_enabled(&self, name: &TableName) -> Result<bool> {
        Ok(self.stored()?.table(name)?.enabled)
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
    fn list_tables(&self, pattern: Option<&str>) -> Result<Vec<String>> {
        tables(&self.stored()?, pattern)
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
    fn regions(&self, name: &TableName) -> Result<Vec<RegionInfo>> {
        Ok(self.stored()?.table(name)?.regions.clone())
    }
    /// Where each region is assigned; loads are the active master's to tell.
    fn region_reports(&self, name: &TableName) -> Result<Vec<RegionReport>> {
        let c = self.stored()?;
        let server = |id: u64| c.assignments.get(&id).and_then(|a| a.server.clone());
        Ok(c.table(name)?
            .regions
            .iter()
            .map(|r| RegionReport {
                region: r.clone(),
                load: Default::default(),
                server: server(r.id).unwrap_or_default(),
            })
            .collect())
    }
    fn run_catalog_janitor(&self) -> Result<usize> {
        self.refuse()
    }
    fn cluster_id(&self) -> Result<String> {
        Ok(self.stored()?.cluster_id)
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
        Ok(self.stored()?.decommissioned.into_iter().collect())
    }
}
