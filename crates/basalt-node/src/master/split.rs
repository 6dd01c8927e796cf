//! Splits and merges, on request and by size (HBase's SplitTableRegionProcedure and
//! MergeTableRegionsProcedure): the master decides, the region server closes the parents
//! and opens the new regions, and one catalog commit switches.
//!
//! A split or merge holds its table's procedure lock throughout; the catalog lock only to
//! read the table's entry, to allocate region ids and to commit. Closing the parents (which
//! waits for a running compaction and flushes) holds no catalog lock, so DDL of other
//! tables goes on meanwhile.
//!
//! # How a split or merge stays atomic
//! 1. The parents close: writes and new reads get `NotServingRegion` (and are retried on the
//!    new regions), compactions stop, the memstores are flushed.
//! 2. The new regions' directories and manifests are written: their stores list the
//!    parents' files as references. They are opened, but serve nothing yet.
//! 3. One catalog commit lists the new regions online and the parents retired. This is the
//!    switch: a crash before it leaves the parents serving (the new directories are removed
//!    as orphans at the next open), a crash after it leaves the new regions serving.
//! 4. The new regions replace the parents in the table and a compaction rewrites their
//!    references. The janitor then drops the parents from the catalog and deletes their
//!    files.

use std::collections::BTreeSet;
use std::sync::Arc;

use basalt_model::bytes_fmt::to_string_binary;
use basalt_model::{Error, Result, TableName};
use bytes::Bytes;

use super::{Master, TableState};
use crate::catalog::{Catalog, RegionState};
use basalt_storage::region::{join_handed_files, HandedFiles, Region, RegionInfo};

impl Master {
    /// `split 'table'[, 'key']`: with a key, splits the region holding it there; without,
    /// splits every region at its split point (regions with too little data stay whole).
    ///
    /// # Errors
    /// `TableNotFound`, `TableNotEnabled`; `DoNotRetry` when splits are disabled for the
    /// table, the key is a region's start key, or a region still reads its parent's files.
    pub fn split_table(&self, name: &TableName, key: Option<&[u8]>) -> Result<()> {
        let state = self.state(name)?;
        if let Some(k) = key {
            let region = state
                .region_where(|s| s <= k)?
                .ok_or_else(|| self.why_not_serving(name))?;
            self.split(&state, &region, Some(Bytes::copy_from_slice(k)))?;
            return Ok(());
        }
        let regions = state.online();
        for region in regions {
            self.split(&state, &region, None)?;
        }
        Ok(())
    }

    /// `split 'region name'[, 'key']`: the region is named by its full name or its encoded
    /// name.
    ///
    /// # Errors
    /// `UnknownRegion`; otherwise as [`Master::split_table`].
    pub fn split_region(&self, region: &[u8], key: Option<&[u8]>) -> Result<()> {
        let (state, region) = self.find_region(region)?;
        self.split(&state, &region, key.map(Bytes::copy_from_slice))
            .map(drop)
    }

    /// `merge_region 'a', 'b'[, ...]`: merges adjacent regions of one table into one. Regions
    /// are named by full or encoded name. `force` is accepted for the shell's sake; regions
    /// must be adjacent either way (a table has no holes to close).
    ///
    /// # Errors
    /// `UnknownRegion`; `MergeRegion` for fewer than two regions, regions of different
    /// tables, non-adjacent regions or a region that still reads its parent's files;
    /// `DoNotRetry` when merges are disabled for the table.
    pub fn merge_regions(&self, regions: &[&[u8]], force: bool) -> Result<()> {
        let found = regions
            .iter()
            .map(|r| self.find_region(r))
            .collect::<Result<Vec<_>>>()?;
        let Some((state, _)) = found.first() else {
            return Err(Error::MergeRegion(
                "Need at least two regions to merge".into(),
            ));
        };
        let state = Arc::clone(state);
        if found.iter().any(|(s, _)| !Arc::ptr_eq(s, &state)) {
            return Err(Error::MergeRegion(
                "Cannot merge regions of different tables".into(),
            ));
        }
        let parents = found.into_iter().map(|(_, r)| r).collect();
        self.merge(&state, parents, force)
    }

    /// The online region named `name` (full region name or encoded name).
    pub(crate) fn find_region(&self, name: &[u8]) -> Result<(Arc<TableState>, Arc<Region>)> {
        let tables: Vec<Arc<TableState>> = self.tables.read().values().cloned().collect();
        for state in &tables {
            for r in state.online() {
                let info = r.info();
                if info.region_name(&state.name)[..] == *name
                    || info.encoded_name(&state.name).as_bytes() == name
                {
                    return Ok((Arc::clone(state), r));
                }
            }
        }
        Err(Error::UnknownRegion(to_string_binary(name)))
    }

    /// The online region with id `id`, and its table.
    pub(super) fn find_region_by_id(&self, id: u64) -> Option<(Arc<TableState>, Arc<Region>)> {
        let tables: Vec<Arc<TableState>> = self.tables.read().values().cloned().collect();
        tables.into_iter().find_map(|state| {
            let r = state.online().into_iter().find(|r| r.info().id == id)?;
            Some((state, r))
        })
    }

    /// Splits `region` at `key`, or at its split point. False when there was nothing to
    /// split (no key given and no split point).
    pub(super) fn split(
        &self,
        state: &Arc<TableState>,
        region: &Arc<Region>,
        key: Option<Bytes>,
    ) -> Result<bool> {
        let _procedure = state.procedure.lock();
        let entry = self.catalog.lock().1.table(&state.name)?.clone();
        let name = region.name();
        if !entry.enabled {
            return Err(Error::TableNotEnabled(state.name.to_string()));
        }
        let online = entry.regions.iter().any(|r| r.id == region.info().id);
        if !online || region.is_closed() {
            return Err(Error::NotServingRegion(name));
        }
        if !entry.descriptor.split_enabled {
            return Err(Error::DoNotRetry(format!(
                "Split region {name} failed due to split is disabled for the table"
            )));
        }
        if region.has_references() {
            return Err(Error::DoNotRetry(format!(
                "Split region {name} failed: it still reads its parent's files; compact it first"
            )));
        }
        let key = match key {
            Some(k) => check_split_key(region.info(), k, &name)?,
            None => match region.split_point()? {
                Some(k) => k,
                None => return Ok(false),
            },
        };
        let started = std::time::Instant::now();
        self.rs.close_region(region)?;
        let info = region.info();
        let (files, flushed) = region.handed_files();
        let successors = |c: &mut Catalog, now: i64| {
            let a = RegionInfo {
                id: c.allocate_region_id(now),
                start_key: info.start_key.clone(),
                end_key: key.clone(),
            };
            let b = RegionInfo {
                id: c.allocate_region_id(now),
                start_key: key.clone(),
                end_key: info.end_key.clone(),
            };
            vec![(a, files.clone()), (b, files.clone())]
        };
        let parents = [Arc::clone(region)];
        self.replace_regions(state, &parents, RegionState::Split, flushed, successors)?;
        region.record_event("split", 0, started);
        Ok(true)
    }

    /// Merges `parents` (adjacent regions of `state`'s table) into one region.
    fn merge(
        &self,
        state: &Arc<TableState>,
        mut parents: Vec<Arc<Region>>,
        force: bool,
    ) -> Result<()> {
        let _procedure = state.procedure.lock();
        let entry = self.catalog.lock().1.table(&state.name)?.clone();
        parents.sort_by(|a, b| a.info().start_key.cmp(&b.info().start_key));
        check_merge(&entry, &parents, force)?;
        let started = std::time::Instant::now();
        let mut closed: Vec<&Arc<Region>> = Vec::new();
        for r in &parents {
            if let Err(e) = self.rs.close_region(r) {
                closed.iter().for_each(|c| self.rs.reopen_region(c));
                return Err(e);
            }
            closed.push(r);
        }
        let handed: Vec<(HandedFiles, u64)> = parents.iter().map(|r| r.handed_files()).collect();
        let flushed = handed.iter().map(|h| h.1).max().unwrap_or(0);
        let files = join_handed_files(handed.into_iter().map(|h| h.0).collect());
        let (first, last) = (parents[0].info(), parents[parents.len() - 1].info());
        let successors = |c: &mut Catalog, now: i64| {
            let merged = RegionInfo {
                id: c.allocate_region_id(now),
                start_key: first.start_key.clone(),
                end_key: last.end_key.clone(),
            };
            vec![(merged, files.clone())]
        };
        self.replace_regions(state, &parents, RegionState::Merged, flushed, successors)?;
        parents[0].record_event("merge", 0, started);
        Ok(())
    }

    /// Steps 2–4 of a split or merge (see the module's comment) for closed `parents`; on
    /// failure they serve again, unless the catalog may have switched (then they stay closed
    /// until the database is reopened, which settles it).
    ///
    /// The new regions' ids are taken from the catalog in memory before their directories
    /// are made; the commit that lists them also records the raised id counter. Ids taken
    /// by a split that then fails are skipped, never reused.
    fn replace_regions(
        &self,
        state: &Arc<TableState>,
        parents: &[Arc<Region>],
        retired_as: RegionState,
        flushed: u64,
        successors: impl FnOnce(&mut Catalog, i64) -> Vec<(RegionInfo, HandedFiles)>,
    ) -> Result<()> {
        let now = self.env.now_ms();
        let made = successors(&mut self.catalog.lock().1, now);
        let successor_ids: Vec<u64> = made.iter().map(|(i, _)| i.id).collect();
        let opened = match self.create_successors(state, parents, &made, flushed) {
            Ok(r) => r,
            Err(e) => {
                parents.iter().for_each(|p| self.rs.reopen_region(p));
                return Err(e);
            }
        };
        let gone: BTreeSet<u64> = parents.iter().map(|p| p.info().id).collect();
        let mut g = self.catalog.lock();
        let mut next = g.1.clone();
        let infos: Vec<RegionInfo> = parents.iter().map(|p| p.info().clone()).collect();
        let new: Vec<RegionInfo> = made.iter().map(|(i, _)| i.clone()).collect();
        next.table_mut(&state.name)?
            .replace_regions(&infos, &new, retired_as, now);
        if let Err(e) = g.0.commit(&self.env, &next) {
            // The new version may still reach the disk. Committing the old document again
            // makes the outcome certain; only then may the parents serve again.
            let previous = g.1.clone();
            if g.0.commit(&self.env, &previous).is_ok() {
                drop(g);
                self.discard_successors(state, &opened, &successor_ids);
                parents.iter().for_each(|p| self.rs.reopen_region(p));
            }
            return Err(e);
        }
        g.1 = next;
        self.refresh_meta(&g.1);
        // Under the catalog lock, so the janitor never sees the parents retired and their
        // successors not yet listed.
        self.install(state, &gone, opened);
        Ok(())
    }

    /// Writes and opens the regions that take over from `parents`; removes what it made when
    /// any step fails.
    fn create_successors(
        &self,
        state: &TableState,
        parents: &[Arc<Region>],
        made: &[(RegionInfo, HandedFiles)],
        flushed: u64,
    ) -> Result<Vec<Arc<Region>>> {
        let desc = parents[0].table();
        let tdir = self.table_dir(&state.name);
        let mut opened = Vec::new();
        for (info, files) in made {
            let dir = tdir.join(info.id.to_string());
            let r = Region::create_successor(&self.env, &dir, info.id, files, flushed)
                .and_then(|()| self.rs.open_region(&dir, info, &desc));
            match r {
                Ok(r) => opened.push(r),
                Err(e) => {
                    let ids: Vec<u64> = made.iter().map(|(i, _)| i.id).collect();
                    self.discard_successors(state, &opened, &ids);
                    return Err(e);
                }
            }
        }
        Ok(opened)
    }

    /// Closes new regions that will not serve and removes their directories.
    fn discard_successors(&self, state: &TableState, opened: &[Arc<Region>], ids: &[u64]) {
        for r in opened {
            if let Err(e) = self.rs.close_region(r) {
                tracing::warn!(region = %r.name(), error = %e, "closing a region that will not serve");
            }
        }
        let tdir = self.table_dir(&state.name);
        for id in ids {
            if let Err(e) = self.env.remove_dir_all(&tdir.join(id.to_string())) {
                tracing::warn!(error = %e, "leaving a region directory behind");
            }
        }
    }

    /// Puts `new` in the place of the regions `gone` and starts their compactions.
    fn install(&self, state: &TableState, gone: &BTreeSet<u64>, new: Vec<Arc<Region>>) {
        {
            let regions = &mut state.regions.write().online;
            let at = regions
                .iter()
                .position(|r| gone.contains(&r.info().id))
                .unwrap_or(regions.len());
            regions.retain(|r| !gone.contains(&r.info().id));
            regions.splice(at..at, new.iter().cloned());
        }
        for r in &new {
            self.rs.request_compaction(r);
        }
    }
}

/// Checks that sorted `parents` may merge (HBase's messages).
fn check_merge(
    entry: &crate::catalog::TableEntry,
    parents: &[Arc<Region>],
    force: bool,
) -> Result<()> {
    let infos: Vec<&RegionInfo> = parents.iter().map(|r| r.info()).collect();
    check_merge_infos(entry, &infos, force, |i| {
        let r = &parents[i];
        if r.is_closed() {
            Err(Error::NotServingRegion(r.name()))
        } else {
            Ok(r.has_references())
        }
    })
}

/// The checks of a merge of sorted `parents` that need only the catalog; `state(i)` says
/// whether parent `i` still reads its own parent's files (or why it cannot take part).
pub(crate) fn check_merge_infos(
    entry: &crate::catalog::TableEntry,
    parents: &[&RegionInfo],
    force: bool,
    state: impl Fn(usize) -> Result<bool>,
) -> Result<()> {
    let table = entry.descriptor.table_name();
    let names: Vec<String> = parents
        .iter()
        .map(|r| r.region_name_string(&table))
        .collect();
    let listed = names.join(", ");
    if parents.len() < 2 || parents.windows(2).any(|w| w[0].id == w[1].id) {
        return Err(Error::MergeRegion(format!(
            "Unable to merge regions {listed}: at least two different regions are needed"
        )));
    }
    if !entry.enabled {
        return Err(Error::TableNotEnabled(table.to_string()));
    }
    if !entry.descriptor.merge_enabled {
        return Err(Error::DoNotRetry(format!(
            "Unable to merge regions {listed}: merge is disabled for table {table}"
        )));
    }
    for (i, (r, n)) in parents.iter().zip(&names).enumerate() {
        if !entry.regions.iter().any(|e| e.id == r.id) {
            return Err(Error::NotServingRegion(n.clone()));
        }
        if state(i)? {
            return Err(Error::MergeRegion(format!(
                "Unable to merge regions {listed} because region {n} still reads its parent's files; compact it first"
            )));
        }
    }
    if let Some(i) = parents
        .windows(2)
        .position(|w| w[0].end_key != w[1].start_key)
    {
        return Err(Error::MergeRegion(format!(
            "Unable to merge non-adjacent regions {}, {} where forcible = {force}",
            names[i],
            names[i + 1]
        )));
    }
    Ok(())
}

/// Checks a requested split key against the region (HBase's messages).
pub(crate) fn check_split_key(info: &RegionInfo, key: Bytes, name: &str) -> Result<Bytes> {
    if key == info.start_key {
        return Err(Error::DoNotRetry(format!(
            "Split row is equal to startkey: {}",
            to_string_binary(&key)
        )));
    }
    if !info.contains(&key) {
        return Err(Error::DoNotRetry(format!(
            "Split row is not inside region key range splitKey:{} region: {name}",
            to_string_binary(&key)
        )));
    }
    Ok(key)
}
