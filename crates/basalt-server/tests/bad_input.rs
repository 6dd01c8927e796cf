//! The committed bad-input corpora (`fuzz/corpus/thrift_request`, `grpc_request`) replayed
//! against a running server over its real protocols: every input gets an answer or a closed
//! connection, never a crash; gRPC answers a client error, never INTERNAL; the server serves
//! normally afterwards.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod common;

use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::time::Duration;

use basalt_proto::pb;
use bytes::{Buf, BufMut, Bytes};
use common::Running;
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};

fn corpus(target: &str) -> Vec<(String, Vec<u8>)> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus")
        .join(target);
    let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| {
            let p = e.unwrap().path();
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::read(p).unwrap(),
            )
        })
        .collect();
    out.sort();
    out
}

/// Sends `bytes` on a new connection, then reads until the server answers and closes, or
/// a moment passes.
fn send_raw(addr: std::net::SocketAddr, bytes: &[u8]) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let _ = s.write_all(bytes);
    let _ = s.shutdown(Shutdown::Write);
    let mut sink = Vec::new();
    let _ = s.read_to_end(&mut sink);
}

#[test]
fn the_thrift_corpus_leaves_the_gateway_serving() {
    let srv = Running::start(|_| {});
    let inputs = corpus("thrift_request");
    assert!(inputs.len() >= 10);
    for (_, data) in &inputs {
        send_raw(srv.thrift, data); // buffered
        let mut framed = u32::try_from(data.len()).unwrap().to_be_bytes().to_vec();
        framed.extend_from_slice(data);
        send_raw(srv.thrift, &framed);
    }
    let stream = TcpStream::connect(srv.thrift).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    use hbase_thrift::hbase::{HbaseSyncClient, THbaseSyncClient};
    use thrift::protocol::{TBinaryInputProtocol, TBinaryOutputProtocol};
    use thrift::transport::{
        TBufferedReadTransport, TBufferedWriteTransport, TIoChannel, TTcpChannel,
    };
    let (r, w) = TTcpChannel::with_stream(stream).split().unwrap();
    let mut client = HbaseSyncClient::new(
        TBinaryInputProtocol::new(TBufferedReadTransport::new(r), true),
        TBinaryOutputProtocol::new(TBufferedWriteTransport::new(w), true),
    );
    assert!(client.get_table_names().unwrap().is_empty());
}

/// A codec that sends a request's bytes as they are and ignores the response's.
#[derive(Debug, Clone, Default)]
struct Raw;

impl Codec for Raw {
    type Encode = Bytes;
    type Decode = ();
    type Encoder = Raw;
    type Decoder = Raw;

    fn encoder(&mut self) -> Raw {
        Raw
    }

    fn decoder(&mut self) -> Raw {
        Raw
    }
}

impl Encoder for Raw {
    type Item = Bytes;
    type Error = tonic::Status;

    fn encode(&mut self, item: Bytes, dst: &mut EncodeBuf<'_>) -> Result<(), tonic::Status> {
        dst.put(item);
        Ok(())
    }
}

impl Decoder for Raw {
    type Item = ();
    type Error = tonic::Status;

    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<()>, tonic::Status> {
        src.advance(src.remaining());
        Ok(Some(()))
    }
}

#[test]
fn the_grpc_corpus_gets_client_errors_never_internal() {
    let srv = Running::start(|_| {});
    let inputs = corpus("grpc_request");
    assert!(inputs.len() >= 10);
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let channel = tonic::transport::Endpoint::from_shared(format!("http://{}", srv.native))
            .unwrap()
            .connect()
            .await
            .unwrap();
        let mut grpc = tonic::client::Grpc::new(channel.clone());
        for method in [
            "/basalt.v1.Table/Mutate",
            "/basalt.v1.Table/Batch",
            "/basalt.v1.Table/OpenScanner",
            "/basalt.v1.Admin/CreateTable",
        ] {
            for (name, data) in &inputs {
                grpc.ready().await.unwrap();
                let path = tonic::codegen::http::uri::PathAndQuery::from_static(method);
                let req = tonic::Request::new(Bytes::copy_from_slice(data));
                if let Err(s) = grpc.unary(req, path, Raw).await {
                    assert!(
                        !matches!(s.code(), tonic::Code::Internal | tonic::Code::Unknown),
                        "{method} {name}: {s:?}"
                    );
                }
            }
        }
        // Every method the proto file gives the Table service is served: an empty request
        // is answered, if refused then as the client's fault, never as unknown.
        let proto = include_str!("../../basalt-proto/proto/basalt/v1/basalt.proto");
        let service = proto.split("service Table {").nth(1).unwrap();
        let methods: Vec<&str> = service
            .split('}')
            .next()
            .unwrap()
            .lines()
            .filter_map(|l| l.trim().strip_prefix("rpc "))
            .filter_map(|l| l.split('(').next())
            .collect();
        assert_eq!(methods.len(), 8, "{methods:?}");
        for method in methods {
            grpc.ready().await.unwrap();
            let path = format!("/basalt.v1.Table/{method}");
            let path = tonic::codegen::http::uri::PathAndQuery::try_from(path).unwrap();
            let req = tonic::Request::new(Bytes::new());
            if let Err(s) = grpc.unary(req, path, Raw).await {
                assert!(
                    !matches!(
                        s.code(),
                        tonic::Code::Unimplemented | tonic::Code::Internal | tonic::Code::Unknown
                    ),
                    "{method}: {s:?}"
                );
            }
        }
        // A method or a service the server does not have is named in its refusal; a
        // service whose name only begins as the Table service's is not taken for it.
        for method in [
            "/basalt.v1.Table/NoSuchMethod",
            "/no.such.Service/Get",
            "/",
            "/basalt.v1.TableX/Get",
            "/basalt.v1.Table",
        ] {
            grpc.ready().await.unwrap();
            let path = tonic::codegen::http::uri::PathAndQuery::from_static(method);
            let req = tonic::Request::new(Bytes::from_static(b"\x0a\x01t"));
            let s = grpc.unary(req, path, Raw).await.unwrap_err();
            assert_eq!(s.code(), tonic::Code::Unimplemented, "{method}: {s:?}");
            assert!(
                s.message().ends_with(&format!("no method {method}")),
                "{s:?}"
            );
        }
        let mut admin = pb::admin_client::AdminClient::new(channel);
        let names = admin.list_namespaces(pb::Empty {}).await.unwrap();
        assert!(names.into_inner().names.contains(&"default".to_owned()));
    });
}
