//! `Table`: reads, writes and scanners of one table.

use basalt_model::ops::{
    Append, CheckAndMutate, Delete, Get, Increment, Mutation, Put, RowMutations, Scan,
};
use std::sync::{Arc, RwLock};

use basalt_model::region::RegionInfo;
use basalt_model::{Error, Result, RowResult, TableName};
use basalt_proto::convert::{
    check_and_mutate_to_pb, get_to_pb, mutation_to_pb, result_from_pb, row_mutations_to_pb,
    scan_to_pb,
};
use basalt_proto::pb::admin_client::AdminClient;
use basalt_proto::pb::table_client::TableClient;
use basalt_proto::pb::{self};
use basalt_proto::schema::region_from_pb;
use basalt_proto::status::from_status;
use tonic::transport::Channel;

use crate::retry::Idempotence;
use crate::ClientConfig;

/// HBase's Table. Cheap to clone; clones share the region location cache.
#[derive(Clone, Debug)]
pub struct Table {
    client: TableClient<Channel>,
    admin: AdminClient<Channel>,
    config: ClientConfig,
    name: TableName,
    /// The table's regions as last looked up (`None`: look them up before the next call).
    /// Single-row calls name the region they expect; a `NotServingRegion` answer (the region
    /// split or merged) empties the cache.
    locations: LocationSlot,
}

/// A table's cached regions, shared by every handle of one connection.
pub(crate) type LocationSlot = Arc<RwLock<Option<Arc<Vec<RegionInfo>>>>>;

fn idempotence(m: &Mutation) -> Idempotence {
    match m {
        Mutation::Put(_) | Mutation::Delete(_) => Idempotence::Idempotent,
        Mutation::Increment(_) | Mutation::Append(_) => Idempotence::NotIdempotent,
    }
}

fn entry_error(e: pb::Error) -> Error {
    let status = tonic::Status::with_metadata(tonic::Code::Unknown, e.message.clone(), {
        let mut md = tonic::metadata::MetadataMap::new();
        if let Ok(v) = e.exception.parse() {
            md.insert("exception", v);
        }
        md
    });
    from_status(&status)
}

impl Table {
    pub(crate) fn new(
        channel: Channel,
        config: ClientConfig,
        name: TableName,
        locations: LocationSlot,
    ) -> Table {
        Table {
            client: TableClient::new(channel.clone())
                .max_decoding_message_size(crate::MAX_MESSAGE_BYTES)
                .max_encoding_message_size(crate::MAX_MESSAGE_BYTES),
            admin: AdminClient::new(channel),
            config,
            name,
            locations,
        }
    }

    /// The table's regions from the cache, looked up when the cache is empty.
    ///
    /// # Errors
    /// The lookup failed (`TableNotFound`, a transport error).
    pub async fn region_locations(&self) -> Result<Arc<Vec<RegionInfo>>> {
        let cached = self
            .locations
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        if let Some(cached) = cached {
            return Ok(cached);
        }
        let mut admin = self.admin.clone();
        let req = pb::NameRequest {
            name: self.name.to_string(),
        };
        let regions = admin
            .list_regions(req)
            .await
            .map_err(|s| from_status(&s))?
            .into_inner();
        let regions: Arc<Vec<RegionInfo>> =
            Arc::new(regions.regions.into_iter().map(region_from_pb).collect());
        *self
            .locations
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(Arc::clone(&regions));
        Ok(regions)
    }

    /// A request with the operation timeout.
    fn request<M>(&self, msg: M) -> tonic::Request<M> {
        let mut req = tonic::Request::new(msg);
        req.set_timeout(self.config.operation_timeout);
        req
    }

    /// The encoded name of the cached region holding `row`.
    async fn locate(&self, row: &[u8]) -> Result<Option<String>> {
        let regions = self.region_locations().await?;
        let i = regions
            .partition_point(|r| r.start_key[..] <= *row)
            .saturating_sub(1);
        Ok(regions.get(i).map(|r| r.encoded_name(&self.name)))
    }

    /// A single-row call aimed at the row's region, with retries; a stale location empties
    /// the cache, so the retry looks the regions up again.
    async fn located<T, F, Fut>(&self, row: &[u8], how: Idempotence, call: F) -> Result<T>
    where
        F: Fn(TableClient<Channel>, Option<String>) -> Fut,
        Fut: std::future::Future<Output = std::result::Result<T, tonic::Status>>,
    {
        crate::retry::retry(&self.config, how, || async {
            let region = self.locate(row).await?;
            let out = call(self.client.clone(), region)
                .await
                .map_err(|s| from_status(&s));
            if matches!(out, Err(Error::NotServingRegion(_))) {
                *self
                    .locations
                    .write()
                    .unwrap_or_else(std::sync::PoisonError::into_inner) = None;
            }
            out
        })
        .await
    }

    /// The table's name.
    #[must_use]
    pub fn name(&self) -> &TableName {
        &self.name
    }

    /// The write-buffer size a [`crate::BufferedMutator`] on this table uses.
    #[must_use]
    pub fn write_buffer_bytes(&self) -> usize {
        self.config.write_buffer_bytes
    }

    pub async fn get(&self, get: Get) -> Result<RowResult> {
        get.validate()?;
        let msg = get_to_pb(&get);
        let r = self
            .located(&get.row, Idempotence::Idempotent, |mut c, region| {
                let req = self.request(pb::GetRequest {
                    table: self.name.to_string(),
                    get: Some(msg.clone()),
                    region,
                });
                async move { c.get(req).await.map(tonic::Response::into_inner) }
            })
            .await?;
        result_from_pb(r)
    }

    /// One mutation; the new values of an Increment or Append.
    pub async fn mutate(&self, m: Mutation) -> Result<Option<RowResult>> {
        m.validate()?;
        let msg = mutation_to_pb(&m);
        let r = self
            .located(m.row(), idempotence(&m), |mut c, region| {
                let req = self.request(pb::MutateRequest {
                    table: self.name.to_string(),
                    mutation: Some(msg.clone()),
                    region,
                });
                async move { c.mutate(req).await.map(tonic::Response::into_inner) }
            })
            .await?;
        r.result.map(result_from_pb).transpose()
    }

    pub async fn put(&self, p: Put) -> Result<()> {
        self.mutate(Mutation::Put(p)).await.map(drop)
    }

    pub async fn delete(&self, d: Delete) -> Result<()> {
        self.mutate(Mutation::Delete(d)).await.map(drop)
    }

    pub async fn increment(&self, i: Increment) -> Result<RowResult> {
        Ok(self
            .mutate(Mutation::Increment(i))
            .await?
            .unwrap_or_default())
    }

    pub async fn append(&self, a: Append) -> Result<RowResult> {
        Ok(self.mutate(Mutation::Append(a)).await?.unwrap_or_default())
    }

    pub async fn mutate_row(&self, rm: RowMutations) -> Result<()> {
        rm.validate()?;
        let msg = row_mutations_to_pb(&rm);
        self.located(&rm.row, Idempotence::NotIdempotent, |mut c, region| {
            let req = self.request(pb::MutateRowRequest {
                table: self.name.to_string(),
                mutations: Some(msg.clone()),
                region,
            });
            async move { c.mutate_row(req).await.map(tonic::Response::into_inner) }
        })
        .await
        .map(drop)
    }

    /// True when the condition held and the action was applied.
    pub async fn check_and_mutate(&self, cam: CheckAndMutate) -> Result<bool> {
        cam.validate()?;
        let msg = check_and_mutate_to_pb(&self.name.to_string(), &cam);
        let r = self
            .located(&cam.row, Idempotence::NotIdempotent, |mut c, region| {
                let req = self.request(pb::CheckAndMutateRequest {
                    region,
                    ..msg.clone()
                });
                async move {
                    c.check_and_mutate(req)
                        .await
                        .map(tonic::Response::into_inner)
                }
            })
            .await?;
        Ok(r.value)
    }

    /// Mutations applied each on its own: one result per mutation, in order.
    pub async fn batch(&self, mutations: Vec<Mutation>) -> Result<Vec<Result<Option<RowResult>>>> {
        let req = pb::BatchRequest {
            table: self.name.to_string(),
            mutations: mutations.iter().map(mutation_to_pb).collect(),
        };
        let r = rpc!(self, Idempotence::NotIdempotent, batch, req.clone())?;
        Ok(r.entries
            .into_iter()
            .map(|e| match e.outcome {
                Some(pb::batch_entry::Outcome::Ok(ok)) => ok.result.map(result_from_pb).transpose(),
                Some(pb::batch_entry::Outcome::Error(err)) => Err(entry_error(err)),
                None => Err(Error::illegal(
                    "malformed response: a batch entry without an outcome",
                )),
            })
            .collect())
    }

    /// Opens a scanner (a lease on the server, renewed by each fetch).
    pub async fn scan(&self, scan: Scan) -> Result<ResultScanner> {
        scan.validate()?;
        let req = pb::OpenScannerRequest {
            table: self.name.to_string(),
            scan: Some(scan_to_pb(&scan)),
        };
        let id = rpc!(self, Idempotence::Idempotent, open_scanner, req.clone())?.id;
        Ok(ResultScanner {
            table: self.clone(),
            id,
            buffered: std::collections::VecDeque::new(),
            done: false,
        })
    }
}

/// Results of a scan, fetched from the server a batch at a time.
#[derive(Debug)]
pub struct ResultScanner {
    table: Table,
    id: u64,
    buffered: std::collections::VecDeque<RowResult>,
    done: bool,
}

impl ResultScanner {
    /// The next result, `None` at the end.
    ///
    /// # Errors
    /// `UnknownScanner` when the lease expired; a transport or server error.
    pub async fn next(&mut self) -> Result<Option<RowResult>> {
        while self.buffered.is_empty() && !self.done {
            let req = pb::NextRequest {
                scanner: self.id,
                max_result_bytes: self.table.config.scanner_max_result_bytes,
            };
            // Not retried: a fetch that failed after the server moved on would skip rows.
            let mut c = self.table.client.clone();
            let r = c.next(req).await.map_err(|s| from_status(&s))?.into_inner();
            self.done = r.done;
            for res in r.results {
                self.buffered.push_back(result_from_pb(res)?);
            }
        }
        Ok(self.buffered.pop_front())
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
    /// A transport error.
    pub async fn close(mut self) -> Result<()> {
        if !self.done {
            self.done = true;
            let mut c = self.table.client.clone();
            c.close_scanner(pb::ScannerId { id: self.id })
                .await
                .map_err(|s| from_status(&s))?;
        }
        Ok(())
    }
}
