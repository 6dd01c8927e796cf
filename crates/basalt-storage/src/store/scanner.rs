//! The store scanner: merges a store's memstores and files and turns the query matcher's
//! decisions into steps and seeks (HBase's StoreScanner and KeyValueHeap).

use basalt_model::filter::Filter;
use basalt_model::{Cell, Result};
use bytes::Bytes;

use super::query_matcher::{MatchCode, QueryMatcher};
use super::source::Source;

/// A sorted source of cells: a memstore or a store file (HBase's KeyValueScanner).
pub trait CellSource: Send + std::fmt::Debug {
    /// The current cell, `None` when exhausted.
    fn peek(&self) -> Option<&Cell>;
    /// Moves to the next visible cell.
    ///
    /// # Errors
    /// A corrupt block.
    fn advance(&mut self) -> Result<()>;
    /// Moves the current cell to the end of `out` and the source to the next visible one;
    /// false when there is no cell. What `peek().cloned()` then `advance()` do; a source
    /// that holds its cell overrides it to move the cell instead of copying it.
    ///
    /// # Errors
    /// A corrupt block.
    fn take_into(&mut self, out: &mut Vec<Cell>) -> Result<bool> {
        let Some(c) = self.peek().cloned() else {
            return Ok(false);
        };
        self.advance()?;
        out.push(c);
        Ok(true)
    }
    /// Moves the current cell, the last version of its column that the read keeps, to the
    /// end of `out`, and the source on; false when there is no cell. What `take_into` does,
    /// and a source may also pass the column's other versions here, where that costs less
    /// than building the next of them: the memstore copies each cell out of its arena, and
    /// a column updated since the last flush has a version there for each update. The store
    /// scanner passes what is left of the column, in every source, after
    /// (`StoreScanner::past_kept_column`).
    ///
    /// # Errors
    /// A corrupt block.
    fn take_last_version_into(&mut self, out: &mut Vec<Cell>) -> Result<bool> {
        self.take_into(out)
    }
    /// [`CellSource::take_last_version_into`] when the read keeps no more of the column
    /// (`last_version`), else [`CellSource::take_into`], with `spare`: cells the reader is
    /// done with, in which a source that builds its cells may build the next one. A store
    /// file's cells share their block's buffer, and a spare cell on the same block keeps
    /// its count, where a cell built anew takes one (and the spare, dropped, gives one
    /// back).
    ///
    /// # Errors
    /// A corrupt block.
    fn take_reusing(
        &mut self,
        out: &mut Vec<Cell>,
        last_version: bool,
        spare: &mut Vec<Cell>,
    ) -> Result<bool> {
        let _ = spare;
        if last_version {
            self.take_last_version_into(out)
        } else {
            self.take_into(out)
        }
    }
    /// Moves to the first visible cell at or after `key` (never backwards past the current).
    ///
    /// # Errors
    /// A corrupt block.
    fn seek(&mut self, key: &Cell) -> Result<()>;
    /// Moves forward to the first visible cell at or after `key`; a source already there
    /// stays. Takes a few steps before it seeks (`step_then_seek`). A source that can
    /// search forward from where it is cheaper than it can step overrides it.
    ///
    /// # Errors
    /// A corrupt block.
    fn skip_to(&mut self, key: &Cell) -> Result<()> {
        step_then_seek(self, |c| c < key, |s| s.seek(key))
    }
    /// Moves past every cell of `column`'s column (its row, family and qualifier) to the
    /// first visible cell of a later column; a source already past it stays. The source is
    /// not before that column (`column` is a cell the scan has reached). What
    /// `skip_to(last_on_column(..))` does, without a key to build unless the source must
    /// seek.
    ///
    /// # Errors
    /// A corrupt block.
    fn skip_column(&mut self, column: &Cell) -> Result<()> {
        step_then_seek(
            self,
            |c| c.same_column(column),
            |s| s.seek(&column.last_on_its_column()),
        )
    }
    /// Moves past every cell of `row` to the first visible cell of a later row; a source
    /// already past it stays. What `skip_to(first_on_next_row(row))` does, without building
    /// the next row's key unless the source must seek.
    ///
    /// # Errors
    /// A corrupt block.
    fn skip_row(&mut self, row: &[u8]) -> Result<()> {
        step_then_seek(
            self,
            |c| c.is_of_row(row),
            |s| s.seek(&first_on_next_row(row)),
        )
    }
    /// What `seek(key)` does, or, for a source that can put the seek off, a wait at
    /// `column` (at or after `key`): the first key of the first column a Get reads, when
    /// the source holds nothing before it that the Get needs. Until the merge reaches it,
    /// the source's cell is a stand-in ([`CellSource::is_pending`]) that sorts at or before
    /// its real next cell, and a skip moves the stand-in without a read. HBase's lazy seek:
    /// a Get of a column whose newest version is in a newer file never reads the older
    /// file's block.
    ///
    /// # Errors
    /// A corrupt block.
    fn seek_lazily(&mut self, key: &Cell, _column: &Cell) -> Result<()> {
        self.seek(key)
    }
    /// Whether the current cell is a stand-in for a seek put off.
    fn is_pending(&self) -> bool {
        false
    }
    /// Does the seek put off, so the current cell is real.
    ///
    /// # Errors
    /// A corrupt block.
    fn resolve(&mut self) -> Result<()> {
        Ok(())
    }
    /// The row of the greatest visible cell below `key` (below nothing: the last cell), for
    /// reversed scans. Does not move.
    ///
    /// # Errors
    /// A corrupt block.
    fn last_row_before(&mut self, key: Option<&Cell>) -> Result<Option<Bytes>>;
}

/// The rule of the sources' default skips: while the current cell is one to pass
/// (`passing`), a few steps, then `seek` (HBase's StoreScanner.trySkipToNextColumn). A near
/// cell is a step or two away, and a step costs less than a search.
fn step_then_seek<S: CellSource + ?Sized>(
    source: &mut S,
    passing: impl Fn(&Cell) -> bool,
    seek: impl FnOnce(&mut S) -> Result<()>,
) -> Result<()> {
    for _ in 0..STEPS_BEFORE_SEEK {
        if !source.peek().is_some_and(&passing) {
            return Ok(());
        }
        source.advance()?;
    }
    if source.peek().is_some_and(&passing) {
        seek(source)?;
    }
    Ok(())
}

/// The smallest key of the row after `row`.
#[must_use]
pub fn first_on_next_row(row: &[u8]) -> Cell {
    let mut next = Vec::with_capacity(row.len() + 1);
    next.extend_from_slice(row);
    next.push(0);
    Cell::first_on_row_in(Bytes::from(next))
}

/// Scans one store for one query.
///
/// # Invariants
/// 1. `top` is the source whose current cell sorts first (`None` when every source is
///    exhausted): each move of a source is followed by [`StoreScanner::find_top`]. A row
///    costs one pass over the sources per cell it moves past, not one for every look at
///    the next cell.
/// 2. The matcher sees real cells only: a source whose stand-in comes first
///    ([`CellSource::is_pending`]) does its seek before a row is read on
///    ([`StoreScanner::resolve_top`]). Stand-ins stay within the row a Get reads.
#[derive(Debug)]
pub struct StoreScanner {
    sources: Vec<Source>,
    matcher: QueryMatcher,
    top: Option<usize>,
    /// A Get's first column's first key, where sources may wait ([`CellSource::seek_lazily`]).
    lazy_to: Option<Cell>,
}

impl StoreScanner {
    /// A scanner over `sources` deciding with `matcher`.
    #[must_use]
    pub fn new(sources: Vec<Source>, matcher: QueryMatcher) -> StoreScanner {
        let top = min_source(&sources);
        StoreScanner {
            sources,
            matcher,
            top,
            lazy_to: None,
        }
    }

    /// Lets the sources of a Get of `row` in `family` put off their seeks to the first
    /// column the Get names ([`CellSource::seek_lazily`], [`QueryMatcher::lazy_seek_column`]).
    /// Only with more than one source: a file left unread needs another source to answer
    /// first, and with one, waiting only costs the stand-in.
    pub fn seek_lazily(&mut self, row: &[u8], family: &Bytes) {
        if self.sources.len() < 2 {
            return;
        }
        if let Some(first) = self.matcher.lazy_seek_column() {
            self.lazy_to = Some(Cell::first_on_column(row, family, first));
        }
    }

    /// The sources merged.
    #[cfg(test)]
    pub(crate) fn source_count(&self) -> usize {
        self.sources.len()
    }

    /// The first cell of all sources (invariant 1).
    fn min(&self) -> Option<&Cell> {
        self.check_top();
        top_cell(&self.sources, self.top).map(|(_, c)| c)
    }

    /// Checks invariant (1) where the `invariants` feature is on.
    fn check_top(&self) {
        #[cfg(feature = "invariants")]
        assert_eq!(self.top, min_source(&self.sources), "invariant (1)");
    }

    /// Keeps invariant (1) after a source moved.
    fn find_top(&mut self) {
        self.top = min_source(&self.sources);
    }

    /// The row of the next cell, `None` when the store is exhausted.
    #[must_use]
    pub fn peek_row(&self) -> Option<&[u8]> {
        self.min().map(Cell::row)
    }

    /// The next cell's row as a handle of its own (sharing the cell's buffer).
    #[must_use]
    pub fn peek_row_bytes(&self) -> Option<Bytes> {
        self.min().map(Cell::row_bytes)
    }

    /// Positions every source at the first cell at or after `key`.
    ///
    /// # Errors
    /// A corrupt block.
    pub fn seek(&mut self, key: &Cell) -> Result<()> {
        let sought = match self.lazy_to.as_ref().filter(|column| *column >= key) {
            Some(column) => self
                .sources
                .iter_mut()
                .try_for_each(|s| s.seek_lazily(key, column)),
            None => self.sources.iter_mut().try_for_each(|s| s.seek(key)),
        };
        self.find_top();
        sought
    }

    /// Keeps invariant (2): while the first cell is a stand-in, its source seeks. Each turn
    /// makes one source real, so one turn a source is all it takes.
    fn resolve_top(&mut self) -> Result<()> {
        for _ in 0..self.sources.len() {
            let Some(i) = self.top.filter(|&i| self.sources[i].is_pending()) else {
                break;
            };
            let resolved = self.sources[i].resolve();
            self.find_top();
            resolved?;
        }
        Ok(())
    }

    /// Positions every source at its first cell.
    ///
    /// # Errors
    /// A corrupt block.
    pub fn seek_to_first(&mut self) -> Result<()> {
        self.seek(&Cell::first_on_row(&Bytes::new()))
    }

    /// The greatest row below `key` in any source (reversed scans).
    ///
    /// # Errors
    /// A corrupt block.
    pub fn last_row_before(&mut self, key: Option<&Cell>) -> Result<Option<Bytes>> {
        let mut best: Option<Bytes> = None;
        for s in &mut self.sources {
            // Sources do not move to answer (the trait's contract), so invariant (1) holds.
            if let Some(r) = s.last_row_before(key)? {
                if best.as_ref().is_none_or(|b| r > *b) {
                    best = Some(r);
                }
            }
        }
        Ok(best)
    }

    /// Reads the cells of `row` that the query keeps into `out`. On return the sources are
    /// past the row, unless the filter ended the scan. Returns true when it did (DONE_SCAN).
    ///
    /// # Errors
    /// A corrupt block.
    pub fn read_row(
        &mut self,
        row: &[u8],
        out: &mut Vec<Cell>,
        filter: Option<&mut Filter>,
    ) -> Result<bool> {
        let mut unlimited = usize::MAX;
        self.read_row_within(row, out, &mut Vec::new(), filter, &mut unlimited)
    }

    /// [`StoreScanner::read_row`], failing with `RowTooBig` once the cells kept exceed
    /// `budget_bytes` (which shrinks by what is kept), and building the cells it reads in
    /// `spare`'s where it can ([`CellSource::take_reusing`]).
    ///
    /// # Errors
    /// A corrupt block, or `RowTooBig`.
    pub fn read_row_within(
        &mut self,
        row: &[u8],
        out: &mut Vec<Cell>,
        spare: &mut Vec<Cell>,
        mut filter: Option<&mut Filter>,
        budget_bytes: &mut usize,
    ) -> Result<bool> {
        self.matcher.set_row(row);
        loop {
            if self.lazy_to.is_some() {
                self.resolve_top()?;
            }
            self.check_top();
            let Some((i, cell)) = top_cell(&self.sources, self.top) else {
                return Ok(false);
            };
            #[cfg(feature = "invariants")]
            assert!(!self.sources[i].is_pending(), "invariant (2)");
            let code = self.matcher.matches(cell, filter.as_deref_mut());
            let step = match protect_family_markers(cell, code) {
                code @ (MatchCode::Include
                | MatchCode::IncludeAndSeekNextCol
                | MatchCode::IncludeAndSeekNextRow) => {
                    let step = match code {
                        // A filter's transform changes a cell's value, never its column.
                        MatchCode::IncludeAndSeekNextCol => Step::PastKeptColumn,
                        MatchCode::IncludeAndSeekNextRow => Step::NextRow,
                        _ => Step::Taken,
                    };
                    let last_version = matches!(step, Step::PastKeptColumn | Step::NextRow);
                    match self.keep(i, last_version, out, spare, filter.as_deref(), budget_bytes) {
                        Ok(true) => step,
                        // The source had no cell after all: nothing more to do for it.
                        Ok(false) => Step::Taken,
                        Err(e) => {
                            self.find_top();
                            return Err(e);
                        }
                    }
                }
                MatchCode::Skip => Step::Advance(i),
                MatchCode::SeekNextCol => Step::column_after(cell),
                MatchCode::SeekTo(key) if *key > *cell => Step::SkipTo(key),
                MatchCode::SeekTo(_) => Step::Advance(i),
                MatchCode::SeekNextRow => Step::NextRow,
                MatchCode::Done => return Ok(false),
                MatchCode::DoneScan => return Ok(true),
            };
            let row_done = matches!(step, Step::NextRow);
            let moved = match step {
                Step::Taken => Ok(()),
                Step::Advance(i) => self.sources[i].advance(),
                Step::SkipTo(key) => self.skip_to(&key),
                Step::PastKeptColumn => {
                    // Restores invariant (1) itself: most often nothing moves.
                    let row_goes_on = self.past_kept_column(out)?;
                    // Most often the column just kept was the row's last: a cell of another
                    // row next ends this one, as the matcher would answer (`Done`, before it
                    // looks at anything else) after a call. A filter may end the whole scan
                    // there instead, so with one the matcher is asked.
                    if filter.is_none() && !row_goes_on {
                        return Ok(false);
                    }
                    continue;
                }
                Step::NextRow => self.skip_row(row),
            };
            self.find_top();
            moved?;
            if row_done {
                return Ok(false);
            }
        }
    }

    /// Moves source `i`'s cell into `out` (transformed by the filter) and the source on, as
    /// [`CellSource::take_last_version_into`] when the read keeps no more of its column
    /// (`last_version`); false when it had none. The cell is moved once, from the source
    /// into `out`: a cell is 128 bytes, and each of the moves a return by value made was a
    /// call to `memcpy`. The caller restores invariant (1), once for the cell and the step
    /// after it.
    fn keep(
        &mut self,
        i: usize,
        last_version: bool,
        out: &mut Vec<Cell>,
        spare: &mut Vec<Cell>,
        filter: Option<&Filter>,
        budget_bytes: &mut usize,
    ) -> Result<bool> {
        if !self.sources[i].take_reusing(out, last_version, spare)? {
            return Ok(false);
        }
        if let Some(f) = filter {
            if let Some(c) = out.pop() {
                out.push(f.transform_cell(c));
            }
        }
        let Some(kept) = out.last() else {
            return Ok(false);
        };
        match budget_bytes.checked_sub(kept.serialized_size()) {
            Some(left) => {
                *budget_bytes = left;
                Ok(true)
            }
            None => {
                let too_big = row_too_big(kept);
                out.pop();
                Err(too_big)
            }
        }
    }

    /// Moves every source to its first cell at or after `key`, forward only
    /// ([`CellSource::skip_to`]).
    fn skip_to(&mut self, key: &Cell) -> Result<()> {
        self.sources.iter_mut().try_for_each(|s| s.skip_to(key))
    }

    /// Moves every source past the column of the cell just kept (the last in `out`), and
    /// restores invariant (1). Only the source whose cell comes first is looked at, and moved
    /// while its cell is of that column: when the first cell is past the column, every
    /// source's is. Most often it already is (a column of one version), and nothing moves;
    /// an older version in another file moves that file alone, where asking every source
    /// to leave the column cost each of the others a call and a compare. Answers whether
    /// the first cell after is of the kept cell's row, found by the same compare that
    /// tells it is past the column.
    fn past_kept_column(&mut self, out: &[Cell]) -> Result<bool> {
        self.find_top();
        let Some(column) = out.last() else {
            // Nothing was kept (no caller gets here): the matcher decides.
            return Ok(true);
        };
        // A source leaves the column when asked (the trait's contract), so each turn leaves
        // one source fewer of it: one turn a source is all it takes.
        for _ in 0..self.sources.len() {
            let Some((i, next)) = top_cell(&self.sources, self.top) else {
                return Ok(false);
            };
            if !next.is_of_row(column.row()) {
                return Ok(false);
            }
            if !next.matches_column(column) {
                return Ok(true);
            }
            // A source that put off its seek waits on at the next column the Get names,
            // where leaving the column would make it read (HBase's column hint).
            let hint = (self.sources[i].is_pending())
                .then(|| self.matcher.next_wanted_column(column))
                .flatten();
            let moved = match hint {
                Some(key) => self.sources[i].skip_to(&key),
                None => self.sources[i].skip_column(column),
            };
            self.find_top();
            moved?;
        }
        Ok(self.min().is_some_and(|next| next.is_of_row(column.row())))
    }

    /// Moves every source past `row` ([`CellSource::skip_row`]).
    fn skip_row(&mut self, row: &[u8]) -> Result<()> {
        self.sources.iter_mut().try_for_each(|s| s.skip_row(row))
    }

    /// Feeds every cell of every row through the matcher (compaction mode) into `sink`.
    ///
    /// A row's cells are built in those of the row before ([`CellSource::take_reusing`]),
    /// and the row is copied into a buffer kept for the whole walk: a cell built anew and a
    /// handle on the row each took and dropped counts on their buffers, four atomic
    /// operations a cell in a flush or compaction of one-cell rows.
    ///
    /// # Errors
    /// A corrupt block, or an error from `sink`.
    pub fn compact_into(&mut self, mut sink: impl FnMut(&mut [Cell]) -> Result<()>) -> Result<()> {
        let (mut row_cells, mut spare, mut row) = (Vec::new(), Vec::new(), Vec::new());
        while let Some(next) = self.min() {
            row.clear();
            row.extend_from_slice(next.row());
            let mut unlimited = usize::MAX;
            self.read_row_within(&row, &mut row_cells, &mut spare, None, &mut unlimited)?;
            sink(&mut row_cells)?;
            // The row's cells are the next row's spares; spares left unused (a source that
            // builds its cells anew takes none) are dropped, so they stay a row's worth.
            std::mem::swap(&mut row_cells, &mut spare);
            row_cells.clear();
        }
        Ok(())
    }
}

fn row_too_big(c: &Cell) -> basalt_model::Error {
    basalt_model::Error::RowTooBig(format!(
        "Max row size allowed exceeded: the row {} is bigger than hbase.table.max.rowsize \
         (reached in column family {}); read it with a batch size",
        basalt_model::bytes_fmt::to_string_binary(c.row()),
        basalt_model::bytes_fmt::to_string_binary(&c.family)
    ))
}

/// Steps a source takes toward a key before it seeks instead: a step is a few comparisons, a
/// seek a search of the index and the block.
pub(crate) const STEPS_BEFORE_SEEK: usize = 8;

/// Where the scan goes after a cell.
enum Step {
    /// Nothing more: the source already moved on when its cell was taken.
    Taken,
    /// The next cell of source `i`.
    Advance(usize),
    /// The first cell at or after this key. Boxed, as in [`MatchCode::SeekTo`]: a step is
    /// made for every cell a read looks at, and a whole cell inline made each step 136
    /// bytes where the rare seek needs a pointer (1.6% of a scan's instructions).
    SkipTo(Box<Cell>),
    /// The first cell past the column of the cell just kept (the last in `out`).
    PastKeptColumn,
    /// The first cell of a later row.
    NextRow,
}

impl Step {
    /// Past every version of `cell`'s column.
    fn column_after(cell: &Cell) -> Step {
        Step::SkipTo(Box::new(cell.last_on_its_column()))
    }
}

/// Source `top`'s current cell, with its index.
fn top_cell(sources: &[Source], top: Option<usize>) -> Option<(usize, &Cell)> {
    let i = top?;
    Some((i, sources[i].peek()?))
}

/// The source whose current cell sorts first (a linear pick: stores have few sources).
fn min_source(sources: &[Source]) -> Option<usize> {
    let mut best: Option<(usize, &Cell)> = None;
    for (i, s) in sources.iter().enumerate() {
        if let Some(c) = s.peek() {
            if best.is_none_or(|(_, b)| c < b) {
                best = Some((i, c));
            }
        }
    }
    best.map(|(i, _)| i)
}

/// Family-level markers sit under the empty qualifier and may follow newer empty-qualifier
/// puts; a seek past that column would skip them and let them mask nothing. Within the empty
/// qualifier, seeks become steps so every marker reaches the delete tracker.
fn protect_family_markers(cell: &Cell, code: MatchCode) -> MatchCode {
    if !cell.qualifier().is_empty() {
        return code;
    }
    match code {
        MatchCode::SeekNextCol => MatchCode::Skip,
        MatchCode::SeekTo(key) if key.row() == cell.row() => MatchCode::Skip,
        MatchCode::IncludeAndSeekNextCol => MatchCode::Include,
        other => other,
    }
}
