//! A request's head, built from its decoded header fields and checked as RFC 9113 section
//! 8.3 asks: the pseudo-fields first and each once, `:method`, `:scheme` and `:path`
//! present, names in lower case, no connection-specific fields.
//!
//! The regular fields are checked as an `http::HeaderMap` takes them, and kept in a list:
//! the table calls read none of them but the deadline, and building the map (each name
//! parsed, each value checked again, each field hashed in) cost a point read about 1,500
//! instructions. A service that takes an `http::Request` gets one built from the head
//! ([`RequestHead::into_http`]).

use std::sync::Arc;

use bytes::Bytes;
use http::header::{HeaderName, HeaderValue};
use http::uri::{Authority, Parts, PathAndQuery, Scheme};
use http::{HeaderMap, Method, Request, Uri};

use super::hpack::{Decoder, Field};

/// Why a request's head was refused.
#[derive(Debug, PartialEq, Eq)]
pub enum Refused {
    /// The header list is larger than this server takes (answered 431).
    TooLarge(usize),
    /// The head breaks HTTP/2's rules for requests (the stream is reset).
    Malformed(String),
}

/// A request's head: its method and URI, and its regular fields in the order they came.
///
/// # Invariant
/// Each field's name is one `HeaderName::from_lowercase` takes, and its value one
/// `HeaderValue::from_maybe_shared` takes (`is_field_name`, `is_field_value`).
#[derive(Clone, Debug)]
pub struct RequestHead {
    pub method: Method,
    pub uri: Uri,
    fields: Vec<Field>,
}

impl RequestHead {
    /// The value of the first field named `name`.
    #[must_use]
    pub fn field(&self, name: &[u8]) -> Option<&Bytes> {
        self.fields
            .iter()
            .find(|f| f.name == name)
            .map(|f| &f.value)
    }

    /// The head as an `http::Request`, its fields in a header map.
    #[must_use]
    pub fn into_http(self) -> Request<()> {
        let mut headers = HeaderMap::with_capacity(self.fields.len());
        for field in self.fields {
            // Both always parse (the invariant): the map takes what the head took.
            if let (Ok(name), Ok(value)) = (
                HeaderName::from_lowercase(&field.name),
                HeaderValue::from_maybe_shared(field.value),
            ) {
                headers.append(name, value);
            }
        }
        let mut request = Request::new(());
        *request.method_mut() = self.method;
        *request.uri_mut() = self.uri;
        *request.version_mut() = http::Version::HTTP_2;
        *request.headers_mut() = headers;
        request
    }
}

/// A request head being read, field by field.
#[derive(Debug)]
pub struct Head {
    method: Option<Bytes>,
    scheme: Option<Bytes>,
    authority: Option<Bytes>,
    path: Option<Bytes>,
    fields: Vec<Field>,
    size: usize,
    limit: usize,
    regular_seen: bool,
    refused: Option<Refused>,
}

impl Head {
    /// A head whose header list may hold `limit` bytes (as RFC 9113 6.5.2 counts them).
    pub fn new(limit: usize) -> Head {
        Head {
            method: None,
            scheme: None,
            authority: None,
            path: None,
            // A gRPC request has four or five regular fields.
            fields: Vec::with_capacity(6),
            size: 0,
            limit,
            regular_seen: false,
            refused: None,
        }
    }

    /// Adds a field. After the first fault the fields are only counted.
    pub fn add(&mut self, field: Field) {
        self.size += field.size();
        if self.refused.is_some() {
            return;
        }
        if self.size > self.limit {
            self.refused = Some(Refused::TooLarge(self.size));
            return;
        }
        if let Err(why) = self.take(field) {
            self.refused = Some(Refused::Malformed(why));
        }
    }

    fn take(&mut self, field: Field) -> Result<(), String> {
        if let Some(pseudo) = field.name.strip_prefix(b":") {
            if self.regular_seen {
                return Err("a pseudo-header field after a regular one".to_owned());
            }
            let slot = match pseudo {
                b"method" => &mut self.method,
                b"scheme" => &mut self.scheme,
                b"authority" => &mut self.authority,
                b"path" => &mut self.path,
                _ => return Err(format!("the pseudo-header field {}", shown(&field.name))),
            };
            if slot.replace(field.value).is_some() {
                return Err(format!("{} twice", shown(&field.name)));
            }
            return Ok(());
        }
        self.regular_seen = true;
        let name = &field.name[..];
        if !is_field_name(name) {
            return Err(format!("the header field name {}", shown(name)));
        }
        let connection_specific = matches!(
            name,
            b"connection" | b"keep-alive" | b"proxy-connection" | b"transfer-encoding" | b"upgrade"
        );
        if connection_specific || (name == b"te" && field.value != "trailers") {
            return Err(format!("the connection-specific field {}", shown(name)));
        }
        if !is_field_value(&field.value) {
            return Err(format!(
                "a value of {} that is not a header value",
                shown(name)
            ));
        }
        self.fields.push(field);
        Ok(())
    }

    /// The request's head, or why it is refused.
    pub fn finish(self) -> Result<RequestHead, Refused> {
        if let Some(refused) = self.refused {
            return Err(refused);
        }
        let malformed = |why: &str| Refused::Malformed(why.to_owned());
        let method = self.method.ok_or_else(|| malformed("no :method"))?;
        let method =
            Method::from_bytes(&method).map_err(|_| malformed("a :method that is none"))?;
        let scheme = self.scheme.ok_or_else(|| malformed("no :scheme"))?;
        let path = self
            .path
            .filter(|p| !p.is_empty())
            .ok_or_else(|| malformed("no :path"))?;
        let mut parts = Parts::default();
        // A URI with a scheme needs an authority: without one, the path alone stands.
        if let Some(authority) = self.authority {
            parts.scheme = Some(
                Scheme::try_from(&scheme[..]).map_err(|_| malformed("a :scheme that is none"))?,
            );
            parts.authority = Some(
                Authority::from_maybe_shared(authority)
                    .map_err(|_| malformed("a bad :authority"))?,
            );
        }
        parts.path_and_query =
            Some(PathAndQuery::from_maybe_shared(path).map_err(|_| malformed("a bad :path"))?);
        let uri = Uri::from_parts(parts).map_err(|e| Refused::Malformed(e.to_string()))?;
        Ok(RequestHead {
            method,
            uri,
            fields: self.fields,
        })
    }
}

/// Header blocks read before, with the request heads they held: a client's calls send the
/// same block call after call (the same path and fields, each named by its index in the
/// dynamic table), and decoding and checking it again cost a point read about 3,900
/// instructions of the server's 58,000. The calls share the head (a copy of its fields cost
/// 500).
///
/// # Invariant
/// Each block kept decodes, against the table as it stands, to the head kept with it: the
/// blocks are forgotten as soon as the table changes, and a block's fields depend only on its
/// bytes and the table.
#[derive(Debug, Default)]
pub struct RecentHeads {
    /// The table's [`Decoder::changes`] when the blocks were read.
    table: u64,
    /// At most [`RECENT`] blocks, the oldest replaced first.
    heads: Vec<(Bytes, Arc<RequestHead>)>,
    next: usize,
}

/// Blocks kept: a client's few methods (a YCSB A client alternates a Get and a Mutate).
const RECENT: usize = 4;

impl RecentHeads {
    /// The request head `block` holds, its header list held to `limit` bytes, or why it is
    /// refused: decoded by `hpack` unless an identical block was read while the table stood
    /// as it does.
    ///
    /// # Errors
    /// The block does not decode (a connection error: the table can no longer be trusted).
    pub fn read(
        &mut self,
        hpack: &mut Decoder,
        block: &Bytes,
        limit: usize,
    ) -> Result<Result<Arc<RequestHead>, Refused>, String> {
        let table = hpack.changes();
        if table != self.table {
            self.heads.clear();
            self.table = table;
        }
        if let Some((_, head)) = self.heads.iter().find(|(b, _)| b == block) {
            return Ok(Ok(Arc::clone(head)));
        }
        // Read from a copy of its own: a block is a slice of the bytes read off the socket,
        // and the head's values are slices of it, which would keep all of those bytes.
        let block = Bytes::copy_from_slice(block);
        let mut head = Head::new(limit);
        hpack.decode(&block, |field| head.add(field))?;
        let head = head.finish().map(Arc::new);
        // A block that changed the table is forgotten at the next read, with the others.
        if let Ok(read) = &head {
            let recent = (block, Arc::clone(read));
            if self.heads.len() < RECENT {
                self.heads.push(recent);
            } else {
                self.heads[self.next] = recent;
                self.next = (self.next + 1) % RECENT;
            }
        }
        Ok(head)
    }
}

/// A name `HeaderName::from_lowercase` takes: a token (RFC 9110 section 5.6.2) without
/// upper-case letters, as HTTP/2 writes names, or with a double quote, which the map takes
/// too.
fn is_field_name(name: &[u8]) -> bool {
    !name.is_empty() && name.len() <= MAX_NAME && name.iter().all(|&b| NAME_BYTES[usize::from(b)])
}

/// The bytes of names ([`is_field_name`]), looked up rather than matched: a request's names
/// are checked a byte at a time.
const NAME_BYTES: [bool; 256] = {
    let mut bytes = [false; 256];
    let mut b = 0;
    while b < 256 {
        bytes[b] = matches!(b as u8, b'a'..=b'z' | b'0'..=b'9' | b'!' | b'"' | b'#' | b'$'
            | b'%' | b'&' | b'\'' | b'*' | b'+' | b'-' | b'.' | b'^' | b'_' | b'`' | b'|' | b'~');
        b += 1;
    }
    bytes
};

/// The longest name a header map takes.
const MAX_NAME: usize = (1 << 16) - 1;

/// A value `HeaderValue::from_maybe_shared` takes: no control character but tab.
fn is_field_value(value: &[u8]) -> bool {
    value
        .iter()
        .all(|&b| b == b'\t' || (b >= 0x20 && b != 0x7f))
}

/// A field name as printable text, for an error.
fn shown(name: &[u8]) -> String {
    String::from_utf8_lossy(&name[..name.len().min(64)]).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(fields: &[(&str, &str)], limit: usize) -> Result<Request<()>, Refused> {
        let mut head = Head::new(limit);
        for (name, value) in fields {
            head.add(Field {
                name: Bytes::copy_from_slice(name.as_bytes()),
                value: Bytes::copy_from_slice(value.as_bytes()),
            });
        }
        head.finish().map(RequestHead::into_http)
    }

    const GRPC: [(&str, &str); 6] = [
        (":method", "POST"),
        (":scheme", "http"),
        (":path", "/basalt.v1.Table/Get"),
        (":authority", "127.0.0.1:16020"),
        ("content-type", "application/grpc"),
        ("te", "trailers"),
    ];

    /// A gRPC request's head becomes the request its fields name.
    #[test]
    fn a_grpc_head_becomes_its_request() {
        let request = head(&GRPC, 16 << 10).unwrap();
        assert_eq!(request.method(), Method::POST);
        assert_eq!(request.uri().path(), "/basalt.v1.Table/Get");
        assert_eq!(request.uri().authority().unwrap(), "127.0.0.1:16020");
        assert_eq!(request.headers()["content-type"], "application/grpc");
        assert_eq!(request.headers()["te"], "trailers");
        assert_eq!(request.version(), http::Version::HTTP_2);
    }

    /// A head's fields are found by name, the first of a name twice.
    #[test]
    fn a_head_finds_its_fields() {
        let mut fields = GRPC.to_vec();
        fields.extend([("grpc-timeout", "5m"), ("x-twice", "1"), ("x-twice", "2")]);
        let mut head = Head::new(16 << 10);
        for (name, value) in fields {
            head.add(Field {
                name: Bytes::from(name),
                value: Bytes::from(value),
            });
        }
        let head = head.finish().unwrap();
        assert_eq!(head.field(b"grpc-timeout").unwrap(), "5m");
        assert_eq!(head.field(b"x-twice").unwrap(), "1");
        assert_eq!(head.field(b"content-type").unwrap(), "application/grpc");
        assert!(head.field(b"grpc-Timeout").is_none());
        let request = head.into_http();
        let twice: Vec<_> = request.headers().get_all("x-twice").iter().collect();
        assert_eq!(twice, ["1", "2"]);
    }

    proptest::proptest! {
        /// The head takes exactly the names and values a header map takes, so the map
        /// built from a head never leaves a field out.
        #[test]
        fn fields_are_checked_as_a_header_map_checks_them(
            name in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..12),
            value in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..12),
            ascii in "[ -~]{0,12}",
        ) {
            proptest::prop_assert_eq!(is_field_name(&name), HeaderName::from_lowercase(&name).is_ok());
            proptest::prop_assert_eq!(
                is_field_name(ascii.as_bytes()),
                HeaderName::from_lowercase(ascii.as_bytes()).is_ok()
            );
            proptest::prop_assert_eq!(is_field_value(&value), HeaderValue::from_bytes(&value).is_ok());
            proptest::prop_assert_eq!(
                is_field_value(ascii.as_bytes()),
                HeaderValue::from_bytes(ascii.as_bytes()).is_ok()
            );
        }
    }

    /// Every byte alone, as a name and as a value, is taken as a header map takes it.
    #[test]
    fn every_byte_is_checked_as_a_header_map_checks_it() {
        for b in 0..=u8::MAX {
            let one = [b];
            assert_eq!(
                is_field_name(&one),
                HeaderName::from_lowercase(&one).is_ok(),
                "{b}"
            );
            assert_eq!(
                is_field_value(&one),
                HeaderValue::from_bytes(&one).is_ok(),
                "{b}"
            );
        }
        let longest = vec![b'a'; MAX_NAME];
        assert!(is_field_name(&longest) && HeaderName::from_lowercase(&longest).is_ok());
        let longer = vec![b'a'; MAX_NAME + 1];
        assert!(!is_field_name(&longer) && HeaderName::from_lowercase(&longer).is_err());
    }

    /// What a block decodes to with no blocks kept: its head, or why it is refused.
    fn decoded(hpack: &mut Decoder, block: &Bytes) -> String {
        let mut head = Head::new(16 << 10);
        hpack.decode(block, |field| head.add(field)).unwrap();
        format!("{:?}", head.finish())
    }

    /// A block read again is read as a decode reads it, whether it comes straight after
    /// itself, between another method's, or after a block changed the table, when the same
    /// bytes name other fields.
    #[test]
    fn a_block_read_again_is_read_as_a_decode_reads_it() {
        let mut encoder = super::super::hpack::Encoder::default();
        let mut block = |path: &str, extra: Option<(&str, &str)>| {
            let mut out = Vec::new();
            encoder.begin(&mut out);
            for (name, value) in [(":method", "POST"), (":scheme", "http"), (":path", path)] {
                encoder.field(&mut out, name.as_bytes(), value.as_bytes(), true);
            }
            encoder.field(&mut out, b"grpc-timeout", b"5000m", false);
            if let Some((name, value)) = extra {
                encoder.field(&mut out, name.as_bytes(), value.as_bytes(), true);
            }
            Bytes::from(out)
        };
        // In the order the client sends them: the first of each method adds its path to
        // the table; after that each is named by its index.
        let get_first = block("/t/Get", None);
        let mutate_first = block("/t/Mutate", None);
        let get = block("/t/Get", None);
        let mutate = block("/t/Mutate", None);
        // Adds a field to the table: the index `get` names now points at the Mutate path.
        let changing = block("/t/Get", Some(("x-trace", "1")));
        assert_ne!(
            get_first, get,
            "the later block names the path by its index"
        );
        let sent = [
            &get_first,
            &mutate_first,
            &get,
            &get,
            &mutate,
            &get,
            &mutate,
            &changing,
            &get,
            &get,
            &mutate,
            &mutate,
        ];
        let (mut recent, mut hpack, mut plain) = (
            RecentHeads::default(),
            Decoder::new(4096),
            Decoder::new(4096),
        );
        // A head handed out again is the very one handed out before for the same block; a
        // decode makes a new one.
        let mut handed: Vec<(&Bytes, Arc<RequestHead>)> = Vec::new();
        let mut reused = Vec::new();
        let mut read = Vec::new();
        for (i, block) in sent.into_iter().enumerate() {
            let head = recent.read(&mut hpack, block, 16 << 10).unwrap();
            let shown = format!("{head:?}");
            assert_eq!(shown, decoded(&mut plain, block), "block {i}");
            if let Ok(head) = head {
                if handed
                    .iter()
                    .any(|(b, h)| *b == block && Arc::ptr_eq(h, &head))
                {
                    reused.push(i);
                }
                handed.push((block, head));
            }
            read.push(shown);
        }
        assert!(
            read[2].contains("/t/Get") && read[8].contains("/t/Mutate"),
            "{read:?}"
        );
        // The stale Mutate block names the added field where its path was: refused.
        assert!(read[10].contains("no :path"), "{}", read[10]);
        assert_eq!(
            reused,
            [3, 5, 6, 9],
            "the repeats while the table stood, and only they, were not decoded again"
        );
    }

    /// Each breach of RFC 9113 8.3 is refused as malformed, and a list past the limit as
    /// too large.
    #[test]
    fn heads_that_break_the_rules_are_refused() {
        // A pseudo-header field goes before the regular ones, a regular one after them.
        let with = |extra: (&'static str, &'static str)| {
            let mut fields = GRPC.to_vec();
            let at = if extra.0.starts_with(':') {
                1
            } else {
                fields.len()
            };
            fields.insert(at, extra);
            fields
        };
        for (fields, why) in [
            (with(("Content-Length", "1")), "name Content-Length"),
            (with((":method", "GET")), ":method twice"),
            (with((":status", "200")), "pseudo-header field :status"),
            (with(("connection", "close")), "connection-specific"),
            (with(("te", "gzip")), "connection-specific"),
            (GRPC[1..].to_vec(), "no :method"),
            (vec![GRPC[0], GRPC[1], GRPC[4]], "no :path"),
            (vec![GRPC[0], GRPC[4], GRPC[2]], "after a regular one"),
        ] {
            match head(&fields, 16 << 10) {
                Err(Refused::Malformed(e)) => assert!(e.contains(why), "{e} / {why}"),
                other => panic!("{fields:?}: {other:?}"),
            }
        }
        let large = "v".repeat(300);
        let mut fields: Vec<(&str, &str)> = GRPC.to_vec();
        fields.push(("x-large", &large));
        assert!(matches!(head(&fields, 256), Err(Refused::TooLarge(n)) if n > 256));
    }
}
