//! A source the store scanner merges, by kind: a memstore, a store file, or a store file
//! cut to a region's rows (the references a split or merge leaves, boxed: they are rare).
//!
//! The merge asks every source for its current cell to find the first, once for each cell
//! a scan moves past. Through `Box<dyn CellSource>` each ask was an indirect call, and in a
//! sequential scan the calls to `peek` alone, a load each, took about 5% of the samples
//! (BENCHMARKS.md). Named kinds make the calls direct, and `peek` a load in the merge.

use basalt_model::{Cell, Result};
use bytes::Bytes;

use super::half::RowRangeSource;
use super::scanner::CellSource;
use crate::memstore::MemStoreScanner;
use crate::storefile::StoreFileScanner;

/// A source of a store's cells (HBase's KeyValueScanner), by kind.
#[derive(Debug)]
pub enum Source {
    Memory(MemStoreScanner),
    File(StoreFileScanner),
    Cut(Box<RowRangeSource>),
}

/// `$call` of whichever source `$source` is.
macro_rules! each {
    ($source:expr, $s:ident => $call:expr) => {
        match $source {
            Source::Memory($s) => $call,
            Source::File($s) => $call,
            Source::Cut($s) => $call,
        }
    };
}

impl CellSource for Source {
    #[inline]
    fn peek(&self) -> Option<&Cell> {
        match self {
            Source::Memory(s) => s.peek(),
            Source::File(s) => s.peek(),
            Source::Cut(s) => cut_peek(s),
        }
    }

    fn advance(&mut self) -> Result<()> {
        each!(self, s => s.advance())
    }

    fn take_into(&mut self, out: &mut Vec<Cell>) -> Result<bool> {
        each!(self, s => s.take_into(out))
    }

    fn take_last_version_into(&mut self, out: &mut Vec<Cell>) -> Result<bool> {
        each!(self, s => s.take_last_version_into(out))
    }

    fn take_reusing(
        &mut self,
        out: &mut Vec<Cell>,
        last_version: bool,
        spare: &mut Vec<Cell>,
    ) -> Result<bool> {
        each!(self, s => s.take_reusing(out, last_version, spare))
    }

    fn seek(&mut self, key: &Cell) -> Result<()> {
        each!(self, s => s.seek(key))
    }

    fn skip_to(&mut self, key: &Cell) -> Result<()> {
        each!(self, s => s.skip_to(key))
    }

    fn skip_column(&mut self, column: &Cell) -> Result<()> {
        each!(self, s => s.skip_column(column))
    }

    fn skip_row(&mut self, row: &[u8]) -> Result<()> {
        each!(self, s => s.skip_row(row))
    }

    fn seek_lazily(&mut self, key: &Cell, column: &Cell) -> Result<()> {
        each!(self, s => s.seek_lazily(key, column))
    }

    fn is_pending(&self) -> bool {
        each!(self, s => s.is_pending())
    }

    fn resolve(&mut self) -> Result<()> {
        each!(self, s => s.resolve())
    }

    fn last_row_before(&mut self, key: Option<&Cell>) -> Result<Option<Bytes>> {
        each!(self, s => s.last_row_before(key))
    }
}

/// A cut source's peek, which compares its cell's row with the cut's bounds, kept out of
/// line: with it inlined `Source::peek` was too large to inline into the merge, and each of
/// the merge's asks was a call (about 6% of a sequential scan's samples, `BENCHMARKS.md`).
#[inline(never)]
fn cut_peek(s: &RowRangeSource) -> Option<&Cell> {
    s.peek()
}
