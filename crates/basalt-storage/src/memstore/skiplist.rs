//! A concurrent skip list of cells laid out in an arena of words (RocksDB's InlineSkipList,
//! in safe Rust): a node is its links, its whole key and its value, side by side, so a search
//! touches one node's words per step and an insert allocates nothing but arena words.
//!
//! ```text
//! node  := meta | next[height] | tail | key words | value_len | ttl? | value words
//! meta  := height (bits 0-7) | DEAD (bit 8) | HAS_TTL (bit 9) | key bytes (bits 16-63)
//! ```
//!
//! `tail` is a shortcut over a column's versions. A column written many times since the last
//! flush (a hot row under updates) has a node for each version, newest first, and a read that
//! wants only the newest skips the rest. The versions lie apart in the arena, so each node a
//! search passes is a cache miss; the tail lets a forward search jump to the column's last
//! version in one step. A new version goes in before the column's older ones and takes the
//! tail of the node after it, so every version of a column written newest first names the
//! column's oldest node.
//!
//! # Thread safety
//! Any number of writers insert while any number of readers search and walk, all without
//! locks. A writer fills its node with relaxed stores, then links it in level by level from
//! the bottom with a compare-and-swap that releases the node's words; readers follow links
//! with acquire loads. Nothing is unlinked or freed while the list lives.
//!
//! # Invariants
//! 1. At every level, the nodes reachable from the head are in increasing key order (key.rs,
//!    invariant 1), and of nodes with equal keys all but the last are dead; level 0 holds
//!    every node ever inserted.
//! 2. A node is reachable only once all its words are written (the release of the link that
//!    publishes it).
//! 3. A node's words never change once published, bar its links (each only ever moved to a
//!    node inserted between it and the node it pointed at) and its DEAD bit (only ever set).
//! 4. The head is node 0, of [`MAX_HEIGHT`]; 0 in a link means no node.
//! 5. A node's tail is the node itself or a node after it in the same column (row, family
//!    and qualifier), written before the node is published. It is a hint: the column may
//!    have gained older versions after it, so a search goes on from the tail.

use std::cmp::Ordering;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::*};

use basalt_model::Cell;

use super::arena::Arena;
use super::key::{self, CellBuf, Word};

/// Levels a node can have. Half the nodes at one level reach the next, so twenty levels serve
/// 2^20 (1M) cells before searches slow down, and a memstore past that only a little.
/// RocksDB lets one node in four through: reads while writing (1M rows) made 100k and 91k
/// reads/s with one in two against 91k and 90k with one in four, and the mean tower is then
/// exactly the two links a node is counted at.
pub const MAX_HEIGHT: usize = 20;

/// The list height from which a search fetches the node it may step down to while it compares
/// the node beside it ([`SkipList::fetch_below`]). A list of that height has about 2^16 nodes,
/// some 13 MiB of cells of a hundred bytes: beyond what the CPU's caches keep of it, where a
/// search waits on memory at each step. In a smaller list the nodes are mostly at hand: there
/// fetching cost an insert 4–9% (`memstore/insert_10k_random`) and gained a Get's seek about 3%
/// (30,000 nodes), and a memstore takes more inserts than seeks while it is small
/// (BENCHMARKS.md).
const FETCH_FROM_HEIGHT: usize = 17;

/// No node (invariant 4).
pub const NIL: u64 = 0;
const HEAD: u64 = 0;

const DEAD: u64 = 1 << 8;
const HAS_TTL: u64 = 1 << 9;
const KEY_SHIFT: u32 = 16;

/// The words of a node without its links, for `cell`: meta, tail, key, value length, TTL,
/// value.
pub fn body_words(cell: &Cell) -> usize {
    2 + key::encoded_len(cell).div_ceil(8)
        + 1
        + usize::from(cell.ttl_ms.is_some())
        + cell.value().len().div_ceil(8)
}

/// The skip list.
#[derive(Debug)]
pub struct SkipList {
    arena: Arena,
    /// The height of the tallest node inserted: searches start there.
    height: AtomicUsize,
}

impl Default for SkipList {
    fn default() -> SkipList {
        let arena = Arena::default();
        // Meta, links and a tail naming itself (invariant 5); its key is empty.
        let head = arena.alloc(2 + MAX_HEIGHT);
        debug_assert_eq!(head, HEAD);
        arena.from(head)[0].store(MAX_HEIGHT as u64, Relaxed);
        arena.from(head)[1 + MAX_HEIGHT].store(HEAD, Relaxed);
        SkipList {
            arena,
            height: AtomicUsize::new(1),
        }
    }
}

/// One node's words, read in place.
#[derive(Clone, Copy)]
pub struct Node<'a> {
    words: &'a [AtomicU64],
}

impl<'a> Node<'a> {
    fn meta(&self) -> u64 {
        self.words[0].load(Relaxed)
    }

    fn height(&self) -> usize {
        (self.meta() & 0xFF) as usize
    }

    fn key_len(&self) -> usize {
        (self.meta() >> KEY_SHIFT) as usize
    }

    /// The node after this one at `level` (acquire: its words are then visible).
    pub fn next(&self, level: usize) -> u64 {
        self.words[1 + level].load(Acquire)
    }

    /// The node's tail (invariant 5).
    fn tail(&self) -> u64 {
        self.words[1 + self.height()].load(Relaxed)
    }

    /// Whether both nodes are of one column (row, family and qualifier).
    fn same_column(&self, other: &Node<'_>) -> bool {
        self.key_len() == other.key_len()
            && key::same_column(self.key(), other.key(), self.key_len())
    }

    /// The node's key words.
    pub fn key(&self) -> &'a [AtomicU64] {
        let at = 2 + self.height();
        &self.words[at..at + self.key_len().div_ceil(8)]
    }

    /// The cell's sequence id, read in place.
    pub fn seq_id(&self) -> u64 {
        key::seq_id(self.key(), self.key_len())
    }

    /// Whether the node was taken out (a write whose WAL sync failed).
    pub fn is_dead(&self) -> bool {
        self.meta() & DEAD != 0
    }

    /// Marks the node taken out; false if it already was.
    pub fn kill(&self) -> bool {
        self.words[0].fetch_or(DEAD, Relaxed) & DEAD == 0
    }

    /// The value's length, the TTL, and the index of the value's first word.
    fn value(&self) -> (usize, Option<u64>, usize) {
        let at = 2 + self.height() + self.key_len().div_ceil(8);
        let value_len = self.words[at].load(Relaxed) as usize;
        if self.meta() & HAS_TTL != 0 {
            (value_len, Some(self.words[at + 1].load(Relaxed)), at + 2)
        } else {
            (value_len, None, at + 1)
        }
    }

    /// The words of the node without its links (the count [`body_words`] gives for its cell).
    pub fn body_words(&self) -> usize {
        let (value_len, _, value_at) = self.value();
        value_at - self.height() + value_len.div_ceil(8)
    }

    /// The cell, its bytes copied into `out`.
    pub fn cell(&self, out: &mut CellBuf) -> Cell {
        let (value_len, ttl, value_at) = self.value();
        key::decode(
            self.key(),
            self.key_len(),
            &self.words[value_at..],
            value_len,
            ttl,
            out,
        )
    }
}

impl SkipList {
    /// The node at `at`.
    pub fn node(&self, at: u64) -> Node<'_> {
        Node {
            words: self.arena.from(at),
        }
    }

    /// Bytes of arena handed out (arena.rs, invariant 4).
    #[cfg(test)]
    pub fn arena_bytes(&self) -> u64 {
        self.arena.used_words() * 8
    }

    /// Adds `cell`. A live node with the same key is marked dead and returned (the write path never inserts a key twice; this keeps a second insert
    /// from leaving two live cells that compare equal). The new node goes after it, so the
    /// last of equal nodes is the live one (invariant 1).
    pub fn insert(&self, cell: &Cell) -> Option<u64> {
        let height = random_height();
        let key_len = key::encoded_len(cell);
        let at = self.arena.alloc(height + body_words(cell));
        let words = self.arena.from(at);
        let flags = if cell.ttl_ms.is_some() { HAS_TTL } else { 0 };
        words[0].store(
            height as u64 | flags | ((key_len as u64) << KEY_SHIFT),
            Relaxed,
        );
        // The tail (word `1 + height`) is written by `link`, once it knows the next node.
        let mut i = 2 + height;
        key::encode(cell, |w| {
            words[i].store(w, Relaxed);
            i += 1;
        });
        words[i].store(cell.value().len() as u64, Relaxed);
        i += 1;
        if let Some(ttl) = cell.ttl_ms {
            words[i].store(ttl, Relaxed);
            i += 1;
        }
        key::pack(cell.value(), |w| {
            words[i].store(w, Relaxed);
            i += 1;
        });
        self.link(at, height)
    }

    /// Links node `at` in at every one of its levels, bottom first (invariant 2).
    fn link(&self, at: u64, height: usize) -> Option<u64> {
        let node = self.node(at);
        let key = node.key();
        let top = self.height.fetch_max(height, Relaxed).max(height);
        let fetch = top >= FETCH_FROM_HEIGHT;
        let (mut prev, mut next) = ([HEAD; MAX_HEIGHT], [NIL; MAX_HEIGHT]);
        let (mut x, mut stop) = (HEAD, NIL);
        for level in (0..top).rev() {
            (x, stop) = self.find_at_level(x, level, key, (stop, Ordering::Greater), fetch);
            (prev[level], next[level]) = (x, stop);
        }
        node.words[1 + height].store(self.tail_for(at, next[0]), Relaxed);
        let replaced = (prev[0] != HEAD
            && key::compare(self.node(prev[0]).key(), key) == Ordering::Equal
            && self.node(prev[0]).kill())
        .then_some(prev[0]);
        for level in 0..height {
            loop {
                node.words[1 + level].store(next[level], Relaxed);
                let link = &self.node(prev[level]).words[1 + level];
                if link
                    .compare_exchange(next[level], at, Release, Relaxed)
                    .is_ok()
                {
                    break;
                }
                // Another node came in beside this one at this level: search on from the
                // node before it, which is still not above the key.
                (prev[level], next[level]) =
                    self.find_at_level(prev[level], level, key, (NIL, Ordering::Greater), fetch);
            }
        }
        replaced
    }

    /// The tail of node `at`, to go in before `next` (invariant 5): `next`'s when both are
    /// of one column, else `at` itself. A node linked in between `at` and `next` meanwhile
    /// leaves it sound, since `next` is still after `at`.
    fn tail_for(&self, at: u64, next: u64) -> u64 {
        if next == NIL {
            return at;
        }
        let next = self.node(next);
        if self.node(at).same_column(&next) {
            next.tail()
        } else {
            at
        }
    }

    /// Whether node `at`'s tail names a later node of its column (invariant 5). False when
    /// the column ends at `at`, or gained older versions after `at` was linked: a caller that
    /// must leave the column finds those by comparing.
    pub fn tail_goes_on(&self, at: u64) -> bool {
        self.node(at).tail() != at
    }

    /// The first node past the column of node `at` (NIL at the list's end): from `at`'s tail
    /// (invariant 5), one node at a time for at most `steps` nodes. `Err` names the last node
    /// of the column reached, when those steps did not leave it (the column gained older
    /// versions after its tails were written).
    pub fn past_column(&self, at: u64, steps: usize) -> Result<u64, u64> {
        let node = self.node(at);
        let mut x = node.tail();
        for _ in 0..=steps {
            let next = self.node(x).next(0);
            if next == NIL || !node.same_column(&self.node(next)) {
                return Ok(next);
            }
            x = next;
        }
        Err(x)
    }

    /// From node `x` (before the stop), moves along `level` until the next node compares with
    /// `key` as `stop` or above (`Equal`: the first node at or above `key`; `Greater`: the
    /// first above it); returns the last node before the stop and the stop. `known_stop` is a
    /// node already found to be a stop (or NIL), to save comparing it again. With `fetch`, each
    /// step fetches the node below ([`SkipList::fetch_below`]).
    #[inline]
    fn find_at_level<W: Word>(
        &self,
        x: u64,
        level: usize,
        key: &[W],
        stops: (u64, Ordering),
        fetch: bool,
    ) -> (u64, u64) {
        // Two copies of the walk, so that one without fetching has no step it does not need.
        if fetch {
            self.walk_level::<true, W>(x, level, key, stops)
        } else {
            self.walk_level::<false, W>(x, level, key, stops)
        }
    }

    /// [`SkipList::find_at_level`], fetching with `FETCH`.
    #[inline]
    fn walk_level<const FETCH: bool, W: Word>(
        &self,
        mut x: u64,
        level: usize,
        key: &[W],
        (known_stop, stop): (u64, Ordering),
    ) -> (u64, u64) {
        let mut fetched = 0;
        loop {
            let node = self.node(x);
            let next = node.next(level);
            if FETCH {
                fetched ^= self.fetch_below(&node, level, next);
            }
            if next == NIL || next == known_stop || key::compare(self.node(next).key(), key) >= stop
            {
                if FETCH {
                    std::hint::black_box(fetched);
                }
                return (x, next);
            }
            x = next;
        }
    }

    /// Reads the first word of the node after `node` one level below `level`, unless it is
    /// `next`, the node after it at `level` (0 when there is none to read), for its cache
    /// line to be on its way: a search that stops at this level goes on from there. Each
    /// step of a search otherwise waits for one node to come from memory, then the next;
    /// this lets the step down overlap the comparison that decides it (a prefetch made of a
    /// load, which safe Rust allows; the caller folds what it reads into a value nothing
    /// waits on).
    #[inline]
    fn fetch_below(&self, node: &Node<'_>, level: usize, next: u64) -> u64 {
        match level.checked_sub(1).map(|below| node.next(below)) {
            Some(at) if at != NIL && at != next => self.node(at).meta(),
            _ => 0,
        }
    }

    /// The last node below `key` (the head if none), searching down from the top.
    fn last_below<W: Word>(&self, key: &[W]) -> u64 {
        let mut x = HEAD;
        let mut stop = NIL;
        let top = self.height.load(Relaxed);
        let fetch = top >= FETCH_FROM_HEIGHT;
        for level in (0..top).rev() {
            (x, stop) = self.find_at_level(x, level, key, (stop, Ordering::Equal), fetch);
        }
        x
    }

    /// The first node at or above `key`, or NIL.
    pub fn seek<W: Word>(&self, key: &[W]) -> u64 {
        self.node(self.last_below(key)).next(0)
    }

    /// The first node at or above `key`, searched forward from node `from` (a node below
    /// `key`): it walks at the top level of the node it is on, so each taller node passed
    /// lifts the walk, and goes down a level where the next node is not below `key`. A key
    /// `d` nodes on costs about `2 log d` comparisons, so near keys are cheap and far ones
    /// cost about what [`SkipList::seek`] does. Any node below `key` is a sound start:
    /// level 0 links every node, and the higher levels only skip nodes below `key`. So the
    /// walk starts at `from`'s tail when that is below `key` too: past the column's older
    /// versions in one step (invariant 5).
    pub fn seek_from<W: Word>(&self, from: u64, key: &[W]) -> u64 {
        if self.height.load(Relaxed) >= FETCH_FROM_HEIGHT {
            self.seek_walk::<true, W>(from, key)
        } else {
            self.seek_walk::<false, W>(from, key)
        }
    }

    /// [`SkipList::seek_from`], fetching with `FETCH` ([`SkipList::fetch_below`]).
    fn seek_walk<const FETCH: bool, W: Word>(&self, from: u64, key: &[W]) -> u64 {
        let tail = self.node(from).tail();
        let mut x = if tail != from && key::compare(self.node(tail).key(), key) == Ordering::Less {
            tail
        } else {
            from
        };
        let mut level = self.node(x).height() - 1;
        // The node found not below `key` at the level above, so as not to compare it again.
        let mut stop = NIL;
        let mut fetched = 0;
        loop {
            let node = self.node(x);
            let next = node.next(level);
            if FETCH {
                fetched ^= self.fetch_below(&node, level, next);
            }
            if next != NIL
                && next != stop
                && key::compare(self.node(next).key(), key) == Ordering::Less
            {
                x = next;
                level = self.node(x).height() - 1;
                stop = NIL;
                continue;
            }
            if level == 0 {
                if FETCH {
                    std::hint::black_box(fetched);
                }
                return next;
            }
            stop = next;
            level -= 1;
        }
    }

    /// The last node below `key` (below nothing: the last node), or NIL.
    pub fn before<W: Word>(&self, key: Option<&[W]>) -> u64 {
        let x = match key {
            Some(key) => self.last_below(key),
            None => {
                let mut x = HEAD;
                for level in (0..self.height.load(Relaxed)).rev() {
                    loop {
                        let next = self.node(x).next(level);
                        if next == NIL {
                            break;
                        }
                        x = next;
                    }
                }
                x
            }
        };
        if x == HEAD {
            NIL
        } else {
            x
        }
    }
}

/// A node height: 1, then one more with chance 1/2 each time, up to [`MAX_HEIGHT`].
fn random_height() -> usize {
    let mut bits: u32 = rand::random();
    let mut height = 1;
    while height < MAX_HEIGHT && bits & 1 == 0 {
        height += 1;
        bits >>= 1;
    }
    height
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use rand::seq::SliceRandom;
    use rand::SeedableRng;

    /// Nine columns of 60 versions, their writes interleaved as a table's are: written
    /// newest first (tails reach the column's end), oldest first (each node its own tail) and
    /// in any order (tails left short by older versions written later). Returns the list and
    /// its nodes in order.
    fn columns_written_in_every_order() -> (SkipList, Vec<u64>) {
        let mut rng = rand::rngs::StdRng::seed_from_u64(18);
        let list = SkipList::default();
        let mut columns = Vec::new();
        for (row, order) in ["newest-first", "oldest-first", "any-order"]
            .iter()
            .enumerate()
        {
            for q in 0..3 {
                let mut ts: Vec<i64> = (0..60).collect();
                match *order {
                    "newest-first" => {}
                    "oldest-first" => ts.reverse(),
                    _ => ts.shuffle(&mut rng),
                }
                let column = ts
                    .into_iter()
                    .map(|t| Cell::put(format!("r{row}"), "f", format!("q{q}"), t, "v"));
                columns.push(column.collect());
            }
        }
        for (seq, cell) in (1u64..).zip(merge_round_robin(columns)) {
            list.insert(&{
                let mut c = cell;
                c.seq_id = seq;
                c
            });
        }
        let mut nodes = Vec::new();
        let mut at = list.node(HEAD).next(0);
        while at != NIL {
            nodes.push(at);
            at = list.node(at).next(0);
        }
        (list, nodes)
    }

    /// The row and qualifier of node `at`.
    fn column(list: &SkipList, at: u64) -> (Bytes, Bytes) {
        let c = list.node(at).cell(&mut CellBuf::default());
        (c.row_bytes(), c.qualifier_bytes())
    }

    /// The key just past the column of node `at`.
    fn past_column_key(list: &SkipList, at: u64) -> Vec<u64> {
        let c = list.node(at).cell(&mut CellBuf::default());
        let mut past = Vec::new();
        key::encode_into(&c.last_on_its_column(), &mut past);
        past
    }

    /// The walks that fetch the node below as they go (taken in lists past
    /// [`FETCH_FROM_HEIGHT`], which a test's list does not reach) stop where the plain walks
    /// do: at every level, for every node's key and for the keys just past every column.
    #[test]
    fn walks_that_fetch_find_what_plain_walks_find() {
        let (list, nodes) = columns_written_in_every_order();
        let top = list.height.load(Relaxed);
        assert!(top > 1, "a list of {} nodes one level high", nodes.len());
        for (i, &at) in nodes.iter().enumerate() {
            let own: Vec<u64> = list
                .node(at)
                .key()
                .iter()
                .map(|w| w.load(Relaxed))
                .collect();
            for key in [own, past_column_key(&list, at)] {
                for level in 0..top {
                    for stop in [Ordering::Equal, Ordering::Greater] {
                        assert_eq!(
                            list.walk_level::<false, u64>(HEAD, level, &key, (NIL, stop)),
                            list.walk_level::<true, u64>(HEAD, level, &key, (NIL, stop)),
                            "node {i}, level {level}, {stop:?}"
                        );
                    }
                }
                // A seek from the head, and from the last node below the key.
                for from in [HEAD, list.last_below(&key)] {
                    assert_eq!(
                        list.seek_walk::<false, u64>(from, &key),
                        list.seek_walk::<true, u64>(from, &key),
                        "node {i} from {from}"
                    );
                }
            }
        }
    }

    /// Every node's tail is itself or a later node of its column (invariant 5).
    #[test]
    fn tails_stay_in_their_column() {
        let (list, nodes) = columns_written_in_every_order();
        let mut reached_end = 0;
        for (i, &at) in nodes.iter().enumerate() {
            let tail = list.node(at).tail();
            let j = nodes
                .iter()
                .position(|&n| n == tail)
                .expect("a tail is a node of the list");
            assert!(j >= i, "node {i}'s tail is before it");
            assert_eq!(
                column(&list, tail),
                column(&list, at),
                "node {i}'s tail is of another column"
            );
            if j > i && (j + 1 == nodes.len() || column(&list, nodes[j + 1]) != column(&list, at)) {
                reached_end += 1;
            }
        }
        // The columns written newest first have their tails at their ends.
        assert!(
            reached_end >= 3 * 59,
            "{reached_end} tails reach their column's end"
        );
    }

    /// Past a node's column: where a search for the column's last key lands, or, when the
    /// steps allowed did not leave the column, a node still in it.
    #[test]
    fn past_column_lands_where_a_search_does() {
        let (list, nodes) = columns_written_in_every_order();
        let mut searched_on = 0;
        for (i, &at) in nodes.iter().enumerate() {
            match list.past_column(at, 8) {
                Ok(next) => assert_eq!(
                    next,
                    list.seek(&past_column_key(&list, at)),
                    "past node {i}'s column"
                ),
                Err(last) => {
                    assert_eq!(
                        column(&list, last),
                        column(&list, at),
                        "node {i}'s walk left its column"
                    );
                    searched_on += 1;
                }
            }
        }
        // Only the columns written in an order other than newest first need a search.
        assert!(
            searched_on > 0 && searched_on < nodes.len() / 2,
            "{searched_on} searches"
        );
    }

    /// A search forward from any node lands where a search from the top does, to any key
    /// after it: another node's, or a column's end.
    #[test]
    fn forward_searches_land_where_searches_from_the_top_do() {
        let (list, nodes) = columns_written_in_every_order();
        let mut targets: Vec<Vec<u64>> = nodes.iter().map(|&n| key_words(&list, n)).collect();
        targets.extend(nodes.iter().step_by(60).map(|&n| past_column_key(&list, n)));
        for (i, &from) in nodes.iter().enumerate().step_by(7) {
            for target in &targets {
                if key::compare(list.node(from).key(), target) != Ordering::Less {
                    continue;
                }
                assert_eq!(
                    list.seek_from(from, target),
                    list.seek(target),
                    "from node {i}"
                );
            }
        }
    }

    fn key_words(list: &SkipList, at: u64) -> Vec<u64> {
        list.node(at)
            .key()
            .iter()
            .map(|w| w.load(Relaxed))
            .collect()
    }

    /// One write of each column in turn, each column's in its own order.
    fn merge_round_robin(mut columns: Vec<Vec<Cell>>) -> Vec<Cell> {
        columns.iter_mut().for_each(|c| c.reverse());
        let mut out = Vec::new();
        while columns.iter().any(|c| !c.is_empty()) {
            for c in &mut columns {
                out.extend(c.pop());
            }
        }
        out
    }
}
