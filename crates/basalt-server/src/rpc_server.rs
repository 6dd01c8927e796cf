//! HBase's RPC server for the native API: the calls of one HTTP/2 connection, read off it and
//! answered on the connection's own task.
//!
//! Every call of the native API is unary. tonic's server (hyper beneath it) gave each stream
//! a task of its own and passed each call through a router, four service layers and a body
//! piped into h2 by that task: per call, a task spawned, a wake-up of it, and a wake-up of the
//! connection's task for its answer. Here the connection's task does all of it, as HBase's
//! RPC server reads calls off a connection and answers them: it accepts the streams h2 has
//! read, starts each call, and polls the calls beside the connection. A call answered from
//! memory (a point read that hits the memstore or the block cache) is answered within the
//! poll that read it, and the answers of the calls ready together leave in one write (the
//! connection is [`Coalesced`], its turns counted by the task).
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
//! - A call's future is polled only by its connection's task, inside that task's turn; it
//!   owns its stream's `SendResponse`, so dropping the connection drops its calls.
//! - A turn ends `Pending` only after a pass in which neither the connection nor any call made
//!   progress (everything it polled registered this task's waker), or after it woke its own
//!   task to let the loop's other connections run.

use std::convert::Infallible;
use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use basalt_proto::deadline::grpc_timeout;
use basalt_proto::transport::{Coalesced, Turns};
use bytes::Bytes;
use futures_util::stream::{FuturesUnordered, StreamExt};
use h2::server::{Connection, SendResponse};
use h2::{Ping, PingPong, RecvStream};
use http::{Request, Response};
use http_body::{Body as _, Frame};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::watch;
use tokio::time::{Instant, Sleep};
use tonic::body::Body;
use tonic::codegen::{BoxFuture, Service};
use tonic::server::NamedService;
use tonic::Status;

use crate::budget::Budgeted;
use crate::cluster::RegionServerAdminService;
use crate::grpc::{Services, TableCalls};
use basalt_proto::pb::admin_server::AdminServer;
use basalt_proto::pb::region_server_admin_server::RegionServerAdminServer;

/// Streams served at once on one connection (hyper's default).
const MAX_CONCURRENT_STREAMS: u32 = 200;
/// The flow-control window of each stream and of the connection (hyper's default).
const WINDOW: u32 = 1 << 20;
/// The largest header list a request may send (hyper's default).
const MAX_HEADER_LIST: u32 = 16 << 10;
/// The most bytes of answers buffered per stream beyond the peer's window (hyper's default).
const MAX_SEND_BUFFER: usize = 400 << 10;
/// Streams the server may reset for errors of their own before it closes the connection
/// (hyper's default), against a peer that provokes resets in a loop.
const MAX_LOCAL_ERROR_RESETS: usize = 1024;
/// Passes in one turn before a busy connection lets its loop's other connections run.
const PASSES_PER_TURN: usize = 64;

/// What a call answers with, once its service has run.
pub type Answer = BoxFuture<Response<Body>, Infallible>;

/// Where a connection's calls go: a service for each call's path.
pub trait Route: Clone + Send + 'static {
    /// Starts the call `request` names.
    fn call(&mut self, request: Request<Body>) -> Answer;
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
    fn call(&mut self, request: Request<Body>) -> Answer {
        // The generated services are always ready (`poll_ready` answers at once), so a call
        // goes straight to them.
        let path = request.uri().path();
        let service = path.strip_prefix('/').and_then(|p| p.split_once('/'));
        match service.map(|(name, _)| name) {
            Some(TableCalls::SERVICE) => self.table.call(request),
            Some(name) if name == Budgeted::<AdminServer<Services>>::NAME => {
                self.admin.call(request)
            }
            Some(name) if name == RegionServerAdminServer::<RegionServerAdminService>::NAME => {
                match &mut self.region_server_admin {
                    Some(service) => service.call(request),
                    None => unimplemented(path),
                }
            }
            _ => unimplemented(path),
        }
    }
}

/// The answer to a call of a service this server does not have.
fn unimplemented(path: &str) -> Answer {
    let status = Status::unimplemented(format!("this server has no method {path}"));
    Box::pin(std::future::ready(Ok(status.into_http())))
}

/// Serves the calls of one connection until its peer closes it, it fails, its peer stops
/// answering pings, or `stop` turns `true` and its last call has answered. Its writes are
/// [`Coalesced`]: the answers of one turn leave in one write.
pub async fn serve_connection<T, R>(io: T, routes: R, ping: Duration, stop: watch::Receiver<bool>)
where
    T: AsyncRead + AsyncWrite + Unpin,
    R: Route,
{
    let mut stop = Box::pin(async move {
        let mut stop = stop;
        // A dropped sender stops the connection as `true` does.
        let _ = stop.wait_for(|s| *s).await;
    });
    let turns = Turns::default();
    let handshake = h2::server::Builder::new()
        .max_concurrent_streams(MAX_CONCURRENT_STREAMS)
        .initial_window_size(WINDOW)
        .initial_connection_window_size(WINDOW)
        .max_header_list_size(MAX_HEADER_LIST)
        .max_send_buffer_size(MAX_SEND_BUFFER)
        .max_local_error_reset_streams(Some(MAX_LOCAL_ERROR_RESETS))
        .handshake::<_, Bytes>(Coalesced::new(io, &turns));
    let mut conn = tokio::select! {
        c = handshake => match c {
            Ok(c) => c,
            Err(e) => {
                tracing::debug!(error = %e, "a native API connection failed its HTTP/2 handshake");
                return;
            }
        },
        () = &mut stop => return,
    };
    let keepalive = Keepalive::new(conn.ping_pong(), ping);
    let mut served = Served {
        turns,
        conn,
        routes,
        calls: FuturesUnordered::new(),
        keepalive,
        stop,
        stopping: false,
    };
    if let Err(why) = poll_fn(|cx| served.turn(cx)).await {
        tracing::debug!(error = %why, "a native API connection ended");
    }
}

/// One connection being served, and its calls.
struct Served<T, R> {
    turns: Turns,
    conn: Connection<Coalesced<T>, Bytes>,
    routes: R,
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
    /// Accepts the streams h2 has read and polls the calls until neither makes progress;
    /// ready once the connection is done with.
    ///
    /// A pass accepts every stream read so far before it polls the calls, so the answers of
    /// the calls read together are buffered together, and the next pass's first
    /// `poll_accept` (which drives the connection) hands them to the socket as one write.
    fn turn(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), String>> {
        self.turns.begin();
        if !self.stopping && self.stop.as_mut().poll(cx).is_ready() {
            self.stopping = true;
            self.conn.graceful_shutdown();
        }
        for _ in 0..PASSES_PER_TURN {
            let mut progressed = false;
            loop {
                match self.conn.poll_accept(cx) {
                    Poll::Ready(Some(Ok((request, respond)))) => {
                        self.calls.push(start(&mut self.routes, request, respond));
                        progressed = true;
                    }
                    Poll::Ready(Some(Err(e))) => return Poll::Ready(Err(e.to_string())),
                    Poll::Ready(None) => return Poll::Ready(Ok(())),
                    Poll::Pending => break,
                }
            }
            while let Poll::Ready(Some(())) = self.calls.poll_next_unpin(cx) {
                progressed = true;
            }
            self.keepalive.poll(cx)?;
            if !progressed {
                return Poll::Pending;
            }
        }
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

/// A call: its service's answer awaited, then sent.
type Call = Pin<Box<dyn Future<Output = ()> + Send>>;

/// Starts the call `request` names: its service gets a body that reads the request's stream
/// as its bytes arrive, and the call's future sends what the service answers.
fn start<R: Route>(
    routes: &mut R,
    request: Request<RecvStream>,
    respond: SendResponse<Bytes>,
) -> Call {
    let deadline = grpc_timeout(request.headers()).map(|limit| (Instant::now() + limit, limit));
    let answer = routes.call(request.map(|recv| {
        Body::new(Incoming {
            recv,
            data_done: false,
        })
    }));
    Box::pin(reply(answer, respond, deadline))
}

/// Waits for the call's answer and sends it; a call whose client reset its stream, or whose
/// answer failed to send (the stream or the connection is gone), ends without one.
async fn reply(
    mut answer: Answer,
    mut respond: SendResponse<Bytes>,
    deadline: Option<(Instant, Duration)>,
) {
    let Some(response) = answered(&mut answer, &mut respond, deadline).await else {
        return;
    };
    drop(answer);
    if let Err(e) = send(response, &mut respond).await {
        tracing::debug!(error = %e, "a native API answer was not sent");
    }
}

/// The call's answer, or `DEADLINE_EXCEEDED` once its deadline passed; `None` when its client
/// reset its stream first.
async fn answered(
    answer: &mut Answer,
    respond: &mut SendResponse<Bytes>,
    deadline: Option<(Instant, Duration)>,
) -> Option<Response<Body>> {
    let mut timer: Option<Pin<Box<Sleep>>> = None;
    poll_fn(|cx| {
        if let Poll::Ready(Ok(response)) = answer.as_mut().poll(cx) {
            return Poll::Ready(Some(response));
        }
        // The call waits: a timer is set only now, so a call answered at once costs none.
        if respond.poll_reset(cx).is_ready() {
            return Poll::Ready(None);
        }
        if let Some((at, limit)) = deadline {
            let timer = timer.get_or_insert_with(|| Box::pin(tokio::time::sleep_until(at)));
            if timer.as_mut().poll(cx).is_ready() {
                let status = Status::deadline_exceeded(format!(
                    "the call was not answered within its deadline of {limit:?}"
                ));
                return Poll::Ready(Some(status.into_http()));
            }
        }
        Poll::Pending
    })
    .await
}

/// Sends an answer: its head, then its body's data and trailers as the body yields them.
async fn send(
    response: Response<Body>,
    respond: &mut SendResponse<Bytes>,
) -> Result<(), h2::Error> {
    let (head, mut body) = response.into_parts();
    let trailers_only = body.is_end_stream();
    let mut stream = respond.send_response(Response::from_parts(head, ()), trailers_only)?;
    if trailers_only {
        return Ok(());
    }
    loop {
        let frame = poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await;
        match frame {
            None => return stream.send_data(Bytes::new(), true),
            Some(Ok(frame)) => match frame.into_data() {
                Ok(data) => {
                    let last = body.is_end_stream();
                    stream.send_data(data, last)?;
                    if last {
                        return Ok(());
                    }
                }
                Err(frame) => {
                    if let Ok(trailers) = frame.into_trailers() {
                        return stream.send_trailers(trailers);
                    }
                }
            },
            Some(Err(status)) => {
                // The answer failed after its head was sent: the stream ends as hyper ends it.
                tracing::debug!(%status, "a native API answer failed while it was sent");
                stream.send_reset(h2::Reason::INTERNAL_ERROR);
                return Ok(());
            }
        }
    }
}

/// A request's body, read from its stream as the service asks for it; the bytes read are
/// given back to the peer's flow-control window at once (the service holds them, counted
/// against the request budget).
struct Incoming {
    recv: RecvStream,
    data_done: bool,
}

impl http_body::Body for Incoming {
    type Data = Bytes;
    type Error = Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Status>>> {
        if !self.data_done {
            match ready!(self.recv.poll_data(cx)) {
                Some(Ok(data)) => {
                    // Fails only when the stream is already gone, which the next read says.
                    let _ = self.recv.flow_control().release_capacity(data.len());
                    return Poll::Ready(Some(Ok(Frame::data(data))));
                }
                Some(Err(e)) => return Poll::Ready(Some(Err(read_failed(&e)))),
                None => self.data_done = true,
            }
        }
        Poll::Ready(match ready!(self.recv.poll_trailers(cx)) {
            Ok(Some(trailers)) => Some(Ok(Frame::trailers(trailers))),
            Ok(None) => None,
            Err(e) => Some(Err(read_failed(&e))),
        })
    }

    fn is_end_stream(&self) -> bool {
        self.recv.is_end_stream()
    }
}

fn read_failed(e: &h2::Error) -> Status {
    if e.reason() == Some(h2::Reason::CANCEL) {
        Status::cancelled(format!("the client cancelled the call: {e}"))
    } else {
        Status::unavailable(format!("reading the request failed: {e}"))
    }
}

/// The connection's pings: one every `every`, and the connection is given up when the peer
/// has not answered one by the time the next is due.
struct Keepalive {
    pings: Option<PingPong>,
    every: Duration,
    timer: Pin<Box<Sleep>>,
    awaiting_pong: bool,
}

impl Keepalive {
    fn new(pings: Option<PingPong>, every: Duration) -> Keepalive {
        Keepalive {
            pings,
            every,
            timer: Box::pin(tokio::time::sleep(every)),
            awaiting_pong: false,
        }
    }

    /// Sends a ping when one is due.
    ///
    /// # Errors
    /// The peer did not answer the last ping in time.
    fn poll(&mut self, cx: &mut Context<'_>) -> Result<(), String> {
        let Some(pings) = &mut self.pings else {
            return Ok(());
        };
        if self.awaiting_pong {
            if let Poll::Ready(pong) = pings.poll_pong(cx) {
                self.awaiting_pong = false;
                if pong.is_err() {
                    // The connection is closing; its own poll says how.
                    self.pings = None;
                    return Ok(());
                }
                self.timer.as_mut().reset(Instant::now() + self.every);
            }
        }
        while self.timer.as_mut().poll(cx).is_ready() {
            if self.awaiting_pong {
                return Err(format!("the peer answered no ping within {:?}", self.every));
            }
            if pings.send_ping(Ping::opaque()).is_err() {
                self.pings = None;
                return Ok(());
            }
            self.awaiting_pong = true;
            self.timer.as_mut().reset(Instant::now() + self.every);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::net::SocketAddr;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    use http::HeaderMap;
    use http_body_util::BodyExt;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};
    use tokio::sync::Semaphore;

    use super::*;

    /// A route for the transport alone: `/t/Echo` answers the request's bytes; `/t/Gate`
    /// answers once the test adds a permit to `gate`; `/t/Never` never answers. A call's
    /// future that is dropped unanswered counts in `dropped`.
    #[derive(Clone)]
    struct Test {
        gate: Arc<Semaphore>,
        dropped: Arc<AtomicUsize>,
        dropped_now: Arc<tokio::sync::Notify>,
    }

    impl Default for Test {
        fn default() -> Test {
            Test {
                gate: Arc::new(Semaphore::new(0)),
                dropped: Arc::default(),
                dropped_now: Arc::default(),
            }
        }
    }

    /// Counts its call as dropped unless the call answered.
    struct CountsDrop {
        answered: bool,
        dropped: Arc<AtomicUsize>,
        dropped_now: Arc<tokio::sync::Notify>,
    }

    impl Drop for CountsDrop {
        fn drop(&mut self) {
            if !self.answered {
                self.dropped.fetch_add(1, Ordering::SeqCst);
                self.dropped_now.notify_one();
            }
        }
    }

    impl Route for Test {
        fn call(&mut self, request: Request<Body>) -> Answer {
            let path = request.uri().path().to_owned();
            let gate = Arc::clone(&self.gate);
            let guard = CountsDrop {
                answered: false,
                dropped: Arc::clone(&self.dropped),
                dropped_now: Arc::clone(&self.dropped_now),
            };
            Box::pin(async move {
                let mut guard = guard;
                let message = request.into_body().collect().await.unwrap().to_bytes();
                match path.as_str() {
                    "/t/Echo" => {}
                    "/t/Gate" => gate.acquire().await.unwrap().forget(),
                    _ => std::future::pending().await,
                }
                guard.answered = true;
                let mut trailers = HeaderMap::new();
                trailers.insert("grpc-status", "0".parse().unwrap());
                let body = http_body_util::Full::new(message)
                    .map_err(|never: Infallible| -> Status { match never {} })
                    .with_trailers(std::future::ready(Some(Ok::<_, Status>(trailers))));
                Ok(Response::new(Body::new(body)))
            })
        }
    }

    /// A server of `routes` on a loopback port, pinging every `ping`; `stop` stops it.
    async fn serve(
        routes: Test,
        ping: Duration,
    ) -> (SocketAddr, watch::Sender<bool>, tokio::task::JoinHandle<()>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = watch::channel(false);
        let served = tokio::spawn(async move {
            let (io, _) = listener.accept().await.unwrap();
            serve_connection(io, routes, ping, stopped).await;
        });
        (addr, stop, served)
    }

    async fn client(addr: SocketAddr) -> h2::client::SendRequest<Bytes> {
        let io = TcpStream::connect(addr).await.unwrap();
        let (send, conn) = h2::client::handshake(io).await.unwrap();
        tokio::spawn(conn);
        send
    }

    fn request(path: &str, timeout: Option<&str>) -> Request<()> {
        let mut r = Request::post(format!("http://test{path}"))
            .body(())
            .unwrap();
        if let Some(t) = timeout {
            r.headers_mut().insert("grpc-timeout", t.parse().unwrap());
        }
        r
    }

    /// Sends `message` to `path`; the answer's bytes and its trailers (or its head's
    /// headers, for an answer that is trailers only).
    async fn call(
        send: &mut h2::client::SendRequest<Bytes>,
        path: &str,
        timeout: Option<&str>,
        message: Bytes,
    ) -> Result<(Bytes, HeaderMap), h2::Error> {
        let mut send = send.clone().ready().await?;
        let (answer, mut stream) = send.send_request(request(path, timeout), false)?;
        stream.send_data(message, true)?;
        let (head, mut body) = answer.await?.into_parts();
        let mut bytes = Vec::new();
        while let Some(data) = body.data().await {
            let data = data?;
            body.flow_control().release_capacity(data.len())?;
            bytes.extend_from_slice(&data);
        }
        let trailers = body.trailers().await?.unwrap_or(head.headers);
        Ok((Bytes::from(bytes), trailers))
    }

    /// Many calls at once on one connection, one of them larger than every window, are
    /// each answered with their own bytes and trailers.
    #[tokio::test]
    async fn calls_at_once_on_one_connection_are_each_answered() {
        let (addr, _stop, _served) = serve(Test::default(), Duration::from_secs(30)).await;
        let send = client(addr).await;
        let mut calls = Vec::new();
        for i in 0..50_usize {
            let mut send = send.clone();
            let size = if i == 7 { 3 << 20 } else { i * 100 };
            let message: Bytes = (0..size)
                .map(|b| (b % 251) as u8)
                .collect::<Vec<_>>()
                .into();
            calls.push(tokio::spawn(async move {
                let (answer, trailers) = call(&mut send, "/t/Echo", None, message.clone())
                    .await
                    .unwrap();
                assert_eq!(answer, message, "call {i}");
                assert_eq!(trailers["grpc-status"], "0", "call {i}");
            }));
        }
        for c in calls {
            c.await.unwrap();
        }
    }

    /// A call still unanswered at its deadline ends with `DEADLINE_EXCEEDED`, and its
    /// service's future is dropped.
    #[tokio::test]
    async fn a_call_past_its_deadline_ends_deadline_exceeded() {
        let routes = Test::default();
        let dropped = Arc::clone(&routes.dropped);
        let (addr, _stop, _served) = serve(routes, Duration::from_secs(30)).await;
        let mut send = client(addr).await;
        let (answer, trailers) = call(&mut send, "/t/Never", Some("150m"), Bytes::new())
            .await
            .unwrap();
        assert!(answer.is_empty());
        assert_eq!(trailers["grpc-status"], "4", "{trailers:?}");
        // gRPC percent-encodes the message.
        let message = trailers["grpc-message"]
            .to_str()
            .unwrap()
            .replace("%20", " ");
        assert!(message.contains("deadline of 150ms"), "{message}");
        assert_eq!(dropped.load(Ordering::SeqCst), 1);
        // The connection still serves.
        let (answer, _) = call(&mut send, "/t/Echo", Some("5S"), Bytes::from_static(b"ok"))
            .await
            .unwrap();
        assert_eq!(answer, "ok");
    }

    /// A call whose client resets its stream is dropped, and the connection goes on.
    #[tokio::test]
    async fn a_call_its_client_resets_is_dropped() {
        let routes = Test::default();
        let (dropped, dropped_now) = (Arc::clone(&routes.dropped), Arc::clone(&routes.dropped_now));
        let (addr, _stop, _served) = serve(routes, Duration::from_secs(30)).await;
        let mut send = client(addr).await.ready().await.unwrap();
        let (_answer, mut stream) = send.send_request(request("/t/Never", None), false).unwrap();
        stream.send_data(Bytes::from_static(b"x"), true).unwrap();
        stream.send_reset(h2::Reason::CANCEL);
        tokio::time::timeout(Duration::from_secs(10), dropped_now.notified())
            .await
            .expect("the reset call is dropped");
        assert_eq!(dropped.load(Ordering::SeqCst), 1);
        let (answer, _) = call(&mut send, "/t/Echo", None, Bytes::from_static(b"on"))
            .await
            .unwrap();
        assert_eq!(answer, "on");
    }

    /// On stop the call in flight still gets its answer, a new call is refused, and the
    /// connection closes once the call has answered.
    #[tokio::test]
    async fn a_stop_lets_the_calls_in_flight_finish_and_refuses_new_ones() {
        let routes = Test::default();
        let gate = Arc::clone(&routes.gate);
        let (addr, stop, served) = serve(routes, Duration::from_secs(30)).await;
        let mut send = client(addr).await;
        let mut in_flight_send = send.clone();
        let in_flight = tokio::spawn(async move {
            call(
                &mut in_flight_send,
                "/t/Gate",
                None,
                Bytes::from_static(b"kept"),
            )
            .await
        });
        // The gated call has reached its service once an echo sent after it is answered
        // (one connection's streams are started in order).
        call(&mut send, "/t/Echo", None, Bytes::new())
            .await
            .unwrap();
        stop.send(true).unwrap();
        let refused = loop {
            // GOAWAY reaches the client after the stop; calls before it are still served.
            match call(&mut send, "/t/Echo", None, Bytes::new()).await {
                Ok(_) => tokio::task::yield_now().await,
                Err(e) => break e,
            }
        };
        assert!(
            refused.is_go_away() || refused.reason() == Some(h2::Reason::REFUSED_STREAM),
            "{refused:?}"
        );
        assert!(!served.is_finished());
        gate.add_permits(1);
        let (answer, trailers) = in_flight.await.unwrap().unwrap();
        assert_eq!(answer, "kept");
        assert_eq!(trailers["grpc-status"], "0");
        tokio::time::timeout(Duration::from_secs(10), served)
            .await
            .expect("the connection closes once its last call answered")
            .unwrap();
    }

    /// One frame read off a raw connection: its type, flags and payload.
    async fn frame(io: &mut TcpStream) -> Option<(u8, u8, Vec<u8>)> {
        let mut head = [0_u8; 9];
        io.read_exact(&mut head).await.ok()?;
        let len = usize::from(head[0]) << 16 | usize::from(head[1]) << 8 | usize::from(head[2]);
        let mut payload = vec![0; len];
        io.read_exact(&mut payload).await.ok()?;
        Some((head[3], head[4], payload))
    }

    const PING: u8 = 6;

    /// A peer that answers the server's pings keeps its connection however long it is
    /// silent otherwise; once it stops answering, the server closes the connection.
    #[tokio::test]
    async fn a_peer_is_pinged_and_closed_once_it_stops_answering() {
        let (addr, _stop, served) = serve(Test::default(), Duration::from_millis(50)).await;
        let mut io = TcpStream::connect(addr).await.unwrap();
        io.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\x04\0\0\0\0\0")
            .await
            .unwrap();
        let mut answered = 0;
        while answered < 5 {
            let (kind, flags, payload) = frame(&mut io).await.expect("a frame");
            if kind == PING && flags & 1 == 0 {
                let mut ack = vec![0, 0, 8, PING, 1, 0, 0, 0, 0];
                ack.extend_from_slice(&payload);
                io.write_all(&ack).await.unwrap();
                answered += 1;
            }
        }
        // Five pings answered: the connection was kept through five intervals of silence.
        // Now the peer answers nothing, and the server closes the connection after its next
        // ping goes unanswered.
        let mut pings_unanswered = 0;
        while let Some((kind, flags, _)) = frame(&mut io).await {
            if kind == PING && flags & 1 == 0 {
                pings_unanswered += 1;
            }
        }
        assert_eq!(pings_unanswered, 1);
        tokio::time::timeout(Duration::from_secs(10), served)
            .await
            .unwrap()
            .unwrap();
    }
}
