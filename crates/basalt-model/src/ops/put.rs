use bytes::Bytes;

use super::{validate_row, validate_timestamp};
use crate::cell::{Cell, CellType, Timestamp, LATEST_TIMESTAMP};
use crate::descriptor::Durability;
use crate::error::{Error, Result};

/// Writes values to one row (`Put`).
#[derive(Clone, Debug)]
pub struct Put {
    pub row: Bytes,
    /// Timestamp for cells added without one; `LATEST_TIMESTAMP` means the server's clock.
    pub timestamp: Timestamp,
    pub cells: Vec<Cell>,
    pub durability: Durability,
    /// Cell TTL in milliseconds applied to every cell of the Put.
    pub ttl_ms: Option<u64>,
}

impl Put {
    /// A Put for `row` whose cells default to the server's clock.
    pub fn new(row: impl Into<Bytes>) -> Put {
        Put::at(row, LATEST_TIMESTAMP)
    }

    /// A Put whose cells default to timestamp `ts`.
    pub fn at(row: impl Into<Bytes>, ts: Timestamp) -> Put {
        Put {
            row: row.into(),
            timestamp: ts,
            cells: Vec::new(),
            durability: Durability::UseDefault,
            ttl_ms: None,
        }
    }

    /// Adds `family:qualifier = value` at the Put's timestamp.
    #[must_use]
    pub fn add(
        self,
        family: impl Into<Bytes>,
        qualifier: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
    ) -> Put {
        let ts = self.timestamp;
        self.add_at(family, qualifier, ts, value)
    }

    /// Adds `family:qualifier = value` at timestamp `ts`.
    #[must_use]
    pub fn add_at(
        mut self,
        family: impl Into<Bytes>,
        qualifier: impl AsRef<[u8]>,
        ts: Timestamp,
        value: impl AsRef<[u8]>,
    ) -> Put {
        // The cell's parts are copied into one buffer (cell.rs, invariant 4), so the row is
        // not shared and the qualifier and value need not become buffers of their own.
        self.cells.push(Cell::put_from_slices(
            &self.row,
            family,
            qualifier.as_ref(),
            ts,
            value.as_ref(),
        ));
        self
    }

    /// Sets the cell TTL (milliseconds) of every cell.
    #[must_use]
    pub fn with_ttl_ms(mut self, ttl_ms: u64) -> Put {
        self.ttl_ms = Some(ttl_ms);
        self
    }

    /// Sets the durability of this write.
    #[must_use]
    pub fn with_durability(mut self, d: Durability) -> Put {
        self.durability = d;
        self
    }

    /// Client-side checks (SEMANTICS.md #72, #74, #77).
    ///
    /// # Errors
    /// `IllegalArgument` for a bad row, a negative timestamp or no cells.
    pub fn validate(&self) -> Result<()> {
        validate_row(&self.row)?;
        if self.cells.is_empty() {
            return Err(Error::illegal("No columns to insert"));
        }
        validate_timestamp(self.timestamp)?;
        for c in &self.cells {
            validate_timestamp(c.timestamp)?;
            if c.row() != self.row {
                return Err(Error::illegal(
                    "The row of a cell does not match the row of the Put",
                ));
            }
            // A Put that carried a delete marker would delete (RELIABILITY.md D12).
            if c.cell_type != CellType::Put {
                return Err(Error::illegal(format!(
                    "A Put carries only Put cells, not {:?}",
                    c.cell_type
                )));
            }
        }
        Ok(())
    }
}
