//! Cells and their key order (SEMANTICS.md §0).
//!
//! # Invariants
//! 1. Cells sort by row asc, family asc, qualifier asc (unsigned bytes), timestamp desc, type
//!    code desc, sequence id desc. Every sorted structure in Basalt (memstore, store files,
//!    merging scanners) uses [`Cell::cmp`] or [`compare_keys`], never its own order.
//! 2. Family-level markers (DeleteFamily, DeleteFamilyVersion) carry an empty qualifier, so they
//!    sort before the columns of their family at the same row.
//! 3. `Minimum` and `Maximum` never reach storage: they only build search keys.

use std::cmp::Ordering;

use bytes::Bytes;

/// A cell timestamp: milliseconds since the epoch by default, never negative once validated.
pub type Timestamp = i64;

/// "No timestamp given": the server replaces it with its clock (`HConstants.LATEST_TIMESTAMP`).
pub const LATEST_TIMESTAMP: Timestamp = i64::MAX;

/// The kind of a cell (`KeyValue.Type`). The codes are stored on disk and sent on the wire:
/// never renumber them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum CellType {
    /// Search keys only: sorts after every real type at the same coordinates.
    Minimum = 0,
    /// A value.
    Put = 4,
    /// Masks exactly one version of one column.
    Delete = 8,
    /// Masks every column of a family at exactly one timestamp.
    DeleteFamilyVersion = 10,
    /// Masks every version of one column at or below its timestamp.
    DeleteColumn = 12,
    /// Masks every column of a family at or below its timestamp.
    DeleteFamily = 14,
    /// Search keys only: sorts before every real type at the same coordinates.
    Maximum = 255,
}

impl CellType {
    /// Decodes a stored type code; `None` for codes HBase does not define.
    #[must_use]
    pub fn from_code(code: u8) -> Option<CellType> {
        Some(match code {
            0 => CellType::Minimum,
            4 => CellType::Put,
            8 => CellType::Delete,
            10 => CellType::DeleteFamilyVersion,
            12 => CellType::DeleteColumn,
            14 => CellType::DeleteFamily,
            255 => CellType::Maximum,
            _ => return None,
        })
    }

    /// The stored code.
    #[must_use]
    pub fn code(self) -> u8 {
        self as u8
    }

    /// True for the four delete markers.
    #[must_use]
    pub fn is_delete(self) -> bool {
        matches!(
            self,
            CellType::Delete
                | CellType::DeleteFamilyVersion
                | CellType::DeleteColumn
                | CellType::DeleteFamily
        )
    }

    /// True for markers that apply to a whole family rather than one column.
    #[must_use]
    pub fn is_family_delete(self) -> bool {
        matches!(self, CellType::DeleteFamily | CellType::DeleteFamilyVersion)
    }

    /// The name HBase prints (`type=DeleteColumn` in a raw scan).
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            CellType::Minimum => "Minimum",
            CellType::Put => "Put",
            CellType::Delete => "Delete",
            CellType::DeleteFamilyVersion => "DeleteFamilyVersion",
            CellType::DeleteColumn => "DeleteColumn",
            CellType::DeleteFamily => "DeleteFamily",
            CellType::Maximum => "Maximum",
        }
    }
}

/// One versioned entry of the sorted map: `(row, family, qualifier, timestamp, type) -> value`.
///
/// `seq_id` is the write's sequence number (HBase's mvcc): it orders writes to identical
/// coordinates (the newer one wins) and decides visibility to readers. `ttl_ms` is the cell TTL
/// a Put, Increment or Append may carry (HBase keeps it in a tag).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Cell {
    pub row: Bytes,
    pub family: Bytes,
    pub qualifier: Bytes,
    pub timestamp: Timestamp,
    pub cell_type: CellType,
    pub seq_id: u64,
    pub value: Bytes,
    pub ttl_ms: Option<u64>,
}

impl Cell {
    /// A Put cell with sequence id 0 (assigned when the write commits).
    pub fn put(
        row: impl Into<Bytes>,
        family: impl Into<Bytes>,
        qualifier: impl Into<Bytes>,
        timestamp: Timestamp,
        value: impl Into<Bytes>,
    ) -> Cell {
        Cell {
            row: row.into(),
            family: family.into(),
            qualifier: qualifier.into(),
            timestamp,
            cell_type: CellType::Put,
            seq_id: 0,
            value: value.into(),
            ttl_ms: None,
        }
    }

    /// A delete marker of `cell_type` (empty value).
    pub fn marker(
        row: impl Into<Bytes>,
        family: impl Into<Bytes>,
        qualifier: impl Into<Bytes>,
        timestamp: Timestamp,
        cell_type: CellType,
    ) -> Cell {
        Cell {
            row: row.into(),
            family: family.into(),
            qualifier: qualifier.into(),
            timestamp,
            cell_type,
            seq_id: 0,
            value: Bytes::new(),
            ttl_ms: None,
        }
    }

    /// The smallest key of `row`: every cell of the row sorts at or after it.
    #[must_use]
    pub fn first_on_row(row: &Bytes) -> Cell {
        Cell::search_key(
            row.clone(),
            Bytes::new(),
            Bytes::new(),
            LATEST_TIMESTAMP,
            CellType::Maximum,
        )
    }

    /// The smallest key of the column `family:qualifier` in `row`: all its versions sort at or
    /// after it.
    #[must_use]
    pub fn first_on_column(row: &Bytes, family: &Bytes, qualifier: &Bytes) -> Cell {
        Cell::search_key(
            row.clone(),
            family.clone(),
            qualifier.clone(),
            LATEST_TIMESTAMP,
            CellType::Maximum,
        )
    }

    /// The largest key of the column: the next column's cells sort after it.
    #[must_use]
    pub fn last_on_column(row: &Bytes, family: &Bytes, qualifier: &Bytes) -> Cell {
        Cell::search_key(
            row.clone(),
            family.clone(),
            qualifier.clone(),
            i64::MIN,
            CellType::Minimum,
        )
    }

    fn search_key(
        row: Bytes,
        family: Bytes,
        qualifier: Bytes,
        timestamp: Timestamp,
        cell_type: CellType,
    ) -> Cell {
        let seq_id = if cell_type == CellType::Maximum {
            u64::MAX
        } else {
            0
        };
        Cell {
            row,
            family,
            qualifier,
            timestamp,
            cell_type,
            seq_id,
            value: Bytes::new(),
            ttl_ms: None,
        }
    }

    /// Size counted against the cell-size limit: key components plus value, as HBase's
    /// `KeyValue.getLength` counts them (fixed key overhead included).
    #[must_use]
    pub fn serialized_size(&self) -> usize {
        // row length (2) + family length (1) + timestamp (8) + type (1) + key/value lengths (8)
        self.row.len() + self.family.len() + self.qualifier.len() + self.value.len() + 20
    }

    /// Bytes of memory the cell's payload occupies, used for memstore accounting.
    #[must_use]
    pub fn heap_size(&self) -> usize {
        self.serialized_size() + std::mem::size_of::<Cell>()
    }

    /// Whether `self` and `other` are the same column of the same row.
    #[must_use]
    pub fn same_column(&self, other: &Cell) -> bool {
        self.qualifier == other.qualifier && self.family == other.family && self.row == other.row
    }
}

/// Compares two cells in the HBase key order (invariant 1).
#[must_use]
pub fn compare_keys(a: &Cell, b: &Cell) -> Ordering {
    a.row
        .cmp(&b.row)
        .then_with(|| a.family.cmp(&b.family))
        .then_with(|| a.qualifier.cmp(&b.qualifier))
        .then_with(|| b.timestamp.cmp(&a.timestamp))
        .then_with(|| b.cell_type.code().cmp(&a.cell_type.code()))
        .then_with(|| b.seq_id.cmp(&a.seq_id))
}

impl Ord for Cell {
    fn cmp(&self, other: &Self) -> Ordering {
        compare_keys(self, other)
    }
}

impl PartialOrd for Cell {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_codes_are_pinned() {
        // On-disk codes: never renumber.
        let pinned = [
            (CellType::Minimum, 0),
            (CellType::Put, 4),
            (CellType::Delete, 8),
            (CellType::DeleteFamilyVersion, 10),
            (CellType::DeleteColumn, 12),
            (CellType::DeleteFamily, 14),
            (CellType::Maximum, 255),
        ];
        for (t, code) in pinned {
            assert_eq!(t.code(), code);
            assert_eq!(CellType::from_code(code), Some(t));
        }
        assert_eq!(CellType::from_code(5), None);
    }

    #[test]
    fn key_order_matches_hbase() {
        let put = |q: &'static str, ts| Cell::put("r", "f", q, ts, "v");
        let mk = |q: &'static str, ts, t| Cell::marker("r", "f", q, ts, t);
        let mut cells = [
            put("a", 1),
            mk("", 5, CellType::DeleteFamily),
            put("a", 2),
            mk("a", 2, CellType::Delete),
            mk("a", 2, CellType::DeleteColumn),
            Cell::put("r", "e", "z", 0, "v"),
            Cell::put("q", "z", "z", 0, "v"),
        ];
        cells.sort();
        let got: Vec<_> = cells
            .iter()
            .map(|c| {
                format!(
                    "{}/{}:{}@{}/{}",
                    std::str::from_utf8(&c.row).unwrap(),
                    std::str::from_utf8(&c.family).unwrap(),
                    std::str::from_utf8(&c.qualifier).unwrap(),
                    c.timestamp,
                    c.cell_type.name()
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                "q/z:z@0/Put",
                "r/e:z@0/Put",
                "r/f:@5/DeleteFamily",
                "r/f:a@2/DeleteColumn",
                "r/f:a@2/Delete",
                "r/f:a@2/Put",
                "r/f:a@1/Put",
            ]
        );
    }

    #[test]
    fn newer_sequence_sorts_first_and_search_keys_bracket_rows() {
        let mut old = Cell::put("r", "f", "q", 1, "old");
        old.seq_id = 1;
        let mut new = Cell::put("r", "f", "q", 1, "new");
        new.seq_id = 2;
        assert!(new < old);
        let row = Bytes::from_static(b"r");
        assert!(
            Cell::first_on_row(&row) < Cell::marker("r", "", "", i64::MAX, CellType::DeleteFamily)
        );
        let f = Bytes::from_static(b"f");
        let q = Bytes::from_static(b"q");
        assert!(Cell::last_on_column(&row, &f, &q) > Cell::put("r", "f", "q", 0, ""));
        assert!(Cell::last_on_column(&row, &f, &q) < Cell::put("r", "f", "q\0", i64::MAX, ""));
    }
}
