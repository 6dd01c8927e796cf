//! The entry point of the `thrift_request` fuzz target (`fuzz/` in the repository) and of
//! the test that replays its corpus on stable Rust: untrusted bytes read as one Thrift
//! request by the gateway's own length-checked input protocol, in the encoding its first
//! byte names. Must return (an error is fine) without panicking or allocating what the bytes
//! only announce.

use std::io::Cursor;

use thrift::protocol::{TInputProtocol, TType};

use crate::thrift::protocol::{Encoding, InputProtocol, COMPACT_PROTOCOL_ID};

/// The message limit the fuzzed decoder runs with (a frame of the input's length, as the
/// gateway reads a framed request).
const LIMIT: usize = 16 << 20;

/// Reads `data` as a request: the message header, its arguments as a struct (each field
/// skipped by type, as for an unknown method), the message end. True when it read whole.
pub fn thrift_request(data: &[u8]) -> bool {
    let encoding = if data.first() == Some(&COMPACT_PROTOCOL_ID) {
        Encoding::Compact
    } else {
        Encoding::Binary
    };
    let mut input = InputProtocol::new(Cursor::new(data), encoding, LIMIT);
    input.begin(data.len().min(LIMIT));
    input.read_message_begin().is_ok()
        && input.skip(TType::Struct).is_ok()
        && input.read_message_end().is_ok()
}
