//! The shell's backend over a server: the client's calls, each run to completion.

use std::collections::BTreeMap;

use basalt_client::{Connection, ResultScanner};
use basalt_model::ops::{Get, Mutation, Scan};
use basalt_model::region::{RegionInfo, RegionLoad};
use basalt_model::{Result, RowResult, TableDescriptor, TableName};
use basalt_shell::backend::{Backend, Rows};
use bytes::Bytes;
use tokio::runtime::Runtime;

/// A connection to a server, used synchronously.
pub struct RemoteBackend {
    rt: Runtime,
    conn: Connection,
}

impl RemoteBackend {
    /// Connects to `addr` (`host:port`).
    ///
    /// # Errors
    /// The server cannot be reached.
    pub fn connect(addr: &str) -> anyhow::Result<RemoteBackend> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()?;
        let conn = rt.block_on(Connection::connect(addr))?;
        Ok(RemoteBackend { rt, conn })
    }
}

struct RemoteRows<'a> {
    rt: &'a Runtime,
    scanner: ResultScanner,
}

impl Iterator for RemoteRows<'_> {
    type Item = Result<RowResult>;

    fn next(&mut self) -> Option<Self::Item> {
        self.rt.block_on(self.scanner.next()).transpose()
    }
}

impl Backend for RemoteBackend {
    fn create_namespace(&self, name: &str, props: BTreeMap<String, String>) -> Result<()> {
        self.rt
            .block_on(self.conn.admin().create_namespace(name, props))
    }
    fn drop_namespace(&self, name: &str) -> Result<()> {
        self.rt.block_on(self.conn.admin().drop_namespace(name))
    }
    fn alter_namespace(
        &self,
        name: &str,
        set: BTreeMap<String, String>,
        unset: &[String],
    ) -> Result<()> {
        self.rt
            .block_on(self.conn.admin().alter_namespace(name, set, unset))
    }
    fn namespace_properties(&self, name: &str) -> Result<BTreeMap<String, String>> {
        self.rt
            .block_on(self.conn.admin().namespace_properties(name))
    }
    fn list_namespaces(&self) -> Result<Vec<String>> {
        self.rt.block_on(self.conn.admin().list_namespaces())
    }
    fn list_namespace_tables(&self, ns: &str) -> Result<Vec<String>> {
        self.rt
            .block_on(self.conn.admin().list_namespace_tables(ns))
    }
    fn create_table(&self, desc: TableDescriptor, splits: &[Bytes]) -> Result<()> {
        self.rt
            .block_on(self.conn.admin().create_table(&desc, splits))
    }
    fn describe(&self, name: &TableName) -> Result<TableDescriptor> {
        self.rt.block_on(self.conn.admin().describe(name))
    }
    fn modify_table(&self, desc: TableDescriptor) -> Result<()> {
        self.rt.block_on(self.conn.admin().modify_table(&desc))
    }
    fn table_exists(&self, name: &TableName) -> Result<bool> {
        self.rt.block_on(self.conn.admin().table_exists(name))
    }
    fn is_enabled(&self, name: &TableName) -> Result<bool> {
        self.rt.block_on(self.conn.admin().is_enabled(name))
    }
    fn enable_table(&self, name: &TableName) -> Result<()> {
        self.rt.block_on(self.conn.admin().enable_table(name))
    }
    fn disable_table(&self, name: &TableName) -> Result<()> {
        self.rt.block_on(self.conn.admin().disable_table(name))
    }
    fn delete_table(&self, name: &TableName) -> Result<()> {
        self.rt.block_on(self.conn.admin().delete_table(name))
    }
    fn truncate_table(&self, name: &TableName, preserve_splits: bool) -> Result<()> {
        self.rt
            .block_on(self.conn.admin().truncate_table(name, preserve_splits))
    }
    fn list_tables(&self, pattern: Option<&str>) -> Result<Vec<String>> {
        self.rt.block_on(self.conn.admin().list_tables(pattern))
    }
    fn flush(&self, name: &TableName) -> Result<()> {
        self.rt.block_on(self.conn.admin().flush(name))
    }
    fn compact(&self, name: &TableName, major: bool) -> Result<()> {
        self.rt.block_on(self.conn.admin().compact(name, major))
    }
    fn split_table(&self, name: &TableName, key: Option<&[u8]>) -> Result<()> {
        self.rt.block_on(self.conn.admin().split_table(name, key))
    }
    fn split_region(&self, region: &[u8], key: Option<&[u8]>) -> Result<()> {
        self.rt
            .block_on(self.conn.admin().split_region(region, key))
    }
    fn merge_regions(&self, regions: &[&[u8]], force: bool) -> Result<()> {
        self.rt
            .block_on(self.conn.admin().merge_regions(regions, force))
    }
    fn regions(&self, name: &TableName) -> Result<Vec<RegionInfo>> {
        self.rt.block_on(self.conn.admin().regions(name))
    }
    fn region_loads(&self, name: &TableName) -> Result<Vec<(RegionInfo, RegionLoad, String)>> {
        self.rt.block_on(self.conn.admin().region_loads(name))
    }
    fn run_catalog_janitor(&self) -> Result<usize> {
        self.rt.block_on(self.conn.admin().run_catalog_janitor())
    }
    fn mutate(&self, table: &TableName, m: Mutation) -> Result<Option<RowResult>> {
        let t = self.conn.table(&table.to_string())?;
        self.rt.block_on(t.mutate(m))
    }
    fn get(&self, table: &TableName, get: Get) -> Result<RowResult> {
        let t = self.conn.table(&table.to_string())?;
        self.rt.block_on(t.get(get))
    }
    fn scan(&self, table: &TableName, scan: Scan) -> Result<Rows<'_>> {
        let t = self.conn.table(&table.to_string())?;
        let scanner = self.rt.block_on(t.scan(scan))?;
        Ok(Box::new(RemoteRows {
            rt: &self.rt,
            scanner,
        }))
    }
}
