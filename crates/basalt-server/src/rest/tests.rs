//! The gateway's memory-only fast path against its ordinary one, over a real database.
#![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

use std::sync::Arc;

use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::Response;
use basalt_model::ops::Put;
use basalt_model::{ColumnFamilyDescriptor, TableDescriptor, TableName};
use basalt_node::{Database, Options};
use bytes::Bytes;

use super::{Call, Gateway, RestConfig, METHODS};
use crate::metrics::RequestMetrics;

/// A gateway over a database whose block cache holds nothing, so a flushed row always
/// needs the disk; table `t` has row `d` flushed and row `m` in the memstore.
fn gateway(dir: &std::path::Path) -> Gateway {
    let options = Options {
        block_cache_bytes: 0,
        ..Options::default()
    };
    let db = Database::open_with(dir, options).unwrap();
    let name = TableName::parse("t").unwrap();
    db.create_table(
        TableDescriptor::new(&name, [ColumnFamilyDescriptor::new("f")]),
        &[],
    )
    .unwrap();
    let t = db.table("t").unwrap();
    t.put(Put::new("d").add("f", "q", "on disk")).unwrap();
    db.flush(&name).unwrap();
    t.put(Put::new("m").add("f", "q", "in memory")).unwrap();
    let metrics = Arc::new(RequestMetrics::new(&[("rest", &METHODS)]));
    Gateway::new(Arc::new(db), metrics, RestConfig::default())
}

fn call(method: Method, path: &str) -> Call {
    let mut headers = HeaderMap::new();
    headers.insert(header::ACCEPT, HeaderValue::from_static("application/json"));
    Call {
        method,
        path: path.to_owned(),
        query: Vec::new(),
        headers,
        body: Bytes::new(),
    }
}

/// The answer must be 200 OK with `needle` in its body.
fn assert_ok_with(r: Response, needle: &str) {
    let (status, body) = parts(r);
    assert_eq!(status, StatusCode::OK);
    assert!(String::from_utf8_lossy(&body).contains(needle), "{body:?}");
}

fn parts(r: Response) -> (StatusCode, Bytes) {
    let status = r.status();
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let body = rt
        .block_on(axum::body::to_bytes(r.into_body(), usize::MAX))
        .unwrap();
    (status, body)
}

#[test]
fn row_gets_that_memory_answers_are_the_ordinary_answers_and_the_rest_go_on() {
    let dir = tempfile::tempdir().unwrap();
    let g = gateway(dir.path());
    // In the memstore, or outside every file's rows: answered from memory, identically.
    for path in ["t/m", "t/m/f:q", "t/zz"] {
        let fast = g.serve_from_memory(&call(Method::GET, path)).unwrap();
        assert_eq!(
            parts(fast),
            parts(g.serve(&call(Method::GET, path))),
            "{path}"
        );
    }
    assert_ok_with(g.serve(&call(Method::GET, "t/m")), "aW4gbWVtb3J5");
    assert_eq!(
        parts(g.serve(&call(Method::GET, "t/zz"))).0,
        StatusCode::NOT_FOUND
    );
    // A row whose block is not cached, a range, a write, another resource: not here.
    for (method, path) in [
        (Method::GET, "t/d"),
        (Method::GET, "t/a,z"),
        (Method::GET, "t/schema"),
        (Method::DELETE, "t/m"),
    ] {
        assert!(
            g.serve_from_memory(&call(method.clone(), path)).is_none(),
            "{method} {path}"
        );
    }
    assert_ok_with(g.serve(&call(Method::GET, "t/d")), "b24gZGlzaw==");
    // A bad request is refused on the spot, as the ordinary path refuses it.
    let bad = "t/m/nope:q";
    let fast = g.serve_from_memory(&call(Method::GET, bad)).unwrap();
    assert_eq!(parts(fast), parts(g.serve(&call(Method::GET, bad))));
}
