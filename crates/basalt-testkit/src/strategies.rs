//! Proptest strategies: random operation sequences over a small alphabet of rows, families,
//! qualifiers and timestamps, so that versions, overwrites and deletes collide often.

use basalt_model::filter::{Comparator, Filter};
use basalt_model::ops::{Append, CompareOp, Delete, Get, Increment, Put, Scan};
use basalt_model::TimeRange;
use bytes::Bytes;
use proptest::prelude::*;

/// Families of the model table: `f` keeps 3 versions, `g` keeps 1, `h` keeps 2 and expires
/// cells after 3 s but always keeps the newest version (MIN_VERSIONS 1).
pub const FAMILIES: [&str; 3] = ["f", "g", "h"];
const ROWS: [&str; 5] = ["r0", "r1", "r2", "r3", "r4"];
const QUALS: [&str; 3] = ["", "a", "b"];

/// One step of a generated history.
#[derive(Clone, Debug)]
pub enum Op {
    Put(Put),
    Delete(Delete),
    Increment(Increment),
    Append(Append),
    /// Put `then` when `family:qualifier` holds `expected` (`None`: is absent).
    CheckAndPut {
        row: Bytes,
        family: Bytes,
        qualifier: Bytes,
        expected: Option<Bytes>,
        then: Put,
    },
    Get(Get),
    Scan(Scan),
    Flush,
    Compact,
    MajorCompact,
    /// A clean close (which flushes every region) and an open.
    Reopen,
    /// The process ends without closing (nothing flushed), and the database opens again
    /// from its files and WAL.
    Crash,
    /// Advance the clock by this many milliseconds.
    Tick(i64),
}

fn row() -> impl Strategy<Value = Bytes> {
    prop::sample::select(&ROWS[..]).prop_map(|s: &str| Bytes::from_static(s.as_bytes()))
}

fn family() -> impl Strategy<Value = Bytes> {
    prop::sample::select(&FAMILIES[..]).prop_map(|s: &str| Bytes::from_static(s.as_bytes()))
}

fn qual() -> impl Strategy<Value = Bytes> {
    prop::sample::select(&QUALS[..]).prop_map(|s: &str| Bytes::from_static(s.as_bytes()))
}

/// An explicit small timestamp, or `None` for the server's clock.
fn ts() -> impl Strategy<Value = Option<i64>> {
    prop_oneof![1 => Just(None), 3 => (1i64..=6).prop_map(Some)]
}

fn value() -> impl Strategy<Value = Bytes> {
    prop::sample::select(&["x", "y", "z", ""][..])
        .prop_map(|s: &str| Bytes::from_static(s.as_bytes()))
}

fn put() -> impl Strategy<Value = Put> {
    (
        row(),
        prop::collection::vec((family(), qual(), ts(), value()), 1..4),
    )
        .prop_map(|(r, cells)| {
            cells
                .into_iter()
                .fold(Put::new(r), |p, (f, q, ts, v)| match ts {
                    Some(ts) => p.add_at(f, q, ts, v),
                    None => p.add(f, q, v),
                })
        })
}

fn delete() -> impl Strategy<Value = Delete> {
    let one = (0u8..5, family(), qual(), ts());
    (row(), ts(), prop::collection::vec(one, 0..3)).prop_map(|(r, row_ts, parts)| {
        let mut d = row_ts.map_or_else(|| Delete::new(r.clone()), |t| Delete::at(r.clone(), t));
        for (kind, f, q, t) in parts {
            d = match (kind, t) {
                (0, None) => d.add_column(f, q),
                (0, Some(t)) => d.add_column_at(f, q, t),
                (1, None) => d.add_columns(f, q),
                (1, Some(t)) => d.add_columns_at(f, q, t),
                (2, None) => d.add_family(f),
                (2, Some(t)) => d.add_family_at(f, t),
                (_, t) => d.add_family_version(f, t.unwrap_or(3)),
            };
        }
        d
    })
}

fn time_range() -> impl Strategy<Value = TimeRange> {
    prop_oneof![
        3 => Just(TimeRange::all()),
        1 => (0i64..=7, 1i64..=8).prop_map(|(a, n)| TimeRange::new(a, a + n).unwrap()),
    ]
}

fn read_filter() -> impl Strategy<Value = Option<Filter>> {
    prop_oneof![
        4 => Just(None),
        1 => value().prop_map(|v| Some(Filter::value(CompareOp::Equal, Comparator::Binary(v)))),
        1 => prop::sample::select(&["r1", "r", "r3"][..]).prop_map(|p| Some(Filter::prefix(p))),
        // Rows per region: over several regions a scan returns up to n per region (#59).
        1 => (1u64..4).prop_map(|n| Some(Filter::page(n))),
    ]
}

fn get() -> impl Strategy<Value = Get> {
    (
        row(),
        prop::option::of((family(), prop::option::of(qual()))),
        1u32..4,
        time_range(),
        read_filter(),
    )
        .prop_map(|(r, cols, versions, tr, filter)| {
            let mut g = Get::new(r).with_max_versions(versions).with_time_range(tr);
            match cols {
                Some((f, Some(q))) => g = g.add_column(f, q),
                Some((f, None)) => g = g.add_family(f),
                None => {}
            }
            if let Some(f) = filter {
                g = g.with_filter(f);
            }
            g
        })
}

fn scan() -> impl Strategy<Value = Scan> {
    let bounds = (
        prop::option::of((row(), any::<bool>())),
        prop::option::of((row(), any::<bool>())),
    );
    (
        bounds,
        any::<bool>(),
        any::<bool>(),
        1u32..4,
        time_range(),
        0u64..4,
        read_filter(),
        prop::option::of(family()),
    )
        .prop_map(
            |((start, stop), reversed, raw, versions, tr, limit, filter, fam)| {
                let mut s = Scan::new()
                    .with_max_versions(versions)
                    .with_time_range(tr)
                    .with_limit(limit);
                if let Some((r, incl)) = start {
                    s = s.with_start_row(r, incl);
                }
                if let Some((r, incl)) = stop {
                    s = s.with_stop_row(r, incl);
                }
                if reversed {
                    s = s.reversed();
                }
                if raw {
                    s = s.raw();
                }
                if let Some(f) = fam {
                    s = s.add_family(f);
                }
                if let Some(f) = filter {
                    s = s.with_filter(f);
                }
                s
            },
        )
}

/// Any operation, weighted towards writes and reads.
pub fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        12 => put().prop_map(Op::Put),
        6 => delete().prop_map(Op::Delete),
        2 => (row(), -3i64..4).prop_map(|(r, n)| Op::Increment(Increment::new(r).add("f", "n", n))),
        2 => (row(), family(), value()).prop_map(|(r, f, v)| Op::Append(Append::new(r).add(f, "s", v))),
        2 => (row(), family(), qual(), prop::option::of(value()), value()).prop_map(|(r, f, q, expected, v)| {
            let then = Put::new(r.clone()).add(f.clone(), q.clone(), v);
            Op::CheckAndPut { row: r, family: f, qualifier: q, expected, then }
        }),
        8 => get().prop_map(Op::Get),
        6 => scan().prop_map(Op::Scan),
        2 => Just(Op::Flush),
        1 => Just(Op::Compact),
        1 => Just(Op::MajorCompact),
        1 => Just(Op::Reopen),
        1 => Just(Op::Crash),
        2 => (1i64..3000).prop_map(Op::Tick),
    ]
}
