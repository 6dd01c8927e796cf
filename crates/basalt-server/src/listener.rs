//! Listeners that keep the server serving its clients when someone opens thousands of silent
//! connections (RELIABILITY.md D6, D7), used by the native API and the web page (the Thrift
//! gateway, thread per connection, applies the same rules with blocking sockets).
//!
//! - **A cap with backpressure**: at most `max_connections` are served at once; past that the
//!   listener stops accepting, so new connections wait in the kernel's accept queue (as
//!   HBase's RPC server queues them) instead of being accepted and reset.
//! - **Deadlines**: a connection must send its first byte within `first_byte`, and is closed
//!   after `idle` without one. The native API pings its HTTP/2 clients well within `idle`,
//!   so a live client, even one waiting on a long call, always has bytes to send back.
//! - **No busy loop**: when accepting fails (out of file descriptors, say) the listener
//!   pauses before trying again, instead of spinning on the error.
//!
//! # Thread safety
//! One task accepts for a listener; each connection holds a permit of the listener's
//! semaphore until it is dropped.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, OwnedSemaphorePermit, Semaphore};
use tokio::time::{Instant, Sleep};

/// How long accepting pauses after it failed.
const ACCEPT_PAUSE: Duration = Duration::from_millis(100);

/// A listener's connection rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// Connections served at once; more wait to be accepted.
    pub max_connections: usize,
    /// How long a new connection may stay silent.
    pub first_byte: Duration,
    /// How long a connection may go without sending a byte.
    pub idle: Duration,
}

impl ConnectionLimits {
    /// The native API's: 10,000 connections, 10 s for the first byte, 10 minutes idle.
    #[must_use]
    pub fn native() -> ConnectionLimits {
        ConnectionLimits {
            max_connections: 10_000,
            first_byte: Duration::from_secs(10),
            idle: Duration::from_secs(600),
        }
    }

    /// The REST gateway's (Jetty's defaults: 30 s idle): 10 000 connections, 10 s for the
    /// first byte.
    #[must_use]
    pub fn rest() -> ConnectionLimits {
        ConnectionLimits {
            max_connections: 10_000,
            first_byte: Duration::from_secs(10),
            idle: Duration::from_secs(30),
        }
    }

    /// The web page's: 256 connections, 10 s for the first byte, 60 s idle.
    #[must_use]
    pub fn info() -> ConnectionLimits {
        ConnectionLimits {
            max_connections: 256,
            first_byte: Duration::from_secs(10),
            idle: Duration::from_secs(60),
        }
    }
}

/// An accepted connection: the socket, its permit, and its read deadline.
#[derive(Debug)]
pub struct Guarded {
    inner: TcpStream,
    permit: OwnedSemaphorePermit,
    deadline: Pin<Box<Sleep>>,
    limits: ConnectionLimits,
}

impl Guarded {
    fn new(inner: TcpStream, permit: OwnedSemaphorePermit, limits: ConnectionLimits) -> Self {
        Guarded {
            inner,
            permit,
            deadline: Box::pin(tokio::time::sleep(limits.first_byte)),
            limits,
        }
    }

    /// The connection taken off the current runtime's reactor and timers, to be served by
    /// another runtime (an event loop).
    ///
    /// # Errors
    /// The socket could not be deregistered.
    pub fn unbind(self) -> io::Result<Unbound> {
        Ok(Unbound {
            socket: self.inner.into_std()?,
            permit: self.permit,
            limits: self.limits,
        })
    }
}

/// An accepted connection on its way to the runtime that will serve it, holding its permit.
#[derive(Debug)]
pub struct Unbound {
    socket: std::net::TcpStream,
    permit: OwnedSemaphorePermit,
    limits: ConnectionLimits,
}

impl Unbound {
    /// The client's address.
    ///
    /// # Errors
    /// The socket has no peer (it was reset).
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.socket.peer_addr()
    }

    /// The connection on the current runtime, its first-byte deadline started afresh.
    ///
    /// # Errors
    /// The socket could not be registered with the runtime's reactor.
    pub fn bind(self) -> io::Result<Guarded> {
        Ok(Guarded::new(
            TcpStream::from_std(self.socket)?,
            self.permit,
            self.limits,
        ))
    }
}

impl AsyncRead for Guarded {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        match Pin::new(&mut self.inner).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                if buf.filled().len() > before {
                    let next = Instant::now() + self.limits.idle;
                    self.deadline.as_mut().reset(next);
                }
                Poll::Ready(Ok(()))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => match self.deadline.as_mut().poll(cx) {
                Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "the connection sent nothing for too long",
                ))),
                Poll::Pending => Poll::Pending,
            },
        }
    }
}

impl AsyncWrite for Guarded {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

/// Connections accepted under `limits`, in the order they came.
#[derive(Debug)]
pub struct Accepted {
    rx: mpsc::Receiver<(Guarded, SocketAddr)>,
    local: SocketAddr,
}

impl Accepted {
    /// Starts accepting on `listener` (on the current runtime) under `limits`; `what` names
    /// the listener in the log. Accepting stops when this is dropped.
    ///
    /// # Errors
    /// The listener has no local address.
    pub fn start(
        listener: TcpListener,
        limits: ConnectionLimits,
        what: &'static str,
    ) -> io::Result<Accepted> {
        let local = listener.local_addr()?;
        let (tx, rx) = mpsc::channel(16);
        let permits = Arc::new(Semaphore::new(limits.max_connections));
        tokio::spawn(async move {
            loop {
                // Backpressure: no permit, no accept.
                let Ok(permit) = Arc::clone(&permits).acquire_owned().await else {
                    return;
                };
                let accepted = tokio::select! {
                    a = listener.accept() => a,
                    () = tx.closed() => return,
                };
                match accepted {
                    Ok((stream, peer)) => {
                        if let Err(e) = stream.set_nodelay(true) {
                            tracing::debug!(error = %e, "could not turn Nagle's algorithm off");
                        }
                        let conn = Guarded::new(stream, permit, limits);
                        if tx.send((conn, peer)).await.is_err() {
                            return;
                        }
                    }
                    Err(e) => {
                        tracing::warn!(listener = what, error = %e, "accepting a connection failed; pausing");
                        tokio::time::sleep(ACCEPT_PAUSE).await;
                    }
                }
            }
        });
        Ok(Accepted { rx, local })
    }

    /// The next connection; `None` once accepting stopped.
    pub async fn next(&mut self) -> Option<Guarded> {
        self.rx.recv().await.map(|(c, _)| c)
    }
}

impl axum::serve::Listener for Accepted {
    type Io = Guarded;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Guarded, SocketAddr) {
        match self.rx.recv().await {
            Some(c) => c,
            // The accepting task ends only when this is dropped.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        Ok(self.local)
    }
}

/// File descriptors the engine keeps for itself (store files, WAL segments, metadata) beyond
/// what connections may take: a quarter of the limit, and at least 256.
fn engine_reserve(limit: u64) -> u64 {
    (limit / 4).max(256)
}

/// The process's descriptor limit, raised to its hard limit where that is allowed (as most
/// servers do at start).
fn descriptor_limit() -> u64 {
    use rustix::process::{getrlimit, setrlimit, Resource};
    let l = getrlimit(Resource::Nofile);
    let (soft, hard) = (l.current.unwrap_or(u64::MAX), l.maximum.unwrap_or(u64::MAX));
    let wanted = hard.min(1 << 20);
    if wanted > soft {
        let raised = rustix::process::Rlimit {
            current: Some(wanted),
            maximum: l.maximum,
        };
        if setrlimit(Resource::Nofile, raised).is_ok() {
            return wanted;
        }
    }
    soft
}

/// Lowers the listeners' connection caps (in place) so that all of them together, plus what
/// the engine keeps for its files, fit in the process's descriptor limit: connections can then
/// never starve the WAL or a flush of a descriptor (RELIABILITY.md D7). Each cap comes with
/// the descriptors one of its connections holds (a Thrift connection holds three: its socket
/// and the clones its writer and the stop use). Each cap keeps at least a few connections.
/// Returns the descriptors left for connections.
pub fn fit_to_descriptors(caps: &mut [(&mut usize, u64)]) -> u64 {
    fit_caps(caps, descriptor_limit())
}

fn fit_caps(caps: &mut [(&mut usize, u64)], limit: u64) -> u64 {
    const FLOOR: usize = 8;
    let for_connections = limit.saturating_sub(engine_reserve(limit));
    let total: u64 = caps.iter().map(|(c, per)| (**c as u64) * per).sum();
    if total > for_connections && total > 0 {
        for (c, _) in caps.iter_mut() {
            // Each listener keeps its share of the descriptors.
            let share = (**c as u64).saturating_mul(for_connections) / total;
            **c = usize::try_from(share).unwrap_or(usize::MAX).max(FLOOR);
        }
        tracing::warn!(
            descriptor_limit = limit,
            connections = for_connections,
            "connection caps lowered to fit the file descriptor limit (raise `ulimit -n` for more)"
        );
    }
    for_connections
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_shrink_to_leave_the_engine_its_descriptors() {
        let (mut native, mut info, mut thrift) = (10_000, 256, 1_000);
        let left = fit_caps(
            &mut [(&mut native, 1), (&mut info, 1), (&mut thrift, 3)],
            1024,
        );
        assert_eq!(left, 768);
        assert!(
            native + info + 3 * thrift <= 768 + 8,
            "{native} {info} {thrift}"
        );
        assert!(native > thrift && thrift > info && info >= 8);
        // Enough descriptors: nothing changes.
        let (mut a, mut b) = (100, 10);
        fit_caps(&mut [(&mut a, 1), (&mut b, 1)], 1 << 20);
        assert_eq!((a, b), (100, 10));
    }
}
