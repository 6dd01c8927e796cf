//! A connection whose writes are gathered until its task yields, so that an HTTP/2 exchange
//! reaches the socket in one system call instead of one per frame. The native client's
//! connections (over h2) use it; the server writes its own frames into one buffer a pass
//! (`basalt-server`'s `http2`).
//!
//! h2 writes a DATA frame whose payload is over 256 bytes straight from the payload's buffer
//! and flushes before it will queue the next frame, so a request (HEADERS, then DATA from the
//! body's own task) costs two `writev` calls, as a unary gRPC answer (HEADERS, DATA, then the
//! trailers) did when the server wrote through h2. Each is a trip through the kernel's TCP stack and, over
//! loopback, a wake-up of the peer: on two cores these calls were the largest cost of a
//! point read.
//!
//! [`Coalesced`] copies what is written into its buffer and answers the first flush of a turn
//! at once after waking its own task, the way `yield_now` does: the tasks already ready run
//! first (the body of a request, the answers of other streams), their frames join the
//! buffer, and the bytes are written by the first read, or the first flush of a later turn.
//! A turn is one poll of the task that drives the connection; the task counts them with the
//! [`Turns`] it shares with its connection. Every further flush in the turn that deferred is
//! answered at once too: an answer of many streams is many DATA frames, each of them flushed,
//! and a flush that wrote would send the answers two frames to a system call. A task that is
//! dropped instead loses only what a dropped connection loses anyway.
//!
//! # Invariants
//! - `pending` is empty or holds bytes accepted and not yet written; `written` is the prefix
//!   of it already written.
//! - `deferred` names the turn whose flush was answered early. It is set only while `pending`
//!   is non-empty and a wake-up of the task is owed from that flush: the task's next turn
//!   reads or flushes, and either writes the bytes.
//! - `pending` never holds more than [`GATHER_LIMIT`] bytes; larger writes pass through once
//!   what was gathered before them is written.

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// The most bytes gathered before they are written (also the largest write copied).
pub const GATHER_LIMIT: usize = 64 << 10;

/// A buffer kept between writes; a larger one (after a burst) is given back once written.
const RETAINED: usize = 16 << 10;

/// The turns of the task that drives a connection: it calls [`Turns::begin`] each time it is
/// polled, before it polls the connection.
#[derive(Clone, Debug, Default)]
pub struct Turns(Arc<AtomicU64>);

impl Turns {
    /// A new turn of the task begins.
    pub fn begin(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }

    fn now(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// A connection whose writes are gathered until its task yields (see the module's notes).
#[derive(Debug)]
pub struct Coalesced<T> {
    inner: T,
    pending: Vec<u8>,
    written: usize,
    turns: Turns,
    deferred: Option<u64>,
}

impl<T> Coalesced<T> {
    /// Wraps `inner`, driven by a task that counts its turns with `turns`.
    pub fn new(inner: T, turns: &Turns) -> Coalesced<T> {
        Coalesced {
            inner,
            pending: Vec::new(),
            written: 0,
            turns: turns.clone(),
            deferred: None,
        }
    }
}

impl<T: AsyncWrite + Unpin> Coalesced<T> {
    /// Writes everything gathered.
    fn poll_drain(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while self.written < self.pending.len() {
            let n =
                ready!(Pin::new(&mut self.inner).poll_write(cx, &self.pending[self.written..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.written += n;
        }
        self.written = 0;
        self.deferred = None;
        if self.pending.capacity() > RETAINED {
            self.pending = Vec::new();
        } else {
            self.pending.clear();
        }
        Poll::Ready(Ok(()))
    }

    /// Makes room for `len` more bytes: writes what was gathered when they would not fit.
    /// Ready(true) when they are to be gathered, Ready(false) when they are to pass through.
    fn poll_room(&mut self, cx: &mut Context<'_>, len: usize) -> Poll<io::Result<bool>> {
        if self.pending.len() + len > GATHER_LIMIT {
            ready!(self.poll_drain(cx))?;
        }
        Poll::Ready(Ok(len < GATHER_LIMIT))
    }
}

impl<T: AsyncRead + AsyncWrite + Unpin> AsyncRead for Coalesced<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let me = self.get_mut();
        // Whatever was gathered goes out before the task waits for the peer. A socket that
        // cannot take it now wakes the task when it can.
        if !me.pending.is_empty() {
            if let Poll::Ready(Err(e)) = me.poll_drain(cx) {
                return Poll::Ready(Err(e));
            }
        }
        Pin::new(&mut me.inner).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Coalesced<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let me = self.get_mut();
        if ready!(me.poll_room(cx, buf.len()))? {
            me.pending.extend_from_slice(buf);
            return Poll::Ready(Ok(buf.len()));
        }
        Pin::new(&mut me.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let me = self.get_mut();
        let len = bufs.iter().map(|b| b.len()).sum();
        if ready!(me.poll_room(cx, len))? {
            for b in bufs {
                me.pending.extend_from_slice(b);
            }
            return Poll::Ready(Ok(len));
        }
        Pin::new(&mut me.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let me = self.get_mut();
        if !me.pending.is_empty() {
            let now = me.turns.now();
            match me.deferred {
                None => {
                    // Answered now; written by the task's next turn, which this wake-up owes.
                    me.deferred = Some(now);
                    cx.waker().wake_by_ref();
                    return Poll::Ready(Ok(()));
                }
                // The turn that deferred is still on: the wake-up owed covers this flush too.
                Some(turn) if turn == now => return Poll::Ready(Ok(())),
                Some(_) => ready!(me.poll_drain(cx))?,
            }
        }
        Pin::new(&mut me.inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let me = self.get_mut();
        ready!(me.poll_drain(cx))?;
        Pin::new(&mut me.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::task::Wake;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};

    use super::*;

    /// Counts its wake-ups.
    #[derive(Default)]
    struct Wakes(AtomicUsize);

    impl Wake for Wakes {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// A connected pair of real sockets: ours, wrapped (its turns counted by the returned
    /// `Turns`), and the peer's.
    async fn pair() -> (Coalesced<TcpStream>, TcpStream, Turns) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let ours = TcpStream::connect(listener.local_addr().unwrap())
            .await
            .unwrap();
        let (peer, _) = listener.accept().await.unwrap();
        let turns = Turns::default();
        (Coalesced::new(ours, &turns), peer, turns)
    }

    /// Whether the peer has received anything yet. Nothing was sent when this is false
    /// right after writes the wrapper only gathered.
    fn received_any(peer: &TcpStream) -> bool {
        let mut b = [0u8; 1];
        match peer.try_read(&mut b) {
            Ok(n) => n > 0,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => false,
            Err(e) => panic!("{e}"),
        }
    }

    /// The value of a call that must be done at once.
    fn done<T: std::fmt::Debug>(p: Poll<io::Result<T>>) -> T {
        match p {
            Poll::Ready(Ok(v)) => v,
            other => panic!("expected a finished call, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn the_flushes_of_a_turn_gather_and_the_next_turn_s_flush_writes_everything() {
        let (mut ours, mut peer, turns) = pair().await;
        let wakes = Arc::new(Wakes::default());
        let waker = std::task::Waker::from(Arc::clone(&wakes));
        let mut cx = Context::from_waker(&waker);
        let mut io = Pin::new(&mut ours);
        turns.begin();
        assert_eq!(done(io.as_mut().poll_write(&mut cx, b"head")), 4);
        let parts = [io::IoSlice::new(b"-da"), io::IoSlice::new(b"ta")];
        assert_eq!(done(io.as_mut().poll_write_vectored(&mut cx, &parts)), 5);
        done(io.as_mut().poll_flush(&mut cx));
        let woken = || wakes.0.load(Ordering::SeqCst);
        assert_eq!(woken(), 1, "the early answer owes a wake-up");
        assert!(!received_any(&peer), "the first flush only gathers");
        assert_eq!(done(io.as_mut().poll_write(&mut cx, b"-tail")), 5);
        done(io.as_mut().poll_flush(&mut cx));
        assert_eq!(
            woken(),
            1,
            "the wake-up owed covers the turn's later flushes"
        );
        assert!(
            !received_any(&peer),
            "a later flush of the same turn only gathers"
        );
        turns.begin();
        done(io.as_mut().poll_flush(&mut cx));
        assert_eq!(woken(), 1, "a real flush owes nothing");
        let mut got = [0u8; 14];
        peer.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b"head-data-tail");
    }

    #[tokio::test]
    async fn a_read_writes_what_was_gathered_before_it_waits() {
        let (mut ours, mut peer, _turns) = pair().await;
        ours.write_all(b"ping").await.unwrap();
        ours.flush().await.unwrap();
        assert!(!received_any(&peer));
        let mut answer = [0u8; 4];
        let reading = async {
            ours.read_exact(&mut answer).await.unwrap();
        };
        let peer_side = async {
            let mut got = [0u8; 4];
            peer.read_exact(&mut got).await.unwrap();
            assert_eq!(&got, b"ping");
            peer.write_all(b"pong").await.unwrap();
        };
        tokio::join!(reading, peer_side);
        assert_eq!(&answer, b"pong");
    }

    #[tokio::test]
    async fn writes_past_the_limit_go_out_without_a_flush_in_order() {
        let (mut ours, mut peer, _turns) = pair().await;
        ours.write_all(b"small").await.unwrap();
        let big = vec![7u8; GATHER_LIMIT];
        let writing = async {
            ours.write_all(&big).await.unwrap();
            ours
        };
        let reading = async {
            let mut got = vec![0u8; 5 + GATHER_LIMIT];
            peer.read_exact(&mut got).await.unwrap();
            got
        };
        let (_ours, got) = tokio::join!(writing, reading);
        assert_eq!(&got[..5], b"small");
        assert!(got[5..].iter().all(|b| *b == 7));
    }

    #[tokio::test]
    async fn shutdown_writes_what_was_gathered_then_closes() {
        let (mut ours, mut peer, _turns) = pair().await;
        ours.write_all(b"last words").await.unwrap();
        ours.shutdown().await.unwrap();
        let mut got = Vec::new();
        peer.read_to_end(&mut got).await.unwrap();
        assert_eq!(got, b"last words");
    }
}
