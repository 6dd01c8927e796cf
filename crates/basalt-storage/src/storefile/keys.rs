//! Decoded blocks kept compact: keys stay encoded in one buffer and are compared in place, and
//! a [`Cell`] is built only for the entry a scanner stands on.
//!
//! A decoded block used to be a `Vec<Cell>` (about 200 bytes of structs per cell, keys
//! scattered behind reference counts), so a binary search in a cached block or in the index
//! was a chain of cache misses. Here an entry is 24 bytes beside a contiguous key buffer.
//!
//! # Invariants
//! Every key was checked by [`check_key`] when the block was decoded, so the accessors may
//! slice without further checks: row length fits, at least 17 trailing bytes of timestamp,
//! type and sequence id, and a type code that may be stored.

use std::cmp::Ordering;

use basalt_model::{Cell, CellType};
use bytes::Bytes;

/// Timestamp, type and sequence id after the qualifier.
const KEY_TAIL_LEN: usize = 8 + 1 + 8;

/// Checks an encoded key (`u16 row length | row | qualifier | ts | type | seq`) and returns
/// its row length.
pub fn check_key(k: &[u8]) -> Option<usize> {
    if k.len() < 2 + KEY_TAIL_LEN {
        return None;
    }
    let row_len = usize::from(u16::from_be_bytes([k[0], k[1]]));
    if 2 + row_len > k.len() - KEY_TAIL_LEN {
        return None;
    }
    let code = k[k.len() - 9];
    match CellType::from_code(code)? {
        CellType::Minimum | CellType::Maximum => None,
        _ => Some(row_len),
    }
}

/// A checked encoded key.
#[derive(Clone, Copy)]
struct RawKey<'a>(&'a [u8]);

impl<'a> RawKey<'a> {
    fn row_len(self) -> usize {
        usize::from(u16::from_be_bytes([self.0[0], self.0[1]]))
    }

    fn row(self) -> &'a [u8] {
        &self.0[2..2 + self.row_len()]
    }

    fn qualifier(self) -> &'a [u8] {
        &self.0[2 + self.row_len()..self.0.len() - KEY_TAIL_LEN]
    }

    fn tail(self) -> (i64, u8, u64) {
        let t = &self.0[self.0.len() - KEY_TAIL_LEN..];
        let mut ts = [0u8; 8];
        ts.copy_from_slice(&t[..8]);
        let mut seq = [0u8; 8];
        seq.copy_from_slice(&t[9..]);
        (i64::from_be_bytes(ts), t[8], u64::from_be_bytes(seq))
    }

    /// The key's order against `key` (cell.rs, invariant 1), for a key of `family`.
    fn cmp(self, family: &[u8], key: &Cell) -> Ordering {
        self.row()
            .cmp(&key.row)
            .then_with(|| family.cmp(&key.family))
            .then_with(|| self.qualifier().cmp(&key.qualifier))
            .then_with(|| {
                let (ts, code, seq) = self.tail();
                key.timestamp
                    .cmp(&ts)
                    .then_with(|| key.cell_type.code().cmp(&code))
                    .then_with(|| key.seq_id.cmp(&seq))
            })
    }

    fn seq_id(self) -> u64 {
        self.tail().2
    }
}

/// Builds the cell of a checked key held in `keys` at `range`.
fn cell_of(keys: &Bytes, at: usize, len: usize, family: &Bytes) -> Cell {
    let k = RawKey(&keys[at..at + len]);
    let rl = k.row_len();
    let (timestamp, code, seq_id) = k.tail();
    Cell {
        row: keys.slice(at + 2..at + 2 + rl),
        family: family.clone(),
        qualifier: keys.slice(at + 2 + rl..at + len - KEY_TAIL_LEN),
        timestamp,
        cell_type: CellType::from_code(code).unwrap_or(CellType::Put),
        seq_id,
        value: Bytes::new(),
        ttl_ms: None,
    }
}

/// One entry of a data block: where its key and value are.
#[derive(Clone, Copy, Debug)]
pub struct Entry {
    pub key: u32,
    pub key_len: u32,
    pub value: u32,
    pub value_len: u32,
    /// Cell TTL in ms; `u64::MAX` when the cell has none.
    pub ttl: u64,
}

/// A decoded data block.
#[derive(Debug)]
pub struct DataBlock {
    family: Bytes,
    /// The decompressed body: values are slices of it.
    body: Bytes,
    /// Every entry's full key, one after another.
    keys: Bytes,
    entries: Vec<Entry>,
    /// Search accelerator: the rows of a block share a prefix; `probes[i]` holds the eight row
    /// bytes after it (zero-padded) of entry `i`, so most steps of a search compare one `u64`
    /// in a small array instead of chasing a key.
    probes: RowProbes,
}

/// A block's rows as a shared prefix and one eight-byte window each (see [`DataBlock`]).
#[derive(Debug, Default)]
struct RowProbes {
    prefix: Bytes,
    windows: Vec<u64>,
}

impl RowProbes {
    fn new(rows: impl ExactSizeIterator<Item = Bytes> + Clone) -> RowProbes {
        let (Some(first), Some(last)) = (rows.clone().next(), rows.clone().last()) else {
            return RowProbes::default();
        };
        // Rows are sorted: what the first and last share, every row between shares.
        let common = first
            .iter()
            .zip(last.iter())
            .take_while(|(a, b)| a == b)
            .count();
        RowProbes {
            prefix: first.slice(..common),
            windows: rows.map(|r| window(&r, common)).collect(),
        }
    }

    /// Where `key` goes among the windows: `None` when its row does not start with the prefix
    /// (the caller then compares whole keys).
    fn probe(&self, row: &[u8]) -> Option<u64> {
        row.starts_with(&self.prefix)
            .then(|| window(row, self.prefix.len()))
    }
}

/// The eight bytes of `row` from `at`, zero-padded, as a big-endian number: windows order as
/// the rows do whenever they differ.
fn window(row: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    let tail = row.get(at..).unwrap_or_default();
    let n = tail.len().min(8);
    w[..n].copy_from_slice(&tail[..n]);
    u64::from_be_bytes(w)
}

impl DataBlock {
    /// A block of checked entries (see the module's invariant).
    pub(crate) fn new(family: Bytes, body: Bytes, keys: Bytes, entries: Vec<Entry>) -> Self {
        let mut b = DataBlock {
            family,
            body,
            keys,
            entries,
            probes: RowProbes::default(),
        };
        b.probes = RowProbes::new((0..b.len()).map(|i| b.row(i)));
        b
    }

    /// Number of cells.
    #[must_use]
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the block holds no cell.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    fn key(&self, i: usize) -> RawKey<'_> {
        let e = &self.entries[i];
        RawKey(&self.keys[e.key as usize..(e.key + e.key_len) as usize])
    }

    /// Cell `i`, built (its parts share the block's buffers).
    #[must_use]
    pub fn cell(&self, i: usize) -> Cell {
        let e = &self.entries[i];
        let mut c = cell_of(&self.keys, e.key as usize, e.key_len as usize, &self.family);
        c.value = self
            .body
            .slice(e.value as usize..(e.value + e.value_len) as usize);
        c.ttl_ms = (e.ttl != u64::MAX).then_some(e.ttl);
        c
    }

    /// The row of cell `i`.
    #[must_use]
    pub fn row(&self, i: usize) -> Bytes {
        let e = &self.entries[i];
        let rl = self.key(i).row_len();
        self.keys.slice(e.key as usize + 2..e.key as usize + 2 + rl)
    }

    /// The sequence id of cell `i`.
    #[must_use]
    pub fn seq_id(&self, i: usize) -> u64 {
        self.key(i).seq_id()
    }

    /// Cell `i`'s order against `key`.
    #[must_use]
    pub fn cmp_at(&self, i: usize, key: &Cell) -> Ordering {
        self.key(i).cmp(&self.family, key)
    }

    /// The first cell at or after `key` (the block's length if none).
    #[must_use]
    pub fn lower_bound(&self, key: &Cell) -> usize {
        let Some(w) = self.probes.probe(&key.row) else {
            return partition(self.len(), |i| self.cmp_at(i, key).is_lt());
        };
        // A smaller window means a smaller row, a larger one a larger row; only equal windows
        // need the whole key.
        let windows = &self.probes.windows;
        partition(self.len(), |i| match windows[i].cmp(&w) {
            Ordering::Less => true,
            Ordering::Greater => false,
            Ordering::Equal => self.cmp_at(i, key).is_lt(),
        })
    }

    /// Bytes held, the block's weight in the cache.
    #[must_use]
    pub fn weight(&self) -> usize {
        self.body.len()
            + self.keys.len()
            + self.entries.len() * (std::mem::size_of::<Entry>() + 8)
            + std::mem::size_of::<DataBlock>()
    }
}

/// A decoded index: each data block's last key (encoded, in one buffer), offset and length.
#[derive(Debug)]
pub struct IndexKeys {
    family: Bytes,
    keys: Bytes,
    /// (key offset, key length, block offset, block length).
    entries: Vec<(u32, u32, u64, u32)>,
}

impl IndexKeys {
    /// An index of checked keys.
    pub(crate) fn new(family: Bytes, keys: Bytes, entries: Vec<(u32, u32, u64, u32)>) -> Self {
        IndexKeys {
            family,
            keys,
            entries,
        }
    }

    /// Number of data blocks.
    #[must_use]
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the file has no data block.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Each data block's offset and stored length, in key order.
    pub fn blocks(&self) -> impl Iterator<Item = (u64, u32)> + '_ {
        self.entries.iter().map(|e| (e.2, e.3))
    }

    /// Offset and stored length of block `i`.
    #[must_use]
    pub fn block(&self, i: usize) -> (u64, u32) {
        let e = self.entries[i];
        (e.2, e.3)
    }

    /// The first block whose last key is at or after `key` (the length if none).
    #[must_use]
    pub fn lower_bound(&self, key: &Cell) -> usize {
        partition(self.len(), |i| {
            let (at, len, _, _) = self.entries[i];
            RawKey(&self.keys[at as usize..(at + len) as usize])
                .cmp(&self.family, key)
                .is_lt()
        })
    }

    /// Bytes held, the index's weight in the cache.
    #[must_use]
    pub fn weight(&self) -> usize {
        self.keys.len() + self.entries.len() * 24 + std::mem::size_of::<IndexKeys>()
    }
}

/// The first `i` in `0..n` for which `pred` is false (`pred` true then false, as in
/// `slice::partition_point`).
fn partition(n: usize, pred: impl Fn(usize) -> bool) -> usize {
    let (mut lo, mut hi) = (0, n);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if pred(mid) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storefile::block::encode_key;

    #[test]
    fn raw_keys_order_like_cells() {
        let family = Bytes::from_static(b"f");
        let mut cells = Vec::new();
        for row in ["a", "ab", "b"] {
            for q in ["", "q", "qq"] {
                for ts in [9, 5] {
                    for t in [CellType::DeleteFamily, CellType::Put] {
                        let mut c = Cell::marker(row, "f", q, ts, t);
                        c.seq_id = 3;
                        cells.push(c);
                    }
                }
            }
        }
        cells.sort();
        let mut keys = Vec::new();
        let mut entries = Vec::new();
        for c in &cells {
            let at = keys.len() as u32;
            encode_key(&mut keys, c);
            entries.push(Entry {
                key: at,
                key_len: keys.len() as u32 - at,
                value: 0,
                value_len: 0,
                ttl: u64::MAX,
            });
        }
        let block = DataBlock::new(family.clone(), Bytes::new(), Bytes::from(keys), entries);
        for (i, a) in cells.iter().enumerate() {
            assert_eq!(&block.cell(i), a);
            for b in &cells {
                assert_eq!(block.cmp_at(i, b), a.cmp(b), "{a:?} vs {b:?}");
            }
            // Search keys of other families and of the row's edges order too.
            let first = Cell::first_on_row(&a.row);
            assert_eq!(block.cmp_at(i, &first), a.cmp(&first));
            let g = Cell::first_on_column(&a.row, &Bytes::from_static(b"g"), &a.qualifier);
            assert_eq!(block.cmp_at(i, &g), a.cmp(&g));
        }
    }

    proptest::proptest! {
        /// The windowed search finds what a plain binary search over whole keys finds.
        #[test]
        fn lower_bound_agrees_with_a_plain_search(
            rows in proptest::collection::btree_set(proptest::collection::vec(0u8..4, 0..12), 1..60),
            probes in proptest::collection::vec(proptest::collection::vec(0u8..4, 0..12), 1..30),
        ) {
            let cells: Vec<Cell> = rows.iter().map(|r| Cell::put(r.clone(), "f", "q", 1, "v")).collect();
            let mut keys = Vec::new();
            let mut entries = Vec::new();
            for c in &cells {
                let at = keys.len() as u32;
                encode_key(&mut keys, c);
                entries.push(Entry { key: at, key_len: keys.len() as u32 - at, value: 0, value_len: 0, ttl: u64::MAX });
            }
            let block = DataBlock::new(Bytes::from_static(b"f"), Bytes::new(), Bytes::from(keys), entries);
            for p in probes {
                for key in [Cell::first_on_row(&Bytes::from(p.clone())), Cell::put(p.clone(), "f", "q", 1, "")] {
                    let want = cells.partition_point(|c| c < &key);
                    proptest::prop_assert_eq!(block.lower_bound(&key), want);
                }
            }
        }
    }
}
