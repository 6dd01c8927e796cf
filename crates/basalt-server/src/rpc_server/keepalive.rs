//! The connection's keepalive pings.

use std::future::Future;
use std::pin::Pin;
use std::task::Context;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::time::{Instant, Sleep};

use crate::http2::connection::Connection;

/// The connection's pings: one every `every`, and the connection is given up when the peer
/// has not answered one by the time the next is due.
pub(super) struct Keepalive {
    every: Duration,
    timer: Pin<Box<Sleep>>,
    /// The payload of the ping awaiting its answer.
    awaiting: Option<[u8; 8]>,
    sent: u64,
}

impl Keepalive {
    pub(super) fn new(every: Duration) -> Keepalive {
        Keepalive {
            every,
            timer: Box::pin(tokio::time::sleep(every)),
            awaiting: None,
            sent: 0,
        }
    }

    /// Notes the peer's answer, and sends a ping when one is due.
    ///
    /// # Errors
    /// The peer did not answer the last ping in time.
    pub(super) fn poll<T>(
        &mut self,
        cx: &mut Context<'_>,
        conn: &mut Connection<T>,
    ) -> Result<(), String>
    where
        T: AsyncRead + AsyncWrite + Unpin,
    {
        if let Some(pong) = conn.take_pong() {
            if self.awaiting == Some(pong) {
                self.awaiting = None;
                self.timer.as_mut().reset(Instant::now() + self.every);
            }
        }
        while self.timer.as_mut().poll(cx).is_ready() {
            if self.awaiting.is_some() {
                return Err(format!("the peer answered no ping within {:?}", self.every));
            }
            self.sent += 1;
            let payload = self.sent.to_be_bytes();
            conn.ping(payload);
            self.awaiting = Some(payload);
            self.timer.as_mut().reset(Instant::now() + self.every);
        }
        Ok(())
    }
}
