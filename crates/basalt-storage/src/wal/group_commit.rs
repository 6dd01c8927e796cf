//! Group commit's bookkeeping: what is synced, who leads the sync, and the writers parked
//! until a sync covers them (the log's invariant 7).

use super::Ticket;

/// What is durable, guarded by the log's `sync` lock.
#[derive(Debug, Default)]
pub(super) struct SyncState {
    pub(super) synced: u64,
    pub(super) syncing: bool,
    pub(super) fsync_wanted: bool,
    pub(super) failed: Option<String>,
    /// Writers parked until a sync covers their ticket (invariant 7).
    pub(super) waiters: Vec<(Ticket, std::thread::Thread)>,
}

impl SyncState {
    /// Takes the writers a sync's end releases (invariant 7): those it covered, every one
    /// when the log failed, and one of the rest, to lead the next sync.
    pub(super) fn released(&mut self) -> Vec<std::thread::Thread> {
        if self.failed.is_some() {
            return self.all_waiters();
        }
        let synced = self.synced;
        let mut woken = Vec::with_capacity(self.waiters.len());
        let mut leader = None;
        self.waiters.retain(|(ticket, t)| {
            if *ticket <= synced {
                woken.push(t.clone());
                return false;
            }
            if leader.is_none() {
                leader = Some(t.clone());
                return false;
            }
            true
        });
        woken.extend(leader);
        woken
    }

    /// Takes every parked writer, to look at the log again.
    pub(super) fn all_waiters(&mut self) -> Vec<std::thread::Thread> {
        std::mem::take(&mut self.waiters)
            .into_iter()
            .map(|(_, t)| t)
            .collect()
    }
}

pub(super) fn unpark_all(threads: Vec<std::thread::Thread>) {
    threads.iter().for_each(std::thread::Thread::unpark);
}
