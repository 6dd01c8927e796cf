//! Bigtable's own tools against a real `basalt server`: a scripted `cbt` session whose data
//! the HBase shell then reads, and random histories sent to Basalt and to Google's Bigtable
//! emulator side by side, every answer compared.
//!
//! # Where the emulator is not Bigtable
//! Google's emulator (`cbtemulator`, the Go `bttest` package) is "only a rough
//! approximation". Where it answers otherwise than Bigtable's documentation says, the
//! histories do not compare: they assert Basalt's answer the Bigtable way, or keep to
//! requests both define alike.
//!
//! 1. GC rules: the emulator collects garbage in a background pass every 0.5–1.5 s, started
//!    only once a family was modified, and ignores intersections ("Unsupported GC rule
//!    type"). Bigtable collects in the background too, and Basalt applies every rule exactly
//!    on each read. The histories send the emulator each read and predicate behind a filter
//!    that equals the versioned family's rule (`cells_per_column_limit` on that family), so
//!    both must show the same cells; the `cbt` session checks age, union and intersection
//!    rules on Basalt alone.
//! 2. `sink`: the emulator does not know it and passes every cell through. Basalt is checked
//!    against data.proto's own example, and refuses a sink inside a condition as Bigtable
//!    does.
//! 3. Reversed scans: the emulator serves them only to a client that sends the
//!    `bigtable-features` header with `reverse_scans`; the histories send it, and compare.
//! 4. Error codes: the emulator answers UNKNOWN (a plain Go error) to a mutation of an
//!    unknown family or at a timestamp that is not a whole millisecond, and INTERNAL for
//!    such an entry of MutateRows, where Bigtable answers NOT_FOUND and INVALID_ARGUMENT;
//!    to an increment of a value that is not 8 bytes it answers UNKNOWN, Basalt
//!    FAILED_PRECONDITION. Basalt's codes are asserted.
//! 5. Atomicity: the emulator applies a request's mutations (and ReadModifyWriteRow's rules)
//!    one by one and keeps those before a failed one; Bigtable applies all or none. The
//!    histories put a failing mutation first; Basalt's all-or-nothing is checked alone.
//! 6. CheckAndMutateRow with neither true nor false mutations: the emulator answers OK;
//!    Bigtable requires one of them (INVALID_ARGUMENT), as Basalt does.
//! 7. `strip_value_transformer` drops a cell's labels in the emulator; the histories never
//!    strip after a label.
//! 8. Row order of families: the emulator gives a row's families in creation order, and its
//!    `cells_per_row_limit`/`offset` walk them in Go's random map order. Bigtable leaves the
//!    order of families unspecified, so rows are compared with families sorted, and per-row
//!    limits are generated behind an exact family filter.
//! 9. Chains and interleaves of fewer than two filters are refused by the emulator; the
//!    histories use two or more. `row_sample_filter` is random and not generated.
//! 10. The server's time: the emulator reads its clock for each SetCell at -1 and each
//!     ReadModifyWriteRow rule, so two writes of one column in one request land as one
//!     cell or as two a millisecond apart, as the clock ticks. Basalt takes one time per
//!     request, so the later write replaces the earlier and the rules of one column build
//!     one cell ("earlier rules will affect the results of later ones"). The histories
//!     write a column at most once at the server's time per request; Basalt's one cell is
//!     checked alone.
#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

mod bench_table;
mod bigtable_support;

use std::time::Duration;

use basalt_bigtable_proto::google::bigtable::admin::v2::{
    gc_rule, ColumnFamily, CreateTableRequest, GcRule, Table,
};
use basalt_bigtable_proto::google::bigtable::v2::{
    mutation, read_modify_write_rule, MutateRowRequest, Mutation, ReadModifyWriteRowRequest,
    ReadModifyWriteRule, ReadRowsRequest, RowFilter, RowSet,
};
use bigtable_support::answer::{self, now_micros, show, Answer, Cell, Row, ServerTimes, Stamp};
use bigtable_support::ops::{self, Judge, Op, Planned, MAX_VERSIONS, PLAIN, VERSIONED};
use bigtable_support::{connect, BasaltServer, Clients, Emulator, INSTANCE};
use bigtable_support::{describe, filters};
use bytes::Bytes;
use rand::rngs::StdRng;
use rand::SeedableRng;
use tonic::Code;

#[test]
fn a_cbt_session_and_the_hbase_shell_see_the_same_table() {
    bigtable_support::cbt_session::run();
}

/// `basalt bench bigtable` against Basalt and the emulator: every line on both, with the
/// ratio of their rates, and the load wrote every row (as the HBase shell counts them).
#[test]
fn the_bigtable_bench_measures_every_line_on_both_targets() {
    let basalt = BasaltServer::start();
    let emulator = Emulator::start();
    let text = bench_table::stdout_of(
        std::process::Command::new(env!("CARGO_BIN_EXE_basalt"))
            .args(["bench", "bigtable", "--rows", "2000", "--scan-rows", "100"])
            .args(["--seconds", "0.3", "--clients", "1,4"])
            .args(["--target", &format!("basalt={}", basalt.bigtable)])
            .args(["--target", &format!("emulator={}", emulator.addr)]),
    );
    let rows = bench_table::rows(&text);
    let lines = ["single-row writes", "point reads", "scans"];
    bench_table::assert_lines(&rows, &lines, &["1", "4"], &text);
    for r in &rows {
        let rate = |i| bench_table::number(r, i);
        bench_table::assert_ratio(rate(2), rate(4), rate(6), r);
    }
    let count = bigtable_support::run_shell(&basalt.native, "count 'bench'\n");
    assert!(count.contains("2000 row(s)"), "{count}");
}

/// Seeds run by default; `BASALT_BIGTABLE_DIFF_SEEDS` raises it, and
/// `BASALT_BIGTABLE_DIFF_SEED` replays one (with `BASALT_BIGTABLE_DIFF_TRACE` set, every
/// operation and Basalt's answer are printed).
const SEEDS: u64 = 20;
const OPS_PER_SEED: usize = 200;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_histories_answer_as_the_emulator_does() {
    let basalt = BasaltServer::start();
    let emulator = Emulator::start();
    let mut b = connect(&basalt.bigtable).await;
    let mut e = connect(&emulator.addr).await;
    let seeds: Vec<u64> = match std::env::var("BASALT_BIGTABLE_DIFF_SEED") {
        Ok(s) => vec![s.parse().unwrap()],
        Err(_) => {
            let n =
                std::env::var("BASALT_BIGTABLE_DIFF_SEEDS").map_or(SEEDS, |s| s.parse().unwrap());
            (0..n).collect()
        }
    };
    for seed in seeds {
        history(seed, &mut b, &mut e).await;
    }
    large_values(&mut b, &mut e).await;
    bigtable_only_checks(&mut b).await;
}

async fn create_table(c: &mut Clients, id: &str) {
    let family = |rule: Option<gc_rule::Rule>| ColumnFamily {
        gc_rule: rule.map(|r| GcRule { rule: Some(r) }),
        value_type: None,
    };
    let table = Table {
        column_families: [
            (PLAIN.to_owned(), family(None)),
            (
                VERSIONED.to_owned(),
                family(Some(gc_rule::Rule::MaxNumVersions(MAX_VERSIONS))),
            ),
        ]
        .into(),
        ..Table::default()
    };
    c.admin
        .create_table(CreateTableRequest {
            parent: INSTANCE.into(),
            table_id: id.into(),
            table: Some(table),
            initial_splits: Vec::new(),
        })
        .await
        .unwrap();
}

/// One seed's history: every operation to both servers, then the whole table compared.
async fn history(seed: u64, b: &mut Clients, e: &mut Clients) {
    let id = format!("h{seed}");
    create_table(b, &id).await;
    create_table(e, &id).await;
    let table = format!("{INSTANCE}/tables/{id}");
    let mut rng = StdRng::seed_from_u64(seed);
    let trace = std::env::var_os("BASALT_BIGTABLE_DIFF_TRACE").is_some();
    let (mut b_times, mut e_times) = (ServerTimes::default(), ServerTimes::default());
    for i in 0..=OPS_PER_SEED {
        let planned = if i == OPS_PER_SEED {
            Planned {
                op: ops::read_all(&table),
                server_time: false,
                judge: Judge::Same,
            }
        } else {
            ops::random(&mut rng, &table)
        };
        let to_emulator = planned.op.for_emulator();
        let (b_start, e_start) = (now_micros(), now_micros());
        let (b_answer, e_answer) = tokio::join!(
            async {
                let a = answer::execute(&mut b.data, planned.op.clone()).await;
                (a, now_micros())
            },
            async {
                let a = answer::execute(&mut e.data, to_emulator).await;
                (a, now_micros())
            },
        );

        if planned.server_time {
            b_times.record(i, b_start, b_answer.1);
            e_times.record(i, e_start, e_answer.1);
            // Keeps the next server-written timestamp a millisecond past this one's span.
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        let (b_answer, e_answer) = (b_times.restamp(b_answer.0), e_times.restamp(e_answer.0));
        if trace {
            println!(
                "{i}: {}\n  -> {}",
                describe::op(&planned.op),
                show(&b_answer)
            );
        }
        if let Err(why) = judge(&planned.judge, &b_answer, &e_answer) {
            panic!(
                "seed {seed} (replay with BASALT_BIGTABLE_DIFF_SEED={seed}), operation {i}: \
                 {why}\nrequest: {}\nBasalt:   {}\nemulator: {}",
                describe::op(&planned.op),
                show(&b_answer),
                show(&e_answer)
            );
        }
    }
}

fn judge(judge: &Judge, basalt: &Answer, emulator: &Answer) -> Result<(), String> {
    match judge {
        Judge::Same if basalt == emulator => Ok(()),
        Judge::Same => Err("the answers differ".into()),
        Judge::Bigtable(expected) if basalt != expected => Err(format!(
            "Basalt should answer {expected:?}, as Bigtable does"
        )),
        Judge::Bigtable(Answer::Entries(codes)) => {
            let failed = |cs: &[Code]| cs.iter().map(|c| *c != Code::Ok).collect::<Vec<_>>();
            match emulator {
                Answer::Entries(e) if failed(e) == failed(codes) => Ok(()),
                _ => Err("the emulator failed other entries".into()),
            }
        }
        // The emulator's own answer is wrong here; the requests are made so it changes
        // nothing, which the next reads check.
        Judge::Bigtable(_) => Ok(()),
        Judge::Increment => match (basalt, emulator) {
            (Answer::Failed(Code::FailedPrecondition, _), Answer::Failed(Code::Unknown, _)) => {
                Ok(())
            }
            (b, e) if b == e => Ok(()),
            _ => Err("an increment of a text column answered differently".into()),
        },
    }
}

/// A value of 3 MiB crosses in several chunks from Basalt (1 MiB each, `value_size` set on
/// all but the last) and in one from the emulator: the rows must be the same.
async fn large_values(b: &mut Clients, e: &mut Clients) {
    let table = format!("{INSTANCE}/tables/large");
    let big: String = (0..3 << 20)
        .map(|i| char::from(b'a' + (i % 26) as u8))
        .collect();
    // Two requests: the emulator takes messages of at most 4 MiB.
    let writes = [
        vec![set(PLAIN, "x", 1000, &big), set(PLAIN, "y", 1000, "small")],
        vec![set(VERSIONED, "x", 2000, &big[..(1 << 20) + 1])],
    ];
    for c in [&mut *b, &mut *e] {
        create_table(c, "large").await;
        for mutations in &writes {
            let write = MutateRowRequest {
                table_name: table.clone(),
                row_key: Bytes::from_static(b"big"),
                mutations: mutations.clone(),
                ..Default::default()
            };
            c.data.mutate_row(write).await.unwrap();
        }
    }
    for filter in [None, Some(filters::qualifier("x"))] {
        let (from_b, from_e) = (
            read(b, &table, "big", filter.clone()).await,
            read(e, &table, "big", filter).await,
        );
        assert!(from_b == from_e, "a row of large values differs");
        let Answer::Rows(rows) = from_b else {
            panic!("no rows: {}", show(&from_b))
        };
        assert_eq!(rows[0].cells[0].value.len(), 3 << 20);
    }
}

fn cell(family: &str, qualifier: &str, ts: i64, value: &str, labels: &[&str]) -> Cell {
    Cell {
        family: family.into(),
        qualifier: qualifier.into(),
        ts: Stamp::At(ts),
        value: value.into(),
        labels: labels.iter().map(|l| (*l).to_owned()).collect(),
    }
}

fn set(family: &str, qualifier: &str, ts: i64, value: &str) -> Mutation {
    Mutation {
        mutation: Some(mutation::Mutation::SetCell(mutation::SetCell {
            family_name: family.into(),
            column_qualifier: Bytes::copy_from_slice(qualifier.as_bytes()),
            timestamp_micros: ts,
            value: Bytes::copy_from_slice(value.as_bytes()),
        })),
    }
}

async fn read(c: &mut Clients, table: &str, key: &str, filter: Option<RowFilter>) -> Answer {
    let op = Op::ReadRows(ReadRowsRequest {
        table_name: table.into(),
        rows: Some(RowSet {
            row_keys: vec![Bytes::copy_from_slice(key.as_bytes())],
            row_ranges: Vec::new(),
        }),
        filter,
        ..Default::default()
    });
    answer::execute(&mut c.data, op).await
}

/// What the emulator cannot show: deviations 2 (sink), 5 (atomicity) and 10 (one time per
/// request), on Basalt alone.
async fn bigtable_only_checks(b: &mut Clients) {
    use filters::{chain, condition, family, interleave, label, pass_all, qualifier, sink};
    create_table(b, "alone").await;
    let table = format!("{INSTANCE}/tables/alone");
    let mutate = |row: &str, mutations: Vec<Mutation>| MutateRowRequest {
        table_name: table.clone(),
        row_key: Bytes::copy_from_slice(row.as_bytes()),
        mutations,
        ..Default::default()
    };
    // data.proto's example of a sink: families A and B are `a` and `v` here, qualifiers
    // A and B are `qa` and `qb`.
    let row = vec![
        set(PLAIN, "qa", 1000, "w"),
        set(PLAIN, "qb", 2000, "x"),
        set(VERSIONED, "qb", 4000, "z"),
    ];
    b.data.mutate_row(mutate("k", row)).await.unwrap();
    let example = chain(vec![
        family(PLAIN),
        interleave(vec![pass_all(), chain(vec![label("foo"), sink()])]),
        qualifier("qb"),
    ]);
    let expected = vec![
        cell(PLAIN, "qa", 1000, "w", &["foo"]),
        cell(PLAIN, "qb", 2000, "x", &[]),
        cell(PLAIN, "qb", 2000, "x", &["foo"]),
    ];
    let answer = read(b, &table, "k", Some(example)).await;
    let rows = vec![bigtable_support::answer::normalized(Row {
        key: b"k".to_vec(),
        cells: expected,
    })];
    assert_eq!(answer, Answer::Rows(rows), "{}", show(&answer));
    // "Cannot be used within the predicate_filter, true_filter, or false_filter of a
    // Condition."
    for f in [
        condition(sink(), Some(pass_all()), None),
        condition(pass_all(), Some(sink()), None),
        condition(pass_all(), None, Some(chain(vec![pass_all(), sink()]))),
    ] {
        let answer = read(b, &table, "k", Some(f.clone())).await;
        assert_eq!(answer, Answer::failed(Code::InvalidArgument), "{f:?}");
    }
    // All or nothing: a request whose second mutation names no family writes nothing.
    let refused = mutate(
        "k",
        vec![set(PLAIN, "qc", 1000, "y"), set("zz", "q", 1000, "y")],
    );
    let status = b.data.mutate_row(refused).await.unwrap_err();
    assert_eq!(status.code(), Code::NotFound, "{status:?}");
    let answer = read(b, &table, "k", Some(qualifier("qc"))).await;
    assert_eq!(answer, Answer::Rows(Vec::new()));
    one_server_time_per_request(b, &table).await;
}

/// Two writes of one column at the server's time in one request make one cell, the later;
/// two ReadModifyWriteRow rules of one column build one cell.
async fn one_server_time_per_request(b: &mut Clients, table: &str) {
    let mutate = |row: &str, mutations: Vec<Mutation>| MutateRowRequest {
        table_name: table.into(),
        row_key: Bytes::copy_from_slice(row.as_bytes()),
        mutations,
        ..Default::default()
    };
    let twice = mutate(
        "n",
        vec![set(PLAIN, "c", -1, "x"), set(PLAIN, "c", -1, "y")],
    );
    b.data.mutate_row(twice).await.unwrap();
    let rules = (1..=2)
        .map(|n| ReadModifyWriteRule {
            family_name: PLAIN.into(),
            column_qualifier: Bytes::from_static(b"n"),
            rule: Some(read_modify_write_rule::Rule::IncrementAmount(n)),
        })
        .collect();
    let written = b
        .data
        .read_modify_write_row(ReadModifyWriteRowRequest {
            table_name: table.into(),
            row_key: Bytes::from_static(b"n"),
            rules,
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
        .row
        .unwrap();
    let cells = &written.families[0].columns[0].cells;
    assert_eq!(cells.len(), 1, "{written:?}");
    assert_eq!(cells[0].value, 3_i64.to_be_bytes().to_vec());
    let Answer::Rows(rows) = read(b, table, "n", None).await else {
        panic!("the row of one server time cannot be read")
    };
    let values: Vec<&[u8]> = rows[0].cells.iter().map(|c| &c.value[..]).collect();
    assert_eq!(values, [b"y".as_slice(), 3_i64.to_be_bytes().as_slice()]);
}
