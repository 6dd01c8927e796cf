//! The embedded database, HBase's standalone mode: a master and one region server in this
//! process over a local data directory. Open a directory, manage namespaces and tables,
//! read and write.
//!
//! # Layout of the data directory
//! ```text
//! LOCK                                   held (flock) while a process has the database open
//! catalog/CATALOG-<n>                    namespaces, tables, regions
//! wal/<host>,<port>,<start code>/<id>.wal the region server's write-ahead log, one per start
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
pub(crate) mod status;
pub(crate) mod table;

pub use table::{Table, TableScanner};

use std::path::{Path, PathBuf};
use std::sync::Arc;

use basalt_model::{Error, Result, TableName};

use crate::catalog::Catalog;
use crate::master::Master;
use crate::options::{EngineStatsSnapshot, Options};
use crate::regionserver::{MasterQueue, RegionServer};
use basalt_storage::block_cache::CacheStats;
use basalt_storage::env::{DirLock, Env};
use basalt_storage::manifest::VersionedFile;

/// An open database: a master and one region server in this process (HBase's standalone
/// mode). Cheap to clone; every clone is the same database.
#[derive(Clone, Debug)]
pub struct Database {
    inner: Arc<Handle>,
}

/// What users hold (through `Database` and `Table`): when the last goes, the master's chores
/// and the region server's workers are stopped and joined before the node itself is
/// dropped, so the directory lock is free once the user's last handle is gone (a chore may
/// hold the node for the length of a split).
#[derive(Debug)]
pub(crate) struct Handle(Node);

impl std::ops::Deref for Handle {
    type Target = Node;

    fn deref(&self) -> &Node {
        &self.0
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        self.0.master.chores().stop();
        self.0.rs.shutdown();
    }
}

/// The roles of a standalone node. The master holds the region server only as its
/// `RegionServerServices`; the facade holds both to serve reads and writes in process.
#[derive(Debug)]
pub(crate) struct Node {
    pub dir: PathBuf,
    pub options: Options,
    pub master: Arc<Master>,
    pub rs: Arc<RegionServer>,
    /// `balance_switch`: with one server the balancer has nothing to move, but the switch
    /// answers as HBase's does.
    pub balancer_on: std::sync::atomic::AtomicBool,
    _lock: DirLock,
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

    /// Opens the database in `dir` with `options`: the master loads the catalog and assigns
    /// every region to the region server, which then replays earlier logs into them.
    ///
    /// # Errors
    /// The directory is held by another process, or its files are corrupt.
    pub fn open_with(dir: impl AsRef<Path>, options: Options) -> Result<Database> {
        let dir = dir.as_ref().to_owned();
        let env = options.env.clone();
        env.create_dir_all(&dir)?;
        let lock = acquire_lock(&env, &dir)?;
        let (vf, catalog) = load_catalog(&env, &dir)?;
        let (queue, inbox) = MasterQueue::new();
        let rs = Arc::new(RegionServer::start(&dir, &options, queue.clone())?);
        let master = Arc::new(Master::new(
            &dir,
            &env,
            Arc::clone(&rs) as _,
            Arc::clone(rs.archive()),
            options.archive_retention_ms,
            (vf, catalog.0),
        ));
        let failed = master.assign_all()?;
        rs.recover(failed)?;
        master.finish_start(catalog.1)?;
        let interval = options.background.compaction_check_interval;
        master.start_chores(queue, inbox, interval)?;
        Ok(Database {
            inner: Arc::new(Handle(Node {
                dir,
                options,
                master,
                rs,
                balancer_on: std::sync::atomic::AtomicBool::new(true),
                _lock: lock,
            })),
        })
    }

    /// The cluster's id (HBase's `hbase.id`): a UUID made when the store was created.
    #[must_use]
    pub fn cluster_id(&self) -> String {
        self.inner.master.cluster_id()
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
        let state = self.inner.master.state(name)?;
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
        self.inner.master.chores().stop();
        self.inner.rs.close()
    }

    /// Waits until no flush, compaction or split is queued or running (tests, tools and
    /// benchmarks that want a settled store).
    ///
    /// # Errors
    /// A background flush or compaction failed while waiting; it is retried later.
    pub fn wait_for_background(&self) -> Result<()> {
        let (rs, chores) = (&self.inner.rs, self.inner.master.chores());
        loop {
            rs.wait_idle()?;
            chores.wait_idle();
            // A split asks for compactions, and a compaction for a split: settled when both
            // are idle at once.
            if rs.is_idle() && chores.is_idle() {
                return Ok(());
            }
        }
    }

    /// Counters of flushes, compactions and write stalls.
    #[must_use]
    pub fn engine_stats(&self) -> EngineStatsSnapshot {
        self.inner.rs.stats()
    }

    /// The block cache's counters and size.
    #[must_use]
    pub fn block_cache_stats(&self) -> CacheStats {
        self.inner.rs.block_cache_stats()
    }

    /// Number of WAL segment files kept (tests and diagnostics).
    #[must_use]
    pub fn wal_segment_count(&self) -> usize {
        self.inner.rs.wal_segment_count()
    }
}

/// Loads the catalog: `((file, catalog), commit)`, where `commit` says the catalog is new
/// or gained a cluster id and must be committed. A data directory with tables and no
/// catalog is refused.
fn load_catalog(env: &Env, dir: &Path) -> Result<(VersionedFile, (Catalog, bool))> {
    let (vf, catalog) =
        Catalog::load(env, &dir.join("catalog")).map_err(|e| with_repair_hint(e, dir))?;
    let fresh = catalog.is_none();
    if fresh {
        refuse_tables_without_catalog(env, dir)?;
    }
    let mut catalog = catalog.unwrap_or_default();
    // A catalog written before cluster ids existed gets one now.
    let needs_id = catalog.cluster_id.is_empty();
    if needs_id {
        catalog.cluster_id = crate::catalog::new_cluster_id();
    }
    Ok((vf, (catalog, fresh || needs_id)))
}

/// Takes the data directory's lock (its `LOCK` file): one process at a time.
pub(crate) fn acquire_lock(env: &Env, dir: &Path) -> Result<DirLock> {
    env.lock(&dir.join("LOCK"))
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
