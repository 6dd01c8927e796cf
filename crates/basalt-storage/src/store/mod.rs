//! A store: one column family of one region — its memstore, its snapshot being flushed and
//! its store files (HBase's HStore).
//!
//! # Thread safety
//! `state` is read-locked to build scanners and insert cells, write-locked only to swap
//! memstores or file lists. Scanners hold `Arc`s to what they read, so a flush or compaction
//! never pulls data out from under a reader.

mod half;
pub mod query_matcher;
pub mod scanner;
pub mod source;

#[cfg(test)]
mod layer_tests;
#[cfg(test)]
mod model_tests;
#[cfg(test)]
mod seq_id_tests;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use basalt_model::{bytes_order, Cell, ColumnFamilyDescriptor, Result, TimeRange};
use bytes::Bytes;
use parking_lot::{Mutex, MutexGuard, RwLock};

use crate::block_cache::{BlockCache, Priority};
use crate::compaction::Throttle;
use crate::env::Env;
use crate::memstore::{row_bloom, MemStore};
use crate::region::RegionInfo;
use crate::storefile::{Caching, FileId, StoreFile, StoreFileWriter};
use half::RowRangeSource;
use query_matcher::{Mode, QueryMatcher, ScanInfo};
use scanner::StoreScanner;
use source::Source;

/// What a read asks of one store, so it can skip files.
#[derive(Clone, Debug)]
pub struct ReadHint<'a> {
    /// For a Get: the row, and the one column asked for when there is exactly one.
    pub get: Option<(&'a Bytes, Option<&'a [u8]>)>,
    pub time_range: TimeRange,
    /// The scan's `cache_blocks`: whether data blocks read from disk enter the block cache.
    pub cache_blocks: bool,
    /// Memory only: a block not in the block cache fails the read with
    /// [`Error::would_block`] instead of being read ([`Caching::cache_only`]).
    pub cache_only: bool,
}

#[derive(Debug)]
struct StoreState {
    active: Arc<MemStore>,
    snapshot: Option<Arc<MemStore>>,
    files: Vec<Arc<StoreFile>>,
}

/// One column family of one region.
#[derive(Debug)]
pub struct Store {
    family: RwLock<Arc<ColumnFamilyDescriptor>>,
    name: Bytes,
    /// The region's key range: files shared with other regions are read only within it.
    region: RegionInfo,
    dir: PathBuf,
    env: Env,
    cache: Arc<BlockCache>,
    state: RwLock<StoreState>,
    compaction: Mutex<()>,
}

/// The directory name of a family: hex, because family names are bytes.
#[must_use]
pub fn family_dir_name(family: &[u8]) -> String {
    family.iter().map(|b| format!("{b:02x}")).collect()
}

/// A store file's name from its number.
#[must_use]
pub fn file_name(file: u64) -> String {
    format!("{file:016x}.sf")
}

/// Where file `id` of `family` lies, seen from the directory of region `own`: in it, or in
/// its sibling directory of the region that wrote the file.
#[must_use]
pub fn file_path(region_dir: &Path, own: u64, family: &[u8], id: FileId) -> PathBuf {
    let dir = if id.region == own {
        region_dir.to_owned()
    } else {
        let table_dir = region_dir.parent().unwrap_or(region_dir);
        table_dir.join(id.region.to_string())
    };
    dir.join(family_dir_name(family)).join(file_name(id.file))
}

impl Store {
    /// Opens the store of `region` (whose directory is `region_dir`) whose files are
    /// `file_ids` (from the region manifest); files of other regions are references.
    ///
    /// # Errors
    /// A listed file is missing or corrupt.
    pub fn open(
        env: &Env,
        region_dir: &Path,
        region: &RegionInfo,
        family: ColumnFamilyDescriptor,
        file_ids: &[FileId],
        cache: &Arc<BlockCache>,
    ) -> Result<Store> {
        let dir = region_dir.join(family_dir_name(&family.name));
        env.create_dir_all(&dir)?;
        let name = family.name.clone();
        let files = file_ids
            .iter()
            .map(|&id| {
                let path = file_path(region_dir, region.id, &name, id);
                StoreFile::open(env, &path, id, &name, cache).map(Arc::new)
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Store {
            family: RwLock::new(Arc::new(family)),
            name,
            region: region.clone(),
            dir,
            env: env.clone(),
            cache: Arc::clone(cache),
            compaction: Mutex::new(()),
            state: RwLock::new(StoreState {
                active: Arc::new(MemStore::new()),
                snapshot: None,
                files,
            }),
        })
    }

    /// The family's name.
    #[must_use]
    pub fn name(&self) -> &Bytes {
        &self.name
    }

    /// The family's current schema.
    #[must_use]
    pub fn family(&self) -> Arc<ColumnFamilyDescriptor> {
        Arc::clone(&self.family.read())
    }

    /// Replaces the schema (online alter): reads use it at once, files at their next rewrite.
    pub fn set_family(&self, f: ColumnFamilyDescriptor) {
        *self.family.write() = Arc::new(f);
    }

    /// The directory of the store's files.
    #[must_use]
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The retention settings as the matcher needs them.
    #[must_use]
    pub fn scan_info(&self, time_to_purge_deletes_ms: i64) -> ScanInfo {
        scan_info_of(&self.family.read(), time_to_purge_deletes_ms)
    }

    /// Adds a committed-to-be cell to the active memstore; returns the bytes it added (see
    /// [`MemStore::insert`]).
    pub fn insert(&self, cell: &Cell) -> isize {
        self.state.read().active.insert(cell)
    }

    /// Takes out the cells of write `seq` on `row` from the active memstore and the snapshot
    /// (a flush may have moved them there); returns the bytes freed.
    pub fn remove_edit(&self, row: &Bytes, seq: u64) -> usize {
        let st = self.state.read();
        st.active.remove_edit(row, seq)
            + st.snapshot.as_ref().map_or(0, |s| s.remove_edit(row, seq))
    }

    /// Held while a compaction of this store runs: compactions of one store take turns.
    pub fn compaction_lock(&self) -> MutexGuard<'_, ()> {
        self.compaction.lock()
    }

    /// Bytes in the active memstore and the snapshot.
    #[must_use]
    pub fn memstore_size_bytes(&self) -> usize {
        let st = self.state.read();
        st.active.size_bytes() + st.snapshot.as_ref().map_or(0, |s| s.size_bytes())
    }

    /// Lowest sequence id not yet in a file (`u64::MAX` if none).
    #[must_use]
    pub fn min_unflushed_seq_id(&self) -> u64 {
        let st = self.state.read();
        st.active
            .min_seq_id()
            .min(st.snapshot.as_ref().map_or(u64::MAX, |s| s.min_seq_id()))
    }

    /// The store's files, oldest first.
    #[must_use]
    pub fn files(&self) -> Vec<Arc<StoreFile>> {
        self.state.read().files.clone()
    }

    /// Builds a scanner for a read at `read_point` into `out`, skipping files the hint rules
    /// out (built where it is kept: a scanner returned by value was one more copy of it).
    /// False, and `out` as it was, when a major compaction's file it would read holds a
    /// sequence id above `read_point`: cells above the read point may have had their ids
    /// cleared there and look visible (`clear_seq_ids`). Such a file was installed after
    /// the read point was taken (every file installed before holds only ids at or below it,
    /// as a flush waits for its ids to be visible), so the caller takes a new read point and
    /// asks again.
    ///
    /// # Errors
    /// A corrupt store file.
    pub fn scanner_into(
        &self,
        mode: Mode,
        read_point: u64,
        now_ms: i64,
        purge_ms: i64,
        hint: &ReadHint<'_>,
        out: &mut Vec<StoreScanner>,
    ) -> Result<bool> {
        // The family is read once: a read on one thread and a write on another both take
        // its lock, whose line each takes from the other.
        let (caching, info) = {
            let f = self.family.read();
            let caching = Caching {
                insert: f.block_cache && hint.cache_blocks,
                priority: if f.in_memory {
                    Priority::InMemory
                } else {
                    Priority::Normal
                },
                count: true,
                cache_only: hint.cache_only,
            };
            (caching, scan_info_of(&f, purge_ms))
        };
        let matcher = QueryMatcher::new(mode, info, now_ms, u64::MAX);
        let st = self.state.read();
        let mut sources: Vec<Source> = Vec::with_capacity(st.files.len() + 2);
        // A memstore empty now holds nothing visible at `read_point`, now or later: a write
        // is in its memstore before the read point passes it (region/mvcc.rs). Leaving it
        // out spares a Get its seek and a scan a source to look at for every cell. For the
        // same reason a Get leaves out a memstore whose row bloom filter rules its row out.
        // A Get's sources read its row alone (`MemStore::row_scanner`, `StoreFile::row_scanner`).
        let row = hint.get.map(|(row, _)| row);
        let row_hash = row.map(|r| row_bloom::row_hash(r));
        let memstores = std::iter::once(&st.active).chain(st.snapshot.as_ref());
        for m in memstores.filter(|m| !m.is_empty() && row_hash.is_none_or(|h| m.may_hold_row(h))) {
            sources.push(Source::Memory(match row {
                Some(row) => m.row_scanner(read_point, row),
                None => m.scanner(read_point),
            }));
        }
        for f in st.files.iter().rev() {
            if file_may_match(f, hint)? {
                let info = f.info();
                if info.major_compacted && info.max_seq_id > read_point {
                    return Ok(false);
                }
                sources.push(self.file_source(f, read_point, caching, row)?);
            }
        }
        out.push(StoreScanner::new(sources, matcher));
        if let (Some(row), Some(scanner)) = (row, out.last_mut()) {
            // A Get of named columns lets files wait at its first column (lazy seek).
            scanner.seek_lazily(row, &self.name);
        }
        Ok(true)
    }

    /// A scanner of file `f` (of `row` alone, for a Get), cut to the region's rows when the
    /// file is shared with other regions (a reference).
    fn file_source(
        &self,
        f: &Arc<StoreFile>,
        read_point: u64,
        caching: Caching,
        row: Option<&Bytes>,
    ) -> Result<Source> {
        let s = match row {
            Some(row) => f.row_scanner(read_point, caching, row),
            None => f.scanner(read_point, caching),
        };
        if f.id().region == self.region.id {
            return Ok(Source::File(s));
        }
        let r = &self.region;
        Ok(Source::Cut(Box::new(RowRangeSource::new(
            s,
            r.start_key.clone(),
            r.end_key.clone(),
        ))))
    }

    /// Whether the store reads files of another region (references left by a split or
    /// merge). Such a region is not split or merged again before a compaction rewrites them.
    #[must_use]
    pub fn has_references(&self) -> bool {
        self.state
            .read()
            .files
            .iter()
            .any(|f| f.id().region != self.region.id)
    }

    /// Bytes in the store's files.
    #[must_use]
    pub fn size_bytes(&self) -> u64 {
        self.state.read().files.iter().map(|f| f.size_bytes()).sum()
    }

    /// Where to split the store: the middle row of its largest file, unless that is the
    /// file's first or last row (HBase's `getSplitPoint`).
    ///
    /// # Errors
    /// A damaged block.
    pub fn split_point(&self) -> Result<Option<Bytes>> {
        let Some(largest) = self.files().into_iter().max_by_key(|f| f.size_bytes()) else {
            return Ok(None);
        };
        let Some(mid) = largest.mid_row()? else {
            return Ok(None);
        };
        let info = largest.info();
        let at_edge = |k: &Option<Cell>| k.as_ref().is_some_and(|k| k.row() == mid);
        if at_edge(&info.first_key) || at_edge(&info.last_key) {
            return Ok(None);
        }
        Ok(Some(mid))
    }

    /// Lowest sequence id in the active memstore (`u64::MAX` when empty).
    #[must_use]
    pub fn min_unflushed_seq_id_excluding_snapshot(&self) -> u64 {
        self.state.read().active.min_seq_id()
    }

    /// Whether a failed flush left a snapshot behind.
    #[must_use]
    pub fn has_snapshot(&self) -> bool {
        self.state.read().snapshot.is_some()
    }

    /// Moves the active memstore aside for a flush; `None` when it is empty. A snapshot left
    /// by a failed flush is returned again, so it is retried before newer data.
    pub fn take_snapshot(&self) -> Option<Arc<MemStore>> {
        let mut st = self.state.write();
        if let Some(s) = &st.snapshot {
            return Some(Arc::clone(s));
        }
        if st.active.is_empty() {
            return None;
        }
        let next = Arc::new(MemStore::after(&st.active));
        let snap = std::mem::replace(&mut st.active, next);
        st.snapshot = Some(Arc::clone(&snap));
        Some(snap)
    }

    /// Writes a snapshot to a new store file through the flush matcher (drops masked and
    /// expired cells and versions beyond VERSIONS, keeps markers). `None` when nothing is left.
    ///
    /// # Errors
    /// `Io` writing the file.
    pub fn write_flush(
        &self,
        snap: &Arc<MemStore>,
        file_id: u64,
        now_ms: i64,
        purge_ms: i64,
        read_point: u64,
    ) -> Result<Option<Arc<StoreFile>>> {
        let matcher = QueryMatcher::new(
            Mode::RetainDeletes,
            self.scan_info(purge_ms),
            now_ms,
            read_point,
        );
        // Every cell of the snapshot (no write is in flight in it), read where it lies.
        let mut scanner = StoreScanner::new(vec![Source::Memory(snap.scanner(u64::MAX))], matcher);
        scanner.seek_to_first()?;
        self.write_file(
            scanner,
            file_id,
            now_ms,
            Written::ByFlush,
            &mut Throttle::new(None, self.env.instant()),
        )
    }

    /// Installs the result of a flush and drops the snapshot.
    pub fn finish_flush(&self, file: Option<Arc<StoreFile>>) {
        let snapshot = {
            let mut st = self.state.write();
            st.files.extend(file);
            st.snapshot.take()
        };
        // Dropped outside the lock: the last handle on a memstore zeroes its arena's chunks
        // for the pool (memstore/arena.rs), milliseconds for a full one.
        drop(snapshot);
    }

    /// Rewrites `inputs` into one file; `None` when nothing is left. A `major` compaction
    /// takes every file of the store (the policy's and [`crate::region::Region::compact`]'s
    /// both do), drops delete markers, and clears the sequence ids no read needs
    /// (`clear_seq_ids`).
    ///
    /// # Errors
    /// A corrupt input file or `Io` writing the output.
    pub fn write_compaction(
        &self,
        inputs: &[Arc<StoreFile>],
        file_id: u64,
        major: bool,
        now_ms: i64,
        purge_ms: i64,
        throttle: &mut Throttle,
    ) -> Result<Option<Arc<StoreFile>>> {
        let mode = if major {
            let earliest_put_ts = inputs
                .iter()
                .map(|f| f.info().earliest_put_ts)
                .min()
                .unwrap_or(i64::MIN);
            Mode::DropDeletes { earliest_put_ts }
        } else {
            Mode::RetainDeletes
        };
        let matcher = QueryMatcher::new(mode, self.scan_info(purge_ms), now_ms, u64::MAX);
        let sources = inputs
            .iter()
            .rev()
            .map(|f| self.file_source(f, u64::MAX, Caching::COMPACTION, None))
            .collect::<Result<Vec<_>>>()?;
        let mut scanner = StoreScanner::new(sources, matcher);
        scanner.seek_to_first()?;
        invariant!(
            !major || self.oldest_files_are(inputs),
            "store {}: a major compaction of some files but not the oldest: clearing their \
             sequence ids would let an older file's cell of the same key order first",
            basalt_model::bytes_fmt::to_string_binary(&self.name)
        );
        let max_seq_id = inputs.iter().map(|f| f.info().max_seq_id).max();
        let by = Written::ByCompaction {
            major,
            max_seq_id: max_seq_id.unwrap_or(0),
        };
        self.write_file(scanner, file_id, now_ms, by, throttle)
    }

    fn write_file(
        &self,
        mut scanner: StoreScanner,
        file: u64,
        now_ms: i64,
        by: Written,
        throttle: &mut Throttle,
    ) -> Result<Option<Arc<StoreFile>>> {
        let path = self.dir.join(file_name(file));
        let family = self.family();
        let major = matches!(by, Written::ByCompaction { major: true, .. });
        // Under NEW_VERSION_BEHAVIOR a marker masks only the cells written before it, which
        // their sequence ids tell: they are kept (HBase keeps them too).
        let clear = major && !family.new_version_behavior;
        let mut w = StoreFileWriter::create(&self.env, &path, &family, now_ms)?;
        if let Written::ByCompaction { max_seq_id, .. } = by {
            w.keep_max_seq_id(max_seq_id);
        }
        let written = scanner
            .compact_into(|row| {
                if clear {
                    clear_seq_ids(row);
                }
                row.iter().try_for_each(|c| {
                    throttle.consume(c.serialized_size());
                    w.add(c)
                })
            })
            .and_then(|()| {
                if w.cell_count() == 0 {
                    return Ok(false);
                }
                w.finish(major)?;
                // The manifest about to list the file must not outlive its directory entry.
                self.env.sync_dir(&self.dir)?;
                Ok(true)
            });
        // An empty file, or a partial one (a full disk, say), must not hold on to the space;
        // but only a file this writer created is its to remove. A region's next server and
        // the zombie it took the region from number their files alike, and a writer that
        // found the name taken would remove the other's file, which a manifest may list.
        let created = w.created();
        match written {
            Ok(true) => {}
            Ok(false) => {
                if created {
                    self.env.remove_file(&path)?;
                }
                return Ok(None);
            }
            Err(e) => {
                if created {
                    let _ = self.env.remove_file(&path);
                }
                return Err(e);
            }
        }
        let id = FileId {
            region: self.region.id,
            file,
        };
        Ok(Some(Arc::new(StoreFile::open(
            &self.env,
            &path,
            id,
            &self.name,
            &self.cache,
        )?)))
    }

    /// Whether the files of `inputs` that the store lists come before every file it lists
    /// that is not among them (the store lists its files oldest first): a major compaction's
    /// inputs are every file but those flushed since it chose them.
    fn oldest_files_are(&self, inputs: &[Arc<StoreFile>]) -> bool {
        let is_input = |f: &Arc<StoreFile>| inputs.iter().any(|i| i.id() == f.id());
        let files = self.files();
        let others_from = files
            .iter()
            .position(|f| !is_input(f))
            .unwrap_or(files.len());
        !files[others_from..].iter().any(is_input)
    }

    /// Replaces compacted inputs by their output in the file list.
    pub fn finish_compaction(&self, inputs: &[Arc<StoreFile>], output: Option<Arc<StoreFile>>) {
        let mut st = self.state.write();
        let gone: Vec<FileId> = inputs.iter().map(|f| f.id()).collect();
        let at = st
            .files
            .iter()
            .position(|f| gone.contains(&f.id()))
            .unwrap_or(st.files.len());
        st.files.retain(|f| !gone.contains(&f.id()));
        // The output takes the place of the oldest input, keeping files ordered by age.
        if let Some(o) = output {
            let at = at.min(st.files.len());
            st.files.insert(at, o);
        }
    }
}

/// What writes a store file.
#[derive(Clone, Copy, Debug)]
enum Written {
    ByFlush,
    /// A compaction, and its inputs' highest sequence id.
    ByCompaction {
        major: bool,
        max_seq_id: u64,
    },
}

/// Gives sequence id 0 to each cell of `row` (one row's cells, in key order, as a major
/// compaction writes them) that shares its row, column, timestamp and type with no other
/// cell; a zero id is not stored (docs/formats/storefile.md). HBase's major compactions do
/// the same for cells every reader sees (`Compactor`, below the smallest read point).
///
/// It changes no read's answer, because:
/// - a read opens a major compaction's file only when its ids are all at or below the
///   read's read point ([`Store::scanner_into`] sends it for a new one otherwise): id 0 is as
///   visible to it as the cell's own id;
/// - a read open before the compaction reads the files it opened with, not the output;
/// - a major compaction takes every file, so its output holds every cell older than any
///   later file's or the memstore's, and a cell elsewhere with the same key but the id
///   orders before it either way;
/// - cells of one key within the output keep their ids, which alone order them.
fn clear_seq_ids(row: &mut [Cell]) {
    let same_key = |a: &Cell, b: &Cell| {
        a.timestamp == b.timestamp && a.cell_type == b.cell_type && a.same_column(b)
    };
    let mut shares_with_previous = false;
    for i in 0..row.len() {
        let shares_with_next = row.get(i + 1).is_some_and(|next| same_key(&row[i], next));
        if !shares_with_previous && !shares_with_next {
            row[i].seq_id = 0;
        }
        shares_with_previous = shares_with_next;
    }
}

/// The retention settings of family `f` as the matcher needs them.
fn scan_info_of(f: &ColumnFamilyDescriptor, time_to_purge_deletes_ms: i64) -> ScanInfo {
    ScanInfo {
        max_versions: f.max_versions,
        min_versions: f.min_versions,
        ttl_ms: f.ttl_ms(),
        keep_deleted_cells: f.keep_deleted_cells,
        time_to_purge_deletes_ms,
        new_version_behavior: f.new_version_behavior,
    }
}

/// Whether a file may hold cells the read wants: its time range, its key range and, for a
/// Get, its bloom filter decide (HBase's StoreFileScanner.shouldUseScanner).
fn file_may_match(f: &StoreFile, hint: &ReadHint<'_>) -> Result<bool> {
    let info = f.info();
    if info.max_ts < hint.time_range.min() {
        return Ok(false);
    }
    if let Some((row, col)) = hint.get {
        let outside = info
            .first_key
            .as_ref()
            .is_some_and(|k| bytes_order::compare(k.row(), row).is_gt())
            || info
                .last_key
                .as_ref()
                .is_some_and(|k| bytes_order::compare(k.row(), row).is_lt());
        if outside || !f.may_contain_in(row, col, hint.cache_only)? {
            return Ok(false);
        }
    }
    Ok(true)
}
