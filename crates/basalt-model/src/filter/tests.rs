//! Table-driven tests of the filter language and of single-filter decisions.

use super::*;
use crate::error::Error;

fn err(s: &str) -> String {
    match parse_filter(s) {
        Err(Error::IllegalArgument(m)) => m,
        other => panic!("{s}: expected IllegalArgument, got {other:?}"),
    }
}

fn list_of(f: &Filter) -> (FilterListOp, usize) {
    match f {
        Filter::List(l) => (l.op, l.filters.len()),
        other => panic!("not a list: {other:?}"),
    }
}

#[test]
fn every_registered_name_parses_with_a_valid_argument_list() {
    let cases = [
        "KeyOnlyFilter()",
        "KeyOnlyFilter(true)",
        "FirstKeyOnlyFilter()",
        "PrefixFilter('Row')",
        "ColumnPrefixFilter('c')",
        "MultipleColumnPrefixFilter('a', 'b')",
        "ColumnCountGetFilter(4)",
        "PageFilter(1)",
        "ColumnPaginationFilter(2, 0)",
        "InclusiveStopFilter('r9')",
        "TimestampsFilter(74689, 89734)",
        "TimestampsFilter()",
        "RowFilter(=, 'binary:Row 1')",
        "FamilyFilter(>=, 'binaryprefix:f')",
        "QualifierFilter(!=, 'regexstring:c.*')",
        "ValueFilter(=, 'substring:abc')",
        "DependentColumnFilter('f', 'q')",
        "DependentColumnFilter('f', 'q', true)",
        "DependentColumnFilter('f', 'q', false, =, 'binary:v')",
        "SingleColumnValueFilter('f', 'q', =, 'binary:v')",
        "SingleColumnValueFilter('f', 'q', =, 'binary:v', true, false)",
        "SingleColumnValueExcludeFilter('f', 'q', <, 'binary:v')",
        "ColumnRangeFilter('abc', true, 'xyz', false)",
        "ColumnValueFilter('f', 'q', >, 'binary:5')",
    ];
    for c in cases {
        assert!(parse_filter(c).is_ok(), "{c}: {:?}", parse_filter(c));
    }
    assert_eq!(FILTER_NAMES.len(), 19);
    for name in FILTER_NAMES {
        assert!(
            cases.iter().any(|c| c.starts_with(&format!("{name}("))),
            "{name} untested"
        );
    }
}

#[test]
fn precedence_and_flattening() {
    // F1 AND F2 OR F3 = (F1 AND F2) OR F3
    let f = parse_filter("PrefixFilter('a') AND PageFilter(1) OR FirstKeyOnlyFilter()").unwrap();
    assert_eq!(list_of(&f), (FilterListOp::MustPassOne, 2));
    let Filter::List(l) = &f else { unreachable!() };
    assert_eq!(list_of(&l.filters[0]), (FilterListOp::MustPassAll, 2));
    // chains of one operator become one list
    let f = parse_filter("PrefixFilter('Row') AND PageFilter(1) AND FirstKeyOnlyFilter()").unwrap();
    assert_eq!(list_of(&f), (FilterListOp::MustPassAll, 3));
    // F1 AND SKIP F2 OR F3 = (F1 AND (SKIP F2)) OR F3
    let f = parse_filter("PrefixFilter('a') AND SKIP ValueFilter(=,'binary:0') OR KeyOnlyFilter()")
        .unwrap();
    let Filter::List(l) = &f else { unreachable!() };
    assert_eq!(l.op, FilterListOp::MustPassOne);
    let Filter::List(inner) = &l.filters[0] else {
        unreachable!()
    };
    assert!(matches!(inner.filters[1], Filter::Skip { .. }));
    // parentheses override
    let f = parse_filter(
        "(RowFilter(=,'binary:Row 1') AND TimestampsFilter(74689, 89734)) OR ColumnRangeFilter('abc', true, 'xyz', false)",
    )
    .unwrap();
    assert_eq!(list_of(&f), (FilterListOp::MustPassOne, 2));
    // whitespace between name and parenthesis, tabs between tokens, WHILE after '('
    assert!(parse_filter("PrefixFilter ('a')").is_ok());
    assert!(parse_filter("(WHILE\tPrefixFilter('a'))").is_ok());
    assert!(parse_filter(
        "(QualifierFilter (>=, 'binary:xyz')) AND (TimestampsFilter ( 123, 456))"
    )
    .is_ok());
}

#[test]
fn quotes_and_comparator_values() {
    let f = parse_filter("PrefixFilter('it''s')").unwrap();
    assert!(matches!(f, Filter::Prefix { ref prefix, .. } if &prefix[..] == b"it's"));
    // the comparator value is everything after the first ':'
    let f = parse_filter("ValueFilter(=, 'binary:a:b')").unwrap();
    assert!(matches!(f, Filter::Value { cmp: Comparator::Binary(ref v), .. } if &v[..] == b"a:b"));
    // a ')' inside quotes does not end the term
    assert!(parse_filter("PrefixFilter('a)b')").is_ok());
}

#[test]
fn hbase_error_messages() {
    assert_eq!(err("FooFilter()"), "Filter Name FooFilter not supported");
    // The book's spelling is not a registered name.
    assert_eq!(
        err("TimeStampsFilter(1)"),
        "Filter Name TimeStampsFilter not supported"
    );
    assert_eq!(err("(PrefixFilter('a')"), "Mismatched parenthesis");
    assert_eq!(err("PrefixFilter('a'))"), "Mismatched parenthesis");
    assert_eq!(err(""), "Incorrect Filter String");
    assert_eq!(
        err("ValueFilter(=<, 'binary:a')"),
        "Invalid compare operator"
    );
    assert_eq!(err("ValueFilter(=, 'bin:a')"), "Incorrect comparatorType");
    assert_eq!(err("ValueFilter(=, 'binary')"), "Incorrect comparator");
    assert_eq!(
        err("PageFilter(99999999999999999999)"),
        "Long Argument too large"
    );
    assert_eq!(
        err("ColumnCountGetFilter(99999999999)"),
        "Integer Argument too large"
    );
    assert_eq!(err("KeyOnlyFilter(yes)"), "Incorrect Boolean Expression");
    assert_eq!(err("PrefixFilter('a') OR"), "an OR needs two filters");
    assert_eq!(err("PrefixFilter('a') AND "), "an AND needs two filters");
    assert_eq!(err("SKIP"), "a SKIP wraps a filter");
    assert_eq!(err("WHILE "), "a WHILE wraps a filter");
    assert!(err("PageFilter(1, 2)").starts_with("Incorrect argument list"));
    assert!(err("ValueFilter(>, 'regexstring:a')").contains("EQUAL and NOT_EQUAL"));
    assert!(err("ValueFilter(<, 'substring:a')").contains("EQUAL and NOT_EQUAL"));
    // keywords are upper case only
    assert_eq!(
        err("PrefixFilter('a') and PageFilter(1)"),
        "Incorrect Filter String"
    );
    // booleans are case-insensitive
    assert!(parse_filter("KeyOnlyFilter(TRUE)").is_ok());
}

fn cell(row: &str, q: &str, ts: i64, v: &str) -> Cell {
    Cell::put(row.to_owned(), "f", q.to_owned(), ts, v.to_owned())
}

#[test]
fn compare_filter_direction_is_cell_op_operand() {
    // SEMANTICS.md #57: ValueFilter(>, 'binary:5') keeps values > "5".
    let mut f = parse_filter("ValueFilter(>, 'binary:5')").unwrap();
    assert_eq!(f.filter_cell(&cell("r", "q", 1, "6")), ReturnCode::Include);
    assert_eq!(f.filter_cell(&cell("r", "q", 1, "5")), ReturnCode::Skip);
    assert_eq!(f.filter_cell(&cell("r", "q", 1, "4")), ReturnCode::Skip);
    let mut f = parse_filter("RowFilter(<, 'binary:m')").unwrap();
    assert!(!f.filter_row_key(b"a"));
    f.reset();
    assert!(f.filter_row_key(b"z"));
}

#[test]
fn page_filter_counts_rows_and_ends_the_scan() {
    let mut f = parse_filter("PageFilter(2)").unwrap();
    assert!(f.has_filter_row());
    assert!(!f.filter_row());
    assert!(!f.filter_all_remaining());
    assert!(!f.filter_row());
    assert!(f.filter_all_remaining());
}

#[test]
fn key_only_transforms_values() {
    let f = parse_filter("KeyOnlyFilter(true)").unwrap();
    let c = f.transform_cell(cell("r", "q", 1, "hello"));
    assert_eq!(c.value(), &5u32.to_be_bytes());
    let f = parse_filter("KeyOnlyFilter()").unwrap();
    assert!(f
        .transform_cell(cell("r", "q", 1, "hello"))
        .value()
        .is_empty());
}

#[test]
fn column_prefix_seeks_with_a_hint() {
    let mut f = parse_filter("ColumnPrefixFilter('m')").unwrap();
    let c = cell("r", "a", 1, "v");
    assert_eq!(f.filter_cell(&c), ReturnCode::SeekNextUsingHint);
    assert_eq!(f.next_cell_hint(&c).unwrap().qualifier(), b"m");
    assert_eq!(f.filter_cell(&cell("r", "mm", 1, "v")), ReturnCode::Include);
    assert_eq!(f.filter_cell(&cell("r", "n", 1, "v")), ReturnCode::NextRow);
}

#[test]
fn timestamps_filter() {
    let mut f = parse_filter("TimestampsFilter(2, 4)").unwrap();
    assert_eq!(f.filter_cell(&cell("r", "q", 5, "v")), ReturnCode::Skip);
    assert_eq!(f.filter_cell(&cell("r", "q", 4, "v")), ReturnCode::Include);
    assert_eq!(f.filter_cell(&cell("r", "q", 1, "v")), ReturnCode::NextCol);
    let mut empty = parse_filter("TimestampsFilter()").unwrap();
    assert!(!empty.filter_cell(&cell("r", "q", 1, "v")).includes());
}

#[test]
fn single_column_value_filter_row_decision() {
    let mut f = parse_filter("SingleColumnValueFilter('f', 'q', =, 'binary:yes')").unwrap();
    assert_eq!(f.filter_cell(&cell("r", "a", 1, "x")), ReturnCode::Include);
    assert_eq!(f.filter_cell(&cell("r", "q", 1, "no")), ReturnCode::NextRow);
    assert!(f.filter_row());
    f.reset();
    assert_eq!(
        f.filter_cell(&cell("r", "q", 1, "yes")),
        ReturnCode::Include
    );
    assert!(!f.filter_row());
    f.reset();
    // missing column: the row passes unless filterIfMissing
    assert!(!f.filter_row());
    let mut g =
        parse_filter("SingleColumnValueFilter('f', 'q', =, 'binary:yes', true, true)").unwrap();
    assert!(g.filter_row());
}

/// RELIABILITY.md D5: nesting is limited, and hostile strings are refused, not a stack
/// overflow. Run on a thread with a 1 MiB stack, half of a server thread's 2 MiB, so the
/// limit is checked to be low enough as well as present.
#[test]
fn deep_nesting_is_refused_with_an_error_not_a_stack_overflow() {
    let run = || {
        let nested = |n: usize| format!("{}PrefixFilter('a'){}", "(".repeat(n), ")".repeat(n));
        assert!(parse_filter(&nested(MAX_FILTER_DEPTH - 1)).is_ok());
        let skips = format!("{}PrefixFilter('a')", "SKIP ".repeat(MAX_FILTER_DEPTH - 1));
        let mut deep_ok = parse_filter(&skips).unwrap();
        // The deepest filter accepted can be evaluated and dropped on the same small stack.
        deep_ok.reset();
        assert!(!deep_ok.filter_row_key(b"abc"));
        let cell = crate::Cell::put("abc", "f", "q", 1, "v");
        assert!(deep_ok.filter_cell(&cell).includes());
        assert!(!deep_ok.filter_row());
        drop(deep_ok.clone());
        for hostile in [
            nested(1200),
            nested(50_000),
            "(".repeat(50_000),
            "SKIP ".repeat(50_000),
            "WHILE ".repeat(50_000) + "PrefixFilter('a')",
            "(SKIP ".repeat(20_000),
        ] {
            let m = err(&hostile);
            assert!(m.contains("nested too deeply"), "{m}");
        }
        // Long flat chains are not nesting: they stay accepted.
        let chain = vec!["PrefixFilter('a')"; 100_000].join(" AND ");
        assert_eq!(list_of(&parse_filter(&chain).unwrap()).1, 100_000);
    };
    std::thread::Builder::new()
        .stack_size(1024 * 1024)
        .spawn(run)
        .unwrap()
        .join()
        .unwrap();
}

/// RELIABILITY.md D23: a request's regex compile cost is bounded: at most
/// MAX_FILTER_REGEXES regex comparators per filter string, refused before any compiles.
#[test]
fn a_filter_string_holds_a_bounded_number_of_regexes() {
    let one = "ValueFilter(=, 'regexstring:(x{1000}){20}')";
    let ok = vec![one; MAX_FILTER_REGEXES].join(" AND ");
    assert!(parse_filter(&ok).is_ok());
    // The one past the limit is refused before it compiles.
    let too_many = vec![one; MAX_FILTER_REGEXES + 1].join(" OR ");
    let m = err(&too_many);
    assert!(m.contains("at most 32 regexstring"), "{m}");
    // Other comparators are not limited.
    let many = vec!["ValueFilter(=, 'substring:x')"; 10_000].join(" AND ");
    assert!(parse_filter(&many).is_ok());
}
