//! Reading and writing a table: routing to regions, per-row batches, scans across regions.

use std::sync::Arc;

use basalt_model::ops::{
    Append, CheckAndMutate, Delete, Get, Increment, Mutation, Put, RowMutations, Scan,
};
use basalt_model::{Error, Result, RowResult};
use bytes::Bytes;

use super::{DbInner, TableState};
use crate::region::{Region, RegionScanner};

/// A handle on one table (HBase's `Table`). Cheap to clone.
#[derive(Clone, Debug)]
pub struct Table {
    /// Keeps the database (its WAL and directory lock) open while the handle lives.
    db: Arc<DbInner>,
    state: Arc<TableState>,
}

impl Table {
    pub(super) fn new(db: Arc<DbInner>, state: Arc<TableState>) -> Table {
        Table { db, state }
    }

    fn region_for(&self, row: &[u8]) -> Result<Arc<Region>> {
        if !*self.state.enabled.read() {
            return Err(Error::TableNotEnabled(self.state.name.to_string()));
        }
        let regions = self.state.regions.read();
        let i = regions
            .partition_point(|r| r.info().start_key[..] <= *row)
            .saturating_sub(1);
        regions
            .get(i)
            .cloned()
            .ok_or_else(|| Error::TableNotFound(self.state.name.to_string()))
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
        let (f, q) = (family.into(), qualifier.into());
        let r = self.increment(Increment::new(row).add(f.clone(), q.clone(), amount))?;
        let v = r
            .value(&f, &q)
            .ok_or_else(|| Error::DoNotRetry("increment returned no value".into()))?;
        Ok(i64::from_be_bytes(v[..].try_into().map_err(|_| {
            Error::DoNotRetry("counter is not 8 bytes".into())
        })?))
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

    /// Runs a write on the region of `row` under flow control: it may wait for a flush, or be
    /// refused with `RegionTooBusy`, before anything is applied.
    fn write_to<T>(&self, row: &[u8], f: impl FnOnce(&Region) -> Result<T>) -> Result<T> {
        let region = self.region_for(row)?;
        self.db.background.before_write(&region)?;
        let out = f(&region);
        self.db.background.after_write(&region);
        out
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

    /// `batch`: each mutation on its own (rows are atomic, the batch is not); one result each.
    #[must_use]
    pub fn batch(&self, mutations: Vec<Mutation>) -> Vec<Result<Option<RowResult>>> {
        mutations.into_iter().map(|m| self.mutate(m)).collect()
    }

    /// `get`.
    ///
    /// # Errors
    /// Bad input, unknown family, disabled table, corruption.
    pub fn get(&self, get: Get) -> Result<RowResult> {
        get.validate()?;
        self.region_for(&get.row)?.get(get)
    }

    /// `getScanner`: rows in order (or reverse order) across every region.
    ///
    /// # Errors
    /// Bad scan, unknown family, disabled table.
    pub fn scan(&self, scan: Scan) -> Result<TableScanner> {
        scan.validate()?;
        if !*self.state.enabled.read() {
            return Err(Error::TableNotEnabled(self.state.name.to_string()));
        }
        let regions = self.state.regions.read().clone();
        let mut order: Vec<Arc<Region>> =
            regions.into_iter().filter(|r| overlaps(r, &scan)).collect();
        if scan.reversed {
            order.reverse();
        }
        Ok(TableScanner {
            regions: order.into_iter(),
            current: None,
            scan,
            rows: 0,
        })
    }
}

/// Whether a region can hold rows of the scan's range.
fn overlaps(r: &Region, scan: &Scan) -> bool {
    let (lo, hi) = if scan.reversed {
        (&scan.stop_row, &scan.start_row)
    } else {
        (&scan.start_row, &scan.stop_row)
    };
    let info = r.info();
    let below_hi = hi.is_empty() || info.start_key[..] <= hi[..];
    let above_lo = lo.is_empty() || info.end_key.is_empty() || info.end_key[..] > lo[..];
    below_hi && above_lo
}

/// Rows of a scan across regions. Each region gets its own copy of the filter, so a
/// PageFilter limits rows per region, as in HBase (SEMANTICS.md #59).
#[derive(Debug)]
pub struct TableScanner {
    regions: std::vec::IntoIter<Arc<Region>>,
    current: Option<RegionScanner>,
    scan: Scan,
    rows: u64,
}

impl TableScanner {
    /// The next result, `None` at the end.
    ///
    /// # Errors
    /// Corruption in a store file.
    pub fn next_row(&mut self) -> Result<Option<RowResult>> {
        loop {
            if self.scan.limit > 0 && self.rows >= self.scan.limit {
                return Ok(None);
            }
            if let Some(s) = &mut self.current {
                if let Some(r) = s.next_row()? {
                    if !r.partial {
                        self.rows += 1;
                    }
                    return Ok(Some(r));
                }
                self.current = None;
            }
            let Some(region) = self.regions.next() else {
                return Ok(None);
            };
            self.current = Some(region.scanner(&self.scan)?);
        }
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
