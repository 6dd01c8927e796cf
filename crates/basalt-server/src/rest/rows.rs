//! HBase REST's row resource (`RowResource`) and multi-get (`MultiRowResource`):
//!
//! - `GET /T/row[/cols][/ts|/start,end][?v=N]` reads a row (a range `a,b` or a prefix
//!   `p*` reads rows); the cells come as a `CellSet`, or one value as octets with
//!   `X-Timestamp`. Nothing found is 404.
//! - `PUT`/`POST` (the same, as in HBase) write a `CellSet` of any number of rows, or one
//!   value sent as octets (`X-Row`, `X-Column`, `X-Timestamp` override the path). `?check=`
//!   `put`, `delete`, `append`, `increment` turn them into check-and-put (the last cell is
//!   the check), check-and-delete, append and increment (`?rr=true` answers the result).
//!   A failed check is 304.
//! - `DELETE /T/row[/cols][/ts]` deletes a row, families or columns (up to `ts`).
//! - `GET /T/multiget[/cols]?row=SPEC&row=SPEC[&v=N][&filter=..]` reads many rows.
//!
//! Every write is checked in full (families, sizes) before any of it is written, so a
//! refused request writes nothing.

use axum::http::{HeaderValue, Method, StatusCode};
use basalt_model::filter::Filter;
use basalt_model::ops::{Append, CompareOp, Delete, Get, Increment, Mutation, Put};
use basalt_model::{RowResult, TimeRange, LATEST_TIMESTAMP};
use bytes::Bytes;

use crate::rest::cellset::{self, CellModel, RowModel};
use crate::rest::media::{self, Format};
use crate::rest::rowspec::{split_column, RowSpec, TimeSpec};
use crate::rest::{answer, empty, Answer, Call, Gateway, RestError};

/// `Encoding` header, else `?e=`.
fn key_encoding(call: &Call) -> Option<String> {
    call.headers
        .get("encoding")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
        .or_else(|| call.param("e").map(str::to_owned))
}

fn versions(call: &Call) -> Result<Option<u32>, RestError> {
    call.param("v")
        .map(|v| {
            v.trim()
                .parse::<u32>()
                .ok()
                .filter(|n| *n > 0)
                .ok_or_else(|| {
                    RestError::bad_request(format!("v={v} is not a positive number of versions"))
                })
        })
        .transpose()
}

fn parse_spec(call: &Call, spec: &str) -> Result<RowSpec, RestError> {
    let mut s = RowSpec::parse(spec, key_encoding(call).as_deref())?;
    if let Some(v) = versions(call)? {
        s.max_versions = v;
    }
    Ok(s)
}

/// The row resource: picks the method.
pub fn row(g: &Gateway, call: &Call, table: &str, spec: &str) -> (&'static str, Answer) {
    let spec = match parse_spec(call, spec) {
        Ok(s) => s,
        Err(e) => return ("get", Err(e)),
    };
    match call.method {
        Method::GET | Method::HEAD => ("get", get(g, call, table, &spec)),
        Method::PUT | Method::POST => match call.param("check").filter(|c| !c.is_empty()) {
            None => ("put", update(g, call, table, &spec)),
            Some(check) => ("check", checked(g, call, table, &spec, check)),
        },
        Method::DELETE => ("delete", delete(g, table, &spec)),
        _ => ("get", Err(not_allowed("GET, PUT, POST, DELETE"))),
    }
}

pub(crate) fn not_allowed(allow: &str) -> RestError {
    RestError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        format!("Method Not Allowed: this resource takes {allow}"),
    )
}

/// A Get of the spec's row, columns, time and versions.
fn get_of(spec: &RowSpec, row: Bytes) -> Result<Get, RestError> {
    let mut get = Get::new(row);
    for col in &spec.columns {
        get = match split_column(col) {
            (f, Some(q)) => get.add_column(f, q),
            (f, None) => get.add_family(f),
        };
    }
    get = get.with_max_versions(spec.max_versions);
    Ok(match spec.time {
        TimeSpec::All => get,
        TimeSpec::Exactly(ts) => get.with_timestamp(ts)?,
        TimeSpec::Range(a, b) => get.with_time_range(TimeRange::new(a, b)?),
    })
}

/// The rows a spec reads: one row, or a scan of a range or prefix.
fn read(g: &Gateway, table: &str, spec: &RowSpec) -> Result<Vec<RowResult>, RestError> {
    let t = g.table(table)?;
    let get = get_of(spec, spec.row.clone())?;
    let Some(end) = &spec.end_row else {
        return Ok(non_empty(t.get(get)?));
    };
    let mut scan = get.into_scan();
    // The one-row scan of a Get, widened to the range.
    scan.limit = 0;
    scan.is_get = false;
    scan = scan
        .with_start_row(spec.row.clone(), true)
        .with_stop_row(end.clone(), false);
    let mut out = Vec::new();
    let mut scanner = t.scan(scan)?;
    while let Some(r) = scanner.next_row()? {
        if !r.is_empty() {
            out.push(r);
        }
    }
    Ok(out)
}

/// [`read`] from memory alone (memstores and cached blocks), for a thread that must not
/// wait: `None` when that cannot answer (a range, or a block not cached).
fn read_from_memory(
    g: &Gateway,
    table: &str,
    spec: &RowSpec,
) -> Result<Option<Vec<RowResult>>, RestError> {
    if spec.end_row.is_some() {
        return Ok(None);
    }
    let get = get_of(spec, spec.row.clone())?;
    Ok(g.table(table)?.get_cached(&get)?.map(non_empty))
}

fn non_empty(r: RowResult) -> Vec<RowResult> {
    if r.is_empty() {
        Vec::new()
    } else {
        vec![r]
    }
}

fn get(g: &Gateway, call: &Call, table: &str, spec: &RowSpec) -> Answer {
    let format = get_format(call, spec)?;
    cells_answer(format, &read(g, table, spec)?)
}

/// A row `GET` of `spec` answered from memory alone, or `None` when that cannot answer it
/// (the caller serves it again where it may wait).
pub fn get_from_memory(g: &Gateway, call: &Call, table: &str, spec: &str) -> Option<Answer> {
    let read = parse_spec(call, spec).and_then(|spec| {
        let format = get_format(call, &spec)?;
        Ok(read_from_memory(g, table, &spec)?.map(|rows| (format, rows)))
    });
    match read {
        Ok(Some((format, rows))) => Some(cells_answer(format, &rows)),
        Ok(None) => None,
        Err(e) => Some(Err(e)),
    }
}

/// The representation a row `GET` answers in.
fn get_format(call: &Call, spec: &RowSpec) -> Result<Format, RestError> {
    let format = media::negotiate(&call.headers, media::CELLS)?;
    if format == Format::Binary && spec.columns.len() != 1 {
        return Err(RestError::bad_request(
            "Default 'GET' method only works if there is exactly 1 column in the row. Using the 'Accept' header with one of these formats lets you retrieve the entire row if it has multiple columns: text/xml, application/json, application/x-protobuf, application/protobuf",
        ));
    }
    Ok(format)
}

fn cells_answer(format: Format, rows: &[RowResult]) -> Answer {
    if rows.is_empty() {
        return Err(RestError::new(StatusCode::NOT_FOUND, "Not found"));
    }
    if format == Format::Binary {
        let cell = &rows[0].cells[0];
        let mut r = answer(StatusCode::OK, Format::Binary, cell.value().to_vec());
        r.headers_mut()
            .insert("X-Timestamp", HeaderValue::from(cell.timestamp));
        return Ok(r);
    }
    Ok(answer(
        StatusCode::OK,
        format,
        cellset::encode(format, rows),
    ))
}

/// `family:qualifier` of a body cell, or the path's `i`th column.
fn column<'a>(cell: &'a CellModel, spec: &'a RowSpec, i: usize) -> Result<&'a [u8], RestError> {
    cell.column
        .as_deref()
        .or_else(|| spec.columns.get(i).map(Bytes::as_ref))
        .ok_or_else(|| RestError::bad_request("Column found to be null."))
}

/// The column a body cell names itself (check-and-mutate cells take none from the path).
fn named_column(cell: &CellModel) -> Result<&[u8], RestError> {
    cell.column
        .as_deref()
        .ok_or_else(|| RestError::bad_request("Column found to be null."))
}

/// Family and qualifier of a column that must have both.
fn family_qualifier(col: &[u8]) -> Result<(Bytes, Bytes), RestError> {
    match split_column(col) {
        (f, Some(q)) => Ok((f, q)),
        (f, None) => Err(RestError::bad_request(format!(
            "column '{}' names no qualifier (family:qualifier)",
            String::from_utf8_lossy(&f)
        ))),
    }
}

fn key_of(row: &RowModel, spec: &RowSpec) -> Bytes {
    row.key.clone().unwrap_or_else(|| spec.row.clone())
}

/// Puts of a cell set's rows.
fn puts(rows: &[RowModel], spec: &RowSpec) -> Result<Vec<Mutation>, RestError> {
    let mut out = Vec::with_capacity(rows.len());
    for row in rows {
        let mut put = Put::new(key_of(row, spec));
        for (i, cell) in row.cells.iter().enumerate() {
            let (f, q) = family_qualifier(column(cell, spec, i)?)?;
            put = put.add_at(f, q, cell.timestamp, &cell.value);
        }
        out.push(Mutation::Put(put));
    }
    Ok(out)
}

/// Writes `mutations` if every one of them passes the table's checks, else none.
fn write_all(g: &Gateway, table: &str, mutations: Vec<Mutation>) -> Result<(), RestError> {
    let t = g.table(table)?;
    for m in &mutations {
        m.validate()?;
        t.check(m)?;
    }
    for r in t.batch(mutations) {
        r?;
    }
    Ok(())
}

fn update(g: &Gateway, call: &Call, table: &str, spec: &RowSpec) -> Answer {
    g.writable()?;
    let format = media::body_format(
        &call.headers,
        &[Format::Xml, Format::Json, Format::Protobuf, Format::Binary],
    )?;
    let mutations = if format == Format::Binary {
        vec![binary_put(call, spec)?]
    } else {
        puts(&cellset::decode(format, &call.body)?, spec)?
    };
    write_all(g, table, mutations)?;
    Ok(empty(StatusCode::OK))
}

/// One value sent as octets: the path's row and column, unless `X-Row`, `X-Column` and
/// `X-Timestamp` say otherwise.
fn binary_put(call: &Call, spec: &RowSpec) -> Result<Mutation, RestError> {
    let header = |name: &str| {
        call.headers
            .get(name)
            .map(|v| Bytes::copy_from_slice(v.as_bytes()))
    };
    let row = header("X-Row").unwrap_or_else(|| spec.row.clone());
    let col = header("X-Column")
        .or_else(|| spec.columns.first().cloned())
        .ok_or_else(|| RestError::bad_request("Column found to be null."))?;
    let ts = match header("X-Timestamp") {
        Some(t) => String::from_utf8_lossy(&t)
            .trim()
            .parse()
            .map_err(|_| RestError::bad_request("X-Timestamp is not a long"))?,
        None => LATEST_TIMESTAMP,
    };
    let (f, q) = family_qualifier(&col)?;
    Ok(Mutation::Put(Put::new(row).add_at(
        f,
        q,
        ts,
        call.body.clone(),
    )))
}

fn one_row(call: &Call) -> Result<RowModel, RestError> {
    let format = media::body_format(&call.headers, media::MODELS)?;
    let mut rows = cellset::decode(format, &call.body)?;
    if rows.len() != 1 {
        return Err(RestError::bad_request("Number of rows specified is not 1."));
    }
    Ok(rows.remove(0))
}

fn checked(g: &Gateway, call: &Call, table: &str, spec: &RowSpec, check: &str) -> Answer {
    g.writable()?;
    let row = one_row(call)?;
    let key = key_of(&row, spec);
    match check.to_ascii_lowercase().as_str() {
        "put" => check_and_put(g, table, key, &row),
        "delete" => check_and_delete(g, table, spec, key, &row),
        "append" | "increment" => read_modify_write(g, call, table, spec, key, &row, check),
        _ => Err(RestError::bad_request(format!(
            "Invalid check value '{check}'"
        ))),
    }
}

/// A failed check: 304, which carries no body.
fn not_modified() -> axum::response::Response {
    empty(StatusCode::NOT_MODIFIED)
}

/// The cells before the last are the Put; the last names the column to check and the
/// value it must hold, and one of the Put's cells must be that column.
fn check_and_put(g: &Gateway, table: &str, key: Bytes, row: &RowModel) -> Answer {
    let Some((check, cells)) = row.cells.split_last().filter(|(_, c)| !c.is_empty()) else {
        return Err(RestError::bad_request(
            "Either row key is null or no data found for columns specified.",
        ));
    };
    let check_col = check
        .column
        .as_deref()
        .ok_or_else(|| RestError::bad_request("Column incorrectly specified."))?;
    let (cf, cq) = match split_column(check_col) {
        (f, Some(q)) if !q.is_empty() => (f, q),
        _ => return Err(RestError::bad_request("Column incorrectly specified.")),
    };
    let mut put = Put::new(key.clone());
    let mut matched = false;
    for cell in cells {
        let col = named_column(cell)?;
        let (f, q) = family_qualifier(col)?;
        matched |= col == check_col;
        put = put.add_at(f, q, cell.timestamp, &cell.value);
    }
    if !matched {
        return Err(RestError::bad_request(
            "The column to put and check do not match.",
        ));
    }
    let cam = basalt_model::ops::CheckAndMutate::if_matches(
        key,
        cf,
        cq,
        CompareOp::Equal,
        check.value.clone(),
    )
    .then_put(put);
    conditional(g, table, cam)
}

/// The last cell names the column to check and its value; the cells before it (if any)
/// are what to delete (a family, or a column's version at its timestamp); with none, the
/// checked column is deleted.
fn check_and_delete(
    g: &Gateway,
    table: &str,
    spec: &RowSpec,
    key: Bytes,
    row: &RowModel,
) -> Answer {
    let Some((check, cells)) = row.cells.split_last() else {
        return Err(RestError::bad_request("Column not specified for check."));
    };
    let check_col = match check.column.as_deref() {
        Some(c) => Bytes::copy_from_slice(c),
        None => spec
            .columns
            .first()
            .cloned()
            .ok_or_else(|| RestError::bad_request("Column not specified for check."))?,
    };
    let (cf, Some(cq)) = split_column(&check_col) else {
        return Err(RestError::bad_request(
            "Column to check incorrectly specified.",
        ));
    };
    let mut delete = Delete::new(key.clone());
    for cell in cells {
        let col = named_column(cell)?;
        delete = match split_column(col) {
            (f, None) => delete.add_family_at(f, cell.timestamp),
            (f, Some(q)) => delete.add_column_at(f, q, cell.timestamp),
        };
    }
    if cells.is_empty() {
        delete = delete.add_columns(cf.clone(), cq.clone());
    }
    let cam = basalt_model::ops::CheckAndMutate::if_matches(
        key,
        cf,
        cq,
        CompareOp::Equal,
        check.value.clone(),
    )
    .then_delete(delete);
    conditional(g, table, cam)
}

fn conditional(g: &Gateway, table: &str, cam: basalt_model::ops::CheckAndMutate) -> Answer {
    cam.validate()?;
    let t = g.table(table)?;
    t.check(&cam.action.mutations[0])?;
    if t.check_and_mutate(cam)? {
        Ok(empty(StatusCode::OK))
    } else {
        Ok(not_modified())
    }
}

/// `?check=append` and `?check=increment` (an increment's value is the amount as decimal
/// text); `?rr=true` answers the new cells.
fn read_modify_write(
    g: &Gateway,
    call: &Call,
    table: &str,
    spec: &RowSpec,
    key: Bytes,
    row: &RowModel,
    check: &str,
) -> Answer {
    let return_results = call
        .param("rr")
        .is_some_and(|v| v.eq_ignore_ascii_case("true"));
    let increment = check.eq_ignore_ascii_case("increment");
    let mut inc = Increment::new(key.clone());
    let mut app = Append::new(key);
    for (i, cell) in row.cells.iter().enumerate() {
        let (f, q) = family_qualifier(column(cell, spec, i)?)?;
        if increment {
            let text = String::from_utf8_lossy(&cell.value);
            let by: i64 = text.trim().parse().map_err(|_| {
                RestError::bad_request(format!("increment amount '{text}' is not a long"))
            })?;
            inc = inc.add(f, q, by);
        } else {
            app = app.add(f, q, cell.value.clone());
        }
    }
    inc.return_results = return_results;
    app.return_results = return_results;
    let m = if increment {
        Mutation::Increment(inc)
    } else {
        Mutation::Append(app)
    };
    m.validate()?;
    let t = g.table(table)?;
    t.check(&m)?;
    let result = t.mutate(m)?.unwrap_or_default();
    if !return_results {
        return Ok(empty(StatusCode::OK));
    }
    if result.is_empty() {
        return Ok(not_modified());
    }
    let format = media::negotiate(&call.headers, media::MODELS)?;
    Ok(answer(
        StatusCode::OK,
        format,
        cellset::encode(format, &[result]),
    ))
}

fn delete(g: &Gateway, table: &str, spec: &RowSpec) -> Answer {
    g.writable()?;
    let upto = match spec.time {
        TimeSpec::All => None,
        TimeSpec::Exactly(ts) | TimeSpec::Range(_, ts) => Some(ts),
    };
    let mut d = match upto {
        Some(ts) => Delete::at(spec.row.clone(), ts),
        None => Delete::new(spec.row.clone()),
    };
    for col in &spec.columns {
        d = match (split_column(col), upto) {
            ((f, None), Some(ts)) => d.add_family_at(f, ts),
            ((f, None), None) => d.add_family(f),
            ((f, Some(q)), Some(ts)) => d.add_columns_at(f, q, ts),
            ((f, Some(q)), None) => d.add_columns(f, q),
        };
    }
    write_all(g, table, vec![Mutation::Delete(d)])?;
    Ok(empty(StatusCode::OK))
}

/// `GET /T/multiget[/cols]?row=..`: each `row` is a row spec; missing rows are left out;
/// none found is 404.
pub fn multiget(g: &Gateway, call: &Call, table: &str, path: &str) -> Answer {
    if call.method != Method::GET && call.method != Method::HEAD {
        return Err(not_allowed("GET"));
    }
    let format = media::negotiate(&call.headers, media::MODELS)?;
    let extra: Vec<Bytes> = path["multiget".len()..]
        .replace('/', "")
        .split(',')
        .filter(|c| !c.is_empty())
        .map(|c| crate::rest::rowspec::url_decode(c).map(Bytes::from))
        .collect::<Result<_, _>>()?;
    let filter = query_filter(call)?;
    let t = g.table(table)?;
    let mut rows = Vec::new();
    for r in call.params("row") {
        let mut spec = parse_spec(call, r)?;
        spec.columns.extend(extra.iter().cloned());
        let mut get = get_of(&spec, spec.row.clone())?;
        if let Some(f) = &filter {
            get = get.with_filter(f.clone());
        }
        let result = t.get(get)?;
        if !result.is_empty() {
            rows.push(result);
        }
    }
    if rows.is_empty() {
        return Err(RestError::new(StatusCode::NOT_FOUND, "No rows found."));
    }
    Ok(answer(
        StatusCode::OK,
        format,
        cellset::encode(format, &rows),
    ))
}

/// `filter_b64` (URL-safe base64 of a filter-language string) or `filter`.
pub(crate) fn query_filter(call: &Call) -> Result<Option<Filter>, RestError> {
    let bytes = match (call.param("filter_b64"), call.param("filter")) {
        (Some(b), _) => crate::rest::rowspec::decode_b64("b64", b.as_bytes())?,
        (None, Some(f)) => f.as_bytes().to_vec(),
        (None, None) => return Ok(None),
    };
    basalt_model::filter::parse_filter_bytes(&bytes)
        .map(Some)
        .map_err(|e| RestError::bad_request(format!("invalid filter: {e}")))
}
