//! The data RPCs (HBase's region server RPCs) over `basalt_api::Table`, and scanners as
//! leases.

use basalt_model::{Error, Result};
use basalt_proto::convert::{
    check_and_mutate_from_pb, get_from_pb, mutation_from_pb, result_into_pb, result_to_pb,
    row_mutations_from_pb, scan_from_pb,
};
use basalt_proto::pb;
use basalt_proto::rows::{EncodedRows, OpenedScanner, RowMessage, ScannedRows};
use prost::Message;
use tonic::{Request, Response, Status};

use super::region_check::check_region;
use super::{
    answer, blocking, empty, in_memory, mini_batch, table, Services, DEFAULT_MAX_RESULT_BYTES,
};

fn mutate_response(r: Option<basalt_model::RowResult>) -> pb::MutateResponse {
    pb::MutateResponse {
        result: r.as_ref().map(result_to_pb),
    }
}

fn error_entry(e: &Error) -> pb::Error {
    pb::Error {
        exception: e.exception_name().to_owned(),
        message: e.to_string(),
        retryable: e.is_retryable(),
    }
}

/// An answer of ours as the generated message of the same bytes (`basalt_proto::rows`,
/// invariant 1): a scan's rows are encoded as they are read.
fn as_generated<M: Message + Default>(
    answer: Response<impl Message>,
) -> std::result::Result<Response<M>, Status> {
    let (meta, message, extensions) = answer.into_parts();
    let message = M::decode(message.encode_to_vec().as_slice())
        .map_err(|e| Status::internal(format!("a scan's answer did not decode: {e}")))?;
    Ok(Response::from_parts(meta, message, extensions))
}

#[tonic::async_trait]
impl pb::table_server::Table for Services {
    async fn get(
        &self,
        r: Request<pb::GetRequest>,
    ) -> std::result::Result<Response<pb::Result>, Status> {
        let answer = self.get_row(r).await?;
        Ok(answer.map(|row| result_into_pb(row.0)))
    }

    async fn mutate(
        &self,
        r: Request<pb::MutateRequest>,
    ) -> std::result::Result<Response<pb::MutateResponse>, Status> {
        let r = r.into_inner();
        if mini_batch::joins(&r) {
            let started = std::time::Instant::now();
            let outcome = mini_batch::submit(self, r);
            let out = mini_batch::outcome(self, started, outcome).await?;
            return answer(out.map(mutate_response));
        }
        blocking(self, "mutate", move |s| {
            let m = r
                .mutation
                .ok_or_else(|| Error::illegal("malformed request: no mutation"))?;
            let m = mutation_from_pb(m)?;
            check_region(s, &table(&r.table)?, m.row(), r.region.as_deref())?;
            let out = s.conn.table(&table(&r.table)?)?.mutate(m)?;
            Ok(mutate_response(out))
        })
        .await
    }

    async fn mutate_row(
        &self,
        r: Request<pb::MutateRowRequest>,
    ) -> std::result::Result<Response<pb::Empty>, Status> {
        let r = r.into_inner();
        blocking(self, "mutate_row", move |s| {
            let rm = r
                .mutations
                .ok_or_else(|| Error::illegal("malformed request: no mutations"))?;
            let rm = row_mutations_from_pb(rm)?;
            check_region(s, &table(&r.table)?, &rm.row, r.region.as_deref())?;
            s.conn.table(&table(&r.table)?)?.mutate_row(rm)?;
            Ok(empty())
        })
        .await
    }

    async fn check_and_mutate(
        &self,
        r: Request<pb::CheckAndMutateRequest>,
    ) -> std::result::Result<Response<pb::BoolResponse>, Status> {
        let r = r.into_inner();
        blocking(self, "check_and_mutate", move |s| {
            let t = s.conn.table(&table(&r.table)?)?;
            let name = table(&r.table)?;
            let region = r.region.clone();
            let cam = check_and_mutate_from_pb(r)?;
            check_region(s, &name, &cam.row, region.as_deref())?;
            let value = t.check_and_mutate(cam)?;
            Ok(pb::BoolResponse { value })
        })
        .await
    }

    async fn batch(
        &self,
        r: Request<pb::BatchRequest>,
    ) -> std::result::Result<Response<pb::BatchResponse>, Status> {
        let r = r.into_inner();
        blocking(self, "batch", move |s| {
            let t = s.conn.table(&table(&r.table)?)?;
            let decoded: Vec<_> = r.mutations.into_iter().map(mutation_from_pb).collect();
            // A malformed mutation refuses the whole batch, as an invalid one does in
            // `Table::batch` (HBase's client checks the whole list before sending any).
            let outcomes = match decoded.iter().position(Result::is_err) {
                Some(first) => decoded
                    .into_iter()
                    .map(|d| {
                        Err(d.err().unwrap_or_else(|| {
                            Error::illegal(format!(
                                "not applied: mutation {first} of the batch was malformed"
                            ))
                        }))
                    })
                    .collect(),
                // Mini-batches: one WAL sync per region and run, not one per mutation.
                None => t.batch(decoded.into_iter().filter_map(Result::ok).collect()),
            };
            let entries = outcomes
                .into_iter()
                .map(|outcome| pb::BatchEntry {
                    outcome: Some(match outcome {
                        Ok(res) => pb::batch_entry::Outcome::Ok(mutate_response(res)),
                        Err(e) => pb::batch_entry::Outcome::Error(error_entry(&e)),
                    }),
                })
                .collect();
            Ok(pb::BatchResponse { entries })
        })
        .await
    }

    async fn open_scanner(
        &self,
        r: Request<pb::OpenScannerRequest>,
    ) -> std::result::Result<Response<pb::OpenScannerResponse>, Status> {
        as_generated(self.open_scanner_rows(r).await?)
    }

    async fn next(
        &self,
        r: Request<pb::NextRequest>,
    ) -> std::result::Result<Response<pb::NextResponse>, Status> {
        as_generated(self.next_rows(r).await?)
    }

    async fn close_scanner(
        &self,
        r: Request<pb::ScannerId>,
    ) -> std::result::Result<Response<pb::Empty>, Status> {
        let started = std::time::Instant::now();
        self.scanners.close(r.into_inner().id);
        self.metrics
            .record("close_scanner", started.elapsed(), true);
        Ok(Response::new(empty()))
    }
}

/// The calls that answer with rows, their rows encoded straight from the model's
/// ([`basalt_proto::rows`]); the generated service above answers the same through its
/// messages.
impl Services {
    /// `Get`: answered here when memory holds the row, else on the blocking pool.
    pub(super) async fn get_row(
        &self,
        r: Request<pb::GetRequest>,
    ) -> std::result::Result<Response<RowMessage>, Status> {
        let r = r.into_inner();
        let read = r
            .get
            .ok_or_else(|| Error::illegal("malformed request: no get"))
            .and_then(get_from_pb)
            .and_then(|get| Ok((table(&r.table)?, get)));
        let region = r.region;
        if let Ok((name, get)) = &read {
            // A read of memory alone is answered here; one that needs the disk goes on.
            let cached = in_memory(self, "get", |s| {
                check_region(s, name, &get.row, region.as_deref())?;
                let row = s.conn.table(name)?.get_cached(get)?;
                Ok(row.map(RowMessage))
            });
            if let Some(answer) = cached {
                return answer;
            }
        }
        blocking(self, "get", move |s| {
            let (name, get) = read?;
            check_region(s, &name, &get.row, region.as_deref())?;
            Ok(RowMessage(s.conn.table(&name)?.get(get)?))
        })
        .await
    }

    /// `OpenScanner`, with the scanner's first rows when the request asks for them.
    pub(super) async fn open_scanner_rows(
        &self,
        r: Request<pb::OpenScannerRequest>,
    ) -> std::result::Result<Response<OpenedScanner>, Status> {
        let r = r.into_inner();
        blocking(self, "open_scanner", move |s| {
            let scan = scan_from_pb(
                r.scan
                    .ok_or_else(|| Error::illegal("malformed request: no scan"))?,
            )?;
            let scanner = s.conn.table(&table(&r.table)?)?.scan(scan)?;
            let id = s.scanners.open(scanner);
            if r.first_result_bytes == 0 {
                return Ok(OpenedScanner {
                    id,
                    ..OpenedScanner::default()
                });
            }
            // The first results in the same call; a scanner they exhaust is closed here.
            let first = next_results(s, id, r.first_result_bytes)?;
            Ok(OpenedScanner {
                id,
                encoded: first.encoded,
                done: first.done,
                ..OpenedScanner::default()
            })
        })
        .await
    }

    /// `Next`.
    pub(super) async fn next_rows(
        &self,
        r: Request<pb::NextRequest>,
    ) -> std::result::Result<Response<ScannedRows>, Status> {
        let r = r.into_inner();
        blocking(self, "next", move |s| {
            next_results(s, r.scanner, r.max_result_bytes)
        })
        .await
    }
}

/// Results of one scanner call: up to `max_bytes` (at least one result), the lease renewed;
/// an exhausted scanner is closed. The rows are read into one vector and encoded where they
/// lie ([`EncodedRows`]).
fn next_results(s: &Services, id: u64, max_bytes: u64) -> Result<ScannedRows> {
    let limit = if max_bytes == 0 {
        DEFAULT_MAX_RESULT_BYTES
    } else {
        max_bytes
    };
    let mut scanner = s.scanners.take(id)?;
    let mut encoded = EncodedRows::default();
    let mut cells = Vec::new();
    let mut bytes = 0u64;
    let done = loop {
        match scanner.next_cells(&mut cells) {
            Ok(Some(partial)) => {
                bytes += cells.iter().map(|c| c.heap_size() as u64).sum::<u64>();
                encoded.push(&cells, partial);
                if bytes >= limit {
                    break false;
                }
            }
            Ok(None) => break true,
            // The scanner is dropped (closed) with the error.
            Err(e) => return Err(e),
        }
    };
    if !done {
        s.scanners.put_back(id, scanner);
    }
    Ok(ScannedRows {
        encoded,
        done,
        ..ScannedRows::default()
    })
}
