//! The task that drives one connection: it reads what the socket holds and hands the whole
//! frames to the connection's state, then writes, in one system call, every frame the calls
//! and the reading queued.
//!
//! A call that queues its request wakes this task. Before writing what it finds queued, the
//! task yields once, so that the other calls already woken queue theirs first and one write
//! carries them all, as a server's pass of answers carries many calls: on two cores shared
//! with the server every write is a trip through the kernel and a wake-up of the server.
//! It yields only while those calls have small answers to decode: behind scans' answers of
//! tens of KiB each, the first request would wait for every one of them to be decoded (a
//! hundred microseconds or more each), and the server with it, out of work.
//!
//! # Invariants
//! - `writing[..written]` has been written; the rest is written before anything else the
//!   state queues (frames stay in the order they were queued).
//! - `continuing` is set only between a HEADERS frame without END_HEADERS and the
//!   CONTINUATION that ends its block; any other frame then is a connection error
//!   (RFC 9113 6.10).

use std::future::poll_fn;
use std::io::ErrorKind;
use std::sync::Arc;
use std::task::{Context, Poll};

use basalt_proto::http2::frame::{self as f, Continuing, Head, Reason};
use basalt_proto::http2::hpack::{self, Field};
use bytes::{Buf, Bytes, BytesMut};
use tokio::net::TcpStream;

use super::state::{fault_of, ConnectionError, State, MAX_FRAME};
use super::Shared;

/// Bytes read in one turn before the writes of the turn run.
const READ_BUDGET: usize = 256 << 10;
/// The room made in the read buffer before each read.
const READ_CHUNK: usize = 32 << 10;
/// A write buffer kept between writes; a larger one (after a burst) is given back.
const RETAINED: usize = 64 << 10;
/// The largest header block gathered across CONTINUATION frames: an answer's head is a few
/// short fields, and a server that continues a block without end is refused.
const MAX_HEADER_BLOCK: usize = 1 << 20;
/// The dynamic table this side's decoder allows (HTTP/2's default; it announces no other).
const HEADER_TABLE_SIZE: usize = 4096;

/// One connection's reading and writing (see the module's notes).
#[derive(Debug)]
pub(super) struct Driver {
    io: TcpStream,
    shared: Arc<Shared>,
    read: BytesMut,
    decoder: hpack::Decoder,
    continuing: Option<Continuing>,
    writing: Vec<u8>,
    written: usize,
    /// The task yielded once before writing what is queued.
    deferred: bool,
}

impl Driver {
    pub(super) fn new(io: TcpStream, shared: Arc<Shared>) -> Driver {
        Driver {
            io,
            shared,
            read: BytesMut::with_capacity(READ_CHUNK),
            decoder: hpack::Decoder::new(HEADER_TABLE_SIZE),
            continuing: None,
            writing: Vec::new(),
            written: 0,
            deferred: false,
        }
    }

    /// Drives the connection until it is done, then runs `ended`.
    pub(super) async fn run(mut self, ended: impl FnOnce()) {
        poll_fn(|cx| self.poll(cx)).await;
        ended();
    }

    /// One turn: read, then write. Ready once the connection is done.
    fn poll(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        if let Err(why) = self.read(cx) {
            self.shared.lock().end(&why);
        }
        match self.write(cx) {
            Ok(done) if done => Poll::Ready(()),
            Ok(_) => Poll::Pending,
            Err(why) => {
                self.shared.lock().end(&why);
                Poll::Ready(())
            }
        }
    }

    /// Reads what the socket holds, within the turn's budget, and hands the whole frames
    /// to the state. A fault of the server's queues a GOAWAY naming it and ends the
    /// connection.
    fn read(&mut self, cx: &mut Context<'_>) -> Result<(), String> {
        if self.shared.lock().ended.is_some() {
            return Ok(());
        }
        let mut budget = READ_BUDGET;
        loop {
            match self.io.poll_read_ready(cx) {
                Poll::Pending => return Ok(()),
                Poll::Ready(Err(e)) => return Err(format!("reading from the server: {e}")),
                Poll::Ready(Ok(())) => {}
            }
            self.read.reserve(READ_CHUNK);
            match self.io.try_read_buf(&mut self.read) {
                Ok(0) => return Err("the server closed the connection".into()),
                Ok(n) => budget = budget.saturating_sub(n),
                Err(e) if e.kind() == ErrorKind::WouldBlock => continue,
                Err(e) => return Err(format!("reading from the server: {e}")),
            }
            let mut state = self.shared.lock();
            if let Err(ConnectionError(reason, why)) = frames(
                &mut self.read,
                &mut self.decoder,
                &mut self.continuing,
                &mut state,
            ) {
                f::put_goaway(&mut state.out, 0, reason, &why);
                state.end(&format!("the server broke HTTP/2: {why}"));
                return Ok(());
            }
            drop(state);
            if budget == 0 {
                // The rest is read next turn, after this one's writes.
                cx.waker().wake_by_ref();
                return Ok(());
            }
        }
    }

    /// Writes what is queued; true once the connection is done and all of it is written.
    fn write(&mut self, cx: &mut Context<'_>) -> Result<bool, String> {
        let mut state = self.shared.lock();
        if self.written == self.writing.len() && !state.out.is_empty() {
            if !self.deferred && state.ended.is_none() && state.woken_calls_are_quick() {
                // Let the calls already woken queue their frames first.
                self.deferred = true;
                drop(state);
                cx.waker().wake_by_ref();
                return Ok(false);
            }
            self.deferred = false;
            self.writing.clear();
            self.written = 0;
            std::mem::swap(&mut self.writing, &mut state.out);
        }
        let done = state.done();
        if !state.task.as_ref().is_some_and(|t| t.will_wake(cx.waker())) {
            state.task = Some(cx.waker().clone());
        }
        drop(state);
        while self.written < self.writing.len() {
            match self.io.poll_write_ready(cx) {
                Poll::Pending => return Ok(false),
                Poll::Ready(Err(e)) => return Err(format!("writing to the server: {e}")),
                Poll::Ready(Ok(())) => {}
            }
            match self.io.try_write(&self.writing[self.written..]) {
                Ok(n) => self.written += n,
                Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                Err(e) => return Err(format!("writing to the server: {e}")),
            }
        }
        if self.writing.capacity() > RETAINED {
            self.writing = Vec::new();
            self.written = 0;
        }
        Ok(done && self.shared.lock().out.is_empty())
    }
}

/// Hands every whole frame in `read` to `state`.
fn frames(
    read: &mut BytesMut,
    decoder: &mut hpack::Decoder,
    continuing: &mut Option<Continuing>,
    state: &mut State,
) -> Result<(), ConnectionError> {
    while read.len() >= f::HEAD_LEN {
        let head = Head::parse(read);
        if head.len > MAX_FRAME {
            return Err(fault_of(
                Reason::FRAME_SIZE_ERROR,
                format!(
                    "a frame of {} bytes, over the {MAX_FRAME} allowed",
                    head.len
                ),
            ));
        }
        if read.len() < f::HEAD_LEN + head.len {
            break;
        }
        read.advance(f::HEAD_LEN);
        let payload = read.split_to(head.len).freeze();
        if let Some(mut block) = continuing.take() {
            if head.kind != f::CONTINUATION
                || head.stream != block.stream
                || block.block.len() + payload.len() > MAX_HEADER_BLOCK
            {
                return Err(fault_of(
                    Reason::PROTOCOL_ERROR,
                    "a header block interrupted, or continued without end",
                ));
            }
            block.block.extend_from_slice(&payload);
            if head.has(f::END_HEADERS) {
                let whole = block.block.freeze();
                decoded(block.stream, &whole, block.end_stream, decoder, state)?;
            } else {
                *continuing = Some(block);
            }
            continue;
        }
        match head.kind {
            f::HEADERS => headers(head, payload, decoder, continuing, state)?,
            f::CONTINUATION => {
                return Err(fault_of(
                    Reason::PROTOCOL_ERROR,
                    "a CONTINUATION without a header block to continue",
                ))
            }
            _ => state.frame(head, payload)?,
        }
    }
    Ok(())
}

/// A HEADERS frame: its block decoded now, or gathered until its CONTINUATIONs end it.
fn headers(
    head: Head,
    payload: Bytes,
    decoder: &mut hpack::Decoder,
    continuing: &mut Option<Continuing>,
    state: &mut State,
) -> Result<(), ConnectionError> {
    let fragment = f::header_fragment(head, payload).map_err(|(r, why)| fault_of(r, why))?;
    if head.has(f::END_HEADERS) {
        return decoded(
            head.stream,
            &fragment,
            head.has(f::END_STREAM),
            decoder,
            state,
        );
    }
    *continuing = Some(Continuing::begin(head, &fragment));
    Ok(())
}

/// Decodes a whole header block (always, to keep the decoder's table in step with the
/// server's) and hands its fields to the state.
fn decoded(
    stream: u32,
    block: &Bytes,
    end_stream: bool,
    decoder: &mut hpack::Decoder,
    state: &mut State,
) -> Result<(), ConnectionError> {
    let mut fields: Vec<Field> = Vec::with_capacity(4);
    decoder
        .decode(block, |field| fields.push(field))
        .map_err(|e| fault_of(Reason::COMPRESSION_ERROR, e))?;
    state.header_block(stream, fields, end_stream)
}

#[cfg(test)]
mod tests {
    use std::task::Waker;

    use basalt_proto::http2::hpack::{put_field, put_status};

    use super::super::state::{Failure, Request};
    use super::*;

    /// A state with stream 1 open, and the frames it queued taken.
    fn opened() -> State {
        let mut state = State::new(1 << 10);
        let mut request = Request {
            path: b"/basalt.v1.Table/Get",
            authority: b"localhost:16020",
            fields: &[],
            message: Bytes::from_static(b"x"),
        };
        let opened = state.poll_open(&mut Context::from_waker(Waker::noop()), &mut request);
        assert!(matches!(opened, Poll::Ready(Ok(1))));
        state.out.clear();
        state
    }

    fn answer(state: &mut State) -> Poll<Result<super::super::Answer, Failure>> {
        state.poll_answer(&mut Context::from_waker(Waker::noop()), 1)
    }

    fn put(out: &mut Vec<u8>, kind: u8, flags: u8, payload: &[u8]) {
        f::put_head(out, payload.len(), kind, flags, 1);
        out.extend_from_slice(payload);
    }

    /// A head split over a padded, prioritised HEADERS frame and two CONTINUATIONs, data,
    /// and trailers, fed a few bytes at a time as a socket may deliver them: the call gets
    /// them whole, and bytes of a frame not yet whole wait in the buffer.
    #[test]
    fn frames_are_read_whole_across_reads_and_continuations() {
        let mut block = Vec::new();
        put_status(&mut block, 200);
        put_field(&mut block, b"content-type", b"application/grpc");
        let mut headers = vec![2]; // two bytes of padding
        headers.extend_from_slice(&[0, 0, 0, 0, 16]); // a priority, read past
        headers.extend_from_slice(&block[..3]);
        headers.extend_from_slice(&[0, 0]);
        let mut wire = Vec::new();
        put(
            &mut wire,
            f::HEADERS,
            f::PADDED | f::PRIORITY_FLAG,
            &headers,
        );
        put(&mut wire, f::CONTINUATION, 0, &block[3..6]);
        put(&mut wire, f::CONTINUATION, f::END_HEADERS, &block[6..]);
        put(&mut wire, f::DATA, 0, b"\0\0\0\0\x01z");
        let mut trailers = Vec::new();
        put_field(&mut trailers, b"grpc-status", b"0");
        put(
            &mut wire,
            f::HEADERS,
            f::END_HEADERS | f::END_STREAM,
            &trailers,
        );

        let mut state = opened();
        let mut decoder = hpack::Decoder::new(HEADER_TABLE_SIZE);
        let mut continuing = None;
        let mut read = BytesMut::new();
        for piece in wire.chunks(5) {
            read.extend_from_slice(piece);
            frames(&mut read, &mut decoder, &mut continuing, &mut state).unwrap();
            assert!(read.len() < f::HEAD_LEN + 16, "only a partial frame waits");
        }
        assert!(read.is_empty() && continuing.is_none());
        let Poll::Ready(Ok(a)) = answer(&mut state) else {
            panic!("the answer is whole");
        };
        let head: Vec<(&[u8], &[u8])> =
            a.head.iter().map(|f| (&f.name[..], &f.value[..])).collect();
        assert_eq!(
            head,
            [
                (&b":status"[..], &b"200"[..]),
                (b"content-type", b"application/grpc")
            ]
        );
        assert_eq!(&a.data[..], b"\0\0\0\0\x01z");
        assert_eq!(a.trailers.map(|t| t.len()), Some(1));
    }

    /// A header block another frame interrupts, a CONTINUATION with no block to continue,
    /// a frame over the largest this side takes, and a block that does not decode each end
    /// the connection with the error RFC 9113 names.
    #[test]
    fn broken_framing_ends_the_connection() {
        let mut interrupted = Vec::new();
        put(&mut interrupted, f::HEADERS, 0, &[0x88]);
        put(&mut interrupted, f::DATA, 0, b"x");
        let mut stray = Vec::new();
        put(&mut stray, f::CONTINUATION, f::END_HEADERS, &[0x88]);
        let mut oversized = Vec::new();
        f::put_head(&mut oversized, MAX_FRAME + 1, f::DATA, 0, 1);
        let mut undecodable = Vec::new();
        put(&mut undecodable, f::HEADERS, f::END_HEADERS, &[0xff]);
        for (wire, reason) in [
            (interrupted, Reason::PROTOCOL_ERROR),
            (stray, Reason::PROTOCOL_ERROR),
            (oversized, Reason::FRAME_SIZE_ERROR),
            (undecodable, Reason::COMPRESSION_ERROR),
        ] {
            let mut state = opened();
            let mut read = BytesMut::from(&wire[..]);
            let e = frames(
                &mut read,
                &mut hpack::Decoder::new(HEADER_TABLE_SIZE),
                &mut None,
                &mut state,
            )
            .unwrap_err();
            assert_eq!(e.0, reason, "{}", e.1);
        }
    }
}
