//! The gRPC services over the embedded database. Engine calls block (a WAL sync, a flush),
//! so each runs on tokio's blocking pool, never on the runtime's workers.

use std::sync::Arc;

use basalt_model::{Error, Result, TableName};
use basalt_proto::convert::{
    check_and_mutate_from_pb, get_from_pb, mutation_from_pb, result_to_pb, row_mutations_from_pb,
    scan_from_pb,
};
use basalt_proto::pb;
use basalt_proto::schema::{region_load_to_pb, schema_from_pb, schema_to_pb};
use basalt_proto::status::to_status;
use basalt_storage::Database;
use tonic::{Request, Response, Status};

use crate::metrics::RequestMetrics;
use crate::scanners::Scanners;

/// HBase's `hbase.client.scanner.max.result.size`: the bytes a scanner call returns at most
/// (at least one result).
pub const DEFAULT_MAX_RESULT_BYTES: u64 = 2 << 20;

/// The state both services share.
#[derive(Clone, Debug)]
pub struct Services {
    pub db: Database,
    pub scanners: Arc<Scanners>,
    pub metrics: Arc<RequestMetrics>,
}

/// Runs `f` on the blocking pool and turns its error into a status.
async fn blocking<T: Send + 'static>(
    svc: &Services,
    op: &'static str,
    f: impl FnOnce(&Services) -> Result<T> + Send + 'static,
) -> std::result::Result<Response<T>, Status> {
    let started = std::time::Instant::now();
    let metrics = Arc::clone(&svc.metrics);
    let svc = svc.clone();
    let out = tokio::task::spawn_blocking(move || f(&svc))
        .await
        .map_err(|e| Status::internal(format!("the request's task failed: {e}")))?;
    metrics.record(op, started.elapsed(), out.is_ok());
    out.map(Response::new).map_err(|e| {
        tracing::debug!(error = %e, "request refused");
        to_status(&e)
    })
}

fn table(name: &str) -> Result<TableName> {
    TableName::parse(name)
}

fn empty() -> pb::Empty {
    pb::Empty {}
}

#[tonic::async_trait]
impl pb::admin_server::Admin for Services {
    async fn create_namespace(
        &self,
        r: Request<pb::NamespaceRequest>,
    ) -> std::result::Result<Response<pb::Empty>, Status> {
        let r = r.into_inner();
        blocking(self, "create_namespace", move |s| {
            s.db.create_namespace(&r.name, r.properties.into_iter().collect())
                .map(|()| empty())
        })
        .await
    }

    async fn drop_namespace(
        &self,
        r: Request<pb::NameRequest>,
    ) -> std::result::Result<Response<pb::Empty>, Status> {
        let r = r.into_inner();
        blocking(self, "drop_namespace", move |s| {
            s.db.drop_namespace(&r.name).map(|()| empty())
        })
        .await
    }

    async fn alter_namespace(
        &self,
        r: Request<pb::AlterNamespaceRequest>,
    ) -> std::result::Result<Response<pb::Empty>, Status> {
        let r = r.into_inner();
        blocking(self, "alter_namespace", move |s| {
            s.db.alter_namespace(&r.name, r.set.into_iter().collect(), &r.unset)
                .map(|()| empty())
        })
        .await
    }

    async fn describe_namespace(
        &self,
        r: Request<pb::NameRequest>,
    ) -> std::result::Result<Response<pb::NamespaceResponse>, Status> {
        let r = r.into_inner();
        blocking(self, "describe_namespace", move |s| {
            let props = s.db.namespace_properties(&r.name)?;
            Ok(pb::NamespaceResponse {
                properties: props.into_iter().collect(),
            })
        })
        .await
    }

    async fn list_namespaces(
        &self,
        _r: Request<pb::Empty>,
    ) -> std::result::Result<Response<pb::Names>, Status> {
        blocking(self, "list_namespaces", |s| {
            Ok(pb::Names {
                names: s.db.list_namespaces(),
            })
        })
        .await
    }

    async fn list_namespace_tables(
        &self,
        r: Request<pb::NameRequest>,
    ) -> std::result::Result<Response<pb::Names>, Status> {
        let r = r.into_inner();
        blocking(self, "list_namespace_tables", move |s| {
            s.db.namespace_properties(&r.name)?;
            Ok(pb::Names {
                names: s.db.list_namespace_tables(&r.name),
            })
        })
        .await
    }

    async fn create_table(
        &self,
        r: Request<pb::CreateTableRequest>,
    ) -> std::result::Result<Response<pb::Empty>, Status> {
        let r = r.into_inner();
        blocking(self, "create_table", move |s| {
            let schema = r
                .schema
                .ok_or_else(|| Error::illegal("malformed request: no schema"))?;
            s.db.create_table(schema_from_pb(schema)?, &r.split_keys)
                .map(|()| empty())
        })
        .await
    }

    async fn describe_table(
        &self,
        r: Request<pb::NameRequest>,
    ) -> std::result::Result<Response<pb::TableSchema>, Status> {
        let r = r.into_inner();
        blocking(self, "describe_table", move |s| {
            Ok(schema_to_pb(&s.db.describe(&table(&r.name)?)?))
        })
        .await
    }

    async fn modify_table(
        &self,
        r: Request<pb::TableSchema>,
    ) -> std::result::Result<Response<pb::Empty>, Status> {
        let r = r.into_inner();
        blocking(self, "modify_table", move |s| {
            s.db.modify_table(schema_from_pb(r)?).map(|()| empty())
        })
        .await
    }

    async fn table_exists(
        &self,
        r: Request<pb::NameRequest>,
    ) -> std::result::Result<Response<pb::BoolResponse>, Status> {
        let r = r.into_inner();
        blocking(self, "table_exists", move |s| {
            Ok(pb::BoolResponse {
                value: s.db.table_exists(&table(&r.name)?),
            })
        })
        .await
    }

    async fn is_table_enabled(
        &self,
        r: Request<pb::NameRequest>,
    ) -> std::result::Result<Response<pb::BoolResponse>, Status> {
        let r = r.into_inner();
        blocking(self, "is_table_enabled", move |s| {
            Ok(pb::BoolResponse {
                value: s.db.is_enabled(&table(&r.name)?)?,
            })
        })
        .await
    }

    async fn enable_table(
        &self,
        r: Request<pb::NameRequest>,
    ) -> std::result::Result<Response<pb::Empty>, Status> {
        let r = r.into_inner();
        blocking(self, "enable_table", move |s| {
            s.db.enable_table(&table(&r.name)?).map(|()| empty())
        })
        .await
    }

    async fn disable_table(
        &self,
        r: Request<pb::NameRequest>,
    ) -> std::result::Result<Response<pb::Empty>, Status> {
        let r = r.into_inner();
        blocking(self, "disable_table", move |s| {
            s.db.disable_table(&table(&r.name)?).map(|()| empty())
        })
        .await
    }

    async fn delete_table(
        &self,
        r: Request<pb::NameRequest>,
    ) -> std::result::Result<Response<pb::Empty>, Status> {
        let r = r.into_inner();
        blocking(self, "delete_table", move |s| {
            s.db.delete_table(&table(&r.name)?).map(|()| empty())
        })
        .await
    }

    async fn truncate_table(
        &self,
        r: Request<pb::TruncateRequest>,
    ) -> std::result::Result<Response<pb::Empty>, Status> {
        let r = r.into_inner();
        blocking(self, "truncate_table", move |s| {
            s.db.truncate_table(&table(&r.name)?, r.preserve_splits)
                .map(|()| empty())
        })
        .await
    }

    async fn list_tables(
        &self,
        r: Request<pb::ListTablesRequest>,
    ) -> std::result::Result<Response<pb::Names>, Status> {
        let r = r.into_inner();
        blocking(self, "list_tables", move |s| {
            Ok(pb::Names {
                names: s.db.list_tables(r.pattern.as_deref())?,
            })
        })
        .await
    }

    async fn flush(
        &self,
        r: Request<pb::NameRequest>,
    ) -> std::result::Result<Response<pb::Empty>, Status> {
        let r = r.into_inner();
        blocking(self, "flush", move |s| {
            s.db.flush(&table(&r.name)?).map(|()| empty())
        })
        .await
    }

    async fn compact(
        &self,
        r: Request<pb::CompactRequest>,
    ) -> std::result::Result<Response<pb::Empty>, Status> {
        let r = r.into_inner();
        blocking(self, "compact", move |s| {
            let t = table(&r.name)?;
            if r.major {
                s.db.major_compact(&t)?;
            } else {
                s.db.compact(&t)?;
            }
            Ok(empty())
        })
        .await
    }

    async fn split(
        &self,
        r: Request<pb::SplitRequest>,
    ) -> std::result::Result<Response<pb::Empty>, Status> {
        let r = r.into_inner();
        blocking(self, "split", move |s| {
            if r.region.is_empty() {
                s.db.split_table(&table(&r.table)?, r.key.as_deref())?;
            } else {
                s.db.split_region(&r.region, r.key.as_deref())?;
            }
            Ok(empty())
        })
        .await
    }

    async fn merge(
        &self,
        r: Request<pb::MergeRequest>,
    ) -> std::result::Result<Response<pb::Empty>, Status> {
        let r = r.into_inner();
        blocking(self, "merge", move |s| {
            let names: Vec<&[u8]> = r.regions.iter().map(|b| &b[..]).collect();
            s.db.merge_regions(&names, r.force).map(|()| empty())
        })
        .await
    }

    async fn list_regions(
        &self,
        r: Request<pb::NameRequest>,
    ) -> std::result::Result<Response<pb::Regions>, Status> {
        let r = r.into_inner();
        blocking(self, "list_regions", move |s| {
            let t = table(&r.name)?;
            let server = s.db.server_name();
            let regions =
                s.db.region_loads(&t)?
                    .iter()
                    .map(|(i, load)| region_load_to_pb(&t, i, load, &server))
                    .collect();
            Ok(pb::Regions { regions })
        })
        .await
    }

    async fn run_catalog_janitor(
        &self,
        _r: Request<pb::Empty>,
    ) -> std::result::Result<Response<pb::CountResponse>, Status> {
        blocking(self, "run_catalog_janitor", |s| {
            Ok(pb::CountResponse {
                count: s.db.run_catalog_janitor()? as u64,
            })
        })
        .await
    }
}

/// Refuses a request aimed at a region that no longer holds its row (HBase's
/// `NotServingRegionException`): the client then looks its regions up again.
fn check_region(s: &Services, table: &TableName, row: &[u8], region: Option<&str>) -> Result<()> {
    let Some(expected) = region else {
        return Ok(());
    };
    let info = s.db.region_of(table, row)?;
    if info.encoded_name(table) == expected {
        return Ok(());
    }
    Err(Error::NotServingRegion(format!(
        "Region {expected} of table {table}"
    )))
}

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

#[tonic::async_trait]
impl pb::table_server::Table for Services {
    async fn get(
        &self,
        r: Request<pb::GetRequest>,
    ) -> std::result::Result<Response<pb::Result>, Status> {
        let r = r.into_inner();
        blocking(self, "get", move |s| {
            let get = get_from_pb(
                r.get
                    .ok_or_else(|| Error::illegal("malformed request: no get"))?,
            )?;
            check_region(s, &table(&r.table)?, &get.row, r.region.as_deref())?;
            Ok(result_to_pb(&s.db.table(&r.table)?.get(get)?))
        })
        .await
    }

    async fn mutate(
        &self,
        r: Request<pb::MutateRequest>,
    ) -> std::result::Result<Response<pb::MutateResponse>, Status> {
        let r = r.into_inner();
        blocking(self, "mutate", move |s| {
            let m = r
                .mutation
                .ok_or_else(|| Error::illegal("malformed request: no mutation"))?;
            let m = mutation_from_pb(m)?;
            check_region(s, &table(&r.table)?, m.row(), r.region.as_deref())?;
            let out = s.db.table(&r.table)?.mutate(m)?;
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
            s.db.table(&r.table)?.mutate_row(rm)?;
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
            let t = s.db.table(&r.table)?;
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
            let t = s.db.table(&r.table)?;
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
    ) -> std::result::Result<Response<pb::ScannerId>, Status> {
        let r = r.into_inner();
        blocking(self, "open_scanner", move |s| {
            let scan = scan_from_pb(
                r.scan
                    .ok_or_else(|| Error::illegal("malformed request: no scan"))?,
            )?;
            let scanner = s.db.table(&r.table)?.scan(scan)?;
            Ok(pb::ScannerId {
                id: s.scanners.open(scanner),
            })
        })
        .await
    }

    async fn next(
        &self,
        r: Request<pb::NextRequest>,
    ) -> std::result::Result<Response<pb::NextResponse>, Status> {
        let r = r.into_inner();
        blocking(self, "next", move |s| {
            next_results(s, r.scanner, r.max_result_bytes)
        })
        .await
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

/// Results of one scanner call: up to `max_bytes` (at least one result), the lease renewed;
/// an exhausted scanner is closed.
fn next_results(s: &Services, id: u64, max_bytes: u64) -> Result<pb::NextResponse> {
    let limit = if max_bytes == 0 {
        DEFAULT_MAX_RESULT_BYTES
    } else {
        max_bytes
    };
    let mut scanner = s.scanners.take(id)?;
    let mut results = Vec::new();
    let mut bytes = 0u64;
    let done = loop {
        match scanner.next_row() {
            Ok(Some(row)) => {
                bytes += row.cells.iter().map(|c| c.heap_size() as u64).sum::<u64>();
                results.push(result_to_pb(&row));
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
    Ok(pb::NextResponse { results, done })
}
