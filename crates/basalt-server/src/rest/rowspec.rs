//! HBase REST's row specification (`RowSpec`): the part of a path after the table,
//! `row[,endrow][/column[,column...]][/timestamp | /start,end]`.
//!
//! - A row ending in `*` is a prefix: the rows from it up to the prefix followed by 0xff
//!   (HBase's suffix globbing). `start,end` is a range of rows. Either makes the read a
//!   scan; a plain row is a single-row read.
//! - A column is `family` or `family:qualifier`.
//! - One timestamp selects exactly that timestamp (HBase 2.5.12+/2.6.3+); `start,end` is
//!   the half-open time range.
//! - Each part is percent-decoded (`+` is a space, as Java's `URLDecoder` has it); with
//!   `?e=b64` or an `Encoding: b64` header the row, end row and columns are then base64
//!   (`b64`, `base64`, `b64url`, `base64url`: URL-safe alphabet; `b64basic`,
//!   `base64basic`: the standard one).

use base64::Engine;
use bytes::Bytes;

use crate::rest::RestError;

/// A parsed row specification.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RowSpec {
    pub row: Bytes,
    /// The end of a row range (exclusive); `None` for a single row.
    pub end_row: Option<Bytes>,
    /// Columns in byte order, each `family` or `family:qualifier`.
    pub columns: Vec<Bytes>,
    pub time: TimeSpec,
    /// `?v=N`: versions per column (1 unless set).
    pub max_versions: u32,
}

/// The timestamp part.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeSpec {
    /// None given: every timestamp.
    All,
    /// `/ts`: exactly `ts`.
    Exactly(i64),
    /// `/start,end`: `[start, end)`.
    Range(i64, i64),
}

impl RowSpec {
    /// Parses `spec` (still percent-encoded, as it came in the path).
    ///
    /// # Errors
    /// A 400 naming what is wrong.
    pub fn parse(spec: &str, key_encoding: Option<&str>) -> Result<RowSpec, RestError> {
        let spec = spec.trim_start_matches('/');
        let mut parts = spec.splitn(3, '/');
        let rows = parts.next().unwrap_or_default();
        let (row, end_row) = parse_rows(rows)?;
        let mut columns = Vec::new();
        if let Some(cols) = parts.next() {
            let entries: Vec<&str> = cols.split(',').collect();
            for (i, c) in entries.iter().enumerate() {
                // HBase refuses an empty entry before a comma; a trailing one is nothing.
                if c.is_empty() {
                    if i + 1 == entries.len() {
                        continue;
                    }
                    return Err(RestError::bad_request("invalid path: an empty column"));
                }
                columns.push(Bytes::from(url_decode(c)?));
            }
        }
        let time = match parts.next() {
            None | Some("") => TimeSpec::All,
            Some(t) => parse_time(t.split('/').next().unwrap_or_default())?,
        };
        let mut spec = RowSpec {
            row,
            end_row,
            columns,
            time,
            max_versions: 1,
        };
        if let Some(enc) = key_encoding {
            spec.decode_keys(enc)?;
        }
        spec.columns.sort();
        spec.columns.dedup();
        Ok(spec)
    }

    fn decode_keys(&mut self, encoding: &str) -> Result<(), RestError> {
        let decode =
            |b: &Bytes| -> Result<Bytes, RestError> { decode_b64(encoding, b).map(Bytes::from) };
        self.row = decode(&self.row)?;
        if let Some(end) = &self.end_row {
            self.end_row = Some(decode(end)?);
        }
        self.columns = self.columns.iter().map(decode).collect::<Result<_, _>>()?;
        Ok(())
    }
}

/// Decodes `data` in the key encoding HBase calls `encoding`.
///
/// # Errors
/// A 400 for an unknown encoding or bytes that are not base64.
pub fn decode_b64(encoding: &str, data: &[u8]) -> Result<Vec<u8>, RestError> {
    use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig};
    use base64::engine::DecodePaddingMode;
    let lenient =
        GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent);
    let engine = match encoding {
        "b64" | "base64" | "b64url" | "base64url" => {
            GeneralPurpose::new(&base64::alphabet::URL_SAFE, lenient)
        }
        "b64basic" | "base64basic" => GeneralPurpose::new(&base64::alphabet::STANDARD, lenient),
        _ => {
            return Err(RestError::bad_request(format!(
                "unknown key encoding '{encoding}'"
            )))
        }
    };
    engine
        .decode(data)
        .map_err(|e| RestError::bad_request(format!("a key is not {encoding}: {e}")))
}

fn parse_rows(rows: &str) -> Result<(Bytes, Option<Bytes>), RestError> {
    if rows.is_empty() {
        return Err(RestError::bad_request("invalid path: no row"));
    }
    if let Some((start, end)) = rows.split_once(',') {
        let start = url_decode(start)?;
        if start.ends_with(b"*") {
            return Err(RestError::bad_request(
                "invalid path: start row specified with wildcard",
            ));
        }
        return Ok((start.into(), Some(url_decode(end)?.into())));
    }
    let row = url_decode(rows)?;
    match row.strip_suffix(b"*") {
        Some(prefix) => {
            let mut end = prefix.to_vec();
            end.push(0xff);
            Ok((Bytes::copy_from_slice(prefix), Some(end.into())))
        }
        None => Ok((row.into(), None)),
    }
}

fn parse_time(t: &str) -> Result<TimeSpec, RestError> {
    let num = |s: &str| -> Result<i64, RestError> {
        let text = String::from_utf8_lossy(&url_decode(s)?).into_owned();
        text.parse::<i64>()
            .map_err(|_| RestError::bad_request(format!("invalid timestamp '{text}'")))
    };
    match t.split_once(',') {
        Some((a, b)) => {
            let (start, end) = (num(a)?, num(b)?);
            // HBase reads an end of 0 as "no end given": the single-timestamp form.
            if end == 0 && start >= 0 {
                return Ok(TimeSpec::Exactly(start));
            }
            if start < 0 || end < start {
                return Err(RestError::bad_request(format!(
                    "invalid time range {start},{end}"
                )));
            }
            Ok(TimeSpec::Range(start, end))
        }
        None => {
            let ts = num(t)?;
            if ts < 0 {
                return Err(RestError::bad_request(format!("invalid timestamp {ts}")));
            }
            Ok(TimeSpec::Exactly(ts))
        }
    }
}

/// Java's `URLDecoder.decode`: `%XX` is a byte, `+` a space; a broken escape is refused.
///
/// # Errors
/// A 400 for a `%` not followed by two hex digits.
pub fn url_decode(s: &str) -> Result<Vec<u8>, RestError> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let hex = b
                    .get(i + 1..i + 3)
                    .and_then(|h| std::str::from_utf8(h).ok())
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                    .ok_or_else(|| RestError::bad_request(format!("invalid escape in '{s}'")))?;
                out.push(hex);
                i += 2;
            }
            c => out.push(c),
        }
        i += 1;
    }
    Ok(out)
}

/// Splits a column `family[:qualifier]` at its first colon; a trailing colon is an empty
/// qualifier (HBase's `CellUtil.parseColumn`).
pub fn split_column(col: &[u8]) -> (Bytes, Option<Bytes>) {
    match col.iter().position(|&c| c == b':') {
        Some(i) => (
            Bytes::copy_from_slice(&col[..i]),
            Some(Bytes::copy_from_slice(&col[i + 1..])),
        ),
        None => (Bytes::copy_from_slice(col), None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(s: &str) -> RowSpec {
        RowSpec::parse(s, None).expect(s)
    }

    #[test]
    fn rows_columns_and_timestamps_parse_as_hbase_reads_them() {
        let s = spec("row1/cf:a,cf2/1000");
        assert_eq!(s.row, "row1");
        assert_eq!(s.end_row, None);
        assert_eq!(s.columns, [Bytes::from("cf2"), Bytes::from("cf:a")]);
        assert_eq!(s.time, TimeSpec::Exactly(1000));
        assert_eq!(spec("r/cf/5,10").time, TimeSpec::Range(5, 10));
        assert_eq!(spec("r/").columns.len(), 0);
        assert_eq!(spec("r/cf:name/").time, TimeSpec::All);
        assert_eq!(spec("/r").row, "r");
    }

    #[test]
    fn a_range_and_a_prefix_make_scans() {
        let s = spec("a,b/cf");
        assert_eq!(
            (s.row.as_ref(), s.end_row.as_deref()),
            (&b"a"[..], Some(&b"b"[..]))
        );
        let p = spec("pre*/cf");
        assert_eq!(p.row, "pre");
        assert_eq!(p.end_row.as_deref(), Some(&b"pre\xff"[..]));
        assert!(RowSpec::parse("a*,b", None).is_err());
    }

    #[test]
    fn escapes_and_base64_keys_decode_to_bytes() {
        let s = spec("a%2Fb+c%00/cf%3Aq");
        assert_eq!(s.row.as_ref(), b"a/b c\0");
        assert_eq!(s.columns, [Bytes::from("cf:q")]);
        let b = RowSpec::parse("cm93MQ/Y2Y6cQ==", Some("b64")).expect("b64");
        assert_eq!(
            (b.row.as_ref(), b.columns[0].as_ref()),
            (&b"row1"[..], &b"cf:q"[..])
        );
        let basic = RowSpec::parse("_w", Some("b64")).expect("url-safe");
        assert_eq!(basic.row.as_ref(), [0xff]);
        assert!(RowSpec::parse("_w", Some("b64basic")).is_err());
        assert!(RowSpec::parse("x", Some("rot13")).is_err());
    }

    #[test]
    fn bad_specs_are_refused() {
        for bad in [
            "",
            "r/cf/abc",
            "r/cf/10,5",
            "r/cf/-1",
            "%zz",
            "r/a,,b",
            "r/cf/1,x",
        ] {
            assert!(RowSpec::parse(bad, None).is_err(), "{bad}");
        }
    }
}
