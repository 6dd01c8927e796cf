//! Data blocks and the stored-block frame (docs/formats/storefile.md).

use std::io::{Read, Write};
use std::path::Path;

use basalt_model::{Cell, CellType, Compression, Error, Result};
use bytes::Bytes;

use super::keys::{check_key, DataBlock, Entry};
use crate::codec::{put_varint, Reader};

/// Entries between restart points.
pub const RESTART_INTERVAL: usize = 16;
/// Bytes after a block body: compression byte plus checksum.
pub const BLOCK_TRAILER_LEN: usize = 5;
/// Fixed key bytes besides row and qualifier: row length, timestamp, type, sequence id.
const KEY_FIXED_LEN: usize = 2 + 8 + 1 + 8;

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

/// Encodes a cell's key (without family).
pub fn encode_key(out: &mut Vec<u8>, c: &Cell) {
    let row_len = u16::try_from(c.row.len()).expect("rows are validated to at most 32767 bytes");
    out.extend_from_slice(&row_len.to_be_bytes());
    out.extend_from_slice(&c.row);
    out.extend_from_slice(&c.qualifier);
    out.extend_from_slice(&c.timestamp.to_be_bytes());
    out.push(c.cell_type.code());
    out.extend_from_slice(&c.seq_id.to_be_bytes());
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
    Some(Cell {
        row: key.slice(2..2 + row_len),
        family: family.clone(),
        qualifier: key.slice(2 + row_len..qual_end),
        timestamp: ts,
        cell_type,
        seq_id,
        value: Bytes::new(),
        ttl_ms: None,
    })
}

/// Builds one data block.
#[derive(Debug, Default)]
pub struct DataBlockBuilder {
    buf: Vec<u8>,
    restarts: Vec<u32>,
    last_key: Vec<u8>,
    key_scratch: Vec<u8>,
    count: usize,
}

impl DataBlockBuilder {
    /// Appends a cell; cells must come in key order.
    pub fn add(&mut self, c: &Cell) {
        self.key_scratch.clear();
        encode_key(&mut self.key_scratch, c);
        let shared = if self.count.is_multiple_of(RESTART_INTERVAL) {
            self.restarts
                .push(u32::try_from(self.buf.len()).expect("blocks stay far below 4 GiB"));
            0
        } else {
            self.last_key
                .iter()
                .zip(&self.key_scratch)
                .take_while(|(a, b)| a == b)
                .count()
        };
        put_varint(&mut self.buf, shared as u64);
        put_varint(&mut self.buf, (self.key_scratch.len() - shared) as u64);
        put_varint(&mut self.buf, c.value.len() as u64);
        match c.ttl_ms {
            Some(ttl) => {
                self.buf.push(1);
                put_varint(&mut self.buf, ttl);
            }
            None => self.buf.push(0),
        }
        self.buf.extend_from_slice(&self.key_scratch[shared..]);
        self.buf.extend_from_slice(&c.value);
        std::mem::swap(&mut self.last_key, &mut self.key_scratch);
        self.count += 1;
    }

    /// Bytes of the body so far.
    #[must_use]
    pub fn size_bytes(&self) -> usize {
        self.buf.len() + 4 * self.restarts.len() + 4
    }

    /// Whether no cell was added.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The encoded key of the last cell added.
    #[must_use]
    pub fn last_key(&self) -> &[u8] {
        &self.last_key
    }

    /// Finishes the block body and resets the builder.
    pub fn finish(&mut self) -> Vec<u8> {
        let mut out = std::mem::take(&mut self.buf);
        for r in &self.restarts {
            out.extend_from_slice(&r.to_le_bytes());
        }
        let n = u32::try_from(self.restarts.len()).expect("restart count fits u32");
        out.extend_from_slice(&n.to_le_bytes());
        self.restarts.clear();
        self.last_key.clear();
        self.count = 0;
        out
    }
}

/// Decodes a data block body of `family`. Keys are rebuilt into one buffer and checked;
/// values stay slices of the body.
///
/// # Errors
/// `Corruption` naming `path` and `offset` when the body is malformed.
pub fn decode_data_block(
    body: Bytes,
    family: &Bytes,
    path: &Path,
    offset: u64,
) -> Result<DataBlock> {
    let bad = |what: &str| {
        Error::corruption(
            "data block",
            path,
            format!("{what} in the block at offset {offset}"),
        )
    };
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
    let mut keys = Vec::with_capacity(entries_end);
    let mut entries = Vec::new();
    let mut prev: std::ops::Range<usize> = 0..0;
    let too_big = || bad("block larger than 4 GiB");
    while !r.is_empty() {
        let shared = r.len().ok_or_else(|| bad("truncated entry header"))?;
        let unshared = r.len().ok_or_else(|| bad("truncated entry header"))?;
        let value_len = r.len().ok_or_else(|| bad("truncated entry header"))?;
        let flags = r.u8().ok_or_else(|| bad("truncated entry flags"))?;
        if flags & !1 != 0 {
            return Err(bad("unknown entry flags"));
        }
        let ttl = if flags & 1 == 1 {
            r.varint().ok_or_else(|| bad("truncated ttl"))?
        } else {
            u64::MAX
        };
        if shared > prev.len() {
            return Err(bad("shared key prefix longer than the previous key"));
        }
        let start = keys.len();
        keys.extend_from_within(prev.start..prev.start + shared);
        keys.extend_from_slice(r.take(unshared).ok_or_else(|| bad("truncated key"))?);
        prev = start..keys.len();
        check_key(&keys[prev.clone()]).ok_or_else(|| bad("malformed key"))?;
        let vstart = r.position();
        r.take(value_len).ok_or_else(|| bad("truncated value"))?;
        entries.push(Entry {
            key: u32::try_from(start).map_err(|_| too_big())?,
            key_len: u32::try_from(prev.len()).map_err(|_| too_big())?,
            value: u32::try_from(vstart).map_err(|_| too_big())?,
            value_len: u32::try_from(value_len).map_err(|_| too_big())?,
            ttl,
        });
    }
    Ok(DataBlock::new(
        family.clone(),
        body,
        Bytes::from(keys),
        entries,
    ))
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
    let crc = crc32c::crc32c(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    Ok(out)
}

/// Checks a stored block's checksum and decompresses its body.
///
/// # Errors
/// `Corruption` naming `path` and `offset`.
pub fn unframe(stored: &[u8], path: &Path, offset: u64) -> Result<Bytes> {
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
    let actual = crc32c::crc32c(&stored[..split]);
    if actual != expected {
        return Err(bad(format!(
            "checksum mismatch: expected {expected:#010x}, found {actual:#010x}"
        )));
    }
    let body = &stored[..split - 1];
    let codec = stored[split - 1];
    let fail = |e: String| bad(format!("cannot decompress: {e}"));
    Ok(match codec {
        0 => Bytes::copy_from_slice(body),
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
