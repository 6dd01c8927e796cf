//! Reads a store file: trailer, index, bloom and file info at open; data blocks on demand.

use std::path::Path;
use std::sync::Arc;

use basalt_model::{BloomType, Cell, Error, Result};
use bytes::Bytes;

use super::block::{self, decode_data_block};
use super::bloom::{bloom_key, Bloom};
use super::{FileInfo, FORMAT_VERSION, MAGIC, TRAILER_LEN};
use crate::codec::Reader;
use crate::env::{Env, RandomAccessFile};
use crate::store::scanner::CellSource;

#[derive(Debug)]
struct IndexEntry {
    last_key: Cell,
    offset: u64,
    len: u32,
}

/// An open store file.
#[derive(Debug)]
pub struct StoreFile {
    id: u64,
    file: RandomAccessFile,
    family: Bytes,
    index: Vec<IndexEntry>,
    bloom: Option<Bloom>,
    info: FileInfo,
}

impl StoreFile {
    /// Opens and checks a store file of `family`.
    ///
    /// # Errors
    /// `Corruption` naming the file and the part that failed; `Io`.
    pub fn open(env: &Env, path: &Path, id: u64, family: &Bytes) -> Result<StoreFile> {
        let file = env.open(path)?;
        let bad = |what: &'static str, d: String| Error::corruption(what, path, d);
        let len = file.len();
        if len < TRAILER_LEN as u64 {
            return Err(bad(
                "store file trailer",
                format!("file is {len} bytes, shorter than the trailer"),
            ));
        }
        let t = file.read_at(len - TRAILER_LEN as u64, TRAILER_LEN)?;
        if &t[44..] != MAGIC {
            return Err(bad("store file trailer", "bad magic".into()));
        }
        let crc = u32::from_le_bytes(
            t[40..44]
                .try_into()
                .map_err(|_| bad("store file trailer", "checksum".into()))?,
        );
        if crc32c::crc32c(&t[..40]) != crc {
            return Err(bad("store file trailer", "checksum mismatch".into()));
        }
        let mut r = Reader::new(&t);
        let mut section = || -> Option<(u64, u32)> { Some((r.u64_le()?, r.u32_le()?)) };
        let sections = [section(), section(), section()];
        let version = u32::from_le_bytes(
            t[36..40]
                .try_into()
                .map_err(|_| bad("store file trailer", "version".into()))?,
        );
        if version != FORMAT_VERSION {
            return Err(bad(
                "store file trailer",
                format!("unsupported format version {version}"),
            ));
        }
        let body_end = len - TRAILER_LEN as u64;
        let read_section = |s: Option<(u64, u32)>, what: &'static str| -> Result<Option<Bytes>> {
            let (off, n) = s.ok_or_else(|| bad("store file trailer", "truncated".into()))?;
            if n == 0 {
                return Ok(None);
            }
            if off
                .checked_add(u64::from(n))
                .is_none_or(|end| end > body_end)
            {
                return Err(bad(
                    what,
                    format!("section at {off} of {n} bytes lies outside the file"),
                ));
            }
            Ok(Some(block::unframe(
                &file.read_at(off, n as usize)?,
                path,
                off,
            )?))
        };
        let index_body = read_section(sections[0], "store file index")?
            .ok_or_else(|| bad("store file index", "missing".into()))?;
        let bloom_body = read_section(sections[1], "store file bloom")?;
        let info_body = read_section(sections[2], "store file info")?
            .ok_or_else(|| bad("store file info", "missing".into()))?;
        let index = decode_index(&index_body, family, body_end)
            .ok_or_else(|| bad("store file index", "malformed".into()))?;
        let bloom = match bloom_body {
            Some(b) => {
                Some(Bloom::decode(&b).ok_or_else(|| bad("store file bloom", "malformed".into()))?)
            }
            None => None,
        };
        let info = decode_info(&info_body, family)
            .ok_or_else(|| bad("store file info", "malformed".into()))?;
        Ok(StoreFile {
            id,
            file,
            family: family.clone(),
            index,
            bloom,
            info,
        })
    }

    /// The file's id in its store.
    #[must_use]
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The file's metadata.
    #[must_use]
    pub fn info(&self) -> &FileInfo {
        &self.info
    }

    /// Size on disk.
    #[must_use]
    pub fn size_bytes(&self) -> u64 {
        self.file.len()
    }

    /// The file's path.
    #[must_use]
    pub fn path(&self) -> &Path {
        self.file.path()
    }

    /// Number of data blocks.
    #[must_use]
    pub fn block_count(&self) -> usize {
        self.index.len()
    }

    /// False when the bloom filter proves `row` (and, for ROWCOL with `qualifier`, that
    /// column) is not in the file.
    #[must_use]
    pub fn may_contain(&self, row: &[u8], qualifier: Option<&[u8]>) -> bool {
        let Some(bloom) = &self.bloom else {
            return true;
        };
        match (bloom.kind, qualifier) {
            (BloomType::RowCol, Some(q)) => {
                bloom.may_contain(&bloom_key(BloomType::RowCol, row, q))
                    || (self.info.delete_family_count > 0
                        && bloom.may_contain(&bloom_key(BloomType::RowCol, row, b"")))
            }
            (BloomType::RowCol, None) | (BloomType::None, _) => true,
            (BloomType::Row, _) => bloom.may_contain(&bloom_key(BloomType::Row, row, b"")),
        }
    }

    fn read_block(&self, i: usize) -> Result<Vec<Cell>> {
        let e = &self.index[i];
        let stored = self.file.read_at(e.offset, e.len as usize)?;
        let body = block::unframe(&stored, self.file.path(), e.offset)?;
        decode_data_block(body, &self.family, self.file.path(), e.offset)
    }

    /// A scanner over the cells visible at `read_point`, positioned at the first.
    ///
    /// # Errors
    /// A corrupt first block.
    pub fn scanner(self: &Arc<Self>, read_point: u64) -> Result<StoreFileScanner> {
        let mut s = StoreFileScanner {
            file: Arc::clone(self),
            read_point,
            block: usize::MAX,
            cells: Vec::new(),
            pos: 0,
        };
        s.load(0, 0)?;
        Ok(s)
    }
}

fn decode_index(body: &[u8], family: &Bytes, body_end: u64) -> Option<Vec<IndexEntry>> {
    let mut r = Reader::new(body);
    let n = r.len()?;
    let mut out = Vec::with_capacity(n.min(1 << 16));
    for _ in 0..n {
        let key = Bytes::copy_from_slice(r.bytes()?);
        let last_key = block::decode_key(&key, family)?;
        let offset = r.u64_le()?;
        let len = r.u32_le()?;
        if offset.checked_add(u64::from(len))? > body_end {
            return None;
        }
        out.push(IndexEntry {
            last_key,
            offset,
            len,
        });
    }
    r.is_empty().then_some(out)
}

fn decode_info(body: &[u8], family: &Bytes) -> Option<FileInfo> {
    let mut r = Reader::new(body);
    let mut key = || -> Option<Option<Cell>> {
        let k = r.bytes()?;
        if k.is_empty() {
            return Some(None);
        }
        Some(Some(block::decode_key(&Bytes::copy_from_slice(k), family)?))
    };
    let first_key = key()?;
    let last_key = key()?;
    let info = FileInfo {
        first_key,
        last_key,
        max_seq_id: r.varint()?,
        min_ts: i64::from_be_bytes(r.take(8)?.try_into().ok()?),
        earliest_put_ts: i64::from_be_bytes(r.take(8)?.try_into().ok()?),
        max_ts: i64::from_be_bytes(r.take(8)?.try_into().ok()?),
        cell_count: r.varint()?,
        delete_count: r.varint()?,
        delete_family_count: r.varint()?,
        major_compacted: r.u8()? == 1,
        created_ms: i64::from_be_bytes(r.take(8)?.try_into().ok()?),
    };
    r.is_empty().then_some(info)
}

/// Iterates one store file in key order, a decoded block at a time.
#[derive(Debug)]
pub struct StoreFileScanner {
    file: Arc<StoreFile>,
    read_point: u64,
    block: usize,
    cells: Vec<Cell>,
    pos: usize,
}

impl StoreFileScanner {
    /// Positions at cell `pos` of block `block`, moving on to later blocks and past invisible
    /// cells as needed.
    fn load(&mut self, mut block: usize, mut pos: usize) -> Result<()> {
        loop {
            if block >= self.file.index.len() {
                self.block = block;
                self.cells.clear();
                self.pos = 0;
                return Ok(());
            }
            if block != self.block {
                self.cells = self.file.read_block(block)?;
                self.block = block;
            }
            while pos < self.cells.len() && self.cells[pos].seq_id > self.read_point {
                pos += 1;
            }
            if pos < self.cells.len() {
                self.pos = pos;
                return Ok(());
            }
            block += 1;
            pos = 0;
        }
    }
}

impl CellSource for StoreFileScanner {
    fn peek(&self) -> Option<&Cell> {
        self.cells.get(self.pos)
    }

    fn advance(&mut self) -> Result<()> {
        if self.pos < self.cells.len() {
            self.load(self.block, self.pos + 1)?;
        }
        Ok(())
    }

    fn seek(&mut self, key: &Cell) -> Result<()> {
        // A key inside the loaded block needs no index search (seeks may go either way: a
        // reversed scan seeks back to the start of each earlier row).
        let in_block = self.cells.first().is_some_and(|f| f < key)
            && self.cells.last().is_some_and(|l| l >= key);
        if in_block {
            let pos = self.cells.partition_point(|c| c < key);
            return self.load(self.block, pos);
        }
        let b = self.file.index.partition_point(|e| &e.last_key < key);
        if b >= self.file.index.len() {
            return self.load(b, 0);
        }
        if b != self.block {
            self.cells = self.file.read_block(b)?;
            self.block = b;
        }
        let pos = self.cells.partition_point(|c| c < key);
        self.load(b, pos)
    }

    fn last_row_before(&mut self, key: Option<&Cell>) -> Result<Option<Bytes>> {
        // Blocks before `b` hold only keys below `key`; block `b` may hold some.
        let b = key.map_or(self.file.index.len(), |key| {
            self.file.index.partition_point(|e| &e.last_key < key)
        });
        let visible = |c: &&Cell| c.seq_id <= self.read_point;
        if let (Some(key), true) = (key, b < self.file.index.len()) {
            let cells = self.file.read_block(b)?;
            let p = cells.partition_point(|c| c < key);
            if let Some(c) = cells[..p].iter().rev().find(visible) {
                return Ok(Some(c.row.clone()));
            }
        }
        for i in (0..b).rev() {
            if let Some(c) = self.file.read_block(i)?.iter().rev().find(visible) {
                return Ok(Some(c.row.clone()));
            }
        }
        Ok(None)
    }
}
