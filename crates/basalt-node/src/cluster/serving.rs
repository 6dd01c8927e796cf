//! A cluster region server's data path: the operation layer over the regions it hosts.
//! Reads and writes go through the same [`Table`] as a standalone node's (validation, flow
//! control, mini-batches, scans across regions); only where regions come from differs. A
//! row whose region is not here is `NotServingRegion`, and the client asks the master again.
//! Administration is the master's: a region server refuses it, saying so.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use basalt_api::{Admin, Connection, RegionLocation, RegionReport};
use basalt_model::{Error, Result, TableDescriptor, TableName};
use basalt_storage::region::{Region, RegionInfo};
use bytes::Bytes;

use super::ClusterRegionServer;
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
}

/// The operation layer of a cluster region server: tables over the regions it hosts.
#[derive(Debug)]
pub struct RegionServerConnection {
    rs: Arc<ClusterRegionServer>,
}

impl RegionServerConnection {
    /// The data path of `rs`.
    #[must_use]
    pub fn new(rs: Arc<ClusterRegionServer>) -> Self {
        RegionServerConnection { rs }
    }
}

impl Connection for RegionServerConnection {
    fn admin(&self) -> &dyn Admin {
        &MasterOnly
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
}

/// A region server's answer to administration: it is the master's.
#[derive(Debug)]
struct MasterOnly;

fn master_only<T>() -> Result<T> {
    Err(Error::DoNotRetry(
        "this is a region server: administration is served by the master".to_owned(),
    ))
}

impl Admin for MasterOnly {
    fn create_namespace(&self, _: &str, _: BTreeMap<String, String>) -> Result<()> {
        master_only()
    }
    fn drop_namespace(&self, _: &str) -> Result<()> {
        master_only()
    }
    fn alter_namespace(&self, _: &str, _: BTreeMap<String, String>, _: &[String]) -> Result<()> {
        master_only()
    }
    fn namespace_properties(&self, _: &str) -> Result<BTreeMap<String, String>> {
        master_only()
    }
    fn list_namespaces(&self) -> Result<Vec<String>> {
        master_only()
    }
    fn list_namespace_tables(&self, _: &str) -> Result<Vec<String>> {
        master_only()
    }
    fn create_table(&self, _: TableDescriptor, _: &[Bytes]) -> Result<()> {
        master_only()
    }
    fn describe(&self, _: &TableName) -> Result<TableDescriptor> {
        master_only()
    }
    fn modify_table(&self, _: TableDescriptor) -> Result<()> {
        master_only()
    }
    fn table_exists(&self, _: &TableName) -> Result<bool> {
        master_only()
    }
    fn is_enabled(&self, _: &TableName) -> Result<bool> {
        master_only()
    }
    fn enable_table(&self, _: &TableName) -> Result<()> {
        master_only()
    }
    fn disable_table(&self, _: &TableName) -> Result<()> {
        master_only()
    }
    fn delete_table(&self, _: &TableName) -> Result<()> {
        master_only()
    }
    fn truncate_table(&self, _: &TableName, _: bool) -> Result<()> {
        master_only()
    }
    fn list_tables(&self, _: Option<&str>) -> Result<Vec<String>> {
        master_only()
    }
    fn flush(&self, _: &TableName) -> Result<()> {
        master_only()
    }
    fn compact(&self, _: &TableName, _: bool) -> Result<()> {
        master_only()
    }
    fn split_table(&self, _: &TableName, _: Option<&[u8]>) -> Result<()> {
        master_only()
    }
    fn split_region(&self, _: &[u8], _: Option<&[u8]>) -> Result<()> {
        master_only()
    }
    fn merge_regions(&self, _: &[&[u8]], _: bool) -> Result<()> {
        master_only()
    }
    fn regions(&self, _: &TableName) -> Result<Vec<RegionInfo>> {
        master_only()
    }
    fn region_reports(&self, _: &TableName) -> Result<Vec<RegionReport>> {
        master_only()
    }
    fn run_catalog_janitor(&self) -> Result<usize> {
        master_only()
    }
    fn cluster_id(&self) -> Result<String> {
        master_only()
    }
}
