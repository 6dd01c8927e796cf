//! The servers a connection talks to: any seeds given, the active master (administration
//! and region locations), and the region servers the locations name, each by one channel.
//!
//! A standalone server is its own master and only region server; in a cluster the seeds
//! may be any masters or region servers. Every server answers `GetClusterStatus` with its
//! own name and the active master's, which is how the client finds the rest.

use std::collections::HashMap;
use std::sync::Mutex;

use basalt_model::name::server_address;
use basalt_model::{Error, Result};
use basalt_proto::pb;
use basalt_proto::pb::admin_client::AdminClient;
use basalt_proto::status::from_status;

use crate::channel::Channel;

/// Channels by server name, and which server is the active master.
#[derive(Debug)]
pub(crate) struct Servers {
    /// `host:port` of each seed, in the order given.
    seeds: Vec<String>,
    /// Lock order: `channels` and `master` are leaves, never held together.
    channels: Mutex<HashMap<String, Channel>>,
    /// The active master's name, and its channel.
    master: Mutex<Option<(String, Channel)>>,
    /// The connections of each channel.
    connections: usize,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Servers {
    /// Reaches the first seed of `seeds` (`host:port[,host:port...]`) that answers, and
    /// learns from it who it is and who the master is. Each server is reached over
    /// `connections` connections.
    ///
    /// # Errors
    /// No seed could be reached, or none answered.
    pub(crate) async fn connect(seeds: &str, connections: usize) -> Result<Servers> {
        let seeds: Vec<String> = seeds
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect();
        if seeds.is_empty() {
            return Err(Error::illegal("no server address given"));
        }
        let servers = Servers {
            seeds,
            channels: Mutex::new(HashMap::new()),
            master: Mutex::new(None),
            connections,
        };
        servers.find_master().await?;
        Ok(servers)
    }

    /// Asks the seeds, in order, for the cluster's status until one answers; records the
    /// answering server's channel under its name and the active master.
    async fn find_master(&self) -> Result<()> {
        let mut last = None;
        for seed in &self.seeds {
            match self.ask_seed(seed).await {
                Ok(()) => return Ok(()),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| Error::illegal("no server address given")))
    }

    async fn ask_seed(&self, seed: &str) -> Result<()> {
        let channel = self.channel_to(seed)?;
        let status = AdminClient::new(channel.clone())
            .get_cluster_status(pb::Empty {})
            .await
            .map_err(|s| from_status(&s))?
            .into_inner();
        lock(&self.channels).insert(status.answered_by.clone(), channel.clone());
        if status.master.is_empty() {
            return Err(Error::PleaseHold(format!(
                "{seed} knows no active master yet"
            )));
        }
        let master = if status.master == status.answered_by {
            channel
        } else {
            self.channel(&status.master)?
        };
        *lock(&self.master) = Some((status.master, master));
        Ok(())
    }

    /// A channel to `addr`, each of its connections made by the first call given to it.
    fn channel_to(&self, addr: &str) -> Result<Channel> {
        Channel::lazy(addr, crate::MAX_MESSAGE_BYTES, self.connections)
    }

    /// The active master's channel, looked up again through the seeds when it was lost.
    pub(crate) async fn master(&self) -> Result<Channel> {
        if let Some((_, c)) = lock(&self.master).as_ref() {
            return Ok(c.clone());
        }
        self.find_master().await?;
        lock(&self.master)
            .as_ref()
            .map(|(_, c)| c.clone())
            .ok_or_else(|| Error::PleaseHold("no active master".to_owned()))
    }

    /// Forgets the master after a call to it failed in a way a new master would explain.
    pub(crate) fn master_failed(&self, e: &Error) {
        if matches!(e, Error::PleaseHold(_) | Error::Io { .. }) {
            *lock(&self.master) = None;
        }
    }

    /// The channel of the server named `name` (`host,port,start code`), connected lazily.
    ///
    /// # Errors
    /// `NotServingRegion` for an empty name (a region assigned to no server right now);
    /// `IllegalArgument` for a malformed one.
    pub(crate) fn channel(&self, name: &str) -> Result<Channel> {
        if name.is_empty() {
            return Err(Error::NotServingRegion(
                "the region is not assigned to a server right now".to_owned(),
            ));
        }
        let mut channels = lock(&self.channels);
        if let Some(c) = channels.get(name) {
            return Ok(c.clone());
        }
        let c = self.channel_to(&server_address(name)?)?;
        channels.insert(name.to_owned(), c.clone());
        Ok(c)
    }
}
