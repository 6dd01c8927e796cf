//! One HTTP/2 connection's state, server side: the frames read and checked, the streams
//! open on it with their flow control, and the answers' frames gathered for one write.
//!
//! It never blocks and never spawns: its task calls [`Connection::read`] to take in what the
//! socket holds, hands the requests that arrived to their calls, gives their answers to
//! [`Connection::answer`], and writes everything gathered with [`Connection::poll_flush`].
//!
//! # Invariants
//! - `streams` is sorted by id (clients open streams in increasing order, and only the
//!   stream with the highest id so far is ever added) and holds only streams that are open
//!   on at least one side; a stream closed on both is removed at once.
//! - Every byte of a DATA frame is counted against the connection's receive window and,
//!   when its stream is open, the stream's; it is given back (counted in `unannounced`) when
//!   its call takes it or its stream closes, and announced once half a window is owed.
//! - `write[written..]` is what was gathered and not yet written. Nothing more is gathered
//!   for streams while `write` holds [`WRITE_LIMIT`] bytes or more: their answers wait in
//!   `blocked`, as do those a flow-control window holds back.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::{Buf, Bytes, BytesMut};
use http::HeaderMap;
use tokio::io::{AsyncRead, AsyncWrite};

mod control;
mod send;
#[cfg(test)]
mod tests;

use super::frame::{self as f, Continuing, Head, Reason};
use super::hpack::{self, Decoder};
use super::request::{self, Refused, RequestHead};
use super::stream::{Incoming, Recv, Stream};

/// The most bytes gathered for writing before streams wait for the socket.
const WRITE_LIMIT: usize = 256 << 10;
/// A write buffer kept between writes; a larger one (after a burst) is given back.
const RETAINED: usize = 64 << 10;
/// Bytes read in one call of [`Connection::read`] before the other work of the turn runs.
const READ_BUDGET: usize = 256 << 10;
/// The room made in the read buffer before each read.
const READ_CHUNK: usize = 32 << 10;
/// The largest header block gathered across CONTINUATION frames: four times the largest
/// header list taken, against a peer that continues a block without end.
const HEADER_BLOCK_FACTOR: usize = 4;
/// The highest stream id there is: a first GOAWAY names it.
const LAST_STREAM_ID: u32 = (1 << 31) - 1;
/// The payload of the PING that ends a graceful GOAWAY's grace.
const GRACE_PING: [u8; 8] = *b"goingawy";
/// The dynamic table size this side's decoder allows (HTTP/2's default).
const HEADER_TABLE_SIZE: usize = 4096;

/// What this side announces, and how many stream errors it takes.
#[derive(Clone, Copy, Debug)]
pub struct Settings {
    pub max_concurrent_streams: u32,
    /// Each stream's receive window, and the connection's.
    pub window: u32,
    pub max_header_list: usize,
    /// Streams this side may reset for the peer's faults before it ends the connection.
    pub max_error_resets: usize,
}

/// A request whose head arrived; its body follows as the peer sends it.
#[derive(Debug)]
pub struct Accepted {
    pub stream: u32,
    pub head: Arc<RequestHead>,
    pub body: Incoming,
}

/// A call's answer.
// An answer is built once and moved once, into `Connection::answer`: boxing its head would
// cost an allocation a call to save a copy of a hundred bytes.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum Reply {
    /// The head, the data (no piece empty), and the trailers (`None`: the data's last frame
    /// ends the stream).
    Answer {
        head: http::response::Parts,
        data: VecDeque<Bytes>,
        trailers: Option<HeaderMap>,
    },
    /// A gRPC call's one message, answered with success: `:status 200`, the gRPC content
    /// type, the message's frame (`.0`), and trailers of `grpc-status: 0`, each written
    /// from its encoded fields, without a header map.
    Unary(Bytes),
    /// The answer failed after it began: the stream is reset.
    Reset(Reason),
}

impl Reply {
    /// The bytes of its data frames' payloads.
    pub fn data_len(&self) -> usize {
        match self {
            Reply::Answer { data, .. } => data.iter().map(Bytes::len).sum(),
            Reply::Unary(message) => message.len(),
            Reply::Reset(_) => 0,
        }
    }
}

/// What a read did.
#[derive(Debug, PartialEq, Eq)]
pub enum Reading {
    /// Frames were read; there may be more.
    Progress,
    /// Nothing to read; the task is woken when there is.
    Idle,
    /// The peer closed the connection.
    Closed,
}

/// One connection (see the module's notes).
#[derive(Debug)]
pub struct Connection<T> {
    io: T,
    settings: Settings,
    read: BytesMut,
    preface_read: bool,
    settings_read: bool,
    write: Vec<u8>,
    written: usize,
    /// Where a header block is encoded before it is framed into `write`.
    scratch: Vec<u8>,
    hpack: Decoder,
    /// Header blocks read before and their heads, reused while the table stands.
    recent: request::RecentHeads,
    continuing: Option<Continuing>,
    streams: Vec<Stream>,
    /// The highest stream id the peer opened; streams below it and not open are closed.
    last_stream: u32,
    /// This side sent its first GOAWAY, and the PING whose answer ends the grace.
    going_away: bool,
    /// This side sent its final GOAWAY, naming this stream: later ones are refused.
    accept_up_to: Option<u32>,
    /// The peer sent GOAWAY.
    peer_going_away: bool,
    recv_window: i64,
    unannounced: i64,
    send_window: i64,
    /// The window a stream opens with, as the peer's settings say.
    peer_initial_window: i64,
    max_frame: usize,
    /// Streams with answers waiting for a window or for room in `write`, in turn.
    blocked: VecDeque<u32>,
    pong: Option<[u8; 8]>,
    error_resets: usize,
}

impl<T: AsyncRead + AsyncWrite + Unpin> Connection<T> {
    /// A connection over `io`, whose first write announces `settings`.
    pub fn new(io: T, settings: Settings) -> Connection<T> {
        let mut write = Vec::with_capacity(RETAINED);
        f::put_settings(
            &mut write,
            &[
                (
                    f::SETTINGS_MAX_CONCURRENT_STREAMS,
                    settings.max_concurrent_streams,
                ),
                (f::SETTINGS_INITIAL_WINDOW_SIZE, settings.window),
                (
                    f::SETTINGS_MAX_HEADER_LIST_SIZE,
                    u32::try_from(settings.max_header_list).unwrap_or(u32::MAX),
                ),
            ],
        );
        let window = i64::from(settings.window);
        // The connection's window opens at the default; the rest is given at once.
        let raise = window - f::DEFAULT_WINDOW;
        if raise > 0 {
            f::put_window_update(&mut write, 0, u32::try_from(raise).unwrap_or(0));
        }
        Connection {
            io,
            settings,
            read: BytesMut::with_capacity(READ_CHUNK),
            preface_read: false,
            settings_read: false,
            write,
            written: 0,
            scratch: Vec::new(),
            hpack: Decoder::new(HEADER_TABLE_SIZE),
            recent: request::RecentHeads::default(),
            continuing: None,
            streams: Vec::new(),
            last_stream: 0,
            going_away: false,
            accept_up_to: None,
            peer_going_away: false,
            recv_window: window.max(f::DEFAULT_WINDOW),
            unannounced: 0,
            send_window: f::DEFAULT_WINDOW,
            peer_initial_window: f::DEFAULT_WINDOW,
            max_frame: f::DEFAULT_MAX_FRAME,
            blocked: VecDeque::new(),
            pong: None,
            error_resets: 0,
        }
    }

    /// Reads what the socket holds and handles its frames; the requests whose heads arrived
    /// are added to `accepted`.
    ///
    /// # Errors
    /// The socket failed, or the peer broke the protocol: then a GOAWAY saying how was
    /// written if the socket took it, and the connection must end.
    pub fn read(
        &mut self,
        cx: &mut Context<'_>,
        accepted: &mut Vec<Accepted>,
    ) -> Result<Reading, String> {
        let mut progressed = false;
        let mut budget = READ_BUDGET;
        loop {
            match self.frames(accepted) {
                Ok(handled) => progressed |= handled,
                Err(why) => {
                    // The GOAWAY is a courtesy: the connection ends either way.
                    let _ = self.poll_flush(cx);
                    return Err(why);
                }
            }
            if self.write.len() >= WRITE_LIMIT {
                // The answers gathered go out first: nothing more is read until the socket
                // takes them, and the caller's flush, pending, wakes the task when it can.
                return Ok(if progressed {
                    Reading::Progress
                } else {
                    Reading::Idle
                });
            }
            if budget == 0 {
                return Ok(Reading::Progress);
            }
            self.read.reserve(READ_CHUNK);
            match tokio_util::io::poll_read_buf(Pin::new(&mut self.io), cx, &mut self.read) {
                Poll::Pending => {
                    return Ok(if progressed {
                        Reading::Progress
                    } else {
                        Reading::Idle
                    })
                }
                Poll::Ready(Ok(0)) => return Ok(Reading::Closed),
                Poll::Ready(Ok(n)) => {
                    budget = budget.saturating_sub(n);
                    progressed = true;
                }
                Poll::Ready(Err(e)) => return Err(format!("reading the connection failed: {e}")),
            }
        }
    }

    /// Handles every whole frame the read buffer holds; true if there was one.
    fn frames(&mut self, accepted: &mut Vec<Accepted>) -> Result<bool, String> {
        if !self.preface_read {
            if self.read.len() < f::PREFACE.len() {
                return Ok(false);
            }
            if !self.read.starts_with(f::PREFACE) {
                return Err(self.fail(Reason::PROTOCOL_ERROR, "no HTTP/2 preface"));
            }
            self.read.advance(f::PREFACE.len());
            self.preface_read = true;
        }
        let mut handled = false;
        while self.read.len() >= f::HEAD_LEN {
            let head = Head::parse(&self.read);
            if head.len > f::DEFAULT_MAX_FRAME {
                let why = format!("a frame of {} bytes, over the 16,384 allowed", head.len);
                return Err(self.fail(Reason::FRAME_SIZE_ERROR, &why));
            }
            if self.read.len() < f::HEAD_LEN + head.len {
                break;
            }
            self.read.advance(f::HEAD_LEN);
            let payload = self.read.split_to(head.len).freeze();
            self.frame(head, payload, accepted)?;
            handled = true;
        }
        Ok(handled)
    }

    fn frame(
        &mut self,
        head: Head,
        payload: Bytes,
        accepted: &mut Vec<Accepted>,
    ) -> Result<(), String> {
        if !self.settings_read && head.kind != f::SETTINGS {
            return Err(self.fail(Reason::PROTOCOL_ERROR, "the first frame was not SETTINGS"));
        }
        if self
            .continuing
            .as_ref()
            .is_some_and(|c| head.kind != f::CONTINUATION || head.stream != c.stream)
        {
            return Err(self.fail(Reason::PROTOCOL_ERROR, "a header block was interrupted"));
        }
        match head.kind {
            f::DATA => self.data(head, payload),
            f::HEADERS => self.headers(head, payload, accepted),
            f::CONTINUATION => self.continuation(head, &payload, accepted),
            f::PRIORITY => self.priority(head),
            f::RST_STREAM => self.rst_stream(head, &payload),
            f::SETTINGS => self.settings(head, &payload),
            f::PUSH_PROMISE => Err(self.fail(Reason::PROTOCOL_ERROR, "a client sent PUSH_PROMISE")),
            f::PING => self.ping_frame(head, &payload),
            f::GOAWAY => {
                self.on_stream_zero(head)?;
                if payload.len() < 8 {
                    return Err(self.fail(Reason::FRAME_SIZE_ERROR, "a GOAWAY of under 8 bytes"));
                }
                self.peer_going_away = true;
                Ok(())
            }
            f::WINDOW_UPDATE => self.window_update(head, &payload),
            // Frames of unknown kinds are ignored (RFC 9113 4.1).
            _ => Ok(()),
        }
    }

    fn data(&mut self, head: Head, payload: Bytes) -> Result<(), String> {
        self.on_a_stream(head)?;
        let len = i64::try_from(payload.len()).unwrap_or(i64::MAX);
        if len > self.recv_window {
            return Err(self.fail(
                Reason::FLOW_CONTROL_ERROR,
                "DATA past the connection's window",
            ));
        }
        self.recv_window -= len;
        let Some(i) = self.find(head.stream) else {
            self.not_open(head)?;
            self.unannounced += len;
            return Ok(());
        };
        let Some(data) = f::unpadded(head, payload) else {
            return Err(self.fail(Reason::PROTOCOL_ERROR, "DATA padded past its end"));
        };
        let stream = &mut self.streams[i];
        if stream.remote_closed || len > stream.recv_window {
            self.unannounced += len;
            let reason = if stream.remote_closed {
                Reason::STREAM_CLOSED
            } else {
                Reason::FLOW_CONTROL_ERROR
            };
            return self.stream_error(i, reason);
        }
        stream.recv_window -= len;
        // Padding is given back at once; the data once its call takes it.
        let padding = len - i64::try_from(data.len()).unwrap_or(0);
        stream.unannounced += padding;
        self.unannounced += padding;
        let end = head.has(f::END_STREAM);
        stream.remote_closed |= end;
        stream.recv.push(data, end);
        if end && stream.local_closed() {
            self.remove(i, Reason::NO_ERROR);
        }
        Ok(())
    }

    fn headers(
        &mut self,
        head: Head,
        payload: Bytes,
        accepted: &mut Vec<Accepted>,
    ) -> Result<(), String> {
        self.on_a_stream(head)?;
        let fragment = match f::header_fragment(head, payload) {
            Ok(fragment) => fragment,
            Err((reason, why)) => return Err(self.fail(reason, why)),
        };
        if head.has(f::END_HEADERS) {
            let end_stream = head.has(f::END_STREAM);
            return self.header_block(head.stream, end_stream, &fragment, accepted);
        }
        self.continuing = Some(Continuing::begin(head, &fragment));
        Ok(())
    }

    fn continuation(
        &mut self,
        head: Head,
        payload: &[u8],
        accepted: &mut Vec<Accepted>,
    ) -> Result<(), String> {
        let limit = self.settings.max_header_list * HEADER_BLOCK_FACTOR;
        let Some(continuing) = &mut self.continuing else {
            return Err(self.fail(Reason::PROTOCOL_ERROR, "CONTINUATION after no HEADERS"));
        };
        continuing.block.extend_from_slice(payload);
        if continuing.block.len() > limit {
            let why = format!("a header block of more than {limit} bytes");
            return Err(self.fail(Reason::ENHANCE_YOUR_CALM, &why));
        }
        if !head.has(f::END_HEADERS) {
            return Ok(());
        }
        let Some(done) = self.continuing.take() else {
            return Ok(());
        };
        self.header_block(done.stream, done.end_stream, &done.block.freeze(), accepted)
    }

    /// A whole header block: a new request's head, or a request's trailers.
    fn header_block(
        &mut self,
        id: u32,
        end_stream: bool,
        block: &Bytes,
        accepted: &mut Vec<Accepted>,
    ) -> Result<(), String> {
        // Read whatever becomes of the stream: the table must follow the peer's.
        let limit = self.settings.max_header_list;
        let head = match self.recent.read(&mut self.hpack, block, limit) {
            Ok(head) => head,
            Err(why) => return Err(self.fail(Reason::COMPRESSION_ERROR, &why)),
        };
        if let Some(i) = self.find(id) {
            let stream = &mut self.streams[i];
            if stream.remote_closed || !end_stream {
                return self.stream_error(i, Reason::PROTOCOL_ERROR);
            }
            // The request's trailers: gRPC has none to read, so they end the body.
            stream.remote_closed = true;
            stream.recv.push(Bytes::new(), true);
            if stream.local_closed() {
                self.remove(i, Reason::NO_ERROR);
            }
            return Ok(());
        }
        if id <= self.last_stream {
            return Ok(());
        }
        if id.is_multiple_of(2) {
            let why = format!("the client opened stream {id}, an even one");
            return Err(self.fail(Reason::PROTOCOL_ERROR, &why));
        }
        self.last_stream = id;
        let full = self.streams.len() >= self.settings.max_concurrent_streams as usize;
        if full || self.accept_up_to.is_some() || self.peer_going_away {
            f::put_rst_stream(&mut self.write, id, Reason::REFUSED_STREAM);
            return Ok(());
        }
        let head = match head {
            Ok(head) => head,
            Err(Refused::TooLarge(size)) => {
                tracing::debug!(size, "a request's header list was too large");
                let mut block = Vec::new();
                hpack::put_status(&mut block, 431);
                f::put_headers(&mut self.write, id, &block, true, self.max_frame);
                if !end_stream {
                    f::put_rst_stream(&mut self.write, id, Reason::NO_ERROR);
                }
                return Ok(());
            }
            Err(Refused::Malformed(why)) => {
                tracing::debug!(%why, "a malformed request was reset");
                f::put_rst_stream(&mut self.write, id, Reason::PROTOCOL_ERROR);
                return self.count_error_reset();
            }
        };
        let recv = Arc::new(Recv::default());
        if end_stream {
            recv.push(Bytes::new(), true);
        }
        let window = i64::from(self.settings.window);
        debug_assert!(
            self.streams.last().is_none_or(|s| s.id < id),
            "streams sorted by id"
        );
        self.streams.push(Stream {
            id,
            recv: Arc::clone(&recv),
            recv_window: window,
            unannounced: 0,
            remote_closed: end_stream,
            send_window: self.peer_initial_window,
            answered: false,
            out: None,
        });
        accepted.push(Accepted {
            stream: id,
            head,
            body: Incoming(recv),
        });
        Ok(())
    }

    /// Resets stream `i` for a fault of the peer's, and counts it.
    fn stream_error(&mut self, i: usize, reason: Reason) -> Result<(), String> {
        f::put_rst_stream(&mut self.write, self.streams[i].id, reason);
        self.remove(i, reason);
        self.count_error_reset()
    }

    fn count_error_reset(&mut self) -> Result<(), String> {
        self.error_resets += 1;
        if self.error_resets > self.settings.max_error_resets {
            let why = format!(
                "more than {} streams reset for errors",
                self.settings.max_error_resets
            );
            return Err(self.fail(Reason::ENHANCE_YOUR_CALM, &why));
        }
        Ok(())
    }

    /// Removes stream `i`, closing its request's body for `reason` and giving back the bytes
    /// it holds.
    fn remove(&mut self, i: usize, reason: Reason) {
        let stream = self.streams.remove(i);
        let owed = stream.recv.close(reason);
        self.unannounced += i64::try_from(owed).unwrap_or(i64::MAX);
    }

    fn find(&self, id: u32) -> Option<usize> {
        self.streams.binary_search_by_key(&id, |s| s.id).ok()
    }
}
