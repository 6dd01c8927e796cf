//! The embedded database: open a directory, manage namespaces and tables, read and write.
//!
//! # Layout of the data directory
//! ```text
//! LOCK                                   held (flock) while a process has the database open
//! catalog/CATALOG-<n>                    namespaces, tables, regions
//! wal/<id>.wal                           the write-ahead log
//! data/<ns>/<table>/<region id>/MANIFEST-<n>, <family hex>/<file id>.sf
//! archive/<time>-<n>/data/...            files set aside before deletion (basalt_storage::archive)
//! ```
//!
//! # What is never deleted
//! Opening never turns missing metadata into an empty database: table directories without a
//! catalog refuse the open (`basalt hbck` rebuilds the catalog), and a region without a
//! manifest, or with a damaged manifest or store file, fails to open on its own: the rest
//! serves, the region answers `RegionOfflineException`, and its files stay where they are.
//! Everything else the engine drops goes through the archive (basalt_storage::archive).

mod admin;
mod background;
mod meta;
mod regions;
mod table;

pub use background::BackgroundConfig;

pub use table::{Table, TableScanner};

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use basalt_model::limits::DEFAULT_MAX_CELL_SIZE_BYTES;
use basalt_model::{Error, Result, TableName};
use parking_lot::{Mutex, RwLock};

use crate::catalog::{Catalog, TableEntry};
use background::Background;
use basalt_storage::archive::Archive;
use basalt_storage::block_cache::{BlockCache, CacheStats};
use basalt_storage::env::Env;
use basalt_storage::manifest::VersionedFile;
use basalt_storage::region::{EngineStats, Region, RegionConfig, RegionInfo};
use basalt_storage::wal::{Wal, DEFAULT_ROLL_SIZE_BYTES};

/// Counters of the engine's background work and flow control since the database opened.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EngineStatsSnapshot {
    pub flushes: u64,
    pub flushed_bytes: u64,
    pub minor_compactions: u64,
    pub major_compactions: u64,
    pub compacted_bytes_read: u64,
    pub compacted_bytes_written: u64,
    /// Writes that waited for a flush.
    pub delayed_writes: u64,
    /// Writes refused with `RegionTooBusy`.
    pub refused_writes: u64,
    /// Background flushes and compactions that failed (and were retried).
    pub background_errors: u64,
    /// Bytes in all memstores now.
    pub memstore_bytes: u64,
    /// Syncs of the WAL (each may acknowledge many writes: group commit).
    pub wal_syncs: u64,
    /// Periodic checks of the background workers finished (due compactions, periodic
    /// flushes, the archive cleaner).
    pub periodic_checks: u64,
}

/// Default block cache capacity.
pub const DEFAULT_BLOCK_CACHE_BYTES: usize = 256 << 20;

/// Settings of an embedded database. Every field has HBase's default.
#[derive(Clone, Debug)]
pub struct Options {
    pub env: Env,
    /// `hbase.server.keyvalue.maxsize` (10 MiB); 0 disables the check.
    pub max_cell_size_bytes: usize,
    /// `hbase.table.max.rowsize` (1 GiB): a larger row read without batching fails.
    pub max_row_size_bytes: usize,
    /// `hbase.hstore.time.to.purge.deletes` (0).
    pub time_to_purge_deletes_ms: i64,
    /// WAL segment roll size (64 MiB).
    pub wal_roll_size_bytes: u64,
    /// `hbase.hregion.max.filesize` (10 GiB): a region splits when its largest store passes
    /// it, unless its table sets its own `MAX_FILESIZE`.
    pub max_filesize_bytes: u64,
    /// Block cache capacity (256 MiB); 0 caches nothing.
    pub block_cache_bytes: usize,
    /// Flushes, compactions and write stalls.
    pub background: BackgroundConfig,
    /// How long an operation keeps retrying a region that a split or merge has closed
    /// (`NotServingRegion`) before it gives up with that error (60 s).
    pub region_retry_timeout: std::time::Duration,
    /// The host and port `hbase:meta` names as the regions' server.
    pub server_host: String,
    pub server_port: u16,
    /// How long archived files are kept before the cleaner removes them
    /// (`hbase.master.hfilecleaner.ttl`, 5 minutes).
    pub archive_retention_ms: i64,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            env: Env::default(),
            max_cell_size_bytes: DEFAULT_MAX_CELL_SIZE_BYTES,
            max_row_size_bytes: basalt_model::limits::DEFAULT_MAX_ROW_SIZE_BYTES,
            time_to_purge_deletes_ms: 0,
            wal_roll_size_bytes: DEFAULT_ROLL_SIZE_BYTES,
            max_filesize_bytes: basalt_model::descriptor::DEFAULT_MAX_FILESIZE_BYTES,
            block_cache_bytes: DEFAULT_BLOCK_CACHE_BYTES,
            background: BackgroundConfig::default(),
            region_retry_timeout: std::time::Duration::from_secs(60),
            server_host: "localhost".to_owned(),
            server_port: 16020,
            archive_retention_ms: basalt_storage::archive::DEFAULT_ARCHIVE_RETENTION_MS,
        }
    }
}

/// An open database. Cheap to clone; every clone is the same database.
#[derive(Clone, Debug)]
pub struct Database {
    inner: Arc<Handle>,
}

/// What users hold (through `Database` and `Table`): when the last goes, the background
/// workers are stopped and joined before the database itself is dropped, so the directory
/// lock is free once the user's last handle is gone (a worker may hold the database for the
/// length of a split).
#[derive(Debug)]
pub(crate) struct Handle(Arc<DbInner>);

impl std::ops::Deref for Handle {
    type Target = DbInner;

    fn deref(&self) -> &DbInner {
        &self.0
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        self.0.background.shutdown();
    }
}

/// The database's shared state.
///
/// # Lock order
/// Locks are taken in this order, never against it:
/// 1. `catalog` (DDL, splits, merges, the janitor);
/// 2. `tables`;
/// 3. a `TableState`'s `enabled`, `regions` and `failed`;
/// 4. `meta`'s rows (the `hbase:meta` mirror, written under `catalog`);
/// 5. a region's own locks (`region/mod.rs`: `flush_lock`, `updates`, `stores`, `manifest`),
///    then the WAL's (`wal/mod.rs`) and the MVCC's.
///
/// The background workers' locks (`background.rs`) are leaves: nothing else is taken while
/// one is held.
///
/// Guards of 2 and 3 are held only to read or replace an entry, never across a call into a
/// region, the WAL or the workers: clone the `Arc`s out first ([`TableState::online`]),
/// *binding them before* an `if let`, `match` or `for` (a temporary guard in a scrutinee or
/// a loop's iterator lives to the end of the block; the workspace turns on clippy's
/// `significant_drop_in_scrutinee`, which flags it). A split on
/// the compactor thread once held the `tables` guard that way while it waited for `catalog`,
/// and DDL, holding `catalog`, waited for `tables`: every request hung. `catalog` may be held
/// across region work (opening, closing, flushing regions in DDL, splits and merges), because
/// no region path takes 1 to 4.
#[derive(Debug)]
pub(crate) struct DbInner {
    dir: PathBuf,
    options: Options,
    wal: Arc<Wal>,
    seq: Arc<AtomicU64>,
    block_cache: Arc<BlockCache>,
    memstore_total: Arc<AtomicUsize>,
    stats: Arc<EngineStats>,
    archive: Arc<Archive>,
    background: Background,
    /// Serializes catalog changes (DDL). Lock order 1.
    catalog: Mutex<(VersionedFile, Catalog)>,
    /// Lock order 2.
    tables: RwLock<HashMap<TableName, Arc<TableState>>>,
    meta: meta::MetaMirror,
    server: meta::ServerName,
    _lock: File,
}

/// A table's open regions and state. Its locks are order 3 (see [`DbInner`]).
#[derive(Debug)]
pub(crate) struct TableState {
    name: TableName,
    enabled: RwLock<bool>,
    /// Online regions in key order.
    regions: RwLock<Vec<Arc<Region>>>,
    /// Regions that failed to open, in key order: their rows answer `RegionOffline`.
    failed: RwLock<Vec<FailedRegion>>,
}

/// A region that failed to open (HBase's FAILED_OPEN): damaged or missing files.
#[derive(Clone, Debug)]
pub(crate) struct FailedRegion {
    pub info: RegionInfo,
    /// Why, as the error said.
    pub reason: String,
}

impl Database {
    /// Opens (creating if needed) the database in `dir` with default options.
    ///
    /// # Errors
    /// The directory is held by another process, or its files are corrupt.
    ///
    /// ```
    /// use basalt_node::Database;
    /// let dir = tempfile::tempdir()?;
    /// let db = Database::open(dir.path())?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn open(dir: impl AsRef<Path>) -> Result<Database> {
        Database::open_with(dir, Options::default())
    }

    /// Opens the database in `dir` with `options`: loads the catalog, opens every region and
    /// replays the WAL.
    ///
    /// # Errors
    /// The directory is held by another process, or its files are corrupt.
    pub fn open_with(dir: impl AsRef<Path>, options: Options) -> Result<Database> {
        let dir = dir.as_ref().to_owned();
        let env = options.env.clone();
        env.create_dir_all(&dir)?;
        let lock = acquire_lock(&dir)?;
        let (vf, catalog) = VersionedFile::load::<Catalog>(&env, &dir.join("catalog"), "CATALOG")
            .map_err(|e| with_repair_hint(e, &dir))?;
        let fresh = catalog.is_none();
        if fresh {
            refuse_tables_without_catalog(&env, &dir)?;
        }
        let mut catalog = catalog.unwrap_or_default();
        // A catalog written before cluster ids existed gets one now.
        let needs_id = catalog.cluster_id.is_empty();
        if needs_id {
            catalog.cluster_id = crate::catalog::new_cluster_id();
        }
        let seq = Arc::new(AtomicU64::new(0));
        let wal = Wal::open(&env, &dir.join("wal"), options.wal_roll_size_bytes)?;
        let memstore_total = Arc::new(AtomicUsize::new(0));
        let stats = Arc::new(EngineStats::default());
        let background = Background::start(
            options.background.clone(),
            Arc::clone(&wal),
            Arc::clone(&seq),
            Arc::clone(&memstore_total),
            Arc::clone(&stats),
        )?;
        let inner = DbInner {
            memstore_total,
            stats,
            archive: Arc::new(Archive::new(&env, &dir)),
            background,
            dir,
            wal: Arc::clone(&wal),
            seq: Arc::clone(&seq),
            block_cache: BlockCache::new(options.block_cache_bytes),
            catalog: Mutex::new((vf, catalog.clone())),
            tables: RwLock::new(HashMap::new()),
            meta: meta::MetaMirror::default(),
            server: meta::ServerName {
                host: options.server_host.clone(),
                port: options.server_port,
                start_code: env.now_ms(),
            },
            options,
            _lock: lock,
        };
        inner.archive_orphans(&catalog)?;
        for entry in catalog.tables.values() {
            inner.open_table(entry);
        }
        inner.replay_wal()?;
        wal.start_background_sync();
        if fresh || needs_id {
            inner.commit_catalog(&mut inner.catalog.lock())?;
        }
        inner.open_meta(&catalog)?;
        let inner = Arc::new(inner);
        inner.background.attach(&inner);
        // Parents a crash kept past the compaction that freed them.
        inner.clean_retired()?;
        inner.clean_archive();
        Ok(Database {
            inner: Arc::new(Handle(inner)),
        })
    }

    /// The cluster's id (HBase's `hbase.id`): a UUID made when the store was created.
    #[must_use]
    pub fn cluster_id(&self) -> String {
        self.inner.catalog.lock().1.cluster_id.clone()
    }

    /// The data directory.
    #[must_use]
    pub fn dir(&self) -> &Path {
        &self.inner.dir
    }

    /// A handle to read and write `table`.
    ///
    /// # Errors
    /// `IllegalArgument` for a bad name, `TableNotFound`.
    pub fn table(&self, name: &str) -> Result<Table> {
        self.table_handle(&TableName::parse(name)?)
    }

    /// A handle to read and write table `name`.
    ///
    /// # Errors
    /// `TableNotFound`.
    pub fn table_handle(&self, name: &TableName) -> Result<Table> {
        let state = self
            .inner
            .tables
            .read()
            .get(name)
            .cloned()
            .ok_or_else(|| Error::TableNotFound(name.to_string()))?;
        Ok(Table::new(Arc::clone(&self.inner), state))
    }

    /// Makes every acknowledged write durable (ASYNC_WAL ones included), flushes every
    /// region (as HBase does when it closes them, so the next open has no WAL to replay) and
    /// stops background work. Dropping the database without closing loses nothing
    /// acknowledged under SYNC_WAL.
    ///
    /// # Errors
    /// The final WAL sync failed. A failed flush is logged, not returned: the WAL keeps
    /// what it did not write.
    pub fn close(self) -> Result<()> {
        // hbase:meta is a mirror written again at every open: it needs no flush.
        let regions = self.inner.all_regions().into_iter();
        let mut flushed = true;
        for r in regions.filter(|r| !r.table().table_name().is_system()) {
            if let Err(e) = r.flush() {
                flushed = false;
                tracing::warn!(region = %r.name(), error = %e, "flush at close failed; the WAL keeps its edits");
            }
        }
        let retired = if flushed {
            self.inner
                .wal
                .roll_now()
                .and_then(|()| self.inner.retire_wal())
        } else {
            Ok(())
        };
        if let Err(e) = retired {
            tracing::warn!(error = %e, "retiring the WAL at close failed; the next open replays it");
        }
        self.inner.background.shutdown();
        self.inner.wal.shutdown()
    }

    /// Waits until no flush or compaction is queued or running (tests, tools and benchmarks
    /// that want a settled store).
    ///
    /// # Errors
    /// A background flush or compaction failed while waiting; it is retried later.
    pub fn wait_for_background(&self) -> Result<()> {
        self.inner.background.wait_idle()
    }

    /// Counters of flushes, compactions and write stalls.
    #[must_use]
    pub fn engine_stats(&self) -> EngineStatsSnapshot {
        let s = &self.inner.stats;
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        EngineStatsSnapshot {
            flushes: get(&s.flushes),
            flushed_bytes: get(&s.flushed_bytes),
            minor_compactions: get(&s.minor_compactions),
            major_compactions: get(&s.major_compactions),
            compacted_bytes_read: get(&s.compacted_bytes_read),
            compacted_bytes_written: get(&s.compacted_bytes_written),
            delayed_writes: get(&s.delayed_writes),
            refused_writes: get(&s.refused_writes),
            background_errors: self.inner.background.error_count(),
            memstore_bytes: self.inner.memstore_total.load(Ordering::Relaxed) as u64,
            wal_syncs: self.inner.wal.sync_count(),
            periodic_checks: self.inner.background.periodic_checks(),
        }
    }

    /// The block cache's counters and size.
    #[must_use]
    pub fn block_cache_stats(&self) -> CacheStats {
        self.inner.block_cache.stats()
    }

    /// Number of WAL segment files kept (tests and diagnostics).
    #[must_use]
    pub fn wal_segment_count(&self) -> usize {
        self.inner.wal.segment_count()
    }
}

pub(crate) fn acquire_lock(dir: &Path) -> Result<File> {
    let path = dir.join("LOCK");
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| Error::io(format!("opening {}", path.display()), e))?;
    match f.try_lock() {
        Ok(()) => Ok(f),
        Err(std::fs::TryLockError::WouldBlock) => Err(Error::DoNotRetry(format!(
            "the data directory {} is in use by another process",
            dir.display()
        ))),
        Err(std::fs::TryLockError::Error(e)) => {
            Err(Error::io(format!("locking {}", path.display()), e))
        }
    }
}

impl DbInner {
    fn region_config(&self) -> RegionConfig {
        RegionConfig {
            archive: Arc::clone(&self.archive),
            time_to_purge_deletes_ms: self.options.time_to_purge_deletes_ms,
            max_cell_size_bytes: self.options.max_cell_size_bytes,
            max_row_size_bytes: self.options.max_row_size_bytes,
            max_filesize_bytes: self.options.max_filesize_bytes,
            block_cache: Arc::clone(&self.block_cache),
            memstore_total: Arc::clone(&self.memstore_total),
            stats: Arc::clone(&self.stats),
        }
    }

    fn table_dir(&self, t: &TableName) -> PathBuf {
        self.dir
            .join("data")
            .join(t.namespace())
            .join(t.qualifier())
    }

    /// Opens the region in `dir` on this database's WAL and sequence ids.
    fn open_region(
        &self,
        dir: &Path,
        info: &RegionInfo,
        desc: &Arc<basalt_model::TableDescriptor>,
        config: RegionConfig,
    ) -> Result<Region> {
        Region::open(
            &self.options.env,
            dir,
            info.clone(),
            Arc::clone(desc),
            config,
            Arc::clone(&self.wal),
            Arc::clone(&self.seq),
        )
    }

    /// Opens the regions of a table the catalog lists (at startup). A region that fails to
    /// open is recorded as failed, with the reason, and the others serve.
    fn open_table(&self, entry: &TableEntry) {
        let name = entry.descriptor.table_name();
        let desc = Arc::new(entry.descriptor.clone());
        let tdir = self.table_dir(&name);
        let (mut regions, mut failed) = (Vec::new(), Vec::new());
        for info in &entry.regions {
            let rdir = tdir.join(info.id.to_string());
            let opened = self.open_region(&rdir, info, &desc, self.region_config());
            match opened {
                Ok(r) => {
                    let r = Arc::new(r);
                    self.background.register(&r);
                    regions.push(r);
                }
                Err(e) => {
                    let region = info.region_name_string(&name);
                    tracing::error!(%region, error = %e, "region failed to open; it stays offline and its files stay where they are");
                    failed.push(FailedRegion {
                        info: info.clone(),
                        reason: e.to_string(),
                    });
                }
            }
        }
        if let Err(e) =
            basalt_storage::region::repair::write_table_info(&self.options.env, &tdir, &desc)
        {
            tracing::warn!(table = %name, error = %e, "could not write the table's descriptor file");
        }
        let state = TableState::new(name.clone(), entry.enabled, regions, failed);
        self.tables.write().insert(name, state);
    }

    /// Creates the regions of a new table (directories and first manifests) and opens them;
    /// the table is not in the map yet. On failure, what was made is archived.
    fn create_regions(&self, entry: &TableEntry) -> Result<Arc<TableState>> {
        let name = entry.descriptor.table_name();
        let desc = Arc::new(entry.descriptor.clone());
        let tdir = self.table_dir(&name);
        let mut regions = Vec::with_capacity(entry.regions.len());
        for info in &entry.regions {
            let rdir = tdir.join(info.id.to_string());
            let created = Region::create_empty(&self.options.env, &rdir, info.id)
                .and_then(|()| self.open_region(&rdir, info, &desc, self.region_config()));
            match created {
                Ok(r) => regions.push(Arc::new(r)),
                Err(e) => {
                    drop(regions);
                    self.archive_table_dir(&name);
                    return Err(e);
                }
            }
        }
        if let Err(e) =
            basalt_storage::region::repair::write_table_info(&self.options.env, &tdir, &desc)
        {
            drop(regions);
            self.archive_table_dir(&name);
            return Err(e);
        }
        for r in &regions {
            self.background.register(r);
        }
        Ok(TableState::new(name, entry.enabled, regions, Vec::new()))
    }

    /// Moves a table's directory (a dropped table, or one whose creation failed) to the
    /// archive; a failure is logged, and the directory is found as an orphan at the next
    /// open and archived then.
    fn archive_table_dir(&self, name: &TableName) {
        let dir = self.table_dir(name);
        if let Err(e) = self.archive.keep(&[dir], "its table was dropped") {
            tracing::warn!(table = %name, error = %e, "leaving a table directory behind");
        }
    }

    /// Changes the catalog all or nothing: `edit` works on a copy, which is committed and
    /// only then replaces the catalog in memory (a failed commit leaves memory as the disk
    /// is).
    fn edit_catalog<R>(
        &self,
        g: &mut (VersionedFile, Catalog),
        edit: impl FnOnce(&mut Catalog) -> Result<R>,
    ) -> Result<R> {
        let mut next = g.1.clone();
        let out = edit(&mut next)?;
        g.0.commit(&self.options.env, &next)?;
        g.1 = next;
        self.refresh_meta(&g.1);
        Ok(out)
    }

    fn all_regions(&self) -> Vec<Arc<Region>> {
        self.tables
            .read()
            .values()
            .flat_map(|t| t.online())
            .collect()
    }

    fn commit_catalog(&self, g: &mut (VersionedFile, Catalog)) -> Result<()> {
        let (vf, doc) = g;
        vf.commit(&self.options.env, doc)?;
        self.refresh_meta(doc);
        Ok(())
    }

    /// Deletes WAL segments every region has flushed past.
    fn retire_wal(&self) -> Result<()> {
        self.background.retire_wal()
    }

    /// Replays the WAL into the online regions and raises the sequence id past everything
    /// stored. Edits of a region that failed to open stay in the WAL, which is then kept
    /// whole until the region is repaired.
    fn replay_wal(&self) -> Result<()> {
        let failed = self.failed_regions();
        if !failed.is_empty() {
            tracing::warn!(
                regions = failed.len(),
                "regions failed to open; every WAL segment is kept until they are repaired"
            );
            self.background.hold_wal();
        }
        let regions: HashMap<u64, Arc<Region>> = self
            .all_regions()
            .into_iter()
            .map(|r| (r.info().id, r))
            .collect();
        let wal_max = self.wal.recover(|edit| {
            if let Some(r) = regions.get(&edit.region_id) {
                r.replay(edit.seq_id, edit.cells);
            }
            Ok(())
        })?;
        let stored_max = regions
            .values()
            .map(|r| r.max_stored_seq_id())
            .max()
            .unwrap_or(0);
        self.seq
            .fetch_max(wal_max.max(stored_max), Ordering::SeqCst);
        Ok(())
    }

    /// Removes archived files past their retention (HBase's cleaner chore); a failure is
    /// logged and retried at the next run.
    fn clean_archive(&self) {
        match self.archive.clean(self.options.archive_retention_ms) {
            Ok(0) => {}
            Ok(n) => tracing::info!(batches = n, "removed archived files past their retention"),
            Err(e) => tracing::warn!(error = %e, "cleaning the archive failed; will retry"),
        }
    }

    /// Regions that failed to open, with their table.
    fn failed_regions(&self) -> Vec<(TableName, FailedRegion)> {
        let tables: Vec<Arc<TableState>> = self.tables.read().values().cloned().collect();
        let mut out: Vec<(TableName, FailedRegion)> = tables
            .iter()
            .flat_map(|t| {
                t.failed
                    .read()
                    .iter()
                    .map(|f| (t.name.clone(), f.clone()))
                    .collect::<Vec<_>>()
            })
            .collect();
        out.sort_by(|a, b| (&a.0, &a.1.info.start_key).cmp(&(&b.0, &b.1.info.start_key)));
        out
    }
}

impl TableState {
    /// The online regions now, in key order. The guard is dropped before this returns, so
    /// the caller can call into the regions (lock order, see [`DbInner`]).
    fn online(&self) -> Vec<Arc<Region>> {
        self.regions.read().clone()
    }

    fn new(
        name: TableName,
        enabled: bool,
        regions: Vec<Arc<Region>>,
        failed: Vec<FailedRegion>,
    ) -> Arc<TableState> {
        Arc::new(TableState {
            name,
            enabled: RwLock::new(enabled),
            regions: RwLock::new(regions),
            failed: RwLock::new(failed),
        })
    }
}

/// A damaged catalog's error, with how to repair it.
fn with_repair_hint(e: Error, dir: &Path) -> Error {
    match e {
        Error::Corruption { what, path, detail } => Error::Corruption {
            what,
            path,
            detail: format!(
                "{detail}; nothing was changed. Restore the catalog directory from a backup, or rebuild it with `basalt hbck --data-dir {} --fix-catalog`",
                dir.display()
            ),
        },
        other => other,
    }
}

/// A data directory with table directories but no catalog is damage, not a new database:
/// refuses to open, naming what is missing and how to repair it, and changes nothing.
fn refuse_tables_without_catalog(env: &Env, dir: &Path) -> Result<()> {
    let data = dir.join("data");
    let mut tables = Vec::new();
    for ns in env.list(&data)? {
        for t in env.list(&data.join(&ns))? {
            // hbase:meta is a mirror the database writes again from the catalog.
            if !(ns == "hbase" && t == "meta") {
                tables.push(format!("{ns}:{t}"));
            }
        }
    }
    if tables.is_empty() {
        return Ok(());
    }
    let shown = tables
        .iter()
        .take(10)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    let more = if tables.len() > 10 {
        format!(" and {} more", tables.len() - 10)
    } else {
        String::new()
    };
    Err(Error::DoNotRetry(format!(
        "the catalog is missing: {} has no CATALOG-* file, but {} holds the tables {shown}{more}. \
         Nothing was changed. Restore the catalog directory from a backup, or rebuild it from the \
         region directories with `basalt hbck --data-dir {} --fix-catalog`",
        dir.join("catalog").display(),
        data.display(),
        dir.display()
    )))
}
