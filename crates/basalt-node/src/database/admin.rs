//! The facade's administration (HBase's `Admin`): each call goes to the master, whose
//! methods say what they do and refuse.

use std::collections::BTreeMap;

use basalt_model::split::SplitAlgorithm;
use basalt_model::{ColumnFamilyDescriptor, Error, Result, TableDescriptor, TableName};
use bytes::Bytes;

use super::Database;
use basalt_storage::region::{BackgroundEvent, RegionInfo, RegionLoad};

impl Database {
    /// `create_namespace`.
    ///
    /// # Errors
    /// `NamespaceExists`, `IllegalArgument` for a bad name.
    pub fn create_namespace(&self, name: &str, props: BTreeMap<String, String>) -> Result<()> {
        self.inner.master.create_namespace(name, props)
    }

    /// `drop_namespace`: only empty, non-reserved namespaces.
    ///
    /// # Errors
    /// `NamespaceNotFound`, `Constraint`.
    pub fn drop_namespace(&self, name: &str) -> Result<()> {
        self.inner.master.drop_namespace(name)
    }

    /// `alter_namespace`: sets `set` and removes `unset` properties.
    ///
    /// # Errors
    /// `NamespaceNotFound`.
    pub fn alter_namespace(
        &self,
        name: &str,
        set: BTreeMap<String, String>,
        unset: &[String],
    ) -> Result<()> {
        self.inner.master.alter_namespace(name, set, unset)
    }

    /// `describe_namespace`: the namespace's properties.
    ///
    /// # Errors
    /// `NamespaceNotFound`.
    pub fn namespace_properties(&self, name: &str) -> Result<BTreeMap<String, String>> {
        self.inner.master.namespace_properties(name)
    }

    /// `list_namespace`, sorted.
    #[must_use]
    pub fn list_namespaces(&self) -> Vec<String> {
        self.inner.master.list_namespaces()
    }

    /// `create`: a table with one region, or one region per gap between `split_keys`.
    ///
    /// # Errors
    /// `TableExists`, `NamespaceNotFound`, `DoNotRetry` for a schema failing sanity checks,
    /// `IllegalArgument` for bad split keys.
    pub fn create_table(&self, desc: TableDescriptor, split_keys: &[Bytes]) -> Result<()> {
        self.inner.master.create_table(desc, split_keys)
    }

    /// `create` with `NUMREGIONS` and `SPLITALGO`: `num_regions` regions cut by `algo`.
    ///
    /// # Errors
    /// As [`Database::create_table`]; `IllegalArgument` for fewer than two regions.
    pub fn create_table_pre_split(
        &self,
        desc: TableDescriptor,
        algo: SplitAlgorithm,
        num_regions: u32,
    ) -> Result<()> {
        self.create_table(desc, &algo.split(num_regions)?)
    }

    /// `exists`.
    #[must_use]
    pub fn table_exists(&self, name: &TableName) -> bool {
        self.inner.master.table_exists(name)
    }

    /// `list`: table names (as HBase prints them) matching a Java-style regex, sorted.
    ///
    /// # Errors
    /// `IllegalArgument` for a bad pattern.
    pub fn list_tables(&self, pattern: Option<&str>) -> Result<Vec<String>> {
        self.inner.master.list_tables(pattern)
    }

    /// `list_namespace_tables`.
    #[must_use]
    pub fn list_namespace_tables(&self, ns: &str) -> Vec<String> {
        self.inner.master.list_namespace_tables(ns)
    }

    /// `describe`: the table's schema.
    ///
    /// # Errors
    /// `TableNotFound`.
    pub fn describe(&self, name: &TableName) -> Result<TableDescriptor> {
        self.inner.master.describe(name)
    }

    /// `is_enabled`.
    ///
    /// # Errors
    /// `TableNotFound`.
    pub fn is_enabled(&self, name: &TableName) -> Result<bool> {
        self.inner.master.is_enabled(name)
    }

    /// The table's regions in key order, as the catalog lists them.
    ///
    /// # Errors
    /// `TableNotFound`.
    pub fn regions(&self, name: &TableName) -> Result<Vec<RegionInfo>> {
        self.inner.master.regions(name)
    }

    /// `disable`: the table's regions are flushed and closed.
    ///
    /// # Errors
    /// `TableNotFound`, `TableNotEnabled` when already disabled.
    pub fn disable_table(&self, name: &TableName) -> Result<()> {
        self.inner.master.disable_table(name)
    }

    /// `enable`: the table's regions open again.
    ///
    /// # Errors
    /// `TableNotFound`, `TableNotDisabled` when already enabled.
    pub fn enable_table(&self, name: &TableName) -> Result<()> {
        self.inner.master.enable_table(name)
    }

    /// `drop`: only a disabled table.
    ///
    /// # Errors
    /// `TableNotFound`, `TableNotDisabled`.
    pub fn delete_table(&self, name: &TableName) -> Result<()> {
        self.inner.master.delete_table(name)
    }

    /// `truncate` / `truncate_preserve`: a disabled table is emptied and left enabled, with
    /// its old region boundaries when `preserve_splits`.
    ///
    /// # Errors
    /// `TableNotFound`, `TableNotDisabled`.
    pub fn truncate_table(&self, name: &TableName, preserve_splits: bool) -> Result<()> {
        self.inner.master.truncate_table(name, preserve_splits)
    }

    /// `alter`: replaces the table's schema online (families added, modified or removed;
    /// table attributes changed).
    ///
    /// # Errors
    /// `TableNotFound`, `DoNotRetry` for a schema failing sanity checks.
    pub fn modify_table(&self, desc: TableDescriptor) -> Result<()> {
        self.inner.master.modify_table(desc)
    }

    /// `alter 't', NAME => 'f', ...`: adds the family or replaces its settings.
    ///
    /// # Errors
    /// As [`Database::modify_table`].
    pub fn put_family(&self, name: &TableName, family: ColumnFamilyDescriptor) -> Result<()> {
        let mut desc = self.describe(name)?;
        desc.families.insert(family.name.clone(), family);
        self.modify_table(desc)
    }

    /// `alter 't', 'delete' => 'f'`: removes a family and its data.
    ///
    /// # Errors
    /// `NoSuchColumnFamily`, or as [`Database::modify_table`].
    pub fn delete_family(&self, name: &TableName, family: &[u8]) -> Result<()> {
        let mut desc = self.describe(name)?;
        if desc.families.remove(family).is_none() {
            return Err(Error::NoSuchColumnFamily {
                table: name.to_string(),
                family: basalt_model::bytes_fmt::to_string_binary(family),
            });
        }
        self.modify_table(desc)
    }

    /// `flush`: writes every memstore of the table to store files.
    ///
    /// # Errors
    /// `TableNotFound`; `Io`.
    pub fn flush(&self, name: &TableName) -> Result<()> {
        self.inner.master.flush(name)
    }

    /// `compact`: merges each store's files (markers kept).
    ///
    /// # Errors
    /// `TableNotFound`; `Io`; corruption.
    pub fn compact(&self, name: &TableName) -> Result<()> {
        self.inner.master.compact(name, false)
    }

    /// `major_compact`: rewrites each store into one file, dropping what HBase drops.
    ///
    /// # Errors
    /// `TableNotFound`; `Io`; corruption.
    pub fn major_compact(&self, name: &TableName) -> Result<()> {
        self.inner.master.compact(name, true)
    }

    /// `split 'table'[, 'key']`: with a key, splits the region holding it there; without,
    /// splits every region at its split point (regions with too little data stay whole).
    ///
    /// # Errors
    /// `TableNotFound`, `TableNotEnabled`; `DoNotRetry` when splits are disabled for the
    /// table, the key is a region's start key, or a region still reads its parent's files.
    pub fn split_table(&self, name: &TableName, key: Option<&[u8]>) -> Result<()> {
        self.inner.master.split_table(name, key)
    }

    /// `split 'region name'[, 'key']`: the region is named by its full name or its encoded
    /// name.
    ///
    /// # Errors
    /// `UnknownRegion`; otherwise as [`Database::split_table`].
    pub fn split_region(&self, region: &[u8], key: Option<&[u8]>) -> Result<()> {
        self.inner.master.split_region(region, key)
    }

    /// `merge_region 'a', 'b'[, ...]`: merges adjacent regions of one table into one. Regions
    /// are named by full or encoded name; `force` is accepted for the shell's sake.
    ///
    /// # Errors
    /// `UnknownRegion`; `MergeRegion` for fewer than two regions, regions of different
    /// tables, non-adjacent regions or a region that still reads its parent's files;
    /// `DoNotRetry` when merges are disabled for the table.
    pub fn merge_regions(&self, regions: &[&[u8]], force: bool) -> Result<()> {
        self.inner.master.merge_regions(regions, force)
    }

    /// Deletes regions retired by splits and merges that no region reads any more (HBase's
    /// `catalogjanitor_run`). Runs on its own after compactions; returns how many went.
    ///
    /// # Errors
    /// `Io` committing the catalog or removing files.
    pub fn run_catalog_janitor(&self) -> Result<usize> {
        self.inner.master.clean_retired()
    }

    /// This server's name as `hbase:meta` writes it: `host,port,start code`.
    #[must_use]
    pub fn server_name(&self) -> String {
        self.inner.rs.name().to_string()
    }

    /// The region that holds `row` now.
    ///
    /// # Errors
    /// `TableNotFound`, `TableNotEnabled`.
    pub fn region_of(&self, name: &TableName, row: &[u8]) -> Result<RegionInfo> {
        self.inner.master.region_of(name, row)
    }

    /// Each region of the table with its load (files, memstore, requests), in key order;
    /// none while the table is disabled.
    ///
    /// # Errors
    /// `TableNotFound`.
    pub fn region_loads(&self, name: &TableName) -> Result<Vec<(RegionInfo, RegionLoad)>> {
        let state = self.inner.master.state(name)?;
        let mut out: Vec<_> = state
            .online()
            .iter()
            .map(|r| (r.info().clone(), r.load()))
            .collect();
        out.extend(state.failed().into_iter().map(|f| {
            let load = RegionLoad {
                failed_open: Some(f.reason),
                ..Default::default()
            };
            (f.info, load)
        }));
        out.sort_by(|a, b| a.0.start_key.cmp(&b.0.start_key));
        Ok(out)
    }

    /// Regions that failed to open (HBase's FAILED_OPEN) as `(table, region, why)`: they
    /// serve nothing, and their files stay where they are until an operator repairs them.
    #[must_use]
    pub fn failed_regions(&self) -> Vec<(TableName, RegionInfo, String)> {
        self.inner
            .master
            .failed_regions()
            .into_iter()
            .map(|(t, f)| (t, f.info, f.reason))
            .collect()
    }

    /// The most recent flushes, compactions, splits and merges, oldest first.
    #[must_use]
    pub fn recent_events(&self) -> Vec<BackgroundEvent> {
        self.inner.rs.recent_events()
    }

    /// Store file count of each family of the table (diagnostics and tests).
    ///
    /// # Errors
    /// `TableNotFound`.
    pub fn store_file_counts(&self, name: &TableName) -> Result<BTreeMap<Bytes, usize>> {
        let mut out = BTreeMap::new();
        for r in self.inner.master.state(name)?.online() {
            for s in r.stores() {
                *out.entry(s.name().clone()).or_insert(0) += s.files().len();
            }
        }
        Ok(out)
    }
}
