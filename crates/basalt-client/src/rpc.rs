//! The table calls of the native API (HBase's `ClientService`: get, mutate, multi, scan),
//! made straight from their messages.
//!
//! tonic's generated client streamed each call through its codec: the request's message
//! encoded by a body of its own, the answer copied into a decoder's buffer, its status found
//! by inference over the head and the trailers, with a boxed body and a layer of futures for
//! each step. A table call is one message each way, so here the request is encoded into its
//! gRPC frame at once, the channel carries it and reads the whole answer, and the answer's
//! message is decoded from the bytes the channel read, once its status says it succeeded.
//! The admin calls, rare and off the hot path, keep the generated client.
//!
//! Answers that carry rows are decoded straight into the model's rows
//! ([`basalt_proto::rows`]).
//!
//! The wire is gRPC's, exactly as the generated client sends it: `POST` of the method's path,
//! `content-type: application/grpc`, `te: trailers`, the call's `grpc-timeout`, and one
//! uncompressed length-prefixed message. The answer's status is read from its header fields
//! as they were decoded; they become a header map only when the call failed, for the status
//! and its metadata (where the server names HBase's exception).

use std::time::Duration;

use basalt_proto::deadline::TimeoutValue;
use basalt_proto::http2::hpack::Field;
use basalt_proto::pb;
use basalt_proto::rows::{OpenedScanner, RowMessage, ScannedRows};
use basalt_proto::unary::{frame, unframe};
use http::StatusCode;
use prost::Message;
use tonic::{Code, Status};

use crate::channel::{header_map, http_status, Channel};
use crate::http2::Answer;

const GRPC_STATUS: &[u8] = b"grpc-status";
const GRPC_STATUS_DETAILS: &str = "grpc-status-details-bin";

/// The table calls to one server.
#[derive(Clone, Debug)]
pub(crate) struct TableRpc {
    channel: Channel,
}

/// One method: its name here, its path on the wire, its request and answer. A call with a
/// `deadline` fails when no answer came within it, and tells the server so.
macro_rules! unary {
    ($($name:ident: $path:literal, $req:ty => $resp:ty;)*) => {
        impl TableRpc {
            $(
                pub(crate) async fn $name(
                    &mut self,
                    request: $req,
                    deadline: Option<Duration>,
                ) -> Result<$resp, Status> {
                    self.call($path, &request, deadline).await
                }
            )*
        }
    };
}

unary! {
    get: "/basalt.v1.Table/Get", pb::GetRequest => RowMessage;
    mutate: "/basalt.v1.Table/Mutate", pb::MutateRequest => pb::MutateResponse;
    mutate_row: "/basalt.v1.Table/MutateRow", pb::MutateRowRequest => pb::Empty;
    check_and_mutate: "/basalt.v1.Table/CheckAndMutate", pb::CheckAndMutateRequest => pb::BoolResponse;
    batch: "/basalt.v1.Table/Batch", pb::BatchRequest => pb::BatchResponse;
    open_scanner: "/basalt.v1.Table/OpenScanner", pb::OpenScannerRequest => OpenedScanner;
    next: "/basalt.v1.Table/Next", pb::NextRequest => ScannedRows;
    close_scanner: "/basalt.v1.Table/CloseScanner", pb::ScannerId => pb::Empty;
}

impl TableRpc {
    pub(crate) fn new(channel: Channel) -> TableRpc {
        TableRpc { channel }
    }

    /// One call of the method at `path`.
    async fn call<Req: Message, Resp: Message + Default>(
        &self,
        path: &str,
        request: &Req,
        deadline: Option<Duration>,
    ) -> Result<Resp, Status> {
        let framed = frame(request, crate::MAX_MESSAGE_BYTES)?;
        let timeout = deadline.map(TimeoutValue::of);
        let fields: [(&[u8], &[u8], bool); 4] = [
            (b"content-type", b"application/grpc", true),
            (b"te", b"trailers", true),
            (b"user-agent", b"basalt-client", true),
            (
                b"grpc-timeout",
                timeout.as_ref().map_or(&[][..], TimeoutValue::as_bytes),
                false,
            ),
        ];
        let fields = if timeout.is_some() {
            &fields[..]
        } else {
            &fields[..3]
        };
        let answer = self
            .channel
            .round_trip(path, fields, deadline, framed)
            .await?;
        answer_of(answer)
    }
}

/// The value of the field `name`, if the fields have it.
fn find<'a>(fields: &'a [Field], name: &[u8]) -> Option<&'a [u8]> {
    fields.iter().find(|f| f.name == name).map(|f| &f.value[..])
}

/// The answer's message, or the status it failed with.
fn answer_of<Resp: Message + Default>(answer: Answer) -> Result<Resp, Status> {
    // A call that failed before it had a message answers with its status in the head alone.
    let carrier: &[Field] = match &answer.trailers {
        Some(t) if find(t, GRPC_STATUS).is_some() => t,
        _ => &answer.head,
    };
    match find(carrier, GRPC_STATUS) {
        Some(b"0") => {}
        Some(_) => return Err(failure(carrier)),
        None => {
            let status = http_status(&answer.head)?;
            if status != StatusCode::OK {
                return Err(from_http(status));
            }
            return Err(Status::internal("an answer without a gRPC status"));
        }
    }
    let message =
        unframe(&answer.data).map_err(|e| Status::internal(format!("a malformed answer: {e}")))?;
    Resp::decode(message).map_err(|e| Status::internal(format!("a malformed answer: {e}")))
}

/// The status a failed call's fields carry, with the rest of them as its metadata (where
/// the server names HBase's exception). Binary status details are left out: the client
/// reads none, and tonic panics on ones that are not base64.
fn failure(fields: &[Field]) -> Status {
    let Ok(mut headers) = header_map(fields) else {
        return Status::internal("a failed answer with malformed header fields");
    };
    headers.remove(GRPC_STATUS_DETAILS);
    Status::from_header_map(&headers)
        .unwrap_or_else(|| Status::internal("an answer without a gRPC status"))
}

/// The status of an answer that has none of gRPC's, from its HTTP status (gRPC's
/// "HTTP to gRPC status code mapping").
fn from_http(status: StatusCode) -> Status {
    let code = match status.as_u16() {
        400 => Code::Internal,
        401 => Code::Unauthenticated,
        403 => Code::PermissionDenied,
        404 => Code::Unimplemented,
        429 | 502..=504 => Code::Unavailable,
        _ => Code::Unknown,
    };
    Status::new(
        code,
        format!("the server answered HTTP {status} without a gRPC status"),
    )
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::*;

    fn fields(pairs: &[(&'static str, &'static str)]) -> Vec<Field> {
        pairs
            .iter()
            .map(|(n, v)| Field {
                name: Bytes::from_static(n.as_bytes()),
                value: Bytes::from_static(v.as_bytes()),
            })
            .collect()
    }

    fn head(status: &'static str, headers: &[(&'static str, &'static str)]) -> Vec<Field> {
        let mut head = fields(&[(":status", status)]);
        head.extend(fields(headers));
        head
    }

    fn answer(head: Vec<Field>, data: Bytes, trailers: &[(&'static str, &'static str)]) -> Answer {
        Answer {
            head,
            data,
            trailers: (!trailers.is_empty()).then(|| fields(trailers)),
        }
    }

    /// A failure's status is read from the trailers, or from the head of an answer that is
    /// trailers only; an HTTP error without one maps as gRPC says.
    #[test]
    fn statuses_are_read_where_the_server_put_them() {
        let failed = answer(
            head("200", &[]),
            Bytes::new(),
            &[("grpc-status", "5"), ("grpc-message", "no%20such%20table")],
        );
        let e = answer_of::<pb::Empty>(failed).unwrap_err();
        assert_eq!(e.code(), Code::NotFound);
        assert_eq!(e.message(), "no such table");
        let only = answer(head("200", &[("grpc-status", "12")]), Bytes::new(), &[]);
        assert_eq!(
            answer_of::<pb::Empty>(only).unwrap_err().code(),
            Code::Unimplemented
        );
        let proxy = answer(head("503", &[]), Bytes::new(), &[]);
        assert_eq!(
            answer_of::<pb::Empty>(proxy).unwrap_err().code(),
            Code::Unavailable
        );
        let hostile = answer(
            head("200", &[]),
            Bytes::new(),
            &[("grpc-status", "13"), ("grpc-status-details-bin", "!!")],
        );
        assert_eq!(
            answer_of::<pb::Empty>(hostile).unwrap_err().code(),
            Code::Internal
        );
        let bare = answer(head("200", &[]), Bytes::new(), &[]);
        assert_eq!(
            answer_of::<pb::Empty>(bare).unwrap_err().code(),
            Code::Internal
        );
        let garbled = answer(head("2x0", &[]), Bytes::new(), &[]);
        let e = answer_of::<pb::Empty>(garbled).unwrap_err();
        assert!(e.message().contains("malformed :status"), "{e}");
    }

    /// An answer whose frame or message is malformed is refused as the server's fault.
    #[test]
    fn malformed_answers_are_refused() {
        let ok = |data: Bytes| answer(head("200", &[]), data, &[("grpc-status", "0")]);
        let e = answer_of::<pb::Empty>(ok(Bytes::from_static(&[1, 0, 0, 0, 0]))).unwrap_err();
        assert_eq!(e.code(), Code::Internal);
        assert!(e.message().contains("compressed"), "{e}");
        let framed = frame(&pb::ScannerId { id: 7 }, 100).unwrap();
        assert_eq!(answer_of::<pb::ScannerId>(ok(framed)).unwrap().id, 7);
        let garbage = Bytes::from_static(&[0, 0, 0, 0, 2, 0xff, 0xff]);
        let e = answer_of::<pb::Result>(ok(garbage)).unwrap_err();
        assert!(e.message().contains("malformed answer"), "{e}");
    }
}
