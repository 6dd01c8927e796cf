//! Reads a store file: trailer, index, bloom and file info at open; data blocks on demand.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use basalt_model::{BloomType, Cell, CellType, Error, Result};
use bytes::Bytes;

use super::block::{self, decode_data_block, decode_legacy_data_block};
use super::bloom::Bloom;
use super::keys::{check_key, Damage, DataBlock, IndexKeys, Passing, Visible};
use super::{FileId, FileInfo, FORMAT_VERSION, LEGACY_FORMAT_VERSION, MAGIC, TRAILER_LEN};
use crate::block_cache::{Block, BlockCache, BlockKey, Priority};
use crate::codec::Reader;
use crate::env::{Env, RandomAccessFile};
use crate::store::scanner::{first_on_next_row, CellSource, STEPS_BEFORE_SEEK};

/// A decoded block index.
pub type Index = IndexKeys;

/// How a read uses the block cache for data blocks (index and bloom blocks are always cached).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Caching {
    /// Whether blocks read from disk are added to the cache.
    pub insert: bool,
    pub priority: Priority,
    /// Whether reads are counted as query block reads (compactions are not).
    pub count: bool,
    /// Memory only (RocksDB's block-cache tier): a block that is not cached is not read,
    /// and the read fails with [`Error::would_block`] instead.
    pub cache_only: bool,
}

impl Caching {
    /// A query of a family with `BLOCKCACHE => true`.
    pub const QUERY: Caching = Caching {
        insert: true,
        priority: Priority::Normal,
        count: true,
        cache_only: false,
    };
    /// A flush or compaction: blocks are read once, so they are not cached.
    pub const COMPACTION: Caching = Caching {
        insert: false,
        priority: Priority::Normal,
        count: false,
        cache_only: false,
    };
}

/// Gives every open file its own block-cache namespace: file ids repeat across stores.
static NEXT_CACHE_ID: AtomicU64 = AtomicU64::new(1);

/// An open store file. Its index and bloom live in the block cache and are read again on a
/// miss; its file info stays in memory.
#[derive(Debug)]
pub struct StoreFile {
    id: FileId,
    cache_id: u64,
    file: RandomAccessFile,
    family: Bytes,
    cache: Arc<BlockCache>,
    index_at: (u64, u32),
    bloom_at: Option<(u64, u32)>,
    bloom_kind: BloomType,
    info: FileInfo,
    /// The trailer's format version: how data blocks are laid out.
    version: u32,
}

impl Drop for StoreFile {
    fn drop(&mut self) {
        self.cache.evict_file(self.cache_id);
    }
}

impl StoreFile {
    /// Opens and checks a store file of `family`: trailer, index, bloom and file info are read
    /// and verified now, so a damaged file is refused at open rather than at some later read.
    ///
    /// # Errors
    /// `Corruption` naming the file and the part that failed; `Io`.
    pub fn open(
        env: &Env,
        path: &Path,
        id: FileId,
        family: &Bytes,
        cache: &Arc<BlockCache>,
    ) -> Result<StoreFile> {
        let file = env.open(path)?;
        let Trailer { sections, version } = read_trailer(&file, path)?;
        let body_end = file.len() - TRAILER_LEN as u64;
        for (s, what) in sections.iter().zip(SECTION_NAMES) {
            if s.0
                .checked_add(u64::from(s.1))
                .is_none_or(|end| end > body_end)
            {
                return Err(Error::corruption(
                    what,
                    path,
                    format!("section at {} of {} bytes lies outside the file", s.0, s.1),
                ));
            }
        }
        let [index_at, bloom_at, info_at] = sections;
        if index_at.1 == 0 || info_at.1 == 0 {
            return Err(Error::corruption(
                "store file trailer",
                path,
                "index or file info missing",
            ));
        }
        let bad = |what: &'static str| Error::corruption(what, path, "malformed");
        let info_body = block::unframe(
            file.read_at(info_at.0, info_at.1 as usize)?,
            path,
            info_at.0,
        )?;
        let info = decode_info(&info_body, family).ok_or_else(|| bad("store file info"))?;
        let mut f = StoreFile {
            id,
            cache_id: NEXT_CACHE_ID.fetch_add(1, Ordering::Relaxed),
            file,
            family: super::family::interned(family),
            cache: Arc::clone(cache),
            index_at,
            bloom_at: (bloom_at.1 > 0).then_some(bloom_at),
            bloom_kind: BloomType::None,
            info,
            version,
        };
        f.index(false)?;
        f.bloom_kind = f.bloom(false)?.map_or(BloomType::None, |b| b.kind);
        Ok(f)
    }
    /// The file's identity in its table.
    #[must_use]
    pub fn id(&self) -> FileId {
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

    /// The row in the middle of the file's data (HBase splits a region at its largest
    /// file's mid key): the cell half way through the data by bytes, found through the block
    /// offsets and then by position in its block. `None` for an empty file.
    ///
    /// # Errors
    /// A damaged block.
    pub fn mid_row(&self) -> Result<Option<Bytes>> {
        let index = self.index(false)?;
        let Some(last) = index.len().checked_sub(1) else {
            return Ok(None);
        };
        let (first_at, _) = index.block(0);
        let (last_at, last_len) = index.block(last);
        let target = first_at + (last_at + u64::from(last_len) - first_at) / 2;
        let b = (0..=last)
            .find(|&i| {
                let (at, len) = index.block(i);
                at + u64::from(len) > target
            })
            .unwrap_or(last);
        let (at, len) = index.block(b);
        let block = self.data_block(&index, b, Caching::COMPACTION)?;
        if block.is_empty() {
            return Ok(None);
        }
        let into = (target.saturating_sub(at) as f64 / f64::from(len.max(1))).min(1.0);
        let pos = ((block.len() as f64 * into) as usize).min(block.len() - 1);
        let row = block
            .row(pos)
            .map_err(|what| self.damaged(&index, b, what))?;
        Ok(Some(row))
    }

    /// Number of data blocks.
    ///
    /// # Errors
    /// The index had to be read again and was damaged.
    pub fn block_count(&self) -> Result<usize> {
        Ok(self.index(false)?.len())
    }

    /// False when the bloom filter proves `row` (and, for ROWCOL with `qualifier`, that
    /// column) is not in the file.
    ///
    /// # Errors
    /// The bloom block had to be read again and was damaged.
    pub fn may_contain(&self, row: &[u8], qualifier: Option<&[u8]>) -> Result<bool> {
        self.may_contain_in(row, qualifier, false)
    }

    /// [`StoreFile::may_contain`]; with `cache_only`, [`Error::would_block`] when the bloom
    /// block is not cached.
    ///
    /// # Errors
    /// As [`StoreFile::may_contain`].
    pub fn may_contain_in(
        &self,
        row: &[u8],
        qualifier: Option<&[u8]>,
        cache_only: bool,
    ) -> Result<bool> {
        let probe_row_col = matches!((self.bloom_kind, qualifier), (BloomType::RowCol, Some(_)));
        if self.bloom_kind != BloomType::Row && !probe_row_col {
            return Ok(true);
        }
        let Some(bloom) = self.bloom(cache_only)? else {
            return Ok(true);
        };
        Ok(match qualifier.filter(|_| probe_row_col) {
            Some(q) => {
                bloom.may_contain_row_col(row, q)
                    || (self.info.delete_family_count > 0 && bloom.may_contain_row_col(row, b""))
            }
            None => bloom.may_contain_row(row),
        })
    }

    fn cache_key(&self, offset: u64) -> BlockKey {
        BlockKey {
            file: self.cache_id,
            offset,
        }
    }

    fn read_section(&self, (offset, len): (u64, u32)) -> Result<Bytes> {
        let stored = self.file.read_at(offset, len as usize)?;
        block::unframe(stored, self.file.path(), offset)
    }

    /// [`Error::would_block`] for a memory-only read that missed the cache.
    fn not_cached(&self, what: &str) -> Error {
        Error::would_block(format!(
            "{what} of {} is not cached",
            self.file.path().display()
        ))
    }

    /// The block index, from the cache or (unless `cache_only`) read again.
    fn index(&self, cache_only: bool) -> Result<Arc<Index>> {
        let key = self.cache_key(self.index_at.0);
        if let Some(Block::Index(i)) = self.cache.lookup(&key, !cache_only) {
            return Ok(i);
        }
        if cache_only {
            return Err(self.not_cached("the index"));
        }
        let body = self.read_section(self.index_at)?;
        let body_end = self.file.len() - TRAILER_LEN as u64;
        let index = decode_index(&body, &self.family, body_end)
            .ok_or_else(|| Error::corruption("store file index", self.file.path(), "malformed"))?;
        let index = Arc::new(index);
        let weight = index.weight();
        self.cache.insert(
            key,
            Block::Index(Arc::clone(&index)),
            weight,
            Priority::InMemory,
        );
        Ok(index)
    }

    /// The bloom filter, from the cache or (unless `cache_only`) read again; `None` when the
    /// file has none.
    fn bloom(&self, cache_only: bool) -> Result<Option<Arc<Bloom>>> {
        let Some(at) = self.bloom_at else {
            return Ok(None);
        };
        let key = self.cache_key(at.0);
        if let Some(Block::Bloom(b)) = self.cache.lookup(&key, !cache_only) {
            return Ok(Some(b));
        }
        if cache_only {
            return Err(self.not_cached("the bloom filter"));
        }
        let body = self.read_section(at)?;
        let bloom = Bloom::decode(&body)
            .ok_or_else(|| Error::corruption("store file bloom", self.file.path(), "malformed"))?;
        let bloom = Arc::new(bloom);
        let weight = bloom.size_bytes();
        self.cache.insert(
            key,
            Block::Bloom(Arc::clone(&bloom)),
            weight,
            Priority::InMemory,
        );
        Ok(Some(bloom))
    }

    /// The error for damage `what` found in data block `i` of `index`.
    fn damaged(&self, index: &Index, i: usize, what: Damage) -> Error {
        block::damaged(self.file.path(), index.block(i).0, what)
    }

    /// Data block `i` of `index`, from the cache or read and its layout checked.
    fn data_block(&self, index: &Index, i: usize, caching: Caching) -> Result<Arc<DataBlock>> {
        let (offset, len) = index.block(i);
        let key = self.cache_key(offset);
        let cached = self.cache.lookup(&key, !caching.cache_only);
        if caching.count && (cached.is_some() || !caching.cache_only) {
            self.cache.count_data_block_read();
        }
        if let Some(Block::Data(block)) = cached {
            return Ok(block);
        }
        if caching.cache_only {
            return Err(self.not_cached(&format!("data block {i}")));
        }
        let body = self.read_section((offset, len))?;
        let (family, path) = (&self.family, self.file.path());
        let block = Arc::new(if self.version == LEGACY_FORMAT_VERSION {
            decode_legacy_data_block(&body, family, path, offset)?
        } else {
            decode_data_block(body, family, path, offset)?
        });
        if caching.insert {
            let weight = block.weight();
            let b = Block::Data(Arc::clone(&block));
            self.cache.insert(key, b, weight, caching.priority);
        }
        Ok(block)
    }

    /// A scanner over the cells visible at `read_point`. It is positioned nowhere: its first
    /// call must be a seek, so a Get reads only the blocks its seek lands on.
    ///
    /// # Errors
    /// The index had to be read again and was damaged.
    pub fn scanner(
        self: &Arc<Self>,
        read_point: u64,
        caching: Caching,
    ) -> Result<StoreFileScanner> {
        Ok(StoreFileScanner {
            index: self.index(caching.cache_only)?,
            file: Arc::clone(self),
            read_point,
            caching,
            block: usize::MAX,
            data: None,
            pos: 0,
            current: None,
            row: None,
            pending: None,
        })
    }

    /// A scanner as [`StoreFile::scanner`], of `row`'s cells alone: a Get's. It ends where
    /// the next row begins, without building that row's first cell.
    ///
    /// # Errors
    /// As [`StoreFile::scanner`].
    pub fn row_scanner(
        self: &Arc<Self>,
        read_point: u64,
        caching: Caching,
        row: &Bytes,
    ) -> Result<StoreFileScanner> {
        Ok(StoreFileScanner {
            row: Some(row.clone()),
            ..self.scanner(read_point, caching)?
        })
    }
}

const SECTION_NAMES: [&str; 3] = ["store file index", "store file bloom", "store file info"];

/// Reads and checks the trailer.
fn read_trailer(file: &RandomAccessFile, path: &Path) -> Result<Trailer> {
    let len = file.len();
    if len < TRAILER_LEN as u64 {
        return Err(Error::corruption(
            "store file trailer",
            path,
            format!("file is {len} bytes, shorter than the trailer"),
        ));
    }
    parse_trailer(&file.read_at(len - TRAILER_LEN as u64, TRAILER_LEN)?, path)
}

/// What a store file's trailer says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Trailer {
    /// The (offset, length) of the index, bloom and file info sections.
    pub sections: [(u64, u32); 3],
    /// [`FORMAT_VERSION`], or [`LEGACY_FORMAT_VERSION`] for a file whose data blocks have
    /// prefix-compressed keys.
    pub version: u32,
}

/// Checks a trailer's bytes (exactly [`TRAILER_LEN`]). Never panics, whatever the bytes.
///
/// # Errors
/// `Corruption` naming `path`.
pub fn parse_trailer(t: &[u8], path: &Path) -> Result<Trailer> {
    let bad = |d: String| Error::corruption("store file trailer", path, d);
    if t.len() != TRAILER_LEN {
        return Err(bad(format!(
            "trailer is {} bytes, not {TRAILER_LEN}",
            t.len()
        )));
    }
    if &t[44..] != MAGIC {
        return Err(bad("bad magic".into()));
    }
    let word = |at: usize| -> u32 { u32::from_le_bytes([t[at], t[at + 1], t[at + 2], t[at + 3]]) };
    if crc32c::crc32c(&t[..40]) != word(40) {
        return Err(bad("checksum mismatch".into()));
    }
    let version = word(36);
    if version != FORMAT_VERSION && version != LEGACY_FORMAT_VERSION {
        return Err(bad(format!("unsupported format version {version}")));
    }
    let mut r = Reader::new(t);
    let mut section = || -> Option<(u64, u32)> { Some((r.u64_le()?, r.u32_le()?)) };
    let truncated = || bad("truncated".into());
    let sections = [
        section().ok_or_else(truncated)?,
        section().ok_or_else(truncated)?,
        section().ok_or_else(truncated)?,
    ];
    Ok(Trailer { sections, version })
}

/// Decodes an index block body (its frame removed) for a file whose data ends at `body_end`;
/// `None` when malformed. Never panics.
#[must_use]
pub fn decode_index_block(body: &[u8], family: &Bytes, body_end: u64) -> Option<Index> {
    decode_index(body, family, body_end)
}

fn decode_index(body: &[u8], family: &Bytes, body_end: u64) -> Option<Index> {
    let mut r = Reader::new(body);
    let n = r.len()?;
    let mut keys = Vec::new();
    let mut entries = Vec::with_capacity(n.min(1 << 16));
    for _ in 0..n {
        let key = r.bytes()?;
        check_key(key)?;
        let at = u32::try_from(keys.len()).ok()?;
        keys.extend_from_slice(key);
        let offset = r.u64_le()?;
        let len = r.u32_le()?;
        if offset.checked_add(u64::from(len))? > body_end {
            return None;
        }
        entries.push((at, u32::try_from(key.len()).ok()?, offset, len));
    }
    r.is_empty()
        .then(|| IndexKeys::new(family.clone(), Bytes::from(keys), entries))
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

/// Iterates one store file in key order, a block at a time. Only the cell it stands on is
/// built; searches compare encoded keys in place.
///
/// # Invariants
/// 1. While a seek is put off (`pending`), `current` is a stand-in that sorts at or before
///    every cell of the file at or after the key sought: the key itself, or its column's
///    first key at the file's newest timestamp when the key is newer. No cell of the file
///    is newer than that, so none of the column's cells sorts before it. The key sought is
///    the stand-in with the timestamp, type and sequence id kept in `pending`.
#[derive(Debug)]
pub struct StoreFileScanner {
    file: Arc<StoreFile>,
    index: Arc<Index>,
    read_point: u64,
    caching: Caching,
    /// The loaded block (`usize::MAX`: none yet).
    block: usize,
    data: Option<Arc<DataBlock>>,
    pos: usize,
    /// The current cell; while a seek is put off (`pending`), its stand-in.
    current: Option<Cell>,
    /// The one row a Get's scanner reads: cells past it are not built.
    row: Option<Bytes>,
    /// A Get's seek put off ([`CellSource::seek_lazily`]): the timestamp, type and sequence
    /// id of the key sought, whose row and column are the stand-in's (invariant 1).
    pending: Option<(i64, CellType, u64)>,
}

impl StoreFileScanner {
    /// The error for damage `what` found in block `block`.
    fn damaged(&self, block: usize, what: Damage) -> Error {
        self.file.damaged(&self.index, block, what)
    }

    fn set_block(&mut self, block: usize) -> Result<&DataBlock> {
        if block != self.block || self.data.is_none() {
            self.data = Some(self.file.data_block(&self.index, block, self.caching)?);
            self.block = block;
        }
        match &self.data {
            Some(d) => Ok(d),
            None => Err(basalt_model::Error::DoNotRetry("no block loaded".into())),
        }
    }

    /// Positions at cell `pos` of block `block`, moving on to later blocks and past invisible
    /// cells as needed.
    fn load(&mut self, mut block: usize, mut pos: usize) -> Result<()> {
        loop {
            if block >= self.index.len() {
                self.block = block;
                self.data = None;
                self.pos = 0;
                self.current = None;
                return Ok(());
            }
            self.set_block(block)?;
            // The cell is built where the scanner keeps it (`next_visible`).
            let Some(d) = self.data.as_deref() else {
                return Err(basalt_model::Error::DoNotRetry("no block loaded".into()));
            };
            let visible =
                d.next_visible(pos, self.read_point, self.row.as_deref(), &mut self.current);
            match visible.map_err(|what| self.damaged(block, what))? {
                Visible::Cell(at) => {
                    self.pos = at;
                    return Ok(());
                }
                Visible::PastRow(at) => {
                    self.current = None;
                    self.pos = at;
                    return Ok(());
                }
                Visible::End => (block, pos) = (block + 1, 0),
            }
        }
    }
}

impl StoreFileScanner {
    /// Puts off the seek to `target` (HBase's lazy seek): the stand-in of invariant 1 takes
    /// the current cell's place until the merge needs the file's real cell, which a Get of
    /// a column whose newest version lies in a newer file never does. A Get's scanner sent
    /// past its row is done.
    fn put_off(&mut self, target: Cell) {
        if self.row.as_deref().is_some_and(|row| target.row() != row) {
            self.pending = None;
            self.current = None;
            return;
        }
        let newest = self.file.info().max_ts;
        let mut stand_in = target;
        self.pending = Some((stand_in.timestamp, stand_in.cell_type, stand_in.seq_id));
        if stand_in.timestamp > newest {
            stand_in.timestamp = newest;
            stand_in.cell_type = CellType::Maximum;
            stand_in.seq_id = u64::MAX;
        }
        self.current = Some(stand_in);
    }

    /// The key of the seek put off, taken out with the stand-in; `None` when none is.
    fn take_pending(&mut self) -> Option<Cell> {
        let (timestamp, cell_type, seq_id) = self.pending.take()?;
        let mut target = self.current.take()?;
        target.timestamp = timestamp;
        target.cell_type = cell_type;
        target.seq_id = seq_id;
        Some(target)
    }

    /// Passes the cells after the current one that `passing` names, reading their keys where
    /// they lie in the loaded block, so no cell is built for them; at most
    /// [`STEPS_BEFORE_SEEK`] of them. Then it loads the first cell not passed and answers
    /// true; false when the cells passed reach the block's end or the steps' limit (the
    /// caller then seeks).
    fn pass_in_block(&mut self, passing: &Passing<'_>) -> Result<bool> {
        let Some(d) = self.data.as_deref() else {
            return Ok(false);
        };
        let (from, row) = (self.pos + 1, self.row.as_deref());
        let passed = d.pass(
            from,
            from + STEPS_BEFORE_SEEK,
            passing,
            self.read_point,
            row,
            &mut self.current,
        );
        match passed.map_err(|what| self.damaged(self.block, what))? {
            None => Ok(false),
            Some(Visible::Cell(at)) => {
                self.pos = at;
                Ok(true)
            }
            Some(Visible::PastRow(at)) => {
                self.current = None;
                self.pos = at;
                Ok(true)
            }
            Some(Visible::End) => {
                self.current = None;
                self.load(self.block + 1, 0)?;
                Ok(true)
            }
        }
    }
}

/// The skips compare the keys of the cells they pass where the keys lie in the block: a cell
/// built is a count taken on the block's buffer and dropped again, and 128 bytes written.
impl CellSource for StoreFileScanner {
    fn peek(&self) -> Option<&Cell> {
        self.current.as_ref()
    }

    fn advance(&mut self) -> Result<()> {
        // The cell after a stand-in is the first real one at or after it.
        if self.pending.is_some() {
            return self.resolve();
        }
        if self.current.take().is_some() {
            self.load(self.block, self.pos + 1)?;
        }
        Ok(())
    }

    fn take_into(&mut self, out: &mut Vec<Cell>) -> Result<bool> {
        if self.pending.is_some() {
            self.resolve()?;
        }
        let Some(cell) = self.current.take() else {
            return Ok(false);
        };
        out.push(cell);
        self.load(self.block, self.pos + 1)?;
        Ok(true)
    }

    fn skip_to(&mut self, key: &Cell) -> Result<()> {
        if self.current.as_ref().is_none_or(|c| c >= key) {
            return Ok(());
        }
        if let Some(target) = self.take_pending() {
            self.put_off(key.clone().max(target));
            return Ok(());
        }
        if !self.pass_in_block(&Passing::Below(key))? {
            self.seek(key)?;
        }
        Ok(())
    }

    fn skip_column(&mut self, column: &Cell) -> Result<()> {
        if !self.current.as_ref().is_some_and(|c| c.same_column(column)) {
            return Ok(());
        }
        if let Some(target) = self.take_pending() {
            let past = Cell::last_on_column(column.row(), &column.family, column.qualifier());
            self.put_off(past.max(target));
            return Ok(());
        }
        let of_column = Passing::Column {
            row: column.row(),
            qualifier: column.qualifier(),
        };
        if !self.pass_in_block(&of_column)? {
            self.seek(&Cell::last_on_column(
                column.row(),
                &column.family,
                column.qualifier(),
            ))?;
        }
        Ok(())
    }

    fn skip_row(&mut self, row: &[u8]) -> Result<()> {
        if self.current.as_ref().is_none_or(|c| !c.is_of_row(row)) {
            return Ok(());
        }
        if self.row.as_deref() == Some(row) {
            // A Get's scanner reads its row alone: past it, it is done.
            self.pending = None;
            self.current = None;
            return Ok(());
        }
        if let Some(target) = self.take_pending() {
            self.put_off(first_on_next_row(row).max(target));
            return Ok(());
        }
        if !self.pass_in_block(&Passing::Row(row))? {
            self.seek(&first_on_next_row(row))?;
        }
        Ok(())
    }

    fn seek(&mut self, key: &Cell) -> Result<()> {
        self.pending = None;
        // A key inside the loaded block needs no index search (seeks may go either way: a
        // reversed scan seeks back to the start of each earlier row).
        let in_block = |d: &DataBlock| -> std::result::Result<bool, Damage> {
            Ok(!d.is_empty() && d.cmp_at(0, key)?.is_lt() && d.cmp_at(d.len() - 1, key)?.is_ge())
        };
        let b = match self.data.as_deref().map(in_block) {
            Some(Ok(true)) => self.block,
            Some(Err(what)) => return Err(self.damaged(self.block, what)),
            Some(Ok(false)) | None => self.index.lower_bound(key),
        };
        if b >= self.index.len() {
            return self.load(b, 0);
        }
        let pos = self.set_block(b)?.lower_bound(key);
        let pos = pos.map_err(|what| self.damaged(b, what))?;
        self.load(b, pos)
    }

    /// A Get's scanner of a file without family-level markers waits at `column`: the cells
    /// before it in the row are of columns the Get does not read, and no marker among them
    /// masks the columns it does.
    fn seek_lazily(&mut self, key: &Cell, column: &Cell) -> Result<()> {
        if self.row.is_none() || self.file.info().delete_family_count > 0 {
            return self.seek(key);
        }
        self.put_off(column.clone());
        Ok(())
    }

    fn is_pending(&self) -> bool {
        self.pending.is_some()
    }

    fn resolve(&mut self) -> Result<()> {
        match self.take_pending() {
            Some(target) => self.seek(&target),
            None => Ok(()),
        }
    }

    fn last_row_before(&mut self, key: Option<&Cell>) -> Result<Option<Bytes>> {
        // Blocks before `b` hold only keys below `key`; block `b` may hold some.
        let n = self.index.len();
        let b = key.map_or(n, |key| self.index.lower_bound(key));
        let read_point = self.read_point;
        let last_visible = |d: &DataBlock, end: usize| -> std::result::Result<_, Damage> {
            for i in (0..end).rev() {
                if d.seq_id(i)? <= read_point {
                    return Ok(Some(d.row(i)?));
                }
            }
            Ok(None)
        };
        if let (Some(key), true) = (key, b < n) {
            let d = self.file.data_block(&self.index, b, self.caching)?;
            let row = d.lower_bound(key).and_then(|end| last_visible(&d, end));
            if let Some(row) = row.map_err(|what| self.damaged(b, what))? {
                return Ok(Some(row));
            }
        }
        for i in (0..b).rev() {
            let d = self.file.data_block(&self.index, i, self.caching)?;
            if let Some(row) = last_visible(&d, d.len()).map_err(|what| self.damaged(i, what))? {
                return Ok(Some(row));
            }
        }
        Ok(None)
    }
}
