//! The entry point of the `grpc_request` fuzz target (`fuzz/` in the repository) and of the
//! test that replays its corpus on stable Rust: untrusted bytes decoded as each request the
//! native API takes, then converted to the data model as the server does. Must return (an
//! error is fine) without panicking.

use prost::Message;

use crate::{convert, pb, schema};

/// Decodes `data` as every request message with a conversion, and converts what decodes.
/// Returns how many decoded and converted cleanly (a replayed corpus checks its valid seeds
/// with it).
pub fn grpc_request(data: &[u8]) -> usize {
    let mut ok = 0;
    let mut count = |r: bool| ok += usize::from(r);
    if let Ok(m) = pb::MutateRequest::decode(data) {
        count(
            m.mutation
                .map(convert::mutation_from_pb)
                .is_some_and(|r| r.is_ok()),
        );
    }
    if let Ok(b) = pb::BatchRequest::decode(data) {
        count(
            b.mutations
                .into_iter()
                .all(|m| convert::mutation_from_pb(m).is_ok()),
        );
    }
    if let Ok(g) = pb::GetRequest::decode(data) {
        count(g.get.map(convert::get_from_pb).is_some_and(|r| r.is_ok()));
    }
    if let Ok(s) = pb::OpenScannerRequest::decode(data) {
        count(s.scan.map(convert::scan_from_pb).is_some_and(|r| r.is_ok()));
    }
    if let Ok(m) = pb::MutateRowRequest::decode(data) {
        count(
            m.mutations
                .map(convert::row_mutations_from_pb)
                .is_some_and(|r| r.is_ok()),
        );
    }
    if let Ok(c) = pb::CheckAndMutateRequest::decode(data) {
        count(convert::check_and_mutate_from_pb(c).is_ok());
    }
    if let Ok(t) = pb::CreateTableRequest::decode(data) {
        count(
            t.schema
                .map(schema::schema_from_pb)
                .is_some_and(|r| r.is_ok()),
        );
    }
    ok
}
