//! The 49 methods of `Hbase.thrift` over the engine, with the semantics of HBase's
//! `ThriftHBaseServiceHandler`: a timestamp argument is the exclusive upper bound of a read
//! (`[0, ts)`) and the inclusive bound of a delete (every version at or before it);
//! `mutateRow` applies its deletes before its puts and `mutateRows` its puts before its
//! deletes; empty results are left out of row lists. The data methods live in `data`, the
//! scanners in `scan`.
//!
//! Errors: `IOError` carries the HBase exception's name and message (`Exception: message`,
//! the first line of the stack trace HBase sends) and whether a retry can help;
//! `IllegalArgument` and `AlreadyExists` where HBase throws them. Where HBase lets a
//! runtime exception escape (a bad filter string, a row key of no bytes), the client gets an
//! `IOError` naming it rather than HBase's bare "Internal error processing …". Operation
//! attributes are accepted and not used.

mod data;
mod scan;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use basalt_api::leases::Scanners;
use basalt_api::{Admin, Connection, ResultScanner, Table};
use basalt_model::ops::Scan;
use basalt_model::{Error, TableName};
use hbase_thrift::hbase::{
    BatchMutation, ColumnDescriptor, HbaseSyncHandler, IOError, Mutation, TAccessControlEntity,
    TAppend, TCell, TIncrement, TRegionInfo, TRowResult, TScan, TThriftServerType, Text,
};

use super::convert::{self, already_exists, io, io_or_illegal};
use crate::metrics::RequestMetrics;

type Attributes = BTreeMap<Text, Text>;

/// A scanner of the gateway: the table scanner and whether rows come as sorted lists.
pub struct ThriftScanner {
    scanner: Box<dyn ResultScanner>,
    sorted: bool,
}

impl std::fmt::Debug for ThriftScanner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ThriftScanner")
            .field("sorted", &self.sorted)
            .finish_non_exhaustive()
    }
}

/// The gateway's handler; cheap to clone, one per connection.
#[derive(Clone)]
pub struct Handler {
    conn: Arc<dyn Connection>,
    scanners: Arc<Scanners<ThriftScanner>>,
    metrics: Arc<RequestMetrics>,
}

impl std::fmt::Debug for Handler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Handler")
            .field("scanners", &self.scanners)
            .finish_non_exhaustive()
    }
}

impl Handler {
    pub(crate) fn new(
        conn: Arc<dyn Connection>,
        scanners: Arc<Scanners<ThriftScanner>>,
        metrics: Arc<RequestMetrics>,
    ) -> Handler {
        Handler {
            conn,
            scanners,
            metrics,
        }
    }

    /// The gateway's open scanners.
    pub(crate) fn scanners(&self) -> Arc<Scanners<ThriftScanner>> {
        Arc::clone(&self.scanners)
    }

    /// Runs one method, counting it in the metrics.
    fn call<T>(
        &self,
        method: &'static str,
        f: impl FnOnce() -> thrift::Result<T>,
    ) -> thrift::Result<T> {
        let started = Instant::now();
        let out = f();
        self.metrics
            .record_api("thrift", method, started.elapsed(), out.is_ok());
        if let Err(e) = &out {
            tracing::debug!(method, error = %e, "Thrift request failed");
        }
        out
    }

    fn table(&self, name: &[u8]) -> Result<Arc<dyn Table>, Error> {
        self.conn.table(&convert::table_name(name)?)
    }

    fn db(&self) -> &dyn Admin {
        self.conn.admin()
    }

    fn admin<T>(
        &self,
        method: &'static str,
        name: &[u8],
        f: impl FnOnce(&dyn Admin, &TableName) -> basalt_model::Result<T>,
    ) -> thrift::Result<T> {
        self.call(method, || {
            let name = convert::table_name(name).map_err(|e| io(&e))?;
            f(self.db(), &name).map_err(|e| io(&e))
        })
    }

    /// `compact` and `majorCompact` take a table name or a region name; a region is
    /// compacted with its table.
    fn compact_any(&self, method: &'static str, name: &[u8], major: bool) -> thrift::Result<()> {
        let table = match name.iter().position(|b| *b == b',') {
            Some(i) if convert::table_name(name).is_err() => &name[..i],
            _ => name,
        };
        self.admin(method, table, |db, t| db.compact(t, major))
    }

    /// A region as Thrift shows it, with its server's host and port from the server's
    /// name (`host,port,startcode`).
    fn region_info(
        table: &TableName,
        r: &basalt_model::region::RegionInfo,
        server: &str,
    ) -> TRegionInfo {
        let mut parts = server.split(',');
        let host = parts.next().unwrap_or_default().to_owned();
        let port = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
        TRegionInfo::new(
            r.start_key.to_vec(),
            r.end_key.to_vec(),
            i64::try_from(r.id).unwrap_or(i64::MAX),
            r.region_name(table).to_vec(),
            1i8,
            host.into_bytes(),
            port,
        )
    }

    /// `getRegionInfo`: the region whose `hbase:meta` row is at or before `row` (a meta row
    /// key, `table,row,`), found by a reversed scan of `hbase:meta` as HBase finds it.
    fn region_at(&self, row: &[u8]) -> Result<TRegionInfo, Error> {
        let scan = Scan::new()
            .with_start_row(bytes::Bytes::copy_from_slice(row), true)
            .reversed()
            .add_family(&b"info"[..])
            .with_limit(1);
        let meta = TableName::parse("hbase:meta")?;
        let found = self.conn.table(&meta)?.scan(scan)?.next_row()?;
        let shown = basalt_model::bytes_fmt::to_string_binary(row);
        let r = found.ok_or_else(|| {
            Error::DoNotRetry(format!("Cannot find row in hbase:meta, row={shown}"))
        })?;
        let decoded = r
            .value(b"info", b"regioninfo")
            .and_then(basalt_model::region::decode_meta_region_info);
        let (table, info, ..) = decoded.ok_or_else(|| {
            Error::DoNotRetry(format!(
                "RegionInfo REGIONINFO was null or  empty in Meta for row={shown}"
            ))
        })?;
        let server = self
            .conn
            .locate_region(&table, &info.start_key)
            .map(|l| l.server)
            .unwrap_or_default();
        let mut out = Handler::region_info(&table, &info, &server);
        if let Some(server) = r.value(b"info", b"server") {
            let server = String::from_utf8_lossy(server);
            let (host, port) = server.rsplit_once(':').unwrap_or((&server, "0"));
            out.server_name = Some(host.as_bytes().to_vec());
            out.port = Some(port.parse().unwrap_or(0));
        }
        Ok(out)
    }
}

impl HbaseSyncHandler for Handler {
    fn handle_enable_table(&self, table_name: Text) -> thrift::Result<()> {
        self.admin("enableTable", &table_name, |db, t| db.enable_table(t))
    }

    fn handle_disable_table(&self, table_name: Text) -> thrift::Result<()> {
        self.admin("disableTable", &table_name, |db, t| db.disable_table(t))
    }

    fn handle_is_table_enabled(&self, table_name: Text) -> thrift::Result<bool> {
        self.admin("isTableEnabled", &table_name, |db, t| db.is_enabled(t))
    }

    fn handle_compact(&self, name: Text) -> thrift::Result<()> {
        self.compact_any("compact", &name, false)
    }

    fn handle_major_compact(&self, name: Text) -> thrift::Result<()> {
        self.compact_any("majorCompact", &name, true)
    }

    fn handle_get_table_names(&self) -> thrift::Result<Vec<Text>> {
        self.call("getTableNames", || {
            let names = self.db().list_tables(None).map_err(|e| io(&e))?;
            Ok(names.into_iter().map(String::into_bytes).collect())
        })
    }

    fn handle_get_table_names_with_is_table_enabled(&self) -> thrift::Result<BTreeMap<Text, bool>> {
        self.call("getTableNamesWithIsTableEnabled", || {
            let names = self.db().list_tables(None).map_err(|e| io(&e))?;
            let mut out = BTreeMap::new();
            for n in names {
                let t = TableName::parse(&n).map_err(|e| io(&e))?;
                // A table dropped meanwhile is left out.
                if let Ok(enabled) = self.db().is_enabled(&t) {
                    out.insert(n.into_bytes(), enabled);
                }
            }
            Ok(out)
        })
    }

    fn handle_get_column_descriptors(
        &self,
        table_name: Text,
    ) -> thrift::Result<BTreeMap<Text, ColumnDescriptor>> {
        self.admin("getColumnDescriptors", &table_name, |db, t| {
            let desc = db.describe(t)?;
            Ok(desc
                .families
                .values()
                .map(|f| {
                    let d = convert::column_descriptor(f);
                    (d.name.clone().unwrap_or_default(), d)
                })
                .collect())
        })
    }

    fn handle_get_table_regions(&self, table_name: Text) -> thrift::Result<Vec<TRegionInfo>> {
        self.call("getTableRegions", || {
            // An unknown table has no regions (HBase answers an empty list).
            let Ok(table) = convert::table_name(&table_name) else {
                return Ok(Vec::new());
            };
            match self.db().region_reports(&table) {
                Ok(regions) => Ok(regions
                    .iter()
                    .map(|r| Handler::region_info(&table, &r.region, &r.server))
                    .collect()),
                Err(Error::TableNotFound(_)) => Ok(Vec::new()),
                Err(e) => Err(io(&e)),
            }
        })
    }

    fn handle_create_table(
        &self,
        table_name: Text,
        column_families: Vec<ColumnDescriptor>,
    ) -> thrift::Result<()> {
        self.call("createTable", || {
            let name = convert::table_name(&table_name).map_err(|e| io_or_illegal(&e))?;
            if self.db().table_exists(&name).map_err(|e| io(&e))? {
                return Err(already_exists("table name already in use"));
            }
            let mut desc = basalt_model::TableDescriptor::new(&name, []);
            for d in &column_families {
                let f = convert::family_descriptor(d).map_err(|e| io_or_illegal(&e))?;
                desc.add_family(f).map_err(|e| io_or_illegal(&e))?;
            }
            match self.db().create_table(desc, &[]) {
                Err(Error::TableExists(_)) => Err(already_exists("table name already in use")),
                other => other.map_err(|e| io_or_illegal(&e)),
            }
        })
    }

    fn handle_delete_table(&self, table_name: Text) -> thrift::Result<()> {
        self.call("deleteTable", || {
            let name = convert::table_name(&table_name).map_err(|e| io(&e))?;
            if !self.db().table_exists(&name).map_err(|e| io(&e))? {
                let e = IOError::new(
                    "java.io.IOException: table does not exist".to_owned(),
                    false,
                );
                return Err(thrift::Error::User(Box::new(e)));
            }
            self.db().delete_table(&name).map_err(|e| io(&e))
        })
    }

    fn handle_get(
        &self,
        table_name: Text,
        row: Text,
        column: Text,
        _attributes: Attributes,
    ) -> thrift::Result<Vec<TCell>> {
        self.call("get", || self.get_cells(&table_name, row, &column, 1, None))
    }

    fn handle_get_ver(
        &self,
        table_name: Text,
        row: Text,
        column: Text,
        num_versions: i32,
        _attributes: Attributes,
    ) -> thrift::Result<Vec<TCell>> {
        self.call("getVer", || {
            self.get_cells(&table_name, row, &column, num_versions, None)
        })
    }

    fn handle_get_ver_ts(
        &self,
        table_name: Text,
        row: Text,
        column: Text,
        timestamp: i64,
        num_versions: i32,
        _attributes: Attributes,
    ) -> thrift::Result<Vec<TCell>> {
        self.call("getVerTs", || {
            self.get_cells(&table_name, row, &column, num_versions, Some(timestamp))
        })
    }

    fn handle_get_row(
        &self,
        table_name: Text,
        row: Text,
        _attributes: Attributes,
    ) -> thrift::Result<Vec<TRowResult>> {
        self.call("getRow", || {
            self.get_rows(&table_name, vec![row], None, None)
        })
    }

    fn handle_get_row_with_columns(
        &self,
        table_name: Text,
        row: Text,
        columns: Vec<Text>,
        _attributes: Attributes,
    ) -> thrift::Result<Vec<TRowResult>> {
        self.call("getRowWithColumns", || {
            self.get_rows(&table_name, vec![row], Some(&columns), None)
        })
    }

    fn handle_get_row_ts(
        &self,
        table_name: Text,
        row: Text,
        timestamp: i64,
        _attributes: Attributes,
    ) -> thrift::Result<Vec<TRowResult>> {
        self.call("getRowTs", || {
            self.get_rows(&table_name, vec![row], None, Some(timestamp))
        })
    }

    fn handle_get_row_with_columns_ts(
        &self,
        table_name: Text,
        row: Text,
        columns: Vec<Text>,
        timestamp: i64,
        _attributes: Attributes,
    ) -> thrift::Result<Vec<TRowResult>> {
        self.call("getRowWithColumnsTs", || {
            self.get_rows(&table_name, vec![row], Some(&columns), Some(timestamp))
        })
    }

    fn handle_get_rows(
        &self,
        table_name: Text,
        rows: Vec<Text>,
        _attributes: Attributes,
    ) -> thrift::Result<Vec<TRowResult>> {
        self.call("getRows", || self.get_rows(&table_name, rows, None, None))
    }

    fn handle_get_rows_with_columns(
        &self,
        table_name: Text,
        rows: Vec<Text>,
        columns: Vec<Text>,
        _attributes: Attributes,
    ) -> thrift::Result<Vec<TRowResult>> {
        self.call("getRowsWithColumns", || {
            self.get_rows(&table_name, rows, Some(&columns), None)
        })
    }

    fn handle_get_rows_ts(
        &self,
        table_name: Text,
        rows: Vec<Text>,
        timestamp: i64,
        _attributes: Attributes,
    ) -> thrift::Result<Vec<TRowResult>> {
        self.call("getRowsTs", || {
            self.get_rows(&table_name, rows, None, Some(timestamp))
        })
    }

    fn handle_get_rows_with_columns_ts(
        &self,
        table_name: Text,
        rows: Vec<Text>,
        columns: Vec<Text>,
        timestamp: i64,
        _attributes: Attributes,
    ) -> thrift::Result<Vec<TRowResult>> {
        self.call("getRowsWithColumnsTs", || {
            self.get_rows(&table_name, rows, Some(&columns), Some(timestamp))
        })
    }

    fn handle_mutate_row(
        &self,
        table_name: Text,
        row: Text,
        mutations: Vec<Mutation>,
        _attributes: Attributes,
    ) -> thrift::Result<()> {
        self.call("mutateRow", || {
            self.mutate_row(&table_name, row, &mutations, None)
        })
    }

    fn handle_mutate_row_ts(
        &self,
        table_name: Text,
        row: Text,
        mutations: Vec<Mutation>,
        timestamp: i64,
        _attributes: Attributes,
    ) -> thrift::Result<()> {
        self.call("mutateRowTs", || {
            self.mutate_row(&table_name, row, &mutations, Some(timestamp))
        })
    }

    fn handle_mutate_rows(
        &self,
        table_name: Text,
        row_batches: Vec<BatchMutation>,
        _attributes: Attributes,
    ) -> thrift::Result<()> {
        self.call("mutateRows", || {
            self.mutate_rows(&table_name, row_batches, None)
        })
    }

    fn handle_mutate_rows_ts(
        &self,
        table_name: Text,
        row_batches: Vec<BatchMutation>,
        timestamp: i64,
        _attributes: Attributes,
    ) -> thrift::Result<()> {
        self.call("mutateRowsTs", || {
            self.mutate_rows(&table_name, row_batches, Some(timestamp))
        })
    }

    fn handle_atomic_increment(
        &self,
        table_name: Text,
        row: Text,
        column: Text,
        value: i64,
    ) -> thrift::Result<i64> {
        self.call("atomicIncrement", || {
            self.atomic_increment(&table_name, row, &column, value)
        })
    }

    fn handle_delete_all(
        &self,
        table_name: Text,
        row: Text,
        column: Text,
        _attributes: Attributes,
    ) -> thrift::Result<()> {
        self.call("deleteAll", || {
            self.delete_all(&table_name, row, Some(&column), None)
        })
    }

    fn handle_delete_all_ts(
        &self,
        table_name: Text,
        row: Text,
        column: Text,
        timestamp: i64,
        _attributes: Attributes,
    ) -> thrift::Result<()> {
        self.call("deleteAllTs", || {
            self.delete_all(&table_name, row, Some(&column), Some(timestamp))
        })
    }

    fn handle_delete_all_row(
        &self,
        table_name: Text,
        row: Text,
        _attributes: Attributes,
    ) -> thrift::Result<()> {
        self.call("deleteAllRow", || {
            self.delete_all(&table_name, row, None, None)
        })
    }

    fn handle_increment(&self, increment: TIncrement) -> thrift::Result<()> {
        self.call("increment", || self.increment(increment))
    }

    fn handle_increment_rows(&self, increments: Vec<TIncrement>) -> thrift::Result<()> {
        self.call("incrementRows", || {
            increments.into_iter().try_for_each(|i| self.increment(i))
        })
    }

    fn handle_delete_all_row_ts(
        &self,
        table_name: Text,
        row: Text,
        timestamp: i64,
        _attributes: Attributes,
    ) -> thrift::Result<()> {
        self.call("deleteAllRowTs", || {
            self.delete_all(&table_name, row, None, Some(timestamp))
        })
    }

    fn handle_scanner_open_with_scan(
        &self,
        table_name: Text,
        scan: TScan,
        _attributes: Attributes,
    ) -> thrift::Result<i32> {
        self.call("scannerOpenWithScan", || {
            self.open_with_scan(&table_name, scan)
        })
    }

    fn handle_scanner_open(
        &self,
        table_name: Text,
        start_row: Text,
        columns: Vec<Text>,
        _attributes: Attributes,
    ) -> thrift::Result<i32> {
        self.call("scannerOpen", || {
            let scan = scan::ScanArgs::from_start(start_row, columns);
            self.open(&table_name, scan)
        })
    }

    fn handle_scanner_open_with_stop(
        &self,
        table_name: Text,
        start_row: Text,
        stop_row: Text,
        columns: Vec<Text>,
        _attributes: Attributes,
    ) -> thrift::Result<i32> {
        self.call("scannerOpenWithStop", || {
            let mut scan = scan::ScanArgs::from_start(start_row, columns);
            scan.stop = Some(stop_row);
            self.open(&table_name, scan)
        })
    }

    fn handle_scanner_open_with_prefix(
        &self,
        table_name: Text,
        start_and_prefix: Text,
        columns: Vec<Text>,
        _attributes: Attributes,
    ) -> thrift::Result<i32> {
        self.call("scannerOpenWithPrefix", || {
            let mut scan = scan::ScanArgs::from_start(start_and_prefix.clone(), columns);
            scan.prefix = Some(start_and_prefix);
            self.open(&table_name, scan)
        })
    }

    fn handle_scanner_open_ts(
        &self,
        table_name: Text,
        start_row: Text,
        columns: Vec<Text>,
        timestamp: i64,
        _attributes: Attributes,
    ) -> thrift::Result<i32> {
        self.call("scannerOpenTs", || {
            let mut scan = scan::ScanArgs::from_start(start_row, columns);
            scan.timestamp = Some(timestamp);
            self.open(&table_name, scan)
        })
    }

    fn handle_scanner_open_with_stop_ts(
        &self,
        table_name: Text,
        start_row: Text,
        stop_row: Text,
        columns: Vec<Text>,
        timestamp: i64,
        _attributes: Attributes,
    ) -> thrift::Result<i32> {
        self.call("scannerOpenWithStopTs", || {
            let mut scan = scan::ScanArgs::from_start(start_row, columns);
            scan.stop = Some(stop_row);
            scan.timestamp = Some(timestamp);
            self.open(&table_name, scan)
        })
    }

    fn handle_scanner_get(&self, id: i32) -> thrift::Result<Vec<TRowResult>> {
        self.call("scannerGet", || self.next_rows(id, 1))
    }

    fn handle_scanner_get_list(&self, id: i32, nb_rows: i32) -> thrift::Result<Vec<TRowResult>> {
        self.call("scannerGetList", || self.next_rows(id, nb_rows))
    }

    fn handle_scanner_close(&self, id: i32) -> thrift::Result<()> {
        self.call("scannerClose", || self.close_scanner(id))
    }

    fn handle_get_region_info(&self, row: Text) -> thrift::Result<TRegionInfo> {
        self.call("getRegionInfo", || self.region_at(&row).map_err(|e| io(&e)))
    }

    fn handle_append(&self, append: TAppend) -> thrift::Result<Vec<TCell>> {
        self.call("append", || self.append(append))
    }

    fn handle_check_and_put(
        &self,
        table_name: Text,
        row: Text,
        column: Text,
        value: Text,
        mput: Mutation,
        _attributes: Attributes,
    ) -> thrift::Result<bool> {
        self.call("checkAndPut", || {
            // Without a value the check is that the column does not exist (field 5).
            let absent = super::stand_in::take_absent_arguments() & (1 << 5) != 0;
            let expected = (!absent).then_some(value);
            self.check_and_put(&table_name, row, &column, expected, &mput)
        })
    }

    fn handle_get_thrift_server_type(&self) -> thrift::Result<TThriftServerType> {
        self.call("getThriftServerType", || Ok(TThriftServerType::ONE))
    }

    fn handle_get_cluster_id(&self) -> thrift::Result<String> {
        self.call("getClusterId", || {
            self.db().cluster_id().map_err(|e| io(&e))
        })
    }

    fn handle_grant(&self, _info: TAccessControlEntity) -> thrift::Result<bool> {
        self.call("grant", || Err(io(&no_access_control())))
    }

    fn handle_revoke(&self, _info: TAccessControlEntity) -> thrift::Result<bool> {
        self.call("revoke", || Err(io(&no_access_control())))
    }
}

/// Basalt has no access control, as an HBase without its `AccessController` coprocessor.
fn no_access_control() -> Error {
    Error::DoNotRetry(
        "java.lang.UnsupportedOperationException: org.apache.hadoop.hbase.security.access.AccessController is not loaded"
            .to_owned(),
    )
}
