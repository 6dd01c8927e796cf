//! Random `RowFilter`s from Bigtable's whole filter grammar, over the histories' small
//! alphabets (see [`super::ops`]), kept to what both servers define alike:
//!
//! - chains and interleaves have at least two filters (the emulator refuses fewer);
//! - a chain holds at most one filter that applies a label (Bigtable allows one label per
//!   cell), and a value is never stripped after a label was applied (the emulator's strip
//!   drops the cell's labels);
//! - no filter counts cells (per-row or per-column limits and offsets) after copies of one
//!   cell that differ (an interleave whose branches label or strip): their mutual order is
//!   open, so which copies a count keeps is open too;
//! - `cells_per_row_limit` and `cells_per_row_offset` only ever see one family's cells,
//!   behind an exact family filter (the emulator walks a row's families in Go's random map
//!   order, so over two families its answer is not even stable);
//! - no `row_sample_filter` (random by definition) and no `sink` (the emulator passes it
//!   through; Basalt's sink is checked on its own);
//! - a condition's predicate applies no label.

use basalt_bigtable_proto::google::bigtable::v2::{
    column_range, row_filter, value_range, ColumnRange, RowFilter, TimestampRange, ValueRange,
};
use bytes::Bytes;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::Rng;

use super::ops::{FUTURE, MAX_VERSIONS, PLAIN, VERSIONED};

const ROW_REGEXES: &[&str] = &["r.*", "r1.*", "r[0-2]", ".*0", "s|r2", "t.*", "[^r].*", "q"];
const FAMILY_REGEXES: &[&str] = &["a", "v", "a|v", "[av]", ".*", "b"];
const QUALIFIER_REGEXES: &[&str] = &["c.*", "c0", "", "n", ".*1", "c[01]|n"];
const VALUE_REGEXES: &[&str] = &["x.*", ".*y.*", "", "z", "(?s).*", ".+"];
const BOUNDARY_QUALIFIERS: &[&[u8]] = &[b"", b"c0", b"c1", b"n"];
const BOUNDARY_VALUES: &[&[u8]] = &[b"", b"x", b"xy", b"y", b"z"];
const LABELS: &[&str] = &["la", "lb", "x-1"];
const FILTER_STARTS: &[i64] = &[0, 1000, 1500, 2000, 3000];
const FILTER_ENDS: &[i64] = &[0, 1000, 2000, 2500, 3000, 4000, FUTURE, FUTURE + 1000];

fn of(f: row_filter::Filter) -> RowFilter {
    RowFilter { filter: Some(f) }
}

pub fn chain(filters: Vec<RowFilter>) -> RowFilter {
    of(row_filter::Filter::Chain(row_filter::Chain { filters }))
}

pub fn interleave(filters: Vec<RowFilter>) -> RowFilter {
    of(row_filter::Filter::Interleave(row_filter::Interleave {
        filters,
    }))
}

pub fn family(regex: &str) -> RowFilter {
    of(row_filter::Filter::FamilyNameRegexFilter(regex.into()))
}

pub fn qualifier(regex: &str) -> RowFilter {
    of(row_filter::Filter::ColumnQualifierRegexFilter(
        Bytes::copy_from_slice(regex.as_bytes()),
    ))
}

pub fn label(l: &str) -> RowFilter {
    of(row_filter::Filter::ApplyLabelTransformer(l.into()))
}

pub fn sink() -> RowFilter {
    of(row_filter::Filter::Sink(true))
}

pub fn pass_all() -> RowFilter {
    of(row_filter::Filter::PassAllFilter(true))
}

pub fn condition(
    predicate: RowFilter,
    if_true: Option<RowFilter>,
    if_false: Option<RowFilter>,
) -> RowFilter {
    of(row_filter::Filter::Condition(Box::new(
        row_filter::Condition {
            predicate_filter: Some(Box::new(predicate)),
            true_filter: if_true.map(Box::new),
            false_filter: if_false.map(Box::new),
        },
    )))
}

/// What a filter may still do where it is generated.
#[derive(Clone, Copy, Debug)]
pub struct Ctx {
    pub label: bool,
    pub strip: bool,
    /// Whether a filter that counts cells (per-row and per-column limits and offsets) may
    /// come: not after copies of one cell that differ (an interleave whose branches label
    /// or strip), whose mutual order Bigtable leaves open, so which copies a count keeps is
    /// open too.
    pub count: bool,
}

impl Ctx {
    pub const ANY: Ctx = Ctx {
        label: true,
        strip: true,
        count: true,
    };
    /// A predicate's cells only say whether it matched, which no order changes.
    pub const PREDICATE: Ctx = Ctx {
        label: false,
        strip: true,
        count: true,
    };
}

/// A generated filter and what it may do to the cells.
#[derive(Debug)]
pub struct Generated {
    pub filter: RowFilter,
    /// It may apply a label.
    labelled: bool,
    /// It may change cells (label or strip them).
    transforms: bool,
    /// It may output copies of one cell that differ.
    distinct_copies: bool,
}

impl Generated {
    fn plain(filter: RowFilter) -> Generated {
        Generated {
            filter,
            labelled: false,
            transforms: false,
            distinct_copies: false,
        }
    }
}

/// A random filter nested at most `depth` deep.
pub fn random(rng: &mut StdRng, depth: u32, ctx: Ctx) -> Generated {
    if depth > 0 && rng.gen_bool(0.35) {
        return composite(rng, depth - 1, ctx);
    }
    leaf(rng, ctx)
}

fn composite(rng: &mut StdRng, depth: u32, ctx: Ctx) -> Generated {
    let n = rng.gen_range(2..=3);
    match rng.gen_range(0..3) {
        0 => {
            let mut ctx = ctx;
            let parts: Vec<Generated> = (0..n)
                .map(|_| {
                    let g = random(rng, depth, ctx);
                    // One label per cell, never stripped after (the emulator's strip
                    // drops labels), and no count over differing copies.
                    ctx.label &= !g.labelled;
                    ctx.strip &= !g.labelled;
                    ctx.count &= !g.distinct_copies;
                    g
                })
                .collect();
            merged(parts, false)
        }
        1 => merged((0..n).map(|_| random(rng, depth, ctx)).collect(), true),
        _ => conditional(rng, depth, ctx),
    }
}

fn conditional(rng: &mut StdRng, depth: u32, ctx: Ctx) -> Generated {
    let predicate = random(rng, depth, Ctx::PREDICATE).filter;
    let branch = |rng: &mut StdRng| rng.gen_bool(0.8).then(|| random(rng, depth, ctx));
    let (t, f) = (branch(rng), branch(rng));
    let branches: Vec<&Generated> = t.iter().chain(f.iter()).collect();
    let any = |flag: fn(&Generated) -> bool| branches.iter().any(|b| flag(b));
    Generated {
        labelled: any(|b| b.labelled),
        transforms: any(|b| b.transforms),
        distinct_copies: any(|b| b.distinct_copies),
        filter: condition(predicate, t.map(|b| b.filter), f.map(|b| b.filter)),
    }
}

/// A chain or (`interleave`) an interleave of `parts`. An interleave whose branches
/// transform cells outputs copies of a cell that differ.
fn merged(parts: Vec<Generated>, interleave: bool) -> Generated {
    let any = |flag: fn(&Generated) -> bool| parts.iter().any(flag);
    let (labelled, transforms) = (any(|p| p.labelled), any(|p| p.transforms));
    let distinct_copies = any(|p| p.distinct_copies) || (interleave && transforms);
    let filters = parts.into_iter().map(|p| p.filter).collect();
    Generated {
        filter: if interleave {
            self::interleave(filters)
        } else {
            chain(filters)
        },
        labelled,
        transforms,
        distinct_copies,
    }
}

fn leaf(rng: &mut StdRng, ctx: Ctx) -> Generated {
    use row_filter::Filter as F;
    let pick = |rng: &mut StdRng, from: &[&str]| (*from.choose(rng).unwrap()).to_owned();
    let f = match rng.gen_range(0..14) {
        0 => F::PassAllFilter(true),
        1 => F::BlockAllFilter(true),
        2 => F::RowKeyRegexFilter(pick(rng, ROW_REGEXES).into()),
        3 => F::FamilyNameRegexFilter(pick(rng, FAMILY_REGEXES)),
        4 => F::ColumnQualifierRegexFilter(pick(rng, QUALIFIER_REGEXES).into()),
        5 => F::ColumnRangeFilter(column_range_of(rng)),
        6 => F::TimestampRangeFilter(timestamp_range(rng)),
        7 => F::ValueRegexFilter(pick(rng, VALUE_REGEXES).into()),
        8 => F::ValueRangeFilter(value_range_of(rng)),
        9 if ctx.count => F::CellsPerColumnLimitFilter(rng.gen_range(1..=3)),
        10 if ctx.strip => {
            let mut g = Generated::plain(of(F::StripValueTransformer(true)));
            g.transforms = true;
            return g;
        }
        11 if ctx.label => {
            let mut g = Generated::plain(label(&pick(rng, LABELS)));
            (g.labelled, g.transforms) = (true, true);
            return g;
        }
        12 if ctx.count => return Generated::plain(per_row(rng)),
        // Bigtable: "If none are set, this RowFilter returns all cells in the input row."
        13 if rng.gen_bool(0.3) => return Generated::plain(RowFilter { filter: None }),
        _ => F::PassAllFilter(true),
    };
    Generated::plain(of(f))
}

/// A per-row limit or offset behind an exact family filter.
fn per_row(rng: &mut StdRng) -> RowFilter {
    let fam = if rng.gen_bool(0.5) { PLAIN } else { VERSIONED };
    let f = if rng.gen_bool(0.5) {
        row_filter::Filter::CellsPerRowLimitFilter(rng.gen_range(1..=4))
    } else {
        row_filter::Filter::CellsPerRowOffsetFilter(rng.gen_range(0..=3))
    };
    chain(vec![family(fam), of(f)])
}

pub fn timestamp_range(rng: &mut StdRng) -> TimestampRange {
    let start = *FILTER_STARTS.choose(rng).unwrap();
    let ends: Vec<i64> = FILTER_ENDS
        .iter()
        .copied()
        .filter(|e| *e == 0 || *e > start)
        .collect();
    TimestampRange {
        start_timestamp_micros: start,
        end_timestamp_micros: *ends.choose(rng).unwrap(),
    }
}

fn column_range_of(rng: &mut StdRng) -> ColumnRange {
    use column_range::{EndQualifier as E, StartQualifier as S};
    let q = |rng: &mut StdRng| Bytes::from_static(BOUNDARY_QUALIFIERS.choose(rng).unwrap());
    ColumnRange {
        family_name: if rng.gen_bool(0.5) { PLAIN } else { VERSIONED }.into(),
        start_qualifier: match rng.gen_range(0..3) {
            0 => None,
            1 => Some(S::StartQualifierClosed(q(rng))),
            _ => Some(S::StartQualifierOpen(q(rng))),
        },
        end_qualifier: match rng.gen_range(0..3) {
            0 => None,
            1 => Some(E::EndQualifierClosed(q(rng))),
            _ => Some(E::EndQualifierOpen(q(rng))),
        },
    }
}

fn value_range_of(rng: &mut StdRng) -> ValueRange {
    use value_range::{EndValue as E, StartValue as S};
    let v = |rng: &mut StdRng| Bytes::from_static(BOUNDARY_VALUES.choose(rng).unwrap());
    ValueRange {
        start_value: match rng.gen_range(0..3) {
            0 => None,
            1 => Some(S::StartValueClosed(v(rng))),
            _ => Some(S::StartValueOpen(v(rng))),
        },
        end_value: match rng.gen_range(0..3) {
            0 => None,
            1 => Some(E::EndValueClosed(v(rng))),
            _ => Some(E::EndValueOpen(v(rng))),
        },
    }
}

/// The versioned family's GC rule as a filter: what a Bigtable read may show at most.
fn gc_view() -> RowFilter {
    let limit = of(row_filter::Filter::CellsPerColumnLimitFilter(MAX_VERSIONS));
    interleave(vec![family(PLAIN), chain(vec![family(VERSIONED), limit])])
}

/// `f` behind the GC rule, for the emulator, which collects garbage only in a background
/// loop (and only once a family was modified): what it holds past the rule is cut off
/// before `f` sees the row, as Basalt does on every read.
pub fn after_gc(f: Option<&RowFilter>) -> RowFilter {
    match f {
        None => gc_view(),
        Some(f) => chain(vec![gc_view(), f.clone()]),
    }
}
