//! Namespace and table administration (HBase's Admin).

use std::collections::BTreeMap;
use std::sync::Arc;

use basalt_model::split::SplitAlgorithm;
use basalt_model::{ColumnFamilyDescriptor, Error, Result, TableDescriptor, TableName};
use bytes::Bytes;

use super::{Database, TableState};
use crate::catalog::{table_key, TableEntry};
use basalt_storage::region::RegionInfo;

impl Database {
    /// `create_namespace`.
    ///
    /// # Errors
    /// `NamespaceExists`, `IllegalArgument` for a bad name.
    pub fn create_namespace(&self, name: &str, props: BTreeMap<String, String>) -> Result<()> {
        self.inner
            .edit_catalog(&mut self.inner.catalog.lock(), |c| {
                c.create_namespace(name, props)
            })
    }

    /// `drop_namespace`: only empty, non-reserved namespaces.
    ///
    /// # Errors
    /// `NamespaceNotFound`, `Constraint`.
    pub fn drop_namespace(&self, name: &str) -> Result<()> {
        self.inner
            .edit_catalog(&mut self.inner.catalog.lock(), |c| c.drop_namespace(name))
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
        self.inner
            .edit_catalog(&mut self.inner.catalog.lock(), |c| {
                c.alter_namespace(name, set, unset)
            })
    }

    /// `describe_namespace`: the namespace's properties.
    ///
    /// # Errors
    /// `NamespaceNotFound`.
    pub fn namespace_properties(&self, name: &str) -> Result<BTreeMap<String, String>> {
        self.inner.catalog.lock().1.namespace(name).cloned()
    }

    /// `list_namespace`, sorted.
    #[must_use]
    pub fn list_namespaces(&self) -> Vec<String> {
        self.inner
            .catalog
            .lock()
            .1
            .namespaces
            .keys()
            .cloned()
            .collect()
    }

    /// `create`: a table with one region, or one region per gap between `split_keys`.
    ///
    /// # Errors
    /// `TableExists`, `NamespaceNotFound`, `DoNotRetry` for a schema failing sanity checks,
    /// `IllegalArgument` for bad split keys.
    pub fn create_table(&self, desc: TableDescriptor, split_keys: &[Bytes]) -> Result<()> {
        desc.validate()?;
        let name = desc.table_name();
        let mut g = self.inner.catalog.lock();
        g.1.namespace(name.namespace())?;
        if g.1.tables.contains_key(&table_key(&name)) || self.table_exists(&name) {
            return Err(Error::TableExists(name.to_string()));
        }
        let regions =
            g.1.new_regions(split_keys, self.inner.options.env.now_ms())?;
        let entry = TableEntry {
            descriptor: desc,
            enabled: true,
            regions,
            retired: Vec::new(),
        };
        // Regions (their directories and manifests) exist before the catalog names them.
        let state = self.inner.create_regions(&entry)?;
        let committed = self.inner.edit_catalog(&mut g, |c| {
            c.tables.insert(table_key(&name), entry);
            Ok(())
        });
        match committed {
            Ok(()) => {
                self.inner.tables.write().insert(name, state);
                Ok(())
            }
            Err(e) => {
                drop(state);
                self.inner.archive_table_dir(&name);
                Err(e)
            }
        }
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
        self.inner.tables.read().contains_key(name)
    }

    /// `list`: table names (as HBase prints them) matching a Java-style regex, sorted.
    ///
    /// # Errors
    /// `IllegalArgument` for a bad pattern.
    pub fn list_tables(&self, pattern: Option<&str>) -> Result<Vec<String>> {
        let re = pattern
            .map(|p| {
                regex::Regex::new(&format!("^(?:{p})$"))
                    .map_err(|e| Error::illegal(format!("Invalid regex {p}: {e}")))
            })
            .transpose()?;
        let mut names: Vec<String> = self
            .inner
            .tables
            .read()
            .keys()
            .filter(|t| !t.is_system())
            .map(ToString::to_string)
            .filter(|n| re.as_ref().is_none_or(|re| re.is_match(n)))
            .collect();
        names.sort();
        Ok(names)
    }

    /// `list_namespace_tables`.
    #[must_use]
    pub fn list_namespace_tables(&self, ns: &str) -> Vec<String> {
        let mut v: Vec<String> = self
            .inner
            .tables
            .read()
            .keys()
            .filter(|t| t.namespace() == ns)
            .map(|t| t.qualifier().to_owned())
            .collect();
        v.sort();
        v
    }

    /// `describe`: the table's schema.
    ///
    /// # Errors
    /// `TableNotFound`.
    pub fn describe(&self, name: &TableName) -> Result<TableDescriptor> {
        if let Ok(entry) = self.inner.catalog.lock().1.table(name) {
            return Ok(entry.descriptor.clone());
        }
        // A system table the catalog does not list (hbase:meta).
        let state = self.state(name)?;
        let region = state.regions.read().first().cloned();
        region
            .map(|r| (*r.table()).clone())
            .ok_or_else(|| Error::TableNotFound(name.to_string()))
    }

    /// `is_enabled`.
    ///
    /// # Errors
    /// `TableNotFound`.
    pub fn is_enabled(&self, name: &TableName) -> Result<bool> {
        Ok(self.inner.catalog.lock().1.table(name)?.enabled)
    }

    /// The table's regions in key order.
    ///
    /// # Errors
    /// `TableNotFound`.
    pub fn regions(&self, name: &TableName) -> Result<Vec<RegionInfo>> {
        Ok(self.inner.catalog.lock().1.table(name)?.regions.clone())
    }

    fn state(&self, name: &TableName) -> Result<Arc<TableState>> {
        self.inner.state(name)
    }

    fn set_enabled(&self, name: &TableName, enabled: bool) -> Result<()> {
        if enabled && is_meta(name) {
            return Err(Error::TableNotDisabled(name.to_string()));
        }
        check_not_meta(name, "disable")?;
        let state = self.state(name)?;
        {
            let mut g = self.inner.catalog.lock();
            self.inner.edit_catalog(&mut g, |c| {
                let entry = c.table_mut(name)?;
                match (entry.enabled, enabled) {
                    (false, false) => return Err(Error::TableNotEnabled(name.to_string())),
                    (true, true) => return Err(Error::TableNotDisabled(name.to_string())),
                    _ => {}
                }
                entry.enabled = enabled;
                Ok(())
            })?;
            *state.enabled.write() = enabled;
        }
        if !enabled {
            // HBase flushes a table's regions as it closes them. Done after the catalog lock
            // is released (no guard across a call into a region); writes are refused by now,
            // and whatever a failed flush leaves in memory the WAL still has.
            for r in state.online() {
                r.flush()?;
            }
            self.inner.retire_wal()?;
        }
        Ok(())
    }

    /// `disable`.
    ///
    /// # Errors
    /// `TableNotFound`, `TableNotEnabled` when already disabled.
    pub fn disable_table(&self, name: &TableName) -> Result<()> {
        self.set_enabled(name, false)
    }

    /// `enable`.
    ///
    /// # Errors
    /// `TableNotFound`, `TableNotDisabled` when already enabled.
    pub fn enable_table(&self, name: &TableName) -> Result<()> {
        self.set_enabled(name, true)
    }

    /// `drop`: only a disabled table.
    ///
    /// # Errors
    /// `TableNotFound`, `TableNotDisabled`.
    pub fn delete_table(&self, name: &TableName) -> Result<()> {
        check_not_meta(name, "delete")?;
        let mut g = self.inner.catalog.lock();
        self.inner.edit_catalog(&mut g, |c| {
            if c.table(name)?.enabled {
                return Err(Error::TableNotDisabled(name.to_string()));
            }
            c.tables.remove(&table_key(name));
            Ok(())
        })?;
        let state = self.inner.tables.write().remove(name);
        drop(g);
        drop(state);
        // HBase's DeleteTableProcedure archives the table's files rather than deleting them.
        self.inner.archive_table_dir(name);
        Ok(())
    }

    /// `truncate` / `truncate_preserve`: a disabled table is emptied and left enabled, with
    /// its old region boundaries when `preserve_splits`.
    ///
    /// # Errors
    /// `TableNotFound`, `TableNotDisabled`.
    pub fn truncate_table(&self, name: &TableName, preserve_splits: bool) -> Result<()> {
        check_not_meta(name, "truncate")?;
        let entry = self.inner.catalog.lock().1.table(name)?.clone();
        let splits: Vec<Bytes> = if preserve_splits {
            entry
                .regions
                .iter()
                .skip(1)
                .map(|r| r.start_key.clone())
                .collect()
        } else {
            Vec::new()
        };
        self.delete_table(name)?;
        self.create_table(entry.descriptor, &splits)
    }

    /// `alter`: replaces the table's schema online (families added, modified or removed;
    /// table attributes changed).
    ///
    /// # Errors
    /// `TableNotFound`, `DoNotRetry` for a schema failing sanity checks.
    pub fn modify_table(&self, desc: TableDescriptor) -> Result<()> {
        let name = desc.table_name();
        check_not_meta(&name, "modify")?;
        desc.validate()?;
        let mut g = self.inner.catalog.lock();
        g.1.table(&name)?;
        let desc = Arc::new(desc);
        for r in self.state(&name)?.online() {
            r.alter(Arc::clone(&desc))?;
        }
        self.inner.edit_catalog(&mut g, |c| {
            c.table_mut(&name)?.descriptor = (*desc).clone();
            Ok(())
        })?;
        // The copy `basalt hbck` rebuilds a lost catalog from; the catalog is the truth.
        let tdir = self.inner.table_dir(&name);
        if let Err(e) =
            basalt_storage::region::repair::write_table_info(&self.inner.options.env, &tdir, &desc)
        {
            tracing::warn!(table = %name, error = %e, "could not write the table's descriptor file");
        }
        Ok(())
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
        for r in self.state(name)?.online() {
            r.flush()?;
            self.inner.background.after_flush(&r);
        }
        self.inner.retire_wal()
    }

    /// `compact`: merges each store's files (markers kept).
    ///
    /// # Errors
    /// `TableNotFound`; `Io`; corruption.
    pub fn compact(&self, name: &TableName) -> Result<()> {
        for r in self.state(name)?.online() {
            r.compact(false)?;
        }
        // Regions that compacted their references away free their parents.
        self.inner.clean_retired().map(drop)
    }

    /// `major_compact`: rewrites each store into one file, dropping what HBase drops.
    ///
    /// # Errors
    /// `TableNotFound`; `Io`; corruption.
    pub fn major_compact(&self, name: &TableName) -> Result<()> {
        for r in self.state(name)?.online() {
            r.compact(true)?;
        }
        self.inner.clean_retired().map(drop)
    }

    /// This server's name as `hbase:meta` writes it: `host,port,start code`.
    #[must_use]
    pub fn server_name(&self) -> String {
        let s = &self.inner.server;
        format!("{},{},{}", s.host, s.port, s.start_code)
    }

    /// The region that holds `row` now.
    ///
    /// # Errors
    /// `TableNotFound`, `TableNotEnabled`.
    pub fn region_of(&self, name: &TableName, row: &[u8]) -> Result<RegionInfo> {
        let state = self.state(name)?;
        let region = state.region_where(|start| start <= row)?;
        Ok(region.info().clone())
    }

    /// Each region of the table with its load (files, memstore, requests), in key order.
    ///
    /// # Errors
    /// `TableNotFound`.
    pub fn region_loads(
        &self,
        name: &TableName,
    ) -> Result<Vec<(RegionInfo, basalt_storage::region::RegionLoad)>> {
        let state = self.state(name)?;
        let online = state.online();
        let mut out: Vec<_> = online
            .iter()
            .map(|r| (r.info().clone(), r.load()))
            .collect();
        out.extend(state.failed.read().iter().map(|f| {
            let load = basalt_storage::region::RegionLoad {
                failed_open: Some(f.reason.clone()),
                ..Default::default()
            };
            (f.info.clone(), load)
        }));
        out.sort_by(|a, b| a.0.start_key.cmp(&b.0.start_key));
        Ok(out)
    }

    /// Regions that failed to open (HBase's FAILED_OPEN) as `(table, region, why)`: they
    /// serve nothing, and their files stay where they are until an operator repairs them.
    #[must_use]
    pub fn failed_regions(&self) -> Vec<(TableName, RegionInfo, String)> {
        self.inner
            .failed_regions()
            .into_iter()
            .map(|(t, f)| (t, f.info, f.reason))
            .collect()
    }

    /// The most recent flushes, compactions, splits and merges, oldest first.
    #[must_use]
    pub fn recent_events(&self) -> Vec<basalt_storage::region::BackgroundEvent> {
        self.inner.stats.events.lock().iter().cloned().collect()
    }

    /// Store file count of each family of the table (diagnostics and tests).
    ///
    /// # Errors
    /// `TableNotFound`.
    pub fn store_file_counts(&self, name: &TableName) -> Result<BTreeMap<Bytes, usize>> {
        let mut out = BTreeMap::new();
        for r in self.state(name)?.online() {
            for s in r.stores() {
                *out.entry(s.name().clone()).or_insert(0) += s.files().len();
            }
        }
        Ok(out)
    }
}

fn is_meta(name: &TableName) -> bool {
    name.namespace() == "hbase" && name.qualifier() == "meta"
}

/// HBase refuses to disable, drop, truncate or alter its catalog table with a constraint
/// error ("Cannot disable catalog table"), not "unknown table": the table exists and can be
/// scanned.
fn check_not_meta(name: &TableName, action: &str) -> Result<()> {
    if is_meta(name) {
        return Err(Error::Constraint(format!("Cannot {action} catalog table")));
    }
    Ok(())
}
