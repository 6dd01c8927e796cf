//! Namespace and table DDL (HBase's master procedures: CreateTableProcedure,
//! DisableTableProcedure, ...). Each procedure on a table holds that table's procedure lock;
//! the catalog lock is held only to read and commit.

use std::collections::BTreeMap;
use std::sync::Arc;

use basalt_model::{Error, Result, TableDescriptor, TableName};
use bytes::Bytes;

use super::{Master, TableState};
use crate::catalog::{table_key, TableEntry};
use basalt_storage::region::{Region, RegionInfo};

impl Master {
    /// `create_namespace`.
    ///
    /// # Errors
    /// `NamespaceExists`, `IllegalArgument` for a bad name.
    pub fn create_namespace(&self, name: &str, props: BTreeMap<String, String>) -> Result<()> {
        self.edit_catalog(|c| c.create_namespace(name, props))
    }

    /// `drop_namespace`: only empty, non-reserved namespaces.
    ///
    /// # Errors
    /// `NamespaceNotFound`, `Constraint`.
    pub fn drop_namespace(&self, name: &str) -> Result<()> {
        self.edit_catalog(|c| c.drop_namespace(name))
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
        self.edit_catalog(|c| c.alter_namespace(name, set, unset))
    }

    /// `describe_namespace`: the namespace's properties.
    ///
    /// # Errors
    /// `NamespaceNotFound`.
    pub fn namespace_properties(&self, name: &str) -> Result<BTreeMap<String, String>> {
        self.catalog.lock().1.namespace(name).cloned()
    }

    /// `list_namespace`, sorted.
    #[must_use]
    pub fn list_namespaces(&self) -> Vec<String> {
        self.catalog.lock().1.namespaces.keys().cloned().collect()
    }

    /// `create`: a table with one region, or one region per gap between `split_keys`.
    ///
    /// # Errors
    /// `TableExists`, `NamespaceNotFound`, `DoNotRetry` for a schema failing sanity checks,
    /// `IllegalArgument` for bad split keys.
    pub fn create_table(&self, desc: TableDescriptor, split_keys: &[Bytes]) -> Result<()> {
        desc.validate()?;
        let name = desc.table_name();
        // Held throughout: creating empty regions writes their first manifests, and waits
        // for no flush or compaction.
        let mut g = self.catalog.lock();
        g.1.namespace(name.namespace())?;
        if g.1.tables.contains_key(&table_key(&name)) || self.table_exists(&name) {
            return Err(Error::TableExists(name.to_string()));
        }
        let regions = g.1.new_regions(split_keys, self.env.now_ms())?;
        let entry = TableEntry {
            descriptor: desc,
            enabled: true,
            regions,
            retired: Vec::new(),
        };
        // Regions (their directories and manifests) exist before the catalog names them.
        let state = self.create_regions(&entry)?;
        let committed = self.edit_locked(&mut g, |c| {
            c.tables.insert(table_key(&name), entry);
            Ok(())
        });
        match committed {
            Ok(()) => {
                self.tables.write().insert(name, state);
                Ok(())
            }
            Err(e) => {
                self.discard_regions(&state);
                self.archive_table_dir(&name);
                Err(e)
            }
        }
    }

    /// Creates the regions of a new table (directories and first manifests) and opens them;
    /// the table is not in the map yet. On failure, what was made is archived.
    fn create_regions(&self, entry: &TableEntry) -> Result<Arc<TableState>> {
        let name = entry.descriptor.table_name();
        let state = TableState::new(name.clone());
        let desc = Arc::new(entry.descriptor.clone());
        let tdir = self.table_dir(&name);
        let made = entry.regions.iter().try_for_each(|info| {
            let rdir = tdir.join(info.id.to_string());
            Region::create_empty(&self.env, &rdir, info.id)?;
            let r = self.rs.open_region(&rdir, info, &desc)?;
            state.regions.write().online.push(r);
            Ok(())
        });
        let made = made.and_then(|()| {
            basalt_storage::region::repair::write_table_info(&self.env, &tdir, &desc)
        });
        if let Err(e) = made {
            self.discard_regions(&state);
            self.archive_table_dir(&name);
            return Err(e);
        }
        Ok(state)
    }

    /// Closes the regions of a table that will not exist (they hold no data).
    fn discard_regions(&self, state: &TableState) {
        for r in state.online() {
            if let Err(e) = self.rs.close_region(&r) {
                tracing::warn!(region = %r.name(), error = %e, "closing a region of a table not created");
            }
        }
    }

    /// Moves a table's directory (a dropped table, or one whose creation failed) to the
    /// archive; a failure is logged, and the directory is found as an orphan at the next
    /// open and archived then.
    fn archive_table_dir(&self, name: &TableName) {
        let dir = self.table_dir(name);
        if let Err(e) = self.archive.keep(&[dir], "its table was dropped") {
            tracing::warn!(table = %name, error = %e, "leaving a table directory behind");
        }
    }

    /// `exists`.
    #[must_use]
    pub fn table_exists(&self, name: &TableName) -> bool {
        self.tables.read().contains_key(name)
    }

    /// `list`: table names (as HBase prints them) matching a Java-style regex, sorted.
    ///
    /// # Errors
    /// `IllegalArgument` for a bad pattern.
    pub fn list_tables(&self, pattern: Option<&str>) -> Result<Vec<String>> {
        let names: Vec<TableName> = self.tables.read().keys().cloned().collect();
        matching_tables(names.iter(), pattern)
    }

    /// `list_namespace_tables`.
    #[must_use]
    pub fn list_namespace_tables(&self, ns: &str) -> Vec<String> {
        let mut v: Vec<String> = self
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
        if let Ok(entry) = self.catalog.lock().1.table(name) {
            return Ok(entry.descriptor.clone());
        }
        // A system table the catalog does not list (hbase:meta).
        let state = self.state(name)?;
        let region = state.regions.read().online.first().cloned();
        region
            .map(|r| (*r.table()).clone())
            .ok_or_else(|| Error::TableNotFound(name.to_string()))
    }

    /// `is_enabled`.
    ///
    /// # Errors
    /// `TableNotFound`.
    pub fn is_enabled(&self, name: &TableName) -> Result<bool> {
        Ok(self.catalog.lock().1.table(name)?.enabled)
    }

    /// The table's regions in key order.
    ///
    /// # Errors
    /// `TableNotFound`.
    pub fn regions(&self, name: &TableName) -> Result<Vec<RegionInfo>> {
        Ok(self.catalog.lock().1.table(name)?.regions.clone())
    }

    /// `disable` (`enabled` false) or `enable`. Disabling commits the state, then closes
    /// the table's regions (each flushed first), as HBase unassigns them; enabling commits,
    /// then opens them again (a region that failed to open gets another try).
    fn set_enabled(&self, name: &TableName, enabled: bool) -> Result<()> {
        if enabled && is_meta(name) {
            return Err(Error::TableNotDisabled(name.to_string()));
        }
        check_not_meta(name, "disable")?;
        let state = self.state(name)?;
        let _procedure = state.procedure.lock();
        let entry = self.edit_catalog(|c| {
            let entry = c.table_mut(name)?;
            match (entry.enabled, enabled) {
                (false, false) => return Err(Error::TableNotEnabled(name.to_string())),
                (true, true) => return Err(Error::TableNotDisabled(name.to_string())),
                _ => {}
            }
            entry.enabled = enabled;
            Ok(entry.clone())
        })?;
        // Region work after the commit, under the table's procedure lock alone: writes are
        // refused by now (disable), and whatever a failed flush leaves in memory the WAL
        // still has (the region then stays open).
        if enabled {
            self.assign(&state, &entry);
            Ok(())
        } else {
            self.unassign(&state)
        }
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

    /// `drop`: only a disabled table (whose regions are closed).
    ///
    /// # Errors
    /// `TableNotFound`, `TableNotDisabled`.
    pub fn delete_table(&self, name: &TableName) -> Result<()> {
        check_not_meta(name, "delete")?;
        let state = self.state(name)?;
        let _procedure = state.procedure.lock();
        let mut g = self.catalog.lock();
        self.edit_locked(&mut g, |c| {
            if c.table(name)?.enabled {
                return Err(Error::TableNotDisabled(name.to_string()));
            }
            c.tables.remove(&table_key(name));
            Ok(())
        })?;
        self.tables.write().remove(name);
        drop(g);
        // HBase's DeleteTableProcedure archives the table's files rather than deleting them.
        self.archive_table_dir(name);
        Ok(())
    }

    /// `truncate` / `truncate_preserve`: a disabled table is emptied and left enabled, with
    /// its old region boundaries when `preserve_splits`.
    ///
    /// # Errors
    /// `TableNotFound`, `TableNotDisabled`.
    pub fn truncate_table(&self, name: &TableName, preserve_splits: bool) -> Result<()> {
        check_not_meta(name, "truncate")?;
        let entry = self.catalog.lock().1.table(name)?.clone();
        let splits = if preserve_splits {
            entry.split_keys()
        } else {
            Vec::new()
        };
        self.delete_table(name)?;
        self.create_table(entry.descriptor, &splits)
    }

    /// `alter`: replaces the table's schema online (families added, modified or removed;
    /// table attributes changed). A disabled table's regions take it when they open.
    ///
    /// # Errors
    /// `TableNotFound`, `DoNotRetry` for a schema failing sanity checks.
    pub fn modify_table(&self, desc: TableDescriptor) -> Result<()> {
        let name = desc.table_name();
        check_not_meta(&name, "modify")?;
        desc.validate()?;
        let state = self.state(&name)?;
        let _procedure = state.procedure.lock();
        self.catalog.lock().1.table(&name)?;
        let desc = Arc::new(desc);
        for r in state.online() {
            r.alter(Arc::clone(&desc))?;
        }
        let entry = self.edit_catalog(|c| {
            let entry = c.table_mut(&name)?;
            entry.descriptor = (*desc).clone();
            Ok(entry.clone())
        })?;
        self.write_table_info(&entry);
        Ok(())
    }

    /// `flush`: writes every memstore of the table to store files (a disabled table's
    /// were written when it closed).
    ///
    /// # Errors
    /// `TableNotFound`; `Io`.
    pub fn flush(&self, name: &TableName) -> Result<()> {
        for r in self.state(name)?.online() {
            self.rs.flush_region(&r)?;
        }
        self.rs.retire_wal()
    }

    /// `compact` (`major` false: each store's files merged, markers kept) or
    /// `major_compact` (each store rewritten into one file, dropping what HBase drops).
    ///
    /// # Errors
    /// `TableNotFound`; `Io`; corruption.
    pub fn compact(&self, name: &TableName, major: bool) -> Result<()> {
        for r in self.state(name)?.online() {
            r.compact(major)?;
        }
        // Regions that compacted their references away free their parents.
        self.clean_retired().map(drop)
    }

    /// The region that holds `row` now.
    ///
    /// # Errors
    /// `TableNotFound`, `TableNotEnabled`, `RegionOffline`.
    pub fn region_of(&self, name: &TableName, row: &[u8]) -> Result<RegionInfo> {
        let state = self.state(name)?;
        let region = state
            .region_where(|start| start <= row)?
            .ok_or_else(|| self.why_not_serving(name))?;
        Ok(region.info().clone())
    }
}

pub(crate) fn is_meta(name: &TableName) -> bool {
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

/// The user tables among `names` (as HBase prints them) matching the Java-style regex
/// `pattern`, sorted (`list`).
///
/// # Errors
/// `IllegalArgument` for a bad pattern.
pub(crate) fn matching_tables<'a>(
    names: impl Iterator<Item = &'a TableName>,
    pattern: Option<&str>,
) -> Result<Vec<String>> {
    let re = pattern
        .map(|p| {
            regex::Regex::new(&format!("^(?:{p})$"))
                .map_err(|e| Error::illegal(format!("Invalid regex {p}: {e}")))
        })
        .transpose()?;
    let mut out: Vec<String> = names
        .filter(|t| !t.is_system())
        .map(ToString::to_string)
        .filter(|n| re.as_ref().is_none_or(|re| re.is_match(n)))
        .collect();
    out.sort();
    Ok(out)
}
