//! Random data-API operations over small alphabets (rows, qualifiers, values and timestamps
//! collide often), sent to a server and answered as an [`Answer`].
//!
//! A table has two families: [`PLAIN`] without a GC rule and [`VERSIONED`] keeping
//! [`MAX_VERSIONS`]. Counter columns ([`COUNTER`]) only ever hold 8-byte values, so an
//! increment of them always succeeds; text columns get appends, and now and then a lone
//! increment that fails when the column holds text (a lone rule, since the emulator keeps
//! the rules before a failed one). A request meant to fail fails at its first mutation
//! (the emulator applies the mutations before a failed one). MutateRows names each row once
//! (Bigtable does not order the entries of one request). A request writes a column at most
//! once at the server's time (deviation 10 of the test).

use basalt_bigtable_proto::google::bigtable::v2::{
    mutate_rows_request, mutation, read_modify_write_rule, row_range, CheckAndMutateRowRequest,
    MutateRowRequest, MutateRowsRequest, Mutation, ReadModifyWriteRowRequest, ReadModifyWriteRule,
    ReadRowsRequest, RowRange, RowSet, TimestampRange,
};
use bytes::Bytes;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::Rng;
use tonic::Code;

use super::answer::Answer;
use super::filters::{self, Ctx};

pub const PLAIN: &str = "a";
pub const VERSIONED: &str = "v";
pub const MAX_VERSIONS: i32 = 2;
/// 2100-01-01 in microseconds: an explicit timestamp later than any server time.
pub const FUTURE: i64 = 4_102_444_800_000_000;
pub const COUNTER: &[u8] = b"n";
const ROWS: &[&[u8]] = &[b"r0", b"r1", b"r10", b"r2", b"s", b"t\xff"];
const MISSING_ROW: &[u8] = b"q";
const TEXT_QUALIFIERS: &[&[u8]] = &[b"", b"c0", b"c1"];
const VALUES: &[&[u8]] = &[b"", b"x", b"xy", b"y\n", b"z"];
const STAMPS: &[i64] = &[0, 1000, 2000, 3000, FUTURE];
const DELETE_STARTS: &[i64] = &[0, 1000, 2000, 3000];
const DELETE_ENDS: &[i64] = &[0, 1000, 2000, 3000, 4000, FUTURE, FUTURE + 1000];
const RANGE_KEYS: &[&[u8]] = &[b"r", b"r1", b"r10", b"r2", b"s", b"t", b"t\xff"];

/// One request of a history.
#[derive(Clone, Debug)]
pub enum Op {
    MutateRow(MutateRowRequest),
    MutateRows(MutateRowsRequest),
    CheckAndMutate(CheckAndMutateRowRequest),
    ReadModifyWrite(ReadModifyWriteRowRequest),
    ReadRows(ReadRowsRequest),
}

/// How the two answers to an operation are judged.
#[derive(Clone, Debug)]
pub enum Judge {
    /// Both must answer the same.
    Same,
    /// The emulator is known to answer otherwise than Bigtable (see the test's list of
    /// deviations): Basalt must answer this. The request changes nothing in the emulator
    /// (in MutateRows, but its valid entries, which must succeed on both).
    Bigtable(Answer),
    /// A lone increment of a text column: both answer the same, or both fail, the
    /// emulator with UNKNOWN (a plain Go error) and Basalt with FAILED_PRECONDITION.
    Increment,
}

#[derive(Clone, Debug)]
pub struct Planned {
    pub op: Op,
    /// Whether the server may write at its own time.
    pub server_time: bool,
    pub judge: Judge,
}

fn pick<T: Copy>(rng: &mut StdRng, from: &[T]) -> T {
    *from.choose(rng).unwrap()
}

fn bytes(b: &[u8]) -> Bytes {
    Bytes::copy_from_slice(b)
}

fn family(rng: &mut StdRng) -> String {
    if rng.gen_bool(0.5) { PLAIN } else { VERSIONED }.to_owned()
}

fn set_cell(family: String, qualifier: &[u8], ts: i64, value: Bytes) -> Mutation {
    Mutation {
        mutation: Some(mutation::Mutation::SetCell(mutation::SetCell {
            family_name: family,
            column_qualifier: bytes(qualifier),
            timestamp_micros: ts,
            value,
        })),
    }
}

fn counter_value(n: i64) -> Bytes {
    Bytes::copy_from_slice(&n.to_be_bytes())
}

/// A valid mutation; sets `server_time` when it writes at the server's time.
fn mutation(rng: &mut StdRng, server_time: &mut bool) -> Mutation {
    use mutation::Mutation as M;
    let ts = |rng: &mut StdRng, server_time: &mut bool| {
        if rng.gen_bool(0.15) {
            *server_time = true;
            -1
        } else {
            pick(rng, STAMPS)
        }
    };
    let m = match rng.gen_range(0..20) {
        0..=9 => {
            let (f, q, t) = (
                family(rng),
                pick(rng, TEXT_QUALIFIERS),
                ts(rng, server_time),
            );
            return set_cell(f, q, t, bytes(pick(rng, VALUES)));
        }
        10..=11 => {
            let (f, t) = (family(rng), ts(rng, server_time));
            return set_cell(f, COUNTER, t, counter_value(rng.gen_range(-3..300)));
        }
        12..=16 => M::DeleteFromColumn(mutation::DeleteFromColumn {
            family_name: family(rng),
            column_qualifier: bytes(if rng.gen_bool(0.8) {
                pick(rng, TEXT_QUALIFIERS)
            } else {
                COUNTER
            }),
            time_range: rng.gen_bool(0.6).then(|| delete_range(rng)),
        }),
        17..=18 => M::DeleteFromFamily(mutation::DeleteFromFamily {
            family_name: family(rng),
        }),
        _ => M::DeleteFromRow(mutation::DeleteFromRow {}),
    };
    Mutation { mutation: Some(m) }
}

fn delete_range(rng: &mut StdRng) -> TimestampRange {
    let start = pick(rng, DELETE_STARTS);
    let ends: Vec<i64> = DELETE_ENDS
        .iter()
        .copied()
        .filter(|e| *e == 0 || *e > start)
        .collect();
    TimestampRange {
        start_timestamp_micros: start,
        end_timestamp_micros: pick(rng, &ends),
    }
}

/// `n` valid mutations, writing each column at most once at the server's time (the
/// emulator reads its clock for each mutation, so two such writes may land as two cells).
fn mutations(rng: &mut StdRng, n: std::ops::RangeInclusive<usize>, st: &mut bool) -> Vec<Mutation> {
    let n = rng.gen_range(n);
    let mut now_written = Vec::new();
    let mut out: Vec<Mutation> = (0..n).map(|_| mutation(rng, st)).collect();
    for m in &mut out {
        if let Some(mutation::Mutation::SetCell(s)) = &mut m.mutation {
            let column = (s.family_name.clone(), s.column_qualifier.clone());
            if s.timestamp_micros == -1 && now_written.contains(&column) {
                s.timestamp_micros = pick(rng, STAMPS);
            } else if s.timestamp_micros == -1 {
                now_written.push(column);
            }
        }
    }
    out
}

/// A request that Bigtable refuses at its first mutation, and Basalt's answer to it.
fn refused_mutation(rng: &mut StdRng) -> (Mutation, Code) {
    if rng.gen_bool(0.5) {
        (
            set_cell("zz".into(), b"c0", 1000, bytes(b"x")),
            Code::NotFound,
        )
    } else {
        // Not a whole millisecond: the table's granularity is milliseconds.
        (
            set_cell(family(rng), b"c0", 1500, bytes(b"x")),
            Code::InvalidArgument,
        )
    }
}

/// A random operation of the history of `table` (its full name).
pub fn random(rng: &mut StdRng, table: &str) -> Planned {
    let mut server_time = false;
    let row = bytes(pick(rng, ROWS));
    let (op, judge) = match rng.gen_range(0..100) {
        0..=27 => {
            let mutations = mutations(rng, 1..=3, &mut server_time);
            let req = MutateRowRequest {
                table_name: table.into(),
                row_key: row,
                mutations,
                ..Default::default()
            };
            (Op::MutateRow(req), Judge::Same)
        }
        28..=29 => {
            let (bad, code) = refused_mutation(rng);
            let mut mutations = vec![bad];
            mutations.extend(self::mutations(rng, 0..=1, &mut server_time));
            let req = MutateRowRequest {
                table_name: table.into(),
                row_key: row,
                mutations,
                ..Default::default()
            };
            (Op::MutateRow(req), Judge::Bigtable(Answer::failed(code)))
        }
        30..=39 => mutate_rows(rng, table, &mut server_time),
        40..=51 => check_and_mutate(rng, table, row, &mut server_time),
        52..=61 => {
            server_time = true;
            read_modify_write(rng, table, row)
        }
        _ => (Op::ReadRows(read_rows(rng, table)), Judge::Same),
    };
    Planned {
        op,
        server_time,
        judge,
    }
}

fn mutate_rows(rng: &mut StdRng, table: &str, st: &mut bool) -> (Op, Judge) {
    let n = rng.gen_range(1..=3);
    let rows: Vec<&[u8]> = ROWS.choose_multiple(rng, n).copied().collect();
    let mut codes = Vec::new();
    let entries = rows
        .into_iter()
        .map(|r| {
            let mut ms = mutations(rng, 1..=3, st);
            let mut code = Code::Ok;
            if rng.gen_bool(0.05) {
                let (bad, c) = refused_mutation(rng);
                ms.insert(0, bad);
                code = c;
            }
            codes.push(code);
            mutate_rows_request::Entry {
                row_key: bytes(r),
                mutations: ms,
                ..Default::default()
            }
        })
        .collect();
    let req = MutateRowsRequest {
        table_name: table.into(),
        entries,
        ..Default::default()
    };
    let judge = if codes.iter().all(|c| *c == Code::Ok) {
        Judge::Same
    } else {
        Judge::Bigtable(Answer::Entries(codes))
    };
    (Op::MutateRows(req), judge)
}

fn check_and_mutate(rng: &mut StdRng, table: &str, row: Bytes, st: &mut bool) -> (Op, Judge) {
    let predicate_filter = rng
        .gen_bool(0.8)
        .then(|| filters::random(rng, 2, Ctx::PREDICATE).filter);
    // Now and then neither list: Bigtable needs one of them.
    let neither = rng.gen_bool(0.03);
    let (mut t, mut f) = (Vec::new(), Vec::new());
    while !neither && t.is_empty() && f.is_empty() {
        t = mutations(rng, 0..=2, st);
        f = mutations(rng, 0..=2, st);
    }
    let req = CheckAndMutateRowRequest {
        table_name: table.into(),
        row_key: row,
        predicate_filter,
        true_mutations: t,
        false_mutations: f,
        ..Default::default()
    };
    let judge = if neither {
        Judge::Bigtable(Answer::failed(Code::InvalidArgument))
    } else {
        Judge::Same
    };
    (Op::CheckAndMutate(req), judge)
}

fn read_modify_write(rng: &mut StdRng, table: &str, row: Bytes) -> (Op, Judge) {
    use read_modify_write_rule::Rule;
    let lone_increment = rng.gen_bool(0.1);
    let rules: Vec<ReadModifyWriteRule> = if lone_increment {
        vec![ReadModifyWriteRule {
            family_name: family(rng),
            column_qualifier: bytes(pick(rng, TEXT_QUALIFIERS)),
            rule: Some(Rule::IncrementAmount(rng.gen_range(-2..=5))),
        }]
    } else {
        let mut rules: Vec<ReadModifyWriteRule> = (0..rng.gen_range(1..=3))
            .map(|_| {
                if rng.gen_bool(0.5) {
                    ReadModifyWriteRule {
                        family_name: family(rng),
                        column_qualifier: bytes(COUNTER),
                        rule: Some(Rule::IncrementAmount(rng.gen_range(-2..=5))),
                    }
                } else {
                    ReadModifyWriteRule {
                        family_name: family(rng),
                        column_qualifier: bytes(pick(rng, TEXT_QUALIFIERS)),
                        rule: Some(Rule::AppendValue(bytes(pick(rng, VALUES)))),
                    }
                }
            })
            .collect();
        // One rule per column: the emulator reads its clock for each rule, so two rules of
        // one column may land as two cells a millisecond apart.
        let mut seen = Vec::new();
        rules.retain(|r| {
            let column = (r.family_name.clone(), r.column_qualifier.clone());
            let first = !seen.contains(&column);
            seen.push(column);
            first
        });
        rules
    };
    let req = ReadModifyWriteRowRequest {
        table_name: table.into(),
        row_key: row,
        rules,
        ..Default::default()
    };
    let judge = if lone_increment {
        Judge::Increment
    } else {
        Judge::Same
    };
    (Op::ReadModifyWrite(req), judge)
}

fn read_rows(rng: &mut StdRng, table: &str) -> ReadRowsRequest {
    ReadRowsRequest {
        table_name: table.into(),
        rows: row_set(rng),
        filter: rng
            .gen_bool(0.7)
            .then(|| filters::random(rng, 3, Ctx::ANY).filter),
        rows_limit: if rng.gen_bool(0.3) {
            rng.gen_range(1..=3)
        } else {
            0
        },
        reversed: rng.gen_bool(0.25),
        ..Default::default()
    }
}

fn row_set(rng: &mut StdRng) -> Option<RowSet> {
    match rng.gen_range(0..6) {
        0 => None,
        1 => Some(RowSet::default()),
        _ => {
            let keys = rng.gen_range(0..=3);
            let ranges = rng.gen_range(usize::from(keys == 0)..=2);
            let all_keys: Vec<&[u8]> = ROWS.iter().copied().chain([MISSING_ROW]).collect();
            Some(RowSet {
                row_keys: (0..keys).map(|_| bytes(pick(rng, &all_keys))).collect(),
                row_ranges: (0..ranges).map(|_| row_range_of(rng)).collect(),
            })
        }
    }
}

/// A range whose start is not after its end (the emulator refuses an inverted range).
fn row_range_of(rng: &mut StdRng) -> RowRange {
    use row_range::{EndKey as E, StartKey as S};
    let (mut a, mut b) = (pick(rng, RANGE_KEYS), pick(rng, RANGE_KEYS));
    if a > b {
        std::mem::swap(&mut a, &mut b);
    }
    RowRange {
        start_key: match rng.gen_range(0..3) {
            0 => None,
            1 => Some(S::StartKeyClosed(bytes(a))),
            _ => Some(S::StartKeyOpen(bytes(a))),
        },
        end_key: match rng.gen_range(0..3) {
            0 => None,
            1 => Some(E::EndKeyClosed(bytes(b))),
            _ => Some(E::EndKeyOpen(bytes(b))),
        },
    }
}

impl Op {
    /// The request the emulator gets: the same, with every read's filter behind the GC
    /// rule ([`filters::after_gc`]).
    pub fn for_emulator(&self) -> Op {
        match self {
            Op::ReadRows(r) => Op::ReadRows(ReadRowsRequest {
                filter: Some(filters::after_gc(r.filter.as_ref())),
                ..r.clone()
            }),
            Op::CheckAndMutate(r) if r.predicate_filter.is_some() => {
                Op::CheckAndMutate(CheckAndMutateRowRequest {
                    predicate_filter: Some(filters::after_gc(r.predicate_filter.as_ref())),
                    ..r.clone()
                })
            }
            other => other.clone(),
        }
    }
}

/// Reads the whole table (every version, no filter): the state both servers must hold.
pub fn read_all(table: &str) -> Op {
    Op::ReadRows(ReadRowsRequest {
        table_name: table.into(),
        ..Default::default()
    })
}
