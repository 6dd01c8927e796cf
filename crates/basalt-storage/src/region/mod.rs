//! A region: a row-key range `[start, end)` of one table, with one store per family, its own
//! MVCC, row locks, flushes and compactions (HBase's HRegion, split into `mutate` for writes
//! and `scanner` for reads).
//!
//! # Thread safety
//! Writers of one row serialize on a striped row lock. `updates` is read-locked by every writer
//! from sequence id to memstore insert and write-locked by a flush while it swaps memstores, so
//! a flush's sequence id covers exactly what it snapshots. `flush_lock` serializes flushes and
//! compactions of the region, and with them manifest commits.

mod batch;
mod clock;
mod maintenance;
mod mutate;
pub mod mvcc;
mod recovered;
pub mod repair;
mod scanner;
mod split;

pub use scanner::RegionScanner;
pub use split::{join_handed_files, HandedFiles};

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use basalt_model::{Error, Result, TableDescriptor};
use bytes::Bytes;
use crossbeam_utils::CachePadded;
use parking_lot::{Mutex, RwLock};
use serde::{Deserialize, Serialize};

use crate::archive::Archive;
use crate::block_cache::BlockCache;
use crate::env::Env;
use crate::manifest::VersionedFile;
use crate::store::{family_dir_name, file_name, Store};
use crate::storefile::FileId;
use crate::wal::Wal;
use clock::RowClock;
use mvcc::Mvcc;

/// Row lock stripes: two rows share a lock only when their hashes collide.
const ROW_LOCK_STRIPES: usize = 4096;

pub use basalt_model::region::RegionInfo;

/// Engine settings a region needs.
#[derive(Clone, Debug)]
pub struct RegionConfig {
    /// `hbase.hstore.time.to.purge.deletes`.
    pub time_to_purge_deletes_ms: i64,
    /// `hbase.server.keyvalue.maxsize`.
    pub max_cell_size_bytes: usize,
    /// `hbase.table.max.rowsize`.
    pub max_row_size_bytes: usize,
    /// `hbase.hregion.max.filesize`: the split threshold of tables that set no `MAX_FILESIZE`.
    pub max_filesize_bytes: u64,
    /// The database's block cache, shared by every store.
    pub block_cache: Arc<BlockCache>,
    /// Bytes in every memstore of the database (the global memstore limit's measure).
    pub memstore_total: Arc<AtomicUsize>,
    /// Flush and compaction counters, shared by every region.
    pub stats: Arc<EngineStats>,
    /// Where files the region stops reading are set aside before they are deleted.
    pub archive: Arc<Archive>,
}

/// What a region uses of the server hosting it (HBase's `RegionServerServices`): the
/// server's file system and clock, its WAL and sequence ids, and its shared engine state.
/// A region holds nothing else of its server, so it can close on one server and open on
/// another.
#[derive(Clone, Debug)]
pub struct RegionServices {
    pub env: Env,
    pub config: RegionConfig,
    /// The hosting server's log, shared by all its regions.
    pub wal: Arc<Wal>,
    /// The hosting server's last issued sequence id.
    pub seq: Arc<AtomicU64>,
}

/// One flush, compaction, split or merge, for the status page's recent work.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BackgroundEvent {
    /// When it finished (ms since the epoch).
    pub at_ms: i64,
    /// `flush`, `minor compaction`, `major compaction`, `split` or `merge`.
    pub kind: &'static str,
    /// The region (for a split or merge, the parents).
    pub region: String,
    /// Bytes written (flushes and compactions).
    pub bytes: u64,
    pub duration_ms: u64,
}

/// How many recent background events are kept.
const RECENT_EVENTS: usize = 32;

pub use basalt_model::region::RegionLoad;

/// Counters of the engine's background work since the database opened.
#[derive(Debug, Default)]
pub struct EngineStats {
    pub flushes: AtomicU64,
    pub flushed_bytes: AtomicU64,
    pub minor_compactions: AtomicU64,
    pub major_compactions: AtomicU64,
    pub compacted_bytes_read: AtomicU64,
    pub compacted_bytes_written: AtomicU64,
    /// Writes that had to wait for a flush (memstore over its blocking size).
    pub delayed_writes: AtomicU64,
    /// Writes refused with `RegionTooBusy`.
    pub refused_writes: AtomicU64,
    /// The most recent flushes, compactions, splits and merges, oldest first.
    pub events: Mutex<std::collections::VecDeque<BackgroundEvent>>,
}

impl EngineStats {
    /// Remembers a finished background job (the last few are kept).
    pub fn record(&self, event: BackgroundEvent) {
        let mut events = self.events.lock();
        if events.len() == RECENT_EVENTS {
            events.pop_front();
        }
        events.push_back(event);
    }
}

/// A file in a store manifest: a number of the region's own (written as a bare number), or a
/// reference to a file of the region this one was split from or merged out of.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
enum ManifestFile {
    Own(u64),
    Reference { region: u64, file: u64 },
}

impl ManifestFile {
    fn id(self, own: u64) -> FileId {
        match self {
            ManifestFile::Own(file) => FileId { region: own, file },
            ManifestFile::Reference { region, file } => FileId { region, file },
        }
    }

    fn of(id: FileId, own: u64) -> ManifestFile {
        if id.region == own {
            ManifestFile::Own(id.file)
        } else {
            ManifestFile::Reference {
                region: id.region,
                file: id.file,
            }
        }
    }
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct StoreManifest {
    flushed_seq_id: u64,
    files: Vec<ManifestFile>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct RegionManifest {
    next_file_id: u64,
    stores: BTreeMap<String, StoreManifest>,
}

impl RegionManifest {
    /// The highest flushed sequence id of any store.
    fn flushed_seq_id(&self) -> u64 {
        self.stores
            .values()
            .map(|s| s.flushed_seq_id)
            .max()
            .unwrap_or(0)
    }
}

/// One region of a table.
#[derive(Debug)]
pub struct Region {
    info: RegionInfo,
    dir: PathBuf,
    env: Env,
    config: RegionConfig,
    wal: Arc<Wal>,
    seq: Arc<AtomicU64>,
    table: RwLock<Arc<TableDescriptor>>,
    stores: RwLock<BTreeMap<Bytes, Arc<Store>>>,
    mvcc: Mvcc,
    row_locks: Vec<Mutex<()>>,
    /// Server time per row after read-modify-writes that ran ahead of the clock.
    row_clock: RowClock,
    updates: RwLock<()>,
    flush_lock: Mutex<()>,
    /// Bytes in the region's memstores: the sum of its stores' sizes, kept as it changes so
    /// the write path reads it without visiting the stores.
    memstore_bytes: CachePadded<AtomicUsize>,
    manifest: Mutex<(VersionedFile, RegionManifest)>,
    /// When the region last flushed (or opened), ms: the periodic flush's measure.
    last_flush_ms: std::sync::atomic::AtomicI64,
    /// Reads and writes served, for the status page. Each counter and `memstore_bytes` is
    /// on a cache line of its own: a read on one thread and a write on another each add to
    /// theirs, and sharing a line would have them take it from each other every time.
    reads: CachePadded<AtomicU64>,
    writes: CachePadded<AtomicU64>,
    /// Set (under `updates` write-locked) when the region stops serving for a split or merge:
    /// writes and new reads get `NotServingRegion` and look their region up again.
    closed: AtomicBool,
}

impl Drop for Region {
    fn drop(&mut self) {
        self.memstore_shrank(self.memstore_size_bytes());
    }
}

impl Region {
    /// Writes the first, empty manifest of a new region `id` in `dir`, which must hold none;
    /// [`Region::open`] opens it then.
    ///
    /// # Errors
    /// `Io`; `DoNotRetry` when `dir` already holds a region.
    pub fn create_empty(env: &Env, dir: &Path, id: u64) -> Result<()> {
        let (mut vf, doc) = VersionedFile::load::<RegionManifest>(env, dir, "MANIFEST")?;
        if doc.is_some() {
            return Err(Error::DoNotRetry(format!("region {id} already exists")));
        }
        vf.commit(env, &RegionManifest::default())
    }

    /// Opens the existing region in `dir` for `table`. Files its manifest does not list (the
    /// leftovers of a flush or compaction that crashed before its commit, or of a dropped
    /// family) are moved to the archive, never deleted.
    ///
    /// # Errors
    /// `Corruption` when the region has no manifest (it is damage, not an empty region: the
    /// region's files stay where they are) or a corrupt manifest or store file; `Io`.
    pub fn open(
        services: &RegionServices,
        dir: &Path,
        info: RegionInfo,
        table: Arc<TableDescriptor>,
    ) -> Result<Region> {
        let RegionServices {
            env,
            config,
            wal,
            seq,
        } = services;
        let (config, wal, seq) = (config.clone(), Arc::clone(wal), Arc::clone(seq));
        let (vf, doc) = VersionedFile::load::<RegionManifest>(env, dir, "MANIFEST")?;
        let Some(mut manifest) = doc else {
            return Err(Error::corruption(
                "region",
                dir,
                "no manifest (MANIFEST-*): the region's files were left in place; `basalt hbck` can rebuild it",
            ));
        };
        // What `basalt hbck` needs to rebuild a lost catalog (written once; older regions
        // get theirs at their next open).
        let table_key = repair::table_key(&table.table_name());
        repair::write_region_info(env, dir, &table_key, &info)?;
        let mut stores = BTreeMap::new();
        let current_seq = seq.load(Ordering::SeqCst);
        for f in table.families.values() {
            let key = family_dir_name(&f.name);
            let sm = manifest.stores.entry(key).or_insert_with(|| StoreManifest {
                flushed_seq_id: current_seq,
                files: Vec::new(),
            });
            let ids: Vec<FileId> = sm.files.iter().map(|f| f.id(info.id)).collect();
            let store = Store::open(env, dir, &info, f.clone(), &ids, &config.block_cache)?;
            stores.insert(f.name.clone(), Arc::new(store));
        }
        manifest
            .stores
            .retain(|k, _| table.families.keys().any(|f| family_dir_name(f) == *k));
        let region = Region {
            info,
            dir: dir.to_owned(),
            env: env.clone(),
            config,
            wal,
            mvcc: Mvcc::new(Arc::clone(&seq)),
            seq,
            table: RwLock::new(table),
            stores: RwLock::new(stores),
            row_locks: (0..ROW_LOCK_STRIPES).map(|_| Mutex::new(())).collect(),
            row_clock: RowClock::default(),
            updates: RwLock::new(()),
            flush_lock: Mutex::new(()),
            memstore_bytes: CachePadded::new(AtomicUsize::new(0)),
            manifest: Mutex::new((vf, manifest)),
            closed: AtomicBool::new(false),
            last_flush_ms: std::sync::atomic::AtomicI64::new(env.now_ms()),
            reads: CachePadded::new(AtomicU64::new(0)),
            writes: CachePadded::new(AtomicU64::new(0)),
        };
        region.floor_rows_at_stored_times();
        region.commit_manifest()?;
        region.archive_unlisted_files()?;
        Ok(region)
    }

    /// The region's id and key range.
    #[must_use]
    pub fn info(&self) -> &RegionInfo {
        &self.info
    }

    /// HBase's region name, as text (`table,start key,id.encoded.`).
    #[must_use]
    pub fn name(&self) -> String {
        self.info.region_name_string(&self.table().table_name())
    }

    /// The region's load: files, memstore, requests.
    #[must_use]
    pub fn load(&self) -> RegionLoad {
        let stores = self.stores();
        RegionLoad {
            store_files: stores.iter().map(|s| s.files().len()).sum(),
            store_file_bytes: stores.iter().map(|s| s.size_bytes()).sum(),
            memstore_bytes: self.memstore_size_bytes() as u64,
            read_requests: self.reads.load(Ordering::Relaxed),
            write_requests: self.writes.load(Ordering::Relaxed),
            failed_open: None,
        }
    }

    /// Whether the region has stopped serving (closed for a split or merge).
    #[must_use]
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// `NotServingRegion` when the region is closed.
    fn check_serving(&self) -> Result<()> {
        if self.is_closed() {
            return Err(Error::NotServingRegion(self.name()));
        }
        Ok(())
    }

    /// The table's schema as this region knows it.
    #[must_use]
    pub fn table(&self) -> Arc<TableDescriptor> {
        Arc::clone(&self.table.read())
    }

    /// The store of `family`, if the table has it.
    #[must_use]
    pub fn store(&self, family: &[u8]) -> Option<Arc<Store>> {
        self.stores.read().get(family).cloned()
    }

    /// Every store, in family order.
    #[must_use]
    pub fn stores(&self) -> Vec<Arc<Store>> {
        self.stores.read().values().cloned().collect()
    }

    /// The highest sequence id any store file of the region holds.
    #[must_use]
    pub fn max_stored_seq_id(&self) -> u64 {
        let flushed = self.manifest.lock().1.flushed_seq_id();
        let in_files = self
            .stores()
            .iter()
            .flat_map(|s| s.files())
            .map(|f| f.info().max_seq_id)
            .max()
            .unwrap_or(0);
        flushed.max(in_files)
    }

    /// Replays one WAL edit's cells into the stores that have not flushed them yet. A row
    /// whose replayed cells run ahead of this server's clock keeps that time as its floor
    /// (`clock.rs`), so its later writes at server time land above them.
    pub fn replay(&self, seq_id: u64, cells: Vec<basalt_model::Cell>) {
        let m = &self.manifest.lock().1;
        let stores = self.stores.read();
        let clock = self.env.now_ms();
        for c in cells {
            let after = i64::from(c.cell_type.is_delete());
            self.row_clock
                .ran_ahead(c.row(), c.timestamp.saturating_add(after), clock);
            let flushed = m
                .stores
                .get(&family_dir_name(&c.family))
                .map_or(u64::MAX, |s| s.flushed_seq_id);
            if seq_id > flushed {
                if let Some(store) = stores.get(&c.family) {
                    self.memstore_changed(store.insert(&c));
                }
            }
        }
    }

    /// Lifts every row's server time to the newest time the region's files hold (`clock.rs`):
    /// the region may open within the millisecond a row of it ran ahead on its last server,
    /// which took those floors with it.
    fn floor_rows_at_stored_times(&self) {
        let stored = self.stores().into_iter().flat_map(|s| s.files()).map(|f| {
            let i = f.info();
            // A marker masks a write at its own time: later writes go a millisecond past it.
            i.max_ts.saturating_add(i64::from(i.delete_count > 0))
        });
        if let Some(ts) = stored.max() {
            self.row_clock.all_ran_ahead(ts, self.env.now_ms());
        }
    }

    /// When the region last flushed, or opened (ms since the epoch).
    #[must_use]
    pub fn last_flush_ms(&self) -> i64 {
        self.last_flush_ms.load(Ordering::Relaxed)
    }

    /// Bytes held in the region's memstores.
    #[must_use]
    pub fn memstore_size_bytes(&self) -> usize {
        self.memstore_bytes.load(Ordering::Relaxed)
    }

    /// Accounts for a memstore insert's change of size (`MemStore::insert`) in the region's
    /// memstores and the database's.
    fn memstore_changed(&self, delta: isize) {
        if delta < 0 {
            return self.memstore_shrank(delta.unsigned_abs());
        }
        let n = delta.unsigned_abs();
        self.memstore_bytes.fetch_add(n, Ordering::Relaxed);
        self.config.memstore_total.fetch_add(n, Ordering::Relaxed);
    }

    /// Accounts for `n` bytes leaving the region's memstores (a flush, a dropped family).
    fn memstore_shrank(&self, n: usize) {
        self.memstore_bytes.fetch_sub(n, Ordering::Relaxed);
        self.config.memstore_total.fetch_sub(n, Ordering::Relaxed);
    }

    /// The table's flush size (`MEMSTORE_FLUSHSIZE`), read without copying the schema.
    #[must_use]
    pub fn flush_size_bytes(&self) -> u64 {
        self.table.read().memstore_flushsize_bytes
    }

    /// Lowest sequence id that may be only in memory (`u64::MAX` when all is flushed): the
    /// memstores' oldest, or a write in flight that has its id but is not in a memstore yet.
    /// The in-flight writes are read first: a write that leaves them before the memstores are
    /// read is in a memstore by then.
    #[must_use]
    pub fn min_unflushed_seq_id(&self) -> u64 {
        let in_flight = self.mvcc.oldest_pending();
        self.stores()
            .iter()
            .map(|s| s.min_unflushed_seq_id())
            .min()
            .unwrap_or(u64::MAX)
            .min(in_flight)
    }

    fn commit_manifest(&self) -> Result<()> {
        self.edit_manifest(|_| true)
    }

    /// Changes the manifest all or nothing: `edit` works on a copy, which is committed and
    /// only then becomes the region's manifest. `edit` returns false to abandon the change.
    /// (Mutating in place would leave memory ahead of disk after a failed commit, and a later
    /// commit would then write a list no reader ever saw.)
    fn edit_manifest(&self, edit: impl FnOnce(&mut RegionManifest) -> bool) -> Result<()> {
        let mut guard = self.manifest.lock();
        let (vf, doc) = &mut *guard;
        let mut next = doc.clone();
        if !edit(&mut next) {
            return Ok(());
        }
        vf.commit(&self.env, &next)?;
        *doc = next;
        Ok(())
    }

    fn next_file_id(&self) -> u64 {
        let mut m = self.manifest.lock();
        m.1.next_file_id += 1;
        m.1.next_file_id
    }

    /// Archives store files and family directories the manifest it has read does not list:
    /// leftovers of a flush or compaction that crashed before its commit, inputs of a
    /// compaction that crashed after it, or a dropped family.
    fn archive_unlisted_files(&self) -> Result<()> {
        let m = self.manifest.lock().1.clone();
        let mut unlisted = Vec::new();
        for entry in self.env.list(&self.dir)? {
            if entry.starts_with("MANIFEST-")
                || entry.starts_with("REGIONINFO-")
                || entry == crate::wal::split::RECOVERED_EDITS
            {
                continue;
            }
            let path = self.dir.join(&entry);
            let Some(sm) = m.stores.get(&entry) else {
                unlisted.push(path);
                continue;
            };
            for f in self.env.list(&path)? {
                let listed =
                    |m: &ManifestFile| matches!(m, ManifestFile::Own(n) if file_name(*n) == f);
                if !sm.files.iter().any(listed) {
                    unlisted.push(path.join(f));
                }
            }
        }
        self.config
            .archive
            .keep(&unlisted, "not listed in the region's manifest")
    }

    /// Applies a new table schema online: adds, modifies and removes stores (SEMANTICS.md §L).
    ///
    /// # Errors
    /// `Io` creating a store or committing the manifest.
    pub fn alter(&self, table: Arc<TableDescriptor>) -> Result<()> {
        let _f = self.flush_lock.lock();
        let _w = self.updates.write();
        let mut stores = self.stores.write();
        let current_seq = self.seq.load(Ordering::SeqCst);
        let mut added = Vec::new();
        for f in table.families.values() {
            if !stores.contains_key(&f.name) {
                let cache = &self.config.block_cache;
                let store = Store::open(&self.env, &self.dir, &self.info, f.clone(), &[], cache)?;
                added.push((f.name.clone(), Arc::new(store)));
            }
        }
        self.edit_manifest(|m| {
            for (name, _) in &added {
                let sm = StoreManifest {
                    flushed_seq_id: current_seq,
                    files: Vec::new(),
                };
                m.stores.insert(family_dir_name(name), sm);
            }
            m.stores
                .retain(|k, _| table.families.keys().any(|f| family_dir_name(f) == *k));
            true
        })?;
        let mut removed = Vec::new();
        stores.retain(|name, s| {
            let keep = table.families.contains_key(name);
            if !keep {
                removed.push(Arc::clone(s));
            }
            keep
        });
        stores.extend(added);
        for f in table.families.values() {
            if let Some(s) = stores.get(&f.name) {
                s.set_family(f.clone());
            }
        }
        *self.table.write() = table;
        drop(stores);
        for s in removed {
            // A compaction of the store in flight finishes (and finds its family gone) first.
            let _c = s.compaction_lock();
            self.memstore_shrank(s.memstore_size_bytes());
            self.config
                .archive
                .keep(&[s.dir().to_owned()], "its family was dropped")?;
        }
        Ok(())
    }

    fn family_error(&self, family: &[u8]) -> Error {
        Error::NoSuchColumnFamily {
            table: self.table().table_name().to_string(),
            family: basalt_model::bytes_fmt::to_string_binary(family),
        }
    }

    /// `NoSuchColumnFamily` unless the table has `family`. Every cell of a write is checked
    /// so: it takes the stores' lock and no reference count, whose line a read on another
    /// thread would take back.
    ///
    /// # Errors
    /// `NoSuchColumnFamily`.
    pub fn check_family(&self, family: &[u8]) -> Result<()> {
        let known = self.stores.read().contains_key(family);
        // The error reads the table's descriptor: not under the stores' lock.
        if known {
            Ok(())
        } else {
            Err(self.family_error(family))
        }
    }
}
