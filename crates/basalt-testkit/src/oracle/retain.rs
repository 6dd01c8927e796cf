//! What a flush or compaction keeps, cell by cell, as HBase's compaction matchers decide it
//! (SEMANTICS.md §C, §D): minor (and flush) keeps markers; major drops them unless
//! KEEP_DELETED_CELLS keeps them; both drop masked puts (KEEP_DELETED_CELLS=FALSE), versions
//! beyond VERSIONS and expired cells beyond MIN_VERSIONS.
//!
//! Cells of a column are examined newest first. A decision to "skip the rest of the column"
//! ends the column — except for the empty qualifier, where family-level delete markers live:
//! there every cell is still examined, so no family marker is lost to a skip.

use basalt_model::{Cell, CellType, ColumnFamilyDescriptor, KeepDeletedCells};

/// Flush or minor compaction, or major compaction with the oldest Put of its inputs.
#[derive(Clone, Copy, Debug)]
pub enum Mode {
    Minor,
    Major { earliest_put_ts: i64 },
}

#[derive(PartialEq)]
enum Decision {
    Keep,
    Drop,
    DropRestOfColumn,
}

/// Markers seen so far in a row (what HBase's delete tracker remembers).
#[derive(Default)]
pub(crate) struct Masks {
    family_ts: Option<i64>,
    family_versions: Vec<i64>,
    column_ts: Option<i64>,
    versions: Vec<i64>,
}

impl Masks {
    pub(crate) fn add(&mut self, m: &Cell) {
        match m.cell_type {
            CellType::DeleteFamily => self.family_ts = self.family_ts.max(Some(m.timestamp)),
            CellType::DeleteFamilyVersion => self.family_versions.push(m.timestamp),
            CellType::DeleteColumn => self.column_ts = self.column_ts.max(Some(m.timestamp)),
            CellType::Delete => self.versions.push(m.timestamp),
            _ => {}
        }
    }

    pub(crate) fn new_column(&mut self) {
        self.column_ts = None;
        self.versions.clear();
    }

    /// `Some(true)`: masked, and so is everything older in the column; `Some(false)`: only
    /// this version is masked.
    /// The checks run in HBase's order (ScanDeleteTracker.isDeleted): family, family version,
    /// column, version. The order matters to what a flush keeps: a put masked by a family
    /// version marker is skipped alone, so older markers of its column survive.
    pub(crate) fn masks(&self, ts: i64) -> Option<bool> {
        if self.family_ts.is_some_and(|t| ts <= t) {
            return Some(true);
        }
        if self.family_versions.contains(&ts) {
            return Some(false);
        }
        if self.column_ts.is_some_and(|t| ts <= t) {
            return Some(true);
        }
        if self.versions.contains(&ts) {
            return Some(false);
        }
        None
    }
}

/// Applies the retention rules to `cells` (one family, key order).
#[must_use]
pub fn retain(cells: &[Cell], spec: &ColumnFamilyDescriptor, mode: Mode, now: i64) -> Vec<Cell> {
    let mut out = Vec::new();
    let oldest = spec.ttl_ms().map_or(i64::MIN, |ttl| now - ttl);
    let kdc = spec.keep_deleted_cells;
    let mut i = 0;
    while i < cells.len() {
        let row = cells[i].row.clone();
        let mut masks = Masks::default();
        while i < cells.len() && cells[i].row == row {
            let q = cells[i].qualifier.clone();
            masks.new_column();
            let (mut count, mut last, mut stopped) = (0u32, None, false);
            while i < cells.len() && cells[i].row == row && cells[i].qualifier == q {
                let c = &cells[i];
                i += 1;
                if stopped {
                    continue;
                }
                let d = decide(
                    c, spec, mode, now, oldest, kdc, &mut masks, &mut count, &mut last,
                );
                if d == Decision::Keep {
                    out.push(c.clone());
                }
                if d == Decision::DropRestOfColumn && !q.is_empty() {
                    stopped = true;
                }
            }
        }
    }
    out
}

#[allow(clippy::too_many_arguments)]
fn decide(
    c: &Cell,
    spec: &ColumnFamilyDescriptor,
    mode: Mode,
    now: i64,
    oldest: i64,
    kdc: KeepDeletedCells,
    masks: &mut Masks,
    count: &mut u32,
    last: &mut Option<(i64, CellType)>,
) -> Decision {
    if spec.min_versions == 0 && c.timestamp < oldest {
        return Decision::DropRestOfColumn;
    }
    if c.ttl_ms
        .is_some_and(|ttl| c.timestamp + i64::try_from(ttl).unwrap() < now)
    {
        return Decision::Drop;
    }
    let droppable =
        kdc == KeepDeletedCells::False || (kdc == KeepDeletedCells::Ttl && c.timestamp < oldest);
    if c.cell_type.is_delete() {
        if droppable {
            masks.add(c);
        }
        match mode {
            Mode::Minor => return Decision::Keep,
            Mode::Major { earliest_put_ts } => {
                if droppable {
                    return Decision::Drop;
                }
                if c.timestamp < earliest_put_ts {
                    return Decision::DropRestOfColumn;
                }
            }
        }
    } else {
        match masks.masks(c.timestamp) {
            Some(true) => return Decision::DropRestOfColumn,
            Some(false) => return Decision::Drop,
            None => {}
        }
    }
    if *last == Some((c.timestamp, c.cell_type)) {
        return Decision::Drop;
    }
    if !c.cell_type.is_delete() {
        *count += 1;
    }
    if *count > spec.max_versions {
        return Decision::DropRestOfColumn;
    }
    if *count <= spec.min_versions || c.timestamp >= oldest {
        *last = Some((c.timestamp, c.cell_type));
        Decision::Keep
    } else {
        Decision::DropRestOfColumn
    }
}
