//! The server-wide budget for request bytes in flight (HBase's call queue size,
//! `hbase.ipc.server.max.callqueue.size`, 1 GiB): a request's bytes are counted against it as
//! they arrive, not as a frame announces them, and given back when the request is answered.
//! A request that would pass the budget is refused (HBase's `CallQueueTooBigException`), so
//! memory stays bounded however many large requests arrive at once.
//!
//! # Thread safety
//! One atomic counter; any thread takes and gives back.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// HBase's default call queue size, 1 GiB.
pub const DEFAULT_REQUEST_BUDGET_BYTES: usize = 1 << 30;

/// Bytes of requests being read or served, against a limit.
#[derive(Debug)]
pub struct RequestBudget {
    limit: usize,
    used: AtomicUsize,
}

impl RequestBudget {
    #[must_use]
    pub fn new(limit: usize) -> Arc<RequestBudget> {
        Arc::new(RequestBudget {
            limit,
            used: AtomicUsize::new(0),
        })
    }

    /// Bytes held now.
    #[must_use]
    pub fn used(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }

    /// The limit.
    #[must_use]
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Takes `n` more bytes for `held`, or says why not.
    ///
    /// # Errors
    /// A sentence for the client when the budget would be passed.
    pub fn take(self: &Arc<Self>, held: &mut Held, n: usize) -> Result<(), String> {
        let mut used = self.used.load(Ordering::Relaxed);
        loop {
            let next = used.saturating_add(n);
            if next > self.limit {
                return Err(format!(
                    "the server is too busy: requests in flight hold {used} bytes, and {n} more would pass the limit of {} bytes (hbase.ipc.server.max.callqueue.size)",
                    self.limit
                ));
            }
            match self
                .used
                .compare_exchange_weak(used, next, Ordering::AcqRel, Ordering::Relaxed)
            {
                Ok(_) => break,
                Err(now) => used = now,
            }
        }
        if held.budget.is_none() {
            held.budget = Some(Arc::clone(self));
        }
        held.bytes += n;
        Ok(())
    }
}

/// Bytes one request holds; given back when dropped or released.
#[derive(Debug, Default)]
pub struct Held {
    budget: Option<Arc<RequestBudget>>,
    bytes: usize,
}

impl Held {
    /// Gives every byte back.
    pub fn release(&mut self) {
        if let Some(b) = &self.budget {
            b.used.fetch_sub(self.bytes, Ordering::AcqRel);
        }
        self.bytes = 0;
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.release();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_are_held_until_released_and_the_limit_refuses() {
        let b = RequestBudget::new(100);
        let mut a = Held::default();
        b.take(&mut a, 60).unwrap();
        let mut c = Held::default();
        let e = b.take(&mut c, 50).unwrap_err();
        assert!(e.contains("too busy"), "{e}");
        b.take(&mut c, 40).unwrap();
        assert_eq!(b.used(), 100);
        a.release();
        assert_eq!(b.used(), 40);
        drop(c);
        assert_eq!(b.used(), 0);
    }
}

/// A gRPC service whose requests' bodies are counted against the budget as their bytes
/// arrive; a request that would pass it fails with `RESOURCE_EXHAUSTED`.
#[derive(Clone, Debug)]
pub struct Budgeted<S> {
    inner: S,
    budget: Arc<RequestBudget>,
}

impl<S> Budgeted<S> {
    pub fn new(inner: S, budget: Arc<RequestBudget>) -> Budgeted<S> {
        Budgeted { inner, budget }
    }
}

impl<S: tonic::server::NamedService> tonic::server::NamedService for Budgeted<S> {
    const NAME: &'static str = S::NAME;
}

type GrpcRequest = tonic::codegen::http::Request<tonic::body::Body>;

impl<S: tonic::codegen::Service<GrpcRequest>> tonic::codegen::Service<GrpcRequest> for Budgeted<S> {
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: GrpcRequest) -> Self::Future {
        let budget = Arc::clone(&self.budget);
        self.inner.call(req.map(|inner| {
            tonic::body::Body::new(CountedBody {
                inner,
                budget,
                held: Held::default(),
            })
        }))
    }
}

/// A request body whose data frames are charged to the budget as they arrive; what it
/// holds goes back when the body is dropped (the message has been decoded).
#[derive(Debug)]
struct CountedBody {
    inner: tonic::body::Body,
    budget: Arc<RequestBudget>,
    held: Held,
}

impl http_body::Body for CountedBody {
    type Data = bytes::Bytes;
    type Error = tonic::Status;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<bytes::Bytes>, tonic::Status>>> {
        let this = &mut *self;
        let polled = std::pin::Pin::new(&mut this.inner).poll_frame(cx);
        if let std::task::Poll::Ready(Some(Ok(frame))) = &polled {
            if let Some(data) = frame.data_ref() {
                if let Err(why) = this.budget.take(&mut this.held, data.len()) {
                    return std::task::Poll::Ready(Some(Err(tonic::Status::resource_exhausted(
                        why,
                    ))));
                }
            }
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}
