//! The engine's file operations on an [`ObjectStore`] (the mapping `object.rs` describes).

use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::Mutex;

use super::object::{ObjectStore, Upload, PART_BYTES};

/// Shared storage as a file system: paths under `root` are keys of `store`.
#[derive(Debug)]
pub(super) struct SharedFs {
    root: PathBuf,
    store: Arc<dyn ObjectStore>,
}

fn invalid(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg)
}

impl SharedFs {
    pub fn new(root: PathBuf, store: Arc<dyn ObjectStore>) -> SharedFs {
        SharedFs { root, store }
    }

    /// The key of `path`: its components below the root, joined by `/`.
    fn key(&self, path: &Path) -> io::Result<String> {
        let rest = path.strip_prefix(&self.root).map_err(|_| {
            invalid(format!(
                "{} is outside the shared storage {}",
                path.display(),
                self.root.display()
            ))
        })?;
        let mut parts = Vec::new();
        for c in rest.components() {
            match c {
                Component::Normal(s) => parts
                    .push(s.to_str().ok_or_else(|| {
                        invalid(format!("{} is not valid UTF-8", path.display()))
                    })?),
                Component::CurDir => {}
                _ => return Err(invalid(format!("{} is not a plain path", path.display()))),
            }
        }
        Ok(parts.join("/"))
    }

    fn dir_prefix(&self, path: &Path) -> io::Result<String> {
        let key = self.key(path)?;
        Ok(if key.is_empty() { key } else { key + "/" })
    }

    pub fn create(&self, path: &Path) -> io::Result<ObjectWriter> {
        Ok(ObjectWriter::new(Arc::clone(&self.store), self.key(path)?))
    }

    pub fn create_log(&self, path: &Path) -> io::Result<LogWriter> {
        let key = self.key(path)?;
        if !self.store.list_all(&format!("{key}/"))?.is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("the log {} exists", path.display()),
            ));
        }
        Ok(LogWriter::new(Arc::clone(&self.store), key))
    }

    /// The key and size of a single object, for range reads.
    pub fn open(&self, path: &Path) -> io::Result<(Arc<dyn ObjectStore>, String, u64)> {
        let key = self.key(path)?;
        let size = self.store.size(&key)?.ok_or_else(|| not_found(path))?;
        Ok((Arc::clone(&self.store), key, size))
    }

    /// A whole object, or the concatenation of a log's chunks up to its end.
    pub fn read_all(&self, path: &Path) -> io::Result<Vec<u8>> {
        let key = self.key(path)?;
        if let Some(b) = self.store.get(&key)? {
            return Ok(b.to_vec());
        }
        let chunks = self.chunks(path, &key)?;
        let mut out = Vec::new();
        for c in &chunks {
            let b = self.store.get(&c.key)?.ok_or_else(|| not_found(path))?;
            out.extend_from_slice(&b);
        }
        Ok(out)
    }

    /// Every chunk object of the log at `key`, fences included, in number order.
    fn raw_chunks(&self, key: &str) -> io::Result<Vec<Chunk>> {
        let prefix = format!("{key}/");
        let mut chunks: Vec<Chunk> = self
            .store
            .list(&prefix)?
            .objects
            .into_iter()
            .filter_map(|(name, size)| {
                let number = name.parse().ok()?;
                let key = format!("{prefix}{name}");
                Some(Chunk { number, key, size })
            })
            .collect();
        chunks.sort_by_key(|c| c.number);
        Ok(chunks)
    }

    /// A log's data chunks in order, from 0 to its end (invariant 3 of `object.rs`): the
    /// first fence, or a gap that only fences follow (the writer cut a chunk in doubt while
    /// the master fenced the log). `NotFound` when it has none; a gap with data after it is
    /// damage, an error naming the first missing number.
    fn chunks(&self, path: &Path, key: &str) -> io::Result<Vec<Chunk>> {
        let raw = self.raw_chunks(key)?;
        if raw.is_empty() {
            return Err(not_found(path));
        }
        let mut out = Vec::new();
        for (i, c) in raw.iter().enumerate() {
            if c.is_fence() {
                break;
            }
            if c.number != i as u64 {
                if raw[i..].iter().all(Chunk::is_fence) {
                    break;
                }
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!(
                        "the log {} lacks chunk {i} (the next one present is {})",
                        path.display(),
                        c.number
                    ),
                ));
            }
            out.push(c.clone());
        }
        Ok(out)
    }

    pub fn size(&self, path: &Path) -> io::Result<u64> {
        let key = self.key(path)?;
        if let Some(n) = self.store.size(&key)? {
            return Ok(n);
        }
        Ok(self.chunks(path, &key)?.iter().map(|c| c.size).sum())
    }

    pub fn exists(&self, path: &Path) -> io::Result<bool> {
        let key = self.key(path)?;
        Ok(key.is_empty() || self.store.size(&key)?.is_some() || self.is_dir(path)?)
    }

    /// A directory exists while an object lies under it (a prefix is nothing by itself).
    pub fn is_dir(&self, path: &Path) -> io::Result<bool> {
        self.store.has_any(&self.dir_prefix(path)?)
    }

    /// The objects and the non-empty prefixes directly under `path`.
    pub fn list(&self, path: &Path) -> io::Result<Vec<String>> {
        let prefix = self.dir_prefix(path)?;
        let l = self.store.list(&prefix)?;
        let mut names: Vec<String> = l.objects.into_iter().map(|(n, _)| n).collect();
        for dir in l.prefixes {
            if self.store.has_any(&format!("{prefix}{dir}/"))? {
                names.push(dir);
            }
        }
        names.sort();
        names.dedup();
        Ok(names)
    }

    pub fn remove_file(&self, path: &Path) -> io::Result<()> {
        self.store.delete(&self.key(path)?)
    }

    /// Removes everything under `path` (a directory, or a log's chunks), then `path` itself.
    pub fn remove_all(&self, path: &Path) -> io::Result<()> {
        let key = self.key(path)?;
        // Newest first: a log removed part-way is left a prefix of itself, which a reader
        // (a master splitting a dead server's log while the server retires it) can still read.
        for k in self.store.list_all(&self.dir_prefix(path)?)?.iter().rev() {
            self.store.delete(k)?;
        }
        if key.is_empty() {
            Ok(())
        } else {
            self.store.delete(&key)
        }
    }

    /// Moves what is at `from` (an object, or everything under it) to `to`, by copying each
    /// object to a new key (created if absent) and deleting the original. Not atomic: used
    /// only to set files aside (the archive), never to commit.
    pub fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let (fk, tk) = (self.key(from)?, self.key(to)?);
        let mut moves = Vec::new();
        if self.store.size(&fk)?.is_some() {
            moves.push((fk.clone(), tk.clone()));
        }
        let prefix = self.dir_prefix(from)?;
        for k in self.store.list_all(&prefix)? {
            let rest = &k[prefix.len()..];
            moves.push((k.clone(), format!("{tk}/{rest}")));
        }
        if moves.is_empty() {
            return Err(not_found(from));
        }
        for (src, dst) in moves {
            let data = self.store.get(&src)?.ok_or_else(|| not_found(from))?;
            match self.store.put_if_absent(&dst, data) {
                // A copy left by an earlier attempt that stopped before its delete.
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                r => r?,
            }
            self.store.delete(&src)?;
        }
        Ok(())
    }

    /// Cuts a log back to its first `len` bytes by deleting the chunks that start at or past
    /// `len`; a chunk that straddles `len` cannot be cut (chunks are immutable).
    pub fn truncate_log(&self, path: &Path, len: u64) -> io::Result<()> {
        let key = self.key(path)?;
        if self.store.size(&key)?.is_some() {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                format!("{} is an object, which cannot be truncated", path.display()),
            ));
        }
        let mut start = 0;
        let mut doomed = Vec::new();
        for c in self.raw_chunks(&key)? {
            if c.is_fence() {
                // The master took the log: cutting its fence away would let this writer
                // write on (invariant 5 of the WAL).
                return Err(fenced(format!(
                    "fenced: the log {} holds the master's fence (chunk {}); it cannot be cut",
                    path.display(),
                    c.number
                )));
            }
            if start >= len {
                doomed.push(c.key);
            } else if start + c.size > len {
                return Err(io::Error::new(
                    io::ErrorKind::Unsupported,
                    format!(
                        "cannot cut the log {} at byte {len}: chunk {} spans it",
                        path.display(),
                        c.key
                    ),
                ));
            }
            start += c.size;
        }
        // Newest first, so a crash part-way leaves the log a prefix of itself.
        for k in doomed.iter().rev() {
            self.store.delete(k)?;
        }
        Ok(())
    }
    /// Fences every log in the directory `dir` against the writer that made them (the
    /// master, before it splits a dead server's logs): the marker [`FENCE_MARKER`] first, so
    /// a log the writer creates from now on is refused after its first chunk; then each log
    /// present gets an empty chunk, a fence, after its last, so its writer's next chunk
    /// collides. Idempotent: a log that ends in a fence is left as it is. Returns how many
    /// logs it fenced.
    pub fn fence_logs(&self, dir: &Path, by: &str) -> io::Result<usize> {
        let prefix = self.dir_prefix(dir)?;
        let marker = format!("{prefix}{FENCE_MARKER}");
        match self
            .store
            .put_if_absent(&marker, Bytes::from(by.to_owned()))
        {
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            r => r?,
        }
        let logs = self.store.list(&prefix)?.prefixes;
        for log in &logs {
            self.fence_log(&format!("{prefix}{log}"))?;
        }
        Ok(logs.len())
    }

    /// Deletes a log's data chunks, newest first, and keeps its fences: its writer's next
    /// chunk must still collide (a log deleted whole would take that chunk and acknowledge
    /// writes nobody reads). The log's directory must be fenced; a log made there after the
    /// fencing (it holds its header at most, invariant 3 of `object.rs`) is fenced first.
    pub fn clear_fenced_log(&self, path: &Path) -> io::Result<()> {
        let key = self.key(path)?;
        if self.store.size(&marker_of(&key))?.is_none() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "the log {} is not in a fenced directory; it is its writer's to delete",
                    path.display()
                ),
            ));
        }
        self.fence_log(&key)?;
        for c in self
            .raw_chunks(&key)?
            .iter()
            .rev()
            .filter(|c| !c.is_fence())
        {
            self.store.delete(&c.key)?;
        }
        Ok(())
    }

    /// Takes the next chunk number of the log at `key` with an empty chunk, unless its last
    /// chunk is a fence already.
    fn fence_log(&self, key: &str) -> io::Result<()> {
        loop {
            let raw = self.raw_chunks(key)?;
            if raw.last().is_some_and(Chunk::is_fence) {
                return Ok(());
            }
            let next = raw.last().map_or(0, |c| c.number + 1);
            match self
                .store
                .put_if_absent(&format!("{key}/{next:020}"), Bytes::new())
            {
                // The writer took that number first: fence after it.
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                r => return r,
            }
        }
    }
}

/// The object in a log directory that says its logs are fenced (see `fence_logs`).
pub const FENCE_MARKER: &str = "FENCED";

/// The key of the fence marker of the directory holding the log at `key`.
fn marker_of(key: &str) -> String {
    match key.rsplit_once('/') {
        Some((dir, _)) => format!("{dir}/{FENCE_MARKER}"),
        None => FENCE_MARKER.to_owned(),
    }
}

/// One chunk object of a log.
#[derive(Clone, Debug)]
struct Chunk {
    number: u64,
    key: String,
    size: u64,
}

impl Chunk {
    /// A fence: no sync ever stores an empty chunk.
    fn is_fence(&self) -> bool {
        self.size == 0
    }
}

fn not_found(path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::NotFound,
        format!("{} not found", path.display()),
    )
}

/// A file written once: buffered, and stored when it is first synced.
pub(super) struct ObjectWriter {
    store: Arc<dyn ObjectStore>,
    key: String,
    buf: Vec<u8>,
    upload: Option<Box<dyn Upload>>,
    state: WriterState,
    /// Whether this writer took the key (its create-if-absent answered success): only then
    /// is an object under the key its own to remove.
    claimed: bool,
}

#[derive(Debug, PartialEq, Eq)]
enum WriterState {
    Writing,
    Stored,
    /// An operation failed: the object may be incomplete, so nothing more is accepted.
    Failed,
}

impl std::fmt::Debug for ObjectWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ObjectWriter")
            .field("key", &self.key)
            .finish()
    }
}

impl Drop for ObjectWriter {
    /// An upload never completed is given up, so its parts do not linger in the store.
    fn drop(&mut self) {
        if let Some(u) = self.upload.take() {
            u.abort();
        }
    }
}

impl ObjectWriter {
    fn new(store: Arc<dyn ObjectStore>, key: String) -> ObjectWriter {
        ObjectWriter {
            store,
            key,
            buf: Vec::new(),
            upload: None,
            state: WriterState::Writing,
            claimed: false,
        }
    }

    /// Whether this writer created the object (see `claimed`).
    pub(super) fn claimed(&self) -> bool {
        self.claimed
    }

    fn check_writing(&self) -> io::Result<()> {
        match self.state {
            WriterState::Writing => Ok(()),
            WriterState::Stored => Err(io::Error::new(
                io::ErrorKind::Unsupported,
                format!("{} is stored; objects cannot be appended to", self.key),
            )),
            WriterState::Failed => Err(io::Error::other(format!(
                "an earlier write of {} failed; it takes no more",
                self.key
            ))),
        }
    }

    /// Runs `f`, and refuses everything after if it fails.
    fn guard(&mut self, f: impl FnOnce(&mut Self) -> io::Result<()>) -> io::Result<()> {
        let r = f(self);
        if r.is_err() {
            self.state = WriterState::Failed;
        }
        r
    }

    pub fn write_all(&mut self, data: &[u8]) -> io::Result<()> {
        self.check_writing()?;
        self.buf.extend_from_slice(data);
        self.guard(|w| {
            while w.buf.len() >= 2 * PART_BYTES {
                let rest = w.buf.split_off(PART_BYTES);
                let part = std::mem::replace(&mut w.buf, rest);
                if w.upload.is_none() {
                    // Multipart uploads overwrite: the key is claimed first, so a second
                    // writer of the same name fails here rather than replacing the first.
                    w.store.put_if_absent(&w.key, Bytes::new())?;
                    w.claimed = true;
                    w.upload = Some(w.store.upload(&w.key)?);
                }
                if let Some(u) = w.upload.as_mut() {
                    u.put_part(Bytes::from(part))?;
                }
            }
            Ok(())
        })
    }

    /// Stores the object: created if absent when it fit in one part, else the multipart
    /// upload completes. A second sync with nothing new written does nothing.
    pub fn sync(&mut self) -> io::Result<()> {
        if self.state == WriterState::Stored {
            return Ok(());
        }
        self.check_writing()?;
        self.guard(|w| {
            let buf = Bytes::from(std::mem::take(&mut w.buf));
            match w.upload.take() {
                Some(mut u) => {
                    if let Err(e) = u.put_part(buf) {
                        u.abort();
                        return Err(e);
                    }
                    u.complete()?;
                }
                None => {
                    w.store.put_if_absent(&w.key, buf)?;
                    w.claimed = true;
                }
            }
            w.state = WriterState::Stored;
            Ok(())
        })
    }
}

/// A log written as numbered chunks, one per sync. Clones share the log (the WAL syncs
/// through a clone without holding its append lock); a clone syncs only the bytes written
/// before it was made, so a chunk never holds bytes its sync was not asked to cover, and the
/// log's chunk boundaries are exactly its acknowledged positions.
#[derive(Clone)]
pub(super) struct LogWriter {
    store: Arc<dyn ObjectStore>,
    key: String,
    shared: Arc<LogShared>,
    /// Bytes (from the log's start) this handle's syncs cover at most; `None`: all written.
    limit: Option<u64>,
}

impl std::fmt::Debug for LogWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogWriter").field("key", &self.key).finish()
    }
}

#[derive(Debug, Default)]
struct LogShared {
    /// Written and not yet in a chunk; taken after `sync`.
    pending: Mutex<Pending>,
    /// Held across a chunk's creation (invariant 1); taken before `pending`.
    sync: Mutex<LogSync>,
}

#[derive(Debug, Default)]
struct Pending {
    bytes: Vec<u8>,
    /// Bytes ever written.
    written: u64,
}

#[derive(Debug, Default)]
struct LogSync {
    next_chunk: u64,
    /// Bytes in chunks.
    stored: u64,
    /// Why the log takes no more chunks, and whether another writer fenced it (else a sync
    /// failed and left its chunk in doubt).
    stopped: Option<(String, bool)>,
}

/// The error of a writer another writer fenced: `PermissionDenied`, which `Env` reports as
/// `DoNotRetry` ("fenced"), never healed.
fn fenced(why: String) -> io::Error {
    io::Error::new(io::ErrorKind::PermissionDenied, why)
}

impl LogWriter {
    fn new(store: Arc<dyn ObjectStore>, key: String) -> LogWriter {
        LogWriter {
            store,
            key,
            shared: Arc::new(LogShared::default()),
            limit: None,
        }
    }

    /// A handle whose syncs cover the bytes written so far and no more.
    pub fn clone_at_written(&self) -> LogWriter {
        let written = self.shared.pending.lock().written;
        LogWriter {
            limit: Some(written),
            ..self.clone()
        }
    }

    /// Whether the master has fenced the directory this log is in.
    fn directory_fenced(&self) -> io::Result<bool> {
        Ok(self.store.size(&marker_of(&self.key))?.is_some())
    }

    pub fn write_all(&self, data: &[u8]) -> io::Result<()> {
        let mut p = self.shared.pending.lock();
        p.bytes.extend_from_slice(data);
        p.written += data.len() as u64;
        Ok(())
    }

    /// Stores the bytes this handle covers and no chunk holds yet as the log's next chunk.
    pub fn sync(&self) -> io::Result<()> {
        let mut sync = self.shared.sync.lock();
        if let Some((why, by_another)) = &sync.stopped {
            return Err(if *by_another {
                fenced(why.clone())
            } else {
                io::Error::other(why.clone())
            });
        }
        let data: Vec<u8> = {
            let mut p = self.shared.pending.lock();
            let upto = self.limit.unwrap_or(p.written);
            let n = usize::try_from(upto.saturating_sub(sync.stored))
                .unwrap_or(usize::MAX)
                .min(p.bytes.len());
            // The synced part leaves without a copy; only bytes written after the clone
            // (usually none) are moved.
            let rest = p.bytes.split_off(n);
            std::mem::replace(&mut p.bytes, rest)
        };
        if data.is_empty() {
            return Ok(());
        }
        let key = format!("{}/{:020}", self.key, sync.next_chunk);
        let len = data.len() as u64;
        match self.store.put_if_absent(&key, Bytes::from(data)) {
            Ok(()) if sync.next_chunk == 0 && self.directory_fenced()? => {
                // Made after the master fenced the directory, which it lists only once
                // the marker is there: a log it may never read (invariant 3).
                let why = format!(
                    "fenced: the log {} was created after the master fenced its directory; \
                     this writer writes nothing more",
                    self.key
                );
                sync.stopped = Some((why.clone(), true));
                Err(fenced(why))
            }
            Ok(()) => {
                sync.next_chunk += 1;
                sync.stored += len;
                Ok(())
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                let why = format!(
                    "fenced: chunk {key} of the log was created by another writer; this \
                     writer's {len} bytes were not stored and it writes nothing more"
                );
                sync.stopped = Some((why.clone(), true)); // invariant 2
                Err(fenced(why))
            }
            Err(e) => {
                // The chunk may or may not exist, so nothing may follow it: the WAL heals by
                // cutting the log back to its last acknowledged byte (`truncate_log`) and
                // writing on in a new segment.
                let why = format!(
                    "an earlier sync of the log {} failed ({e}); it takes no more writes",
                    self.key
                );
                sync.stopped = Some((why, false));
                Err(e)
            }
        }
    }
}
