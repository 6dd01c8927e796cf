//! HBase REST's JSON filter format (`ScannerModel.FilterModel`), as a scanner spec's
//! `filter` carries it: `{"type":"RowFilter","op":"EQUAL","comparator":{"type":
//! "BinaryComparator","value":B64}}`, `{"type":"FilterList","op":"MUST_PASS_ALL",
//! "filters":[...]}`, and so on for every filter the filter language has.
//!
//! Byte operands (`value` of Binary comparators and of PrefixFilter, ColumnPrefixFilter,
//! InclusiveStopFilter; `family`, `qualifier`, `minColumn`, `maxColumn`, `prefixes`) are
//! base64; regex and substring operands are plain text; PageFilter's `value` is a number
//! in a string. A model is written out as a filter-language string and parsed by the one
//! filter parser, so both front doors build the same filter with the same limits (depth,
//! regex count).

use basalt_model::filter::{parse_filter_bytes, quote_operand as quote, Filter, MAX_FILTER_DEPTH};
use serde_json::Value;

use crate::rest::cellset::unb64;
use crate::rest::RestError;

/// Parses a filter in HBase's JSON format; `None` for a filter that keeps everything (an
/// empty FilterList).
///
/// # Errors
/// A 400 naming what is wrong.
pub fn parse_json_filter(text: &str) -> Result<Option<Filter>, RestError> {
    let v: Value = serde_json::from_str(text)
        .map_err(|e| RestError::bad_request(format!("malformed filter JSON: {e}")))?;
    let mut lang = Vec::new();
    if !language(&v, 0, &mut lang)? {
        return Ok(None);
    }
    parse_filter_bytes(&lang)
        .map(Some)
        .map_err(|e| RestError::bad_request(format!("invalid filter: {e}")))
}

fn field<'a>(v: &'a Value, name: &str, ty: &str) -> Result<&'a Value, RestError> {
    v.get(name)
        .filter(|f| !f.is_null())
        .ok_or_else(|| RestError::bad_request(format!("{ty} needs '{name}'")))
}

fn text<'a>(v: &'a Value, name: &str, ty: &str) -> Result<&'a str, RestError> {
    field(v, name, ty)?
        .as_str()
        .ok_or_else(|| RestError::bad_request(format!("{ty}'s '{name}' must be a string")))
}

/// A numeric field given as a number or a numeric string.
fn int(v: &Value, name: &str, ty: &str) -> Result<i64, RestError> {
    let f = field(v, name, ty)?;
    f.as_i64()
        .or_else(|| f.as_str().and_then(|s| s.trim().parse().ok()))
        .ok_or_else(|| RestError::bad_request(format!("{ty}'s '{name}' must be an integer")))
}

fn flag(v: &Value, name: &str, default: bool) -> Result<bool, RestError> {
    match v.get(name) {
        None | Some(Value::Null) => Ok(default),
        Some(Value::Bool(b)) => Ok(*b),
        Some(Value::String(s)) if s.eq_ignore_ascii_case("true") => Ok(true),
        Some(Value::String(s)) if s.eq_ignore_ascii_case("false") => Ok(false),
        Some(other) => Err(RestError::bad_request(format!(
            "'{name}' must be true or false, not {other}"
        ))),
    }
}

fn quoted_b64(out: &mut Vec<u8>, v: &Value, name: &str, ty: &str) -> Result<(), RestError> {
    let bytes = unb64(&format!("{ty}'s '{name}'"), text(v, name, ty)?)?;
    quote(out, &bytes);
    Ok(())
}

/// HBase's `CompareOperator` name as the filter language writes it.
fn op(v: &Value, ty: &str) -> Result<&'static str, RestError> {
    Ok(match text(v, "op", ty)? {
        "LESS" => "<",
        "LESS_OR_EQUAL" => "<=",
        "EQUAL" => "=",
        "NOT_EQUAL" => "!=",
        "GREATER_OR_EQUAL" => ">=",
        "GREATER" => ">",
        other => {
            return Err(RestError::bad_request(format!(
                "{ty}'s op '{other}' is not a compare operator (LESS, LESS_OR_EQUAL, EQUAL, NOT_EQUAL, GREATER_OR_EQUAL, GREATER)"
            )))
        }
    })
}

/// `'binary:..'` and friends, from a `ByteArrayComparableModel`.
fn comparator(out: &mut Vec<u8>, v: &Value, ty: &str) -> Result<(), RestError> {
    let c = field(v, "comparator", ty)?;
    let kind = text(c, "type", "a comparator")?;
    let (prefix, operand): (&[u8], Vec<u8>) = match kind {
        "BinaryComparator" => (b"binary:", unb64("a comparator's value", text(c, "value", kind)?)?.to_vec()),
        "BinaryPrefixComparator" => (
            b"binaryprefix:",
            unb64("a comparator's value", text(c, "value", kind)?)?.to_vec(),
        ),
        "RegexStringComparator" => (b"regexstring:", text(c, "value", kind)?.as_bytes().to_vec()),
        "SubstringComparator" => (b"substring:", text(c, "value", kind)?.as_bytes().to_vec()),
        other => {
            return Err(RestError::bad_request(format!(
                "comparator {other} is not one the filter language has (BinaryComparator, BinaryPrefixComparator, RegexStringComparator, SubstringComparator)"
            )))
        }
    };
    let mut operand_with_prefix = prefix.to_vec();
    operand_with_prefix.extend_from_slice(&operand);
    quote(out, &operand_with_prefix);
    Ok(())
}

fn push(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(s.as_bytes());
}

/// Writes the filter-language form of `v` into `out`; false when the model filters
/// nothing (an empty FilterList).
fn language(v: &Value, depth: usize, out: &mut Vec<u8>) -> Result<bool, RestError> {
    if depth > MAX_FILTER_DEPTH {
        return Err(RestError::bad_request(format!(
            "the filter nests deeper than {MAX_FILTER_DEPTH}"
        )));
    }
    let ty = text(v, "type", "a filter")?;
    match ty {
        "FilterList" => return filter_list(v, depth, out),
        "SkipFilter" | "WhileMatchFilter" => {
            let inner = v
                .get("filters")
                .and_then(Value::as_array)
                .and_then(|f| f.first())
                .ok_or_else(|| {
                    RestError::bad_request(format!("{ty} needs 'filters' with one filter"))
                })?;
            push(
                out,
                if ty == "SkipFilter" {
                    "SKIP ("
                } else {
                    "WHILE ("
                },
            );
            if !language(inner, depth + 1, out)? {
                return Err(RestError::bad_request(format!(
                    "{ty} wraps an empty FilterList"
                )));
            }
            push(out, ")");
            return Ok(true);
        }
        _ => {}
    }
    push(out, ty);
    push(out, "(");
    simple(v, ty, out)?;
    push(out, ")");
    Ok(true)
}

fn filter_list(v: &Value, depth: usize, out: &mut Vec<u8>) -> Result<bool, RestError> {
    let joiner = match v
        .get("op")
        .and_then(Value::as_str)
        .unwrap_or("MUST_PASS_ALL")
    {
        "MUST_PASS_ALL" => " AND ",
        "MUST_PASS_ONE" => " OR ",
        other => {
            return Err(RestError::bad_request(format!(
                "FilterList's op '{other}' is not MUST_PASS_ALL or MUST_PASS_ONE"
            )))
        }
    };
    let filters = v
        .get("filters")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    let mut any = false;
    for f in filters {
        let mut part = Vec::new();
        if !language(f, depth + 1, &mut part)? {
            continue;
        }
        if any {
            push(out, joiner);
        }
        push(out, "(");
        out.extend_from_slice(&part);
        push(out, ")");
        any = true;
    }
    Ok(any)
}

/// The arguments of a filter that is not a list or wrapper.
fn simple(v: &Value, ty: &str, out: &mut Vec<u8>) -> Result<(), RestError> {
    match ty {
        "KeyOnlyFilter" | "FirstKeyOnlyFilter" => {}
        "PrefixFilter" | "ColumnPrefixFilter" | "InclusiveStopFilter" => {
            quoted_b64(out, v, "value", ty)?;
        }
        "PageFilter" => push(out, &int(v, "value", ty)?.to_string()),
        "ColumnCountGetFilter" => push(out, &int(v, "limit", ty)?.to_string()),
        "ColumnPaginationFilter" => {
            let (limit, offset) = (int(v, "limit", ty)?, int(v, "offset", ty)?);
            push(out, &format!("{limit}, {offset}"));
        }
        "RowFilter" | "FamilyFilter" | "QualifierFilter" | "ValueFilter" => {
            push(out, op(v, ty)?);
            push(out, ", ");
            comparator(out, v, ty)?;
        }
        "SingleColumnValueFilter" | "SingleColumnValueExcludeFilter" | "ColumnValueFilter" => {
            quoted_b64(out, v, "family", ty)?;
            push(out, ", ");
            quoted_b64(out, v, "qualifier", ty)?;
            push(out, ", ");
            push(out, op(v, ty)?);
            push(out, ", ");
            comparator(out, v, ty)?;
            if ty != "ColumnValueFilter" {
                let missing = flag(v, "ifMissing", false)?;
                let latest = flag(v, "latestVersion", true)?;
                push(out, &format!(", {missing}, {latest}"));
            }
        }
        "ColumnRangeFilter" => {
            quoted_b64(out, v, "minColumn", ty)?;
            push(
                out,
                &format!(", {}, ", flag(v, "minColumnInclusive", true)?),
            );
            quoted_b64(out, v, "maxColumn", ty)?;
            push(out, &format!(", {}", flag(v, "maxColumnInclusive", false)?));
        }
        "DependentColumnFilter" => {
            quoted_b64(out, v, "family", ty)?;
            push(out, ", ");
            quoted_b64(out, v, "qualifier", ty)?;
            push(
                out,
                &format!(", {}", flag(v, "dropDependentColumn", false)?),
            );
            if v.get("op").is_some_and(|o| !o.is_null()) {
                push(out, ", ");
                push(out, op(v, ty)?);
                push(out, ", ");
                comparator(out, v, ty)?;
            }
        }
        "MultipleColumnPrefixFilter" | "TimestampsFilter" => lists(v, ty, out)?,
        other => {
            return Err(RestError::bad_request(format!(
                "filter type {other} is not one the filter language has"
            )))
        }
    }
    Ok(())
}

/// The arguments of the filters that take a list.
fn lists(v: &Value, ty: &str, out: &mut Vec<u8>) -> Result<(), RestError> {
    if ty == "MultipleColumnPrefixFilter" {
        let prefixes = field(v, "prefixes", ty)?
            .as_array()
            .ok_or_else(|| RestError::bad_request(format!("{ty}'s 'prefixes' must be a list")))?;
        for (i, p) in prefixes.iter().enumerate() {
            if i > 0 {
                push(out, ", ");
            }
            let p = p.as_str().ok_or_else(|| {
                RestError::bad_request(format!("{ty}'s prefixes must be base64 strings"))
            })?;
            quote(out, &unb64("a prefix", p)?);
        }
    } else {
        let stamps = field(v, "timestamps", ty)?
            .as_array()
            .ok_or_else(|| RestError::bad_request(format!("{ty}'s 'timestamps' must be a list")))?;
        let mut parts = Vec::with_capacity(stamps.len());
        for t in stamps {
            let ts = t
                .as_i64()
                .or_else(|| t.as_str().and_then(|s| s.parse().ok()))
                .ok_or_else(|| RestError::bad_request(format!("timestamp {t} is not a long")))?;
            parts.push(ts.to_string());
        }
        push(out, &parts.join(", "));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use basalt_model::filter::parse_filter;

    fn same(json: &str, language: &str) {
        let got = parse_json_filter(json).expect(json).expect("a filter");
        assert_eq!(got, parse_filter(language).expect(language), "{json}");
    }

    #[test]
    fn each_filter_type_builds_what_the_filter_language_builds() {
        same(
            r#"{"type":"PrefixFilter","value":"cm93LTg="}"#,
            "PrefixFilter('row-8')",
        );
        same(
            r#"{"op":"EQUAL","type":"RowFilter","comparator":{"value":"cm93LTE=","type":"BinaryComparator"}}"#,
            "RowFilter(=, 'binary:row-1')",
        );
        same(
            r#"{"type":"RowFilter","op":"EQUAL","comparator":{"type":"RegexStringComparator","value":"^pow_1.+"}}"#,
            "RowFilter(=, 'regexstring:^pow_1.+')",
        );
        same(
            r#"{"op":"EQUAL","type":"ValueFilter","comparator":{"value":"this","type":"SubstringComparator"}}"#,
            "ValueFilter(=, 'substring:this')",
        );
        same(
            r#"{"op":"LESS","type":"SingleColumnValueFilter","family":"Y2Y=","qualifier":"YWdl","comparator":{"value":"AAAAAAAAAAo=","type":"BinaryComparator"}}"#,
            "SingleColumnValueFilter('cf', 'age', <, 'binary:\x00\x00\x00\x00\x00\x00\x00\x0a', false, true)",
        );
        same(
            r#"{"type":"FilterList","op":"MUST_PASS_ONE","filters":[{"type":"KeyOnlyFilter"},{"type":"PageFilter","value":"10"}]}"#,
            "(KeyOnlyFilter()) OR (PageFilter(10))",
        );
        same(
            r#"{"type":"WhileMatchFilter","filters":[{"type":"FamilyFilter","op":"NOT_EQUAL","comparator":{"type":"BinaryPrefixComparator","value":"YQ=="}}]}"#,
            "WHILE FamilyFilter(!=, 'binaryprefix:a')",
        );
        same(
            r#"{"type":"ColumnRangeFilter","minColumn":"YQ==","minColumnInclusive":true,"maxColumn":"Yw==","maxColumnInclusive":false}"#,
            "ColumnRangeFilter('a', true, 'c', false)",
        );
        same(
            r#"{"type":"ColumnPaginationFilter","limit":2,"offset":1}"#,
            "ColumnPaginationFilter(2, 1)",
        );
        same(
            r#"{"type":"ColumnCountGetFilter","limit":3}"#,
            "ColumnCountGetFilter(3)",
        );
        same(
            r#"{"type":"TimestampsFilter","timestamps":[5,6]}"#,
            "TimestampsFilter(5, 6)",
        );
        same(
            r#"{"type":"MultipleColumnPrefixFilter","prefixes":["YQ==","Jw=="]}"#,
            "MultipleColumnPrefixFilter('a', '''')",
        );
        same(
            r#"{"type":"DependentColumnFilter","family":"Zg==","qualifier":"cQ==","dropDependentColumn":true}"#,
            "DependentColumnFilter('f', 'q', true)",
        );
        same(
            r#"{"type":"SkipFilter","filters":[{"type":"FirstKeyOnlyFilter"}]}"#,
            "SKIP FirstKeyOnlyFilter()",
        );
        same(
            r#"{"type":"InclusiveStopFilter","value":"eg=="}"#,
            "InclusiveStopFilter('z')",
        );
        same(
            r#"{"type":"ColumnPrefixFilter","value":"cQ=="}"#,
            "ColumnPrefixFilter('q')",
        );
    }

    #[test]
    fn an_empty_filter_list_filters_nothing() {
        assert_eq!(
            parse_json_filter(r#"{"type":"FilterList","op":"MUST_PASS_ALL","filters":[]}"#).ok(),
            Some(None)
        );
    }

    #[test]
    fn bad_filters_are_400s_naming_the_problem() {
        for (json, says) in [
            ("{", "malformed"),
            (r#"{"type":"NoSuchFilter"}"#, "NoSuchFilter"),
            (
                r#"{"type":"RowFilter","op":"ROUGHLY","comparator":{"type":"BinaryComparator","value":"YQ=="}}"#,
                "ROUGHLY",
            ),
            (
                r#"{"type":"RowFilter","op":"EQUAL","comparator":{"type":"NullComparator"}}"#,
                "NullComparator",
            ),
            (r#"{"type":"PrefixFilter","value":"@@"}"#, "base64"),
            (r#"{"type":"PrefixFilter"}"#, "value"),
            (
                r#"{"type":"RowFilter","op":"EQUAL","comparator":{"type":"RegexStringComparator","value":"("}}"#,
                "invalid filter",
            ),
        ] {
            let e = parse_json_filter(json).expect_err(json);
            assert_eq!(e.status, axum::http::StatusCode::BAD_REQUEST);
            assert!(e.message.contains(says), "{json}: {}", e.message);
        }
        let mut deep = r#"{"type":"KeyOnlyFilter"}"#.to_owned();
        for _ in 0..200 {
            deep = format!(r#"{{"type":"SkipFilter","filters":[{deep}]}}"#);
        }
        assert!(parse_json_filter(&deep).is_err());
    }
}
