//! The active master of a cluster: the catalog on shared storage, and where every region is
//! open (HBase's `HMaster` with its `AssignmentManager`).
//!
//! # Assignment
//! A region's assignment (server, open epoch) is committed to the catalog *before* the server
//! is asked to open it, with the epoch one above the last: the catalog always names every
//! server that may hold a region, and a server told to open at an epoch it has seen is
//! stale. A region whose open fails is committed as unassigned and assigned again by
//! [`ClusterMaster::assign_all`]. A move closes the region (flushed) on its server first, so
//! its new server opens it with nothing to replay.
//!
//! # Fencing
//! Every catalog commit carries the master's epoch. A new master commits a version first
//! thing ([`ClusterMaster::take_over`]), so a deposed master's next commit finds its version
//! taken and fails: it cannot undo what its successor decided.
//!
//! # Lock order
//! 0. `procedure`: one DDL, assignment, move or balance at a time. Region servers are called
//!    under it alone.
//! 1. `catalog`: held to read or commit it, never across a call to a region server.
//! 2. `seen`: a leaf.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use basalt_model::{Error, Result, TableDescriptor, TableName};
use basalt_storage::env::Env;
use basalt_storage::manifest::{self, VersionedFile};
use basalt_storage::region::{Region, RegionInfo};
use bytes::Bytes;
use parking_lot::Mutex;

use super::{plan_moves, ServerDirectory};
use crate::catalog::{table_key, Catalog, RegionAssignment, TableEntry};
use crate::coordination::{ClusterInfo, Coordinator};

/// How many times a new master reloads the catalog when its first commit collides with
/// the commit of a master going away.
const TAKEOVER_ATTEMPTS: usize = 5;

/// The active master of a cluster.
#[derive(Debug)]
pub struct ClusterMaster {
    pub(super) name: String,
    pub(super) root: PathBuf,
    pub(super) env: Env,
    pub(super) coordinator: Arc<dyn Coordinator>,
    pub(super) servers: Arc<dyn ServerDirectory>,
    pub(super) epoch: u64,
    /// Lock order 0.
    pub(super) procedure: Mutex<()>,
    /// Lock order 1.
    pub(super) catalog: Mutex<(VersionedFile, Catalog)>,
    /// Servers known to this master: seen live since it took over, or found dead by a
    /// recovery (a leaf).
    pub(super) seen: Mutex<std::collections::BTreeSet<String>>,
    /// Recoveries of dead servers (its locks are leaves).
    pub(super) recovery: super::recovery::RecoveryStats,
    /// `hbase.master.maxclockskew`, ms.
    pub(super) max_clock_skew_ms: std::sync::atomic::AtomicU64,
    /// Servers whose clock was checked: accepted, or refused (a leaf).
    pub(super) clocks: Mutex<BTreeMap<String, bool>>,
}

impl ClusterMaster {
    /// Takes over as the active master with `epoch` (won in the coordinator's election):
    /// loads the catalog at `root` (making one for a new cluster), checks it is the cluster
    /// the coordinator knows, publishes it, and commits a version carrying `epoch`.
    ///
    /// # Errors
    /// `DoNotRetry` when the storage holds another cluster than the coordinator's, or the
    /// catalog carries a higher epoch (this master was deposed); `Io`.
    pub fn take_over(
        root: &Path,
        storage: &str,
        env: &Env,
        coordinator: Arc<dyn Coordinator>,
        servers: Arc<dyn ServerDirectory>,
        name: &str,
        epoch: u64,
    ) -> Result<ClusterMaster> {
        let dir = root.join("catalog");
        for _ in 0..TAKEOVER_ATTEMPTS {
            let (mut vf, catalog) = Catalog::load(env, &dir)?;
            let mut catalog = catalog.unwrap_or_default();
            let wanted = ClusterInfo {
                cluster_id: catalog.cluster_id.clone(),
                storage: storage.to_owned(),
            };
            let published = coordinator.publish_cluster(&wanted)?;
            if published != wanted {
                return Err(Error::DoNotRetry(format!(
                    "the coordinator serves cluster {:?} on {}, but {storage} holds cluster {:?}",
                    published.cluster_id, published.storage, wanted.cluster_id
                )));
            }
            if catalog.master_epoch > epoch {
                return Err(deposed(epoch, catalog.master_epoch));
            }
            catalog.master_epoch = epoch;
            match vf.commit(env, &catalog) {
                Ok(()) => {
                    return Ok(ClusterMaster {
                        name: name.to_owned(),
                        root: root.to_owned(),
                        env: env.clone(),
                        coordinator,
                        servers,
                        epoch,
                        procedure: Mutex::new(()),
                        catalog: Mutex::new((vf, catalog)),
                        seen: Mutex::default(),
                        recovery: super::recovery::RecoveryStats::default(),
                        max_clock_skew_ms: std::sync::atomic::AtomicU64::new(
                            u64::try_from(super::DEFAULT_MAX_CLOCK_SKEW.as_millis())
                                .unwrap_or(u64::MAX),
                        ),
                        clocks: Mutex::default(),
                    })
                }
                Err(e) if manifest::is_fenced(&e) => {} // the old one's: reload
                Err(e) => return Err(e),
            }
        }
        Err(Error::DoNotRetry(format!(
            "the catalog in {} kept changing while master {name} took over",
            dir.display()
        )))
    }

    /// This master's epoch.
    #[must_use]
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// This master's name.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The cluster's id.
    #[must_use]
    pub fn cluster_id(&self) -> String {
        self.catalog.lock().1.cluster_id.clone()
    }

    /// A copy of the catalog now.
    #[must_use]
    pub fn catalog(&self) -> Catalog {
        self.catalog.lock().1.clone()
    }

    /// The catalog and its version, unless its version is still `seen`.
    pub(super) fn catalog_if_changed(&self, seen: u64) -> Option<(u64, Catalog)> {
        let g = self.catalog.lock();
        (g.0.version() != seen).then(|| (g.0.version(), g.1.clone()))
    }

    /// Live region servers that may take regions: registered, not decommissioned, and with
    /// a clock close enough to this master's.
    ///
    /// # Errors
    /// `Io` reaching the coordinator.
    pub fn eligible_servers(&self) -> Result<Vec<String>> {
        let (live, _) = self.coordinator.live_servers()?;
        let out = self.catalog.lock().1.decommissioned.clone();
        Ok(live
            .into_iter()
            .filter(|s| !out.contains(s) && self.clock_accepted(s))
            .collect())
    }

    /// Sets how far a region server's clock may be from this master's
    /// (`hbase.master.maxclockskew`); a server further off is refused.
    pub fn set_max_clock_skew(&self, skew: std::time::Duration) {
        let ms = u64::try_from(skew.as_millis()).unwrap_or(u64::MAX);
        self.max_clock_skew_ms
            .store(ms, std::sync::atomic::Ordering::Relaxed);
    }

    /// Whether `server`'s clock is close enough to this master's, checked the first time
    /// (a server that cannot be reached is checked again next time).
    pub(super) fn clock_accepted(&self, server: &str) -> bool {
        if let Some(ok) = self.clocks.lock().get(server) {
            return *ok;
        }
        let skew = self
            .max_clock_skew_ms
            .load(std::sync::atomic::Ordering::Relaxed);
        let checked = self
            .servers
            .connect(server)
            .and_then(|s| s.check_clock(self.epoch, self.env.now_ms(), skew));
        let ok = match checked {
            Ok(()) => true,
            Err(Error::DoNotRetry(why)) => {
                tracing::error!(server, %why, "refused a region server");
                false
            }
            Err(e) => {
                tracing::warn!(server, error = %e, "could not check a region server's clock; trying again");
                return false;
            }
        };
        self.clocks.lock().insert(server.to_owned(), ok);
        ok
    }

    /// Changes the catalog all or nothing: `edit` works on a copy carrying this master's
    /// epoch, which is committed and only then replaces the catalog in memory.
    pub(super) fn edit<R>(&self, edit: impl FnOnce(&mut Catalog) -> Result<R>) -> Result<R> {
        let mut g = self.catalog.lock();
        let mut next = g.1.clone();
        next.master_epoch = self.epoch;
        let out = edit(&mut next)?;
        match g.0.commit(&self.env, &next) {
            Ok(()) => {
                g.1 = next;
                Ok(out)
            }
            // Another master committed since this one loaded the catalog: it took over.
            Err(e) if manifest::is_fenced(&e) => Err(Error::DoNotRetry(format!(
                "master {} (epoch {}) was deposed: {e}",
                self.name, self.epoch
            ))),
            Err(e) => Err(e),
        }
    }

    /// Creates a table: its empty regions on storage, then the catalog entry, then the
    /// regions are assigned across the eligible servers.
    ///
    /// # Errors
    /// `TableExists`, `NamespaceNotFound`, `IllegalArgument` for bad split keys or schema;
    /// `Io`.
    pub fn create_table(&self, desc: TableDescriptor, split_keys: &[Bytes]) -> Result<()> {
        desc.validate()?;
        let name = desc.table_name();
        let _p = self.procedure.lock();
        let regions = {
            let mut g = self.catalog.lock();
            g.1.namespace(name.namespace())?;
            if g.1.tables.contains_key(&table_key(&name)) {
                return Err(Error::TableExists(name.to_string()));
            }
            g.1.new_regions(split_keys, self.env.now_ms())?
        };
        let tdir = self.table_dir(&name);
        for info in &regions {
            Region::create_empty(&self.env, &tdir.join(info.id.to_string()), info.id)?;
        }
        basalt_storage::region::repair::write_table_info(&self.env, &tdir, &desc)?;
        let ids: Vec<u64> = regions.iter().map(|r| r.id).collect();
        self.edit(|c| {
            c.tables.insert(
                table_key(&name),
                TableEntry {
                    descriptor: desc,
                    enabled: true,
                    regions,
                    retired: Vec::new(),
                },
            );
            Ok(())
        })?;
        self.assign_locked(&ids)
    }

    pub(super) fn table_dir(&self, t: &TableName) -> PathBuf {
        self.root
            .join("data")
            .join(t.namespace())
            .join(t.qualifier())
    }

    /// Assigns `ids` (not open anywhere) to the eligible servers with the fewest regions:
    /// one catalog commit for all, then each server opens its regions; a region whose open
    /// fails is committed as unassigned.
    pub(super) fn assign_locked(&self, ids: &[u64]) -> Result<()> {
        // A region still open on a live server (its close failed) is not opened twice.
        let (live, _) = self.coordinator.live_servers()?;
        let ids: Vec<u64> = ids
            .iter()
            .copied()
            .filter(|id| self.assigned(*id).is_none_or(|s| !live.contains(&s)))
            .collect();
        if ids.is_empty() {
            return Ok(());
        }
        let eligible = self.eligible_servers()?;
        if eligible.is_empty() {
            tracing::warn!(regions = ids.len(), "no region server to assign regions to");
            return Ok(());
        }
        let plan = self.edit(|c| {
            let mut counts = region_counts(c, &eligible);
            let mut plan = Vec::new();
            for &id in &ids {
                let Some(server) = fewest(&counts) else {
                    break;
                };
                *counts.entry(server.clone()).or_default() += 1;
                let a = c.assignments.entry(id).or_default();
                a.server = Some(server.clone());
                a.open_epoch += 1;
                plan.push((id, server.clone(), a.open_epoch));
            }
            Ok(plan)
        })?;
        let failed: Vec<u64> = plan
            .iter()
            .filter(|(id, server, epoch)| self.open_on(*id, server, *epoch).is_err())
            .map(|(id, _, _)| *id)
            .collect();
        self.mark_unassigned(&failed)
    }

    /// Asks `server` to open region `id` at `epoch`; logs a failure.
    pub(super) fn open_on(&self, id: u64, server: &str, epoch: u64) -> Result<()> {
        let (desc, info) = self.region(id)?;
        let r = self
            .servers
            .connect(server)
            .and_then(|s| s.open_region(self.epoch, &desc, &info, epoch));
        if let Err(e) = &r {
            tracing::warn!(region = id, server, error = %e, "region failed to open; it stays unassigned until assigned again");
        }
        r
    }

    /// Asks `server` to close region `id` (flushed), carrying this master's epoch.
    pub(super) fn close_on(&self, server: &str, id: u64) -> Result<()> {
        self.servers.connect(server)?.close_region(self.epoch, id)
    }

    pub(super) fn mark_unassigned(&self, ids: &[u64]) -> Result<()> {
        if ids.is_empty() {
            return Ok(());
        }
        self.edit(|c| {
            for id in ids {
                if let Some(a) = c.assignments.get_mut(id) {
                    a.server = None;
                }
            }
            Ok(())
        })
    }

    /// The table descriptor and region info of region `id`.
    pub(super) fn region(&self, id: u64) -> Result<(TableDescriptor, RegionInfo)> {
        let g = self.catalog.lock();
        let found = enabled_or_not(&g.1)
            .find(|(info, _)| info.id == id)
            .map(|(info, e)| (e.descriptor.clone(), info.clone()));
        found.ok_or_else(|| Error::UnknownRegion(format!("no region with id {id}")))
    }

    /// Region `id`'s table must be enabled for it to be moved or assigned.
    pub(super) fn check_enabled(&self, id: u64) -> Result<()> {
        let g = self.catalog.lock();
        let disabled = enabled_or_not(&g.1)
            .find(|(info, _)| info.id == id)
            .map(|(_, e)| (!e.enabled).then(|| e.descriptor.table_name()));
        match disabled {
            None => Err(Error::UnknownRegion(format!("no region with id {id}"))),
            Some(Some(t)) => Err(Error::TableNotEnabled(t.to_string())),
            Some(None) => Ok(()),
        }
    }

    /// The region holding `row` of `table`, and the server it is assigned to.
    ///
    /// # Errors
    /// `TableNotFound`, `TableNotEnabled`.
    pub fn locate(&self, table: &TableName, row: &[u8]) -> Result<(RegionInfo, Option<String>)> {
        self.catalog.lock().1.locate(table, row)
    }

    /// Moves region `id` to `dest` (or, without one, to the eligible server with the fewest
    /// regions): closed (flushed) where it is, committed to its new server at the next
    /// epoch, opened there.
    ///
    /// # Errors
    /// `UnknownRegion`, `TableNotEnabled`; `DoNotRetry` for a destination that is not an
    /// eligible server; the close failed (the region stays where it was); the open failed
    /// (the region is unassigned, and assigned again by the next `assign_all`).
    pub fn move_region(&self, id: u64, dest: Option<&str>) -> Result<()> {
        let _p = self.procedure.lock();
        self.move_locked(id, dest)
    }

    fn move_locked(&self, id: u64, dest: Option<&str>) -> Result<()> {
        self.check_enabled(id)?;
        let eligible = self.eligible_servers()?;
        let from = self.assigned(id);
        let to = match dest {
            Some(d) if eligible.iter().any(|s| s == d) => d.to_owned(),
            Some(d) => {
                return Err(Error::DoNotRetry(format!(
                    "{d} is not a live region server that takes regions"
                )))
            }
            None => {
                let mut counts = region_counts(&self.catalog(), &eligible);
                if let Some(f) = &from {
                    counts.remove(f);
                }
                fewest(&counts).ok_or_else(|| {
                    Error::DoNotRetry("no other region server to move the region to".to_owned())
                })?
            }
        };
        if from.as_deref() == Some(to.as_str()) {
            return Ok(());
        }
        if let Some(from) = &from {
            self.close_on(from, id)?;
        }
        let committed = self.edit(|c| {
            let a = c.assignments.entry(id).or_default();
            a.server = Some(to.clone());
            a.open_epoch += 1;
            Ok(a.open_epoch)
        });
        let epoch = match committed {
            Ok(epoch) => epoch,
            Err(e) => {
                // The catalog still names `from`: the region must serve there again.
                if let Some(from) = &from {
                    let at = self
                        .catalog()
                        .assignments
                        .get(&id)
                        .map_or(0, |a| a.open_epoch);
                    let _ = self.open_on(id, from, at);
                }
                return Err(e);
            }
        };
        if let Err(e) = self.open_on(id, &to, epoch) {
            self.mark_unassigned(&[id])?;
            return Err(e);
        }
        Ok(())
    }

    pub(super) fn assigned(&self, id: u64) -> Option<String> {
        let g = self.catalog.lock();
        g.1.assignments.get(&id).and_then(|a| a.server.clone())
    }

    /// Closes region `id` where it is open and records it unassigned (`unassign`).
    ///
    /// # Errors
    /// `UnknownRegion`; the close failed.
    pub fn unassign(&self, id: u64) -> Result<()> {
        let _p = self.procedure.lock();
        self.region(id)?;
        if let Some(server) = self.assigned(id) {
            self.close_on(&server, id)?;
        }
        self.mark_unassigned(&[id])
    }

    /// Assigns region `id` if it is not open on a live server (`assign`).
    ///
    /// # Errors
    /// `UnknownRegion`, `TableNotEnabled`; `Io`.
    pub fn assign(&self, id: u64) -> Result<()> {
        let _p = self.procedure.lock();
        self.check_enabled(id)?;
        let (live, _) = self.coordinator.live_servers()?;
        match self.assigned(id) {
            Some(s) if live.contains(&s) => Ok(()),
            _ => self.assign_locked(&[id]),
        }
    }

    /// Runs the balancer once: moves regions until every eligible server holds within one
    /// region of the others. Returns whether it ran (not when switched off).
    ///
    /// # Errors
    /// A move failed (the moves before it stand).
    pub fn balance(&self) -> Result<bool> {
        let _p = self.procedure.lock();
        if !self.catalog.lock().1.balancer_on {
            return Ok(false);
        }
        let eligible = self.eligible_servers()?;
        let c = self.catalog();
        let mut by_server: BTreeMap<String, Vec<u64>> =
            eligible.iter().map(|s| (s.clone(), Vec::new())).collect();
        for (info, _) in enabled_regions(&c) {
            let server = c.assignments.get(&info.id).and_then(|a| a.server.as_ref());
            if let Some(list) = server.and_then(|s| by_server.get_mut(s)) {
                list.push(info.id);
            }
        }
        for m in plan_moves(&by_server) {
            self.move_locked(m.region, Some(&m.to))?;
        }
        Ok(true)
    }

    /// Turns the balancer on or off; returns the previous setting (`balance_switch`).
    ///
    /// # Errors
    /// `Io` committing the catalog.
    pub fn set_balancer(&self, on: bool) -> Result<bool> {
        let _p = self.procedure.lock();
        self.edit(|c| Ok(std::mem::replace(&mut c.balancer_on, on)))
    }

    /// Decommissions `servers`: no region is assigned to them any more, and with `offload`
    /// their regions move to the other servers first (each closed, flushed, and opened
    /// elsewhere: clients see retries, not errors).
    ///
    /// # Errors
    /// `DoNotRetry` when it would leave no server to take regions; a move failed.
    pub fn decommission(&self, servers: &[String], offload: bool) -> Result<()> {
        let _p = self.procedure.lock();
        let remaining: Vec<String> = self
            .eligible_servers()?
            .into_iter()
            .filter(|s| !servers.contains(s))
            .collect();
        if remaining.is_empty() {
            return Err(Error::DoNotRetry(
                "decommissioning these servers would leave none to serve regions".to_owned(),
            ));
        }
        self.edit(|c| {
            c.decommissioned.extend(servers.iter().cloned());
            Ok(())
        })?;
        if offload {
            let c = self.catalog();
            let doomed: Vec<u64> = enabled_regions(&c)
                .filter(|(info, _)| {
                    let a = c.assignments.get(&info.id);
                    a.and_then(|a| a.server.as_ref())
                        .is_some_and(|s| servers.contains(s))
                })
                .map(|(info, _)| info.id)
                .collect();
            for id in doomed {
                self.move_locked(id, None)?;
            }
        }
        Ok(())
    }

    /// Takes a decommissioned server back (`recommission_regionserver`); the balancer gives
    /// it regions again.
    ///
    /// # Errors
    /// `Io` committing the catalog.
    pub fn recommission(&self, server: &str) -> Result<()> {
        let _p = self.procedure.lock();
        self.edit(|c| {
            c.decommissioned.remove(server);
            Ok(())
        })
    }

    /// Decommissioned servers, sorted.
    #[must_use]
    pub fn decommissioned(&self) -> Vec<String> {
        self.catalog
            .lock()
            .1
            .decommissioned
            .iter()
            .cloned()
            .collect()
    }

    /// Gives up being the active master (a clean stop): a backup takes over at once.
    ///
    /// # Errors
    /// `Io` reaching the coordinator.
    pub fn stop(&self) -> Result<()> {
        let _p = self.procedure.lock();
        self.coordinator.resign(&self.name)
    }
}

fn deposed(mine: u64, theirs: u64) -> Error {
    Error::DoNotRetry(format!(
        "a master with epoch {theirs} has committed the catalog; this master's epoch is {mine}: it was deposed"
    ))
}

/// Every region of every enabled table, with its table's entry.
pub(super) fn enabled_regions(c: &Catalog) -> impl Iterator<Item = (&RegionInfo, &TableEntry)> {
    enabled_or_not(c).filter(|(_, e)| e.enabled)
}

pub(super) fn enabled_or_not(c: &Catalog) -> impl Iterator<Item = (&RegionInfo, &TableEntry)> {
    c.tables
        .values()
        .flat_map(|e| e.regions.iter().map(move |r| (r, e)))
}

/// The server with the fewest regions, first by name among equals.
fn fewest(counts: &BTreeMap<String, usize>) -> Option<String> {
    counts
        .iter()
        .min_by(|a, b| a.1.cmp(b.1).then(a.0.cmp(b.0)))
        .map(|(s, _)| s.clone())
}

/// How many regions each of `servers` holds now.
fn region_counts(c: &Catalog, servers: &[String]) -> BTreeMap<String, usize> {
    let mut counts: BTreeMap<String, usize> = servers.iter().map(|s| (s.clone(), 0)).collect();
    for RegionAssignment { server, .. } in c.assignments.values() {
        if let Some(n) = server.as_ref().and_then(|s| counts.get_mut(s)) {
            *n += 1;
        }
    }
    counts
}
