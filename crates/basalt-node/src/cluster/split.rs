//! Splits and merges on a cluster (HBase's SplitTableRegionProcedure and
//! MergeTableRegionsProcedure), decided by the active master, on request (`split`,
//! `merge_region`) or because a region server reports a region past its table's
//! `MAX_FILESIZE`; and the catalog janitor, which frees what they retired.
//!
//! A split or merge holds the master's procedure lock throughout.
//!
//! # How a split or merge stays atomic
//! 1. The parents close on their servers (flushed): clients get `NotServingRegion` and look
//!    their regions up again. A failed close opens the parents closed so far again.
//! 2. The master reads what the parents hand on from their manifests on shared storage
//!    (final once they are closed) and writes the new regions' manifests, whose stores list
//!    the parents' files as references.
//! 3. One catalog commit lists the new regions, retires the parents and assigns the new
//!    regions to the first parent's server at a new open epoch. This is the switch: a failure
//!    before it opens the parents again where they were (a commit whose outcome is unknown
//!    is settled first, by committing the old catalog again); after it the parents never
//!    serve again.
//! 4. The new regions open on that server, which compacts their references away. One that
//!    fails to open is unassigned and assigned again by the next `assign_all`.
//! 5. The janitor retires a parent for good once no region's manifest lists its files: it
//!    leaves the catalog and its directory goes to the archive (where scanners that still
//!    read its files find them until the archive's retention passes).

use std::collections::BTreeSet;

use basalt_model::{Error, Result, TableDescriptor, TableName};
use basalt_storage::archive::Archive;
use basalt_storage::failpoint::fail_point;
use basalt_storage::region::{join_handed_files, HandedFiles, Region, RegionInfo};
use bytes::Bytes;

use super::ClusterMaster;
use crate::catalog::{Catalog, RegionState};
use crate::master::split::{check_merge_infos, check_split_key};

/// A split or merge ready to switch: its parents (closed, on their servers) and the regions
/// that follow them, with the files they read.
struct Replacement {
    table: TableName,
    parents: Vec<(RegionInfo, String)>,
    retired_as: RegionState,
    made: Vec<(RegionInfo, HandedFiles)>,
    flushed: u64,
}

impl ClusterMaster {
    /// `split 'table'[, 'key']`: with a key, splits the region holding it there; without,
    /// splits every region at its split point (regions with too little data stay whole).
    ///
    /// # Errors
    /// `TableNotFound`, `TableNotEnabled`; as [`ClusterMaster::split_region`].
    pub fn split_table(&self, name: &TableName, key: Option<&[u8]>) -> Result<()> {
        if let Some(k) = key {
            let (info, _) = self.locate(name, k)?;
            return self.split_region(info.id, Some(k));
        }
        let regions = {
            let c = self.catalog();
            let entry = c.table(name)?;
            if !entry.enabled {
                return Err(Error::TableNotEnabled(name.to_string()));
            }
            entry.regions.clone()
        };
        for r in regions {
            self.split(r.id, None)?;
        }
        Ok(())
    }

    /// Splits region `id` at `key`, or at its split point.
    ///
    /// # Errors
    /// `UnknownRegion`, `TableNotEnabled`; `NotServingRegion` while it is unassigned;
    /// `DoNotRetry` when splits are disabled for the table, the key is the region's start
    /// key or outside it, or the region still reads its parent's files.
    pub fn split_region(&self, id: u64, key: Option<&[u8]>) -> Result<()> {
        self.split(id, key.map(Bytes::copy_from_slice)).map(drop)
    }

    /// Splits the regions their servers report past their table's `MAX_FILESIZE`. Returns
    /// how many split.
    ///
    /// # Errors
    /// `Io` reaching the coordinator.
    pub fn split_large_regions(&self) -> Result<usize> {
        let (live, _) = self.coordinator.live_servers()?;
        let mut wanted = Vec::new();
        for server in &live {
            // A server that does not answer now is asked again at the next run.
            if let Ok(report) = self
                .servers
                .connect(server)
                .and_then(|s| s.report(self.epoch))
            {
                wanted.extend(
                    report
                        .regions
                        .iter()
                        .filter(|r| r.wants_split)
                        .map(|r| r.info.id),
                );
            }
        }
        let mut split = 0;
        for id in wanted {
            match self.split(id, None) {
                Ok(true) => split += 1,
                // Gone, moved or disabled meanwhile, or no point to split at: nothing to do.
                Ok(false)
                | Err(
                    Error::NotServingRegion(_)
                    | Error::TableNotEnabled(_)
                    | Error::UnknownRegion(_),
                ) => {}
                Err(e) => {
                    tracing::warn!(region = id, error = %e, "splitting a region past its MAX_FILESIZE failed");
                }
            }
        }
        Ok(split)
    }

    /// Splits region `id` at `key`, or at its split point; false when there was nothing to
    /// split (no key given and no split point).
    fn split(&self, id: u64, key: Option<Bytes>) -> Result<bool> {
        let _p = self.procedure.lock();
        let (desc, info) = self.region(id)?;
        let table = desc.table_name();
        let name = info.region_name_string(&table);
        self.check_enabled(id)?;
        if !desc.split_enabled {
            return Err(Error::DoNotRetry(format!(
                "Split region {name} failed due to split is disabled for the table"
            )));
        }
        let server = self
            .assigned(id)
            .ok_or_else(|| Error::NotServingRegion(format!("{name} is not assigned")))?;
        // Asked even with a key: the server refuses a region that reads its parent's files.
        let point = self.servers.connect(&server)?.split_point(self.epoch, id)?;
        let key = match key {
            Some(k) => check_split_key(&info, k, &name)?,
            None => match point {
                Some(k) => k,
                None => return Ok(false),
            },
        };
        self.close_on(&server, id)?;
        fail_point("master.split.closed");
        let (files, flushed) = match self.handed(&table, &info) {
            Ok(h) => h,
            Err(e) => return Err(self.reopen(&[(info, server)], e)),
        };
        let now = self.env.now_ms();
        let (a, b) = {
            let mut g = self.catalog.lock();
            (g.1.allocate_region_id(now), g.1.allocate_region_id(now))
        };
        let made = vec![
            (
                RegionInfo {
                    id: a,
                    start_key: info.start_key.clone(),
                    end_key: key.clone(),
                },
                files.clone(),
            ),
            (
                RegionInfo {
                    id: b,
                    start_key: key,
                    end_key: info.end_key.clone(),
                },
                files,
            ),
        ];
        self.replace(Replacement {
            table,
            parents: vec![(info, server)],
            retired_as: RegionState::Split,
            made,
            flushed,
        })?;
        Ok(true)
    }

    /// `merge_region`: merges adjacent regions of one table into one, on the first one's
    /// server. `force` is accepted for the shell's sake; regions must be adjacent either
    /// way (a table has no holes to close).
    ///
    /// # Errors
    /// `UnknownRegion`; `MergeRegion` for fewer than two regions, regions of different
    /// tables, non-adjacent regions or a region that still reads its parent's files;
    /// `DoNotRetry` when merges are disabled for the table; `NotServingRegion` for a region
    /// not assigned.
    pub fn merge_regions(&self, ids: &[u64], force: bool) -> Result<()> {
        let _p = self.procedure.lock();
        let mut found: Vec<(TableDescriptor, RegionInfo)> = ids
            .iter()
            .map(|id| self.region(*id))
            .collect::<Result<_>>()?;
        let Some((desc, _)) = found.first().cloned() else {
            return Err(Error::MergeRegion(
                "Need at least two regions to merge".into(),
            ));
        };
        let table = desc.table_name();
        if found.iter().any(|(d, _)| d.table_name() != table) {
            return Err(Error::MergeRegion(
                "Cannot merge regions of different tables".into(),
            ));
        }
        found.sort_by(|a, b| a.1.start_key.cmp(&b.1.start_key));
        let infos: Vec<&RegionInfo> = found.iter().map(|(_, i)| i).collect();
        let entry = self.catalog().table(&table)?.clone();
        let tdir = self.table_dir(&table);
        check_merge_infos(&entry, &infos, force, |i| {
            let r = infos[i];
            let read = Region::stored_references(&self.env, &tdir.join(r.id.to_string()), r.id)?;
            Ok(!read.is_empty())
        })?;
        let mut parents = Vec::new();
        for info in infos {
            let Some(server) = self.assigned(info.id) else {
                let e = Error::NotServingRegion(info.region_name_string(&table));
                return Err(self.reopen(&parents, e));
            };
            let closed = self
                .check_open_on(&server, info, &table)
                .and_then(|()| self.close_on(&server, info.id));
            if let Err(e) = closed {
                return Err(self.reopen(&parents, e));
            }
            parents.push((info.clone(), server));
        }
        fail_point("master.merge.closed");
        let mut handed = Vec::new();
        for (info, _) in &parents {
            match self.handed(&table, info) {
                Ok(h) => handed.push(h),
                Err(e) => return Err(self.reopen(&parents, e)),
            }
        }
        let flushed = handed.iter().map(|h| h.1).max().unwrap_or(0);
        let files = join_handed_files(handed.into_iter().map(|h| h.0).collect());
        let merged = RegionInfo {
            id: self.catalog.lock().1.allocate_region_id(self.env.now_ms()),
            start_key: parents[0].0.start_key.clone(),
            end_key: parents[parents.len() - 1].0.end_key.clone(),
        };
        self.replace(Replacement {
            table,
            parents,
            retired_as: RegionState::Merged,
            made: vec![(merged, files)],
            flushed,
        })
    }

    /// Refuses a parent that its server does not hold open: the catalog may name a server
    /// whose open failed (a master died before it could record that), and a close there
    /// would hand on a region that never took in what was recovered for it.
    fn check_open_on(&self, server: &str, info: &RegionInfo, table: &TableName) -> Result<()> {
        let report = self.servers.connect(server)?.report(self.epoch)?;
        if report.regions.iter().any(|r| r.info.id == info.id) {
            return Ok(());
        }
        Err(Error::NotServingRegion(format!(
            "{} is not online on {server}",
            info.region_name_string(table)
        )))
    }

    /// What a closed region hands on, from its manifest on storage.
    fn handed(&self, table: &TableName, info: &RegionInfo) -> Result<(HandedFiles, u64)> {
        let dir = self.table_dir(table).join(info.id.to_string());
        Region::stored_handed_files(&self.env, &dir, info.id)
    }

    /// Opens closed `parents` again where they were, at the epochs the catalog gives them
    /// (their close did not change them); returns `e`.
    fn reopen(&self, parents: &[(RegionInfo, String)], e: Error) -> Error {
        let c = self.catalog();
        for (info, server) in parents {
            let at = c.assignments.get(&info.id).map_or(0, |a| a.open_epoch);
            if self.open_on(info.id, server, at).is_err() {
                // Logged by `open_on`; the next `assign_all` tries again.
                let _ = self.mark_unassigned(&[info.id]);
            }
        }
        e
    }

    /// Steps 2–4 of a split or merge (see the module's comment).
    fn replace(&self, r: Replacement) -> Result<()> {
        let tdir = self.table_dir(&r.table);
        let server = r.parents[0].1.clone();
        for (i, (info, files)) in r.made.iter().enumerate() {
            let dir = tdir.join(info.id.to_string());
            if let Err(e) = Region::create_successor(&self.env, &dir, info.id, files, r.flushed) {
                self.discard(&tdir, &r.made[..=i]);
                return Err(self.reopen(&r.parents, e));
            }
        }
        let opens = match self.switch(&r, &server) {
            Ok(opens) => opens,
            Err((e, settled)) => {
                if settled {
                    self.discard(&tdir, &r.made);
                    return Err(self.reopen(&r.parents, e));
                }
                return Err(e);
            }
        };
        let failed: Vec<u64> = opens
            .into_iter()
            .filter(|(id, epoch)| self.open_on(*id, &server, *epoch).is_err())
            .map(|(id, _)| id)
            .collect();
        self.mark_unassigned(&failed)
    }

    /// Step 3: the one commit. Returns the new regions' open epochs; on failure, whether the
    /// catalog is known to be the old one (only then may the parents serve again).
    fn switch(
        &self,
        r: &Replacement,
        server: &str,
    ) -> std::result::Result<Vec<(u64, u64)>, (Error, bool)> {
        let gone: BTreeSet<u64> = r.parents.iter().map(|(p, _)| p.id).collect();
        let now = self.env.now_ms();
        let mut g = self.catalog.lock();
        let mut next = g.1.clone();
        next.master_epoch = self.epoch;
        let opens = replace_in(&mut next, r, &gone, server, now).map_err(|e| (e, true))?;
        if let Err(e) = g.0.commit(&self.env, &next) {
            // The new version may still have landed. Committing the old document again
            // makes the outcome certain.
            let mut previous = g.1.clone();
            previous.master_epoch = self.epoch;
            let settled = g.0.commit(&self.env, &previous).is_ok();
            return Err((e, settled));
        }
        g.1 = next;
        Ok(opens)
    }

    /// Removes the directories of new regions that will not serve.
    fn discard(&self, tdir: &std::path::Path, made: &[(RegionInfo, HandedFiles)]) {
        for (info, _) in made {
            if let Err(e) = self.env.remove_dir_all(&tdir.join(info.id.to_string())) {
                tracing::warn!(error = %e, "leaving a region directory behind");
            }
        }
    }

    /// Removes archived files past `retention_ms` (HBase's cleaner chore, run with the
    /// janitor); returns how many batches went.
    ///
    /// # Errors
    /// `Io` listing or removing.
    pub fn clean_archive(&self, retention_ms: i64) -> Result<usize> {
        Archive::new(&self.env, &self.root).clean(retention_ms)
    }

    /// `catalogjanitor_run`: drops retired regions whose files no region's manifest lists
    /// any more and archives their directories. Returns how many went.
    ///
    /// # Errors
    /// `Io` committing the catalog or archiving.
    pub fn run_catalog_janitor(&self) -> Result<usize> {
        let _p = self.procedure.lock();
        let c = self.catalog();
        let mut gone: Vec<(String, u64)> = Vec::new();
        for (key, entry) in c.tables.iter().filter(|(_, e)| !e.retired.is_empty()) {
            let tdir = self.table_dir(&entry.descriptor.table_name());
            let mut read = BTreeSet::new();
            let mut known = true;
            for r in &entry.regions {
                let dir = tdir.join(r.id.to_string());
                match Region::stored_references(&self.env, &dir, r.id) {
                    Ok(refs) => read.extend(refs),
                    Err(e) => {
                        // Unknown what it reads: its table's parents stay this time.
                        tracing::warn!(region = r.id, error = %e, "reading a region's manifest failed");
                        known = false;
                    }
                }
            }
            if known {
                gone.extend(
                    entry
                        .retired
                        .iter()
                        .filter(|r| !read.contains(&r.info.id))
                        .map(|r| (key.clone(), r.info.id)),
                );
            }
        }
        if gone.is_empty() {
            return Ok(0);
        }
        let dirs: Vec<std::path::PathBuf> = gone
            .iter()
            .filter_map(|(key, id)| {
                let entry = c.tables.get(key)?;
                Some(
                    self.table_dir(&entry.descriptor.table_name())
                        .join(id.to_string()),
                )
            })
            .collect();
        self.edit(|c| {
            for (key, id) in &gone {
                if let Some(e) = c.tables.get_mut(key) {
                    e.retired.retain(|r| r.info.id != *id);
                }
            }
            Ok(())
        })?;
        Archive::new(&self.env, &self.root)
            .keep(&dirs, "split or merged away, and no region reads it")?;
        Ok(gone.len())
    }
}

/// The catalog change of a split or merge: the new regions in the parents' place, the
/// parents retired, the new regions assigned to `server` at a new open epoch.
fn replace_in(
    c: &mut Catalog,
    r: &Replacement,
    gone: &BTreeSet<u64>,
    server: &str,
    now: i64,
) -> Result<Vec<(u64, u64)>> {
    let parents: Vec<RegionInfo> = r.parents.iter().map(|(p, _)| p.clone()).collect();
    let made: Vec<RegionInfo> = r.made.iter().map(|(i, _)| i.clone()).collect();
    c.table_mut(&r.table)?
        .replace_regions(&parents, &made, r.retired_as, now);
    for id in gone {
        c.assignments.remove(id);
    }
    Ok(made
        .iter()
        .map(|RegionInfo { id, .. }| {
            let a = c.assignments.entry(*id).or_default();
            a.server = Some(server.to_owned());
            a.open_epoch += 1;
            (*id, a.open_epoch)
        })
        .collect())
}
