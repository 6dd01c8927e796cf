//! `ResultScanner`: a scan run region server by region server.
//!
//! The client walks the table's regions in scan order. Each run of consecutive regions on
//! one server is one scanner there, over the scan clipped to the run's key range; when it
//! ends, the scan goes on from the run's edge. A scan that loses its server part way (the
//! region moved, the server went) opens again just past the last row returned, so a
//! region move shows up as a retry, never as an error or a repeated row. A standalone
//! server holds every region: one run, one scanner.

use std::collections::VecDeque;

use crate::rpc::TableRpc;
use basalt_model::ops::Scan;
use basalt_model::{Error, Result, RowResult};
use basalt_proto::convert::scan_to_pb;
use basalt_proto::pb::{self};
use basalt_proto::status::from_status;
use bytes::Bytes;

use crate::table::{region_index, Location};
use crate::Table;

/// One server's scanner over a run of regions.
#[derive(Debug)]
struct Run {
    client: TableRpc,
    id: u64,
    /// Where the run ends in scan order: the last region's end key going forward, the
    /// first region's start key going backward (empty: the table's edge).
    edge: Bytes,
}

/// Results of a scan, fetched a batch at a time.
#[derive(Debug)]
pub struct ResultScanner {
    table: Table,
    /// What is left to scan: its start moves past each row returned.
    scan: Scan,
    returned: u64,
    run: Option<Run>,
    buffered: VecDeque<RowResult>,
    finished: bool,
    /// Retries since the last row returned.
    attempt: u32,
}

/// The slice of `scan` a run of regions covers, and the run's edge in scan order.
fn clip(scan: &Scan, locations: &[Location], first: usize) -> (Scan, usize, Bytes) {
    let server = &locations[first].server;
    let mut s = scan.clone();
    if scan.reversed {
        let mut last = first;
        while last > 0 && locations[last - 1].server == *server {
            last -= 1;
        }
        let lo = locations[last].info.start_key.clone();
        if !lo.is_empty() && (scan.stop_row.is_empty() || scan.stop_row < lo) {
            s.stop_row = lo.clone();
            s.include_stop_row = true;
        }
        (s, last, lo)
    } else {
        let mut last = first;
        while last + 1 < locations.len() && locations[last + 1].server == *server {
            last += 1;
        }
        let hi = locations[last].info.end_key.clone();
        let past = scan.stop_row.is_empty()
            || scan.stop_row > hi
            || (scan.stop_row == hi && scan.include_stop_row);
        if !hi.is_empty() && past {
            s.stop_row = hi.clone();
            s.include_stop_row = false;
        }
        (s, last, hi)
    }
}

/// The region holding the scan's next row, or `None` when the scan is past its regions.
fn first_region(scan: &Scan, locations: &[Location]) -> Option<usize> {
    if locations.is_empty() {
        return None;
    }
    if !scan.reversed {
        return Some(region_index(locations, &scan.start_row));
    }
    if scan.start_row.is_empty() {
        return Some(locations.len() - 1);
    }
    let i = region_index(locations, &scan.start_row);
    if !scan.include_start_row && locations[i].info.start_key == scan.start_row {
        // Rows below a region's start key are in the region before it.
        return i.checked_sub(1);
    }
    Some(i)
}

impl ResultScanner {
    pub(crate) fn new(table: Table, scan: Scan) -> Self {
        ResultScanner {
            table,
            scan,
            returned: 0,
            run: None,
            buffered: VecDeque::new(),
            finished: false,
            attempt: 0,
        }
    }

    /// The next result, `None` at the end.
    ///
    /// # Errors
    /// A server error, or a lost server past the client's retries.
    pub async fn next(&mut self) -> Result<Option<RowResult>> {
        loop {
            if let Some(r) = self.buffered.pop_front() {
                self.returned += 1;
                self.attempt = 0;
                if self.scan.batch == 0 {
                    // Resuming after a lost server starts just past this row.
                    self.scan.start_row = r.row_bytes();
                    self.scan.include_start_row = false;
                }
                return Ok(Some(r));
            }
            if self.finished || (self.scan.limit > 0 && self.returned >= self.scan.limit) {
                self.close_run().await;
                return Ok(None);
            }
            let step = if self.run.is_some() {
                self.fetch().await
            } else {
                self.open().await
            };
            if let Err(e) = step {
                self.recover(e).await?;
            }
        }
    }

    /// After a failed open or fetch: forgets the run and the cached locations and pauses
    /// before trying again from the last row returned, when that is safe and retries are
    /// left; else the error. A scanner whose lease expired is an error, as in HBase: the
    /// client left it alone too long.
    async fn recover(&mut self, e: Error) -> Result<()> {
        let resumable = self.scan.batch == 0 || self.returned == 0;
        if !(resumable && e.is_retryable()) || self.attempt >= self.table.config.retries {
            self.finished = true;
            return Err(e);
        }
        self.table.forget_locations();
        self.close_run().await;
        tokio::time::sleep(crate::retry::pause(&self.table.config, self.attempt)).await;
        self.attempt += 1;
        Ok(())
    }

    /// Opens a scanner on the server of the next run of regions.
    async fn open(&mut self) -> Result<()> {
        let locations = self.table.locations().await?;
        let Some(first) = first_region(&self.scan, &locations) else {
            self.finished = true;
            return Ok(());
        };
        let (mut part, _, edge) = clip(&self.scan, &locations, first);
        if self.scan.limit > 0 {
            part.limit = self.scan.limit - self.returned;
        }
        let mut client = self.table.client(&locations[first].server)?;
        let req = pb::OpenScannerRequest {
            table: self.table.name().to_string(),
            scan: Some(scan_to_pb(&part)),
            first_result_bytes: self.max_result_bytes(),
        };
        let opened = client
            .open_scanner(req, None)
            .await
            .map_err(|s| from_status(&s))?;
        let run = Run {
            client,
            id: opened.id,
            edge,
        };
        self.take(run, opened.results, opened.done);
        Ok(())
    }

    /// Fetches the next batch of the current run (which stays current when the call fails,
    /// for the recovery to close).
    async fn fetch(&mut self) -> Result<()> {
        let Some(mut run) = self.run.take() else {
            return Ok(());
        };
        let req = pb::NextRequest {
            scanner: run.id,
            max_result_bytes: self.max_result_bytes(),
        };
        match run.client.next(req, None).await {
            Ok(r) => {
                self.take(run, r.results, r.done);
                Ok(())
            }
            Err(s) => {
                self.run = Some(run);
                Err(from_status(&s))
            }
        }
    }

    /// The bytes of results one scanner call returns at most.
    fn max_result_bytes(&self) -> u64 {
        match self.table.config.scanner_max_result_bytes {
            0 => crate::DEFAULT_SCANNER_MAX_RESULT_BYTES,
            n => n,
        }
    }

    /// Buffers a scanner call's results; at the run's end (`done`, the server closed its
    /// scanner), moves the scan to the run's edge or finishes it there, else keeps the run.
    /// (An answer whose results do not decode is the call's error: [`ResultScanner::fetch`] keeps
    /// the run current for the recovery to close, and the scan goes on from the last row
    /// returned.)
    fn take(&mut self, run: Run, results: Vec<RowResult>, done: bool) {
        self.buffered.extend(results);
        if done {
            self.advance_past(run.edge);
        } else {
            self.run = Some(run);
        }
    }

    /// The run ending at `edge` is done: the scan goes on beyond it, if it reaches there.
    fn advance_past(&mut self, edge: Bytes) {
        let s = &mut self.scan;
        let beyond = if edge.is_empty() {
            false
        } else if s.reversed {
            s.stop_row.is_empty() || s.stop_row < edge
        } else {
            s.stop_row.is_empty() || s.stop_row > edge || (s.stop_row == edge && s.include_stop_row)
        };
        if !beyond {
            self.finished = true;
            return;
        }
        // Going forward the edge is the next region's first key; going backward, the
        // rows below it.
        s.include_start_row = !s.reversed;
        s.start_row = edge;
    }

    async fn close_run(&mut self) {
        if let Some(mut run) = self.run.take() {
            // A scanner left open expires with its lease.
            let _ = run
                .client
                .close_scanner(pb::ScannerId { id: run.id }, None)
                .await;
        }
    }

    /// The remaining results as a `Stream` (ends after the first error).
    pub fn into_stream(self) -> impl futures_util::Stream<Item = Result<RowResult>> {
        futures_util::stream::unfold(Some(self), |scanner| async move {
            let mut scanner = scanner?;
            match scanner.next().await {
                Ok(Some(row)) => Some((Ok(row), Some(scanner))),
                Ok(None) => None,
                Err(e) => Some((Err(e), None)),
            }
        })
    }

    /// Every remaining result.
    ///
    /// # Errors
    /// As [`ResultScanner::next`].
    pub async fn collect(mut self) -> Result<Vec<RowResult>> {
        let mut out = Vec::new();
        while let Some(r) = self.next().await? {
            out.push(r);
        }
        Ok(out)
    }

    /// Releases the scanner on the server now (it is also released at its end, or when its
    /// lease expires).
    ///
    /// # Errors
    /// None: a scanner the server no longer has needs no release.
    pub async fn close(mut self) -> Result<()> {
        self.finished = true;
        self.close_run().await;
        Ok(())
    }
}
