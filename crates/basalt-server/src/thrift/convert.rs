//! Between Thrift1's structs and the data model: column names, cells, rows, family
//! descriptors and errors, as HBase's `ThriftUtilities` converts them.

use std::collections::BTreeMap;

use basalt_model::descriptor::{BloomType, ColumnFamilyDescriptor, Compression};
use basalt_model::ops::{Get, Scan};
use basalt_model::{Error, RowResult, TableName};
use bytes::Bytes;
use hbase_thrift::hbase::{
    AlreadyExists, ColumnDescriptor, IOError, IllegalArgument, TCell, TColumn, TRowResult,
};

/// A Thrift column name split as HBase's `CellUtil.parseColumn` splits it: at the first `:`.
/// `family` alone names the whole family; `family:` names the empty qualifier.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Column {
    pub family: Bytes,
    pub qualifier: Option<Bytes>,
}

pub(crate) fn parse_column(name: &[u8]) -> Column {
    match name.iter().position(|b| *b == b':') {
        Some(i) => Column {
            family: Bytes::copy_from_slice(&name[..i]),
            qualifier: Some(Bytes::copy_from_slice(&name[i + 1..])),
        },
        None => Column {
            family: Bytes::copy_from_slice(name),
            qualifier: None,
        },
    }
}

/// `family:qualifier`, as results name columns.
pub(crate) fn column_name(family: &[u8], qualifier: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(family.len() + 1 + qualifier.len());
    v.extend_from_slice(family);
    v.push(b':');
    v.extend_from_slice(qualifier);
    v
}

/// A table name from the wire (`ns:table` or `table`).
pub(crate) fn table_name(name: &[u8]) -> Result<TableName, Error> {
    let s = std::str::from_utf8(name).map_err(|_| {
        Error::illegal(format!(
            "Illegal character in table name {}: table names are ASCII",
            basalt_model::bytes_fmt::to_string_binary(name)
        ))
    })?;
    TableName::parse(s)
}

/// Restricts a Get to `columns` (families or single columns); none means every family.
pub(crate) fn get_columns(mut get: Get, columns: &[Vec<u8>]) -> Get {
    for c in columns {
        let c = parse_column(c);
        get = match c.qualifier {
            Some(q) => get.add_column(c.family, q),
            None => get.add_family(c.family),
        };
    }
    get
}

/// Restricts a Scan to `columns`, as [`get_columns`].
pub(crate) fn scan_columns(mut scan: Scan, columns: &[Vec<u8>]) -> Scan {
    for c in columns {
        let c = parse_column(c);
        scan = match c.qualifier {
            Some(q) => scan.add_column(c.family, q),
            None => scan.add_family(c.family),
        };
    }
    scan
}

/// The cells of a result as `TCell`s (`cellFromHBase`): values and timestamps, no names.
pub(crate) fn cells(r: &RowResult) -> Vec<TCell> {
    r.cells
        .iter()
        .map(|c| TCell::new(c.value().to_vec(), c.timestamp))
        .collect()
}

/// Results as `TRowResult`s (`rowResultFromHBase`): empty results are left out; columns are a
/// map by `family:qualifier`, or a list in key order when `sorted`.
pub(crate) fn row_results(results: &[RowResult], sorted: bool) -> Vec<TRowResult> {
    results
        .iter()
        .filter(|r| !r.is_empty())
        .map(|r| {
            let named = r.cells.iter().map(|c| {
                (
                    column_name(&c.family, c.qualifier()),
                    TCell::new(c.value().to_vec(), c.timestamp),
                )
            });
            if sorted {
                let list = named.map(|(n, c)| TColumn::new(n, c)).collect::<Vec<_>>();
                TRowResult::new(r.row().to_vec(), None, list)
            } else {
                let map = named.collect::<BTreeMap<_, _>>();
                TRowResult::new(r.row().to_vec(), map, None)
            }
        })
        .collect()
}

/// A family as Thrift describes it (`colDescFromHbase`).
pub(crate) fn column_descriptor(f: &ColumnFamilyDescriptor) -> ColumnDescriptor {
    ColumnDescriptor::new(
        column_name(&f.name, b""),
        i32::try_from(f.max_versions).unwrap_or(i32::MAX),
        f.compression.hbase_name().to_owned(),
        f.in_memory,
        f.bloom_filter.hbase_name().to_owned(),
        0,
        0,
        f.block_cache,
        i32::try_from(f.ttl_seconds).unwrap_or(i32::MAX),
    )
}

/// A family from a Thrift `ColumnDescriptor` (`colDescFromThrift`): the name up to its `:`,
/// a TTL of 0 or less meaning forever; bloom vector size and hash count are not used.
pub(crate) fn family_descriptor(d: &ColumnDescriptor) -> Result<ColumnFamilyDescriptor, Error> {
    let name = d.name.as_deref().unwrap_or_default();
    if name.is_empty() {
        return Err(Error::illegal("column name is empty"));
    }
    let compression_name = d.compression.as_deref().unwrap_or("NONE");
    let compression = Compression::from_hbase_name(compression_name).ok_or_else(|| {
        Error::illegal(format!(
            "Unsupported compression algorithm name: {}",
            compression_name.to_lowercase()
        ))
    })?;
    let bloom_name = d.bloom_filter_type.as_deref().unwrap_or("NONE");
    // BloomType.valueOf: exact, upper-case names only.
    let bloom = BloomType::from_hbase_name(bloom_name)
        .filter(|b| b.hbase_name() == bloom_name)
        .ok_or_else(|| {
            Error::illegal(format!(
                "No enum constant org.apache.hadoop.hbase.regionserver.BloomType.{bloom_name}"
            ))
        })?;
    let versions = d.max_versions.unwrap_or(3);
    let versions = u32::try_from(versions)
        .ok()
        .filter(|v| *v > 0)
        .ok_or_else(|| Error::illegal("Maximum versions must be positive"))?;
    let ttl = d.time_to_live.unwrap_or(i32::MAX);
    let ttl = u32::try_from(ttl)
        .ok()
        .filter(|t| *t > 0)
        .unwrap_or(i32::MAX.unsigned_abs());
    Ok(ColumnFamilyDescriptor::new(parse_column(name).family)
        .with_max_versions(versions)
        .with_compression(compression)
        .with_in_memory(d.in_memory.unwrap_or(false))
        .with_block_cache(d.block_cache_enabled.unwrap_or(false))
        .with_ttl_seconds(ttl)
        .with_bloom_filter(bloom))
}

/// HBase's gateway puts the exception's stack trace in the message; its first line, the
/// exception class and message, is what a client can act on.
/// The exception's name and message, with the server's directories left out (clients are
/// not authenticated).
fn message(e: &Error) -> String {
    let text = basalt_model::error::redact_paths(&e.to_string());
    format!("{}: {text}", e.exception_name())
}

/// An `IOError`, whichever the error.
pub(crate) fn io(e: &Error) -> thrift::Error {
    thrift::Error::User(Box::new(IOError::new(message(e), e.is_retryable())))
}

/// `IllegalArgument` for a bad argument, `IOError` otherwise: for methods that declare both.
pub(crate) fn io_or_illegal(e: &Error) -> thrift::Error {
    match e {
        Error::IllegalArgument(m) => illegal(m.clone()),
        _ => io(e),
    }
}

pub(crate) fn illegal(m: impl Into<String>) -> thrift::Error {
    thrift::Error::User(Box::new(IllegalArgument::new(m.into())))
}

pub(crate) fn already_exists(m: impl Into<String>) -> thrift::Error {
    thrift::Error::User(Box::new(AlreadyExists::new(m.into())))
}

/// A failure HBase reports as a plain `TException`: the client sees an application error.
pub(crate) fn application(m: impl Into<String>) -> thrift::Error {
    thrift::Error::Application(thrift::ApplicationError::new(
        thrift::ApplicationErrorKind::Unknown,
        m.into(),
    ))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn columns_split_at_the_first_colon() {
        let c = parse_column(b"cf");
        assert_eq!((&c.family[..], c.qualifier), (&b"cf"[..], None));
        let c = parse_column(b"cf:");
        assert_eq!(c.qualifier.as_deref(), Some(&b""[..]));
        let c = parse_column(b"cf:a:b");
        assert_eq!(
            (&c.family[..], c.qualifier.as_deref()),
            (&b"cf"[..], Some(&b"a:b"[..]))
        );
        assert_eq!(column_name(b"cf", b"q"), b"cf:q");
    }

    #[test]
    fn family_descriptors_follow_thrift_defaults_and_hbase_checks() {
        let mut d = ColumnDescriptor::new(
            b"cf:".to_vec(),
            5,
            "gz".to_owned(),
            true,
            "ROWCOL".to_owned(),
            0,
            0,
            true,
            0,
        );
        let f = family_descriptor(&d).unwrap();
        assert_eq!(&f.name[..], b"cf");
        assert_eq!(f.max_versions, 5);
        assert_eq!(f.compression, Compression::Gz);
        assert_eq!(f.bloom_filter, BloomType::RowCol);
        assert!(f.in_memory && f.block_cache);
        assert_eq!(f.ttl_seconds, i32::MAX.unsigned_abs());
        let back = column_descriptor(&f);
        assert_eq!(back.name.as_deref(), Some(&b"cf:"[..]));
        assert_eq!(back.compression.as_deref(), Some("GZ"));
        assert_eq!(back.time_to_live, Some(i32::MAX));

        d.bloom_filter_type = Some("rowcol".to_owned());
        let e = family_descriptor(&d).unwrap_err().to_string();
        assert!(e.contains("BloomType.rowcol"), "{e}");
        d.bloom_filter_type = None;
        d.compression = Some("LZMA".to_owned());
        let e = family_descriptor(&d).unwrap_err().to_string();
        assert_eq!(e, "Unsupported compression algorithm name: lzma");
        d.compression = None;
        d.max_versions = Some(0);
        assert!(family_descriptor(&d).is_err());
        d.max_versions = None;
        d.name = Some(Vec::new());
        assert_eq!(
            family_descriptor(&d).unwrap_err().to_string(),
            "column name is empty"
        );
    }
}
