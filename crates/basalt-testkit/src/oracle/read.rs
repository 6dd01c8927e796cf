//! Reads, by definition (SEMANTICS.md §A–§G): a put is visible unless a delete marker the
//! query counts masks it; versions are counted newest first within the time range; raw reads
//! return markers and masked cells.

use basalt_model::filter::{Comparator, Filter};
use basalt_model::ops::{CompareOp, Scan};
use basalt_model::{Cell, ColumnFamilyDescriptor, KeepDeletedCells, RowResult, TimeRange};
use bytes::Bytes;

use super::retain::Masks;
use super::Oracle;

/// The filters the oracle models.
#[derive(Clone, Debug, Default)]
pub struct Query {
    /// `ValueFilter(=, 'binary:v')`.
    pub value_equals: Option<Bytes>,
    /// `PrefixFilter('p')`.
    pub row_prefix: Option<Bytes>,
    /// `PageFilter(n)`: at most n rows (that have cells) per region; each call of
    /// [`scan`] is one region's.
    pub page_size: Option<u64>,
}

impl Query {
    /// The oracle's reading of a scan's filter.
    ///
    /// # Panics
    /// For a filter the oracle does not model.
    #[must_use]
    pub fn from_filter(f: Option<&Filter>) -> Query {
        match f {
            None => Query::default(),
            Some(Filter::Value {
                op: CompareOp::Equal,
                cmp: Comparator::Binary(v),
            }) => Query {
                value_equals: Some(v.clone()),
                ..Query::default()
            },
            Some(Filter::Prefix { prefix, .. }) => Query {
                row_prefix: Some(prefix.clone()),
                ..Query::default()
            },
            Some(Filter::Page { page_size, .. }) => Query {
                page_size: Some(*page_size),
                ..Query::default()
            },
            Some(other) => panic!("the oracle does not model {other:?}"),
        }
    }
}

pub(super) fn scan(o: &Oracle, scan: &Scan, now: i64) -> Vec<RowResult> {
    let q = Query::from_filter(scan.filter.as_ref());
    let mut rows: Vec<Bytes> = o
        .rows()
        .into_iter()
        .filter(|r| in_bounds(scan, r))
        .collect();
    if scan.reversed {
        rows.reverse();
    }
    let mut out = Vec::new();
    for row in rows {
        if q.row_prefix.as_ref().is_some_and(|p| !row.starts_with(p)) {
            continue;
        }
        let mut cells = Vec::new();
        for (name, fam) in &o.families {
            if !scan.columns.includes_family(name) {
                continue;
            }
            let physical = o.physical(fam, &row);
            cells.extend(read_family(&physical, &fam.spec, scan, &q, now));
        }
        if !cells.is_empty() {
            out.push(RowResult::new(row, cells));
        }
        if scan.limit > 0 && out.len() as u64 >= scan.limit {
            break;
        }
        if q.page_size.is_some_and(|n| out.len() as u64 >= n) {
            break;
        }
    }
    out
}

fn in_bounds(scan: &Scan, row: &Bytes) -> bool {
    let (lo, lo_incl, hi, hi_incl) = if scan.reversed {
        (
            &scan.stop_row,
            scan.include_stop_row,
            &scan.start_row,
            scan.include_start_row,
        )
    } else {
        (
            &scan.start_row,
            scan.include_start_row,
            &scan.stop_row,
            scan.include_stop_row,
        )
    };
    let above = lo.is_empty() || row > lo || (row == lo && lo_incl);
    let below = hi.is_empty() || row < hi || (row == hi && hi_incl);
    above && below
}

/// Version-counting limits of one read of one family.
struct Limits {
    raw: bool,
    has_filter: bool,
    tr: TimeRange,
    oldest: i64,
    min_versions: u32,
    result_max: u32,
    tracker_max: u32,
    now: i64,
}

/// The cells of one family of one row that a scan returns.
fn read_family(
    cells: &[Cell],
    spec: &ColumnFamilyDescriptor,
    scan: &Scan,
    q: &Query,
    now: i64,
) -> Vec<Cell> {
    let tr = scan.time_range_for(&spec.name);
    let result_max = if scan.raw {
        scan.max_versions
    } else {
        scan.max_versions.min(spec.max_versions)
    };
    // With any filter, versions are counted against the family's VERSIONS first and then
    // again among the cells the filter keeps (UserScanQueryMatcher.mergeFilterResponse).
    let has_filter = scan.filter.is_some();
    let tracker_max = match (has_filter, scan.raw) {
        (true, true) => u32::MAX,
        (true, false) => spec.max_versions,
        (false, _) => result_max,
    };
    let limits = Limits {
        raw: scan.raw,
        has_filter,
        tr,
        oldest: spec.ttl_ms().map_or(i64::MIN, |ttl| now - ttl),
        min_versions: spec.min_versions,
        result_max,
        tracker_max,
        now,
    };
    let wanted = scan.columns.qualifiers(&spec.name);
    let counts = |c: &&Cell| !scan.raw && c.cell_type.is_delete() && marker_counts(spec, tr, c);
    let mut family_masks = Masks::new(spec);
    cells
        .iter()
        .filter(counts)
        .filter(|c| c.cell_type.is_family_delete())
        .for_each(|m| family_masks.add(m));
    let mut out = Vec::new();
    let mut i = 0;
    while i < cells.len() {
        let start = i;
        while i < cells.len() && cells[i].qualifier() == cells[start].qualifier() {
            i += 1;
        }
        let column = &cells[start..i];
        if wanted.is_some_and(|w| !w.contains(column[0].qualifier())) {
            continue;
        }
        let mut masks = Masks::new(spec);
        column
            .iter()
            .filter(counts)
            .filter(|c| !c.cell_type.is_family_delete())
            .for_each(|m| masks.add(m));
        read_column(column, &limits, q, &family_masks, &masks, &mut out);
    }
    out
}

/// The versions of one column a read returns, newest first.
fn read_column(
    column: &[Cell],
    l: &Limits,
    q: &Query,
    family_masks: &Masks,
    masks: &Masks,
    out: &mut Vec<Cell>,
) {
    let (mut count, mut kept, mut last) = (0u32, 0u32, None);
    for c in column {
        if !l.raw && c.cell_type.is_delete() {
            continue;
        }
        if l.min_versions == 0 && c.timestamp < l.oldest {
            break;
        }
        if c.ttl_ms
            .is_some_and(|ttl| c.timestamp + i64::try_from(ttl).unwrap() < l.now)
        {
            continue;
        }
        if !l.raw && (family_masks.masks(c).is_some() || masks.masks(c).is_some()) {
            continue;
        }
        if c.timestamp >= l.tr.max() {
            continue;
        }
        if c.timestamp < l.tr.min() {
            break;
        }
        if last == Some((c.timestamp, c.cell_type)) {
            continue;
        }
        if !c.cell_type.is_delete() {
            count += 1;
        }
        if count > l.tracker_max || !(count <= l.min_versions || c.timestamp >= l.oldest) {
            break;
        }
        last = Some((c.timestamp, c.cell_type));
        if q.value_equals.as_ref().is_some_and(|v| c.value() != v) {
            continue;
        }
        if l.has_filter {
            kept += 1;
            if kept > l.result_max {
                break;
            }
        }
        out.push(c.clone());
    }
}

/// Whether a marker takes part in a non-raw read with time range `tr`: with
/// KEEP_DELETED_CELLS only markers inside the range, otherwise any at or after its start.
fn marker_counts(spec: &ColumnFamilyDescriptor, tr: TimeRange, m: &Cell) -> bool {
    if spec.keep_deleted_cells == KeepDeletedCells::False {
        tr.within_or_after(m.timestamp)
    } else {
        tr.contains(m.timestamp)
    }
}
