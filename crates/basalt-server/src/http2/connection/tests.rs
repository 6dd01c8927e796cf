//! The connection against a peer that writes raw frames: requests in, answers out within
//! the windows, and each fault of the peer's answered as RFC 9113 asks.

use std::task::{Context, Poll};

use futures_util::task::noop_waker_ref;
use http::{HeaderMap, HeaderValue, Response};
use http_body::Body as _;
use proptest::prelude::*;
use tokio::io::{AsyncRead, AsyncWrite, DuplexStream, ReadBuf};

use super::*;
use crate::http2::hpack::{put_field, Decoder};

const SETTINGS: Settings = Settings {
    max_concurrent_streams: 4,
    window: 1 << 16,
    max_header_list: 1024,
    max_error_resets: 3,
};

/// A connection and the raw peer across from it, driven by hand: each step writes the
/// peer's bytes, lets the connection read them and answer, and writes what it gathered.
struct Peer {
    conn: Connection<DuplexStream>,
    io: DuplexStream,
    accepted: Vec<Accepted>,
    hpack: Decoder,
    /// Bytes read of a frame not yet whole.
    partial: Vec<u8>,
}

impl Peer {
    /// A connection whose peer sent its preface and `settings`.
    fn open(settings: &[(u16, u32)]) -> Peer {
        Peer::open_over(settings, 8 << 20)
    }

    /// The same, over a socket that buffers `capacity` bytes each way.
    fn open_over(settings: &[(u16, u32)], capacity: usize) -> Peer {
        let (ours, theirs) = tokio::io::duplex(capacity);
        let mut peer = Peer {
            conn: Connection::new(ours, SETTINGS),
            io: theirs,
            accepted: Vec::new(),
            hpack: Decoder::new(4096),
            partial: Vec::new(),
        };
        let mut hello = f::PREFACE.to_vec();
        f::put_settings(&mut hello, settings);
        assert_eq!(peer.send(&hello), Ok(Reading::Progress));
        let first = peer.frames();
        assert_eq!(
            first[0].0.kind,
            f::SETTINGS,
            "the server's settings come first"
        );
        assert!(first
            .iter()
            .any(|(h, _)| h.kind == f::SETTINGS && h.has(f::ACK)));
        peer
    }

    /// Writes `bytes` as the peer, then lets the connection read, answer and write.
    fn send(&mut self, bytes: &[u8]) -> Result<Reading, String> {
        let mut cx = Context::from_waker(noop_waker_ref());
        let written = Pin::new(&mut self.io).poll_write(&mut cx, bytes);
        assert!(matches!(written, Poll::Ready(Ok(n)) if n == bytes.len()));
        let read = self.conn.read(&mut cx, &mut self.accepted);
        self.flush();
        read
    }

    fn flush(&mut self) {
        let mut cx = Context::from_waker(noop_waker_ref());
        self.conn.release();
        assert!(matches!(self.conn.poll_flush(&mut cx), Poll::Ready(Ok(_))));
    }

    /// Every whole frame the connection wrote since the last call.
    fn frames(&mut self) -> Vec<(Head, Vec<u8>)> {
        let mut cx = Context::from_waker(noop_waker_ref());
        let mut bytes = std::mem::take(&mut self.partial);
        loop {
            let mut buf = [0_u8; 64 << 10];
            let mut read = ReadBuf::new(&mut buf);
            match Pin::new(&mut self.io).poll_read(&mut cx, &mut read) {
                Poll::Ready(Ok(())) if !read.filled().is_empty() => {
                    bytes.extend_from_slice(read.filled());
                }
                _ => break,
            }
        }
        let mut frames = Vec::new();
        let mut at = 0;
        while at + f::HEAD_LEN <= bytes.len() {
            let head = Head::parse(&bytes[at..]);
            if at + f::HEAD_LEN + head.len > bytes.len() {
                break;
            }
            frames.push((
                head,
                bytes[at + f::HEAD_LEN..at + f::HEAD_LEN + head.len].to_vec(),
            ));
            at += f::HEAD_LEN + head.len;
        }
        self.partial = bytes.split_off(at);
        frames
    }

    /// The fields of a header block the connection wrote.
    fn fields(&mut self, block: &[u8]) -> Vec<(String, String)> {
        let mut fields = Vec::new();
        self.hpack
            .decode(&Bytes::copy_from_slice(block), |field| {
                fields.push((
                    String::from_utf8(field.name.to_vec()).unwrap(),
                    String::from_utf8(field.value.to_vec()).unwrap(),
                ));
            })
            .unwrap();
        fields
    }

    /// The error code of the GOAWAY (or RST_STREAM on `stream`) among `frames`.
    fn code(frames: &[(Head, Vec<u8>)], kind: u8, stream: u32) -> Option<u32> {
        frames
            .iter()
            .find(|(h, _)| h.kind == kind && h.stream == stream)
            .map(|(h, p)| {
                let at = if h.kind == f::GOAWAY { 4 } else { 0 };
                u32::from_be_bytes(p[at..at + 4].try_into().unwrap())
            })
    }
}

fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    f::put_head(&mut out, payload.len(), kind, flags, stream);
    out.extend_from_slice(payload);
    out
}

/// A gRPC request's header block for `path`, with `extra` fields after the usual ones.
fn request_block(path: &str, extra: &[(&str, &str)]) -> Vec<u8> {
    let mut block = Vec::new();
    for (name, value) in [
        (":method", "POST"),
        (":scheme", "http"),
        (":path", path),
        (":authority", "basalt"),
        ("content-type", "application/grpc"),
        ("te", "trailers"),
    ]
    .iter()
    .chain(extra)
    {
        put_field(&mut block, name.as_bytes(), value.as_bytes());
    }
    block
}

fn request(stream: u32, end_stream: bool) -> Vec<u8> {
    let flags = f::END_HEADERS | if end_stream { f::END_STREAM } else { 0 };
    frame(f::HEADERS, flags, stream, &request_block("/t/Echo", &[]))
}

/// The body's bytes as its call reads them, and whether it ended (not when it failed).
fn body(accepted: &mut Accepted) -> (Vec<u8>, bool) {
    let mut cx = Context::from_waker(noop_waker_ref());
    let mut bytes = Vec::new();
    let body = &mut accepted.body;
    loop {
        match Pin::new(&mut *body).poll_frame(&mut cx) {
            Poll::Ready(Some(Ok(frame))) => bytes.extend_from_slice(&frame.into_data().unwrap()),
            Poll::Ready(None) => return (bytes, true),
            Poll::Ready(Some(Err(_))) | Poll::Pending => return (bytes, false),
        }
    }
}

fn answer(data: &[u8]) -> Reply {
    let mut head = Response::new(()).into_parts().0;
    head.headers
        .insert("content-type", HeaderValue::from_static("application/grpc"));
    let mut trailers = HeaderMap::new();
    trailers.insert("grpc-status", HeaderValue::from_static("0"));
    Reply::Answer {
        head,
        data: VecDeque::from([Bytes::copy_from_slice(data)]),
        trailers: Some(trailers),
    }
}

/// A request's head and data reach its call whole; its answer leaves as a head, DATA frames
/// no larger than the frame size, and trailers that end the stream.
#[test]
fn a_request_reaches_its_call_and_its_answer_leaves_in_frames() {
    let mut peer = Peer::open(&[]);
    let mut bytes = request(1, false);
    bytes.extend(frame(f::DATA, 0, 1, b"hello "));
    // Padded: a pad length of 3, the data, three bytes of padding.
    bytes.extend(frame(
        f::DATA,
        f::PADDED | f::END_STREAM,
        1,
        b"\x03world\0\0\0",
    ));
    assert_eq!(peer.send(&bytes), Ok(Reading::Progress));
    assert_eq!(peer.accepted.len(), 1);
    let mut accepted = peer.accepted.pop().unwrap();
    assert_eq!(accepted.stream, 1);
    assert_eq!(accepted.head.uri.path(), "/t/Echo");
    assert_eq!(accepted.head.field(b"te").unwrap(), "trailers");
    assert_eq!(body(&mut accepted), (b"hello world".to_vec(), true));

    let data: Vec<u8> = (0..40_000_u32).map(|i| (i % 251) as u8).collect();
    peer.conn.answer(1, answer(&data));
    peer.flush();
    let frames = peer.frames();
    let kinds: Vec<(u8, u8, usize)> = frames
        .iter()
        .map(|(h, _)| (h.kind, h.flags, h.len))
        .collect();
    assert_eq!(
        kinds[1..4],
        [
            (f::DATA, 0, 16_384),
            (f::DATA, 0, 16_384),
            (f::DATA, 0, 7_232)
        ]
    );
    assert_eq!(
        peer.fields(&frames[0].1),
        [
            (":status".to_owned(), "200".to_owned()),
            ("content-type".to_owned(), "application/grpc".to_owned())
        ]
    );
    let sent: Vec<u8> = frames[1..4].iter().flat_map(|(_, p)| p.clone()).collect();
    assert_eq!(sent, data);
    assert_eq!(
        (frames[4].0.kind, frames[4].0.flags),
        (f::HEADERS, f::END_HEADERS | f::END_STREAM)
    );
    assert_eq!(
        peer.fields(&frames[4].1),
        [("grpc-status".to_owned(), "0".to_owned())]
    );
    assert!(
        peer.conn.streams.is_empty(),
        "a stream closed both ways is gone"
    );
}

/// A unary gRPC answer, written from its encoded fields, leaves as the same frames as the
/// same answer made of HTTP's head, data and trailers, large or small.
#[test]
fn a_unary_answer_leaves_as_its_http_answer_does() {
    for len in [5, 40_000] {
        let data: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
        let mut frames = Vec::new();
        for reply in [answer(&data), Reply::Unary(Bytes::from(data.clone()))] {
            let mut peer = Peer::open(&[]);
            assert_eq!(peer.send(&request(1, true)), Ok(Reading::Progress));
            peer.conn.answer(1, reply);
            peer.flush();
            let sent: Vec<_> = peer
                .frames()
                .into_iter()
                .map(|(h, payload)| {
                    let fields = (h.kind == f::HEADERS).then(|| peer.fields(&payload));
                    ((h.kind, h.flags, h.len, h.stream), fields, payload)
                })
                .collect();
            assert!(peer.conn.streams.is_empty(), "the stream closed");
            frames.push(sent);
        }
        assert_eq!(frames[0], frames[1], "{len} bytes");
    }
}

/// An answer larger than the peer's window waits for WINDOW_UPDATEs: each frame stays
/// within the stream's window and the connection's.
#[test]
fn answers_wait_for_the_peers_windows() {
    let mut peer = Peer::open(&[(f::SETTINGS_INITIAL_WINDOW_SIZE, 10)]);
    peer.send(&request(1, true)).unwrap();
    peer.conn
        .answer(1, answer(b"0123456789abcdefghijklmnopqrstuvwxy"));
    peer.flush();
    let sizes = |frames: &[(Head, Vec<u8>)]| -> Vec<usize> {
        frames
            .iter()
            .filter(|(h, _)| h.kind == f::DATA)
            .map(|(h, _)| h.len)
            .collect()
    };
    assert_eq!(sizes(&peer.frames()), [10]);
    let mut update = 20_u32.to_be_bytes().to_vec();
    peer.send(&frame(f::WINDOW_UPDATE, 0, 1, &update)).unwrap();
    assert_eq!(sizes(&peer.frames()), [20]);
    // A larger initial window opens every stream's by the difference.
    let mut settings = Vec::new();
    f::put_settings(&mut settings, &[(f::SETTINGS_INITIAL_WINDOW_SIZE, 15)]);
    peer.send(&settings).unwrap();
    let frames = peer.frames();
    assert_eq!(sizes(&frames), [5]);
    assert!(frames
        .iter()
        .any(|(h, _)| h.kind == f::HEADERS && h.has(f::END_STREAM)));
    // The connection's window bounds every stream: 65,535 less the 35 bytes sent.
    update = 1_u32.to_be_bytes().to_vec();
    peer.send(&frame(f::WINDOW_UPDATE, 0, 0, &update)).unwrap();
    assert_eq!(peer.conn.send_window, 65_535 - 35 + 1);
}

/// While the socket takes no more and the answers gathered fill the write buffer, the
/// connection reads nothing and says it is idle, so its task waits for the socket instead
/// of spinning; once the peer reads, the rest of the answer follows.
#[test]
fn a_full_socket_stops_the_reading_until_it_drains() {
    let mut peer = Peer::open_over(&[(f::SETTINGS_INITIAL_WINDOW_SIZE, 1 << 30)], 64 << 10);
    let mut cx = Context::from_waker(noop_waker_ref());
    let window = frame(f::WINDOW_UPDATE, 0, 0, &(1_u32 << 30).to_be_bytes());
    peer.send(&[window, request(1, true)].concat()).unwrap();
    let data = vec![9_u8; 1 << 20];
    peer.conn.answer(1, answer(&data));
    assert!(peer.conn.poll_flush(&mut cx).is_pending());
    assert!(peer.conn.write.len() >= WRITE_LIMIT);
    assert_eq!(
        peer.conn.read(&mut cx, &mut peer.accepted),
        Ok(Reading::Idle)
    );
    let mut received = 0;
    while received < data.len() {
        received += peer
            .frames()
            .iter()
            .filter(|(h, _)| h.kind == f::DATA)
            .map(|(h, _)| h.len)
            .sum::<usize>();
        let _ = peer.conn.poll_flush(&mut cx);
    }
    assert_eq!(received, data.len());
}

/// The bytes a call takes are given back: a WINDOW_UPDATE for the stream and for the
/// connection once half a window is owed, and none for bytes not yet taken.
#[test]
fn taken_bytes_are_given_back_in_window_updates() {
    let mut peer = Peer::open(&[]);
    peer.send(&request(1, false)).unwrap();
    let half = vec![7_u8; 1 << 15];
    peer.send(&frame(f::DATA, 0, 1, &half[..16_384])).unwrap();
    peer.send(&frame(f::DATA, 0, 1, &half[16_384..])).unwrap();
    let updates = |frames: &[(Head, Vec<u8>)]| -> Vec<(u32, u32)> {
        frames
            .iter()
            .filter(|(h, _)| h.kind == f::WINDOW_UPDATE)
            .map(|(h, p)| (h.stream, u32::from_be_bytes(p[..4].try_into().unwrap())))
            .collect()
    };
    assert_eq!(
        updates(&peer.frames()),
        [],
        "nothing is given back before the call takes it"
    );
    let mut accepted = peer.accepted.pop().unwrap();
    assert_eq!(body(&mut accepted), (half.clone(), false));
    peer.flush();
    assert_eq!(updates(&peer.frames()), [(1, 1 << 15), (0, 1 << 15)]);
    // Past the window the peer was given, the connection fails.
    let more = vec![0_u8; 16_384];
    for _ in 0..4 {
        peer.send(&frame(f::DATA, 0, 1, &more)).unwrap();
    }
    assert!(peer.send(&frame(f::DATA, 0, 1, &more)).is_err());
    assert_eq!(
        Peer::code(&peer.frames(), f::GOAWAY, 0),
        Some(Reason::FLOW_CONTROL_ERROR.0)
    );
}

/// A stream that sends past its own window is reset, though the connection's window had
/// room: bytes given back for one stream do not widen another's.
#[test]
fn a_stream_past_its_own_window_is_reset() {
    let mut peer = Peer::open(&[]);
    peer.send(&[request(1, false), request(3, false)].concat())
        .unwrap();
    // Stream 1's call takes 20,000 bytes: under half a window, so only the connection owes
    // them. Stream 3's 12,768 are given back when it is reset, and the connection's debt of
    // 32,768 is announced: its window is whole again, stream 1's is 45,536.
    peer.send(&frame(f::DATA, 0, 1, &[1; 16_384])).unwrap();
    peer.send(&frame(f::DATA, 0, 1, &[1; 3_616])).unwrap();
    let (taken, _) = body(&mut peer.accepted[0]);
    assert_eq!(taken.len(), 20_000);
    peer.send(&frame(f::DATA, 0, 3, &[3; 12_768])).unwrap();
    peer.send(&frame(f::RST_STREAM, 0, 3, &Reason::CANCEL.0.to_be_bytes()))
        .unwrap();
    assert_eq!(
        (peer.conn.recv_window, peer.conn.streams[0].recv_window),
        (65_536, 45_536)
    );
    peer.send(&frame(f::DATA, 0, 1, &[1; 16_384])).unwrap();
    peer.send(&frame(f::DATA, 0, 1, &[1; 16_384])).unwrap();
    peer.send(&frame(f::DATA, 0, 1, &[1; 12_769])).unwrap();
    assert_eq!(
        Peer::code(&peer.frames(), f::RST_STREAM, 1),
        Some(Reason::FLOW_CONTROL_ERROR.0)
    );
    assert!(peer.conn.streams.is_empty());
}

/// A stream the peer resets closes its call's body, and gives back what it held.
#[test]
fn a_reset_stream_closes_its_calls_body() {
    let mut peer = Peer::open(&[]);
    peer.send(&request(1, false)).unwrap();
    peer.send(&frame(f::DATA, 0, 1, b"unread")).unwrap();
    peer.send(&frame(f::RST_STREAM, 0, 1, &Reason::CANCEL.0.to_be_bytes()))
        .unwrap();
    let accepted = peer.accepted.pop().unwrap();
    let mut cx = Context::from_waker(noop_waker_ref());
    assert_eq!(
        accepted.body.0.poll_closed(&mut cx),
        Poll::Ready(Reason::CANCEL)
    );
    assert!(peer.conn.streams.is_empty());
    assert_eq!(peer.conn.unannounced, 6);
    // An answer to the reset stream is dropped.
    peer.conn.answer(1, answer(b"late"));
    peer.flush();
    assert!(peer.frames().iter().all(|(h, _)| h.stream != 1));
}

/// A stream's faults reset that stream, and the connection serves on; past the limit of
/// such resets, the connection ends.
#[test]
fn stream_faults_reset_the_stream_and_the_connection_serves_on() {
    let mut peer = Peer::open(&[]);
    let upper = frame(
        f::HEADERS,
        f::END_HEADERS | f::END_STREAM,
        1,
        &request_block("/t/Echo", &[("X-Upper", "1")]),
    );
    peer.send(&upper).unwrap();
    assert_eq!(
        Peer::code(&peer.frames(), f::RST_STREAM, 1),
        Some(Reason::PROTOCOL_ERROR.0)
    );
    peer.send(&request(3, true)).unwrap();
    peer.send(&frame(f::DATA, 0, 3, b"after the end")).unwrap();
    assert_eq!(
        Peer::code(&peer.frames(), f::RST_STREAM, 3),
        Some(Reason::STREAM_CLOSED.0)
    );
    // A header list over the limit is answered 431.
    let large = "v".repeat(1024);
    let block = request_block("/t/Echo", &[("x-large", &large)]);
    peer.send(&frame(
        f::HEADERS,
        f::END_HEADERS | f::END_STREAM,
        5,
        &block,
    ))
    .unwrap();
    let frames = peer.frames();
    assert_eq!(
        peer.fields(&frames[0].1),
        [(":status".to_owned(), "431".to_owned())]
    );
    // Streams past the limit at once are refused, and do not count as faults.
    for id in [7, 9, 11, 13, 15] {
        peer.send(&request(id, false)).unwrap();
    }
    assert_eq!(
        peer.accepted.len(),
        5,
        "streams 3, 7, 9, 11 and 13 were accepted"
    );
    assert_eq!(
        Peer::code(&peer.frames(), f::RST_STREAM, 15),
        Some(Reason::REFUSED_STREAM.0)
    );
    // Two faults so far; the fourth is past the limit of three.
    peer.send(&frame(f::WINDOW_UPDATE, 0, 7, &0_u32.to_be_bytes()))
        .unwrap();
    assert!(peer.send(&frame(f::PRIORITY, 0, 9, &[0; 4])).is_err());
    assert_eq!(
        Peer::code(&peer.frames(), f::GOAWAY, 0),
        Some(Reason::ENHANCE_YOUR_CALM.0)
    );
}

/// Faults RFC 9113 makes connection errors, each with the code it names.
fn connection_faults() -> Vec<(&'static str, Vec<u8>, Reason)> {
    let continued = frame(f::HEADERS, 0, 1, &request_block("/t/Echo", &[])[..4]);
    vec![
        (
            "a frame over the size",
            frame(f::DATA, 0, 1, &[0; 16_385]),
            Reason::FRAME_SIZE_ERROR,
        ),
        (
            "DATA on an idle stream",
            frame(f::DATA, 0, 5, b"x"),
            Reason::PROTOCOL_ERROR,
        ),
        (
            "DATA on stream 0",
            frame(f::DATA, 0, 0, b"x"),
            Reason::PROTOCOL_ERROR,
        ),
        ("an even stream", request(2, true), Reason::PROTOCOL_ERROR),
        (
            "PUSH_PROMISE",
            frame(f::PUSH_PROMISE, 0, 1, &[0; 4]),
            Reason::PROTOCOL_ERROR,
        ),
        (
            "a bad header block",
            frame(f::HEADERS, 0x4, 1, &[0xff]),
            Reason::COMPRESSION_ERROR,
        ),
        (
            "an index past the tables",
            frame(f::HEADERS, 0x4, 1, &[0xbe]),
            Reason::COMPRESSION_ERROR,
        ),
        (
            "CONTINUATION alone",
            frame(f::CONTINUATION, 0x4, 1, &[0x82]),
            Reason::PROTOCOL_ERROR,
        ),
        (
            "a block interrupted",
            [continued.clone(), frame(f::PING, 0, 0, &[0; 8])].concat(),
            Reason::PROTOCOL_ERROR,
        ),
        (
            "a short PING",
            frame(f::PING, 0, 0, &[0; 7]),
            Reason::FRAME_SIZE_ERROR,
        ),
        (
            "SETTINGS on a stream",
            frame(f::SETTINGS, 0, 1, &[]),
            Reason::PROTOCOL_ERROR,
        ),
        (
            "SETTINGS of 5 bytes",
            frame(f::SETTINGS, 0, 0, &[0; 5]),
            Reason::FRAME_SIZE_ERROR,
        ),
        (
            "a frame size past the largest",
            frame(f::SETTINGS, 0, 0, &[0, 5, 1, 0, 0, 0]),
            Reason::PROTOCOL_ERROR,
        ),
        (
            "a window past 2^31-1",
            frame(f::WINDOW_UPDATE, 0, 0, &0x7fff_ffff_u32.to_be_bytes()),
            Reason::FLOW_CONTROL_ERROR,
        ),
        (
            "RST_STREAM on an idle stream",
            frame(f::RST_STREAM, 0, 9, &[0; 4]),
            Reason::PROTOCOL_ERROR,
        ),
    ]
}

/// Each fault RFC 9113 makes a connection error ends the connection with a GOAWAY of the
/// code it names.
#[test]
fn connection_faults_end_it_with_their_codes() {
    for (what, bytes, reason) in connection_faults() {
        let mut peer = Peer::open(&[]);
        let outcome = peer.send(&bytes);
        assert!(outcome.is_err(), "{what}: {outcome:?}");
        assert_eq!(
            Peer::code(&peer.frames(), f::GOAWAY, 0),
            Some(reason.0),
            "{what}"
        );
    }
}

/// A header block continued without end is cut off, and a peer that does not speak HTTP/2,
/// or skips its SETTINGS, is closed.
#[test]
fn endless_header_blocks_and_strangers_are_cut_off() {
    let continued = frame(f::HEADERS, 0, 1, &request_block("/t/Echo", &[])[..4]);
    let mut peer = Peer::open(&[]);
    peer.send(&continued).unwrap();
    let piece = vec![0x82; 1000];
    let outcome =
        (0..10).try_for_each(|_| peer.send(&frame(f::CONTINUATION, 0, 1, &piece)).map(drop));
    assert!(outcome
        .unwrap_err()
        .contains("header block of more than 4096 bytes"));
    for opening in [
        &b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"[..],
        &[f::PREFACE, &frame(f::PING, 0, 0, &[0; 8])].concat(),
    ] {
        let (ours, mut theirs) = tokio::io::duplex(1 << 16);
        let mut conn = Connection::new(ours, SETTINGS);
        let mut cx = Context::from_waker(noop_waker_ref());
        let _ = Pin::new(&mut theirs).poll_write(&mut cx, opening);
        assert!(conn.read(&mut cx, &mut Vec::new()).is_err());
    }
}

/// A graceful GOAWAY serves the streams the peer opened before it read it, refuses later
/// ones, and ends once the last stream is answered.
#[test]
fn going_away_serves_what_came_before_and_refuses_what_came_after() {
    let mut peer = Peer::open(&[]);
    peer.send(&request(1, true)).unwrap();
    peer.conn.go_away();
    peer.flush();
    let frames = peer.frames();
    let grace = frames
        .iter()
        .find(|(h, _)| h.kind == f::PING)
        .expect("a PING")
        .1
        .clone();
    assert_eq!(&frames[0].1[..4], &0x7fff_ffff_u32.to_be_bytes());
    // A stream sent before the peer read the GOAWAY is served.
    peer.send(&request(3, true)).unwrap();
    assert_eq!(peer.accepted.len(), 2);
    peer.send(&frame(f::PING, f::ACK, 0, &grace)).unwrap();
    let last = peer
        .frames()
        .into_iter()
        .find(|(h, _)| h.kind == f::GOAWAY)
        .expect("the final GOAWAY");
    assert_eq!(&last.1[..4], &3_u32.to_be_bytes());
    peer.send(&request(5, true)).unwrap();
    assert_eq!(
        Peer::code(&peer.frames(), f::RST_STREAM, 5),
        Some(Reason::REFUSED_STREAM.0)
    );
    assert!(!peer.conn.is_finished());
    peer.conn.answer(1, answer(b"one"));
    peer.conn.answer(3, answer(b"three"));
    assert!(peer.conn.is_finished());
}

/// A frame of the peer's, made of parts chosen at random.
fn any_frame() -> impl Strategy<Value = Vec<u8>> {
    (
        0_u8..11,
        any::<u8>(),
        0_u32..8,
        prop::collection::vec(any::<u8>(), 0..64),
    )
        .prop_map(|(kind, flags, stream, payload)| frame(kind, flags, stream, &payload))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Frames at random, after requests that opened streams, never panic the connection:
    /// each step reads on or ends it with an error, and after an error nothing is read.
    #[test]
    fn frames_at_random_never_panic(frames in prop::collection::vec(any_frame(), 1..24)) {
        let mut peer = Peer::open(&[]);
        peer.send(&[request(1, false), request(3, true)].concat()).unwrap();
        for bytes in frames {
            if peer.send(&bytes).is_err() {
                let frames = peer.frames();
                prop_assert!(frames.iter().any(|(h, _)| h.kind == f::GOAWAY));
                break;
            }
            peer.flush();
            for mut accepted in peer.accepted.drain(..) {
                let _ = body(&mut accepted);
            }
        }
    }
}
