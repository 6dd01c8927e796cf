//! The operation layer: what the outside sees of a Basalt database, whichever front end it
//! comes through and wherever the data lives.
//!
//! These are HBase's client-side interfaces by name: a [`Connection`] hands out an
//! [`Admin`] (namespaces, tables, regions) and [`Table`]s (reads and writes of one table),
//! and locates regions. Every front end — the native gRPC service, the Thrift gateway, the
//! shell, and the REST and Bigtable gateways — speaks only this layer, so one operation is
//! written once. Two implementations exist: embedded (`basalt_node::Database`, in process)
//! and remote (`basalt_client::blocking::Connection`, over the native gRPC API).
//!
//! The interfaces are synchronous, as HBase's `Table` and `Admin` are: the engine under
//! them is blocking I/O. An async front end calls them from a blocking thread.
//!
//! Errors are the one [`Error`] of the data model, HBase's exception kinds, so a client sees
//! the same error whichever path it took.

pub mod leases;

use std::collections::BTreeMap;
use std::sync::Arc;

use basalt_model::ops::{
    Append, CheckAndMutate, Delete, Get, Increment, Mutation, Put, RowMutations, Scan,
};
use basalt_model::region::{RegionInfo, RegionLoad};
use basalt_model::{Cell, RowResult, TableDescriptor, TableName};
pub use basalt_model::{Error, Result};
use bytes::Bytes;

/// A region and the server that hosts it (HBase's `HRegionLocation`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegionLocation {
    pub region: RegionInfo,
    /// `host,port,startcode`, HBase's `ServerName`.
    pub server: String,
}

/// A region with its load and its server, as `status 'detailed'` and `list_regions` show.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegionReport {
    pub region: RegionInfo,
    pub load: RegionLoad,
    pub server: String,
}

/// A live region server as `status` shows it: its regions and their summed load.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ServerStatus {
    /// `host,port,startcode`.
    pub name: String,
    pub regions: usize,
    pub load: RegionLoad,
}

/// The cluster as the active master sees it (HBase's `ClusterMetrics`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClusterStatus {
    pub cluster_id: String,
    /// The active master's name; empty while none is active.
    pub master: String,
    pub backup_masters: Vec<String>,
    /// Live region servers, by name.
    pub servers: Vec<ServerStatus>,
    /// Servers that were live and are gone.
    pub dead_servers: Vec<String>,
    /// Recoveries of dead servers under way (log split, regions reassigned), each with
    /// what it waits for.
    pub recoveries: Vec<String>,
    pub decommissioned: Vec<String>,
    /// Regions of enabled tables not open on a live server, by region name, with why.
    pub in_transition: Vec<String>,
    pub balancer_on: bool,
    /// The process that answered: a client reaching the cluster through any server
    /// learns that server's name.
    pub answered_by: String,
}

/// The entry point (HBase's `Connection`): an admin, tables, region locations.
pub trait Connection: Send + Sync {
    /// The administrative interface.
    fn admin(&self) -> &dyn Admin;

    /// A handle on table `name`.
    ///
    /// # Errors
    /// `TableNotFound`; a bad name is `IllegalArgument`.
    fn table(&self, name: &TableName) -> Result<Arc<dyn Table>>;

    /// The region holding `row` of `table` and its server (HBase's `RegionLocator`).
    ///
    /// # Errors
    /// `TableNotFound`; `NotServingRegion` when no region covers the row right now.
    fn locate_region(&self, table: &TableName, row: &[u8]) -> Result<RegionLocation>;

    /// The region holding `row` of `table`, without its server: what a server checks each
    /// call against. By default [`Connection::locate_region`]'s region.
    ///
    /// # Errors
    /// As [`Connection::locate_region`].
    fn region_holding(&self, table: &TableName, row: &[u8]) -> Result<RegionInfo> {
        self.locate_region(table, row).map(|l| l.region)
    }

    /// Whether `table` and `locate_region` answer from this process's memory without
    /// waiting on a lock held across I/O or on another process. Only then may an async
    /// server call them, and [`Table::get_cached`], on its own worker threads. By default
    /// they may wait.
    fn serves_from_memory(&self) -> bool {
        false
    }
}

/// Namespaces, tables and regions (HBase's `Admin`).
///
/// Adding an administrative operation means a method here, its two implementations
/// (embedded and remote), and one adapter line in each front end that offers it.
pub trait Admin: Send + Sync {
    fn create_namespace(&self, name: &str, props: BTreeMap<String, String>) -> Result<()>;
    fn drop_namespace(&self, name: &str) -> Result<()>;
    fn alter_namespace(
        &self,
        name: &str,
        set: BTreeMap<String, String>,
        unset: &[String],
    ) -> Result<()>;
    fn namespace_properties(&self, name: &str) -> Result<BTreeMap<String, String>>;
    fn list_namespaces(&self) -> Result<Vec<String>>;
    /// Tables of namespace `ns` (`NamespaceNotFound` when it does not exist).
    fn list_namespace_tables(&self, ns: &str) -> Result<Vec<String>>;
    /// Creates a table, pre-split at `splits` (sorted, distinct, non-empty keys).
    fn create_table(&self, desc: TableDescriptor, splits: &[Bytes]) -> Result<()>;
    fn describe(&self, name: &TableName) -> Result<TableDescriptor>;
    fn modify_table(&self, desc: TableDescriptor) -> Result<()>;
    fn table_exists(&self, name: &TableName) -> Result<bool>;
    fn is_enabled(&self, name: &TableName) -> Result<bool>;
    fn enable_table(&self, name: &TableName) -> Result<()>;
    fn disable_table(&self, name: &TableName) -> Result<()>;
    fn delete_table(&self, name: &TableName) -> Result<()>;
    fn truncate_table(&self, name: &TableName, preserve_splits: bool) -> Result<()>;
    /// Table names (`ns:qualifier`, `default:` left out) matching the Java regex `pattern`.
    fn list_tables(&self, pattern: Option<&str>) -> Result<Vec<String>>;
    fn flush(&self, name: &TableName) -> Result<()>;
    fn compact(&self, name: &TableName, major: bool) -> Result<()>;
    fn split_table(&self, name: &TableName, key: Option<&[u8]>) -> Result<()>;
    /// Splits the region named `region` (its full region name or its encoded name).
    fn split_region(&self, region: &[u8], key: Option<&[u8]>) -> Result<()>;
    fn merge_regions(&self, regions: &[&[u8]], force: bool) -> Result<()>;
    /// The regions of a table, in key order.
    fn regions(&self, name: &TableName) -> Result<Vec<RegionInfo>>;
    /// Each region of a table with its load and the server that serves it.
    fn region_reports(&self, name: &TableName) -> Result<Vec<RegionReport>>;
    /// Runs the catalog janitor now; returns how many retired regions it cleaned.
    fn run_catalog_janitor(&self) -> Result<usize>;
    /// The cluster's id (HBase's `ClusterMetrics.getClusterId`).
    fn cluster_id(&self) -> Result<String>;

    /// Masters, servers, loads and regions in transition (`status`).
    fn cluster_status(&self) -> Result<ClusterStatus>;
    /// Moves a region (full or encoded name) to `dest` (`host,port,startcode`), or to the
    /// server with the fewest regions.
    fn move_region(&self, region: &[u8], dest: Option<&str>) -> Result<()>;
    /// Opens a region that is not open on a live server.
    fn assign(&self, region: &[u8]) -> Result<()>;
    /// Closes a region and leaves it unassigned.
    fn unassign(&self, region: &[u8]) -> Result<()>;
    /// Runs the balancer; says whether it ran (not when switched off).
    fn balance(&self) -> Result<bool>;
    /// Switches the balancer; returns the previous setting.
    fn balance_switch(&self, on: bool) -> Result<bool>;
    /// Takes region servers out of assignment, moving their regions off with `offload`.
    fn decommission(&self, servers: &[String], offload: bool) -> Result<()>;
    /// Puts a decommissioned region server back into assignment.
    fn recommission(&self, server: &str) -> Result<()>;
    fn list_decommissioned(&self) -> Result<Vec<String>>;
}

/// Reads and writes of one table (HBase's `Table`).
///
/// Each row operation is atomic; a batch is not, but applies each row's mutations in order.
pub trait Table: Send + Sync {
    fn name(&self) -> &TableName;

    fn get(&self, get: Get) -> Result<RowResult>;

    /// `get` answered without waiting, for a caller on a thread that must not block (an
    /// async server's worker): from the memstores and the block cache alone. `None` when
    /// the answer needs a wait (a block from disk, a region in transition, a remote
    /// server); the caller then calls `get` where waiting is fine. `Some` is exactly what
    /// `get` would answer. By default nothing is answered this way.
    ///
    /// # Errors
    /// As `get`.
    fn get_cached(&self, get: &Get) -> Result<Option<RowResult>> {
        let _ = get;
        Ok(None)
    }

    /// One mutation: `Some` result for an Increment or an Append, `None` otherwise.
    fn mutate(&self, m: Mutation) -> Result<Option<RowResult>>;

    /// A row's mutations, applied atomically in order (HBase's `mutateRow`).
    fn mutate_row(&self, rm: RowMutations) -> Result<()>;

    /// Applies the mutations when the condition holds; says whether it held.
    fn check_and_mutate(&self, cam: CheckAndMutate) -> Result<bool>;

    /// One result per mutation, in order; Puts and Deletes of distinct rows are written in
    /// mini-batches (one WAL sync per region per batch).
    fn batch(&self, mutations: Vec<Mutation>) -> Vec<Result<Option<RowResult>>>;

    /// The checks a write of `m` would make before it writes anything (family exists,
    /// cell sizes, row length), so that a combined operation can refuse up front.
    fn check(&self, m: &Mutation) -> Result<()>;

    /// A scanner over the rows `scan` selects, across regions.
    fn scan(&self, scan: Scan) -> Result<Box<dyn ResultScanner>>;

    fn put(&self, put: Put) -> Result<()> {
        self.mutate(Mutation::Put(put)).map(|_| ())
    }

    fn delete(&self, delete: Delete) -> Result<()> {
        self.mutate(Mutation::Delete(delete)).map(|_| ())
    }

    fn increment(&self, inc: Increment) -> Result<RowResult> {
        self.mutate(Mutation::Increment(inc))
            .map(Option::unwrap_or_default)
    }

    fn append(&self, app: Append) -> Result<RowResult> {
        self.mutate(Mutation::Append(app))
            .map(Option::unwrap_or_default)
    }

    /// `incrementColumnValue`: adds `amount` to one counter and returns its new value.
    fn increment_column_value(
        &self,
        row: Bytes,
        family: Bytes,
        qualifier: Bytes,
        amount: i64,
    ) -> Result<i64> {
        let inc = Increment::new(row).add(family.clone(), qualifier.clone(), amount);
        let r = self.increment(inc)?;
        let v = r
            .value(&family, &qualifier)
            .ok_or_else(|| Error::DoNotRetry("increment returned no value".into()))?;
        let bytes: [u8; 8] = v[..]
            .try_into()
            .map_err(|_| Error::DoNotRetry("counter is not 8 bytes".into()))?;
        Ok(i64::from_be_bytes(bytes))
    }
}

/// Rows of a scan, in order, fetched as they are needed (HBase's `ResultScanner`).
pub trait ResultScanner: Send {
    /// The next row, or `None` at the end.
    ///
    /// # Errors
    /// The scan failed part way (a region went away past the client's retries, a damaged
    /// file): rows already returned stay valid.
    fn next_row(&mut self) -> Result<Option<RowResult>>;

    /// The next result's cells, read into `cells`: `Some(partial)` when a row, or with a
    /// batch size a part of one, was read (`partial`: more of its row follows), `None` at
    /// the end, `cells` then empty. What `cells` held before is the scanner's to use again:
    /// a scanner of a local table builds the next row's cells in them, so a caller that
    /// passes the same vector each time allocates nothing a row and takes no count a cell
    /// on the blocks read. Others read the next row and move its cells in.
    ///
    /// # Errors
    /// As [`ResultScanner::next_row`].
    fn next_cells(&mut self, cells: &mut Vec<Cell>) -> Result<Option<bool>> {
        match self.next_row()? {
            Some(row) => {
                let partial = row.partial;
                *cells = row.cells;
                Ok(Some(partial))
            }
            None => {
                cells.clear();
                Ok(None)
            }
        }
    }
}

impl Iterator for dyn ResultScanner + '_ {
    type Item = Result<RowResult>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_row().transpose()
    }
}
