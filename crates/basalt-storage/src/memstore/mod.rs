//! The in-memory sorted buffer of one store's recent writes (HBase's MemStore segment).
//!
//! The cells live in a skip list laid out in an arena of words ([`skiplist`], [`arena`]):
//! a cell's whole key and value are copied into its node, so an insert allocates nothing but
//! arena words, a search reads keys where they lie, and a flushed memstore frees its memory
//! in a few large pieces (HBase's MSLAB, RocksDB's arena).
//!
//! # Thread safety
//! Writers insert concurrently and readers search and iterate concurrently with them, none
//! of them locking (skiplist.rs); readers see only cells whose sequence id is at or below
//! their read point.
//!
//! # Invariants
//! 1. Cells are kept in key order (cell.rs, invariant 1); identical keys (same sequence id)
//!    would replace each other; the write path keeps only the last cell of a mutation naming
//!    a column twice, as HBase does.
//! 2. `size_bytes` is the sum of [`MemStore::entry_bytes`] of every cell held, exactly: the
//!    write path never inserts a key twice (it folds repeated columns of a mutation first),
//!    and cells leave only by a flush replacing the memstore whole or by
//!    [`MemStore::remove_edit`] taking out a write whose WAL sync failed.
//! 3. A cell kept holds no buffer of the cell given to [`MemStore::insert`]: its bytes are
//!    copied into the arena, so the memory a memstore holds is what `size_bytes` counts, give
//!    or take the difference between each node's tower and the two words counted for it, the
//!    unused end of each arena chunk and the nodes of removed edits. The row bloom filter
//!    ([`row_bloom`]) is not counted: about twelve bits a row, against the tens of bytes a
//!    cell takes.
//! 4. Every row of a cell inserted is in the row bloom filter before [`MemStore::insert`]
//!    returns, and so before a read point passes the cell's write (region/mvcc.rs): a Get
//!    that may see the cell sees its row in the filter (row_bloom.rs, invariant 1). Gets read
//!    at the read point; a flush reads its snapshot whole, and a snapshot takes no inserts.

mod arena;
mod key;
pub mod row_bloom;
mod skiplist;

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use basalt_model::{Cell, Result};
use bytes::Bytes;

use crate::store::scanner::{first_on_next_row, CellSource};
use key::{CellBuf, RowPart};
use row_bloom::RowBloom;
use skiplist::{SkipList, NIL};

/// Nodes of a column [`MemStoreScanner::skip_column`] walks one by one past its tail before
/// it searches: a column written oldest first has tails that do not reach its end.
const COLUMN_STEPS: usize = 8;

/// Links counted for each node: a node has one, then one more with chance 1/2 each time (a
/// mean of two).
const TOWER_WORDS_COUNTED: usize = 2;

/// Bytes counted for a node of `body_words` words besides its links (invariant 2).
fn counted(body_words: usize) -> usize {
    8 * (body_words + TOWER_WORDS_COUNTED)
}

/// One memstore segment.
#[derive(Debug)]
pub struct MemStore {
    cells: SkipList,
    size_bytes: AtomicUsize,
    len: AtomicUsize,
    min_seq_id: AtomicU64,
    /// The rows held (invariant 4), made by the first insert: a memstore never written holds
    /// no filter.
    rows: OnceLock<RowBloom>,
    /// The rows its filter is made for.
    rows_expected: usize,
}

impl Default for MemStore {
    fn default() -> MemStore {
        MemStore::new()
    }
}

impl MemStore {
    /// An empty memstore, for a store with no history of writes.
    #[must_use]
    pub fn new() -> MemStore {
        MemStore::for_rows(0)
    }

    /// An empty memstore taking the place of `previous`: its row bloom filter is made for as
    /// many rows as `previous` held cells, and a quarter more, since a store's writes tend to
    /// go on as they went. Cells bound the rows from above: the filter is never made too small
    /// for the same writes again, and at twelve bits a cell it is a percent or two of the
    /// memory the cells take.
    #[must_use]
    pub fn after(previous: &MemStore) -> MemStore {
        let cells = previous.len();
        MemStore::for_rows(cells.saturating_add(cells / 4))
    }

    fn for_rows(rows_expected: usize) -> MemStore {
        MemStore {
            cells: SkipList::default(),
            size_bytes: AtomicUsize::new(0),
            len: AtomicUsize::new(0),
            min_seq_id: AtomicU64::new(u64::MAX),
            rows: OnceLock::new(),
            rows_expected,
        }
    }

    /// Bytes a memstore counts for `cell` (invariant 2): its node's words, its links counted
    /// at [`TOWER_WORDS_COUNTED`].
    #[must_use]
    pub fn entry_bytes(cell: &Cell) -> usize {
        counted(skiplist::body_words(cell))
    }

    /// Adds a cell; returns the bytes it added to [`MemStore::size_bytes`] (less those of a
    /// cell with the same key it replaced, which invariant 2 says never happens).
    pub fn insert(&self, cell: &Cell) -> isize {
        let n = MemStore::entry_bytes(cell);
        self.min_seq_id.fetch_min(cell.seq_id, Ordering::Relaxed);
        let adding = self
            .rows
            .get_or_init(|| RowBloom::for_rows(self.rows_expected))
            .start_add(row_bloom::row_hash(cell.row()));
        let replaced = self.cells.insert(cell);
        adding.finish();
        self.len.fetch_add(1, Ordering::Relaxed);
        self.size_bytes.fetch_add(n, Ordering::Relaxed);
        let freed = replaced.map_or(0, |at| self.forget(at));
        n as isize - freed as isize
    }

    /// Takes a killed node out of the counts; returns its bytes.
    fn forget(&self, at: u64) -> usize {
        let n = counted(self.cells.node(at).body_words());
        self.len.fetch_sub(1, Ordering::Relaxed);
        self.size_bytes.fetch_sub(n, Ordering::Relaxed);
        n
    }

    /// Takes out the cells of write `seq` on `row`: a write whose WAL sync failed, which
    /// readers must never see. Returns the bytes freed (invariant 2).
    pub fn remove_edit(&self, row: &Bytes, seq: u64) -> usize {
        let mut start = Vec::new();
        key::encode_into(&Cell::first_on_row(row), &mut start);
        let mut at = self.cells.seek(&start);
        let (mut freed, mut buf) = (0, CellBuf::default());
        while at != NIL {
            let node = self.cells.node(at);
            let cell = node.cell(&mut buf);
            if cell.row() != *row {
                break;
            }
            if cell.seq_id == seq && node.kill() {
                freed += self.forget(at);
            }
            at = node.next(0);
        }
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
        self.len.load(Ordering::Relaxed)
    }

    /// Whether nothing was inserted.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// False when the memstore holds no cell of the row of hash `row`
    /// ([`row_bloom::row_hash`]); true when it may.
    #[must_use]
    pub fn may_hold_row(&self, row: u64) -> bool {
        self.rows.get().is_none_or(|f| f.may_hold(row))
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
            at: NIL,
            current: None,
            buf: CellBuf::default(),
            row: None,
        }
    }

    /// A scanner as [`MemStore::scanner`], of `row`'s cells alone: a Get's. It ends where
    /// the next row begins, without copying out that row's first cell (which a Get would
    /// only compare and drop).
    #[must_use]
    pub fn row_scanner(self: &Arc<Self>, read_point: u64, row: &[u8]) -> MemStoreScanner {
        MemStoreScanner {
            row: Some(RowPart::of(row)),
            ..self.scanner(read_point)
        }
    }
}

/// Iterates a memstore in key order: a position in the skip list and the cell there, copied
/// out. The scanner holds its memstore, so the position stays valid however the list grows.
#[derive(Debug)]
pub struct MemStoreScanner {
    mem: Arc<MemStore>,
    read_point: u64,
    /// The node of `current`, or NIL.
    at: u64,
    current: Option<Cell>,
    /// Where the cells copied out keep their bytes.
    buf: CellBuf,
    /// The one row a Get's scanner reads: nodes past it are not looked at.
    row: Option<RowPart>,
}

thread_local! {
    /// A seek's search key (kept to save an allocation per seek: a Get opens a scanner, and
    /// seeks it once).
    static SEARCH_KEY: std::cell::RefCell<Vec<u64>> = const { std::cell::RefCell::new(Vec::new()) };
}

impl MemStoreScanner {
    /// The first node past `column`'s column, from `at`, a node of that column: node with
    /// node, unless the column's nodes run on past the steps allowed (then a search).
    fn past_column_of(&self, column: &Cell) -> u64 {
        match self.mem.cells.past_column(self.at, COLUMN_STEPS) {
            Ok(next) => next,
            Err(last) => SEARCH_KEY.with_borrow_mut(|words| {
                let past = column.last_on_its_column();
                key::encode_into(&past, words);
                self.mem.cells.seek_from(last, words)
            }),
        }
    }

    /// Moves from `at` to the first live node visible at the read point, and copies its cell;
    /// none past the scanner's row, when it has one.
    fn settle(&mut self) {
        while self.at != NIL {
            let node = self.mem.cells.node(self.at);
            if self.row.as_ref().is_some_and(|r| !r.begins(node.key())) {
                break;
            }
            if !node.is_dead() && node.seq_id() <= self.read_point {
                self.current = Some(node.cell(&mut self.buf));
                return;
            }
            self.at = node.next(0);
        }
        self.current = None;
    }
}

impl CellSource for MemStoreScanner {
    fn peek(&self) -> Option<&Cell> {
        self.current.as_ref()
    }

    fn advance(&mut self) -> Result<()> {
        if self.at != NIL {
            self.at = self.mem.cells.node(self.at).next(0);
        }
        self.settle();
        Ok(())
    }

    fn take_into(&mut self, out: &mut Vec<Cell>) -> Result<bool> {
        let Some(cell) = self.current.take() else {
            return Ok(false);
        };
        out.push(cell);
        self.advance()?;
        Ok(true)
    }

    /// Leaves the column of the cell taken node with node, as `skip_column` does, when the
    /// node's tail shows older versions after it: they are never copied out. Otherwise it
    /// steps to the next node, as `take_into` does: a column of one version (the usual one)
    /// costs no comparison, and older versions written after the newest (whose tail then
    /// stops short) are left to the store scanner.
    fn take_last_version_into(&mut self, out: &mut Vec<Cell>) -> Result<bool> {
        let Some(cell) = self.current.take() else {
            return Ok(false);
        };
        self.at = if self.mem.cells.tail_goes_on(self.at) {
            self.past_column_of(&cell)
        } else {
            self.mem.cells.node(self.at).next(0)
        };
        out.push(cell);
        self.settle();
        Ok(true)
    }

    fn seek(&mut self, key: &Cell) -> Result<()> {
        self.at = SEARCH_KEY.with_borrow_mut(|words| {
            key::encode_into(key, words);
            self.mem.cells.seek(words)
        });
        self.settle();
        Ok(())
    }

    /// Searches forward from the current node, comparing the nodes' keys where they lie,
    /// and copies out only the cell it stops at. Stepping would copy out every cell passed:
    /// a column written many times since the last flush (a hot row under updates) has a node
    /// for each of its versions, and a Get steps over all but the newest of each column.
    fn skip_to(&mut self, key: &Cell) -> Result<()> {
        if self.current.as_ref().is_none_or(|c| c >= key) {
            return Ok(());
        }
        self.at = SEARCH_KEY.with_borrow_mut(|words| {
            key::encode_into(key, words);
            self.mem.cells.seek_from(self.at, words)
        });
        self.settle();
        Ok(())
    }

    /// Leaves the column by its last version's node (the tail of the current one), comparing
    /// node with node: no key is built unless the column's nodes run on past the steps
    /// allowed, and only the cell it stops at is copied out.
    fn skip_column(&mut self, column: &Cell) -> Result<()> {
        if !self.current.as_ref().is_some_and(|c| c.same_column(column)) {
            return Ok(());
        }
        self.at = self.past_column_of(column);
        self.settle();
        Ok(())
    }

    /// Searches forward to the next row's first key: stepping would copy out each cell of
    /// the row passed (a Get of named columns leaves the rest of its row this way).
    fn skip_row(&mut self, row: &[u8]) -> Result<()> {
        if self.current.as_ref().is_none_or(|c| !c.is_of_row(row)) {
            return Ok(());
        }
        self.skip_to(&first_on_next_row(row))
    }

    fn last_row_before(&mut self, key: Option<&Cell>) -> Result<Option<Bytes>> {
        let mut bound = key.map(|k| {
            let mut words = Vec::new();
            key::encode_into(k, &mut words);
            words
        });
        loop {
            let at = self.mem.cells.before(bound.as_deref());
            if at == NIL {
                return Ok(None);
            }
            let node = self.mem.cells.node(at);
            if !node.is_dead() && node.seq_id() <= self.read_point {
                return Ok(Some(node.cell(&mut self.buf).row_bytes()));
            }
            bound = Some(
                node.key()
                    .iter()
                    .map(|w| w.load(Ordering::Relaxed))
                    .collect(),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    fn put(row: &str, ts: i64, seq: u64, value: &str) -> Cell {
        {
            let mut c = Cell::put(row.to_owned(), "f", "q", ts, value.to_owned());
            c.seq_id = seq;
            c
        }
    }

    fn all(mem: &Arc<MemStore>, read_point: u64) -> Vec<Cell> {
        let mut s = mem.scanner(read_point);
        s.seek(&Cell::first_on_row(&Bytes::new())).unwrap();
        let mut out = Vec::new();
        while s.take_into(&mut out).unwrap() {}
        out
    }

    /// Taking a column's last kept version leaves the column itself when the node's tail
    /// goes on: versions written oldest first (each newer node's tail is the column's last),
    /// and with older ones written after those, past the steps taken node by node (then a
    /// search). Versions written newest first leave each node its own tail: the source may
    /// stop inside the column, and the skip the store scanner makes after leaves it.
    #[test]
    fn taking_a_columns_last_version_leaves_the_column() {
        let past_the_steps: Vec<i64> = (1..=COLUMN_STEPS as i64 + 4).collect();
        let cases: [(&str, Vec<Vec<i64>>, bool); 4] = [
            ("one version", vec![vec![1]], true),
            ("oldest first", vec![vec![1, 2, 3]], true),
            (
                "then older ones",
                vec![(20..=30).collect(), past_the_steps],
                true,
            ),
            ("newest first", vec![vec![3, 2, 1]], false),
        ];
        for (case, writes, leaves_itself) in cases {
            let mem = Arc::new(MemStore::new());
            let mut seq = 0;
            let column_b = [vec![1, 2]];
            for (q, stamps) in [("b", &column_b[..]), ("a", &writes[..])] {
                for ts in stamps.iter().flatten() {
                    seq += 1;
                    let mut c = Cell::put("r", "f", q, *ts, "v");
                    c.seq_id = seq;
                    mem.insert(&c);
                }
            }
            let mut s = mem.scanner(u64::MAX);
            s.seek(&Cell::first_on_row(&Bytes::from_static(b"r")))
                .unwrap();
            let mut out = Vec::new();
            assert!(s.take_last_version_into(&mut out).unwrap());
            let visible = all(&mem, u64::MAX);
            assert_eq!(out, visible[..1], "{case}");
            let next = visible.iter().find(|c| !c.same_column(&out[0]));
            if leaves_itself {
                assert_eq!(s.peek(), next, "{case}");
            }
            s.skip_column(&out[0]).unwrap();
            assert_eq!(s.peek(), next, "{case}");
        }
    }

    /// A row scanner reads what the whole memstore's scanner reads of its row, and nothing
    /// of the rows after it: rows that are prefixes of each other, with zero bytes, at
    /// read points that hide some cells; also after a column is skipped.
    #[test]
    fn a_row_scanner_reads_its_row_alone() {
        let mem = Arc::new(MemStore::new());
        let rows: [&[u8]; 6] = [b"q", b"r", b"r\0", b"r\0\0", b"r\x01", b"ra"];
        let mut seq = 0;
        for row in rows {
            for q in ["a", "b"] {
                for ts in [1, 2] {
                    seq += 1;
                    mem.insert(&{
                        let mut c = Cell::put(row.to_vec(), "f", q, ts, "v");
                        c.seq_id = seq;
                        c
                    });
                }
            }
        }
        for read_point in [0, 2, 13, u64::MAX] {
            let everything = all(&mem, read_point);
            for row in rows {
                let of_row = |c: &&Cell| c.row() == row;
                let want: Vec<Cell> = everything.iter().filter(of_row).cloned().collect();
                let mut s = mem.row_scanner(read_point, row);
                s.seek(&Cell::first_on_row(&Bytes::copy_from_slice(row)))
                    .unwrap();
                let mut got = Vec::new();
                while s.take_into(&mut got).unwrap() {}
                assert_eq!(got, want, "row {row:?} at {read_point}");
                // Past the row's first column, what is left is the rest of the row.
                let mut s = mem.row_scanner(read_point, row);
                s.seek(&Cell::first_on_row(&Bytes::copy_from_slice(row)))
                    .unwrap();
                if let Some(first) = s.peek().cloned() {
                    s.skip_column(&first).unwrap();
                    let mut rest = Vec::new();
                    while s.take_into(&mut rest).unwrap() {}
                    let later: Vec<Cell> = want
                        .iter()
                        .filter(|c| !c.same_column(&first))
                        .cloned()
                        .collect();
                    assert_eq!(rest, later, "row {row:?} at {read_point}");
                }
            }
        }
    }

    /// Invariant 3: a kept cell does not hold its request's buffer, and reads as written.
    #[test]
    fn a_kept_cell_holds_no_buffer_it_came_from() {
        let mem = MemStore::new();
        let request = Bytes::from(vec![7u8; 8192]);
        let cell = Cell::put(request.slice(0..4), "f", "q", 1, request.slice(100..200));
        let counted = mem.insert(&cell);
        assert_eq!(counted, MemStore::entry_bytes(&cell) as isize);
        drop(cell);
        assert!(
            request.is_unique(),
            "the memstore still holds the request's buffer"
        );
        let kept = all(&Arc::new(mem), 0);
        assert_eq!(kept.len(), 1);
        assert_eq!(
            (kept[0].row(), kept[0].value()),
            (&[7u8; 4][..], &[7u8; 100][..])
        );
    }

    /// Invariants 2 and 3: what is counted is what the arena holds, give or take the towers'
    /// spread and the chunks' unused ends.
    #[test]
    fn the_count_is_the_arena_it_fills() {
        let mem = MemStore::new();
        for i in 0..50_000u64 {
            let value = "v".repeat((i % 200) as usize);
            mem.insert(&put(
                &format!("row-{:08}", i.wrapping_mul(7919) % 50_000),
                1,
                i,
                &value,
            ));
        }
        let (counted, held) = (mem.size_bytes() as f64, mem.cells.arena_bytes() as f64);
        assert!(
            (held / counted - 1.0).abs() < 0.05,
            "counted {counted} bytes, the arena holds {held}"
        );
        assert_eq!(mem.len(), 50_000);
    }

    /// Invariant 1: a second cell with the same key replaces the first, and the count with it.
    #[test]
    fn a_second_insert_of_a_key_replaces_the_first() {
        let mem = Arc::new(MemStore::new());
        let first = put("r", 5, 9, "first");
        let second = put("r", 5, 9, "second, and longer");
        let a = mem.insert(&first);
        let b = mem.insert(&second);
        assert_eq!(
            b,
            (MemStore::entry_bytes(&second) - MemStore::entry_bytes(&first)) as isize
        );
        assert_eq!(mem.size_bytes() as isize, a + b);
        assert_eq!(all(&mem, u64::MAX), vec![second.clone()]);
        assert_eq!(all(&mem, u64::MAX)[0].value(), second.value());
        assert_eq!(mem.len(), 1);
        // The live cell is the last of the two: a reversed lookup finds it, not the dead one.
        let mut s = mem.scanner(u64::MAX);
        assert_eq!(s.last_row_before(None).unwrap(), Some(Bytes::from("r")));
        let after = Cell::first_on_row(&Bytes::from("s"));
        assert_eq!(
            s.last_row_before(Some(&after)).unwrap(),
            Some(Bytes::from("r"))
        );
    }

    #[test]
    fn a_removed_edit_is_gone_and_uncounted() {
        let mem = Arc::new(MemStore::new());
        let keep = [
            put("a", 1, 1, "x"),
            put("b", 2, 1, "x"),
            put("b", 1, 3, "x"),
        ];
        let drop = [put("b", 3, 2, "y"), {
            let mut c = Cell::put("b", "f", "z", 3, "y");
            c.seq_id = 2;
            c
        }];
        keep.iter().chain(&drop).for_each(|c| {
            mem.insert(c);
        });
        let before = mem.size_bytes();
        let freed = mem.remove_edit(&Bytes::from("b"), 2);
        assert_eq!(freed, drop.iter().map(MemStore::entry_bytes).sum::<usize>());
        assert_eq!(mem.size_bytes(), before - freed);
        assert_eq!(mem.remove_edit(&Bytes::from("b"), 2), 0, "removed twice");
        let mut want = keep.to_vec();
        want.sort();
        assert_eq!(all(&mem, u64::MAX), want);
        assert_eq!(mem.len(), 3);
        let mut s = mem.scanner(u64::MAX);
        assert_eq!(s.last_row_before(None).unwrap(), Some(Bytes::from("b")));
    }

    #[test]
    fn values_longer_than_a_chunk_round_trip() {
        let mem = Arc::new(MemStore::new());
        let big = Cell::put("big", "f", "q", 1, vec![3u8; 3 << 20]);
        let small = put("small", 1, 0, "s");
        mem.insert(&small);
        mem.insert(&big);
        assert_eq!(all(&mem, 0), vec![big.clone(), small]);
        assert_eq!(all(&mem, 0)[0].value(), big.value());
    }

    /// Thread safety: writers inserting at once while a reader walks; every walk is in order,
    /// and in the end every cell is there once.
    #[test]
    fn writers_and_readers_at_once() {
        let mem = Arc::new(MemStore::new());
        let writers = 3u64;
        let per = 4000u64;
        let done = AtomicUsize::new(0);
        std::thread::scope(|s| {
            for w in 0..writers {
                let (mem, done) = (&mem, &done);
                s.spawn(move || {
                    for i in 0..per {
                        let n = (i * writers + w).wrapping_mul(0x9E37_79B9) % 1_000_000;
                        mem.insert(&put(&format!("{n:07}-{w}-{i}"), 1, i, "v"));
                    }
                    done.fetch_add(1, Ordering::Relaxed);
                });
            }
            let (mem, done) = (&mem, &done);
            s.spawn(move || {
                while done.load(Ordering::Relaxed) < writers as usize {
                    let seen = all(mem, u64::MAX);
                    assert!(seen.windows(2).all(|p| p[0] < p[1]), "a walk out of order");
                }
            });
        });
        let seen = all(&mem, u64::MAX);
        assert_eq!(seen.len(), (writers * per) as usize);
        let distinct: BTreeSet<_> = seen.iter().map(basalt_model::Cell::row_bytes).collect();
        assert_eq!(distinct.len(), seen.len());
    }

    /// A column written many times: a scanner skipping forward from any cell, to a key or
    /// past its column or row, lands where a search from the top does, near keys and far ones, at
    /// read points that hide some versions.
    #[test]
    fn skipping_forward_lands_where_a_search_from_the_top_does() {
        let mem = Arc::new(MemStore::new());
        let mut seq = 0;
        for row in 0..40u32 {
            // Row 7 is hot: its columns hold hundreds of versions.
            let versions = if row == 7 { 300 } else { 1 + row % 3 };
            for q in 0..4u32 {
                for v in 0..versions {
                    seq += 1;
                    let c = {
                        let mut c =
                            Cell::put(format!("r{row:03}"), "f", format!("q{q}"), v.into(), "v");
                        c.seq_id = seq;
                        c
                    };
                    mem.insert(&c);
                }
            }
        }
        let cells = all(&mem, u64::MAX);
        let mut targets: Vec<Cell> = cells.iter().step_by(37).cloned().collect();
        for row in [6u32, 7, 8, 39, 40] {
            let row = Bytes::from(format!("r{row:03}"));
            targets.push(Cell::first_on_row(&row));
            targets.push(Cell::last_on_column(
                &row,
                &Bytes::from("f"),
                &Bytes::from("q1"),
            ));
        }
        for read_point in [seq, seq / 2, 10] {
            for from in cells.iter().step_by(29) {
                // Past the column of the cell it is at: where a search for the column's
                // last key lands.
                let mut skipping = mem.scanner(read_point);
                skipping.seek(from).unwrap();
                if let Some(at) = skipping.peek().cloned() {
                    skipping.skip_column(&at).unwrap();
                    let mut searched = mem.scanner(read_point);
                    searched.seek(&at.last_on_its_column()).unwrap();
                    assert_eq!(
                        skipping.peek(),
                        searched.peek(),
                        "past the column of {at:?}"
                    );
                    // And past its row.
                    skipping.skip_row(at.row()).unwrap();
                    searched.seek(&first_on_next_row(at.row())).unwrap();
                    assert_eq!(skipping.peek(), searched.peek(), "past the row of {at:?}");
                }
                for target in &targets {
                    let mut skipping = mem.scanner(read_point);
                    skipping.seek(from).unwrap();
                    let before = skipping.peek().cloned();
                    skipping.skip_to(target).unwrap();
                    let mut searched = mem.scanner(read_point);
                    match before {
                        // A scanner at its end, or at or past the target, stays.
                        None => assert_eq!(skipping.peek(), None),
                        Some(b) if b >= *target => assert_eq!(skipping.peek(), Some(&b)),
                        Some(_) => {
                            searched.seek(target).unwrap();
                            assert_eq!(skipping.peek(), searched.peek(), "{from:?} to {target:?}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn the_row_bloom_filter_holds_every_row_inserted_and_its_cells_size_the_next_one() {
        let m = MemStore::new();
        let held = |m: &MemStore, row: &str| m.may_hold_row(row_bloom::row_hash(row.as_bytes()));
        // Before the first insert there is no filter, and every row may be held.
        assert!(held(&m, "r0"));
        for i in 0..1000 {
            m.insert(&put(&format!("r{i}"), 1, 2 * i + 1, "old"));
            m.insert(&put(&format!("r{i}"), 2, 2 * i + 2, "new"));
        }
        assert!((0..1000).all(|i| held(&m, &format!("r{i}"))));
        let others = (1000..11_000)
            .filter(|i| held(&m, &format!("r{i}")))
            .count();
        assert!(others < 100, "{others} of 10,000 rows not inserted held");
        let next = MemStore::after(&m);
        assert_eq!(next.rows_expected, 2500);
        assert!(next.rows.get().is_none());
    }
}
