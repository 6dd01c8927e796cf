//! Data blocks and the stored-block frame (docs/formats/storefile.md).

use std::io::{Read, Write};
use std::path::Path;

use basalt_model::{Cell, CellType, Compression, Error, Result};
use bytes::Bytes;

use super::keys::{parts_of_encoded, put_entry, Base, DataBlock, Entry, KeyParts, FOOTER_LEN};

mod legacy;

/// Bytes after a block body: compression byte plus checksum.
pub const BLOCK_TRAILER_LEN: usize = 5;

/// Codec codes on disk: never renumber.
fn codec_code(c: Compression) -> u8 {
    match c {
        Compression::None => 0,
        Compression::Lz4 => 1,
        Compression::Zstd => 2,
        Compression::Snappy => 3,
        Compression::Gz => 4,
    }
}

/// Encodes a cell's key (without family), as index entries and the file info hold it.
pub fn encode_key(out: &mut Vec<u8>, c: &Cell) {
    encode_parts(
        out,
        &KeyParts {
            row: c.row(),
            qualifier: c.qualifier(),
            ts: c.timestamp,
            code: c.cell_type.code(),
            seq: c.seq_id,
        },
    );
}

/// Encodes a key from its parts.
fn encode_parts(out: &mut Vec<u8>, k: &KeyParts<'_>) {
    let row_len = u16::try_from(k.row.len()).expect("rows are validated to at most 32767 bytes");
    out.extend_from_slice(&row_len.to_be_bytes());
    out.extend_from_slice(k.row);
    out.extend_from_slice(k.qualifier);
    out.extend_from_slice(&k.ts.to_be_bytes());
    out.push(k.code);
    out.extend_from_slice(&k.seq.to_be_bytes());
}

/// Decodes a key into a cell of `family` with an empty value; `None` when malformed.
pub fn decode_key(key: &Bytes, family: &Bytes) -> Option<Cell> {
    let k = parts_of_encoded(key)?;
    let row = 2..2 + k.row.len();
    let spans = basalt_model::Spans {
        qualifier: row.end..row.end + k.qualifier.len(),
        value: row.end..row.end,
        row,
    };
    let mut cell = Cell::in_buffer(key.clone(), &spans, family.clone())?;
    cell.timestamp = k.ts;
    cell.cell_type = CellType::from_code(k.code)?;
    cell.seq_id = k.seq;
    Some(cell)
}

/// Builds one data block (format version 3: every entry's parts whole, its numbers deltas
/// from the block's first, every entry's offset).
#[derive(Debug, Default)]
pub struct DataBlockBuilder {
    buf: Vec<u8>,
    offsets: Vec<u32>,
    /// The first cell's timestamp and sequence id.
    base: Base,
    /// The last entry added: where its row and qualifier lie in `buf`, and its numbers.
    last: Option<LastEntry>,
}

#[derive(Debug)]
struct LastEntry {
    row: std::ops::Range<usize>,
    qualifier: std::ops::Range<usize>,
    ts: i64,
    code: u8,
    seq: u64,
}

impl DataBlockBuilder {
    /// Appends a cell; cells must come in key order.
    pub fn add(&mut self, c: &Cell) {
        self.add_entry(&Entry {
            row: c.row(),
            qualifier: c.qualifier(),
            ts: c.timestamp,
            code: c.cell_type.code(),
            seq: c.seq_id,
            ttl: c.ttl_ms,
            value: c.value(),
        });
    }

    /// Appends an entry; entries must come in key order.
    pub fn add_entry(&mut self, e: &Entry<'_>) {
        if self.offsets.is_empty() {
            self.base = Base {
                ts: e.ts,
                seq: e.seq,
            };
        }
        let at = u32::try_from(self.buf.len()).expect("blocks stay far below 4 GiB");
        self.offsets.push(at);
        put_entry(&mut self.buf, self.base, e);
        // The parts end the entry: the value last, the qualifier and the row before it.
        let qualifier_end = self.buf.len() - e.value.len();
        let row_end = qualifier_end - e.qualifier.len();
        self.last = Some(LastEntry {
            row: row_end - e.row.len()..row_end,
            qualifier: row_end..qualifier_end,
            ts: e.ts,
            code: e.code,
            seq: e.seq,
        });
    }

    /// Bytes an offset takes: two while every entry starts below 64 KiB.
    fn offset_width(&self) -> usize {
        match self.offsets.last() {
            Some(&o) if o > u32::from(u16::MAX) => 4,
            _ => 2,
        }
    }

    /// Bytes of the body so far.
    #[must_use]
    pub fn size_bytes(&self) -> usize {
        self.buf.len() + self.offset_width() * self.offsets.len() + FOOTER_LEN
    }

    /// Whether no cell was added.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.offsets.is_empty()
    }

    /// The key of the last cell added, read where it lies.
    #[must_use]
    pub fn last_key(&self) -> Option<KeyParts<'_>> {
        self.last.as_ref().map(|l| KeyParts {
            row: &self.buf[l.row.clone()],
            qualifier: &self.buf[l.qualifier.clone()],
            ts: l.ts,
            code: l.code,
            seq: l.seq,
        })
    }

    /// The key of the last cell added, encoded as the index holds it (empty when none was).
    #[must_use]
    pub fn last_key_encoded(&self) -> Vec<u8> {
        let mut out = Vec::new();
        if let Some(k) = self.last_key() {
            encode_parts(&mut out, &k);
        }
        out
    }

    /// Finishes the block body and resets the builder.
    pub fn finish(&mut self) -> Vec<u8> {
        let width = self.offset_width();
        let mut out = std::mem::take(&mut self.buf);
        out.reserve(width * self.offsets.len() + FOOTER_LEN);
        // Each width written as its own fixed-size copy, not cut at a run-time length.
        if width == 2 {
            for &o in &self.offsets {
                // Width 2: every offset is at most `u16::MAX`.
                out.extend_from_slice(&u16::try_from(o).unwrap_or(u16::MAX).to_le_bytes());
            }
        } else {
            for o in &self.offsets {
                out.extend_from_slice(&o.to_le_bytes());
            }
        }
        out.extend_from_slice(&self.base.ts.to_le_bytes());
        out.extend_from_slice(&self.base.seq.to_le_bytes());
        let n = u32::try_from(self.offsets.len()).expect("entry count fits u32");
        out.extend_from_slice(&n.to_le_bytes());
        out.push(u8::try_from(width).unwrap_or(4));
        self.offsets.clear();
        self.base = Base::default();
        self.last = None;
        out
    }
}

/// A data block body of `family` as it lies (format version 3); its entries are checked as
/// they are read ([`DataBlock`], invariant 1).
///
/// # Errors
/// `Corruption` naming `path` and `offset` when the body's layout is malformed.
pub fn decode_data_block(
    body: Bytes,
    family: &Bytes,
    path: &Path,
    offset: u64,
) -> Result<DataBlock> {
    DataBlock::new(family.clone(), body).map_err(|what| damaged(path, offset, what))
}

/// The error for damage `what` found in the data block at `offset` of the file at `path`.
#[must_use]
pub fn damaged(path: &Path, offset: u64, what: &str) -> Error {
    Error::corruption(
        "data block",
        path,
        format!("{what} in the block at offset {offset}"),
    )
}

/// A data block body of an earlier format `version` (1 or 2), rewritten into version 3's
/// layout: every entry is read and checked once, here.
///
/// # Errors
/// `Corruption` naming `path` and `offset` when the body is malformed.
pub fn decode_legacy_data_block(
    version: u32,
    body: &[u8],
    family: &Bytes,
    path: &Path,
    offset: u64,
) -> Result<DataBlock> {
    let mut out = DataBlockBuilder::default();
    let mut add = |key: &[u8], ttl: Option<u64>, value: &[u8]| {
        let k = parts_of_encoded(key).ok_or("malformed key")?;
        // Offsets are 32 bits: a body that decompressed past them is refused, not rewritten.
        let grown = out.size_bytes() + key.len() + value.len() + 32;
        if u32::try_from(grown).is_err() {
            return Err("block larger than 4 GiB");
        }
        out.add_entry(&Entry {
            row: k.row,
            qualifier: k.qualifier,
            ts: k.ts,
            code: k.code,
            seq: k.seq,
            ttl,
            value,
        });
        Ok(())
    };
    match version {
        1 => legacy::v1_entries(body, &mut add),
        2 => legacy::v2_entries(body, &mut add),
        _ => Err("no data block layout of this format version"),
    }
    .map_err(|what| damaged(path, offset, what))?;
    decode_data_block(Bytes::from(out.finish()), family, path, offset)
}

/// Frames a block body: compresses it with `codec` and appends the trailer.
///
/// # Errors
/// `Io` if the codec fails (it only fails on allocation problems).
pub fn frame(body: &[u8], codec: Compression) -> Result<Vec<u8>> {
    let io = |e: std::io::Error| Error::io("compressing a block", e);
    let mut out = match codec {
        Compression::None => body.to_vec(),
        Compression::Lz4 => lz4_flex::compress_prepend_size(body),
        Compression::Zstd => zstd::bulk::compress(body, 3).map_err(io)?,
        Compression::Snappy => snap::raw::Encoder::new()
            .compress_vec(body)
            .map_err(|e| Error::io("compressing a block", std::io::Error::other(e)))?,
        Compression::Gz => {
            let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            enc.write_all(body).map_err(io)?;
            enc.finish().map_err(io)?
        }
    };
    out.push(codec_code(codec));
    let crc = crate::checksum::crc32c(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    Ok(out)
}

/// Checks a stored block's checksum and decompresses its body. An uncompressed body keeps
/// the buffer it was read into.
///
/// # Errors
/// `Corruption` naming `path` and `offset`.
pub fn unframe(mut stored: Vec<u8>, path: &Path, offset: u64) -> Result<Bytes> {
    let bad = |what: String| {
        Error::corruption("block", path, format!("{what} (block at offset {offset})"))
    };
    if stored.len() < BLOCK_TRAILER_LEN {
        return Err(bad("block shorter than its trailer".into()));
    }
    let split = stored.len() - 4;
    let expected = u32::from_le_bytes(
        stored[split..]
            .try_into()
            .map_err(|_| bad("trailer".into()))?,
    );
    let actual = crate::checksum::crc32c(&stored[..split]);
    if actual != expected {
        return Err(bad(format!(
            "checksum mismatch: expected {expected:#010x}, found {actual:#010x}"
        )));
    }
    let codec = stored[split - 1];
    if codec == 0 {
        stored.truncate(split - 1);
        return Ok(Bytes::from(stored));
    }
    let body = &stored[..split - 1];
    let fail = |e: String| bad(format!("cannot decompress: {e}"));
    Ok(match codec {
        1 => {
            Bytes::from(lz4_flex::decompress_size_prepended(body).map_err(|e| fail(e.to_string()))?)
        }
        2 => Bytes::from(zstd::stream::decode_all(body).map_err(|e| fail(e.to_string()))?),
        3 => Bytes::from(
            snap::raw::Decoder::new()
                .decompress_vec(body)
                .map_err(|e| fail(e.to_string()))?,
        ),
        4 => {
            let mut out = Vec::new();
            flate2::read::GzDecoder::new(body)
                .read_to_end(&mut out)
                .map_err(|e| fail(e.to_string()))?;
            Bytes::from(out)
        }
        other => return Err(bad(format!("unknown compression code {other}"))),
    })
}
