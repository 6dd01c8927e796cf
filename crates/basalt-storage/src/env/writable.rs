//! A file being written sequentially: on local disk, an object on shared storage, or a log
//! of chunks there.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use basalt_model::{Error, Result};

use super::fault::Verdict;
use super::shared::{LogWriter, ObjectWriter};
use super::{gate, io_err, record, FaultInjector, Op};

/// A file being written sequentially.
#[derive(Debug)]
pub struct WritableFile {
    sink: Sink,
    path: PathBuf,
    faults: Option<Arc<FaultInjector>>,
    /// Bytes written through this handle (a local file is written from its start).
    written: u64,
    /// The size [`WritableFile::preallocate`] gave the file (0: none). Dropping the handle
    /// that preallocated cuts the file back to `written`.
    preallocated: u64,
    /// How many bytes after `written` a preallocated file keeps written with zeros (0: none).
    zero_window: u64,
    /// Where the zeros written ahead of the data end.
    zeroed: u64,
}

/// A preallocated file ends where its data does once closed. The cut is not synced: after a
/// power cut the file may still end in the zeros, which readers of the WAL take as the end of
/// its records. It only ever shrinks the file (a heal may have cut it shorter already), and a
/// process the fault injector has crashed does not make it, as a dead process would not.
impl Drop for WritableFile {
    fn drop(&mut self) {
        self.cut_back();
    }
}

/// Where a [`WritableFile`]'s bytes go.
#[derive(Debug)]
pub(super) enum Sink {
    /// Shared by the handles [`WritableFile::try_clone`] makes: a second handle is a count,
    /// not a duplicated descriptor (`fcntl` and `close`, two system calls on every WAL
    /// sync).
    Local(Arc<File>),
    /// An object on shared storage, stored at the first sync.
    Object(ObjectWriter),
    /// A log on shared storage, one chunk per sync.
    Log(LogWriter),
}

impl WritableFile {
    /// A handle on `sink`, at `path`, with `written` bytes in it already.
    pub(super) fn new(
        sink: Sink,
        path: &Path,
        faults: Option<Arc<FaultInjector>>,
        written: u64,
    ) -> WritableFile {
        WritableFile {
            sink,
            path: path.to_owned(),
            faults,
            written,
            preallocated: 0,
            zero_window: 0,
            zeroed: 0,
        }
    }

    /// Appends bytes.
    ///
    /// # Errors
    /// `Io` naming the file.
    pub fn write_all(&mut self, buf: &[u8]) -> Result<()> {
        let err = |e| Error::io(format!("writing {}", self.path.display()), e);
        let verdict = gate(
            self.faults.as_ref(),
            Op::Write,
            &self.path,
            buf.len(),
            "writing",
        )?;
        let mut file = match &mut self.sink {
            Sink::Local(f) => &**f,
            Sink::Object(o) => return o.write_all(buf).map_err(err),
            Sink::Log(l) => return l.write_all(buf).map_err(err),
        };
        if let Verdict::Tear(n) = verdict {
            // The crash lands in the middle of this write: a prefix reaches the file.
            file.write_all(&buf[..n]).map_err(err)?;
            self.written += n as u64;
            return Err(err(std::io::Error::other("simulated crash (torn write)")));
        }
        // Counted before the write: a write that fails part-way may have placed some bytes,
        // and a preallocated file is never cut below them.
        self.written += buf.len() as u64;
        file.write_all(buf).map_err(err)?;
        record(self.faults.as_ref(), Op::Write, &self.path, buf.len());
        if self.zero_window > 0 {
            self.zero_ahead();
        }
        Ok(())
    }

    /// fdatasync: the data written so far survives a crash. On shared storage: the object
    /// is stored (created if absent: `AlreadyExists` when the key is taken), or the log's
    /// next chunk is.
    ///
    /// # Errors
    /// `Io` naming the file.
    pub fn sync_data(&mut self) -> Result<()> {
        self.sync(File::sync_data)
    }

    /// fsync: data and metadata survive a crash.
    ///
    /// # Errors
    /// `Io` naming the file.
    pub fn sync_all(&mut self) -> Result<()> {
        self.sync(File::sync_all)
    }

    fn sync(&mut self, how: fn(&File) -> std::io::Result<()>) -> Result<()> {
        gate(self.faults.as_ref(), Op::Sync, &self.path, 0, "syncing")?;
        if let Some(f) = &self.faults {
            f.delay_sync();
        }
        let err = |e: std::io::Error| {
            if e.kind() == std::io::ErrorKind::PermissionDenied {
                // Another writer took the log: final, never healed.
                Error::DoNotRetry(format!("{}: {e}", self.path.display()))
            } else {
                Error::io(format!("syncing {}", self.path.display()), e)
            }
        };
        match &mut self.sink {
            Sink::Local(file) => how(file).map_err(err)?,
            Sink::Object(o) => o.sync().map_err(err)?,
            Sink::Log(l) => l.sync().map_err(err)?,
        }
        record(self.faults.as_ref(), Op::Sync, &self.path, 0);
        Ok(())
    }

    /// A second handle to the same file, so a sync can run without the writer's lock. On
    /// shared storage its syncs cover the bytes written before it was made, no more.
    ///
    /// # Errors
    /// `Io` naming the file.
    pub fn try_clone(&self) -> Result<WritableFile> {
        let err = |e| Error::io(format!("duplicating {}", self.path.display()), e);
        let sink = match &self.sink {
            Sink::Local(f) => Sink::Local(Arc::clone(f)),
            Sink::Log(l) => Sink::Log(l.clone_at_written()),
            Sink::Object(_) => {
                return Err(err(std::io::Error::new(
                    std::io::ErrorKind::Unsupported,
                    "an object being written has one writer",
                )))
            }
        };
        Ok(WritableFile::new(
            sink,
            &self.path,
            self.faults.clone(),
            self.written,
        ))
    }

    /// Gives a local file `len` bytes, reading as zeros past what is written, so that the
    /// writes that follow, up to `len`, leave its size as it is: a synced write then has
    /// only its data to flush, not a new size with it (on ext4 a write that grows the file
    /// makes `fdatasync` commit the journal too; `BENCHMARKS.md`). Dropping this handle cuts
    /// the file back to what was written. Nothing is done on shared storage, nor for a file
    /// already as long.
    ///
    /// The first `zeroed_ahead` bytes after the data are written with zeros, and the writes
    /// that follow keep them so, topping them up once fewer than half are left; the rest is
    /// a hole. A synced write into a hole makes the file system allocate its blocks, and
    /// `fdatasync` then writes the allocation too (on ext4 a journal commit, or without a
    /// journal the block bitmap and extent): a log synced a few KiB at a time allocates a
    /// block at nearly every sync. Blocks written with zeros are allocated already, so the
    /// syncs into them flush data alone, and the allocation is paid once every half window,
    /// by the sync after the zeros are written (PostgreSQL zero-fills its WAL segments for
    /// the same reason; `BENCHMARKS.md`). The zeros read as the hole does. Writing them is an
    /// optimisation only: a failure is logged and this file goes on without.
    ///
    /// # Errors
    /// `Io` naming the file.
    pub fn preallocate(&mut self, len: u64, zeroed_ahead: u64) -> Result<()> {
        let Sink::Local(f) = &self.sink else {
            return Ok(());
        };
        if len <= self.written.max(self.preallocated) {
            return Ok(());
        }
        f.set_len(len)
            .map_err(|e| Error::io(format!("preallocating {}", self.path.display()), e))?;
        self.preallocated = len;
        self.zero_window = zeroed_ahead;
        self.zero_ahead();
        Ok(())
    }

    /// Writes zeros up to `zero_window` bytes after the data, within the preallocated
    /// length, once fewer than half a window of them are left (see
    /// [`WritableFile::preallocate`]). They go after every byte written, so they never land
    /// on data.
    fn zero_ahead(&mut self) {
        static ZEROS: [u8; 64 << 10] = [0; 64 << 10];
        let Sink::Local(f) = &self.sink else {
            return;
        };
        let from = self.zeroed.max(self.written);
        let to = self
            .written
            .saturating_add(self.zero_window)
            .min(self.preallocated);
        if from >= to || from >= self.written.saturating_add(self.zero_window / 2) {
            return;
        }
        let len = usize::try_from(to - from).unwrap_or(usize::MAX);
        let written = gate(
            self.faults.as_ref(),
            Op::ZeroFill,
            &self.path,
            len,
            "writing zeros in",
        )
        .and_then(|_| {
            let mut at = from;
            while at < to {
                let n = (to - at).min(ZEROS.len() as u64);
                let piece = &ZEROS[..usize::try_from(n).unwrap_or(ZEROS.len())];
                std::os::unix::fs::FileExt::write_all_at(&**f, piece, at)
                    .map_err(|e| io_err("writing zeros in", &self.path, e))?;
                at += n;
            }
            Ok(())
        });
        match written {
            Ok(()) => {
                record(self.faults.as_ref(), Op::ZeroFill, &self.path, len);
                self.zeroed = to;
            }
            Err(e) => {
                tracing::warn!(error = %e, "writing zeros ahead of a log's data failed; its syncs will allocate blocks as they go");
                self.zero_window = 0;
            }
        }
    }

    /// Cuts a file [`WritableFile::preallocate`] grew back to what was written, now rather
    /// than when the handle is dropped (a log that stops while another thread still holds
    /// it). Writes after it grow the file as they would have without the preallocation.
    pub fn cut_back(&mut self) {
        let Sink::Local(f) = &self.sink else {
            return;
        };
        if self.preallocated == 0 || self.faults.as_ref().is_some_and(|f| f.crashed()) {
            return;
        }
        self.preallocated = 0;
        if f.metadata().is_ok_and(|m| m.len() > self.written) {
            if let Err(e) = f.set_len(self.written) {
                tracing::warn!(file = %self.path.display(), error = %e, "cutting a preallocated file back to its data failed; it ends in zeros");
            }
        }
    }

    /// The file's path.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether this writer created the file, so that removing it after a failure removes
    /// nothing of another writer's. A local file is created (exclusively) when it is opened
    /// for writing; an object on shared storage only once a create-if-absent of its name
    /// answered success: a writer that found the name taken, or whose create answered an
    /// error of unknown outcome, owns nothing there.
    #[must_use]
    pub fn created(&self) -> bool {
        match &self.sink {
            Sink::Local(_) | Sink::Log(_) => true,
            Sink::Object(o) => o.claimed(),
        }
    }
}
