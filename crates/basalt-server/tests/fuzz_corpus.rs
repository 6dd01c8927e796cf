//! Replays the committed corpora of the `thrift_request` and `grpc_request` fuzz targets
//! (`fuzz/corpus/<target>/`) through the entry points those targets call, on stable Rust:
//! nothing panics, and every seed named `valid-*` still decodes whole.
//!
//! `write_seed_corpus` (ignored; run by hand) writes the seeds the corpora started from:
//! real requests from the `thrift` crate's encoders and the native API's messages, and the
//! hostile ones of RELIABILITY.md (lengths that lie, deep nesting, garbage, truncation).
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod common;

use std::path::{Path, PathBuf};

use basalt_proto::pb;
use basalt_server::fuzzing;
use common::put_mutation;
use prost::Message;

fn corpus_dir(target: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus")
        .join(target)
}

/// Every input of a corpus, with its file name.
pub fn corpus(target: &str) -> Vec<(String, Vec<u8>)> {
    let dir = corpus_dir(target);
    let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| {
            let p = e.unwrap().path();
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(p).unwrap())
        })
        .collect();
    out.sort();
    out
}

#[test]
fn committed_corpora_decode_without_panicking_and_valid_seeds_decode_whole() {
    let thrift = corpus("thrift_request");
    assert!(thrift.len() >= 10, "{} thrift inputs", thrift.len());
    for (name, data) in &thrift {
        let whole = fuzzing::thrift_request(data);
        if name.starts_with("valid-") {
            assert!(whole, "{name} no longer decodes");
        }
    }
    let grpc = corpus("grpc_request");
    assert!(grpc.len() >= 10, "{} gRPC inputs", grpc.len());
    for (name, data) in &grpc {
        let converted = basalt_proto::fuzzing::grpc_request(data);
        if name.starts_with("valid-") {
            assert!(converted > 0, "{name} no longer decodes and converts");
        }
    }
}

/// Real requests, as the `thrift` crate's client encodes them.
fn thrift_seeds() -> Vec<(String, Vec<u8>)> {
    use thrift::protocol::{
        TBinaryOutputProtocol, TCompactOutputProtocol, TFieldIdentifier, TListIdentifier,
        TMessageIdentifier, TMessageType, TOutputProtocol, TStructIdentifier, TType,
    };
    let encode = |compact: bool, method: &str, fill: &dyn Fn(&mut dyn TOutputProtocol)| {
        let mut buf = Vec::new();
        {
            let mut p: Box<dyn TOutputProtocol> = if compact {
                Box::new(TCompactOutputProtocol::new(&mut buf))
            } else {
                Box::new(TBinaryOutputProtocol::new(&mut buf, true))
            };
            p.write_message_begin(&TMessageIdentifier::new(method, TMessageType::Call, 1))
                .unwrap();
            p.write_struct_begin(&TStructIdentifier::new("args"))
                .unwrap();
            fill(p.as_mut());
            p.write_field_stop().unwrap();
            p.write_struct_end().unwrap();
            p.write_message_end().unwrap();
            p.flush().unwrap();
        }
        buf
    };
    let table = |p: &mut dyn TOutputProtocol| {
        p.write_field_begin(&TFieldIdentifier::new("tableName", TType::String, 1))
            .unwrap();
        p.write_bytes(b"t").unwrap();
        p.write_field_end().unwrap();
    };
    let rows = |p: &mut dyn TOutputProtocol| {
        table(p);
        p.write_field_begin(&TFieldIdentifier::new("rows", TType::List, 2))
            .unwrap();
        p.write_list_begin(&TListIdentifier::new(TType::String, 3))
            .unwrap();
        for r in [b"a", b"b", b"c"] {
            p.write_bytes(r).unwrap();
        }
        p.write_list_end().unwrap();
        p.write_field_end().unwrap();
    };
    let nested_filter = |p: &mut dyn TOutputProtocol| {
        table(p);
        p.write_field_begin(&TFieldIdentifier::new("filter", TType::String, 2))
            .unwrap();
        let f = format!("{}PrefixFilter('a'){}", "(".repeat(1200), ")".repeat(1200));
        p.write_bytes(f.as_bytes()).unwrap();
        p.write_field_end().unwrap();
    };
    let none = |_: &mut dyn TOutputProtocol| {};
    let mut out = Vec::new();
    for compact in [false, true] {
        let enc = if compact { "compact" } else { "binary" };
        out.push((
            format!("valid-{enc}-getTableNames"),
            encode(compact, "getTableNames", &none),
        ));
        out.push((
            format!("valid-{enc}-getRows"),
            encode(compact, "getRows", &rows),
        ));
        out.push((
            format!("valid-{enc}-nested-filter"),
            encode(compact, "scannerOpenWithScan", &nested_filter),
        ));
    }
    out
}

/// Hostile requests: lengths that lie, nesting, bad versions, garbage, truncation.
fn thrift_hostile() -> Vec<(String, Vec<u8>)> {
    let header = |name: &[u8]| {
        let mut m = vec![0x80, 0x01, 0x00, 0x01];
        m.extend_from_slice(&u32::try_from(name.len()).unwrap().to_be_bytes());
        m.extend_from_slice(name);
        m.extend_from_slice(&1u32.to_be_bytes());
        m
    };
    let mut negative_string = header(b"getRow");
    negative_string.extend_from_slice(&[0x0b, 0x00, 0x01, 0xff, 0xff, 0xff, 0xfe]);
    let mut huge_list = header(b"getRows");
    huge_list.extend_from_slice(&[0x0f, 0x00, 0x02, 0x0b, 0x40, 0x00, 0x00, 0x00]);
    let mut deep = header(b"mutateRow");
    for _ in 0..200 {
        deep.extend_from_slice(&[0x0c, 0x00, 0x01]);
    }
    let mut bad_version = header(b"getTableNames");
    bad_version[1] = 0x07;
    let garbage: Vec<u8> = (0..997u32)
        .map(|i| u8::try_from(i * 131 % 251).unwrap())
        .collect();
    let valid = thrift_seeds().remove(1).1;
    vec![
        ("hostile-negative-string".to_owned(), negative_string),
        ("hostile-huge-list".to_owned(), huge_list),
        ("hostile-deep-structs".to_owned(), deep),
        ("hostile-bad-version".to_owned(), bad_version),
        ("hostile-garbage".to_owned(), garbage),
        (
            "hostile-truncated".to_owned(),
            valid[..valid.len() / 2].to_vec(),
        ),
        ("hostile-empty".to_owned(), Vec::new()),
    ]
}

fn grpc_seeds() -> Vec<(String, Vec<u8>)> {
    let put = put_mutation("r");
    let scan = |filter: &str| pb::OpenScannerRequest {
        table: "t".into(),
        scan: Some(pb::Scan {
            filter: Some(bytes::Bytes::copy_from_slice(filter.as_bytes())),
            max_versions: 1,
            ..pb::Scan::default()
        }),
        first_result_bytes: 0,
    };
    let nested = format!("{}PrefixFilter('a'){}", "(".repeat(5000), ")".repeat(5000));
    let mut delete_in_put = put.clone();
    if let Some(pb::mutation::Kind::Put(p)) = &mut delete_in_put.kind {
        p.cells[0].r#type = pb::CellType::DeleteFamily as i32;
    }
    let valid_mutate = pb::MutateRequest {
        table: "t".into(),
        mutation: Some(put.clone()),
        region: None,
    }
    .encode_to_vec();
    let mut deep_unknown = Vec::new();
    for _ in 0..150 {
        deep_unknown.extend_from_slice(&[0x7b]); // field 15, start group
    }
    vec![
        ("valid-mutate".to_owned(), valid_mutate.clone()),
        (
            "valid-batch".to_owned(),
            pb::BatchRequest {
                table: "t".into(),
                mutations: vec![put; 3],
            }
            .encode_to_vec(),
        ),
        (
            "valid-scan".to_owned(),
            scan("PrefixFilter('a') AND PageFilter(10)").encode_to_vec(),
        ),
        (
            "hostile-nested-filter".to_owned(),
            scan(&nested).encode_to_vec(),
        ),
        (
            "hostile-skip-chain".to_owned(),
            scan(&"SKIP ".repeat(50_000)).encode_to_vec(),
        ),
        (
            "hostile-delete-in-put".to_owned(),
            pb::MutateRequest {
                table: "t".into(),
                mutation: Some(delete_in_put),
                region: None,
            }
            .encode_to_vec(),
        ),
        (
            "hostile-truncated".to_owned(),
            valid_mutate[..valid_mutate.len() - 3].to_vec(),
        ),
        ("hostile-deep-groups".to_owned(), deep_unknown),
        ("hostile-bad-utf8".to_owned(), vec![0x0a, 0x02, 0xff, 0xfe]),
        (
            "hostile-garbage".to_owned(),
            (0..500u32)
                .map(|i| u8::try_from(i * 97 % 256).unwrap())
                .collect(),
        ),
    ]
}

#[test]
#[ignore = "writes the seed corpora; run by hand when the seeds change"]
fn write_seed_corpus() {
    for (target, seeds) in [
        (
            "thrift_request",
            [thrift_seeds(), thrift_hostile()].concat(),
        ),
        ("grpc_request", grpc_seeds()),
    ] {
        let dir = corpus_dir(target);
        std::fs::create_dir_all(&dir).unwrap();
        for (name, data) in seeds {
            std::fs::write(dir.join(name), data).unwrap();
        }
    }
}
