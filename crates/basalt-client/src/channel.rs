//! A channel to one server: the native API's calls carried straight on one HTTP/2 connection.
//!
//! Every call of the native API is unary: one message out, one back. tonic's own channel is
//! built for streams, and puts two layers between a call and h2, each with a task of its
//! own: tower's buffer (a queue, a semaphore and a worker task the call is handed to) and
//! hyper's client dispatch (a task per request body, and one more hop for the answer). On two
//! cores shared with the server every hop is a wake-up of another task, and the client spent
//! as much CPU on a point read as the server did (`BENCHMARKS.md`). This channel does less:
//! the call's own task hands the request's head and its whole message to the connection
//! ([`crate::http2`]) at once, and waits for the whole answer, trailers included, before the
//! caller decodes it.
//!
//! The table calls (`rpc.rs`) hand the channel their framed message and header fields and
//! read the answer's decoded fields themselves ([`Channel::round_trip`]). The admin calls
//! keep tonic's generated client, which the channel serves as a tower service: their
//! headers and answers cross as `http` types.
//!
//! A channel holds one connection to its server, or a pool of them that takes the calls in
//! turn, as HBase's client does with `hbase.client.ipc.pool.size` (default one) and its
//! round-robin pool. The server serves each connection on one of its event loops, one per
//! core, so a pool lets one client's calls reach more of a server's cores; but each
//! connection then carries fewer calls per read and write on both sides, and on two cores
//! shared by client and server a pool of two made YCSB C slower (`BENCHMARKS.md`).
//!
//! Each connection is made by the first call given to it and shared by all of the channel's
//! clones. When it fails or the server closes it, the calls on it fail with `Unavailable`
//! (which the client retries) and the next call given to it makes a new one, as tonic's lazy
//! channel does. Each call also keeps its own deadline (the `grpc-timeout` its request
//! carries, the client's operation timeout): a server that accepts a call and never answers
//! fails the call with `DeadlineExceeded` instead of holding it.
//!
//! # Invariants
//! - A channel's calls go to its connections in turn (`Channel::next`); clones share both.
//! - `Shared::live` holds the connection calls are to use: one whose task has not ended, or
//!   one that ended so recently that its task has not yet cleared it (a call that takes it
//!   fails with `Unavailable`). It is cleared by the task of the connection it holds
//!   (matched by `id`), by a call that found that connection lost, or by the next call
//!   when the connection takes no more calls (the server is going away).
//! - At most one connection is being made at a time (`Shared::connecting`), so callers
//!   waiting together share the one that is made.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll};
use std::time::Duration;

use basalt_proto::deadline::grpc_timeout;
use basalt_proto::http2::hpack::Field;
use basalt_proto::unary::{Pieces, Whole, MESSAGE_HEADER};
use bytes::Bytes;
use http::header::{HeaderName, HeaderValue};
use http::uri::{Authority, PathAndQuery};
use http::{response, HeaderMap, Request, Response, StatusCode};
use http_body::Body as _;
use tokio::net::TcpStream;
use tonic::body::Body;
use tonic::codegen::Service;
use tonic::Status;

use crate::http2::{self, Failure};

/// How long making a connection may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// A channel to the server at one address; clones share its connections.
#[derive(Clone, Debug)]
pub(crate) struct Channel {
    /// One entry per connection of the pool, never empty.
    pool: Arc<[Arc<Shared>]>,
    /// The number of the next call, which picks its connection.
    next: Arc<AtomicUsize>,
}

#[derive(Debug)]
struct Shared {
    /// `host:port`, as the request URIs name it.
    authority: Authority,
    /// The largest answer taken, its gRPC framing included.
    max_answer: usize,
    /// The connection calls use (see the module's invariants). Lock order: a leaf, never
    /// held across an await.
    live: Mutex<Option<Live>>,
    /// Held while a connection is being made.
    connecting: tokio::sync::Mutex<()>,
}

#[derive(Clone, Debug)]
struct Live {
    connection: http2::Connection,
    /// Which connection this is, so that an ended connection's task clears only itself.
    id: u64,
}

/// Numbers connections, for `Live::id`.
static CONNECTIONS: AtomicU64 = AtomicU64::new(0);

fn unavailable(what: &str, authority: &Authority, e: impl std::fmt::Display) -> Status {
    Status::unavailable(format!("{what} {authority}: {e}"))
}

impl Channel {
    /// A channel to `addr` (`host:port`, optionally after `http://`) over `connections`
    /// connections (at least one), each made by the first call given to it. Answers larger
    /// than `max_message` bytes fail their call.
    ///
    /// # Errors
    /// `addr` is not a host and port.
    pub(crate) fn lazy(
        addr: &str,
        max_message: usize,
        connections: usize,
    ) -> basalt_model::Result<Channel> {
        let bare = addr.strip_prefix("http://").unwrap_or(addr);
        let authority: Authority = bare
            .parse()
            .map_err(|e| basalt_model::Error::illegal(format!("bad server address {addr}: {e}")))?;
        if authority.port_u16().is_none() {
            return Err(basalt_model::Error::illegal(format!(
                "bad server address {addr}: no port"
            )));
        }
        let max_answer = max_message.saturating_add(MESSAGE_HEADER);
        let pool = (0..connections.max(1))
            .map(|_| {
                Arc::new(Shared {
                    authority: authority.clone(),
                    max_answer,
                    live: Mutex::new(None),
                    connecting: tokio::sync::Mutex::new(()),
                })
            })
            .collect();
        Ok(Channel {
            pool,
            next: Arc::default(),
        })
    }

    /// The connection the next call goes to.
    fn pick(&self) -> &Arc<Shared> {
        if let [only] = &self.pool[..] {
            return only;
        }
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        &self.pool[n % self.pool.len()]
    }

    /// One unary call from the generated clients (the admin calls): the request out, the
    /// whole answer back.
    async fn unary(self, req: Request<Body>) -> Result<Response<Body>, Status> {
        let (parts, body) = req.into_parts();
        let message = whole_message(body).await?;
        let path = parts.uri.path_and_query().map_or("/", PathAndQuery::as_str);
        let fields: Vec<(&[u8], &[u8], bool)> = parts
            .headers
            .iter()
            .map(|(name, value)| {
                // A deadline changes call by call; the rest repeat on every call.
                let repeats = name != "grpc-timeout";
                (name.as_str().as_bytes(), value.as_bytes(), repeats)
            })
            .collect();
        let deadline = grpc_timeout(&parts.headers);
        let answer = self.round_trip(path, &fields, deadline, message).await?;
        let (head, body) = parts_of(answer)?;
        Ok(Response::from_parts(head, Body::new(body)))
    }

    /// Sends a request (its path, its header fields besides the method, scheme, path and
    /// authority, and its whole framed message) on the next connection, and reads the answer
    /// to its end, within `deadline`: the one its `grpc-timeout` field gives the server.
    pub(crate) async fn round_trip(
        &self,
        path: &str,
        fields: &[(&[u8], &[u8], bool)],
        deadline: Option<Duration>,
        message: Bytes,
    ) -> Result<http2::Answer, Status> {
        let shared = self.pick();
        let exchange = shared.exchange(path, fields, message);
        match deadline {
            Some(limit) => tokio::time::timeout(limit, exchange)
                .await
                .unwrap_or_else(|_| {
                    Err(Status::deadline_exceeded(format!(
                        "no answer from {} within {limit:?}",
                        shared.authority
                    )))
                }),
            None => exchange.await,
        }
    }
}

impl Shared {
    /// The connection to call on, made when there is none.
    async fn connection(self: &Arc<Self>) -> Result<Live, Status> {
        if let Some(live) = self.live() {
            return Ok(live);
        }
        let _gate = self.connecting.lock().await;
        if let Some(live) = self.live() {
            return Ok(live);
        }
        let live = tokio::time::timeout(CONNECT_TIMEOUT, self.connect())
            .await
            .map_err(|_| unavailable("connecting to", &self.authority, "timed out"))??;
        *self.lock() = Some(live.clone());
        Ok(live)
    }

    async fn exchange(
        self: &Arc<Self>,
        path: &str,
        fields: &[(&[u8], &[u8], bool)],
        message: Bytes,
    ) -> Result<http2::Answer, Status> {
        let live = self.connection().await?;
        let request = http2::Request {
            path: path.as_bytes(),
            authority: self.authority.as_str().as_bytes(),
            fields,
            message,
        };
        live.connection.call(request).await.map_err(|e| match e {
            Failure::Lost(why) => {
                // The connection is done with: the next call given to it makes a new one.
                self.forget(live.id);
                unavailable("calling", &self.authority, why)
            }
            Failure::Reset(reason) => unavailable(
                "calling",
                &self.authority,
                format!("the server reset the call ({reason:?})"),
            ),
            Failure::TooLarge => Status::resource_exhausted(format!(
                "an answer from {} is larger than {} bytes",
                self.authority, self.max_answer
            )),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Live>> {
        self.live
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The live connection, if it still takes calls; one that no longer does (it ended,
    /// or the server is going away) is forgotten, so that the caller makes a new one.
    fn live(&self) -> Option<Live> {
        let mut live = self.lock();
        if live.as_ref().is_some_and(|l| !l.connection.open_to_calls()) {
            *live = None;
        }
        live.clone()
    }

    /// Clears the live connection if it is still connection `id`.
    fn forget(&self, id: u64) {
        let mut live = self.lock();
        if live.as_ref().is_some_and(|l| l.id == id) {
            *live = None;
        }
    }

    /// Makes a connection (Nagle's algorithm off) and starts its task on the current
    /// runtime.
    async fn connect(self: &Arc<Self>) -> Result<Live, Status> {
        let failed = |e: &dyn std::fmt::Display| unavailable("connecting to", &self.authority, e);
        let host = self.authority.host();
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let port = self.authority.port_u16().unwrap_or_default();
        let stream = TcpStream::connect((host, port))
            .await
            .map_err(|e| failed(&e))?;
        stream.set_nodelay(true).map_err(|e| failed(&e))?;
        let id = CONNECTIONS.fetch_add(1, Ordering::Relaxed);
        let shared: Weak<Shared> = Arc::downgrade(self);
        let connection = http2::Connection::start(stream, self.max_answer, move || {
            if let Some(shared) = shared.upgrade() {
                shared.forget(id);
            }
        });
        Ok(Live { connection, id })
    }
}

impl Service<Request<Body>> for Channel {
    type Response = Response<Body>;
    type Error = Status;
    type Future = Pin<Box<dyn Future<Output = Result<Response<Body>, Status>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Status>> {
        // A call waits for its connection, and for room on it, inside its own future.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request<Body>) -> Self::Future {
        Box::pin(self.clone().unary(req))
    }
}

/// The request's whole body: the generated client encodes a unary call's message into one
/// frame, ready at once.
async fn whole_message(mut body: Body) -> Result<Bytes, Status> {
    let mut whole = Pieces::default();
    while let Some(frame) = std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await {
        if let Ok(data) = frame?.into_data() {
            whole.push(data);
        }
    }
    Ok(whole.finish())
}

/// An answer as the generated clients read it: its head's status and fields, and a body
/// of its data and trailers.
fn parts_of(answer: http2::Answer) -> Result<(response::Parts, Whole), Status> {
    let mut head = Response::new(()).into_parts().0;
    head.status = http_status(&answer.head)?;
    head.headers = header_map(&answer.head)?;
    let trailers = answer.trailers.as_deref().map(header_map).transpose()?;
    Ok((
        head,
        Whole {
            data: (!answer.data.is_empty()).then_some(answer.data),
            trailers,
        },
    ))
}

/// The HTTP status an answer's head names (200 when it names none).
pub(crate) fn http_status(head: &[Field]) -> Result<StatusCode, Status> {
    let Some(status) = head.iter().find(|f| f.name == ":status") else {
        return Ok(StatusCode::OK);
    };
    std::str::from_utf8(&status.value)
        .ok()
        .and_then(|s| s.parse().ok())
        .and_then(|code| StatusCode::from_u16(code).ok())
        .ok_or_else(|| Status::internal("an answer with a malformed :status"))
}

/// Header fields as a map, the pseudo-fields (`:status`) left out.
pub(crate) fn header_map(fields: &[Field]) -> Result<HeaderMap, Status> {
    let malformed = || Status::internal("an answer with a malformed header field");
    let mut headers = HeaderMap::with_capacity(fields.len());
    for field in fields.iter().filter(|f| !f.name.starts_with(b":")) {
        let name = HeaderName::from_bytes(&field.name).map_err(|_| malformed())?;
        let value = HeaderValue::from_maybe_shared(field.value.clone()).map_err(|_| malformed())?;
        headers.append(name, value);
    }
    Ok(headers)
}

#[cfg(test)]
mod tests {
    use bytes::BytesMut;
    use h2::RecvStream;
    use http::Uri;
    use http_body_util::{BodyExt, Full};
    use tokio::net::TcpListener;

    use super::*;

    /// What the test server does with each request: answer it, or hold it unanswered.
    #[derive(Clone, Copy)]
    enum Serve {
        /// Answers with the request's own bytes, then `grpc-status: 0`.
        Echo,
        /// Answers with this many bytes.
        Bytes(usize),
        /// Never answers.
        Hold,
        /// Answers, then closes the connection.
        EchoThenClose,
    }

    /// A real HTTP/2 server on a loopback port; counts the connections it accepted.
    async fn server(serve: Serve) -> (String, Arc<AtomicUsize>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let accepted = Arc::new(AtomicUsize::new(0));
        let count = Arc::clone(&accepted);
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                count.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(connection(socket, serve));
            }
        });
        (addr, accepted)
    }

    async fn connection(socket: TcpStream, serve: Serve) {
        let mut conn = h2::server::handshake(socket).await.unwrap();
        while let Some(Ok((req, respond))) = conn.accept().await {
            if matches!(serve, Serve::EchoThenClose) {
                answer(req, respond, serve).await;
                conn.graceful_shutdown();
            } else {
                // The connection is polled (by `accept`) while the request is answered:
                // h2 moves a stream's bytes only then.
                tokio::spawn(answer(req, respond, serve));
            }
        }
    }

    async fn answer(
        req: Request<RecvStream>,
        mut respond: h2::server::SendResponse<Bytes>,
        serve: Serve,
    ) {
        let mut body = req.into_body();
        let mut got = BytesMut::new();
        while let Some(data) = body.data().await {
            let data = data.unwrap();
            body.flow_control().release_capacity(data.len()).unwrap();
            got.extend_from_slice(&data);
        }
        let answer = match serve {
            Serve::Hold => return std::future::pending().await,
            Serve::Echo | Serve::EchoThenClose => got.freeze(),
            Serve::Bytes(n) => Bytes::from(vec![7u8; n]),
        };
        let mut stream = respond.send_response(Response::new(()), false).unwrap();
        stream.send_data(answer, false).unwrap();
        let mut trailers = HeaderMap::new();
        trailers.insert("grpc-status", "0".parse().unwrap());
        stream.send_trailers(trailers).unwrap();
    }

    fn request(message: Bytes, timeout: Option<&str>) -> Request<Body> {
        let mut req = Request::new(Body::new(Full::new(message)));
        *req.uri_mut() = Uri::from_static("/basalt.v1.Table/Get");
        if let Some(t) = timeout {
            req.headers_mut().insert("grpc-timeout", t.parse().unwrap());
        }
        req
    }

    async fn call(
        channel: &Channel,
        message: Bytes,
        timeout: Option<&str>,
    ) -> Result<(Bytes, HeaderMap), Status> {
        let answer = channel.clone().call(request(message, timeout)).await?;
        let collected = answer.into_body().collect().await?;
        let trailers = collected.trailers().cloned().unwrap_or_default();
        Ok((collected.to_bytes(), trailers))
    }

    #[tokio::test]
    async fn messages_larger_than_the_windows_cross_whole_both_ways() {
        let (addr, accepted) = server(Serve::Echo).await;
        let channel = Channel::lazy(&addr, 64 << 20, 1).unwrap();
        let message: Bytes = (0..(9u32 << 20)).map(|i| (i % 251) as u8).collect();
        for _ in 0..3 {
            let (back, trailers) = call(&channel, message.clone(), None).await.unwrap();
            assert!(back == message, "the answer differs from what was sent");
            assert_eq!(trailers.get("grpc-status").unwrap(), "0");
        }
        let (back, _) = call(&channel, Bytes::new(), None).await.unwrap();
        assert!(back.is_empty());
        assert_eq!(
            accepted.load(Ordering::SeqCst),
            1,
            "clones share one connection"
        );
    }

    #[tokio::test]
    async fn a_pool_gives_its_calls_to_each_of_its_connections_in_turn() {
        let (addr, accepted) = server(Serve::Echo).await;
        let channel = Channel::lazy(&addr, 1 << 20, 3).unwrap();
        for n in 1..=9 {
            let message = Bytes::from(format!("call {n}"));
            let (back, _) = call(&channel.clone(), message.clone(), None).await.unwrap();
            assert_eq!(back, message);
            // The first three calls each make their connection; the rest reuse them.
            assert_eq!(accepted.load(Ordering::SeqCst), n.min(3), "after call {n}");
        }
    }

    #[tokio::test]
    async fn a_call_the_server_never_answers_ends_at_its_deadline() {
        let (addr, _) = server(Serve::Hold).await;
        let channel = Channel::lazy(&addr, 1 << 20, 1).unwrap();
        let e = call(&channel, Bytes::from_static(b"x"), Some("200m"))
            .await
            .unwrap_err();
        assert_eq!(e.code(), tonic::Code::DeadlineExceeded, "{e}");
    }

    #[tokio::test]
    async fn an_answer_over_the_limit_fails_its_call() {
        let (addr, _) = server(Serve::Bytes(5_000)).await;
        let channel = Channel::lazy(&addr, 1_000, 1).unwrap();
        let e = call(&channel, Bytes::from_static(b"x"), None)
            .await
            .unwrap_err();
        assert_eq!(e.code(), tonic::Code::ResourceExhausted, "{e}");
        assert!(e.message().contains("larger than 1005 bytes"), "{e}");
        let channel = Channel::lazy(&addr, 5_000, 1).unwrap();
        let (back, _) = call(&channel, Bytes::from_static(b"x"), None)
            .await
            .unwrap();
        assert_eq!(back.len(), 5_000);
    }

    #[tokio::test]
    async fn a_connection_the_server_closed_is_made_again() {
        let (addr, accepted) = server(Serve::EchoThenClose).await;
        let channel = Channel::lazy(&addr, 1 << 20, 1).unwrap();
        for n in 1..=3 {
            // A call that takes the closed connection before its task noticed the close
            // fails as unavailable (the client retries such calls); the next makes a new one.
            let answered = match call(&channel, Bytes::from_static(b"hi"), None).await {
                Ok(answer) => answer,
                Err(e) => {
                    assert_eq!(e.code(), tonic::Code::Unavailable, "{e}");
                    call(&channel, Bytes::from_static(b"hi"), None)
                        .await
                        .unwrap()
                }
            };
            assert_eq!(answered.0, Bytes::from_static(b"hi"));
            assert_eq!(accepted.load(Ordering::SeqCst), n);
        }
    }

    #[tokio::test]
    async fn a_server_that_is_not_there_is_unavailable() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        drop(listener);
        let channel = Channel::lazy(&addr, 1 << 20, 1).unwrap();
        let e = call(&channel, Bytes::from_static(b"x"), None)
            .await
            .unwrap_err();
        assert_eq!(e.code(), tonic::Code::Unavailable, "{e}");
        assert!(e.message().contains(&addr), "{e}");
    }

    #[test]
    fn addresses_need_a_host_and_a_port() {
        assert!(Channel::lazy("127.0.0.1:16020", 1, 1).is_ok());
        assert!(Channel::lazy("http://[::1]:16020", 1, 2).is_ok());
        for bad in ["127.0.0.1", "no spaces:1", ""] {
            let e = Channel::lazy(bad, 1, 1).unwrap_err();
            assert!(e.to_string().contains("bad server address"), "{bad:?}: {e}");
        }
    }
}
