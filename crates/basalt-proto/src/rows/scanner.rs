//! A scanner's answers (`OpenScannerResponse`, `NextResponse`): their repeated `Result`
//! field, as rows already encoded by a server's scanner ([`EncodedRows`]) and as rows
//! decoded by a client, each row a `Result` body as the parent module writes and reads it.

use basalt_model::{Cell, RowResult};
use bytes::{Buf, BufMut};
use prost::encoding::{
    bool as pbool, encoded_len_varint, key_len, message, skip_field, uint64, DecodeContext,
    WireType,
};
use prost::{DecodeError, Message};

use super::{
    encode_parts, encode_row, parts_len, put_key, put_varint, put_varint_field, row_len, RowMessage,
};

fn rows_len(tag: u32, rows: &[RowResult]) -> usize {
    rows.iter()
        .map(|r| {
            let len = row_len(r);
            key_len(tag) + encoded_len_varint(len as u64) + len
        })
        .sum()
}

fn encode_rows(tag: u8, rows: &[RowResult], buf: &mut impl BufMut) {
    for r in rows {
        put_key(tag, WireType::LengthDelimited, buf);
        put_varint(row_len(r) as u64, buf);
        encode_row(r, buf);
    }
}

/// Decodes one more row of a list. The row is moved into the list once decoded: a row is a
/// few words (its cells are on the heap), where a cell is decoded in place.
fn merge_rows(
    rows: &mut Vec<RowResult>,
    wire_type: WireType,
    buf: &mut impl Buf,
    ctx: DecodeContext,
) -> Result<(), DecodeError> {
    let mut row = RowMessage::default();
    message::merge(wire_type, &mut row, buf, ctx)?;
    rows.push(row.0);
    Ok(())
}

/// Rows encoded as they are read, for an answer's repeated `Result` field: a server's
/// scanner reads each row into the same vector and its cells are encoded where they lie,
/// where collecting the rows first kept a vector a row (and a count a cell on its block)
/// until the answer was written, and each row's length was summed once more for the
/// answer's. Each row is its length and its `Result` body; the field's key goes before it
/// as the answer is written.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EncodedRows {
    /// The rows, each whole in one chunk. A chunk is never grown past the capacity it was
    /// made with: a row that does not fit starts the next. One vector grown to an answer's
    /// size copied all it held at each doubling, into new memory the kernel zeroed: 7.7% of
    /// the server's instructions in YCSB E (`BENCHMARKS.md`).
    chunks: Vec<Vec<u8>>,
    /// Each row's chunk and where the row ends in it.
    ends: Vec<(usize, usize)>,
    /// The bytes of every chunk.
    bytes: usize,
}

/// The capacity a chunk is made with, unless its first row is larger: most scanner calls'
/// answers fit in one (YCSB's rows are about 1.1 KiB).
const CHUNK: usize = 64 << 10;

impl EncodedRows {
    /// Encodes one more result, `cells` (at least one: a result's row is its first cell's)
    /// and whether it is `partial`.
    pub fn push(&mut self, cells: &[Cell], partial: bool) {
        let row = cells.first().map_or(&[][..], Cell::row);
        let body = parts_len(row, cells, partial);
        let len = encoded_len_varint(body as u64) + body;
        if self
            .chunks
            .last()
            .is_none_or(|c| c.capacity() - c.len() < len)
        {
            self.chunks.push(Vec::with_capacity(len.max(CHUNK)));
        }
        let at = self.chunks.len() - 1;
        let chunk = &mut self.chunks[at];
        put_varint(body as u64, chunk);
        encode_parts(row, cells, partial, chunk);
        self.bytes += len;
        self.ends.push((at, chunk.len()));
    }

    /// The rows encoded.
    #[must_use]
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Whether no row is.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    fn encoded_len(&self, tag: u32) -> usize {
        self.ends.len() * key_len(tag) + self.bytes
    }

    fn encode(&self, tag: u8, buf: &mut impl BufMut) {
        let mut start = (0, 0);
        for &(chunk, end) in &self.ends {
            if chunk != start.0 {
                start = (chunk, 0);
            }
            put_key(tag, WireType::LengthDelimited, buf);
            buf.put_slice(&self.chunks[chunk][start.1..end]);
            start.1 = end;
        }
    }
}

/// A scanner's first rows with its id, as a `pb::OpenScannerResponse`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct OpenedScanner {
    pub id: u64,
    /// The rows, decoded (a client's) or to encode.
    pub results: Vec<RowResult>,
    /// Rows encoded already (a server's), written before `results`; a decoder leaves it
    /// empty.
    pub encoded: EncodedRows,
    /// The results were the scanner's last: it is closed already.
    pub done: bool,
}

impl Message for OpenedScanner {
    fn encode_raw(&self, buf: &mut impl BufMut) {
        if self.id != 0 {
            put_varint_field(1, self.id, buf);
        }
        self.encoded.encode(2, buf);
        encode_rows(2, &self.results, buf);
        if self.done {
            put_varint_field(3, 1, buf);
        }
    }

    fn merge_field(
        &mut self,
        tag: u32,
        wire_type: WireType,
        buf: &mut impl Buf,
        ctx: DecodeContext,
    ) -> Result<(), DecodeError> {
        match tag {
            1 => uint64::merge(wire_type, &mut self.id, buf, ctx),
            2 => merge_rows(&mut self.results, wire_type, buf, ctx),
            3 => pbool::merge(wire_type, &mut self.done, buf, ctx),
            _ => skip_field(wire_type, tag, buf, ctx),
        }
    }

    fn encoded_len(&self) -> usize {
        (if self.id == 0 {
            0
        } else {
            uint64::encoded_len(1, &self.id)
        }) + self.encoded.encoded_len(2)
            + rows_len(2, &self.results)
            + if self.done {
                pbool::encoded_len(3, &true)
            } else {
                0
            }
    }

    fn clear(&mut self) {
        *self = OpenedScanner::default();
    }
}

/// A scanner's next rows, as a `pb::NextResponse`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ScannedRows {
    /// The rows, decoded (a client's) or to encode.
    pub results: Vec<RowResult>,
    /// Rows encoded already (a server's), written before `results`; a decoder leaves it
    /// empty.
    pub encoded: EncodedRows,
    /// The scanner is exhausted (and closed on the server).
    pub done: bool,
}

impl Message for ScannedRows {
    fn encode_raw(&self, buf: &mut impl BufMut) {
        self.encoded.encode(1, buf);
        encode_rows(1, &self.results, buf);
        if self.done {
            put_varint_field(2, 1, buf);
        }
    }

    fn merge_field(
        &mut self,
        tag: u32,
        wire_type: WireType,
        buf: &mut impl Buf,
        ctx: DecodeContext,
    ) -> Result<(), DecodeError> {
        match tag {
            1 => merge_rows(&mut self.results, wire_type, buf, ctx),
            2 => pbool::merge(wire_type, &mut self.done, buf, ctx),
            _ => skip_field(wire_type, tag, buf, ctx),
        }
    }

    fn encoded_len(&self) -> usize {
        self.encoded.encoded_len(1)
            + rows_len(1, &self.results)
            + if self.done {
                pbool::encoded_len(2, &true)
            } else {
                0
            }
    }

    fn clear(&mut self) {
        *self = ScannedRows::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::convert::result_to_pb;
    use crate::pb;
    use basalt_model::CellType;
    use bytes::Bytes;

    /// A row past a chunk's room starts the next chunk, and a row larger than a chunk has
    /// one of its own; the answer is still the generated message's bytes, its rows in order.
    #[test]
    fn rows_across_chunks_are_the_generated_messages() {
        let sizes = [CHUNK / 2, CHUNK / 2, 10, 2 * CHUNK, 10, CHUNK - 100];
        let rows: Vec<RowResult> = (0u8..)
            .zip(sizes)
            .map(|(i, len)| {
                let row = Bytes::from(vec![b'r', i]);
                let cell = Cell::from(basalt_model::CellParts {
                    row: row.clone(),
                    family: Bytes::from_static(b"f"),
                    qualifier: Bytes::from(vec![b'q', i]),
                    timestamp: i64::from(i),
                    cell_type: CellType::Put,
                    seq_id: 0,
                    value: vec![i; len].into(),
                    ttl_ms: None,
                });
                RowResult::new(row, vec![cell])
            })
            .collect();
        let mut encoded = EncodedRows::default();
        for r in &rows {
            encoded.push(&r.cells, false);
        }
        assert!(encoded.chunks.len() >= 3, "{} chunks", encoded.chunks.len());
        let next = ScannedRows {
            encoded,
            done: true,
            ..ScannedRows::default()
        };
        let want = pb::NextResponse {
            results: rows.iter().map(result_to_pb).collect(),
            done: true,
        };
        let bytes = next.encode_to_vec();
        assert_eq!(bytes.len(), next.encoded_len());
        assert!(
            bytes == want.encode_to_vec(),
            "the generated message's bytes"
        );
    }
}
