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
//! together leave in one write, unless making them takes long (scans of many rows): then
//! each leaves once it is made, so the client works on it while the next call runs.
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

use std::collections::VecDeque;
use std::convert::Infallible;
use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use basalt_proto::deadline::grpc_timeout_value;
use futures_util::stream::{FuturesUnordered, StreamExt};
use http::Response;
use http_body::Body as _;
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
use crate::http2::connection::{Accepted, Connection, Reading, Reply, Settings};
use crate::http2::frame::Reason;
use crate::http2::request::RequestHead;
use crate::http2::stream::Recv;
use basalt_proto::pb::admin_server::AdminServer;
use basalt_proto::pb::region_server_admin_server::RegionServerAdminServer;

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
/// How long answers wait for the calls after them before they are written anyway. A pass
/// writes the answers of the calls it ran together, in one write; when those calls are slow
/// (scans of many rows), the client would sit idle until the last of them is done. Even
/// point reads are slow enough: eight of them read together take the loop about 100 µs,
/// and written at once they leave client and server taking turns, each idle while the
/// other works. Written every 25 µs (every two or three reads), the client works on the
/// first answers while the server runs the rest. Sooner costs more writes than it saves
/// (BENCHMARKS.md has the figures for 10, 15, 25, 50 and 100 µs).
const FLUSH_AFTER: Duration = Duration::from_micros(25);
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
    fn call(&mut self, head: RequestHead, body: Body) -> Answer;
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
    fn call(&mut self, head: RequestHead, body: Body) -> Answer {
        // The generated services are always ready (`poll_ready` answers at once), so a call
        // goes straight to them.
        let path = head.uri.path();
        let service = path.strip_prefix('/').and_then(|p| p.split_once('/'));
        match service.map(|(name, _)| name) {
            Some(TableCalls::SERVICE) => self.table.call(&head, body),
            Some(name) if name == Budgeted::<AdminServer<Services>>::NAME => {
                responded(self.admin.call(head.into_http().map(|()| body)))
            }
            Some(name) if name == RegionServerAdminServer::<RegionServerAdminService>::NAME => {
                match &mut self.region_server_admin {
                    Some(service) => responded(service.call(head.into_http().map(|()| body))),
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
    /// A pass reads every request the socket holds before it polls the calls, so the answers
    /// of the calls read together are written together, in one write; answers that waited
    /// [`FLUSH_AFTER`] for the calls after them are written at once.
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
            while let Poll::Ready(Some((stream, reply))) = self.calls.poll_next_unpin(cx) {
                if let Some(reply) = reply {
                    self.conn.answer(stream, reply);
                    // Answers that took long to make leave at once, so the client works on
                    // them while the next calls run.
                    let now = std::time::Instant::now();
                    if now - since_write >= FLUSH_AFTER {
                        if let Poll::Ready(Err(e)) = self.conn.poll_flush(cx) {
                            return Poll::Ready(Err(e));
                        }
                        since_write = now;
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

/// A call: its service's answer awaited and read whole; `None` when its client reset the
/// stream first.
type Call = Pin<Box<dyn Future<Output = (u32, Option<Reply>)> + Send>>;

/// Starts the call `accepted` names: its service gets a body that reads the request's
/// stream as its bytes arrive, and the call's future yields what the service answers.
fn start<R: Route>(routes: &mut R, accepted: Accepted) -> Call {
    let Accepted { stream, head, body } = accepted;
    let recv = Arc::clone(&body.0);
    let deadline = head
        .field(b"grpc-timeout")
        .and_then(|value| grpc_timeout_value(value))
        .map(|limit| (Instant::now() + limit, limit));
    let mut answer = routes.call(head, Body::new(body));
    Box::pin(async move {
        let reply = match answered(&mut answer, &recv, deadline).await {
            Some(Answered::Unary(message)) => Some(Reply::Unary(message)),
            Some(Answered::Response(response)) => {
                drop(answer);
                Some(read_whole(response).await)
            }
            None => None,
        };
        (stream, reply)
    })
}

/// The call's answer, or `DEADLINE_EXCEEDED` once its deadline passed; `None` when its client
/// reset its stream first.
async fn answered(
    answer: &mut Answer,
    recv: &Recv,
    deadline: Option<(Instant, Duration)>,
) -> Option<Answered> {
    let mut timer: Option<Pin<Box<Sleep>>> = None;
    poll_fn(|cx| {
        if let Poll::Ready(Ok(response)) = answer.as_mut().poll(cx) {
            return Poll::Ready(Some(response));
        }
        // The call waits: a timer is set only now, so a call answered at once costs none.
        if recv.poll_closed(cx).is_ready() {
            return Poll::Ready(None);
        }
        if let Some((at, limit)) = deadline {
            let timer = timer.get_or_insert_with(|| Box::pin(tokio::time::sleep_until(at)));
            if timer.as_mut().poll(cx).is_ready() {
                let status = Status::deadline_exceeded(format!(
                    "the call was not answered within its deadline of {limit:?}"
                ));
                return Poll::Ready(Some(status.into_http().into()));
            }
        }
        Poll::Pending
    })
    .await
}

/// An answer read whole: its head, its data and its trailers. A unary answer is one message,
/// already in memory; one whose body fails after its head ends in a reset, as hyper ends it.
async fn read_whole(response: Response<Body>) -> Reply {
    let (head, mut body) = response.into_parts();
    let mut data = VecDeque::new();
    let mut trailers = None;
    while let Some(frame) = poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await {
        match frame {
            Ok(frame) => match frame.into_data() {
                Ok(bytes) if bytes.is_empty() => {}
                Ok(bytes) => data.push_back(bytes),
                Err(frame) => trailers = frame.into_trailers().ok(),
            },
            Err(status) => {
                tracing::debug!(%status, "a native API answer failed while it was sent");
                return Reply::Reset(Reason::INTERNAL_ERROR);
            }
        }
    }
    Reply::Answer {
        head,
        data,
        trailers,
    }
}

/// The connection's pings: one every `every`, and the connection is given up when the peer
/// has not answered one by the time the next is due.
struct Keepalive {
    every: Duration,
    timer: Pin<Box<Sleep>>,
    /// The payload of the ping awaiting its answer.
    awaiting: Option<[u8; 8]>,
    sent: u64,
}

impl Keepalive {
    fn new(every: Duration) -> Keepalive {
        Keepalive {
            every,
            timer: Box::pin(tokio::time::sleep(every)),
            awaiting: None,
            sent: 0,
        }
    }

    /// Notes the peer's answer, and sends a ping when one is due.
    ///
    /// # Errors
    /// The peer did not answer the last ping in time.
    fn poll<T>(&mut self, cx: &mut Context<'_>, conn: &mut Connection<T>) -> Result<(), String>
    where
        T: AsyncRead + AsyncWrite + Unpin,
    {
        if let Some(pong) = conn.take_pong() {
            if self.awaiting == Some(pong) {
                self.awaiting = None;
                self.timer.as_mut().reset(Instant::now() + self.every);
            }
        }
        while self.timer.as_mut().poll(cx).is_ready() {
            if self.awaiting.is_some() {
                return Err(format!("the peer answered no ping within {:?}", self.every));
            }
            self.sent += 1;
            let payload = self.sent.to_be_bytes();
            conn.ping(payload);
            self.awaiting = Some(payload);
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

    use bytes::Bytes;
    use http::{HeaderMap, Request};
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
        /// `/t/Slow` calls begun.
        slow_begun: Arc<AtomicUsize>,
    }

    impl Default for Test {
        fn default() -> Test {
            Test {
                gate: Arc::new(Semaphore::new(0)),
                dropped: Arc::default(),
                dropped_now: Arc::default(),
                slow_begun: Arc::default(),
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
        fn call(&mut self, head: RequestHead, body: Body) -> Answer {
            let request = head.into_http().map(|()| body);
            let path = request.uri().path().to_owned();
            let gate = Arc::clone(&self.gate);
            let slow_begun = Arc::clone(&self.slow_begun);
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
                    "/t/Slow" => {
                        // A call that keeps the loop busy, as a long scan does.
                        slow_begun.fetch_add(1, Ordering::SeqCst);
                        std::thread::sleep(Duration::from_millis(2));
                    }
                    _ => std::future::pending().await,
                }
                guard.answered = true;
                let mut trailers = HeaderMap::new();
                trailers.insert("grpc-status", "0".parse().unwrap());
                let body = http_body_util::Full::new(message)
                    .map_err(|never: Infallible| -> Status { match never {} })
                    .with_trailers(std::future::ready(Some(Ok::<_, Status>(trailers))));
                Ok(Response::new(Body::new(body)).into())
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

    /// Each write's bytes, and how many `/t/Slow` calls had begun when it was made.
    type Writes = Arc<std::sync::Mutex<Vec<(Vec<u8>, usize)>>>;

    /// A socket that notes its writes.
    struct Recorded {
        io: TcpStream,
        slow_begun: Arc<AtomicUsize>,
        writes: Writes,
    }

    impl AsyncRead for Recorded {
        fn poll_read(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            buf: &mut tokio::io::ReadBuf<'_>,
        ) -> Poll<std::io::Result<()>> {
            Pin::new(&mut self.io).poll_read(cx, buf)
        }
    }

    impl AsyncWrite for Recorded {
        fn poll_write(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            buf: &[u8],
        ) -> Poll<std::io::Result<usize>> {
            let written = std::task::ready!(Pin::new(&mut self.io).poll_write(cx, buf))?;
            let begun = self.slow_begun.load(Ordering::SeqCst);
            self.writes
                .lock()
                .unwrap()
                .push((buf[..written].to_vec(), begun));
            Poll::Ready(Ok(written))
        }

        fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
            Pin::new(&mut self.io).poll_flush(cx)
        }

        fn poll_shutdown(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
        ) -> Poll<std::io::Result<()>> {
            Pin::new(&mut self.io).poll_shutdown(cx)
        }
    }

    /// Two slow calls read in one pass: the first one's answer is written before the second
    /// begins, not held until the pass ends.
    #[tokio::test]
    async fn a_slow_calls_answer_leaves_before_the_next_call_runs() {
        use crate::http2::frame as f;
        let routes = Test::default();
        let slow_begun = Arc::clone(&routes.slow_begun);
        let writes: Writes = Arc::default();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (_stop, stopped) = watch::channel(false);
        let recorded = Arc::clone(&writes);
        tokio::spawn(async move {
            let (io, _) = listener.accept().await.unwrap();
            let io = Recorded {
                io,
                slow_begun,
                writes: recorded,
            };
            serve_connection(io, routes, Duration::from_secs(30), stopped).await;
        });
        // Both requests in one write, so the server reads them in one pass.
        let mut bytes = f::PREFACE.to_vec();
        f::put_settings(&mut bytes, &[]);
        for stream in [1, 3] {
            let mut block = Vec::new();
            for (name, value) in [
                (":method", "POST"),
                (":scheme", "http"),
                (":path", "/t/Slow"),
            ] {
                crate::http2::hpack::put_field(&mut block, name.as_bytes(), value.as_bytes());
            }
            f::put_headers(&mut bytes, stream, &block, true, f::DEFAULT_MAX_FRAME);
        }
        let mut io = TcpStream::connect(addr).await.unwrap();
        io.write_all(&bytes).await.unwrap();
        let mut ended = 0;
        while ended < 2 {
            let (kind, flags, _) = frame(&mut io).await.expect("a frame");
            if kind == f::HEADERS && flags & f::END_STREAM != 0 {
                ended += 1;
            }
        }
        // Which write carried each stream's trailers, and how many slow calls had begun by
        // then.
        let writes = writes.lock().unwrap();
        let mut begun_at_answer = Vec::new();
        for (write, begun) in writes.iter() {
            let mut at = 0;
            while at + f::HEAD_LEN <= write.len() {
                let head = f::Head::parse(&write[at..]);
                if head.kind == f::HEADERS && head.has(f::END_STREAM) {
                    begun_at_answer.push((head.stream, *begun));
                }
                at += f::HEAD_LEN + head.len;
            }
        }
        assert_eq!(begun_at_answer, [(1, 1), (3, 2)]);
    }

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
