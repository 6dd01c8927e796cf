//! One entry of a data block (format version 3, docs/formats/storefile.md): its encoding and
//! where a read finds its parts.
//!
//! ```text
//! entry  := row_len varint | qualifier_len varint | value_len varint | type u8 | widths u8
//!           | ts_delta (ts_width bytes) | seq_delta (seq_width bytes) | [ttl_ms varint]
//!           | row | qualifier | value
//! widths := ts_width - 1 (bits 0-2) | seq_width - 1 (bits 3-5) | TTL follows (bit 6) | 0 (bit 7)
//! ```
//!
//! The timestamp and sequence id are stored as zigzag deltas from the block's base (its first
//! cell's), little-endian, in as few bytes as they need: a cell's two eight-byte numbers take
//! five or six bytes in the blocks of a random fill of 10M rows, whose cells were written
//! near each other in time, as a block's nearly always are. A width in the header, not a varint, says how long each is, so a reader
//! takes each number with one load and a mask rather than a branch a byte.

use std::ops::Range;

use basalt_model::limits::MAX_ROW_LENGTH;

use crate::codec::{put_varint, Reader};

/// `widths` bit: a TTL follows the numbers.
const TTL_FOLLOWS: u8 = 0x40;
/// `widths` bit reserved, zero.
const RESERVED: u8 = 0x80;

/// A block's base timestamp and sequence id (its first cell's), from which every entry's are
/// deltas.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Base {
    pub ts: i64,
    pub seq: u64,
}

/// The parts of one cell to encode as an entry.
#[derive(Clone, Copy, Debug)]
pub struct Entry<'a> {
    pub row: &'a [u8],
    pub qualifier: &'a [u8],
    pub ts: i64,
    /// The cell type's code.
    pub code: u8,
    pub seq: u64,
    pub ttl: Option<u64>,
    pub value: &'a [u8],
}

/// Appends `e` to a block of base `base`.
pub fn put_entry(out: &mut Vec<u8>, base: Base, e: &Entry<'_>) {
    put_varint(out, e.row.len() as u64);
    put_varint(out, e.qualifier.len() as u64);
    put_varint(out, e.value.len() as u64);
    out.push(e.code);
    let ts = zigzag(e.ts.wrapping_sub(base.ts));
    // Reinterpreted: a sequence id below the base is a negative delta, which zigzag keeps small.
    let seq = zigzag(e.seq.wrapping_sub(base.seq) as i64);
    let (ts_width, seq_width) = (width(ts), width(seq));
    let ttl = if e.ttl.is_some() { TTL_FOLLOWS } else { 0 };
    // Widths are 1 to 8: each fits its three bits.
    out.push((ts_width - 1) | (seq_width - 1) << 3 | ttl);
    put_fixed(out, ts, ts_width);
    put_fixed(out, seq, seq_width);
    if let Some(ttl) = e.ttl {
        put_varint(out, ttl);
    }
    out.extend_from_slice(e.row);
    out.extend_from_slice(e.qualifier);
    out.extend_from_slice(e.value);
}

/// Appends the low `width` bytes of `v`, little-endian. All eight are written and the rest
/// cut off: a copy of a length known only at run time was a call to `memcpy` (a tenth of
/// encoding a block).
#[inline]
fn put_fixed(out: &mut Vec<u8>, v: u64, width: u8) {
    let end = out.len() + usize::from(width);
    out.extend_from_slice(&v.to_le_bytes());
    out.truncate(end);
}

/// Bytes `v` needs, at least one.
fn width(v: u64) -> u8 {
    let bits = 64 - v.leading_zeros();
    u8::try_from(bits.div_ceil(8).max(1)).unwrap_or(8)
}

/// Where one entry's parts lie in its block's body, and its numbers, as its header says.
/// The type code is as stored: the block's read of the entry checks it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Located {
    pub row: Range<usize>,
    pub qualifier: Range<usize>,
    pub value: Range<usize>,
    pub ts: i64,
    pub code: u8,
    pub seq: u64,
    /// Cell TTL in ms; `u64::MAX` when the cell has none.
    pub ttl: u64,
}

/// The entry at `at` of a block of base `base` (`entry` is the body from there on, which
/// may run past the entries' end, `limit`): the usual header, one-byte lengths and no TTL,
/// read at once, any other by [`parse_header`], which answers alike for the usual one too.
/// `None` when the header is malformed or the entry runs past `limit`.
#[inline]
pub fn header_of(entry: &[u8], at: usize, limit: usize, base: Base) -> Option<Located> {
    match *entry {
        [row_len, qual_len, value_len, code, widths, ..]
            if row_len < 0x80
                && qual_len < 0x80
                && value_len < 0x80
                && widths & (TTL_FOLLOWS | RESERVED) == 0 =>
        {
            let (ts, seq, row) = numbers(entry, 5, widths, base)?;
            let lens = [row_len, qual_len, value_len].map(usize::from);
            place(at + row, lens, limit, (ts, code, seq, u64::MAX))
        }
        _ => parse_header(entry, at, limit, base),
    }
}

/// The header of the entry at `at`, in any form (varint lengths, a TTL or none).
pub fn parse_header(entry: &[u8], at: usize, limit: usize, base: Base) -> Option<Located> {
    let mut r = Reader::new(entry);
    let lens = [r.len()?, r.len()?, r.len()?];
    let code = r.u8()?;
    let widths = r.u8()?;
    // A longer row is no row a cell may have, and a key could not hold it.
    if widths & RESERVED != 0 || lens[0] > MAX_ROW_LENGTH {
        return None;
    }
    let (ts, seq, end) = numbers(entry, r.position(), widths, base)?;
    r.take(end - r.position())?;
    let ttl = match widths & TTL_FOLLOWS {
        0 => u64::MAX,
        _ => r.varint()?,
    };
    place(
        at.checked_add(r.position())?,
        lens,
        limit,
        (ts, code, seq, ttl),
    )
}

/// The timestamp and sequence id whose deltas lie at `at` in `entry`, `widths` long, and
/// where they end.
#[inline(always)]
fn numbers(entry: &[u8], at: usize, widths: u8, base: Base) -> Option<(i64, u64, usize)> {
    let ts_width = usize::from(widths & 7) + 1;
    let seq_width = usize::from(widths >> 3 & 7) + 1;
    let ts = fixed(entry, at, ts_width)?;
    let seq = fixed(entry, at + ts_width, seq_width)?;
    Some((
        base.ts.wrapping_add(unzigzag(ts)),
        base.seq.wrapping_add(unzigzag(seq) as u64),
        at + ts_width + seq_width,
    ))
}

/// The little-endian number of `width` bytes (1 to 8) at `at` in `buf`. With eight bytes
/// there to load (an entry is followed at least by the block's footer), one load and a mask.
#[inline(always)]
fn fixed(buf: &[u8], at: usize, width: usize) -> Option<u64> {
    let mask = u64::MAX >> (64 - 8 * width);
    if let Some(word) = buf.get(at..).and_then(|b| b.first_chunk::<8>()) {
        return Some(u64::from_le_bytes(*word) & mask);
    }
    let bytes = buf.get(at..at.checked_add(width)?)?;
    Some(bytes.iter().rev().fold(0, |v, &b| v << 8 | u64::from(b)))
}

/// The entry whose row starts at `row`, its parts `lens` long, if it ends by `limit`.
#[inline]
fn place(
    row: usize,
    [row_len, qual_len, value_len]: [usize; 3],
    limit: usize,
    (ts, code, seq, ttl): (i64, u8, u64, u64),
) -> Option<Located> {
    let qualifier = row.checked_add(row_len)?;
    let value = qualifier.checked_add(qual_len)?;
    let end = value.checked_add(value_len)?;
    (end <= limit).then_some(Located {
        row: row..qualifier,
        qualifier: qualifier..value,
        value: value..end,
        ts,
        code,
        seq,
        ttl,
    })
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// The usual header read at once answers as the general parse does, for any bytes:
        /// the headers it reads (short lengths, no TTL), the ones beside them (a TTL, a
        /// length of 128 or more, a bad TTL flag) and any entry that ends too soon.
        #[test]
        fn a_header_read_at_once_is_the_header_parsed(
            entry in proptest::collection::vec(
                proptest::prop_oneof![0u8..3, 0x7eu8..0x82, proptest::arbitrary::any::<u8>()],
                0..200,
            ),
            at in 0usize..1000,
            ts in proptest::arbitrary::any::<i64>(),
            seq in proptest::arbitrary::any::<u64>(),
        ) {
            let limit = at + entry.len();
            let base = Base { ts, seq };
            proptest::prop_assert_eq!(
                header_of(&entry, at, limit, base),
                parse_header(&entry, at, limit, base)
            );
        }

        /// Any cell's numbers come back from any base, and its parts where they were put.
        #[test]
        fn an_entry_reads_back_as_put(
            row in proptest::collection::vec(proptest::arbitrary::any::<u8>(), 0..200),
            qualifier in proptest::collection::vec(proptest::arbitrary::any::<u8>(), 0..3),
            value in proptest::collection::vec(proptest::arbitrary::any::<u8>(), 0..300),
            (ts, base_ts) in proptest::arbitrary::any::<(i64, i64)>(),
            (seq, base_seq) in proptest::arbitrary::any::<(u64, u64)>(),
            code in proptest::arbitrary::any::<u8>(),
            ttl in proptest::option::of(proptest::arbitrary::any::<u64>()),
            at in 0usize..50,
        ) {
            let base = Base { ts: base_ts, seq: base_seq };
            let e = Entry { row: &row, qualifier: &qualifier, ts, code, seq, ttl, value: &value };
            let mut body = vec![0xAB; at];
            put_entry(&mut body, base, &e);
            let l = header_of(&body[at..], at, body.len(), base).unwrap();
            proptest::prop_assert_eq!(
                (&body[l.row], &body[l.qualifier], &body[l.value.clone()]),
                (&row[..], &qualifier[..], &value[..])
            );
            proptest::prop_assert_eq!((l.ts, l.code, l.seq), (ts, code, seq));
            proptest::prop_assert_eq!(l.ttl, ttl.unwrap_or(u64::MAX));
            proptest::prop_assert_eq!(l.value.end, body.len(), "the entry ends where it was put");
        }
    }

    #[test]
    fn deltas_near_the_base_take_few_bytes() {
        let base = Base {
            ts: 1_764_000_000_000,
            seq: 9_000_000,
        };
        let e = Entry {
            row: b"r",
            qualifier: b"q",
            ts: base.ts - 60_000,
            code: 4,
            seq: base.seq + 400_000,
            ttl: None,
            value: b"v",
        };
        let mut body = Vec::new();
        put_entry(&mut body, base, &e);
        // Five header bytes, three for the timestamp, three for the sequence id, the parts.
        assert_eq!(body.len(), 5 + 3 + 3 + 3);
    }
}
