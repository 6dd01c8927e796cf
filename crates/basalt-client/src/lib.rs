//! The Rust client of Basalt's native API (`basalt.v1`).
//!
//! ```no_run
//! use basalt_client::Connection;
//! use basalt_model::ops::{Get, Put};
//!
//! # async fn demo() -> basalt_model::Result<()> {
//! let conn = Connection::connect("http://127.0.0.1:16020").await?;
//! let users = conn.table("users")?;
//! users.put(Put::new("alice").add("cf", "email", "alice@example.com")).await?;
//! let row = users.get(Get::new("alice")).await?;
//! assert_eq!(row.value(b"cf", b"email"), Some(&b"alice@example.com"[..]));
//!
//! // A scan is a stream of rows, fetched from the server a batch at a time.
//! use futures_util::TryStreamExt;
//! let rows: Vec<_> = users.scan(basalt_model::ops::Scan::new()).await?.into_stream().try_collect().await?;
//! # Ok(())
//! # }
//! ```
//!
//! Calls that fail with a retryable error (`RegionTooBusy`, `NotServingRegion`, a dropped
//! connection) are retried with HBase's backoff until the operation timeout; others fail at
//! once. Increments, appends and check-and-mutates, which must not apply twice, are retried
//! only on errors that prove nothing was applied.

/// One unary admin call to the active master with retries and the operation timeout:
/// `$call` is the gRPC method, `$req` builds its request (again for each attempt). A call
/// that fails as a lost or deposed master would makes the next attempt find the master again.
macro_rules! rpc {
    ($self:ident, $how:expr, $call:ident, $req:expr) => {{
        let servers = &$self.servers;
        let timeout = $self.config.operation_timeout;
        crate::retry::retry(&$self.config, $how, || async {
            let mut c = basalt_proto::pb::admin_client::AdminClient::new(servers.master().await?)
                .max_decoding_message_size(crate::MAX_MESSAGE_BYTES)
                .max_encoding_message_size(crate::MAX_MESSAGE_BYTES);
            let mut req = tonic::Request::new($req);
            req.set_timeout(timeout);
            let out = c
                .$call(req)
                .await
                .map(tonic::Response::into_inner)
                .map_err(|s| basalt_proto::status::from_status(&s));
            if let Err(e) = &out {
                servers.master_failed(e);
            }
            out
        })
        .await
    }};
}

mod admin;
pub mod blocking;
mod channel;
mod http2;
mod mutator;
mod retry;
mod rpc;
mod scanner;
mod servers;
mod table;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use basalt_model::{Result, TableName};

pub use admin::Admin;
pub use mutator::BufferedMutator;
pub use scanner::ResultScanner;
pub use table::Table;

/// The largest message the client sends or accepts (the server's limit, 256 MiB).
pub(crate) const MAX_MESSAGE_BYTES: usize = 256 << 20;

/// How calls are retried and timed out. HBase's defaults.
#[derive(Clone, Debug)]
pub struct ClientConfig {
    /// `hbase.client.operation.timeout` for one operation with its retries (here 60 s).
    pub operation_timeout: Duration,
    /// `hbase.client.pause`: the base of the backoff between retries (100 ms).
    pub pause: Duration,
    /// `hbase.client.retries.number` (15).
    pub retries: u32,
    /// Bytes a scanner call fetches at most (`hbase.client.scanner.max.result.size`, 2 MiB;
    /// zero is the default).
    pub scanner_max_result_bytes: u64,
    /// `hbase.client.write.buffer` of a [`BufferedMutator`] (2 MiB).
    pub write_buffer_bytes: usize,
    /// `hbase.client.ipc.pool.size`: the connections to each server, which take the calls
    /// in turn (at least one; one by default). The server serves each connection on one of
    /// its event loops, one per core: more connections spread one client's calls over more
    /// of a server's cores, and gather fewer calls into each read and write.
    pub connections_per_server: usize,
}

/// HBase's `hbase.client.ipc.pool.size`: one connection to each server.
pub const DEFAULT_CONNECTIONS_PER_SERVER: usize = 1;

/// HBase's `hbase.client.scanner.max.result.size`: 2 MiB.
pub const DEFAULT_SCANNER_MAX_RESULT_BYTES: u64 = 2 << 20;

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            operation_timeout: Duration::from_secs(60),
            pause: Duration::from_millis(100),
            retries: 15,
            scanner_max_result_bytes: DEFAULT_SCANNER_MAX_RESULT_BYTES,
            write_buffer_bytes: 2 << 20,
            connections_per_server: DEFAULT_CONNECTIONS_PER_SERVER,
        }
    }
}

/// A connection to a Basalt server or cluster. Cheap to clone; clones share the channels
/// and the region location cache.
#[derive(Clone, Debug)]
pub struct Connection {
    servers: Arc<servers::Servers>,
    config: ClientConfig,
    locations: Arc<Mutex<HashMap<TableName, table::LocationSlot>>>,
}

impl Connection {
    /// Connects to `seeds` (`host:port`, or several separated by commas: a standalone
    /// server, or any masters and region servers of a cluster) with default settings.
    ///
    /// # Errors
    /// An address is malformed, or no seed can be reached.
    pub async fn connect(seeds: &str) -> Result<Connection> {
        Connection::connect_with(seeds, ClientConfig::default()).await
    }

    /// Connects with `config`.
    ///
    /// # Errors
    /// As [`Connection::connect`]; `IllegalArgument` for a pool of no connections.
    pub async fn connect_with(seeds: &str, config: ClientConfig) -> Result<Connection> {
        if config.connections_per_server == 0 {
            return Err(basalt_model::Error::illegal(
                "connections_per_server (hbase.client.ipc.pool.size) must be at least 1",
            ));
        }
        Ok(Connection {
            servers: Arc::new(
                servers::Servers::connect(seeds, config.connections_per_server).await?,
            ),
            config,
            locations: Arc::default(),
        })
    }

    /// The administrative API (served by the active master).
    #[must_use]
    pub fn admin(&self) -> Admin {
        Admin::new(Arc::clone(&self.servers), self.config.clone())
    }

    /// A handle on table `name` (not checked until used).
    ///
    /// # Errors
    /// `IllegalArgument` for a bad name.
    pub fn table(&self, name: &str) -> Result<Table> {
        let name = TableName::parse(name)?;
        let slot = {
            let mut map = self
                .locations
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            Arc::clone(map.entry(name.clone()).or_default())
        };
        Ok(Table::new(
            Arc::clone(&self.servers),
            self.config.clone(),
            name,
            slot,
        ))
    }

    /// The settings in use.
    #[must_use]
    pub fn config(&self) -> &ClientConfig {
        &self.config
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_pool_of_no_connections_is_refused_before_connecting() {
        let config = ClientConfig {
            connections_per_server: 0,
            ..ClientConfig::default()
        };
        // No server listens on port 1: only the check can answer before a connection fails.
        let e = Connection::connect_with("127.0.0.1:1", config)
            .await
            .expect_err("a pool of no connections");
        assert!(matches!(e, basalt_model::Error::IllegalArgument(_)), "{e}");
        assert!(e.to_string().contains("connections_per_server"), "{e}");
    }
}
