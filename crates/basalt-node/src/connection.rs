//! The embedded implementation of the operation layer: a [`Database`] is a
//! `basalt_api::Connection` in process, with no network hop (HBase's short-circuit
//! connection of a region server to itself).

use std::collections::BTreeMap;
use std::sync::Arc;

use basalt_api::{Admin, ClusterStatus, Connection, RegionLocation, RegionReport, ResultScanner};
use basalt_model::ops::{CheckAndMutate, Get, Mutation, RowMutations, Scan};
use basalt_model::region::RegionInfo;
use basalt_model::{Cell, Result, RowResult, TableDescriptor, TableName};
use bytes::Bytes;

use crate::{Database, Table, TableScanner};

impl Connection for Database {
    fn admin(&self) -> &dyn Admin {
        self
    }

    fn table(&self, name: &TableName) -> Result<Arc<dyn basalt_api::Table>> {
        Ok(Arc::new(self.table_handle(name)?))
    }

    /// The master's table states and the region server's regions are in memory.
    fn serves_from_memory(&self) -> bool {
        true
    }

    fn locate_region(&self, table: &TableName, row: &[u8]) -> Result<RegionLocation> {
        Ok(RegionLocation {
            region: self.region_of(table, row)?,
            server: self.server_name(),
        })
    }

    fn region_holding(&self, table: &TableName, row: &[u8]) -> Result<RegionInfo> {
        self.region_of(table, row)
    }
}

impl Admin for Database {
    fn create_namespace(&self, name: &str, props: BTreeMap<String, String>) -> Result<()> {
        Database::create_namespace(self, name, props)
    }
    fn drop_namespace(&self, name: &str) -> Result<()> {
        Database::drop_namespace(self, name)
    }
    fn alter_namespace(
        &self,
        name: &str,
        set: BTreeMap<String, String>,
        unset: &[String],
    ) -> Result<()> {
        Database::alter_namespace(self, name, set, unset)
    }
    fn namespace_properties(&self, name: &str) -> Result<BTreeMap<String, String>> {
        Database::namespace_properties(self, name)
    }
    fn list_namespaces(&self) -> Result<Vec<String>> {
        Ok(Database::list_namespaces(self))
    }
    fn list_namespace_tables(&self, ns: &str) -> Result<Vec<String>> {
        Database::namespace_properties(self, ns)?;
        Ok(Database::list_namespace_tables(self, ns))
    }
    fn create_table(&self, desc: TableDescriptor, splits: &[Bytes]) -> Result<()> {
        Database::create_table(self, desc, splits)
    }
    fn describe(&self, name: &TableName) -> Result<TableDescriptor> {
        Database::describe(self, name)
    }
    fn modify_table(&self, desc: TableDescriptor) -> Result<()> {
        Database::modify_table(self, desc)
    }
    fn table_exists(&self, name: &TableName) -> Result<bool> {
        Ok(Database::table_exists(self, name))
    }
    fn is_enabled(&self, name: &TableName) -> Result<bool> {
        Database::is_enabled(self, name)
    }
    fn enable_table(&self, name: &TableName) -> Result<()> {
        Database::enable_table(self, name)
    }
    fn disable_table(&self, name: &TableName) -> Result<()> {
        Database::disable_table(self, name)
    }
    fn delete_table(&self, name: &TableName) -> Result<()> {
        Database::delete_table(self, name)
    }
    fn truncate_table(&self, name: &TableName, preserve_splits: bool) -> Result<()> {
        Database::truncate_table(self, name, preserve_splits)
    }
    fn list_tables(&self, pattern: Option<&str>) -> Result<Vec<String>> {
        Database::list_tables(self, pattern)
    }
    fn flush(&self, name: &TableName) -> Result<()> {
        Database::flush(self, name)
    }
    fn compact(&self, name: &TableName, major: bool) -> Result<()> {
        if major {
            Database::major_compact(self, name)
        } else {
            Database::compact(self, name)
        }
    }
    fn split_table(&self, name: &TableName, key: Option<&[u8]>) -> Result<()> {
        Database::split_table(self, name, key)
    }
    fn split_region(&self, region: &[u8], key: Option<&[u8]>) -> Result<()> {
        Database::split_region(self, region, key)
    }
    fn merge_regions(&self, regions: &[&[u8]], force: bool) -> Result<()> {
        Database::merge_regions(self, regions, force)
    }
    fn regions(&self, name: &TableName) -> Result<Vec<RegionInfo>> {
        Database::regions(self, name)
    }
    fn region_reports(&self, name: &TableName) -> Result<Vec<RegionReport>> {
        let server = Database::server_name(self);
        Ok(Database::region_loads(self, name)?
            .into_iter()
            .map(|(region, load)| RegionReport {
                region,
                load,
                server: server.clone(),
            })
            .collect())
    }
    fn run_catalog_janitor(&self) -> Result<usize> {
        Database::run_catalog_janitor(self)
    }
    fn cluster_id(&self) -> Result<String> {
        Ok(Database::cluster_id(self))
    }
    fn cluster_status(&self) -> Result<ClusterStatus> {
        Database::cluster_status(self)
    }
    fn move_region(&self, region: &[u8], dest: Option<&str>) -> Result<()> {
        Database::move_region(self, region, dest)
    }
    fn assign(&self, region: &[u8]) -> Result<()> {
        Database::assign(self, region)
    }
    fn unassign(&self, region: &[u8]) -> Result<()> {
        Database::assign(self, region)?;
        Err(basalt_model::Error::DoNotRetry(
            "a standalone server keeps every region of an enabled table open; disable the table to close its regions".to_owned(),
        ))
    }
    fn balance(&self) -> Result<bool> {
        Ok(Database::balance(self))
    }
    fn balance_switch(&self, on: bool) -> Result<bool> {
        Ok(Database::balance_switch(self, on))
    }
    fn decommission(&self, servers: &[String], _offload: bool) -> Result<()> {
        Database::decommission(self, servers)
    }
    fn recommission(&self, _server: &str) -> Result<()> {
        Ok(())
    }
    fn list_decommissioned(&self) -> Result<Vec<String>> {
        Ok(Vec::new())
    }
}

impl basalt_api::Table for Table {
    fn name(&self) -> &TableName {
        Table::name(self)
    }
    fn get(&self, get: Get) -> Result<RowResult> {
        Table::get(self, get)
    }
    fn get_cached(&self, get: &Get) -> Result<Option<RowResult>> {
        Table::get_cached(self, get)
    }
    fn mutate(&self, m: Mutation) -> Result<Option<RowResult>> {
        Table::mutate(self, m)
    }
    fn mutate_row(&self, rm: RowMutations) -> Result<()> {
        Table::mutate_row(self, rm)
    }
    fn check_and_mutate(&self, cam: CheckAndMutate) -> Result<bool> {
        Table::check_and_mutate(self, cam)
    }
    fn batch(&self, mutations: Vec<Mutation>) -> Vec<Result<Option<RowResult>>> {
        Table::batch(self, mutations)
    }
    fn check(&self, m: &Mutation) -> Result<()> {
        Table::check(self, m)
    }
    fn scan(&self, scan: Scan) -> Result<Box<dyn ResultScanner>> {
        Ok(Box::new(Table::scan(self, scan)?))
    }
}

impl ResultScanner for TableScanner {
    fn next_row(&mut self) -> Result<Option<RowResult>> {
        TableScanner::next_row(self)
    }

    fn next_cells(&mut self, cells: &mut Vec<Cell>) -> Result<Option<bool>> {
        TableScanner::next_cells(self, cells)
    }
}
