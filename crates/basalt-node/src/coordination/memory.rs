//! An in-memory ensemble for deterministic tests: the same rules as ZooKeeper's ephemeral
//! nodes and watches, with sessions a test disconnects and expires when it chooses.

use std::collections::{BTreeMap, HashMap};
use std::sync::mpsc::{sync_channel, SyncSender};
use std::sync::Arc;
use std::time::{Duration, Instant};

use basalt_model::{Error, Result};
use parking_lot::Mutex;

use super::{ClusterInfo, Coordinator, Election, SessionHealth, Watch, DEFAULT_SESSION_TIMEOUT};

/// The shared state every [`MemoryCoordinator`] of one ensemble sees.
#[derive(Clone, Debug, Default)]
pub struct MemoryEnsemble {
    state: Arc<Mutex<State>>,
}

#[derive(Debug, Default)]
struct State {
    cluster: Option<ClusterInfo>,
    /// The active master and its session.
    master: Option<(String, u64)>,
    backups: BTreeMap<String, u64>,
    servers: BTreeMap<String, u64>,
    epoch: u64,
    master_watches: Vec<SyncSender<()>>,
    server_watches: Vec<SyncSender<()>>,
    sessions: HashMap<u64, Session>,
    next_session: u64,
}

/// A session as the test left it.
#[derive(Clone, Copy, Debug)]
enum Session {
    Connected,
    /// Cut off since then: its nodes stay, and nothing it asks is answered.
    CutOff(Instant),
    Expired,
}

fn fire(watches: &mut Vec<SyncSender<()>>) {
    for w in watches.drain(..) {
        let _ = w.try_send(());
    }
}

impl MemoryEnsemble {
    /// A new, empty ensemble.
    #[must_use]
    pub fn new() -> MemoryEnsemble {
        MemoryEnsemble::default()
    }

    /// A new session on the ensemble.
    #[must_use]
    pub fn connect(&self) -> MemoryCoordinator {
        let mut st = self.state.lock();
        st.next_session += 1;
        let session = st.next_session;
        st.sessions.insert(session, Session::Connected);
        MemoryCoordinator {
            ensemble: self.clone(),
            session,
        }
    }

    /// Cuts a session off from the ensemble without ending it (its nodes stay).
    pub fn disconnect(&self, c: &MemoryCoordinator, since: Instant) {
        self.state
            .lock()
            .sessions
            .insert(c.session, Session::CutOff(since));
    }

    /// Connects a cut-off session again before it expired: it goes on as it was.
    pub fn reconnect(&self, c: &MemoryCoordinator) {
        let mut st = self.state.lock();
        if let Some(s @ Session::CutOff(_)) = st.sessions.get_mut(&c.session) {
            *s = Session::Connected;
        }
    }

    /// Expires a session: its ephemeral nodes go and the watches on them fire.
    pub fn expire(&self, c: &MemoryCoordinator) {
        let mut st = self.state.lock();
        let s = c.session;
        st.sessions.insert(s, Session::Expired);
        if st.master.as_ref().is_some_and(|(_, owner)| *owner == s) {
            st.master = None;
            fire(&mut st.master_watches);
        }
        st.backups.retain(|_, owner| *owner != s);
        let before = st.servers.len();
        st.servers.retain(|_, owner| *owner != s);
        if st.servers.len() != before {
            fire(&mut st.server_watches);
        }
    }
}

/// One session on a [`MemoryEnsemble`].
#[derive(Debug)]
pub struct MemoryCoordinator {
    ensemble: MemoryEnsemble,
    session: u64,
}

impl MemoryCoordinator {
    fn live(&self, st: &State) -> Result<()> {
        match st.sessions.get(&self.session) {
            Some(Session::Expired) | None => Err(Error::DoNotRetry(
                "the coordination session expired".to_owned(),
            )),
            Some(Session::CutOff(_)) => Err(Error::io(
                "reaching the coordination service",
                std::io::Error::new(std::io::ErrorKind::NotConnected, "disconnected"),
            )),
            Some(Session::Connected) => Ok(()),
        }
    }
}

impl Drop for MemoryCoordinator {
    /// Closing a session ends it, as a ZooKeeper client's close does.
    fn drop(&mut self) {
        self.ensemble.expire(self);
    }
}

impl Coordinator for MemoryCoordinator {
    fn publish_cluster(&self, info: &ClusterInfo) -> Result<ClusterInfo> {
        let mut st = self.ensemble.state.lock();
        self.live(&st)?;
        Ok(st.cluster.get_or_insert_with(|| info.clone()).clone())
    }

    fn cluster(&self) -> Result<Option<ClusterInfo>> {
        let st = self.ensemble.state.lock();
        self.live(&st)?;
        Ok(st.cluster.clone())
    }

    fn elect(&self, name: &str) -> Result<Election> {
        let mut st = self.ensemble.state.lock();
        self.live(&st)?;
        if let Some((active, _)) = st.master.clone() {
            st.backups.insert(name.to_owned(), self.session);
            let (tx, rx) = sync_channel(1);
            st.master_watches.push(tx);
            return Ok(Election::Backup {
                active,
                watch: Watch(rx),
            });
        }
        st.backups.remove(name);
        st.master = Some((name.to_owned(), self.session));
        st.epoch += 1;
        Ok(Election::Active { epoch: st.epoch })
    }

    fn resign(&self, name: &str) -> Result<()> {
        let mut st = self.ensemble.state.lock();
        self.live(&st)?;
        if st
            .master
            .as_ref()
            .is_some_and(|(n, s)| n == name && *s == self.session)
        {
            st.master = None;
            fire(&mut st.master_watches);
        }
        Ok(())
    }

    fn active_master(&self) -> Result<Option<String>> {
        let st = self.ensemble.state.lock();
        self.live(&st)?;
        Ok(st.master.as_ref().map(|(n, _)| n.clone()))
    }

    fn backup_masters(&self) -> Result<Vec<String>> {
        let st = self.ensemble.state.lock();
        self.live(&st)?;
        Ok(st.backups.keys().cloned().collect())
    }

    fn register_server(&self, name: &str) -> Result<()> {
        let mut st = self.ensemble.state.lock();
        self.live(&st)?;
        if st.servers.contains_key(name) {
            return Err(Error::DoNotRetry(format!(
                "a region server named {name} is registered already"
            )));
        }
        st.servers.insert(name.to_owned(), self.session);
        fire(&mut st.server_watches);
        Ok(())
    }

    fn deregister_server(&self, name: &str) -> Result<()> {
        let mut st = self.ensemble.state.lock();
        self.live(&st)?;
        if st.servers.get(name) == Some(&self.session) {
            st.servers.remove(name);
            fire(&mut st.server_watches);
        }
        Ok(())
    }

    fn live_servers(&self) -> Result<(Vec<String>, Watch)> {
        let mut st = self.ensemble.state.lock();
        self.live(&st)?;
        let (tx, rx) = sync_channel(1);
        st.server_watches.push(tx);
        Ok((st.servers.keys().cloned().collect(), Watch(rx)))
    }

    /// A connected session is confirmed now; a cut-off one when it was cut off.
    fn session(&self) -> SessionHealth {
        let s = self
            .ensemble
            .state
            .lock()
            .sessions
            .get(&self.session)
            .copied();
        match s {
            Some(Session::Connected) => SessionHealth::Alive {
                confirmed: Instant::now(),
            },
            Some(Session::CutOff(since)) => SessionHealth::Alive { confirmed: since },
            Some(Session::Expired) | None => SessionHealth::Expired,
        }
    }

    fn session_timeout(&self) -> Duration {
        DEFAULT_SESSION_TIMEOUT
    }
}
