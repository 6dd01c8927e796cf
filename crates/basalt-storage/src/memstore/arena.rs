//! The words a memstore's skip list lives in (HBase's MSLAB and RocksDB's arena in one): every
//! node, key and value of a memstore is carved out of a few large chunks of 64-bit words, and
//! the chunks are given back together when the memstore is dropped.
//!
//! The words are atomics, so writers fill a node while readers walk the nodes around it
//! without any locking and without `unsafe`: a writer stores a node's words with relaxed
//! stores and publishes the node with a release store of a link to it (skiplist.rs), and a
//! reader that follows that link with an acquire load sees every word of the node.
//!
//! A dropped arena's chunks go to a pool that the next arenas take them from (HBase's
//! MemStoreChunkPool). A memstore that fills to its flush size and is flushed is followed by
//! one that fills as far, so each flush freed some 128 MiB that the next memstore then took
//! fresh from the system, which faults in and clears every page of it: at 10M rows about 6%
//! of the writing thread's time in an overwrite went there (`BENCHMARKS.md`). A pooled chunk's words are resident,
//! and are zeroed, by the thread that drops the arena, with plain stores.
//!
//! # Invariants
//! 1. A word index names one word for the life of the arena: chunk `k` holds
//!    `FIRST_CHUNK_WORDS << k` words, the chunks follow one another in index order, and a chunk
//!    never moves.
//! 2. An allocation lies within one chunk, so a node is one slice; the tail of a chunk too
//!    short for the next allocation is left unused.
//! 3. A chunk is in place, all zero, before the first allocation that lands in it is returned:
//!    taken from the pool or, when the pool has none of its size, allocated zeroed.
//! 4. `used` counts every word handed out or skipped at a chunk's end: the bytes the arena
//!    holds are `used * 8`, bar the untouched tail of the last chunk.
//! 5. Every chunk in the pool is zero throughout, and the pool holds at most `POOLED_BYTES`.
//!    Only words handed out are ever written, so a dropped arena zeroes those alone (the words
//!    of each chunk below `used`) before it gives the chunk back.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use parking_lot::Mutex;

/// Words in the first chunk (32 KiB); each further chunk is twice the one before, so a small
/// memstore holds little memory and a large one few chunks.
const FIRST_CHUNK_SHIFT: u32 = 12;
const FIRST_CHUNK_WORDS: u64 = 1 << FIRST_CHUNK_SHIFT;

/// Chunks an arena can have: together they hold 2^40 words (8 TiB), far beyond any memstore.
const CHUNKS: usize = 28;

/// Bytes of chunks the pool keeps (invariant 5): the chunks of two memstores of the default
/// 128 MiB flush size, so that a flushed memstore's chunks wait for the one after it even
/// when another region's flush comes first. More would be memory held for no memstore.
const POOLED_BYTES: usize = 256 << 20;

/// The pool of the process's memstores. One pool, as one allocator: every region's memstores
/// take from it and give back to it.
static CHUNK_POOL: ChunkPool = ChunkPool::new(POOLED_BYTES);

/// A growable array of atomic words that never moves what it holds (invariant 1).
#[derive(Debug)]
pub struct Arena {
    chunks: [OnceLock<Box<[AtomicU64]>>; CHUNKS],
    next: AtomicU64,
    pool: &'static ChunkPool,
}

impl Default for Arena {
    fn default() -> Arena {
        Arena::with_pool(&CHUNK_POOL)
    }
}

/// The chunk and the offset within it of word `index` (invariant 1).
fn locate(index: u64) -> (usize, usize) {
    let biased = index + FIRST_CHUNK_WORDS;
    let chunk = 63 - biased.leading_zeros() - FIRST_CHUNK_SHIFT;
    let offset = biased - (FIRST_CHUNK_WORDS << chunk);
    (chunk as usize, offset as usize)
}

impl Arena {
    /// An empty arena whose chunks come from, and go back to, `pool`.
    fn with_pool(pool: &'static ChunkPool) -> Arena {
        Arena {
            chunks: std::array::from_fn(|_| OnceLock::new()),
            next: AtomicU64::new(0),
            pool,
        }
    }

    /// Hands out `len` consecutive words within one chunk (invariant 2), all zero, and returns
    /// the index of the first. Never fails short of the system running out of memory.
    pub fn alloc(&self, len: usize) -> u64 {
        let len = len as u64;
        loop {
            let start = self.next.fetch_add(len, Ordering::Relaxed);
            let (chunk, offset) = locate(start);
            let size = FIRST_CHUNK_WORDS << chunk;
            if offset as u64 + len <= size {
                self.chunks[chunk].get_or_init(|| {
                    self.pool
                        .take(chunk)
                        .unwrap_or_else(|| bytemuck::zeroed_slice_box(size as usize))
                });
                return start;
            }
            // Too long for what is left of this chunk: skip to the next one (or further, for
            // an allocation longer than the next chunk), leaving the tail unused.
            let next_chunk = (FIRST_CHUNK_WORDS << (chunk + 1)) - FIRST_CHUNK_WORDS;
            self.next.fetch_max(next_chunk, Ordering::Relaxed);
        }
    }

    /// The words from `index` to the end of its chunk: a node handed out at `index` is a
    /// prefix of them (invariant 2). `index` must come from [`Arena::alloc`] and be published
    /// to the caller by an acquire load (or be its own allocation).
    pub fn from(&self, index: u64) -> &[AtomicU64] {
        let (chunk, offset) = locate(index);
        match self.chunks.get(chunk).and_then(OnceLock::get) {
            Some(words) => &words[offset..],
            // Unreachable for an index `alloc` returned (invariant 3); an empty slice makes
            // any misuse an index error at the caller rather than a read of another node.
            None => &[],
        }
    }

    /// Words handed out so far, skipped chunk tails included (invariant 4).
    #[cfg(test)]
    pub fn used_words(&self) -> u64 {
        self.next.load(Ordering::Relaxed)
    }
}

/// Gives the chunks back to the pool, each zeroed where it was handed out (invariant 5).
impl Drop for Arena {
    fn drop(&mut self) {
        let used = *self.next.get_mut();
        for (k, slot) in self.chunks.iter_mut().enumerate() {
            let Some(mut chunk) = slot.take() else {
                continue;
            };
            if !self.pool.has_room(chunk.len()) {
                continue;
            }
            let start = (FIRST_CHUNK_WORDS << k) - FIRST_CHUNK_WORDS;
            let written = used.saturating_sub(start).min(chunk.len() as u64) as usize;
            chunk[..written].iter_mut().for_each(|w| *w.get_mut() = 0);
            self.pool.give_back(k, chunk);
        }
    }
}

/// Zeroed chunks of dropped arenas, by chunk index (HBase's MemStoreChunkPool).
///
/// Lock order: the pool's lock is taken last and nothing is taken under it.
pub struct ChunkPool {
    free: Mutex<Pooled>,
    limit: usize,
}

struct Pooled {
    by_index: [Vec<Box<[AtomicU64]>>; CHUNKS],
    bytes: usize,
}

/// The counts, not the chunks.
impl std::fmt::Debug for ChunkPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChunkPool")
            .field("bytes", &self.free.lock().bytes)
            .field("limit", &self.limit)
            .finish()
    }
}

impl ChunkPool {
    /// A pool that keeps at most `limit` bytes of chunks.
    const fn new(limit: usize) -> ChunkPool {
        ChunkPool {
            free: parking_lot::const_mutex(Pooled {
                by_index: [const { Vec::new() }; CHUNKS],
                bytes: 0,
            }),
            limit,
        }
    }

    /// A zeroed chunk of index `k`, if the pool has one.
    fn take(&self, k: usize) -> Option<Box<[AtomicU64]>> {
        let mut free = self.free.lock();
        let chunk = free.by_index[k].pop()?;
        free.bytes -= chunk.len() * 8;
        drop(free);
        invariant!(
            chunk.iter().all(|w| w.load(Ordering::Relaxed) == 0),
            "a pooled chunk of index {k} holds a word an arena wrote"
        );
        Some(chunk)
    }

    /// Whether a chunk of `words` would fit under the limit now (read before zeroing it).
    fn has_room(&self, words: usize) -> bool {
        self.free.lock().bytes + words * 8 <= self.limit
    }

    /// Keeps `chunk`, zeroed, of index `k`, unless it no longer fits; then it is freed,
    /// after the lock is let go.
    fn give_back(&self, k: usize, chunk: Box<[AtomicU64]>) {
        let mut free = self.free.lock();
        if free.bytes + chunk.len() * 8 <= self.limit {
            free.bytes += chunk.len() * 8;
            free.by_index[k].push(chunk);
            return;
        }
        drop(free);
    }

    /// The pooled chunks' word counts, by index.
    #[cfg(test)]
    fn pooled(&self) -> Vec<(usize, usize)> {
        let free = self.free.lock();
        (0..CHUNKS)
            .flat_map(|k| free.by_index[k].iter().map(move |c| (k, c.len())))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indices_map_onto_chunks_that_double() {
        assert_eq!(locate(0), (0, 0));
        assert_eq!(
            locate(FIRST_CHUNK_WORDS - 1),
            (0, FIRST_CHUNK_WORDS as usize - 1)
        );
        assert_eq!(locate(FIRST_CHUNK_WORDS), (1, 0));
        assert_eq!(
            locate(3 * FIRST_CHUNK_WORDS - 1),
            (1, 2 * FIRST_CHUNK_WORDS as usize - 1)
        );
        assert_eq!(locate(3 * FIRST_CHUNK_WORDS), (2, 0));
        let last = (FIRST_CHUNK_WORDS << CHUNKS) - FIRST_CHUNK_WORDS - 1;
        assert_eq!(locate(last).0, CHUNKS - 1);
    }

    #[test]
    fn allocations_are_zeroed_disjoint_and_never_straddle_a_chunk() {
        let arena = Arena::default();
        let mut taken = Vec::new();
        for len in [1usize, 7, 4000, 300, 5000, 9000, 1, 20_000, 3] {
            let at = arena.alloc(len);
            let words = arena.from(at);
            assert!(
                words.len() >= len,
                "an allocation of {len} runs past its chunk"
            );
            assert!(words[..len].iter().all(|w| w.load(Ordering::Relaxed) == 0));
            words[..len]
                .iter()
                .for_each(|w| w.store(at, Ordering::Relaxed));
            taken.push((at, len));
        }
        for &(at, len) in &taken {
            let words = arena.from(at);
            assert!(
                words[..len].iter().all(|w| w.load(Ordering::Relaxed) == at),
                "the allocation at {at} was overwritten"
            );
        }
        let end = taken.iter().map(|&(at, len)| at + len as u64).max();
        assert!(arena.used_words() >= end.unwrap_or(0));
    }

    /// Allocations of `lens` from `arena`, each word set to its allocation's index plus one.
    fn fill(arena: &Arena, lens: &[usize]) {
        for &len in lens {
            let at = arena.alloc(len);
            for w in &arena.from(at)[..len] {
                w.store(at + 1, Ordering::Relaxed);
            }
        }
    }

    /// Chunk `k` of `arena`, whole.
    fn chunk(arena: &Arena, k: usize) -> &[AtomicU64] {
        arena.from((FIRST_CHUNK_WORDS << k) - FIRST_CHUNK_WORDS)
    }

    /// Allocations that fill chunks 0 and 1 exactly and take the first words of chunk 2.
    const WHOLE_0_1_PART_2: [usize; 3] = [
        FIRST_CHUNK_WORDS as usize,
        2 * FIRST_CHUNK_WORDS as usize,
        100,
    ];

    #[test]
    fn a_dropped_arenas_chunks_are_taken_again_all_zero() {
        let pool: &'static ChunkPool = Box::leak(Box::new(ChunkPool::new(usize::MAX)));
        let arena = Arena::with_pool(pool);
        fill(&arena, &WHOLE_0_1_PART_2);
        let words = FIRST_CHUNK_WORDS as usize;
        assert_eq!(arena.chunks.iter().filter(|c| c.get().is_some()).count(), 3);
        drop(arena);
        assert_eq!(
            pool.pooled(),
            [(0, words), (1, 2 * words), (2, 4 * words)],
            "every chunk given back"
        );

        // The same chunks again, each whole, before anything is written to them.
        let again = Arena::with_pool(pool);
        for len in [words, 2 * words, 4 * words] {
            again.alloc(len);
        }
        assert!(
            pool.pooled().is_empty(),
            "the chunks were taken from the pool"
        );
        for k in 0..3 {
            assert!(
                chunk(&again, k)
                    .iter()
                    .all(|w| w.load(Ordering::Relaxed) == 0),
                "chunk {k} came back with words of the arena before"
            );
        }
    }

    #[test]
    fn the_pool_keeps_no_more_than_its_limit() {
        // Room for chunks 0 and 1 (one and two units), not for chunk 2 (four) as well.
        let unit = FIRST_CHUNK_WORDS as usize * 8;
        let pool: &'static ChunkPool = Box::leak(Box::new(ChunkPool::new(3 * unit)));
        let arena = Arena::with_pool(pool);
        fill(&arena, &WHOLE_0_1_PART_2);
        drop(arena);
        let words = FIRST_CHUNK_WORDS as usize;
        assert_eq!(pool.pooled(), [(0, words), (1, 2 * words)]);
        assert_eq!(pool.free.lock().bytes, 3 * unit);

        // A second arena takes chunk 0 back from the pool, and gives it back again.
        let second = Arena::with_pool(pool);
        fill(&second, &[5]);
        assert_eq!(pool.pooled(), [(1, 2 * words)]);
        drop(second);
        assert_eq!(pool.pooled(), [(0, words), (1, 2 * words)]);
    }

    #[test]
    fn threads_allocating_at_once_get_disjoint_words() {
        let arena = Arena::default();
        std::thread::scope(|s| {
            for t in 1..=4u64 {
                let arena = &arena;
                s.spawn(move || {
                    for i in 0..5000u64 {
                        let len = 1 + (i % 9) as usize;
                        let at = arena.alloc(len);
                        for w in &arena.from(at)[..len] {
                            assert_eq!(w.swap(t, Ordering::Relaxed), 0, "a word handed out twice");
                        }
                    }
                });
            }
        });
    }
}
