//! What a region does for a split or merge: it stops serving with everything in files, says
//! where it would split, and hands its files to the regions that follow it, which read them
//! through references (`ManifestFile::Reference`) until a compaction rewrites them. The
//! database (`database/regions.rs`) drives the steps and commits the switch in the catalog.
//!
//! # Invariant
//! A region with references is neither split nor merged: references always point at files
//! a region wrote itself, one step back, never at other references.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::atomic::Ordering;

use basalt_model::descriptor::DEFAULT_MAX_FILESIZE_BYTES;
use basalt_model::{Error, Result};
use bytes::Bytes;

use super::{ManifestFile, Region, RegionManifest, StoreManifest};
use crate::env::Env;
use crate::manifest::VersionedFile;
use crate::storefile::FileId;
use crate::wal::split::recovered_edits;

/// The files a region hands on, by family directory name, oldest first.
pub type HandedFiles = BTreeMap<String, Vec<FileId>>;

impl Region {
    /// Stops serving and puts everything in files: writes and new reads get
    /// `NotServingRegion` from now on, running compactions finish and no new one starts, and
    /// the memstores are flushed. On failure the region serves again.
    ///
    /// # Errors
    /// `Io` flushing.
    pub fn close(&self) -> Result<()> {
        {
            let _w = self.updates.write();
            self.closed.store(true, Ordering::Release);
        }
        for s in self.stores() {
            // A compaction that began before the close ends before this returns.
            drop(s.compaction_lock());
        }
        let flushed = self.flush().and_then(|()| {
            // No write gets in once closed, so the flush left nothing behind; a region
            // handed on with cells in memory would lose them (its log is not replayed).
            match self.memstore_size_bytes() {
                0 => Ok(()),
                left => Err(basalt_model::Error::Internal(format!(
                    "region {} holds {left} unflushed bytes after its closing flush",
                    self.info().id
                ))),
            }
        });
        if let Err(e) = flushed {
            self.reopen();
            return Err(e);
        }
        Ok(())
    }

    /// Serves again after a split or merge that did not happen.
    pub fn reopen(&self) {
        self.closed.store(false, Ordering::Release);
    }

    /// The split threshold: the table's `MAX_FILESIZE` when it sets one, else the database's.
    fn max_filesize_bytes(&self) -> u64 {
        let t = self.table.read().max_filesize_bytes;
        if t == DEFAULT_MAX_FILESIZE_BYTES {
            self.config.max_filesize_bytes
        } else {
            t
        }
    }

    /// Whether the region should split on its own: its table allows it, it reads no
    /// references, and its largest store has passed the split threshold.
    #[must_use]
    pub fn should_split(&self) -> bool {
        if self.is_closed() || !self.table.read().split_enabled || self.has_references() {
            return false;
        }
        let largest = self.stores().iter().map(|s| s.size_bytes()).max();
        largest.unwrap_or(0) > self.max_filesize_bytes()
    }

    /// Whether any store reads another region's files.
    #[must_use]
    pub fn has_references(&self) -> bool {
        self.stores().iter().any(|s| s.has_references())
    }

    /// The regions whose files this one reads.
    #[must_use]
    pub fn referenced_regions(&self) -> BTreeSet<u64> {
        referenced(&self.manifest.lock().1, self.info.id)
    }

    /// The regions whose files region `id`, stored in `dir`, reads, from its manifest on
    /// storage (a master that does not host the region asks its files).
    ///
    /// # Errors
    /// `Corruption` when the region has no manifest; `Io`.
    pub fn stored_references(env: &Env, dir: &Path, id: u64) -> Result<BTreeSet<u64>> {
        Ok(referenced(&stored_manifest(env, dir, id)?, id))
    }

    /// [`Region::handed_files`] of region `id` stored in `dir`, from its manifest on storage:
    /// after the region closed (flushed) on its server, the master reads what it hands on.
    ///
    /// Its files are all it holds only once no recovered edits wait: edits split out of a
    /// dead server's log are the region's until an open replays and flushes them, so a
    /// region that has not opened since hands on nothing.
    ///
    /// # Errors
    /// As [`Region::stored_references`]; `NotServingRegion` while recovered edits wait.
    pub fn stored_handed_files(env: &Env, dir: &Path, id: u64) -> Result<(HandedFiles, u64)> {
        if !recovered_edits(env, dir)?.is_empty() {
            return Err(Error::NotServingRegion(format!(
                "region {id} has edits recovered from a dead server's log that it has not replayed; it must open before it splits or merges"
            )));
        }
        Ok(handed(&stored_manifest(env, dir, id)?, id))
    }

    /// Where the region would split: the split point of its largest store, if it lies inside
    /// the region (not on its start row).
    ///
    /// # Errors
    /// A damaged block.
    pub fn split_point(&self) -> Result<Option<Bytes>> {
        let Some(largest) = self.stores().into_iter().max_by_key(|s| s.size_bytes()) else {
            return Ok(None);
        };
        Ok(largest
            .split_point()?
            .filter(|k| k[..] > self.info.start_key[..] && self.info.contains(k)))
    }

    /// The files of every store, for the regions that follow this one (after [`Region::close`]
    /// they hold all its data), and the sequence id they cover.
    #[must_use]
    pub fn handed_files(&self) -> (HandedFiles, u64) {
        handed(&self.manifest.lock().1, self.info.id)
    }

    /// Writes the manifest of a new region `id` in `dir` whose stores read `files` (those of
    /// the regions it follows) and have flushed through `flushed_seq_id`.
    ///
    /// # Errors
    /// `Io`.
    pub fn create_successor(
        env: &Env,
        dir: &Path,
        id: u64,
        files: &HandedFiles,
        flushed_seq_id: u64,
    ) -> Result<()> {
        let (mut vf, _) = VersionedFile::load::<RegionManifest>(env, dir, "MANIFEST")?;
        let stores = files
            .iter()
            .map(|(k, ids)| {
                let sm = StoreManifest {
                    flushed_seq_id,
                    files: ids.iter().map(|&f| ManifestFile::of(f, id)).collect(),
                };
                (k.clone(), sm)
            })
            .collect();
        vf.commit(
            env,
            &RegionManifest {
                next_file_id: 0,
                stores,
            },
        )
    }
}

fn stored_manifest(env: &Env, dir: &Path, id: u64) -> Result<RegionManifest> {
    let (_, m) = VersionedFile::load::<RegionManifest>(env, dir, "MANIFEST")?;
    m.ok_or_else(|| {
        basalt_model::Error::corruption("region", dir, format!("region {id} has no manifest"))
    })
}

/// The regions other than `own` whose files manifest `m` lists.
fn referenced(m: &RegionManifest, own: u64) -> BTreeSet<u64> {
    m.stores
        .values()
        .flat_map(|s| s.files.iter().map(|f| f.id(own).region))
        .filter(|r| *r != own)
        .collect()
}

/// Every store's files of manifest `m` (of region `own`), and the sequence id they cover.
fn handed(m: &RegionManifest, own: u64) -> (HandedFiles, u64) {
    let files = m
        .stores
        .iter()
        .map(|(k, s)| (k.clone(), s.files.iter().map(|f| f.id(own)).collect()))
        .collect();
    (files, m.flushed_seq_id())
}

/// Joins the handed files of regions in key order: each family's files, region by region.
#[must_use]
pub fn join_handed_files(parts: Vec<HandedFiles>) -> HandedFiles {
    let mut out = HandedFiles::new();
    for part in parts {
        for (family, ids) in part {
            out.entry(family).or_default().extend(ids);
        }
    }
    out
}
