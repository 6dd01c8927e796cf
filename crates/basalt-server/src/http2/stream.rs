//! One stream's two sides: what the connection keeps of it ([`Stream`]), and the request's
//! bytes as its call reads them ([`Recv`], read through [`Incoming`]).
//!
//! A call runs on its connection's task, but its future must be `Send`, so the bytes the
//! connection hands over cross through a mutex that is never contended: the connection
//! pushes, the call's body takes, both on one thread.
//!
//! # Invariants
//! - Every byte a DATA frame brought is given back to the peer's windows exactly once: when
//!   the body takes it ([`Recv::taken`]), or when the stream is closed with it unread
//!   ([`Recv::close`]).

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use bytes::Bytes;
use http_body::Frame;
use parking_lot::Mutex;
use tonic::Status;

use super::frame::Reason;

/// A request's bytes, between the connection that reads them and the call's body (lock
/// order: a leaf, held only while bytes or a waker are moved).
#[derive(Debug, Default)]
pub struct Recv(Mutex<RecvState>);

#[derive(Debug, Default)]
struct RecvState {
    data: VecDeque<Bytes>,
    /// The peer sent its last frame.
    ended: bool,
    /// The stream was closed before the call was done with it, and why.
    closed: Option<Reason>,
    /// Bytes the body took that the connection has not yet given back.
    taken: usize,
    /// The call's task, waiting for bytes or for the stream to close.
    waker: Option<Waker>,
}

impl RecvState {
    fn wake(&mut self) {
        if let Some(waker) = self.waker.take() {
            waker.wake();
        }
    }
}

impl Recv {
    /// The peer's bytes arrived (empty when a frame carried none), and maybe its last.
    pub fn push(&self, data: Bytes, end: bool) {
        let mut state = self.0.lock();
        if !data.is_empty() {
            state.data.push_back(data);
        }
        state.ended |= end;
        state.wake();
    }

    /// The bytes the body took since the last call, to give back to the peer.
    pub fn taken(&self) -> usize {
        std::mem::take(&mut self.0.lock().taken)
    }

    /// Closes the stream for `reason`: a body still reading fails, a call still waiting ends.
    /// Answers the bytes the connection must give back: those taken and those never read.
    pub fn close(&self, reason: Reason) -> usize {
        let mut state = self.0.lock();
        let unread: usize = state.data.drain(..).map(|d| d.len()).sum();
        state.closed.get_or_insert(reason);
        state.wake();
        unread + std::mem::take(&mut state.taken)
    }

    /// Ready with the reason once the stream was closed under its call.
    pub fn poll_closed(&self, cx: &mut Context<'_>) -> Poll<Reason> {
        let mut state = self.0.lock();
        match state.closed {
            Some(reason) => Poll::Ready(reason),
            None => {
                state.waker = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}

/// A request's body, as its call reads it.
#[derive(Debug)]
pub struct Incoming(pub Arc<Recv>);

impl http_body::Body for Incoming {
    type Data = Bytes;
    type Error = Status;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Status>>> {
        let mut state = self.0 .0.lock();
        if let Some(data) = state.data.pop_front() {
            state.taken += data.len();
            return Poll::Ready(Some(Ok(Frame::data(data))));
        }
        if let Some(reason) = state.closed {
            let status = if reason == Reason::CANCEL {
                Status::cancelled("the client cancelled the call")
            } else {
                Status::unavailable(format!(
                    "the request's stream closed before its end (HTTP/2 error {})",
                    reason.0
                ))
            };
            return Poll::Ready(Some(Err(status)));
        }
        if state.ended {
            return Poll::Ready(None);
        }
        state.waker = Some(cx.waker().clone());
        Poll::Pending
    }

    fn is_end_stream(&self) -> bool {
        let state = self.0 .0.lock();
        state.ended && state.data.is_empty()
    }
}

/// An answer's bytes still to send on its stream.
#[derive(Debug)]
pub struct Outgoing {
    pub data: VecDeque<Bytes>,
    /// The trailers, sent once the data is.
    pub trailers: Option<Trailers>,
}

impl Outgoing {
    /// Nothing to send after the head: no data and no trailers.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty() && self.trailers.is_none()
    }
}

/// An answer's trailers.
#[derive(Debug)]
pub enum Trailers {
    Fields(http::HeaderMap),
    /// `grpc-status: 0`: a gRPC call succeeded.
    GrpcOk,
}

/// What the connection keeps of one open stream.
#[derive(Debug)]
pub struct Stream {
    pub id: u32,
    pub recv: Arc<Recv>,
    /// What the peer may still send before this side gives bytes back.
    pub recv_window: i64,
    /// Bytes taken and not yet given back in a WINDOW_UPDATE.
    pub unannounced: i64,
    /// The peer sent END_STREAM.
    pub remote_closed: bool,
    /// What this side may still send.
    pub send_window: i64,
    /// The answer's head was sent.
    pub answered: bool,
    /// The answer's rest, while flow control or the write buffer holds it back.
    pub out: Option<Outgoing>,
}

impl Stream {
    /// This side sent its last frame.
    pub fn local_closed(&self) -> bool {
        self.answered && self.out.is_none()
    }
}
