use basalt_bigtable_proto::google::bigtable::v2::row_filter::{
    Chain, Condition, Filter, Interleave,
};

use super::*;

fn cell(f: &str, q: &str, ts: i64, v: &str) -> BtCell {
    BtCell {
        family: Bytes::copy_from_slice(f.as_bytes()),
        qualifier: Bytes::copy_from_slice(q.as_bytes()),
        timestamp_micros: ts,
        value: Bytes::copy_from_slice(v.as_bytes()),
        labels: Vec::new(),
    }
}

/// A row of two families: f:a at 3000 and 1000, f:b at 2000, g:c at 5000.
fn row() -> Vec<BtCell> {
    vec![
        cell("f", "a", 3000, "a3"),
        cell("f", "a", 1000, "a1"),
        cell("f", "b", 2000, "b2"),
        cell("g", "c", 5000, "c5"),
    ]
}

fn f(filter: Filter) -> RowFilter {
    RowFilter {
        filter: Some(filter),
    }
}

fn run(filter: Filter) -> Vec<(String, i64, Vec<String>)> {
    let compiled = Compiled::new(&f(filter), false).unwrap();
    compiled
        .apply(b"row1", row(), &Sampler::new(7))
        .into_iter()
        .map(|c| {
            (
                String::from_utf8(c.value.to_vec()).unwrap(),
                c.timestamp_micros,
                c.labels,
            )
        })
        .collect()
}

fn values(filter: Filter) -> Vec<String> {
    run(filter).into_iter().map(|(v, _, _)| v).collect()
}

#[test]
fn simple_filters_select_cells() {
    assert_eq!(values(Filter::FamilyNameRegexFilter("g".into())), ["c5"]);
    assert_eq!(
        values(Filter::ColumnQualifierRegexFilter("a".into())),
        ["a3", "a1"]
    );
    assert_eq!(
        values(Filter::ValueRegexFilter("[ab][12]".into())),
        ["a1", "b2"]
    );
    assert_eq!(
        values(Filter::CellsPerColumnLimitFilter(1)),
        ["a3", "b2", "c5"]
    );
    assert_eq!(values(Filter::CellsPerRowLimitFilter(2)), ["a3", "a1"]);
    assert_eq!(values(Filter::CellsPerRowOffsetFilter(3)), ["c5"]);
    assert_eq!(
        values(Filter::RowKeyRegexFilter("row.".into())),
        ["a3", "a1", "b2", "c5"]
    );
    // Regexes match the whole input, not a part of it.
    assert!(values(Filter::RowKeyRegexFilter("row".into())).is_empty());
    assert!(values(Filter::BlockAllFilter(true)).is_empty());
    let range = TimestampRange {
        start_timestamp_micros: 1000,
        end_timestamp_micros: 3000,
    };
    assert_eq!(values(Filter::TimestampRangeFilter(range)), ["a1", "b2"]);
    let strip = run(Filter::StripValueTransformer(true));
    assert!(strip.iter().all(|(v, _, _)| v.is_empty()) && strip.len() == 4);
}

#[test]
fn ranges_honour_open_and_closed_ends() {
    let cols = ColumnRange {
        family_name: "f".into(),
        start_qualifier: Some(column_range::StartQualifier::StartQualifierOpen("a".into())),
        end_qualifier: Some(column_range::EndQualifier::EndQualifierClosed("b".into())),
    };
    assert_eq!(values(Filter::ColumnRangeFilter(cols)), ["b2"]);
    let vals = ValueRange {
        start_value: Some(value_range::StartValue::StartValueClosed("a1".into())),
        end_value: Some(value_range::EndValue::EndValueOpen("b2".into())),
    };
    assert_eq!(values(Filter::ValueRangeFilter(vals)), ["a3", "a1"]);
}

#[test]
fn chains_interleaves_and_conditions_compose() {
    let chain = Filter::Chain(Chain {
        filters: vec![
            f(Filter::FamilyNameRegexFilter("f".into())),
            f(Filter::CellsPerColumnLimitFilter(1)),
        ],
    });
    assert_eq!(values(chain), ["a3", "b2"]);
    // Interleave keeps duplicates, in Bigtable's cell order, with each branch's labels.
    let inter = Filter::Interleave(Interleave {
        filters: vec![
            f(Filter::Chain(Chain {
                filters: vec![
                    f(Filter::ColumnQualifierRegexFilter("b".into())),
                    f(Filter::ApplyLabelTransformer("x".into())),
                ],
            })),
            f(Filter::ColumnQualifierRegexFilter("[bc]".into())),
        ],
    });
    assert_eq!(
        run(inter),
        [
            ("b2".to_owned(), 2000, vec!["x".to_owned()]),
            ("b2".to_owned(), 2000, vec![]),
            ("c5".to_owned(), 5000, vec![]),
        ]
    );
    let cond = |pattern: &str| {
        values(Filter::Condition(Box::new(Condition {
            predicate_filter: Some(Box::new(f(Filter::ValueRegexFilter(
                pattern.to_owned().into_bytes().into(),
            )))),
            true_filter: Some(Box::new(f(Filter::FamilyNameRegexFilter("g".into())))),
            false_filter: Some(Box::new(f(Filter::CellsPerRowLimitFilter(1)))),
        })))
    };
    assert_eq!(cond("c5"), ["c5"]);
    assert_eq!(cond("zz"), ["a3"]);
}

#[test]
fn a_sink_sends_its_cells_to_the_output_beside_the_rest() {
    let sink = Filter::Chain(Chain {
        filters: vec![
            f(Filter::Interleave(Interleave {
                filters: vec![
                    f(Filter::Chain(Chain {
                        filters: vec![
                            f(Filter::FamilyNameRegexFilter("g".into())),
                            f(Filter::ApplyLabelTransformer("sunk".into())),
                            f(Filter::Sink(true)),
                        ],
                    })),
                    f(Filter::PassAllFilter(true)),
                ],
            })),
            f(Filter::CellsPerRowLimitFilter(1)),
        ],
    });
    // The sunk cell skips the limit that follows; the limit keeps the first of the rest.
    assert_eq!(
        run(sink),
        [
            ("a3".to_owned(), 3000, vec![]),
            ("c5".to_owned(), 5000, vec!["sunk".to_owned()]),
        ]
    );
}

#[test]
fn bad_filters_are_refused_before_any_read() {
    let bad = |filter: Filter, in_predicate: bool| {
        let e = Compiled::new(&f(filter), in_predicate).unwrap_err();
        assert_eq!(e.code(), tonic::Code::InvalidArgument, "{e:?}");
    };
    bad(Filter::RowKeyRegexFilter("(".into()), false);
    bad(Filter::ApplyLabelTransformer("Bad Label".into()), false);
    bad(
        Filter::ApplyLabelTransformer("a-label-that-is-too-long".into()),
        false,
    );
    bad(Filter::CellsPerRowLimitFilter(-1), false);
    bad(Filter::RowSampleFilter(1.5), false);
    bad(Filter::Sink(true), true);
    bad(Filter::PassAllFilter(false), false);
    let sink_in_branch = Filter::Condition(Box::new(Condition {
        predicate_filter: Some(Box::new(f(Filter::PassAllFilter(true)))),
        true_filter: Some(Box::new(f(Filter::Sink(true)))),
        false_filter: None,
    }));
    bad(sink_in_branch, false);
}

#[test]
fn a_filter_that_sets_nothing_passes_every_cell() {
    let compiled = Compiled::new(&RowFilter { filter: None }, false).unwrap();
    assert_eq!(compiled.apply(b"r", row(), &Sampler::new(1)), row());
}

#[test]
fn row_sampling_keeps_about_the_asked_share() {
    let compiled = Compiled::new(&f(Filter::RowSampleFilter(0.25)), false).unwrap();
    let sampler = Sampler::new(42);
    let kept = (0..4000)
        .filter(|_| !compiled.apply(b"r", row(), &sampler).is_empty())
        .count();
    assert!((800..1200).contains(&kept), "kept {kept} of 4000 rows");
}

#[test]
fn a_regex_of_any_bytes_matches_those_bytes() {
    let matches = |pattern: &[u8], value: &[u8]| {
        full_match(pattern, "value_regex_filter")
            .unwrap()
            .is_match(value)
    };
    // What the clients' literal filters send: each byte, special ones escaped.
    assert!(matches(b"\\\xaa\0\0\0", b"\xaa\0\0\0"));
    assert!(matches(b"\xaa\\.", b"\xaa."));
    assert!(!matches(b"\xaa\\.", b"\xaax"));
    assert!(matches("\u{2603}".as_bytes(), "\u{2603}".as_bytes()));
    assert!(matches(b"\\\\C", b"\\C"));
    assert!(matches(b"\\C\\C", b"\xff\n"));
    assert!(!matches(b"a.", b"a\n"));
}
