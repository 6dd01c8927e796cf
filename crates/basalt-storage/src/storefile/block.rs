//! Data blocks and the stored-block frame (docs/formats/storefile.md).

use std::cmp::Ordering;
use std::io::{Read, Write};
use std::path::Path;

use basalt_model::{Cell, CellType, Compression, Error, Result};
use bytes::Bytes;

use super::keys::{
    zigzag, DataBlock, Layout, RawKey, HEAD_SEQ, HEAD_TTL, HEAD_TYPE, KEY_TAIL_LEN, NARROW_OFFSETS,
};
use crate::codec::{put_varint, Reader};

/// Bytes after a block body: compression byte plus checksum.
pub const BLOCK_TRAILER_LEN: usize = 5;
/// Fixed key bytes besides row and qualifier: row length, timestamp, type, sequence id.
const KEY_FIXED_LEN: usize = 2 + KEY_TAIL_LEN;

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

/// Encodes a cell's whole key (without family).
pub fn encode_key(out: &mut Vec<u8>, c: &Cell) {
    let k = RawKey {
        row: c.row(),
        qualifier: c.qualifier(),
        timestamp: c.timestamp,
        code: c.cell_type.code(),
        seq_id: c.seq_id,
    };
    encode_raw_key(out, k);
}

/// Encodes a key's parts as a whole key.
fn encode_raw_key(out: &mut Vec<u8>, k: RawKey<'_>) {
    let row_len = u16::try_from(k.row.len()).expect("rows are validated to at most 32767 bytes");
    out.reserve(KEY_FIXED_LEN + k.row.len() + k.qualifier.len());
    out.extend_from_slice(&row_len.to_be_bytes());
    out.extend_from_slice(k.row);
    out.extend_from_slice(k.qualifier);
    out.extend_from_slice(&k.timestamp.to_be_bytes());
    out.push(k.code);
    out.extend_from_slice(&k.seq_id.to_be_bytes());
}

/// Decodes a key into a cell of `family` with an empty value; `None` when malformed.
pub fn decode_key(key: &Bytes, family: &Bytes) -> Option<Cell> {
    if key.len() < KEY_FIXED_LEN {
        return None;
    }
    let row_len = usize::from(u16::from_be_bytes([key[0], key[1]]));
    let qual_end = key.len().checked_sub(17)?;
    if 2 + row_len > qual_end {
        return None;
    }
    let ts = i64::from_be_bytes(key[qual_end..qual_end + 8].try_into().ok()?);
    let cell_type = CellType::from_code(key[qual_end + 8])?;
    let seq_id = u64::from_be_bytes(key[qual_end + 9..].try_into().ok()?);
    let spans = basalt_model::Spans {
        row: 2..2 + row_len,
        qualifier: 2 + row_len..qual_end,
        value: qual_end..qual_end,
    };
    let mut cell = Cell::in_buffer(key.clone(), &spans, family.clone())?;
    cell.timestamp = ts;
    cell.cell_type = cell_type;
    cell.seq_id = seq_id;
    Some(cell)
}

/// Builds one data block (format version 5: compact headers, timestamps from the block's
/// base, every entry's offset, in two bytes where they fit).
#[derive(Debug, Default)]
pub struct DataBlockBuilder {
    buf: Vec<u8>,
    offsets: Vec<u32>,
    /// The first cell's timestamp, which the others' count from.
    base_ts: i64,
    /// The key of the last cell added: its row and qualifier where they lie in `buf`.
    last: Option<LastKey>,
}

#[derive(Debug)]
struct LastKey {
    row: std::ops::Range<usize>,
    qualifier: std::ops::Range<usize>,
    timestamp: i64,
    code: u8,
    seq_id: u64,
}

impl DataBlockBuilder {
    /// Appends a cell; cells must come in key order, and not of a search-only type (the
    /// writer refuses those). A zero sequence id (a major compaction's, for cells every
    /// reader sees) is not stored.
    pub fn add(&mut self, c: &Cell) {
        let at = u32::try_from(self.buf.len()).expect("blocks stay far below 4 GiB");
        if self.offsets.is_empty() {
            self.base_ts = c.timestamp;
        }
        self.offsets.push(at);
        let code = c.cell_type.code();
        debug_assert!(code & !HEAD_TYPE == 0, "a search key is not stored: {c:?}");
        let mut head = code & HEAD_TYPE;
        if c.seq_id != 0 {
            head |= HEAD_SEQ;
        }
        if c.ttl_ms.is_some() {
            head |= HEAD_TTL;
        }
        self.buf.push(head);
        put_varint(&mut self.buf, c.row().len() as u64);
        put_varint(&mut self.buf, c.qualifier().len() as u64);
        put_varint(&mut self.buf, c.value().len() as u64);
        put_varint(&mut self.buf, zigzag(c.timestamp, self.base_ts));
        if c.seq_id != 0 {
            put_varint(&mut self.buf, c.seq_id);
        }
        if let Some(ttl) = c.ttl_ms {
            put_varint(&mut self.buf, ttl);
        }
        let row = self.buf.len();
        self.buf.extend_from_slice(c.row());
        let qualifier = self.buf.len();
        self.buf.extend_from_slice(c.qualifier());
        self.last = Some(LastKey {
            row: row..qualifier,
            qualifier: qualifier..self.buf.len(),
            timestamp: c.timestamp,
            code,
            seq_id: c.seq_id,
        });
        self.buf.extend_from_slice(c.value());
    }

    /// Whether the block's offsets fit in two bytes: the last entry starts below 64 KiB.
    fn narrow(&self) -> bool {
        self.offsets
            .last()
            .is_none_or(|&o| o <= u32::from(u16::MAX))
    }

    /// Bytes of the body so far.
    #[must_use]
    pub fn size_bytes(&self) -> usize {
        let width = if self.narrow() { 2 } else { 4 };
        self.buf.len() + width * self.offsets.len() + 8 + 4
    }

    /// Whether no cell was added.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.offsets.is_empty()
    }

    /// The last cell added's key, where it lies (`None` when the block is empty).
    fn last_key(&self) -> Option<RawKey<'_>> {
        self.last.as_ref().map(|l| RawKey {
            row: &self.buf[l.row.clone()],
            qualifier: &self.buf[l.qualifier.clone()],
            timestamp: l.timestamp,
            code: l.code,
            seq_id: l.seq_id,
        })
    }

    /// The order of the last cell added, of `family`, against `c` (`None` when the block is
    /// empty): compared where it lies, as a copy of each cell's key cost a fifth of a
    /// compaction (BENCHMARKS.md).
    #[must_use]
    pub fn cmp_last(&self, family: &[u8], c: &Cell) -> Option<Ordering> {
        self.last_key().map(|k| k.cmp(family, c))
    }

    /// The whole encoded key of the last cell added (empty when the block is).
    #[must_use]
    pub fn last_whole_key(&self) -> Vec<u8> {
        let mut whole = Vec::new();
        if let Some(k) = self.last_key() {
            encode_raw_key(&mut whole, k);
        }
        whole
    }

    /// Finishes the block body and resets the builder.
    pub fn finish(&mut self) -> Vec<u8> {
        let narrow = self.narrow();
        let mut out = std::mem::take(&mut self.buf);
        if narrow {
            out.reserve(2 * self.offsets.len() + 12);
            for &o in &self.offsets {
                let o = u16::try_from(o).expect("a narrow block's offsets fit two bytes");
                out.extend_from_slice(&o.to_le_bytes());
            }
        } else {
            out.reserve(4 * self.offsets.len() + 12);
            for o in &self.offsets {
                out.extend_from_slice(&o.to_le_bytes());
            }
        }
        out.extend_from_slice(&self.base_ts.to_le_bytes());
        let n = u32::try_from(self.offsets.len())
            .ok()
            .filter(|&n| n < NARROW_OFFSETS)
            .expect("entry count fits 31 bits");
        let count = if narrow { n | NARROW_OFFSETS } else { n };
        out.extend_from_slice(&count.to_le_bytes());
        self.offsets.clear();
        self.last = None;
        out
    }
}

/// A data block body of `family` as it lies, laid out as `layout`; its entries are checked
/// as they are read ([`DataBlock`], invariant 1).
///
/// # Errors
/// `Corruption` naming `path` and `offset` when the body's layout is malformed.
pub fn decode_data_block(
    body: Bytes,
    layout: Layout,
    family: &Bytes,
    (path, offset): (&Path, u64),
) -> Result<DataBlock> {
    DataBlock::new(family.clone(), body, layout).map_err(|what| damaged(path, offset, what))
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

/// A data block body of format version 1 (keys prefix-compressed, restart points every 16
/// entries), rewritten into version 2's layout.
///
/// # Errors
/// `Corruption` naming `path` and `offset` when the body is malformed.
pub fn decode_legacy_data_block(
    body: &[u8],
    family: &Bytes,
    path: &Path,
    offset: u64,
) -> Result<DataBlock> {
    let bad = |what: &str| damaged(path, offset, what);
    if body.len() < 4 {
        return Err(bad("block shorter than its restart count"));
    }
    let n_restarts = u32::from_le_bytes(
        body[body.len() - 4..]
            .try_into()
            .map_err(|_| bad("restart count"))?,
    ) as usize;
    let entries_end = n_restarts
        .checked_mul(4)
        .and_then(|r| body.len().checked_sub(4 + r))
        .ok_or_else(|| bad("restart array larger than the block"))?;
    let mut r = Reader::new(&body[..entries_end]);
    let mut out = Vec::with_capacity(body.len() + body.len() / 4);
    let mut offsets = Vec::new();
    let mut key = Vec::new();
    while !r.is_empty() {
        let shared = r.len().ok_or_else(|| bad("truncated entry header"))?;
        let unshared = r.len().ok_or_else(|| bad("truncated entry header"))?;
        let value_len = r.len().ok_or_else(|| bad("truncated entry header"))?;
        let flags = r.u8().ok_or_else(|| bad("truncated entry flags"))?;
        if flags & !1 != 0 {
            return Err(bad("unknown entry flags"));
        }
        let ttl = match flags {
            1 => Some(r.varint().ok_or_else(|| bad("truncated ttl"))?),
            _ => None,
        };
        if shared > key.len() {
            return Err(bad("shared key prefix longer than the previous key"));
        }
        key.truncate(shared);
        key.extend_from_slice(r.take(unshared).ok_or_else(|| bad("truncated key"))?);
        let value = r.take(value_len).ok_or_else(|| bad("truncated value"))?;
        offsets.push(u32::try_from(out.len()).map_err(|_| bad("block larger than 4 GiB"))?);
        put_varint(&mut out, key.len() as u64);
        put_varint(&mut out, value_len as u64);
        out.push(flags);
        if let Some(ttl) = ttl {
            put_varint(&mut out, ttl);
        }
        out.extend_from_slice(&key);
        out.extend_from_slice(value);
    }
    for o in &offsets {
        out.extend_from_slice(&o.to_le_bytes());
    }
    let n = u32::try_from(offsets.len()).map_err(|_| bad("block larger than 4 GiB"))?;
    out.extend_from_slice(&n.to_le_bytes());
    decode_data_block(Bytes::from(out), Layout::WholeKeys, family, (path, offset))
}

/// Frames a block body: compresses it with `codec` and appends the trailer.
///
/// # Errors
/// `Io` if the codec fails (it only fails on allocation problems).
pub fn frame(body: &[u8], codec: Compression) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    frame_into(&mut out, body, codec)?;
    Ok(out)
}

/// [`frame`], appending the framed block to `out`; returns its length. On an error `out` is
/// as it was.
///
/// # Errors
/// `Io` if the codec fails (it only fails on allocation problems).
pub fn frame_into(out: &mut Vec<u8>, body: &[u8], codec: Compression) -> Result<usize> {
    let start = out.len();
    if let Err(e) = compress_into(out, body, codec) {
        out.truncate(start);
        return Err(Error::io("compressing a block", e));
    }
    out.push(codec_code(codec));
    let crc = crate::checksum::crc32c(&out[start..]);
    out.extend_from_slice(&crc.to_le_bytes());
    Ok(out.len() - start)
}

fn compress_into(out: &mut Vec<u8>, body: &[u8], codec: Compression) -> std::io::Result<()> {
    match codec {
        Compression::None => out.extend_from_slice(body),
        Compression::Lz4 => out.extend_from_slice(&lz4_flex::compress_prepend_size(body)),
        Compression::Zstd => out.extend_from_slice(&zstd::bulk::compress(body, 3)?),
        Compression::Snappy => out.extend_from_slice(
            &snap::raw::Encoder::new()
                .compress_vec(body)
                .map_err(std::io::Error::other)?,
        ),
        Compression::Gz => {
            let mut enc = flate2::write::GzEncoder::new(out, flate2::Compression::default());
            enc.write_all(body)?;
            enc.finish()?;
        }
    }
    Ok(())
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
