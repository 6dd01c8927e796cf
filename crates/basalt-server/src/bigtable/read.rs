//! ReadRows and SampleRowKeys: row sets as HBase scans, the GC rule and the filter applied to
//! each row, and the rows streamed as Bigtable's cell chunks.

use std::ops::Bound;
use std::time::Instant;

use basalt_bigtable_proto::google::bigtable::v2::{
    read_rows_request::RequestStatsView, read_rows_response::cell_chunk::RowStatus,
    read_rows_response::CellChunk, request_stats::StatsView, row_range, FullReadStatsView,
    ReadIterationStats, ReadRowsRequest, ReadRowsResponse, RequestLatencyStats, RequestStats,
    RowRange, RowSet, SampleRowKeysResponse,
};
use basalt_model::ops::{Get, Scan};
use basalt_model::{Cell, RowResult};
use bytes::Bytes;
use tokio::sync::mpsc;
use tonic::Status;

use super::filter::{BtCell, Compiled, Sampler};
use super::{micros, status, table_name, Gateway, TableSchema};

/// The largest piece of a value one chunk carries; a larger value is split across chunks,
/// as the protocol allows.
const CHUNK_VALUE_BYTES: usize = 1 << 20;
/// A row larger than this goes out over several responses.
const RESPONSE_BYTES: usize = 1 << 20;

/// The rows of one request, in order: each a closed or open range of keys.
#[derive(Clone, Debug, PartialEq, Eq)]
struct KeyRange {
    start: Bound<Bytes>,
    end: Bound<Bytes>,
}

impl KeyRange {
    fn point(k: &Bytes) -> KeyRange {
        KeyRange {
            start: Bound::Included(k.clone()),
            end: Bound::Included(k.clone()),
        }
    }

    fn as_point(&self) -> Option<&Bytes> {
        match (&self.start, &self.end) {
            (Bound::Included(a), Bound::Included(b)) if a == b => Some(a),
            _ => None,
        }
    }

    fn is_inverted(&self) -> bool {
        match (&self.start, &self.end) {
            (Bound::Included(a) | Bound::Excluded(a), Bound::Included(b) | Bound::Excluded(b)) => {
                a > b
            }
            _ => false,
        }
    }

    fn is_empty(&self) -> bool {
        match (&self.start, &self.end) {
            (Bound::Included(a), Bound::Included(b)) => a > b,
            (Bound::Included(a) | Bound::Excluded(a), Bound::Excluded(b))
            | (Bound::Excluded(a), Bound::Included(b)) => a >= b,
            _ => false,
        }
    }
}

fn range_of(r: &RowRange) -> KeyRange {
    use row_range::{EndKey as E, StartKey as S};
    let start = match &r.start_key {
        Some(S::StartKeyClosed(k)) if !k.is_empty() => Bound::Included(k.clone()),
        Some(S::StartKeyOpen(k)) if !k.is_empty() => Bound::Excluded(k.clone()),
        _ => Bound::Unbounded,
    };
    let end = match &r.end_key {
        Some(E::EndKeyClosed(k)) if !k.is_empty() => Bound::Included(k.clone()),
        Some(E::EndKeyOpen(k)) if !k.is_empty() => Bound::Excluded(k.clone()),
        _ => Bound::Unbounded,
    };
    KeyRange { start, end }
}

/// Orders two start bounds (unbounded first).
fn start_cmp(a: &Bound<Bytes>, b: &Bound<Bytes>) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    match (a, b) {
        (Bound::Unbounded, Bound::Unbounded) => Ordering::Equal,
        (Bound::Unbounded, _) => Ordering::Less,
        (_, Bound::Unbounded) => Ordering::Greater,
        (Bound::Included(x) | Bound::Excluded(x), Bound::Included(y) | Bound::Excluded(y)) => x
            .cmp(y)
            .then(matches!(a, Bound::Excluded(_)).cmp(&matches!(b, Bound::Excluded(_)))),
    }
}

/// Whether a range ending at `end` reaches a range starting at `start` (they overlap or
/// touch, so a row is read once).
fn reaches(end: &Bound<Bytes>, start: &Bound<Bytes>) -> bool {
    match (end, start) {
        (Bound::Unbounded, _) | (_, Bound::Unbounded) => true,
        (Bound::Included(e), Bound::Included(s)) => e >= s,
        (Bound::Included(e), Bound::Excluded(s)) | (Bound::Excluded(e), Bound::Included(s)) => {
            e >= s
        }
        (Bound::Excluded(e), Bound::Excluded(s)) => e > s,
    }
}

fn later_end(a: Bound<Bytes>, b: Bound<Bytes>) -> Bound<Bytes> {
    match (&a, &b) {
        (Bound::Unbounded, _) | (_, Bound::Unbounded) => Bound::Unbounded,
        (Bound::Included(x) | Bound::Excluded(x), Bound::Included(y) | Bound::Excluded(y)) => {
            if x > y || (x == y && matches!(a, Bound::Included(_))) {
                a
            } else {
                b
            }
        }
    }
}

/// The request's row set as sorted, disjoint ranges; an empty set is the whole table.
///
/// # Errors
/// INVALID_ARGUMENT for a range whose start key is after its end key, as Bigtable answers
/// (one that starts and ends at one key with an open end is empty, as the emulator takes it).
fn key_ranges(rows: Option<&RowSet>) -> Result<Vec<KeyRange>, Status> {
    let Some(rows) = rows.filter(|r| !r.row_keys.is_empty() || !r.row_ranges.is_empty()) else {
        return Ok(vec![KeyRange {
            start: Bound::Unbounded,
            end: Bound::Unbounded,
        }]);
    };
    if let Some(i) = rows
        .row_ranges
        .iter()
        .position(|r| range_of(r).is_inverted())
    {
        return Err(Status::invalid_argument(format!(
            "Error in field 'row_ranges' : Error in element #{i} : start_key must be less than end_key"
        )));
    }
    let mut ranges: Vec<KeyRange> = rows
        .row_keys
        .iter()
        .map(KeyRange::point)
        .chain(rows.row_ranges.iter().map(range_of))
        .filter(|r| !r.is_empty())
        .collect();
    ranges.sort_by(|a, b| start_cmp(&a.start, &b.start));
    let mut merged: Vec<KeyRange> = Vec::with_capacity(ranges.len());
    for r in ranges {
        match merged.last_mut() {
            Some(last) if reaches(&last.end, &r.start) => {
                last.end = later_end(last.end.clone(), r.end);
            }
            _ => merged.push(r),
        }
    }
    Ok(merged)
}

fn scan_of(r: &KeyRange, reversed: bool) -> Scan {
    let (lower, upper) = (&r.start, &r.end);
    let mut scan = Scan::new().all_versions();
    let (first, last) = if reversed {
        (upper, lower)
    } else {
        (lower, upper)
    };
    if let Bound::Included(k) | Bound::Excluded(k) = first {
        scan = scan.with_start_row(k.clone(), matches!(first, Bound::Included(_)));
    }
    if let Bound::Included(k) | Bound::Excluded(k) = last {
        scan = scan.with_stop_row(k.clone(), matches!(last, Bound::Included(_)));
    }
    if reversed {
        scan = scan.reversed();
    }
    scan
}

/// Counts for the request's stats.
#[derive(Debug, Default)]
struct Counts {
    rows_seen: i64,
    rows_returned: i64,
    cells_seen: i64,
    cells_returned: i64,
}

/// One request's reading state: where the rows go and what is left to send.
struct Reader<'a> {
    schema: &'a TableSchema,
    filter: Option<Compiled>,
    sampler: Sampler,
    now_micros: i64,
    limit: Option<i64>,
    counts: Counts,
    pending: ReadRowsResponse,
    pending_bytes: usize,
    tx: &'a mpsc::Sender<Result<ReadRowsResponse, Status>>,
}

/// Answers ReadRows, sending responses to `tx` as rows are read; runs on a blocking thread.
///
/// # Errors
/// A bad request (name, filter, limit) or a failed read; rows sent already stay sent.
pub fn read_rows(
    gw: &Gateway,
    req: &ReadRowsRequest,
    tx: &mpsc::Sender<Result<ReadRowsResponse, Status>>,
) -> Result<(), Status> {
    let started = Instant::now();
    let name = table_name(&req.table_name)?;
    if req.rows_limit < 0 {
        return Err(Status::invalid_argument(format!(
            "rows_limit must not be negative, got {}",
            req.rows_limit
        )));
    }
    let filter = req
        .filter
        .as_ref()
        .map(|f| Compiled::new(f, false))
        .transpose()?;
    let schema = gw.schema(&name)?;
    let mut reader = Reader {
        schema: &schema,
        filter,
        sampler: Sampler::seeded_by_clock(),
        now_micros: micros(now_ms()),
        limit: (req.rows_limit > 0).then_some(req.rows_limit),
        counts: Counts::default(),
        pending: ReadRowsResponse::default(),
        pending_bytes: 0,
        tx,
    };
    let mut ranges = key_ranges(req.rows.as_ref())?;
    if req.reversed {
        ranges.reverse();
    }
    for r in &ranges {
        if !reader.read_range(r, req.reversed)? {
            break;
        }
    }
    if req.request_stats_view == RequestStatsView::RequestStatsFull as i32 {
        reader.pending.request_stats = Some(stats(&reader.counts, started));
    }
    reader.flush(true).map(|_| ())
}

fn stats(c: &Counts, started: Instant) -> RequestStats {
    let took = started.elapsed();
    RequestStats {
        stats_view: Some(StatsView::FullReadStatsView(FullReadStatsView {
            read_iteration_stats: Some(ReadIterationStats {
                rows_seen_count: c.rows_seen,
                rows_returned_count: c.rows_returned,
                cells_seen_count: c.cells_seen,
                cells_returned_count: c.cells_returned,
            }),
            request_latency_stats: Some(RequestLatencyStats {
                frontend_server_latency: Some(prost_types::Duration {
                    seconds: i64::try_from(took.as_secs()).unwrap_or(i64::MAX),
                    nanos: i32::try_from(took.subsec_nanos()).unwrap_or(0),
                }),
            }),
        })),
    }
}

pub(super) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

impl Reader<'_> {
    /// Reads one range; says whether to go on (false once the row limit is reached or the
    /// client has gone).
    fn read_range(&mut self, r: &KeyRange, reversed: bool) -> Result<bool, Status> {
        if let Some(key) = r.as_point() {
            let row = self
                .schema
                .table
                .get(Get::new(key.clone()).all_versions())
                .map_err(|e| status(&e))?;
            return self.row(row);
        }
        let mut scanner = self
            .schema
            .table
            .scan(scan_of(r, reversed))
            .map_err(|e| status(&e))?;
        while let Some(row) = scanner.next_row().map_err(|e| status(&e))? {
            if !self.row(row)? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Filters one row and queues its chunks; says whether to go on.
    fn row(&mut self, row: RowResult) -> Result<bool, Status> {
        if row.cells.is_empty() {
            return Ok(true);
        }
        self.counts.rows_seen += 1;
        self.counts.cells_seen += row.cells.len() as i64;
        // Taken before the cells go: a result's row is its first cell's.
        let key = row.row_bytes();
        let cells = visible_cells(self.schema, row.cells, self.now_micros);
        let cells = match &self.filter {
            Some(f) if !cells.is_empty() => f.apply(&key, cells, &self.sampler),
            _ => cells,
        };
        if cells.is_empty() {
            return Ok(true);
        }
        self.counts.rows_returned += 1;
        self.counts.cells_returned += cells.len() as i64;
        // A large row goes out over several responses (the protocol allows it), so no
        // message outgrows what a client accepts by default (4 MiB).
        let mut chunks = Vec::new();
        push_row(&mut chunks, &key, cells);
        for chunk in chunks {
            self.pending_bytes += chunk.value.len() + chunk.row_key.len() + 64;
            self.pending.chunks.push(chunk);
            if self.pending_bytes >= RESPONSE_BYTES && !self.flush(false)? {
                return Ok(false);
            }
        }
        // Each row is a response of its own, as Bigtable and its emulator send them: a
        // client sees rows as they come and resumes a broken stream after the last one.
        if !self.flush(false)? {
            return Ok(false);
        }
        Ok(self.limit.is_none_or(|n| self.counts.rows_returned < n))
    }

    /// Sends what is queued (always, when `last`: the stats ride on the last response).
    /// Says whether the client is still there.
    fn flush(&mut self, last: bool) -> Result<bool, Status> {
        if !last && self.pending.chunks.is_empty() {
            return Ok(true);
        }
        if last && self.pending.chunks.is_empty() && self.pending.request_stats.is_none() {
            return Ok(true);
        }
        let response = std::mem::take(&mut self.pending);
        self.pending_bytes = 0;
        Ok(self.tx.blocking_send(Ok(response)).is_ok())
    }
}

/// A row's cells as Bigtable sees them: microsecond timestamps, the GC rules applied.
pub(super) fn visible_cells(
    schema: &TableSchema,
    cells: Vec<Cell>,
    now_micros: i64,
) -> Vec<BtCell> {
    let mut out: Vec<BtCell> = cells
        .into_iter()
        .map(|c| BtCell {
            qualifier: c.qualifier_bytes(),
            family: c.family.clone(),
            timestamp_micros: micros(c.timestamp),
            value: c.value_bytes(),
            labels: Vec::new(),
        })
        .collect();
    for (name, family) in &schema.families {
        if family.gc.is_some() {
            family.collect_garbage(name, &mut out, now_micros);
        }
    }
    out
}

/// Appends one row's chunks.
fn push_row(chunks: &mut Vec<CellChunk>, key: &Bytes, cells: Vec<BtCell>) {
    let n = cells.len();
    let mut prev: Option<(Bytes, Bytes)> = None;
    for (i, c) in cells.into_iter().enumerate() {
        let new_family = prev.as_ref().is_none_or(|(f, _)| *f != c.family);
        let new_column = new_family || prev.as_ref().is_some_and(|(_, q)| *q != c.qualifier);
        prev = Some((c.family.clone(), c.qualifier.clone()));
        let mut head = CellChunk {
            row_key: if i == 0 { key.clone() } else { Bytes::new() },
            family_name: new_family.then(|| String::from_utf8_lossy(&c.family).into_owned()),
            qualifier: new_column.then(|| c.qualifier.to_vec()),
            timestamp_micros: c.timestamp_micros,
            labels: c.labels,
            ..CellChunk::default()
        };
        let commit = (i + 1 == n).then_some(RowStatus::CommitRow(true));
        if c.value.len() <= CHUNK_VALUE_BYTES {
            head.value = c.value;
            head.row_status = commit;
            chunks.push(head);
            continue;
        }
        let total = i32::try_from(c.value.len()).unwrap_or(i32::MAX);
        let mut pieces = c.value.chunks(CHUNK_VALUE_BYTES).peekable();
        let mut first = true;
        while let Some(piece) = pieces.next() {
            let last = pieces.peek().is_none();
            let mut chunk = if first {
                std::mem::take(&mut head)
            } else {
                CellChunk::default()
            };
            first = false;
            chunk.value = c.value.slice_ref(piece);
            chunk.value_size = if last { 0 } else { total };
            chunk.row_status = if last { commit } else { None };
            chunks.push(chunk);
        }
    }
}

/// SampleRowKeys: each region's end key with the bytes stored before it, then the end of
/// the table (an empty key) with the table's size.
///
/// # Errors
/// A bad name, a missing table.
pub fn sample_row_keys(gw: &Gateway, table: &str) -> Result<Vec<SampleRowKeysResponse>, Status> {
    let name = table_name(table)?;
    let reports = gw
        .conn
        .admin()
        .region_reports(&name)
        .map_err(|e| status(&e))?;
    let mut offset: i64 = 0;
    let mut out = Vec::with_capacity(reports.len());
    for r in reports {
        let size = r
            .load
            .store_file_bytes
            .saturating_add(r.load.memstore_bytes);
        offset = offset.saturating_add(i64::try_from(size).unwrap_or(i64::MAX));
        out.push(SampleRowKeysResponse {
            row_key: r.region.end_key.clone(),
            offset_bytes: offset,
        });
    }
    if out.last().is_none_or(|s| !s.row_key.is_empty()) {
        out.push(SampleRowKeysResponse {
            row_key: Bytes::new(),
            offset_bytes: offset,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
