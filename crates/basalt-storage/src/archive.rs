//! The archive: where files the database no longer reads are set aside before they are
//! deleted (HBase's `archive/` directory and its cleaner chore).
//!
//! Nothing the engine drops is deleted on the spot when another reason could explain its
//! being there: a compaction's inputs, files a manifest does not list, a dropped family, table
//! or region, a region directory the catalog does not know. They are moved here with their
//! path below the data directory kept, and the cleaner removes them once they have been here
//! for the retention period (HBase's `hbase.master.hfilecleaner.ttl`, 5 minutes). Until then an
//! operator can move them back (`basalt hbck` lists them).
//!
//! Deleted directly, because they are provably garbage: the partial output of a flush or
//! compaction this process wrote and abandoned, WAL segments every region has flushed past,
//! and metadata versions a newer durable version superseded.
//!
//! # Layout
//! `archive/<archived at, ms, 20 digits>-<n>/<path below the data directory>`: one batch
//! directory per call, named by the time, so the cleaner needs no file times.
//!
//! # Thread safety
//! Batches have distinct names (a counter), so concurrent callers never share one. `busy`
//! keeps the cleaner and a batch being filled apart: a batch stamped with a time the clock
//! has since passed (a test's clock jumps, say) must not be removed under the files still
//! moving into it. It is a leaf lock: nothing else is taken while it is held.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use basalt_model::Result;

use crate::env::Env;

/// How long archived files are kept (`hbase.master.hfilecleaner.ttl`, 5 minutes).
pub const DEFAULT_ARCHIVE_RETENTION_MS: i64 = 5 * 60 * 1000;

/// The archive of one data directory.
#[derive(Debug)]
pub struct Archive {
    data_dir: PathBuf,
    env: Env,
    next_batch: AtomicU64,
    busy: parking_lot::Mutex<()>,
}

impl Archive {
    /// The archive of `data_dir` (created on first use).
    #[must_use]
    pub fn new(env: &Env, data_dir: &Path) -> Archive {
        Archive {
            data_dir: data_dir.to_owned(),
            env: env.clone(),
            next_batch: AtomicU64::new(0),
            busy: parking_lot::Mutex::new(()),
        }
    }

    fn root(&self) -> PathBuf {
        self.data_dir.join("archive")
    }

    /// Moves `paths` (files or directories below the data directory) into a new batch;
    /// paths that no longer exist are skipped. `why` goes to the log.
    ///
    /// # Errors
    /// `Io` creating the batch or moving a path; what was moved before stays moved.
    pub fn keep(&self, paths: &[PathBuf], why: &str) -> Result<()> {
        let _busy = self.busy.lock();
        let mut batch = None;
        for path in paths {
            if !self.env.exists(path)? {
                continue;
            }
            let rel = path.strip_prefix(&self.data_dir).unwrap_or(path);
            let rel = rel.strip_prefix("/").unwrap_or(rel);
            let batch = match &batch {
                Some(b) => b,
                None => batch.insert(self.new_batch()),
            };
            let dest = batch.join(rel);
            if let Some(parent) = dest.parent() {
                self.env.create_dir_all(parent)?;
            }
            self.env.rename(path, &dest)?;
            tracing::info!(path = %rel.display(), why, "archived");
        }
        Ok(())
    }

    fn new_batch(&self) -> PathBuf {
        let n = self.next_batch.fetch_add(1, Ordering::Relaxed);
        let now = self.env.now_ms().max(0);
        self.root().join(format!("{now:020}-{n}"))
    }

    /// Removes the batches archived at least `retention_ms` ago; returns how many went.
    ///
    /// # Errors
    /// `Io` listing or removing.
    pub fn clean(&self, retention_ms: i64) -> Result<usize> {
        let _busy = self.busy.lock();
        let cutoff = self.env.now_ms().saturating_sub(retention_ms);
        let mut removed = 0;
        for name in self.env.list(&self.root())? {
            let Some(at) = batch_time(&name) else {
                continue; // not a batch: an operator's file, left alone
            };
            if at <= cutoff {
                self.env.remove_dir_all(&self.root().join(&name))?;
                removed += 1;
            }
        }
        Ok(removed)
    }

    /// Every archived path below the data directory, with when it was archived (ms), for
    /// `hbck`'s report.
    ///
    /// # Errors
    /// `Io` listing.
    pub fn contents(&self) -> Result<Vec<(i64, PathBuf)>> {
        let mut out = Vec::new();
        for name in self.env.list(&self.root())? {
            let Some(at) = batch_time(&name) else {
                continue;
            };
            let batch = self.root().join(&name);
            let mut stack = vec![batch.clone()];
            while let Some(dir) = stack.pop() {
                let entries = self.env.list(&dir)?;
                if entries.is_empty() && dir != batch {
                    out.push((at, dir.strip_prefix(&batch).unwrap_or(&dir).to_owned()));
                }
                for e in entries {
                    let p = dir.join(e);
                    if self.env.is_dir(&p)? {
                        stack.push(p);
                    } else {
                        out.push((at, p.strip_prefix(&batch).unwrap_or(&p).to_owned()));
                    }
                }
            }
        }
        out.sort();
        Ok(out)
    }
}

/// The time a batch directory's name carries, if it is one.
fn batch_time(name: &str) -> Option<i64> {
    let (ms, n) = name.split_once('-')?;
    n.parse::<u64>().ok()?;
    ms.parse().ok()
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests damage files beneath the `Env`
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::env::ManualClock;

    #[test]
    fn archived_files_keep_their_path_and_go_after_the_retention() {
        let dir = tempfile::tempdir().unwrap();
        let clock = Arc::new(ManualClock::new(1_000_000));
        let env = Env::with_clock(Arc::clone(&clock) as _);
        let file = dir.path().join("data/default/t/1/f/7.sf");
        env.create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, b"cells").unwrap();
        let archive = Archive::new(&env, dir.path());
        archive
            .keep(&[file.clone(), dir.path().join("missing")], "test")
            .unwrap();
        assert!(!file.exists());
        let contents = archive.contents().unwrap();
        assert_eq!(
            contents,
            vec![(1_000_000, PathBuf::from("data/default/t/1/f/7.sf"))]
        );
        clock.advance(DEFAULT_ARCHIVE_RETENTION_MS - 1);
        assert_eq!(archive.clean(DEFAULT_ARCHIVE_RETENTION_MS).unwrap(), 0);
        assert_eq!(archive.contents().unwrap().len(), 1);
        clock.advance(1);
        assert_eq!(archive.clean(DEFAULT_ARCHIVE_RETENTION_MS).unwrap(), 1);
        assert!(archive.contents().unwrap().is_empty());
    }

    #[test]
    fn the_cleaner_leaves_what_it_did_not_archive() {
        let dir = tempfile::tempdir().unwrap();
        let env = Env::default();
        let archive = Archive::new(&env, dir.path());
        let mine = dir.path().join("archive/operator-notes");
        env.create_dir_all(&mine).unwrap();
        assert_eq!(archive.clean(0).unwrap(), 0);
        assert!(mine.exists());
    }
}
