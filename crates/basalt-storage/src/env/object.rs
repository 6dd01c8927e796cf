//! Shared storage with object-storage semantics under [`Env`](super::Env).
//!
//! A cluster keeps every region file, manifest, catalog version and log on storage all its
//! servers reach: a shared directory or an S3-compatible store. Such stores give only a few
//! operations, and these are all the engine uses: **create-if-absent**, get, range get, list
//! and delete. No rename, no append, no overwrite. [`ObjectStore`] is that interface, blocking
//! (the engine's threads block on I/O anyway); `basalt-node` implements it over the
//! `object_store` crate, and [`MemoryStore`] implements it in memory for deterministic tests.
//!
//! # How the engine's files map onto objects
//! A path under the storage's root is a key (its components joined by `/`).
//! - A file written once (store file, metadata version) is one object, uploaded when the file
//!   is first synced: created if absent when it is small; past two [`PART_BYTES`] its key is
//!   first claimed by creating it empty if absent, then it goes up as a multipart upload
//!   (which stores cannot make conditional) that replaces the claim when it completes. Writing
//!   after that sync, or after any failure, is refused: objects are immutable.
//! - A log (a WAL segment, [`Env::create_log`](super::Env::create_log)) is a prefix of numbered
//!   chunk objects `<key>/<chunk:020>`, one created-if-absent PUT per sync (a group commit);
//!   reading it concatenates the chunks from 0 until the first missing one
//!   (`docs/formats/wal-chunks.md`). A create that finds its chunk taken means another writer
//!   holds the log: the writer is fenced, and everything it writes after fails.
//! - Directories exist only as key prefixes: creating or syncing one does nothing.
//!
//! - Fencing a dead server's logs (the master, before it splits them): a marker object
//!   `FENCED` in the log directory, then an empty chunk (a fence) after the last chunk of each
//!   log there. Readers end a log at its first fence.
//!
//! # Invariants
//! 1. A chunk is created only after every earlier chunk of its log exists (one sync at a time
//!    per log), so a sync that returned means every byte written before it is stored.
//! 2. A fenced log writer creates nothing more.
//! 3. Once the master has fenced a directory, no writer stores a chunk the master's split
//!    does not read: a log listed after the marker has a fence after its last chunk, so its
//!    writer's next chunk collides; a log created after the listing was created after the
//!    marker, which its writer checks once its first chunk (the header) is stored, before
//!    any record goes in.

use std::collections::BTreeMap;
use std::io;
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::Mutex;

/// Bytes a file buffers before it starts a multipart upload, and the size of each part.
pub const PART_BYTES: usize = 8 << 20;

/// One level of a listing: the objects directly under a prefix and the deeper prefixes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Listing {
    /// Objects directly under the prefix: (name after the prefix, size in bytes).
    pub objects: Vec<(String, u64)>,
    /// Names of the prefixes one level down ("directories").
    pub prefixes: Vec<String>,
}

/// An object store, as the engine needs it. Keys are `/`-separated, relative to the store's
/// root; errors are `std::io` errors, `AlreadyExists` for a create that found the key taken
/// and `NotFound` for a missing key where one is required.
pub trait ObjectStore: Send + Sync + std::fmt::Debug {
    /// Where the store is, for messages (`s3://bucket/prefix`, `file:///path`).
    fn url(&self) -> &str;

    /// Creates `key` holding `data` if no object has that key; `AlreadyExists` otherwise.
    /// Atomic: of concurrent creates of one key exactly one succeeds.
    ///
    /// # Errors
    /// `AlreadyExists`, or the store's failure.
    fn put_if_absent(&self, key: &str, data: Bytes) -> io::Result<()>;

    /// Starts a multipart upload of a new object `key` (store files larger than a part).
    ///
    /// # Errors
    /// The store's failure.
    fn upload(&self, key: &str) -> io::Result<Box<dyn Upload>>;

    /// The whole object, or `None` when there is none.
    ///
    /// # Errors
    /// The store's failure.
    fn get(&self, key: &str) -> io::Result<Option<Bytes>>;

    /// `len` bytes from `offset` of the object.
    ///
    /// # Errors
    /// `NotFound`, `UnexpectedEof` when the range runs past the end, the store's failure.
    fn get_range(&self, key: &str, offset: u64, len: usize) -> io::Result<Bytes>;

    /// The object's size, or `None` when there is none.
    ///
    /// # Errors
    /// The store's failure.
    fn size(&self, key: &str) -> io::Result<Option<u64>>;

    /// One level under `prefix` (which ends in `/`, or is empty for the root).
    ///
    /// # Errors
    /// The store's failure.
    fn list(&self, prefix: &str) -> io::Result<Listing>;

    /// Every key under `prefix`, at any depth, sorted.
    ///
    /// # Errors
    /// The store's failure.
    fn list_all(&self, prefix: &str) -> io::Result<Vec<String>>;

    /// Whether any object has a key under `prefix` (which ends in `/`). Stores that keep
    /// directories (a file system, a filer) may list a prefix whose objects are all gone;
    /// this asks about objects only.
    ///
    /// # Errors
    /// The store's failure.
    fn has_any(&self, prefix: &str) -> io::Result<bool> {
        Ok(!self.list_all(prefix)?.is_empty())
    }

    /// Deletes `key`; a missing key is not an error.
    ///
    /// # Errors
    /// The store's failure.
    fn delete(&self, key: &str) -> io::Result<()>;
}

/// A multipart upload in progress.
pub trait Upload: Send {
    /// Sends the next part.
    ///
    /// # Errors
    /// The store's failure.
    fn put_part(&mut self, data: Bytes) -> io::Result<()>;

    /// Makes the object appear, whole.
    ///
    /// # Errors
    /// The store's failure.
    fn complete(self: Box<Self>) -> io::Result<()>;

    /// Gives the upload up: its parts are dropped and no object appears.
    fn abort(self: Box<Self>);
}

/// Checks that `store` keeps the promises the engine's fencing rests on, refusing it with a
/// message that says which one failed: `writers` concurrent creates of one key must give
/// exactly one winner whose bytes are what a get returns, and a range get, a listing and a
/// delete must work. Cleans up after itself.
///
/// # Errors
/// `Unsupported` naming the broken promise; the store's failure.
pub fn self_test(store: &dyn ObjectStore, writers: usize) -> io::Result<()> {
    let dir = format!("selftest/{:016x}/", rand::random::<u64>());
    let key = format!("{dir}create-if-absent");
    let results: Vec<io::Result<()>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..writers)
            .map(|i| {
                let key = &key;
                s.spawn(move || store.put_if_absent(key, Bytes::from(format!("writer {i}"))))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(io::Error::other("panicked")))
            })
            .collect()
    });
    let outcome = check_creates(store, &key, &results, writers);
    let cleanup = store
        .list_all(&dir)
        .and_then(|keys| keys.iter().try_for_each(|k| store.delete(k)));
    outcome?;
    cleanup
}

fn check_creates(
    store: &dyn ObjectStore,
    key: &str,
    results: &[io::Result<()>],
    writers: usize,
) -> io::Result<()> {
    let refuse = |why: String| {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            format!(
                "the storage {} does not support atomic create-if-absent ({why}); Basalt fences \
                 stale writers with it and cannot run on this store safely (an S3-compatible \
                 store must honour `If-None-Match: *` on PUT)",
                store.url()
            ),
        ))
    };
    if let Some(e) = results
        .iter()
        .filter_map(|r| r.as_ref().err())
        .find(|e| e.kind() != io::ErrorKind::AlreadyExists)
    {
        return Err(io::Error::new(
            e.kind(),
            format!("self-test of {}: {e}", store.url()),
        ));
    }
    let winners: Vec<usize> = (0..writers).filter(|i| results[*i].is_ok()).collect();
    if winners.len() != 1 {
        return refuse(format!(
            "{} of {writers} concurrent creates of one key succeeded",
            winners.len()
        ));
    }
    let want = format!("writer {}", winners[0]);
    let got = store.get(key)?.unwrap_or_default();
    if got != want.as_bytes() {
        return refuse(format!(
            "the winner wrote {want:?} but a read returns {:?}",
            String::from_utf8_lossy(&got)
        ));
    }
    if store.get_range(key, 7, want.len() - 7)? != want.as_bytes()[7..] {
        return refuse("a range read returned other bytes".to_owned());
    }
    let (parent, name) = key.rsplit_once('/').unwrap_or(("", key));
    let listed = store.list(&format!("{parent}/"))?;
    if !listed.objects.iter().any(|(n, _)| n == name) {
        return refuse("a created object is missing from its listing".to_owned());
    }
    Ok(())
}

/// An in-memory object store, for deterministic tests of the engine on object semantics.
#[derive(Debug, Default)]
pub struct MemoryStore {
    objects: Arc<Mutex<BTreeMap<String, Bytes>>>,
}

/// A multipart upload into a [`MemoryStore`]: the object appears when it completes.
struct MemoryUpload {
    objects: Arc<Mutex<BTreeMap<String, Bytes>>>,
    key: String,
    parts: Vec<Bytes>,
}

impl Upload for MemoryUpload {
    fn put_part(&mut self, data: Bytes) -> io::Result<()> {
        self.parts.push(data);
        Ok(())
    }

    fn complete(self: Box<Self>) -> io::Result<()> {
        let whole: Vec<u8> = self.parts.concat();
        self.objects.lock().insert(self.key, Bytes::from(whole));
        Ok(())
    }

    fn abort(self: Box<Self>) {}
}

impl MemoryStore {
    /// An empty store.
    #[must_use]
    pub fn new() -> Arc<MemoryStore> {
        Arc::new(MemoryStore::default())
    }
}

fn not_found(key: &str) -> io::Error {
    io::Error::new(io::ErrorKind::NotFound, format!("no object {key}"))
}

impl ObjectStore for MemoryStore {
    fn url(&self) -> &str {
        "memory:///"
    }

    fn put_if_absent(&self, key: &str, data: Bytes) -> io::Result<()> {
        let mut objects = self.objects.lock();
        if objects.contains_key(key) {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("{key} exists"),
            ));
        }
        objects.insert(key.to_owned(), data);
        Ok(())
    }

    fn upload(&self, key: &str) -> io::Result<Box<dyn Upload>> {
        Ok(Box::new(MemoryUpload {
            objects: Arc::clone(&self.objects),
            key: key.to_owned(),
            parts: Vec::new(),
        }))
    }

    fn get(&self, key: &str) -> io::Result<Option<Bytes>> {
        Ok(self.objects.lock().get(key).cloned())
    }

    fn get_range(&self, key: &str, offset: u64, len: usize) -> io::Result<Bytes> {
        let obj = self.get(key)?.ok_or_else(|| not_found(key))?;
        let start = usize::try_from(offset).unwrap_or(usize::MAX);
        match start.checked_add(len) {
            Some(end) if end <= obj.len() => Ok(obj.slice(start..end)),
            _ => Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!("{len} bytes at {offset} run past the end of {key}"),
            )),
        }
    }

    fn size(&self, key: &str) -> io::Result<Option<u64>> {
        Ok(self.objects.lock().get(key).map(|b| b.len() as u64))
    }

    fn list(&self, prefix: &str) -> io::Result<Listing> {
        let objects = self.objects.lock();
        let mut out = Listing::default();
        for (k, v) in objects.range(prefix.to_owned()..) {
            let Some(rest) = k.strip_prefix(prefix) else {
                break;
            };
            match rest.split_once('/') {
                Some((dir, _)) => {
                    if out.prefixes.last().map(String::as_str) != Some(dir) {
                        out.prefixes.push(dir.to_owned());
                    }
                }
                None => out.objects.push((rest.to_owned(), v.len() as u64)),
            }
        }
        Ok(out)
    }

    fn list_all(&self, prefix: &str) -> io::Result<Vec<String>> {
        let objects = self.objects.lock();
        Ok(objects
            .range(prefix.to_owned()..)
            .take_while(|(k, _)| k.starts_with(prefix))
            .map(|(k, _)| k.clone())
            .collect())
    }

    fn delete(&self, key: &str) -> io::Result<()> {
        self.objects.lock().remove(key);
        Ok(())
    }
}
