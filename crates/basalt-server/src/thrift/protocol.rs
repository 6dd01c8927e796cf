//! The Thrift input protocols, binary and compact, decoding requests from the network.
//!
//! The `thrift` crate's own input protocols trust every length they read: a negative string
//! length panics, and a list that claims two billion elements makes the generated code reserve
//! memory for them before a single element arrives. These read the same encodings but check
//! every length against what the request can still hold (its frame, or the message limit of a
//! buffered connection), so a malformed or hostile request is an error, never a panic or an
//! allocation out of proportion to the bytes received.
//!
//! Fields a request leaves out that have a meaning when absent are stood in as the protocol
//! reads (`stand_in`, `schema`).
//!
//! Any read error is also remembered (`failure`): the generated processor answers a request it
//! could not decode with an exception and carries on, but a connection whose byte stream is out
//! of step must be closed, and the connection loop asks here whether that happened.

use std::io::Read;
use std::sync::Arc;

use thrift::protocol::{
    TFieldIdentifier, TInputProtocol, TListIdentifier, TMapIdentifier, TMessageIdentifier,
    TMessageType, TSetIdentifier, TStructIdentifier, TType,
};
use thrift::{ProtocolError, ProtocolErrorKind};

use super::schema::{Arg, Value};
use super::stand_in::StandIn;
use crate::budget::{Held, RequestBudget};

/// The most elements one list, set or map may claim. Each struct element may be a single byte
/// on the wire, so the bytes left do not bound the memory a decoder reserves for structs.
const MAX_COLLECTION: usize = 1 << 22;

/// Strict binary messages start with this version word (the message type in the low byte).
const BINARY_VERSION_1: u32 = 0x8001_0000;
/// Compact messages start with this byte, then version 1 and the type in the next byte.
pub(crate) const COMPACT_PROTOCOL_ID: u8 = 0x82;
const COMPACT_VERSION: u8 = 1;

/// Which of the two encodings a connection speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Encoding {
    Binary,
    Compact,
}

/// An input protocol over `R` that reads at most `left` more bytes for the current message.
#[derive(Debug)]
pub(crate) struct InputProtocol<R> {
    src: R,
    encoding: Encoding,
    limit: usize,
    left: usize,
    /// The last field id read in each open struct (compact encodes ids as deltas).
    last_field: i16,
    field_stack: Vec<i16>,
    /// A compact bool field carries its value in the field header.
    pending_bool: Option<bool>,
    /// Why the current message could not be read, if it could not.
    failure: Option<String>,
    /// The name of the current message's method.
    method: String,
    stand_in: StandIn,
    /// The server's request budget, charged as the message's bytes arrive (buffered
    /// connections; a framed one charges its frames as it reads them).
    budget: Option<Arc<RequestBudget>>,
    held: Held,
}

/// Bytes read into memory at once: a length read from the wire allocates only as its bytes
/// arrive, never up front.
const CHUNK_BYTES: usize = 64 << 10;

impl<R: Read> InputProtocol<R> {
    pub(crate) fn new(src: R, encoding: Encoding, limit: usize) -> Self {
        InputProtocol {
            src,
            encoding,
            limit,
            left: limit,
            last_field: 0,
            field_stack: Vec::new(),
            pending_bool: None,
            failure: None,
            method: String::new(),
            stand_in: StandIn::default(),
            budget: None,
            held: Held::default(),
        }
    }

    /// Charges what this protocol reads to `budget`, message by message.
    pub(crate) fn with_budget(mut self, budget: Arc<RequestBudget>) -> Self {
        self.budget = Some(budget);
        self
    }

    /// Starts a new message of at most `limit` bytes (a buffered connection's message limit,
    /// or the length of a frame).
    pub(crate) fn begin(&mut self, limit: usize) {
        self.limit = limit;
        self.left = limit;
        self.last_field = 0;
        self.field_stack.clear();
        self.pending_bool = None;
        self.failure = None;
        self.stand_in.reset();
        self.held.release();
    }

    /// Replaces the byte source (the next frame of a framed connection).
    pub(crate) fn set_source(&mut self, src: R) {
        self.src = src;
    }

    /// Why the last message could not be read; `None` when it was read whole.
    pub(crate) fn failure(&self) -> Option<&str> {
        self.failure.as_deref()
    }

    /// Bytes of the current message read so far.
    pub(crate) fn consumed(&self) -> usize {
        self.limit - self.left
    }

    /// The method named by the last message header.
    pub(crate) fn method(&self) -> &str {
        &self.method
    }

    fn fail<T>(&mut self, kind: ProtocolErrorKind, message: String) -> thrift::Result<T> {
        self.failure.get_or_insert_with(|| message.clone());
        Err(thrift::Error::Protocol(ProtocolError::new(kind, message)))
    }

    fn fill(&mut self, buf: &mut [u8]) -> thrift::Result<()> {
        if buf.len() > self.left {
            let limit = self.limit;
            return self.fail(
                ProtocolErrorKind::SizeLimit,
                format!("the request is longer than its limit of {limit} bytes"),
            );
        }
        if let Some(b) = &self.budget {
            if let Err(why) = b.take(&mut self.held, buf.len()) {
                return self.fail(ProtocolErrorKind::SizeLimit, why);
            }
        }
        if let Err(e) = self.src.read_exact(buf) {
            self.failure.get_or_insert_with(|| format!("reading: {e}"));
            return Err(thrift::Error::from(e));
        }
        self.left -= buf.len();
        Ok(())
    }

    fn array<const N: usize>(&mut self) -> thrift::Result<[u8; N]> {
        let mut b = [0u8; N];
        self.fill(&mut b)?;
        Ok(b)
    }

    fn byte(&mut self) -> thrift::Result<u8> {
        Ok(self.array::<1>()?[0])
    }

    /// An unsigned LEB128 varint of at most `max_bytes` bytes.
    fn varint(&mut self, max_bytes: u32) -> thrift::Result<u64> {
        let mut out = 0u64;
        for i in 0..max_bytes {
            let b = self.byte()?;
            out |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(out);
            }
        }
        self.fail(
            ProtocolErrorKind::InvalidData,
            format!("a varint longer than {max_bytes} bytes"),
        )
    }

    fn zigzag(&mut self, max_bytes: u32) -> thrift::Result<i64> {
        let v = self.varint(max_bytes)?;
        #[allow(clippy::cast_possible_wrap)] // zigzag decoding reinterprets the bits
        Ok((v >> 1) as i64 ^ -((v & 1) as i64))
    }

    /// Checks a length read from the wire: not negative, and no more elements (of at least
    /// `min_bytes` each) than the rest of the message can hold.
    fn checked_len(&mut self, len: i64, min_bytes: usize, what: &str) -> thrift::Result<usize> {
        let fits = usize::try_from(len)
            .ok()
            .filter(|n| n.saturating_mul(min_bytes) <= self.left);
        match fits {
            Some(n) if what == "string" || n <= MAX_COLLECTION => Ok(n),
            _ => {
                let left = self.left;
                self.fail(
                    ProtocolErrorKind::SizeLimit,
                    format!("a {what} of length {len} does not fit in the {left} bytes left of the request"),
                )
            }
        }
    }

    fn element_type(&mut self, code: u8) -> thrift::Result<TType> {
        let t = match (self.encoding, code) {
            (Encoding::Compact, 0x01 | 0x02) => Some(TType::Bool),
            (Encoding::Compact, c) => compact_type(c),
            (Encoding::Binary, c) => binary_type(c),
        };
        match t {
            Some(t) => Ok(t),
            None => self.fail(
                ProtocolErrorKind::InvalidData,
                format!("unknown element type {code:#04x}"),
            ),
        }
    }

    /// The fewest bytes one element of type `t` takes in this encoding.
    fn min_size(&self, t: TType) -> usize {
        match (self.encoding, t) {
            (Encoding::Binary, TType::I16) => 2,
            (Encoding::Binary, TType::I32 | TType::String | TType::List | TType::Set) => 4,
            (Encoding::Binary, TType::Map) => 6,
            (Encoding::Binary, TType::I64) | (_, TType::Double) => 8,
            _ => 1,
        }
    }

    fn list_header(&mut self) -> thrift::Result<(TType, usize)> {
        let (t, len) = match self.encoding {
            Encoding::Binary => {
                let t = self.byte()?;
                let t = self.element_type(t)?;
                (t, i64::from(i32::from_be_bytes(self.array()?)))
            }
            Encoding::Compact => {
                let header = self.byte()?;
                let t = self.element_type(header & 0x0f)?;
                let short = header >> 4;
                let len = if short == 15 {
                    i64::try_from(self.varint(5)?).unwrap_or(i64::MAX)
                } else {
                    i64::from(short)
                };
                (t, len)
            }
        };
        let min = self.min_size(t);
        Ok((t, self.checked_len(len, min, "list")?))
    }

    fn message_begin_binary(&mut self) -> thrift::Result<TMessageIdentifier> {
        let first = i32::from_be_bytes(self.array()?);
        #[allow(clippy::cast_sign_loss)] // the strict header is a bit pattern
        let word = first as u32;
        let (name, kind) = if word & 0xffff_0000 == BINARY_VERSION_1 {
            let name = self.read_string()?;
            (name, (word & 0xff) as u8)
        } else if first >= 0 {
            // The old, non-strict header: the name's length first, then the type byte.
            let len = self.checked_len(i64::from(first), 1, "string")?;
            let name = self.string_of(len)?;
            (name, self.byte()?)
        } else {
            return self.fail(
                ProtocolErrorKind::BadVersion,
                format!("bad binary protocol version {word:#010x}"),
            );
        };
        let seq = i32::from_be_bytes(self.array()?);
        self.message(name, kind, seq)
    }

    fn message_begin_compact(&mut self) -> thrift::Result<TMessageIdentifier> {
        let id = self.byte()?;
        let version_and_type = self.byte()?;
        if id != COMPACT_PROTOCOL_ID || version_and_type & 0x1f != COMPACT_VERSION {
            return self.fail(
                ProtocolErrorKind::BadVersion,
                format!("bad compact protocol header {id:#04x} {version_and_type:#04x}"),
            );
        }
        #[allow(clippy::cast_possible_truncation, clippy::cast_possible_wrap)]
        let seq = self.varint(5)? as u32 as i32;
        let name = self.read_string()?;
        self.message(name, version_and_type >> 5, seq)
    }

    fn message(&mut self, name: String, kind: u8, seq: i32) -> thrift::Result<TMessageIdentifier> {
        let Ok(kind) = TMessageType::try_from(kind) else {
            return self.fail(
                ProtocolErrorKind::InvalidData,
                format!("unknown message type {kind}"),
            );
        };
        self.method.clone_from(&name);
        Ok(TMessageIdentifier::new(name, kind, seq))
    }

    /// Takes the stood-in value the decoder now reads, when there is one.
    fn stood_in(&mut self) -> Option<Value> {
        self.stand_in.take()
    }

    /// A field header of the request: type and id (`None` at a struct's end).
    fn header(&mut self) -> thrift::Result<(TType, Option<i16>)> {
        let header = self.byte()?;
        Ok(match self.encoding {
            Encoding::Binary => {
                let t = self.element_type(header)?;
                if t == TType::Stop {
                    (t, None)
                } else {
                    (t, Some(i16::from_be_bytes(self.array()?)))
                }
            }
            Encoding::Compact => {
                let t = match header & 0x0f {
                    0x01 | 0x02 => {
                        self.pending_bool = Some(header & 0x0f == 0x01);
                        TType::Bool
                    }
                    c => self.element_type(c)?,
                };
                if t == TType::Stop {
                    (t, None)
                } else {
                    let delta = header >> 4;
                    let id = if delta == 0 {
                        i16::try_from(self.zigzag(3)?).unwrap_or(i16::MAX)
                    } else {
                        self.last_field.wrapping_add(i16::from(delta))
                    };
                    self.last_field = id;
                    (t, Some(id))
                }
            }
        })
    }

    /// `len` bytes, read (and allocated) a chunk at a time.
    fn bytes_of(&mut self, len: usize) -> thrift::Result<Vec<u8>> {
        let mut buf = Vec::with_capacity(len.min(CHUNK_BYTES));
        while buf.len() < len {
            let at = buf.len();
            buf.resize(at + (len - at).min(CHUNK_BYTES), 0);
            self.fill(&mut buf[at..])?;
        }
        Ok(buf)
    }

    fn string_of(&mut self, len: usize) -> thrift::Result<String> {
        let buf = self.bytes_of(len)?;
        match String::from_utf8(buf) {
            Ok(s) => Ok(s),
            Err(_) => self.fail(
                ProtocolErrorKind::InvalidData,
                "a string that is not UTF-8".to_owned(),
            ),
        }
    }
}

fn binary_type(code: u8) -> Option<TType> {
    Some(match code {
        0 => TType::Stop,
        2 => TType::Bool,
        3 => TType::I08,
        4 => TType::Double,
        6 => TType::I16,
        8 => TType::I32,
        10 => TType::I64,
        11 => TType::String,
        12 => TType::Struct,
        13 => TType::Map,
        14 => TType::Set,
        15 => TType::List,
        _ => return None,
    })
}

fn compact_type(code: u8) -> Option<TType> {
    Some(match code {
        0 => TType::Stop,
        3 => TType::I08,
        4 => TType::I16,
        5 => TType::I32,
        6 => TType::I64,
        7 => TType::Double,
        8 => TType::String,
        9 => TType::List,
        10 => TType::Set,
        11 => TType::Map,
        12 => TType::Struct,
        _ => return None,
    })
}

impl<R: Read> TInputProtocol for InputProtocol<R> {
    fn read_message_begin(&mut self) -> thrift::Result<TMessageIdentifier> {
        self.method.clear();
        self.stand_in.reset();
        match self.encoding {
            Encoding::Binary => self.message_begin_binary(),
            Encoding::Compact => self.message_begin_compact(),
        }
    }

    fn read_message_end(&mut self) -> thrift::Result<()> {
        Ok(())
    }

    fn read_struct_begin(&mut self) -> thrift::Result<Option<TStructIdentifier>> {
        self.stand_in.struct_begin();
        if self.field_stack.len() >= 64 {
            return self.fail(
                ProtocolErrorKind::DepthLimit,
                "structs nested more than 64 deep".to_owned(),
            );
        }
        self.field_stack.push(self.last_field);
        self.last_field = 0;
        Ok(None)
    }

    fn read_struct_end(&mut self) -> thrift::Result<()> {
        self.stand_in.struct_end();
        self.last_field = self.field_stack.pop().unwrap_or(0);
        Ok(())
    }

    fn read_field_begin(&mut self) -> thrift::Result<TFieldIdentifier> {
        let (field_type, id) = match self.stand_in.next_header(&self.method) {
            Some(stood_in) => stood_in,
            None => {
                let (t, id) = self.header()?;
                self.stand_in.header(&self.method, id).unwrap_or((t, id))
            }
        };
        Ok(TFieldIdentifier::new::<Option<String>, String, Option<i16>>(None, field_type, id))
    }

    fn read_field_end(&mut self) -> thrift::Result<()> {
        Ok(())
    }

    fn read_bool(&mut self) -> thrift::Result<bool> {
        if let Some(v) = self.stood_in() {
            return Ok(v == Value::Bool(true));
        }
        if let Some(b) = self.pending_bool.take() {
            return Ok(b);
        }
        let b = self.byte()?;
        // Binary writes 1 for true; compact writes 1 for true and 2 (or 0) for false.
        Ok(match self.encoding {
            Encoding::Binary => b != 0,
            Encoding::Compact => b == 1,
        })
    }

    fn read_bytes(&mut self) -> thrift::Result<Vec<u8>> {
        if let Some(v) = self.stood_in() {
            return Ok(match v {
                Value::Text(t) => t.to_vec(),
                _ => Vec::new(),
            });
        }
        let len = match self.encoding {
            Encoding::Binary => i64::from(i32::from_be_bytes(self.array()?)),
            Encoding::Compact => i64::try_from(self.varint(5)?).unwrap_or(i64::MAX),
        };
        let len = self.checked_len(len, 1, "string")?;
        self.bytes_of(len)
    }

    fn read_i8(&mut self) -> thrift::Result<i8> {
        Ok(i8::from_be_bytes(self.array()?))
    }

    fn read_i16(&mut self) -> thrift::Result<i16> {
        match self.encoding {
            Encoding::Binary => Ok(i16::from_be_bytes(self.array()?)),
            #[allow(clippy::cast_possible_truncation)]
            Encoding::Compact => Ok(self.zigzag(3)? as i16),
        }
    }

    fn read_i32(&mut self) -> thrift::Result<i32> {
        if let Some(v) = self.stood_in() {
            return Ok(match v {
                Value::I32(n) => n,
                _ => 0,
            });
        }
        match self.encoding {
            Encoding::Binary => Ok(i32::from_be_bytes(self.array()?)),
            #[allow(clippy::cast_possible_truncation)]
            Encoding::Compact => Ok(self.zigzag(5)? as i32),
        }
    }

    fn read_i64(&mut self) -> thrift::Result<i64> {
        if self.stood_in().is_some() {
            return Ok(0);
        }
        match self.encoding {
            Encoding::Binary => Ok(i64::from_be_bytes(self.array()?)),
            Encoding::Compact => self.zigzag(10),
        }
    }

    fn read_double(&mut self) -> thrift::Result<f64> {
        match self.encoding {
            Encoding::Binary => Ok(f64::from_be_bytes(self.array()?)),
            Encoding::Compact => Ok(f64::from_le_bytes(self.array()?)),
        }
    }

    fn read_string(&mut self) -> thrift::Result<String> {
        let bytes = self.read_bytes()?;
        match String::from_utf8(bytes) {
            Ok(s) => Ok(s),
            Err(_) => self.fail(
                ProtocolErrorKind::InvalidData,
                "a string that is not UTF-8".to_owned(),
            ),
        }
    }

    fn read_list_begin(&mut self) -> thrift::Result<TListIdentifier> {
        match self.stood_in() {
            Some(Value::Empty(Arg::Structs)) => return Ok(TListIdentifier::new(TType::Struct, 0)),
            Some(_) => return Ok(TListIdentifier::new(TType::String, 0)),
            None => {}
        }
        let (t, len) = self.list_header()?;
        Ok(TListIdentifier::new(t, to_i32(len)))
    }

    fn read_list_end(&mut self) -> thrift::Result<()> {
        Ok(())
    }

    fn read_set_begin(&mut self) -> thrift::Result<TSetIdentifier> {
        let (t, len) = self.list_header()?;
        Ok(TSetIdentifier::new(t, to_i32(len)))
    }

    fn read_set_end(&mut self) -> thrift::Result<()> {
        Ok(())
    }

    fn read_map_begin(&mut self) -> thrift::Result<TMapIdentifier> {
        if self.stood_in().is_some() {
            return Ok(TMapIdentifier::new(TType::String, TType::String, 0));
        }
        let (key, value, len) = match self.encoding {
            Encoding::Binary => {
                let k = self.byte()?;
                let v = self.byte()?;
                let len = i64::from(i32::from_be_bytes(self.array()?));
                (self.element_type(k)?, self.element_type(v)?, len)
            }
            Encoding::Compact => {
                let len = i64::try_from(self.varint(5)?).unwrap_or(i64::MAX);
                if len == 0 {
                    return Ok(TMapIdentifier::new(None, None, 0));
                }
                let types = self.byte()?;
                (
                    self.element_type(types >> 4)?,
                    self.element_type(types & 0x0f)?,
                    len,
                )
            }
        };
        let min = self.min_size(key) + self.min_size(value);
        let len = self.checked_len(len, min, "map")?;
        Ok(TMapIdentifier::new(key, value, to_i32(len)))
    }

    fn read_map_end(&mut self) -> thrift::Result<()> {
        Ok(())
    }

    fn read_byte(&mut self) -> thrift::Result<u8> {
        self.byte()
    }
}

/// A checked length as the protocol's `i32` (always fits: it is at most `MAX_COLLECTION`).
fn to_i32(len: usize) -> i32 {
    i32::try_from(len).unwrap_or(i32::MAX)
}

#[cfg(test)]
mod tests;
