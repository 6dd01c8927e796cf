//! The block index in two levels (HBase's multi-level block index): the root, kept by the
//! open file, has one entry a leaf; a leaf, cached like a data block, one entry a data block.
//! A read loads the one leaf its key falls in. An index stored whole had to fit in one shard
//! of the block cache, and one that did not (a file of 4 KiB blocks and 10M rows with a
//! 64 MiB cache) was read again, megabytes, by every Get (`BENCHMARKS.md`).
//!
//! A data block is named by a [`BlockRef`]: its leaf and its place there, so the next and
//! previous blocks are found without a search, and its place on disk without a lookup.

use std::sync::Arc;

use basalt_model::{Cell, Error, Result};

use super::{Caching, Index, StoreFile};
use crate::block_cache::{Block, Priority};
use crate::storefile::keys::partition;
use crate::storefile::TRAILER_LEN;

/// A data block of a file: entry `n` of leaf `leaf_no` of its index.
#[derive(Clone, Debug)]
pub struct BlockRef {
    leaf_no: usize,
    leaf: Arc<Index>,
    n: usize,
}

impl BlockRef {
    /// Where the block is stored: offset and stored length.
    pub fn at(&self) -> (u64, u32) {
        self.leaf.block(self.n)
    }

    /// Whether `self` and `other` name the same block of one file.
    pub fn is(&self, other: &BlockRef) -> bool {
        (self.leaf_no, self.n) == (other.leaf_no, other.n)
    }
}

impl StoreFile {
    /// Leaf `i` of the index, from the cache or (unless `cache_only`) read and cached.
    fn leaf(&self, i: usize, cache_only: bool) -> Result<Arc<Index>> {
        let at = self.root.block(i);
        let key = self.cache_key(at.0);
        if let Some(Block::Index(leaf)) = self.cache.lookup(&key, !cache_only) {
            return Ok(leaf);
        }
        if cache_only {
            return Err(self.not_cached("the index"));
        }
        let body = self.read_section(at)?;
        let data_end = self.file.len() - TRAILER_LEN as u64;
        let leaf = super::decode_index(&body, &self.family, data_end)
            .ok_or_else(|| Error::corruption("store file index", self.file.path(), "malformed"))?;
        Ok(self.cache_leaf(at, leaf))
    }

    /// Reads every leaf not cached into the cache ([`StoreFile::warm`]).
    pub(super) fn warm_leaves(&self) -> Result<()> {
        (0..self.root.len()).try_for_each(|i| self.leaf(i, false).map(drop))
    }

    /// Caches the leaf stored at `at`.
    pub(super) fn cache_leaf(&self, at: (u64, u32), leaf: Index) -> Arc<Index> {
        let leaf = Arc::new(leaf);
        let weight = leaf.weight();
        let block = Block::Index(Arc::clone(&leaf));
        self.cache
            .insert(self.cache_key(at.0), block, weight, Priority::InMemory);
        leaf
    }

    /// The first data block whose last key is at or after `key`; `None` when none is.
    ///
    /// # Errors
    /// A leaf is not cached and `cache_only`, or it is damaged.
    pub(in crate::storefile) fn find_block(
        &self,
        key: &Cell,
        cache_only: bool,
    ) -> Result<Option<BlockRef>> {
        let leaf_no = self.root.lower_bound(key);
        if leaf_no >= self.root.len() {
            return Ok(None);
        }
        let leaf = self.leaf(leaf_no, cache_only)?;
        match leaf.lower_bound(key) {
            n if n < leaf.len() => Ok(Some(BlockRef { leaf_no, leaf, n })),
            // Only if the root's key for the leaf is not the leaf's last (a damaged file).
            _ => self.first_block_from(leaf_no + 1, cache_only),
        }
    }

    /// The data block after `b`; `None` after the last.
    ///
    /// # Errors
    /// As [`StoreFile::find_block`].
    pub(in crate::storefile) fn block_after(
        &self,
        b: &BlockRef,
        cache_only: bool,
    ) -> Result<Option<BlockRef>> {
        if b.n + 1 < b.leaf.len() {
            let n = b.n + 1;
            return Ok(Some(BlockRef { n, ..b.clone() }));
        }
        self.first_block_from(b.leaf_no + 1, cache_only)
    }

    /// The data block before `b`, or the last when `b` is `None`; `None` before the first.
    ///
    /// # Errors
    /// As [`StoreFile::find_block`].
    pub(in crate::storefile) fn block_before(
        &self,
        b: Option<&BlockRef>,
        cache_only: bool,
    ) -> Result<Option<BlockRef>> {
        let mut leaf_no = match b {
            Some(b) if b.n > 0 => {
                let n = b.n - 1;
                return Ok(Some(BlockRef { n, ..b.clone() }));
            }
            Some(b) => b.leaf_no,
            None => self.root.len(),
        };
        while leaf_no > 0 {
            leaf_no -= 1;
            let leaf = self.leaf(leaf_no, cache_only)?;
            if let Some(n) = leaf.len().checked_sub(1) {
                return Ok(Some(BlockRef { leaf_no, leaf, n }));
            }
        }
        Ok(None)
    }

    /// The first data block of leaf `leaf_no` or a later one.
    fn first_block_from(&self, mut leaf_no: usize, cache_only: bool) -> Result<Option<BlockRef>> {
        while leaf_no < self.root.len() {
            let leaf = self.leaf(leaf_no, cache_only)?;
            if !leaf.is_empty() {
                return Ok(Some(BlockRef {
                    leaf_no,
                    leaf,
                    n: 0,
                }));
            }
            leaf_no += 1;
        }
        Ok(None)
    }

    /// Number of data blocks.
    ///
    /// # Errors
    /// A leaf had to be read again and was damaged.
    pub fn block_count(&self) -> Result<usize> {
        (0..self.root.len()).try_fold(0, |n, i| Ok(n + self.leaf(i, false)?.len()))
    }

    /// The row in the middle of the file's data (HBase splits a region at its largest
    /// file's mid key): the cell half way through the data by bytes, found through the block
    /// offsets (a search of the leaves, then of the blocks of one) and then by position in
    /// its block. `None` for an empty file.
    ///
    /// # Errors
    /// A damaged block.
    pub fn mid_row(&self) -> Result<Option<bytes::Bytes>> {
        let (Some(first), Some(last)) = (
            self.first_block_from(0, false)?,
            self.block_before(None, false)?,
        ) else {
            return Ok(None);
        };
        let (first_at, (last_at, last_len)) = (first.at().0, last.at());
        let target = first_at + (last_at + u64::from(last_len) - first_at) / 2;
        let ends_by_target = |(at, len): (u64, u32)| at + u64::from(len) <= target;
        // The first leaf whose last block ends past the target: leaves are in file order.
        let damage = std::cell::Cell::new(None);
        let leaf_no = partition(self.root.len(), |i| match self.leaf(i, false) {
            Ok(leaf) => leaf
                .len()
                .checked_sub(1)
                .is_none_or(|n| ends_by_target(leaf.block(n))),
            Err(e) => {
                damage.set(Some(e));
                false
            }
        });
        if let Some(e) = damage.take() {
            return Err(e);
        }
        let b = if leaf_no < self.root.len() {
            let leaf = self.leaf(leaf_no, false)?;
            let n = (0..leaf.len()).find(|&n| !ends_by_target(leaf.block(n)));
            let n = n.unwrap_or(leaf.len().saturating_sub(1));
            BlockRef { leaf_no, leaf, n }
        } else {
            last
        };
        let (at, len) = b.at();
        let block = self.data_block(&b, Caching::COMPACTION)?;
        if block.is_empty() {
            return Ok(None);
        }
        let into = (target.saturating_sub(at) as f64 / f64::from(len.max(1))).min(1.0);
        let pos = ((block.len() as f64 * into) as usize).min(block.len() - 1);
        let row = block.row(pos).map_err(|what| self.damaged(&b, what))?;
        Ok(Some(row))
    }
}
