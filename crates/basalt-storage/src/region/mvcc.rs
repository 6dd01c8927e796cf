//! Multi-version concurrency control: which writes readers may see (HBase's MVCC).
//!
//! A write begins (takes its sequence id), is staged (its cells are in the memstore, its WAL
//! record in the log's buffer) and becomes visible when the read point passes it. The read
//! point moves past a write once it is finished: staged with no sync to wait for (SKIP_WAL,
//! ASYNC_WAL), staged with its WAL ticket synced, or given up (`complete`). Any writer may
//! move the read point past every finished write at the front, not only its own: after a
//! group sync the first writer to run makes the whole group visible, instead of each one
//! waiting for the older ones' threads to be scheduled.
//!
//! # Invariants
//! 1. Sequence ids are taken from the database-wide counter while holding this region's lock,
//!    so `pending` is in increasing order.
//! 2. The read point is just below the oldest pending write: a reader never sees part of a row
//!    mutation, and never a write that started after an unfinished one.
//! 3. A staged write with a ticket is not visible before the WAL has synced that ticket.
//! 4. `published` holds the read point while a write is pending, and [`NONE_PENDING`] while
//!    none is. It is stored under the lock, by [`Mvcc::begin`] before the write takes its id
//!    and whenever the front of `pending` moves. A reader takes the read point from it
//!    without the lock, so a read does not wait on the writers' lock nor write the line they
//!    write (beside a writer a read point took 77 ns under the lock, 2 ns without it:
//!    BENCHMARKS.md). With none pending the read point is the counter, read between two
//!    loads of `published`: a write whose id the counter includes stored its point before
//!    taking the id, so the second load sees that point, or [`NONE_PENDING`] again once the
//!    write has finished.
//!    A read point so taken may be below one taken before it while other regions take ids
//!    (a write begun here publishes the counter as it stood before its id); what it makes
//!    visible never shrinks, as no write of this region lies between the two.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::{Condvar, Mutex};

/// A write not yet visible.
#[derive(Debug)]
struct Pending {
    id: u64,
    /// In the memstore; `ticket` is the WAL position it waits for (none: it waits for none).
    staged: bool,
    ticket: Option<u64>,
    /// Given up or done whatever the WAL says.
    complete: bool,
}

impl Pending {
    fn finished(&self, synced: u64) -> bool {
        self.complete || (self.staged && self.ticket.is_none_or(|t| t <= synced))
    }
}

/// `published` while no write is pending (invariant 4).
const NONE_PENDING: u64 = u64::MAX;

/// One region's MVCC.
#[derive(Debug)]
pub struct Mvcc {
    seq: Arc<AtomicU64>,
    pending: Mutex<VecDeque<Pending>>,
    /// The read point while a write is pending, else [`NONE_PENDING`] (invariant 4); stored
    /// with `pending` locked, loaded without it.
    published: AtomicU64,
    advanced: Condvar,
}

impl Mvcc {
    /// An MVCC drawing sequence ids from `seq` (the last id handed out).
    #[must_use]
    pub fn new(seq: Arc<AtomicU64>) -> Mvcc {
        Mvcc {
            seq,
            pending: Mutex::new(VecDeque::new()),
            published: AtomicU64::new(NONE_PENDING),
            advanced: Condvar::new(),
        }
    }

    /// Starts a write and returns its sequence id.
    pub fn begin(&self) -> u64 {
        let mut p = self.pending.lock();
        let first = p.is_empty();
        if first {
            // Before the id is taken (invariant 4): the counter now is at or below it.
            let last = self.seq.load(Ordering::SeqCst);
            self.published.store(last, Ordering::SeqCst);
        }
        let id = self.seq.fetch_add(1, Ordering::SeqCst) + 1;
        if first {
            // The same point as the front's, once ids of other regions' writes taken
            // between the two are passed too (they are not this region's to wait for).
            self.published.store(id - 1, Ordering::SeqCst);
        }
        p.push_back(Pending {
            id,
            staged: false,
            ticket: None,
            complete: false,
        });
        id
    }

    /// Notes that write `id` is in the memstore; it becomes visible once `ticket` (when it
    /// waits for a sync) is synced and the writes before it are visible.
    pub fn staged(&self, id: u64, ticket: Option<u64>) {
        let mut p = self.pending.lock();
        if let Some(e) = p.iter_mut().find(|e| e.id == id) {
            e.staged = true;
            e.ticket = ticket;
        }
        self.advance_locked(&mut p, 0);
    }

    /// Marks write `id` finished whatever its sync (applied without one, or given up).
    pub fn complete(&self, id: u64) {
        let mut p = self.pending.lock();
        if let Some(e) = p.iter_mut().find(|e| e.id == id) {
            e.complete = true;
        }
        self.advance_locked(&mut p, 0);
    }

    /// Keeps write `id`, whose WAL sync failed, from becoming visible through any later sync;
    /// the caller takes its cells out and then [`Mvcc::complete`]s it. False when it is
    /// visible already: a later writer healed the log and synced it, so it is durable.
    pub fn hold(&self, id: u64) -> bool {
        let mut p = self.pending.lock();
        match p.iter_mut().find(|e| e.id == id) {
            Some(e) => {
                e.ticket = Some(u64::MAX);
                true
            }
            None => false,
        }
    }

    /// Moves the read point past every finished write at the front, the WAL having synced
    /// every position up to `synced`.
    pub fn advance(&self, synced: u64) {
        let mut p = self.pending.lock();
        self.advance_locked(&mut p, synced);
    }

    fn advance_locked(&self, p: &mut VecDeque<Pending>, synced: u64) {
        invariant!(
            p.iter().zip(p.iter().skip(1)).all(|(a, b)| a.id < b.id),
            "MVCC pending writes out of sequence order (invariant 1)"
        );
        let mut advanced = false;
        while p.front().is_some_and(|e| e.finished(synced)) {
            p.pop_front();
            advanced = true;
        }
        // Waiters wait for the front to pass their id: only a move of the front frees one.
        if advanced {
            let point = p.front().map_or(NONE_PENDING, |e| e.id - 1);
            self.published.store(point, Ordering::SeqCst);
            self.advanced.notify_all();
        }
    }

    /// The highest sequence id a new reader may see (invariant 2).
    #[must_use]
    pub fn read_point(&self) -> u64 {
        let read = match self.published.load(Ordering::SeqCst) {
            NONE_PENDING => {
                let last = self.seq.load(Ordering::SeqCst);
                match self.published.load(Ordering::SeqCst) {
                    NONE_PENDING => last,
                    point => point,
                }
            }
            point => point,
        };
        let write = self.seq.load(Ordering::SeqCst);
        invariant!(
            read <= write,
            "MVCC read point {read} above the write point {write}"
        );
        read
    }

    /// The oldest write begun and not visible (`u64::MAX`: none).
    #[must_use]
    pub fn oldest_pending(&self) -> u64 {
        self.pending.lock().front().map_or(u64::MAX, |e| e.id)
    }

    /// Waits until every write with id at or below `id` is visible.
    pub fn wait_for(&self, id: u64) {
        let mut p = self.pending.lock();
        while p.front().is_some_and(|e| e.id <= id) {
            self.advanced.wait(&mut p);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_is_visible_once_it_and_every_older_one_is_finished() {
        let m = Mvcc::new(Arc::new(AtomicU64::new(0)));
        let (a, b, c) = (m.begin(), m.begin(), m.begin());
        assert_eq!(m.read_point(), 0);
        m.staged(b, None); // no sync to wait for, but `a` is older
        assert_eq!(m.read_point(), 0);
        m.staged(a, Some(100)); // waits for position 100
        m.advance(99);
        assert_eq!(m.read_point(), 0);
        m.advance(100); // `a`, then `b`
        assert_eq!(m.read_point(), b);
        m.complete(c); // given up
        assert_eq!((m.read_point(), m.oldest_pending()), (c, u64::MAX));
        m.wait_for(c);
    }

    /// Readers take read points while two writers begin and finish writes in this region, and
    /// a third in another region sharing the counter. No read point may pass a write of this
    /// region still pending (invariant 2, read without the lock: invariant 4), and a write's
    /// finish is seen by every reader whose read point passed it.
    #[test]
    fn a_read_point_read_without_the_lock_passes_no_pending_write() {
        use std::sync::atomic::AtomicU8;
        const WRITES: u64 = 20_000;
        const BEGUN: u8 = 1;
        const FINISHED: u8 = 2;
        let seq = Arc::new(AtomicU64::new(0));
        let (m, other) = (Mvcc::new(Arc::clone(&seq)), Mvcc::new(Arc::clone(&seq)));
        // Each id's state; an id of the other region stays 0.
        let state: Vec<AtomicU8> = (0..=3 * WRITES).map(|_| AtomicU8::new(0)).collect();
        let writers_done = AtomicU64::new(0);
        std::thread::scope(|s| {
            for w in 0..2u64 {
                let (m, state, done) = (&m, &state, &writers_done);
                s.spawn(move || {
                    for i in 0..WRITES {
                        let id = m.begin();
                        state[usize::try_from(id).unwrap()].store(BEGUN, Ordering::Relaxed);
                        // Pending a while, as a write is while its cells go in.
                        for _ in 0..(i % 64) {
                            std::hint::spin_loop();
                        }
                        state[usize::try_from(id).unwrap()].store(FINISHED, Ordering::Relaxed);
                        if (i + w) % 3 == 0 {
                            m.complete(id);
                        } else {
                            m.staged(id, None);
                        }
                    }
                    done.fetch_add(1, Ordering::SeqCst);
                });
            }
            s.spawn(|| {
                for _ in 0..WRITES {
                    let id = other.begin();
                    other.complete(id);
                }
            });
            for _ in 0..2 {
                s.spawn(|| {
                    let mut checked = 0u64;
                    while writers_done.load(Ordering::SeqCst) < 2 {
                        let point = m.read_point();
                        for id in checked + 1..=point {
                            let st = state[usize::try_from(id).unwrap()].load(Ordering::Relaxed);
                            assert_ne!(st, BEGUN, "read point {point} passed pending write {id}");
                        }
                        checked = checked.max(point);
                    }
                });
            }
        });
        // Every write finished: the read point is the counter.
        assert_eq!(m.read_point(), seq.load(Ordering::SeqCst));
        assert_eq!(m.oldest_pending(), u64::MAX);
    }
}
