//! Reading and writing a table: routing to regions, per-row batches, scans across regions.

use std::sync::Arc;
use std::time::{Duration, Instant};

use basalt_model::ops::{
    Append, CheckAndMutate, Delete, Get, Increment, Mutation, Put, RowMutations, Scan,
};
use basalt_model::{Cell, Error, Result, RowResult};
use bytes::Bytes;

use super::Handle;
use crate::master::TableState;
use basalt_model::TableName;
use basalt_storage::region::{Region, RegionInfo, RegionScanner};

/// Where a lookup wants the region: the one holding `row`, the one holding the rows just
/// below `row` (a reversed scan moving down), or the last one.
#[derive(Clone, Copy, Debug)]
pub(crate) enum At<'a> {
    Row(&'a [u8]),
    Below(&'a [u8]),
    Last,
}

impl At<'_> {
    /// Whether a region starting at `start` begins at or before the rows wanted.
    pub fn starts_before(self, start: &[u8]) -> bool {
        match self {
            At::Row(row) => start <= row,
            At::Below(row) => start < row,
            At::Last => true,
        }
    }

    /// Whether region `info` (the last to start before) holds the rows wanted.
    pub fn held_by(self, info: &RegionInfo) -> bool {
        let end = &info.end_key[..];
        match self {
            At::Row(row) => end.is_empty() || row < end,
            At::Below(row) => end.is_empty() || row <= end,
            At::Last => end.is_empty(),
        }
    }
}

/// The regions a [`Table`] reads and writes: every region of the table in a standalone node
/// (the master's view), or those a cluster's region server hosts.
pub(crate) trait RegionSource: Send + Sync + std::fmt::Debug {
    /// The table's name.
    fn name(&self) -> &TableName;

    /// The region holding the rows `at` wants.
    ///
    /// # Errors
    /// `TableNotEnabled`, `TableNotFound`, `RegionOffline`; `NotServingRegion` when the
    /// region is not online here now (callers retry, or a client looks it up again).
    fn locate(&self, at: At<'_>) -> Result<Arc<Region>>;

    /// Refuses a scan of a table that is disabled or gone, before it starts.
    ///
    /// # Errors
    /// `TableNotEnabled`, `TableNotFound`.
    fn check_scan(&self) -> Result<()>;

    /// Flow control before a write to `region`.
    ///
    /// # Errors
    /// `RegionTooBusy`.
    fn before_write(&self, region: &Region) -> Result<()>;

    /// Asks for the flushes a write may have made due.
    fn after_write(&self, region: &Region);

    /// How long a request retries a region that is not serving.
    fn retry_limit(&self) -> Duration;

    /// `hbase.server.keyvalue.maxsize`.
    fn max_cell_size_bytes(&self) -> usize;

    /// Confirms, once a read is done and before its rows go out, that this server still
    /// holds its regions: a server paused in the middle of a read may have lost them, and
    /// must not serve what it read.
    ///
    /// # Errors
    /// `NotServingRegion` when it may not have held them (the client looks again).
    fn confirm_read(&self) -> Result<()> {
        Ok(())
    }
}

/// A standalone node's table: the master knows every region, the region server hosts them.
#[derive(Debug)]
struct NodeTable {
    /// Keeps the database (its WAL and directory lock) open while a handle lives.
    db: Arc<Handle>,
    state: Arc<TableState>,
}

impl RegionSource for NodeTable {
    fn name(&self) -> &TableName {
        &self.state.name
    }

    /// When no region is online, the master says why (`TableNotEnabled`, `TableNotFound`,
    /// or `NotServingRegion` while regions are being assigned, which callers retry).
    fn locate(&self, at: At<'_>) -> Result<Arc<Region>> {
        self.state
            .region_where(|s| at.starts_before(s))?
            .ok_or_else(|| self.db.master.why_not_serving(&self.state.name))
    }

    fn check_scan(&self) -> Result<()> {
        if !self.state.has_online() {
            let why = self.db.master.why_not_serving(&self.state.name);
            if let Error::TableNotEnabled(_) | Error::TableNotFound(_) = why {
                return Err(why);
            }
        }
        Ok(())
    }

    fn before_write(&self, region: &Region) -> Result<()> {
        self.db.rs.before_write(region)
    }

    fn after_write(&self, region: &Region) {
        self.db.rs.after_write(region);
    }

    fn retry_limit(&self) -> Duration {
        self.db.options.region_retry_timeout
    }

    fn max_cell_size_bytes(&self) -> usize {
        self.db.options.max_cell_size_bytes
    }
}

/// The most mutations one region writes with one WAL sync (`hbase.regionserver.minibatch.size`
/// is larger; smaller batches hold fewer row locks at once).
const MINI_BATCH: usize = 1000;

/// A handle on one table (HBase's `Table`). Cheap to clone.
#[derive(Clone, Debug)]
pub struct Table {
    src: Arc<dyn RegionSource>,
}

impl Table {
    pub(super) fn new(db: Arc<Handle>, state: Arc<TableState>) -> Table {
        Table {
            src: Arc::new(NodeTable { db, state }),
        }
    }

    /// A table over the regions `src` gives.
    pub(crate) fn over(src: Arc<dyn RegionSource>) -> Table {
        Table { src }
    }

    /// The table's name.
    #[must_use]
    pub fn name(&self) -> &basalt_model::TableName {
        self.src.name()
    }

    fn region_for(&self, row: &[u8]) -> Result<Arc<Region>> {
        self.src.locate(At::Row(row))
    }

    /// Runs `f` on the region of `row`, looking the region up again while a split or merge
    /// has it closed (`NotServingRegion`), as an HBase client does.
    fn with_region<T>(&self, row: &[u8], mut f: impl FnMut(&Region) -> Result<T>) -> Result<T> {
        let limit = self.src.retry_limit();
        retry_not_serving(limit, || f(&*self.region_for(row)?))
    }

    /// `put`.
    ///
    /// # Errors
    /// Bad input (nothing applied), disabled table, WAL failure.
    pub fn put(&self, put: Put) -> Result<()> {
        self.mutate(Mutation::Put(put)).map(drop)
    }

    /// `delete`.
    ///
    /// # Errors
    /// As [`Table::put`].
    pub fn delete(&self, delete: Delete) -> Result<()> {
        self.mutate(Mutation::Delete(delete)).map(drop)
    }

    /// `increment`: returns the new values (empty when `return_results` is off).
    ///
    /// # Errors
    /// As [`Table::put`]; `DoNotRetry` when a value is not 8 bytes.
    pub fn increment(&self, inc: Increment) -> Result<RowResult> {
        self.mutate(Mutation::Increment(inc))
            .map(Option::unwrap_or_default)
    }

    /// `incrementColumnValue`: adds `amount` to one counter and returns its new value.
    ///
    /// # Errors
    /// As [`Table::increment`].
    pub fn increment_column_value(
        &self,
        row: impl Into<Bytes>,
        family: impl Into<Bytes>,
        qualifier: impl Into<Bytes>,
        amount: i64,
    ) -> Result<i64> {
        // One implementation, the operation layer's.
        basalt_api::Table::increment_column_value(
            self,
            row.into(),
            family.into(),
            qualifier.into(),
            amount,
        )
    }

    /// `append`: returns the new values.
    ///
    /// # Errors
    /// As [`Table::put`].
    pub fn append(&self, app: Append) -> Result<RowResult> {
        self.mutate(Mutation::Append(app))
            .map(Option::unwrap_or_default)
    }

    /// One mutation, atomically.
    ///
    /// # Errors
    /// As [`Table::put`].
    pub fn mutate(&self, m: Mutation) -> Result<Option<RowResult>> {
        m.validate()?;
        self.write_to(m.row(), |r| r.mutate(&m))
    }

    /// Checks `m` as a write of it would before applying anything, without applying it
    /// (see [`Region::check`]).
    ///
    /// # Errors
    /// What [`Table::mutate`] would refuse `m` for up front.
    pub fn check(&self, m: &Mutation) -> Result<()> {
        self.with_region(m.row(), |r| r.check(m))
    }

    /// Runs a write on the region of `row` under flow control: it may wait for a flush, or be
    /// refused with `RegionTooBusy`, before anything is applied.
    fn write_to<T>(&self, row: &[u8], f: impl Fn(&Region) -> Result<T>) -> Result<T> {
        self.with_region(row, |region| {
            self.src.before_write(region)?;
            let out = f(region);
            self.src.after_write(region);
            out
        })
    }

    /// `mutateRow`: several mutations of one row, atomically.
    ///
    /// # Errors
    /// As [`Table::put`].
    pub fn mutate_row(&self, rm: RowMutations) -> Result<()> {
        rm.validate()?;
        self.write_to(&rm.row, |r| r.mutate_row(&rm)).map(drop)
    }

    /// `checkAndMutate`: true when the condition held and the action was applied.
    ///
    /// # Errors
    /// As [`Table::put`].
    pub fn check_and_mutate(&self, cam: CheckAndMutate) -> Result<bool> {
        cam.validate()?;
        self.write_to(&cam.row, |r| r.check_and_mutate(&cam))
    }

    /// `batch`: one result per mutation (rows are atomic, the batch is not). Puts and
    /// Deletes of distinct rows go to their regions in mini-batches, each written with one
    /// WAL sync; a read-modify-write, or a second mutation of a row, waits for the mutations
    /// before it, so the outcome is that of applying them in order.
    ///
    /// As HBase's client validates a whole list before it sends any of it, a mutation that
    /// fails those checks (an empty Put, a row over 32,767 bytes, an oversized cell) refuses
    /// the whole batch: nothing is applied, and every item says why.
    #[must_use]
    pub fn batch(&self, mutations: Vec<Mutation>) -> Vec<Result<Option<RowResult>>> {
        if let Some(refused) = self.refuse_invalid(&mutations) {
            return refused;
        }
        let mut out: Vec<Option<Result<Option<RowResult>>>> =
            mutations.iter().map(|_| None).collect();
        let mut run: Vec<usize> = Vec::new();
        let mut rows: std::collections::HashSet<&Bytes> = std::collections::HashSet::new();
        for (i, m) in mutations.iter().enumerate() {
            let batchable = matches!(m, Mutation::Put(_) | Mutation::Delete(_));
            if !batchable || rows.contains(m.row()) || run.len() >= MINI_BATCH {
                self.write_run(&mutations, &run, &mut out);
                run.clear();
                rows.clear();
            }
            if batchable {
                rows.insert(m.row());
                run.push(i);
            } else {
                out[i] = Some(self.mutate(m.clone()));
            }
        }
        self.write_run(&mutations, &run, &mut out);
        // Every slot is filled above; one that is not is a bug, reported, never success.
        out.into_iter()
            .enumerate()
            .map(|(i, o)| {
                o.unwrap_or_else(|| {
                    Err(Error::Internal(format!("batch item {i} was not answered")))
                })
            })
            .collect()
    }

    /// Every item's error when any mutation fails the client-side checks; `None` when all
    /// pass.
    fn refuse_invalid(&self, ms: &[Mutation]) -> Option<Vec<Result<Option<RowResult>>>> {
        let max = self.src.max_cell_size_bytes();
        let errors: Vec<Option<Error>> = ms
            .iter()
            .map(|m| m.validate_for_client(max).err())
            .collect();
        let (first, why) = errors
            .iter()
            .enumerate()
            .find_map(|(i, e)| e.as_ref().map(|e| (i, e.to_string())))?;
        let refused = errors
            .into_iter()
            .map(|e| {
                Err(e.unwrap_or_else(|| {
                    Error::illegal(format!(
                        "not applied: mutation {first} of the batch was refused ({why})"
                    ))
                }))
            })
            .collect();
        Some(refused)
    }

    /// Writes the mutations `run` (Puts and Deletes of distinct rows) region by region.
    fn write_run(
        &self,
        ms: &[Mutation],
        run: &[usize],
        out: &mut [Option<Result<Option<RowResult>>>],
    ) {
        let mut groups: Vec<(Arc<Region>, Vec<usize>)> = Vec::new();
        for &i in run {
            match self.region_for(ms[i].row()) {
                Ok(r) => match groups.iter_mut().find(|(g, _)| Arc::ptr_eq(g, &r)) {
                    Some((_, idx)) => idx.push(i),
                    None => groups.push((r, vec![i])),
                },
                Err(_) => out[i] = Some(self.mutate(ms[i].clone())),
            }
        }
        for (region, idx) in groups {
            if self.src.before_write(&region).is_err() {
                // Too busy: each mutation waits (or fails) on its own.
                for i in idx {
                    out[i] = Some(self.mutate(ms[i].clone()));
                }
                continue;
            }
            let refs: Vec<&Mutation> = idx.iter().map(|i| &ms[*i]).collect();
            let results = region.mutate_batch(&refs);
            self.src.after_write(&region);
            for (i, r) in idx.into_iter().zip(results) {
                // A split or merge closed the region meanwhile: look it up again.
                out[i] = Some(match r {
                    Err(Error::NotServingRegion(_)) => self.mutate(ms[i].clone()),
                    r => r,
                });
            }
        }
    }

    /// `get`.
    ///
    /// # Errors
    /// Bad input, unknown family, disabled table, corruption.
    pub fn get(&self, get: Get) -> Result<RowResult> {
        get.validate()?;
        let scan = get.into_scan();
        let row = self.with_region(&scan.start_row, |r| r.get_scan(&scan))?;
        self.src.confirm_read()?;
        Ok(row)
    }

    /// `get` from memory alone (memstores and the block cache), for a caller that must not
    /// wait: `None` when the read would need a block from disk or its region is closed for
    /// a split, merge or move (nothing was waited for; call [`Table::get`] where waiting is
    /// fine). Otherwise exactly what `get` answers, errors included.
    ///
    /// # Errors
    /// As [`Table::get`].
    pub fn get_cached(&self, get: &Get) -> Result<Option<RowResult>> {
        get.validate()?;
        let scan = get.clone().into_scan();
        let read = self
            .region_for(&scan.start_row)
            .and_then(|r| r.get_scan_cached(&scan));
        match read {
            Ok(Some(row)) => {
                self.src.confirm_read()?;
                Ok(Some(row))
            }
            Ok(None) | Err(Error::NotServingRegion(_)) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// `getScanner`: rows in order (or reverse order) across every region.
    ///
    /// # Errors
    /// Bad scan, unknown family, disabled table.
    pub fn scan(&self, scan: Scan) -> Result<TableScanner> {
        scan.validate()?;
        // A disabled or dropped table refuses the scan up front, as HBase's does.
        self.src.check_scan()?;
        Ok(TableScanner {
            retry_limit: self.src.retry_limit(),
            src: Arc::clone(&self.src),
            current: None,
            scan,
            rows: 0,
            position: None,
            done: false,
        })
    }
}

/// Runs `op` until it does not fail with `NotServingRegion` or `limit` passes: a split or
/// merge closes its regions for as long as a flush of their memstores takes.
fn retry_not_serving<T>(limit: Duration, mut op: impl FnMut() -> Result<T>) -> Result<T> {
    let deadline = Instant::now() + limit;
    let mut pause = Duration::from_micros(50);
    loop {
        match op() {
            Err(Error::NotServingRegion(_)) if Instant::now() < deadline => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(20));
            }
            out => return out,
        }
    }
}

/// Rows of a scan across regions, in order or reverse order. The next region is looked up
/// when the current one ends, from where it ended, so a scan crosses regions split or merged
/// while it runs and returns every row once. Each region gets its own copy of the filter,
/// so a PageFilter limits rows per region, as in HBase (SEMANTICS.md #59).
#[derive(Debug)]
pub struct TableScanner {
    retry_limit: Duration,
    src: Arc<dyn RegionSource>,
    current: Option<(RegionInfo, RegionScanner)>,
    scan: Scan,
    rows: u64,
    /// Where the rows not yet scanned begin (forward: at this row; reversed: below it).
    /// `None` before the first region.
    position: Option<Bytes>,
    done: bool,
}

impl TableScanner {
    /// The next result, `None` at the end.
    ///
    /// # Errors
    /// Corruption in a store file.
    pub fn next_row(&mut self) -> Result<Option<RowResult>> {
        self.advance(RegionScanner::next_row, |r| r.partial)
    }

    /// The next result's cells, read into `cells`: `Some(partial)` when a row, or with a
    /// batch size a part of one, was read, `None` at the end (as
    /// [`RegionScanner::next_cells`], which builds the next row's cells in those `cells`
    /// held). Reading rows in place this way, with the same vector each time, allocates
    /// nothing a row and takes no count a cell on the blocks read.
    ///
    /// # Errors
    /// Corruption in a store file.
    pub fn next_cells(&mut self, cells: &mut Vec<Cell>) -> Result<Option<bool>> {
        let read = self.advance(|s| s.next_cells(cells), |partial| *partial)?;
        if read.is_none() {
            // At the scan's limit no region's scanner was asked, and the last row is there.
            cells.clear();
        }
        Ok(read)
    }

    /// The next result `read` takes from a region's scanner, going on to the next region
    /// when one ends; `partial` says whether a result holds only part of its row (which
    /// does not count against the scan's limit).
    fn advance<T>(
        &mut self,
        mut read: impl FnMut(&mut RegionScanner) -> Result<Option<T>>,
        partial: impl Fn(&T) -> bool,
    ) -> Result<Option<T>> {
        loop {
            if self.scan.limit > 0 && self.rows >= self.scan.limit {
                return Ok(None);
            }
            if let Some((_, s)) = &mut self.current {
                // The row goes on as the region's scanner answered it, and the move to the
                // next region is out of line (`next_region`): with it inline, this function,
                // run for every row, had a 2.7 KB stack frame and copied each row's result
                // through it twice, stalling on loads of the callee's stores (BENCHMARKS.md).
                let next = read(s)?;
                if let Some(r) = &next {
                    self.src.confirm_read()?;
                    if !partial(r) {
                        self.rows += 1;
                    }
                    return Ok(next);
                }
            }
            if !self.next_region()? {
                return Ok(None);
            }
        }
    }

    /// Moves on to the region holding the next rows, once the current one (if any) is
    /// scanned; false when the scan ends. Kept out of [`TableScanner::next_row`], which runs
    /// for every row, while this runs once a region.
    #[inline(never)]
    fn next_region(&mut self) -> Result<bool> {
        if let Some((info, _)) = self.current.take() {
            self.move_past(&info);
        }
        if self.done {
            return Ok(false);
        }
        let opened = retry_not_serving(self.retry_limit, || self.open_next())?;
        self.current = Some(opened);
        Ok(true)
    }

    /// Notes that the region `info` is scanned, and whether the scan ends with it.
    fn move_past(&mut self, info: &RegionInfo) {
        let stop = &self.scan.stop_row;
        if self.scan.reversed {
            // Rows below the region's start are below the stop row once it reaches it.
            self.done = info.start_key.is_empty() || (!stop.is_empty() && info.start_key <= stop);
            self.position = Some(info.start_key.clone());
        } else {
            let past_stop = !stop.is_empty()
                && (info.end_key > stop || (info.end_key == stop && !self.scan.include_stop_row));
            self.done = info.end_key.is_empty() || past_stop;
            self.position = Some(info.end_key.clone());
        }
    }

    /// Opens the region holding the next rows, with the scan clipped to where the previous
    /// region ended (a region merged meanwhile may also hold rows already returned).
    fn open_next(&self) -> Result<(RegionInfo, RegionScanner)> {
        let mut scan = self.scan.clone();
        scan.limit = scan.limit.saturating_sub(self.rows);
        let region = match (&self.position, self.scan.reversed) {
            (None, false) => self.src.locate(At::Row(&scan.start_row))?,
            (None, true) if scan.start_row.is_empty() => self.src.locate(At::Last)?,
            // Rows below a start row left out are in the region before one starting there.
            (None, true) if !scan.include_start_row => {
                self.src.locate(At::Below(&scan.start_row))?
            }
            (None, true) => self.src.locate(At::Row(&scan.start_row))?,
            (Some(p), false) => {
                if *p > scan.start_row {
                    scan.start_row = p.clone();
                    scan.include_start_row = true;
                }
                self.src.locate(At::Row(p))?
            }
            (Some(p), true) => {
                if scan.start_row.is_empty() || *p <= scan.start_row {
                    scan.start_row = p.clone();
                    scan.include_start_row = false;
                }
                self.src.locate(At::Below(p))?
            }
        };
        let s = region.scanner(&scan)?;
        Ok((region.info().clone(), s))
    }

    /// Every remaining result.
    ///
    /// # Errors
    /// As [`TableScanner::next_row`].
    pub fn collect_rows(mut self) -> Result<Vec<RowResult>> {
        let mut out = Vec::new();
        while let Some(r) = self.next_row()? {
            out.push(r);
        }
        Ok(out)
    }
}

impl Iterator for TableScanner {
    type Item = Result<RowResult>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_row().transpose()
    }
}
