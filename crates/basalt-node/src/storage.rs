//! Shared storage by URL: the engine's [`ObjectStore`] over the `object_store` crate.
//!
//! - `file:///path`: a local or shared directory (NFS and the like), every write fsync'd
//!   with its directory; create-if-absent is a hard link, which fails if the name exists.
//! - `s3://bucket/prefix`: any S3-compatible store, configured by the standard `AWS_*`
//!   environment variables (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_REGION`,
//!   `AWS_ENDPOINT_URL` for a store other than AWS, `AWS_ALLOW_HTTP=true` for plain http);
//!   create-if-absent is a PUT with `If-None-Match: *`.
//! - `memory:///`: a store in this process (tests and trying things out; nothing survives).
//!
//! [`open`] runs [`self_test`] before it hands a store out, so a store that cannot fence a
//! stale writer is refused at start rather than trusted.
//!
//! The engine is synchronous; the `object_store` crate is async. Each store owns a small
//! runtime of its own, and a call blocks its (engine) thread on a task spawned there, so the
//! engine's threads never need to be inside a runtime, and a caller inside another runtime
//! only blocks its own thread.

use std::future::Future;
use std::io;
use std::sync::Arc;

use basalt_model::{Error, Result};
use basalt_storage::env::object::{self_test, Listing, Upload};
use basalt_storage::env::{MemoryStore, ObjectStore};
use bytes::Bytes;
use futures_util::TryStreamExt;
use object_store::path::Path as Key;
use object_store::{ObjectStore as Remote, ObjectStoreExt, PutMode, PutPayload};

/// Concurrent creates of one key the start-up self-test makes. Any race gives a store that
/// checks before it writes a chance to let two through; more racers only lengthen the
/// start on stores that serialise conditional writes to one key (SeaweedFS's S3 gateway
/// makes each waiting writer retry its lock about once a second: 32 racers took up to
/// 14 s, and over its 30 s request timeout on a loaded machine; 8 took at most 5 s).
pub const SELF_TEST_WRITERS: usize = 8;

/// Opens the storage at `url` and checks that it keeps create-if-absent atomic.
///
/// # Errors
/// `IllegalArgument` for a URL it does not understand; `DoNotRetry` when the store fails
/// its self-test (saying why); `Io` when it cannot be reached.
pub fn open(url: &str) -> Result<Arc<dyn ObjectStore>> {
    let store: Arc<dyn ObjectStore> = if url.starts_with("memory:") {
        MemoryStore::new()
    } else {
        Arc::new(RemoteStore::new(url)?)
    };
    checked(store, url)
}

/// `store` once it passes the self-test. A store that lacks atomic create-if-absent is
/// refused at once; one that failed to answer (a request timed out, a connection dropped)
/// is tested again with fresh keys before the start gives up, so a moment of slowness does
/// not refuse a good store.
///
/// # Errors
/// As [`open`].
pub fn checked(store: Arc<dyn ObjectStore>, url: &str) -> Result<Arc<dyn ObjectStore>> {
    let mut attempt = 1;
    loop {
        match self_test(store.as_ref(), SELF_TEST_WRITERS) {
            Ok(()) => return Ok(store),
            Err(e) if e.kind() == io::ErrorKind::Unsupported => {
                return Err(Error::DoNotRetry(e.to_string()))
            }
            Err(e) if attempt < SELF_TEST_ATTEMPTS => {
                tracing::warn!(url, attempt, error = %e, "the storage's self-test could not finish; trying again");
                attempt += 1;
            }
            Err(e) => return Err(Error::io(format!("checking the storage {url}"), e)),
        }
    }
}

/// How many times [`checked`] runs the self-test when the store fails to answer.
const SELF_TEST_ATTEMPTS: usize = 3;

/// A store reached through the `object_store` crate.
pub struct RemoteStore {
    url: String,
    inner: Arc<dyn Remote>,
    runtime: crate::runtime::OwnedRuntime,
}

impl std::fmt::Debug for RemoteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteStore")
            .field("url", &self.url)
            .finish()
    }
}

fn illegal(url: &str, why: impl std::fmt::Display) -> Error {
    Error::illegal(format!("storage URL {url}: {why}"))
}

impl RemoteStore {
    /// A store for `url` (`file:///path` or `s3://bucket/prefix`), not yet self-tested.
    ///
    /// # Errors
    /// `IllegalArgument` for a URL it does not understand; `Io` creating the directory.
    pub fn new(url: &str) -> Result<RemoteStore> {
        let inner: Arc<dyn Remote> = if let Some(path) = url.strip_prefix("file://") {
            if !path.starts_with('/') {
                return Err(illegal(
                    url,
                    "a file URL needs an absolute path (file:///...)",
                ));
            }
            std::fs::create_dir_all(path)
                .map_err(|e| Error::io(format!("creating the storage directory {path}"), e))?;
            let fs = object_store::local::LocalFileSystem::new_with_prefix(path)
                .map_err(|e| illegal(url, e))?
                .with_fsync(true)
                // Directories left empty by deletes go, so a listing shows no region or
                // table directory that holds nothing.
                .with_automatic_cleanup(true);
            Arc::new(fs)
        } else if let Some(rest) = url.strip_prefix("s3://") {
            let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
            if bucket.is_empty() {
                return Err(illegal(url, "no bucket (s3://bucket/prefix)"));
            }
            let s3 = object_store::aws::AmazonS3Builder::from_env()
                .with_bucket_name(bucket)
                .build()
                .map_err(|e| illegal(url, e))?;
            let prefix = prefix.trim_matches('/');
            if prefix.is_empty() {
                Arc::new(s3)
            } else {
                let p = Key::parse(prefix).map_err(|e| illegal(url, e))?;
                Arc::new(object_store::prefix::PrefixStore::new(s3, p))
            }
        } else {
            return Err(illegal(
                url,
                "expected file:///path, s3://bucket/prefix or memory:///",
            ));
        };
        let runtime = crate::runtime::OwnedRuntime::start("basalt-storage-io", 2)
            .map_err(|e| Error::io("starting the storage runtime", e))?;
        Ok(RemoteStore {
            url: url.trim_end_matches('/').to_owned(),
            inner,
            runtime,
        })
    }

    /// Runs `f` on the store's runtime and waits for it.
    fn block<T: Send + 'static>(
        &self,
        f: impl Future<Output = object_store::Result<T>> + Send + 'static,
    ) -> io::Result<T> {
        run_on(self.runtime.handle(), f)
    }
}

/// Runs `f` on the runtime of `handle`, blocking this thread until it is done.
fn run_on<T: Send + 'static>(
    handle: &tokio::runtime::Handle,
    f: impl Future<Output = object_store::Result<T>> + Send + 'static,
) -> io::Result<T> {
    crate::runtime::wait_for(handle, f)
        .ok_or_else(|| io::Error::other("the storage runtime stopped"))?
        .map_err(to_io)
}

fn to_io(e: object_store::Error) -> io::Error {
    let kind = match &e {
        object_store::Error::AlreadyExists { .. } | object_store::Error::Precondition { .. } => {
            io::ErrorKind::AlreadyExists
        }
        object_store::Error::NotFound { .. } => io::ErrorKind::NotFound,
        object_store::Error::NotImplemented { .. } => io::ErrorKind::Unsupported,
        _ => io::ErrorKind::Other,
    };
    io::Error::new(kind, e.to_string())
}

fn key(k: &str) -> io::Result<Key> {
    Key::parse(k.trim_end_matches('/'))
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e.to_string()))
}

/// `Ok(None)` for a missing object.
fn absent_is_none<T>(r: io::Result<T>) -> io::Result<Option<T>> {
    match r {
        Ok(v) => Ok(Some(v)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

impl ObjectStore for RemoteStore {
    fn url(&self) -> &str {
        &self.url
    }

    fn put_if_absent(&self, k: &str, data: Bytes) -> io::Result<()> {
        let (inner, k) = (Arc::clone(&self.inner), key(k)?);
        self.block(async move {
            inner
                .put_opts(&k, PutPayload::from(data), PutMode::Create.into())
                .await
                .map(|_| ())
        })
    }

    fn upload(&self, k: &str) -> io::Result<Box<dyn Upload>> {
        let (inner, k) = (Arc::clone(&self.inner), key(k)?);
        let up = self.block(async move { inner.put_multipart(&k).await })?;
        Ok(Box::new(RemoteUpload {
            up,
            handle: self.runtime.handle().clone(),
        }))
    }

    fn get(&self, k: &str) -> io::Result<Option<Bytes>> {
        let (inner, k) = (Arc::clone(&self.inner), key(k)?);
        absent_is_none(self.block(async move { inner.get(&k).await?.bytes().await }))
    }

    fn get_range(&self, k: &str, offset: u64, len: usize) -> io::Result<Bytes> {
        let (inner, k) = (Arc::clone(&self.inner), key(k)?);
        let range = offset..offset + len as u64;
        let b = self.block(async move { inner.get_range(&k, range).await })?;
        if b.len() != len {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!("{len} bytes at {offset} run past the end"),
            ));
        }
        Ok(b)
    }

    fn size(&self, k: &str) -> io::Result<Option<u64>> {
        let (inner, k) = (Arc::clone(&self.inner), key(k)?);
        absent_is_none(self.block(async move { inner.head(&k).await.map(|m| m.size) }))
    }

    fn list(&self, prefix: &str) -> io::Result<Listing> {
        let inner = Arc::clone(&self.inner);
        let p = (!prefix.is_empty()).then(|| key(prefix)).transpose()?;
        let l = self.block(async move { inner.list_with_delimiter(p.as_ref()).await })?;
        let name = |k: &Key| k.filename().unwrap_or_default().to_owned();
        Ok(Listing {
            objects: l
                .objects
                .iter()
                .map(|m| (name(&m.location), m.size))
                .collect(),
            prefixes: l.common_prefixes.iter().map(name).collect(),
        })
    }

    fn list_all(&self, prefix: &str) -> io::Result<Vec<String>> {
        let inner = Arc::clone(&self.inner);
        let p = (!prefix.is_empty()).then(|| key(prefix)).transpose()?;
        let mut keys: Vec<String> = self.block(async move {
            let metas: Vec<_> = inner.list(p.as_ref()).try_collect().await?;
            Ok(metas.into_iter().map(|m| m.location.to_string()).collect())
        })?;
        keys.sort();
        Ok(keys)
    }

    fn has_any(&self, prefix: &str) -> io::Result<bool> {
        let (inner, p) = (Arc::clone(&self.inner), key(prefix)?);
        // The first page of a listing is enough.
        self.block(async move { Ok(inner.list(Some(&p)).try_next().await?.is_some()) })
    }

    fn delete(&self, k: &str) -> io::Result<()> {
        let (inner, k) = (Arc::clone(&self.inner), key(k)?);
        absent_is_none(self.block(async move { inner.delete(&k).await })).map(|_| ())
    }
}

/// A multipart upload through the `object_store` crate.
struct RemoteUpload {
    up: Box<dyn object_store::MultipartUpload>,
    handle: tokio::runtime::Handle,
}

impl Upload for RemoteUpload {
    fn put_part(&mut self, data: Bytes) -> io::Result<()> {
        run_on(&self.handle, self.up.put_part(PutPayload::from(data)))
    }

    fn complete(self: Box<Self>) -> io::Result<()> {
        let RemoteUpload { mut up, handle } = *self;
        run_on(&handle, async move { up.complete().await.map(|_| ()) })
    }

    fn abort(self: Box<Self>) {
        let RemoteUpload { mut up, handle } = *self;
        if let Err(e) = run_on(&handle, async move { up.abort().await }) {
            tracing::warn!(error = %e, "aborting a multipart upload failed; the store drops it later");
        }
    }
}
