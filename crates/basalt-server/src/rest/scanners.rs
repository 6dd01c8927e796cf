//! HBase REST's scanners (`ScannerResource`, `ScannerInstanceResource`) and the stateless
//! scan (`TableScanResource`).
//!
//! A scanner is made with `PUT`/`POST /T/scanner` and a `Scanner` spec (XML, JSON or
//! protobuf; `batch` is the page size in cells, every version is read unless
//! `maxVersions` says otherwise, `filter` is HBase's JSON filter format). The answer is
//! `201 Created` with its absolute `Location`. `GET` on that location pages through the
//! cells (`?n=` rows and `?c=` cells at most; a row may continue on the next page), `204`
//! once nothing is left; with `Accept: application/octet-stream` one cell per call, its
//! row, column and timestamp in `X-Row`, `X-Column`, `X-Timestamp`. `DELETE` closes it.
//! Scanners are leases: one not read for the lease period is closed (`404` after).
//!
//! `GET /T/prefix*?startrow=..&endrow=..&column=..&limit=..&filter=..` scans without
//! state and answers every row at once (protobuf as length-prefixed `CellSet` frames).

use std::collections::VecDeque;

use axum::http::{header, HeaderValue, Method, StatusCode};
use basalt_api::ResultScanner;
use basalt_model::filter::{Filter, FilterListOp};
use basalt_model::ops::Scan;
use basalt_model::{Cell, RowResult, TimeRange};
use bytes::Bytes;
use prost::Message;
use serde_json::Value;

use crate::rest::cellset::{self, b64, column_of, unb64};
use crate::rest::filter::parse_json_filter;
use crate::rest::media::{self, Format};
use crate::rest::rows::{not_allowed, query_filter};
use crate::rest::rowspec::{split_column, url_decode};
use crate::rest::{answer, empty, pb, xml, Answer, Call, Gateway, RestError};

/// A scanner's state: the rows still to come, and the rest of the row a page stopped in.
pub struct RestScanner {
    scanner: Box<dyn ResultScanner>,
    pending: VecDeque<Cell>,
    /// Cells per page unless `?c=` says otherwise.
    batch: usize,
}

/// A scanner spec as the `Scanner` model carries it.
#[derive(Debug, Default)]
struct Spec {
    start_row: Bytes,
    end_row: Bytes,
    columns: Vec<Bytes>,
    batch: Option<i64>,
    start_time: Option<i64>,
    end_time: Option<i64>,
    max_versions: Option<i64>,
    filter: Option<String>,
    cache_blocks: Option<bool>,
    include_start_row: Option<bool>,
    include_stop_row: Option<bool>,
    reversed: Option<bool>,
    limit: Option<i64>,
}

/// `PUT`/`POST /T/scanner`.
pub fn open(g: &Gateway, call: &Call, table: &str) -> Answer {
    if call.method != Method::PUT && call.method != Method::POST {
        return Err(not_allowed("PUT, POST"));
    }
    g.writable()?;
    let format = media::body_format(&call.headers, media::MODELS)?;
    let spec = parse_spec(format, &call.body)?;
    let batch = spec.batch.unwrap_or(i64::from(i32::MAX));
    if batch <= 0 {
        return Err(RestError::bad_request(format!(
            "batch {batch} must be positive"
        )));
    }
    let scan = scan_of(&spec)?;
    scan.validate()?;
    let t = g.table(table)?;
    if g.scanners.open_count() >= g.config.max_scanners {
        return Err(RestError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            format!(
                "Unavailable\r\n{} scanners are open, the most this gateway keeps",
                g.config.max_scanners
            ),
        ));
    }
    let scanner = t.scan(scan)?;
    let id = g.scanners.open(RestScanner {
        scanner,
        pending: VecDeque::new(),
        batch: usize::try_from(batch).unwrap_or(usize::MAX),
    });
    let mut r = empty(StatusCode::CREATED);
    let location = format!("{}/{id}", call.absolute_url());
    r.headers_mut().insert(
        header::LOCATION,
        HeaderValue::from_str(&location)
            .map_err(|e| RestError::bad_request(format!("Host: {e}")))?,
    );
    Ok(r)
}

fn scan_of(spec: &Spec) -> Result<Scan, RestError> {
    let mut scan = Scan::new().with_start_row(
        spec.start_row.clone(),
        spec.include_start_row.unwrap_or(true),
    );
    if !spec.end_row.is_empty() {
        scan = scan.with_stop_row(spec.end_row.clone(), spec.include_stop_row.unwrap_or(false));
    }
    for col in &spec.columns {
        scan = match split_column(col) {
            (f, Some(q)) => scan.add_column(f, q),
            (f, None) => scan.add_family(f),
        };
    }
    let versions = spec.max_versions.unwrap_or(i64::from(i32::MAX));
    scan = scan.with_max_versions(u32::try_from(versions).map_err(|_| {
        RestError::bad_request(format!(
            "maxVersions {versions} is not a number of versions"
        ))
    })?);
    let (start, end) = (
        spec.start_time.unwrap_or(0),
        spec.end_time.unwrap_or(i64::MAX),
    );
    if start != 0 || end != i64::MAX {
        scan = scan.with_time_range(TimeRange::new(start, end)?);
    }
    if let Some(text) = &spec.filter {
        if let Some(f) = parse_json_filter(text)? {
            scan = scan.with_filter(f);
        }
    }
    if spec.reversed == Some(true) {
        scan = scan.reversed();
    }
    if let Some(limit) = spec.limit.filter(|l| *l > 0) {
        scan = scan.with_limit(u64::try_from(limit).unwrap_or(u64::MAX));
    }
    scan.cache_blocks = spec.cache_blocks.unwrap_or(true);
    Ok(scan)
}

fn parse_spec(format: Format, body: &[u8]) -> Result<Spec, RestError> {
    match format {
        Format::Json => spec_from_json(body),
        Format::Xml => spec_from_xml(body),
        _ => spec_from_pb(body),
    }
}

fn json_int(v: &Value, name: &str) -> Result<Option<i64>, RestError> {
    match v.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(n) => n
            .as_i64()
            .or_else(|| n.as_str().and_then(|s| s.trim().parse().ok()))
            .map(Some)
            .ok_or_else(|| RestError::bad_request(format!("'{name}' must be an integer, not {n}"))),
    }
}

fn json_bool(v: &Value, name: &str) -> Result<Option<bool>, RestError> {
    match v.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(Value::String(s)) => s
            .parse()
            .map(Some)
            .map_err(|_| RestError::bad_request(format!("'{name}' must be true or false"))),
        Some(other) => Err(RestError::bad_request(format!(
            "'{name}' must be true or false, not {other}"
        ))),
    }
}

fn json_b64(v: &Value, name: &str) -> Result<Bytes, RestError> {
    match v.get(name) {
        None | Some(Value::Null) => Ok(Bytes::new()),
        Some(Value::String(s)) => unb64(name, s),
        Some(other) => Err(RestError::bad_request(format!(
            "'{name}' must be base64, not {other}"
        ))),
    }
}

fn spec_from_json(body: &[u8]) -> Result<Spec, RestError> {
    let v: Value = serde_json::from_slice(body)
        .map_err(|e| RestError::bad_request(format!("malformed scanner JSON: {e}")))?;
    if !v.is_object() {
        return Err(RestError::bad_request("a scanner spec is a JSON object"));
    }
    let columns = match v.get("column") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(cols)) => cols
            .iter()
            .map(|c| {
                c.as_str()
                    .ok_or_else(|| RestError::bad_request("columns must be base64 strings"))
                    .and_then(|c| unb64("a column", c))
            })
            .collect::<Result<_, _>>()?,
        Some(Value::String(c)) => vec![unb64("a column", c)?],
        Some(other) => {
            return Err(RestError::bad_request(format!(
                "'column' must be a list, not {other}"
            )))
        }
    };
    let filter = match v.get("filter") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        // Some clients send the filter model itself rather than its text.
        Some(f @ Value::Object(_)) => Some(f.to_string()),
        Some(other) => {
            return Err(RestError::bad_request(format!(
                "'filter' must be a string, not {other}"
            )))
        }
    };
    Ok(Spec {
        start_row: json_b64(&v, "startRow")?,
        end_row: json_b64(&v, "endRow")?,
        columns,
        batch: json_int(&v, "batch")?,
        start_time: json_int(&v, "startTime")?,
        end_time: json_int(&v, "endTime")?,
        max_versions: json_int(&v, "maxVersions")?,
        filter,
        cache_blocks: json_bool(&v, "cacheBlocks")?,
        include_start_row: json_bool(&v, "includeStartRow")?,
        include_stop_row: json_bool(&v, "includeStopRow")?,
        reversed: json_bool(&v, "reversed")?,
        limit: json_int(&v, "limit")?,
    })
}

fn spec_from_xml(body: &[u8]) -> Result<Spec, RestError> {
    let root = xml::parse(body).map_err(RestError::bad_request)?;
    if root.name != "Scanner" {
        return Err(RestError::bad_request(format!(
            "the XML body is <{}>, not <Scanner>",
            root.name
        )));
    }
    let int = |name: &str| -> Result<Option<i64>, RestError> {
        root.attr(name)
            .map(|s| {
                s.trim().parse().map_err(|_| {
                    RestError::bad_request(format!("{name}=\"{s}\" is not an integer"))
                })
            })
            .transpose()
    };
    let boolean = |name: &str| -> Result<Option<bool>, RestError> {
        root.attr(name)
            .map(|s| {
                s.trim().parse().map_err(|_| {
                    RestError::bad_request(format!("{name}=\"{s}\" is not true or false"))
                })
            })
            .transpose()
    };
    let bytes = |name: &str| root.attr(name).map_or(Ok(Bytes::new()), |s| unb64(name, s));
    let filter = root.each("filter").next().map(|f| f.text.clone());
    Ok(Spec {
        start_row: bytes("startRow")?,
        end_row: bytes("endRow")?,
        columns: root
            .each("column")
            .map(|c| unb64("a column", &c.text))
            .collect::<Result<_, _>>()?,
        batch: int("batch")?,
        start_time: int("startTime")?,
        end_time: int("endTime")?,
        max_versions: int("maxVersions")?,
        filter,
        cache_blocks: boolean("cacheBlocks")?,
        include_start_row: boolean("includeStartRow")?,
        include_stop_row: boolean("includeStopRow")?,
        reversed: boolean("reversed")?,
        limit: int("limit")?,
    })
}

fn spec_from_pb(body: &[u8]) -> Result<Spec, RestError> {
    let s = pb::Scanner::decode(body)
        .map_err(|e| RestError::bad_request(format!("malformed protobuf Scanner: {e}")))?;
    Ok(Spec {
        start_row: s.start_row.unwrap_or_default(),
        end_row: s.end_row.unwrap_or_default(),
        columns: s.columns,
        batch: s.batch.map(i64::from),
        start_time: s.start_time,
        end_time: s.end_time,
        max_versions: s.max_versions.map(i64::from),
        filter: s.filter,
        cache_blocks: s.cache_blocks,
        include_start_row: s.include_start_row,
        include_stop_row: s.include_stop_row,
        reversed: None,
        limit: None,
    })
}

/// `/T/scanner/ID`: the next page, or the scanner's close.
pub fn instance(g: &Gateway, call: &Call, id: &str) -> (&'static str, Answer) {
    let unknown = || RestError::new(StatusCode::NOT_FOUND, "Not found");
    let Ok(id) = id.trim_end_matches('/').parse::<u64>() else {
        return ("scanner_next", Err(unknown()));
    };
    match call.method {
        Method::GET | Method::HEAD => ("scanner_next", next(g, call, id)),
        Method::DELETE => (
            "scanner_close",
            g.writable().and_then(|()| {
                if g.scanners.close(id) {
                    Ok(empty(StatusCode::OK))
                } else {
                    Err(unknown())
                }
            }),
        ),
        _ => ("scanner_next", Err(not_allowed("GET, DELETE"))),
    }
}

fn count_param(call: &Call, name: &str) -> Result<usize, RestError> {
    call.param(name).map_or(Ok(0), |v| {
        v.trim()
            .parse::<i64>()
            .map(|n| usize::try_from(n).unwrap_or(0))
            .map_err(|_| RestError::not_found(format!("{name}={v} is not a number")))
    })
}

fn next(g: &Gateway, call: &Call, id: u64) -> Answer {
    let format = media::negotiate(&call.headers, media::CELLS)?;
    let (max_rows, max_cells) = (count_param(call, "n")?, count_param(call, "c")?);
    let mut s = g
        .scanners
        .take(id)
        .map_err(|_| RestError::new(StatusCode::NOT_FOUND, "Not found"))?;
    let limit = match (format, max_cells) {
        (Format::Binary, _) => 1,
        (_, 0) => s.batch,
        (_, c) => c,
    };
    let page = page(&mut s, limit, max_rows);
    match page {
        Ok(rows) => {
            g.scanners.put_back(id, s);
            if rows.is_empty() {
                return Ok(empty(StatusCode::NO_CONTENT));
            }
            let mut r = if format == Format::Binary {
                one_cell(&rows[0].cells[0])
            } else {
                answer(StatusCode::OK, format, cellset::encode(format, &rows))
            };
            r.headers_mut()
                .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
            Ok(r)
        }
        // The scanner is gone with its failure (a table dropped under it, say).
        Err(e) => Err(e.into()),
    }
}

fn one_cell(c: &Cell) -> axum::response::Response {
    let mut r = answer(StatusCode::OK, Format::Binary, c.value().to_vec());
    let h = r.headers_mut();
    for (name, value) in [("X-Row", b64(c.row())), ("X-Column", b64(&column_of(c)))] {
        if let Ok(v) = HeaderValue::from_str(&value) {
            h.insert(name, v);
        }
    }
    h.insert("X-Timestamp", HeaderValue::from(c.timestamp));
    r
}

/// Up to `limit` cells, grouped by row, ending before a row past `max_rows` (0: any).
fn page(
    s: &mut RestScanner,
    limit: usize,
    max_rows: usize,
) -> basalt_model::Result<Vec<RowResult>> {
    let mut rows: Vec<RowResult> = Vec::new();
    let mut count = 0;
    while count < limit {
        if s.pending.is_empty() {
            match s.scanner.next_row()? {
                Some(r) => s.pending.extend(r.cells),
                None => break,
            }
            continue;
        }
        let Some(cell) = s.pending.pop_front() else {
            break;
        };
        let new_row = rows.last().is_none_or(|r| r.row() != cell.row());
        if new_row && max_rows > 0 && rows.len() == max_rows {
            s.pending.push_front(cell);
            break;
        }
        if new_row {
            rows.push(RowResult::new(cell.row_bytes(), Vec::new()));
        }
        if let Some(last) = rows.last_mut() {
            last.cells.push(cell);
        }
        count += 1;
    }
    Ok(rows)
}

/// The largest protobuf frame of a stateless scan: its length is a signed 16-bit prefix.
const MAX_FRAME_BYTES: usize = i16::MAX as usize;

/// `GET /T/prefix*` (or `/T/*`): a scan with every row answered at once.
pub fn table_scan(g: &Gateway, call: &Call, table: &str, spec: &str) -> Answer {
    if call.method != Method::GET && call.method != Method::HEAD {
        return Err(not_allowed("GET"));
    }
    let format = media::negotiate(&call.headers, media::MODELS)?;
    let spec = String::from_utf8_lossy(&url_decode(spec)?).into_owned();
    let scan = stateless_scan(call, &spec)?;
    let limit = match call.param("limit") {
        Some(l) => l
            .trim()
            .parse::<i64>()
            .map_err(|_| RestError::not_found(format!("limit={l} is not a number")))?,
        None => i64::from(i32::MAX),
    };
    let t = g.table(table)?;
    let mut scanner = t.scan(scan)?;
    let mut rows = Vec::new();
    while i64::try_from(rows.len()).unwrap_or(i64::MAX) < limit {
        match scanner.next_row()? {
            Some(r) if r.is_empty() => {}
            Some(r) => rows.push(r),
            None => break,
        }
    }
    if format != Format::Protobuf {
        return Ok(answer(
            StatusCode::OK,
            format,
            cellset::encode(format, &rows),
        ));
    }
    Ok(answer(StatusCode::OK, Format::Protobuf, frames(&rows)?))
}

/// The protobuf stream: `CellSet`s of rows, each after its 2-byte big-endian length.
fn frames(rows: &[RowResult]) -> Result<Vec<u8>, RestError> {
    let mut out = Vec::new();
    let mut set = pb::CellSet::default();
    let flush = |set: &mut pb::CellSet, out: &mut Vec<u8>| {
        if !set.rows.is_empty() {
            let bytes = std::mem::take(set).encode_to_vec();
            out.extend_from_slice(&u16::try_from(bytes.len()).unwrap_or(u16::MAX).to_be_bytes());
            out.extend_from_slice(&bytes);
        }
    };
    for r in rows {
        let row = cellset::row_pb(r);
        let alone = pb::CellSet {
            rows: vec![row.clone()],
        }
        .encoded_len();
        if alone > MAX_FRAME_BYTES {
            return Err(RestError::bad_request(format!(
                "row of {alone} bytes is larger than a protobuf scan frame can carry ({MAX_FRAME_BYTES}); ask for JSON or XML"
            )));
        }
        set.rows.push(row);
        if set.encoded_len() > MAX_FRAME_BYTES {
            let last = set.rows.pop();
            flush(&mut set, &mut out);
            set.rows.extend(last);
        }
    }
    flush(&mut set, &mut out);
    Ok(out)
}

fn param_flag(call: &Call, name: &str, default: bool) -> Result<bool, RestError> {
    call.param(name)
        .map_or(Ok(default), |v| match v.to_ascii_lowercase().as_str() {
            "true" => Ok(true),
            "false" => Ok(false),
            _ => Err(RestError::not_found(format!(
                "{name}={v} is not true or false"
            ))),
        })
}

fn param_i64(call: &Call, name: &str, default: i64) -> Result<i64, RestError> {
    call.param(name).map_or(Ok(default), |v| {
        v.trim()
            .parse()
            .map_err(|_| RestError::not_found(format!("{name}={v} is not a number")))
    })
}

/// The scan `GET /T/prefix*` asks for (HBase's `TableResource.getScanResource`).
fn stateless_scan(call: &Call, spec: &str) -> Result<Scan, RestError> {
    let include_start = param_flag(call, "includeStartRow", true)?;
    let mut scan = Scan::new();
    let prefix = spec
        .find('*')
        .filter(|i| *i > 0)
        .map(|i| Bytes::copy_from_slice(&spec.as_bytes()[..i]));
    let start = call.param("startrow").unwrap_or_default();
    if !start.is_empty() {
        scan = scan.with_start_row(Bytes::copy_from_slice(start.as_bytes()), include_start);
    } else if let Some(p) = &prefix {
        scan = scan.with_start_row(p.clone(), include_start);
    }
    let end = call.param("endrow").unwrap_or_default();
    scan = scan.with_stop_row(
        Bytes::copy_from_slice(end.as_bytes()),
        param_flag(call, "includeStopRow", false)?,
    );
    for col in call.params("column") {
        scan = match split_column(col.trim().as_bytes()) {
            (f, Some(q)) => scan.add_column(f, q),
            (f, None) => scan.add_family(f),
        };
    }
    let versions = param_i64(call, "maxversions", 1)?;
    scan = scan.with_max_versions(
        u32::try_from(versions)
            .map_err(|_| RestError::bad_request(format!("maxversions={versions}")))?,
    );
    let (from, to) = (
        param_i64(call, "starttime", 0)?,
        param_i64(call, "endtime", i64::MAX)?,
    );
    if from != 0 || to != i64::MAX {
        scan = scan.with_time_range(TimeRange::new(from, to)?);
    }
    let batch = param_i64(call, "batchsize", -1)?;
    if batch > 0 {
        scan = scan.with_batch(u32::try_from(batch).unwrap_or(u32::MAX));
    }
    let mut filters: Vec<Filter> = query_filter(call)?.into_iter().collect();
    filters.extend(prefix.map(Filter::prefix));
    scan = match filters.len() {
        0 => scan,
        1 => scan.with_filter(filters.remove(0)),
        _ => scan.with_filter(Filter::list(FilterListOp::MustPassAll, filters)),
    };
    if param_flag(call, "reversed", false)? {
        scan = scan.reversed();
    }
    scan.cache_blocks = param_flag(call, "cacheblocks", true)?;
    scan.validate()?;
    Ok(scan)
}
