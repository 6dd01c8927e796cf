//! The engine's only way to touch files and the clock.
//!
//! Everything the engine does to disk goes through [`Env`], so tests can swap the clock for a
//! [`ManualClock`] (TTL tests) and, later, the file system for a fault-injecting one.
//!
//! # Thread safety
//! `Env` is cheap to clone and shared by every region; both halves are `Send + Sync`.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use basalt_model::{Error, Result};

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

/// Files and time, as the engine sees them.
#[derive(Clone, Debug)]
pub struct Env {
    clock: Arc<dyn Clock>,
}

impl Default for Env {
    fn default() -> Self {
        Env {
            clock: Arc::new(SystemClock),
        }
    }
}

impl Env {
    /// An environment with the given clock and the real file system.
    #[must_use]
    pub fn with_clock(clock: Arc<dyn Clock>) -> Env {
        Env { clock }
    }

    /// Now, in milliseconds since the epoch.
    #[must_use]
    pub fn now_ms(&self) -> i64 {
        self.clock.now_ms()
    }

    /// Creates `path` for writing, failing if it exists.
    ///
    /// # Errors
    /// `Io` naming the path.
    pub fn create(&self, path: &Path) -> Result<WritableFile> {
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)
            .map_err(|e| Error::io(format!("creating {}", path.display()), e))?;
        Ok(WritableFile {
            file,
            path: path.to_owned(),
        })
    }

    /// Opens an existing file for appending (WAL reuse after truncation).
    ///
    /// # Errors
    /// `Io` naming the path.
    pub fn open_append(&self, path: &Path) -> Result<WritableFile> {
        let file = OpenOptions::new()
            .append(true)
            .open(path)
            .map_err(|e| Error::io(format!("opening {}", path.display()), e))?;
        Ok(WritableFile {
            file,
            path: path.to_owned(),
        })
    }

    /// Opens `path` for positional reads.
    ///
    /// # Errors
    /// `Io` naming the path.
    pub fn open(&self, path: &Path) -> Result<RandomAccessFile> {
        let file =
            File::open(path).map_err(|e| Error::io(format!("opening {}", path.display()), e))?;
        let len = file
            .metadata()
            .map_err(|e| Error::io(format!("reading the size of {}", path.display()), e))?
            .len();
        Ok(RandomAccessFile {
            file,
            len,
            path: path.to_owned(),
        })
    }

    /// Reads a whole file.
    ///
    /// # Errors
    /// `Io` naming the path.
    pub fn read_all(&self, path: &Path) -> Result<Vec<u8>> {
        std::fs::read(path).map_err(|e| Error::io(format!("reading {}", path.display()), e))
    }

    /// Creates a directory and its parents.
    ///
    /// # Errors
    /// `Io` naming the path.
    pub fn create_dir_all(&self, path: &Path) -> Result<()> {
        std::fs::create_dir_all(path)
            .map_err(|e| Error::io(format!("creating directory {}", path.display()), e))
    }

    /// Makes a directory's entries (new and removed files) durable.
    ///
    /// # Errors
    /// `Io` naming the directory.
    pub fn sync_dir(&self, path: &Path) -> Result<()> {
        File::open(path)
            .and_then(|d| d.sync_all())
            .map_err(|e| Error::io(format!("syncing directory {}", path.display()), e))
    }

    /// The names of the entries of a directory (empty if it does not exist).
    ///
    /// # Errors
    /// `Io` naming the directory.
    pub fn list(&self, path: &Path) -> Result<Vec<String>> {
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
        match std::fs::remove_dir_all(path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(Error::io(format!("removing {}", path.display()), e)),
        }
    }

    /// Truncates a file to `len` bytes and syncs it (dropping a torn WAL tail).
    ///
    /// # Errors
    /// `Io` naming the path.
    pub fn truncate(&self, path: &Path, len: u64) -> Result<()> {
        let f = OpenOptions::new()
            .write(true)
            .open(path)
            .map_err(|e| Error::io(format!("opening {}", path.display()), e))?;
        f.set_len(len)
            .and_then(|()| f.sync_all())
            .map_err(|e| Error::io(format!("truncating {}", path.display()), e))
    }
}

/// A file being written sequentially.
#[derive(Debug)]
pub struct WritableFile {
    file: File,
    path: PathBuf,
}

impl WritableFile {
    /// Appends bytes.
    ///
    /// # Errors
    /// `Io` naming the file.
    pub fn write_all(&mut self, buf: &[u8]) -> Result<()> {
        self.file
            .write_all(buf)
            .map_err(|e| Error::io(format!("writing {}", self.path.display()), e))
    }

    /// fdatasync: the data written so far survives a crash.
    ///
    /// # Errors
    /// `Io` naming the file.
    pub fn sync_data(&self) -> Result<()> {
        self.file
            .sync_data()
            .map_err(|e| Error::io(format!("syncing {}", self.path.display()), e))
    }

    /// fsync: data and metadata survive a crash.
    ///
    /// # Errors
    /// `Io` naming the file.
    pub fn sync_all(&self) -> Result<()> {
        self.file
            .sync_all()
            .map_err(|e| Error::io(format!("syncing {}", self.path.display()), e))
    }

    /// A second handle to the same file, so a sync can run without the writer's lock.
    ///
    /// # Errors
    /// `Io` naming the file.
    pub fn try_clone(&self) -> Result<WritableFile> {
        let file = self
            .file
            .try_clone()
            .map_err(|e| Error::io(format!("duplicating {}", self.path.display()), e))?;
        Ok(WritableFile {
            file,
            path: self.path.clone(),
        })
    }

    /// The file's path.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// A file read at arbitrary offsets (store files).
#[derive(Debug)]
pub struct RandomAccessFile {
    file: File,
    len: u64,
    path: PathBuf,
}

impl RandomAccessFile {
    /// Reads exactly `len` bytes at `offset`.
    ///
    /// # Errors
    /// `Corruption` when the range is past the end of the file; `Io` otherwise.
    pub fn read_at(&self, offset: u64, len: usize) -> Result<Vec<u8>> {
        let end = offset.checked_add(len as u64);
        if end.is_none_or(|end| end > self.len) {
            return Err(Error::corruption(
                "file range",
                &self.path,
                format!(
                    "{len} bytes at offset {offset} run past the end ({} bytes)",
                    self.len
                ),
            ));
        }
        let mut buf = vec![0; len];
        self.file
            .read_exact_at(&mut buf, offset)
            .map_err(|e| Error::io(format!("reading {}", self.path.display()), e))?;
        Ok(buf)
    }

    /// The file's length in bytes.
    #[must_use]
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the file is empty.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The file's path.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }
}
