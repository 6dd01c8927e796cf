//! Store files: immutable sorted runs of one store's cells (docs/formats/storefile.md).

pub mod block;
mod bloom;
pub(crate) mod family;
mod keys;
mod reader;
mod scanner;
mod writer;

pub use bloom::{bloom_key, row_col_hash, row_hash, Bloom, BloomBuilder, BloomLayout};
pub use keys::{DataBlock, IndexKeys};
pub use reader::{decode_index_block, parse_trailer, Caching, Index, StoreFile, Trailer};
pub use scanner::StoreFileScanner;
pub use writer::StoreFileWriter;

use basalt_model::{Cell, Timestamp};

/// A store file's identity within its table: the region whose directory holds it and its
/// number there. After a split or merge a region reads files of the region it came from
/// (references), so a file's number alone does not name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FileId {
    pub region: u64,
    pub file: u64,
}

/// What a store file says about itself (its file-info block).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileInfo {
    pub first_key: Option<Cell>,
    pub last_key: Option<Cell>,
    pub max_seq_id: u64,
    pub min_ts: Timestamp,
    /// Oldest Put (markers excluded); `i64::MAX` when the file has no Put. A major compaction
    /// drops markers older than every Put it compacts: they mask nothing.
    pub earliest_put_ts: Timestamp,
    pub max_ts: Timestamp,
    pub cell_count: u64,
    pub delete_count: u64,
    pub delete_family_count: u64,
    pub major_compacted: bool,
    pub created_ms: i64,
}

/// Trailer magic: never change.
pub const MAGIC: &[u8; 8] = b"BSLTSF01";
/// Store file format version written: as version 4, but every block's checksum is XXH3's
/// (`block::BlockChecksum`).
pub const FORMAT_VERSION: u32 = FORMAT_VERSION_5;
/// The fifth format version: the first whose blocks are checked with XXH3.
pub const FORMAT_VERSION_5: u32 = 5;
/// The fourth format version, still read: data blocks hold whole keys (but a zero sequence
/// id) and every entry's offset, in two bytes where they fit; the bloom filter is stored in
/// chunks and the index in two levels, each read a block at a time; blocks are checked with
/// CRC-32C.
pub const FORMAT_VERSION_4: u32 = 4;
/// The third format version, still read: as version 4, but the bloom filter and the index
/// are one block each.
pub const FORMAT_VERSION_3: u32 = 3;
/// The second format version, still read: every key holds its sequence id and every offset
/// is four bytes, which version 3's reader reads as they are.
pub const FORMAT_VERSION_2: u32 = 2;
/// The first format version, still read: data blocks with prefix-compressed keys, rewritten
/// into version 2's layout as they are read.
pub const LEGACY_FORMAT_VERSION: u32 = 1;
/// Fixed trailer length.
pub const TRAILER_LEN: usize = 52;

#[cfg(test)]
mod tests;
