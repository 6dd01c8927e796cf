//! Data blocks and the index searched where they lie: keys are compared in place, and a
//! [`Cell`] is built only for the entry a scanner stands on.
//!
//! A data block of today's format is kept as read from disk. Blocks used to be decoded on
//! every cache miss, their prefix-compressed keys rebuilt into a second buffer beside an entry
//! table: half again the memory of the block in the cache, and about 18 µs per 64 KiB block
//! before the first compare. Blocks of earlier formats still are, once each miss, into
//! today's layout (until a compaction rewrites their file).
//!
//! # Invariants
//! A [`RawKey`] (an encoded key: the index's, the file info's) is only made of a key
//! [`check_key`] passed, so its accessors may slice without further checks: row length fits,
//! at least 17 trailing bytes of timestamp, type and sequence id, and a type code that may be
//! stored. Index keys are checked when the index is decoded; a data block's entries, whose
//! parts lie apart ([`entry`]), each time they are located ([`DataBlock`], invariant 1).

use std::cmp::Ordering;
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};
use std::sync::OnceLock;

use basalt_model::cell::compare_families;
use basalt_model::{bytes_order, Cell, CellType, Spans};
use bytes::Bytes;

mod entry;
use entry::Located;
pub use entry::{put_entry, Base, Entry};

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
    storable(k[k.len() - 9]).then_some(row_len)
}

/// A checked encoded key (an index entry's, a file info's).
#[derive(Clone, Copy)]
struct RawKey<'a>(&'a [u8]);

impl<'a> RawKey<'a> {
    fn row_len(self) -> usize {
        usize::from(u16::from_be_bytes([self.0[0], self.0[1]]))
    }

    fn parts(self) -> KeyParts<'a> {
        let row_end = 2 + self.row_len();
        let tail_at = self.0.len() - KEY_TAIL_LEN;
        let t = &self.0[tail_at..];
        let mut ts = [0u8; 8];
        ts.copy_from_slice(&t[..8]);
        let mut seq = [0u8; 8];
        seq.copy_from_slice(&t[9..]);
        KeyParts {
            row: &self.0[2..row_end],
            qualifier: &self.0[row_end..tail_at],
            ts: i64::from_be_bytes(ts),
            code: t[8],
            seq: u64::from_be_bytes(seq),
        }
    }
}

/// A key's parts, read where they lie: from a data block's entry or an encoded key.
#[derive(Clone, Copy)]
pub struct KeyParts<'a> {
    pub row: &'a [u8],
    pub qualifier: &'a [u8],
    pub ts: i64,
    pub code: u8,
    pub seq: u64,
}

impl KeyParts<'_> {
    /// The key's order against `key` (cell.rs, invariant 1), for a key of `family`.
    #[inline]
    pub fn cmp(self, family: &[u8], key: &Cell) -> Ordering {
        bytes_order::compare(self.row, key.row())
            .then_with(|| compare_families(family, &key.family))
            .then_with(|| bytes_order::compare(self.qualifier, key.qualifier()))
            .then_with(|| {
                key.timestamp
                    .cmp(&self.ts)
                    .then_with(|| key.cell_type.code().cmp(&self.code))
                    .then_with(|| key.seq_id.cmp(&self.seq))
            })
    }
}

impl std::fmt::Debug for KeyParts<'_> {
    /// As a cell's key prints: bytes escaped, the type named.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let cell_type = CellType::from_code(self.code);
        f.debug_struct("Key")
            .field("row", &Bytes::copy_from_slice(self.row))
            .field("qualifier", &Bytes::copy_from_slice(self.qualifier))
            .field("timestamp", &self.ts)
            .field("cell_type", &cell_type.ok_or(self.code))
            .field("seq_id", &self.seq)
            .finish()
    }
}

/// The parts of the encoded key `key`; `None` when it is not one [`check_key`] passes.
pub fn parts_of_encoded(key: &[u8]) -> Option<KeyParts<'_>> {
    check_key(key)?;
    Some(RawKey(key).parts())
}

/// What is wrong with a damaged data block, for the caller's corruption error.
pub type Damage = &'static str;

/// Parses the entry at `at` that must end at `end` (docs/formats/storefile.md, version 3),
/// its type checked as [`check_key`] checks an encoded key's; the entries end at `limit`.
fn parse_entry(
    body: &[u8],
    at: usize,
    end: usize,
    limit: usize,
    base: Base,
) -> Result<Located, Damage> {
    // The entry's bytes run on into the offsets and footer: its numbers are loaded a word
    // at a time, and `limit` bounds what it may hold.
    let entry = body
        .get(at..)
        .filter(|_| at <= limit)
        .ok_or("entry offset out of place")?;
    let e = entry::header_of(entry, at, limit, base).ok_or("malformed entry header")?;
    if !storable(e.code) {
        return Err("malformed key");
    }
    if e.value.end != end {
        return Err(if end == limit {
            "bytes between the last entry and the offset array"
        } else {
            "entry offset out of place"
        });
    }
    Ok(e)
}

/// Whether `code` is a cell type a store file may hold (not a search key's).
fn storable(code: u8) -> bool {
    !matches!(
        CellType::from_code(code),
        None | Some(CellType::Minimum | CellType::Maximum)
    )
}

/// Bytes after a data block's offset array: base timestamp, base sequence id, entry count
/// and offset width.
pub const FOOTER_LEN: usize = 8 + 8 + 4 + 1;

/// A data block, searched and read where it lies: the block cache holds the body as read
/// from disk (decompressed), and nothing is decoded until a cell is built.
///
/// The body holds each entry's row and qualifier whole and an array of every entry's offset,
/// so a search is a binary search over the entries themselves (HBase's ROW_INDEX_V1
/// encoding, per cell rather than per row). Blocks of earlier format versions are rewritten
/// into this layout when read ([`super::block::decode_legacy_data_block`]).
///
/// # Invariants
/// 1. Entry `i` fills `offset(i)..offset(i + 1)` exactly (the last one ends where the offset
///    array starts), and the first starts at 0. Only [`DataBlock::locate`] reads an entry,
///    and it checks that, the header and the type code every time; the parts of a
///    [`Located`] lie within the entries. Nothing is checked when the block is built: a miss
///    that reads one cell then checks the dozen entries its search touched, not all of them.
/// 2. The row probes, once built, hold one window per entry, every entry having been
///    located to build them.
#[derive(Debug)]
pub struct DataBlock {
    family: Bytes,
    /// The decompressed body: entries, then the offset array and the footer.
    body: Bytes,
    /// Where the offset array starts; the entries end here.
    offsets_at: usize,
    /// Bytes an offset takes: 2 when every entry starts below 64 KiB, else 4.
    offset_width: usize,
    len: usize,
    /// The timestamp and sequence id the entries' are deltas from.
    base: Base,
    /// Search accelerator: the rows of a block share a prefix; a window holds the eight row
    /// bytes after it (zero-padded) of each entry, so most steps of a search compare one
    /// `u64` in a small array instead of reaching into the body for a key. Built by the
    /// search after the first [`PLAIN_SEARCHES`].
    probes: OnceLock<RowProbes>,
    /// Searches made without the probes.
    searches: AtomicU32,
}

/// Searches a block answers without its row probes before one builds them. Building them
/// walks every entry, which costs about what five plain searches lose against probed ones:
/// a block read for a Get or two should not pay for it, a block searched over and over
/// should have them. Measured with `basalt-vs-rocksdb` on one store each: at 10M rows, where
/// most reads miss the cache, 37k reads/s building on the second search and 43–46k/s from
/// the fifth on; at 1M rows, all cached, 155k/s never building and 207–213k/s building on
/// the second or the fifth.
const PLAIN_SEARCHES: u32 = 4;

/// Sorted rows as a shared prefix and one eight-byte window each (see [`DataBlock`]): a
/// data block's, and the index's last rows of its blocks ([`IndexKeys`]).
#[derive(Debug)]
struct RowProbes {
    prefix: Prefix,
    windows: Vec<u64>,
}

impl RowProbes {
    /// The probes of `n` sorted rows, row `i` lying in `buf` at `row(i)`.
    fn of<E>(
        buf: &[u8],
        n: usize,
        row: impl Fn(usize) -> Result<std::ops::Range<usize>, E>,
    ) -> Result<RowProbes, E> {
        // Rows are sorted: what the first and last share, every row between shares.
        let prefix = match n.checked_sub(1) {
            Some(last) => {
                let (first, last) = (row(0)?, row(last)?);
                let (a, b) = (&buf[first.clone()], &buf[last]);
                first.start..first.start + a.iter().zip(b).take_while(|(x, y)| x == y).count()
            }
            None => 0..0,
        };
        let windows = (0..n)
            .map(|i| Ok(window(&buf[row(i)?], prefix.len())))
            .collect::<Result<_, E>>()?;
        Ok(RowProbes {
            prefix: Prefix::new(buf, prefix),
            windows,
        })
    }

    /// The first row `i` for which `below(i)` (row `i`'s key is below `key`) is false, the
    /// rows lying in `buf`; `None` when `key`'s row lacks the prefix, and the caller
    /// searches without the probes. A smaller window means a smaller row, a larger one a
    /// larger row; only equal windows need the whole key.
    fn partition(&self, buf: &[u8], key: &Cell, below: impl Fn(usize) -> bool) -> Option<usize> {
        let prefix = self.prefix.of(buf);
        if !key.row().starts_with(prefix) {
            return None;
        }
        let w = window(key.row(), prefix.len());
        Some(partition(self.windows.len(), |i| {
            match self.windows[i].cmp(&w) {
                Ordering::Less => true,
                Ordering::Greater => false,
                Ordering::Equal => below(i),
            }
        }))
    }
}

/// The longest shared prefix copied into the block's own struct.
const PREFIX_INLINE: usize = 22;

/// The rows' shared prefix. Every search through the probes first checks that its row has
/// the prefix; read from the block's first entry, that check missed the CPU's cache on nearly
/// every search of a block not searched just before (5.6% of a random read at 1M rows,
/// `BENCHMARKS.md`). A short prefix is copied beside the `OnceLock` the search has just read;
/// a longer one stays where it lies, so the probes hold no bytes the block's weight does not
/// count.
#[derive(Debug)]
enum Prefix {
    Inline { len: u8, bytes: [u8; PREFIX_INLINE] },
    InBody(std::ops::Range<usize>),
}

impl Prefix {
    /// The prefix `at` in `body`.
    fn new(body: &[u8], at: std::ops::Range<usize>) -> Prefix {
        match u8::try_from(at.len()) {
            Ok(len) if at.len() <= PREFIX_INLINE => {
                let mut bytes = [0u8; PREFIX_INLINE];
                bytes[..at.len()].copy_from_slice(&body[at]);
                Prefix::Inline { len, bytes }
            }
            _ => Prefix::InBody(at),
        }
    }

    fn of<'a>(&'a self, body: &'a [u8]) -> &'a [u8] {
        match self {
            Prefix::Inline { len, bytes } => &bytes[..usize::from(*len)],
            Prefix::InBody(at) => &body[at.clone()],
        }
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
    /// A block over `body`: its entry count and offset array are placed; the entries are
    /// checked as they are read (invariant 1).
    ///
    /// # Errors
    /// What is wrong with the body, for the caller's corruption error.
    pub(crate) fn new(family: Bytes, body: Bytes) -> Result<DataBlock, Damage> {
        let footer_at = body
            .len()
            .checked_sub(FOOTER_LEN)
            .ok_or("block shorter than its footer")?;
        let footer = &body[footer_at..];
        let word = |at: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&footer[at..at + 8]);
            u64::from_le_bytes(w)
        };
        let base = Base {
            ts: word(0) as i64,
            seq: word(8),
        };
        let mut count = [0u8; 4];
        count.copy_from_slice(&footer[16..20]);
        let len = u32::from_le_bytes(count) as usize;
        let offset_width = match footer[20] {
            w @ (2 | 4) => usize::from(w),
            _ => return Err("unknown offset width"),
        };
        let offsets_at = len
            .checked_mul(offset_width)
            .and_then(|o| footer_at.checked_sub(o))
            .ok_or("offset array larger than the block")?;
        let block = DataBlock {
            family,
            body,
            offsets_at,
            offset_width,
            len,
            base,
            probes: OnceLock::new(),
            searches: AtomicU32::new(0),
        };
        let first = if len == 0 {
            offsets_at
        } else {
            block.offset(0)
        };
        if first != 0 {
            return Err(if len == 0 {
                "bytes between the last entry and the offset array"
            } else {
                "entry offset out of place"
            });
        }
        Ok(block)
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

    /// The offset array's entry `i` (`i < len`, so it lies before the footer).
    #[inline]
    fn offset(&self, i: usize) -> usize {
        // Each width read as its own fixed-size load: a copy of a width known only at run
        // time was a call to `memcpy` and a stall on its store, for every entry a search read.
        let at = self.offsets_at + self.offset_width * i;
        if self.offset_width == 2 {
            usize::from(u16::from_le_bytes([self.body[at], self.body[at + 1]]))
        } else {
            let mut o = [0u8; 4];
            o.copy_from_slice(&self.body[at..at + 4]);
            u32::from_le_bytes(o) as usize
        }
    }

    /// Entry `i` (`i < len`), checked (invariant 1).
    fn locate(&self, i: usize) -> Result<Located, Damage> {
        let mut e = Located::default();
        self.locate_into(i, &mut e)?;
        Ok(e)
    }

    /// [`DataBlock::locate`] into `e`, where the caller keeps it. The searches through a
    /// block call this for each entry they pass: a `Located` returned by value was copied
    /// out of the callee's stores at once, and the copy waited for them (BENCHMARKS.md).
    fn locate_into(&self, i: usize, e: &mut Located) -> Result<(), Damage> {
        let end = if i + 1 == self.len {
            self.offsets_at
        } else {
            self.offset(i + 1)
        };
        *e = parse_entry(&self.body, self.offset(i), end, self.offsets_at, self.base)?;
        Ok(())
    }

    fn key<'a>(&'a self, e: &Located) -> KeyParts<'a> {
        KeyParts {
            row: &self.body[e.row.clone()],
            qualifier: &self.body[e.qualifier.clone()],
            ts: e.ts,
            code: e.code,
            seq: e.seq,
        }
    }

    /// Cell `i`, built (its parts share the block's buffer).
    ///
    /// # Errors
    /// The entry is damaged.
    pub fn cell(&self, i: usize) -> Result<Cell, Damage> {
        Ok(self.cell_of(&self.locate(i)?))
    }

    /// The first cell at or after `i` whose sequence id is at most `read_point`, built into
    /// `slot` (where the scanner keeps it: a cell returned by value was one more move of
    /// 128 bytes), and where it is; each entry passed over is parsed once. For a reader of
    /// `row` alone (when it names one), it stops at the first cell of another row without
    /// building it. `slot` is left alone unless a cell is built; a cell in it on this block's
    /// buffer is built over (`cell_into`).
    ///
    /// # Errors
    /// An entry on the way is damaged.
    pub fn next_visible(
        &self,
        mut i: usize,
        read_point: u64,
        row: Option<&[u8]>,
        slot: &mut Option<Cell>,
    ) -> Result<Visible, Damage> {
        let mut e = Located::default();
        while i < self.len {
            self.locate_into(i, &mut e)?;
            if let Some(found) = self.visible_at(&e, i, read_point, row, slot) {
                return Ok(found);
            }
            i += 1;
        }
        Ok(Visible::End)
    }

    /// What [`DataBlock::next_visible`] answers at entry `e` (entry `i`), located: `None`
    /// when the cell is not visible at `read_point`, and the search goes on.
    fn visible_at(
        &self,
        e: &Located,
        i: usize,
        read_point: u64,
        row: Option<&[u8]>,
        slot: &mut Option<Cell>,
    ) -> Option<Visible> {
        let key = self.key(e);
        if row.is_some_and(|r| !bytes_order::equal(key.row, r)) {
            return Some(Visible::PastRow(i));
        }
        if key.seq <= read_point {
            self.cell_into(e, slot);
            return Some(Visible::Cell(i));
        }
        None
    }

    /// A skip within the block: passes the entries from `i` up to `end` that `passing`
    /// names, reading their keys where they lie, then answers what
    /// [`DataBlock::next_visible`] finds from the first entry not passed; that entry is
    /// located once, for both. `None` when every entry up to `end` was passed (the caller
    /// then seeks).
    ///
    /// # Errors
    /// An entry on the way is damaged.
    pub fn pass(
        &self,
        mut i: usize,
        end: usize,
        passing: &Passing<'_>,
        read_point: u64,
        row: Option<&[u8]>,
        slot: &mut Option<Cell>,
    ) -> Result<Option<Visible>, Damage> {
        let mut e = Located::default();
        while i < end.min(self.len) {
            self.locate_into(i, &mut e)?;
            if !passing.names(self.key(&e), &self.family) {
                return match self.visible_at(&e, i, read_point, row, slot) {
                    Some(found) => Ok(Some(found)),
                    None => self.next_visible(i + 1, read_point, row, slot).map(Some),
                };
            }
            i += 1;
        }
        Ok(None)
    }

    /// The cell of entry `e`: its row, qualifier and value share the block with one count.
    fn cell_of(&self, e: &Located) -> Cell {
        let mut slot = None;
        self.cell_into(e, &mut slot);
        slot.unwrap_or_else(|| unreachable!("`cell_into` builds a cell"))
    }

    /// Builds the cell of entry `e` into `slot`: its row, qualifier and value lie in the
    /// block's buffer, shared with one count. A cell in `slot` already on this block's
    /// buffer is refilled and keeps its count ([`Cell::refill_in_buffer`]): a scanner that
    /// builds each cell where the last one was takes no count a cell.
    fn cell_into(&self, e: &Located, slot: &mut Option<Cell>) {
        let cut;
        let (data, base) = if u32::try_from(self.body.len()).is_ok() {
            (&self.body, 0)
        } else {
            // A block past 4 GiB (one cell larger than that): the cell keeps its own part.
            cut = self.body.slice(e.row.start..e.value.end);
            (&cut, e.row.start)
        };
        let spans = Spans {
            row: e.row.start - base..e.row.end - base,
            qualifier: e.qualifier.start - base..e.qualifier.end - base,
            value: e.value.start - base..e.value.end - base,
        };
        let refilled = slot
            .as_mut()
            .is_some_and(|c| c.refill_in_buffer(data, &spans, &self.family));
        if !refilled {
            *slot = Cell::in_buffer(data.clone(), &spans, self.family.clone());
        }
        let Some(cell) = slot.as_mut() else {
            unreachable!("a located entry's parts lie within it (invariant 1)")
        };
        cell.timestamp = e.ts;
        cell.cell_type = CellType::from_code(e.code).unwrap_or(CellType::Put);
        cell.seq_id = e.seq;
        cell.ttl_ms = (e.ttl != u64::MAX).then_some(e.ttl);
    }

    /// The row of cell `i`.
    ///
    /// # Errors
    /// The entry is damaged.
    pub fn row(&self, i: usize) -> Result<Bytes, Damage> {
        Ok(self.body.slice(self.locate(i)?.row))
    }

    /// The sequence id of cell `i`.
    ///
    /// # Errors
    /// The entry is damaged.
    pub fn seq_id(&self, i: usize) -> Result<u64, Damage> {
        Ok(self.locate(i)?.seq)
    }

    /// Cell `i`'s order against `key`.
    ///
    /// # Errors
    /// The entry is damaged.
    pub fn cmp_at(&self, i: usize, key: &Cell) -> Result<Ordering, Damage> {
        Ok(self.key(&self.locate(i)?).cmp(&self.family, key))
    }

    /// The first cell at or after `key` (the block's length if none).
    ///
    /// # Errors
    /// An entry the search touched is damaged (or, when the search builds the row probes,
    /// any entry: invariant 2).
    pub fn lower_bound(&self, key: &Cell) -> Result<usize, Damage> {
        let damage = std::cell::Cell::new(None);
        let below = |i: usize| match self.cmp_at(i, key) {
            Ok(o) => o.is_lt(),
            Err(e) => {
                damage.set(Some(e));
                false
            }
        };
        let probes = match self.probes.get() {
            Some(p) => Some(p),
            None if self.searches.fetch_add(1, Relaxed) >= PLAIN_SEARCHES => {
                // Another search may be building them too; either result will do.
                let _ = self.probes.set(self.row_probes()?);
                self.probes.get()
            }
            None => None,
        };
        let at = probes
            .and_then(|p| p.partition(&self.body, key, below))
            .unwrap_or_else(|| partition(self.len, below));
        damage.get().map_or(Ok(at), Err)
    }

    /// Every entry located, and the windows of their rows (invariant 2).
    fn row_probes(&self) -> Result<RowProbes, Damage> {
        RowProbes::of(&self.body, self.len, |i| Ok(self.locate(i)?.row))
    }

    /// Bytes held, the block's weight in the cache: the row probes are counted from the
    /// start, as they may be built while the block is cached.
    #[must_use]
    pub fn weight(&self) -> usize {
        self.body.len() + 8 * self.len + std::mem::size_of::<DataBlock>()
    }
}

/// A decoded index: each data block's last key (encoded, in one buffer), offset and length,
/// and the row probes of those keys' rows, so that a search compares one `u64` a step, as a
/// data block's does, where a whole key took about a hundred instructions.
///
/// # Invariants
/// 1. The keys are checked ([`check_key`], when the index is decoded) and sorted, as the
///    writer adds blocks in key order. Sorting is not checked: the index block's checksum
///    guards it, and an index out of order (a file written wrong) misleads a search, with
///    the probes or without, but makes none panic.
#[derive(Debug)]
pub struct IndexKeys {
    family: Bytes,
    keys: Bytes,
    /// (key offset, key length, block offset, block length).
    entries: Vec<(u32, u32, u64, u32)>,
    probes: RowProbes,
}

impl IndexKeys {
    /// An index of checked, sorted keys (invariant 1).
    pub(crate) fn new(family: Bytes, keys: Bytes, entries: Vec<(u32, u32, u64, u32)>) -> Self {
        let row = |i: usize| {
            let at = entries[i].0 as usize;
            let key = RawKey(&keys[at..at + entries[i].1 as usize]);
            Ok::<_, std::convert::Infallible>(at + 2..at + 2 + key.row_len())
        };
        let Ok(probes) = RowProbes::of(&keys, entries.len(), row);
        IndexKeys {
            family,
            keys,
            entries,
            probes,
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
        let below = |i: usize| {
            let (at, len, _, _) = self.entries[i];
            RawKey(&self.keys[at as usize..(at + len) as usize])
                .parts()
                .cmp(&self.family, key)
                .is_lt()
        };
        self.probes
            .partition(&self.keys, key, below)
            .unwrap_or_else(|| partition(self.len(), below))
    }

    /// Bytes held, the index's weight in the cache.
    #[must_use]
    pub fn weight(&self) -> usize {
        self.keys.len() + self.entries.len() * (24 + 8) + std::mem::size_of::<IndexKeys>()
    }
}

/// The cells a skip passes ([`DataBlock::pass`]).
#[derive(Debug)]
pub enum Passing<'a> {
    /// The cells of this row.
    Row(&'a [u8]),
    /// The cells of this row's column (of the block's family).
    Column { row: &'a [u8], qualifier: &'a [u8] },
    /// The cells below this key.
    Below(&'a Cell),
}

impl Passing<'_> {
    /// Whether the entry of `key`, in a block of `family`, is one to pass.
    fn names(&self, key: KeyParts<'_>, family: &[u8]) -> bool {
        match *self {
            Passing::Row(row) => bytes_order::equal(key.row, row),
            Passing::Column { row, qualifier } => {
                bytes_order::equal(key.row, row) && bytes_order::equal(key.qualifier, qualifier)
            }
            Passing::Below(below) => key.cmp(family, below).is_lt(),
        }
    }
}

/// Where [`DataBlock::next_visible`] stopped.
#[derive(Debug)]
pub enum Visible {
    /// At the visible cell `.0`, built into the caller's slot.
    Cell(usize),
    /// At cell `.0`, the first of a row after the one wanted (not built).
    PastRow(usize),
    /// At the block's end.
    End,
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
mod tests;
