//! The filter language (HBase's `ParseFilter`, SEMANTICS.md §3).
//!
//! ```text
//! expr    := or
//! or      := and { "OR" and }            -- FilterList(MUST_PASS_ONE), chains flattened
//! and     := unary { "AND" unary }       -- FilterList(MUST_PASS_ALL), chains flattened
//! unary   := "SKIP" unary | "WHILE" unary | "(" expr ")" | term
//! term    := Name [spaces] "(" [arg {"," arg}] ")"
//! ```
//! Keywords are upper case. A term runs from its name to the first `)` outside quotes; inside
//! quotes `''` is a literal quote.
//!
//! Nesting (parentheses, `SKIP`, `WHILE`) is limited to [`MAX_FILTER_DEPTH`] levels: the parser
//! recurses once per level, and so do evaluation and drop, on server threads with small
//! stacks. A deeper string is refused with an error instead of overflowing the stack.

use std::collections::BTreeSet;

use bytes::Bytes;

use super::{Comparator, Filter, FilterListOp};
use crate::error::{Error, Result};
use crate::ops::CompareOp;

/// The deepest nesting of parentheses, `SKIP` and `WHILE` a filter string may have (HBase has
/// no limit; real filters nest a few levels).
pub const MAX_FILTER_DEPTH: usize = 256;

/// The most `regexstring:` comparators one filter string may hold. Each compiles within
/// the regex crate's 10 MiB program limit, which takes up to tens of milliseconds, so a
/// request's compile cost stays bounded (RELIABILITY.md D23).
pub const MAX_FILTER_REGEXES: usize = 32;

/// The filter names the language knows (what the shell's `show_filters` lists).
pub const FILTER_NAMES: &[&str] = &[
    "ColumnCountGetFilter",
    "ColumnPaginationFilter",
    "ColumnPrefixFilter",
    "ColumnRangeFilter",
    "ColumnValueFilter",
    "DependentColumnFilter",
    "FamilyFilter",
    "FirstKeyOnlyFilter",
    "InclusiveStopFilter",
    "KeyOnlyFilter",
    "MultipleColumnPrefixFilter",
    "PageFilter",
    "PrefixFilter",
    "QualifierFilter",
    "RowFilter",
    "SingleColumnValueExcludeFilter",
    "SingleColumnValueFilter",
    "TimestampsFilter",
    "ValueFilter",
];

/// Parses a filter string into a [`Filter`].
///
/// # Errors
/// `IllegalArgument` with HBase's messages: "Filter Name X not supported", "Mismatched
/// parenthesis", "Incorrect Filter String", "Invalid compare operator", ...
pub fn parse_filter(s: &str) -> Result<Filter> {
    parse_filter_bytes(s.as_bytes())
}

/// [`parse_filter`] of a filter string given as bytes: quoted operands may hold any bytes,
/// as in HBase, where the filter string is a byte array (Thrift's `filterString`).
///
/// # Errors
/// As [`parse_filter`].
pub fn parse_filter_bytes(s: &[u8]) -> Result<Filter> {
    let mut p = Parser {
        s,
        pos: 0,
        depth: 0,
        regexes: 0,
    };
    p.skip_ws();
    if p.at_end() {
        return Err(Error::illegal("Incorrect Filter String"));
    }
    let f = p.or()?;
    p.skip_ws();
    if !p.at_end() {
        return Err(if p.peek() == Some(b')') {
            Error::illegal("Mismatched parenthesis")
        } else {
            Error::illegal("Incorrect Filter String")
        });
    }
    Ok(f)
}

struct Parser<'a> {
    s: &'a [u8],
    pos: usize,
    /// Nesting levels entered and not left.
    depth: usize,
    /// `regexstring:` comparators met so far.
    regexes: usize,
}

impl Parser<'_> {
    fn at_end(&self) -> bool {
        self.pos >= self.s.len()
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.pos).copied()
    }

    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t')) {
            self.pos += 1;
        }
    }

    /// Consumes keyword `kw` if it stands here followed by a space or `(` (or the end, which
    /// the caller then reports as a missing operand).
    fn keyword(&mut self, kw: &str) -> bool {
        let end = self.pos + kw.len();
        if self.s.get(self.pos..end) != Some(kw.as_bytes()) {
            return false;
        }
        match self.s.get(end) {
            None | Some(b' ' | b'\t' | b'(') => {
                self.pos = end;
                true
            }
            _ => false,
        }
    }

    fn or(&mut self) -> Result<Filter> {
        self.binary(
            "OR",
            FilterListOp::MustPassOne,
            "an OR needs two filters",
            Parser::and,
        )
    }

    fn and(&mut self) -> Result<Filter> {
        self.binary(
            "AND",
            FilterListOp::MustPassAll,
            "an AND needs two filters",
            Parser::unary,
        )
    }

    fn binary(
        &mut self,
        kw: &str,
        op: FilterListOp,
        missing: &str,
        operand: fn(&mut Self) -> Result<Filter>,
    ) -> Result<Filter> {
        let first = operand(self)?;
        let mut items = vec![first];
        loop {
            self.skip_ws();
            if !self.keyword(kw) {
                break;
            }
            self.skip_ws();
            if self.at_end() || self.peek() == Some(b')') {
                return Err(Error::illegal(missing));
            }
            items.push(operand(self)?);
        }
        if items.len() == 1 {
            return Ok(items.pop().expect("one item"));
        }
        Ok(Filter::list(op, items))
    }

    /// Enters one nesting level, or refuses a string nested deeper than the limit.
    fn nest(&mut self) -> Result<()> {
        self.depth += 1;
        if self.depth > MAX_FILTER_DEPTH {
            return Err(Error::illegal(format!(
                "Filter string nested too deeply: more than {MAX_FILTER_DEPTH} levels of parentheses, SKIP or WHILE"
            )));
        }
        Ok(())
    }

    fn unary(&mut self) -> Result<Filter> {
        self.nest()?;
        let f = self.unary_at_depth();
        self.depth -= 1;
        f
    }

    fn unary_at_depth(&mut self) -> Result<Filter> {
        self.skip_ws();
        for (kw, msg) in [
            ("SKIP", "a SKIP wraps a filter"),
            ("WHILE", "a WHILE wraps a filter"),
        ] {
            if self.keyword(kw) {
                self.skip_ws();
                if self.at_end() || self.peek() == Some(b')') {
                    return Err(Error::illegal(msg));
                }
                let inner = Box::new(self.unary()?);
                return Ok(if kw == "SKIP" {
                    Filter::Skip {
                        inner,
                        filter_row: false,
                    }
                } else {
                    Filter::WhileMatch { inner, done: false }
                });
            }
        }
        if self.peek() == Some(b'(') {
            self.pos += 1;
            let f = self.or()?;
            self.skip_ws();
            if self.peek() != Some(b')') {
                return Err(Error::illegal("Mismatched parenthesis"));
            }
            self.pos += 1;
            return Ok(f);
        }
        self.term()
    }

    fn term(&mut self) -> Result<Filter> {
        let start = self.pos;
        while let Some(c) = self.peek() {
            if c == b'(' || c == b' ' || c == b'\t' || c == b')' {
                break;
            }
            self.pos += 1;
        }
        let name = std::str::from_utf8(&self.s[start..self.pos])
            .map_err(|_| Error::illegal("Incorrect Filter String"))?
            .to_owned();
        if name.is_empty() {
            return Err(Error::illegal("Incorrect Filter String"));
        }
        self.skip_ws();
        if self.peek() != Some(b'(') {
            return Err(Error::illegal("Incorrect Filter String"));
        }
        self.pos += 1;
        let args = self.arguments()?;
        // Counted before anything compiles.
        self.regexes += args.iter().filter(|a| a.is_regex_comparator()).count();
        if self.regexes > MAX_FILTER_REGEXES {
            return Err(Error::illegal(format!(
                "A filter string may hold at most {MAX_FILTER_REGEXES} regexstring comparators"
            )));
        }
        build(&name, &args)
    }

    /// Reads arguments up to the closing `)` (consumed), splitting at commas outside quotes.
    fn arguments(&mut self) -> Result<Vec<Arg>> {
        let mut args = Vec::new();
        loop {
            self.skip_ws();
            match self.peek() {
                None => return Err(Error::illegal("Mismatched parenthesis")),
                Some(b')') if args.is_empty() => {
                    self.pos += 1;
                    return Ok(args);
                }
                _ => {}
            }
            args.push(self.argument()?);
            self.skip_ws();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b')') => {
                    self.pos += 1;
                    return Ok(args);
                }
                None => return Err(Error::illegal("Mismatched parenthesis")),
                Some(_) => return Err(Error::illegal("Incorrect Filter String")),
            }
        }
    }

    fn argument(&mut self) -> Result<Arg> {
        if self.peek() == Some(b'\'') {
            self.pos += 1;
            let mut out = Vec::new();
            loop {
                match self.peek() {
                    None => {
                        return Err(Error::illegal(
                            "Incorrect Filter String: unterminated quote",
                        ))
                    }
                    Some(b'\'') if self.s.get(self.pos + 1) == Some(&b'\'') => {
                        out.push(b'\'');
                        self.pos += 2;
                    }
                    Some(b'\'') => {
                        self.pos += 1;
                        return Ok(Arg::Quoted(Bytes::from(out)));
                    }
                    Some(c) => {
                        out.push(c);
                        self.pos += 1;
                    }
                }
            }
        }
        let start = self.pos;
        while let Some(c) = self.peek() {
            if matches!(c, b' ' | b'\t' | b',' | b')') {
                break;
            }
            self.pos += 1;
        }
        if start == self.pos {
            return Err(Error::illegal("Incorrect Filter String"));
        }
        Ok(Arg::Bare(
            String::from_utf8_lossy(&self.s[start..self.pos]).into_owned(),
        ))
    }
}

#[derive(Debug)]
enum Arg {
    Quoted(Bytes),
    Bare(String),
}

impl Arg {
    fn bytes(&self) -> Result<Bytes> {
        match self {
            Arg::Quoted(b) => Ok(b.clone()),
            Arg::Bare(s) => Err(Error::illegal(format!(
                "Argument {s} should be a quoted string"
            ))),
        }
    }

    fn is_regex_comparator(&self) -> bool {
        matches!(self, Arg::Quoted(b) if b.starts_with(b"regexstring:"))
    }

    fn bare(&self) -> &str {
        match self {
            Arg::Bare(s) => s,
            Arg::Quoted(_) => "",
        }
    }

    fn long(&self) -> Result<i64> {
        let s = self.bare();
        check_number(s, "Long")?;
        s.parse()
            .map_err(|_| Error::illegal("Long Argument too large"))
    }

    fn int(&self) -> Result<i32> {
        let s = self.bare();
        check_number(s, "Integer")?;
        s.parse()
            .map_err(|_| Error::illegal("Integer Argument too large"))
    }

    fn boolean(&self) -> Result<bool> {
        match self.bare().to_ascii_lowercase().as_str() {
            "true" => Ok(true),
            "false" => Ok(false),
            _ => Err(Error::illegal("Incorrect Boolean Expression")),
        }
    }

    fn compare_op(&self) -> Result<CompareOp> {
        Ok(match self.bare() {
            "<" => CompareOp::Less,
            "<=" => CompareOp::LessOrEqual,
            "=" => CompareOp::Equal,
            "!=" => CompareOp::NotEqual,
            ">=" => CompareOp::GreaterOrEqual,
            ">" => CompareOp::Greater,
            _ => return Err(Error::illegal("Invalid compare operator")),
        })
    }

    fn comparator(&self) -> Result<Comparator> {
        let b = self.bytes()?;
        let Some(colon) = b.iter().position(|&c| c == b':') else {
            return Err(Error::illegal("Incorrect comparator"));
        };
        let value = b.slice(colon + 1..);
        let text = || String::from_utf8_lossy(&value).into_owned();
        match &b[..colon] {
            b"binary" => Ok(Comparator::Binary(value)),
            b"binaryprefix" => Ok(Comparator::BinaryPrefix(value)),
            b"regexstring" => Comparator::regex(&text()),
            b"substring" => Ok(Comparator::substring(&text())),
            _ => Err(Error::illegal("Incorrect comparatorType")),
        }
    }
}

fn check_number(s: &str, kind: &str) -> Result<()> {
    let digits = s.strip_prefix('-').unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_digit()) {
        return Err(Error::illegal(format!("Incorrect {kind} Argument: {s}")));
    }
    Ok(())
}

fn expect_args(name: &str, args: &[Arg], allowed: &[usize]) -> Result<()> {
    if allowed.contains(&args.len()) {
        return Ok(());
    }
    let expected: Vec<String> = allowed.iter().map(ToString::to_string).collect();
    Err(Error::illegal(format!(
        "Incorrect argument list: {name} expects {} arguments but got {}",
        expected.join(" or "),
        args.len()
    )))
}

fn non_negative(n: i64, what: &str) -> Result<u32> {
    u32::try_from(n)
        .map_err(|_| Error::illegal(format!("{what} must be non-negative and fit an int")))
}

fn compare_args(name: &str, args: &[Arg]) -> Result<(CompareOp, Comparator)> {
    expect_args(name, args, &[2])?;
    let op = args[0].compare_op()?;
    let cmp = args[1].comparator()?;
    check_op(op, &cmp)?;
    Ok((op, cmp))
}

fn check_op(op: CompareOp, cmp: &Comparator) -> Result<()> {
    if cmp.equality_only() && !matches!(op, CompareOp::Equal | CompareOp::NotEqual) {
        return Err(Error::illegal(
            "A regexstring comparator and substring comparator can only be used with EQUAL and NOT_EQUAL",
        ));
    }
    Ok(())
}

fn optional_bytes(b: Bytes) -> Option<Bytes> {
    (!b.is_empty()).then_some(b)
}

#[allow(clippy::too_many_lines)] // one arm per filter: splitting would scatter the table
fn build(name: &str, args: &[Arg]) -> Result<Filter> {
    Ok(match name {
        "KeyOnlyFilter" => {
            expect_args(name, args, &[0, 1])?;
            let len_as_val = args.first().map(Arg::boolean).transpose()?.unwrap_or(false);
            Filter::KeyOnly { len_as_val }
        }
        "FirstKeyOnlyFilter" => {
            expect_args(name, args, &[0])?;
            Filter::FirstKeyOnly { found: false }
        }
        "PrefixFilter" => {
            expect_args(name, args, &[1])?;
            Filter::prefix(args[0].bytes()?)
        }
        "ColumnPrefixFilter" => {
            expect_args(name, args, &[1])?;
            Filter::ColumnPrefix(args[0].bytes()?)
        }
        "MultipleColumnPrefixFilter" => {
            let set: Result<BTreeSet<Bytes>> = args.iter().map(Arg::bytes).collect();
            Filter::MultipleColumnPrefix(set?)
        }
        "ColumnCountGetFilter" => {
            expect_args(name, args, &[1])?;
            Filter::ColumnCountGet {
                limit: non_negative(args[0].int()?.into(), "limit")?,
                count: 0,
            }
        }
        "PageFilter" => {
            expect_args(name, args, &[1])?;
            let n = args[0].long()?;
            let page_size =
                u64::try_from(n).map_err(|_| Error::illegal("page size must be >= 0"))?;
            Filter::page(page_size)
        }
        "ColumnPaginationFilter" => {
            expect_args(name, args, &[2])?;
            let limit = non_negative(args[0].int()?.into(), "limit")?;
            let offset = non_negative(args[1].int()?.into(), "offset")?;
            Filter::ColumnPagination {
                limit,
                offset,
                count: 0,
            }
        }
        "InclusiveStopFilter" => {
            expect_args(name, args, &[1])?;
            Filter::InclusiveStop {
                stop_row: args[0].bytes()?,
                done: false,
                reversed: false,
            }
        }
        "TimestampsFilter" => {
            let mut set = BTreeSet::new();
            for a in args {
                let ts = a.long()?;
                if ts < 0 {
                    return Err(Error::illegal(format!(
                        "Timestamps must not be negative: {ts}"
                    )));
                }
                set.insert(ts);
            }
            Filter::Timestamps(set)
        }
        "RowFilter" => {
            let (op, cmp) = compare_args(name, args)?;
            Filter::Row {
                op,
                cmp,
                filter_out_row: false,
            }
        }
        "FamilyFilter" => {
            let (op, cmp) = compare_args(name, args)?;
            Filter::Family { op, cmp }
        }
        "QualifierFilter" => {
            let (op, cmp) = compare_args(name, args)?;
            Filter::Qualifier { op, cmp }
        }
        "ValueFilter" => {
            let (op, cmp) = compare_args(name, args)?;
            Filter::Value { op, cmp }
        }
        "DependentColumnFilter" => {
            expect_args(name, args, &[2, 3, 5])?;
            let drop_dependent = args.get(2).map(Arg::boolean).transpose()?.unwrap_or(false);
            let condition = if args.len() == 5 {
                let (op, cmp) = compare_args(name, &args[3..])?;
                Some((op, cmp))
            } else {
                None
            };
            Filter::DependentColumn {
                family: args[0].bytes()?,
                qualifier: args[1].bytes()?,
                drop_dependent,
                condition,
                stamps: BTreeSet::new(),
            }
        }
        "SingleColumnValueFilter" | "SingleColumnValueExcludeFilter" => {
            expect_args(name, args, &[4, 6])?;
            let (op, cmp) = compare_args(name, &args[2..4])?;
            let (missing, latest) = if args.len() == 6 {
                (args[4].boolean()?, args[5].boolean()?)
            } else {
                (false, true)
            };
            let exclude = name == "SingleColumnValueExcludeFilter";
            Filter::single_column_value(
                args[0].bytes()?,
                args[1].bytes()?,
                op,
                cmp,
                missing,
                latest,
                exclude,
            )
        }
        "ColumnRangeFilter" => {
            expect_args(name, args, &[4])?;
            Filter::ColumnRange {
                min: optional_bytes(args[0].bytes()?),
                min_inclusive: args[1].boolean()?,
                max: optional_bytes(args[2].bytes()?),
                max_inclusive: args[3].boolean()?,
            }
        }
        "ColumnValueFilter" => {
            expect_args(name, args, &[4])?;
            let (op, cmp) = compare_args(name, &args[2..4])?;
            Filter::ColumnValue {
                family: args[0].bytes()?,
                qualifier: args[1].bytes()?,
                op,
                cmp,
                found: false,
            }
        }
        _ => return Err(Error::illegal(format!("Filter Name {name} not supported"))),
    })
}
