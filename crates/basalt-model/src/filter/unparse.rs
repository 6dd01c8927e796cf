//! A filter back to the filter language: what the native API, the Thrift gateway and the
//! REST gateway send over the wire. `parse_filter_bytes(f.to_filter_string())` gives `f`
//! again, its evaluation state reset.

use bytes::Bytes;

use super::list::FilterListOp;
use super::{Comparator, Filter};

impl Filter {
    /// The filter as a filter-language string (bytes: quoted operands are raw bytes).
    #[must_use]
    pub fn to_filter_string(&self) -> Vec<u8> {
        let mut out = Vec::new();
        write_filter(&mut out, self);
        out
    }
}

fn write_filter(out: &mut Vec<u8>, f: &Filter) {
    match f {
        Filter::List(list) => {
            let op: &[u8] = match list.op {
                FilterListOp::MustPassAll => b" AND ",
                FilterListOp::MustPassOne => b" OR ",
            };
            for (i, inner) in list.filters.iter().enumerate() {
                if i > 0 {
                    out.extend_from_slice(op);
                }
                out.push(b'(');
                write_filter(out, inner);
                out.push(b')');
            }
        }
        Filter::Skip { inner, .. } | Filter::WhileMatch { inner, .. } => {
            let kw: &[u8] = if matches!(f, Filter::Skip { .. }) {
                b"SKIP ("
            } else {
                b"WHILE ("
            };
            out.extend_from_slice(kw);
            write_filter(out, inner);
            out.push(b')');
        }
        simple => write_simple(out, simple),
    }
}

/// One argument of a filter call.
enum A<'a> {
    Str(&'a [u8]),
    Cmp(&'a Comparator),
    Raw(String),
}

fn call(out: &mut Vec<u8>, name: &str, args: &[A<'_>]) {
    out.extend_from_slice(name.as_bytes());
    out.push(b'(');
    for (i, a) in args.iter().enumerate() {
        if i > 0 {
            out.extend_from_slice(b", ");
        }
        match a {
            A::Str(b) => quoted(out, b),
            A::Cmp(c) => quoted(out, &comparator(c)),
            A::Raw(s) => out.extend_from_slice(s.as_bytes()),
        }
    }
    out.push(b')');
}

/// Appends `b` as a quoted operand of the filter language (`'` doubled), so any bytes parse
/// back as themselves.
pub fn quoted(out: &mut Vec<u8>, b: &[u8]) {
    out.push(b'\'');
    for &c in b {
        if c == b'\'' {
            out.push(b'\'');
        }
        out.push(c);
    }
    out.push(b'\'');
}

fn comparator(c: &Comparator) -> Vec<u8> {
    let (kind, operand): (&str, &[u8]) = match c {
        Comparator::Binary(b) => ("binary:", b),
        Comparator::BinaryPrefix(b) => ("binaryprefix:", b),
        Comparator::RegexString { pattern, .. } => ("regexstring:", pattern.as_bytes()),
        Comparator::Substring(s) => ("substring:", s.as_bytes()),
    };
    [kind.as_bytes(), operand].concat()
}

fn raw(v: impl ToString) -> A<'static> {
    A::Raw(v.to_string())
}

#[allow(clippy::too_many_lines)] // one arm per filter, as in the parser
fn write_simple(out: &mut Vec<u8>, f: &Filter) {
    let empty = Bytes::new();
    match f {
        Filter::KeyOnly { len_as_val } => call(out, "KeyOnlyFilter", &[raw(len_as_val)]),
        Filter::FirstKeyOnly { .. } => call(out, "FirstKeyOnlyFilter", &[]),
        Filter::Prefix { prefix, .. } => call(out, "PrefixFilter", &[A::Str(prefix)]),
        Filter::ColumnPrefix(p) => call(out, "ColumnPrefixFilter", &[A::Str(p)]),
        Filter::MultipleColumnPrefix(set) => {
            let args: Vec<A<'_>> = set.iter().map(|p| A::Str(p)).collect();
            call(out, "MultipleColumnPrefixFilter", &args);
        }
        Filter::ColumnCountGet { limit, .. } => call(out, "ColumnCountGetFilter", &[raw(limit)]),
        Filter::Page { page_size, .. } => call(out, "PageFilter", &[raw(page_size)]),
        Filter::ColumnPagination { limit, offset, .. } => {
            call(out, "ColumnPaginationFilter", &[raw(limit), raw(offset)]);
        }
        Filter::InclusiveStop { stop_row, .. } => {
            call(out, "InclusiveStopFilter", &[A::Str(stop_row)]);
        }
        Filter::Timestamps(set) => {
            let args: Vec<A<'_>> = set.iter().map(raw).collect();
            call(out, "TimestampsFilter", &args);
        }
        Filter::Row { op, cmp, .. } => call(out, "RowFilter", &[raw(op.symbol()), A::Cmp(cmp)]),
        Filter::Family { op, cmp } => call(out, "FamilyFilter", &[raw(op.symbol()), A::Cmp(cmp)]),
        Filter::Qualifier { op, cmp } => {
            call(out, "QualifierFilter", &[raw(op.symbol()), A::Cmp(cmp)]);
        }
        Filter::Value { op, cmp } => call(out, "ValueFilter", &[raw(op.symbol()), A::Cmp(cmp)]),
        Filter::DependentColumn {
            family,
            qualifier,
            drop_dependent,
            condition,
            ..
        } => {
            let mut args = vec![A::Str(family), A::Str(qualifier), raw(drop_dependent)];
            if let Some((op, cmp)) = condition {
                args.extend([raw(op.symbol()), A::Cmp(cmp)]);
            }
            call(out, "DependentColumnFilter", &args);
        }
        Filter::SingleColumnValue(s) => {
            let name = if s.exclude {
                "SingleColumnValueExcludeFilter"
            } else {
                "SingleColumnValueFilter"
            };
            let args = [
                A::Str(&s.family),
                A::Str(&s.qualifier),
                raw(s.op.symbol()),
                A::Cmp(&s.cmp),
                raw(s.filter_if_missing),
                raw(s.latest_version_only),
            ];
            call(out, name, &args);
        }
        Filter::ColumnRange {
            min,
            min_inclusive,
            max,
            max_inclusive,
        } => {
            let args = [
                A::Str(min.as_ref().unwrap_or(&empty)),
                raw(min_inclusive),
                A::Str(max.as_ref().unwrap_or(&empty)),
                raw(max_inclusive),
            ];
            call(out, "ColumnRangeFilter", &args);
        }
        Filter::ColumnValue {
            family,
            qualifier,
            op,
            cmp,
            ..
        } => {
            let args = [
                A::Str(family),
                A::Str(qualifier),
                raw(op.symbol()),
                A::Cmp(cmp),
            ];
            call(out, "ColumnValueFilter", &args);
        }
        Filter::List(_) | Filter::Skip { .. } | Filter::WhileMatch { .. } => write_filter(out, f),
    }
}

#[cfg(test)]
mod tests {
    use super::super::{parse_filter, parse_filter_bytes};

    #[test]
    fn every_filter_survives_a_round_trip() {
        let cases = [
            "KeyOnlyFilter()",
            "KeyOnlyFilter(true)",
            "FirstKeyOnlyFilter()",
            "PrefixFilter('it''s')",
            "ColumnPrefixFilter('c')",
            "MultipleColumnPrefixFilter('a', 'b')",
            "ColumnCountGetFilter(3)",
            "PageFilter(10)",
            "ColumnPaginationFilter(2, 1)",
            "InclusiveStopFilter('r9')",
            "TimestampsFilter(1, 5, 9)",
            "RowFilter(>=, 'binary:r1')",
            "FamilyFilter(=, 'binaryprefix:f')",
            "QualifierFilter(!=, 'regexstring:^a.*b$')",
            "ValueFilter(=, 'substring:ABC')",
            "DependentColumnFilter('f', 'q')",
            "DependentColumnFilter('f', 'q', true, <, 'binary:v')",
            "SingleColumnValueFilter('f', 'q', =, 'binary:v')",
            "SingleColumnValueExcludeFilter('f', 'q', =, 'binary:v', true, false)",
            "ColumnRangeFilter('a', true, '', false)",
            "ColumnValueFilter('f', 'q', >, 'binary:1')",
            "PrefixFilter('r') AND PageFilter(1) AND FirstKeyOnlyFilter()",
            "(RowFilter(=, 'binary:Row 1') AND TimestampsFilter(7, 8)) OR KeyOnlyFilter()",
            "SKIP ValueFilter(=, 'binary:0')",
            "WHILE RowFilter(<, 'binary:m') AND PageFilter(2)",
        ];
        for s in cases {
            let f = parse_filter(s).unwrap();
            let text = f.to_filter_string();
            let again = parse_filter_bytes(&text).unwrap();
            assert_eq!(again, f, "{s} -> {}", String::from_utf8_lossy(&text));
        }
    }

    #[test]
    fn binary_operands_survive_as_bytes() {
        let f = super::super::Filter::prefix(bytes::Bytes::from_static(b"\x00\xff'x"));
        let text = f.to_filter_string();
        assert_eq!(parse_filter_bytes(&text).unwrap(), f);
    }
}
