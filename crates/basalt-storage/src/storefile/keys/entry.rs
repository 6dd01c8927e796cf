//! A data block entry's header and key, read where they lie, in both layouts a block may
//! have (docs/formats/storefile.md): whole keys (format versions 2 to 4) and compact
//! headers (version 5).
//!
//! # Invariants
//! A [`RawKey`] is only made of a key that was checked: by [`check_key`] for a whole key
//! (an index's, when the index is decoded), or by the parse of its entry for a data block's
//! (each time the entry is located). Its type code is one a cell may be stored with.

use std::cmp::Ordering;

use basalt_model::cell::compare_families;
use basalt_model::{bytes_order, Cell, CellType};

use crate::codec::Reader;

/// Timestamp, type and sequence id after the qualifier: a whole key's tail.
pub(crate) const KEY_TAIL_LEN: usize = 8 + 1 + 8;
/// The tail of a whole-key entry's key whose zero sequence id is not stored (format
/// versions 3 and 4): timestamp and type.
pub(crate) const SHORT_TAIL_LEN: usize = 8 + 1;

/// A whole-key entry's flag: a cell TTL follows the lengths.
pub(crate) const FLAG_TTL: u8 = 1;
/// A whole-key entry's flag: the key's sequence id is zero and not stored.
pub(crate) const FLAG_NO_SEQ: u8 = 2;

/// A compact entry's head: the bits of its type code.
pub(crate) const HEAD_TYPE: u8 = 0x0f;
/// A compact entry's head: a sequence id follows the timestamp (else it is zero).
pub(crate) const HEAD_SEQ: u8 = 0x10;
/// A compact entry's head: a cell TTL follows the sequence id.
pub(crate) const HEAD_TTL: u8 = 0x20;

/// What is wrong with a damaged data block, for the caller's corruption error.
pub type Damage = &'static str;

/// How a data block's entries are laid out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// Every entry holds its whole key (format versions 2 to 4; version 1's blocks are
    /// rewritten into it).
    WholeKeys,
    /// Compact headers: one byte of type and flags, varint lengths, the timestamp as a
    /// varint from the block's base (format version 5).
    Compact,
}

/// The type code of a cell that may be stored: not a search-only type.
fn storable(code: u8) -> bool {
    !matches!(
        CellType::from_code(code),
        None | Some(CellType::Minimum | CellType::Maximum)
    )
}

/// Checks a whole encoded key (`u16 row length | row | qualifier | ts | type | seq`) and
/// returns its row length.
pub fn check_key(k: &[u8]) -> Option<usize> {
    check_key_with_tail(k, KEY_TAIL_LEN)
}

/// Checks a whole encoded key whose tail (after the qualifier) is `tail` bytes long:
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
    storable(k[k.len() - tail + 8]).then_some(row_len)
}

/// A checked key's parts.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RawKey<'a> {
    pub row: &'a [u8],
    pub qualifier: &'a [u8],
    pub timestamp: i64,
    pub code: u8,
    pub seq_id: u64,
}

impl<'a> RawKey<'a> {
    /// A whole key (an index key), which [`check_key`] passed.
    pub fn whole(key: &'a [u8]) -> RawKey<'a> {
        Self::whole_with_tail(key, KEY_TAIL_LEN)
    }

    /// A whole key whose tail is `tail` bytes long, which [`check_key_with_tail`] passed.
    fn whole_with_tail(key: &'a [u8], tail: usize) -> RawKey<'a> {
        let row_len = usize::from(u16::from_be_bytes([key[0], key[1]]));
        let t = &key[key.len() - tail..];
        let mut ts = [0u8; 8];
        ts.copy_from_slice(&t[..8]);
        let seq_id = match t.get(9..KEY_TAIL_LEN) {
            Some(s) => {
                let mut seq = [0u8; 8];
                seq.copy_from_slice(s);
                u64::from_be_bytes(seq)
            }
            None => 0,
        };
        RawKey {
            row: &key[2..2 + row_len],
            qualifier: &key[2 + row_len..key.len() - tail],
            timestamp: i64::from_be_bytes(ts),
            code: t[8],
            seq_id,
        }
    }

    /// The key's order against `key` (cell.rs, invariant 1), for a key of `family`.
    pub fn cmp(self, family: &[u8], key: &Cell) -> Ordering {
        bytes_order::compare(self.row, key.row())
            .then_with(|| compare_families(family, &key.family))
            .then_with(|| bytes_order::compare(self.qualifier, key.qualifier()))
            .then_with(|| {
                key.timestamp
                    .cmp(&self.timestamp)
                    .then_with(|| key.cell_type.code().cmp(&self.code))
                    .then_with(|| key.seq_id.cmp(&self.seq_id))
            })
    }
}

/// The order of the whole encoded key `key` of `family` against `cell` (cell.rs, invariant
/// 1); `None` when [`check_key`] refuses `key`.
pub fn cmp_whole(key: &[u8], family: &[u8], cell: &Cell) -> Option<Ordering> {
    check_key(key)?;
    Some(RawKey::whole(key).cmp(family, cell))
}

/// Where one entry of a data block lies in the block's body, and its key's other parts;
/// its key is checked.
#[derive(Clone, Debug, Default)]
pub(crate) struct Located {
    pub row: std::ops::Range<usize>,
    pub qualifier: std::ops::Range<usize>,
    pub value: std::ops::Range<usize>,
    pub timestamp: i64,
    pub code: u8,
    pub seq_id: u64,
    /// Cell TTL in ms; `u64::MAX` when the cell has none.
    pub ttl: u64,
}

impl Located {
    /// The entry's key.
    pub fn key<'a>(&self, body: &'a [u8]) -> RawKey<'a> {
        RawKey {
            row: &body[self.row.clone()],
            qualifier: &body[self.qualifier.clone()],
            timestamp: self.timestamp,
            code: self.code,
            seq_id: self.seq_id,
        }
    }
}

/// Parses the entry at `at` of a block laid out as `layout` (whose timestamps count from
/// `base_ts`), which must end at `end`; the entries end at `limit`. Its key is checked.
#[inline]
pub(crate) fn parse_entry(
    body: &[u8],
    (at, end, limit): (usize, usize, usize),
    layout: Layout,
    base_ts: i64,
) -> Result<Located, Damage> {
    let entry = body.get(at..limit).ok_or("entry offset out of place")?;
    let located = match layout {
        Layout::WholeKeys => whole_key_entry(body, entry, at, limit)?,
        Layout::Compact => compact_of(entry, at, limit, base_ts).ok_or("malformed entry")?,
    };
    if located.value.end != end {
        return Err(if end == limit {
            "bytes between the last entry and the offset array"
        } else {
            "entry offset out of place"
        });
    }
    Ok(located)
}

/// A whole-key entry (`entry` is the body from `at` to `limit`).
fn whole_key_entry(body: &[u8], entry: &[u8], at: usize, limit: usize) -> Result<Located, Damage> {
    let Header {
        key,
        value,
        ttl,
        tail,
    } = header_of(entry, at, limit).ok_or("malformed entry header")?;
    let raw = &body[key.clone()];
    check_key_with_tail(raw, tail).ok_or("malformed key")?;
    let k = RawKey::whole_with_tail(raw, tail);
    let row = key.start + 2..key.start + 2 + k.row.len();
    Ok(Located {
        qualifier: row.end..row.end + k.qualifier.len(),
        row,
        value,
        timestamp: k.timestamp,
        code: k.code,
        seq_id: k.seq_id,
        ttl,
    })
}

/// Where a whole-key entry's key and value lie in the block's body, its TTL and its key's
/// tail.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Header {
    key: std::ops::Range<usize>,
    value: std::ops::Range<usize>,
    ttl: u64,
    tail: usize,
}

/// The tail of a key whose whole-key entry has `flags`.
fn tail_of(flags: u8) -> usize {
    if flags & FLAG_NO_SEQ == 0 {
        KEY_TAIL_LEN
    } else {
        SHORT_TAIL_LEN
    }
}

/// The header of the whole-key entry at `at` (`entry` is the body from there to `limit`):
/// the usual ones, one-byte key and value lengths and no TTL, read at once, any other by
/// [`parse_header`], which answers alike for the usual ones too.
#[inline]
pub(crate) fn header_of(entry: &[u8], at: usize, limit: usize) -> Option<Header> {
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

/// The header of the whole-key entry at `at`, in any form (varint lengths, a TTL or none, a
/// sequence id or none); the entries end at `limit`.
pub(crate) fn parse_header(entry: &[u8], at: usize, limit: usize) -> Option<Header> {
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

/// A timestamp's distance from its block's base, as stored: zigzag, so that timestamps
/// just below the base are as short as those just above.
pub(crate) fn zigzag(ts: i64, base: i64) -> u64 {
    let d = ts.wrapping_sub(base);
    ((d << 1) ^ (d >> 63)) as u64
}

/// The timestamp `zigzag` stored for `base`.
fn unzigzag(z: u64, base: i64) -> i64 {
    let d = (z >> 1) as i64 ^ -((z & 1) as i64);
    base.wrapping_add(d)
}

/// The compact entry at `at` (`entry` is the body from there to `limit`), its timestamps
/// counting from `base_ts`: `head u8 | row_len varint | qualifier_len varint | value_len
/// varint | ts varint | [seq_id varint] | [ttl_ms varint] | row | qualifier | value`.
/// `None` when malformed.
#[inline]
pub(crate) fn compact_of(entry: &[u8], at: usize, limit: usize, base_ts: i64) -> Option<Located> {
    let mut r = Reader::new(entry);
    let head = r.u8()?;
    let (row_len, q_len, value_len) = (r.len()?, r.len()?, r.len()?);
    if head & !(HEAD_TYPE | HEAD_SEQ | HEAD_TTL) != 0 || !storable(head & HEAD_TYPE) {
        return None;
    }
    let timestamp = unzigzag(r.varint()?, base_ts);
    let seq_id = if head & HEAD_SEQ == 0 { 0 } else { r.varint()? };
    let ttl = if head & HEAD_TTL == 0 {
        u64::MAX
    } else {
        r.varint()?
    };
    let row = at + r.position();
    let qualifier = row.checked_add(row_len)?;
    let value = qualifier.checked_add(q_len)?;
    let value_end = value.checked_add(value_len)?;
    (value_end <= limit).then_some(Located {
        row: row..qualifier,
        qualifier: qualifier..value,
        value: value..value_end,
        timestamp,
        code: head & HEAD_TYPE,
        seq_id,
        ttl,
    })
}
