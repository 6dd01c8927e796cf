//! The engine's only way to touch files and the clock.
//!
//! Everything the engine does to disk goes through [`Env`] (the directory lock, creating,
//! opening, reading, listing, sizing, removing), so tests can swap the clock for a
//! [`ManualClock`] (TTL tests) and put a [`FaultInjector`] under the file system (crash,
//! disk-full and failed-read tests), and shared storage can take the file system's place.
//! Clippy's `disallowed-methods` (the storage crate's `clippy.toml`) refuses `std::fs` and
//! `Instant::now` anywhere else in the engine; this module alone may call them.
//!
//! # Thread safety
//! `Env` is cheap to clone and shared by every region; both halves are `Send + Sync`.

#![allow(clippy::disallowed_methods)]

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use basalt_model::{Error, Result};

mod fault;
pub mod object;
mod random_access;
mod read_buffer;
mod shared;
mod writable;

use fault::Verdict;
pub use fault::{FaultInjector, Op};
pub use object::{MemoryStore, ObjectStore};
pub use random_access::RandomAccessFile;
use random_access::Source;
pub use read_buffer::ReadBuffer;
use shared::SharedFs;
pub use shared::FENCE_MARKER;
use writable::Sink;
pub use writable::WritableFile;

/// Milliseconds since the epoch, the unit of cell timestamps.
pub trait Clock: Send + Sync + std::fmt::Debug {
    /// The current time in milliseconds since the Unix epoch (UTC).
    fn now_ms(&self) -> i64;
}

/// The system clock.
#[derive(Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        let d = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
    }
}

/// A clock that moves only when told to; for tests of TTLs and timestamps.
#[derive(Debug)]
pub struct ManualClock(AtomicI64);

impl ManualClock {
    /// A clock reading `now_ms`.
    #[must_use]
    pub fn new(now_ms: i64) -> ManualClock {
        ManualClock(AtomicI64::new(now_ms))
    }

    /// Moves the clock forward by `ms`.
    pub fn advance(&self, ms: i64) {
        self.0.fetch_add(ms, Ordering::SeqCst);
    }

    /// Sets the clock.
    pub fn set(&self, now_ms: i64) {
        self.0.store(now_ms, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> i64 {
        self.0.load(Ordering::SeqCst)
    }
}

/// The held lock of a data directory (see [`Env::lock`]); released when dropped. On shared
/// storage there is none: a cluster keeps writers apart with ZooKeeper and fencing.
#[derive(Debug)]
pub struct DirLock(#[allow(dead_code)] Option<File>);

/// Files and time, as the engine sees them.
#[derive(Clone, Debug)]
pub struct Env {
    clock: Arc<dyn Clock>,
    faults: Option<Arc<FaultInjector>>,
    /// Shared storage in place of the local file system (see [`object`]).
    shared: Option<Arc<SharedFs>>,
}

impl Default for Env {
    fn default() -> Self {
        Env {
            clock: Arc::new(SystemClock),
            faults: None,
            shared: None,
        }
    }
}

/// An `Io` error naming what was being done to which path.
fn io_err(what: &str, path: &Path, e: std::io::Error) -> Error {
    Error::io(format!("{what} {}", path.display()), e)
}

/// Asks the injector (if any) about an operation; a refusal becomes an `Io` error naming
/// `what` and the path.
fn gate(
    faults: Option<&Arc<FaultInjector>>,
    op: Op,
    path: &Path,
    len: usize,
    what: &str,
) -> Result<Verdict> {
    let Some(f) = faults else {
        return Ok(Verdict::Proceed);
    };
    match f.check(op, path, len) {
        Verdict::Fail(kind, msg) => Err(Error::io(
            format!("{what} {}", path.display()),
            std::io::Error::new(kind, msg),
        )),
        v => Ok(v),
    }
}

fn record(faults: Option<&Arc<FaultInjector>>, op: Op, path: &Path, len: usize) {
    if let Some(f) = faults {
        f.done(op, path, len);
    }
}

impl Env {
    /// An environment with the given clock and the real file system.
    #[must_use]
    pub fn with_clock(clock: Arc<dyn Clock>) -> Env {
        Env {
            clock,
            faults: None,
            shared: None,
        }
    }

    /// An environment whose files live in `store`: the path `root` (conventionally the
    /// store's URL) is the store's root, and every path the engine uses must lie under it.
    #[must_use]
    pub fn on_shared(clock: Arc<dyn Clock>, store: Arc<dyn ObjectStore>, root: PathBuf) -> Env {
        Env {
            clock,
            faults: None,
            shared: Some(Arc::new(SharedFs::new(root, store))),
        }
    }

    /// Whether this environment is on shared storage (an object store), where a completed
    /// create is durable and a create whose answer was lost may have taken effect.
    #[must_use]
    pub fn is_shared(&self) -> bool {
        self.shared.is_some()
    }

    /// An environment whose file operations pass through `faults` (tests).
    #[must_use]
    pub fn with_faults(clock: Arc<dyn Clock>, faults: Arc<FaultInjector>) -> Env {
        Env {
            clock,
            faults: Some(faults),
            shared: None,
        }
    }

    /// The clock timestamps come from.
    #[must_use]
    pub fn clock(&self) -> Arc<dyn Clock> {
        Arc::clone(&self.clock)
    }

    /// Now, in milliseconds since the epoch.
    #[must_use]
    pub fn now_ms(&self) -> i64 {
        self.clock.now_ms()
    }

    /// Now on the monotonic clock, for durations and rates (how long a compaction took, how
    /// far a throttle is ahead of its limit), never for timestamps.
    #[must_use]
    pub fn instant(&self) -> std::time::Instant {
        std::time::Instant::now()
    }

    /// Takes the exclusive lock on `path` (created if missing) that keeps a second process
    /// out of a data directory; it is held until the returned lock is dropped.
    ///
    /// # Errors
    /// `DoNotRetry` when another process holds it; `Io` naming the path.
    pub fn lock(&self, path: &Path) -> Result<DirLock> {
        gate(self.faults.as_ref(), Op::Lock, path, 0, "locking")?;
        if self.shared.is_some() {
            return Ok(DirLock(None));
        }
        let f = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)
            .map_err(|e| Error::io(format!("opening {}", path.display()), e))?;
        match f.try_lock() {
            Ok(()) => Ok(DirLock(Some(f))),
            Err(std::fs::TryLockError::WouldBlock) => Err(Error::DoNotRetry(format!(
                "the data directory {} is in use by another process",
                path.parent().unwrap_or(path).display()
            ))),
            Err(std::fs::TryLockError::Error(e)) => {
                Err(Error::io(format!("locking {}", path.display()), e))
            }
        }
    }

    /// Whether `path` exists.
    ///
    /// # Errors
    /// `Io` naming the path when it cannot be looked at (other than being absent).
    pub fn exists(&self, path: &Path) -> Result<bool> {
        gate(self.faults.as_ref(), Op::Open, path, 0, "looking at")?;
        if let Some(s) = &self.shared {
            return s.exists(path).map_err(|e| io_err("looking at", path, e));
        }
        path.try_exists()
            .map_err(|e| Error::io(format!("looking at {}", path.display()), e))
    }

    /// Whether `path` is a directory (false when it is absent).
    ///
    /// # Errors
    /// `Io` naming the path when it cannot be looked at (other than being absent).
    pub fn is_dir(&self, path: &Path) -> Result<bool> {
        gate(self.faults.as_ref(), Op::Open, path, 0, "looking at")?;
        if let Some(s) = &self.shared {
            return s.is_dir(path).map_err(|e| io_err("looking at", path, e));
        }
        match std::fs::metadata(path) {
            Ok(m) => Ok(m.is_dir()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(Error::io(format!("looking at {}", path.display()), e)),
        }
    }

    /// The size of a file in bytes.
    ///
    /// # Errors
    /// `Io` naming the path.
    pub fn file_size(&self, path: &Path) -> Result<u64> {
        gate(
            self.faults.as_ref(),
            Op::Open,
            path,
            0,
            "reading the size of",
        )?;
        if let Some(s) = &self.shared {
            return s
                .size(path)
                .map_err(|e| io_err("reading the size of", path, e));
        }
        std::fs::metadata(path)
            .map(|m| m.len())
            .map_err(|e| Error::io(format!("reading the size of {}", path.display()), e))
    }

    /// Creates `path` for writing, failing if it exists.
    ///
    /// # Errors
    /// `Io` naming the path.
    pub fn create(&self, path: &Path) -> Result<WritableFile> {
        gate(self.faults.as_ref(), Op::Create, path, 0, "creating")?;
        if let Some(s) = &self.shared {
            let w = s.create(path).map_err(|e| io_err("creating", path, e))?;
            return Ok(self.writable(Sink::Object(w), path));
        }
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)
            .map_err(|e| Error::io(format!("creating {}", path.display()), e))?;
        record(self.faults.as_ref(), Op::Create, path, 0);
        Ok(self.writable(Sink::Local(Arc::new(file)), path))
    }

    /// Creates a log at `path`, failing if it exists: a file on local disk; on shared
    /// storage a prefix of chunk objects, one per sync (see [`object`]). Read it back with
    /// [`Env::read_all`], size it with [`Env::file_size`], remove it with
    /// [`Env::remove_log`].
    ///
    /// # Errors
    /// `Io` naming the path.
    pub fn create_log(&self, path: &Path) -> Result<WritableFile> {
        if let Some(s) = &self.shared {
            gate(self.faults.as_ref(), Op::Create, path, 0, "creating")?;
            let w = s
                .create_log(path)
                .map_err(|e| io_err("creating", path, e))?;
            return Ok(self.writable(Sink::Log(w), path));
        }
        self.create(path)
    }

    /// Fences the logs in directory `dir` against their writer, for `by` (the master taking
    /// over a dead server's log): that writer's next sync, and any log it creates there from
    /// now on, fail with a final "fenced" error, and readers end each log where the fence is.
    /// Returns how many logs were fenced.
    ///
    /// # Errors
    /// `DoNotRetry` on local disk, which no other process writes; `Io`.
    pub fn fence_logs(&self, dir: &Path, by: &str) -> Result<usize> {
        self.shared_logs(dir)?
            .fence_logs(dir, by)
            .map_err(|e| io_err("fencing", dir, e))
    }

    /// Deletes the records of a log in a directory fenced with [`Env::fence_logs`], once
    /// they are split: its fence stays (a log made after the fencing gets one now), so its
    /// writer still cannot take the log's next chunk. What is left reads as an empty log.
    ///
    /// # Errors
    /// `DoNotRetry` on local disk; `Io`, also for a log whose directory is not fenced.
    pub fn clear_fenced_log(&self, path: &Path) -> Result<()> {
        self.shared_logs(path)?
            .clear_fenced_log(path)
            .map_err(|e| io_err("clearing", path, e))
    }

    /// The shared storage that logs at `path` are fenced on; local disk has none, since no
    /// other process writes it.
    fn shared_logs(&self, path: &Path) -> Result<&SharedFs> {
        self.shared.as_deref().ok_or_else(|| {
            Error::DoNotRetry(format!(
                "{} is on local disk: only logs on shared storage are fenced",
                path.display()
            ))
        })
    }

    /// Removes a log made by [`Env::create_log`]; a missing one is not an error.
    ///
    /// # Errors
    /// `Io` naming the path.
    pub fn remove_log(&self, path: &Path) -> Result<()> {
        if let Some(s) = &self.shared {
            gate(self.faults.as_ref(), Op::Remove, path, 0, "removing")?;
            return s.remove_all(path).map_err(|e| io_err("removing", path, e));
        }
        self.remove_file(path)
    }

    fn writable(&self, sink: Sink, path: &Path) -> WritableFile {
        WritableFile::new(sink, path, self.faults.clone(), 0)
    }

    /// Opens an existing file for appending (WAL reuse after truncation).
    ///
    /// # Errors
    /// `Io` naming the path.
    pub fn open_append(&self, path: &Path) -> Result<WritableFile> {
        if self.shared.is_some() {
            return Err(io_err(
                "opening",
                path,
                std::io::Error::new(
                    std::io::ErrorKind::Unsupported,
                    "objects on shared storage cannot be appended to",
                ),
            ));
        }
        let file = OpenOptions::new()
            .append(true)
            .open(path)
            .map_err(|e| Error::io(format!("opening {}", path.display()), e))?;
        let len = file.metadata().map(|m| m.len()).unwrap_or(0);
        if let Some(f) = &self.faults {
            f.track_existing(path, len);
        }
        Ok(WritableFile::new(
            Sink::Local(Arc::new(file)),
            path,
            self.faults.clone(),
            len,
        ))
    }

    /// Opens `path` for positional reads.
    ///
    /// # Errors
    /// `Io` naming the path.
    pub fn open(&self, path: &Path) -> Result<RandomAccessFile> {
        gate(self.faults.as_ref(), Op::Open, path, 0, "opening")?;
        if let Some(s) = &self.shared {
            let (store, key, len) = s.open(path).map_err(|e| io_err("opening", path, e))?;
            return Ok(RandomAccessFile {
                source: Source::Object(store, key),
                len,
                path: path.to_owned(),
            });
        }
        let file =
            File::open(path).map_err(|e| Error::io(format!("opening {}", path.display()), e))?;
        let len = file
            .metadata()
            .map_err(|e| Error::io(format!("reading the size of {}", path.display()), e))?
            .len();
        Ok(RandomAccessFile {
            source: Source::Local(file),
            len,
            path: path.to_owned(),
        })
    }

    /// Reads a whole file.
    ///
    /// # Errors
    /// `Io` naming the path.
    pub fn read_all(&self, path: &Path) -> Result<Vec<u8>> {
        gate(self.faults.as_ref(), Op::Read, path, 0, "reading")?;
        if let Some(s) = &self.shared {
            return s.read_all(path).map_err(|e| io_err("reading", path, e));
        }
        std::fs::read(path).map_err(|e| Error::io(format!("reading {}", path.display()), e))
    }

    /// Creates a directory and its parents, syncing each new one's parent so the new entries
    /// survive a crash (files are later listed by a manifest that a crash must not orphan).
    ///
    /// # Errors
    /// `Io` naming the path.
    pub fn create_dir_all(&self, path: &Path) -> Result<()> {
        if self.shared.is_some() || path.as_os_str().is_empty() || path.is_dir() {
            return Ok(());
        }
        if let Some(parent) = path.parent() {
            self.create_dir_all(parent)?;
        }
        match std::fs::create_dir(path) {
            Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => {
                return Err(Error::io(
                    format!("creating directory {}", path.display()),
                    e,
                ));
            }
            _ => {}
        }
        match path.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => self.sync_dir(parent),
            _ => Ok(()),
        }
    }

    /// Makes a directory's entries (new and removed files) durable.
    ///
    /// # Errors
    /// `Io` naming the directory.
    pub fn sync_dir(&self, path: &Path) -> Result<()> {
        gate(
            self.faults.as_ref(),
            Op::SyncDir,
            path,
            0,
            "syncing directory",
        )?;
        if self.shared.is_some() {
            return Ok(()); // directories are key prefixes
        }
        File::open(path)
            .and_then(|d| d.sync_all())
            .map_err(|e| Error::io(format!("syncing directory {}", path.display()), e))?;
        record(self.faults.as_ref(), Op::SyncDir, path, 0);
        Ok(())
    }

    /// The names of the entries of a directory (empty if it does not exist).
    ///
    /// # Errors
    /// `Io` naming the directory.
    pub fn list(&self, path: &Path) -> Result<Vec<String>> {
        gate(self.faults.as_ref(), Op::List, path, 0, "listing")?;
        if let Some(s) = &self.shared {
            return s.list(path).map_err(|e| io_err("listing", path, e));
        }
        let rd = match std::fs::read_dir(path) {
            Ok(rd) => rd,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(Error::io(format!("listing {}", path.display()), e)),
        };
        let mut names = Vec::new();
        for entry in rd {
            let entry = entry.map_err(|e| Error::io(format!("listing {}", path.display()), e))?;
            names.push(entry.file_name().to_string_lossy().into_owned());
        }
        names.sort();
        Ok(names)
    }

    /// Removes a file; a file that is already gone is not an error.
    ///
    /// # Errors
    /// `Io` naming the path.
    pub fn remove_file(&self, path: &Path) -> Result<()> {
        gate(self.faults.as_ref(), Op::Remove, path, 0, "removing")?;
        if let Some(s) = &self.shared {
            return s.remove_file(path).map_err(|e| io_err("removing", path, e));
        }
        record(self.faults.as_ref(), Op::Remove, path, 0);
        match std::fs::remove_file(path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(Error::io(format!("removing {}", path.display()), e)),
        }
    }

    /// Removes a directory tree; a missing one is not an error.
    ///
    /// # Errors
    /// `Io` naming the path.
    pub fn remove_dir_all(&self, path: &Path) -> Result<()> {
        gate(self.faults.as_ref(), Op::Remove, path, 0, "removing")?;
        if let Some(s) = &self.shared {
            return s.remove_all(path).map_err(|e| io_err("removing", path, e));
        }
        record(self.faults.as_ref(), Op::Remove, path, 0);
        match std::fs::remove_dir_all(path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(Error::io(format!("removing {}", path.display()), e)),
        }
    }

    /// Moves a file or directory to `to` (whose parent must exist). Used only to set files
    /// aside (the archive), never to commit anything: renames are not atomic on shared storage.
    ///
    /// # Errors
    /// `Io` naming both paths.
    pub fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        gate(self.faults.as_ref(), Op::Rename, from, 0, "moving")?;
        if let Some(s) = &self.shared {
            return s.rename(from, to).map_err(|e| {
                Error::io(format!("moving {} to {}", from.display(), to.display()), e)
            });
        }
        std::fs::rename(from, to)
            .map_err(|e| Error::io(format!("moving {} to {}", from.display(), to.display()), e))?;
        if let Some(f) = &self.faults {
            f.renamed(from, to);
        }
        Ok(())
    }

    /// Truncates a file to `len` bytes and syncs it (dropping a torn WAL tail).
    ///
    /// # Errors
    /// `Io` naming the path.
    pub fn truncate(&self, path: &Path, len: u64) -> Result<()> {
        let n = usize::try_from(len).unwrap_or(usize::MAX);
        gate(self.faults.as_ref(), Op::Truncate, path, n, "truncating")?;
        if let Some(s) = &self.shared {
            return s
                .truncate_log(path, len)
                .map_err(|e| io_err("truncating", path, e));
        }
        self.truncate_file(path, len)?;
        record(self.faults.as_ref(), Op::Truncate, path, n);
        Ok(())
    }

    fn truncate_file(&self, path: &Path, len: u64) -> Result<()> {
        let f = OpenOptions::new()
            .write(true)
            .open(path)
            .map_err(|e| Error::io(format!("opening {}", path.display()), e))?;
        f.set_len(len)
            .and_then(|()| f.sync_all())
            .map_err(|e| Error::io(format!("truncating {}", path.display()), e))
    }
}
