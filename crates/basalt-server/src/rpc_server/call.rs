//! One call on a connection: started from its request, its answer awaited against its
//! deadline and its client's reset, and read whole for the connection to write.

use std::collections::VecDeque;
use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use basalt_proto::deadline::grpc_timeout_value;
use http::Response;
use http_body::Body as _;
use tokio::time::{Instant, Sleep};
use tonic::body::Body;
use tonic::Status;

use super::{Answer, Answered, Route};
use crate::http2::connection::{Accepted, Reply};
use crate::http2::frame::Reason;
use crate::http2::stream::Recv;

/// A call: its service's answer awaited and read whole; `None` when its client reset the
/// stream first.
pub(super) type Call = Pin<Box<dyn Future<Output = (u32, Option<Reply>)> + Send>>;

/// Starts the call `accepted` names: its service gets a body that reads the request's
/// stream as its bytes arrive, and the call's future yields what the service answers.
pub(super) fn start<R: Route>(routes: &mut R, accepted: Accepted) -> Call {
    let Accepted { stream, head, body } = accepted;
    let recv = Arc::clone(&body.0);
    let deadline = head
        .field(b"grpc-timeout")
        .and_then(|value| grpc_timeout_value(value))
        .map(|limit| (Instant::now() + limit, limit));
    let mut answer = routes.call(head, Body::new(body));
    Box::pin(async move {
        let reply = match answered(&mut answer, &recv, deadline).await {
            Some(Answered::Unary(message)) => Some(Reply::Unary(message)),
            Some(Answered::Response(response)) => {
                drop(answer);
                Some(read_whole(response).await)
            }
            None => None,
        };
        (stream, reply)
    })
}

/// The call's answer, or `DEADLINE_EXCEEDED` once its deadline passed; `None` when its client
/// reset its stream first.
async fn answered(
    answer: &mut Answer,
    recv: &Recv,
    deadline: Option<(Instant, Duration)>,
) -> Option<Answered> {
    let mut timer: Option<Pin<Box<Sleep>>> = None;
    poll_fn(|cx| {
        if let Poll::Ready(Ok(response)) = answer.as_mut().poll(cx) {
            return Poll::Ready(Some(response));
        }
        // The call waits: a timer is set only now, so a call answered at once costs none.
        if recv.poll_closed(cx).is_ready() {
            return Poll::Ready(None);
        }
        if let Some((at, limit)) = deadline {
            let timer = timer.get_or_insert_with(|| Box::pin(tokio::time::sleep_until(at)));
            if timer.as_mut().poll(cx).is_ready() {
                let status = Status::deadline_exceeded(format!(
                    "the call was not answered within its deadline of {limit:?}"
                ));
                return Poll::Ready(Some(status.into_http().into()));
            }
        }
        Poll::Pending
    })
    .await
}

/// An answer read whole: its head, its data and its trailers. A unary answer is one message,
/// already in memory; one whose body fails after its head ends in a reset, as hyper ends it.
async fn read_whole(response: Response<Body>) -> Reply {
    let (head, mut body) = response.into_parts();
    let mut data = VecDeque::new();
    let mut trailers = None;
    while let Some(frame) = poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await {
        match frame {
            Ok(frame) => match frame.into_data() {
                Ok(bytes) if bytes.is_empty() => {}
                Ok(bytes) => data.push_back(bytes),
                Err(frame) => trailers = frame.into_trailers().ok(),
            },
            Err(status) => {
                tracing::debug!(%status, "a native API answer failed while it was sent");
                return Reply::Reset(Reason::INTERNAL_ERROR);
            }
        }
    }
    Reply::Answer {
        head,
        data,
        trailers,
    }
}
