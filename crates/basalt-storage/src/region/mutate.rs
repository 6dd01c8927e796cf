//! The write path of a region: validate → row lock → read what the mutation depends on →
//! sequence id → WAL append → memstore → WAL sync → MVCC complete (DESIGN.md "Write path").

use std::collections::BTreeMap;

use basalt_model::ops::{
    Append, CheckAndMutate, Condition, Delete, Get, Increment, Mutation, Put, RowMutations,
};
use basalt_model::{
    bytes_fmt::to_string_binary, Cell, CellType, Durability, Error, Result, RowResult,
    LATEST_TIMESTAMP,
};
use bytes::Bytes;
use parking_lot::MutexGuard;

use super::{Region, ROW_LOCK_STRIPES};

impl Region {
    /// The row lock stripe of `row`.
    pub(super) fn row_stripe(&self, row: &[u8]) -> usize {
        let h = xxhash_rust::xxh3::xxh3_64(row);
        usize::try_from(h % ROW_LOCK_STRIPES as u64).unwrap_or(0)
    }

    fn lock_row(&self, row: &[u8]) -> MutexGuard<'_, ()> {
        self.row_locks[self.row_stripe(row)].lock()
    }

    pub(super) fn check_writable(&self, row: &[u8]) -> Result<()> {
        let table = self.table();
        if table.read_only {
            return Err(Error::DoNotRetry(format!(
                "Table {} is read only",
                table.table_name()
            )));
        }
        if !self.info.contains(row) {
            return Err(Error::DoNotRetry(format!(
                "Requested row out of range for region {}: {}",
                self.info.id,
                to_string_binary(row)
            )));
        }
        Ok(())
    }

    /// Runs the checks a mutation must pass before anything of it is applied (its values,
    /// the region, families, cell sizes), without applying it: a caller that applies two
    /// mutations of a row in turn checks both first, so a refusal leaves the row untouched.
    ///
    /// # Errors
    /// What [`Region::mutate`] would refuse the mutation for before writing.
    pub fn check(&self, m: &Mutation) -> Result<()> {
        m.validate()?;
        self.check_writable(m.row())?;
        match m {
            Mutation::Put(p) => p.cells.iter().try_for_each(|c| self.check_cell(c)),
            Mutation::Delete(d) => d.markers.iter().try_for_each(|c| self.check_cell(c)),
            Mutation::Increment(i) => i
                .columns
                .iter()
                .try_for_each(|(f, _, _)| self.check_family(f)),
            Mutation::Append(a) => a
                .columns
                .iter()
                .try_for_each(|(f, _, _)| self.check_family(f)),
        }
    }

    /// Applies one mutation atomically; returns the new values of an Increment or Append.
    ///
    /// # Errors
    /// Bad input (unknown family, oversized cell, ...) before anything is written; WAL failure.
    pub fn mutate(&self, m: &Mutation) -> Result<Option<RowResult>> {
        m.validate()?;
        self.check_writable(m.row())?;
        let out = {
            let _row = self.lock_row(m.row());
            let now = self.row_clock.now(m.row(), self.env.now_ms());
            let (cells, result) = self.prepare(m, now)?;
            self.write(m.durability(), cells)?;
            result
        };
        Ok(out)
    }

    /// Applies several mutations of one row as one atomic edit.
    ///
    /// # Errors
    /// As [`Region::mutate`]; nothing is applied when any mutation is refused.
    pub fn mutate_row(&self, rm: &RowMutations) -> Result<Vec<Option<RowResult>>> {
        rm.validate()?;
        self.check_writable(&rm.row)?;
        let out = {
            let _row = self.lock_row(&rm.row);
            self.apply_row_mutations(rm)?
        };
        Ok(out)
    }

    fn apply_row_mutations(&self, rm: &RowMutations) -> Result<Vec<Option<RowResult>>> {
        let now = self.row_clock.now(&rm.row, self.env.now_ms());
        let mut cells = Vec::new();
        let mut results = Vec::new();
        let mut durability = Durability::SkipWal;
        for m in &rm.mutations {
            let (c, r) = self.prepare(m, now)?;
            cells.extend(c);
            results.push(r);
            durability = durability.max(m.durability().resolve(self.table().durability));
        }
        self.write(durability, cells)?;
        Ok(results)
    }

    /// Tests a condition and applies the action atomically when it holds.
    ///
    /// # Errors
    /// As [`Region::mutate_row`].
    pub fn check_and_mutate(&self, cam: &CheckAndMutate) -> Result<bool> {
        cam.validate()?;
        self.check_writable(&cam.row)?;
        let applied = {
            let _row = self.lock_row(&cam.row);
            if self.condition_holds(cam)? {
                self.apply_row_mutations(&cam.action)?;
                true
            } else {
                false
            }
        };
        Ok(applied)
    }

    fn condition_holds(&self, cam: &CheckAndMutate) -> Result<bool> {
        match &cam.condition {
            Condition::Column {
                family,
                qualifier,
                op,
                value,
                time_range,
            } => {
                self.check_family(family)?;
                let get = Get::new(cam.row.clone())
                    .add_column(family.clone(), qualifier.clone())
                    .with_time_range(*time_range);
                let current = self.get(get)?;
                let stored = current.cells.first();
                let expected = value.as_ref().filter(|v| !v.is_empty());
                Ok(match (stored, expected) {
                    (None, None) => true,
                    (Some(c), None) => c.value().is_empty(),
                    (Some(c), Some(v)) => op.matches(v[..].cmp(c.value())),
                    (None, Some(_)) => false,
                })
            }
            Condition::Filter { filter, time_range } => {
                let get = Get::new(cam.row.clone())
                    .with_filter(filter.clone())
                    .with_time_range(*time_range);
                Ok(!self.get(get)?.is_empty())
            }
            Condition::Unchanged { digest } => {
                let get = Get::new(cam.row.clone()).all_versions();
                Ok(self.get(get)?.digest() == *digest)
            }
        }
    }

    /// Turns a mutation into the cells to write, reading under the row lock what it depends
    /// on (latest versions for deletes, current values for increments and appends).
    pub(super) fn prepare(&self, m: &Mutation, now: i64) -> Result<(Vec<Cell>, Option<RowResult>)> {
        match m {
            Mutation::Put(p) => Ok((self.prepare_put(p, now)?, None)),
            Mutation::Delete(d) => Ok((self.prepare_delete(d, now)?, None)),
            Mutation::Increment(i) => self.prepare_increment(i, now).map(|(c, r)| (c, Some(r))),
            Mutation::Append(a) => self.prepare_append(a, now).map(|(c, r)| (c, Some(r))),
        }
    }

    fn check_cell(&self, c: &Cell) -> Result<()> {
        self.check_family(&c.family)?;
        basalt_model::limits::check_cell_size(c, self.config.max_cell_size_bytes)
    }

    fn prepare_put(&self, p: &Put, now: i64) -> Result<Vec<Cell>> {
        p.cells
            .iter()
            .map(|c| {
                let mut c = c.clone();
                if c.timestamp == LATEST_TIMESTAMP {
                    c.timestamp = now;
                }
                c.ttl_ms = p.ttl_ms.or(c.ttl_ms);
                self.check_cell(&c)?;
                Ok(c)
            })
            .collect()
    }

    fn prepare_delete(&self, d: &Delete, now: i64) -> Result<Vec<Cell>> {
        let markers = self.delete_markers(d, now)?;
        // A later write of the row at server time must not land on the markers' millisecond,
        // where they would mask it.
        if markers.iter().any(|m| m.timestamp == now) {
            self.row_clock.ran_ahead(&d.row, now + 1, self.env.now_ms());
        }
        Ok(markers)
    }

    fn delete_markers(&self, d: &Delete, now: i64) -> Result<Vec<Cell>> {
        let stamp = |ts: i64| if ts == LATEST_TIMESTAMP { now } else { ts };
        if d.is_row_delete() {
            let families: Vec<Bytes> = self.table().families.keys().cloned().collect();
            return Ok(families
                .into_iter()
                .map(|f| {
                    Cell::marker(
                        d.row.clone(),
                        f,
                        Bytes::new(),
                        stamp(d.timestamp),
                        CellType::DeleteFamily,
                    )
                })
                .collect());
        }
        let mut seen: BTreeMap<(Bytes, Bytes), u32> = BTreeMap::new();
        let mut out = Vec::with_capacity(d.markers.len());
        for m in &d.markers {
            let mut m = m.clone();
            self.check_cell(&m)?;
            if m.cell_type == CellType::Delete && m.timestamp == LATEST_TIMESTAMP {
                // "Delete the latest version": the k-th mention of a column deletes its k-th
                // newest version; with fewer versions the marker lands at now and masks nothing.
                let n = seen
                    .entry((m.family.clone(), m.qualifier_bytes()))
                    .or_insert(0);
                *n += 1;
                let get = Get::new(d.row.clone())
                    .add_column(m.family.clone(), m.qualifier_bytes())
                    .with_max_versions(*n);
                let versions = self.get(get)?;
                m.timestamp = versions
                    .cells
                    .get(*n as usize - 1)
                    .map_or(now, |c| c.timestamp);
            } else {
                m.timestamp = stamp(m.timestamp);
            }
            out.push(m);
        }
        Ok(out)
    }

    fn read_current(
        &self,
        row: &Bytes,
        cols: &[(Bytes, Bytes)],
        tr: basalt_model::TimeRange,
    ) -> Result<RowResult> {
        let mut get = Get::new(row.clone()).with_time_range(tr);
        for (f, q) in cols {
            self.check_family(f)?;
            get = get.add_column(f.clone(), q.clone());
        }
        self.get(get)
    }

    fn prepare_increment(&self, inc: &Increment, now: i64) -> Result<(Vec<Cell>, RowResult)> {
        let mut cols: Vec<(Bytes, Bytes, i64)> = inc.columns.clone();
        cols.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
        let keys: Vec<(Bytes, Bytes)> = cols
            .iter()
            .map(|(f, q, _)| (f.clone(), q.clone()))
            .collect();
        let current = self.read_current(&inc.row, &keys, inc.time_range)?;
        let mut writes = Vec::new();
        let mut results = Vec::new();
        for (f, q, amount) in cols {
            let old = current.column_cells(&f, &q).next();
            let base = match old {
                Some(c) => i64::from_be_bytes(c.value()[..].try_into().map_err(|_| {
                    Error::DoNotRetry("Attempted to increment field that isn't 64 bits wide".into())
                })?),
                None => 0,
            };
            if amount == 0 {
                if let Some(c) = old {
                    results.push(c.clone());
                    continue;
                }
            }
            let value = Bytes::copy_from_slice(&base.wrapping_add(amount).to_be_bytes());
            let cell = self.rmw_cell(
                &inc.row,
                f.clone(),
                q.clone(),
                value,
                old,
                inc.timestamp,
                inc.ttl_ms,
                now,
            )?;
            results.push(cell.clone());
            writes.push(cell);
        }
        let result = if inc.return_results {
            RowResult::new(inc.row.clone(), results)
        } else {
            RowResult::default()
        };
        Ok((writes, result))
    }

    fn prepare_append(&self, app: &Append, now: i64) -> Result<(Vec<Cell>, RowResult)> {
        let keys: Vec<(Bytes, Bytes)> = app
            .columns
            .iter()
            .map(|(f, q, _)| (f.clone(), q.clone()))
            .collect();
        let current = self.read_current(&app.row, &keys, app.time_range)?;
        let mut writes: Vec<Cell> = Vec::new();
        for (f, q, v) in &app.columns {
            // The same column twice in one Append concatenates both pieces.
            let old = writes
                .iter()
                .rev()
                .find(|c| c.family == f && c.qualifier() == q)
                .or_else(|| current.column_cells(f, q).next());
            let mut value = old.map_or_else(Vec::new, |c| c.value().to_vec());
            value.extend_from_slice(v);
            let cell = self.rmw_cell(
                &app.row,
                f.clone(),
                q.clone(),
                Bytes::from(value),
                old,
                app.timestamp,
                app.ttl_ms,
                now,
            )?;
            writes.retain(|c| !(c.family == f && c.qualifier() == q));
            writes.push(cell);
        }
        writes.sort();
        let result = if app.return_results {
            RowResult::new(app.row.clone(), writes.clone())
        } else {
            RowResult::default()
        };
        Ok((writes, result))
    }

    /// The new cell of an Increment or Append: the client's timestamp only when there is no
    /// prior value, else `max(now, old + 1)` so the new version always sorts first.
    #[allow(clippy::too_many_arguments)]
    fn rmw_cell(
        &self,
        row: &Bytes,
        f: Bytes,
        q: Bytes,
        value: Bytes,
        old: Option<&Cell>,
        ts: i64,
        ttl: Option<u64>,
        now: i64,
    ) -> Result<Cell> {
        let ts = match old {
            Some(o) => now.max(o.timestamp.saturating_add(1)),
            None if ts != LATEST_TIMESTAMP => ts,
            None => now,
        };
        self.row_clock.ran_ahead(row, ts, self.env.now_ms());
        let mut c = Cell::put(row.clone(), f, q, ts, value);
        c.ttl_ms = ttl;
        self.check_cell(&c)?;
        Ok(c)
    }

    /// Writes cells the engine made (the `hbase:meta` mirror) as one edit without a WAL
    /// record: no read-only or range check applies.
    ///
    /// # Errors
    /// `NotServingRegion`; an unknown family.
    pub fn write_system(&self, cells: Vec<Cell>) -> Result<()> {
        self.write(Durability::SkipWal, cells)
    }

    /// Writes prepared cells as one edit: one sequence id, one WAL record (row lock held).
    pub(super) fn write(&self, durability: Durability, cells: Vec<Cell>) -> Result<()> {
        if cells.is_empty() {
            return Ok(());
        }
        let staged = {
            let _u = self.updates.read();
            // Under `updates`: a close for a split or merge sees every write that got past here.
            self.check_serving()?;
            self.stage(durability, cells)?
        };
        self.finish(&[staged])
    }
}

/// Keeps only the last of cells with the same key (a mutation naming a column twice at one
/// timestamp): the memstore then holds each key once and its size stays exact.
pub(super) fn fold_repeated_columns(cells: &mut Vec<Cell>) {
    if cells.len() < 2 || cells.windows(2).all(|w| w[0] < w[1]) {
        return;
    }
    cells.reverse();
    // Stable: among equal keys the last written now comes first, and dedup keeps the first.
    cells.sort_by(Cell::cmp);
    cells.dedup_by(|a, b| a.cmp(&b) == std::cmp::Ordering::Equal);
}
