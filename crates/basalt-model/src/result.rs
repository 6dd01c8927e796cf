//! What a read returns for one row (`Result`).

use bytes::Bytes;
use md5::{Digest, Md5};

use crate::cell::{Cell, Timestamp};

/// The cells of one row, in key order. An empty result means the row has no visible cell.
///
/// The row is the first cell's: a result holds no handle of its own on it, which cost a scan
/// an atomic count taken and dropped for every row (without it a sequential scan runs 6–7%
/// faster, BENCHMARKS.md). Only a result without cells keeps the row it was made for.
///
/// # Invariants
/// 1. Every cell is of the result's row ([`RowResult::row`]).
/// 2. The row a result keeps (`row`) is what it answers only while it has no cell; two
///    results are equal when their rows ([`RowResult::row`]), cells and `partial` are.
#[derive(Clone, Debug, Default)]
pub struct RowResult {
    /// A plain handle, empty when unset, not an `Option`: with one, the results' layout
    /// changed, and each row's copies between the scanners stalled again (BENCHMARKS.md).
    row: Bytes,
    pub cells: Vec<Cell>,
    /// Set on a result that holds only part of its row (scan batching).
    pub partial: bool,
}

impl PartialEq for RowResult {
    fn eq(&self, other: &RowResult) -> bool {
        self.row() == other.row() && self.cells == other.cells && self.partial == other.partial
    }
}

impl Eq for RowResult {}

impl RowResult {
    /// A result for `row` with `cells` (already in key order, each of `row`).
    #[must_use]
    pub fn new(row: Bytes, cells: Vec<Cell>) -> RowResult {
        RowResult {
            row: if cells.is_empty() { row } else { Bytes::new() },
            cells,
            partial: false,
        }
    }

    /// A result of `cells`, all of one row, at least one (a scan's row: invariant 1).
    #[must_use]
    pub fn of_cells(cells: Vec<Cell>, partial: bool) -> RowResult {
        debug_assert!(!cells.is_empty(), "a result made of cells has at least one");
        RowResult {
            row: Bytes::new(),
            cells,
            partial,
        }
    }

    /// The row: the first cell's, or for a result without cells the row it was made for
    /// (empty if none).
    #[must_use]
    pub fn row(&self) -> &[u8] {
        match self.cells.first() {
            Some(c) => c.row(),
            None => &self.row,
        }
    }

    /// The row kept for when the result has no cell (invariant 2), for a decoder that
    /// reads the row before the cells.
    pub fn kept_row_mut(&mut self) -> &mut Bytes {
        &mut self.row
    }

    /// The row as a handle of its own (sharing the first cell's buffer).
    #[must_use]
    pub fn row_bytes(&self) -> Bytes {
        match self.cells.first() {
            Some(c) => c.row_bytes(),
            None => self.row.clone(),
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

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::RowResult;
    use crate::cell::{Cell, CellParts};

    fn cell(row: &'static str, qualifier: &'static str) -> Cell {
        Cell::from(CellParts {
            row: Bytes::from_static(row.as_bytes()),
            family: Bytes::from_static(b"f"),
            qualifier: Bytes::from_static(qualifier.as_bytes()),
            value: Bytes::from_static(b"v"),
            ..CellParts::default()
        })
    }

    #[test]
    fn a_result_answers_its_first_cell_s_row_or_the_row_it_was_made_for() {
        let r = RowResult::new(
            Bytes::from_static(b"r1"),
            vec![cell("r1", "a"), cell("r1", "b")],
        );
        assert_eq!(r.row(), b"r1");
        assert_eq!(r.row_bytes(), "r1");
        assert_eq!(RowResult::of_cells(r.cells.clone(), false).row(), b"r1");
        // Invariant 2: a result without cells keeps the row it was made for.
        let empty = RowResult::new(Bytes::from_static(b"gone"), Vec::new());
        assert_eq!(empty.row(), b"gone");
        assert_eq!(empty.row_bytes(), "gone");
        assert_eq!(RowResult::default().row(), b"");
        // Equal when rows, cells and `partial` are, however each was made.
        let mut decoded = RowResult::default();
        *decoded.kept_row_mut() = Bytes::from_static(b"r1");
        decoded.cells = r.cells.clone();
        assert_eq!(decoded, r);
        assert_eq!(RowResult::of_cells(r.cells.clone(), false), r);
        assert_ne!(RowResult::of_cells(r.cells.clone(), true), r);
        assert_ne!(
            empty,
            RowResult::new(Bytes::from_static(b"other"), Vec::new())
        );
    }
}
