//! HTTP/2 on the native API's hot path: a gRPC request's header block decoded by the server,
//! as h2's client sends it once the connection's first request has filled the dynamic
//! table, and made into the request's head, the first time and when the block comes again;
//! and encoded by Basalt's own client once its first request has.
//!
//! `cargo bench -p basalt-server --bench http2`

use basalt_server::http2::hpack::{Decoder, Encoder};
use basalt_server::http2::request::{Head, RecentHeads};
use bytes::Bytes;
use criterion::{black_box, criterion_group, criterion_main, Criterion};

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
        .collect()
}

/// A literal field with incremental indexing whose name is static entry `name` and whose
/// value is the Huffman code `value`.
fn indexed_literal(block: &mut Vec<u8>, name: u8, value: &str) {
    let value = hex(value);
    block.push(0x40 | name);
    block.push(0x80 | u8::try_from(value.len()).expect("short"));
    block.extend_from_slice(&value);
}

/// The first request of a connection: `:method POST` and `:scheme http` from the static table,
/// the path, authority, content type, `te` and user agent Huffman-coded and indexed.
fn first_request() -> Bytes {
    let mut block = vec![0x83, 0x86];
    indexed_literal(&mut block, 4, "6231a074257ee15f78e3a0ac622a7f");
    indexed_literal(&mut block, 1, "089d5c0b8170dc0b80103f");
    indexed_literal(&mut block, 31, "1d75d0620d263d4c4d6564");
    block.extend_from_slice(&[0x40, 0x02, b't', b'e']);
    block.push(0x80 | 6);
    block.extend_from_slice(&hex("4d833505b11f"));
    indexed_literal(&mut block, 58, "8c681d09589418b527");
    Bytes::from(block)
}

/// A later request: each field from the dynamic table, and a `grpc-timeout` of its own,
/// Huffman-coded (not indexed, so the table stays as the first request left it).
fn later_request() -> Bytes {
    // The dynamic table, newest first: user-agent 62, te 63, content-type 64, :authority
    // 65, :path 66.
    let mut block = vec![0x83, 0x86, 0x80 | 66, 0x80 | 65, 0x80 | 64, 0x80 | 63];
    block.extend_from_slice(&[0x00, 0x0c]);
    block.extend_from_slice(b"grpc-timeout");
    let timeout = hex("7df7df7df7ad");
    block.push(0x80 | u8::try_from(timeout.len()).expect("short"));
    block.extend_from_slice(&timeout);
    block.push(0x80 | 62);
    Bytes::from(block)
}

fn decode(c: &mut Criterion) {
    let mut decoder = Decoder::new(4096);
    decoder
        .decode(&first_request(), |_| {})
        .expect("the first request");
    let later = later_request();
    let mut fields = Vec::new();
    decoder
        .decode(&later, |f| fields.push((f.name, f.value)))
        .expect("a later request");
    assert_eq!(fields.len(), 8);
    assert_eq!(
        fields[2],
        (Bytes::from(":path"), Bytes::from("/basalt.v1.Table/Get"))
    );
    assert_eq!(
        fields[6],
        (Bytes::from("grpc-timeout"), Bytes::from("9999998u"))
    );
    assert_eq!(fields[7].1, "basalt-client");
    c.bench_function("hpack/decode_a_grpc_request_head", |b| {
        b.iter(|| {
            decoder
                .decode(black_box(&later), |field| {
                    black_box(field);
                })
                .expect("decodes");
        });
    });
    // The same block made into the head a call starts from: each field checked, the method
    // and URI parsed, the regular fields kept.
    c.bench_function("request/head_of_a_grpc_request", |b| {
        b.iter(|| {
            let mut head = Head::new(16 << 10);
            decoder
                .decode(black_box(&later), |field| head.add(field))
                .expect("decodes");
            let head = head.finish().expect("a good head");
            assert_eq!(head.uri.path(), "/basalt.v1.Table/Get");
            black_box(head)
        });
    });
    // The same block read as the connection reads it: after its first time, while the
    // table stands, its head is the one read then.
    let mut recent = RecentHeads::default();
    c.bench_function("request/head_of_a_repeated_grpc_request", |b| {
        b.iter(|| {
            let head = recent
                .read(&mut decoder, black_box(&later), 16 << 10)
                .expect("decodes")
                .expect("a good head");
            assert_eq!(head.uri.path(), "/basalt.v1.Table/Get");
            black_box(head)
        });
    });
}

/// One table call's head as the client writes it (`basalt-client`'s `rpc.rs`).
fn put_request(encoder: &mut Encoder, block: &mut Vec<u8>) {
    encoder.begin(block);
    encoder.field(block, b":method", b"POST", true);
    encoder.field(block, b":scheme", b"http", true);
    encoder.field(block, b":path", b"/basalt.v1.Table/Get", true);
    encoder.field(block, b":authority", b"127.0.0.1:16020", true);
    encoder.field(block, b"content-type", b"application/grpc", true);
    encoder.field(block, b"te", b"trailers", true);
    encoder.field(block, b"user-agent", b"basalt-client", true);
    encoder.field(block, b"grpc-timeout", b"60000000u", false);
}

fn encode(c: &mut Criterion) {
    let mut encoder = Encoder::default();
    let mut block = Vec::new();
    put_request(&mut encoder, &mut block);
    block.clear();
    put_request(&mut encoder, &mut block);
    // Seven fields of one byte each, and the deadline's literal.
    assert_eq!(block.len(), 7 + 1 + 1 + 12 + 1 + 9);
    c.bench_function("hpack/encode_a_grpc_request_head", |b| {
        b.iter(|| {
            block.clear();
            put_request(&mut encoder, black_box(&mut block));
        });
    });
}

criterion_group!(benches, decode, encode);
criterion_main!(benches);
