//! What a flush or compaction keeps, cell by cell, as HBase's compaction matchers decide it
//! (SEMANTICS.md §C, §D): minor (and flush) keeps markers; major drops them unless
//! KEEP_DELETED_CELLS keeps them; both drop masked puts (KEEP_DELETED_CELLS=FALSE), versions
//! beyond VERSIONS and expired cells beyond MIN_VERSIONS.
//!
//! Cells of a column are examined newest first. A decision to "skip the rest of the column"
//! ends the column — except for the empty qualifier, where family-level delete markers live:
//! there every cell is still examined, so no family marker is lost to a skip.
//!
//! With NEW_VERSION_BEHAVIOR a marker masks only what was written before it (see `Masks`):
//! a put written after every marker that covers it survives flushes and compactions.

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

/// Markers seen so far in a row (what HBase's delete tracker remembers), each as
/// (timestamp, sequence id).
///
/// With NEW_VERSION_BEHAVIOR a marker masks a cell only when the cell was written before it
/// (a lower sequence id); every marker is kept, so the rule reads as its definition.
#[derive(Default)]
pub(crate) struct Masks {
    new_version_behavior: bool,
    family: Vec<(i64, u64)>,
    family_versions: Vec<(i64, u64)>,
    columns: Vec<(i64, u64)>,
    versions: Vec<(i64, u64)>,
}

impl Masks {
    /// No markers yet, for a family with or without NEW_VERSION_BEHAVIOR.
    pub(crate) fn new(spec: &ColumnFamilyDescriptor) -> Masks {
        Masks {
            new_version_behavior: spec.new_version_behavior,
            ..Masks::default()
        }
    }

    pub(crate) fn add(&mut self, m: &Cell) {
        let mark = (m.timestamp, m.seq_id);
        match m.cell_type {
            CellType::DeleteFamily => self.family.push(mark),
            CellType::DeleteFamilyVersion => self.family_versions.push(mark),
            CellType::DeleteColumn => self.columns.push(mark),
            CellType::Delete => self.versions.push(mark),
            _ => {}
        }
    }

    pub(crate) fn new_column(&mut self) {
        self.columns.clear();
        self.versions.clear();
    }

    /// `Some(true)`: masked, and so is everything older in the column; `Some(false)`: only
    /// this version is masked.
    /// The checks run in HBase's order (ScanDeleteTracker.isDeleted): family, family version,
    /// column, version. The order matters to what a flush keeps: a put masked by a family
    /// version marker is skipped alone, so older markers of its column survive. With
    /// NEW_VERSION_BEHAVIOR every masked cell is masked alone: an older cell of its column
    /// may have been written after the marker.
    pub(crate) fn masks(&self, c: &Cell) -> Option<bool> {
        let nvb = self.new_version_behavior;
        let after = |&(_, seq): &(i64, u64)| !nvb || c.seq_id < seq;
        let at_or_below = |ms: &[(i64, u64)]| ms.iter().any(|m| c.timestamp <= m.0 && after(m));
        let exactly_at = |ms: &[(i64, u64)]| ms.iter().any(|m| c.timestamp == m.0 && after(m));
        if at_or_below(&self.family) {
            return Some(!nvb);
        }
        if exactly_at(&self.family_versions) {
            return Some(false);
        }
        if at_or_below(&self.columns) {
            return Some(!nvb);
        }
        if exactly_at(&self.versions) {
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
        let row = cells[i].row_bytes();
        let mut masks = Masks::new(spec);
        while i < cells.len() && cells[i].row() == row {
            let q = cells[i].qualifier_bytes();
            masks.new_column();
            let (mut count, mut last, mut stopped) = (0u32, None, false);
            while i < cells.len() && cells[i].row() == row && cells[i].qualifier() == q {
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
        match masks.masks(c) {
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
