//! HBase's REST gateway (Stargate, HBase's `hbase-rest` module) over the operation layer, on
//! HBase's port 8080: tables, schemas, namespaces, rows and cells, multi-gets, scanners and
//! stateless scans in XML, JSON and protobuf (and one cell as octets), so curl and the REST
//! clients (hbase-rest-py, starbase) work unchanged.
//!
//! The behaviour is HBase 2.5.12+/2.6.3+'s, resource by resource: `admin` (the table
//! list, versions, cluster status, namespaces, schemas, regions, exists), `rows` (row
//! reads and writes, check-and-put/delete, increment, append, multi-get), `scanners`
//! (scanner leases and `GET /T/prefix*`). Errors are HBase's: `text/plain` bodies starting
//! "Not found", "Bad request", "Unavailable", with 404, 400 and 503; a refused request
//! writes nothing.
//!
//! Every operation is synchronous (the operation layer is): a request is read in full on
//! the async side, then served on a blocking thread.

mod admin;
mod cellset;
mod filter;
pub mod media;
mod namespaces;
pub mod pb;
mod resource;
mod rows;
mod rowspec;
mod scanners;
mod schema;
mod status;
#[cfg(test)]
mod tests;
mod xml;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::Response;
use basalt_api::leases::Scanners;
use basalt_api::Connection;
use bytes::Bytes;
use tokio::net::TcpListener;

use crate::listener::{Accepted, ConnectionLimits};
use crate::metrics::RequestMetrics;
use crate::ServerError;
use resource::{Resource, TableResource};

/// HBase's REST port (`hbase.rest.port`).
pub const DEFAULT_PORT: u16 = 8080;

/// The operations measured, by resource and method.
pub const METHODS: [&str; 16] = [
    "version",
    "tables",
    "cluster",
    "namespaces",
    "schema",
    "regions",
    "exists",
    "get",
    "put",
    "delete",
    "check",
    "multiget",
    "scanner_open",
    "scanner_next",
    "scanner_close",
    "scan",
];

/// How the REST gateway runs.
#[derive(Clone, Debug)]
pub struct RestConfig {
    /// `127.0.0.1:8080` unless set (there is no authentication).
    pub listen: SocketAddr,
    /// `hbase.rest.scannercache.expire.time`: a scanner not read for this long is closed.
    pub scanner_lease: Duration,
    /// `hbase.rest.scannercache.size`: scanners open at most.
    pub max_scanners: usize,
    /// The largest request body taken (a larger one is refused with 413 before it is
    /// read in full).
    pub max_body_bytes: usize,
    /// `hbase.rest.readonly`: every write, schema change and scanner is refused with 403.
    pub read_only: bool,
}

impl Default for RestConfig {
    fn default() -> Self {
        RestConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], DEFAULT_PORT)),
            scanner_lease: Duration::from_secs(3600),
            max_scanners: 10_000,
            max_body_bytes: crate::MAX_MESSAGE_BYTES,
            read_only: false,
        }
    }
}

/// A failed request: the status and the `text/plain` body HBase gives.
#[derive(Debug)]
pub struct RestError {
    pub status: StatusCode,
    pub message: String,
}

impl RestError {
    pub fn new(status: StatusCode, message: impl Into<String>) -> RestError {
        RestError {
            status,
            message: message.into(),
        }
    }

    /// 400 "Bad request" with why.
    pub fn bad_request(why: impl std::fmt::Display) -> RestError {
        RestError::new(StatusCode::BAD_REQUEST, format!("Bad request\r\n{why}"))
    }

    /// 404 "Not found" with what.
    pub fn not_found(what: impl std::fmt::Display) -> RestError {
        RestError::new(StatusCode::NOT_FOUND, format!("Not found\r\n{what}"))
    }

    /// An operation layer error as HBase's `ResourceBase.processException` maps it: a
    /// missing table or family is 404, a bad argument 400, the rest 503.
    pub fn from_model(e: &basalt_model::Error) -> RestError {
        use basalt_model::Error as E;
        let text = format!("{}: {e}", e.exception_name());
        match e {
            E::TableNotFound(_) | E::NoSuchColumnFamily { .. } | E::NamespaceNotFound(_) => {
                RestError::not_found(text)
            }
            E::IllegalArgument(_)
            | E::Constraint(_)
            | E::DoNotRetry(_)
            | E::IncompatibleFilter(_)
            | E::RowTooBig(_) => RestError::bad_request(text),
            _ => RestError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                format!("Unavailable\r\n{text}"),
            ),
        }
    }

    fn into_response(self) -> Response {
        let mut body = self.message;
        body.push_str("\r\n");
        let mut r = Response::new(Body::from(body));
        *r.status_mut() = self.status;
        r.headers_mut()
            .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
        r
    }
}

impl From<basalt_model::Error> for RestError {
    fn from(e: basalt_model::Error) -> Self {
        RestError::from_model(&e)
    }
}

/// What a handler answers.
pub type Answer = Result<Response, RestError>;

/// A response with `body` in `format`.
pub fn answer(status: StatusCode, format: media::Format, body: Vec<u8>) -> Response {
    let mut r = Response::new(Body::from(body));
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(format.content_type()),
    );
    r
}

/// A response with no body.
pub fn empty(status: StatusCode) -> Response {
    let mut r = Response::new(Body::empty());
    *r.status_mut() = status;
    r
}

/// One request as the resources see it.
#[derive(Debug)]
pub struct Call {
    pub method: Method,
    /// The path after the leading `/`, still percent-encoded.
    pub path: String,
    /// Query parameters, percent-decoded, in order.
    pub query: Vec<(String, String)>,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Call {
    /// The first value of query parameter `name`.
    pub fn param(&self, name: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// Every value of query parameter `name`.
    pub fn params<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.query
            .iter()
            .filter(move |(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The absolute URL of this request's path, as `Location` headers carry it.
    pub fn absolute_url(&self) -> String {
        let host = self
            .headers
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .unwrap_or("localhost");
        format!("http://{host}/{}", self.path.trim_end_matches('/'))
    }
}

/// The state every request shares.
#[derive(Clone)]
pub struct Gateway {
    conn: Arc<dyn Connection>,
    scanners: Arc<Scanners<scanners::RestScanner>>,
    metrics: Arc<RequestMetrics>,
    config: RestConfig,
}

impl std::fmt::Debug for Gateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("rest::Gateway").finish_non_exhaustive()
    }
}

impl Gateway {
    #[must_use]
    pub fn new(
        conn: Arc<dyn Connection>,
        metrics: Arc<RequestMetrics>,
        config: RestConfig,
    ) -> Gateway {
        let scanners = Arc::new(Scanners::new(config.scanner_lease));
        let s = Arc::downgrade(&scanners);
        metrics.register_gauge(
            "basalt_rest_open_scanners",
            "REST gateway scanners open.",
            move || s.upgrade().map_or(0, |s| s.open_count() as u64),
        );
        Gateway {
            conn,
            scanners,
            metrics,
            config,
        }
    }

    /// Closes scanners whose lease ran out.
    pub fn expire_scanners(&self) -> usize {
        self.scanners.expire()
    }

    /// Serves one request (on a blocking thread).
    fn serve(&self, call: &Call) -> Response {
        let started = Instant::now();
        let (op, out) = self.route(call);
        self.finish(op, started, out)
    }

    /// A row `GET` answered on the calling (async) thread when the connection serves from
    /// memory and the row needs nothing but memory (memstores, cached blocks); `None` sends
    /// the call to [`Gateway::serve`] on a blocking thread.
    fn serve_from_memory(&self, call: &Call) -> Option<Response> {
        if !matches!(call.method, Method::GET | Method::HEAD) || !self.conn.serves_from_memory() {
            return None;
        }
        let Resource::Table(table, TableResource::Row(spec)) = Resource::of(&call.path) else {
            return None;
        };
        let started = Instant::now();
        let out = match rowspec::url_decode(table) {
            Ok(name) => rows::get_from_memory(self, call, &String::from_utf8_lossy(&name), spec)?,
            Err(e) => Err(e),
        };
        Some(self.finish("get", started, out))
    }

    /// The response of `out`, with the operation recorded in the metrics.
    fn finish(&self, op: &'static str, started: Instant, out: Answer) -> Response {
        let out = out.unwrap_or_else(RestError::into_response);
        let ok = out.status().is_success() || out.status() == StatusCode::NOT_MODIFIED;
        self.metrics.record_api("rest", op, started.elapsed(), ok);
        out
    }

    /// Serves the resource `call` names; returns the operation's name for the metrics with
    /// the answer.
    fn route(&self, call: &Call) -> (&'static str, Answer) {
        match Resource::of(&call.path) {
            Resource::Tables => ("tables", admin::tables(self, call)),
            Resource::Version => ("version", admin::version(call)),
            Resource::ClusterVersion => ("version", admin::cluster_version(call)),
            Resource::ClusterStatus => ("cluster", status::cluster_status(self, call)),
            Resource::Namespaces(ns) => ("namespaces", namespaces::namespaces(self, call, ns)),
            Resource::Table(table, resource) => match rowspec::url_decode(table) {
                Ok(name) => self.table_resource(call, &String::from_utf8_lossy(&name), resource),
                Err(e) => ("get", Err(e)),
            },
        }
    }

    fn table_resource(
        &self,
        call: &Call,
        table: &str,
        resource: TableResource<'_>,
    ) -> (&'static str, Answer) {
        match resource {
            TableResource::Exists => ("exists", admin::exists(self, call, table)),
            TableResource::Regions => ("regions", admin::regions(self, call, table)),
            TableResource::Schema => ("schema", schema::schema(self, call, table)),
            TableResource::ScannerOpen => ("scanner_open", scanners::open(self, call, table)),
            TableResource::Scanner(id) => scanners::instance(self, call, id),
            TableResource::Multiget(r) => ("multiget", rows::multiget(self, call, table, r)),
            TableResource::NoRow => ("get", Err(RestError::not_found("no row in the path"))),
            TableResource::Scan(r) => ("scan", scanners::table_scan(self, call, table, r)),
            TableResource::BadGlob => (
                "get",
                Err(RestError::not_found("a '*' only ends a row prefix")),
            ),
            TableResource::Row(spec) => rows::row(self, call, table, spec),
        }
    }

    fn table(&self, name: &str) -> Result<Arc<dyn basalt_api::Table>, RestError> {
        let t = basalt_model::TableName::parse(name).map_err(RestError::bad_request)?;
        Ok(self.conn.table(&t)?)
    }

    /// 403 when the gateway is read-only.
    fn writable(&self) -> Result<(), RestError> {
        if self.config.read_only {
            return Err(RestError::new(StatusCode::FORBIDDEN, "Forbidden"));
        }
        Ok(())
    }
}

/// Query parameters, percent-decoded (`+` is a space).
fn parse_query(q: Option<&str>) -> Vec<(String, String)> {
    let decode = |s: &str| {
        rowspec::url_decode(s).map_or_else(
            |_| s.to_owned(),
            |b| String::from_utf8_lossy(&b).into_owned(),
        )
    };
    q.unwrap_or_default()
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (decode(k), decode(v))
        })
        .collect()
}

/// The routes: every path is HBase's resource tree, so one handler takes them all.
pub fn router(gateway: Gateway) -> axum::Router {
    axum::Router::new().fallback(handle).with_state(gateway)
}

async fn handle(State(g): State<Gateway>, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    let limit = g.config.max_body_bytes;
    let Ok(body) = axum::body::to_bytes(body, limit).await else {
        return RestError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("Payload Too Large: a request body is at most {limit} bytes"),
        )
        .into_response();
    };
    let call = Call {
        query: parse_query(parts.uri.query()),
        path: parts.uri.path().trim_start_matches('/').to_owned(),
        method: parts.method,
        headers: parts.headers,
        body,
    };
    let head = call.method == Method::HEAD;
    let served = match g.serve_from_memory(&call) {
        Some(r) => Ok(r),
        None => tokio::task::spawn_blocking(move || g.serve(&call)).await,
    };
    let mut response = served.unwrap_or_else(|e| {
        RestError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("Internal Server Error: {e}"),
        )
        .into_response()
    });
    if head {
        *response.body_mut() = Body::empty();
    }
    response
}

/// Binds the gateway's port.
///
/// # Errors
/// The port cannot be bound.
pub async fn listen(addr: SocketAddr) -> Result<TcpListener, ServerError> {
    TcpListener::bind(addr)
        .await
        .map_err(|e| ServerError(format!("binding {addr}: {e}")))
}

/// Serves the gateway on `listener` until `stop`; returns the accepting task. Scanner
/// leases are expired a few times per lease period.
///
/// # Errors
/// The listener cannot be served.
pub fn serve(
    listener: TcpListener,
    gateway: &Gateway,
    stop: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<tokio::task::JoinHandle<()>, ServerError> {
    let accepted = Accepted::start(listener, ConnectionLimits::rest(), "REST gateway")
        .map_err(|e| ServerError(format!("serving the REST gateway: {e}")))?;
    let g = gateway.clone();
    let reaper = crate::spawn_reaper(gateway.config.scanner_lease, move || {
        g.expire_scanners();
    });
    let app = router(gateway.clone());
    Ok(tokio::spawn(async move {
        if let Err(e) = axum::serve(accepted, app)
            .with_graceful_shutdown(stop)
            .await
        {
            tracing::warn!(error = %e, "the REST gateway stopped");
        }
        reaper.abort();
    }))
}
