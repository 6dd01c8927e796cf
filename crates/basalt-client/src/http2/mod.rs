//! HTTP/2 for the native API's client (RFC 9113): unary gRPC calls on one connection, with
//! the frames and header compression the server speaks (`basalt_proto::http2`).
//!
//! h2, beneath the channel, kept each connection's streams in a store behind locks and
//! reference counts, a queue of frames per stream, a task's wake-up for each step of a call
//! and its own buffer for each frame, and it coded every request's deadline in Huffman's
//! code; its connection task was nearly half the client's CPU in a point read
//! (`BENCHMARKS.md`). Here a call encodes its header block and its message's DATA frames
//! straight into the connection's write buffer and waits for its stream's outcome; the
//! connection's task ([`task`]) writes what the calls queued in one system call a turn,
//! parses the frames it reads where they lie, and hands each stream its head, data and
//! trailers ([`state`]).
//!
//! What it speaks: streams it opens (never pushed: push is disabled), flow control both
//! ways, header blocks across CONTINUATION frames, padding, PING, SETTINGS (the server's
//! largest frame, window, header table size and stream limit followed), RST_STREAM, and
//! GOAWAY (the streams past its last id fail as lost, the rest finish). A fault of the
//! server's ends the connection with a GOAWAY naming it, and fails its calls as lost.
//!
//! # Invariants
//! - Lock order: `Shared::state` is a leaf, never held across an await.
//! - Every frame a call queues is followed by a wake-up of the connection's task if it
//!   waits (`wake_task`), so nothing queued is left unwritten.

mod state;
mod task;

use std::future::poll_fn;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::Poll;

use tokio::net::TcpStream;

use state::State;
pub(crate) use state::{Answer, Failure, Request};

/// One connection to a server; clones share it. The connection's task ends once the last
/// clone is gone and no call is left on it, or when the connection fails or the server
/// closes it.
#[derive(Clone, Debug)]
pub(crate) struct Connection {
    handle: Arc<Handle>,
}

/// What the clones share; its drop tells the task that no call can come any more.
#[derive(Debug)]
struct Handle {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    state: Mutex<State>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Wakes the connection's task if it waits for frames to write.
fn wake_task(state: &mut State) {
    if let Some(task) = state.task.take() {
        task.wake();
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        let mut state = self.shared.lock();
        state.unused = true;
        wake_task(&mut state);
    }
}

impl Connection {
    /// Starts HTTP/2 over `io` (connected, Nagle's algorithm off), its task on the current
    /// runtime; `ended` runs when the task ends. Answers larger than `max_answer` bytes
    /// (their gRPC framing included) fail their calls.
    pub(crate) fn start(
        io: TcpStream,
        max_answer: usize,
        ended: impl FnOnce() + Send + 'static,
    ) -> Connection {
        let shared = Arc::new(Shared {
            state: Mutex::new(State::new(max_answer)),
        });
        tokio::spawn(task::Driver::new(io, Arc::clone(&shared)).run(ended));
        Connection {
            handle: Arc::new(Handle { shared }),
        }
    }

    /// Whether a new call may start here: the connection has not ended, and the server is
    /// not going away.
    pub(crate) fn open_to_calls(&self) -> bool {
        self.handle.shared.lock().open_to_calls()
    }

    /// One call: its request out, its whole answer back.
    ///
    /// # Errors
    /// The call's [`Failure`].
    pub(crate) async fn call(&self, mut request: Request<'_>) -> Result<Answer, Failure> {
        let shared = &self.handle.shared;
        let id = poll_fn(|cx| {
            let mut state = shared.lock();
            let opened = state.poll_open(cx, &mut request);
            if let Poll::Ready(Ok(_)) = opened {
                wake_task(&mut state);
            }
            opened
        })
        .await?;
        let mut open = Open {
            shared,
            id,
            answered: false,
        };
        let answer = poll_fn(|cx| shared.lock().poll_answer(cx, id)).await;
        open.answered = true;
        answer
    }
}

/// A call's open stream: a call dropped before its answer resets it.
struct Open<'a> {
    shared: &'a Shared,
    id: u32,
    answered: bool,
}

impl Drop for Open<'_> {
    fn drop(&mut self) {
        if !self.answered {
            let mut state = self.shared.lock();
            state.cancel(self.id);
            wake_task(&mut state);
        }
    }
}

#[cfg(test)]
mod tests;
