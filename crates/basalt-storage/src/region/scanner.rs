//! The region scanner: assembles rows across the region's stores, applies the scan's bounds,
//! row-level filter steps, limit and batch (HBase's RegionScannerImpl).

use std::collections::VecDeque;
use std::sync::Arc;

use basalt_model::filter::Filter;
use basalt_model::ops::{Columns, Get, Qualifiers, Scan};
use basalt_model::{Cell, Error, Result, RowResult};
use bytes::Bytes;

use super::Region;
use crate::store::query_matcher::Mode;
use crate::store::scanner::{first_on_next_row, StoreScanner};
use crate::store::{ReadHint, Store};

/// Iterates the rows of one region that a scan selects.
#[derive(Debug)]
pub struct RegionScanner {
    stores: Vec<StoreScanner>,
    filter: Option<Filter>,
    start: Bytes,
    include_start: bool,
    stop: Bytes,
    include_stop: bool,
    reversed: bool,
    /// Reversed scans: the next row must sort below this key (`None`: no bound yet).
    cursor: Option<Cell>,
    limit: u64,
    batch: usize,
    /// Largest row returned whole (`hbase.table.max.rowsize`); batched scans are exempt.
    max_row_size_bytes: usize,
    rows: u64,
    done: bool,
    pending: VecDeque<RowResult>,
    /// The row being read, kept between rows for its capacity ([`RegionScanner::next_cells`]).
    row: Vec<u8>,
    /// Cells of the last row returned, at most [`ROW_WIDTH_HINT_MAX`]: the capacity the next
    /// row's vector starts with, so rows as wide as the last are read without the vector
    /// growing (and being copied) cell by cell.
    row_width_hint: usize,
    /// The cells of the last row read in place, handed back by the caller with its vector:
    /// the next row's cells are built in them where they lie in the same block
    /// ([`CellSource::take_reusing`]), so a scan takes no count a cell on its blocks.
    spare: Vec<Cell>,
}

/// The largest capacity a row's vector starts with (a wide row does not make every later
/// row allocate its width).
const ROW_WIDTH_HINT_MAX: usize = 256;

/// The capacity the first row's vector starts with: a Get's only row has no row before it
/// to size it by, and from empty a vector of ten cells (a YCSB row) was allocated and then
/// grown and copied twice, about 750 instructions of a Get through the server. Java's
/// `ArrayList`, which HBase's scanner fills, starts at ten.
const FIRST_ROW_WIDTH: usize = 16;

/// The capacity a scan's first row starts with: [`FIRST_ROW_WIDTH`], or fewer for a read of
/// named columns, which keeps at most a version of each for every version it asks. A Get of
/// one column then allocates room for one cell, not sixteen (2 KiB, past the allocator's
/// fast path for small blocks). Only a start: a vector grows if a row needs more.
fn first_row_width(scan: &Scan) -> usize {
    let versions = usize::try_from(scan.max_versions).unwrap_or(usize::MAX);
    scan.columns.named_count().map_or(FIRST_ROW_WIDTH, |n| {
        n.saturating_mul(versions).min(FIRST_ROW_WIDTH)
    })
}

/// A scanner of each of `stores` for `scan` at `read_point`; `None` when one of them asks
/// for a new read point ([`Store::scanner_into`]).
fn store_scanners(
    stores: &[Arc<Store>],
    scan: &Scan,
    read_point: u64,
    now: i64,
    purge: i64,
    cache_only: bool,
) -> Result<Option<Vec<StoreScanner>>> {
    let mut scanners = Vec::with_capacity(stores.len());
    for store in stores {
        let name = store.name();
        let explicit: Option<Vec<Bytes>> = scan.columns.qualifiers(name).map(Qualifiers::to_vec);
        let tr = scan.time_range_for(name);
        let single_col: Option<Bytes> = explicit
            .as_ref()
            .filter(|c| c.len() == 1)
            .map(|c| c[0].clone());
        let hint = ReadHint {
            get: scan
                .is_get
                .then_some((&scan.start_row, single_col.as_deref())),
            time_range: tr,
            cache_blocks: scan.cache_blocks,
            cache_only,
        };
        let mode = Mode::User {
            raw: scan.raw,
            time_range: tr,
            // The matcher keeps it within the family's (`QueryMatcher::new`).
            max_versions: scan.max_versions,
            has_filter: scan.filter.is_some(),
            explicit_columns: explicit,
        };
        if !store.scanner_into(mode, read_point, now, purge, &hint, &mut scanners)? {
            return Ok(None);
        }
    }
    Ok(Some(scanners))
}

impl Region {
    /// Reads one row.
    ///
    /// # Errors
    /// Invalid Get, unknown family, corrupt file.
    pub fn get(&self, get: Get) -> Result<RowResult> {
        get.validate()?;
        self.get_scan(&get.into_scan())
    }

    /// Reads one row with a Get already turned into its scan ([`Get::into_scan`]), so a read
    /// retried on another region is not converted again.
    ///
    /// # Errors
    /// As [`Region::get`].
    pub fn get_scan(&self, scan: &Scan) -> Result<RowResult> {
        let mut s = self.open_scanner(scan, false)?;
        Ok(s.next_row()?
            .unwrap_or_else(|| RowResult::new(scan.start_row.clone(), Vec::new())))
    }

    /// [`Region::get_scan`] from memory alone: the memstores and the block cache. `None`
    /// when the read needs a block that is not cached (nothing was read from disk, and the
    /// caller reads again where it may wait). Otherwise the answer, or the error,
    /// `get_scan` would give.
    ///
    /// # Errors
    /// As [`Region::get`].
    pub fn get_scan_cached(&self, scan: &Scan) -> Result<Option<RowResult>> {
        let read = self.open_scanner(scan, true).and_then(|mut s| s.next_row());
        // Counted as `get_scan` counts: every read but one the region refused as not
        // serving; and not one that will be read again from disk.
        let refused = matches!(&read, Err(Error::NotServingRegion(_)));
        if !refused && !read.as_ref().is_err_and(Error::is_would_block) {
            self.reads
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        match read {
            Ok(row) => Ok(Some(row.unwrap_or_else(|| {
                RowResult::new(scan.start_row.clone(), Vec::new())
            }))),
            Err(e) if e.is_would_block() => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Opens a scanner over this region for `scan` (bounds already clipped to the region by
    /// the caller, or not: rows outside the region simply do not exist here).
    ///
    /// # Errors
    /// Invalid scan, unknown family, corrupt file.
    pub fn scanner(&self, scan: &Scan) -> Result<RegionScanner> {
        self.open_scanner(scan, false)
    }

    /// [`Region::scanner`]; with `cache_only`, from memory alone (a block not cached
    /// fails it with [`Error::would_block`]), and the read is counted by the caller, which
    /// knows whether it will be read again.
    fn open_scanner(&self, scan: &Scan, cache_only: bool) -> Result<RegionScanner> {
        scan.validate()?;
        self.check_serving()?;
        if !cache_only {
            self.reads
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        let now = self.env.now_ms();
        let purge = self.config.time_to_purge_deletes_ms;
        let read = self.stores_read_by(&scan.columns)?;
        let stores = loop {
            // A major compaction's file installed since the read point was taken sends the
            // read for a new one (`Store::scanner_into`): rare, as the compaction must
            // finish in between.
            let read_point = self.mvcc.read_point();
            if let Some(stores) = store_scanners(&read, scan, read_point, now, purge, cache_only)? {
                break stores;
            }
        };
        let mut filter = scan.filter.clone();
        if let Some(f) = &mut filter {
            f.set_reversed(scan.reversed);
        }
        let mut s = RegionScanner {
            stores,
            filter,
            start: scan.start_row.clone(),
            include_start: scan.include_start_row,
            stop: scan.stop_row.clone(),
            include_stop: scan.include_stop_row,
            reversed: scan.reversed,
            cursor: None,
            limit: scan.limit,
            batch: scan.batch as usize,
            max_row_size_bytes: if scan.batch > 0 {
                usize::MAX
            } else {
                self.config.max_row_size_bytes
            },
            rows: 0,
            done: false,
            pending: VecDeque::new(),
            row: Vec::new(),
            row_width_hint: first_row_width(scan),
            spare: Vec::new(),
        };
        s.position()?;
        Ok(s)
    }

    /// The stores a read of `columns` reads, in family order, once every family it names is
    /// found (`NoSuchColumnFamily` names the first that is not).
    fn stores_read_by(&self, columns: &Columns) -> Result<Vec<Arc<Store>>> {
        let stores = self.stores.read();
        if columns.is_empty() {
            return Ok(stores.values().cloned().collect());
        }
        let mut read = Vec::with_capacity(columns.families().count());
        for f in columns.families() {
            let Some(s) = stores.get(&f[..]) else {
                // The error reads the table's descriptor: not under the stores' lock.
                drop(stores);
                return Err(self.family_error(f));
            };
            read.push(Arc::clone(s));
        }
        Ok(read)
    }
}

impl RegionScanner {
    /// Positions the stores at the scan's first row (file scanners start unpositioned).
    fn position(&mut self) -> Result<()> {
        if self.start.is_empty() {
            if !self.reversed {
                self.stores
                    .iter_mut()
                    .try_for_each(StoreScanner::seek_to_first)?;
            }
            return Ok(());
        }
        let key = if self.include_start {
            Cell::first_on_row_in(self.start.clone())
        } else {
            first_on_next_row(&self.start)
        };
        if self.reversed {
            // Rows up to the start row (inclusive or not) qualify: the bound is the first key
            // after them.
            self.cursor = Some(if self.include_start {
                first_on_next_row(&self.start)
            } else {
                Cell::first_on_row_in(self.start.clone())
            });
        } else {
            for s in &mut self.stores {
                s.seek(&key)?;
            }
        }
        Ok(())
    }

    /// Whether the row read is past the scan's stop row.
    fn past_stop(&self) -> bool {
        if self.stop.is_empty() {
            return false;
        }
        let ord = self.row.as_slice().cmp(&self.stop[..]);
        if self.reversed {
            ord.is_lt() || (ord.is_eq() && !self.include_stop)
        } else {
            ord.is_gt() || (ord.is_eq() && !self.include_stop)
        }
    }

    /// Puts the next row to read into `self.row`; false when no store has one.
    fn next_candidate(&mut self) -> Result<bool> {
        if !self.reversed {
            let first = self.stores.iter().filter_map(StoreScanner::peek_row).min();
            let Some(first) = first else {
                self.row.clear();
                return Ok(false);
            };
            // Rows of a table are most often of one length: the buffer is then only copied
            // into, with no call to `memcpy` (`bytes_order::copy`) nor to `memset`.
            if self.row.len() != first.len() {
                self.row.resize(first.len(), 0);
            }
            basalt_model::bytes_order::copy(&mut self.row, first);
            return Ok(true);
        }
        self.row.clear();
        let mut best: Option<Bytes> = None;
        for s in &mut self.stores {
            if let Some(r) = s.last_row_before(self.cursor.as_ref())? {
                if best.as_ref().is_none_or(|b| r > *b) {
                    best = Some(r);
                }
            }
        }
        let Some(best) = best else {
            return Ok(false);
        };
        let key = Cell::first_on_row(&best);
        for s in &mut self.stores {
            s.seek(&key)?;
        }
        self.cursor = Some(key);
        self.row.extend_from_slice(&best);
        Ok(true)
    }

    /// Moves the stores past the row read.
    fn skip_row(&mut self) -> Result<()> {
        if !self.reversed {
            let key = first_on_next_row(&self.row);
            for s in &mut self.stores {
                s.seek(&key)?;
            }
        }
        Ok(())
    }

    /// The next result: a whole row, or with a batch size a part of one.
    ///
    /// # Errors
    /// A corrupt store file.
    pub fn next_row(&mut self) -> Result<Option<RowResult>> {
        if let Some(r) = self.pending.pop_front() {
            return Ok(Some(r));
        }
        let mut cells = Vec::with_capacity(self.row_width_hint);
        Ok(self
            .read_into(&mut cells)?
            .map(|partial| RowResult::of_cells(cells, partial)))
    }

    /// The next result's cells, read into `cells`, as HBase's `RegionScanner.next(List<Cell>)`
    /// fills its caller's list: `Some(partial)` when a row, or with a batch size a part of
    /// one, was read (`partial`: more of its row follows), `None` at the end. What `cells`
    /// held before is the caller's no more: the next row's cells are built in those cells
    /// (the scanner keeps them, and hands back a vector it kept before, emptied). A caller
    /// that looks at each row where it is read and passes the same vector again allocates
    /// nothing a row once the two vectors have grown, takes no count a cell on the blocks
    /// it reads, and no result is moved between the scanners (BENCHMARKS.md).
    ///
    /// # Errors
    /// A corrupt store file.
    pub fn next_cells(&mut self, cells: &mut Vec<Cell>) -> Result<Option<bool>> {
        // Spare cells left from the last row go with the vector's clearing (`read_into`).
        std::mem::swap(cells, &mut self.spare);
        self.read_into(cells)
    }

    /// Reads the next result into `cells`, emptied first.
    fn read_into(&mut self, cells: &mut Vec<Cell>) -> Result<Option<bool>> {
        cells.clear();
        if let Some(r) = self.pending.pop_front() {
            *cells = r.cells;
            return Ok(Some(r.partial));
        }
        // The row read is copied into the scanner's buffer while its cells are read, not
        // held by a handle on the cell's buffer: a handle took and dropped an atomic count
        // a row (BENCHMARKS.md). The buffer is used where it lies, in the scanner.
        loop {
            if self.done || (self.limit > 0 && self.rows >= self.limit) {
                return Ok(None);
            }
            if self
                .filter
                .as_ref()
                .is_some_and(Filter::filter_all_remaining)
                || !self.next_candidate()?
                || self.past_stop()
            {
                self.done = true;
                return Ok(None);
            }
            if let Some(f) = &mut self.filter {
                if f.filter_row_key(&self.row) {
                    f.reset();
                    self.skip_row()?;
                    continue;
                }
            }
            let mut done_scan = false;
            let mut budget = self.max_row_size_bytes;
            let spare = &mut self.spare;
            for s in &mut self.stores {
                done_scan |=
                    s.read_row_within(&self.row, cells, spare, self.filter.as_mut(), &mut budget)?;
                if done_scan {
                    break;
                }
            }
            self.done |= done_scan;
            if !self.keep_row(cells) {
                // A dropped row's cells go with it: `cells` holds the answer's alone. They
                // are spare cells for the rows after it.
                self.spare.append(cells);
                continue;
            }
            self.rows += 1;
            self.row_width_hint = cells.len().min(ROW_WIDTH_HINT_MAX);
            return Ok(Some(self.split_batch(cells)));
        }
    }

    /// Row-level filter steps: filterRowCells, then filterRow (SEMANTICS.md §H).
    fn keep_row(&mut self, cells: &mut Vec<Cell>) -> bool {
        let empty_before = cells.is_empty();
        let Some(f) = &mut self.filter else {
            return !empty_before;
        };
        let mut exclude = false;
        if f.has_filter_row() {
            f.filter_row_cells(cells);
            if !cells.is_empty() {
                exclude = f.filter_row();
            }
        } else if !empty_before {
            exclude = f.filter_row();
        }
        f.reset();
        !(empty_before || exclude || cells.is_empty())
    }

    /// With a batch size smaller than the row just read (`cells`, at least one cell:
    /// `keep_row`), keeps its first part in `cells` and the rest pending; whether it did.
    fn split_batch(&mut self, cells: &mut Vec<Cell>) -> bool {
        if self.batch == 0 || cells.len() <= self.batch {
            return false;
        }
        // The parts are moved off the row's end, not copied (a copy counts each cell's
        // buffer once more).
        let mut part = cells.split_off(self.batch);
        while !part.is_empty() {
            let after = part.split_off(part.len().min(self.batch));
            let more = !after.is_empty();
            self.pending.push_back(RowResult::of_cells(part, more));
            part = after;
        }
        true
    }
}

impl Iterator for RegionScanner {
    type Item = Result<RowResult>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_row().transpose()
    }
}
