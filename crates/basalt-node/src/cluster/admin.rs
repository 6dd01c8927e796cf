//! The active master's operation layer: HBase's `Admin` over the cluster's catalog. Reads
//! answer from the catalog; changes are the master's procedures; flushes, compactions and
//! loads go to the region servers holding the regions. A master serves no user rows: the
//! client locates a row's region here and reads or writes it on its region server. It serves
//! `hbase:meta`, the catalog's mirror, itself.

use std::collections::BTreeMap;
use std::sync::Arc;

use basalt_api::{Admin, ClusterStatus, Connection, RegionLocation, RegionReport};
use basalt_model::name::SYSTEM_NAMESPACE;
use basalt_model::{Error, Result, TableDescriptor, TableName};
use basalt_storage::region::RegionInfo;
use bytes::Bytes;

use super::meta::ClusterMeta;
use super::{ClusterMaster, Compaction};
use crate::catalog::Catalog;
use crate::master::ddl::is_meta;
use crate::master::ddl::matching_tables;
use crate::master::meta::{meta_descriptor, meta_region};

/// The operation layer of the active master.
#[derive(Debug)]
pub struct MasterConnection {
    master: Arc<ClusterMaster>,
    meta: Arc<ClusterMeta>,
}

impl MasterConnection {
    /// The operation layer of `master`, with its `hbase:meta`.
    ///
    /// # Errors
    /// `Io` making the mirror's region in memory.
    pub fn new(master: Arc<ClusterMaster>) -> Result<Self> {
        let meta = Arc::new(ClusterMeta::new(master.env.clock())?);
        Ok(MasterConnection { master, meta })
    }

    /// The master it serves.
    #[must_use]
    pub fn master(&self) -> &Arc<ClusterMaster> {
        &self.master
    }
}

impl Connection for MasterConnection {
    fn admin(&self) -> &dyn Admin {
        self
    }

    fn table(&self, name: &TableName) -> Result<Arc<dyn basalt_api::Table>> {
        if is_meta(name) {
            return Ok(Arc::new(self.meta.table(&self.master)?));
        }
        Err(Error::DoNotRetry(format!(
            "this is the master: rows of {name} are served by the region servers (a client locates them through ListRegions)"
        )))
    }

    fn locate_region(&self, table: &TableName, row: &[u8]) -> Result<RegionLocation> {
        if is_meta(table) {
            return Ok(RegionLocation {
                region: self.meta.region().info().clone(),
                server: self.master.name().to_owned(),
            });
        }
        assigned_location(table, self.master.locate(table, row)?)
    }
}

/// A located region as a client needs it: on a server, or `NotServingRegion` (retried)
/// while it is unassigned.
pub(super) fn assigned_location(
    table: &TableName,
    (region, server): (RegionInfo, Option<String>),
) -> Result<RegionLocation> {
    let server = server.ok_or_else(|| {
        Error::NotServingRegion(format!(
            "{} is not assigned to a server right now",
            region.region_name_string(table)
        ))
    })?;
    Ok(RegionLocation { region, server })
}

/// `list_namespace_tables` from a catalog.
pub(super) fn namespace_tables(c: &Catalog, ns: &str) -> Result<Vec<String>> {
    c.namespace(ns)?;
    Ok(c.tables
        .keys()
        .filter_map(|k| k.split_once(':'))
        .filter(|(n, _)| *n == ns)
        .map(|(_, q)| q.to_owned())
        .collect())
}

/// `list_tables` from a catalog.
pub(super) fn tables(c: &Catalog, pattern: Option<&str>) -> Result<Vec<String>> {
    let names: Vec<TableName> = c
        .tables
        .values()
        .map(|e| e.descriptor.table_name())
        .collect();
    matching_tables(names.iter(), pattern)
}

fn no_system(name: &TableName, what: &str) -> Result<()> {
    if name.namespace() == SYSTEM_NAMESPACE {
        return Err(Error::DoNotRetry(format!(
            "{name} is kept by the master itself; it cannot be {what}"
        )));
    }
    Ok(())
}

impl Admin for MasterConnection {
    fn create_namespace(&self, name: &str, props: BTreeMap<String, String>) -> Result<()> {
        self.master.create_namespace(name, props)
    }
    fn drop_namespace(&self, name: &str) -> Result<()> {
        self.master.drop_namespace(name)
    }
    fn alter_namespace(
        &self,
        name: &str,
        set: BTreeMap<String, String>,
        unset: &[String],
    ) -> Result<()> {
        self.master.alter_namespace(name, set, unset)
    }
    fn namespace_properties(&self, name: &str) -> Result<BTreeMap<String, String>> {
        Ok(self.master.catalog().namespace(name)?.clone())
    }
    fn list_namespaces(&self) -> Result<Vec<String>> {
        Ok(self.master.catalog().namespaces.keys().cloned().collect())
    }
    fn list_namespace_tables(&self, ns: &str) -> Result<Vec<String>> {
        namespace_tables(&self.master.catalog(), ns)
    }
    fn create_table(&self, desc: TableDescriptor, splits: &[Bytes]) -> Result<()> {
        no_system(&desc.table_name(), "created")?;
        self.master.create_table(desc, splits)
    }
    fn describe(&self, name: &TableName) -> Result<TableDescriptor> {
        if is_meta(name) {
            return Ok(meta_descriptor());
        }
        Ok(self.master.catalog().table(name)?.descriptor.clone())
    }
    fn modify_table(&self, desc: TableDescriptor) -> Result<()> {
        self.master.modify_table(desc)
    }
    fn table_exists(&self, name: &TableName) -> Result<bool> {
        Ok(is_meta(name) || self.master.catalog().table(name).is_ok())
    }
    fn is_enabled(&self, name: &TableName) -> Result<bool> {
        Ok(is_meta(name) || self.master.catalog().table(name)?.enabled)
    }
    fn enable_table(&self, name: &TableName) -> Result<()> {
        self.master.enable_table(name)
    }
    fn disable_table(&self, name: &TableName) -> Result<()> {
        self.master.disable_table(name)
    }
    fn delete_table(&self, name: &TableName) -> Result<()> {
        self.master.delete_table(name)
    }
    fn truncate_table(&self, name: &TableName, preserve_splits: bool) -> Result<()> {
        self.master.truncate_table(name, preserve_splits)
    }
    fn list_tables(&self, pattern: Option<&str>) -> Result<Vec<String>> {
        tables(&self.master.catalog(), pattern)
    }
    fn flush(&self, name: &TableName) -> Result<()> {
        self.master.maintain_table(name, Compaction::None)
    }
    fn compact(&self, name: &TableName, major: bool) -> Result<()> {
        let how = if major {
            Compaction::Major
        } else {
            Compaction::Minor
        };
        self.master.maintain_table(name, how)
    }
    fn split_table(&self, name: &TableName, key: Option<&[u8]>) -> Result<()> {
        self.master.split_table(name, key)
    }
    fn split_region(&self, region: &[u8], key: Option<&[u8]>) -> Result<()> {
        let id = self.master.region_id(region)?;
        self.master.split_region(id, key)
    }
    fn merge_regions(&self, regions: &[&[u8]], force: bool) -> Result<()> {
        let ids = regions
            .iter()
            .map(|r| self.master.region_id(r))
            .collect::<Result<Vec<u64>>>()?;
        self.master.merge_regions(&ids, force)
    }
    fn regions(&self, name: &TableName) -> Result<Vec<RegionInfo>> {
        if is_meta(name) {
            return Ok(vec![meta_region()]);
        }
        Ok(self.master.catalog().table(name)?.regions.clone())
    }
    fn region_reports(&self, name: &TableName) -> Result<Vec<RegionReport>> {
        if is_meta(name) {
            return Ok(vec![RegionReport {
                region: meta_region(),
                load: self.meta.region().load(),
                server: self.master.name().to_owned(),
            }]);
        }
        self.master.region_reports(name)
    }
    fn run_catalog_janitor(&self) -> Result<usize> {
        self.master.run_catalog_janitor()
    }
    fn cluster_id(&self) -> Result<String> {
        Ok(self.master.cluster_id())
    }
    fn cluster_status(&self) -> Result<ClusterStatus> {
        self.master.status()
    }
    fn move_region(&self, region: &[u8], dest: Option<&str>) -> Result<()> {
        let id = self.master.region_id(region)?;
        self.master.move_region(id, dest)
    }
    fn assign(&self, region: &[u8]) -> Result<()> {
        let id = self.master.region_id(region)?;
        self.master.assign(id)
    }
    fn unassign(&self, region: &[u8]) -> Result<()> {
        let id = self.master.region_id(region)?;
        self.master.unassign(id)
    }
    fn balance(&self) -> Result<bool> {
        self.master.balance()
    }
    fn balance_switch(&self, on: bool) -> Result<bool> {
        self.master.set_balancer(on)
    }
    fn decommission(&self, servers: &[String], offload: bool) -> Result<()> {
        self.master.decommission(servers, offload)
    }
    fn recommission(&self, server: &str) -> Result<()> {
        self.master.recommission(server)
    }
    fn list_decommissioned(&self) -> Result<Vec<String>> {
        Ok(self.master.decommissioned())
    }
}
