//! A memstore's filter of the rows it holds (RocksDB's memtable bloom filter).
//!
//! A Get of a row that a memstore does not hold would still search its skip list from the
//! top, and the first touch of each node on the way is a cache miss. While writes spread over
//! many rows, most Gets ask for rows that only the store files hold. The filter rules such a
//! memstore out after one word.
//!
//! It is a bloom filter blocked to one 64-bit word a row: the high half of the row's hash
//! picks the word, its low half the bits in it (five probes, which may coincide). Twelve bits
//! a row keep false positives near 1%, as the store files' ten bits a row in 512-bit lines
//! do, and an add is one load and at most one atomic `or`: the filter is on every insert's
//! path, and a row's bits spread over a line's words cost an insert up to seven atomic
//! writes. The words are atomic so that writers add rows without a lock while readers probe.
//! Its size is fixed when it is made ([`RowBloom::for_rows`]); a memstore that outgrows it
//! only answers "maybe" more often.
//!
//! # Invariants
//! 1. No false negatives: once an add of `h` has finished (`add`, or `Adding::finish`),
//!    `may_hold(h)` is true in any thread the add happens before. A Get reads at a read point
//!    published after its writes' cells were in the memstore (region/mvcc.rs), so it sees
//!    their bits.

use std::sync::atomic::{AtomicU64, Ordering};

use xxhash_rust::xxh3::xxh3_64;

/// Rows a filter has room for at least: a few kilobytes, for a store with no history.
pub const MIN_ROWS: usize = 4096;

/// Rows a filter has room for at most: 24 MiB of bits.
pub const MAX_ROWS: usize = 1 << 24;

/// Bits of filter a row.
const BITS_PER_ROW: u64 = 12;

/// Bits a row sets in its word.
const PROBES: u32 = 5;

/// The hash a filter keeps of a row.
#[must_use]
pub fn row_hash(row: &[u8]) -> u64 {
    xxh3_64(row)
}

/// An add begun by [`RowBloom::start_add`]; the row is in the filter once `finish` returns.
#[derive(Debug)]
pub struct Adding<'a> {
    word: &'a AtomicU64,
    mask: u64,
    /// The word when the add began. Bits are never cleared, so bits set then are set now.
    seen: u64,
}

impl Adding<'_> {
    /// Sets the row's bits. A row whose bits were all set (the next cell of a row just added)
    /// takes no atomic write.
    pub fn finish(self) {
        if self.seen & self.mask != self.mask {
            self.word.fetch_or(self.mask, Ordering::Relaxed);
        }
    }
}

/// A fixed-size filter of rows.
#[derive(Debug)]
pub struct RowBloom {
    words: Box<[AtomicU64]>,
}

impl RowBloom {
    /// A filter with room for `rows` rows at about a 1% false-positive rate, within
    /// [`MIN_ROWS`] and [`MAX_ROWS`].
    #[must_use]
    pub fn for_rows(rows: usize) -> RowBloom {
        let rows = rows.clamp(MIN_ROWS, MAX_ROWS) as u64;
        let words = (rows * BITS_PER_ROW).div_ceil(64);
        RowBloom {
            words: (0..words).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    /// The word of row hash `h` (multiply-shift of the high half, no division) and its bits
    /// there (six bits of the low half each).
    fn probe(&self, h: u64) -> (&AtomicU64, u64) {
        let word = ((h >> 32) * self.words.len() as u64) >> 32;
        let mask = (0..PROBES).fold(0u64, |m, i| m | 1 << ((h >> (6 * i)) & 63));
        (&self.words[word as usize], mask)
    }

    /// Adds the row of hash `h`.
    pub fn add(&self, h: u64) {
        self.start_add(h).finish();
    }

    /// Starts adding the row of hash `h`: reads its word now, so that the read's cache miss
    /// overlaps the work the caller does before [`Adding::finish`] (a memstore's insert: its
    /// search of the skip list).
    #[must_use]
    pub fn start_add(&self, h: u64) -> Adding<'_> {
        let (word, mask) = self.probe(h);
        let seen = word.load(Ordering::Relaxed);
        Adding { word, mask, seen }
    }

    /// False when the row of hash `h` was never added (invariant 1); true when it may have
    /// been.
    #[must_use]
    pub fn may_hold(&self, h: u64) -> bool {
        let (word, mask) = self.probe(h);
        word.load(Ordering::Relaxed) & mask == mask
    }

    /// Bytes of bits held.
    #[must_use]
    pub fn size_bytes(&self) -> usize {
        std::mem::size_of_val::<[AtomicU64]>(&self.words)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hashes(from: u64, n: u64) -> impl Iterator<Item = u64> {
        (from..from + n).map(|i| row_hash(format!("row{i:08}").as_bytes()))
    }

    #[test]
    fn every_row_added_is_held_and_few_others_are() {
        let f = RowBloom::for_rows(50_000);
        hashes(0, 50_000).for_each(|h| f.add(h));
        assert!(hashes(0, 50_000).all(|h| f.may_hold(h)));
        let false_positives = hashes(1_000_000, 100_000)
            .filter(|&h| f.may_hold(h))
            .count();
        // Twelve bits a row, five in one word: about 1%, bounded here at twice that.
        assert!(false_positives < 2_000, "{false_positives} false positives");
    }

    #[test]
    fn its_size_follows_the_rows_asked_for_within_its_bounds() {
        assert_eq!(RowBloom::for_rows(0).size_bytes(), 4096 * 12 / 8);
        assert_eq!(RowBloom::for_rows(100_000).size_bytes(), 150_000);
        assert_eq!(
            RowBloom::for_rows(usize::MAX).size_bytes(),
            (1 << 24) * 12 / 8
        );
    }

    #[test]
    fn an_add_that_finishes_last_keeps_the_bits_of_one_that_finished_first() {
        // Two rows of one word (the high half of the hash picks it), their adds interleaved
        // as two writers' may be: both read the word before either sets its bits. An add
        // that stored what it read with its own bits would clear the other's.
        let f = RowBloom::for_rows(0);
        let (first, second) = (1u64, 2u64 | 2 << 6);
        let a = f.start_add(first);
        let b = f.start_add(second);
        b.finish();
        a.finish();
        assert!(f.may_hold(first) && f.may_hold(second));
    }

    #[test]
    fn rows_added_by_writers_at_once_are_all_held() {
        let f = RowBloom::for_rows(40_000);
        std::thread::scope(|s| {
            for t in 0..4 {
                let f = &f;
                s.spawn(move || hashes(t * 10_000, 10_000).for_each(|h| f.add(h)));
            }
        });
        assert!(hashes(0, 40_000).all(|h| f.may_hold(h)));
    }
}
