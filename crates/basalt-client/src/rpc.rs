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
//! uncompressed length-prefixed message.

use basalt_proto::pb;
use basalt_proto::rows::{OpenedScanner, RowMessage, ScannedRows};
use basalt_proto::unary::{frame, unframe, Whole};
use http::header::{CONTENT_TYPE, TE, USER_AGENT};
use http::{response, HeaderMap, HeaderValue, Method, StatusCode, Uri};
use prost::Message;
use tonic::{Code, IntoRequest, Request, Response, Status};

use crate::channel::Channel;

const GRPC_STATUS: &str = "grpc-status";
const GRPC_STATUS_DETAILS: &str = "grpc-status-details-bin";

/// The table calls to one server.
#[derive(Clone, Debug)]
pub(crate) struct TableRpc {
    channel: Channel,
}

/// One method: its name here, its path on the wire, its request and answer.
macro_rules! unary {
    ($($name:ident: $path:literal, $req:ty => $resp:ty;)*) => {
        impl TableRpc {
            $(
                pub(crate) async fn $name(
                    &mut self,
                    request: impl IntoRequest<$req>,
                ) -> Result<Response<$resp>, Status> {
                    self.call(Uri::from_static($path), request.into_request()).await
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
        path: Uri,
        request: Request<Req>,
    ) -> Result<Response<Resp>, Status> {
        let (metadata, _, message) = request.into_parts();
        let framed = frame(&message, crate::MAX_MESSAGE_BYTES)?;
        let mut head = http::Request::new(()).into_parts().0;
        head.method = Method::POST;
        head.uri = path;
        head.headers = metadata.into_headers();
        let headers = &mut head.headers;
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/grpc"));
        headers.insert(TE, HeaderValue::from_static("trailers"));
        headers.insert(USER_AGENT, HeaderValue::from_static("basalt-client"));
        let (head, answer) = self.channel.round_trip(head, framed).await?;
        answer_of(&head, answer).map(Response::new)
    }
}

/// The answer's message, or the status it failed with.
fn answer_of<Resp: Message + Default>(
    head: &response::Parts,
    answer: Whole,
) -> Result<Resp, Status> {
    // A call that failed before it had a message answers with its status in the head alone.
    let carrier = match &answer.trailers {
        Some(t) if t.contains_key(GRPC_STATUS) => t,
        _ => &head.headers,
    };
    match carrier.get(GRPC_STATUS) {
        Some(code) if code == "0" => {}
        Some(_) => return Err(failure(carrier)),
        None if head.status != StatusCode::OK => return Err(from_http(head.status)),
        None => return Err(Status::internal("an answer without a gRPC status")),
    }
    let data = answer.data.unwrap_or_default();
    let message =
        unframe(&data).map_err(|e| Status::internal(format!("a malformed answer: {e}")))?;
    Resp::decode(message).map_err(|e| Status::internal(format!("a malformed answer: {e}")))
}

/// The status a failed call's headers carry, with the rest of them as its metadata (where
/// the server names HBase's exception). Binary status details are left out: the client
/// reads none, and tonic panics on ones that are not base64.
fn failure(headers: &HeaderMap) -> Status {
    let mut headers = headers.clone();
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

    fn head(status: StatusCode, headers: &[(&'static str, &'static str)]) -> response::Parts {
        let mut r = http::Response::new(());
        *r.status_mut() = status;
        for (k, v) in headers {
            r.headers_mut().insert(*k, HeaderValue::from_static(v));
        }
        r.into_parts().0
    }

    fn trailers(headers: &[(&'static str, &'static str)]) -> Option<HeaderMap> {
        let mut t = HeaderMap::new();
        for (k, v) in headers {
            t.insert(*k, HeaderValue::from_static(v));
        }
        Some(t)
    }

    /// A failure's status is read from the trailers, or from the head of an answer that is
    /// trailers only; an HTTP error without one maps as gRPC says.
    #[test]
    fn statuses_are_read_where_the_server_put_them() {
        let ok = head(StatusCode::OK, &[]);
        let failed = Whole {
            data: None,
            trailers: trailers(&[("grpc-status", "5"), ("grpc-message", "no%20such%20table")]),
        };
        let e = answer_of::<pb::Empty>(&ok, failed).unwrap_err();
        assert_eq!(e.code(), Code::NotFound);
        assert_eq!(e.message(), "no such table");
        let only = head(StatusCode::OK, &[("grpc-status", "12")]);
        let none = || Whole {
            data: None,
            trailers: None,
        };
        assert_eq!(
            answer_of::<pb::Empty>(&only, none()).unwrap_err().code(),
            Code::Unimplemented
        );
        let proxy = head(StatusCode::SERVICE_UNAVAILABLE, &[]);
        assert_eq!(
            answer_of::<pb::Empty>(&proxy, none()).unwrap_err().code(),
            Code::Unavailable
        );
        let hostile = Whole {
            data: None,
            trailers: trailers(&[("grpc-status", "13"), ("grpc-status-details-bin", "!!")]),
        };
        assert_eq!(
            answer_of::<pb::Empty>(&ok, hostile).unwrap_err().code(),
            Code::Internal
        );
        let bare = head(StatusCode::OK, &[]);
        assert_eq!(
            answer_of::<pb::Empty>(&bare, none()).unwrap_err().code(),
            Code::Internal
        );
    }

    /// An answer whose frame or message is malformed is refused as the server's fault.
    #[test]
    fn malformed_answers_are_refused() {
        let ok = head(StatusCode::OK, &[]);
        let answer = |data: &'static [u8]| Whole {
            data: Some(Bytes::from_static(data)),
            trailers: trailers(&[("grpc-status", "0")]),
        };
        let e = answer_of::<pb::Empty>(&ok, answer(&[1, 0, 0, 0, 0])).unwrap_err();
        assert_eq!(e.code(), Code::Internal);
        assert!(e.message().contains("compressed"), "{e}");
        let framed = frame(&pb::ScannerId { id: 7 }, 100).unwrap();
        assert_eq!(
            answer_of::<pb::ScannerId>(
                &ok,
                Whole {
                    data: Some(framed),
                    ..answer(&[])
                }
            )
            .unwrap()
            .id,
            7
        );
        let garbage = Whole {
            data: Some(Bytes::from_static(&[0, 0, 0, 0, 2, 0xff, 0xff])),
            trailers: trailers(&[("grpc-status", "0")]),
        };
        let e = answer_of::<pb::Result>(&head(StatusCode::OK, &[]), garbage).unwrap_err();
        assert!(e.message().contains("malformed answer"), "{e}");
    }
}
