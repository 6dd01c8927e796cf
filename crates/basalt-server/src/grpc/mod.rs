//! The native gRPC API (`basalt.v1`) over the operation layer: `admin` (HBase's master
//! RPCs) and `table` (its region server RPCs). Operation-layer calls block (a WAL sync, a
//! flush, a remote call), so each runs on tokio's blocking pool, never on the runtime's
//! workers.

mod admin;
mod calls;
mod mini_batch;
mod region_check;
mod table;

use std::sync::Arc;

use basalt_api::Connection;
use basalt_model::{Result, TableName};
use basalt_node::Database;
use basalt_proto::pb;
use basalt_proto::status::to_status;
use tonic::{Response, Status};

use crate::metrics::RequestMetrics;
use basalt_api::leases::Scanners;
pub use calls::TableCalls;
pub use mini_batch::MiniBatches;
pub use region_check::EncodedNames;

/// HBase's `hbase.client.scanner.max.result.size`: the bytes a scanner call returns at most
/// (at least one result).
pub const DEFAULT_MAX_RESULT_BYTES: u64 = 2 << 20;

/// The operations measured, by their gRPC method names.
pub const OPS: [&str; 40] = [
    "create_namespace",
    "drop_namespace",
    "alter_namespace",
    "describe_namespace",
    "list_namespaces",
    "list_namespace_tables",
    "create_table",
    "describe_table",
    "modify_table",
    "table_exists",
    "is_table_enabled",
    "enable_table",
    "disable_table",
    "delete_table",
    "truncate_table",
    "list_tables",
    "flush",
    "compact",
    "split",
    "merge",
    "list_regions",
    "run_catalog_janitor",
    "get_cluster_id",
    "get_cluster_status",
    "move_region",
    "assign",
    "unassign",
    "balance",
    "balance_switch",
    "decommission",
    "recommission",
    "list_decommissioned",
    "get",
    "mutate",
    "mutate_row",
    "check_and_mutate",
    "batch",
    "open_scanner",
    "next",
    "close_scanner",
];

/// The state both services share.
#[derive(Clone)]
pub struct Services {
    /// What every request is answered from: the operation layer.
    pub conn: Arc<dyn Connection>,
    /// The node this process runs, when it runs one (standalone), for its engine's
    /// counters on the web page and `/metrics`; a gateway of a remote server has none.
    pub node: Option<Database>,
    /// The cluster region server this process runs, when it runs one, for its regions and
    /// engine counters on the web page and `/metrics`.
    pub hosted: Option<Arc<basalt_node::cluster::ClusterRegionServer>>,
    pub scanners: Arc<Scanners>,
    pub metrics: Arc<RequestMetrics>,
    /// Encoded names of the regions calls named lately, for the region check.
    pub region_names: Arc<region_check::EncodedNames>,
    /// The Mutate calls waiting to be written together.
    pub mini_batches: Arc<MiniBatches>,
}

impl std::fmt::Debug for Services {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Services")
            .field("node", &self.node)
            .field("scanners", &self.scanners)
            .finish_non_exhaustive()
    }
}

/// Answers on this task, without the hop to the blocking pool, when `f` can: `f` returns
/// `None` when its answer would need a wait (see [`basalt_api::Table::get_cached`]), and the
/// caller then goes to [`blocking`]. Tried only where the connection serves from memory.
pub(super) fn in_memory<T>(
    svc: &Services,
    op: &'static str,
    f: impl FnOnce(&Services) -> Result<Option<T>>,
) -> Option<std::result::Result<Response<T>, Status>> {
    if !svc.conn.serves_from_memory() {
        return None;
    }
    let started = std::time::Instant::now();
    let out = f(svc).transpose()?;
    svc.metrics.record(op, started.elapsed(), out.is_ok());
    Some(answer(out))
}

fn answer<T>(out: Result<T>) -> std::result::Result<Response<T>, Status> {
    out.map(Response::new).map_err(|e| {
        tracing::debug!(error = %e, "request refused");
        to_status(&e)
    })
}

/// Runs `f` on the blocking pool and turns its error into a status.
pub(super) async fn blocking<T: Send + 'static>(
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
    answer(out)
}

pub(super) fn table(name: &str) -> Result<TableName> {
    TableName::parse(name)
}

pub(super) fn empty() -> pb::Empty {
    pb::Empty {}
}
