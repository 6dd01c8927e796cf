//! Flushes and compactions of a region. Both may run while the region takes reads and writes,
//! and a flush may run while a compaction of the same store does: each commits its change to
//! the manifest under the manifest lock and only then shows it to readers.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use basalt_model::Result;

use super::{ManifestFile, Region};
use crate::compaction::{
    policy, CompactionConfig, FileStat, Selection, Throttle, ThroughputBounds,
};
use crate::store::{family_dir_name, Store};
use crate::storefile::StoreFile;

impl Region {
    /// Writes every memstore to new store files and commits them in the manifest: on
    /// success, everything written before the call is in files.
    ///
    /// # Errors
    /// `Io` writing files or the manifest; the data stays in memory and in the WAL.
    pub fn flush(&self) -> Result<()> {
        // A flush after a failed one writes the snapshot that failed first, and what came in
        // since waits in the active memstore: a second round writes that too. (A close that
        // left it behind would hand the region on without it.)
        let retried = self.stores().iter().any(|s| s.has_snapshot());
        self.flush_snapshots()?;
        if retried {
            self.flush_snapshots()?;
        }
        Ok(())
    }

    /// One round of a flush: each store's snapshot (the one a failed flush left, or the
    /// active memstore, moved aside now) to a new file, committed in the manifest.
    fn flush_snapshots(&self) -> Result<()> {
        let started = self.env.instant();
        let _f = self.flush_lock.lock();
        let (snaps, flush_seq) = {
            let _w = self.updates.write();
            // No writer runs while `updates` is held for writing, so the counts agree.
            invariant!(
                self.memstore_size_bytes()
                    == self
                        .stores()
                        .iter()
                        .map(|s| s.memstore_size_bytes())
                        .sum::<usize>(),
                "region {} counts {} memstore bytes, its stores hold another sum",
                self.info().id,
                self.memstore_size_bytes()
            );
            let snaps: Vec<_> = self
                .stores()
                .into_iter()
                .map(|s| (s.take_snapshot(), s))
                .collect();
            (snaps, self.seq.load(Ordering::SeqCst))
        };
        self.mvcc.wait_for(flush_seq);
        let now = self.env.now_ms();
        let purge = self.config.time_to_purge_deletes_ms;
        let mut written = Vec::new();
        for (snap, store) in &snaps {
            let file = match snap {
                Some(snap) => {
                    store.write_flush(snap, self.next_file_id(), now, purge, flush_seq)?
                }
                None => None,
            };
            written.push(file);
        }
        let committed = self.edit_manifest(|m| {
            for ((_, store), file) in snaps.iter().zip(&written) {
                let sm = m.stores.entry(family_dir_name(store.name())).or_default();
                sm.files
                    .extend(file.as_ref().map(|f| ManifestFile::Own(f.id().file)));
                // Everything at or below flush_seq is in files now, except what a retried
                // snapshot left in the active memstore.
                let active_min = store.min_unflushed_seq_id_excluding_snapshot();
                sm.flushed_seq_id = sm
                    .flushed_seq_id
                    .max(flush_seq.min(active_min.saturating_sub(1)));
            }
            true
        });
        if let Err(e) = committed {
            // The snapshots stay for the retry. The files written go only if the manifest
            // surely does not list them: a commit whose answer was lost may have taken
            // effect, and a file left over is archived at the region's next open.
            if crate::manifest::is_fenced(&e) {
                for f in written.iter().flatten() {
                    let _ = self.env.remove_file(f.path());
                }
            }
            return Err(e);
        }
        let mut freed = 0;
        for ((snap, store), file) in snaps.iter().zip(written) {
            freed += snap.as_ref().map_or(0, |s| s.size_bytes());
            store.finish_flush(file);
        }
        self.memstore_shrank(freed);
        self.last_flush_ms.store(now, Ordering::Relaxed);
        let stats = &self.config.stats;
        stats.flushes.fetch_add(1, Ordering::Relaxed);
        stats
            .flushed_bytes
            .fetch_add(freed as u64, Ordering::Relaxed);
        if freed > 0 {
            self.record_event("flush", freed as u64, started);
        }
        Ok(())
    }

    /// Compacts every store: all files into one. A major compaction drops delete markers,
    /// masked and expired cells and versions beyond VERSIONS.
    ///
    /// # Errors
    /// A corrupt input file or `Io`; the old files stay in use.
    pub fn compact(&self, major: bool) -> Result<()> {
        for store in self.stores() {
            let _c = store.compaction_lock();
            if self.is_closed() {
                return Ok(());
            }
            let inputs = store.files();
            if inputs.is_empty() || (!major && inputs.len() < 2) {
                continue;
            }
            self.run_compaction(
                &store,
                &inputs,
                major,
                &mut Throttle::new(None, self.env.instant()),
            )?;
        }
        Ok(())
    }

    /// The largest store-file count of any store (write stalls look at it).
    #[must_use]
    pub fn max_store_files(&self) -> usize {
        self.stores()
            .iter()
            .map(|s| s.files().len())
            .max()
            .unwrap_or(0)
    }

    /// Runs the compaction policy on every store and compacts what it selects (the
    /// background compactor's entry point). Returns how many compactions ran.
    ///
    /// # Errors
    /// A corrupt input file or `Io`; the old files stay in use.
    pub fn compact_by_policy(
        &self,
        cfg: &CompactionConfig,
        throughput: Option<&ThroughputBounds>,
    ) -> Result<usize> {
        let table = self.table();
        if !table.compaction_enabled {
            return Ok(0);
        }
        let min_size = cfg.min_size_bytes.unwrap_or(table.memstore_flushsize_bytes);
        let mut ran = 0;
        for store in self.stores() {
            let _c = store.compaction_lock();
            if self.is_closed() {
                return Ok(ran);
            }
            let files = store.files();
            let stats: Vec<FileStat> = files.iter().map(|f| file_stat(f)).collect();
            let seed = xxhash_rust::xxh3::xxh3_64(store.dir().as_os_str().as_encoded_bytes());
            let ttl = store.family().ttl_ms();
            let now = self.env.now_ms();
            let selection = if store.has_references() {
                // After a split or merge every file is rewritten at once, as HBase does, so
                // the region stops reading its parents' files and may split again.
                Some(Selection {
                    files: (0..files.len()).collect(),
                    major: true,
                })
            } else {
                policy::select(&stats, cfg, min_size, now, seed, ttl)
            };
            let Some(Selection {
                files: picked,
                major,
            }) = selection
            else {
                continue;
            };
            let inputs: Vec<Arc<StoreFile>> =
                picked.iter().map(|&i| Arc::clone(&files[i])).collect();
            let limit = throughput.and_then(|b| b.limit_for(files.len(), cfg));
            let mut throttle = Throttle::new(limit, self.env.instant());
            self.run_compaction(&store, &inputs, major, &mut throttle)?;
            ran += 1;
        }
        Ok(ran)
    }

    /// Rewrites `inputs` (the store's compaction lock held) and commits the swap.
    fn run_compaction(
        &self,
        store: &Store,
        inputs: &[Arc<StoreFile>],
        major: bool,
        throttle: &mut Throttle,
    ) -> Result<()> {
        let started = self.env.instant();
        let now = self.env.now_ms();
        let purge = self.config.time_to_purge_deletes_ms;
        let out =
            store.write_compaction(inputs, self.next_file_id(), major, now, purge, throttle)?;
        let mut family_gone = false;
        let committed = self.edit_manifest(|m| {
            let Some(sm) = m.stores.get_mut(&family_dir_name(store.name())) else {
                // The family was dropped while the compaction ran: its directory goes too.
                family_gone = true;
                return false;
            };
            // The output takes the place of the oldest input, keeping the list ordered by age.
            let own = self.info.id;
            let is_input = |m: &ManifestFile| inputs.iter().any(|f| f.id() == m.id(own));
            let at = sm.files.iter().position(is_input).unwrap_or(sm.files.len());
            sm.files.retain(|m| !is_input(m));
            if let Some(o) = &out {
                sm.files
                    .insert(at.min(sm.files.len()), ManifestFile::of(o.id(), own));
            }
            true
        });
        let listed = match &committed {
            Ok(()) => !family_gone,
            Err(e) => !crate::manifest::is_fenced(e),
        };
        if committed.is_err() || family_gone {
            // As for a flush: the output stays where a manifest may list it.
            if let (Some(o), false) = (&out, listed) {
                let _ = self.env.remove_file(o.path());
            }
            return committed;
        }
        let stats = &self.config.stats;
        let counter = if major {
            &stats.major_compactions
        } else {
            &stats.minor_compactions
        };
        counter.fetch_add(1, Ordering::Relaxed);
        let read: u64 = inputs.iter().map(|f| f.size_bytes()).sum();
        let written = out.as_ref().map_or(0, |f| f.size_bytes());
        stats
            .compacted_bytes_read
            .fetch_add(read, Ordering::Relaxed);
        stats
            .compacted_bytes_written
            .fetch_add(written, Ordering::Relaxed);
        let kind = if major {
            "major compaction"
        } else {
            "minor compaction"
        };
        self.record_event(kind, written, started);
        store.finish_compaction(inputs, out);
        // References are not this region's to archive: the files go when no region reads
        // them any more (the database's catalog janitor).
        let own: Vec<_> = inputs
            .iter()
            .filter(|f| f.id().region == self.info.id)
            .map(|f| f.path().to_owned())
            .collect();
        self.config.archive.keep(&own, "compacted away")
    }
}

impl Region {
    /// Remembers a finished flush or compaction for the status page.
    pub fn record_event(&self, kind: &'static str, bytes: u64, started: std::time::Instant) {
        self.config.stats.record(super::BackgroundEvent {
            at_ms: self.env.now_ms(),
            kind,
            region: self.name(),
            bytes,
            duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        });
    }
}

fn file_stat(f: &StoreFile) -> FileStat {
    let info = f.info();
    FileStat {
        size: f.size_bytes(),
        created_ms: info.created_ms,
        major_compacted: info.major_compacted,
        min_ts: info.min_ts,
    }
}
