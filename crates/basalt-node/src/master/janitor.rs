//! The catalog janitor (HBase's CatalogJanitor), which drops regions that splits and merges
//! retired once nothing reads them, the archive cleaner, and the cleanup at start of what a
//! crash left half made.

use std::collections::BTreeSet;
use std::path::PathBuf;

use basalt_model::Result;

use super::Master;
use crate::catalog::Catalog;

impl Master {
    /// Drops retired regions that no online region reads from the catalog, then deletes
    /// their directories. Returns how many went.
    pub fn clean_retired(&self) -> Result<usize> {
        let mut g = self.catalog.lock();
        let mut next = g.1.clone();
        let mut gone: Vec<PathBuf> = Vec::new();
        for entry in next.tables.values_mut() {
            if entry.retired.is_empty() {
                continue;
            }
            let name = entry.descriptor.table_name();
            let Some(state) = self.tables.read().get(&name).cloned() else {
                continue;
            };
            // Only a table whose every region is open says what it reads: a disabled table's
            // regions are closed, a failed one's files unread. A table in the middle of a
            // procedure (a split, say, whose new regions read their parent) waits too; the
            // lock is only tried, as the catalog lock is held (lock order).
            let Some(_procedure) = state.procedure.try_lock() else {
                continue;
            };
            let online = state.online();
            if !entry.enabled || online.len() != entry.regions.len() {
                continue;
            }
            let read: BTreeSet<u64> = online.iter().flat_map(|r| r.referenced_regions()).collect();
            let tdir = self.table_dir(&name);
            entry.retired.retain(|r| {
                let keep = read.contains(&r.info.id);
                if !keep {
                    gone.push(tdir.join(r.info.id.to_string()));
                }
                keep
            });
        }
        if gone.is_empty() {
            return Ok(0);
        }
        g.0.commit(&self.env, &next)?;
        g.1 = next;
        self.refresh_meta(&g.1);
        drop(g);
        self.archive
            .keep(&gone, "split or merged away, and no region reads it")?;
        Ok(gone.len())
    }

    /// Archives region directories the catalog does not know (a split or merge that crashed
    /// before its commit) and table directories of tables it does not list (a create that
    /// crashed before its commit, a drop that crashed after it). The catalog was read, not
    /// assumed: a missing one refuses the open before this runs.
    pub fn archive_orphans(&self, catalog: &Catalog) -> Result<()> {
        let env = &self.env;
        let data = self.dir.join("data");
        let mut orphans = Vec::new();
        for ns in env.list(&data)? {
            for table in env.list(&data.join(&ns))? {
                let tdir = data.join(&ns).join(&table);
                if ns == "hbase" && table == "meta" {
                    continue; // the mirror, written again from the catalog
                }
                let Some(entry) = catalog.tables.get(&format!("{ns}:{table}")) else {
                    orphans.push(tdir);
                    continue;
                };
                let known: BTreeSet<String> = entry
                    .regions
                    .iter()
                    .chain(entry.retired.iter().map(|r| &r.info))
                    .map(|r| r.id.to_string())
                    .collect();
                for region in env.list(&tdir)? {
                    // `.tabledesc` holds the table's descriptor, not a region.
                    if !known.contains(&region) && !region.starts_with('.') {
                        orphans.push(tdir.join(region));
                    }
                }
            }
        }
        self.archive.keep(&orphans, "the catalog does not list it")
    }

    /// Removes archived files past their retention (HBase's cleaner chore); a failure is
    /// logged and retried at the next run.
    pub fn clean_archive(&self) {
        match self.archive.clean(self.archive_retention_ms) {
            Ok(0) => {}
            Ok(n) => tracing::info!(batches = n, "removed archived files past their retention"),
            Err(e) => tracing::warn!(error = %e, "cleaning the archive failed; will retry"),
        }
    }
}
