//! The data API (`google.bigtable.v2.Bigtable`): each method checks its request, then runs
//! on a blocking thread against the operation layer.

use std::collections::BTreeMap;
use std::pin::Pin;
use std::time::Instant;

use basalt_bigtable_proto::google::bigtable::v2::Mutation as V2Mutation;
use basalt_bigtable_proto::google::bigtable::v2::{
    bigtable_server::Bigtable, mutate_rows_response, read_modify_write_rule,
    CheckAndMutateRowRequest, CheckAndMutateRowResponse, Column, Family, MutateRowRequest,
    MutateRowResponse, MutateRowsRequest, MutateRowsResponse, PingAndWarmRequest,
    PingAndWarmResponse, ReadModifyWriteRowRequest, ReadModifyWriteRowResponse, ReadRowsRequest,
    ReadRowsResponse, Row, SampleRowKeysRequest, SampleRowKeysResponse,
};
use basalt_bigtable_proto::google::rpc;
use basalt_model::ops::{CheckAndMutate, Get, Mutation, RowMutations, Scan};
use basalt_model::{Cell, CellType, RowResult, TableName};
use bytes::Bytes;
use tokio_stream::{Stream, StreamExt};
use tonic::{Request, Response, Status};

use super::filter::{Compiled, Sampler};
use super::mutate::{check_row_key, int64, Plan, MAX_MUTATIONS};
use super::read::{now_ms, read_rows, sample_row_keys, visible_cells};
use super::{instance, micros, status, table_name, Gateway, TableSchema};

type Streamed<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send + 'static>>;

/// How many times a read-decide-write is tried before the request gives up (ABORTED): the
/// row changed under it every time.
const OPTIMISTIC_ATTEMPTS: usize = 64;

/// Reads `row`, lets `decide` choose the writes from what it holds, and writes them only if
/// the row is still as read; again from the read if it was not.
fn optimistic<T>(
    schema: &TableSchema,
    row: &Bytes,
    mut decide: impl FnMut(&RowResult) -> Result<(Option<RowMutations>, T), Status>,
) -> Result<T, Status> {
    for _ in 0..OPTIMISTIC_ATTEMPTS {
        let read = schema
            .table
            .get(Get::new(row.clone()).all_versions())
            .map_err(|e| status(&e))?;
        let (writes, out) = decide(&read)?;
        let Some(writes) = writes.filter(|w| !w.mutations.is_empty()) else {
            return Ok(out);
        };
        let cam = CheckAndMutate::if_unchanged(read.digest(), writes);
        if schema.table.check_and_mutate(cam).map_err(|e| status(&e))? {
            return Ok(out);
        }
    }
    Err(Status::aborted(
        "the row changed during every attempt of this read-modify-write; try again",
    ))
}

/// Every Put `row` stores, deleted ones and versions past VERSIONS too (a raw read), for
/// plans that delete a time range ([`Plan::writes_over`]); none for other plans.
fn stored_puts(schema: &TableSchema, row: &Bytes, plans: &[&Plan]) -> Result<Vec<Cell>, Status> {
    if !plans.iter().any(|p| p.deletes_a_range()) {
        return Ok(Vec::new());
    }
    let scan = Scan::new()
        .with_start_row(row.clone(), true)
        .with_stop_row(row.clone(), true)
        .raw()
        .all_versions();
    let mut scanner = schema.table.scan(scan).map_err(|e| status(&e))?;
    let mut out = Vec::new();
    while let Some(r) = scanner.next_row().map_err(|e| status(&e))? {
        out.extend(r.cells.into_iter().filter(|c| c.cell_type == CellType::Put));
    }
    Ok(out)
}

/// Applies a plan: straight to the engine, or read-decide-write when it depends on the row.
fn apply(schema: &TableSchema, row: &Bytes, plan: &Plan) -> Result<(), Status> {
    if plan.needs_read() {
        // The raw read is made in each attempt, after the read the attempt's condition
        // checks, so it sees every Put that read could have missed.
        return optimistic(schema, row, |read| {
            let stored = stored_puts(schema, row, &[plan])?;
            Ok((Some(plan.writes_over(&read.cells, &stored)), ()))
        });
    }
    let writes = plan.writes(&[]);
    if writes.mutations.is_empty() {
        return Ok(());
    }
    schema.table.mutate_row(writes).map_err(|e| status(&e))
}

fn rpc_status(s: &Status) -> rpc::Status {
    rpc::Status {
        code: s.code() as i32,
        message: s.message().to_owned(),
        details: Vec::new(),
    }
}

/// MutateRows: each entry on its own, all or nothing per entry.
fn mutate_rows(
    gw: &Gateway,
    req: &MutateRowsRequest,
) -> Result<Vec<mutate_rows_response::Entry>, Status> {
    let name = table_name(&req.table_name)?;
    if req.entries.is_empty() {
        return Err(Status::invalid_argument("No entries provided"));
    }
    let total: usize = req.entries.iter().map(|e| e.mutations.len()).sum();
    if total > MAX_MUTATIONS {
        return Err(Status::invalid_argument(format!(
            "Too many mutations: {total} (at most {MAX_MUTATIONS})"
        )));
    }
    let entries: Vec<(&Bytes, &[V2Mutation])> = req
        .entries
        .iter()
        .map(|e| (&e.row_key, e.mutations.as_slice()))
        .collect();
    Ok(write_entries(gw, &name, &entries)
        .into_iter()
        .enumerate()
        .map(|(i, r)| mutate_rows_response::Entry {
            index: i as i64,
            status: Some(match r {
                Ok(()) => rpc::Status::default(),
                Err(s) => rpc_status(&s),
            }),
        })
        .collect())
}

/// Writes rows' mutations, each row all or nothing: a status per entry. Entries that are
/// one Put or Delete each go to the engine as one batch (one WAL sync per region); the
/// others are applied one by one.
pub(super) fn write_entries(
    gw: &Gateway,
    name: &TableName,
    entries: &[(&Bytes, &[V2Mutation])],
) -> Vec<Result<(), Status>> {
    let schema = match gw.schema(name) {
        Ok(s) => s,
        Err(s) => return vec![Err(s); entries.len()],
    };
    let now = now_ms();
    let mut results: Vec<Result<(), Status>> = Vec::with_capacity(entries.len());
    let mut batch: Vec<(usize, Mutation)> = Vec::new();
    for (i, (row_key, mutations)) in entries.iter().enumerate() {
        let plan = match Plan::new(&schema, row_key, mutations, now) {
            Ok(p) => p,
            Err(s) => {
                results.push(Err(s));
                continue;
            }
        };
        results.push(Ok(()));
        if !plan.needs_read() {
            let mut w = plan.writes(&[]);
            if w.mutations.len() == 1 {
                batch.extend(w.mutations.pop().map(|m| (i, m)));
                continue;
            }
        }
        results[i] = apply(&schema, row_key, &plan);
    }
    let (indexes, mutations): (Vec<usize>, Vec<Mutation>) = batch.into_iter().unzip();
    for (i, r) in indexes.into_iter().zip(schema.table.batch(mutations)) {
        results[i] = r.map(|_| ()).map_err(|e| status(&e));
    }
    results
}

fn check_and_mutate(gw: &Gateway, req: &CheckAndMutateRowRequest) -> Result<bool, Status> {
    let name = table_name(&req.table_name)?;
    check_row_key(&req.row_key)?;
    if req.true_mutations.is_empty() && req.false_mutations.is_empty() {
        return Err(Status::invalid_argument(
            "CheckAndMutateRow needs true_mutations or false_mutations",
        ));
    }
    let predicate = req
        .predicate_filter
        .as_ref()
        .map(|f| Compiled::new(f, true))
        .transpose()?;
    let schema = gw.schema(&name)?;
    let now = now_ms();
    let plan = |m: &[basalt_bigtable_proto::google::bigtable::v2::Mutation]| {
        (!m.is_empty())
            .then(|| Plan::new(&schema, &req.row_key, m, now))
            .transpose()
    };
    let (if_true, if_false) = (plan(&req.true_mutations)?, plan(&req.false_mutations)?);
    let sampler = Sampler::seeded_by_clock();
    optimistic(&schema, &req.row_key, |read| {
        let cells = visible_cells(&schema, read.cells.clone(), micros(now));
        let matched = match &predicate {
            None => !cells.is_empty(),
            Some(f) => !cells.is_empty() && !f.apply(&req.row_key, cells, &sampler).is_empty(),
        };
        let chosen = if matched { &if_true } else { &if_false };
        let stored = stored_puts(&schema, &req.row_key, &chosen.iter().collect::<Vec<_>>())?;
        Ok((
            chosen.as_ref().map(|p| p.writes_over(&read.cells, &stored)),
            matched,
        ))
    })
}

/// ReadModifyWriteRow: each rule reads the newest cell of its column (as the rules before
/// it left it) and writes the new value at the later of now and that cell's time.
fn read_modify_write(gw: &Gateway, req: &ReadModifyWriteRowRequest) -> Result<Row, Status> {
    let name = table_name(&req.table_name)?;
    check_row_key(&req.row_key)?;
    if req.rules.is_empty() {
        return Err(Status::invalid_argument("No rules provided"));
    }
    let schema = gw.schema(&name)?;
    for r in &req.rules {
        let family = Bytes::copy_from_slice(r.family_name.as_bytes());
        match schema.families.get(&family) {
            None => {
                return Err(Status::not_found(format!(
                    "Column family {:?} not found in table {name}",
                    r.family_name
                )))
            }
            Some(f) if f.aggregate.is_some() => {
                return Err(Status::invalid_argument(format!(
                    "ReadModifyWriteRow cannot change aggregate column family {:?}",
                    r.family_name
                )))
            }
            Some(_) if r.rule.is_none() => {
                return Err(Status::invalid_argument(
                    "A rule must set append_value or increment_amount",
                ))
            }
            Some(_) => {}
        }
    }
    let row = req.row_key.clone();
    optimistic(&schema, &row, |read| {
        let now = now_ms();
        let cells = visible_cells(&schema, read.cells.clone(), micros(now));
        let mut updated: BTreeMap<(Bytes, Bytes), (i64, Bytes)> = BTreeMap::new();
        for r in &req.rules {
            let key = (
                Bytes::copy_from_slice(r.family_name.as_bytes()),
                r.column_qualifier.clone(),
            );
            let old = updated.get(&key).cloned().or_else(|| {
                cells
                    .iter()
                    .find(|c| c.family == key.0 && c.qualifier == key.1)
                    .map(|c| (c.timestamp_micros / 1000, c.value.clone()))
            });
            let value = match &r.rule {
                Some(read_modify_write_rule::Rule::AppendValue(v)) => {
                    let mut out = old.as_ref().map_or_else(Vec::new, |o| o.1.to_vec());
                    out.extend_from_slice(v);
                    Bytes::from(out)
                }
                Some(read_modify_write_rule::Rule::IncrementAmount(n)) => {
                    let base = match &old {
                        None => 0,
                        Some((_, v)) => int64(v).ok_or_else(|| {
                            Status::failed_precondition(format!(
                                "Value of cell {}:{} is not a 64-bit big-endian integer ({} bytes); it cannot be incremented",
                                r.family_name,
                                String::from_utf8_lossy(&r.column_qualifier),
                                v.len()
                            ))
                        })?,
                    };
                    Bytes::copy_from_slice(&base.wrapping_add(*n).to_be_bytes())
                }
                None => Bytes::new(),
            };
            let ts = old.map_or(now, |o| o.0.max(now));
            updated.insert(key, (ts, value));
        }
        let mut put = basalt_model::ops::Put::new(row.clone());
        put.cells = updated
            .iter()
            .map(|((f, q), (ts, v))| Cell::put(row.clone(), f.clone(), q.clone(), *ts, v.clone()))
            .collect();
        let mut rm = RowMutations::new(row.clone());
        rm.mutations.push(put.into());
        Ok((Some(rm), result_row(&row, &updated)))
    })
}

/// The cells a ReadModifyWriteRow wrote, as a Bigtable row.
fn result_row(key: &Bytes, updated: &BTreeMap<(Bytes, Bytes), (i64, Bytes)>) -> Row {
    let mut families: Vec<Family> = Vec::new();
    for ((f, q), (ts, v)) in updated {
        let name = String::from_utf8_lossy(f).into_owned();
        if families.last().is_none_or(|l| l.name != name) {
            families.push(Family {
                name,
                columns: Vec::new(),
            });
        }
        if let Some(family) = families.last_mut() {
            family.columns.push(Column {
                qualifier: q.clone(),
                cells: vec![basalt_bigtable_proto::google::bigtable::v2::Cell {
                    timestamp_micros: micros(*ts),
                    value: v.clone(),
                    labels: Vec::new(),
                }],
            });
        }
    }
    Row {
        key: key.clone(),
        families,
    }
}

#[tonic::async_trait]
impl Bigtable for Gateway {
    async fn read_rows(
        &self,
        request: Request<ReadRowsRequest>,
    ) -> Result<Response<Streamed<ReadRowsResponse>>, Status> {
        let req = request.into_inner();
        let (tx, rx) = tokio::sync::mpsc::channel(4);
        let gw = self.clone();
        let started = std::time::Instant::now();
        tokio::task::spawn_blocking(move || {
            let out = read_rows(&gw, &req, &tx);
            gw.metrics
                .record_api("bigtable", "ReadRows", started.elapsed(), out.is_ok());
            if let Err(s) = out {
                let _ = tx.blocking_send(Err(s));
            }
        });
        // The response starts with its first message, so the headers, a point read's one
        // row and often the trailers leave in one write, and an error before any row is
        // the whole answer (a trailers-only response).
        let mut rx = tokio_stream::wrappers::ReceiverStream::new(rx);
        let first = match rx.next().await {
            Some(Err(s)) => return Err(s),
            first => first,
        };
        Ok(Response::new(Box::pin(tokio_stream::iter(first).chain(rx))))
    }

    async fn sample_row_keys(
        &self,
        request: Request<SampleRowKeysRequest>,
    ) -> Result<Response<Streamed<SampleRowKeysResponse>>, Status> {
        let req = request.into_inner();
        let samples = self
            .blocking("SampleRowKeys", move |gw| {
                sample_row_keys(gw, &req.table_name)
            })
            .await?
            .into_inner();
        Ok(Response::new(Box::pin(tokio_stream::iter(
            samples.into_iter().map(Ok),
        ))))
    }

    async fn mutate_row(
        &self,
        request: Request<MutateRowRequest>,
    ) -> Result<Response<MutateRowResponse>, Status> {
        let started = Instant::now();
        let req = request.into_inner();
        let out = match table_name(&req.table_name) {
            Ok(name) => {
                self.mutate_row_combined(name, req.row_key, req.mutations)
                    .await
            }
            Err(s) => Err(s),
        };
        self.metrics
            .record_api("bigtable", "MutateRow", started.elapsed(), out.is_ok());
        out.map(|()| Response::new(MutateRowResponse {}))
    }

    async fn mutate_rows(
        &self,
        request: Request<MutateRowsRequest>,
    ) -> Result<Response<Streamed<MutateRowsResponse>>, Status> {
        let req = request.into_inner();
        let entries = self
            .blocking("MutateRows", move |gw| mutate_rows(gw, &req))
            .await?
            .into_inner();
        let response = MutateRowsResponse {
            entries,
            rate_limit_info: None,
        };
        Ok(Response::new(Box::pin(tokio_stream::iter([Ok(response)]))))
    }

    async fn check_and_mutate_row(
        &self,
        request: Request<CheckAndMutateRowRequest>,
    ) -> Result<Response<CheckAndMutateRowResponse>, Status> {
        let req = request.into_inner();
        self.blocking("CheckAndMutateRow", move |gw| {
            Ok(CheckAndMutateRowResponse {
                predicate_matched: check_and_mutate(gw, &req)?,
            })
        })
        .await
    }

    async fn ping_and_warm(
        &self,
        request: Request<PingAndWarmRequest>,
    ) -> Result<Response<PingAndWarmResponse>, Status> {
        instance(&request.get_ref().name)?;
        Ok(Response::new(PingAndWarmResponse {}))
    }

    async fn read_modify_write_row(
        &self,
        request: Request<ReadModifyWriteRowRequest>,
    ) -> Result<Response<ReadModifyWriteRowResponse>, Status> {
        let req = request.into_inner();
        self.blocking("ReadModifyWriteRow", move |gw| {
            Ok(ReadModifyWriteRowResponse {
                row: Some(read_modify_write(gw, &req)?),
            })
        })
        .await
    }
}
