//! The store file scanner (HBase's StoreFileScanner): one store file's cells in key order,
//! read a block at a time, with the seeks a Get may put off.

use std::sync::Arc;

use basalt_model::{Cell, CellType, Error, Result};
use bytes::Bytes;

use super::keys::{Damage, DataBlock, Passing, Visible};
use super::reader::{BlockRef, Caching, StoreFile};
use crate::store::scanner::{first_on_next_row, CellSource, STEPS_BEFORE_SEEK};

/// Iterates one store file in key order, a block at a time. Only the cell it stands on is
/// built; searches compare encoded keys in place.
///
/// # Invariants
/// 1. While a seek is put off (`pending`), `current` is a stand-in that sorts at or before
///    every cell of the file at or after the key sought: the key itself, or its column's
///    first key at the file's newest timestamp when the key is newer. No cell of the file
///    is newer than that, so none of the column's cells sorts before it. The key sought is
///    the stand-in with the timestamp, type and sequence id kept in `pending`.
#[derive(Debug)]
pub struct StoreFileScanner {
    file: Arc<StoreFile>,
    read_point: u64,
    caching: Caching,
    /// The loaded block and its data, both or neither (none yet, or past the last).
    block: Option<BlockRef>,
    data: Option<Arc<DataBlock>>,
    pos: usize,
    /// The current cell; while a seek is put off (`pending`), its stand-in.
    current: Option<Cell>,
    /// The one row a Get's scanner reads: cells past it are not built.
    row: Option<Bytes>,
    /// A Get's seek put off ([`CellSource::seek_lazily`]): the timestamp, type and sequence
    /// id of the key sought, whose row and column are the stand-in's (invariant 1).
    pending: Option<(i64, CellType, u64)>,
}

impl StoreFileScanner {
    /// A scanner of `file`, positioned nowhere; of `row` alone when given (a Get's).
    pub(super) fn new(
        file: Arc<StoreFile>,
        read_point: u64,
        caching: Caching,
        row: Option<Bytes>,
    ) -> StoreFileScanner {
        StoreFileScanner {
            file,
            read_point,
            caching,
            block: None,
            data: None,
            pos: 0,
            current: None,
            row,
            pending: None,
        }
    }

    /// The error for damage `what` found in the loaded block.
    fn damaged(&self, what: Damage) -> Error {
        match &self.block {
            Some(b) => self.file.damaged(b, what),
            None => Error::DoNotRetry(format!("damage outside any block: {what}")),
        }
    }

    /// Loads block `b`, unless it is the one loaded.
    fn set_block(&mut self, b: BlockRef) -> Result<()> {
        if self.data.is_none() || !self.block.as_ref().is_some_and(|cur| cur.is(&b)) {
            self.data = Some(self.file.data_block(&b, self.caching)?);
            self.block = Some(b);
        }
        Ok(())
    }

    /// Stands past the file's last cell.
    fn end(&mut self) {
        self.block = None;
        self.data = None;
        self.pos = 0;
        self.current = None;
    }

    /// Positions at cell `pos` of the loaded block, moving on to later blocks and past
    /// invisible cells as needed. The cell is built in `current`, refilling the cell there
    /// (the last one, or one the caller is done with) when it lies in the same block. After
    /// an error the scanner stands on nothing.
    fn load(&mut self, pos: usize) -> Result<()> {
        let loaded = self.load_from(pos);
        if loaded.is_err() {
            self.current = None;
        }
        loaded
    }

    fn load_from(&mut self, mut pos: usize) -> Result<()> {
        loop {
            let (Some(b), Some(d)) = (&self.block, self.data.as_deref()) else {
                self.end();
                return Ok(());
            };
            // The cell is built where the scanner keeps it (`next_visible`).
            let visible =
                d.next_visible(pos, self.read_point, self.row.as_deref(), &mut self.current);
            match visible.map_err(|what| self.file.damaged(b, what))? {
                Visible::Cell(at) => {
                    self.pos = at;
                    return Ok(());
                }
                Visible::PastRow(at) => {
                    self.current = None;
                    self.pos = at;
                    return Ok(());
                }
                Visible::End => match self.file.block_after(b, self.caching.cache_only)? {
                    Some(next) => {
                        self.set_block(next)?;
                        pos = 0;
                    }
                    None => {
                        self.end();
                        return Ok(());
                    }
                },
            }
        }
    }
}

impl StoreFileScanner {
    /// Puts off the seek to `target` (HBase's lazy seek): the stand-in of invariant 1 takes
    /// the current cell's place until the merge needs the file's real cell, which a Get of
    /// a column whose newest version lies in a newer file never does. A Get's scanner sent
    /// past its row is done.
    fn put_off(&mut self, target: Cell) {
        if self.row.as_deref().is_some_and(|row| target.row() != row) {
            self.pending = None;
            self.current = None;
            return;
        }
        let newest = self.file.info().max_ts;
        let mut stand_in = target;
        self.pending = Some((stand_in.timestamp, stand_in.cell_type, stand_in.seq_id));
        if stand_in.timestamp > newest {
            stand_in.timestamp = newest;
            stand_in.cell_type = CellType::Maximum;
            stand_in.seq_id = u64::MAX;
        }
        self.current = Some(stand_in);
    }

    /// The key of the seek put off, taken out with the stand-in; `None` when none is.
    fn take_pending(&mut self) -> Option<Cell> {
        let (timestamp, cell_type, seq_id) = self.pending.take()?;
        let mut target = self.current.take()?;
        target.timestamp = timestamp;
        target.cell_type = cell_type;
        target.seq_id = seq_id;
        Some(target)
    }

    /// Passes the cells after the current one that `passing` names, reading their keys where
    /// they lie in the loaded block, so no cell is built for them; at most
    /// [`STEPS_BEFORE_SEEK`] of them. Then it loads the first cell not passed and answers
    /// true; false when the cells passed reach the block's end or the steps' limit (the
    /// caller then seeks).
    fn pass_in_block(&mut self, passing: &Passing<'_>) -> Result<bool> {
        let Some(d) = self.data.as_deref() else {
            return Ok(false);
        };
        let (from, row) = (self.pos + 1, self.row.as_deref());
        let passed = d.pass(
            from,
            from + STEPS_BEFORE_SEEK,
            passing,
            self.read_point,
            row,
            &mut self.current,
        );
        let len = d.len();
        match passed.map_err(|what| self.damaged(what))? {
            None => Ok(false),
            Some(Visible::Cell(at)) => {
                self.pos = at;
                Ok(true)
            }
            Some(Visible::PastRow(at)) => {
                self.current = None;
                self.pos = at;
                Ok(true)
            }
            Some(Visible::End) => {
                self.load(len)?;
                Ok(true)
            }
        }
    }
}

/// The skips compare the keys of the cells they pass where the keys lie in the block: a cell
/// built is a count taken on the block's buffer and dropped again, and 128 bytes written.
impl CellSource for StoreFileScanner {
    fn peek(&self) -> Option<&Cell> {
        self.current.as_ref()
    }

    fn advance(&mut self) -> Result<()> {
        // The cell after a stand-in is the first real one at or after it.
        if self.pending.is_some() {
            return self.resolve();
        }
        // The cell passed over is refilled with the next (`load`).
        if self.current.is_some() {
            self.load(self.pos + 1)?;
        }
        Ok(())
    }

    fn take_into(&mut self, out: &mut Vec<Cell>) -> Result<bool> {
        self.take_reusing(out, false, &mut Vec::new())
    }

    /// The next cell is built in one of `spare`'s, a count on the block kept where the
    /// cell taken out took its own.
    fn take_reusing(
        &mut self,
        out: &mut Vec<Cell>,
        _last_version: bool,
        spare: &mut Vec<Cell>,
    ) -> Result<bool> {
        if self.pending.is_some() {
            self.resolve()?;
        }
        if self.current.is_none() {
            return Ok(false);
        }
        let taken = std::mem::replace(&mut self.current, spare.pop());
        // The next cell is built before this one goes into `out`: the cell taken out passes
        // through the stack, and copied on at once, its copy's loads met the stores that
        // had just put it there and waited for them (BENCHMARKS.md).
        let loaded = self.load(self.pos + 1);
        out.extend(taken);
        loaded?;
        Ok(true)
    }

    fn skip_to(&mut self, key: &Cell) -> Result<()> {
        if self.current.as_ref().is_none_or(|c| c >= key) {
            return Ok(());
        }
        if let Some(target) = self.take_pending() {
            self.put_off(key.clone().max(target));
            return Ok(());
        }
        if !self.pass_in_block(&Passing::Below(key))? {
            self.seek(key)?;
        }
        Ok(())
    }

    fn skip_column(&mut self, column: &Cell) -> Result<()> {
        if !self.current.as_ref().is_some_and(|c| c.same_column(column)) {
            return Ok(());
        }
        if let Some(target) = self.take_pending() {
            self.put_off(column.last_on_its_column().max(target));
            return Ok(());
        }
        let of_column = Passing::Column {
            row: column.row(),
            qualifier: column.qualifier(),
        };
        if !self.pass_in_block(&of_column)? {
            self.seek(&column.last_on_its_column())?;
        }
        Ok(())
    }

    fn skip_row(&mut self, row: &[u8]) -> Result<()> {
        if self.current.as_ref().is_none_or(|c| !c.is_of_row(row)) {
            return Ok(());
        }
        if self.row.as_deref() == Some(row) {
            // A Get's scanner reads its row alone: past it, it is done.
            self.pending = None;
            self.current = None;
            return Ok(());
        }
        if let Some(target) = self.take_pending() {
            self.put_off(first_on_next_row(row).max(target));
            return Ok(());
        }
        if !self.pass_in_block(&Passing::Row(row))? {
            self.seek(&first_on_next_row(row))?;
        }
        Ok(())
    }

    fn seek(&mut self, key: &Cell) -> Result<()> {
        self.pending = None;
        // A key inside the loaded block needs no index search (seeks may go either way: a
        // reversed scan seeks back to the start of each earlier row).
        let in_block = |d: &DataBlock| -> std::result::Result<bool, Damage> {
            Ok(!d.is_empty() && d.cmp_at(0, key)?.is_lt() && d.cmp_at(d.len() - 1, key)?.is_ge())
        };
        match self.data.as_deref().map(in_block) {
            Some(Ok(true)) => {}
            Some(Err(what)) => return Err(self.damaged(what)),
            Some(Ok(false)) | None => match self.file.find_block(key, self.caching.cache_only)? {
                Some(b) => self.set_block(b)?,
                None => {
                    self.end();
                    return Ok(());
                }
            },
        }
        let Some(d) = self.data.as_deref() else {
            return Err(Error::DoNotRetry("no block loaded".into()));
        };
        let pos = d.lower_bound(key).map_err(|what| self.damaged(what))?;
        self.load(pos)
    }

    /// A Get's scanner of a file without family-level markers waits at `column`: the cells
    /// before it in the row are of columns the Get does not read, and no marker among them
    /// masks the columns it does.
    fn seek_lazily(&mut self, key: &Cell, column: &Cell) -> Result<()> {
        if self.row.is_none() || self.file.info().delete_family_count > 0 {
            return self.seek(key);
        }
        self.put_off(column.clone());
        Ok(())
    }

    fn is_pending(&self) -> bool {
        self.pending.is_some()
    }

    fn resolve(&mut self) -> Result<()> {
        match self.take_pending() {
            Some(target) => self.seek(&target),
            None => Ok(()),
        }
    }

    fn last_row_before(&mut self, key: Option<&Cell>) -> Result<Option<Bytes>> {
        // Blocks before `b` hold only keys below `key`; block `b` may hold some.
        let cache_only = self.caching.cache_only;
        let b = match key {
            Some(key) => self.file.find_block(key, cache_only)?,
            None => None,
        };
        let read_point = self.read_point;
        let last_visible = |d: &DataBlock, end: usize| -> std::result::Result<_, Damage> {
            for i in (0..end).rev() {
                if d.seq_id(i)? <= read_point {
                    return Ok(Some(d.row(i)?));
                }
            }
            Ok(None)
        };
        if let (Some(key), Some(b)) = (key, &b) {
            let d = self.file.data_block(b, self.caching)?;
            let row = d.lower_bound(key).and_then(|end| last_visible(&d, end));
            if let Some(row) = row.map_err(|what| self.file.damaged(b, what))? {
                return Ok(Some(row));
            }
        }
        let mut before = self.file.block_before(b.as_ref(), cache_only)?;
        while let Some(b) = before {
            let d = self.file.data_block(&b, self.caching)?;
            let row = last_visible(&d, d.len()).map_err(|what| self.file.damaged(&b, what))?;
            if row.is_some() {
                return Ok(row);
            }
            before = self.file.block_before(Some(&b), cache_only)?;
        }
        Ok(None)
    }
}
