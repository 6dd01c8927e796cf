use bytes::Bytes;

use super::{validate_row, validate_timestamp, CompareOp, Delete, Mutation, Put, RowMutations};
use crate::cell::{Timestamp, LATEST_TIMESTAMP};
use crate::descriptor::Durability;
use crate::error::{Error, Result};
use crate::filter::Filter;
use crate::time_range::TimeRange;

/// Adds to 8-byte big-endian counters (`Increment`).
#[derive(Clone, Debug)]
pub struct Increment {
    pub row: Bytes,
    /// `(family, qualifier, amount)`; the same column named twice is applied once, with the
    /// last amount (SEMANTICS.md #66).
    pub columns: Vec<(Bytes, Bytes, i64)>,
    /// Timestamp to use when the column has no value yet; `LATEST_TIMESTAMP` for the clock.
    pub timestamp: Timestamp,
    pub time_range: TimeRange,
    pub ttl_ms: Option<u64>,
    pub return_results: bool,
    pub durability: Durability,
}

impl Increment {
    /// An increment of `row` with no columns yet.
    pub fn new(row: impl Into<Bytes>) -> Increment {
        Increment {
            row: row.into(),
            columns: Vec::new(),
            timestamp: LATEST_TIMESTAMP,
            time_range: TimeRange::all(),
            ttl_ms: None,
            return_results: true,
            durability: Durability::UseDefault,
        }
    }

    /// `addColumn(f, q, amount)`.
    #[must_use]
    pub fn add(
        mut self,
        family: impl Into<Bytes>,
        qualifier: impl Into<Bytes>,
        amount: i64,
    ) -> Self {
        let (f, q) = (family.into(), qualifier.into());
        self.columns.retain(|(ef, eq, _)| !(ef == &f && eq == &q));
        self.columns.push((f, q, amount));
        self
    }

    /// Cell TTL in milliseconds for the new values.
    #[must_use]
    pub fn with_ttl_ms(mut self, ttl_ms: u64) -> Self {
        self.ttl_ms = Some(ttl_ms);
        self
    }

    /// Client-side checks.
    ///
    /// # Errors
    /// `IllegalArgument` for a bad row or no columns.
    pub fn validate(&self) -> Result<()> {
        validate_row(&self.row)?;
        validate_timestamp(self.timestamp)?;
        if self.columns.is_empty() {
            return Err(Error::illegal("No columns to increment"));
        }
        Ok(())
    }
}

/// Appends bytes to values (`Append`).
#[derive(Clone, Debug)]
pub struct Append {
    pub row: Bytes,
    pub columns: Vec<(Bytes, Bytes, Bytes)>,
    pub timestamp: Timestamp,
    pub time_range: TimeRange,
    pub ttl_ms: Option<u64>,
    pub return_results: bool,
    pub durability: Durability,
}

impl Append {
    /// An append to `row` with no columns yet.
    pub fn new(row: impl Into<Bytes>) -> Append {
        Append {
            row: row.into(),
            columns: Vec::new(),
            timestamp: LATEST_TIMESTAMP,
            time_range: TimeRange::all(),
            ttl_ms: None,
            return_results: true,
            durability: Durability::UseDefault,
        }
    }

    /// `addColumn(f, q, value)`.
    #[must_use]
    pub fn add(
        mut self,
        family: impl Into<Bytes>,
        qualifier: impl Into<Bytes>,
        value: impl Into<Bytes>,
    ) -> Self {
        self.columns
            .push((family.into(), qualifier.into(), value.into()));
        self
    }

    /// Cell TTL in milliseconds for the new values.
    #[must_use]
    pub fn with_ttl_ms(mut self, ttl_ms: u64) -> Self {
        self.ttl_ms = Some(ttl_ms);
        self
    }

    /// Client-side checks.
    ///
    /// # Errors
    /// `IllegalArgument` for a bad row or no columns.
    pub fn validate(&self) -> Result<()> {
        validate_row(&self.row)?;
        validate_timestamp(self.timestamp)?;
        if self.columns.is_empty() {
            return Err(Error::illegal("No columns to append"));
        }
        Ok(())
    }
}

/// What a CheckAndMutate tests before it writes.
#[derive(Clone, Debug)]
pub enum Condition {
    /// `ifMatches(f, q, op, value)`: `value OP stored` holds for the newest version in the time
    /// range (note the operand order, SEMANTICS.md #63). `value = None` is `ifNotExists`.
    Column {
        family: Bytes,
        qualifier: Bytes,
        op: CompareOp,
        value: Option<Bytes>,
        time_range: TimeRange,
    },
    /// `ifMatches(filter)`: the row, read with the filter, is not empty.
    Filter {
        filter: Filter,
        time_range: TimeRange,
    },
    /// The row is as a read saw it: its visible cells (every version of every family) have
    /// the [`crate::RowResult::digest`] `digest`. This makes a read-compute-write
    /// optimistic for a front end whose condition the engine cannot evaluate (Bigtable's
    /// row filters, aggregates): it reads, decides, and writes only if nothing changed in
    /// between, else reads again.
    Unchanged { digest: [u8; 16] },
}

/// An atomic test-and-set on one row (`CheckAndMutate`).
#[derive(Clone, Debug)]
pub struct CheckAndMutate {
    pub row: Bytes,
    pub condition: Condition,
    pub action: RowMutations,
}

impl CheckAndMutate {
    /// `ifEquals`-style check of one column: applies `action` when `value OP stored` holds.
    pub fn if_matches(
        row: impl Into<Bytes>,
        family: impl Into<Bytes>,
        qualifier: impl Into<Bytes>,
        op: CompareOp,
        value: impl Into<Bytes>,
    ) -> CheckAndMutateBuilder {
        let row = row.into();
        CheckAndMutateBuilder {
            row: row.clone(),
            condition: Condition::Column {
                family: family.into(),
                qualifier: qualifier.into(),
                op,
                value: Some(value.into()),
                time_range: TimeRange::all(),
            },
        }
    }

    /// `ifNotExists(f, q)`.
    pub fn if_not_exists(
        row: impl Into<Bytes>,
        family: impl Into<Bytes>,
        qualifier: impl Into<Bytes>,
    ) -> CheckAndMutateBuilder {
        CheckAndMutateBuilder {
            row: row.into(),
            condition: Condition::Column {
                family: family.into(),
                qualifier: qualifier.into(),
                op: CompareOp::Equal,
                value: None,
                time_range: TimeRange::all(),
            },
        }
    }

    /// `ifMatches(filter)`.
    pub fn if_filter_matches(row: impl Into<Bytes>, filter: Filter) -> CheckAndMutateBuilder {
        CheckAndMutateBuilder {
            row: row.into(),
            condition: Condition::Filter {
                filter,
                time_range: TimeRange::all(),
            },
        }
    }

    /// Applies `action` only if `row` still reads as the read whose digest was `digest`.
    #[must_use]
    pub fn if_unchanged(digest: [u8; 16], action: RowMutations) -> CheckAndMutate {
        CheckAndMutate {
            row: action.row.clone(),
            condition: Condition::Unchanged { digest },
            action,
        }
    }

    /// Client-side checks: the action targets the checked row and each mutation is valid.
    ///
    /// # Errors
    /// `DoNotRetry` for a mutation of another row; the mutation's own error otherwise.
    pub fn validate(&self) -> Result<()> {
        validate_row(&self.row)?;
        if self.action.row != self.row {
            return Err(Error::DoNotRetry("Action's getRow must match".into()));
        }
        self.action.validate()
    }
}

/// Builds a [`CheckAndMutate`] (HBase's `CheckAndMutate.newBuilder(row)...build(...)`).
#[derive(Clone, Debug)]
pub struct CheckAndMutateBuilder {
    row: Bytes,
    condition: Condition,
}

impl CheckAndMutateBuilder {
    /// `timeRange(tr)`: the check only sees versions in `tr`.
    #[must_use]
    pub fn time_range(mut self, tr: TimeRange) -> Self {
        match &mut self.condition {
            Condition::Column { time_range, .. } | Condition::Filter { time_range, .. } => {
                *time_range = tr;
            }
            Condition::Unchanged { .. } => {}
        }
        self
    }

    /// `build(put)`.
    #[must_use]
    pub fn then_put(self, put: Put) -> CheckAndMutate {
        self.then(Mutation::Put(put))
    }

    /// `build(delete)`.
    #[must_use]
    pub fn then_delete(self, delete: Delete) -> CheckAndMutate {
        self.then(Mutation::Delete(delete))
    }

    /// `build(rowMutations)`.
    #[must_use]
    pub fn then_mutate(self, action: RowMutations) -> CheckAndMutate {
        CheckAndMutate {
            row: self.row,
            condition: self.condition,
            action,
        }
    }

    fn then(self, m: Mutation) -> CheckAndMutate {
        let action = RowMutations {
            row: m.row().clone(),
            mutations: vec![m],
        };
        self.then_mutate(action)
    }
}
