//! dml writes: put, delete, deleteall, incr, append.

use basalt_model::ops::{Append, Delete, Increment, Mutation, Put, Scan};
use basalt_model::LATEST_TIMESTAMP;
use bytes::Bytes;

use crate::args::{get, int, Args};
use crate::parser::Value;
use crate::{Returned, Shell, ShellError};

/// `family:qualifier`, or `family` alone (no qualifier).
pub fn parse_column(c: &[u8]) -> (Bytes, Option<Bytes>) {
    match c.iter().position(|b| *b == b':') {
        Some(i) => (
            Bytes::copy_from_slice(&c[..i]),
            Some(Bytes::copy_from_slice(&c[i + 1..])),
        ),
        None => (Bytes::copy_from_slice(c), None),
    }
}

/// A trailing `{TTL => ms}` of a put, incr or append.
fn ttl_of(opts: &[(Value, Value)]) -> Result<Option<u64>, ShellError> {
    get(opts, "TTL")
        .map(|v| {
            u64::try_from(int(v, "TTL")?).map_err(|_| ShellError::usage("TTL must be positive"))
        })
        .transpose()
}

pub fn put(sh: &mut Shell<'_>, mut a: Args) -> Result<Returned, ShellError> {
    let table = a.table()?;
    let row = a.bytes("row")?;
    let (f, q) = parse_column(&a.bytes("column")?);
    let value = a.bytes("value")?;
    let ts = a.opt_int().unwrap_or(LATEST_TIMESTAMP);
    let opts = a.opt_hash();
    a.done()?;
    let mut p = Put::new(row).add_at(f, q.unwrap_or_default(), ts, value);
    if let Some(ttl) = ttl_of(&opts)? {
        p = p.with_ttl_ms(ttl);
    }
    sh.table(&table)?.mutate(Mutation::Put(p))?;
    Ok(Returned::Nothing)
}

pub fn delete(sh: &mut Shell<'_>, mut a: Args) -> Result<Returned, ShellError> {
    let table = a.table()?;
    let row = a.bytes("row")?;
    let (f, q) = parse_column(&a.bytes("column")?);
    let ts = a.opt_int();
    a.opt_hash();
    a.done()?;
    // `_delete_internal` with all_version = false: one version of the column (the newest,
    // or the one at ts); a family alone takes `addFamilyVersion` (its versions at ts).
    let d = match (q, ts) {
        (Some(q), Some(ts)) => Delete::new(row).add_column_at(f, q, ts),
        (Some(q), None) => Delete::new(row).add_column(f, q),
        (None, ts) => Delete::new(row).add_family_version(f, ts.unwrap_or(LATEST_TIMESTAMP)),
    };
    sh.table(&table)?.mutate(Mutation::Delete(d))?;
    Ok(Returned::Nothing)
}

pub fn deleteall(sh: &mut Shell<'_>, mut a: Args) -> Result<Returned, ShellError> {
    let table = a.table()?;
    if let Some(Value::Hash(opts)) = a.peek().cloned() {
        a.take();
        return deleteall_prefix(sh, &table, &opts, a);
    }
    let row = a.bytes("row")?;
    let column = if a.peek().is_some_and(|v| matches!(v, Value::Str(_))) {
        a.bytes("column")?
    } else {
        Vec::new()
    };
    let ts = a.opt_int().unwrap_or(LATEST_TIMESTAMP);
    a.opt_hash();
    a.done()?;
    sh.table(&table)?
        .mutate(Mutation::Delete(delete_all(row, &column, ts)))?;
    Ok(Returned::Nothing)
}

/// `_delete_internal` with all_version = true: the row, a column's versions or a family,
/// at or before `ts`.
fn delete_all(row: impl Into<Bytes>, column: &[u8], ts: i64) -> Delete {
    let d = Delete::at(row, ts);
    if column.is_empty() {
        return d;
    }
    match parse_column(column) {
        (f, Some(q)) => d.add_columns_at(f, q, ts),
        (f, None) => d.add_family_at(f, ts),
    }
}

/// `deleteall 't', {ROWPREFIXFILTER => 'p'}[, 'col'[, ts]]`: every row with the prefix.
fn deleteall_prefix(
    sh: &mut Shell<'_>,
    table: &basalt_model::TableName,
    opts: &[(Value, Value)],
    mut a: Args,
) -> Result<Returned, ShellError> {
    let prefix = get(opts, "ROWPREFIXFILTER")
        .ok_or_else(|| ShellError::usage("deleteall takes a row or {ROWPREFIXFILTER => ...}"))?;
    let prefix = crate::args::to_bytes(prefix, "ROWPREFIXFILTER")?;
    let column = if a.is_empty() {
        Vec::new()
    } else {
        a.bytes("column")?
    };
    let ts = a.opt_int().unwrap_or(LATEST_TIMESTAMP);
    a.done()?;
    let t = sh.table(table)?;
    let rows: Vec<Bytes> = t
        .scan(Scan::new().with_row_prefix(prefix))?
        .map(|r| r.map(|r| r.row_bytes()))
        .collect::<Result<_, _>>()?;
    for row in rows {
        t.mutate(Mutation::Delete(delete_all(row, &column, ts)))?;
    }
    Ok(Returned::Nothing)
}

/// The value as a signed 64-bit counter.
pub fn counter(v: &[u8]) -> Option<i64> {
    Some(i64::from_be_bytes(v.try_into().ok()?))
}

pub fn incr(sh: &mut Shell<'_>, mut a: Args) -> Result<Returned, ShellError> {
    let table = a.table()?;
    let row = a.bytes("row")?;
    let (f, q) = parse_column(&a.bytes("column")?);
    let amount = a.opt_int().unwrap_or(1);
    let opts = a.opt_hash();
    a.done()?;
    let q = q.unwrap_or_default();
    let mut inc = Increment::new(row).add(f.clone(), q.clone(), amount);
    if let Some(ttl) = ttl_of(&opts)? {
        inc = inc.with_ttl_ms(ttl);
    }
    let r = sh
        .table(&table)?
        .mutate(Mutation::Increment(inc))?
        .unwrap_or_default();
    let n = r.value(&f, &q).and_then(counter).unwrap_or(0);
    sh.println(format!("COUNTER VALUE = {n}"))?;
    Ok(Returned::Nothing)
}

pub fn append(sh: &mut Shell<'_>, mut a: Args) -> Result<Returned, ShellError> {
    let table = a.table()?;
    let row = a.bytes("row")?;
    let (f, q) = parse_column(&a.bytes("column")?);
    let value = a.bytes("value")?;
    a.opt_hash();
    a.done()?;
    let q = q.unwrap_or_default();
    let app = Append::new(row).add(f.clone(), q.clone(), value);
    let r = sh
        .table(&table)?
        .mutate(Mutation::Append(app))?
        .unwrap_or_default();
    let v = r.value(&f, &q).unwrap_or_default();
    sh.println(format!(
        "CURRENT VALUE = {}",
        basalt_model::bytes_fmt::to_string_binary(v)
    ))?;
    Ok(Returned::Nothing)
}
