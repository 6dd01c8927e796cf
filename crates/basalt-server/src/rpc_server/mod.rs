//! HBase's RPC server for the native API: the calls of one HTTP/2 connection, read off it and
//! answered on the connection's own task.
//!
//! Every call of the native API is unary. tonic's server (hyper beneath it) gave each stream
//! a task of its own and passed each call through a router, four service layers and a body
//! piped into h2 by that task: per call, a task spawned, a wake-up of it, and a wake-up of the
//! connection's task for its answer. Here the connection's task does all of it, as HBase's
//! RPC server reads calls off a connection and answers them: it reads the frames the socket
//! holds ([`crate::http2`]), starts each call whose request arrived, and polls the calls beside
//! the connection. A call answered from memory (a point read that hits the memstore or the
//! block cache) is answered within the pass that read it, and the answers of the calls ready
//! together leave four a write, or each once it is made when making them takes long or they
//! are large (scans of many rows), so the client works on them while the next calls run.
//!
//! The table calls are decoded, run and encoded by [`TableCalls`]; the admin services'
//! generated servers (`AdminServer`, `RegionServerAdminServer`) do their own. Only the
//! transport beneath them is this module's. Besides the calls, the connection does what hyper did:
//! - **Settings**: hyper's for servers (at most 200 streams at once, 1 MiB windows, a 16 KiB
//!   header list, at most 1,024 streams reset for errors of their own).
//! - **Keepalive**: a ping every `ping`; a peer that has not answered one by the next is
//!   closed. A live client thus always has bytes to send, and the listener's idle deadline
//!   closes only dead ones, even while a call runs longer than that deadline.
//! - **Abandoned calls**: a call whose client reset its stream is dropped, and one still
//!   unanswered at its `grpc-timeout` ends with `DEADLINE_EXCEEDED`.
//! - **Stop**: GOAWAY; the calls in flight finish and new streams are refused, and the
//!   connection closes once the last call has answered.
//!
//! # Invariants
//! - A call's future is polled only by its connection's task, inside that task's turn; when
//!   the connection ends, its calls are dropped with it.
//! - A turn ends `Pending` only after a pass in which neither the connection nor any call made
//!   progress (everything it polled registered this task's waker), or after it woke its own
//!   task to let the loop's other connections run.

use std::convert::Infallible;
use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use futures_util::stream::{FuturesUnordered, StreamExt};
use http::Response;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::watch;
use tonic::body::Body;
use tonic::codegen::{BoxFuture, Service};
use tonic::server::NamedService;
use tonic::Status;

use crate::budget::Budgeted;
use crate::cluster::RegionServerAdminService;
use crate::grpc::{Services, TableCalls};
use crate::http2::connection::{Accepted, Connection, Reading, Settings};
use crate::http2::request::RequestHead;
use basalt_proto::pb::admin_server::AdminServer;
use basalt_proto::pb::region_server_admin_server::RegionServerAdminServer;
use call::{start, Call};
use keepalive::Keepalive;

mod call;
mod keepalive;

/// What this server announces and allows (hyper's defaults for servers): streams served at
/// once on one connection, each stream's and the connection's window, the largest header
/// list, and the streams it may reset for the peer's errors before it closes the
/// connection (against a peer that provokes resets in a loop).
const SETTINGS: Settings = Settings {
    max_concurrent_streams: 200,
    window: 1 << 20,
    max_header_list: 16 << 10,
    max_error_resets: 1024,
};
/// How many answers wait for the calls after them before they are written, and for how
/// long and how many bytes at most. A pass writes the answers of the calls it ran together;
/// written all at once, they leave client and server taking turns, each idle while the
/// other works (eight point reads read together take the loop 70–200 µs, host by host).
/// Written four at a time (half of the eight calls a YCSB client of eight threads keeps
/// open), the client works on the first half while the server runs the rest, and its next
/// requests are there before the pass ends. Answers that took long to make, or that are
/// large (a scan's rows, which the client takes long to decode), leave at once, so that the
/// client does not sit idle behind the calls after them.
///
/// Each write costs the loop a system call that, on loopback, also delivers to the client
/// and wakes it: a quarter of the loop's time in YCSB C, and the loop's time is what bounds
/// a connection's rate. On an Intel host, ten alternated rounds of YCSB C put four a write
/// ahead of two in every round (native ÷ Thrift median 1.115 against 1.010); three, six and
/// eight did worse than four. The time allowed was 60 µs there, where a point read takes
/// the loop 14 µs; on a host where it takes 20–24 µs that cut the answers to three a write,
/// and 150 µs made YCSB C 12% faster (the median of eighteen alternated rounds). The bytes
/// are what the client lets itself decode before it writes its next requests (its
/// `State::woken_calls_are_quick`).
/// BENCHMARKS.md has the figures.
const FLUSH_AFTER: Duration = Duration::from_micros(150);
/// See [`FLUSH_AFTER`].
const FLUSH_BYTES: usize = 16 << 10;
/// See [`FLUSH_AFTER`].
const FLUSH_EVERY: usize = 4;
/// Passes in one turn before a busy connection lets its loop's other connections run.
const PASSES_PER_TURN: usize = 64;

/// What a call answers with, once its service has run.
pub type Answer = BoxFuture<Answered, Infallible>;

/// A call's answer: a gRPC message (the table calls' success, written without HTTP's
/// types), or an HTTP response (the generated services' answers and every failure).
#[derive(Debug)]
pub enum Answered {
    /// A unary call's one message in its frame (never empty), answered with success.
    Unary(bytes::Bytes),
    Response(Response<Body>),
}

impl From<Response<Body>> for Answered {
    fn from(response: Response<Body>) -> Answered {
        Answered::Response(response)
    }
}

/// Where a connection's calls go: a service for each call's path.
pub trait Route: Clone + Send + 'static {
    /// Starts the call `head` names, whose request's body is `body`.
    fn call(&mut self, head: Arc<RequestHead>, body: Body) -> Answer;
}

/// The native API's services, found by the service name that starts a call's path
/// (`/basalt.v1.Table/Get`): the table calls served straight from their messages, the
/// others by their generated servers. A name none of them has is answered `UNIMPLEMENTED`.
#[derive(Clone)]
pub struct Routes {
    pub table: TableCalls,
    pub admin: Budgeted<AdminServer<Services>>,
    pub region_server_admin: Option<RegionServerAdminServer<RegionServerAdminService>>,
}

impl Route for Routes {
    fn call(&mut self, head: Arc<RequestHead>, body: Body) -> Answer {
        // The generated services are always ready (`poll_ready` answers at once), so a call
        // goes straight to them.
        let path = head.uri.path();
        // The table calls are nearly all the calls: their prefix is compared first, where
        // finding the second `/` took a point read's server about 200 instructions.
        if let Some(method) = TableCalls::method_of(path) {
            return self.table.call(path, method, body);
        }
        let service = path.strip_prefix('/').and_then(|p| p.split_once('/'));
        match service.map(|(name, _)| name) {
            Some(name) if name == Budgeted::<AdminServer<Services>>::NAME => responded(
                self.admin
                    .call(Arc::unwrap_or_clone(head).into_http().map(|()| body)),
            ),
            Some(name) if name == RegionServerAdminServer::<RegionServerAdminService>::NAME => {
                match &mut self.region_server_admin {
                    Some(service) => {
                        let request = Arc::unwrap_or_clone(head).into_http();
                        responded(service.call(request.map(|()| body)))
                    }
                    None => unimplemented(path),
                }
            }
            _ => unimplemented(path),
        }
    }
}

/// The answer of a generated service's call.
fn responded(
    call: impl Future<Output = Result<Response<Body>, Infallible>> + Send + 'static,
) -> Answer {
    Box::pin(async move { call.await.map(Answered::Response) })
}

/// The answer to a call of a service this server does not have.
fn unimplemented(path: &str) -> Answer {
    let status = Status::unimplemented(format!("this server has no method {path}"));
    Box::pin(std::future::ready(Ok(status.into_http().into())))
}

/// Serves the calls of one connection until its peer closes it, it fails, its peer stops
/// answering pings, or `stop` turns `true` and its last call has answered.
pub async fn serve_connection<T, R>(io: T, routes: R, ping: Duration, stop: watch::Receiver<bool>)
where
    T: AsyncRead + AsyncWrite + Unpin,
    R: Route,
{
    let stop = Box::pin(async move {
        let mut stop = stop;
        // A dropped sender stops the connection as `true` does.
        let _ = stop.wait_for(|s| *s).await;
    });
    let mut served = Served {
        conn: Connection::new(io, SETTINGS),
        routes,
        accepted: Vec::new(),
        calls: FuturesUnordered::new(),
        keepalive: Keepalive::new(ping),
        stop,
        stopping: false,
    };
    if let Err(why) = poll_fn(|cx| served.turn(cx)).await {
        tracing::debug!(error = %why, "a native API connection ended");
    }
}

/// One connection being served, and its calls.
struct Served<T, R> {
    conn: Connection<T>,
    routes: R,
    /// Requests read and not yet started (kept to reuse its room).
    accepted: Vec<Accepted>,
    calls: FuturesUnordered<Call>,
    keepalive: Keepalive,
    stop: Pin<Box<dyn Future<Output = ()> + Send>>,
    stopping: bool,
}

impl<T, R> Served<T, R>
where
    T: AsyncRead + AsyncWrite + Unpin,
    R: Route,
{
    /// Reads the requests that arrived, starts their calls, polls the calls, and writes
    /// their answers, until a pass makes no progress; ready once the connection is done
    /// with.
    ///
    /// A pass reads every request the socket holds before it polls the calls; the answers of
    /// the calls read together are written [`FLUSH_EVERY`] a write, or sooner once they
    /// waited [`FLUSH_AFTER`] for the calls after them or hold [`FLUSH_BYTES`].
    fn turn(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), String>> {
        if !self.stopping && self.stop.as_mut().poll(cx).is_ready() {
            self.stopping = true;
            self.conn.go_away();
        }
        for _ in 0..PASSES_PER_TURN {
            let mut progressed = match self.conn.read(cx, &mut self.accepted)? {
                Reading::Closed => return Poll::Ready(Ok(())),
                Reading::Progress => true,
                Reading::Idle => false,
            };
            for accepted in self.accepted.drain(..) {
                self.calls.push(start(&mut self.routes, accepted));
            }
            let mut since_write = std::time::Instant::now();
            let (mut unwritten, mut unwritten_bytes) = (0, 0);
            while let Poll::Ready(Some((stream, reply))) = self.calls.poll_next_unpin(cx) {
                if let Some(reply) = reply {
                    unwritten_bytes += reply.data_len();
                    self.conn.answer(stream, reply);
                    unwritten += 1;
                    // Answers leave four at a time, or once they took long to make or are
                    // large, so the client works on them while the next calls run.
                    let now = std::time::Instant::now();
                    if unwritten >= FLUSH_EVERY
                        || unwritten_bytes >= FLUSH_BYTES
                        || now - since_write >= FLUSH_AFTER
                    {
                        if let Poll::Ready(Err(e)) = self.conn.poll_flush(cx) {
                            return Poll::Ready(Err(e));
                        }
                        since_write = now;
                        (unwritten, unwritten_bytes) = (0, 0);
                    }
                }
                progressed = true;
            }
            self.conn.release();
            self.keepalive.poll(cx, &mut self.conn)?;
            match self.conn.poll_flush(cx) {
                Poll::Ready(Ok(wrote)) => {
                    progressed |= wrote;
                    if self.conn.is_finished() && self.calls.is_empty() {
                        return Poll::Ready(Ok(()));
                    }
                }
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => {}
            }
            if !progressed {
                return Poll::Pending;
            }
        }
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

#[cfg(test)]
mod tests;
