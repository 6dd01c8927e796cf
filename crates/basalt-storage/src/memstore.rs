//! The in-memory sorted buffer of one store's recent writes (HBase's MemStore segment).
//!
//! # Thread safety
//! Writers insert concurrently (the skip list is lock-free); readers iterate concurrently with
//! writers and see only cells whose sequence id is at or below their read point.
//!
//! # Invariants
//! 1. Cells are kept in key order (cell.rs, invariant 1); identical keys (same sequence id)
//!    would replace each other; the write path keeps only the last cell of a mutation naming
//!    a column twice, as HBase does.
//! 2. `size_bytes` is the sum of `Cell::heap_size` plus [`ENTRY_OVERHEAD_BYTES`] of every cell
//!    held, exactly: the write path never inserts a key twice (it folds repeated columns of a
//!    mutation first), and cells leave only by a flush replacing the memstore whole or by
//!    [`MemStore::remove_edit`] taking out a write whose WAL sync failed.
//! 3. A cell kept holds no buffer but its memstore's chunks ([`crate::mslab`]): its bytes are
//!    copied in on insert, so the memory a memstore holds is what `size_bytes` counts, plus
//!    the unused end of its last chunk.

use std::collections::VecDeque;
use std::ops::Bound;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use basalt_model::{Cell, Result};
use bytes::Bytes;
use crossbeam_skiplist::SkipSet;

use crate::mslab::Mslab;
use crate::store::scanner::CellSource;

/// Memory of one skip-list entry beyond its cell: the node header, its tower of links (two on
/// average) and the allocator's rounding (HBase counts a fixed per-entry overhead the same way).
pub const ENTRY_OVERHEAD_BYTES: usize = 64;

/// Row bytes copied into each skip-list entry: a search decides most comparisons from the
/// entry itself, without following the row's pointer to another allocation.
const HEAD_LEN: usize = 24;

/// A skip-list entry: the cell, and the head of its row kept inline.
#[derive(Debug)]
struct Entry {
    head: [u8; HEAD_LEN],
    cell: Cell,
}

impl Entry {
    fn new(cell: Cell) -> Entry {
        let mut head = [0u8; HEAD_LEN];
        let n = cell.row.len().min(HEAD_LEN);
        head[..n].copy_from_slice(&cell.row[..n]);
        Entry { head, cell }
    }

    /// The row's head: all of it when it fits.
    fn head(&self) -> &[u8] {
        &self.head[..self.cell.row.len().min(HEAD_LEN)]
    }
}

impl Ord for Entry {
    /// The cells' order (cell.rs, invariant 1). Heads that differ within both rows' shared
    /// length order the rows as the full rows would; otherwise the cells compare whole.
    fn cmp(&self, other: &Entry) -> std::cmp::Ordering {
        let (a, b) = (self.head(), other.head());
        let n = a.len().min(b.len());
        match a[..n].cmp(&b[..n]) {
            std::cmp::Ordering::Equal => self.cell.cmp(&other.cell),
            decided => decided,
        }
    }
}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Entry) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Entry {
    fn eq(&self, other: &Entry) -> bool {
        self.cmp(other).is_eq()
    }
}

impl Eq for Entry {}

/// One memstore segment.
#[derive(Debug, Default)]
pub struct MemStore {
    cells: SkipSet<Entry>,
    /// Where the cells' bytes are kept (invariant 3).
    mslab: Mslab,
    size_bytes: AtomicUsize,
    min_seq_id: AtomicU64,
}

impl MemStore {
    /// An empty memstore.
    #[must_use]
    pub fn new() -> MemStore {
        MemStore {
            cells: SkipSet::new(),
            mslab: Mslab::default(),
            size_bytes: AtomicUsize::new(0),
            min_seq_id: AtomicU64::new(u64::MAX),
        }
    }

    /// Adds a cell; returns the bytes it added to [`MemStore::size_bytes`].
    pub fn insert(&self, cell: Cell) -> usize {
        let n = cell.heap_size() + ENTRY_OVERHEAD_BYTES;
        self.size_bytes.fetch_add(n, Ordering::Relaxed);
        self.min_seq_id.fetch_min(cell.seq_id, Ordering::Relaxed);
        self.cells.insert(Entry::new(self.mslab.copy(cell)));
        n
    }

    /// Takes out the cells of write `seq` on `row`: a write whose WAL sync failed, which
    /// readers must never see. Returns the bytes freed (invariant 2).
    pub fn remove_edit(&self, row: &Bytes, seq: u64) -> usize {
        let start = Entry::new(Cell::first_on_row(row));
        let mut freed = 0;
        for e in self.cells.range(start..) {
            if e.cell.row != *row {
                break;
            }
            if e.cell.seq_id == seq && e.remove() {
                freed += e.cell.heap_size() + ENTRY_OVERHEAD_BYTES;
            }
        }
        self.size_bytes.fetch_sub(freed, Ordering::Relaxed);
        freed
    }

    /// Bytes held (invariant 2).
    #[must_use]
    pub fn size_bytes(&self) -> usize {
        self.size_bytes.load(Ordering::Relaxed)
    }

    /// Number of cells.
    #[must_use]
    pub fn len(&self) -> usize {
        self.cells.len()
    }

    /// Whether nothing was inserted.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.cells.is_empty()
    }

    /// Lowest sequence id held; `u64::MAX` when empty. The WAL must keep every edit from here.
    #[must_use]
    pub fn min_seq_id(&self) -> u64 {
        self.min_seq_id.load(Ordering::Relaxed)
    }

    /// A scanner over cells visible at `read_point`. Like a store file scanner it starts
    /// unpositioned: its first call must be a seek.
    #[must_use]
    pub fn scanner(self: &Arc<Self>, read_point: u64) -> MemStoreScanner {
        MemStoreScanner {
            mem: Arc::clone(self),
            read_point,
            buf: VecDeque::new(),
            resume: Resume::End,
            batch: FIRST_BATCH,
        }
    }
}

#[derive(Debug)]
enum Resume {
    After(Cell),
    End,
}

/// Iterates a memstore in key order. Refills a small buffer with one skip-list search per
/// batch, so the scanner owns no borrow of the skip list. Batches start small after a seek (a
/// Get wants a cell or two) and double while the scanner keeps reading.
#[derive(Debug)]
pub struct MemStoreScanner {
    mem: Arc<MemStore>,
    read_point: u64,
    buf: VecDeque<Cell>,
    resume: Resume,
    batch: usize,
}

const FIRST_BATCH: usize = 4;
const MAX_BATCH: usize = 64;

impl MemStoreScanner {
    fn refill(&mut self, from: Bound<&Cell>) {
        self.buf.clear();
        let mut entry = match from {
            Bound::Unbounded => self.mem.cells.front(),
            Bound::Included(c) => self
                .mem
                .cells
                .lower_bound(Bound::Included(&Entry::new(c.clone()))),
            Bound::Excluded(c) => self
                .mem
                .cells
                .lower_bound(Bound::Excluded(&Entry::new(c.clone()))),
        };
        let mut last = None;
        while let Some(e) = entry {
            let c = &e.value().cell;
            if c.seq_id <= self.read_point {
                self.buf.push_back(c.clone());
            }
            if self.buf.len() >= self.batch {
                last = Some(c.clone());
                break;
            }
            entry = e.next();
        }
        self.resume = last.map_or(Resume::End, Resume::After);
        self.batch = (self.batch * 2).min(MAX_BATCH);
    }
}

impl CellSource for MemStoreScanner {
    fn peek(&self) -> Option<&Cell> {
        self.buf.front()
    }

    fn advance(&mut self) -> Result<()> {
        self.take_next().map(drop)
    }

    fn take_next(&mut self) -> Result<Option<Cell>> {
        let taken = self.buf.pop_front();
        while self.buf.is_empty() {
            match std::mem::replace(&mut self.resume, Resume::End) {
                Resume::After(c) => self.refill(Bound::Excluded(&c)),
                Resume::End => break,
            }
        }
        Ok(taken)
    }

    fn seek(&mut self, key: &Cell) -> Result<()> {
        self.batch = FIRST_BATCH;
        self.refill(Bound::Included(key));
        if self.buf.is_empty() {
            self.advance()?;
        }
        Ok(())
    }

    fn last_row_before(&mut self, key: Option<&Cell>) -> Result<Option<Bytes>> {
        let mut entry = match key {
            Some(k) => self
                .mem
                .cells
                .upper_bound(Bound::Excluded(&Entry::new(k.clone()))),
            None => self.mem.cells.back(),
        };
        while let Some(e) = entry {
            if e.value().cell.seq_id <= self.read_point {
                return Ok(Some(e.value().cell.row.clone()));
            }
            entry = e.prev();
        }
        Ok(None)
    }
}

/// Every cell of a memstore in key order, for a flush (no writer touches a snapshot).
pub fn snapshot_cells(mem: &MemStore) -> impl Iterator<Item = Cell> + '_ {
    mem.cells.iter().map(|e| e.value().cell.clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn row() -> impl Strategy<Value = Vec<u8>> {
        // Lengths around the inline head, few distinct bytes: shared prefixes are common.
        prop::collection::vec(0u8..3, 0..30)
    }

    /// Invariant 3: a kept cell does not hold its request's buffer, and reads as written.
    #[test]
    fn a_kept_cell_holds_no_buffer_it_came_from() {
        let mem = MemStore::new();
        let request = Bytes::from(vec![7u8; 8192]);
        let cell = Cell::put(request.slice(0..4), "f", "q", 1, request.slice(100..200));
        let counted = mem.insert(cell.clone());
        assert_eq!(counted, cell.heap_size() + ENTRY_OVERHEAD_BYTES);
        drop(cell);
        assert!(
            request.is_unique(),
            "the memstore still holds the request's buffer"
        );
        let kept: Vec<Cell> = snapshot_cells(&mem).collect();
        assert_eq!(kept.len(), 1);
        assert_eq!(
            (&kept[0].row[..], &kept[0].value[..]),
            (&[7u8; 4][..], &[7u8; 100][..])
        );
    }

    proptest! {
        /// Entries order exactly as their cells do, whatever the rows' lengths.
        #[test]
        fn entries_order_as_cells(a in row(), b in row(), ts in 0i64..3, qa in 0u8..2, qb in 0u8..2) {
            let ca = Cell::put(a, "f", vec![qa], ts, "v");
            let cb = Cell::put(b, "f", vec![qb], 1, "v");
            prop_assert_eq!(Entry::new(ca.clone()).cmp(&Entry::new(cb.clone())), ca.cmp(&cb));
        }
    }
}
