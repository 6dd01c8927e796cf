//! Google Cloud Bigtable's v2 APIs over the operation layer: the data API (`data`, `read`,
//! `mutate`) and the table admin API (`admin`), served on the emulator's port 8086, so
//! Bigtable's own clients (the Python, Java, Go and Node libraries, `cbt`) work unchanged
//! in emulator mode and their data persists.
//!
//! # Names
//! Every project and instance is accepted, as the emulator does, and all of them see the
//! same tables: `projects/P/instances/I/tables/T` is HBase's table `T` in the `default`
//! namespace, so the HBase shell and happybase read what Bigtable's clients write. Tables of
//! other namespaces are not visible here.
//!
//! # Semantics
//! Timestamps are microseconds at millisecond granularity (HBase's milliseconds times
//! 1000). Families made here have NEW_VERSION_BEHAVIOR, so deletes remove what exists and
//! do not mask later writes. GC rules are applied exactly on every read ([`schema`]).
//! Operations whose condition HBase cannot evaluate (CheckAndMutateRow's row filter,
//! ReadModifyWriteRow, AddToCell, deletes of a time range) read the row, decide, and write
//! only if the row is unchanged ([`basalt_model::ops::Condition::Unchanged`]), so they are
//! atomic against every writer, through any front end.

mod admin;
mod combine;
mod data;
mod filter;
mod mutate;
mod read;
mod schema;

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use basalt_api::{Connection, Table};
use basalt_model::{Error, TableName};
use bytes::Bytes;
use parking_lot::Mutex;
use tonic::{Response, Status};

use crate::metrics::RequestMetrics;
pub use schema::FamilySchema;

/// The Bigtable emulator's port, which the clients' emulator mode expects by convention.
pub const DEFAULT_PORT: u16 = 8086;

/// How long a table's schema is reused before it is read again: a family changed through
/// another front end is seen within this long.
const SCHEMA_FRESHNESS: Duration = Duration::from_secs(1);

/// The operations measured, by their gRPC method names.
pub const METHODS: [&str; 16] = [
    "ReadRows",
    "SampleRowKeys",
    "MutateRow",
    "MutateRows",
    "CheckAndMutateRow",
    "PingAndWarm",
    "ReadModifyWriteRow",
    "CreateTable",
    "GetTable",
    "ListTables",
    "UpdateTable",
    "DeleteTable",
    "ModifyColumnFamilies",
    "DropRowRange",
    "GenerateConsistencyToken",
    "CheckConsistency",
];

/// Where the Bigtable API listens.
#[derive(Clone, Debug)]
pub struct BigtableConfig {
    /// `127.0.0.1:8086` unless set (there is no authentication).
    pub listen: SocketAddr,
}

impl Default for BigtableConfig {
    fn default() -> Self {
        BigtableConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], DEFAULT_PORT)),
        }
    }
}

/// A table as the gateway uses it: its handle and its families' Bigtable schemas.
pub struct TableSchema {
    pub table: Arc<dyn Table>,
    pub families: BTreeMap<Bytes, FamilySchema>,
}

impl std::fmt::Debug for TableSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TableSchema")
            .field("table", self.table.name())
            .field("families", &self.families)
            .finish()
    }
}

/// Tables' schemas, with when each was read.
type SchemaCache = Mutex<HashMap<TableName, (Instant, Arc<TableSchema>)>>;

/// The state the two services share.
#[derive(Clone)]
pub struct Gateway {
    conn: Arc<dyn Connection>,
    schemas: Arc<SchemaCache>,
    metrics: Arc<RequestMetrics>,
    combiner: Arc<combine::Combiner>,
}

impl std::fmt::Debug for Gateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("bigtable::Gateway").finish_non_exhaustive()
    }
}

impl Gateway {
    #[must_use]
    pub fn new(conn: Arc<dyn Connection>, metrics: Arc<RequestMetrics>) -> Gateway {
        Gateway {
            conn,
            schemas: Arc::new(Mutex::new(HashMap::new())),
            metrics,
            combiner: Arc::default(),
        }
    }

    /// The table and its families' schemas, read at most [`SCHEMA_FRESHNESS`] ago.
    fn schema(&self, name: &TableName) -> Result<Arc<TableSchema>, Status> {
        let cached = self.schemas.lock().get(name).cloned();
        if let Some((at, s)) = cached {
            if at.elapsed() < SCHEMA_FRESHNESS {
                return Ok(s);
            }
        }
        let desc = self.conn.admin().describe(name).map_err(|e| status(&e))?;
        let table = self.conn.table(name).map_err(|e| status(&e))?;
        let families = desc
            .families
            .iter()
            .map(|(n, d)| Ok((n.clone(), FamilySchema::of(d)?)))
            .collect::<Result<_, Status>>()?;
        let s = Arc::new(TableSchema { table, families });
        self.schemas
            .lock()
            .insert(name.clone(), (Instant::now(), Arc::clone(&s)));
        Ok(s)
    }

    /// Drops a table's cached schema after this gateway changed it.
    fn forget(&self, name: &TableName) {
        self.schemas.lock().remove(name);
    }

    /// Runs `f` on the blocking pool (operation-layer calls block) and records it.
    async fn blocking<T: Send + 'static>(
        &self,
        method: &'static str,
        f: impl FnOnce(&Gateway) -> Result<T, Status> + Send + 'static,
    ) -> Result<Response<T>, Status> {
        let started = Instant::now();
        let gw = self.clone();
        let out = tokio::task::spawn_blocking(move || f(&gw))
            .await
            .map_err(|e| Status::internal(format!("the request's task failed: {e}")))?;
        self.metrics
            .record_api("bigtable", method, started.elapsed(), out.is_ok());
        out.map(Response::new)
    }
}

/// The largest request or response message: a row of 10 MiB cells must cross (gRPC's
/// default of 4 MiB would refuse it); a cell over the limit is refused by the cell check,
/// with Bigtable's INVALID_ARGUMENT.
pub const MAX_MESSAGE_BYTES: usize = crate::MAX_MESSAGE_BYTES;

/// Binds the Bigtable API's port.
///
/// # Errors
/// The port cannot be bound.
pub async fn listen(addr: SocketAddr) -> Result<tokio::net::TcpListener, crate::ServerError> {
    tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| crate::ServerError(format!("binding {addr}: {e}")))
}

/// Serves the Bigtable API on `listener` until `stop` completes.
pub fn serve(
    listener: tokio::net::TcpListener,
    gateway: &Gateway,
    stop: impl std::future::Future<Output = ()> + Send + 'static,
) -> tokio::task::JoinHandle<()> {
    let routes = services(gateway);
    tokio::spawn(async move {
        use tokio_stream::StreamExt;
        // Nagle's algorithm off, as on the native API's connections: a streamed answer
        // (ReadRows) ends with a small trailers frame that would otherwise wait for the
        // client's delayed ACK, some 40 ms per request.
        let incoming = tokio_stream::wrappers::TcpListenerStream::new(listener).map(|s| {
            if let Ok(s) = &s {
                if let Err(e) = s.set_nodelay(true) {
                    tracing::debug!(error = %e, "could not turn Nagle's algorithm off");
                }
            }
            s
        });
        let served = tonic::transport::Server::builder()
            .add_routes(routes)
            .serve_with_incoming_shutdown(incoming, stop)
            .await;
        if let Err(e) = served {
            tracing::warn!(error = %e, "the Bigtable API stopped");
        }
    })
}

/// The Bigtable services as one router, ready to serve.
pub fn services(gateway: &Gateway) -> tonic::service::Routes {
    use basalt_bigtable_proto::google::bigtable::admin::v2::bigtable_table_admin_server::BigtableTableAdminServer;
    use basalt_bigtable_proto::google::bigtable::v2::bigtable_server::BigtableServer;
    let data = BigtableServer::new(gateway.clone())
        .max_decoding_message_size(MAX_MESSAGE_BYTES)
        .max_encoding_message_size(MAX_MESSAGE_BYTES);
    let admin = BigtableTableAdminServer::new(gateway.clone())
        .max_decoding_message_size(MAX_MESSAGE_BYTES)
        .max_encoding_message_size(MAX_MESSAGE_BYTES);
    tonic::service::Routes::new(data).add_service(admin)
}

/// HBase's table behind a Bigtable table name `projects/P/instances/I/tables/T`.
///
/// # Errors
/// INVALID_ARGUMENT for a name of another shape or a table id HBase cannot name.
pub fn table_name(name: &str) -> Result<TableName, Status> {
    let parts: Vec<&str> = name.split('/').collect();
    match parts.as_slice() {
        ["projects", p, "instances", i, "tables", t] if !p.is_empty() && !i.is_empty() => {
            table_id(t)
        }
        _ => Err(Status::invalid_argument(format!(
            "Invalid table name {name:?}: expected projects/<project>/instances/<instance>/tables/<table>"
        ))),
    }
}

/// HBase's table for a Bigtable table id.
fn table_id(id: &str) -> Result<TableName, Status> {
    let valid = !id.is_empty()
        && id.len() <= 50
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.')
        && !id.starts_with(['-', '.']);
    if !valid {
        return Err(Status::invalid_argument(format!(
            "Invalid table id {id:?}: 1 to 50 characters of [-_.a-zA-Z0-9], not starting with '-' or '.'"
        )));
    }
    TableName::new(basalt_model::name::DEFAULT_NAMESPACE, id).map_err(|e| status(&e))
}

/// The instance of a `projects/P/instances/I` parent, checked.
fn instance(parent: &str) -> Result<&str, Status> {
    let parts: Vec<&str> = parent.split('/').collect();
    match parts.as_slice() {
        ["projects", p, "instances", i] if !p.is_empty() && !i.is_empty() => Ok(parent),
        _ => Err(Status::invalid_argument(format!(
            "Invalid parent {parent:?}: expected projects/<project>/instances/<instance>"
        ))),
    }
}

/// Bigtable's status for an operation-layer error.
#[must_use]
pub fn status(e: &Error) -> Status {
    use tonic::Code;
    let code = match e {
        Error::IllegalArgument(_) | Error::DoNotRetry(_) | Error::IncompatibleFilter(_) => {
            Code::InvalidArgument
        }
        Error::TableNotFound(_) | Error::NoSuchColumnFamily { .. } => Code::NotFound,
        Error::NamespaceNotFound(_) | Error::UnknownRegion(_) => Code::NotFound,
        Error::TableExists(_) | Error::NamespaceExists(_) => Code::AlreadyExists,
        Error::TableNotEnabled(_) | Error::TableNotDisabled(_) | Error::Constraint(_) => {
            Code::FailedPrecondition
        }
        Error::RegionTooBusy(_)
        | Error::NotServingRegion(_)
        | Error::PleaseHold(_)
        | Error::RegionOffline(_) => Code::Unavailable,
        Error::RowTooBig(_) => Code::InvalidArgument,
        Error::Corruption { .. } => Code::DataLoss,
        _ => Code::Internal,
    };
    Status::new(code, e.to_string())
}

/// Bigtable's microseconds for HBase's milliseconds.
#[must_use]
pub fn micros(ms: i64) -> i64 {
    ms.saturating_mul(1000)
}
