//! A store file's index, searched where its keys lie.

use basalt_model::Cell;
use bytes::Bytes;

use super::{partition, RawKey, RowProbes};

/// A decoded index: each data block's last key (encoded, in one buffer), offset and length,
/// and the row probes of those keys' rows, so that a search compares one `u64` a step, as a
/// data block's does, where a whole key took about a hundred instructions.
///
/// # Invariants
/// 1. The keys are checked (`check_key`, when the index is decoded) and sorted, as the
///    writer adds blocks in key order. Sorting is not checked: the index block's checksum
///    guards it, and an index out of order (a file written wrong) misleads a search, with
///    the probes or without, but makes none panic.
#[derive(Debug)]
pub struct IndexKeys {
    family: Bytes,
    keys: Bytes,
    /// (key offset, key length, block offset, block length).
    entries: Vec<(u32, u32, u64, u32)>,
    probes: RowProbes,
}

impl IndexKeys {
    /// An index of checked, sorted keys (invariant 1).
    pub(crate) fn new(family: Bytes, keys: Bytes, entries: Vec<(u32, u32, u64, u32)>) -> Self {
        let row = |i: usize| {
            let at = entries[i].0 as usize;
            let key = RawKey::whole(&keys[at..at + entries[i].1 as usize]);
            Ok::<_, std::convert::Infallible>(at + 2..at + 2 + key.row_len())
        };
        let Ok(probes) = RowProbes::of(&keys, entries.len(), row);
        IndexKeys {
            family,
            keys,
            entries,
            probes,
        }
    }

    /// Number of data blocks.
    #[must_use]
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the file has no data block.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Each data block's offset and stored length, in key order.
    pub fn blocks(&self) -> impl Iterator<Item = (u64, u32)> + '_ {
        self.entries.iter().map(|e| (e.2, e.3))
    }

    /// The root of an index of one leaf, `leaf`, stored at `at` (a file before format
    /// version 4, whose index was one block): its one entry is the leaf's last key.
    pub(crate) fn root_of_one(leaf: &IndexKeys, at: (u64, u32)) -> IndexKeys {
        let Some(&(key_at, key_len, _, _)) = leaf.entries.last() else {
            return IndexKeys::new(leaf.family.clone(), Bytes::new(), Vec::new());
        };
        let key = leaf
            .keys
            .slice(key_at as usize..(key_at + key_len) as usize);
        IndexKeys::new(leaf.family.clone(), key, vec![(0, key_len, at.0, at.1)])
    }

    /// Offset and stored length of block `i`.
    #[must_use]
    pub fn block(&self, i: usize) -> (u64, u32) {
        let e = self.entries[i];
        (e.2, e.3)
    }

    /// The first block whose last key is at or after `key` (the length if none).
    #[must_use]
    pub fn lower_bound(&self, key: &Cell) -> usize {
        let below = |i: usize| {
            let (at, len, _, _) = self.entries[i];
            RawKey::whole(&self.keys[at as usize..(at + len) as usize])
                .cmp(&self.family, key)
                .is_lt()
        };
        self.probes
            .partition(&self.keys, key, below)
            .unwrap_or_else(|| partition(self.len(), below))
    }

    /// Bytes held, the index's weight in the cache.
    #[must_use]
    pub fn weight(&self) -> usize {
        self.keys.len() + self.entries.len() * (24 + 8) + std::mem::size_of::<IndexKeys>()
    }
}
