//! What a read returns for one row (`Result`).

use bytes::Bytes;
use md5::{Digest, Md5};

use crate::cell::{Cell, Timestamp};

/// The cells of one row, in key order. An empty result means the row has no visible cell.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RowResult {
    pub row: Bytes,
    pub cells: Vec<Cell>,
    /// Set on a result that holds only part of its row (scan batching).
    pub partial: bool,
}

impl RowResult {
    /// A result for `row` with `cells` (already in key order).
    #[must_use]
    pub fn new(row: Bytes, cells: Vec<Cell>) -> RowResult {
        RowResult {
            row,
            cells,
            partial: false,
        }
    }

    /// `Result.isEmpty()`.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.cells.is_empty()
    }

    /// `Result.getValue(f, q)`: the newest version's value of the column.
    #[must_use]
    pub fn value(&self, family: &[u8], qualifier: &[u8]) -> Option<&[u8]> {
        self.cells
            .iter()
            .find(|c| &c.family[..] == family && c.qualifier() == qualifier)
            .map(Cell::value)
    }

    /// A digest of the cells' coordinates, types and values (not their sequence ids): two
    /// reads of a row with equal digests saw the same cells. A length prefixes each
    /// variable field, so no two different results encode alike.
    #[must_use]
    pub fn digest(&self) -> [u8; 16] {
        let mut h = Md5::new();
        for c in &self.cells {
            for field in [&c.family[..], c.qualifier(), c.value()] {
                h.update((field.len() as u64).to_be_bytes());
                h.update(field);
            }
            h.update(c.timestamp.to_be_bytes());
            h.update([c.cell_type.code()]);
        }
        h.finalize().into()
    }

    /// Every version of one column in the result, newest first.
    pub fn column_cells<'a>(
        &'a self,
        family: &'a [u8],
        qualifier: &'a [u8],
    ) -> impl Iterator<Item = &'a Cell> + 'a {
        self.cells
            .iter()
            .filter(move |c| &c.family[..] == family && c.qualifier() == qualifier)
    }

    /// The timestamps of one column's versions, newest first.
    #[must_use]
    pub fn timestamps(&self, family: &[u8], qualifier: &[u8]) -> Vec<Timestamp> {
        self.column_cells(family, qualifier)
            .map(|c| c.timestamp)
            .collect()
    }
}
