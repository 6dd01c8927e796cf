//! What the shell talks to: an embedded database now, a server through the client later.

use std::collections::BTreeMap;

use basalt_model::ops::{Get, Mutation, Scan};
use basalt_model::region::{RegionInfo, RegionLoad};
use basalt_model::{Result, RowResult, TableDescriptor, TableName};
use basalt_storage::Database;
use bytes::Bytes;

/// Rows of a scan, one at a time.
pub type Rows<'a> = Box<dyn Iterator<Item = Result<RowResult>> + 'a>;

/// The operations the shell's commands use (HBase's Admin and Table).
pub trait Backend {
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
    fn list_namespace_tables(&self, ns: &str) -> Result<Vec<String>>;
    fn create_table(&self, desc: TableDescriptor, splits: &[Bytes]) -> Result<()>;
    fn describe(&self, name: &TableName) -> Result<TableDescriptor>;
    fn modify_table(&self, desc: TableDescriptor) -> Result<()>;
    fn table_exists(&self, name: &TableName) -> Result<bool>;
    fn is_enabled(&self, name: &TableName) -> Result<bool>;
    fn enable_table(&self, name: &TableName) -> Result<()>;
    fn disable_table(&self, name: &TableName) -> Result<()>;
    fn delete_table(&self, name: &TableName) -> Result<()>;
    fn truncate_table(&self, name: &TableName, preserve_splits: bool) -> Result<()>;
    fn list_tables(&self, pattern: Option<&str>) -> Result<Vec<String>>;
    fn flush(&self, name: &TableName) -> Result<()>;
    fn compact(&self, name: &TableName, major: bool) -> Result<()>;
    fn split_table(&self, name: &TableName, key: Option<&[u8]>) -> Result<()>;
    fn split_region(&self, region: &[u8], key: Option<&[u8]>) -> Result<()>;
    fn merge_regions(&self, regions: &[&[u8]], force: bool) -> Result<()>;
    fn regions(&self, name: &TableName) -> Result<Vec<RegionInfo>>;
    /// Each region with its load and the server that serves it.
    fn region_loads(&self, name: &TableName) -> Result<Vec<(RegionInfo, RegionLoad, String)>>;
    fn run_catalog_janitor(&self) -> Result<usize>;
    fn mutate(&self, table: &TableName, m: Mutation) -> Result<Option<RowResult>>;
    fn get(&self, table: &TableName, get: Get) -> Result<RowResult>;
    fn scan(&self, table: &TableName, scan: Scan) -> Result<Rows<'_>>;
}

fn table_of(db: &Database, name: &TableName) -> Result<basalt_storage::Table> {
    db.table(&name.to_string())
}

impl Backend for Database {
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
    fn region_loads(&self, name: &TableName) -> Result<Vec<(RegionInfo, RegionLoad, String)>> {
        let server = Database::server_name(self);
        Ok(Database::region_loads(self, name)?
            .into_iter()
            .map(|(i, l)| (i, l, server.clone()))
            .collect())
    }
    fn run_catalog_janitor(&self) -> Result<usize> {
        Database::run_catalog_janitor(self)
    }
    fn mutate(&self, table: &TableName, m: Mutation) -> Result<Option<RowResult>> {
        table_of(self, table)?.mutate(m)
    }
    fn get(&self, table: &TableName, get: Get) -> Result<RowResult> {
        table_of(self, table)?.get(get)
    }
    fn scan(&self, table: &TableName, scan: Scan) -> Result<Rows<'_>> {
        Ok(Box::new(table_of(self, table)?.scan(scan)?))
    }
}
