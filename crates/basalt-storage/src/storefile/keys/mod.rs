//! Data blocks and the index searched where they lie: keys stay encoded and are compared in
//! place, and a [`Cell`] is built only for the entry a scanner stands on.
//!
//! A data block is kept as read from disk. Blocks used to be decoded on every cache miss, their
//! prefix-compressed keys rebuilt into a second buffer beside an entry table: half again the
//! memory of the block in the cache, and about 18 µs per 64 KiB block before the first compare.
//!
//! # Invariants
//! A [`RawKey`] is only made of a key [`check_key`] passed for its tail's length, so its
//! accessors may slice without further checks: row length fits, the tail's bytes of
//! timestamp, type and (unless the entry leaves a zero out) sequence id, and a type code that
//! may be stored. (Index keys are checked when the index is decoded, data block keys each
//! time their entry is located: [`DataBlock`], invariant 1.)

use std::cmp::Ordering;
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};
use std::sync::OnceLock;

use basalt_model::cell::compare_families;
use basalt_model::{bytes_order, Cell, CellType, Spans};
use bytes::Bytes;

use crate::codec::Reader;

/// Timestamp, type and sequence id after the qualifier: a whole key's tail.
pub(crate) const KEY_TAIL_LEN: usize = 8 + 1 + 8;
/// The tail of a data block entry's key whose zero sequence id is not stored (format
/// version 3): timestamp and type.
pub(crate) const SHORT_TAIL_LEN: usize = 8 + 1;

/// Checks a whole encoded key (`u16 row length | row | qualifier | ts | type | seq`) and
/// returns its row length.
pub fn check_key(k: &[u8]) -> Option<usize> {
    check_key_with_tail(k, KEY_TAIL_LEN)
}

/// Checks an encoded key whose tail (after the qualifier) is `tail` bytes long:
/// [`KEY_TAIL_LEN`], or [`SHORT_TAIL_LEN`] for a key stored without its zero sequence id.
/// Returns the row length.
fn check_key_with_tail(k: &[u8], tail: usize) -> Option<usize> {
    if k.len() < 2 + tail {
        return None;
    }
    let row_len = usize::from(u16::from_be_bytes([k[0], k[1]]));
    if 2 + row_len > k.len() - tail {
        return None;
    }
    let code = k[k.len() - tail + 8];
    match CellType::from_code(code)? {
        CellType::Minimum | CellType::Maximum => None,
        _ => Some(row_len),
    }
}

/// A checked encoded key and its tail's length.
#[derive(Clone, Copy)]
struct RawKey<'a> {
    key: &'a [u8],
    /// [`KEY_TAIL_LEN`], or [`SHORT_TAIL_LEN`] when the sequence id (zero) is left out.
    tail: usize,
}

impl<'a> RawKey<'a> {
    /// A whole key (an index key), which [`check_key`] passed.
    fn whole(key: &'a [u8]) -> RawKey<'a> {
        RawKey {
            key,
            tail: KEY_TAIL_LEN,
        }
    }

    fn row_len(self) -> usize {
        usize::from(u16::from_be_bytes([self.key[0], self.key[1]]))
    }

    fn row(self) -> &'a [u8] {
        &self.key[2..2 + self.row_len()]
    }

    fn qualifier(self) -> &'a [u8] {
        &self.key[2 + self.row_len()..self.key.len() - self.tail]
    }

    /// Timestamp, type code and sequence id (zero when not stored).
    fn tail(self) -> (i64, u8, u64) {
        let t = &self.key[self.key.len() - self.tail..];
        let mut ts = [0u8; 8];
        ts.copy_from_slice(&t[..8]);
        let seq = match t.get(9..KEY_TAIL_LEN) {
            Some(s) => {
                let mut seq = [0u8; 8];
                seq.copy_from_slice(s);
                u64::from_be_bytes(seq)
            }
            None => 0,
        };
        (i64::from_be_bytes(ts), t[8], seq)
    }

    /// The key's order against `key` (cell.rs, invariant 1), for a key of `family`.
    fn cmp(self, family: &[u8], key: &Cell) -> Ordering {
        bytes_order::compare(self.row(), key.row())
            .then_with(|| compare_families(family, &key.family))
            .then_with(|| bytes_order::compare(self.qualifier(), key.qualifier()))
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

/// The order of the encoded key `key` of `family` against `cell` (cell.rs, invariant 1),
/// `key` holding its sequence id or, when `seq_stored` is false, leaving a zero one out;
/// `None` when `key` is not one [`check_key`] passes for that tail.
pub fn cmp_encoded(key: &[u8], seq_stored: bool, family: &[u8], cell: &Cell) -> Option<Ordering> {
    let tail = if seq_stored {
        KEY_TAIL_LEN
    } else {
        SHORT_TAIL_LEN
    };
    check_key_with_tail(key, tail)?;
    Some(RawKey { key, tail }.cmp(family, cell))
}

/// What is wrong with a damaged data block, for the caller's corruption error.
pub type Damage = &'static str;

/// Where one entry of a data block lies in the block's body; its key is checked.
#[derive(Clone, Debug, Default)]
struct Located {
    key: std::ops::Range<usize>,
    row_len: usize,
    /// The key's tail: [`KEY_TAIL_LEN`], or [`SHORT_TAIL_LEN`] when its zero sequence id is
    /// not stored.
    tail: usize,
    value: std::ops::Range<usize>,
    /// Cell TTL in ms; `u64::MAX` when the cell has none.
    ttl: u64,
}

/// Parses the entry at `at` that must end at `end` (docs/formats/storefile.md, version 3),
/// its key checked by [`check_key_with_tail`]; the entries end at `limit`.
fn parse_entry(body: &[u8], at: usize, end: usize, limit: usize) -> Result<Located, Damage> {
    let entry = body.get(at..limit).ok_or("entry offset out of place")?;
    let Header {
        key,
        value,
        ttl,
        tail,
    } = header_of(entry, at, limit).ok_or("malformed entry header")?;
    let row_len = check_key_with_tail(&body[key.clone()], tail).ok_or("malformed key")?;
    if value.end != end {
        return Err(if end == limit {
            "bytes between the last entry and the offset array"
        } else {
            "entry offset out of place"
        });
    }
    Ok(Located {
        key,
        row_len,
        tail,
        value,
        ttl,
    })
}

/// An entry's flag: a cell TTL follows the lengths.
pub(crate) const FLAG_TTL: u8 = 1;
/// An entry's flag: the key's sequence id is zero and not stored (format version 3).
pub(crate) const FLAG_NO_SEQ: u8 = 2;

/// Where an entry's key and value lie in the block's body, its TTL and its key's tail.
#[derive(Debug, PartialEq, Eq)]
struct Header {
    key: std::ops::Range<usize>,
    value: std::ops::Range<usize>,
    ttl: u64,
    tail: usize,
}

/// The tail of a key whose entry has `flags`.
fn tail_of(flags: u8) -> usize {
    if flags & FLAG_NO_SEQ == 0 {
        KEY_TAIL_LEN
    } else {
        SHORT_TAIL_LEN
    }
}

/// The header of the entry at `at` (`entry` is the body from there to `limit`): the usual
/// ones, one-byte key and value lengths and no TTL, read at once, any other by
/// [`parse_header`], which answers alike for the usual ones too.
#[inline]
fn header_of(entry: &[u8], at: usize, limit: usize) -> Option<Header> {
    match *entry {
        [key_len, value_len, flags @ (0 | FLAG_NO_SEQ), ..]
            if key_len < 0x80 && value_len < 0x80 =>
        {
            let key = at + 3;
            let value = key + usize::from(key_len);
            let value_end = value + usize::from(value_len);
            (value_end <= limit).then_some(Header {
                key: key..value,
                value: value..value_end,
                ttl: u64::MAX,
                tail: tail_of(flags),
            })
        }
        _ => parse_header(entry, at, limit),
    }
}

/// The header of the entry at `at`, in any form (varint lengths, a TTL or none, a sequence
/// id or none); the entries end at `limit`.
fn parse_header(entry: &[u8], at: usize, limit: usize) -> Option<Header> {
    let mut r = Reader::new(entry);
    let key_len = r.len()?;
    let value_len = r.len()?;
    let flags = r.u8()?;
    if flags & !(FLAG_TTL | FLAG_NO_SEQ) != 0 {
        return None;
    }
    let ttl = if flags & FLAG_TTL == 0 {
        u64::MAX
    } else {
        r.varint()?
    };
    let key = at + r.position();
    let value = key.checked_add(key_len)?;
    let value_end = value.checked_add(value_len)?;
    (value_end <= limit).then_some(Header {
        key: key..value,
        value: value..value_end,
        ttl,
        tail: tail_of(flags),
    })
}

/// A data block, searched and read where it lies: the block cache holds the body as read
/// from disk (decompressed), and nothing is decoded until a cell is built.
///
/// The body holds each entry's whole key (but a zero sequence id) and an array of every
/// entry's offset, so a search is a binary search over the entries themselves (HBase's
/// ROW_INDEX_V1 encoding, per cell rather than per row). Blocks of format version 2 are
/// version 3 blocks that leave out no sequence id and keep four-byte offsets. Blocks of the
/// first format version, whose keys were prefix-compressed, are rewritten into version 2's
/// layout when read ([`super::block::decode_legacy_data_block`]).
///
/// # Invariants
/// 1. Entry `i` fills `offset(i)..offset(i + 1)` exactly (the last one ends where the offset
///    array starts), and the first starts at 0. Only [`DataBlock::locate`] reads an entry,
///    and it checks that, the header and the key ([`check_key`]) every time; a [`RawKey`] is
///    only made of a key it checked. Nothing is checked when the block is built: a miss
///    that reads one cell then checks the dozen entries its search touched, not all of them.
/// 2. The row probes, once built, hold one window per entry, every entry having been
///    located to build them.
#[derive(Debug)]
pub struct DataBlock {
    family: Bytes,
    /// The decompressed body: entries, then the offset array and the entry count.
    body: Bytes,
    /// Where the offset array starts; the entries end here.
    offsets_at: usize,
    /// Whether the offsets are two bytes each (else four).
    narrow: bool,
    len: usize,
    /// Search accelerator: the rows of a block share a prefix; a window holds the eight row
    /// bytes after it (zero-padded) of each entry, so most steps of a search compare one
    /// `u64` in a small array instead of reaching into the body for a key. Built by the
    /// search after the first [`PLAIN_SEARCHES`].
    probes: OnceLock<RowProbes>,
    /// Searches made without the probes.
    searches: AtomicU32,
}

/// The count word's top bit: the block's offsets are two bytes each (format version 3, a
/// block whose last entry starts below 64 KiB).
pub(crate) const NARROW_OFFSETS: u32 = 1 << 31;

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
        let fetch = |i: usize| self.windows.get(i).copied().unwrap_or_default();
        // Eight windows to a 64-byte line.
        Some(partition_fetching(
            self.windows.len(),
            (8, fetch),
            |i| match self.windows[i].cmp(&w) {
                Ordering::Less => true,
                Ordering::Greater => false,
                Ordering::Equal => below(i),
            },
        ))
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
        let n = body.len();
        let count_at = n
            .checked_sub(4)
            .ok_or("block shorter than its entry count")?;
        let mut count = [0u8; 4];
        count.copy_from_slice(&body[count_at..]);
        let count = u32::from_le_bytes(count);
        let narrow = count & NARROW_OFFSETS != 0;
        let len = (count & !NARROW_OFFSETS) as usize;
        let offsets_at = len
            .checked_mul(if narrow { 2 } else { 4 })
            .and_then(|o| count_at.checked_sub(o))
            .ok_or("offset array larger than the block")?;
        let block = DataBlock {
            family,
            body,
            offsets_at,
            narrow,
            len,
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

    /// The offset array's entry `i` (`i < len`, so it lies before the count).
    fn offset(&self, i: usize) -> usize {
        if self.narrow {
            let at = self.offsets_at + 2 * i;
            let mut o = [0u8; 2];
            o.copy_from_slice(&self.body[at..at + 2]);
            usize::from(u16::from_le_bytes(o))
        } else {
            let at = self.offsets_at + 4 * i;
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
        *e = parse_entry(&self.body, self.offset(i), end, self.offsets_at)?;
        Ok(())
    }

    fn key(&self, e: &Located) -> RawKey<'_> {
        RawKey {
            key: &self.body[e.key.clone()],
            tail: e.tail,
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
        if row.is_some_and(|r| !bytes_order::equal(key.row(), r)) {
            return Some(Visible::PastRow(i));
        }
        if key.seq_id() <= read_point {
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
            cut = self.body.slice(e.key.start..e.value.end);
            (&cut, e.key.start)
        };
        let start = e.key.start + 2 - base;
        let spans = Spans {
            row: start..start + e.row_len,
            qualifier: start + e.row_len..e.key.end - e.tail - base,
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
        let (timestamp, code, seq_id) = self.key(e).tail();
        cell.timestamp = timestamp;
        cell.cell_type = CellType::from_code(code).unwrap_or(CellType::Put);
        cell.seq_id = seq_id;
        cell.ttl_ms = (e.ttl != u64::MAX).then_some(e.ttl);
    }

    fn row_range(e: &Located) -> std::ops::Range<usize> {
        e.key.start + 2..e.key.start + 2 + e.row_len
    }

    /// The row of cell `i`.
    ///
    /// # Errors
    /// The entry is damaged.
    pub fn row(&self, i: usize) -> Result<Bytes, Damage> {
        Ok(self.body.slice(Self::row_range(&self.locate(i)?)))
    }

    /// The sequence id of cell `i`.
    ///
    /// # Errors
    /// The entry is damaged.
    pub fn seq_id(&self, i: usize) -> Result<u64, Damage> {
        Ok(self.key(&self.locate(i)?).seq_id())
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
        // A block's first search comes right after it was read from disk, into the CPU's
        // caches: it has nothing to fetch ahead.
        let (probes, fresh) = match self.probes.get() {
            Some(p) => (Some(p), false),
            None => match self.searches.fetch_add(1, Relaxed) {
                0 => (None, true),
                n if n >= PLAIN_SEARCHES => {
                    // Another search may be building them too; either result will do.
                    let _ = self.probes.set(self.row_probes()?);
                    (self.probes.get(), false)
                }
                _ => (None, false),
            },
        };
        let at = match probes.and_then(|p| p.partition(&self.body, key, below)) {
            Some(at) => at,
            None if fresh => partition(self.len, below),
            None => self.plain_search(below),
        };
        damage.get().map_or(Ok(at), Err)
    }

    /// The first entry for which `below` is false, searched without the probes. The offset
    /// array's lines are fetched first, all at once, and each step fetches the entries the
    /// next may compare ([`partition_fetching`]).
    fn plain_search(&self, below: impl Fn(usize) -> bool) -> usize {
        let width = if self.narrow { 2 } else { 4 };
        let offsets = self.offsets_at..self.offsets_at + width * self.len;
        let fetched = offsets
            .step_by(64)
            .fold(0, |a, at| a ^ fetch_line(&self.body, at));
        std::hint::black_box(fetched);
        let fetch = |i: usize| fetch_line(&self.body, self.offset(i));
        partition_fetching(self.len, (0, fetch), below)
    }

    /// Every entry located, and the windows of their rows (invariant 2).
    fn row_probes(&self) -> Result<RowProbes, Damage> {
        RowProbes::of(&self.body, self.len, |i| {
            Ok(Self::row_range(&self.locate(i)?))
        })
    }

    /// Bytes held but the row probes, the block's weight when cached.
    #[must_use]
    pub fn weight(&self) -> usize {
        self.body.len() + std::mem::size_of::<DataBlock>()
    }

    /// Bytes the row probes hold: none until a search builds them. The block cache charges
    /// them at the block's next lookup, so that a block searched once or twice takes no room
    /// for probes it never builds (at 10M rows, most blocks a random Get reads).
    #[must_use]
    pub fn probe_bytes(&self) -> usize {
        self.probes
            .get()
            .map_or(0, |p| p.windows.len() * std::mem::size_of::<u64>())
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
    fn names(&self, key: RawKey<'_>, family: &[u8]) -> bool {
        match *self {
            Passing::Row(row) => bytes_order::equal(key.row(), row),
            Passing::Column { row, qualifier } => {
                bytes_order::equal(key.row(), row) && bytes_order::equal(key.qualifier(), qualifier)
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

mod index;
mod search;
#[cfg(test)]
mod tests;

pub use index::IndexKeys;
pub(super) use search::partition;
use search::{fetch_line, partition_fetching};
