//! HTTP/2's wire (RFC 9113) and header compression (HPACK, RFC 7541), as the native API's
//! server and client both speak it: frames parsed where they lie and written straight into
//! the buffer a turn writes. Each side keeps its own connection state; this is the codec
//! they share.

pub mod frame;
pub mod hpack;
mod huffman;
