//! HTTP/2 for the native API's server (RFC 9113, with HPACK, RFC 7541): just what serving
//! unary gRPC calls needs, on the connection's own task.
//!
//! h2, beneath tonic and then beneath this server's own connection task, kept each
//! connection's streams in a store shared through locks and reference counts, a slab of
//! frames per stream, and its own copy of every frame's head: about a quarter of the
//! event loop's time in a point read. Here a connection is one plain value its task owns
//! ([`connection::Connection`]): frames are parsed where they lie in the read buffer, a
//! request's data is handed to its call without a copy, and an answer's head, data and
//! trailers are encoded straight into the one buffer the turn writes.
//!
//! What it serves: streams opened by the client (never pushed), flow control both ways,
//! header blocks across CONTINUATION frames, padding, PING, SETTINGS and GOAWAY, and every
//! fault RFC 9113 names answered with the stream or connection error it asks for. What it
//! leaves out: priorities (read and ignored, as RFC 9113 allows), server push, and the
//! dynamic table on its own answers (its heads are two or three short fields).

pub mod connection;
pub mod request;
pub mod stream;

/// The frames and header compression, shared with the native API's client.
pub use basalt_proto::http2::{frame, hpack};
