//! The transport of one connection's calls, against h2's client and raw frames.

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
    /// `/t/Slow` and `/t/Large` calls begun.
    begun: Arc<AtomicUsize>,
}

impl Default for Test {
    fn default() -> Test {
        Test {
            gate: Arc::new(Semaphore::new(0)),
            dropped: Arc::default(),
            dropped_now: Arc::default(),
            begun: Arc::default(),
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
    fn call(&mut self, head: Arc<RequestHead>, body: Body) -> Answer {
        let request = Arc::unwrap_or_clone(head).into_http().map(|()| body);
        let path = request.uri().path().to_owned();
        let gate = Arc::clone(&self.gate);
        let begun = Arc::clone(&self.begun);
        let guard = CountsDrop {
            answered: false,
            dropped: Arc::clone(&self.dropped),
            dropped_now: Arc::clone(&self.dropped_now),
        };
        Box::pin(async move {
            let mut guard = guard;
            let mut message = request.into_body().collect().await.unwrap().to_bytes();
            match path.as_str() {
                "/t/Echo" => {}
                "/t/Gate" => gate.acquire().await.unwrap().forget(),
                "/t/Slow" => {
                    // A call that keeps the loop busy, as a long scan does.
                    begun.fetch_add(1, Ordering::SeqCst);
                    std::thread::sleep(Duration::from_millis(2));
                }
                "/t/Busy" => {
                    // A call as long as a point read on a slow host: the loop busy (not
                    // asleep) for 20 µs.
                    let start = std::time::Instant::now();
                    while start.elapsed() < Duration::from_micros(20) {
                        std::hint::spin_loop();
                    }
                }
                "/t/Large" => {
                    // A quick call with a large answer, as a scan's rows are.
                    begun.fetch_add(1, Ordering::SeqCst);
                    message = Bytes::from(vec![b'r'; 17 << 10]);
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

/// Each write's bytes, and how many `/t/Slow` and `/t/Large` calls had begun when it was
/// made.
type Writes = Arc<std::sync::Mutex<Vec<(Vec<u8>, usize)>>>;

/// A socket that notes its writes.
struct Recorded {
    io: TcpStream,
    begun: Arc<AtomicUsize>,
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
        let begun = self.begun.load(Ordering::SeqCst);
        self.writes
            .lock()
            .unwrap()
            .push((buf[..written].to_vec(), begun));
        Poll::Ready(Ok(written))
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

/// A server of `routes` on a loopback port whose writes are noted in `writes`; sends
/// `paths`' requests (streams 1, 3, 5, ...) in one write, so the server reads them in one
/// pass, and reads until each has answered. Gives each answer's stream, write and the
/// `/t/Slow` and `/t/Large` calls begun by that write, in the order written.
async fn answered_in_writes(routes: Test, paths: &[&str]) -> Vec<(u32, usize, usize)> {
    use crate::http2::frame as f;
    let begun = Arc::clone(&routes.begun);
    let writes: Writes = Arc::default();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (_stop, stopped) = watch::channel(false);
    let recorded = Arc::clone(&writes);
    tokio::spawn(async move {
        let (io, _) = listener.accept().await.unwrap();
        let io = Recorded {
            io,
            begun,
            writes: recorded,
        };
        serve_connection(io, routes, Duration::from_secs(30), stopped).await;
    });
    let mut bytes = f::PREFACE.to_vec();
    f::put_settings(&mut bytes, &[]);
    for (stream, path) in (1..).step_by(2).zip(paths) {
        let mut block = Vec::new();
        for (name, value) in [(":method", "POST"), (":scheme", "http"), (":path", path)] {
            crate::http2::hpack::put_field(&mut block, name.as_bytes(), value.as_bytes());
        }
        f::put_headers(&mut bytes, stream, &block, true, f::DEFAULT_MAX_FRAME);
    }
    let mut io = TcpStream::connect(addr).await.unwrap();
    io.write_all(&bytes).await.unwrap();
    let mut ended = 0;
    while ended < paths.len() {
        let (kind, flags, _) = frame(&mut io).await.expect("a frame");
        if kind == f::HEADERS && flags & f::END_STREAM != 0 {
            ended += 1;
        }
    }
    // The trailers end each answer: find the write that carried each stream's.
    let writes = writes.lock().unwrap();
    let mut answers = Vec::new();
    for (n, (write, begun)) in writes.iter().enumerate() {
        let mut at = 0;
        while at + f::HEAD_LEN <= write.len() {
            let head = f::Head::parse(&write[at..]);
            if head.kind == f::HEADERS && head.has(f::END_STREAM) {
                answers.push((head.stream, n, *begun));
            }
            at += f::HEAD_LEN + head.len;
        }
    }
    answers
}

/// Two slow calls read in one pass: the first one's answer is written before the second
/// begins, not held until the pass ends.
#[tokio::test]
async fn a_slow_calls_answer_leaves_before_the_next_call_runs() {
    let answers = answered_in_writes(Test::default(), &["/t/Slow", "/t/Slow"]).await;
    let begun_at_answer: Vec<(u32, usize)> = answers.iter().map(|a| (a.0, a.2)).collect();
    assert_eq!(begun_at_answer, [(1, 1), (3, 2)]);
}

/// Quick calls read in one pass leave at most four answers a write, so the client works on
/// the first while the server makes the rest.
#[tokio::test]
async fn quick_answers_leave_four_at_a_time() {
    let answers = answered_in_writes(Test::default(), &["/t/Echo"; 9]).await;
    let streams: Vec<u32> = answers.iter().map(|a| a.0).collect();
    assert_eq!(streams, [1, 3, 5, 7, 9, 11, 13, 15, 17]);
    for (i, a) in answers.iter().enumerate() {
        let in_same_write = answers.iter().filter(|b| b.1 == a.1).count();
        assert!(
            in_same_write <= 4,
            "answer {i} left with {in_same_write}: {answers:?}"
        );
    }
}

/// Calls of 20 µs leave four answers a write: the time answers wait for the calls after
/// them is longer than four point reads take on a slow host (a limit of 60 µs wrote these
/// three at a time).
#[tokio::test]
async fn answers_of_calls_as_long_as_point_reads_leave_four_at_a_time() {
    let answers = answered_in_writes(Test::default(), &["/t/Busy"; 13]).await;
    assert_eq!(answers.len(), 13);
    // A call preempted while it runs lets its write go early, so only one of the three
    // writes of four is asked for.
    let in_writes_of_four = answers
        .iter()
        .filter(|a| answers.iter().filter(|b| b.1 == a.1).count() == 4)
        .count();
    assert!(in_writes_of_four >= 4, "no write of four: {answers:?}");
}

/// Quick calls with large answers: each one's answer is written before the next call
/// begins, so the client decodes one while the server makes the next.
#[tokio::test]
async fn a_large_answer_leaves_before_the_next_call_runs() {
    let answers = answered_in_writes(Test::default(), &["/t/Large"; 3]).await;
    let begun_at_answer: Vec<(u32, usize)> = answers.iter().map(|a| (a.0, a.2)).collect();
    assert_eq!(begun_at_answer, [(1, 1), (3, 2), (5, 3)]);
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
