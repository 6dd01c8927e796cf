//! Scanners as leases (HBase's region server leases): a scanner lives on the server between
//! calls, each call renews it, and one left alone past the lease timeout is closed and its
//! resources freed. A call on a scanner another call is using, or on an expired or closed
//! one, gets `UnknownScannerException`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use basalt_model::{Error, Result};

use crate::ResultScanner;
use parking_lot::Mutex;

struct Lease<S> {
    scanner: S,
    renewed: Instant,
}

/// The open scanners of one server (or of one API of it: Thrift's scanners carry more).
pub struct Scanners<S = Box<dyn ResultScanner>> {
    timeout: Duration,
    next_id: AtomicU64,
    /// Ids wrap around past this (Thrift's scanner ids are `i32`s).
    max_id: u64,
    leases: Mutex<HashMap<u64, Lease<S>>>,
}

impl<S> std::fmt::Debug for Scanners<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scanners")
            .field("timeout", &self.timeout)
            .field("open", &self.leases.lock().len())
            .finish()
    }
}

impl<S> Scanners<S> {
    #[must_use]
    pub fn new(timeout: Duration) -> Scanners<S> {
        Scanners::with_max_id(timeout, u64::MAX)
    }

    /// Scanners whose ids stay at or below `max_id` (they wrap around to 1).
    #[must_use]
    pub fn with_max_id(timeout: Duration, max_id: u64) -> Scanners<S> {
        Scanners {
            timeout,
            next_id: AtomicU64::new(1),
            max_id,
            leases: Mutex::new(HashMap::new()),
        }
    }

    /// Registers a scanner; returns its id.
    pub fn open(&self, scanner: S) -> u64 {
        let n = self.next_id.fetch_add(1, Ordering::Relaxed);
        let id = (n - 1) % self.max_id + 1;
        let lease = Lease {
            scanner,
            renewed: Instant::now(),
        };
        self.leases.lock().insert(id, lease);
        id
    }

    /// Takes the scanner out for one call (renewing nothing yet); `UnknownScanner` when it
    /// is not there, or when its lease ran out and the reaper has not closed it yet (so a
    /// lease ends when it says, whenever the reaper runs).
    pub fn take(&self, id: u64) -> Result<S> {
        let lease = self.leases.lock().remove(&id);
        match lease {
            Some(l) if l.renewed.elapsed() < self.timeout => Ok(l.scanner),
            Some(_) => {
                tracing::info!(scanner = id, "scanner lease expired");
                Err(Error::UnknownScanner(id))
            }
            None => Err(Error::UnknownScanner(id)),
        }
    }

    /// Puts a scanner back after a call, renewing its lease.
    pub fn put_back(&self, id: u64, scanner: S) {
        let lease = Lease {
            scanner,
            renewed: Instant::now(),
        };
        self.leases.lock().insert(id, lease);
    }

    /// Closes a scanner; closing an unknown one is not an error (HBase's close is idempotent).
    /// Returns whether it was open.
    pub fn close(&self, id: u64) -> bool {
        self.leases.lock().remove(&id).is_some()
    }

    /// Closes every scanner whose lease expired; returns how many.
    pub fn expire(&self) -> usize {
        let mut leases = self.leases.lock();
        let before = leases.len();
        let timeout = self.timeout;
        leases.retain(|id, l| {
            let keep = l.renewed.elapsed() < timeout;
            if !keep {
                tracing::info!(scanner = id, "scanner lease expired");
            }
            keep
        });
        before - leases.len()
    }

    /// Open scanners (diagnostics, metrics).
    #[must_use]
    pub fn open_count(&self) -> usize {
        self.leases.lock().len()
    }
}
