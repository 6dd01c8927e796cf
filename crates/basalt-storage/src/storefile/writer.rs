//! Writes a store file from cells in key order.

use std::cmp::Ordering;
use std::path::{Path, PathBuf};

use basalt_model::limits::MAX_ROW_LENGTH;
use basalt_model::{BloomType, Cell, CellType, ColumnFamilyDescriptor, Compression, Result};
use bytes::Bytes;

use super::block::{self, DataBlockBuilder};
use super::bloom::BloomBuilder;
use super::keys::cmp_encoded;
use super::{FileInfo, FORMAT_VERSION, MAGIC};
use crate::codec::{put_bytes, put_varint};
use crate::env::{Env, WritableFile};

/// The unit a store file is written in: every write but the last is this many bytes, at an
/// offset that is a multiple of it. The kernel's page cache holds what a write brings in
/// folios no larger than the write and aligned in the file, so a file written a block at a
/// time (about 64 KiB, at any offset) lay in pages of 4 KiB; each block read that missed the
/// block cache then copied sixteen or more of them, and a random read at 10M rows ran a
/// quarter slower than on the same file written in MiB chunks (`BENCHMARKS.md`).
pub(super) const WRITE_CHUNK: usize = 1 << 20;

/// Writes one store file. Call [`StoreFileWriter::add`] with cells in key order, then
/// [`StoreFileWriter::finish`], which syncs the file.
///
/// # Invariants
/// 1. `offset` is the bytes written to `file` plus `pending.len()`, and the bytes written
///    are a whole number of [`WRITE_CHUNK`]s until [`StoreFileWriter::finish`].
#[derive(Debug)]
pub struct StoreFileWriter {
    file: WritableFile,
    /// Framed blocks and sections not yet written: less than one [`WRITE_CHUNK`] between
    /// calls.
    pending: Vec<u8>,
    path: PathBuf,
    codec: Compression,
    block_size_bytes: usize,
    block: DataBlockBuilder,
    bloom: Option<BloomBuilder>,
    index: Vec<(Vec<u8>, u64, u32)>,
    offset: u64,
    info: FileInfo,
    /// The family's name: the order of the cells added is the order a reader of the file
    /// sees, whose keys are of this family.
    family: Bytes,
}

impl StoreFileWriter {
    /// Creates `path` for a store of `family`.
    ///
    /// # Errors
    /// `Io` creating the file.
    pub fn create(
        env: &Env,
        path: &Path,
        family: &ColumnFamilyDescriptor,
        now_ms: i64,
    ) -> Result<Self> {
        let bloom_kind = family.bloom_filter;
        Ok(StoreFileWriter {
            file: env.create(path)?,
            pending: Vec::new(),
            path: path.to_owned(),
            codec: family.compression,
            block_size_bytes: family.block_size_bytes as usize,
            block: DataBlockBuilder::default(),
            bloom: (bloom_kind != BloomType::None).then(|| BloomBuilder::new(bloom_kind)),
            family: family.name.clone(),
            index: Vec::new(),
            offset: 0,
            info: FileInfo {
                first_key: None,
                last_key: None,
                max_seq_id: 0,
                min_ts: i64::MAX,
                earliest_put_ts: i64::MAX,
                max_ts: i64::MIN,
                cell_count: 0,
                delete_count: 0,
                delete_family_count: 0,
                major_compacted: false,
                created_ms: now_ms,
            },
        })
    }

    /// Appends a cell.
    ///
    /// # Errors
    /// `Io` writing a full block; `IllegalArgument` if cells arrive out of key order, a
    /// search key comes, or a row longer than a key holds (a bug in the caller: the file is
    /// abandoned rather than written unsorted or unreadable). A refused cell leaves the
    /// writer as it was.
    pub fn add(&mut self, c: &Cell) -> Result<()> {
        if matches!(c.cell_type, CellType::Minimum | CellType::Maximum) {
            return Err(basalt_model::Error::IllegalArgument(format!(
                "a search key is not a cell to store: {c:?} in {}",
                self.file.path().display()
            )));
        }
        if c.row().len() > MAX_ROW_LENGTH {
            return Err(basalt_model::Error::IllegalArgument(format!(
                "a row of {} bytes, longer than the {MAX_ROW_LENGTH} a key holds, in {}",
                c.row().len(),
                self.file.path().display()
            )));
        }
        if let Some((last, seq_stored)) = self.last_key() {
            // The previous cell's key as stored, compared where it lies: a copy of each cell's
            // key cost a fifth of a compaction (BENCHMARKS.md).
            if cmp_encoded(last, seq_stored, &self.family, c) != Some(Ordering::Less) {
                let last = self.last_whole_key().map(Bytes::from);
                let last = last.and_then(|k| block::decode_key(&k, &self.family));
                return Err(basalt_model::Error::IllegalArgument(format!(
                    "store file cells out of key order: {last:?} then {c:?} in {}",
                    self.file.path().display()
                )));
            }
        }
        if let Some(bloom) = &mut self.bloom {
            let q: &[u8] = if c.cell_type.is_family_delete() {
                b""
            } else {
                c.qualifier()
            };
            bloom.add_row_col(c.row(), q);
        }
        let i = &mut self.info;
        if i.first_key.is_none() {
            i.first_key = Some(key_of(c));
        }
        i.max_seq_id = i.max_seq_id.max(c.seq_id);
        i.min_ts = i.min_ts.min(c.timestamp);
        if c.cell_type == CellType::Put {
            i.earliest_put_ts = i.earliest_put_ts.min(c.timestamp);
        }
        i.max_ts = i.max_ts.max(c.timestamp);
        i.cell_count += 1;
        if c.cell_type.is_delete() {
            i.delete_count += 1;
        }
        if c.cell_type == CellType::DeleteFamily || c.cell_type == CellType::DeleteFamilyVersion {
            i.delete_family_count += 1;
        }
        self.block.add(c);
        if self.block.size_bytes() >= self.block_size_bytes {
            self.flush_block()?;
        }
        Ok(())
    }

    /// The key of the last cell added as stored, and whether it holds its sequence id: the
    /// last in the open block, or else the last of the last block written (whole, as the
    /// index holds it).
    fn last_key(&self) -> Option<(&[u8], bool)> {
        if self.block.is_empty() {
            self.index.last().map(|(k, _, _)| (k.as_slice(), true))
        } else {
            Some(self.block.last_key())
        }
    }

    /// The whole encoded key of the last cell added.
    fn last_whole_key(&self) -> Option<Vec<u8>> {
        if self.block.is_empty() {
            self.index.last().map(|(k, _, _)| k.clone())
        } else {
            Some(self.block.last_whole_key())
        }
    }

    /// Makes the file's max sequence id at least `seq`: a compaction's output says its
    /// inputs' highest, as HBase's does, whichever cells it dropped or whose ids it cleared.
    /// Repair rebuilds a lost manifest's flushed sequence ids from it, and a WAL edit at or
    /// below it is not replayed into the store again.
    pub fn keep_max_seq_id(&mut self, seq: u64) {
        self.info.max_seq_id = self.info.max_seq_id.max(seq);
    }

    /// Number of cells added.
    #[must_use]
    pub fn cell_count(&self) -> u64 {
        self.info.cell_count
    }

    fn flush_block(&mut self) -> Result<()> {
        if self.block.is_empty() {
            return Ok(());
        }
        let last_key = self.block.last_whole_key();
        let body = self.block.finish();
        let (at, len) = self.write_section(&body, self.codec)?;
        self.index.push((last_key, at, len));
        Ok(())
    }

    /// Frames `body` with `codec` after what the file holds; where it starts and its length.
    fn write_section(&mut self, body: &[u8], codec: Compression) -> Result<(u64, u32)> {
        let at = self.offset;
        let checksum = block::BlockChecksum::WRITTEN;
        let len = block::frame_into(&mut self.pending, body, codec, checksum)?;
        let len = u32::try_from(len).expect("blocks and sections are far below 4 GiB");
        self.offset += u64::from(len);
        self.write_chunks()?;
        Ok((at, len))
    }

    /// Writes the whole [`WRITE_CHUNK`]s pending (invariant 1).
    fn write_chunks(&mut self) -> Result<()> {
        let whole = self.pending.len() / WRITE_CHUNK * WRITE_CHUNK;
        if whole > 0 {
            self.file.write_all(&self.pending[..whole])?;
            self.pending.drain(..whole);
        }
        invariant!(
            (self.offset - self.pending.len() as u64).is_multiple_of(WRITE_CHUNK as u64),
            "store file writer: {} bytes written, not whole chunks (invariant 1)",
            self.offset - self.pending.len() as u64
        );
        Ok(())
    }

    /// Writes the bloom, index, file info and trailer, syncs the file and returns its info.
    /// The writer is done after it, whatever the outcome: only [`StoreFileWriter::created`]
    /// is left to ask (a failed one's caller decides whether the file is its to remove).
    ///
    /// # Errors
    /// `Io` writing or syncing.
    pub fn finish(&mut self, major_compacted: bool) -> Result<(PathBuf, FileInfo)> {
        self.flush_block()?;
        let last = self.last_whole_key().map(Bytes::from);
        self.info.last_key = last.and_then(|k| block::decode_key(&k, &self.family));
        self.info.major_compacted = major_compacted;
        let (bloom_off, bloom_len) = match self.bloom.take() {
            Some(b) if self.info.cell_count > 0 => self.write_bloom(&b)?,
            _ => (0, 0),
        };
        let (index_off, index_len) = self.write_index()?;
        let info = encode_info(&self.info);
        let (info_off, info_len) = self.write_section(&info, Compression::None)?;
        let mut t = Vec::with_capacity(super::TRAILER_LEN);
        for (off, len) in [
            (index_off, index_len),
            (bloom_off, bloom_len),
            (info_off, info_len),
        ] {
            t.extend_from_slice(&off.to_le_bytes());
            t.extend_from_slice(&len.to_le_bytes());
        }
        t.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        let crc = crate::checksum::crc32c(&t);
        t.extend_from_slice(&crc.to_le_bytes());
        t.extend_from_slice(MAGIC);
        self.pending.extend_from_slice(&t);
        self.file.write_all(&self.pending)?;
        self.pending = Vec::new();
        self.file.sync_data()?;
        Ok((self.path.clone(), self.info.clone()))
    }

    /// Writes the block index in two levels (HBase's multi-level index): leaves of at most a
    /// data block's size, each the entries of consecutive data blocks, then the root, one
    /// entry a leaf (its last key and where it is stored), whose place the trailer records.
    fn write_index(&mut self) -> Result<(u64, u32)> {
        let blocks = std::mem::take(&mut self.index);
        let mut root = Vec::new();
        let (mut entries, mut count) = (Vec::new(), 0u64);
        for (i, (key, at, len)) in blocks.iter().enumerate() {
            put_index_entry(&mut entries, key, *at, *len);
            count += 1;
            if entries.len() >= self.block_size_bytes || i + 1 == blocks.len() {
                let mut leaf = Vec::with_capacity(entries.len() + 10);
                put_varint(&mut leaf, count);
                leaf.extend_from_slice(&entries);
                let (leaf_at, leaf_len) = self.write_section(&leaf, Compression::None)?;
                root.push((key, leaf_at, leaf_len));
                count = 0;
                entries.clear();
            }
        }
        let mut body = Vec::new();
        put_varint(&mut body, root.len() as u64);
        for (key, at, len) in root {
            put_index_entry(&mut body, key, at, len);
        }
        self.write_section(&body, Compression::None)
    }

    /// Writes the bloom filter's chunks, each of at most a data block's size, then their
    /// layout, whose place the trailer records.
    fn write_bloom(&mut self, bloom: &BloomBuilder) -> Result<(u64, u32)> {
        let (layout, lines) = bloom.finish(self.block_size_bytes, self.offset);
        for (i, chunk) in (0..).zip(layout.split(&lines)) {
            let written = self.write_section(chunk, Compression::None)?;
            invariant!(
                written == layout.chunk_at(i),
                "store file writer: bloom chunk {i} written at {written:?}, its layout says {:?}",
                layout.chunk_at(i)
            );
        }
        self.write_section(&layout.encode(), Compression::None)
    }

    /// Whether this writer created its file ([`crate::env::WritableFile::created`]).
    #[must_use]
    pub fn created(&self) -> bool {
        self.file.created()
    }
}

/// An index entry: a block's last key and where the block is stored.
fn put_index_entry(out: &mut Vec<u8>, key: &[u8], at: u64, len: u32) {
    put_bytes(out, key);
    out.extend_from_slice(&at.to_le_bytes());
    out.extend_from_slice(&len.to_le_bytes());
}

/// The cell's key alone (no value), as file info keeps it.
fn key_of(c: &Cell) -> Cell {
    let mut key = c.clone().with_value(bytes::Bytes::new());
    key.ttl_ms = None;
    key
}

fn encode_info(i: &FileInfo) -> Vec<u8> {
    let mut out = Vec::new();
    for k in [&i.first_key, &i.last_key] {
        let mut kb = Vec::new();
        if let Some(c) = k {
            block::encode_key(&mut kb, c);
        }
        put_bytes(&mut out, &kb);
    }
    put_varint(&mut out, i.max_seq_id);
    out.extend_from_slice(&i.min_ts.to_be_bytes());
    out.extend_from_slice(&i.earliest_put_ts.to_be_bytes());
    out.extend_from_slice(&i.max_ts.to_be_bytes());
    put_varint(&mut out, i.cell_count);
    put_varint(&mut out, i.delete_count);
    put_varint(&mut out, i.delete_family_count);
    out.push(u8::from(i.major_compacted));
    out.extend_from_slice(&i.created_ms.to_be_bytes());
    out
}
