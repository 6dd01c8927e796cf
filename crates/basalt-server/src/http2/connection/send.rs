//! The connection's answers: heads, data within the peer's windows, trailers, the windows
//! given back to the peer, and the gathered bytes written.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::LazyLock;
use std::task::{Context, Poll};

use http::HeaderMap;
use tokio::io::{AsyncRead, AsyncWrite};

use super::{Connection, Reply, RETAINED, WRITE_LIMIT};
use crate::http2::frame::{self as f, Reason};
use crate::http2::hpack;
use crate::http2::stream::{Outgoing, Trailers};

/// A unary answer's head (`:status: 200`, `content-type: application/grpc`), encoded once:
/// every such answer sends the same block, and encoding it looked its name up in the static
/// table each time.
static UNARY_HEAD: LazyLock<Vec<u8>> = LazyLock::new(|| {
    let mut block = Vec::new();
    hpack::put_status(&mut block, 200);
    hpack::put_field(&mut block, b"content-type", b"application/grpc");
    block
});

/// A unary answer's trailers (`grpc-status: 0`), encoded once.
static GRPC_OK: LazyLock<Vec<u8>> = LazyLock::new(|| {
    let mut block = Vec::new();
    hpack::put_field(&mut block, b"grpc-status", b"0");
    block
});

impl<T: AsyncRead + AsyncWrite + Unpin> Connection<T> {
    /// Writes the answer to stream `id`, as far as the windows let it; an answer to a stream
    /// no longer open (its client reset it) is dropped.
    pub fn answer(&mut self, id: u32, reply: Reply) {
        let Some(i) = self.find(id) else {
            return;
        };
        let out = match reply {
            Reply::Reset(reason) => {
                f::put_rst_stream(&mut self.write, id, reason);
                self.remove(i, reason);
                return;
            }
            Reply::Unary(message) => {
                f::put_headers(&mut self.write, id, &UNARY_HEAD, false, self.max_frame);
                Outgoing {
                    data: VecDeque::from([message]),
                    trailers: Some(Trailers::GrpcOk),
                }
            }
            Reply::Answer {
                head,
                data,
                trailers,
            } => {
                let out = Outgoing {
                    data,
                    trailers: trailers.map(Trailers::Fields),
                };
                put_header_block(
                    &mut self.write,
                    &mut self.scratch,
                    (id, Some(head.status.as_u16())),
                    &head.headers,
                    out.is_empty(),
                    self.max_frame,
                );
                out
            }
        };
        let stream = &mut self.streams[i];
        stream.answered = true;
        // A head alone (trailers only) ended the stream.
        if out.is_empty() {
            self.closed_locally(i);
            return;
        }
        stream.out = Some(out);
        self.send(i);
    }

    /// Writes what stream `i` has left to send, as far as the windows and the write buffer
    /// let it; queues the stream in `blocked` when they stop it.
    pub(super) fn send(&mut self, i: usize) {
        let Connection {
            streams,
            write,
            scratch,
            send_window,
            blocked,
            max_frame,
            ..
        } = self;
        let stream = &mut streams[i];
        let Some(out) = &mut stream.out else {
            return;
        };
        while let Some(front) = out.data.front_mut() {
            let room = stream.send_window.min(*send_window).min(*max_frame as i64);
            if room <= 0 || write.len() >= WRITE_LIMIT {
                if !blocked.contains(&stream.id) {
                    blocked.push_back(stream.id);
                }
                return;
            }
            let n = usize::try_from(room).unwrap_or(0).min(front.len());
            let chunk = front.split_to(n);
            if front.is_empty() {
                out.data.pop_front();
            }
            let end = out.data.is_empty() && out.trailers.is_none();
            f::put_head(
                write,
                n,
                f::DATA,
                if end { f::END_STREAM } else { 0 },
                stream.id,
            );
            write.extend_from_slice(&chunk);
            let n = i64::try_from(n).unwrap_or(i64::MAX);
            stream.send_window -= n;
            *send_window -= n;
        }
        match out.trailers.take() {
            Some(Trailers::Fields(trailers)) => {
                put_header_block(
                    write,
                    scratch,
                    (stream.id, None),
                    &trailers,
                    true,
                    *max_frame,
                );
            }
            Some(Trailers::GrpcOk) => {
                f::put_headers(write, stream.id, &GRPC_OK, true, *max_frame);
            }
            None => {}
        }
        stream.out = None;
        self.closed_locally(i);
    }

    /// Sends what the blocked streams can, each in turn once.
    pub(super) fn send_blocked(&mut self) {
        for _ in 0..self.blocked.len() {
            let Some(id) = self.blocked.pop_front() else {
                break;
            };
            if let Some(i) = self.find(id) {
                self.send(i);
            }
        }
    }

    /// Stream `i` sent its last frame: it is removed if the peer is done too, and otherwise
    /// reset, so the peer stops sending what no one will read (RFC 9113 8.1).
    pub(super) fn closed_locally(&mut self, i: usize) {
        let stream = &self.streams[i];
        if !stream.remote_closed {
            f::put_rst_stream(&mut self.write, stream.id, Reason::NO_ERROR);
        }
        self.remove(i, Reason::NO_ERROR);
    }

    /// Gives back the bytes the calls took: a WINDOW_UPDATE for each window owed half of
    /// itself.
    pub fn release(&mut self) {
        let half = i64::from(self.settings.window) / 2;
        for stream in &mut self.streams {
            let taken = i64::try_from(stream.recv.taken()).unwrap_or(i64::MAX);
            self.unannounced += taken;
            if stream.remote_closed {
                continue;
            }
            stream.unannounced += taken;
            if stream.unannounced >= half {
                let increment = u32::try_from(stream.unannounced).unwrap_or(u32::MAX);
                f::put_window_update(&mut self.write, stream.id, increment);
                stream.recv_window += stream.unannounced;
                stream.unannounced = 0;
            }
        }
        if self.unannounced >= half {
            let increment = u32::try_from(self.unannounced).unwrap_or(u32::MAX);
            f::put_window_update(&mut self.write, 0, increment);
            self.recv_window += self.unannounced;
            self.unannounced = 0;
        }
    }

    /// Writes what was gathered; ready with whether anything was written, once all of it is.
    ///
    /// # Errors
    /// The socket failed.
    pub fn poll_flush(&mut self, cx: &mut Context<'_>) -> Poll<Result<bool, String>> {
        let mut wrote = false;
        loop {
            while self.written < self.write.len() {
                let unwritten = &self.write[self.written..];
                match Pin::new(&mut self.io).poll_write(cx, unwritten) {
                    Poll::Ready(Ok(0)) => {
                        return Poll::Ready(Err("the connection closed".to_owned()))
                    }
                    Poll::Ready(Ok(n)) => {
                        self.written += n;
                        wrote = true;
                    }
                    Poll::Ready(Err(e)) => {
                        return Poll::Ready(Err(format!("writing the connection failed: {e}")))
                    }
                    Poll::Pending => return Poll::Pending,
                }
            }
            self.written = 0;
            if self.write.capacity() > 4 * RETAINED {
                self.write = Vec::with_capacity(RETAINED);
            } else {
                self.write.clear();
            }
            // Streams held back by the full buffer may go on now.
            self.send_blocked();
            if self.write.is_empty() {
                break;
            }
        }
        if wrote {
            if let Poll::Ready(Err(e)) = Pin::new(&mut self.io).poll_flush(cx) {
                return Poll::Ready(Err(format!("writing the connection failed: {e}")));
            }
        }
        Poll::Ready(Ok(wrote))
    }
}

/// Appends a header block for `stream`: `:status` when a head has one, then `headers`,
/// encoded in `scratch` (kept between calls, so no answer allocates its block).
fn put_header_block(
    write: &mut Vec<u8>,
    scratch: &mut Vec<u8>,
    (stream, status): (u32, Option<u16>),
    headers: &HeaderMap,
    end_stream: bool,
    max_frame: usize,
) {
    scratch.clear();
    if let Some(status) = status {
        hpack::put_status(scratch, status);
    }
    for (name, value) in headers {
        hpack::put_field(scratch, name.as_str().as_bytes(), value.as_bytes());
    }
    f::put_headers(write, stream, scratch, end_stream, max_frame);
}
