//! DDL across the cluster: namespaces, and tables disabled, enabled, altered and dropped.
//! The catalog changes first; then the regions follow on their servers (closed, opened or
//! reopened), as HBase's table procedures do.

use std::collections::BTreeMap;

use basalt_model::name::SYSTEM_NAMESPACE;
use basalt_model::{Error, Result, TableDescriptor, TableName};
use basalt_storage::archive::Archive;

use super::ClusterMaster;
use crate::catalog::table_key;

fn check_user_table(name: &TableName, what: &str) -> Result<()> {
    if name.namespace() == SYSTEM_NAMESPACE {
        return Err(Error::DoNotRetry(format!(
            "cannot {what} the system table {name}"
        )));
    }
    Ok(())
}

impl ClusterMaster {
    /// `create_namespace`.
    ///
    /// # Errors
    /// `NamespaceExists`, `IllegalArgument`; `Io`.
    pub fn create_namespace(&self, name: &str, props: BTreeMap<String, String>) -> Result<()> {
        let _p = self.procedure.lock();
        self.edit(|c| c.create_namespace(name, props))
    }

    /// `drop_namespace`: only an empty one.
    ///
    /// # Errors
    /// `NamespaceNotFound`; `DoNotRetry` for a namespace with tables or a reserved one.
    pub fn drop_namespace(&self, name: &str) -> Result<()> {
        let _p = self.procedure.lock();
        self.edit(|c| c.drop_namespace(name))
    }

    /// The ids of a table's regions.
    fn region_ids(&self, name: &TableName) -> Result<Vec<u64>> {
        let g = self.catalog.lock();
        Ok(g.1.table(name)?.regions.iter().map(|r| r.id).collect())
    }

    /// `disable`: the catalog says so first (clients are told `TableNotEnabled`), then each
    /// region is closed (flushed) on its server and recorded unassigned.
    ///
    /// # Errors
    /// `TableNotFound`, `TableNotEnabled` (disabled, with every region closed); a close
    /// failed (that region stays open and assigned; disabling again closes it).
    pub fn disable_table(&self, name: &TableName) -> Result<()> {
        check_user_table(name, "disable")?;
        let _p = self.procedure.lock();
        let ids = self.region_ids(name)?;
        let open = ids.iter().any(|id| self.assigned(*id).is_some());
        self.edit(|c| {
            let e = c.table_mut(name)?;
            // A disable that left regions open (a close failed) is finished by another.
            if !e.enabled && !open {
                return Err(Error::TableNotEnabled(name.to_string()));
            }
            e.enabled = false;
            Ok(())
        })?;
        let mut closed = Vec::new();
        let mut first_error = None;
        for id in ids {
            let r = match self.assigned(id) {
                Some(server) => self.close_on(&server, id),
                None => Ok(()),
            };
            match r {
                Ok(()) => closed.push(id),
                Err(e) => {
                    tracing::warn!(region = id, error = %e, "closing a region of a disabled table failed");
                    first_error.get_or_insert(e);
                }
            }
        }
        self.mark_unassigned(&closed)?;
        first_error.map_or(Ok(()), Err)
    }

    /// `enable`: the catalog says so, then every region is assigned.
    ///
    /// # Errors
    /// `TableNotFound`, `TableNotDisabled`; `Io`.
    pub fn enable_table(&self, name: &TableName) -> Result<()> {
        let _p = self.procedure.lock();
        self.edit(|c| {
            let e = c.table_mut(name)?;
            if e.enabled {
                return Err(Error::TableNotDisabled(name.to_string()));
            }
            e.enabled = true;
            Ok(())
        })?;
        let ids = self.region_ids(name)?;
        self.assign_locked(&ids)
    }

    /// `drop`: only a disabled table. Its entry and assignments leave the catalog, and its
    /// files go to the archive (HBase's `DeleteTableProcedure` archives, never deletes).
    ///
    /// # Errors
    /// `TableNotFound`, `TableNotDisabled`; `Io`.
    pub fn delete_table(&self, name: &TableName) -> Result<()> {
        check_user_table(name, "delete")?;
        let _p = self.procedure.lock();
        self.edit(|c| {
            let e = c.table(name)?;
            if e.enabled {
                return Err(Error::TableNotDisabled(name.to_string()));
            }
            let still_open = e.regions.iter().any(|r| {
                c.assignments.get(&r.id).is_some_and(|a| a.server.is_some())
            });
            if still_open {
                return Err(Error::DoNotRetry(format!(
                    "{name} has regions still open (a close failed while disabling): disable it again first"
                )));
            }
            let ids: Vec<u64> = e.regions.iter().map(|r| r.id).collect();
            for id in ids {
                c.assignments.remove(&id);
            }
            c.tables.remove(&table_key(name));
            Ok(())
        })?;
        let archive = Archive::new(&self.env, &self.root);
        if let Err(e) = archive.keep(&[self.table_dir(name)], "its table was dropped") {
            tracing::warn!(table = %name, error = %e, "archiving a dropped table's files failed; its directory is left behind");
        }
        Ok(())
    }

    /// `alter`: the new schema is committed, then each open region is reopened on its
    /// server (closed, flushed, opened at the next epoch) to take it, as HBase reopens
    /// regions after a modify. A disabled table's regions take it when they open.
    ///
    /// # Errors
    /// `TableNotFound`, `DoNotRetry` for a schema failing sanity checks; `Io`.
    pub fn modify_table(&self, desc: TableDescriptor) -> Result<()> {
        let name = desc.table_name();
        check_user_table(&name, "modify")?;
        desc.validate()?;
        let _p = self.procedure.lock();
        self.edit(|c| {
            c.table_mut(&name)?.descriptor = desc.clone();
            Ok(())
        })?;
        let tdir = self.table_dir(&name);
        if let Err(e) = basalt_storage::region::repair::write_table_info(&self.env, &tdir, &desc) {
            tracing::warn!(table = %name, error = %e, "could not write the table's descriptor file");
        }
        let mut lost = Vec::new();
        for id in self.region_ids(&name)? {
            let Some(server) = self.assigned(id) else {
                continue;
            };
            self.close_on(&server, id)?;
            let epoch = self.edit(|c| {
                let a = c.assignments.entry(id).or_default();
                a.open_epoch += 1;
                Ok(a.open_epoch)
            })?;
            if self.open_on(id, &server, epoch).is_err() {
                lost.push(id);
            }
        }
        self.mark_unassigned(&lost)?;
        self.assign_locked(&lost)
    }

    /// `alter_namespace`.
    ///
    /// # Errors
    /// `NamespaceNotFound`; `Io`.
    pub fn alter_namespace(
        &self,
        name: &str,
        set: BTreeMap<String, String>,
        unset: &[String],
    ) -> Result<()> {
        let _p = self.procedure.lock();
        self.edit(|c| c.alter_namespace(name, set, unset))
    }

    /// `truncate`: a disabled table is dropped and made again empty, with its regions' split
    /// keys when `preserve_splits` (`truncate_preserve`), and enabled.
    ///
    /// # Errors
    /// `TableNotFound`, `TableNotDisabled`; `Io`.
    pub fn truncate_table(&self, name: &TableName, preserve_splits: bool) -> Result<()> {
        let entry = self.catalog().table(name)?.clone();
        let splits = if preserve_splits {
            entry.split_keys()
        } else {
            Vec::new()
        };
        self.delete_table(name)?;
        self.create_table(entry.descriptor, &splits)
    }
}
