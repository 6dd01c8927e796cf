//! Operations a client sends: mutations (Put, Delete, Increment, Append, RowMutations,
//! CheckAndMutate) and reads (Get, Scan).
//!
//! These are plain values, built the way HBase's client classes are built. Client-side checks
//! (row length, negative timestamps, empty puts) happen in `validate` methods that the engine
//! calls before taking any lock, so bad input is refused before anything is applied.

mod delete;
mod put;
mod read;
mod rmw;

pub use delete::Delete;
pub use put::Put;
pub use read::{Columns, Get, Qualifiers, Scan, FEW_COLUMNS};
pub use rmw::{Append, CheckAndMutate, Condition, Increment};

use bytes::Bytes;

use crate::descriptor::Durability;
use crate::error::{Error, Result};
use crate::limits::MAX_ROW_LENGTH;

/// A comparison operator (`CompareOperator`). NO_OP cannot be written in the filter language and
/// is not offered here.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CompareOp {
    Less,
    LessOrEqual,
    Equal,
    NotEqual,
    GreaterOrEqual,
    Greater,
}

impl CompareOp {
    /// Whether an ordering (of left against right) satisfies the operator.
    #[must_use]
    pub fn matches(self, ord: std::cmp::Ordering) -> bool {
        use std::cmp::Ordering::{Equal, Greater, Less};
        match self {
            CompareOp::Less => ord == Less,
            CompareOp::LessOrEqual => ord != Greater,
            CompareOp::Equal => ord == Equal,
            CompareOp::NotEqual => ord != Equal,
            CompareOp::GreaterOrEqual => ord != Less,
            CompareOp::Greater => ord == Greater,
        }
    }

    /// The symbol of the filter language (`<`, `<=`, `=`, `!=`, `>=`, `>`).
    #[must_use]
    pub fn symbol(self) -> &'static str {
        match self {
            CompareOp::Less => "<",
            CompareOp::LessOrEqual => "<=",
            CompareOp::Equal => "=",
            CompareOp::NotEqual => "!=",
            CompareOp::GreaterOrEqual => ">=",
            CompareOp::Greater => ">",
        }
    }
}

/// Checks a row key as HBase's client does: 1..=32767 bytes.
///
/// # Errors
/// `IllegalArgument` "Row length is 0" or "Row length N is > 32767".
pub fn validate_row(row: &[u8]) -> Result<()> {
    if row.is_empty() {
        return Err(Error::illegal("Row length is 0"));
    }
    if row.len() > MAX_ROW_LENGTH {
        return Err(Error::illegal(format!(
            "Row length {} is > {MAX_ROW_LENGTH}",
            row.len()
        )));
    }
    Ok(())
}

/// Checks a client-supplied timestamp.
///
/// # Errors
/// `IllegalArgument` "Timestamp cannot be negative" for a negative value.
pub fn validate_timestamp(ts: i64) -> Result<()> {
    if ts < 0 {
        return Err(Error::illegal(format!(
            "Timestamp cannot be negative. ts={ts}"
        )));
    }
    Ok(())
}

/// One write to one row: what a batch or RowMutations holds.
#[derive(Clone, Debug)]
pub enum Mutation {
    Put(Put),
    Delete(Delete),
    Increment(Increment),
    Append(Append),
}

impl Mutation {
    /// The row the mutation writes.
    #[must_use]
    pub fn row(&self) -> &Bytes {
        match self {
            Mutation::Put(p) => &p.row,
            Mutation::Delete(d) => &d.row,
            Mutation::Increment(i) => &i.row,
            Mutation::Append(a) => &a.row,
        }
    }

    /// The families the mutation writes (repeats included).
    #[must_use]
    pub fn families(&self) -> Vec<&Bytes> {
        match self {
            Mutation::Put(p) => p.cells.iter().map(|c| &c.family).collect(),
            Mutation::Delete(d) => d.markers.iter().map(|c| &c.family).collect(),
            Mutation::Increment(i) => i.columns.iter().map(|(f, _, _)| f).collect(),
            Mutation::Append(a) => a.columns.iter().map(|(f, _, _)| f).collect(),
        }
    }

    /// The durability the client asked for.
    #[must_use]
    pub fn durability(&self) -> Durability {
        match self {
            Mutation::Put(p) => p.durability,
            Mutation::Delete(d) => d.durability,
            Mutation::Increment(i) => i.durability,
            Mutation::Append(a) => a.durability,
        }
    }

    /// Client-side checks of the mutation.
    ///
    /// # Errors
    /// `IllegalArgument` for a bad row, timestamp or an empty Put.
    pub fn validate(&self) -> Result<()> {
        match self {
            Mutation::Put(p) => p.validate(),
            Mutation::Delete(d) => d.validate(),
            Mutation::Increment(i) => i.validate(),
            Mutation::Append(a) => a.validate(),
        }
    }

    /// What HBase's client checks before it sends a mutation: [`Mutation::validate`], and
    /// every Put cell against the largest cell size (`max_cell_bytes`, 0 for no limit).
    ///
    /// # Errors
    /// `IllegalArgument`.
    pub fn validate_for_client(&self, max_cell_bytes: usize) -> Result<()> {
        self.validate()?;
        if let Mutation::Put(p) = self {
            for c in &p.cells {
                crate::limits::check_cell_size(c, max_cell_bytes)?;
            }
        }
        Ok(())
    }
}

impl From<Put> for Mutation {
    fn from(p: Put) -> Self {
        Mutation::Put(p)
    }
}

impl From<Delete> for Mutation {
    fn from(d: Delete) -> Self {
        Mutation::Delete(d)
    }
}

impl From<Increment> for Mutation {
    fn from(i: Increment) -> Self {
        Mutation::Increment(i)
    }
}

impl From<Append> for Mutation {
    fn from(a: Append) -> Self {
        Mutation::Append(a)
    }
}

/// Several mutations applied to one row atomically (`RowMutations`).
#[derive(Clone, Debug)]
pub struct RowMutations {
    pub row: Bytes,
    pub mutations: Vec<Mutation>,
}

impl RowMutations {
    /// An empty set of mutations for `row`.
    pub fn new(row: impl Into<Bytes>) -> RowMutations {
        RowMutations {
            row: row.into(),
            mutations: Vec::new(),
        }
    }

    /// Adds a mutation; it must be for the same row.
    ///
    /// # Errors
    /// `DoNotRetry` when the mutation is for another row, as HBase words it.
    pub fn add(&mut self, m: impl Into<Mutation>) -> Result<&mut Self> {
        let m = m.into();
        if m.row() != &self.row {
            return Err(Error::DoNotRetry(format!(
                "The row in {} doesn't match the original one {}",
                crate::bytes_fmt::to_string_binary(m.row()),
                crate::bytes_fmt::to_string_binary(&self.row)
            )));
        }
        self.mutations.push(m);
        Ok(self)
    }

    /// Client-side checks of every mutation.
    ///
    /// # Errors
    /// The first mutation's error.
    pub fn validate(&self) -> Result<()> {
        validate_row(&self.row)?;
        self.mutations.iter().try_for_each(Mutation::validate)
    }
}
