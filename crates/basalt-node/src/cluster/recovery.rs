//! Recovery of dead region servers (HBase's `ServerCrashProcedure`), run by the master's
//! [`ClusterMaster::assign_all`] whenever the live servers change, and every few seconds.
//!
//! # Detection
//! A server is dead when it is not registered in the coordinator and it still holds
//! assignments in the catalog or a log with segments on storage. The log directories are
//! listed *before* the live servers, and a region server registers before it creates its
//! log: so a log found belongs to a registered server or a dead one, never to one starting.
//!
//! # Order, per dead server
//! 1. It is recorded in the catalog's `dead_servers` (the page shows it; a new master
//!    resumes it).
//! 2. Its log directory is fenced (`Env::fence_logs`): it can acknowledge no more writes.
//!    It could acknowledge none since its lease ran out anyway; the fence also covers a
//!    server paused in the middle of a write.
//! 3. Its log is split into the recovered edits of each region (`wal::split`).
//! 4. The log's records are deleted. Its fences stay for good, and so does the directory's
//!    fence marker: the server, should it wake, can neither write on in a segment nor
//!    create one that a split did not read.
//! 5. Its regions are assigned to live servers. Each new server commits the region's next
//!    manifest version as it opens it (so the dead server's flush or compaction cannot
//!    commit), replays the recovered edits, flushes, and only then serves.
//! 6. Once no region is left to it, it leaves `dead_servers`.
//!
//! Every step is idempotent, so a master that dies part-way leaves the rest to its
//! successor, which runs them all again.
//!
//! # Regions lost in transition
//! A region the catalog assigns to a live server that does not report it open (the master
//! died between committing an assignment and the open, or during a split or merge) is
//! assigned again.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

use basalt_model::Result;
use basalt_storage::env::FENCE_MARKER;
use basalt_storage::failpoint::fail_point;
use basalt_storage::wal::split::{read_segment, recovered_edits_path, write_recovered_edits};

use super::master::{enabled_or_not, enabled_regions};
use super::ClusterMaster;
use crate::regionserver::log_segments;

/// The master's counts of recoveries.
#[derive(Debug, Default)]
pub struct RecoveryStats {
    /// Dead servers whose recovery finished since this master took over.
    pub completed: AtomicU64,
    /// Log splits that failed (retried at the next round).
    pub failed_splits: AtomicU64,
    /// How long the last recovery took (found dead to every region reassigned), ms.
    pub last_ms: AtomicU64,
}

impl RecoveryStats {
    fn finished(&self, ms: u64) {
        self.completed.fetch_add(1, Ordering::Relaxed);
        self.last_ms.store(ms, Ordering::Relaxed);
    }
}

impl ClusterMaster {
    /// Recovers dead servers, then assigns every region of an enabled table that is not open
    /// on a live server: unassigned, assigned to a dead server whose log is split, or
    /// assigned to a live server that does not report it. First every live server is told
    /// this master's epoch (so a deposed master's calls are refused from then on). A region
    /// whose dead server's log could not be split waits: served without those edits, it
    /// would lose acknowledged writes.
    ///
    /// # Errors
    /// `Io` reaching the coordinator or committing the catalog.
    pub fn assign_all(&self) -> Result<()> {
        let _p = self.procedure.lock();
        let logs = self.server_logs()?; // before the live servers (see Detection)
        let (live, _) = self.coordinator.live_servers()?;
        self.note_live(&live);
        let open = self.open_regions(&live);
        let unsplit = self.recover_dead(&live, &logs)?;
        let c = self.catalog();
        let (mut ids, mut strays) = (Vec::new(), Vec::new());
        for (info, _) in enabled_regions(&c) {
            let server = c.assignments.get(&info.id).and_then(|a| a.server.clone());
            match server {
                Some(s) if live.contains(&s) => {
                    if open.get(&s).is_some_and(|o| !o.contains(&info.id)) {
                        strays.push(info.id);
                    }
                }
                Some(s) if unsplit.contains(&s) => {}
                _ => ids.push(info.id),
            }
        }
        if !strays.is_empty() {
            tracing::warn!(regions = ?strays, "regions assigned to live servers that do not hold them; assigning them again");
            self.mark_unassigned(&strays)?;
            ids.extend(strays);
        }
        self.assign_locked(&ids)?;
        self.forget_recovered(&live, &unsplit)
    }

    /// The regions each live server that answered reports open.
    fn open_regions(&self, live: &[String]) -> BTreeMap<String, BTreeSet<u64>> {
        let mut open = BTreeMap::new();
        for server in live {
            if !self.clock_accepted(server) {
                continue;
            }
            let report = self
                .servers
                .connect(server)
                .and_then(|s| s.report(self.epoch));
            match report {
                Ok(r) => {
                    open.insert(
                        server.clone(),
                        r.regions.iter().map(|x| x.info.id).collect(),
                    );
                }
                Err(e) => tracing::warn!(server, error = %e, "a live region server did not answer"),
            }
        }
        open
    }

    /// Servers whose log directory holds segments, with them in order.
    pub(super) fn server_logs(&self) -> Result<BTreeMap<String, Vec<PathBuf>>> {
        let root = self.root.join("wal");
        let mut out = BTreeMap::new();
        if !self.env.exists(&root)? {
            return Ok(out);
        }
        for name in self.env.list(&root)? {
            let dir = root.join(&name);
            let mut segments = log_segments(&self.env, &dir)?;
            if self.env.exists(&dir.join(FENCE_MARKER))? {
                // A split log keeps its segments' fences, which read as empty logs.
                let mut kept = Vec::new();
                for s in segments {
                    if self.env.file_size(&s)? > 0 {
                        kept.push(s);
                    }
                }
                segments = kept;
            }
            if !segments.is_empty() {
                out.insert(name, segments);
            }
        }
        Ok(out)
    }

    /// Steps 1 to 4 for every dead server; returns those whose log is still unsplit.
    fn recover_dead(
        &self,
        live: &[String],
        logs: &BTreeMap<String, Vec<PathBuf>>,
    ) -> Result<BTreeSet<String>> {
        let c = self.catalog();
        let assigned = c.assignments.values().filter_map(|a| a.server.clone());
        let mut dead: BTreeSet<String> = logs.keys().cloned().collect();
        dead.extend(assigned);
        dead.extend(c.dead_servers.keys().cloned());
        dead.retain(|s| !live.contains(s));
        // Known to this master from now on, so its page lists them as dead after their
        // recovery ends, though it never saw them live.
        self.seen.lock().extend(dead.iter().cloned());
        let new: Vec<&String> = dead
            .iter()
            .filter(|s| !c.dead_servers.contains_key(*s))
            .collect();
        if !new.is_empty() {
            let now = self.env.now_ms();
            tracing::warn!(servers = ?new, "region servers found dead; recovering them");
            self.edit(|c| {
                for s in &new {
                    c.dead_servers.insert((*s).clone(), now);
                }
                Ok(())
            })?;
        }
        let mut unsplit = BTreeSet::new();
        for server in logs.keys().filter(|s| dead.contains(*s)) {
            if let Err(e) = self.split_log(server) {
                tracing::error!(server, error = %e, "splitting a dead server's log failed; its regions wait, and the split runs again");
                self.recovery.failed_splits.fetch_add(1, Ordering::Relaxed);
                unsplit.insert(server.clone());
            }
        }
        Ok(unsplit)
    }

    /// Steps 2 to 4 for `server`: fence, split into recovered edits, delete the records.
    fn split_log(&self, server: &str) -> Result<()> {
        let segments = self.split_into_recovered_edits(server)?;
        for segment in &segments {
            self.env.clear_fenced_log(segment)?;
        }
        fail_point("master.recovery.split");
        Ok(())
    }

    /// Steps 2 and 3 for `server`: fences its log and writes each region's recovered
    /// edits; returns the segments it read, listed once the log was fenced (so a segment
    /// made meanwhile, which holds no record, is cleared with the rest).
    pub(super) fn split_into_recovered_edits(&self, server: &str) -> Result<Vec<PathBuf>> {
        let dir = self.root.join("wal").join(server);
        self.env.fence_logs(&dir, &self.name)?;
        fail_point("master.recovery.fenced");
        let segments = log_segments(&self.env, &dir)?;
        let region_dirs = self.region_dirs();
        let (mut edits, mut skipped) = (0usize, 0usize);
        for segment in &segments {
            let Some(by_region) = read_segment(&self.env, segment)? else {
                continue; // retired by its server: every region had flushed it
            };
            for (id, region_edits) in by_region {
                let Some(rdir) = region_dirs.get(&id) else {
                    skipped += region_edits.len(); // a region gone since (dropped, split)
                    continue;
                };
                let path = recovered_edits_path(rdir, server, segment);
                write_recovered_edits(&self.env, &path, &region_edits)?;
                edits += region_edits.len();
            }
        }
        tracing::info!(
            server,
            segments = segments.len(),
            edits,
            skipped,
            "split a dead server's log"
        );
        Ok(segments)
    }

    /// Every region's directory, by id.
    fn region_dirs(&self) -> HashMap<u64, PathBuf> {
        let c = self.catalog();
        enabled_or_not(&c)
            .map(|(r, e)| {
                let tdir = self.table_dir(&e.descriptor.table_name());
                (r.id, tdir.join(r.id.to_string()))
            })
            .collect()
    }

    /// Step 6: dead servers with no region and no log left leave `dead_servers`.
    fn forget_recovered(&self, live: &[String], unsplit: &BTreeSet<String>) -> Result<()> {
        let c = self.catalog();
        let holding: BTreeSet<&String> = c
            .assignments
            .values()
            .filter_map(|a| a.server.as_ref())
            .collect();
        let done: Vec<(String, i64)> = c
            .dead_servers
            .iter()
            .filter(|(s, _)| !holding.contains(s) && !unsplit.contains(*s) && !live.contains(s))
            .map(|(s, t)| (s.clone(), *t))
            .collect();
        if done.is_empty() {
            return Ok(());
        }
        self.edit(|c| {
            for (s, _) in &done {
                c.dead_servers.remove(s);
            }
            Ok(())
        })?;
        let now = self.env.now_ms();
        for (server, since) in done {
            let ms = u64::try_from(now - since).unwrap_or(0);
            tracing::info!(server, ms, "recovered a dead region server");
            self.recovery.finished(ms);
        }
        Ok(())
    }

    /// Recoveries finished, failed splits, and the last one's duration.
    #[must_use]
    pub fn recovery_stats(&self) -> &RecoveryStats {
        &self.recovery
    }

    /// One line per recovery under way, for `status` and the page: the server, how long
    /// since it was found dead, and how many of its regions still wait.
    pub(super) fn recovery_lines(&self, c: &crate::catalog::Catalog) -> Vec<String> {
        let now = self.env.now_ms();
        c.dead_servers
            .iter()
            .map(|(server, since)| {
                let waiting = c
                    .assignments
                    .values()
                    .filter(|a| a.server.as_deref() == Some(server.as_str()))
                    .count();
                let secs = (now - since) as f64 / 1000.0;
                format!("{server}: found dead {secs:.1} s ago; {waiting} regions wait for its log split and reassignment")
            })
            .collect()
    }

    /// Dead servers whose recovery is under way, with when each was found dead (ms).
    #[must_use]
    pub fn recoveries(&self) -> BTreeMap<String, i64> {
        self.catalog.lock().1.dead_servers.clone()
    }
}
