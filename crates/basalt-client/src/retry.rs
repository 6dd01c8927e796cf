//! Retries with HBase's backoff (`ConnectionUtils.getPauseTime`), for retryable errors only.

use std::future::Future;
use std::time::Instant;

use basalt_model::{Error, Result};

use crate::ClientConfig;

/// HBase's `RETRY_BACKOFF` multipliers of the pause.
const BACKOFF: [u32; 13] = [1, 2, 3, 5, 10, 20, 40, 100, 100, 100, 100, 200, 200];

/// Which errors a call may be retried on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Idempotence {
    /// Reads and puts: any retryable error.
    Idempotent,
    /// Increments, appends, check-and-mutates: only errors that prove nothing was applied.
    NotIdempotent,
}

fn may_retry(e: &Error, how: Idempotence) -> bool {
    match how {
        Idempotence::Idempotent => e.is_retryable(),
        Idempotence::NotIdempotent => {
            matches!(e, Error::RegionTooBusy(_) | Error::NotServingRegion(_))
        }
    }
}

/// The pause before retry number `attempt` (from 0).
pub fn pause(config: &ClientConfig, attempt: u32) -> std::time::Duration {
    config.pause * BACKOFF[(attempt as usize).min(BACKOFF.len() - 1)]
}

/// Runs `call` until it succeeds, fails with an error not to retry, runs out of retries, or
/// the operation timeout passes.
pub async fn retry<T, F, Fut>(config: &ClientConfig, how: Idempotence, mut call: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T>>,
{
    let deadline = Instant::now() + config.operation_timeout;
    let mut attempt = 0usize;
    loop {
        match call().await {
            Err(e) if may_retry(&e, how) && attempt < config.retries as usize => {
                let pause = pause(config, u32::try_from(attempt).unwrap_or(u32::MAX));
                if Instant::now() + pause >= deadline {
                    return Err(e);
                }
                tokio::time::sleep(pause).await;
                attempt += 1;
            }
            out => return out,
        }
    }
}
