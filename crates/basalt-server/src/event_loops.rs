//! The native API's event loops: one runtime with a single worker per core, each serving
//! the connections handed to it from their first frame to their last, as Netty's event loop
//! group serves HBase's RPC.
//!
//! On tokio's work-stealing runtime a call's tasks (the connection's, the engine's answer)
//! hop between worker threads: every hop wakes a parked worker through a futex and switches
//! context, and on two cores that cost more than the call itself. A connection bound to one
//! loop never hops; the loops share the load by taking connections in turn. Each connection
//! is one task that reads its calls and answers them ([`serve_connection`]); calls that may
//! wait on the disk still go to the loop's blocking pool.
//!
//! A loop is a one-worker multi-thread runtime rather than a current-thread one for its LIFO
//! slot: the task a wake-up names runs next, so a connection whose call came back from the
//! blocking pool, or whose gathered answers are due, runs before other ready connections.
//! On a current-thread runtime a connection waited behind every other ready task, answers
//! left in lock-step batches, and client and server took turns idling (20k against 37k
//! reads a second, YCSB C on two cores). The loop's own thread drives only the accepting
//! side.
//!
//! A connection's socket is moved to its loop's reactor before its first read (the accepting
//! task registered it with the main runtime's).
//!
//! # Thread safety
//! Each loop is a thread that owns its runtime and its worker. The connections reach it over a channel; the
//! stop signal is shared. A loop's thread drops its runtime before it reports that it stopped,
//! so nothing it ran outlives the report.

use std::io;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinSet;

use crate::listener::{Accepted, Unbound};
use crate::rpc_server::{serve_connection, Route};

/// Connections waiting for a loop to take them.
const HANDOFF_QUEUE: usize = 64;

/// The event loops serving one gRPC listener.
pub struct EventLoops {
    /// Each loop's word that it stopped serving (its last connection ended).
    stopped: Vec<oneshot::Receiver<()>>,
}

impl EventLoops {
    /// One loop per core, as many as the machine runs at once.
    #[must_use]
    pub fn default_count() -> usize {
        std::thread::available_parallelism().map_or(1, std::num::NonZero::get)
    }

    /// Starts `count` loops named `name-N`, each serving `routes` to the connections it is
    /// handed (pinging each every `ping`), and the task (on the current runtime) that hands
    /// out `accepted`'s connections in turn. Once `stop` holds `true` each connection stops
    /// as [`serve_connection`] does, and a loop stops when its last connection has.
    ///
    /// # Errors
    /// A loop's thread or runtime could not start.
    pub fn start<R: Route>(
        name: &str,
        count: usize,
        routes: &R,
        ping: Duration,
        accepted: Accepted,
        stop: &watch::Receiver<bool>,
    ) -> io::Result<EventLoops> {
        let mut handoffs = Vec::new();
        let mut stopped = Vec::new();
        for n in 0..count.max(1) {
            let (tx, rx) = mpsc::channel::<Unbound>(HANDOFF_QUEUE);
            let (done_tx, done_rx) = oneshot::channel();
            let routes = routes.clone();
            let stop = stop.clone();
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .thread_name(format!("{name}-{n}"))
                .enable_all()
                .build()?;
            std::thread::Builder::new()
                .name(format!("{name}-{n}"))
                .spawn(move || {
                    runtime.block_on(serve_loop(rx, routes, ping, stop));
                    drop(runtime);
                    let _ = done_tx.send(());
                })?;
            handoffs.push(tx);
            stopped.push(done_rx);
        }
        tokio::spawn(hand_out(accepted, handoffs));
        Ok(EventLoops { stopped })
    }

    /// Waits until every loop stopped.
    ///
    /// # Errors
    /// A loop's thread ended without saying it stopped (it panicked).
    pub async fn stopped(self) -> Result<(), String> {
        let mut first = Ok(());
        for loop_stopped in self.stopped {
            if loop_stopped.await.is_err() && first.is_ok() {
                first = Err("an event loop's thread ended abruptly".to_owned());
            }
        }
        first
    }
}

/// One loop: serves each connection it is handed on a task of its own, until it is told to
/// stop (or no more connections can come) and its last connection has ended.
async fn serve_loop<R: Route>(
    mut handed: mpsc::Receiver<Unbound>,
    routes: R,
    ping: Duration,
    stop: watch::Receiver<bool>,
) {
    let mut connections = JoinSet::new();
    let mut stopping = stop.clone();
    let stopping = stopping.wait_for(|s| *s);
    tokio::pin!(stopping);
    loop {
        tokio::select! {
            conn = handed.recv() => match conn.map(Unbound::bind) {
                Some(Ok(io)) => {
                    let served = serve_connection(io, routes.clone(), ping, stop.clone());
                    connections.spawn(served);
                }
                Some(Err(e)) => {
                    tracing::debug!(error = %e, "a native API connection failed before it was served");
                }
                None => break,
            },
            _ = &mut stopping => break,
            Some(ended) = connections.join_next(), if !connections.is_empty() => log_end(ended),
        }
    }
    while let Some(ended) = connections.join_next().await {
        log_end(ended);
    }
}

/// A connection's task ends by itself; one that panicked is reported.
fn log_end(ended: Result<(), tokio::task::JoinError>) {
    if let Err(e) = ended {
        tracing::error!(error = %e, "a native API connection's task failed");
    }
}

/// Hands the accepted connections to the loops in turn, until accepting or every loop stops.
async fn hand_out(mut accepted: Accepted, handoffs: Vec<mpsc::Sender<Unbound>>) {
    let mut next = 0;
    while let Some(conn) = accepted.next().await {
        let mut conn = match conn.unbind() {
            Ok(c) => c,
            Err(e) => {
                tracing::debug!(error = %e, "an accepted connection failed before it was served");
                continue;
            }
        };
        // A loop that stopped is passed over; when none is left, accepting ends.
        let mut tried = 0;
        loop {
            if tried == handoffs.len() {
                return;
            }
            let tx = &handoffs[next % handoffs.len()];
            next += 1;
            tried += 1;
            match tx.send(conn).await {
                Ok(()) => break,
                Err(mpsc::error::SendError(c)) => conn = c,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use tokio::net::{TcpListener, TcpStream};

    use super::*;
    use crate::listener::ConnectionLimits;

    /// The client address of the next connection a loop was handed.
    async fn next_peer(rx: &mut mpsc::Receiver<Unbound>) -> std::net::SocketAddr {
        let conn = rx.recv().await.expect("a connection");
        conn.peer_addr().unwrap()
    }

    /// Connections go to the loops in turn; a loop that stopped is passed over, and once no
    /// loop is left the handing out ends.
    #[tokio::test]
    async fn connections_go_to_the_loops_in_turn_passing_over_stopped_ones() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let accepted = Accepted::start(listener, ConnectionLimits::native(), "test").unwrap();
        let (tx0, mut rx0) = mpsc::channel(8);
        let (tx1, mut rx1) = mpsc::channel(8);
        let handing = tokio::spawn(hand_out(accepted, vec![tx0, tx1]));
        let mut clients = Vec::new();
        for _ in 0..4 {
            clients.push(TcpStream::connect(addr).await.unwrap());
        }
        let peer = |i: usize| clients[i].local_addr().unwrap();
        assert_eq!(next_peer(&mut rx0).await, peer(0));
        assert_eq!(next_peer(&mut rx1).await, peer(1));
        assert_eq!(next_peer(&mut rx0).await, peer(2));
        assert_eq!(next_peer(&mut rx1).await, peer(3));
        drop(rx0);
        for _ in 0..2 {
            clients.push(TcpStream::connect(addr).await.unwrap());
        }
        let peer = |i: usize| clients[i].local_addr().unwrap();
        assert_eq!(next_peer(&mut rx1).await, peer(4));
        assert_eq!(next_peer(&mut rx1).await, peer(5));
        drop(rx1);
        let _last = TcpStream::connect(addr).await.unwrap();
        handing.await.unwrap();
    }
}
