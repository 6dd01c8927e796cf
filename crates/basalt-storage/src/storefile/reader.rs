//! Reads a store file: trailer, index root, bloom layout and file info at open; index leaves,
//! bloom chunks and data blocks on demand.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use basalt_model::{BloomType, Cell, Error, Result};
use bytes::Bytes;

use super::block::{self, decode_data_block, decode_legacy_data_block, BlockChecksum};
use super::bloom::{row_col_hash, row_hash, Bloom, BloomLayout};
use super::keys::{check_key, Damage, DataBlock, IndexKeys};
use super::scanner::StoreFileScanner;
use super::{
    FileId, FileInfo, FORMAT_VERSION_2, FORMAT_VERSION_3, FORMAT_VERSION_4, FORMAT_VERSION_5,
    LEGACY_FORMAT_VERSION, MAGIC, TRAILER_LEN,
};
use crate::block_cache::{Block, BlockCache, BlockKey, Priority, IN_MEMORY_SHARE};
use crate::codec::Reader;
use crate::env::{Env, RandomAccessFile};
pub(super) use block_index::BlockRef;

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

/// An open store file. Its index's leaves and its bloom's chunks live in the block cache and
/// are read again on a miss; its file info, its index's root and the layout of its bloom's
/// chunks stay in memory.
#[derive(Debug)]
pub struct StoreFile {
    id: FileId,
    cache_id: u64,
    file: RandomAccessFile,
    family: Bytes,
    cache: Arc<BlockCache>,
    /// The index's root, one entry a leaf of the index (its last key and where it lies),
    /// kept in memory; before format version 4 the index was one block, its only leaf.
    root: Index,
    bloom: BloomAt,
    bloom_kind: BloomType,
    info: FileInfo,
    /// The trailer's format version: how data blocks are laid out.
    version: u32,
}

/// Where a store file's bloom filter lies.
#[derive(Debug)]
enum BloomAt {
    None,
    /// One block, cached whole (files before format version 4).
    Whole((u64, u32)),
    /// Chunks, each cached on its own when a read needs it.
    Chunked(BloomLayout),
}

impl Drop for StoreFile {
    fn drop(&mut self) {
        self.cache.evict_file(self.cache_id);
    }
}

impl StoreFile {
    /// Opens and checks a store file of `family`: trailer, the index's root, the bloom's
    /// layout (or, before format version 4, the whole index and filter) and file info are
    /// read and verified now, so a file damaged there is refused at open. Index leaves,
    /// bloom chunks and data blocks are checked, like any block, by the read that needs them.
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
        let checksum = BlockChecksum::of_version(version);
        let info_body = block::unframe(
            file.read_at(info_at.0, info_at.1 as usize)?,
            checksum,
            path,
            info_at.0,
        )?;
        let info = decode_info(&info_body, family).ok_or_else(|| bad("store file info"))?;
        let index_body = block::unframe(
            file.read_at(index_at.0, index_at.1 as usize)?,
            checksum,
            path,
            index_at.0,
        )?;
        let (root, only_leaf) = if version >= FORMAT_VERSION_4 {
            // The leaves lie before their root.
            let root = decode_index(&index_body, family, index_at.0);
            (root.ok_or_else(|| bad("store file index"))?, None)
        } else {
            let leaf = decode_index(&index_body, family, body_end);
            let leaf = leaf.ok_or_else(|| bad("store file index"))?;
            (IndexKeys::root_of_one(&leaf, index_at), Some(leaf))
        };
        let mut f = StoreFile {
            id,
            cache_id: NEXT_CACHE_ID.fetch_add(1, Ordering::Relaxed),
            file,
            family: super::family::interned(family),
            cache: Arc::clone(cache),
            root,
            bloom: BloomAt::None,
            bloom_kind: BloomType::None,
            info,
            version,
        };
        if let Some(leaf) = only_leaf {
            f.cache_leaf(index_at, leaf);
        }
        if bloom_at.1 > 0 {
            f.open_bloom(bloom_at)?;
        }
        f.warm()?;
        Ok(f)
    }

    /// Reads the index's leaves and the bloom's chunks into the cache, checking them, when
    /// together they take at most a sixteenth of it (a quarter of the share that protects
    /// index and bloom blocks from data). A flush's or compaction's new file is then ready
    /// for the reads that follow, which would otherwise each read a piece of it on their own
    /// path, as a file's whole index and filter were read at open before format version 4.
    /// A larger file's pieces are read as reads need them.
    fn warm(&self) -> Result<()> {
        let budget = (self.cache.capacity_bytes() as f64 * IN_MEMORY_SHARE / 4.0) as u64;
        let leaves: u64 = self.root.blocks().map(|(_, len)| u64::from(len)).sum();
        let chunks = match &self.bloom {
            BloomAt::Chunked(layout) => layout.chunks_end() - layout.chunk_at(0).0,
            BloomAt::None | BloomAt::Whole(_) => 0,
        };
        if leaves + chunks > budget {
            return Ok(());
        }
        self.warm_leaves()?;
        if let BloomAt::Chunked(layout) = &self.bloom {
            for i in 0..layout.chunks() {
                let chunk = |body: &[u8]| layout.chunk(i, body);
                self.bloom_block(layout.chunk_at(i), chunk, false)?;
            }
        }
        Ok(())
    }

    /// Reads the bloom section at `at`: a chunked filter's layout, whose chunks must end
    /// where it begins, or a filter stored whole, which is cached.
    fn open_bloom(&mut self, at: (u64, u32)) -> Result<()> {
        let body = self.read_section(at)?;
        let bad = |why: &str| Error::corruption("store file bloom", self.file.path(), why);
        if BloomLayout::is_layout(&body) {
            let layout = BloomLayout::decode(&body).ok_or_else(|| bad("malformed layout"))?;
            if layout.chunks_end() != at.0 {
                return Err(bad("its chunks do not end where its layout begins"));
            }
            self.bloom_kind = layout.kind;
            self.bloom = BloomAt::Chunked(layout);
        } else {
            let bloom = Bloom::decode(&body).ok_or_else(|| bad("malformed"))?;
            self.bloom_kind = bloom.kind;
            self.cache_bloom(at, bloom);
            self.bloom = BloomAt::Whole(at);
        }
        Ok(())
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
        let (h, family_marker) = match qualifier.filter(|_| probe_row_col) {
            Some(q) => (
                row_col_hash(row, q),
                (self.info.delete_family_count > 0).then(|| row_col_hash(row, b"")),
            ),
            None => (row_hash(row), None),
        };
        Ok(self.bloom_may_contain(h, cache_only)?
            || match family_marker {
                Some(h) => self.bloom_may_contain(h, cache_only)?,
                None => false,
            })
    }

    /// Whether the file's filter may hold the key of hash `h`; true without a filter.
    fn bloom_may_contain(&self, h: u64, cache_only: bool) -> Result<bool> {
        let bloom = match &self.bloom {
            BloomAt::None => return Ok(true),
            BloomAt::Whole(at) => self.bloom_block(*at, Bloom::decode, cache_only)?,
            BloomAt::Chunked(layout) => {
                let i = layout.chunk_of(h);
                let chunk = |body: &[u8]| layout.chunk(i, body);
                self.bloom_block(layout.chunk_at(i), chunk, cache_only)?
            }
        };
        Ok(bloom.may_contain_hash(h))
    }

    fn cache_key(&self, offset: u64) -> BlockKey {
        BlockKey {
            file: self.cache_id,
            offset,
        }
    }

    fn read_section(&self, (offset, len): (u64, u32)) -> Result<Bytes> {
        let stored = self.file.read_at(offset, len as usize)?;
        let checksum = BlockChecksum::of_version(self.version);
        block::unframe(stored, checksum, self.file.path(), offset)
    }

    /// [`Error::would_block`] for a memory-only read that missed the cache.
    fn not_cached(&self, what: &str) -> Error {
        Error::would_block(format!(
            "{what} of {} is not cached",
            self.file.path().display()
        ))
    }

    /// The filter stored at `at` (whole, or a chunk), from the cache or (unless
    /// `cache_only`) read, decoded by `decode` and cached.
    fn bloom_block(
        &self,
        at: (u64, u32),
        decode: impl FnOnce(&[u8]) -> Option<Bloom>,
        cache_only: bool,
    ) -> Result<Arc<Bloom>> {
        if let Some(Block::Bloom(b)) = self.cache.lookup(&self.cache_key(at.0), !cache_only) {
            return Ok(b);
        }
        if cache_only {
            return Err(self.not_cached("the bloom filter"));
        }
        let body = self.read_section(at)?;
        let bloom = decode(&body)
            .ok_or_else(|| Error::corruption("store file bloom", self.file.path(), "malformed"))?;
        Ok(self.cache_bloom(at, bloom))
    }

    /// Caches the filter (or chunk) stored at `at`.
    fn cache_bloom(&self, at: (u64, u32), bloom: Bloom) -> Arc<Bloom> {
        let bloom = Arc::new(bloom);
        self.cache.insert(
            self.cache_key(at.0),
            Block::Bloom(Arc::clone(&bloom)),
            bloom.size_bytes(),
            Priority::InMemory,
        );
        bloom
    }

    /// The error for damage `what` found in data block `b`.
    pub(super) fn damaged(&self, b: &BlockRef, what: Damage) -> Error {
        block::damaged(self.file.path(), b.at().0, what)
    }

    /// Data block `b`, from the cache or read and its layout checked.
    pub(super) fn data_block(&self, b: &BlockRef, caching: Caching) -> Result<Arc<DataBlock>> {
        let (offset, len) = b.at();
        let key = self.cache_key(offset);
        let cached = self
            .cache
            .lookup_data(&key, !caching.cache_only, caching.count);
        if let Some(Block::Data(block)) = cached {
            return Ok(block);
        }
        if caching.cache_only {
            return Err(self.not_cached(&format!("the data block at {offset}")));
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
    #[must_use]
    pub fn scanner(self: &Arc<Self>, read_point: u64, caching: Caching) -> StoreFileScanner {
        StoreFileScanner::new(Arc::clone(self), read_point, caching, None)
    }

    /// A scanner as [`StoreFile::scanner`], of `row`'s cells alone: a Get's. It ends where
    /// the next row begins, without building that row's first cell.
    #[must_use]
    pub fn row_scanner(
        self: &Arc<Self>,
        read_point: u64,
        caching: Caching,
        row: &Bytes,
    ) -> StoreFileScanner {
        StoreFileScanner::new(Arc::clone(self), read_point, caching, Some(row.clone()))
    }
}

mod block_index;

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
    /// [`FORMAT_VERSION_5`] down to [`FORMAT_VERSION_2`], or [`LEGACY_FORMAT_VERSION`] for
    /// a file whose data blocks have prefix-compressed keys.
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
    if crate::checksum::crc32c(&t[..40]) != word(40) {
        return Err(bad("checksum mismatch".into()));
    }
    let version = word(36);
    if ![
        FORMAT_VERSION_5,
        FORMAT_VERSION_4,
        FORMAT_VERSION_3,
        FORMAT_VERSION_2,
        LEGACY_FORMAT_VERSION,
    ]
    .contains(&version)
    {
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

/// Decodes an index block body (its frame removed: a leaf, or from format version 4 on the
/// root) whose entries' blocks end by `body_end`; `None` when malformed. Never panics.
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
