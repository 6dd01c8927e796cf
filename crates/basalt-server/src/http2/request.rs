//! A request's head, built from its decoded header fields and checked as RFC 9113 section
//! 8.3 asks: the pseudo-fields first and each once, `:method`, `:scheme` and `:path`
//! present, names in lower case, no connection-specific fields.

use bytes::Bytes;
use http::header::{HeaderName, HeaderValue};
use http::uri::{Authority, Parts, PathAndQuery, Scheme};
use http::{HeaderMap, Method, Request, Uri};

use super::hpack::Field;

/// Why a request's head was refused.
#[derive(Debug, PartialEq, Eq)]
pub enum Refused {
    /// The header list is larger than this server takes (answered 431).
    TooLarge(usize),
    /// The head breaks HTTP/2's rules for requests (the stream is reset).
    Malformed(String),
}

/// A request head being read, field by field.
#[derive(Debug)]
pub struct Head {
    method: Option<Bytes>,
    scheme: Option<Bytes>,
    authority: Option<Bytes>,
    path: Option<Bytes>,
    headers: HeaderMap,
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
            headers: HeaderMap::new(),
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
        let name = HeaderName::from_lowercase(&field.name)
            .map_err(|_| format!("the header field name {}", shown(&field.name)))?;
        let connection_specific = matches!(
            name.as_str(),
            "connection" | "keep-alive" | "proxy-connection" | "transfer-encoding" | "upgrade"
        );
        if connection_specific || (name == http::header::TE && field.value != "trailers") {
            return Err(format!("the connection-specific field {name}"));
        }
        let value = HeaderValue::from_maybe_shared(field.value)
            .map_err(|_| format!("a value of {name} that is not a header value"))?;
        self.headers.append(name, value);
        Ok(())
    }

    /// The request, or why it is refused.
    pub fn finish(self) -> Result<Request<()>, Refused> {
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
        let mut request = Request::new(());
        *request.method_mut() = method;
        *request.uri_mut() = uri;
        *request.version_mut() = http::Version::HTTP_2;
        *request.headers_mut() = self.headers;
        Ok(request)
    }
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
        head.finish()
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
