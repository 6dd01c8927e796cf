//! The connection's state driven frame by frame, as a server would answer it: what it writes
//! is parsed back and checked against RFC 9113, and what it reads reaches the calls.

use std::task::{Context, Poll, Waker};

use basalt_proto::http2::frame::{self as f, Head, Reason};
use basalt_proto::http2::hpack::{self, Field};
use bytes::Bytes;

use super::state::{Answer, ConnectionError, Failure, Request, State, SMALL_ANSWERS};

/// A frame the state wrote.
#[derive(Debug)]
struct Written {
    head: Head,
    payload: Vec<u8>,
}

/// Takes and parses what the state queued, the preface left out.
fn written(state: &mut State) -> Vec<Written> {
    let out = std::mem::take(&mut state.out);
    let mut at = if out.starts_with(f::PREFACE) {
        f::PREFACE.len()
    } else {
        0
    };
    let mut frames = Vec::new();
    while at < out.len() {
        let head = Head::parse(&out[at..]);
        let payload = out[at + f::HEAD_LEN..at + f::HEAD_LEN + head.len].to_vec();
        at += f::HEAD_LEN + head.len;
        frames.push(Written { head, payload });
    }
    frames
}

fn cx() -> Context<'static> {
    Context::from_waker(Waker::noop())
}

fn open(state: &mut State, message: &[u8]) -> Result<u32, Failure> {
    let fields: [(&[u8], &[u8], bool); 3] = [
        (b"content-type", b"application/grpc", true),
        (b"te", b"trailers", true),
        (b"grpc-timeout", b"30000m", false),
    ];
    let mut request = Request {
        path: b"/basalt.v1.Table/Get",
        authority: b"db-1.example:16020",
        fields: &fields,
        message: Bytes::copy_from_slice(message),
    };
    match state.poll_open(&mut cx(), &mut request) {
        Poll::Ready(opened) => opened,
        Poll::Pending => Err(Failure::Lost("waiting for a stream".into())),
    }
}

fn answer(state: &mut State, id: u32) -> Option<Result<Answer, Failure>> {
    match state.poll_answer(&mut cx(), id) {
        Poll::Ready(a) => Some(a),
        Poll::Pending => None,
    }
}

fn frame(
    state: &mut State,
    kind: u8,
    flags: u8,
    stream: u32,
    payload: &[u8],
) -> Result<(), ConnectionError> {
    let head = Head {
        len: payload.len(),
        kind,
        flags,
        stream,
    };
    state.frame(head, Bytes::copy_from_slice(payload))
}

fn field(name: &'static str, value: &'static str) -> Field {
    Field {
        name: Bytes::from_static(name.as_bytes()),
        value: Bytes::from_static(value.as_bytes()),
    }
}

fn settings(state: &mut State, values: &[(u16, u32)]) -> Result<(), ConnectionError> {
    let mut payload = Vec::new();
    for &(id, value) in values {
        payload.extend_from_slice(&id.to_be_bytes());
        payload.extend_from_slice(&value.to_be_bytes());
    }
    frame(state, f::SETTINGS, 0, 0, &payload)
}

/// The DATA bytes written for `stream`, and whether the last of them ended it.
fn data_of(frames: &[Written], stream: u32) -> (usize, bool) {
    let data: Vec<&Written> = frames
        .iter()
        .filter(|w| w.head.kind == f::DATA && w.head.stream == stream)
        .collect();
    let ended = data.last().is_some_and(|w| w.head.has(f::END_STREAM));
    (data.iter().map(|w| w.payload.len()).sum(), ended)
}

/// A connection opens with its settings (push off, its stream window) and its connection
/// window; a call is a HEADERS frame whose block a server decodes to the request's fields,
/// then its message in DATA ending the stream; the answer's head, data and trailers reach
/// the call whole.
#[test]
fn a_call_is_written_as_rfc_9113_asks_and_its_answer_read_whole() {
    let mut s = State::new(1 << 20);
    assert!(s.out.starts_with(f::PREFACE));
    let id = open(&mut s, b"\0\0\0\0\x03abc").unwrap();
    assert_eq!(id, 1, "a client's first stream");
    let frames = written(&mut s);
    let kinds: Vec<u8> = frames.iter().map(|w| w.head.kind).collect();
    assert_eq!(kinds, [f::SETTINGS, f::WINDOW_UPDATE, f::HEADERS, f::DATA]);
    assert_eq!(
        frames[0].payload,
        [0, 2, 0, 0, 0, 0, 0, 4, 0, 0x20, 0, 0],
        "push disabled, a stream window of 2 MiB"
    );
    let headers = &frames[2];
    assert_eq!(
        headers.head.flags,
        f::END_HEADERS,
        "the stream goes on to its data"
    );
    let mut decoded = Vec::new();
    hpack::Decoder::new(4096)
        .decode(&Bytes::from(headers.payload.clone()), |f| {
            decoded.push((f.name, f.value));
        })
        .unwrap();
    let expected: Vec<(Bytes, Bytes)> = [
        (":method", "POST"),
        (":scheme", "http"),
        (":path", "/basalt.v1.Table/Get"),
        (":authority", "db-1.example:16020"),
        ("content-type", "application/grpc"),
        ("te", "trailers"),
        ("grpc-timeout", "30000m"),
    ]
    .iter()
    .map(|(n, v)| {
        (
            Bytes::from_static(n.as_bytes()),
            Bytes::from_static(v.as_bytes()),
        )
    })
    .collect();
    assert_eq!(decoded, expected);
    assert_eq!(data_of(&frames, 1), (8, true));

    s.header_block(
        1,
        vec![
            field(":status", "200"),
            field("content-type", "application/grpc"),
        ],
        false,
    )
    .unwrap();
    assert!(answer(&mut s, 1).is_none(), "no answer before its end");
    frame(&mut s, f::DATA, 0, 1, b"\0\0\0\0\x02hi").unwrap();
    s.header_block(1, vec![field("grpc-status", "0")], true)
        .unwrap();
    let a = answer(&mut s, 1).unwrap().unwrap();
    assert_eq!(a.head.len(), 2);
    assert_eq!(&a.data[..], b"\0\0\0\0\x02hi");
    assert_eq!(a.trailers.unwrap(), [field("grpc-status", "0")]);
    assert!(
        matches!(answer(&mut s, 1), Some(Err(Failure::Lost(_)))),
        "taken once"
    );
}

/// A request larger than the server's windows is sent as they open: never past the
/// stream's or the connection's window, nor past the largest frame, and the stream ends
/// with its last byte.
#[test]
fn request_data_waits_for_the_servers_windows() {
    let mut s = State::new(1 << 20);
    settings(&mut s, &[(f::SETTINGS_INITIAL_WINDOW_SIZE, 10)]).unwrap();
    written(&mut s);
    open(&mut s, &[7; 25]).unwrap();
    assert_eq!(data_of(&written(&mut s), 1), (10, false));
    frame(&mut s, f::WINDOW_UPDATE, 0, 1, &5_u32.to_be_bytes()).unwrap();
    assert_eq!(data_of(&written(&mut s), 1), (5, false));
    // A larger initial window opens every stream by the difference.
    settings(&mut s, &[(f::SETTINGS_INITIAL_WINDOW_SIZE, 20)]).unwrap();
    let frames = written(&mut s);
    assert_eq!(data_of(&frames, 1), (10, true));
    assert!(
        frames
            .iter()
            .any(|w| w.head.kind == f::SETTINGS && w.head.has(f::ACK)),
        "settings are acknowledged"
    );

    // The connection's window and the stream's (65,535 bytes each) bound it; frames stay
    // within 16 KiB.
    let mut s = State::new(1 << 20);
    written(&mut s);
    open(&mut s, &vec![1; 100_000]).unwrap();
    let frames = written(&mut s);
    assert_eq!(data_of(&frames, 1), (65_535, false));
    assert!(frames
        .iter()
        .all(|w| w.payload.len() <= f::DEFAULT_MAX_FRAME));
    frame(&mut s, f::WINDOW_UPDATE, 0, 0, &100_000_u32.to_be_bytes()).unwrap();
    assert_eq!(
        data_of(&written(&mut s), 1),
        (0, false),
        "the stream's window is spent"
    );
    frame(&mut s, f::WINDOW_UPDATE, 0, 1, &100_000_u32.to_be_bytes()).unwrap();
    assert_eq!(data_of(&written(&mut s), 1), (100_000 - 65_535, true));
}

/// The answers' windows are given back as their data is read, so answers larger than
/// the windows arrive whole.
#[test]
fn answer_data_gives_its_windows_back() {
    let mut s = State::new(64 << 20);
    written(&mut s);
    let id = open(&mut s, b"x").unwrap();
    written(&mut s);
    s.header_block(id, vec![field(":status", "200")], false)
        .unwrap();
    let chunk = vec![0; f::DEFAULT_MAX_FRAME];
    let mut updates = Vec::new();
    for _ in 0..400 {
        frame(&mut s, f::DATA, 0, id, &chunk).unwrap();
        for w in written(&mut s) {
            assert_eq!(w.head.kind, f::WINDOW_UPDATE);
            updates.push(w.head.stream);
        }
    }
    assert!(updates.contains(&0) && updates.contains(&id), "{updates:?}");
    s.header_block(id, vec![field("grpc-status", "0")], true)
        .unwrap();
    assert_eq!(
        answer(&mut s, id).unwrap().unwrap().data.len(),
        400 * chunk.len()
    );
}

/// An answer over the call's limit fails it and resets its stream; a call dropped before
/// its answer resets its stream, and the late frames of both are dropped.
#[test]
fn large_and_abandoned_answers_reset_their_streams() {
    let mut s = State::new(10);
    let large = open(&mut s, b"x").unwrap();
    let dropped = open(&mut s, b"y").unwrap();
    written(&mut s);
    s.header_block(large, vec![field(":status", "200")], false)
        .unwrap();
    frame(&mut s, f::DATA, 0, large, &[0; 11]).unwrap();
    assert_eq!(
        answer(&mut s, large).unwrap().unwrap_err(),
        Failure::TooLarge
    );
    s.cancel(dropped);
    let frames = written(&mut s);
    let resets: Vec<(u32, Vec<u8>)> = frames
        .iter()
        .filter(|w| w.head.kind == f::RST_STREAM)
        .map(|w| (w.head.stream, w.payload.clone()))
        .collect();
    let cancel = Reason::CANCEL.0.to_be_bytes().to_vec();
    assert_eq!(resets, [(large, cancel.clone()), (dropped, cancel)]);
    frame(&mut s, f::DATA, f::END_STREAM, dropped, b"late").unwrap();
    s.header_block(dropped, vec![field(":status", "200")], true)
        .unwrap();
    assert!(written(&mut s).is_empty(), "late frames need no answer");
}

/// GOAWAY: the streams past its last id are lost (a retry may make them again), the rest
/// run to their end, and no call opens another stream here.
#[test]
fn goaway_loses_only_the_streams_past_its_last() {
    let mut s = State::new(1 << 20);
    let ids: Vec<u32> = (0..3).map(|_| open(&mut s, b"x").unwrap()).collect();
    assert_eq!(ids, [1, 3, 5]);
    let mut goaway = 3_u32.to_be_bytes().to_vec();
    goaway.extend_from_slice(&Reason::NO_ERROR.0.to_be_bytes());
    goaway.extend_from_slice(b"shutting down");
    frame(&mut s, f::GOAWAY, 0, 0, &goaway).unwrap();
    assert!(!s.open_to_calls());
    let lost = answer(&mut s, 5).unwrap().unwrap_err();
    assert!(
        matches!(&lost, Failure::Lost(why) if why.contains("shutting down")),
        "{lost:?}"
    );
    assert!(answer(&mut s, 1).is_none() && answer(&mut s, 3).is_none());
    assert!(matches!(open(&mut s, b"x"), Err(Failure::Lost(_))));
    assert!(!s.done());
    for id in [1, 3] {
        s.header_block(
            id,
            vec![field(":status", "200"), field("grpc-status", "0")],
            true,
        )
        .unwrap();
        assert!(answer(&mut s, id).unwrap().is_ok());
    }
    assert!(s.done(), "nothing is left once the last stream ends");
}

/// The server's stream limit holds a call until a stream ends; a reset fails only its
/// own call.
#[test]
fn the_stream_limit_holds_calls_and_resets_fail_one_call() {
    let mut s = State::new(1 << 20);
    settings(&mut s, &[(f::SETTINGS_MAX_CONCURRENT_STREAMS, 1)]).unwrap();
    let first = open(&mut s, b"x").unwrap();
    assert!(open(&mut s, b"y").is_err(), "held while the first is open");
    frame(
        &mut s,
        f::RST_STREAM,
        0,
        first,
        &Reason::REFUSED_STREAM.0.to_be_bytes(),
    )
    .unwrap();
    assert_eq!(
        answer(&mut s, first).unwrap().unwrap_err(),
        Failure::Reset(Reason::REFUSED_STREAM)
    );
    assert_eq!(open(&mut s, b"y").unwrap(), 3, "the limit has room again");
    assert!(s.open_to_calls());
}

/// What the server must not do ends the connection with the error RFC 9113 names, and
/// every call on it fails as lost; PINGs are answered, and frames of unknown kinds ignored.
#[test]
fn a_servers_faults_end_the_connection() {
    let mut s = State::new(1 << 20);
    written(&mut s);
    frame(&mut s, f::PING, 0, 0, b"12345678").unwrap();
    let pong = written(&mut s);
    assert_eq!((pong[0].head.kind, pong[0].head.flags), (f::PING, f::ACK));
    assert_eq!(pong[0].payload, b"12345678");
    frame(&mut s, 0x42, 0, 0, b"whatever").unwrap();
    assert!(written(&mut s).is_empty());

    let faults: [(u8, u8, u32, &[u8], Reason); 6] = [
        (f::DATA, 0, 7, b"x", Reason::PROTOCOL_ERROR),
        (f::DATA, 0, 2, b"x", Reason::PROTOCOL_ERROR),
        (f::PUSH_PROMISE, 0, 1, b"\0\0\0\x02", Reason::PROTOCOL_ERROR),
        (f::PING, 0, 0, b"short", Reason::FRAME_SIZE_ERROR),
        (f::WINDOW_UPDATE, 0, 0, b"\0\0\0\0", Reason::PROTOCOL_ERROR),
        (
            f::SETTINGS,
            0,
            0,
            &[0, 5, 0, 0, 0x10, 0],
            Reason::PROTOCOL_ERROR,
        ),
    ];
    for (kind, flags, stream, payload, reason) in faults {
        let mut s = State::new(1 << 20);
        open(&mut s, b"x").unwrap();
        let e = frame(&mut s, kind, flags, stream, payload).unwrap_err();
        assert_eq!(e.0, reason, "kind {kind}: {}", e.1);
    }
    let mut s = State::new(1 << 20);
    let id = open(&mut s, b"x").unwrap();
    s.end("the server broke HTTP/2");
    assert!(matches!(answer(&mut s, id), Some(Err(Failure::Lost(_)))));
    assert!(s.done() && !s.open_to_calls());
}

/// Answers `id` with `len` bytes of data and its trailers.
fn answer_with(state: &mut State, id: u32, len: usize) {
    state
        .header_block(id, vec![field(":status", "200")], false)
        .unwrap();
    frame(state, f::DATA, 0, id, &vec![0; len]).unwrap();
    state
        .header_block(id, vec![field("grpc-status", "0")], true)
        .unwrap();
}

/// The connection's task waits for the calls it woke only while the answers they have
/// still to take are small: an answer counts from its end until its call takes it or is
/// dropped; one still arriving, or lost, never counts.
#[test]
fn woken_calls_are_quick_only_while_their_answers_are_small() {
    let mut s = State::new(1 << 20);
    let half = SMALL_ANSWERS / 2;
    let ids: Vec<u32> = (0..4).map(|_| open(&mut s, b"x").unwrap()).collect();
    assert!(s.woken_calls_are_quick(), "nothing answered yet");
    answer_with(&mut s, ids[0], half);
    assert!(s.woken_calls_are_quick(), "half the bound to take");
    answer_with(&mut s, ids[1], half);
    assert!(!s.woken_calls_are_quick(), "the bound to take");
    assert_eq!(answer(&mut s, ids[0]).unwrap().unwrap().data.len(), half);
    assert!(s.woken_calls_are_quick(), "one answer taken");
    s.cancel(ids[1]);
    answer_with(&mut s, ids[2], SMALL_ANSWERS - 1);
    assert!(
        s.woken_calls_are_quick(),
        "the dropped call's answer is gone"
    );
    s.header_block(ids[3], vec![field(":status", "200")], false)
        .unwrap();
    frame(&mut s, f::DATA, 0, ids[3], &vec![0; half]).unwrap();
    assert!(s.woken_calls_are_quick(), "an answer still arriving");
    s.end("the server went away");
    assert!(s.woken_calls_are_quick(), "a lost answer");
    assert_eq!(
        answer(&mut s, ids[3]).unwrap().unwrap_err(),
        Failure::Lost("the server went away".into())
    );
    let kept = answer(&mut s, ids[2]).unwrap().unwrap();
    assert_eq!(kept.data.len(), SMALL_ANSWERS - 1);
}
