//! Encoding of WAL records and edits (docs/formats/wal.md).

use std::path::Path;

use basalt_model::{Cell, CellType, Error, Result, Spans};
use bytes::Bytes;

use crate::codec::{put_bytes, put_varint, Reader};

/// Segment magic: never change.
pub const MAGIC: &[u8; 8] = b"BSLTWAL\0";
/// Segment format version.
pub const VERSION: u32 = 1;
/// Header length: magic plus version.
pub const HEADER_LEN: usize = 12;
/// Record header: length, checksum of the length, checksum of the payload.
pub const RECORD_HEADER_LEN: usize = 12;
/// Largest payload a reader accepts.
pub const MAX_PAYLOAD_LEN: usize = 256 << 20;
/// Payload kind of an edit: never renumber.
const KIND_EDIT: u8 = 1;

/// All cells of one row mutation of one region.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WalEdit {
    pub region_id: u64,
    pub seq_id: u64,
    pub cells: Vec<Cell>,
}

/// The segment header bytes.
#[must_use]
pub fn header() -> Vec<u8> {
    let mut h = MAGIC.to_vec();
    h.extend_from_slice(&VERSION.to_le_bytes());
    h
}

/// Appends one framed record holding `edit` to `out`.
pub fn encode_record(out: &mut Vec<u8>, region_id: u64, seq_id: u64, cells: &[Cell]) {
    let start = out.len();
    out.extend_from_slice(&[0; RECORD_HEADER_LEN]);
    out.push(KIND_EDIT);
    put_varint(out, region_id);
    put_varint(out, seq_id);
    put_varint(out, cells.len() as u64);
    for c in cells {
        put_bytes(out, &c.family);
        put_bytes(out, c.row());
        put_bytes(out, c.qualifier());
        out.extend_from_slice(&c.timestamp.to_be_bytes());
        out.push(c.cell_type.code());
        match c.ttl_ms {
            Some(ttl) => {
                out.push(1);
                put_varint(out, ttl);
            }
            None => out.push(0),
        }
        put_bytes(out, c.value());
    }
    let payload = &out[start + RECORD_HEADER_LEN..];
    let len = u32::try_from(payload.len()).expect("a WAL edit is bounded by the cell size limit");
    let crc = crate::checksum::crc32c(payload);
    let len = len.to_le_bytes();
    out[start..start + 4].copy_from_slice(&len);
    out[start + 4..start + 8].copy_from_slice(&crate::checksum::crc32c(&len).to_le_bytes());
    out[start + 8..start + 12].copy_from_slice(&crc.to_le_bytes());
}

/// Decodes an edit payload (already checksummed).
///
/// # Errors
/// `Corruption` naming `path` and `offset` when the payload is malformed.
pub fn decode_edit(payload: &[u8], path: &Path, offset: u64) -> Result<WalEdit> {
    let bad =
        |what: &str| Error::corruption("WAL record", path, format!("{what} at offset {offset}"));
    let mut r = Reader::new(payload);
    let kind = r.u8().ok_or_else(|| bad("empty payload"))?;
    if kind != KIND_EDIT {
        return Err(bad(&format!("unknown record kind {kind}")));
    }
    let region_id = r.varint().ok_or_else(|| bad("truncated region id"))?;
    let seq_id = r.varint().ok_or_else(|| bad("truncated sequence id"))?;
    let n = r.len().ok_or_else(|| bad("truncated cell count"))?;
    let mut cells = Vec::with_capacity(n.min(4096));
    // The edit's cells share one copy of the payload.
    let whole = Bytes::copy_from_slice(payload);
    let part = |r: &mut Reader<'_>, what: &str| {
        let len = r
            .bytes()
            .ok_or_else(|| bad(&format!("truncated {what}")))?
            .len();
        Ok::<_, Error>(r.position() - len..r.position())
    };
    for _ in 0..n {
        let family = whole.slice(part(&mut r, "family")?);
        let row = part(&mut r, "row")?;
        let qualifier = part(&mut r, "qualifier")?;
        let ts = r.u64_be().ok_or_else(|| bad("truncated timestamp"))?;
        let code = r.u8().ok_or_else(|| bad("truncated type"))?;
        let cell_type = CellType::from_code(code)
            .filter(|t| !matches!(t, CellType::Minimum | CellType::Maximum))
            .ok_or_else(|| bad(&format!("unknown cell type {code}")))?;
        let flags = r.u8().ok_or_else(|| bad("truncated flags"))?;
        if flags & !1 != 0 {
            return Err(bad(&format!("unknown cell flags {flags:#x}")));
        }
        let ttl_ms = if flags & 1 == 1 {
            Some(r.varint().ok_or_else(|| bad("truncated ttl"))?)
        } else {
            None
        };
        let value = part(&mut r, "value")?;
        let spans = Spans {
            row,
            qualifier,
            value,
        };
        let mut cell = Cell::in_buffer(whole.clone(), &spans, family)
            .ok_or_else(|| bad("a cell larger than 4 GiB"))?;
        cell.timestamp = i64::from_be_bytes(ts.to_be_bytes());
        cell.cell_type = cell_type;
        cell.seq_id = seq_id;
        cell.ttl_ms = ttl_ms;
        cells.push(cell);
    }
    if !r.is_empty() {
        return Err(bad("trailing bytes after the last cell"));
    }
    Ok(WalEdit {
        region_id,
        seq_id,
        cells,
    })
}
