//! Bigtable's `RowFilter`, evaluated on one row's cells the way Bigtable defines it.
//!
//! A filter maps a row (its cells in Bigtable's order: family, qualifier, newest timestamp
//! first) to the cells that pass. `chain` feeds each filter's output to the next;
//! `interleave` runs every branch on the whole row and merges the outputs in order, keeping
//! duplicates; `condition` tests a predicate on the whole row and applies one branch;
//! `sink` sends the cells that reach it straight to the output, beside what the rest of the
//! filter passes. Filters are checked once ([`Compiled::new`]) so a bad regex or label is an
//! INVALID_ARGUMENT before any row is read.

use std::sync::atomic::{AtomicU64, Ordering};

use basalt_bigtable_proto::google::bigtable::v2::{
    column_range, row_filter, value_range, ColumnRange, RowFilter, TimestampRange, ValueRange,
};
use bytes::Bytes;
use regex::bytes::Regex;
use tonic::Status;

/// One cell as a Bigtable read sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BtCell {
    pub family: Bytes,
    pub qualifier: Bytes,
    pub timestamp_micros: i64,
    pub value: Bytes,
    pub labels: Vec<String>,
}

/// The longest label Bigtable accepts.
const MAX_LABEL_LEN: usize = 15;

/// A filter, checked and with its regexes compiled.
#[derive(Debug)]
pub enum Compiled {
    Chain(Vec<Compiled>),
    Interleave(Vec<Compiled>),
    Condition {
        predicate: Box<Compiled>,
        true_filter: Option<Box<Compiled>>,
        false_filter: Option<Box<Compiled>>,
    },
    Sink,
    PassAll,
    BlockAll,
    RowKeyRegex(Regex),
    RowSample(f64),
    FamilyRegex(Regex),
    QualifierRegex(Regex),
    ColumnRange(ColumnRange),
    TimestampRange(TimestampRange),
    ValueRegex(Regex),
    ValueRange(ValueRange),
    CellsPerRowOffset(usize),
    CellsPerRowLimit(usize),
    CellsPerColumnLimit(usize),
    StripValue,
    ApplyLabel(String),
}

fn invalid(msg: impl Into<String>) -> Status {
    Status::invalid_argument(msg.into())
}

/// RE2's syntax as Bigtable uses it, on bytes: the pattern must match the whole input,
/// `.` matches any byte but a newline, and `\C` any byte.
fn full_match(pattern: &[u8], what: &str) -> Result<Regex, Status> {
    let text = byte_pattern(pattern);
    Regex::new(&format!("(?-u)^(?:{text})$"))
        .or_else(|_| Regex::new(&format!("^(?:{text})$")))
        .map_err(|e| invalid(format!("Error in field '{what}' : {e}")))
}

/// An RE2 pattern's bytes as a pattern of `regex::bytes` in byte mode: a byte outside
/// ASCII, escaped or not, stands for itself (`\xNN`), so a literal of any bytes (what the
/// clients' literal value filters send) matches exactly those bytes; `\C` is any byte.
fn byte_pattern(pattern: &[u8]) -> String {
    let mut out = String::with_capacity(pattern.len() + 8);
    let mut bytes = pattern.iter().copied();
    while let Some(b) = bytes.next() {
        match b {
            b'\\' => match bytes.next() {
                Some(b'C') => out.push_str("(?s:.)"),
                Some(n) if !n.is_ascii() => out.push_str(&format!("\\x{n:02X}")),
                Some(n) => {
                    out.push('\\');
                    out.push(char::from(n));
                }
                None => out.push('\\'),
            },
            b if b.is_ascii() => out.push(char::from(b)),
            b => out.push_str(&format!("\\x{b:02X}")),
        }
    }
    out
}

fn count(n: i32, what: &str) -> Result<usize, Status> {
    usize::try_from(n).map_err(|_| invalid(format!("{what} must be non-negative, got {n}")))
}

impl Compiled {
    /// Checks `f` and compiles it. `in_predicate` refuses a sink: Bigtable allows none in
    /// a condition's predicate, true or false filter, nor in CheckAndMutateRow's predicate.
    pub fn new(f: &RowFilter, in_predicate: bool) -> Result<Compiled, Status> {
        use row_filter::Filter as F;
        // data.proto: "If none are set, this RowFilter returns all cells in the input row."
        let Some(filter) = &f.filter else {
            return Ok(Compiled::PassAll);
        };
        Ok(match filter {
            F::Chain(c) => Compiled::Chain(Self::all(&c.filters, in_predicate)?),
            F::Interleave(i) => Compiled::Interleave(Self::all(&i.filters, in_predicate)?),
            F::Condition(c) => {
                let predicate = c
                    .predicate_filter
                    .as_deref()
                    .ok_or_else(|| invalid("a condition filter needs a predicate_filter"))?;
                let branch = |b: &Option<Box<RowFilter>>| {
                    b.as_deref()
                        .map(|b| Self::new(b, true).map(Box::new))
                        .transpose()
                };
                Compiled::Condition {
                    predicate: Box::new(Self::new(predicate, true)?),
                    true_filter: branch(&c.true_filter)?,
                    false_filter: branch(&c.false_filter)?,
                }
            }
            F::Sink(true) if in_predicate => {
                return Err(invalid(
                    "a sink filter cannot be used in a condition or a predicate",
                ))
            }
            F::Sink(true) => Compiled::Sink,
            F::PassAllFilter(true) => Compiled::PassAll,
            F::BlockAllFilter(true) => Compiled::BlockAll,
            F::Sink(false) | F::PassAllFilter(false) | F::BlockAllFilter(false) => {
                return Err(invalid(
                    "sink, pass_all_filter and block_all_filter may only be set to true",
                ))
            }
            F::RowKeyRegexFilter(r) => {
                Compiled::RowKeyRegex(full_match(r, "row_key_regex_filter")?)
            }
            F::RowSampleFilter(p) if *p > 0.0 && *p < 1.0 => Compiled::RowSample(*p),
            F::RowSampleFilter(p) => {
                return Err(invalid(format!(
                    "row_sample_filter must be between 0 and 1 exclusive, got {p}"
                )))
            }
            F::FamilyNameRegexFilter(r) => {
                if r.contains(':') {
                    return Err(invalid("family_name_regex_filter cannot contain ':'"));
                }
                Compiled::FamilyRegex(full_match(r.as_bytes(), "family_name_regex_filter")?)
            }
            F::ColumnQualifierRegexFilter(r) => {
                Compiled::QualifierRegex(full_match(r, "column_qualifier_regex_filter")?)
            }
            F::ColumnRangeFilter(r) => Compiled::ColumnRange(r.clone()),
            F::TimestampRangeFilter(r) => Compiled::TimestampRange(check_timestamp_range(*r)?),
            F::ValueRegexFilter(r) => Compiled::ValueRegex(full_match(r, "value_regex_filter")?),
            F::ValueRangeFilter(r) => Compiled::ValueRange(r.clone()),
            F::CellsPerRowOffsetFilter(n) => {
                Compiled::CellsPerRowOffset(count(*n, "cells_per_row_offset_filter")?)
            }
            F::CellsPerRowLimitFilter(n) => {
                Compiled::CellsPerRowLimit(count(*n, "cells_per_row_limit_filter")?)
            }
            F::CellsPerColumnLimitFilter(n) => {
                Compiled::CellsPerColumnLimit(count(*n, "cells_per_column_limit_filter")?)
            }
            F::StripValueTransformer(true) => Compiled::StripValue,
            F::StripValueTransformer(false) => {
                return Err(invalid("strip_value_transformer may only be set to true"))
            }
            F::ApplyLabelTransformer(l) => Compiled::ApplyLabel(check_label(l)?),
        })
    }

    fn all(filters: &[RowFilter], in_predicate: bool) -> Result<Vec<Compiled>, Status> {
        filters.iter().map(|f| Self::new(f, in_predicate)).collect()
    }

    /// The cells of row `key` that pass, in Bigtable's order.
    pub fn apply(&self, key: &[u8], cells: Vec<BtCell>, sampler: &Sampler) -> Vec<BtCell> {
        let mut sunk = Vec::new();
        let out = self.eval(key, cells, sampler, &mut sunk);
        if sunk.is_empty() {
            out
        } else {
            sunk.extend(out);
            sort_cells(&mut sunk);
            sunk
        }
    }

    fn eval(
        &self,
        key: &[u8],
        cells: Vec<BtCell>,
        sampler: &Sampler,
        sunk: &mut Vec<BtCell>,
    ) -> Vec<BtCell> {
        match self {
            Compiled::Chain(fs) => {
                let mut cells = cells;
                for f in fs {
                    if cells.is_empty() {
                        break;
                    }
                    cells = f.eval(key, cells, sampler, sunk);
                }
                cells
            }
            Compiled::Interleave(fs) => {
                let mut out = Vec::new();
                for f in fs {
                    out.extend(f.eval(key, cells.clone(), sampler, sunk));
                }
                sort_cells(&mut out);
                out
            }
            Compiled::Condition {
                predicate,
                true_filter,
                false_filter,
            } => {
                let matched = !predicate.eval(key, cells.clone(), sampler, sunk).is_empty();
                let branch = if matched { true_filter } else { false_filter };
                match branch {
                    Some(f) => f.eval(key, cells, sampler, sunk),
                    None => Vec::new(),
                }
            }
            Compiled::Sink => {
                sunk.extend(cells);
                Vec::new()
            }
            _ => self.eval_simple(key, cells, sampler),
        }
    }

    /// The filters that look at one row or cell at a time.
    fn eval_simple(&self, key: &[u8], mut cells: Vec<BtCell>, sampler: &Sampler) -> Vec<BtCell> {
        match self {
            Compiled::PassAll => cells,
            Compiled::BlockAll => Vec::new(),
            Compiled::RowKeyRegex(r) => keep_if(cells, r.is_match(key)),
            Compiled::RowSample(p) => keep_if(cells, sampler.sample(*p)),
            Compiled::FamilyRegex(r) => retain(cells, |c| r.is_match(&c.family)),
            Compiled::QualifierRegex(r) => retain(cells, |c| r.is_match(&c.qualifier)),
            Compiled::ColumnRange(r) => retain(cells, |c| in_column_range(r, c)),
            Compiled::TimestampRange(r) => retain(cells, |c| in_timestamp_range(r, c)),
            Compiled::ValueRegex(r) => retain(cells, |c| r.is_match(&c.value)),
            Compiled::ValueRange(r) => retain(cells, |c| in_value_range(r, &c.value)),
            Compiled::CellsPerRowOffset(n) => cells.split_off((*n).min(cells.len())),
            Compiled::CellsPerRowLimit(n) => {
                cells.truncate(*n);
                cells
            }
            Compiled::CellsPerColumnLimit(n) => per_column_limit(cells, *n),
            Compiled::StripValue => {
                cells.iter_mut().for_each(|c| c.value = Bytes::new());
                cells
            }
            Compiled::ApplyLabel(l) => {
                cells.iter_mut().for_each(|c| c.labels.push(l.clone()));
                cells
            }
            Compiled::Chain(_) | Compiled::Interleave(_) | Compiled::Condition { .. } => {
                unreachable!("composite filters are evaluated by eval")
            }
            Compiled::Sink => unreachable!("sink is evaluated by eval"),
        }
    }
}

fn keep_if(cells: Vec<BtCell>, keep: bool) -> Vec<BtCell> {
    if keep {
        cells
    } else {
        Vec::new()
    }
}

fn retain(mut cells: Vec<BtCell>, keep: impl Fn(&BtCell) -> bool) -> Vec<BtCell> {
    cells.retain(keep);
    cells
}

/// Bigtable's order of a row's cells: family, qualifier, newest first. The sort is stable,
/// so duplicates an interleave made keep their branches' order.
pub fn sort_cells(cells: &mut [BtCell]) {
    cells.sort_by(|a, b| {
        (&a.family, &a.qualifier)
            .cmp(&(&b.family, &b.qualifier))
            .then(b.timestamp_micros.cmp(&a.timestamp_micros))
    });
}

fn per_column_limit(cells: Vec<BtCell>, n: usize) -> Vec<BtCell> {
    let mut out = Vec::with_capacity(cells.len());
    let mut column: Option<(Bytes, Bytes)> = None;
    let mut seen = 0;
    for c in cells {
        if column.as_ref() != Some(&(c.family.clone(), c.qualifier.clone())) {
            column = Some((c.family.clone(), c.qualifier.clone()));
            seen = 0;
        }
        seen += 1;
        if seen <= n {
            out.push(c);
        }
    }
    out
}

fn check_label(l: &str) -> Result<String, Status> {
    let ok = !l.is_empty()
        && l.len() <= MAX_LABEL_LEN
        && l.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    if ok {
        Ok(l.to_owned())
    } else {
        Err(invalid(format!(
            "apply_label_transformer: a label is 1 to {MAX_LABEL_LEN} characters of [a-z0-9-], got {l:?}"
        )))
    }
}

fn check_timestamp_range(r: TimestampRange) -> Result<TimestampRange, Status> {
    let (start, end) = (r.start_timestamp_micros, r.end_timestamp_micros);
    if start < 0 || end < 0 {
        return Err(invalid(
            "timestamp_range_filter: timestamps must not be negative",
        ));
    }
    if end != 0 && end < start {
        return Err(invalid(format!(
            "timestamp_range_filter: end {end} is before start {start}"
        )));
    }
    Ok(r)
}

/// Whether `c` is in `[start, end)` (an end of 0 is unbounded).
pub fn in_timestamp_range(r: &TimestampRange, c: &BtCell) -> bool {
    c.timestamp_micros >= r.start_timestamp_micros
        && (r.end_timestamp_micros == 0 || c.timestamp_micros < r.end_timestamp_micros)
}

fn in_column_range(r: &ColumnRange, c: &BtCell) -> bool {
    use column_range::{EndQualifier as E, StartQualifier as S};
    if r.family_name.as_bytes() != &c.family[..] {
        return false;
    }
    let q = &c.qualifier[..];
    let start = match &r.start_qualifier {
        None => true,
        Some(S::StartQualifierClosed(s)) => q >= &s[..],
        Some(S::StartQualifierOpen(s)) => q > &s[..],
    };
    let end = match &r.end_qualifier {
        None => true,
        Some(E::EndQualifierClosed(e)) => q <= &e[..],
        Some(E::EndQualifierOpen(e)) => q < &e[..],
    };
    start && end
}

fn in_value_range(r: &ValueRange, v: &[u8]) -> bool {
    use value_range::{EndValue as E, StartValue as S};
    let start = match &r.start_value {
        None => true,
        Some(S::StartValueClosed(s)) => v >= &s[..],
        Some(S::StartValueOpen(s)) => v > &s[..],
    };
    let end = match &r.end_value {
        None => true,
        Some(E::EndValueClosed(e)) => v <= &e[..],
        Some(E::EndValueOpen(e)) => v < &e[..],
    };
    start && end
}

/// The source of `row_sample_filter`'s coin flips: a small xorshift generator, seeded per
/// request, so sampling costs no lock and no system call per row.
#[derive(Debug)]
pub struct Sampler(AtomicU64);

impl Sampler {
    #[must_use]
    pub fn new(seed: u64) -> Sampler {
        Sampler(AtomicU64::new(seed | 1))
    }

    /// A sampler seeded by the clock's nanoseconds: each request samples differently.
    #[must_use]
    pub fn seeded_by_clock() -> Sampler {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        Sampler::new(u64::from(nanos) ^ 0x9E37_79B9_7F4A_7C15)
    }

    fn sample(&self, p: f64) -> bool {
        let mut x = self.0.load(Ordering::Relaxed);
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0.store(x, Ordering::Relaxed);
        #[allow(clippy::cast_precision_loss)]
        let u = (x >> 11) as f64 / (1u64 << 53) as f64;
        u < p
    }
}

#[cfg(test)]
mod tests;
