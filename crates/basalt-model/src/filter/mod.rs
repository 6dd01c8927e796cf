//! Filters (HBase's `org.apache.hadoop.hbase.filter`) and the filter language.
//!
//! A [`Filter`] is both the description a client sends and the state the server keeps while
//! it evaluates it (HBase filters are stateful too: PageFilter counts rows, WhileMatchFilter
//! remembers failure). The read path clones the client's filter once per scan and drives it
//! through HBase's contract, in this order for each row:
//!
//! 1. [`Filter::filter_all_remaining`] — true ends the scan.
//! 2. [`Filter::filter_row_key`] — true drops the row without reading it.
//! 3. [`Filter::filter_cell`] for each cell that survived versions and deletes, then
//!    [`Filter::transform_cell`] for each included cell.
//! 4. [`Filter::filter_row_cells`], then [`Filter::filter_row`] — true drops the row.
//! 5. [`Filter::reset`] before the next row.

mod comparator;
mod list;
mod parse;
mod simple;
mod unparse;

pub use comparator::Comparator;
pub use list::FilterListOp;
pub use parse::{
    parse_filter, parse_filter_bytes, FILTER_NAMES, MAX_FILTER_DEPTH, MAX_FILTER_REGEXES,
};
pub use unparse::quoted as quote_operand;

use std::collections::BTreeSet;

use bytes::Bytes;

use crate::cell::Cell;
use crate::ops::CompareOp;

/// What a filter says about one cell (`Filter.ReturnCode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReturnCode {
    Include,
    IncludeAndNextCol,
    IncludeAndSeekNextRow,
    Skip,
    NextCol,
    NextRow,
    SeekNextUsingHint,
}

impl ReturnCode {
    /// Whether the cell goes into the result.
    #[must_use]
    pub fn includes(self) -> bool {
        matches!(
            self,
            ReturnCode::Include | ReturnCode::IncludeAndNextCol | ReturnCode::IncludeAndSeekNextRow
        )
    }
}

/// A filter with its evaluation state. Build one with the constructors below or with
/// [`parse_filter`].
#[derive(Clone, Debug, PartialEq)]
pub enum Filter {
    /// `KeyOnlyFilter([lenAsVal])`: strips values (or replaces them by their 4-byte length).
    KeyOnly { len_as_val: bool },
    /// `FirstKeyOnlyFilter()`: only the first cell of each row.
    FirstKeyOnly { found: bool },
    /// `PrefixFilter('p')`: only rows starting with `p`.
    Prefix {
        prefix: Bytes,
        passed: bool,
        filter_row: bool,
        reversed: bool,
    },
    /// `ColumnPrefixFilter('p')`.
    ColumnPrefix(Bytes),
    /// `MultipleColumnPrefixFilter('p1', ...)`.
    MultipleColumnPrefix(BTreeSet<Bytes>),
    /// `ColumnCountGetFilter(n)`: the first `n` columns, then the scan stops.
    ColumnCountGet { limit: u32, count: u32 },
    /// `PageFilter(n)`: at most `n` rows per region.
    Page { page_size: u64, rows_accepted: u64 },
    /// `ColumnPaginationFilter(limit, offset)`.
    ColumnPagination { limit: u32, offset: u32, count: u32 },
    /// `InclusiveStopFilter('row')`.
    InclusiveStop {
        stop_row: Bytes,
        done: bool,
        reversed: bool,
    },
    /// `TimestampsFilter(ts, ...)`.
    Timestamps(BTreeSet<i64>),
    /// `RowFilter(op, 'cmp')`.
    Row {
        op: CompareOp,
        cmp: Comparator,
        filter_out_row: bool,
    },
    /// `FamilyFilter(op, 'cmp')`.
    Family { op: CompareOp, cmp: Comparator },
    /// `QualifierFilter(op, 'cmp')`.
    Qualifier { op: CompareOp, cmp: Comparator },
    /// `ValueFilter(op, 'cmp')`.
    Value { op: CompareOp, cmp: Comparator },
    /// `DependentColumnFilter('f', 'q'[, drop[, op, 'cmp']])`.
    DependentColumn {
        family: Bytes,
        qualifier: Bytes,
        drop_dependent: bool,
        condition: Option<(CompareOp, Comparator)>,
        stamps: BTreeSet<i64>,
    },
    /// `SingleColumnValueFilter` / `SingleColumnValueExcludeFilter`.
    SingleColumnValue(Box<simple::SingleColumnValue>),
    /// `ColumnRangeFilter('min', minInclusive, 'max', maxInclusive)`; empty bounds are open.
    ColumnRange {
        min: Option<Bytes>,
        min_inclusive: bool,
        max: Option<Bytes>,
        max_inclusive: bool,
    },
    /// `ColumnValueFilter('f', 'q', op, 'cmp')`: only the matching cell of that column.
    ColumnValue {
        family: Bytes,
        qualifier: Bytes,
        op: CompareOp,
        cmp: Comparator,
        found: bool,
    },
    /// `A AND B`, `A OR B` (`FilterList`).
    List(Box<list::FilterList>),
    /// `SKIP f` (`SkipFilter`): drops a row when any cell fails `f`.
    Skip {
        inner: Box<Filter>,
        filter_row: bool,
    },
    /// `WHILE f` (`WhileMatchFilter`): ends the scan at the first cell or row `f` rejects.
    WhileMatch { inner: Box<Filter>, done: bool },
}

/// Whether a compare filter keeps `bytes` (SEMANTICS.md #57: `bytes OP operand`).
fn passes(op: CompareOp, cmp: &Comparator, bytes: &[u8]) -> bool {
    op.matches(cmp.compare_value(bytes))
}

impl Filter {
    /// `PrefixFilter`.
    pub fn prefix(p: impl Into<Bytes>) -> Filter {
        Filter::Prefix {
            prefix: p.into(),
            passed: false,
            filter_row: false,
            reversed: false,
        }
    }

    /// `PageFilter`.
    #[must_use]
    pub fn page(n: u64) -> Filter {
        Filter::Page {
            page_size: n,
            rows_accepted: 0,
        }
    }

    /// `ValueFilter`.
    #[must_use]
    pub fn value(op: CompareOp, cmp: Comparator) -> Filter {
        Filter::Value { op, cmp }
    }

    /// `FilterList` of `filters` under `op`.
    #[must_use]
    pub fn list(op: FilterListOp, filters: Vec<Filter>) -> Filter {
        Filter::List(Box::new(list::FilterList::new(op, filters)))
    }

    /// `SingleColumnValueFilter` (or its Exclude variant with `exclude`).
    pub fn single_column_value(
        family: impl Into<Bytes>,
        qualifier: impl Into<Bytes>,
        op: CompareOp,
        cmp: Comparator,
        filter_if_missing: bool,
        latest_version_only: bool,
        exclude: bool,
    ) -> Filter {
        Filter::SingleColumnValue(Box::new(simple::SingleColumnValue {
            family: family.into(),
            qualifier: qualifier.into(),
            op,
            cmp,
            filter_if_missing,
            latest_version_only,
            exclude,
            found_column: false,
            matched_column: false,
        }))
    }

    /// Tells row-bound filters that the scan runs backwards.
    pub fn set_reversed(&mut self, rev: bool) {
        match self {
            Filter::Prefix { reversed, .. } | Filter::InclusiveStop { reversed, .. } => {
                *reversed = rev;
            }
            Filter::List(l) => l.filters.iter_mut().for_each(|f| f.set_reversed(rev)),
            Filter::Skip { inner, .. } | Filter::WhileMatch { inner, .. } => {
                inner.set_reversed(rev);
            }
            _ => {}
        }
    }

    /// Clears per-row state before the next row.
    pub fn reset(&mut self) {
        match self {
            Filter::FirstKeyOnly { found } => *found = false,
            Filter::Prefix { filter_row, .. } => *filter_row = false,
            Filter::ColumnCountGet { count, .. } | Filter::ColumnPagination { count, .. } => {
                *count = 0;
            }
            Filter::Row { filter_out_row, .. } => *filter_out_row = false,
            Filter::DependentColumn { stamps, .. } => stamps.clear(),
            Filter::SingleColumnValue(s) => {
                s.found_column = false;
                s.matched_column = false;
            }
            Filter::ColumnValue { found, .. } => *found = false,
            Filter::List(l) => l.reset(),
            Filter::Skip { inner, filter_row } => {
                inner.reset();
                *filter_row = false;
            }
            Filter::WhileMatch { inner, .. } => inner.reset(),
            _ => {}
        }
    }

    /// True when no further row can pass: the scan ends.
    #[must_use]
    pub fn filter_all_remaining(&self) -> bool {
        match self {
            Filter::Prefix { passed, .. } => *passed,
            Filter::ColumnCountGet { limit, count } => count > limit,
            Filter::Page {
                page_size,
                rows_accepted,
            } => rows_accepted >= page_size,
            Filter::InclusiveStop { done, .. } => *done,
            Filter::List(l) => l.filter_all_remaining(),
            Filter::Skip { inner, .. } => inner.filter_all_remaining(),
            Filter::WhileMatch { inner, done } => *done || inner.filter_all_remaining(),
            _ => false,
        }
    }

    /// True drops the row before its cells are read.
    pub fn filter_row_key(&mut self, row: &[u8]) -> bool {
        match self {
            Filter::Prefix {
                prefix,
                passed,
                filter_row,
                reversed,
            } => {
                if *passed {
                    return true;
                }
                let head = &row[..row.len().min(prefix.len())];
                let cmp = head.cmp(prefix);
                if (!*reversed && cmp.is_gt()) || (*reversed && cmp.is_lt()) {
                    *passed = true;
                }
                *filter_row = cmp.is_ne();
                *filter_row
            }
            Filter::ColumnCountGet { .. } => self.filter_all_remaining(),
            Filter::InclusiveStop {
                stop_row,
                done,
                reversed,
            } => {
                let cmp = stop_row[..].cmp(row);
                *done = if *reversed { cmp.is_gt() } else { cmp.is_lt() };
                *done
            }
            Filter::Row {
                op,
                cmp,
                filter_out_row,
            } => {
                if !passes(*op, cmp, row) {
                    *filter_out_row = true;
                }
                *filter_out_row
            }
            Filter::List(l) => l.filter_row_key(row),
            Filter::Skip { inner, .. } => inner.filter_row_key(row),
            Filter::WhileMatch { inner, done } => {
                let v = inner.filter_row_key(row);
                *done |= v;
                v
            }
            _ => false,
        }
    }

    /// Decides about one cell.
    pub fn filter_cell(&mut self, cell: &Cell) -> ReturnCode {
        match self {
            Filter::List(l) => l.filter_cell(cell),
            Filter::Skip { inner, filter_row } => {
                let rc = inner.filter_cell(cell);
                *filter_row |= rc != ReturnCode::Include;
                rc
            }
            Filter::WhileMatch { inner, done } => {
                let rc = inner.filter_cell(cell);
                *done |= rc != ReturnCode::Include;
                rc
            }
            other => simple::filter_cell(other, cell),
        }
    }

    /// Rewrites an included cell (KeyOnlyFilter strips its value).
    #[must_use]
    pub fn transform_cell(&self, cell: Cell) -> Cell {
        match self {
            Filter::KeyOnly { len_as_val } => {
                let value = if *len_as_val {
                    let len = u32::try_from(cell.value().len()).unwrap_or(u32::MAX);
                    Bytes::copy_from_slice(&len.to_be_bytes())
                } else {
                    Bytes::new()
                };
                cell.with_value(value)
            }
            Filter::List(l) => l.transform_cell(cell),
            Filter::Skip { inner, .. } | Filter::WhileMatch { inner, .. } => {
                inner.transform_cell(cell)
            }
            _ => cell,
        }
    }

    /// Whether the filter needs the whole row before deciding (`hasFilterRow`).
    #[must_use]
    pub fn has_filter_row(&self) -> bool {
        match self {
            Filter::Page { .. }
            | Filter::DependentColumn { .. }
            | Filter::SingleColumnValue(_)
            | Filter::Skip { .. }
            | Filter::WhileMatch { .. } => true,
            Filter::List(l) => l.filters.iter().any(Filter::has_filter_row),
            _ => false,
        }
    }

    /// Edits the row's cells once they are all known.
    pub fn filter_row_cells(&mut self, cells: &mut Vec<Cell>) {
        match self {
            Filter::DependentColumn { stamps, .. } => {
                cells.retain(|c| stamps.contains(&c.timestamp));
            }
            Filter::SingleColumnValue(s) if s.exclude => {
                cells.retain(|c| !(c.family == s.family && c.qualifier() == s.qualifier));
            }
            Filter::List(l) => l.filters.iter_mut().for_each(|f| f.filter_row_cells(cells)),
            Filter::Skip { inner, .. } | Filter::WhileMatch { inner, .. } => {
                inner.filter_row_cells(cells);
            }
            _ => {}
        }
    }

    /// True drops the row after its cells were seen.
    pub fn filter_row(&mut self) -> bool {
        match self {
            Filter::Page {
                page_size,
                rows_accepted,
            } => {
                *rows_accepted += 1;
                *rows_accepted > *page_size
            }
            Filter::SingleColumnValue(s) => {
                if s.found_column {
                    !s.matched_column
                } else {
                    s.filter_if_missing
                }
            }
            Filter::List(l) => l.filter_row(),
            Filter::Skip { filter_row, .. } => *filter_row,
            Filter::WhileMatch { inner, done } => {
                let v = inner.filter_row();
                *done |= v;
                v
            }
            _ => false,
        }
    }

    /// Where to seek after `SeekNextUsingHint` for `cell`.
    #[must_use]
    pub fn next_cell_hint(&self, cell: &Cell) -> Option<Cell> {
        match self {
            Filter::List(l) => l.next_cell_hint(cell),
            Filter::Skip { inner, .. } | Filter::WhileMatch { inner, .. } => {
                inner.next_cell_hint(cell)
            }
            other => simple::next_cell_hint(other, cell),
        }
    }
}

#[cfg(test)]
mod tests;
