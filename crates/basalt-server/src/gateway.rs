//! A gateway as its own process, a client of a Basalt server: `basalt thrift --server
//! HOST:PORT` runs HBase's Thrift1 gateway over a remote server's native API, as HBase runs
//! `hbase thrift start` beside its cluster. The gateway code is the one the standalone
//! server runs in process; only its `basalt_api::Connection` differs.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use basalt_api::Connection;
use tokio::net::TcpListener;

use crate::budget::RequestBudget;
use crate::metrics::RequestMetrics;
use crate::{start_gateway, thrift, ServerError};

/// What a Thrift gateway process runs with.
#[derive(Clone, Debug)]
pub struct ThriftGatewayConfig {
    pub thrift: thrift::ThriftConfig,
    /// `hbase.client.scanner.timeout.period` for the gateway's own scanner ids.
    pub scanner_lease: Duration,
    /// Bytes of requests in flight the gateway holds at most.
    pub request_budget_bytes: usize,
    /// How long a stop waits for the requests in flight.
    pub shutdown_grace: Duration,
}

impl Default for ThriftGatewayConfig {
    fn default() -> Self {
        ThriftGatewayConfig {
            thrift: thrift::ThriftConfig::default(),
            scanner_lease: Duration::from_secs(60),
            request_budget_bytes: crate::budget::DEFAULT_REQUEST_BUDGET_BYTES,
            shutdown_grace: Duration::from_secs(30),
        }
    }
}

/// A Thrift gateway bound to its port, not yet serving.
#[derive(Debug)]
pub struct ThriftGateway {
    listener: TcpListener,
    gateway: Arc<thrift::Gateway>,
    lease: Duration,
    grace: Duration,
}

impl ThriftGateway {
    /// Binds the gateway's port; requests will be answered through `conn`.
    ///
    /// # Errors
    /// The port cannot be bound.
    pub fn bind(
        conn: Arc<dyn Connection>,
        config: ThriftGatewayConfig,
    ) -> Result<ThriftGateway, ServerError> {
        let metrics = Arc::new(RequestMetrics::new(&[("thrift", &thrift::METHODS)]));
        let budget = RequestBudget::new(config.request_budget_bytes);
        let (listener, gateway) = start_gateway(
            config.thrift,
            &conn,
            &metrics,
            config.scanner_lease,
            &budget,
        )?;
        Ok(ThriftGateway {
            listener,
            gateway,
            lease: config.scanner_lease,
            grace: config.shutdown_grace,
        })
    }

    /// The address the gateway listens on.
    ///
    /// # Errors
    /// The socket has no local address.
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Serves until `shutdown` completes, then closes every connection.
    ///
    /// # Errors
    /// The stop took longer than the grace period.
    pub async fn serve(
        self,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> Result<(), ServerError> {
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        let scanners = self.gateway.handler.scanners();
        let reaper = crate::spawn_reaper(self.lease, move || {
            scanners.expire();
        });
        let accepting = tokio::spawn(thrift::serve(self.listener, self.gateway, stop_rx));
        shutdown.await;
        let _ = stop_tx.send(true);
        let stopped = tokio::time::timeout(self.grace, accepting).await;
        reaper.abort();
        match stopped {
            Ok(_) => Ok(()),
            Err(_) => Err(ServerError(format!(
                "the Thrift gateway's connections took longer than {} s to close",
                self.grace.as_secs()
            ))),
        }
    }
}
