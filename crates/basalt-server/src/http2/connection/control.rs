//! The connection's control frames: SETTINGS, PING, WINDOW_UPDATE, RST_STREAM, PRIORITY
//! and GOAWAY, and the connection errors that end it.

use tokio::io::{AsyncRead, AsyncWrite};

use super::{Connection, GRACE_PING, LAST_STREAM_ID};
use crate::http2::frame::{self as f, Head, Reason};

impl<T: AsyncRead + AsyncWrite + Unpin> Connection<T> {
    pub(super) fn on_stream_zero(&mut self, head: Head) -> Result<(), String> {
        if head.stream == 0 {
            return Ok(());
        }
        let why = format!("a frame of kind {} on stream {}", head.kind, head.stream);
        Err(self.fail(Reason::PROTOCOL_ERROR, &why))
    }

    pub(super) fn on_a_stream(&mut self, head: Head) -> Result<(), String> {
        if head.stream != 0 {
            return Ok(());
        }
        let why = format!("a frame of kind {} on stream 0", head.kind);
        Err(self.fail(Reason::PROTOCOL_ERROR, &why))
    }

    /// A frame for a stream that is not open: an idle stream (never opened) is the peer's
    /// fault; a closed one is ignored, as frames may cross a reset in flight.
    pub(super) fn not_open(&mut self, head: Head) -> Result<(), String> {
        if head.stream > self.last_stream {
            let why = format!(
                "a frame of kind {} on idle stream {}",
                head.kind, head.stream
            );
            return Err(self.fail(Reason::PROTOCOL_ERROR, &why));
        }
        Ok(())
    }

    pub(super) fn priority(&mut self, head: Head) -> Result<(), String> {
        self.on_a_stream(head)?;
        if head.len != 5 {
            return match self.find(head.stream) {
                Some(i) => self.stream_error(i, Reason::FRAME_SIZE_ERROR),
                None => {
                    f::put_rst_stream(&mut self.write, head.stream, Reason::FRAME_SIZE_ERROR);
                    self.count_error_reset()
                }
            };
        }
        Ok(())
    }

    pub(super) fn rst_stream(&mut self, head: Head, payload: &[u8]) -> Result<(), String> {
        self.on_a_stream(head)?;
        let Ok(code) = <[u8; 4]>::try_from(payload) else {
            return Err(self.fail(Reason::FRAME_SIZE_ERROR, "an RST_STREAM not of 4 bytes"));
        };
        match self.find(head.stream) {
            Some(i) => self.remove(i, Reason(u32::from_be_bytes(code))),
            None => self.not_open(head)?,
        }
        Ok(())
    }

    pub(super) fn settings(&mut self, head: Head, payload: &[u8]) -> Result<(), String> {
        self.on_stream_zero(head)?;
        if head.has(f::ACK) {
            if !payload.is_empty() {
                return Err(self.fail(Reason::FRAME_SIZE_ERROR, "a SETTINGS ACK with a payload"));
            }
            return Ok(());
        }
        if !payload.len().is_multiple_of(6) {
            return Err(self.fail(Reason::FRAME_SIZE_ERROR, "SETTINGS not in 6-byte pairs"));
        }
        for pair in payload.chunks_exact(6) {
            let id = u16::from_be_bytes([pair[0], pair[1]]);
            let value = u32::from_be_bytes([pair[2], pair[3], pair[4], pair[5]]);
            self.setting(id, value)?;
        }
        self.settings_read = true;
        f::put_head(&mut self.write, 0, f::SETTINGS, f::ACK, 0);
        self.send_blocked();
        Ok(())
    }

    pub(super) fn setting(&mut self, id: u16, value: u32) -> Result<(), String> {
        match id {
            f::SETTINGS_ENABLE_PUSH if value > 1 => {
                Err(self.fail(Reason::PROTOCOL_ERROR, "SETTINGS_ENABLE_PUSH past 1"))
            }
            f::SETTINGS_INITIAL_WINDOW_SIZE => {
                let window = i64::from(value);
                if window > f::LARGEST_WINDOW {
                    return Err(
                        self.fail(Reason::FLOW_CONTROL_ERROR, "an initial window past 2^31-1")
                    );
                }
                let delta = window - self.peer_initial_window;
                self.peer_initial_window = window;
                for stream in &mut self.streams {
                    stream.send_window += delta;
                    if stream.send_window > f::LARGEST_WINDOW {
                        return Err(
                            self.fail(Reason::FLOW_CONTROL_ERROR, "a stream's window past 2^31-1")
                        );
                    }
                }
                Ok(())
            }
            f::SETTINGS_MAX_FRAME_SIZE => {
                let size = value as usize;
                if !(f::DEFAULT_MAX_FRAME..=f::LARGEST_MAX_FRAME).contains(&size) {
                    let why = format!("SETTINGS_MAX_FRAME_SIZE of {size}");
                    return Err(self.fail(Reason::PROTOCOL_ERROR, &why));
                }
                self.max_frame = size;
                Ok(())
            }
            // This side's encoder never indexes, and it opens no streams: the table size and
            // the stream limit do not bind it. A header list limit is advice.
            _ => Ok(()),
        }
    }

    pub(super) fn ping_frame(&mut self, head: Head, payload: &[u8]) -> Result<(), String> {
        self.on_stream_zero(head)?;
        let Ok(payload) = <[u8; 8]>::try_from(payload) else {
            return Err(self.fail(Reason::FRAME_SIZE_ERROR, "a PING not of 8 bytes"));
        };
        if head.has(f::ACK) {
            if payload == GRACE_PING && self.going_away {
                self.final_go_away();
            } else {
                self.pong = Some(payload);
            }
        } else {
            f::put_ping(&mut self.write, f::ACK, payload);
        }
        Ok(())
    }

    pub(super) fn window_update(&mut self, head: Head, payload: &[u8]) -> Result<(), String> {
        let Ok(bytes) = <[u8; 4]>::try_from(payload) else {
            return Err(self.fail(Reason::FRAME_SIZE_ERROR, "a WINDOW_UPDATE not of 4 bytes"));
        };
        let increment = i64::from(u32::from_be_bytes(bytes) & 0x7fff_ffff);
        if head.stream == 0 {
            self.send_window += increment;
            if increment == 0 || self.send_window > f::LARGEST_WINDOW {
                let why = format!("a connection window update of {increment}");
                return Err(self.fail(Reason::FLOW_CONTROL_ERROR, &why));
            }
        } else {
            let Some(i) = self.find(head.stream) else {
                return self.not_open(head);
            };
            let stream = &mut self.streams[i];
            stream.send_window += increment;
            if increment == 0 || stream.send_window > f::LARGEST_WINDOW {
                return self.stream_error(i, Reason::FLOW_CONTROL_ERROR);
            }
        }
        self.send_blocked();
        Ok(())
    }

    /// Sends a PING carrying `payload`.
    pub fn ping(&mut self, payload: [u8; 8]) {
        f::put_ping(&mut self.write, 0, payload);
    }

    /// The payload of the last PING acknowledged since the last call.
    pub fn take_pong(&mut self) -> Option<[u8; 8]> {
        self.pong.take()
    }

    /// Begins to go away gracefully (RFC 9113 6.8): a GOAWAY naming the highest stream id,
    /// so the peer opens no more, and a PING. Streams the peer opened before it read the
    /// GOAWAY arrive before the PING's answer and are served; once the answer arrives, the
    /// final GOAWAY names the last of them, and later ones are refused.
    pub fn go_away(&mut self) {
        if !self.going_away {
            self.going_away = true;
            f::put_goaway(
                &mut self.write,
                LAST_STREAM_ID,
                Reason::NO_ERROR,
                "the server is stopping",
            );
            f::put_ping(&mut self.write, 0, GRACE_PING);
        }
    }

    pub(super) fn final_go_away(&mut self) {
        if self.accept_up_to.is_none() {
            f::put_goaway(
                &mut self.write,
                self.last_stream,
                Reason::NO_ERROR,
                "the server is stopping",
            );
            self.accept_up_to = Some(self.last_stream);
        }
    }

    /// Either side is going away and no stream is open: the connection may close.
    pub fn is_finished(&self) -> bool {
        (self.accept_up_to.is_some() || self.peer_going_away) && self.streams.is_empty()
    }

    /// Writes a GOAWAY for a fault of the peer's; answers the words to end the connection with.
    pub(super) fn fail(&mut self, reason: Reason, why: &str) -> String {
        f::put_goaway(&mut self.write, self.last_stream, reason, why);
        format!("the peer broke HTTP/2 ({why})")
    }
}
