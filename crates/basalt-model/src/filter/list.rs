//! `FilterList`: AND (MUST_PASS_ALL) and OR (MUST_PASS_ONE) of filters, with HBase 2's rules
//! for merging return codes (FilterListWithAND / FilterListWithOR).

use super::{Filter, ReturnCode};
use crate::cell::Cell;

/// How a list combines its filters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FilterListOp {
    /// `AND`: a cell or row passes only if every filter passes it.
    MustPassAll,
    /// `OR`: a cell or row passes if any filter passes it.
    MustPassOne,
}

/// A list of filters and, for OR, what each said about the last cell it saw.
#[derive(Clone, Debug, PartialEq)]
pub struct FilterList {
    pub op: FilterListOp,
    pub filters: Vec<Filter>,
    /// OR only: the previous code and cell of each filter, so a filter that asked to skip a
    /// column or row is not asked again about cells it already ruled out.
    prev: Vec<Option<(ReturnCode, Cell)>>,
    /// OR only: which filters included the current cell (only they transform it).
    included: Vec<bool>,
}

impl FilterList {
    pub(super) fn new(op: FilterListOp, filters: Vec<Filter>) -> FilterList {
        let n = filters.len();
        FilterList {
            op,
            filters,
            prev: vec![None; n],
            included: vec![false; n],
        }
    }

    pub(super) fn reset(&mut self) {
        self.filters.iter_mut().for_each(Filter::reset);
        self.prev.iter_mut().for_each(|p| *p = None);
    }

    pub(super) fn filter_all_remaining(&self) -> bool {
        if self.filters.is_empty() {
            return false;
        }
        match self.op {
            FilterListOp::MustPassAll => self.filters.iter().any(Filter::filter_all_remaining),
            FilterListOp::MustPassOne => self.filters.iter().all(Filter::filter_all_remaining),
        }
    }

    pub(super) fn filter_row_key(&mut self, row: &[u8]) -> bool {
        if self.filters.is_empty() {
            return false;
        }
        let mut any = false;
        let mut all = true;
        for f in &mut self.filters {
            let out = f.filter_all_remaining() || f.filter_row_key(row);
            any |= out;
            all &= out;
        }
        match self.op {
            FilterListOp::MustPassAll => any,
            FilterListOp::MustPassOne => all,
        }
    }

    pub(super) fn filter_cell(&mut self, cell: &Cell) -> ReturnCode {
        match self.op {
            FilterListOp::MustPassAll => self.filter_cell_and(cell),
            FilterListOp::MustPassOne => self.filter_cell_or(cell),
        }
    }

    fn filter_cell_and(&mut self, cell: &Cell) -> ReturnCode {
        let mut rc = ReturnCode::Include;
        for f in &mut self.filters {
            if f.filter_all_remaining() {
                return ReturnCode::NextRow;
            }
            rc = merge_and(rc, f.filter_cell(cell));
        }
        rc
    }

    fn filter_cell_or(&mut self, cell: &Cell) -> ReturnCode {
        let mut rc: Option<ReturnCode> = None;
        let mut every_hint = !self.filters.is_empty();
        for (i, f) in self.filters.iter_mut().enumerate() {
            self.included[i] = false;
            let skip = f.filter_all_remaining()
                || self.prev[i]
                    .as_ref()
                    .is_some_and(|(code, prev)| !should_pass(f, *code, prev, cell));
            if skip {
                every_hint = false;
                continue;
            }
            let local = f.filter_cell(cell);
            self.included[i] = local.includes();
            if local != ReturnCode::SeekNextUsingHint {
                every_hint = false;
            }
            rc = Some(rc.map_or(local, |rc| merge_or(rc, local)));
            self.prev[i] = match local {
                ReturnCode::Include | ReturnCode::Skip => None,
                code => Some((code, cell.clone())),
            };
        }
        if every_hint {
            return ReturnCode::SeekNextUsingHint;
        }
        rc.unwrap_or(ReturnCode::Skip)
    }

    pub(super) fn transform_cell(&self, cell: Cell) -> Cell {
        let mut cell = cell;
        for (i, f) in self.filters.iter().enumerate() {
            if self.op == FilterListOp::MustPassAll || self.included[i] {
                cell = f.transform_cell(cell);
            }
        }
        cell
    }

    pub(super) fn filter_row(&mut self) -> bool {
        if self.filters.is_empty() {
            return false;
        }
        match self.op {
            FilterListOp::MustPassAll => self.filters.iter_mut().any(Filter::filter_row),
            FilterListOp::MustPassOne => self.filters.iter_mut().all(Filter::filter_row),
        }
    }

    pub(super) fn next_cell_hint(&self, cell: &Cell) -> Option<Cell> {
        let hints = self.filters.iter().filter_map(|f| f.next_cell_hint(cell));
        match self.op {
            FilterListOp::MustPassAll => hints.max(),
            FilterListOp::MustPassOne => hints.min(),
        }
    }
}

/// Whether an OR member that said `code` about `prev` must also see `cur`.
fn should_pass(f: &Filter, code: ReturnCode, prev: &Cell, cur: &Cell) -> bool {
    match code {
        ReturnCode::Include | ReturnCode::Skip => true,
        ReturnCode::SeekNextUsingHint => f.next_cell_hint(prev).is_none_or(|h| cur >= &h),
        ReturnCode::NextCol | ReturnCode::IncludeAndNextCol => !prev.same_column(cur),
        ReturnCode::NextRow | ReturnCode::IncludeAndSeekNextRow => prev.row() != cur.row(),
    }
}

/// FilterListWithAND.mergeReturnCode: the more restrictive of the two.
fn merge_and(rc: ReturnCode, local: ReturnCode) -> ReturnCode {
    use ReturnCode::{
        Include, IncludeAndNextCol as IncNc, IncludeAndSeekNextRow as IncNr, NextCol, NextRow,
        SeekNextUsingHint as Hint, Skip,
    };
    if rc == Hint {
        return Hint;
    }
    match (local, rc) {
        (Hint, _) => Hint,
        (Include, rc) => rc,
        (IncNc, Include | IncNc) => IncNc,
        (IncNc, IncNr) => IncNr,
        (IncNc, Skip | NextCol)
        | (NextCol, Include | IncNc | Skip | NextCol)
        | (Skip, IncNc | NextCol) => NextCol,
        (IncNr, Include | IncNc | IncNr) => IncNr,
        (Skip, Include | Skip) => Skip,
        (_, _) => NextRow,
    }
}

/// FilterListWithOR.mergeReturnCode: the less restrictive of the two.
fn merge_or(rc: ReturnCode, local: ReturnCode) -> ReturnCode {
    use ReturnCode::{
        Include, IncludeAndNextCol as IncNc, IncludeAndSeekNextRow as IncNr, NextCol, NextRow,
        SeekNextUsingHint as Hint, Skip,
    };
    match (local, rc) {
        (Include, _)
        | (IncNc | IncNr, Include | Skip | Hint)
        | (Skip | Hint, Include | IncNc | IncNr)
        | (NextCol | NextRow, Include) => Include,
        (IncNc, _) | (IncNr, IncNc | NextCol) | (NextCol, IncNc | IncNr) | (NextRow, IncNc) => {
            IncNc
        }
        (IncNr, _) | (NextRow, IncNr) => IncNr,
        (NextCol, NextCol | NextRow) | (NextRow, NextCol) => NextCol,
        (NextRow, NextRow) => NextRow,
        (Hint, Hint) => Hint,
        (_, _) => Skip,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ReturnCode::*;

    #[test]
    fn and_takes_the_more_restrictive_code() {
        assert_eq!(merge_and(Include, Include), Include);
        assert_eq!(merge_and(Include, Skip), Skip);
        assert_eq!(merge_and(IncludeAndNextCol, Skip), NextCol);
        assert_eq!(merge_and(IncludeAndSeekNextRow, Skip), NextRow);
        assert_eq!(merge_and(Skip, NextRow), NextRow);
        assert_eq!(merge_and(NextCol, Skip), NextCol);
        assert_eq!(merge_and(Include, SeekNextUsingHint), SeekNextUsingHint);
    }

    #[test]
    fn or_takes_the_less_restrictive_code() {
        assert_eq!(merge_or(Skip, Include), Include);
        assert_eq!(merge_or(NextRow, Skip), Skip);
        assert_eq!(merge_or(NextRow, NextCol), NextCol);
        assert_eq!(merge_or(NextRow, NextRow), NextRow);
        assert_eq!(merge_or(IncludeAndNextCol, NextRow), IncludeAndNextCol);
        assert_eq!(
            merge_or(SeekNextUsingHint, SeekNextUsingHint),
            SeekNextUsingHint
        );
        assert_eq!(merge_or(NextCol, SeekNextUsingHint), Skip);
    }
}
