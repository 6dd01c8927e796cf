//! The master-to-region-server RPCs of a cluster (`basalt.v1.RegionServerAdmin`), both sides:
//! [`RegionServerAdminService`] serves a region server's [`RegionServerAdmin`] over gRPC, and
//! [`GrpcServerDirectory`] is the master's way to every region server by name.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use basalt_model::name::server_address;
use basalt_model::{Error, Result, TableDescriptor};
use basalt_node::cluster::{
    Compaction, RegionReport, RegionServerAdmin, ServerDirectory, ServerReport,
};
use basalt_node::RegionInfo;
use basalt_proto::pb;
use basalt_proto::pb::region_server_admin_client::RegionServerAdminClient;
use basalt_proto::schema::{
    region_from_pb, region_load_from_pb, region_load_to_pb, region_to_pb, schema_from_pb,
    schema_to_pb,
};
use basalt_proto::status::{from_status, to_status};
use parking_lot::Mutex;
use tonic::transport::{Channel, Endpoint};
use tonic::{Request, Response, Status};

/// How long the master waits for a region server's answer to an open, close or flush (an
/// open may replay recovered edits, a close flushes).
pub const ADMIN_TIMEOUT: Duration = Duration::from_secs(60);
/// How long the master waits for a report or a clock check, which touch nothing on storage:
/// a paused server must not hold up the master's chore (and so a recovery) for longer.
pub const REPORT_TIMEOUT: Duration = Duration::from_secs(3);

/// A region server's admin RPCs over its [`RegionServerAdmin`].
#[derive(Clone, Debug)]
pub struct RegionServerAdminService {
    rs: Arc<dyn RegionServerAdmin>,
}

impl RegionServerAdminService {
    /// The service over `rs`.
    #[must_use]
    pub fn new(rs: Arc<dyn RegionServerAdmin>) -> Self {
        RegionServerAdminService { rs }
    }

    /// The tonic service to add to a server.
    #[must_use]
    pub fn into_server(self) -> pb::region_server_admin_server::RegionServerAdminServer<Self> {
        pb::region_server_admin_server::RegionServerAdminServer::new(self)
    }

    /// Runs `f` on the blocking pool (opens read files, closes flush).
    async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce(&dyn RegionServerAdmin) -> Result<T> + Send + 'static,
    ) -> std::result::Result<Response<T>, Status> {
        let rs = Arc::clone(&self.rs);
        tokio::task::spawn_blocking(move || f(rs.as_ref()))
            .await
            .map_err(|e| Status::internal(format!("the request's task failed: {e}")))?
            .map(Response::new)
            .map_err(|e| to_status(&e))
    }
}

fn missing(what: &str) -> Error {
    Error::illegal(format!("the request has no {what}"))
}

#[tonic::async_trait]
impl pb::region_server_admin_server::RegionServerAdmin for RegionServerAdminService {
    async fn open_region(
        &self,
        r: Request<pb::OpenRegionRequest>,
    ) -> std::result::Result<Response<pb::Empty>, Status> {
        let r = r.into_inner();
        self.blocking(move |rs| {
            let table = schema_from_pb(r.table.ok_or_else(|| missing("table"))?)?;
            let region = region_from_pb(r.region.ok_or_else(|| missing("region"))?);
            rs.open_region(r.master_epoch, &table, &region, r.open_epoch)?;
            Ok(pb::Empty {})
        })
        .await
    }

    async fn close_region(
        &self,
        r: Request<pb::CloseRegionRequest>,
    ) -> std::result::Result<Response<pb::Empty>, Status> {
        let r = r.into_inner();
        self.blocking(move |rs| {
            rs.close_region(r.master_epoch, r.region_id)?;
            Ok(pb::Empty {})
        })
        .await
    }

    async fn report(
        &self,
        r: Request<pb::ReportRequest>,
    ) -> std::result::Result<Response<pb::ServerReport>, Status> {
        let epoch = r.into_inner().master_epoch;
        self.blocking(move |rs| {
            let report = rs.report(epoch)?;
            Ok(report_to_pb(&report))
        })
        .await
    }

    async fn flush_region(
        &self,
        r: Request<pb::FlushRegionRequest>,
    ) -> std::result::Result<Response<pb::Empty>, Status> {
        let r = r.into_inner();
        self.blocking(move |rs| {
            let how = match r.compaction {
                0 => Compaction::None,
                1 => Compaction::Minor,
                2 => Compaction::Major,
                n => return Err(Error::illegal(format!("unknown compaction {n}"))),
            };
            rs.flush_region(r.master_epoch, r.region_id, how)?;
            Ok(pb::Empty {})
        })
        .await
    }

    async fn check_clock(
        &self,
        r: Request<pb::CheckClockRequest>,
    ) -> std::result::Result<Response<pb::Empty>, Status> {
        let r = r.into_inner();
        self.blocking(move |rs| {
            rs.check_clock(r.master_epoch, r.master_now_ms, r.max_skew_ms)?;
            Ok(pb::Empty {})
        })
        .await
    }

    async fn split_point(
        &self,
        r: Request<pb::SplitPointRequest>,
    ) -> std::result::Result<Response<pb::SplitPointResponse>, Status> {
        let r = r.into_inner();
        self.blocking(move |rs| {
            let row = rs.split_point(r.master_epoch, r.region_id)?;
            Ok(pb::SplitPointResponse { row })
        })
        .await
    }
}

fn report_to_pb(r: &ServerReport) -> pb::ServerReport {
    pb::ServerReport {
        server: r.server.clone(),
        regions: r
            .regions
            .iter()
            .map(|x| pb::RegionReport {
                region: Some(region_load_to_pb(&x.table, &x.info, &x.load, &r.server)),
                open_epoch: x.open_epoch,
                wants_split: x.wants_split,
            })
            .collect(),
    }
}

fn report_from_pb(r: pb::ServerReport) -> Result<ServerReport> {
    let regions = r
        .regions
        .into_iter()
        .map(|x| {
            let region = x.region.ok_or_else(|| missing("region"))?;
            let table = region_table(&region)?;
            Ok(RegionReport {
                load: region_load_from_pb(&region),
                info: region_from_pb(region),
                table,
                open_epoch: x.open_epoch,
                wants_split: x.wants_split,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(ServerReport {
        server: r.server,
        regions,
    })
}

/// The table of a region, from its name (`table,start key,id.encoded.`).
fn region_table(r: &pb::Region) -> Result<basalt_model::TableName> {
    let name = String::from_utf8_lossy(&r.name);
    let table = name.split(',').next().unwrap_or_default();
    basalt_model::TableName::parse(table)
}

/// The master's way to region servers by name (`host,port,start code`): one lazily
/// connected channel per server, used from the master's blocking threads on a runtime of
/// its own.
pub struct GrpcServerDirectory {
    channels: Mutex<HashMap<String, Channel>>,
    runtime: basalt_node::runtime::OwnedRuntime,
}

impl std::fmt::Debug for GrpcServerDirectory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GrpcServerDirectory")
            .finish_non_exhaustive()
    }
}

impl GrpcServerDirectory {
    /// A directory with its own small runtime.
    ///
    /// # Errors
    /// `Io` when the runtime cannot start.
    pub fn new() -> Result<Self> {
        let runtime = basalt_node::runtime::OwnedRuntime::start("basalt-master-rpc", 2)
            .map_err(|e| Error::io("starting the master's RPC runtime", e))?;
        Ok(GrpcServerDirectory {
            channels: Mutex::new(HashMap::new()),
            runtime,
        })
    }
}

impl ServerDirectory for GrpcServerDirectory {
    fn connect(&self, name: &str) -> Result<Arc<dyn RegionServerAdmin>> {
        let channel = {
            let mut channels = self.channels.lock();
            match channels.get(name) {
                Some(c) => c.clone(),
                None => {
                    let uri = format!("http://{}", server_address(name)?);
                    let endpoint = Endpoint::from_shared(uri)
                        .map_err(|e| Error::illegal(e.to_string()))?
                        .connect_timeout(Duration::from_secs(5));
                    let _guard = self.runtime.handle().enter();
                    let c = endpoint.connect_lazy();
                    channels.insert(name.to_owned(), c.clone());
                    c
                }
            }
        };
        Ok(Arc::new(RemoteRegionServer {
            name: name.to_owned(),
            client: RegionServerAdminClient::new(channel),
            handle: self.runtime.handle().clone(),
        }))
    }
}

/// A region server reached over gRPC.
#[derive(Debug)]
struct RemoteRegionServer {
    name: String,
    client: RegionServerAdminClient<Channel>,
    handle: tokio::runtime::Handle,
}

impl RemoteRegionServer {
    fn call<T: Send + 'static>(
        &self,
        f: impl std::future::Future<Output = std::result::Result<Response<T>, Status>> + Send + 'static,
    ) -> Result<T> {
        self.call_within(ADMIN_TIMEOUT, f)
    }

    fn call_within<T: Send + 'static>(
        &self,
        timeout: Duration,
        f: impl std::future::Future<Output = std::result::Result<Response<T>, Status>> + Send + 'static,
    ) -> Result<T> {
        let name = self.name.clone();
        basalt_node::runtime::wait_for(&self.handle, async move {
            tokio::time::timeout(timeout, f).await
        })
        .ok_or_else(|| {
            Error::io(
                "calling a region server",
                std::io::Error::other("the RPC runtime stopped"),
            )
        })?
        .map_err(|_| {
            Error::io(
                format!("calling region server {name}"),
                std::io::Error::new(std::io::ErrorKind::TimedOut, "no answer in time"),
            )
        })?
        .map(Response::into_inner)
        .map_err(|s| from_status(&s))
    }
}

impl RegionServerAdmin for RemoteRegionServer {
    fn open_region(
        &self,
        master_epoch: u64,
        table: &TableDescriptor,
        info: &RegionInfo,
        open_epoch: u64,
    ) -> Result<()> {
        let req = pb::OpenRegionRequest {
            master_epoch,
            table: Some(schema_to_pb(table)),
            region: Some(region_to_pb(&table.table_name(), info)),
            open_epoch,
        };
        let mut c = self.client.clone();
        self.call(async move { c.open_region(req).await }).map(drop)
    }

    fn close_region(&self, master_epoch: u64, region_id: u64) -> Result<()> {
        let req = pb::CloseRegionRequest {
            master_epoch,
            region_id,
        };
        let mut c = self.client.clone();
        self.call(async move { c.close_region(req).await })
            .map(drop)
    }

    fn report(&self, master_epoch: u64) -> Result<ServerReport> {
        let mut c = self.client.clone();
        let r = self.call_within(REPORT_TIMEOUT, async move {
            c.report(pb::ReportRequest { master_epoch }).await
        })?;
        report_from_pb(r)
    }

    fn flush_region(&self, master_epoch: u64, region_id: u64, how: Compaction) -> Result<()> {
        let req = pb::FlushRegionRequest {
            master_epoch,
            region_id,
            compaction: match how {
                Compaction::None => 0,
                Compaction::Minor => 1,
                Compaction::Major => 2,
            },
        };
        let mut c = self.client.clone();
        self.call(async move { c.flush_region(req).await })
            .map(drop)
    }

    fn split_point(&self, master_epoch: u64, region_id: u64) -> Result<Option<bytes::Bytes>> {
        let req = pb::SplitPointRequest {
            master_epoch,
            region_id,
        };
        let mut c = self.client.clone();
        let r = self.call(async move { c.split_point(req).await })?;
        Ok(r.row)
    }

    fn check_clock(&self, master_epoch: u64, master_now_ms: i64, max_skew_ms: u64) -> Result<()> {
        let req = pb::CheckClockRequest {
            master_epoch,
            master_now_ms,
            max_skew_ms,
        };
        let mut c = self.client.clone();
        self.call_within(REPORT_TIMEOUT, async move { c.check_clock(req).await })
            .map(drop)
    }
}
