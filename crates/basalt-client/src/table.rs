//! `Table`: reads, writes and scanners of one table.

use basalt_model::ops::{
    Append, CheckAndMutate, Delete, Get, Increment, Mutation, Put, RowMutations, Scan,
};
use basalt_model::{Error, Result, RowResult, TableName};
use basalt_proto::convert::{
    check_and_mutate_to_pb, get_to_pb, mutation_to_pb, result_from_pb, row_mutations_to_pb,
    scan_to_pb,
};
use basalt_proto::pb::table_client::TableClient;
use basalt_proto::pb::{self};
use basalt_proto::status::from_status;
use tonic::transport::Channel;

use crate::retry::Idempotence;
use crate::ClientConfig;

/// HBase's Table. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Table {
    client: TableClient<Channel>,
    config: ClientConfig,
    name: TableName,
}

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
    pub(crate) fn new(channel: Channel, config: ClientConfig, name: TableName) -> Table {
        Table {
            client: TableClient::new(channel),
            config,
            name,
        }
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
        let req = pb::GetRequest {
            table: self.name.to_string(),
            get: Some(get_to_pb(&get)),
        };
        result_from_pb(rpc!(self, Idempotence::Idempotent, get, req.clone())?)
    }

    /// One mutation; the new values of an Increment or Append.
    pub async fn mutate(&self, m: Mutation) -> Result<Option<RowResult>> {
        m.validate()?;
        let how = idempotence(&m);
        let req = pb::MutateRequest {
            table: self.name.to_string(),
            mutation: Some(mutation_to_pb(&m)),
        };
        let r = rpc!(self, how, mutate, req.clone())?;
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
        let req = pb::MutateRowRequest {
            table: self.name.to_string(),
            mutations: Some(row_mutations_to_pb(&rm)),
        };
        rpc!(self, Idempotence::NotIdempotent, mutate_row, req.clone()).map(drop)
    }

    /// True when the condition held and the action was applied.
    pub async fn check_and_mutate(&self, cam: CheckAndMutate) -> Result<bool> {
        cam.validate()?;
        let req = check_and_mutate_to_pb(&self.name.to_string(), &cam);
        Ok(rpc!(
            self,
            Idempotence::NotIdempotent,
            check_and_mutate,
            req.clone()
        )?
        .value)
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
