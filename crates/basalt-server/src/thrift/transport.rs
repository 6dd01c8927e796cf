//! One Thrift connection: which transport and protocol it speaks, and its request loop.
//!
//! Detection, from the first bytes (every message starts with a protocol header):
//! - `0x80` is a strict binary header, `0x82` a compact one: a buffered connection.
//! - Otherwise the first four bytes are a frame length, and the fifth byte (the frame's first)
//!   is `0x80` or `0x82`: a framed connection.
//! - Otherwise it is the old non-strict binary header (a name length), buffered.
//!
//! A buffered connection cannot find the next message after one it failed to decode, so any
//! decoding failure closes the connection, with the reason logged. A frame longer than the
//! limit, or of no bytes, closes it too; nothing is applied from a request not read whole.

use std::io::{BufReader, BufWriter, Cursor, Read, Write};
use std::net::{SocketAddr, TcpStream};

use hbase_thrift::hbase::HbaseSyncProcessor;
use thrift::protocol::{
    TBinaryOutputProtocol, TCompactOutputProtocol, TInputProtocol, TOutputProtocol, TType,
};
use thrift::server::TProcessor;
use thrift::transport::TFramedWriteTransport;

use std::sync::Arc;

use super::protocol::{Encoding, InputProtocol, COMPACT_PROTOCOL_ID};
use super::{Gateway, METHODS};
use crate::budget::{Held, RequestBudget};

const STRICT_BINARY_FIRST_BYTE: u8 = 0x80;
/// Read buffer of a buffered connection.
const READ_BUFFER: usize = 64 << 10;

/// What the first bytes of a connection said.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Detected {
    /// Buffered; `prefix` holds the bytes already read, the start of the first message.
    Buffered { encoding: Encoding, prefix: Vec<u8> },
    /// Framed; the first frame's length has been read, and its first byte.
    Framed {
        encoding: Encoding,
        first_len: u32,
        first_byte: u8,
    },
}

/// Reads the first bytes of a connection; `None` when it closes before sending any.
pub(crate) fn detect(stream: &mut impl Read) -> std::io::Result<Option<Detected>> {
    let mut first = [0u8; 1];
    if stream.read(&mut first)? == 0 {
        return Ok(None);
    }
    let buffered = |encoding| Detected::Buffered {
        encoding,
        prefix: first.to_vec(),
    };
    match first[0] {
        STRICT_BINARY_FIRST_BYTE => return Ok(Some(buffered(Encoding::Binary))),
        COMPACT_PROTOCOL_ID => return Ok(Some(buffered(Encoding::Compact))),
        _ => {}
    }
    let mut head = [0u8; 5];
    head[0] = first[0];
    stream.read_exact(&mut head[1..])?;
    let first_len = u32::from_be_bytes([head[0], head[1], head[2], head[3]]);
    Ok(Some(match head[4] {
        STRICT_BINARY_FIRST_BYTE => Detected::Framed {
            encoding: Encoding::Binary,
            first_len,
            first_byte: head[4],
        },
        COMPACT_PROTOCOL_ID => Detected::Framed {
            encoding: Encoding::Compact,
            first_len,
            first_byte: head[4],
        },
        _ => Detected::Buffered {
            encoding: Encoding::Binary,
            prefix: head.to_vec(),
        },
    }))
}

type Processor = HbaseSyncProcessor<super::Handler>;

/// Serves one connection until the client closes it, a request cannot be decoded, or the
/// gateway stops.
pub(crate) fn serve_connection(gateway: &Gateway, mut stream: TcpStream, peer: SocketAddr) {
    let detected = match detect(&mut stream) {
        Ok(Some(d)) => d,
        Ok(None) => return,
        Err(e) => {
            tracing::debug!(%peer, error = %e, "Thrift connection closed before its first request");
            return;
        }
    };
    let processor = HbaseSyncProcessor::new(gateway.handler.clone());
    let limits = (gateway.config.max_message_bytes, &gateway.budget);
    let outcome = match detected {
        Detected::Buffered { encoding, prefix } => {
            tracing::debug!(%peer, ?encoding, "buffered Thrift connection");
            buffered(&processor, stream, encoding, prefix, limits)
        }
        Detected::Framed {
            encoding,
            first_len,
            first_byte,
        } => {
            tracing::debug!(%peer, ?encoding, "framed Thrift connection");
            framed(
                &processor,
                stream,
                encoding,
                (first_len, first_byte),
                limits,
            )
        }
    };
    match outcome {
        Ok(()) => tracing::debug!(%peer, "Thrift connection closed"),
        Err(reason) => tracing::warn!(%peer, %reason, "closing a Thrift connection"),
    }
}

fn output(encoding: Encoding, w: impl Write + Send + 'static) -> Box<dyn TOutputProtocol + Send> {
    match encoding {
        Encoding::Binary => Box::new(TBinaryOutputProtocol::new(w, true)),
        Encoding::Compact => Box::new(TCompactOutputProtocol::new(w)),
    }
}

/// The request loop of a buffered connection. `Ok` when the client closed it between requests.
fn buffered(
    processor: &Processor,
    stream: TcpStream,
    encoding: Encoding,
    prefix: Vec<u8>,
    (limit, budget): (usize, &Arc<RequestBudget>),
) -> Result<(), String> {
    let write = stream.try_clone().map_err(|e| e.to_string())?;
    let mut out = output(encoding, BufWriter::with_capacity(READ_BUFFER, write));
    let source = BufReader::with_capacity(READ_BUFFER, Cursor::new(prefix).chain(stream));
    let mut input = InputProtocol::new(source, encoding, limit).with_budget(Arc::clone(budget));
    loop {
        input.begin(limit);
        let result = processor.process(&mut input, out.as_mut());
        if let Some(reason) = input.failure() {
            return if input.consumed() == 0 && result.is_err() {
                Ok(()) // closed between requests
            } else {
                Err(format!("bad request: {reason}"))
            };
        }
        result.map_err(|e| format!("answering {}: {e}", input.method()))?;
        skip_unknown(&mut input)?;
    }
}

/// The generated processor answers an unknown method without reading its arguments; they
/// are skipped here so that the next request starts where it should.
fn skip_unknown<R: Read>(input: &mut InputProtocol<R>) -> Result<(), String> {
    if METHODS.contains(&input.method()) {
        return Ok(());
    }
    let method = input.method().to_owned();
    input
        .skip(TType::Struct)
        .and_then(|()| input.read_message_end())
        .map_err(|e| format!("skipping the arguments of unknown method {method:?}: {e}"))
}

/// The request loop of a framed connection.
fn framed(
    processor: &Processor,
    mut stream: TcpStream,
    encoding: Encoding,
    (first_len, first_byte): (u32, u8),
    (limit, budget): (usize, &Arc<RequestBudget>),
) -> Result<(), String> {
    let write = stream.try_clone().map_err(|e| e.to_string())?;
    let mut out = output(encoding, TFramedWriteTransport::new(BufWriter::new(write)));
    let mut input = InputProtocol::new(Cursor::new(Vec::new()), encoding, limit);
    let mut next = Some((first_len, Some(first_byte)));
    loop {
        let (len, first) = match next.take() {
            Some(n) => n,
            None => match read_len(&mut stream)? {
                Some(len) => (len, None),
                None => return Ok(()),
            },
        };
        let len = usize::try_from(len).unwrap_or(usize::MAX);
        if len == 0 || len > limit {
            return Err(format!(
                "a frame of {len} bytes (the limit is {limit} bytes)"
            ));
        }
        let mut held = Held::default();
        let frame = read_frame(&mut stream, len, first, budget, &mut held)?;
        input.set_source(Cursor::new(frame));
        input.begin(len);
        let result = processor.process(&mut input, out.as_mut());
        held.release();
        if let Some(reason) = input.failure() {
            return Err(format!("bad request: {reason}"));
        }
        result.map_err(|e| format!("answering {}: {e}", input.method()))?;
    }
}

/// A frame of `len` bytes (`first`, already read, among them), read a chunk at a time and
/// charged to the budget for the bytes that arrived: a frame that only announces a large
/// size holds nothing but one chunk's buffer.
fn read_frame(
    stream: &mut TcpStream,
    len: usize,
    first: Option<u8>,
    budget: &Arc<RequestBudget>,
    held: &mut Held,
) -> Result<Vec<u8>, String> {
    const CHUNK: usize = 64 << 10;
    let mut frame = Vec::with_capacity(len.min(CHUNK));
    frame.extend(first);
    budget.take(held, frame.len())?;
    while frame.len() < len {
        let at = frame.len();
        frame.resize(at + (len - at).min(CHUNK), 0);
        let got = match stream.read(&mut frame[at..]) {
            Ok(0) => {
                return Err(format!(
                    "the connection closed inside a frame of {len} bytes"
                ))
            }
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => 0,
            Err(e) => return Err(format!("reading a frame of {len} bytes: {e}")),
        };
        frame.truncate(at + got);
        budget.take(held, got)?;
    }
    Ok(frame)
}

/// The next frame's length; `None` when the client closed the connection between frames.
fn read_len(stream: &mut TcpStream) -> Result<Option<u32>, String> {
    let mut len = [0u8; 4];
    let mut got = 0;
    while got < 4 {
        match stream.read(&mut len[got..]) {
            Ok(0) if got == 0 => return Ok(None),
            Ok(0) => return Err("the connection closed inside a frame header".to_owned()),
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(format!("reading a frame header: {e}")),
        }
    }
    Ok(Some(u32::from_be_bytes(len)))
}
