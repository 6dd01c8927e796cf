//! The Table service's calls (HBase's `ClientService`: get, mutate, multi, scan) served
//! straight from their messages.
//!
//! tonic's generated server ran each call through its codec: the request's body streamed
//! into a decoder's buffer, the answer encoded by a body of its own and mapped through two
//! layers, and two futures boxed per call. A table call is one message each way, so here
//! the request's one frame is read whole (its bytes counted against the request budget as
//! they arrive), decoded, and handed to the service's method, and the answer goes back as
//! one frame and its trailers: a success as [`Answered::Unary`], which the connection writes
//! from encoded fields (an `http::Response`, its header maps and its boxed body cost a point
//! read about 1,200 instructions), a failure as tonic's status response. What the client
//! sees is what tonic sent: the same statuses for the same faults, and a malformed request
//! is the client's error (`INVALID_ARGUMENT`), as with the codec (RELIABILITY.md D14).
//!
//! The admin services, rare and off the hot path, keep the generated server.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use basalt_proto::pb::table_server::Table;
use basalt_proto::unary::{frame, unframe, Pieces, MESSAGE_HEADER};
use http_body::Body as _;
use prost::Message;
use tonic::body::Body;
use tonic::Status;

use super::Services;
use crate::budget::{Held, RequestBudget};
use crate::rpc_server::{Answer, Answered};

/// The Table service's calls, within the request budget.
#[derive(Clone, Debug)]
pub struct TableCalls {
    services: Arc<Services>,
    budget: Arc<RequestBudget>,
    /// The largest request or answer message.
    max_message: usize,
}

impl TableCalls {
    /// The service's name, as calls' paths start with it.
    pub const SERVICE: &'static str = "basalt.v1.Table";

    pub fn new(services: Services, budget: Arc<RequestBudget>, max_message: usize) -> TableCalls {
        TableCalls {
            services: Arc::new(services),
            budget,
            max_message,
        }
    }

    /// The method `path` names when it is a call of this service (`/basalt.v1.Table/Get`).
    #[must_use]
    pub fn method_of(path: &str) -> Option<&str> {
        path.strip_prefix('/')?
            .strip_prefix(Self::SERVICE)?
            .strip_prefix('/')
    }

    /// Starts the call of the Table service's `method` (of [`TableCalls::method_of`]
    /// `path`; `UNIMPLEMENTED` for a method it does not have), whose request's body is
    /// `body`.
    pub fn call(&self, path: &str, method: &str, body: Body) -> Answer {
        match method {
            "Get" => self.unary(body, |s, r| async move { s.get_row(r).await }),
            "Mutate" => self.unary(body, |s, r| async move { s.mutate(r).await }),
            "MutateRow" => self.unary(body, |s, r| async move { s.mutate_row(r).await }),
            "CheckAndMutate" => self.unary(body, |s, r| async move { s.check_and_mutate(r).await }),
            "Batch" => self.unary(body, |s, r| async move { s.batch(r).await }),
            "OpenScanner" => self.unary(body, |s, r| async move { s.open_scanner_rows(r).await }),
            "Next" => self.unary(body, |s, r| async move { s.next_rows(r).await }),
            "CloseScanner" => self.unary(body, |s, r| async move { s.close_scanner(r).await }),
            _ => {
                let status = Status::unimplemented(format!("this server has no method {path}"));
                Box::pin(std::future::ready(Ok(status.into_http().into())))
            }
        }
    }

    /// One call of `method`: the request read and decoded, the method run, its answer sent
    /// as one frame, or the status it failed with.
    fn unary<Req, Resp, F, Fut>(&self, body: Body, method: F) -> Answer
    where
        Req: Message + Default + 'static,
        Resp: Message + 'static,
        F: FnOnce(Arc<Services>, tonic::Request<Req>) -> Fut + Send + 'static,
        Fut: Future<Output = Result<tonic::Response<Resp>, Status>> + Send + 'static,
    {
        let services = Arc::clone(&self.services);
        let budget = Arc::clone(&self.budget);
        let max_message = self.max_message;
        Box::pin(async move {
            let out = async {
                let message = decoded::<Req>(body, &budget, max_message).await?;
                // The methods read none of the request's fields (the deadline is the
                // transport's).
                let answer = method(services, tonic::Request::new(message))
                    .await?
                    .into_inner();
                frame(&answer, max_message)
            };
            Ok(match out.await {
                Ok(framed) => Answered::Unary(framed),
                Err(status) => status.into_http().into(),
            })
        })
    }
}

/// The request's message: its body read whole (each piece charged to the budget as it
/// arrives, the whole given back once decoded), then decoded.
async fn decoded<Req: Message + Default>(
    mut body: Body,
    budget: &Arc<RequestBudget>,
    max_message: usize,
) -> Result<Req, Status> {
    let mut held = Held::default();
    let mut whole = Pieces::default();
    while let Some(frame) = std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await {
        let Ok(data) = frame?.into_data() else {
            continue;
        };
        budget
            .take(&mut held, data.len())
            .map_err(Status::resource_exhausted)?;
        whole.push(data);
        if whole.len() > max_message.saturating_add(MESSAGE_HEADER) {
            return Err(Status::resource_exhausted(format!(
                "a request of more than {max_message} bytes, the limit"
            )));
        }
    }
    let data = whole.finish();
    let message = unframe(&data).map_err(malformed)?;
    let decoded = Req::decode(message).map_err(|e| malformed(e.to_string()))?;
    drop(held);
    Ok(decoded)
}

fn malformed(why: String) -> Status {
    Status::invalid_argument(format!("malformed request: {why}"))
}
