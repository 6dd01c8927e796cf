use std::collections::{BTreeMap, BTreeSet};

use bytes::Bytes;

use super::validate_row;
use crate::cell::Timestamp;
use crate::error::{Error, Result};
use crate::filter::Filter;
use crate::time_range::TimeRange;

/// Which families and columns a read asks for. Empty means every family; a family mapped to
/// `None` means every column of it (HBase's family map with a null qualifier set).
///
/// Families are held sorted in a vector, and each family's columns in [`Qualifiers`]: a read
/// names a family or two and a column or a few, and every Get builds and drops one, where a
/// tree map and a tree set allocated and freed a node each.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Columns(Vec<(Bytes, Option<Qualifiers>)>);

/// The columns a read names in one family, sorted and each once.
///
/// # Invariants
/// 1. A family names at most [`FEW_COLUMNS`] columns in `Few`, more in `Many`: the form
///    follows from the count alone (so equal sets are equal values), as a set never shrinks.
///    A sorted vector is the cheapest home for a few. Past a few, inserting out of order
///    into a vector moves every column after the new one, and a request naming many
///    columns in reverse order would cost time quadratic in their number.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Qualifiers {
    Few(Vec<Bytes>),
    Many(BTreeSet<Bytes>),
}

/// The most columns of a family [`Qualifiers`] holds in a vector.
pub const FEW_COLUMNS: usize = 64;

impl Qualifiers {
    /// A set of one column, in a vector with room for one.
    fn one(qualifier: Bytes) -> Qualifiers {
        Qualifiers::Few(vec![qualifier])
    }

    fn insert(&mut self, qualifier: Bytes) {
        match self {
            Qualifiers::Few(few) => match few.binary_search(&qualifier) {
                Ok(_) => {}
                Err(at) if few.len() < FEW_COLUMNS => few.insert(at, qualifier),
                Err(_) => {
                    let mut many: BTreeSet<Bytes> = few.drain(..).collect();
                    many.insert(qualifier);
                    *self = Qualifiers::Many(many);
                }
            },
            Qualifiers::Many(many) => {
                many.insert(qualifier);
            }
        }
    }

    /// How many columns are named.
    #[must_use]
    pub fn len(&self) -> usize {
        match self {
            Qualifiers::Few(few) => few.len(),
            Qualifiers::Many(many) => many.len(),
        }
    }

    /// Whether none is (never so for a family's columns in [`Columns`]).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The columns, in order.
    pub fn iter(&self) -> impl Iterator<Item = &Bytes> + '_ {
        let (few, many) = match self {
            Qualifiers::Few(few) => (Some(few.iter()), None),
            Qualifiers::Many(many) => (None, Some(many.iter())),
        };
        few.into_iter().flatten().chain(many.into_iter().flatten())
    }

    /// The columns, in order, in a vector of their own.
    #[must_use]
    pub fn to_vec(&self) -> Vec<Bytes> {
        match self {
            Qualifiers::Few(few) => few.clone(),
            Qualifiers::Many(many) => many.iter().cloned().collect(),
        }
    }

    /// Whether `qualifier` is named.
    #[must_use]
    pub fn contains(&self, qualifier: &[u8]) -> bool {
        match self {
            Qualifiers::Few(few) => few.binary_search_by(|q| q[..].cmp(qualifier)).is_ok(),
            Qualifiers::Many(many) => many.contains(qualifier),
        }
    }
}

impl Columns {
    /// The family's slot, or where it would go.
    fn find(&self, family: &[u8]) -> std::result::Result<usize, usize> {
        self.0.binary_search_by(|(f, _)| f[..].cmp(family))
    }

    /// `addFamily`: the whole family, replacing any columns named before.
    pub fn add_family(&mut self, family: impl Into<Bytes>) {
        let family = family.into();
        match self.find(&family) {
            Ok(i) => self.0[i].1 = None,
            Err(i) => self.0.insert(i, (family, None)),
        }
    }

    /// `addColumn`: one column. As in HBase, naming a column of a family that was added whole
    /// narrows the family to the columns named.
    pub fn add_column(&mut self, family: impl Into<Bytes>, qualifier: impl Into<Bytes>) {
        let family = family.into();
        let qualifier = qualifier.into();
        match self.find(&family) {
            Ok(i) => match &mut self.0[i].1 {
                Some(named) => named.insert(qualifier),
                whole @ None => *whole = Some(Qualifiers::one(qualifier)),
            },
            Err(i) => {
                // Most reads name one family and one column: room for one, not four.
                self.0.reserve_exact(1);
                self.0.insert(i, (family, Some(Qualifiers::one(qualifier))));
            }
        }
    }

    /// True when no family was named: the read covers every family.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The families named, in order.
    pub fn families(&self) -> impl Iterator<Item = &Bytes> {
        self.0.iter().map(|(f, _)| f)
    }

    /// Whether `family` is part of the read.
    #[must_use]
    pub fn includes_family(&self, family: &[u8]) -> bool {
        self.0.is_empty() || self.find(family).is_ok()
    }

    /// The columns asked for in `family`: `None` for all of them.
    #[must_use]
    pub fn qualifiers(&self, family: &[u8]) -> Option<&Qualifiers> {
        let i = self.find(family).ok()?;
        self.0[i].1.as_ref()
    }

    /// How many columns the read names, when it names its columns in every family it reads
    /// (`None` when it reads a whole family, or every family).
    #[must_use]
    pub fn named_count(&self) -> Option<usize> {
        if self.0.is_empty() {
            return None;
        }
        self.0
            .iter()
            .map(|(_, q)| q.as_ref().map(Qualifiers::len))
            .sum()
    }

    /// Whether any family is restricted to explicit columns.
    #[must_use]
    pub fn has_explicit_columns(&self) -> bool {
        self.0.iter().any(|(_, q)| q.is_some())
    }
}

/// Reads one row (`Get`). Internally a Get is a one-row Scan.
#[derive(Clone, Debug)]
pub struct Get {
    pub row: Bytes,
    pub columns: Columns,
    pub max_versions: u32,
    pub time_range: TimeRange,
    pub family_time_ranges: BTreeMap<Bytes, TimeRange>,
    pub filter: Option<Filter>,
    pub cache_blocks: bool,
}

impl Get {
    /// The newest version of every column of `row`.
    pub fn new(row: impl Into<Bytes>) -> Get {
        Get {
            row: row.into(),
            columns: Columns::default(),
            max_versions: 1,
            time_range: TimeRange::all(),
            family_time_ranges: BTreeMap::new(),
            filter: None,
            cache_blocks: true,
        }
    }

    /// Restricts the read to a family.
    #[must_use]
    pub fn add_family(mut self, family: impl Into<Bytes>) -> Get {
        self.columns.add_family(family);
        self
    }

    /// Restricts the read to a column.
    #[must_use]
    pub fn add_column(mut self, family: impl Into<Bytes>, qualifier: impl Into<Bytes>) -> Get {
        self.columns.add_column(family, qualifier);
        self
    }

    /// `readVersions(n)`.
    #[must_use]
    pub fn with_max_versions(mut self, n: u32) -> Get {
        self.max_versions = n;
        self
    }

    /// `readAllVersions()`.
    #[must_use]
    pub fn all_versions(self) -> Get {
        self.with_max_versions(u32::MAX)
    }

    /// `setTimeRange(min, max)`.
    #[must_use]
    pub fn with_time_range(mut self, tr: TimeRange) -> Get {
        self.time_range = tr;
        self
    }

    /// `setTimestamp(ts)`: exactly that version.
    ///
    /// # Errors
    /// `IllegalArgument` for a negative timestamp.
    pub fn with_timestamp(self, ts: Timestamp) -> Result<Get> {
        Ok(self.with_time_range(TimeRange::at(ts)?))
    }

    /// `setColumnFamilyTimeRange(f, min, max)`.
    #[must_use]
    pub fn with_family_time_range(mut self, family: impl Into<Bytes>, tr: TimeRange) -> Get {
        self.family_time_ranges.insert(family.into(), tr);
        self
    }

    /// `setFilter`.
    #[must_use]
    pub fn with_filter(mut self, f: Filter) -> Get {
        self.filter = Some(f);
        self
    }

    /// Client-side checks.
    ///
    /// # Errors
    /// `IllegalArgument` for a bad row or a zero version count.
    pub fn validate(&self) -> Result<()> {
        validate_row(&self.row)?;
        if self.max_versions == 0 {
            return Err(Error::illegal("Maximum versions must be positive"));
        }
        Ok(())
    }

    /// The equivalent one-row scan.
    #[must_use]
    pub fn into_scan(self) -> Scan {
        Scan {
            start_row: self.row.clone(),
            include_start_row: true,
            stop_row: self.row,
            include_stop_row: true,
            columns: self.columns,
            max_versions: self.max_versions,
            time_range: self.time_range,
            family_time_ranges: self.family_time_ranges,
            filter: self.filter,
            raw: false,
            reversed: false,
            limit: 1,
            batch: 0,
            cache_blocks: self.cache_blocks,
            is_get: true,
        }
    }
}

/// Reads a range of rows (`Scan`).
#[derive(Clone, Debug)]
pub struct Scan {
    /// First row (inclusive by default); empty means the start of the table. For a reversed
    /// scan this is the upper bound.
    pub start_row: Bytes,
    pub include_start_row: bool,
    /// Row to stop at (exclusive by default); empty means the end of the table.
    pub stop_row: Bytes,
    pub include_stop_row: bool,
    pub columns: Columns,
    pub max_versions: u32,
    pub time_range: TimeRange,
    pub family_time_ranges: BTreeMap<Bytes, TimeRange>,
    pub filter: Option<Filter>,
    /// Return delete markers and the cells they mask.
    pub raw: bool,
    pub reversed: bool,
    /// Maximum rows returned; 0 for no limit.
    pub limit: u64,
    /// Maximum cells per result; 0 for whole rows.
    pub batch: u32,
    pub cache_blocks: bool,
    /// Set when the scan stands for a Get: the read stops after the one row.
    pub is_get: bool,
}

impl Default for Scan {
    fn default() -> Self {
        Scan::new()
    }
}

impl Scan {
    /// A scan of the whole table, newest version of every column.
    #[must_use]
    pub fn new() -> Scan {
        Scan {
            start_row: Bytes::new(),
            include_start_row: true,
            stop_row: Bytes::new(),
            include_stop_row: false,
            columns: Columns::default(),
            max_versions: 1,
            time_range: TimeRange::all(),
            family_time_ranges: BTreeMap::new(),
            filter: None,
            raw: false,
            reversed: false,
            limit: 0,
            batch: 0,
            cache_blocks: true,
            is_get: false,
        }
    }

    /// `withStartRow(row, inclusive)`.
    #[must_use]
    pub fn with_start_row(mut self, row: impl Into<Bytes>, inclusive: bool) -> Scan {
        self.start_row = row.into();
        self.include_start_row = inclusive;
        self
    }

    /// `withStopRow(row, inclusive)`.
    #[must_use]
    pub fn with_stop_row(mut self, row: impl Into<Bytes>, inclusive: bool) -> Scan {
        self.stop_row = row.into();
        self.include_stop_row = inclusive;
        self
    }

    /// `setRowPrefixFilter(prefix)`: start at the prefix, stop after its last possible row.
    /// Overrides start and stop rows set before.
    #[must_use]
    pub fn with_row_prefix(mut self, prefix: impl Into<Bytes>) -> Scan {
        let prefix: Bytes = prefix.into();
        self.stop_row = prefix_stop_row(&prefix);
        self.start_row = prefix;
        self.include_start_row = true;
        self.include_stop_row = false;
        self
    }

    /// Restricts the scan to a family.
    #[must_use]
    pub fn add_family(mut self, family: impl Into<Bytes>) -> Scan {
        self.columns.add_family(family);
        self
    }

    /// Restricts the scan to a column.
    #[must_use]
    pub fn add_column(mut self, family: impl Into<Bytes>, qualifier: impl Into<Bytes>) -> Scan {
        self.columns.add_column(family, qualifier);
        self
    }

    /// `readVersions(n)`.
    #[must_use]
    pub fn with_max_versions(mut self, n: u32) -> Scan {
        self.max_versions = n;
        self
    }

    /// `readAllVersions()`.
    #[must_use]
    pub fn all_versions(self) -> Scan {
        self.with_max_versions(u32::MAX)
    }

    /// `setTimeRange`.
    #[must_use]
    pub fn with_time_range(mut self, tr: TimeRange) -> Scan {
        self.time_range = tr;
        self
    }

    /// `setColumnFamilyTimeRange`.
    #[must_use]
    pub fn with_family_time_range(mut self, family: impl Into<Bytes>, tr: TimeRange) -> Scan {
        self.family_time_ranges.insert(family.into(), tr);
        self
    }

    /// `setFilter`.
    #[must_use]
    pub fn with_filter(mut self, f: Filter) -> Scan {
        self.filter = Some(f);
        self
    }

    /// `setRaw(true)`.
    #[must_use]
    pub fn raw(mut self) -> Scan {
        self.raw = true;
        self
    }

    /// `setReversed(true)`.
    #[must_use]
    pub fn reversed(mut self) -> Scan {
        self.reversed = true;
        self
    }

    /// `setLimit(n)`: at most `n` rows.
    #[must_use]
    pub fn with_limit(mut self, n: u64) -> Scan {
        self.limit = n;
        self
    }

    /// `setBatch(n)`: at most `n` cells per result.
    #[must_use]
    pub fn with_batch(mut self, n: u32) -> Scan {
        self.batch = n;
        self
    }

    /// The time range that applies to `family`.
    #[must_use]
    pub fn time_range_for(&self, family: &[u8]) -> TimeRange {
        self.family_time_ranges
            .get(family)
            .copied()
            .unwrap_or(self.time_range)
    }

    /// Checks the scan's options against each other, as the region server does.
    ///
    /// # Errors
    /// `DoNotRetry` for a raw scan with explicit columns (SEMANTICS.md #37),
    /// `IncompatibleFilter` for a batch with a row-level filter (#53), `IllegalArgument` for a
    /// zero version count.
    pub fn validate(&self) -> Result<()> {
        // HBase's Scan.withStartRow / withStopRow (RELIABILITY.md D21).
        for (which, row) in [("startRow", &self.start_row), ("stopRow", &self.stop_row)] {
            if row.len() > crate::limits::MAX_ROW_LENGTH {
                return Err(Error::illegal(format!(
                    "{which}'s length must be less than or equal to {} to meet the criteria for a row key.",
                    crate::limits::MAX_ROW_LENGTH
                )));
            }
        }
        if self.max_versions == 0 {
            return Err(Error::illegal("Maximum versions must be positive"));
        }
        if self.raw && self.columns.has_explicit_columns() {
            return Err(Error::DoNotRetry(
                "Cannot specify any column for a raw scan".into(),
            ));
        }
        if self.batch > 0 && self.filter.as_ref().is_some_and(Filter::has_filter_row) {
            return Err(Error::IncompatibleFilter(
                "Cannot set batch on a scan using a filter that returns true for filter.hasFilterRow".into(),
            ));
        }
        Ok(())
    }
}

/// The first row after every row that starts with `prefix`: the prefix with its last byte
/// below 0xFF incremented and the rest dropped; empty (end of table) for all-0xFF prefixes.
#[must_use]
pub fn prefix_stop_row(prefix: &[u8]) -> Bytes {
    let mut stop = prefix.to_vec();
    while let Some(last) = stop.pop() {
        if last < 0xff {
            stop.push(last + 1);
            return Bytes::from(stop);
        }
    }
    Bytes::new()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_stop_rows() {
        assert_eq!(&prefix_stop_row(b"ab")[..], b"ac");
        assert_eq!(&prefix_stop_row(b"a\xff")[..], b"b");
        assert_eq!(&prefix_stop_row(b"\xff\xff")[..], b"");
        assert_eq!(&prefix_stop_row(b"")[..], b"");
    }

    #[test]
    fn add_column_narrows_a_whole_family_and_add_family_widens() {
        let mut c = Columns::default();
        c.add_family("f");
        assert!(c.qualifiers(b"f").is_none());
        c.add_column("f", "q");
        assert_eq!(c.qualifiers(b"f").map(Qualifiers::len), Some(1));
        c.add_family("f");
        assert!(c.qualifiers(b"f").is_none());
        assert!(c.includes_family(b"f") && !c.includes_family(b"g"));
    }

    #[test]
    fn columns_are_kept_sorted_and_named_once() {
        let mut c = Columns::default();
        for (f, q) in [("g", "b"), ("a", "z"), ("g", "a"), ("g", "b"), ("a", "y")] {
            c.add_column(f, q);
        }
        c.add_family("c");
        let families: Vec<&Bytes> = c.families().collect();
        assert_eq!(
            families,
            [&Bytes::from("a"), &Bytes::from("c"), &Bytes::from("g")]
        );
        let named = |f: &[u8]| -> Option<Vec<Bytes>> { c.qualifiers(f).map(Qualifiers::to_vec) };
        assert_eq!(named(b"g"), Some(vec![Bytes::from("a"), Bytes::from("b")]));
        assert_eq!(named(b"a"), Some(vec![Bytes::from("y"), Bytes::from("z")]));
        assert_eq!(named(b"c"), None);
        assert_eq!(c.named_count(), None, "family c is read whole");
        c.add_column("c", "x");
        assert_eq!(c.named_count(), Some(5));
        assert_eq!(Columns::default().named_count(), None);
        assert!(c.has_explicit_columns());
        assert!(!c.includes_family(b"b"));
    }

    #[test]
    fn many_columns_in_any_order_are_kept_sorted_and_once() {
        // Past FEW_COLUMNS the set changes form (invariant 1); orders and repeats must not
        // matter on either side of that.
        let n = FEW_COLUMNS * 3;
        let name = |i: usize| Bytes::from(format!("q{i:05}"));
        let scattered = |i: usize| (i * 37) % n;
        let orders: [Vec<usize>; 4] = [
            (0..n).collect(),
            (0..n).rev().collect(),
            (0..n).flat_map(|i| [scattered(i), scattered(i)]).collect(),
            (0..n).map(scattered).chain(0..n).collect(),
        ];
        let mut built = Vec::new();
        for order in orders {
            let mut c = Columns::default();
            for (k, &i) in order.iter().enumerate() {
                c.add_column("f", name(i));
                let distinct = order[..=k].iter().collect::<BTreeSet<_>>().len();
                assert_eq!(c.qualifiers(b"f").map(Qualifiers::len), Some(distinct));
                let now: Vec<&Bytes> = c
                    .qualifiers(b"f")
                    .into_iter()
                    .flat_map(Qualifiers::iter)
                    .collect();
                assert!(now.windows(2).all(|w| w[0] < w[1]), "sorted, each once");
                let few = matches!(c.qualifiers(b"f"), Some(Qualifiers::Few(_)));
                assert_eq!(
                    few,
                    distinct <= FEW_COLUMNS,
                    "invariant 1 at {distinct} columns"
                );
            }
            let q = c.qualifiers(b"f").map(Qualifiers::to_vec);
            assert_eq!(q, Some((0..n).map(name).collect()));
            let set = c.qualifiers(b"f").expect("the family names columns");
            assert!(set.contains(b"q00000") && set.contains(&name(n - 1)));
            assert!(!set.contains(b"q") && !set.contains(&name(n)));
            assert_eq!(c.named_count(), Some(n));
            built.push(c);
        }
        assert!(
            built.windows(2).all(|w| w[0] == w[1]),
            "the same columns, the same value"
        );
    }

    #[test]
    fn raw_scan_with_columns_is_refused() {
        let e = Scan::new()
            .raw()
            .add_column("f", "q")
            .validate()
            .unwrap_err();
        assert_eq!(
            e.exception_name(),
            "org.apache.hadoop.hbase.DoNotRetryIOException"
        );
        assert!(Scan::new().raw().add_family("f").validate().is_ok());
    }
}
