//! A unary call's one message in its gRPC frame (a compression flag and a 4-byte length
//! before the message), and a body that is one whole message and its trailers: what the
//! native API's client and server put on the wire for the table calls, which they make and
//! serve straight from their messages.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Bytes, BytesMut};
use http_body::Frame;
use prost::Message;
use tonic::codegen::http::HeaderMap;
use tonic::Status;

/// A gRPC message's frame: a compression flag and a 4-byte length before the message.
pub const MESSAGE_HEADER: usize = 5;

/// `message` in its gRPC frame, uncompressed.
///
/// # Errors
/// `OUT_OF_RANGE` when the message is larger than `max` bytes.
pub fn frame(message: &impl Message, max: usize) -> Result<Bytes, Status> {
    let len = message.encoded_len();
    if len > max {
        return Err(Status::out_of_range(format!(
            "a message of {len} bytes is larger than the limit of {max} bytes"
        )));
    }
    // Into a vector: its writes of a byte or a few inline to a store, where a `BytesMut`'s
    // each took a call (an answer of ten cells writes 140 varints).
    let mut framed = Vec::with_capacity(MESSAGE_HEADER + len);
    framed.push(0);
    // Within the limit, which is below 4 GiB.
    framed.extend_from_slice(&u32::try_from(len).unwrap_or(u32::MAX).to_be_bytes());
    message.encode_raw(&mut framed);
    Ok(Bytes::from(framed))
}

/// The message inside `data`, which must be exactly one uncompressed gRPC frame. The
/// message shares `data`'s buffer, so the byte fields decoded from it are slices of that
/// buffer, not copies of their own.
///
/// # Errors
/// What is wrong with the frame, in a sentence.
pub fn unframe(data: &Bytes) -> Result<Bytes, String> {
    let Some((&[flag, a, b, c, d], message)) = data.split_first_chunk::<MESSAGE_HEADER>() else {
        return Err(format!(
            "no message: {} bytes, short of a frame's header",
            data.len()
        ));
    };
    if flag != 0 {
        return Err("a compressed message, though no compression was agreed".to_owned());
    }
    let len = u32::from_be_bytes([a, b, c, d]) as usize;
    if message.len() != len {
        return Err(format!(
            "a frame that says {len} bytes holds {}",
            message.len()
        ));
    }
    Ok(data.slice(MESSAGE_HEADER..))
}

/// Bytes that arrive in pieces (a message's DATA frames), kept as the one piece they usually
/// are (no copy), or joined when there are more.
///
/// Pieces made with a limit ([`Pieces::up_to`]) make room, as they start joining, for the
/// whole frame their header tells of, up to the limit: a scan's answer comes in DATA frames
/// of 16 KiB, and a buffer grown piece by piece copied what it held at each doubling.
#[derive(Debug, Default)]
pub struct Pieces {
    first: Option<Bytes>,
    joined: BytesMut,
    len: usize,
    /// The most room a frame's header earns before its bytes arrive (a peer's word is not
    /// memory): the largest message the caller takes.
    room: usize,
}

impl Pieces {
    /// Pieces of a message of at most `room` bytes, its frame's header included.
    #[must_use]
    pub fn up_to(room: usize) -> Pieces {
        Pieces {
            room,
            ..Pieces::default()
        }
    }

    pub fn push(&mut self, data: Bytes) {
        self.len += data.len();
        match self.first.take() {
            None if self.joined.is_empty() => self.first = Some(data),
            first => {
                let first = first.unwrap_or_default();
                if let Some(&[_, a, b, c, d]) = first.first_chunk::<MESSAGE_HEADER>() {
                    let told = MESSAGE_HEADER + u32::from_be_bytes([a, b, c, d]) as usize;
                    self.joined
                        .reserve(told.clamp(self.len, self.room.max(self.len)));
                }
                self.joined.extend_from_slice(&first);
                self.joined.extend_from_slice(&data);
            }
        }
    }

    /// Bytes pushed so far.
    #[must_use]
    pub fn len(&self) -> usize {
        self.len
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The bytes pushed, in one piece.
    #[must_use]
    pub fn finish(self) -> Bytes {
        self.first.unwrap_or_else(|| self.joined.freeze())
    }
}

/// A body that is one whole message (framed) and its trailers, each ready at once.
#[derive(Debug, Default)]
pub struct Whole {
    pub data: Option<Bytes>,
    pub trailers: Option<HeaderMap>,
}

impl http_body::Body for Whole {
    type Data = Bytes;
    type Error = Status;

    fn poll_frame(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Status>>> {
        let me = self.get_mut();
        let frame = match me.data.take() {
            Some(data) => Some(Frame::data(data)),
            None => me.trailers.take().map(Frame::trailers),
        };
        Poll::Ready(frame.map(Ok))
    }

    fn is_end_stream(&self) -> bool {
        self.data.is_none() && self.trailers.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pb;

    /// A message crosses in its frame and back whole; an empty one too; one over the limit
    /// is refused.
    #[test]
    fn messages_cross_in_their_frames() {
        let id = pb::ScannerId { id: 300 };
        let framed = frame(&id, 100).unwrap();
        assert_eq!(framed[..5], [0, 0, 0, 0, 3]);
        assert_eq!(
            pb::ScannerId::decode(unframe(&framed).unwrap()).unwrap(),
            id
        );
        let empty = frame(&pb::Empty {}, 100).unwrap();
        assert_eq!(empty[..], [0, 0, 0, 0, 0]);
        assert!(unframe(&empty).unwrap().is_empty());
        let e = frame(&pb::ScannerId { id: u64::MAX }, 5).unwrap_err();
        assert_eq!(e.code(), tonic::Code::OutOfRange);
        assert!(
            e.message().contains("larger than the limit of 5 bytes"),
            "{e}"
        );
    }

    /// Pieces come out whole and in order: one piece as it was, several joined.
    #[test]
    fn pieces_join_in_order() {
        let one = Bytes::from_static(b"alone");
        let mut p = Pieces::default();
        assert!(p.is_empty());
        p.push(one.clone());
        assert_eq!(p.len(), 5);
        let whole = p.finish();
        assert_eq!(whole, one);
        assert_eq!(whole.as_ptr(), one.as_ptr(), "one piece is not copied");
        let mut p = Pieces::default();
        for piece in ["a", "bc", "", "def"] {
            p.push(Bytes::from(piece));
        }
        assert_eq!(p.len(), 6);
        assert_eq!(p.finish(), "abcdef");
    }

    /// Joining makes room for the whole frame its header tells of, no more than the limit,
    /// and never less than the pieces hold.
    #[test]
    fn joining_makes_room_for_the_frame_told() {
        let len: u32 = 40 << 10;
        let mut framed = vec![0u8];
        framed.extend_from_slice(&len.to_be_bytes());
        framed.resize(MESSAGE_HEADER + len as usize, 7);
        let framed = Bytes::from(framed);
        let mut p = Pieces::up_to(1 << 20);
        p.push(framed.slice(..16 << 10));
        p.push(framed.slice(16 << 10..32 << 10));
        let room = p.joined.capacity();
        assert!(room >= framed.len(), "room for {room} of {}", framed.len());
        p.push(framed.slice(32 << 10..));
        assert_eq!(p.joined.capacity(), room, "no growth past the frame told");
        assert_eq!(p.finish(), framed);
        for (told, limit, want) in [
            (u32::MAX, 1 << 20, 1 << 20),
            (0, 1 << 20, 10),
            (u32::MAX, 0, 10),
        ] {
            let mut head = vec![0u8];
            head.extend_from_slice(&told.to_be_bytes());
            let mut p = Pieces::up_to(limit);
            p.push(Bytes::from(head));
            p.push(Bytes::from(vec![0u8; 5]));
            let room = p.joined.capacity();
            assert!(
                (want..want + 64).contains(&room),
                "told {told}, limit {limit}: {room}"
            );
        }
    }

    /// A frame that lies about its length, a compressed one, or none at all is refused.
    #[test]
    fn malformed_frames_are_refused() {
        for (data, why) in [
            (&[0, 0, 0, 0, 4, 8][..], "says 4 bytes holds 1"),
            (&[0, 0, 0, 0, 0, 8][..], "says 0 bytes holds 1"),
            (&[1, 0, 0, 0, 0][..], "compressed"),
            (&[0, 0][..], "no message"),
        ] {
            let e = unframe(&Bytes::from_static(data)).unwrap_err();
            assert!(e.contains(why), "{e}");
        }
    }
}
