use bytes::Bytes;

use super::{validate_row, validate_timestamp};
use crate::cell::{Cell, CellType, Timestamp, LATEST_TIMESTAMP};
use crate::descriptor::Durability;
use crate::error::{Error, Result};

/// Writes delete markers to one row (`Delete`).
///
/// With nothing added, the Delete removes the whole row: the server writes one DeleteFamily
/// marker per family at the Delete's timestamp. A version marker added without a timestamp
/// (`add_column`) means "the newest version": the server looks it up under the row lock.
#[derive(Clone, Debug)]
pub struct Delete {
    pub row: Bytes,
    pub timestamp: Timestamp,
    /// Markers; a `Delete`-type marker at `LATEST_TIMESTAMP` means "delete the latest version".
    pub markers: Vec<Cell>,
    pub durability: Durability,
}

impl Delete {
    /// Deletes the whole row (everything at or before now) unless columns are added.
    pub fn new(row: impl Into<Bytes>) -> Delete {
        Delete::at(row, LATEST_TIMESTAMP)
    }

    /// Deletes the whole row at or before `ts` unless columns are added; added markers without
    /// their own timestamp use `ts`.
    pub fn at(row: impl Into<Bytes>, ts: Timestamp) -> Delete {
        Delete {
            row: row.into(),
            timestamp: ts,
            markers: Vec::new(),
            durability: Durability::UseDefault,
        }
    }

    fn push(mut self, family: Bytes, qualifier: Bytes, ts: Timestamp, t: CellType) -> Delete {
        self.markers
            .push(Cell::marker(self.row.clone(), family, qualifier, ts, t));
        self
    }

    /// `addColumn(f, q)`: the newest version of the column (or the Delete's timestamp if set).
    #[must_use]
    pub fn add_column(self, family: impl Into<Bytes>, qualifier: impl Into<Bytes>) -> Delete {
        let ts = self.timestamp;
        self.push(family.into(), qualifier.into(), ts, CellType::Delete)
    }

    /// `addColumn(f, q, ts)`: exactly the version at `ts`.
    #[must_use]
    pub fn add_column_at(
        self,
        family: impl Into<Bytes>,
        qualifier: impl Into<Bytes>,
        ts: Timestamp,
    ) -> Delete {
        self.push(family.into(), qualifier.into(), ts, CellType::Delete)
    }

    /// `addColumns(f, q)`: every version of the column at or before the Delete's timestamp.
    #[must_use]
    pub fn add_columns(self, family: impl Into<Bytes>, qualifier: impl Into<Bytes>) -> Delete {
        let ts = self.timestamp;
        self.push(family.into(), qualifier.into(), ts, CellType::DeleteColumn)
    }

    /// `addColumns(f, q, ts)`: every version of the column at or before `ts`.
    #[must_use]
    pub fn add_columns_at(
        self,
        family: impl Into<Bytes>,
        qualifier: impl Into<Bytes>,
        ts: Timestamp,
    ) -> Delete {
        self.push(family.into(), qualifier.into(), ts, CellType::DeleteColumn)
    }

    /// `addFamily(f)`: every column of the family at or before the Delete's timestamp.
    #[must_use]
    pub fn add_family(self, family: impl Into<Bytes>) -> Delete {
        let ts = self.timestamp;
        self.push(family.into(), Bytes::new(), ts, CellType::DeleteFamily)
    }

    /// `addFamily(f, ts)`: every column of the family at or before `ts`.
    #[must_use]
    pub fn add_family_at(self, family: impl Into<Bytes>, ts: Timestamp) -> Delete {
        self.push(family.into(), Bytes::new(), ts, CellType::DeleteFamily)
    }

    /// `addFamilyVersion(f, ts)`: every column of the family at exactly `ts`.
    #[must_use]
    pub fn add_family_version(self, family: impl Into<Bytes>, ts: Timestamp) -> Delete {
        self.push(
            family.into(),
            Bytes::new(),
            ts,
            CellType::DeleteFamilyVersion,
        )
    }

    /// Sets the durability of this write.
    #[must_use]
    pub fn with_durability(mut self, d: Durability) -> Delete {
        self.durability = d;
        self
    }

    /// Whether this deletes the whole row (no family or column named).
    #[must_use]
    pub fn is_row_delete(&self) -> bool {
        self.markers.is_empty()
    }

    /// Client-side checks.
    ///
    /// # Errors
    /// `IllegalArgument` for a bad row or a negative timestamp.
    pub fn validate(&self) -> Result<()> {
        validate_row(&self.row)?;
        validate_timestamp(self.timestamp)?;
        for m in &self.markers {
            validate_timestamp(m.timestamp)?;
            if m.row() != self.row {
                return Err(Error::illegal(
                    "The row of a cell does not match the row of the Delete",
                ));
            }
            // A Delete that carried a value would write it.
            if !m.cell_type.is_delete() {
                return Err(Error::illegal(format!(
                    "A Delete carries only delete markers, not {:?}",
                    m.cell_type
                )));
            }
        }
        Ok(())
    }
}
