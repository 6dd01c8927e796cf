//! Data blocks and the stored-block frame (docs/formats/storefile.md).

use std::io::{Read, Write};
use std::path::Path;

use basalt_model::{Cell, CellType, Compression, Error, Result};
use bytes::Bytes;

use super::keys::{DataBlock, FLAG_NO_SEQ, FLAG_TTL, KEY_TAIL_LEN, NARROW_OFFSETS};
use crate::codec::{put_varint, Reader};
use crate::env::ReadBuffer;

/// Bytes after a block body: compression byte plus checksum.
pub const BLOCK_TRAILER_LEN: usize = 5;
/// Fixed key bytes besides row and qualifier: row length, timestamp, type, sequence id.
const KEY_FIXED_LEN: usize = 2 + KEY_TAIL_LEN;
/// The sequence id's bytes at the end of a whole key.
const SEQ_LEN: usize = 8;

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
    encode_key_up_to_seq(out, c);
    out.extend_from_slice(&c.seq_id.to_be_bytes());
}

/// Encodes a cell's key (without family) up to its sequence id, which is left out.
fn encode_key_up_to_seq(out: &mut Vec<u8>, c: &Cell) {
    let row_len = u16::try_from(c.row().len()).expect("rows are validated to at most 32767 bytes");
    out.extend_from_slice(&row_len.to_be_bytes());
    out.extend_from_slice(c.row());
    out.extend_from_slice(c.qualifier());
    out.extend_from_slice(&c.timestamp.to_be_bytes());
    out.push(c.cell_type.code());
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

/// Builds one data block (format version 3: whole keys but a zero sequence id, every
/// entry's offset, in two bytes where they fit).
#[derive(Debug, Default)]
pub struct DataBlockBuilder {
    buf: Vec<u8>,
    offsets: Vec<u32>,
    /// Where the last key added lies in `buf`.
    last_key: std::ops::Range<usize>,
    /// Whether the last key added was stored with its sequence id.
    last_seq_stored: bool,
}

impl DataBlockBuilder {
    /// Appends a cell; cells must come in key order. A zero sequence id (a major
    /// compaction's, for cells every reader sees) is not stored.
    pub fn add(&mut self, c: &Cell) {
        let at = u32::try_from(self.buf.len()).expect("blocks stay far below 4 GiB");
        self.offsets.push(at);
        let seq_stored = c.seq_id != 0;
        let key_len = KEY_FIXED_LEN + c.row().len() + c.qualifier().len()
            - if seq_stored { 0 } else { SEQ_LEN };
        put_varint(&mut self.buf, key_len as u64);
        put_varint(&mut self.buf, c.value().len() as u64);
        let no_seq = if seq_stored { 0 } else { FLAG_NO_SEQ };
        match c.ttl_ms {
            Some(ttl) => {
                self.buf.push(FLAG_TTL | no_seq);
                put_varint(&mut self.buf, ttl);
            }
            None => self.buf.push(no_seq),
        }
        let key_at = self.buf.len();
        encode_key_up_to_seq(&mut self.buf, c);
        if seq_stored {
            self.buf.extend_from_slice(&c.seq_id.to_be_bytes());
        }
        self.last_key = key_at..self.buf.len();
        self.last_seq_stored = seq_stored;
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
        self.buf.len() + width * self.offsets.len() + 4
    }

    /// Whether no cell was added.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.offsets.is_empty()
    }

    /// The key of the last cell added as stored, and whether it holds its sequence id
    /// (else the id is zero).
    #[must_use]
    pub fn last_key(&self) -> (&[u8], bool) {
        (&self.buf[self.last_key.clone()], self.last_seq_stored)
    }

    /// The whole encoded key of the last cell added.
    #[must_use]
    pub fn last_whole_key(&self) -> Vec<u8> {
        let (key, seq_stored) = self.last_key();
        let mut whole = Vec::with_capacity(key.len() + SEQ_LEN);
        whole.extend_from_slice(key);
        if !seq_stored {
            whole.extend_from_slice(&0u64.to_be_bytes());
        }
        whole
    }

    /// Finishes the block body and resets the builder.
    pub fn finish(&mut self) -> Vec<u8> {
        let narrow = self.narrow();
        let mut out = std::mem::take(&mut self.buf);
        if narrow {
            out.reserve(2 * self.offsets.len() + 4);
            for &o in &self.offsets {
                let o = u16::try_from(o).expect("a narrow block's offsets fit two bytes");
                out.extend_from_slice(&o.to_le_bytes());
            }
        } else {
            out.reserve(4 * self.offsets.len() + 4);
            for o in &self.offsets {
                out.extend_from_slice(&o.to_le_bytes());
            }
        }
        let n = u32::try_from(self.offsets.len())
            .ok()
            .filter(|&n| n < NARROW_OFFSETS)
            .expect("entry count fits 31 bits");
        let count = if narrow { n | NARROW_OFFSETS } else { n };
        out.extend_from_slice(&count.to_le_bytes());
        self.offsets.clear();
        self.last_key = 0..0;
        out
    }
}

/// A data block body of `family` as it lies (format version 3 or 2); its entries are checked as
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
    decode_data_block(Bytes::from(out), family, path, offset)
}

/// The checksum a stored block's trailer holds (docs/formats/storefile.md): CRC-32C in
/// files of format versions 1 to 4, XXH3 from version 5 on (`crate::checksum`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlockChecksum {
    Crc32c,
    Xxh3,
}

impl BlockChecksum {
    /// The checksum of the blocks this version writes ([`super::FORMAT_VERSION`]).
    pub const WRITTEN: BlockChecksum = BlockChecksum::of_version(super::FORMAT_VERSION);

    /// The checksum of the blocks of a file of format `version`.
    #[must_use]
    pub const fn of_version(version: u32) -> BlockChecksum {
        if version >= super::FORMAT_VERSION_5 {
            BlockChecksum::Xxh3
        } else {
            BlockChecksum::Crc32c
        }
    }

    fn of(self, data: &[u8]) -> u32 {
        match self {
            BlockChecksum::Crc32c => crate::checksum::crc32c(data),
            BlockChecksum::Xxh3 => crate::checksum::xxh3_32(data),
        }
    }
}

/// Frames a block body: compresses it with `codec` and appends the trailer, its checksum
/// computed by `checksum`.
///
/// # Errors
/// `Io` if the codec fails (it only fails on allocation problems).
pub fn frame(body: &[u8], codec: Compression, checksum: BlockChecksum) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    frame_into(&mut out, body, codec, checksum)?;
    Ok(out)
}

/// [`frame`], appending the framed block to `out`; returns its length. On an error `out` is
/// as it was.
///
/// # Errors
/// `Io` if the codec fails (it only fails on allocation problems).
pub fn frame_into(
    out: &mut Vec<u8>,
    body: &[u8],
    codec: Compression,
    checksum: BlockChecksum,
) -> Result<usize> {
    let start = out.len();
    if let Err(e) = compress_into(out, body, codec) {
        out.truncate(start);
        return Err(Error::io("compressing a block", e));
    }
    out.push(codec_code(codec));
    let sum = checksum.of(&out[start..]);
    out.extend_from_slice(&sum.to_le_bytes());
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

/// Checks a stored block's checksum (of the kind `checksum` names) and decompresses its
/// body. An uncompressed body keeps the buffer it was read into (a pooled one goes back to
/// its pool when the body's last handle is dropped); a compressed one's goes back at once.
///
/// # Errors
/// `Corruption` naming `path` and `offset`.
pub fn unframe(
    stored: impl Into<ReadBuffer>,
    checksum: BlockChecksum,
    path: &Path,
    offset: u64,
) -> Result<Bytes> {
    let stored = stored.into();
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
    let actual = checksum.of(&stored[..split]);
    if actual != expected {
        return Err(bad(format!(
            "checksum mismatch: expected {expected:#010x}, found {actual:#010x}"
        )));
    }
    let codec = stored[split - 1];
    if codec == 0 {
        return Ok(stored.into_bytes(0..split - 1));
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
