//! The client as the operation layer: `basalt_api::Connection` over the native API, each
//! call run to completion on the connection's own runtime. This is what a gateway of a
//! remote server (`basalt thrift --server`) and the shell on a server speak.
//!
//! Calls block their thread; call them from a thread that is not one of a tokio runtime's
//! workers (a gateway's connection thread, or tokio's blocking pool).

use std::collections::BTreeMap;
use std::sync::Arc;

use basalt_api::{Admin, RegionLocation, RegionReport, ResultScanner};
use basalt_model::limits::DEFAULT_MAX_CELL_SIZE_BYTES;
use basalt_model::ops::{CheckAndMutate, Get, Mutation, RowMutations, Scan};
use basalt_model::region::RegionInfo;
use basalt_model::{Error, Result, RowResult, TableDescriptor, TableName};
use bytes::Bytes;
use tokio::runtime::Runtime;

use crate::ClientConfig;

/// The connection's runtime. Dropped without waiting for its tasks, so that the last
/// handle may go anywhere, an async context included (a blocking drop there panics).
#[derive(Debug)]
struct ClientRuntime(Option<Runtime>);

impl ClientRuntime {
    /// Runs one call to completion.
    fn block_on<T>(&self, f: impl std::future::Future<Output = Result<T>>) -> Result<T> {
        match &self.0 {
            Some(rt) => rt.block_on(f),
            None => Err(Error::Internal("the client's runtime is closed".into())),
        }
    }
}

impl Drop for ClientRuntime {
    fn drop(&mut self) {
        if let Some(rt) = self.0.take() {
            rt.shutdown_background();
        }
    }
}

/// A connection to a server, used synchronously.
#[derive(Debug)]
pub struct Connection {
    rt: Arc<ClientRuntime>,
    conn: crate::Connection,
    admin: crate::Admin,
}

impl Connection {
    /// Connects to `addr` (`host:port`, or a cluster's servers as seeds, comma-separated)
    /// with default settings.
    ///
    /// # Errors
    /// The address is malformed or the server cannot be reached.
    pub fn connect(addr: &str) -> Result<Connection> {
        Connection::connect_with(addr, ClientConfig::default())
    }

    /// Connects with `config`.
    ///
    /// # Errors
    /// As [`Connection::connect`]; the client's runtime cannot start.
    pub fn connect_with(addr: &str, config: ClientConfig) -> Result<Connection> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("basalt-client")
            .enable_all()
            .build()
            .map_err(|e| Error::io("starting the client's runtime", e))?;
        let conn = rt.block_on(crate::Connection::connect_with(addr, config))?;
        let admin = conn.admin();
        Ok(Connection {
            rt: Arc::new(ClientRuntime(Some(rt))),
            conn,
            admin,
        })
    }
}

impl basalt_api::Connection for Connection {
    fn admin(&self) -> &dyn Admin {
        self
    }

    fn table(&self, name: &TableName) -> Result<Arc<dyn basalt_api::Table>> {
        Ok(Arc::new(Table {
            rt: Arc::clone(&self.rt),
            table: self.conn.table(&name.to_string())?,
            admin: self.admin.clone(),
        }))
    }

    fn locate_region(&self, table: &TableName, row: &[u8]) -> Result<RegionLocation> {
        let reports = Admin::region_reports(self, table)?;
        reports
            .into_iter()
            .find(|r| r.region.contains(row))
            .map(|r| RegionLocation {
                region: r.region,
                server: r.server,
            })
            .ok_or_else(|| Error::NotServingRegion(format!("no region of {table} holds the row")))
    }
}

impl Admin for Connection {
    fn create_namespace(&self, name: &str, props: BTreeMap<String, String>) -> Result<()> {
        self.rt.block_on(self.admin.create_namespace(name, props))
    }
    fn drop_namespace(&self, name: &str) -> Result<()> {
        self.rt.block_on(self.admin.drop_namespace(name))
    }
    fn alter_namespace(
        &self,
        name: &str,
        set: BTreeMap<String, String>,
        unset: &[String],
    ) -> Result<()> {
        self.rt
            .block_on(self.admin.alter_namespace(name, set, unset))
    }
    fn namespace_properties(&self, name: &str) -> Result<BTreeMap<String, String>> {
        self.rt.block_on(self.admin.namespace_properties(name))
    }
    fn list_namespaces(&self) -> Result<Vec<String>> {
        self.rt.block_on(self.admin.list_namespaces())
    }
    fn list_namespace_tables(&self, ns: &str) -> Result<Vec<String>> {
        self.rt.block_on(self.admin.list_namespace_tables(ns))
    }
    fn create_table(&self, desc: TableDescriptor, splits: &[Bytes]) -> Result<()> {
        self.rt.block_on(self.admin.create_table(&desc, splits))
    }
    fn describe(&self, name: &TableName) -> Result<TableDescriptor> {
        self.rt.block_on(self.admin.describe(name))
    }
    fn modify_table(&self, desc: TableDescriptor) -> Result<()> {
        self.rt.block_on(self.admin.modify_table(&desc))
    }
    fn table_exists(&self, name: &TableName) -> Result<bool> {
        self.rt.block_on(self.admin.table_exists(name))
    }
    fn is_enabled(&self, name: &TableName) -> Result<bool> {
        self.rt.block_on(self.admin.is_enabled(name))
    }
    fn enable_table(&self, name: &TableName) -> Result<()> {
        self.rt.block_on(self.admin.enable_table(name))
    }
    fn disable_table(&self, name: &TableName) -> Result<()> {
        self.rt.block_on(self.admin.disable_table(name))
    }
    fn delete_table(&self, name: &TableName) -> Result<()> {
        self.rt.block_on(self.admin.delete_table(name))
    }
    fn truncate_table(&self, name: &TableName, preserve_splits: bool) -> Result<()> {
        self.rt
            .block_on(self.admin.truncate_table(name, preserve_splits))
    }
    fn list_tables(&self, pattern: Option<&str>) -> Result<Vec<String>> {
        self.rt.block_on(self.admin.list_tables(pattern))
    }
    fn flush(&self, name: &TableName) -> Result<()> {
        self.rt.block_on(self.admin.flush(name))
    }
    fn compact(&self, name: &TableName, major: bool) -> Result<()> {
        self.rt.block_on(self.admin.compact(name, major))
    }
    fn split_table(&self, name: &TableName, key: Option<&[u8]>) -> Result<()> {
        self.rt.block_on(self.admin.split_table(name, key))
    }
    fn split_region(&self, region: &[u8], key: Option<&[u8]>) -> Result<()> {
        self.rt.block_on(self.admin.split_region(region, key))
    }
    fn merge_regions(&self, regions: &[&[u8]], force: bool) -> Result<()> {
        self.rt.block_on(self.admin.merge_regions(regions, force))
    }
    fn regions(&self, name: &TableName) -> Result<Vec<RegionInfo>> {
        self.rt.block_on(self.admin.regions(name))
    }
    fn region_reports(&self, name: &TableName) -> Result<Vec<RegionReport>> {
        let loads = self.rt.block_on(self.admin.region_loads(name))?;
        Ok(loads
            .into_iter()
            .map(|(region, load, server)| RegionReport {
                region,
                load,
                server,
            })
            .collect())
    }
    fn run_catalog_janitor(&self) -> Result<usize> {
        self.rt.block_on(self.admin.run_catalog_janitor())
    }
    fn cluster_id(&self) -> Result<String> {
        self.rt.block_on(self.admin.cluster_id())
    }
    fn cluster_status(&self) -> Result<basalt_api::ClusterStatus> {
        self.rt.block_on(self.admin.cluster_status())
    }
    fn move_region(&self, region: &[u8], dest: Option<&str>) -> Result<()> {
        self.rt.block_on(self.admin.move_region(region, dest))
    }
    fn assign(&self, region: &[u8]) -> Result<()> {
        self.rt.block_on(self.admin.assign(region))
    }
    fn unassign(&self, region: &[u8]) -> Result<()> {
        self.rt.block_on(self.admin.unassign(region))
    }
    fn balance(&self) -> Result<bool> {
        self.rt.block_on(self.admin.balance())
    }
    fn balance_switch(&self, on: bool) -> Result<bool> {
        self.rt.block_on(self.admin.balance_switch(on))
    }
    fn decommission(&self, servers: &[String], offload: bool) -> Result<()> {
        self.rt.block_on(self.admin.decommission(servers, offload))
    }
    fn recommission(&self, server: &str) -> Result<()> {
        self.rt.block_on(self.admin.recommission(server))
    }
    fn list_decommissioned(&self) -> Result<Vec<String>> {
        self.rt.block_on(self.admin.list_decommissioned())
    }
}

/// A table of a remote server, used synchronously.
struct Table {
    rt: Arc<ClientRuntime>,
    table: crate::Table,
    admin: crate::Admin,
}

impl basalt_api::Table for Table {
    fn name(&self) -> &TableName {
        self.table.name()
    }
    fn get(&self, get: Get) -> Result<RowResult> {
        self.rt.block_on(self.table.get(get))
    }
    fn mutate(&self, m: Mutation) -> Result<Option<RowResult>> {
        self.rt.block_on(self.table.mutate(m))
    }
    fn mutate_row(&self, rm: RowMutations) -> Result<()> {
        self.rt.block_on(self.table.mutate_row(rm))
    }
    fn check_and_mutate(&self, cam: CheckAndMutate) -> Result<bool> {
        self.rt.block_on(self.table.check_and_mutate(cam))
    }
    fn batch(&self, mutations: Vec<Mutation>) -> Vec<Result<Option<RowResult>>> {
        let n = mutations.len();
        match self.rt.block_on(self.table.batch(mutations)) {
            Ok(results) if results.len() == n => results,
            Ok(results) => {
                let why = format!(
                    "the server answered {} results for a batch of {n}",
                    results.len()
                );
                (0..n).map(|_| Err(Error::Internal(why.clone()))).collect()
            }
            // The call itself failed: whether each mutation was applied is unknown, and
            // each says why.
            Err(e) => {
                let why = e.to_string();
                let mut out = vec![Err(e)];
                out.extend((1..n).map(|_| Err(Error::DoNotRetry(why.clone()))));
                out.truncate(n);
                out
            }
        }
    }
    /// The checks a server makes before writing `m`, made here: the client's own checks
    /// (sizes, row length) and the table's families from its descriptor.
    fn check(&self, m: &Mutation) -> Result<()> {
        m.validate_for_client(DEFAULT_MAX_CELL_SIZE_BYTES)?;
        let desc = self.rt.block_on(self.admin.describe(self.table.name()))?;
        for family in m.families() {
            if !desc.families.contains_key(family) {
                return Err(Error::NoSuchColumnFamily {
                    table: self.table.name().to_string(),
                    family: String::from_utf8_lossy(family).into_owned(),
                });
            }
        }
        Ok(())
    }
    fn scan(&self, scan: Scan) -> Result<Box<dyn ResultScanner>> {
        let scanner = self.rt.block_on(self.table.scan(scan))?;
        Ok(Box::new(Scanner {
            rt: Arc::clone(&self.rt),
            scanner,
        }))
    }
}

/// A scanner of a remote server (a lease there, renewed by each fetch).
struct Scanner {
    rt: Arc<ClientRuntime>,
    scanner: crate::ResultScanner,
}

impl ResultScanner for Scanner {
    fn next_row(&mut self) -> Result<Option<RowResult>> {
        self.rt.block_on(self.scanner.next())
    }
}
