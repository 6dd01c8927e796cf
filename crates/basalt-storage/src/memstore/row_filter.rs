//! A memstore's filter of the rows it holds (RocksDB's memtable bloom filter).
//!
//! A Get of a row that a memstore does not hold would still search its skip list from the
//! top, and the first touch of each node on the way is a cache miss. While writes spread over
//! many rows, most Gets ask for rows that only the store files hold. The filter rules such a
//! memstore out after one cache line.
//!
//! It is a blocked bloom filter with the store files' probes (storefile/bloom.rs: ten bits a
//! row, the seven bits of a row in one 64-byte line), kept in atomic words so that writers add
//! rows without a lock while readers probe. Its size is fixed when it is made
//! ([`RowFilter::for_rows`]); a memstore that outgrows it only answers "maybe" more often.
//!
//! # Invariants
//! 1. No false negatives: after `add(h)` returns, `may_hold(h)` is true in any thread the add
//!    happens before. A Get reads at a read point published after its writes' cells were in
//!    the memstore (region/mvcc.rs), so it sees their bits.

use std::sync::atomic::{AtomicU64, Ordering};

use xxhash_rust::xxh3::xxh3_64;

use crate::storefile::bloom::{blocked_probes, BITS_PER_KEY, LINE_BITS};

/// Rows a filter has room for at least: a few kilobytes, for a store with no history.
pub const MIN_ROWS: usize = 4096;

/// Rows a filter has room for at most: 20 MiB of bits.
pub const MAX_ROWS: usize = 1 << 24;

/// Words in a line.
const LINE_WORDS: usize = (LINE_BITS / 64) as usize;

/// One cache line of bits.
#[repr(align(64))]
#[derive(Debug, Default)]
struct Line([AtomicU64; LINE_WORDS]);

/// The hash a filter keeps of a row: the store files' row bloom hashes rows the same way.
#[must_use]
pub fn row_hash(row: &[u8]) -> u64 {
    xxh3_64(row)
}

/// A fixed-size filter of rows.
#[derive(Debug)]
pub struct RowFilter {
    lines: Box<[Line]>,
}

impl RowFilter {
    /// A filter with room for `rows` rows at about a 1% false-positive rate, within
    /// [`MIN_ROWS`] and [`MAX_ROWS`].
    #[must_use]
    pub fn for_rows(rows: usize) -> RowFilter {
        let rows = rows.clamp(MIN_ROWS, MAX_ROWS) as u64;
        let lines = (rows * BITS_PER_KEY).div_ceil(LINE_BITS);
        RowFilter {
            lines: (0..lines).map(|_| Line::default()).collect(),
        }
    }

    /// The line of row hash `h` and the bits of it in each of the line's words.
    fn probes(&self, h: u64) -> (&Line, [u64; LINE_WORDS]) {
        let lines = self.lines.len() as u64;
        let mut masks = [0u64; LINE_WORDS];
        let mut line = 0;
        for bit in blocked_probes(h, lines) {
            line = bit / LINE_BITS;
            let b = bit % LINE_BITS;
            masks[(b / 64) as usize] |= 1 << (b % 64);
        }
        (&self.lines[line as usize], masks)
    }

    /// Adds the row of hash `h`. A row whose bits are all set (the next cell of a row just
    /// added) takes no atomic write.
    pub fn add(&self, h: u64) {
        let (line, masks) = self.probes(h);
        for (word, mask) in line.0.iter().zip(masks) {
            if word.load(Ordering::Relaxed) & mask != mask {
                word.fetch_or(mask, Ordering::Relaxed);
            }
        }
    }

    /// False when the row of hash `h` was never added (invariant 1); true when it may have been.
    #[must_use]
    pub fn may_hold(&self, h: u64) -> bool {
        let (line, masks) = self.probes(h);
        line.0
            .iter()
            .zip(masks)
            .all(|(word, mask)| word.load(Ordering::Relaxed) & mask == mask)
    }

    /// Bytes of bits held.
    #[must_use]
    pub fn size_bytes(&self) -> usize {
        std::mem::size_of_val::<[Line]>(&self.lines)
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
        let f = RowFilter::for_rows(50_000);
        hashes(0, 50_000).for_each(|h| f.add(h));
        assert!(hashes(0, 50_000).all(|h| f.may_hold(h)));
        let false_positives = hashes(1_000_000, 100_000)
            .filter(|&h| f.may_hold(h))
            .count();
        // Ten bits a row in 512-bit lines: about 1%, bounded here at twice that.
        assert!(false_positives < 2_000, "{false_positives} false positives");
    }

    #[test]
    fn its_size_follows_the_rows_asked_for_within_its_bounds() {
        let line = std::mem::size_of::<Line>();
        assert_eq!(line, 64);
        assert_eq!(RowFilter::for_rows(0).size_bytes(), 4096 * 10 / 512 * line);
        assert_eq!(RowFilter::for_rows(51_200).size_bytes(), 1000 * line);
        assert_eq!(
            RowFilter::for_rows(usize::MAX).size_bytes(),
            (1 << 24) * 10 / 512 * line
        );
    }

    #[test]
    fn rows_added_by_writers_at_once_are_all_held() {
        let f = RowFilter::for_rows(40_000);
        std::thread::scope(|s| {
            for t in 0..4 {
                let f = &f;
                s.spawn(move || hashes(t * 10_000, 10_000).for_each(|h| f.add(h)));
            }
        });
        assert!(hashes(0, 40_000).all(|h| f.may_hold(h)));
    }
}
