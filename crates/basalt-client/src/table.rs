//! `Table`: reads, writes and scanners of one table, each sent to the region server that
//! holds its row.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use crate::rpc::TableRpc;
use basalt_model::ops::{
    Append, CheckAndMutate, Delete, Get, Increment, Mutation, Put, RowMutations, Scan,
};
use basalt_model::region::RegionInfo;
use basalt_model::{Error, Result, RowResult, TableName};
use basalt_proto::convert::{
    check_and_mutate_to_pb, get_to_pb, mutation_to_pb, result_from_pb, row_mutations_to_pb,
};
use basalt_proto::pb::{self};
use basalt_proto::schema::region_from_pb;
use basalt_proto::status::from_status;

use crate::retry::Idempotence;
use crate::servers::Servers;
use crate::ClientConfig;

/// HBase's Table. Cheap to clone; clones share the region location cache.
#[derive(Clone, Debug)]
pub struct Table {
    pub(crate) servers: Arc<Servers>,
    pub(crate) config: ClientConfig,
    name: TableName,
    /// The table's regions and their servers as last looked up (`None`: look them up before
    /// the next call). Single-row calls name the region they expect; a `NotServingRegion`
    /// answer (the region moved, split or merged) empties the cache.
    locations: LocationSlot,
}

/// A region and the server holding it (empty while it is assigned to none).
#[derive(Clone, Debug)]
pub(crate) struct Location {
    pub info: RegionInfo,
    pub server: String,
    /// `info`'s encoded name, which every call names its region by (an MD5, made once).
    pub encoded_name: String,
}

/// A table's cached regions, shared by every handle of one connection.
pub(crate) type LocationSlot = Arc<RwLock<Option<Arc<Vec<Location>>>>>;

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

/// The index of the region of `locations` (in key order) holding `row`.
pub(crate) fn region_index(locations: &[Location], row: &[u8]) -> usize {
    locations
        .partition_point(|l| l.info.start_key[..] <= *row)
        .saturating_sub(1)
}

impl Table {
    pub(crate) fn new(
        servers: Arc<Servers>,
        config: ClientConfig,
        name: TableName,
        locations: LocationSlot,
    ) -> Table {
        Table {
            servers,
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
        let l = self.locations().await?;
        Ok(Arc::new(l.iter().map(|l| l.info.clone()).collect()))
    }

    /// The cached regions and servers, looked up from the master when the cache is empty.
    pub(crate) async fn locations(&self) -> Result<Arc<Vec<Location>>> {
        let cached = self
            .locations
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        if let Some(cached) = cached {
            return Ok(cached);
        }
        let req = pb::NameRequest {
            name: self.name.to_string(),
        };
        let regions = rpc!(self, Idempotence::Idempotent, list_regions, req.clone())?;
        let regions: Arc<Vec<Location>> = Arc::new(
            regions
                .regions
                .into_iter()
                .map(|mut r| {
                    let server = std::mem::take(&mut r.server);
                    let info = region_from_pb(r);
                    Location {
                        server,
                        encoded_name: info.encoded_name(&self.name),
                        info,
                    }
                })
                .collect(),
        );
        *self
            .locations
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(Arc::clone(&regions));
        Ok(regions)
    }

    /// Empties the location cache: the next call looks the regions up again.
    pub(crate) fn forget_locations(&self) {
        *self
            .locations
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = None;
    }

    /// A data client on the server named `server`.
    pub(crate) fn client(&self, server: &str) -> Result<TableRpc> {
        Ok(TableRpc::new(self.servers.channel(server)?))
    }

    /// A call's deadline: the operation timeout.
    fn deadline(&self) -> Option<Duration> {
        Some(self.config.operation_timeout)
    }

    /// A single-row call sent to the server of the row's region, naming the region, with
    /// retries; a stale location empties the cache, so the retry looks the regions up again.
    async fn located<T, F, Fut>(&self, row: &[u8], how: Idempotence, call: F) -> Result<T>
    where
        F: Fn(TableRpc, Option<String>) -> Fut,
        Fut: std::future::Future<Output = std::result::Result<T, tonic::Status>>,
    {
        crate::retry::retry(&self.config, how, || async {
            let out = async {
                let locations = self.locations().await?;
                let Some(l) = locations.get(region_index(&locations, row)) else {
                    return Err(Error::NotServingRegion(format!(
                        "{} has no regions",
                        self.name
                    )));
                };
                let region = Some(l.encoded_name.clone());
                call(self.client(&l.server)?, region)
                    .await
                    .map_err(|s| from_status(&s))
            }
            .await;
            // A retryable failure may mean the region went elsewhere.
            if out.as_ref().is_err_and(Error::is_retryable) {
                self.forget_locations();
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
                let req = pb::GetRequest {
                    table: self.name.to_string(),
                    get: Some(msg.clone()),
                    region,
                };
                async move { c.get(req, self.deadline()).await }
            })
            .await?;
        Ok(r.0)
    }

    /// One mutation; the new values of an Increment or Append.
    pub async fn mutate(&self, m: Mutation) -> Result<Option<RowResult>> {
        m.validate()?;
        let msg = mutation_to_pb(&m);
        let r = self
            .located(m.row(), idempotence(&m), |mut c, region| {
                let req = pb::MutateRequest {
                    table: self.name.to_string(),
                    mutation: Some(msg.clone()),
                    region,
                };
                async move { c.mutate(req, self.deadline()).await }
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
            let req = pb::MutateRowRequest {
                table: self.name.to_string(),
                mutations: Some(msg.clone()),
                region,
            };
            async move { c.mutate_row(req, self.deadline()).await }
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
                let req = pb::CheckAndMutateRequest {
                    region,
                    ..msg.clone()
                };
                async move { c.check_and_mutate(req, self.deadline()).await }
            })
            .await?;
        Ok(r.value)
    }

    /// Mutations applied each on its own: one result per mutation, in order. Each region
    /// server gets the mutations of the rows it holds in one call; mutations a server
    /// refused because their region was not there are sent again where it went.
    pub async fn batch(&self, mutations: Vec<Mutation>) -> Result<Vec<Result<Option<RowResult>>>> {
        let msgs: Vec<pb::Mutation> = mutations.iter().map(mutation_to_pb).collect();
        let mut out: Vec<Option<Result<Option<RowResult>>>> =
            (0..msgs.len()).map(|_| None).collect();
        let mut pending: Vec<usize> = (0..msgs.len()).collect();
        let deadline = std::time::Instant::now() + self.config.operation_timeout;
        let mut attempt = 0u32;
        while !pending.is_empty() {
            let locations = self.locations().await?;
            let mut by_server: BTreeMap<String, Vec<usize>> = BTreeMap::new();
            for &i in &pending {
                let l = locations.get(region_index(&locations, mutations[i].row()));
                let server = l.map(|l| l.server.clone()).unwrap_or_default();
                by_server.entry(server).or_default().push(i);
            }
            let mut retry = Vec::new();
            for (server, idx) in by_server {
                let answers = self.batch_on(&server, &idx, &msgs, &mutations).await;
                for (i, r) in idx.into_iter().zip(answers) {
                    match r {
                        Err(e) if e.is_retryable() && attempt < self.config.retries => {
                            self.forget_locations();
                            retry.push(i);
                            out[i] = Some(Err(e));
                        }
                        r => out[i] = Some(r),
                    }
                }
            }
            if !retry.is_empty() {
                if std::time::Instant::now() + self.config.pause >= deadline {
                    break;
                }
                tokio::time::sleep(crate::retry::pause(&self.config, attempt)).await;
                attempt += 1;
            }
            pending = retry;
        }
        Ok(out
            .into_iter()
            .map(|r| r.unwrap_or_else(|| Err(Error::Internal("a batch entry was not sent".into()))))
            .collect())
    }

    /// One `Batch` call to `server` with the mutations `idx` of `msgs`: one answer each. A
    /// call that failed as a whole answers each with its error, retryable only where a
    /// retry cannot apply a mutation twice: the server refused the region, or the call was
    /// lost and the mutation is a put or delete.
    async fn batch_on(
        &self,
        server: &str,
        idx: &[usize],
        msgs: &[pb::Mutation],
        mutations: &[Mutation],
    ) -> Vec<Result<Option<RowResult>>> {
        let req = pb::BatchRequest {
            table: self.name.to_string(),
            mutations: idx.iter().map(|&i| msgs[i].clone()).collect(),
        };
        let call = async {
            let mut c = self.client(server)?;
            c.batch(req, self.deadline())
                .await
                .map_err(|s| from_status(&s))
        };
        match call.await {
            Ok(r) if r.entries.len() == idx.len() => r
                .entries
                .into_iter()
                .map(|e| match e.outcome {
                    Some(pb::batch_entry::Outcome::Ok(ok)) => {
                        ok.result.map(result_from_pb).transpose()
                    }
                    Some(pb::batch_entry::Outcome::Error(err)) => Err(entry_error(err)),
                    None => Err(Error::illegal(
                        "malformed response: a batch entry without an outcome",
                    )),
                })
                .collect(),
            Ok(r) => {
                let why = format!(
                    "the server answered {} results for a batch of {}",
                    r.entries.len(),
                    idx.len()
                );
                idx.iter()
                    .map(|_| Err(Error::Internal(why.clone())))
                    .collect()
            }
            Err(e) => {
                let why = e.to_string();
                idx.iter()
                    .map(|&i| {
                        Err(match &e {
                            Error::NotServingRegion(m) => Error::NotServingRegion(m.clone()),
                            Error::RegionTooBusy(m) => Error::RegionTooBusy(m.clone()),
                            Error::Io { source, .. }
                                if idempotence(&mutations[i]) == Idempotence::Idempotent =>
                            {
                                Error::io(
                                    format!("a batch call to {server}"),
                                    std::io::Error::new(source.kind(), source.to_string()),
                                )
                            }
                            _ => Error::DoNotRetry(why.clone()),
                        })
                    })
                    .collect()
            }
        }
    }

    /// Opens a scanner: the scan runs region server by region server, each a lease renewed
    /// by each fetch.
    ///
    /// # Errors
    /// An invalid scan.
    pub async fn scan(&self, scan: Scan) -> Result<crate::ResultScanner> {
        scan.validate()?;
        Ok(crate::ResultScanner::new(self.clone(), scan))
    }
}
