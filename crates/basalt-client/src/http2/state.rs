//! What one client connection knows: its streams, both sides' flow-control windows, the
//! server's settings, and the frames waiting to be written. It does no I/O: calls open and
//! read their streams through it, and the connection's task hands it each frame it reads.
//!
//! # Invariants
//! 1. A stream is in `streams` from its opening until its call takes its outcome or is
//!    dropped; a dropped call whose stream had not ended resets it (`CANCEL`).
//! 2. `blocked` holds the streams with request data left unsent (`Stream::unsent`), each
//!    once, in the order they blocked; they are sent as WINDOW_UPDATEs and SETTINGS open
//!    the server's windows.
//! 3. No DATA frame is written beyond the connection's or its stream's send window, and no
//!    frame beyond the server's largest frame.
//! 4. Once `ended` is set every stream has an outcome and no stream opens; once
//!    `going_away` is set no stream opens.
//! 5. `unclaimed` is the sum of the data's lengths of the streams in `streams` whose
//!    outcome is a success: answers whose calls are woken and have not yet taken them.

use std::collections::{BTreeMap, VecDeque};
use std::task::{Context, Poll, Waker};

use basalt_proto::http2::frame::{self as f, Head, Reason};
use basalt_proto::http2::hpack::{self, Field};
use basalt_proto::unary::Pieces;
use bytes::{Buf, Bytes};

/// Each stream's receive window, as this side announces it: an answer of a few MiB (a
/// scanner's batch) is not held back waiting for window updates.
pub(super) const STREAM_WINDOW: i64 = 2 << 20;
/// The connection's receive window.
pub(super) const CONNECTION_WINDOW: i64 = 5 << 20;
/// The largest frame this side takes (HTTP/2's default, which it does not raise).
pub(super) const MAX_FRAME: usize = f::DEFAULT_MAX_FRAME;
/// The most room an answer's gRPC header earns before its data arrives ([`Pieces::up_to`]):
/// what a stream's window ([`STREAM_WINDOW`]) lets in before this side reads it, where the
/// header's word alone could be as much as the largest answer a call takes.
const ANSWER_ROOM: usize = 2 << 20;
/// Answers, in bytes, that calls decode in less time than a write and the server's wake-up
/// take (see [`State::woken_calls_are_quick`]): a few rows of a scan, or many point reads.
pub(super) const SMALL_ANSWERS: usize = 16 << 10;
/// The highest stream id a client may open.
const LAST_STREAM_ID: u32 = (1 << 31) - 1;

/// Why a call got no answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Failure {
    /// The connection ended (failed, closed, or the server is going away): the call may be
    /// retried on a new one.
    Lost(String),
    /// The server reset the call's stream; the connection goes on.
    Reset(Reason),
    /// The answer was larger than the call takes.
    TooLarge,
}

/// A whole answer: its head's fields, its data (gRPC framing included), its trailers.
#[derive(Debug, Default)]
pub(crate) struct Answer {
    pub(crate) head: Vec<Field>,
    pub(crate) data: Bytes,
    pub(crate) trailers: Option<Vec<Field>>,
}

/// A call's request: its path, the server's authority, the other header fields (those that
/// repeat call after call flagged so), and its whole framed message.
#[derive(Debug)]
pub(crate) struct Request<'a> {
    pub(crate) path: &'a [u8],
    pub(crate) authority: &'a [u8],
    pub(crate) fields: &'a [(&'a [u8], &'a [u8], bool)],
    pub(crate) message: Bytes,
}

#[derive(Debug)]
struct Stream {
    waker: Option<Waker>,
    head: Option<Vec<Field>>,
    data: Pieces,
    trailers: Option<Vec<Field>>,
    outcome: Option<Result<(), Failure>>,
    send_window: i64,
    unsent: Bytes,
    /// What is left of the window this side gave the stream.
    recv_window: i64,
}

/// The server's settings this side follows.
#[derive(Debug)]
struct Peer {
    max_frame: usize,
    initial_window: i64,
    max_streams: usize,
}

/// A fault of the server's that ends the connection: GOAWAY's reason and words.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct ConnectionError(pub(super) Reason, pub(super) String);

pub(super) fn fault_of(reason: Reason, why: impl Into<String>) -> ConnectionError {
    ConnectionError(reason, why.into())
}

/// One connection's state (see the module's invariants).
#[derive(Debug)]
pub(super) struct State {
    /// Frames waiting for the connection's task to write them.
    pub(super) out: Vec<u8>,
    /// The connection's task, when it waits for frames to write.
    pub(super) task: Option<Waker>,
    next_id: u32,
    streams: BTreeMap<u32, Stream>,
    blocked: VecDeque<u32>,
    /// Calls waiting for the server to allow another stream.
    waiting: Vec<Waker>,
    peer: Peer,
    send_window: i64,
    recv_window: i64,
    encoder: hpack::Encoder,
    block: Vec<u8>,
    /// The largest answer a call takes, its gRPC framing included.
    max_answer: usize,
    pub(super) ended: Option<String>,
    going_away: bool,
    /// Every handle of the connection is gone: no call can come any more.
    pub(super) unused: bool,
    /// Bytes of answers their calls have still to take (invariant 5).
    unclaimed: usize,
}

impl State {
    /// A connection's state, its first frames (this side's settings and window) queued;
    /// answers larger than `max_answer` bytes fail their calls.
    pub(super) fn new(max_answer: usize) -> State {
        let mut out = Vec::with_capacity(1024);
        out.extend_from_slice(f::PREFACE);
        f::put_settings(
            &mut out,
            &[
                (f::SETTINGS_ENABLE_PUSH, 0),
                (f::SETTINGS_INITIAL_WINDOW_SIZE, window_u32(STREAM_WINDOW)),
            ],
        );
        f::put_window_update(
            &mut out,
            0,
            window_u32(CONNECTION_WINDOW - f::DEFAULT_WINDOW),
        );
        State {
            out,
            task: None,
            next_id: 1,
            streams: BTreeMap::new(),
            blocked: VecDeque::new(),
            waiting: Vec::new(),
            peer: Peer {
                max_frame: f::DEFAULT_MAX_FRAME,
                initial_window: f::DEFAULT_WINDOW,
                // Unlimited until the server's settings say otherwise (RFC 9113 6.5.2).
                max_streams: usize::MAX,
            },
            send_window: f::DEFAULT_WINDOW,
            recv_window: CONNECTION_WINDOW,
            encoder: hpack::Encoder::default(),
            block: Vec::new(),
            max_answer,
            ended: None,
            going_away: false,
            unused: false,
            unclaimed: 0,
        }
    }

    /// Whether the calls already woken have little left to do before they queue their
    /// next requests: the answers they have still to take add up to less than
    /// [`SMALL_ANSWERS`]. Waiting for them costs their decoding, about a microsecond for
    /// each 400 bytes; not waiting costs a write and a wake-up of the server per request.
    pub(super) fn woken_calls_are_quick(&self) -> bool {
        self.unclaimed < SMALL_ANSWERS
    }

    /// Whether a new call may open a stream here.
    pub(super) fn open_to_calls(&self) -> bool {
        self.ended.is_none() && !self.going_away && self.next_id <= LAST_STREAM_ID
    }

    /// Opens a stream for `request` and queues its frames; waits (registering `cx`) while
    /// the server allows no more streams.
    pub(super) fn poll_open(
        &mut self,
        cx: &mut Context<'_>,
        request: &mut Request<'_>,
    ) -> Poll<Result<u32, Failure>> {
        if let Some(why) = &self.ended {
            return Poll::Ready(Err(Failure::Lost(why.clone())));
        }
        if !self.open_to_calls() {
            return Poll::Ready(Err(Failure::Lost(
                "the connection takes no more calls".into(),
            )));
        }
        if self.streams.len() >= self.peer.max_streams {
            self.waiting.push(cx.waker().clone());
            return Poll::Pending;
        }
        let id = self.next_id;
        self.next_id += 2;
        self.put_head(id, request);
        let message = std::mem::take(&mut request.message);
        self.streams.insert(
            id,
            Stream {
                waker: None,
                head: None,
                data: Pieces::up_to(self.max_answer.min(ANSWER_ROOM)),
                trailers: None,
                outcome: None,
                send_window: self.peer.initial_window,
                unsent: message,
                recv_window: STREAM_WINDOW,
            },
        );
        self.send(id);
        Poll::Ready(Ok(id))
    }

    /// Queues the request's header block.
    fn put_head(&mut self, id: u32, request: &Request<'_>) {
        let mut block = std::mem::take(&mut self.block);
        block.clear();
        let e = &mut self.encoder;
        e.begin(&mut block);
        e.field(&mut block, b":method", b"POST", true);
        e.field(&mut block, b":scheme", b"http", true);
        e.field(&mut block, b":path", request.path, true);
        e.field(&mut block, b":authority", request.authority, true);
        for &(name, value, repeats) in request.fields {
            e.field(&mut block, name, value, repeats);
        }
        let end = request.message.is_empty();
        f::put_headers(&mut self.out, id, &block, end, self.peer.max_frame);
        self.block = block;
    }

    /// Queues as much of stream `id`'s unsent data as the windows allow (invariant 3); the
    /// rest waits in `blocked` (invariant 2).
    fn send(&mut self, id: u32) {
        let Some(s) = self.streams.get_mut(&id) else {
            return;
        };
        while !s.unsent.is_empty() {
            let room = self.send_window.min(s.send_window);
            if room <= 0 {
                if !self.blocked.contains(&id) {
                    self.blocked.push_back(id);
                }
                return;
            }
            let room = usize::try_from(room).unwrap_or(usize::MAX);
            let n = s.unsent.len().min(room).min(self.peer.max_frame);
            let chunk = s.unsent.split_to(n);
            let end = if s.unsent.is_empty() {
                f::END_STREAM
            } else {
                0
            };
            f::put_head(&mut self.out, n, f::DATA, end, id);
            self.out.extend_from_slice(&chunk);
            let n = i64::try_from(n).unwrap_or(i64::MAX);
            self.send_window -= n;
            s.send_window -= n;
        }
    }

    /// Sends what the blocked streams may now send, in the order they blocked.
    fn unblock(&mut self) {
        for _ in 0..self.blocked.len() {
            let Some(id) = self.blocked.pop_front() else {
                break;
            };
            self.send(id);
        }
    }

    /// The outcome of stream `id`, once it has one; the stream is then gone.
    pub(super) fn poll_answer(
        &mut self,
        cx: &mut Context<'_>,
        id: u32,
    ) -> Poll<Result<Answer, Failure>> {
        let Some(s) = self.streams.get_mut(&id) else {
            return Poll::Ready(Err(Failure::Lost("the call's stream is gone".into())));
        };
        if s.outcome.is_none() {
            if !s.waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                s.waker = Some(cx.waker().clone());
            }
            return Poll::Pending;
        }
        let Some(mut s) = self.close(id) else {
            return Poll::Ready(Err(Failure::Lost("the call's stream is gone".into())));
        };
        if let Some(Err(failure)) = s.outcome.take() {
            return Poll::Ready(Err(failure));
        }
        Poll::Ready(Ok(Answer {
            head: s.head.unwrap_or_default(),
            data: s.data.finish(),
            trailers: s.trailers,
        }))
    }

    /// A call that ends before its answer: its stream is reset unless it had ended.
    pub(super) fn cancel(&mut self, id: u32) {
        if let Some(s) = self.close(id) {
            if s.outcome.is_none() && self.ended.is_none() {
                f::put_rst_stream(&mut self.out, id, Reason::CANCEL);
            }
        }
    }

    /// Removes stream `id`, making room for the calls waiting for one. All of them wake
    /// (the first to poll takes the room): a waker may be a call since dropped.
    fn close(&mut self, id: u32) -> Option<Stream> {
        let s = self.streams.remove(&id)?;
        if let Some(Ok(())) = s.outcome {
            self.unclaimed -= s.data.len();
        }
        if !s.unsent.is_empty() {
            self.blocked.retain(|&b| b != id);
        }
        for w in self.waiting.drain(..) {
            w.wake();
        }
        Some(s)
    }

    /// Gives stream `id` its outcome and wakes its call, unless it already had one.
    fn finish(&mut self, id: u32, outcome: Result<(), Failure>) {
        if let Some(s) = self.streams.get_mut(&id) {
            if s.outcome.is_none() {
                if outcome.is_ok() {
                    self.unclaimed += s.data.len();
                }
                s.outcome = Some(outcome);
                s.unsent = Bytes::new();
                if let Some(w) = s.waker.take() {
                    w.wake();
                }
            }
        }
    }

    /// Ends the connection: every stream fails as lost (invariant 4); waiting calls wake.
    pub(super) fn end(&mut self, why: &str) {
        if self.ended.is_some() {
            return;
        }
        self.ended = Some(why.to_owned());
        let ids: Vec<u32> = self.streams.keys().copied().collect();
        for id in ids {
            self.finish(id, Err(Failure::Lost(why.to_owned())));
        }
        self.blocked.clear();
        for w in self.waiting.drain(..) {
            w.wake();
        }
    }

    /// Whether the connection has nothing left to do: it ended, or no call can come (the
    /// server is going away, or every handle is gone) and every stream is done.
    pub(super) fn done(&self) -> bool {
        self.ended.is_some() || ((self.going_away || self.unused) && self.streams.is_empty())
    }

    /// Handles one whole frame other than a header block's (the task gathers those and
    /// hands them to [`State::header_block`]).
    pub(super) fn frame(&mut self, head: Head, payload: Bytes) -> Result<(), ConnectionError> {
        match head.kind {
            f::DATA => self.data(head, payload),
            f::RST_STREAM => {
                let code = four_bytes(&payload, "RST_STREAM")?;
                self.known(head.stream, "RST_STREAM")?;
                self.finish(head.stream, Err(Failure::Reset(Reason(code))));
                Ok(())
            }
            f::SETTINGS => self.settings(head, &payload),
            f::PING => {
                let payload: [u8; 8] = payload[..]
                    .try_into()
                    .map_err(|_| fault_of(Reason::FRAME_SIZE_ERROR, "a PING not of 8 bytes"))?;
                if !head.has(f::ACK) {
                    f::put_ping(&mut self.out, f::ACK, payload);
                }
                Ok(())
            }
            f::GOAWAY => self.goaway(&payload),
            f::WINDOW_UPDATE => self.window_update(head, &payload),
            f::PUSH_PROMISE => Err(fault_of(
                Reason::PROTOCOL_ERROR,
                "a PUSH_PROMISE, with push disabled",
            )),
            // PRIORITY, and frame kinds this side does not know, are ignored (RFC 9113 5.5).
            _ => Ok(()),
        }
    }

    /// Fails a frame on a stream this side never opened (RFC 9113 5.1: idle streams).
    fn known(&self, stream: u32, kind: &str) -> Result<(), ConnectionError> {
        if stream == 0 || stream.is_multiple_of(2) || stream >= self.next_id {
            return Err(fault_of(
                Reason::PROTOCOL_ERROR,
                format!("{kind} on stream {stream}, which this client never opened"),
            ));
        }
        Ok(())
    }

    fn data(&mut self, head: Head, payload: Bytes) -> Result<(), ConnectionError> {
        self.known(head.stream, "DATA")?;
        let len = i64::try_from(payload.len()).unwrap_or(i64::MAX);
        self.recv_window -= len;
        if self.recv_window < 0 {
            return Err(fault_of(
                Reason::FLOW_CONTROL_ERROR,
                "DATA past the connection's window",
            ));
        }
        if self.recv_window <= CONNECTION_WINDOW / 2 {
            f::put_window_update(
                &mut self.out,
                0,
                window_u32(CONNECTION_WINDOW - self.recv_window),
            );
            self.recv_window = CONNECTION_WINDOW;
        }
        let data = f::unpadded(head, payload)
            .ok_or_else(|| fault_of(Reason::PROTOCOL_ERROR, "DATA padded past its end"))?;
        let Some(s) = self.streams.get_mut(&head.stream) else {
            // A stream this side reset or took the answer of: its late frames are dropped.
            return Ok(());
        };
        if s.outcome.is_some() {
            return Ok(());
        }
        s.recv_window -= len;
        if s.recv_window < 0 || s.head.is_none() {
            let why = if s.head.is_none() {
                Reason::PROTOCOL_ERROR
            } else {
                Reason::FLOW_CONTROL_ERROR
            };
            f::put_rst_stream(&mut self.out, head.stream, why);
            self.finish(head.stream, Err(Failure::Reset(why)));
            return Ok(());
        }
        s.data.push(data);
        if s.data.len() > self.max_answer {
            f::put_rst_stream(&mut self.out, head.stream, Reason::CANCEL);
            self.finish(head.stream, Err(Failure::TooLarge));
            return Ok(());
        }
        if head.has(f::END_STREAM) {
            self.finish(head.stream, Ok(()));
        } else if s.recv_window <= STREAM_WINDOW / 2 {
            f::put_window_update(
                &mut self.out,
                head.stream,
                window_u32(STREAM_WINDOW - s.recv_window),
            );
            s.recv_window = STREAM_WINDOW;
        }
        Ok(())
    }

    /// A whole header block (HEADERS and any CONTINUATION frames), already decoded: the
    /// answer's head, or its trailers.
    pub(super) fn header_block(
        &mut self,
        stream: u32,
        fields: Vec<Field>,
        end_stream: bool,
    ) -> Result<(), ConnectionError> {
        self.known(stream, "HEADERS")?;
        let Some(s) = self.streams.get_mut(&stream) else {
            return Ok(());
        };
        if s.outcome.is_some() {
            return Ok(());
        }
        if s.head.is_none() {
            let informational = fields
                .iter()
                .find(|f| f.name == ":status")
                .is_some_and(|f| f.value.first() == Some(&b'1'));
            if informational && !end_stream {
                // A 1xx head (RFC 9113 8.1): the answer's own head follows.
                return Ok(());
            }
            s.head = Some(fields);
        } else if !end_stream {
            f::put_rst_stream(&mut self.out, stream, Reason::PROTOCOL_ERROR);
            self.finish(stream, Err(Failure::Reset(Reason::PROTOCOL_ERROR)));
            return Ok(());
        } else {
            s.trailers = Some(fields);
        }
        if end_stream {
            self.finish(stream, Ok(()));
        }
        Ok(())
    }

    fn settings(&mut self, head: Head, payload: &[u8]) -> Result<(), ConnectionError> {
        if head.stream != 0 || !payload.len().is_multiple_of(6) {
            return Err(fault_of(
                Reason::FRAME_SIZE_ERROR,
                "a malformed SETTINGS frame",
            ));
        }
        if head.has(f::ACK) {
            return Ok(());
        }
        for mut setting in payload.chunks_exact(6) {
            let id = setting.get_u16();
            let value = setting.get_u32();
            match id {
                f::SETTINGS_HEADER_TABLE_SIZE => {
                    self.encoder
                        .set_max_size(usize::try_from(value).unwrap_or(usize::MAX));
                }
                f::SETTINGS_MAX_CONCURRENT_STREAMS => {
                    self.peer.max_streams = usize::try_from(value).unwrap_or(usize::MAX);
                }
                f::SETTINGS_INITIAL_WINDOW_SIZE => self.initial_window(value)?,
                f::SETTINGS_MAX_FRAME_SIZE => {
                    let size = usize::try_from(value).unwrap_or(usize::MAX);
                    if !(f::DEFAULT_MAX_FRAME..=f::LARGEST_MAX_FRAME).contains(&size) {
                        return Err(fault_of(
                            Reason::PROTOCOL_ERROR,
                            format!("a largest frame of {size} bytes"),
                        ));
                    }
                    self.peer.max_frame = size;
                }
                _ => {}
            }
        }
        f::put_head(&mut self.out, 0, f::SETTINGS, f::ACK, 0);
        self.unblock();
        for w in self.waiting.drain(..) {
            w.wake();
        }
        Ok(())
    }

    /// A new initial window moves every open stream's window by the change (RFC 9113
    /// 6.9.2).
    fn initial_window(&mut self, value: u32) -> Result<(), ConnectionError> {
        let value = i64::from(value);
        if value > f::LARGEST_WINDOW {
            return Err(fault_of(
                Reason::FLOW_CONTROL_ERROR,
                "an initial window past 2^31-1",
            ));
        }
        let change = value - self.peer.initial_window;
        self.peer.initial_window = value;
        for s in self.streams.values_mut() {
            s.send_window += change;
            if s.send_window > f::LARGEST_WINDOW {
                return Err(fault_of(
                    Reason::FLOW_CONTROL_ERROR,
                    "a stream's window past 2^31-1",
                ));
            }
        }
        Ok(())
    }

    fn window_update(&mut self, head: Head, payload: &[u8]) -> Result<(), ConnectionError> {
        let increment = i64::from(four_bytes(payload, "WINDOW_UPDATE")? & 0x7fff_ffff);
        if head.stream == 0 {
            if increment == 0 {
                return Err(fault_of(Reason::PROTOCOL_ERROR, "a window update of 0"));
            }
            self.send_window += increment;
            if self.send_window > f::LARGEST_WINDOW {
                return Err(fault_of(
                    Reason::FLOW_CONTROL_ERROR,
                    "the connection's window past 2^31-1",
                ));
            }
            self.unblock();
            return Ok(());
        }
        self.known(head.stream, "WINDOW_UPDATE")?;
        let Some(s) = self.streams.get_mut(&head.stream) else {
            return Ok(());
        };
        if increment == 0 || s.send_window + increment > f::LARGEST_WINDOW {
            f::put_rst_stream(&mut self.out, head.stream, Reason::FLOW_CONTROL_ERROR);
            self.finish(head.stream, Err(Failure::Reset(Reason::FLOW_CONTROL_ERROR)));
            return Ok(());
        }
        s.send_window += increment;
        if !s.unsent.is_empty() {
            self.blocked.retain(|&b| b != head.stream);
            self.send(head.stream);
        }
        Ok(())
    }

    /// The server is going away: streams past the last it names were never processed and
    /// are lost (a retry makes them again on a new connection); the rest run to their end.
    fn goaway(&mut self, payload: &[u8]) -> Result<(), ConnectionError> {
        let last = four_bytes(payload, "GOAWAY")? & 0x7fff_ffff;
        self.going_away = true;
        let code = payload
            .get(4..8)
            .map_or(0, |c| u32::from_be_bytes(c.try_into().unwrap_or_default()));
        let words = String::from_utf8_lossy(payload.get(8..).unwrap_or_default()).into_owned();
        let why = format!(
            "the server is going away (code {code}{}{words})",
            if words.is_empty() { "" } else { ": " }
        );
        let lost: Vec<u32> = self
            .streams
            .range(last.saturating_add(1)..)
            .map(|(&id, _)| id)
            .collect();
        for id in lost {
            self.finish(id, Err(Failure::Lost(why.clone())));
        }
        for w in self.waiting.drain(..) {
            w.wake();
        }
        Ok(())
    }
}

/// The first four bytes of a frame's payload, which must be at least that long.
fn four_bytes(payload: &[u8], kind: &str) -> Result<u32, ConnectionError> {
    payload
        .get(..4)
        .map(|b| u32::from_be_bytes(b.try_into().unwrap_or_default()))
        .ok_or_else(|| fault_of(Reason::FRAME_SIZE_ERROR, format!("a short {kind} frame")))
}

/// A window size or increment, within 2^31-1 by construction.
fn window_u32(window: i64) -> u32 {
    u32::try_from(window).unwrap_or(u32::MAX)
}
