//! Cell decisions of the leaf filters, each as HBase's filter class makes them.

use std::collections::BTreeSet;

use bytes::Bytes;

use super::{passes, Comparator, Filter, ReturnCode};
use crate::cell::Cell;
use crate::ops::CompareOp;

/// State and settings of `SingleColumnValueFilter` and its Exclude variant.
#[derive(Clone, Debug, PartialEq)]
pub struct SingleColumnValue {
    pub family: Bytes,
    pub qualifier: Bytes,
    pub op: CompareOp,
    pub cmp: Comparator,
    pub filter_if_missing: bool,
    pub latest_version_only: bool,
    pub exclude: bool,
    pub(super) found_column: bool,
    pub(super) matched_column: bool,
}

fn is_column(cell: &Cell, family: &[u8], qualifier: &[u8]) -> bool {
    cell.family == family && cell.qualifier() == qualifier
}

/// `filterCell` of every filter that is not a combinator.
pub(super) fn filter_cell(f: &mut Filter, cell: &Cell) -> ReturnCode {
    use ReturnCode::{Include, IncludeAndNextCol, NextCol, NextRow, SeekNextUsingHint, Skip};
    match f {
        Filter::KeyOnly { .. } => Include,
        Filter::FirstKeyOnly { found } => {
            if *found {
                return NextRow;
            }
            *found = true;
            Include
        }
        Filter::Prefix { filter_row, .. }
        | Filter::Row {
            filter_out_row: filter_row,
            ..
        } => {
            if *filter_row {
                NextRow
            } else {
                Include
            }
        }
        Filter::ColumnPrefix(prefix) => column_prefix(cell.qualifier(), prefix),
        Filter::MultipleColumnPrefix(prefixes) => {
            if prefixes.iter().any(|p| cell.qualifier().starts_with(p)) {
                Include
            } else if first_prefix_from(prefixes, cell.qualifier()).is_some() {
                SeekNextUsingHint
            } else {
                NextRow
            }
        }
        Filter::ColumnCountGet { limit, count } => {
            *count += 1;
            if count > limit {
                NextCol
            } else {
                IncludeAndNextCol
            }
        }
        Filter::Page { .. } => Include,
        Filter::ColumnPagination {
            limit,
            offset,
            count,
        } => {
            if *count >= offset.saturating_add(*limit) {
                return NextRow;
            }
            let rc = if count < offset {
                NextCol
            } else {
                IncludeAndNextCol
            };
            *count += 1;
            rc
        }
        Filter::InclusiveStop { done, .. } => {
            if *done {
                NextRow
            } else {
                Include
            }
        }
        Filter::Timestamps(set) => {
            if set.contains(&cell.timestamp) {
                Include
            } else if set.first().is_none_or(|min| cell.timestamp < *min) {
                NextCol
            } else {
                Skip
            }
        }
        other => column_filter_cell(other, cell),
    }
}

/// `filterCell` of the filters that test a cell's family, qualifier or value.
fn column_filter_cell(f: &mut Filter, cell: &Cell) -> ReturnCode {
    use ReturnCode::{Include, NextCol, NextRow, Skip};
    match f {
        Filter::Family { op, cmp } => {
            if passes(*op, cmp, &cell.family) {
                Include
            } else {
                NextRow
            }
        }
        Filter::Qualifier { op, cmp } => pass_or_skip(passes(*op, cmp, cell.qualifier())),
        Filter::Value { op, cmp } => pass_or_skip(passes(*op, cmp, cell.value())),
        Filter::DependentColumn {
            family,
            qualifier,
            drop_dependent,
            condition,
            stamps,
        } => {
            if !is_column(cell, family, qualifier) {
                return Include;
            }
            if let Some((op, cmp)) = condition {
                if !passes(*op, cmp, cell.value()) {
                    return Skip;
                }
            }
            stamps.insert(cell.timestamp);
            if *drop_dependent {
                Skip
            } else {
                Include
            }
        }
        Filter::SingleColumnValue(s) => single_column_value(s, cell),
        Filter::ColumnRange {
            min,
            min_inclusive,
            max,
            max_inclusive,
        } => column_range(
            cell.qualifier(),
            min.as_ref(),
            *min_inclusive,
            max.as_ref(),
            *max_inclusive,
        ),
        Filter::ColumnValue {
            family,
            qualifier,
            op,
            cmp,
            found,
        } => {
            if !is_column(cell, family, qualifier) {
                return if *found { NextRow } else { NextCol };
            }
            *found = true;
            pass_or_skip(passes(*op, cmp, cell.value()))
        }
        _ => unreachable!("row and combinator filters are evaluated by filter_cell"),
    }
}

fn pass_or_skip(pass: bool) -> ReturnCode {
    if pass {
        ReturnCode::Include
    } else {
        ReturnCode::Skip
    }
}

fn column_prefix(qualifier: &[u8], prefix: &[u8]) -> ReturnCode {
    let n = qualifier.len().min(prefix.len());
    let cmp = qualifier[..n].cmp(&prefix[..n]);
    if qualifier.len() < prefix.len() {
        // A qualifier shorter than the prefix sorts before the prefix's columns when it is a
        // prefix of the prefix (or smaller); jump ahead to the first column with the prefix.
        return if cmp.is_le() {
            ReturnCode::SeekNextUsingHint
        } else {
            ReturnCode::NextRow
        };
    }
    match cmp {
        std::cmp::Ordering::Less => ReturnCode::SeekNextUsingHint,
        std::cmp::Ordering::Greater => ReturnCode::NextRow,
        std::cmp::Ordering::Equal => ReturnCode::Include,
    }
}

fn column_range(
    q: &[u8],
    min: Option<&Bytes>,
    min_inclusive: bool,
    max: Option<&Bytes>,
    max_inclusive: bool,
) -> ReturnCode {
    if let Some(min) = min {
        let c = q.cmp(min);
        if c.is_lt() {
            return ReturnCode::SeekNextUsingHint;
        }
        if c.is_eq() && !min_inclusive {
            return ReturnCode::NextCol;
        }
    }
    let Some(max) = max else {
        return ReturnCode::Include;
    };
    let c = q.cmp(max);
    if c.is_lt() || (c.is_eq() && max_inclusive) {
        ReturnCode::Include
    } else {
        ReturnCode::NextRow
    }
}

fn single_column_value(s: &mut SingleColumnValue, cell: &Cell) -> ReturnCode {
    if s.matched_column {
        return ReturnCode::Include;
    }
    if s.latest_version_only && s.found_column {
        return ReturnCode::NextRow;
    }
    if !is_column(cell, &s.family, &s.qualifier) {
        return ReturnCode::Include;
    }
    s.found_column = true;
    if !passes(s.op, &s.cmp, cell.value()) {
        return if s.latest_version_only {
            ReturnCode::NextRow
        } else {
            ReturnCode::Include
        };
    }
    s.matched_column = true;
    ReturnCode::Include
}

/// The first of `prefixes` at or after `qualifier`.
fn first_prefix_from<'a>(prefixes: &'a BTreeSet<Bytes>, qualifier: &[u8]) -> Option<&'a Bytes> {
    use std::ops::Bound::{Included, Unbounded};
    prefixes
        .range::<[u8], _>((Included(qualifier), Unbounded))
        .next()
}

/// `getNextCellHint` of the leaf filters that return `SeekNextUsingHint`.
pub(super) fn next_cell_hint(f: &Filter, cell: &Cell) -> Option<Cell> {
    let on_column = |q: &Bytes| Some(Cell::first_on_column(cell.row(), &cell.family, q));
    match f {
        Filter::ColumnPrefix(prefix) => on_column(prefix),
        Filter::MultipleColumnPrefix(prefixes) => {
            first_prefix_from(prefixes, cell.qualifier()).and_then(on_column)
        }
        Filter::ColumnRange { min: Some(min), .. } => on_column(min),
        _ => None,
    }
}
