//! Data blocks and the index searched where they lie: keys stay encoded and are compared in
//! place, and a [`Cell`] is built only for the entry a scanner stands on.
//!
//! A data block is kept as read from disk. Blocks used to be decoded on every cache miss, their
//! prefix-compressed keys rebuilt into a second buffer beside an entry table: half again the
//! memory of the block in the cache, and about 18 µs per 64 KiB block before the first compare.
//!
//! # Invariants
//! Every entry header and key was checked by [`check_key`] when the block was built, so the
//! accessors may slice without further checks: row length fits, at least 17 trailing bytes of
//! timestamp, type and sequence id, and a type code that may be stored.

use std::cmp::Ordering;

use basalt_model::{Cell, CellType};
use bytes::Bytes;

use crate::codec::Reader;

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

/// Where one entry of a data block lies in the block's body.
#[derive(Clone, Debug, Default)]
struct Located {
    key: std::ops::Range<usize>,
    value: std::ops::Range<usize>,
    /// Cell TTL in ms; `u64::MAX` when the cell has none.
    ttl: u64,
}

/// Parses the entry header at `at` of a data block body (docs/formats/storefile.md, version
/// 2); `None` when it runs past `end` or is malformed.
fn parse_entry(body: &[u8], at: usize, end: usize) -> Option<Located> {
    let mut r = Reader::new(body.get(at..end)?);
    let key_len = r.len()?;
    let value_len = r.len()?;
    let ttl = match r.u8()? {
        0 => u64::MAX,
        1 => r.varint()?,
        _ => return None,
    };
    let key = at + r.position();
    let value = key.checked_add(key_len)?;
    let value_end = value.checked_add(value_len)?;
    (value_end <= end).then_some(Located {
        key: key..value,
        value: value..value_end,
        ttl,
    })
}

/// A data block, searched and read where it lies: the block cache holds the body as read
/// from disk (decompressed), and nothing is decoded until a cell is built.
///
/// The body holds each entry's whole key and an array of every entry's offset, so a search
/// is a binary search over the entries themselves (HBase's ROW_INDEX_V1 encoding, per cell
/// rather than per row). Blocks of the first format version, whose keys were
/// prefix-compressed, are rewritten into this layout when read
/// ([`super::block::decode_legacy_data_block`]).
#[derive(Debug)]
pub struct DataBlock {
    family: Bytes,
    /// The decompressed body: entries, then the offset array and the entry count.
    body: Bytes,
    /// Where the offset array starts; the entries end here.
    offsets_at: usize,
    len: usize,
    /// Search accelerator: the rows of a block share a prefix; `windows[i]` holds the eight
    /// row bytes after it (zero-padded) of entry `i`, so most steps of a search compare one
    /// `u64` in a small array instead of reaching into the body for a key.
    probes: RowProbes,
}

/// A block's rows as a shared prefix and one eight-byte window each (see [`DataBlock`]).
#[derive(Debug, Default)]
struct RowProbes {
    prefix: std::ops::Range<usize>,
    windows: Vec<u64>,
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
    /// A block over `body`, every entry checked (see the module's invariant): each offset is
    /// where the previous entry ends, each header parses and each key passes [`check_key`].
    ///
    /// # Errors
    /// What is wrong with the body, for the caller's corruption error.
    pub(crate) fn new(family: Bytes, body: Bytes) -> Result<DataBlock, &'static str> {
        let n = body.len();
        let count_at = n
            .checked_sub(4)
            .ok_or("block shorter than its entry count")?;
        let mut count = [0u8; 4];
        count.copy_from_slice(&body[count_at..]);
        let len = u32::from_le_bytes(count) as usize;
        let offsets_at = len
            .checked_mul(4)
            .and_then(|o| count_at.checked_sub(o))
            .ok_or("offset array larger than the block")?;
        let mut block = DataBlock {
            family,
            body,
            offsets_at,
            len,
            probes: RowProbes::default(),
        };
        // Rows are sorted: what the first and last share, every row between shares. (Both
        // are checked again in the walk below, which refuses the block if they are bad.)
        let prefix = match (
            block.row_range(0),
            len.checked_sub(1).and_then(|l| block.row_range(l)),
        ) {
            (Some(first), Some(last)) => {
                let (a, b) = (&block.body[first.clone()], &block.body[last]);
                first.start..first.start + a.iter().zip(b).take_while(|(x, y)| x == y).count()
            }
            _ => 0..0,
        };
        let mut windows = Vec::with_capacity(len);
        let mut at = 0;
        for i in 0..len {
            if block.offset(i) != at {
                return Err("entry offset out of place");
            }
            let e = parse_entry(&block.body, at, offsets_at).ok_or("malformed entry header")?;
            let row_len = check_key(&block.body[e.key.clone()]).ok_or("malformed key")?;
            let row = &block.body[e.key.start + 2..e.key.start + 2 + row_len];
            windows.push(window(row, prefix.len()));
            at = e.value.end;
        }
        if at != offsets_at {
            return Err("bytes between the last entry and the offset array");
        }
        block.probes = RowProbes { prefix, windows };
        Ok(block)
    }

    /// Where the row of entry `i` lies; `None` when the entry or its key is malformed.
    fn row_range(&self, i: usize) -> Option<std::ops::Range<usize>> {
        let e = parse_entry(&self.body, self.offset(i), self.offsets_at)?;
        let row_len = check_key(self.body.get(e.key.clone())?)?;
        Some(e.key.start + 2..e.key.start + 2 + row_len)
    }

    /// Number of cells.
    #[must_use]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the block holds no cell.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn offset(&self, i: usize) -> usize {
        let at = self.offsets_at + 4 * i;
        let mut o = [0u8; 4];
        o.copy_from_slice(&self.body[at..at + 4]);
        u32::from_le_bytes(o) as usize
    }

    /// Entry `i`, checked when the block was built; a default (empty) entry cannot occur.
    fn locate(&self, i: usize) -> Located {
        parse_entry(&self.body, self.offset(i), self.offsets_at).unwrap_or_default()
    }

    fn key(&self, i: usize) -> RawKey<'_> {
        RawKey(&self.body[self.locate(i).key])
    }

    /// Cell `i`, built (its parts share the block's buffer).
    #[must_use]
    pub fn cell(&self, i: usize) -> Cell {
        self.cell_of(self.locate(i))
    }

    /// The first cell at or after `i` whose sequence id is at most `read_point`, and where it
    /// is; each entry passed over is parsed once.
    #[must_use]
    pub fn first_visible(&self, mut i: usize, read_point: u64) -> Option<(usize, Cell)> {
        while i < self.len {
            let e = self.locate(i);
            if RawKey(&self.body[e.key.clone()]).seq_id() <= read_point {
                return Some((i, self.cell_of(e)));
            }
            i += 1;
        }
        None
    }

    fn cell_of(&self, e: Located) -> Cell {
        let k = RawKey(&self.body[e.key.clone()]);
        let row_end = e.key.start + 2 + k.row_len();
        let (timestamp, code, seq_id) = k.tail();
        Cell {
            row: self.body.slice(e.key.start + 2..row_end),
            family: self.family.clone(),
            qualifier: self.body.slice(row_end..e.key.end - KEY_TAIL_LEN),
            timestamp,
            cell_type: CellType::from_code(code).unwrap_or(CellType::Put),
            seq_id,
            value: self.body.slice(e.value),
            ttl_ms: (e.ttl != u64::MAX).then_some(e.ttl),
        }
    }

    /// The row of cell `i`.
    #[must_use]
    pub fn row(&self, i: usize) -> Bytes {
        let key = self.locate(i).key;
        let rl = RawKey(&self.body[key.clone()]).row_len();
        self.body.slice(key.start + 2..key.start + 2 + rl)
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
        let prefix = &self.body[self.probes.prefix.clone()];
        if !key.row.starts_with(prefix) {
            return partition(self.len, |i| self.cmp_at(i, key).is_lt());
        }
        // A smaller window means a smaller row, a larger one a larger row; only equal windows
        // need the whole key.
        let w = window(&key.row, prefix.len());
        let windows = &self.probes.windows;
        partition(self.len, |i| match windows[i].cmp(&w) {
            Ordering::Less => true,
            Ordering::Greater => false,
            Ordering::Equal => self.cmp_at(i, key).is_lt(),
        })
    }

    /// Bytes held, the block's weight in the cache.
    #[must_use]
    pub fn weight(&self) -> usize {
        self.body.len() + 8 * self.probes.windows.len() + std::mem::size_of::<DataBlock>()
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
    use crate::storefile::block::DataBlockBuilder;

    fn block_of(cells: &[Cell]) -> DataBlock {
        let mut b = DataBlockBuilder::default();
        cells.iter().for_each(|c| b.add(c));
        DataBlock::new(Bytes::from_static(b"f"), Bytes::from(b.finish())).unwrap()
    }

    #[test]
    fn raw_keys_order_like_cells() {
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
        let block = block_of(&cells);
        assert_eq!(block.len(), cells.len());
        for (i, a) in cells.iter().enumerate() {
            assert_eq!(block.row(i), a.row);
            assert_eq!(block.seq_id(i), a.seq_id);
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

    /// A block whose layout is off is refused, naming what is wrong: the accessors rely on it.
    #[test]
    fn a_damaged_layout_is_refused() {
        let cells: Vec<Cell> = (0..3u8)
            .map(|i| Cell::put(vec![b'r', i], "f", "q", 1, "value"))
            .collect();
        let mut b = DataBlockBuilder::default();
        cells.iter().for_each(|c| b.add(c));
        let good = b.finish();
        let check = |body: Vec<u8>| DataBlock::new(Bytes::from_static(b"f"), Bytes::from(body));
        assert_eq!(check(good.clone()).unwrap().len(), 3);
        let n = good.len();
        let damaged = |at: usize, byte: u8| {
            let mut d = good.clone();
            d[at] = byte;
            check(d).unwrap_err()
        };
        // Entry 0: key_len 22 (2 + 2 row + 1 qualifier + 17), value_len 5, flags, key, value.
        assert_eq!(damaged(n - 1, 0x40), "offset array larger than the block");
        assert_eq!(damaged(n - 4, 4), "entry offset out of place");
        let mut junk = good.clone();
        junk.insert(n - 16, 0);
        assert_eq!(
            check(junk).unwrap_err(),
            "bytes between the last entry and the offset array"
        );
        assert_eq!(damaged(n - 12, 1), "entry offset out of place");
        assert_eq!(damaged(0, 0x80), "malformed entry header");
        assert_eq!(damaged(1, 200), "malformed entry header");
        assert_eq!(damaged(2, 2), "malformed entry header");
        assert_eq!(damaged(3, 9), "malformed key");
        assert_eq!(damaged(3 + 22 - 9, 0), "malformed key");
        assert_eq!(
            check(good[..3].to_vec()).unwrap_err(),
            "block shorter than its entry count"
        );
        assert_eq!(check(vec![0; 4]).unwrap().len(), 0);
    }

    proptest::proptest! {
        /// The windowed search finds what a plain binary search over whole keys finds.
        #[test]
        fn lower_bound_agrees_with_a_plain_search(
            rows in proptest::collection::btree_set(proptest::collection::vec(0u8..4, 0..12), 1..60),
            probes in proptest::collection::vec(proptest::collection::vec(0u8..4, 0..12), 1..30),
        ) {
            let cells: Vec<Cell> = rows.iter().map(|r| Cell::put(r.clone(), "f", "q", 1, "v")).collect();
            let block = block_of(&cells);
            for p in probes {
                for key in [Cell::first_on_row(&Bytes::from(p.clone())), Cell::put(p.clone(), "f", "q", 1, "")] {
                    let want = cells.partition_point(|c| c < &key);
                    proptest::prop_assert_eq!(block.lower_bound(&key), want);
                }
            }
        }
    }
}
