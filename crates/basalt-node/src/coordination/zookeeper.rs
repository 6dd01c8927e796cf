//! [`Coordinator`] on a real ZooKeeper ensemble, through the `zookeeper-client` crate.

use std::future::Future;
use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::Arc;
use std::time::{Duration, Instant};

use basalt_model::{Error, Result};
use parking_lot::Mutex;
use zookeeper_client::{Acls, Client, CreateMode, SessionState};

use super::{ClusterInfo, Coordinator, Election, SessionHealth, Watch};

/// A session on a ZooKeeper ensemble.
pub struct ZooKeeperCoordinator {
    /// `Some` until dropped (dropping the last clone closes the session).
    client: Option<Client>,
    quorum: String,
    parent: String,
    timeout: Duration,
    health: Arc<Mutex<SessionHealth>>,
    /// Receives once the session is closed or expired.
    ended: Mutex<Receiver<()>>,
    /// Stops the heartbeat (which holds a client clone) when dropped or sent.
    stop_heartbeat: Mutex<Option<tokio::sync::oneshot::Sender<()>>>,
    /// Declared last: dropped (stopped) after the session is closed.
    runtime: crate::runtime::OwnedRuntime,
}

impl std::fmt::Debug for ZooKeeperCoordinator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ZooKeeperCoordinator")
            .field("quorum", &self.quorum)
            .field("parent", &self.parent)
            .finish()
    }
}

/// Follows the session's state: once it ends (expired, closed, refused), it is `Expired`
/// for good and `done` is told.
async fn watch_session(
    mut states: zookeeper_client::StateWatcher,
    health: Arc<Mutex<SessionHealth>>,
    done: std::sync::mpsc::SyncSender<()>,
) {
    loop {
        let state = states.changed().await;
        if matches!(
            state,
            SessionState::Expired | SessionState::Closed | SessionState::AuthFailed
        ) {
            *health.lock() = SessionHealth::Expired;
            let _ = done.try_send(());
            return;
        }
    }
}

/// Every sixth of the session timeout, asks the ensemble something cheap; each answer
/// confirms the session as of the moment the question was sent (the read lease's clock).
async fn heartbeat(
    client: Client,
    health: Arc<Mutex<SessionHealth>>,
    timeout: Duration,
    mut stop: tokio::sync::oneshot::Receiver<()>,
) {
    let every = (timeout / 6).max(Duration::from_millis(50));
    loop {
        tokio::select! {
            _ = &mut stop => return,
            () = tokio::time::sleep(every) => {}
        }
        let sent = Instant::now();
        let asked = tokio::select! {
            _ = &mut stop => return,
            r = tokio::time::timeout(timeout, client.check_stat("/")) => r,
        };
        if matches!(asked, Ok(Ok(_))) {
            let mut h = health.lock();
            if let SessionHealth::Alive { confirmed } = &mut *h {
                *confirmed = (*confirmed).max(sent);
            }
        }
    }
}

fn stopped() -> Error {
    Error::io(
        "talking to ZooKeeper",
        std::io::Error::other("the ZooKeeper runtime stopped"),
    )
}

fn zk_err(what: &str, e: zookeeper_client::Error) -> Error {
    match e {
        zookeeper_client::Error::SessionExpired | zookeeper_client::Error::ClientClosed => {
            Error::DoNotRetry(format!("{what}: the ZooKeeper session is gone ({e})"))
        }
        e => Error::io(what.to_owned(), std::io::Error::other(e.to_string())),
    }
}

impl ZooKeeperCoordinator {
    /// Connects to `quorum` (`host:port[,host:port...]`) with a session of `session_timeout`
    /// and makes the parent nodes.
    ///
    /// # Errors
    /// `Io` naming the quorum when no server answers within the session timeout.
    pub fn connect(
        quorum: &str,
        parent: &str,
        session_timeout: Duration,
    ) -> Result<ZooKeeperCoordinator> {
        let runtime = crate::runtime::OwnedRuntime::start("basalt-zookeeper", 1)
            .map_err(|e| Error::io("starting the ZooKeeper runtime", e))?;
        let handle = runtime.handle().clone();
        let started = Instant::now();
        let q = quorum.to_owned();
        let connect = async move {
            let connect = Client::connector()
                .with_session_timeout(session_timeout)
                .connect(&q);
            tokio::time::timeout(session_timeout, connect).await
        };
        let client = crate::runtime::wait_for(&handle, connect)
            .ok_or_else(stopped)?
            .map_err(|_| {
                Error::io(
                    format!("connecting to ZooKeeper at {quorum}"),
                    std::io::Error::new(std::io::ErrorKind::TimedOut, "no server answered"),
                )
            })?
            .map_err(|e| zk_err(&format!("connecting to ZooKeeper at {quorum}"), e))?;
        let health = Arc::new(Mutex::new(SessionHealth::Alive { confirmed: started }));
        let (done, ended) = sync_channel(1);
        handle.spawn(watch_session(
            client.state_watcher(),
            Arc::clone(&health),
            done,
        ));
        let (stop, stopped_rx) = tokio::sync::oneshot::channel();
        let timeout = client.session_timeout();
        handle.spawn(heartbeat(
            client.clone(),
            Arc::clone(&health),
            timeout,
            stopped_rx,
        ));
        let zk = ZooKeeperCoordinator {
            timeout,
            client: Some(client),
            stop_heartbeat: Mutex::new(Some(stop)),
            quorum: quorum.to_owned(),
            parent: parent.trim_end_matches('/').to_owned(),
            health,
            ended: Mutex::new(ended),
            runtime,
        };
        for dir in ["rs", "backup-masters"] {
            let path = zk.path(dir);
            let c = zk.client()?;
            zk.block(&format!("creating {path}"), async move {
                c.mkdir(&path, &CreateMode::Persistent.with_acls(Acls::anyone_all()))
                    .await
            })?;
        }
        Ok(zk)
    }

    fn path(&self, rel: &str) -> String {
        format!("{}/{rel}", self.parent)
    }

    fn client(&self) -> Result<Client> {
        self.client
            .clone()
            .ok_or_else(|| Error::DoNotRetry("the ZooKeeper session is closed".to_owned()))
    }

    /// Runs `f` on the session's runtime and waits for it.
    fn block<T: Send + 'static>(
        &self,
        what: &str,
        f: impl Future<Output = std::result::Result<T, zookeeper_client::Error>> + Send + 'static,
    ) -> Result<T> {
        self.run(f)?.map_err(|e| zk_err(what, e))
    }

    /// Runs `f` on the session's runtime and waits for it, errors left to the caller.
    fn run<T: Send + 'static>(&self, f: impl Future<Output = T> + Send + 'static) -> Result<T> {
        self.runtime.wait_for(f).ok_or_else(stopped)
    }

    /// Creates `path` holding `data`; `Ok(false)` when it exists.
    fn create(&self, path: &str, data: Vec<u8>, mode: CreateMode) -> Result<bool> {
        let (c, p) = (self.client()?, path.to_owned());
        let r = self.run(async move {
            c.create(&p, &data, &mode.with_acls(Acls::anyone_all()))
                .await
        })?;
        match r {
            Ok(_) => Ok(true),
            Err(zookeeper_client::Error::NodeExists) => Ok(false),
            Err(e) => Err(zk_err(&format!("creating {path}"), e)),
        }
    }

    /// The data of `path`, or `None` when it does not exist; with its version.
    fn get(&self, path: &str) -> Result<Option<(Vec<u8>, i32)>> {
        let (c, p) = (self.client()?, path.to_owned());
        match self.run(async move { c.get_data(&p).await })? {
            Ok((data, stat)) => Ok(Some((data, stat.version))),
            Err(zookeeper_client::Error::NoNode) => Ok(None),
            Err(e) => Err(zk_err(&format!("reading {path}"), e)),
        }
    }

    /// Whether `path` is an ephemeral node of this session.
    fn owns(&self, path: &str) -> Result<bool> {
        let (c, p) = (self.client()?, path.to_owned());
        let me = c.session_id().0;
        match self.run(async move { c.check_stat(&p).await })? {
            Ok(stat) => Ok(stat.is_some_and(|s| s.ephemeral_owner == me)),
            Err(e) => Err(zk_err(&format!("looking at {path}"), e)),
        }
    }

    /// Deletes `path` at `version` (any when `None`); a missing node is not an error.
    fn delete(&self, path: &str, version: Option<i32>) -> Result<()> {
        let (c, p) = (self.client()?, path.to_owned());
        match self.run(async move { c.delete(&p, version).await })? {
            Ok(()) | Err(zookeeper_client::Error::NoNode) => Ok(()),
            Err(e) => Err(zk_err(&format!("deleting {path}"), e)),
        }
    }

    /// Raises the master epoch by one, by compare-and-set on its version.
    fn bump_epoch(&self) -> Result<u64> {
        let path = self.path("master-epoch");
        loop {
            let Some((data, version)) = self.get(&path)? else {
                self.create(&path, b"0".to_vec(), CreateMode::Persistent)?;
                continue;
            };
            let epoch: u64 = std::str::from_utf8(&data)
                .ok()
                .and_then(|s| s.parse().ok())
                .ok_or_else(|| Error::DoNotRetry(format!("{path} holds no number: {data:?}")))?;
            let next = epoch + 1;
            let (c, p) = (self.client()?, path.clone());
            let set = self.run(async move {
                c.set_data(&p, next.to_string().as_bytes(), Some(version))
                    .await
            })?;
            match set {
                Ok(_) => return Ok(next),
                Err(zookeeper_client::Error::BadVersion) => {} // another raised it: again
                Err(e) => return Err(zk_err(&format!("raising {path}"), e)),
            }
        }
    }

    /// A watch that fires when `path` is created, changed or deleted; `None` when the node
    /// does not exist (any more).
    fn watch_node(&self, path: &str) -> Result<Option<Watch>> {
        let (c, p) = (self.client()?, path.to_owned());
        let (stat, watcher) = self.block(&format!("watching {path}"), async move {
            c.check_and_watch_stat(&p).await
        })?;
        let (tx, rx) = sync_channel(1);
        self.runtime.handle().spawn(async move {
            watcher.changed().await;
            let _ = tx.try_send(());
        });
        Ok(stat.map(|_| Watch(rx)))
    }
}

impl Drop for ZooKeeperCoordinator {
    fn drop(&mut self) {
        // The last client clone gone, the session closes (its ephemeral nodes go at once);
        // wait a little for that before the runtime it runs on stops.
        drop(self.stop_heartbeat.lock().take());
        drop(self.client.take());
        let _ = self.ended.lock().recv_timeout(Duration::from_secs(2));
    }
}

impl Coordinator for ZooKeeperCoordinator {
    fn publish_cluster(&self, info: &ClusterInfo) -> Result<ClusterInfo> {
        let path = self.path("cluster");
        let json = serde_json::to_vec(info)
            .map_err(|e| Error::io("encoding the cluster", std::io::Error::other(e)))?;
        self.create(&path, json, CreateMode::Persistent)?;
        self.cluster()?
            .ok_or_else(|| Error::DoNotRetry(format!("{path} vanished after it was created")))
    }

    fn cluster(&self) -> Result<Option<ClusterInfo>> {
        let path = self.path("cluster");
        let Some((data, _)) = self.get(&path)? else {
            return Ok(None);
        };
        serde_json::from_slice(&data)
            .map(Some)
            .map_err(|e| Error::DoNotRetry(format!("{path} is not a cluster description: {e}")))
    }

    fn elect(&self, name: &str) -> Result<Election> {
        let master = self.path("master");
        let backup = self.path(&format!("backup-masters/{name}"));
        loop {
            // The node may be this session's own: a create whose answer was lost, or an
            // election that failed after its create. Then this master is active.
            if self.create(&master, name.as_bytes().to_vec(), CreateMode::Ephemeral)?
                || self.owns(&master)?
            {
                let epoch = self.bump_epoch()?;
                self.delete(&backup, None)?;
                return Ok(Election::Active { epoch });
            }
            self.create(&backup, Vec::new(), CreateMode::Ephemeral)?;
            let Some(watch) = self.watch_node(&master)? else {
                continue; // the master went meanwhile: try again
            };
            let Some((active, _)) = self.get(&master)? else {
                continue;
            };
            return Ok(Election::Backup {
                active: String::from_utf8_lossy(&active).into_owned(),
                watch,
            });
        }
    }

    fn resign(&self, name: &str) -> Result<()> {
        let master = self.path("master");
        match self.get(&master)? {
            Some((data, version)) if data == name.as_bytes() => self.delete(&master, Some(version)),
            _ => Ok(()),
        }
    }

    fn active_master(&self) -> Result<Option<String>> {
        Ok(self
            .get(&self.path("master"))?
            .map(|(d, _)| String::from_utf8_lossy(&d).into_owned()))
    }

    fn backup_masters(&self) -> Result<Vec<String>> {
        let (c, p) = (self.client()?, self.path("backup-masters"));
        let mut names = self.block("listing backup masters", async move {
            c.list_children(&p).await
        })?;
        names.sort();
        Ok(names)
    }

    fn register_server(&self, name: &str) -> Result<()> {
        let path = self.path(&format!("rs/{name}"));
        if self.create(&path, Vec::new(), CreateMode::Ephemeral)? {
            Ok(())
        } else {
            Err(Error::DoNotRetry(format!(
                "a region server named {name} is registered already ({path})"
            )))
        }
    }

    fn deregister_server(&self, name: &str) -> Result<()> {
        self.delete(&self.path(&format!("rs/{name}")), None)
    }

    fn live_servers(&self) -> Result<(Vec<String>, Watch)> {
        let (c, p) = (self.client()?, self.path("rs"));
        let (mut names, _, watcher) = self.block("listing region servers", async move {
            c.get_and_watch_children(&p).await
        })?;
        names.sort();
        let (tx, rx) = sync_channel(1);
        self.runtime.handle().spawn(async move {
            watcher.changed().await;
            let _ = tx.try_send(());
        });
        Ok((names, Watch(rx)))
    }

    fn session(&self) -> SessionHealth {
        *self.health.lock()
    }

    fn session_timeout(&self) -> Duration {
        self.timeout
    }
}
