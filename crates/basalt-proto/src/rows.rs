//! The answers that carry rows (`Result`, `OpenScannerResponse`, `NextResponse`) encoded
//! straight from the data model's rows and decoded straight into them.
//!
//! Through the generated messages, every cell of an answer was moved into a `pb::Cell` of a
//! vector of its own before it was encoded, and its lengths were summed once for the whole
//! answer and again for each row's and cell's length prefix; a client decoded each cell into
//! a `pb::Cell` and then moved it into a model cell. A scan answer holds hundreds of cells.
//! Here a row is encoded from its cells where they lie, each cell's length computed once per
//! pass, and a client decodes each cell in place in its row. A scanner's answers, their rows
//! encoded as the scanner reads them, are in `rows/scanner.rs`.
//!
//! # Invariants
//! 1. The bytes are exactly what prost writes for the generated message of the same content
//!    (`convert::result_to_pb`), field by field in tag order: the property test below holds
//!    the two encodings equal, and old peers read them unchanged.
//! 2. Decoding accepts what the generated decoder accepts and yields what
//!    `convert::result_from_pb` made of it; a cell type the model does not know is a decode
//!    error (it was the conversion's error).

use basalt_model::{Cell, CellType, RowResult, Spans};
use bytes::{Buf, BufMut, Bytes};
use prost::encoding::{
    bool as pbool, bytes as pbytes, check_wire_type, decode_key, decode_varint, encoded_len_varint,
    int32, int64, key_len, skip_field, uint64, DecodeContext, WireType,
};
use prost::{DecodeError, Message};

mod scanner;

pub use scanner::{EncodedRows, OpenedScanner, ScannedRows};

/// A cell type's code on the wire (`pb::CellType`); the bounds of a key are never sent and
/// go as a Put, as `convert::cell_into_pb` sends them.
fn type_code(t: CellType) -> u8 {
    match t {
        CellType::Delete => 1,
        CellType::DeleteColumn => 2,
        CellType::DeleteFamily => 3,
        CellType::DeleteFamilyVersion => 4,
        _ => 0,
    }
}

// `DecodeError::new` is prost's only way for a message to refuse a field's value; it is
// marked for removal, and a prost that removes it will say so here at build time.
#[allow(deprecated)]
fn malformed(what: &'static str) -> DecodeError {
    DecodeError::new(what)
}

fn type_of(code: i32) -> Result<CellType, DecodeError> {
    Ok(match code {
        0 => CellType::Put,
        1 => CellType::Delete,
        2 => CellType::DeleteColumn,
        3 => CellType::DeleteFamily,
        4 => CellType::DeleteFamilyVersion,
        _ => return Err(malformed("unknown cell type")),
    })
}

/// A cell's fields as a `pb::Cell` carries them, read from the cell once: its length and
/// its encoding both come from here, where each had read the cell's parts through their
/// checked accessors again.
struct WireCell<'a> {
    row: &'a [u8],
    family: &'a [u8],
    qualifier: &'a [u8],
    value: &'a [u8],
    timestamp: i64,
    code: u8,
    ttl_ms: Option<u64>,
}

impl<'a> WireCell<'a> {
    #[inline]
    fn of(c: &'a Cell) -> WireCell<'a> {
        WireCell {
            row: c.row(),
            family: &c.family,
            qualifier: c.qualifier(),
            value: c.value(),
            timestamp: c.timestamp,
            code: type_code(c.cell_type),
            ttl_ms: c.ttl_ms,
        }
    }

    /// The message's length.
    #[inline]
    fn len(&self) -> usize {
        bytes_len(1, self.row)
            + bytes_len(2, self.family)
            + bytes_len(3, self.qualifier)
            + if self.timestamp == 0 {
                0
            } else {
                int64::encoded_len(4, &self.timestamp)
            }
            + if self.code == 0 {
                0
            } else {
                key_len(5) + encoded_len_varint(u64::from(self.code))
            }
            + bytes_len(6, self.value)
            + self.ttl_ms.map_or(0, |t| uint64::encoded_len(7, &t))
    }

    /// The message, its fields in tag order and those at their default left out, as prost
    /// writes them.
    #[inline]
    fn encode(&self, buf: &mut impl BufMut) {
        let bytes = |tag, b: &[u8], buf: &mut _| {
            if !b.is_empty() {
                encode_bytes(tag, b, buf);
            }
        };
        bytes(1, self.row, buf);
        bytes(2, self.family, buf);
        bytes(3, self.qualifier, buf);
        if self.timestamp != 0 {
            // As prost writes an int64: its two's complement bits.
            put_varint_field(4, self.timestamp as u64, buf);
        }
        if self.code != 0 {
            put_varint_field(5, u64::from(self.code), buf);
        }
        bytes(6, self.value, buf);
        if let Some(t) = self.ttl_ms {
            put_varint_field(7, t, buf);
        }
    }
}

/// Field `tag`'s key of `wire_type`: one byte, as every tag written here is below 16.
fn put_key(tag: u8, wire_type: WireType, buf: &mut impl BufMut) {
    buf.put_u8(key_byte(tag, wire_type));
}

/// Field `tag`'s key of `wire_type` as its one byte.
fn key_byte(tag: u8, wire_type: WireType) -> u8 {
    debug_assert!(tag < 16, "a one-byte key");
    (tag << 3) | wire_type as u8
}

/// `v` as a varint, a byte at a time. prost's `encode_varint` was not inlined into the
/// encoders below: an answer of ten cells made 140 calls of it, a third of its encoding.
#[inline]
fn put_varint(mut v: u64, buf: &mut impl BufMut) {
    while v >= 0x80 {
        buf.put_u8((v as u8) | 0x80);
        v >>= 7;
    }
    buf.put_u8(v as u8);
}

/// A varint field.
fn put_varint_field(tag: u8, v: u64, buf: &mut impl BufMut) {
    put_key(tag, WireType::Varint, buf);
    put_varint(v, buf);
}

/// A bytes field, copied from where it lies. prost's `bytes::encode` copies a `Bytes` by
/// cloning it, an atomic count up and down for every field of every cell of an answer.
#[inline]
fn encode_bytes(tag: u8, b: &[u8], buf: &mut impl BufMut) {
    match u8::try_from(b.len()) {
        // The key and a one-byte length in one write.
        Ok(len) if len < 0x80 => buf.put_slice(&[key_byte(tag, WireType::LengthDelimited), len]),
        _ => {
            put_key(tag, WireType::LengthDelimited, buf);
            put_varint(b.len() as u64, buf);
        }
    }
    buf.put_slice(b);
}

/// Cell `msg` (a `pb::Cell`'s bytes) as a cell sharing them: its row, qualifier and value are
/// found where they lie in the message (cell.rs, invariant 4), so a decoded cell costs one
/// count on the answer's buffer and one for its family, and no copy. As prost decodes a
/// message, the last of repeated fields wins, unknown fields are skipped, and only the type
/// code that stands is checked.
fn decode_cell(msg: Bytes, ctx: &DecodeContext) -> Result<Cell, DecodeError> {
    let mut rest: &[u8] = &msg;
    let (mut row, mut family, mut qualifier, mut value) = (0..0, 0..0, 0..0, 0..0);
    let (mut timestamp, mut code, mut ttl_ms) = (0i64, 0i32, None);
    while rest.has_remaining() {
        let (tag, wire_type) = decode_key(&mut rest)?;
        let field = match tag {
            1 => &mut row,
            2 => &mut family,
            3 => &mut qualifier,
            6 => &mut value,
            4 => {
                int64::merge(wire_type, &mut timestamp, &mut rest, ctx.clone())?;
                continue;
            }
            5 => {
                int32::merge(wire_type, &mut code, &mut rest, ctx.clone())?;
                continue;
            }
            7 => {
                uint64::merge(wire_type, ttl_ms.get_or_insert(0), &mut rest, ctx.clone())?;
                continue;
            }
            _ => {
                skip_field(wire_type, tag, &mut rest, ctx.clone())?;
                continue;
            }
        };
        check_wire_type(WireType::LengthDelimited, wire_type)?;
        let len = usize::try_from(decode_varint(&mut rest)?)
            .ok()
            .filter(|&len| len <= rest.len())
            .ok_or_else(|| malformed("buffer underflow"))?;
        let start = msg.len() - rest.len();
        *field = start..start + len;
        rest.advance(len);
    }
    let family = msg.slice(family);
    let spans = Spans {
        row,
        qualifier,
        value,
    };
    let mut cell = Cell::in_buffer(msg, &spans, family)
        .ok_or_else(|| malformed("a cell larger than 4 GiB"))?;
    cell.timestamp = timestamp;
    cell.cell_type = type_of(code)?;
    cell.ttl_ms = ttl_ms;
    Ok(cell)
}

/// The body of a `Result` message for `r`, and its length.
fn row_len(r: &RowResult) -> usize {
    parts_len(r.row(), &r.cells, r.partial)
}

/// [`row_len`] of a result given by its parts: its row, its cells, whether it is partial.
fn parts_len(row: &[u8], cells: &[Cell], partial: bool) -> usize {
    let cells: usize = cells
        .iter()
        .map(|c| {
            let len = WireCell::of(c).len();
            key_len(2) + encoded_len_varint(len as u64) + len
        })
        .sum();
    bytes_len(1, row)
        + cells
        + if partial {
            pbool::encoded_len(3, &true)
        } else {
            0
        }
}

/// The length of bytes field `tag` holding `b`: nothing when empty (proto3 leaves it out).
fn bytes_len(tag: u32, b: &[u8]) -> usize {
    if b.is_empty() {
        0
    } else {
        key_len(tag) + encoded_len_varint(b.len() as u64) + b.len()
    }
}

fn encode_row(r: &RowResult, buf: &mut impl BufMut) {
    encode_parts(r.row(), &r.cells, r.partial, buf);
}

/// [`encode_row`] of a result given by its parts.
fn encode_parts(row: &[u8], cells: &[Cell], partial: bool, buf: &mut impl BufMut) {
    if !row.is_empty() {
        encode_bytes(1, row, buf);
    }
    for c in cells {
        put_key(2, WireType::LengthDelimited, buf);
        let cell = WireCell::of(c);
        put_varint(cell.len() as u64, buf);
        cell.encode(buf);
    }
    if partial {
        put_varint_field(3, 1, buf);
    }
}

fn merge_row_field(
    r: &mut RowResult,
    tag: u32,
    wire_type: WireType,
    buf: &mut impl Buf,
    ctx: DecodeContext,
) -> Result<(), DecodeError> {
    match tag {
        1 => pbytes::merge(wire_type, r.kept_row_mut(), buf, ctx),
        2 => {
            check_wire_type(WireType::LengthDelimited, wire_type)?;
            let len = usize::try_from(decode_varint(buf)?)
                .ok()
                .filter(|&len| len <= buf.remaining())
                .ok_or_else(|| malformed("buffer underflow"))?;
            r.cells.push(decode_cell(buf.copy_to_bytes(len), &ctx)?);
            Ok(())
        }
        3 => pbool::merge(wire_type, &mut r.partial, buf, ctx),
        _ => skip_field(wire_type, tag, buf, ctx),
    }
}

/// A row as a `pb::Result` (the answer to a Get, and each result of a scan).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RowMessage(pub RowResult);

impl Message for RowMessage {
    fn encode_raw(&self, buf: &mut impl BufMut) {
        encode_row(&self.0, buf);
    }

    fn merge_field(
        &mut self,
        tag: u32,
        wire_type: WireType,
        buf: &mut impl Buf,
        ctx: DecodeContext,
    ) -> Result<(), DecodeError> {
        merge_row_field(&mut self.0, tag, wire_type, buf, ctx)
    }

    fn encoded_len(&self) -> usize {
        row_len(&self.0)
    }

    fn clear(&mut self) {
        self.0 = RowResult::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::convert::{result_from_pb, result_to_pb};
    use crate::pb;
    use proptest::prelude::*;

    fn cell() -> impl Strategy<Value = Cell> {
        (
            proptest::collection::vec(any::<u8>(), 0..6),
            proptest::collection::vec(any::<u8>(), 0..4),
            proptest::collection::vec(any::<u8>(), 0..4),
            prop_oneof![Just(0i64), Just(-1), any::<i64>()],
            0..7u8,
            // Short values, and values on both sides of a one-byte length (127 and 128).
            prop_oneof![
                proptest::collection::vec(any::<u8>(), 0..9),
                proptest::collection::vec(any::<u8>(), 120..140),
            ],
            proptest::option::of(prop_oneof![Just(0u64), any::<u64>()]),
        )
            .prop_map(|(row, family, qualifier, timestamp, t, value, ttl_ms)| {
                Cell::from(basalt_model::CellParts {
                    row: row.into(),
                    family: family.into(),
                    qualifier: qualifier.into(),
                    timestamp,
                    cell_type: [
                        CellType::Put,
                        CellType::Delete,
                        CellType::DeleteColumn,
                        CellType::DeleteFamily,
                        CellType::DeleteFamilyVersion,
                        CellType::Minimum,
                        CellType::Maximum,
                    ][usize::from(t)],
                    seq_id: 0,
                    value: value.into(),
                    ttl_ms,
                })
            })
    }

    fn row() -> impl Strategy<Value = RowResult> {
        (
            proptest::collection::vec(any::<u8>(), 0..6),
            proptest::collection::vec(cell(), 0..5),
            any::<bool>(),
        )
            .prop_map(|(row, cells, partial)| {
                let row = Bytes::from(row);
                // Every cell of the result's row, as a read makes them.
                let cells = cells
                    .into_iter()
                    .map(|c| {
                        let mut parts = c.into_parts();
                        parts.row = row.clone();
                        Cell::from(parts)
                    })
                    .collect();
                let mut r = RowResult::new(row, cells);
                r.partial = partial;
                r
            })
    }

    /// What a row reads back as through the generated messages: the model's bounds of a key
    /// go as Puts.
    fn through_pb(r: &RowResult) -> RowResult {
        result_from_pb(result_to_pb(r)).unwrap()
    }

    proptest! {
        /// Invariants 1 and 2: the same bytes as the generated messages, read back the same.
        #[test]
        fn rows_encode_as_the_generated_messages_do(
            rows in proptest::collection::vec(row(), 0..4),
            id in prop_oneof![Just(0u64), any::<u64>()],
            done in any::<bool>(),
        ) {
            let pb_rows: Vec<pb::Result> = rows.iter().map(result_to_pb).collect();
            let read: Vec<RowResult> = rows.iter().map(through_pb).collect();
            for (r, p) in rows.iter().zip(&pb_rows) {
                let bytes = RowMessage(r.clone()).encode_to_vec();
                prop_assert_eq!(&bytes, &p.encode_to_vec());
                prop_assert_eq!(bytes.len(), RowMessage(r.clone()).encoded_len());
                let back = RowMessage::decode(Bytes::from(bytes)).unwrap().0;
                prop_assert_eq!(back, through_pb(r));
            }
            let opened = OpenedScanner { id, results: rows.clone(), done, ..OpenedScanner::default() };
            let want = pb::OpenScannerResponse { id, results: pb_rows.clone(), done };
            let bytes = opened.encode_to_vec();
            prop_assert_eq!(&bytes, &want.encode_to_vec());
            prop_assert_eq!(bytes.len(), opened.encoded_len());
            let back = OpenedScanner::decode(Bytes::from(bytes)).unwrap();
            prop_assert_eq!(back, OpenedScanner { id, results: read.clone(), done, ..OpenedScanner::default() });
            let next = ScannedRows { results: rows, done, ..ScannedRows::default() };
            let want = pb::NextResponse { results: pb_rows, done };
            let bytes = next.encode_to_vec();
            prop_assert_eq!(&bytes, &want.encode_to_vec());
            let back = ScannedRows::decode(Bytes::from(bytes)).unwrap();
            prop_assert_eq!(back, ScannedRows { results: read, done, ..ScannedRows::default() });
        }

        /// Rows encoded as a scan reads them (`EncodedRows`), before rows given whole: the
        /// generated messages' bytes for all of them in order, their length as told, and
        /// read back as the rows.
        #[test]
        fn rows_encoded_as_read_are_the_generated_messages(
            rows in proptest::collection::vec(row(), 0..5),
            split in any::<proptest::sample::Index>(),
            id in prop_oneof![Just(0u64), any::<u64>()],
            done in any::<bool>(),
        ) {
            // A scan's results have cells, and their row is their first cell's.
            let rows: Vec<RowResult> = rows.into_iter().filter(|r| !r.cells.is_empty()).collect();
            let (first, rest) = rows.split_at(split.index(rows.len() + 1));
            let mut encoded = EncodedRows::default();
            for r in first {
                encoded.push(&r.cells, r.partial);
            }
            prop_assert_eq!(encoded.len(), first.len());
            let pb_rows: Vec<pb::Result> = rows.iter().map(result_to_pb).collect();
            let read: Vec<RowResult> = rows.iter().map(through_pb).collect();
            let next = ScannedRows { results: rest.to_vec(), encoded: encoded.clone(), done };
            let want = pb::NextResponse { results: pb_rows.clone(), done };
            let bytes = next.encode_to_vec();
            prop_assert_eq!(&bytes, &want.encode_to_vec());
            prop_assert_eq!(bytes.len(), next.encoded_len());
            let back = ScannedRows::decode(Bytes::from(bytes)).unwrap();
            prop_assert_eq!(back, ScannedRows { results: read.clone(), done, ..ScannedRows::default() });
            let opened = OpenedScanner { id, results: rest.to_vec(), encoded, done };
            let want = pb::OpenScannerResponse { id, results: pb_rows, done };
            let bytes = opened.encode_to_vec();
            prop_assert_eq!(&bytes, &want.encode_to_vec());
            prop_assert_eq!(bytes.len(), opened.encoded_len());
            let back = OpenedScanner::decode(Bytes::from(bytes)).unwrap();
            prop_assert_eq!(back, OpenedScanner { id, results: read, done, ..OpenedScanner::default() });
        }

        /// Damaged answers (a byte changed, the end cut off) and any bytes: decoded as the
        /// generated messages and converted, or refused where either refuses; never a panic.
        #[test]
        fn damaged_answers_decode_as_the_generated_messages_do(
            rows in proptest::collection::vec(row(), 1..3),
            at in any::<proptest::sample::Index>(),
            byte in any::<u8>(),
            cut in any::<proptest::sample::Index>(),
            noise in proptest::collection::vec(any::<u8>(), 0..64),
        ) {
            let mut damaged = ScannedRows { results: rows, done: true, ..ScannedRows::default() }.encode_to_vec();
            let i = at.index(damaged.len());
            damaged[i] = byte;
            let mut cut_short = damaged.clone();
            cut_short.truncate(cut.index(damaged.len()));
            for bytes in [damaged, cut_short, noise] {
                let generated = pb::NextResponse::decode(&bytes[..]).ok().and_then(|n| {
                    let results: Result<Vec<_>, _> =
                        n.results.into_iter().map(result_from_pb).collect();
                    results.ok().map(|results| ScannedRows { results, done: n.done, ..ScannedRows::default() })
                });
                prop_assert_eq!(ScannedRows::decode(Bytes::from(bytes)).ok(), generated);
            }
        }
    }

    /// A row of one cell `r/f:q@1 = v`, encoded, with `more` fields added to its cell (the
    /// cell is the row's last field, so they go at the end and its length grows by theirs).
    fn one_cell_with(more: &[u8]) -> Vec<u8> {
        let mut bytes = RowMessage(RowResult::new(
            Bytes::from_static(b"r"),
            vec![Cell::put("r", "f", "q", 1, "v")],
        ))
        .encode_to_vec();
        let cell_len_at = bytes.iter().position(|&b| b == (2 << 3 | 2)).unwrap() + 1;
        bytes[cell_len_at] += u8::try_from(more.len()).unwrap();
        bytes.extend_from_slice(more);
        bytes
    }

    /// The last of a repeated type field stands, whatever came before it (found by the
    /// damaged-answers property: a changed byte made a second type field).
    #[test]
    fn a_cell_type_read_twice_is_the_last_one() {
        // An unknown type, then Delete.
        let bytes = one_cell_with(&[5 << 3, 9, 5 << 3, 1]);
        let back = RowMessage::decode(Bytes::from(bytes.clone())).unwrap().0;
        assert_eq!(back.cells[0].cell_type, CellType::Delete);
        let generated = pb::Result::decode(&bytes[..]).unwrap();
        assert_eq!(back, result_from_pb(generated).unwrap());
    }

    /// A cell's bytes fields read where they lie: the last of a repeated one stands, and an
    /// unknown field between them is passed over, as the generated decoder does.
    #[test]
    fn a_cell_field_read_twice_is_the_last_one_and_unknown_fields_are_passed() {
        let bytes = one_cell_with(
            &[
                &[1 << 3 | 2, 2, b'x', b'y'][..], // the row again
                &[9 << 3, 0x96, 0x01],            // an unknown varint field
                &[15 << 3 | 2, 3, 1, 2, 3],       // an unknown bytes field
                &[6 << 3 | 2, 2, b'w', b'z'],     // the value again
                &[3 << 3 | 2, 0],                 // an empty qualifier
            ]
            .concat(),
        );
        let back = RowMessage::decode(Bytes::from(bytes.clone())).unwrap().0;
        assert_eq!(
            (
                back.cells[0].row(),
                back.cells[0].qualifier(),
                back.cells[0].value()
            ),
            (&b"xy"[..], &b""[..], &b"wz"[..])
        );
        let generated = pb::Result::decode(&bytes[..]).unwrap();
        assert_eq!(back, result_from_pb(generated).unwrap());
    }

    #[test]
    fn an_unknown_cell_type_is_a_decode_error() {
        let mut c = result_to_pb(&RowResult::new(
            Bytes::from_static(b"r"),
            vec![Cell::put("r", "f", "q", 1, "v")],
        ));
        c.cells[0].r#type = 9;
        let err = RowMessage::decode(Bytes::from(c.encode_to_vec())).unwrap_err();
        assert!(err.to_string().contains("unknown cell type"), "{err}");
    }
}
