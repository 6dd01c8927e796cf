//! The words a memstore's skip list lives in (HBase's MSLAB and RocksDB's arena in one): every
//! node, key and value of a memstore is carved out of a few large chunks of 64-bit words, and
//! the chunks are freed together when the memstore is dropped.
//!
//! The words are atomics, so writers fill a node while readers walk the nodes around it
//! without any locking and without `unsafe`: a writer stores a node's words with relaxed
//! stores and publishes the node with a release store of a link to it (skiplist.rs), and a
//! reader that follows that link with an acquire load sees every word of the node.
//!
//! # Invariants
//! 1. A word index names one word for the life of the arena: chunk `k` holds
//!    `FIRST_CHUNK_WORDS << k` words, the chunks follow one another in index order, and a chunk
//!    never moves.
//! 2. An allocation lies within one chunk, so a node is one slice; the tail of a chunk too
//!    short for the next allocation is left unused.
//! 3. A chunk is allocated zeroed by the first allocation that lands in it, before that
//!    allocation is returned; the pages of a chunk are only made resident as words are
//!    written (the zeroed allocation is left to the system to fault in).
//! 4. `used` counts every word handed out or skipped at a chunk's end: the bytes the arena
//!    holds are `used * 8`, bar the untouched tail of the last chunk.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

/// Words in the first chunk (32 KiB); each further chunk is twice the one before, so a small
/// memstore holds little memory and a large one few chunks.
const FIRST_CHUNK_SHIFT: u32 = 12;
const FIRST_CHUNK_WORDS: u64 = 1 << FIRST_CHUNK_SHIFT;

/// Chunks an arena can have: together they hold 2^40 words (8 TiB), far beyond any memstore.
const CHUNKS: usize = 28;

/// A growable array of atomic words that never moves what it holds (invariant 1).
#[derive(Debug)]
pub struct Arena {
    chunks: [OnceLock<Box<[AtomicU64]>>; CHUNKS],
    next: AtomicU64,
}

impl Default for Arena {
    fn default() -> Arena {
        Arena {
            chunks: std::array::from_fn(|_| OnceLock::new()),
            next: AtomicU64::new(0),
        }
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
    /// Hands out `len` consecutive words within one chunk (invariant 2), all zero, and returns
    /// the index of the first. Never fails short of the system running out of memory.
    pub fn alloc(&self, len: usize) -> u64 {
        let len = len as u64;
        loop {
            let start = self.next.fetch_add(len, Ordering::Relaxed);
            let (chunk, offset) = locate(start);
            let size = FIRST_CHUNK_WORDS << chunk;
            if offset as u64 + len <= size {
                self.chunks[chunk].get_or_init(|| bytemuck::zeroed_slice_box(size as usize));
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
