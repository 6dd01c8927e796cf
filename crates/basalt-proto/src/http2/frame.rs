//! HTTP/2's frames (RFC 9113 section 4 and 6): the nine-byte head every frame starts with,
//! the kinds, flags and settings the native API's two sides use, the error codes, and the
//! writers of the frames they send.

use bytes::{Buf, BufMut, Bytes, BytesMut};

/// What a client sends before its first frame.
pub const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
/// A frame's head: a 24-bit length, the kind, the flags, a 31-bit stream id.
pub const HEAD_LEN: usize = 9;
/// The largest payload either side may send until the peer allows more.
pub const DEFAULT_MAX_FRAME: usize = 16_384;
/// The largest payload a peer may ever allow.
pub const LARGEST_MAX_FRAME: usize = (1 << 24) - 1;
/// A stream's and the connection's window before the peer's settings say otherwise.
pub const DEFAULT_WINDOW: i64 = 65_535;
/// The largest a flow-control window may grow.
pub const LARGEST_WINDOW: i64 = (1 << 31) - 1;

pub const DATA: u8 = 0;
pub const HEADERS: u8 = 1;
pub const PRIORITY: u8 = 2;
pub const RST_STREAM: u8 = 3;
pub const SETTINGS: u8 = 4;
pub const PUSH_PROMISE: u8 = 5;
pub const PING: u8 = 6;
pub const GOAWAY: u8 = 7;
pub const WINDOW_UPDATE: u8 = 8;
pub const CONTINUATION: u8 = 9;

/// DATA and HEADERS: the sender's last frame on the stream.
pub const END_STREAM: u8 = 0x1;
/// SETTINGS and PING: an acknowledgement.
pub const ACK: u8 = 0x1;
/// HEADERS and CONTINUATION: the header block ends in this frame.
pub const END_HEADERS: u8 = 0x4;
/// DATA and HEADERS: a pad length byte leads, and padding trails.
pub const PADDED: u8 = 0x8;
/// HEADERS: a priority (five bytes) follows the pad length.
pub const PRIORITY_FLAG: u8 = 0x20;

/// The settings this server reads (RFC 9113 6.5.2).
pub const SETTINGS_HEADER_TABLE_SIZE: u16 = 1;
pub const SETTINGS_ENABLE_PUSH: u16 = 2;
pub const SETTINGS_MAX_CONCURRENT_STREAMS: u16 = 3;
pub const SETTINGS_INITIAL_WINDOW_SIZE: u16 = 4;
pub const SETTINGS_MAX_FRAME_SIZE: u16 = 5;
pub const SETTINGS_MAX_HEADER_LIST_SIZE: u16 = 6;

/// An error code of RST_STREAM and GOAWAY (RFC 9113 section 7).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reason(pub u32);

impl Reason {
    pub const NO_ERROR: Reason = Reason(0);
    pub const PROTOCOL_ERROR: Reason = Reason(1);
    pub const INTERNAL_ERROR: Reason = Reason(2);
    pub const FLOW_CONTROL_ERROR: Reason = Reason(3);
    pub const STREAM_CLOSED: Reason = Reason(5);
    pub const FRAME_SIZE_ERROR: Reason = Reason(6);
    pub const REFUSED_STREAM: Reason = Reason(7);
    pub const CANCEL: Reason = Reason(8);
    pub const COMPRESSION_ERROR: Reason = Reason(9);
    pub const ENHANCE_YOUR_CALM: Reason = Reason(0xb);
}

/// A frame's head.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Head {
    pub len: usize,
    pub kind: u8,
    pub flags: u8,
    pub stream: u32,
}

impl Head {
    /// The head at the start of `bytes`, which holds at least [`HEAD_LEN`] bytes.
    pub fn parse(bytes: &[u8]) -> Head {
        let len = usize::from(bytes[0]) << 16 | usize::from(bytes[1]) << 8 | usize::from(bytes[2]);
        // The reserved bit is ignored on receipt.
        let stream = u32::from_be_bytes([bytes[5], bytes[6], bytes[7], bytes[8]]) & 0x7fff_ffff;
        Head {
            len,
            kind: bytes[3],
            flags: bytes[4],
            stream,
        }
    }

    pub fn has(&self, flag: u8) -> bool {
        self.flags & flag != 0
    }
}

/// Appends a frame's head. `len` is at most [`LARGEST_MAX_FRAME`].
pub fn put_head(out: &mut Vec<u8>, len: usize, kind: u8, flags: u8, stream: u32) {
    debug_assert!(len <= LARGEST_MAX_FRAME);
    let len = u32::try_from(len).unwrap_or(u32::MAX);
    out.extend_from_slice(&len.to_be_bytes()[1..]);
    out.put_u8(kind);
    out.put_u8(flags);
    out.put_u32(stream);
}

/// Appends a SETTINGS frame of `(id, value)` pairs.
pub fn put_settings(out: &mut Vec<u8>, settings: &[(u16, u32)]) {
    put_head(out, settings.len() * 6, SETTINGS, 0, 0);
    for &(id, value) in settings {
        out.put_u16(id);
        out.put_u32(value);
    }
}

pub fn put_window_update(out: &mut Vec<u8>, stream: u32, increment: u32) {
    put_head(out, 4, WINDOW_UPDATE, 0, stream);
    out.put_u32(increment);
}

pub fn put_rst_stream(out: &mut Vec<u8>, stream: u32, reason: Reason) {
    put_head(out, 4, RST_STREAM, 0, stream);
    out.put_u32(reason.0);
}

pub fn put_ping(out: &mut Vec<u8>, flags: u8, payload: [u8; 8]) {
    put_head(out, 8, PING, flags, 0);
    out.extend_from_slice(&payload);
}

/// Appends a GOAWAY naming the last stream this side processes, and why, in words.
pub fn put_goaway(out: &mut Vec<u8>, last_stream: u32, reason: Reason, why: &str) {
    // The words are for the peer's log: a short prefix of them is enough.
    let why = &why.as_bytes()[..why.len().min(256)];
    put_head(out, 8 + why.len(), GOAWAY, 0, 0);
    out.put_u32(last_stream);
    out.put_u32(reason.0);
    out.extend_from_slice(why);
}

/// Appends a header block as a HEADERS frame and, when it is larger than `max_frame`,
/// CONTINUATION frames.
pub fn put_headers(
    out: &mut Vec<u8>,
    stream: u32,
    block: &[u8],
    end_stream: bool,
    max_frame: usize,
) {
    let mut chunks = block.chunks(max_frame).peekable();
    let mut kind = HEADERS;
    let mut flags = if end_stream { END_STREAM } else { 0 };
    loop {
        let chunk = chunks.next().unwrap_or_default();
        let last = chunks.peek().is_none();
        if last {
            flags |= END_HEADERS;
        }
        put_head(out, chunk.len(), kind, flags, stream);
        out.extend_from_slice(chunk);
        if last {
            return;
        }
        (kind, flags) = (CONTINUATION, 0);
    }
}

/// A DATA or HEADERS frame's payload without its padding; `None` when the padding claims
/// more than the frame holds.
pub fn unpadded(head: Head, mut payload: Bytes) -> Option<Bytes> {
    if !head.has(PADDED) {
        return Some(payload);
    }
    let pad = usize::from(*payload.first()?);
    payload.advance(1);
    let len = payload.len().checked_sub(pad)?;
    payload.truncate(len);
    Some(payload)
}

/// A HEADERS frame's fragment of its header block: its padding and priority taken off. A
/// frame padded past its end, or too short for its priority, fails with the connection error
/// RFC 9113 6.2 names.
pub fn header_fragment(head: Head, payload: Bytes) -> Result<Bytes, (Reason, &'static str)> {
    let mut fragment =
        unpadded(head, payload).ok_or((Reason::PROTOCOL_ERROR, "HEADERS padded past its end"))?;
    if head.has(PRIORITY_FLAG) {
        if fragment.len() < 5 {
            return Err((
                Reason::FRAME_SIZE_ERROR,
                "HEADERS too short for its priority",
            ));
        }
        fragment.advance(5);
    }
    Ok(fragment)
}

/// A header block begun by a HEADERS frame without END_HEADERS, gathered from its
/// CONTINUATION frames until one ends it.
#[derive(Debug)]
pub struct Continuing {
    pub stream: u32,
    pub end_stream: bool,
    pub block: BytesMut,
}

impl Continuing {
    /// The block begun by the HEADERS frame `head` with `fragment`.
    pub fn begin(head: Head, fragment: &[u8]) -> Continuing {
        Continuing {
            stream: head.stream,
            end_stream: head.has(END_STREAM),
            block: BytesMut::from(fragment),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A head written is read back; the reserved bit of the stream id is ignored.
    #[test]
    fn heads_cross_and_the_reserved_bit_is_ignored() {
        let mut out = Vec::new();
        put_head(
            &mut out,
            70_000,
            HEADERS,
            END_HEADERS | END_STREAM,
            0x7fff_fffd,
        );
        assert_eq!(
            Head::parse(&out),
            Head {
                len: 70_000,
                kind: HEADERS,
                flags: END_HEADERS | END_STREAM,
                stream: 0x7fff_fffd,
            }
        );
        out[5] |= 0x80;
        assert_eq!(Head::parse(&out).stream, 0x7fff_fffd);
    }

    /// A header block larger than the frame size continues in CONTINUATION frames, and
    /// only the last ends the block; END_STREAM rides on the HEADERS frame.
    #[test]
    fn large_header_blocks_continue() {
        let block: Vec<u8> = (0..=255).collect();
        let mut out = Vec::new();
        put_headers(&mut out, 3, &block, true, 100);
        let mut frames = Vec::new();
        let mut at = 0;
        while at < out.len() {
            let head = Head::parse(&out[at..]);
            frames.push((head.kind, head.flags, head.len));
            at += HEAD_LEN + head.len;
        }
        assert_eq!(
            frames,
            [
                (HEADERS, END_STREAM, 100),
                (CONTINUATION, 0, 100),
                (CONTINUATION, END_HEADERS, 56)
            ]
        );
        let mut empty = Vec::new();
        put_headers(&mut empty, 3, &[], false, 100);
        assert_eq!(Head::parse(&empty).flags, END_HEADERS);
    }

    fn head(flags: u8) -> Head {
        Head {
            len: 0,
            kind: HEADERS,
            flags,
            stream: 1,
        }
    }

    /// Padding comes off both ends (its length first, the padding last), a priority off the
    /// front; padding past the frame's end and a priority cut short are refused.
    #[test]
    fn padding_and_priority_come_off_a_header_fragment() {
        let padded = Bytes::from_static(b"\x02block!!");
        assert_eq!(
            &unpadded(head(PADDED), padded.clone()).unwrap()[..],
            b"block"
        );
        assert_eq!(unpadded(head(0), padded.clone()).unwrap(), padded);
        assert!(unpadded(head(PADDED), Bytes::from_static(b"\x05ab")).is_none());
        assert!(unpadded(head(PADDED), Bytes::new()).is_none());
        let both = Bytes::from_static(b"\x01\0\0\0\x03\x10block!");
        let fragment = header_fragment(head(PADDED | PRIORITY_FLAG), both).unwrap();
        assert_eq!(&fragment[..], b"block");
        let short = header_fragment(head(PRIORITY_FLAG), Bytes::from_static(b"\0\0"));
        assert_eq!(short.unwrap_err().0, Reason::FRAME_SIZE_ERROR);
        let past = header_fragment(head(PADDED), Bytes::from_static(b"\x09ab"));
        assert_eq!(past.unwrap_err().0, Reason::PROTOCOL_ERROR);
    }
}
