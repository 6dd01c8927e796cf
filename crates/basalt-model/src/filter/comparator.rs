//! Byte comparators used by compare filters and the filter language (`binary:`,
//! `binaryprefix:`, `regexstring:`, `substring:`).

use std::cmp::Ordering;

use bytes::Bytes;
use regex::bytes::Regex;

use crate::error::{Error, Result};

/// A comparator: decides how a cell's bytes relate to an operand.
#[derive(Clone, Debug)]
pub enum Comparator {
    /// Lexicographic comparison of the whole byte string.
    Binary(Bytes),
    /// Lexicographic comparison of the first `len(operand)` bytes only.
    BinaryPrefix(Bytes),
    /// "Equal" when the pattern is found anywhere in the bytes.
    RegexString { pattern: String, regex: Regex },
    /// "Equal" when the bytes contain the operand, ignoring ASCII case.
    Substring(String),
}

/// The largest compiled regex (the regex crate's own default, 10 MiB).
pub const REGEX_SIZE_LIMIT_BYTES: usize = 10 << 20;

impl Comparator {
    /// A regex comparator; Java's `find()` semantics (the pattern may match anywhere).
    ///
    /// # Errors
    /// `IllegalArgument` when the pattern does not compile.
    pub fn regex(pattern: &str) -> Result<Comparator> {
        // The compiled program's limit is stated, not left to the crate's default: with
        // `MAX_FILTER_REGEXES` it bounds a request's compile cost.
        let regex = regex::bytes::RegexBuilder::new(pattern)
            .size_limit(REGEX_SIZE_LIMIT_BYTES)
            .build()
            .map_err(|e| Error::illegal(format!("Invalid regular expression {pattern}: {e}")))?;
        Ok(Comparator::RegexString {
            pattern: pattern.to_owned(),
            regex,
        })
    }

    /// A case-insensitive substring comparator.
    #[must_use]
    pub fn substring(s: &str) -> Comparator {
        Comparator::Substring(s.to_lowercase())
    }

    /// How `value` compares to the operand (value on the left): `Equal` for a match of the
    /// regex and substring comparators, `Greater` otherwise, as HBase's comparators report.
    #[must_use]
    pub fn compare_value(&self, value: &[u8]) -> Ordering {
        match self {
            Comparator::Binary(op) => value.cmp(op),
            Comparator::BinaryPrefix(op) => value[..value.len().min(op.len())].cmp(op),
            Comparator::RegexString { regex, .. } => {
                if regex.is_match(value) {
                    Ordering::Equal
                } else {
                    Ordering::Greater
                }
            }
            Comparator::Substring(s) => {
                let hay = String::from_utf8_lossy(value).to_lowercase();
                if hay.contains(s.as_str()) {
                    Ordering::Equal
                } else {
                    Ordering::Greater
                }
            }
        }
    }

    /// Whether the comparator only supports `=` and `!=`.
    #[must_use]
    pub fn equality_only(&self) -> bool {
        matches!(
            self,
            Comparator::RegexString { .. } | Comparator::Substring(_)
        )
    }
}

impl PartialEq for Comparator {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Comparator::Binary(a), Comparator::Binary(b))
            | (Comparator::BinaryPrefix(a), Comparator::BinaryPrefix(b)) => a == b,
            (
                Comparator::RegexString { pattern: a, .. },
                Comparator::RegexString { pattern: b, .. },
            ) => a == b,
            (Comparator::Substring(a), Comparator::Substring(b)) => a == b,
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comparators() {
        let b = Comparator::Binary(Bytes::from_static(b"5"));
        assert_eq!(b.compare_value(b"6"), Ordering::Greater);
        assert_eq!(b.compare_value(b"5"), Ordering::Equal);
        assert_eq!(b.compare_value(b"45"), Ordering::Less);
        let p = Comparator::BinaryPrefix(Bytes::from_static(b"ab"));
        assert_eq!(p.compare_value(b"abzzz"), Ordering::Equal);
        assert_eq!(p.compare_value(b"a"), Ordering::Less);
        let r = Comparator::regex("b+c").unwrap();
        assert_eq!(r.compare_value(b"aabbbcd"), Ordering::Equal);
        assert_eq!(r.compare_value(b"ac"), Ordering::Greater);
        let s = Comparator::substring("BC");
        assert_eq!(s.compare_value(b"xxbCx"), Ordering::Equal);
        assert_eq!(s.compare_value(b"xx"), Ordering::Greater);
    }
}
