//! The oracle: an in-memory table with HBase semantics, computed by definition.
//!
//! Every family keeps `mem` (what is not flushed) and `files` (each flush or compaction
//! output). Reads look at all of them; `flush` and `compact` rewrite them with the retention
//! rules of [`retain`]. Reads are in [`read`].

pub mod read;
pub mod regions;
pub mod retain;

use std::collections::{BTreeMap, BTreeSet};

use basalt_model::ops::{Append, Delete, Get, Increment, Put, Scan};
use basalt_model::{Cell, CellType, ColumnFamilyDescriptor, RowResult, LATEST_TIMESTAMP};
use bytes::Bytes;

pub use read::Query;

/// One family's physical state.
#[derive(Clone, Debug)]
pub struct FamilyState {
    pub spec: ColumnFamilyDescriptor,
    pub mem: BTreeSet<Cell>,
    pub files: Vec<File>,
}

/// One store file.
#[derive(Clone, Debug)]
pub struct File {
    pub cells: Vec<Cell>,
    /// The oldest Put's timestamp as the file's metadata says (`i64::MAX`: none). A region
    /// reading part of a parent's file after a split sees the parent file's metadata, as in
    /// HBase, so this may be older than any Put of `cells`.
    pub earliest_put_ts: i64,
}

impl File {
    fn new(cells: Vec<Cell>) -> File {
        let earliest_put_ts = cells
            .iter()
            .filter(|c| c.cell_type == CellType::Put)
            .map(|c| c.timestamp)
            .min()
            .unwrap_or(i64::MAX);
        File {
            cells,
            earliest_put_ts,
        }
    }
}

/// An in-memory table.
#[derive(Clone, Debug)]
pub struct Oracle {
    pub families: BTreeMap<Bytes, FamilyState>,
    seq: u64,
    /// Per row, the time an Increment or Append ran ahead of the clock to (at most 1000 ms
    /// ahead): later writes of the row without a timestamp get at least that time, so they
    /// are not hidden below the counter's newest version. Kept in memory by the server, so a
    /// reopen, split or merge forgets them.
    row_floors: BTreeMap<Bytes, i64>,
}

impl Oracle {
    /// An empty table with these families.
    #[must_use]
    pub fn new(families: &[ColumnFamilyDescriptor]) -> Oracle {
        let families = families
            .iter()
            .map(|f| {
                (
                    f.name.clone(),
                    FamilyState {
                        spec: f.clone(),
                        mem: BTreeSet::new(),
                        files: Vec::new(),
                    },
                )
            })
            .collect();
        Oracle {
            families,
            seq: 0,
            row_floors: BTreeMap::new(),
        }
    }

    fn write(&mut self, cells: Vec<Cell>) {
        self.seq += 1;
        for mut c in cells {
            c.seq_id = self.seq;
            // A later cell of the same mutation with the same key replaces the earlier one.
            self.families
                .get_mut(&c.family)
                .expect("families are checked by the caller")
                .mem
                .replace(c);
        }
    }

    /// Whether the table has `family`.
    #[must_use]
    pub fn has_family(&self, family: &[u8]) -> bool {
        self.families.contains_key(family)
    }

    /// The time a write of `row` gets when the clock says `now`.
    fn row_now(&self, row: &[u8], now: i64) -> i64 {
        self.row_floors.get(row).map_or(now, |f| now.max(*f))
    }

    /// Notes that a write of `row` put the row's time at `ts` when the clock said `clock`
    /// (kept only up to 1000 ms ahead of the clock).
    fn ran_ahead(&mut self, row: &Bytes, ts: i64, clock: i64) {
        if ts > clock && ts - clock <= 1000 {
            let f = self.row_floors.entry(row.clone()).or_insert(ts);
            *f = (*f).max(ts);
        }
    }

    /// Forgets the rows' floors, as a reopened, split or merged region does.
    pub fn forget_row_floors(&mut self) {
        self.row_floors.clear();
    }

    /// `put`: cells without a timestamp get `now`.
    pub fn put(&mut self, p: &Put, now: i64) {
        let now = self.row_now(&p.row, now);
        let cells = p
            .cells
            .iter()
            .map(|c| {
                let mut c = c.clone();
                if c.timestamp == LATEST_TIMESTAMP {
                    c.timestamp = now;
                }
                c.ttl_ms = p.ttl_ms.or(c.ttl_ms);
                c
            })
            .collect();
        self.write(cells);
    }

    /// `delete`, including "delete the latest version" and whole-row deletes. A marker at
    /// server time moves the row's later server-timed writes to the next millisecond.
    pub fn delete(&mut self, d: &Delete, clock: i64) {
        let now = self.row_now(&d.row, clock);
        let cells = self.delete_markers(d, now);
        if cells.iter().any(|m| m.timestamp == now) {
            self.ran_ahead(&d.row, now + 1, clock);
        }
        self.write(cells);
    }

    fn delete_markers(&self, d: &Delete, now: i64) -> Vec<Cell> {
        let stamp = |ts: i64| if ts == LATEST_TIMESTAMP { now } else { ts };
        if d.markers.is_empty() {
            let cells = self
                .families
                .keys()
                .map(|f| {
                    Cell::marker(
                        d.row.clone(),
                        f.clone(),
                        Bytes::new(),
                        stamp(d.timestamp),
                        CellType::DeleteFamily,
                    )
                })
                .collect();
            return cells;
        }
        let mut mentions: BTreeMap<(Bytes, Bytes), usize> = BTreeMap::new();
        let mut cells = Vec::new();
        for m in &d.markers {
            let mut m = m.clone();
            if m.cell_type == CellType::Delete && m.timestamp == LATEST_TIMESTAMP {
                let n = mentions
                    .entry((m.family.clone(), m.qualifier_bytes()))
                    .or_insert(0);
                *n += 1;
                let get = Get::new(d.row.clone())
                    .add_column(m.family.clone(), m.qualifier_bytes())
                    .all_versions();
                let versions = self.get(&get, now);
                m.timestamp = versions.cells.get(*n - 1).map_or(now, |c| c.timestamp);
            } else {
                m.timestamp = stamp(m.timestamp);
            }
            cells.push(m);
        }
        cells
    }

    /// `increment`: the new counters in column order.
    ///
    /// # Panics
    /// When a current value is not 8 bytes (callers only increment counters).
    pub fn increment(&mut self, inc: &Increment, clock: i64) -> RowResult {
        let now = self.row_now(&inc.row, clock);
        let mut cols = inc.columns.clone();
        cols.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
        let mut writes = Vec::new();
        let mut out = Vec::new();
        for (f, q, amount) in cols {
            let old = self.current(&inc.row, &f, &q, now);
            let base = old
                .as_ref()
                .map_or(0, |c| i64::from_be_bytes(c.value()[..].try_into().unwrap()));
            if amount == 0 {
                if let Some(c) = old {
                    out.push(c);
                    continue;
                }
            }
            let cell = rmw_cell(
                &inc.row,
                f,
                q,
                Bytes::copy_from_slice(&base.wrapping_add(amount).to_be_bytes()),
                old.as_ref(),
                inc.timestamp,
                now,
            );
            self.ran_ahead(&inc.row, cell.timestamp, clock);
            out.push(cell.clone());
            writes.push(cell);
        }
        self.write(writes);
        RowResult::new(inc.row.clone(), out)
    }

    /// `append`.
    pub fn append(&mut self, app: &Append, clock: i64) -> RowResult {
        let now = self.row_now(&app.row, clock);
        let mut writes: Vec<Cell> = Vec::new();
        for (f, q, v) in &app.columns {
            let old = writes
                .iter()
                .rev()
                .find(|c| c.family == f && c.qualifier() == q)
                .cloned()
                .or_else(|| self.current(&app.row, f, q, now));
            let mut value = old.as_ref().map_or_else(Vec::new, |c| c.value().to_vec());
            value.extend_from_slice(v);
            let cell = rmw_cell(
                &app.row,
                f.clone(),
                q.clone(),
                Bytes::from(value),
                old.as_ref(),
                app.timestamp,
                now,
            );
            self.ran_ahead(&app.row, cell.timestamp, clock);
            writes.retain(|c| !(c.family == f && c.qualifier() == q));
            writes.push(cell);
        }
        writes.sort();
        self.write(writes.clone());
        RowResult::new(app.row.clone(), writes)
    }

    /// The newest visible version of one column.
    #[must_use]
    pub fn current(&self, row: &Bytes, f: &Bytes, q: &Bytes, now: i64) -> Option<Cell> {
        let get = Get::new(row.clone()).add_column(f.clone(), q.clone());
        self.get(&get, now).cells.into_iter().next()
    }

    /// `get`.
    #[must_use]
    pub fn get(&self, get: &Get, now: i64) -> RowResult {
        let scan = get.clone().into_scan();
        self.scan(&scan, now)
            .into_iter()
            .next()
            .unwrap_or_else(|| RowResult::new(get.row.clone(), Vec::new()))
    }

    /// `scan`: whole rows (no batching).
    #[must_use]
    pub fn scan(&self, scan: &Scan, now: i64) -> Vec<RowResult> {
        read::scan(self, scan, now)
    }

    /// A flush: each non-empty memstore becomes a file, after the flush retention rules.
    pub fn flush(&mut self, now: i64) {
        for fam in self.families.values_mut() {
            if fam.mem.is_empty() {
                continue;
            }
            let cells: Vec<Cell> = std::mem::take(&mut fam.mem).into_iter().collect();
            let kept = retain::retain(&cells, &fam.spec, retain::Mode::Minor, now);
            if !kept.is_empty() {
                fam.files.push(File::new(kept));
            }
        }
    }

    /// A compaction of every store's files into one (minor needs two files or more).
    pub fn compact(&mut self, major: bool, now: i64) {
        for fam in self.families.values_mut() {
            if fam.files.is_empty() || (!major && fam.files.len() < 2) {
                continue;
            }
            let files = std::mem::take(&mut fam.files);
            let earliest_put_ts = files
                .iter()
                .map(|f| f.earliest_put_ts)
                .min()
                .unwrap_or(i64::MAX);
            let mut all: Vec<Cell> = files.into_iter().flat_map(|f| f.cells).collect();
            all.sort();
            let mode = if major {
                retain::Mode::Major { earliest_put_ts }
            } else {
                retain::Mode::Minor
            };
            let kept = retain::retain(&all, &fam.spec, mode, now);
            if !kept.is_empty() {
                fam.files.push(File::new(kept));
            }
        }
    }

    /// Every physical cell of `family` in `row`, in key order.
    #[must_use]
    pub fn physical(&self, family: &FamilyState, row: &[u8]) -> Vec<Cell> {
        let mut v: Vec<Cell> = family
            .mem
            .iter()
            .filter(|c| c.row() == row)
            .cloned()
            .collect();
        v.extend(
            family
                .files
                .iter()
                .flat_map(|f| &f.cells)
                .filter(|c| c.row() == row)
                .cloned(),
        );
        v.sort();
        v
    }

    /// Every row that has any physical cell, ascending.
    #[must_use]
    pub fn rows(&self) -> BTreeSet<Bytes> {
        self.families
            .values()
            .flat_map(|f| {
                f.mem
                    .iter()
                    .chain(f.files.iter().flat_map(|f| &f.cells))
                    .map(basalt_model::Cell::row_bytes)
            })
            .collect()
    }
}

/// The new cell of an Increment or Append: the client's timestamp only without a prior value,
/// else `max(now, old + 1)`.
fn rmw_cell(
    row: &Bytes,
    f: Bytes,
    q: Bytes,
    value: Bytes,
    old: Option<&Cell>,
    ts: i64,
    now: i64,
) -> Cell {
    let ts = match old {
        Some(o) => now.max(o.timestamp + 1),
        None if ts != LATEST_TIMESTAMP => ts,
        None => now,
    };
    Cell::put(row.clone(), f, q, ts, value)
}
