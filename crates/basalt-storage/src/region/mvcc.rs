//! Multi-version concurrency control: which writes readers may see (HBase's MVCC).
//!
//! # Invariants
//! 1. Sequence ids are taken from the database-wide counter while holding this region's lock,
//!    so `pending` is in increasing order.
//! 2. The read point is just below the oldest pending write: a reader never sees part of a row
//!    mutation, and never a write that started after an incomplete one.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::{Condvar, Mutex};

/// One region's MVCC.
#[derive(Debug)]
pub struct Mvcc {
    seq: Arc<AtomicU64>,
    pending: Mutex<VecDeque<(u64, bool)>>,
    advanced: Condvar,
}

impl Mvcc {
    /// An MVCC drawing sequence ids from `seq` (the last id handed out).
    #[must_use]
    pub fn new(seq: Arc<AtomicU64>) -> Mvcc {
        Mvcc {
            seq,
            pending: Mutex::new(VecDeque::new()),
            advanced: Condvar::new(),
        }
    }

    /// Starts a write and returns its sequence id.
    pub fn begin(&self) -> u64 {
        let mut p = self.pending.lock();
        let id = self.seq.fetch_add(1, Ordering::SeqCst) + 1;
        p.push_back((id, false));
        id
    }

    /// Marks a write complete, advancing the read point past every finished write.
    pub fn complete(&self, id: u64) {
        let mut p = self.pending.lock();
        if let Some(e) = p.iter_mut().find(|e| e.0 == id) {
            e.1 = true;
        }
        while p.front().is_some_and(|e| e.1) {
            p.pop_front();
        }
        self.advanced.notify_all();
    }

    /// The highest sequence id a new reader may see (invariant 2).
    #[must_use]
    pub fn read_point(&self) -> u64 {
        let p = self.pending.lock();
        match p.front() {
            Some((id, _)) => id - 1,
            None => self.seq.load(Ordering::SeqCst),
        }
    }

    /// The oldest write begun and not complete (`u64::MAX`: none).
    #[must_use]
    pub fn oldest_pending(&self) -> u64 {
        self.pending.lock().front().map_or(u64::MAX, |e| e.0)
    }

    /// Waits until every write with id at or below `id` is complete.
    pub fn wait_for(&self, id: u64) {
        let mut p = self.pending.lock();
        while p.front().is_some_and(|e| e.0 <= id) {
            self.advanced.wait(&mut p);
        }
    }
}
