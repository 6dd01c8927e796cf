//! Group commit at the gateway: MutateRow requests of one table that arrive while an earlier
//! group of that table is being written are written together, as the entries of one
//! MutateRows ([`super::data::write_entries`]). The plain ones reach the engine as one batch,
//! so one blocking thread and one WAL sync serve the whole group, where each request alone
//! would take a thread of its own and wait on the sync with the others. A request that finds
//! no group under way is written at once, as before; each request still gets its own status,
//! all or nothing for its row.
//!
//! # Invariants
//! 1. A request is answered only after the write of its group returned, so an OK means its
//!    edit is synced and visible, as with a MutateRow written alone.
//! 2. A table has a group being written exactly when it has an entry in `pending`: the
//!    drainer takes the queue under the lock and removes the entry, under the same lock, only
//!    when it finds the queue empty, so a request queued meanwhile is always taken.
//! 3. A drainer that panics removes its table's entry: the requests it held, and those queued
//!    behind it, are answered INTERNAL instead of waiting for ever.

use std::collections::HashMap;

use basalt_bigtable_proto::google::bigtable::v2::Mutation;
use basalt_model::TableName;
use bytes::Bytes;
use parking_lot::Mutex;
use tokio::sync::oneshot;
use tonic::Status;

use super::data::write_entries;
use super::Gateway;

/// One MutateRow waiting for its group.
struct Pending {
    row_key: Bytes,
    mutations: Vec<Mutation>,
    done: oneshot::Sender<Result<(), Status>>,
}

/// The queued MutateRow requests of each table with a group being written (invariant 2).
#[derive(Default)]
pub(super) struct Combiner {
    pending: Mutex<HashMap<TableName, Vec<Pending>>>,
}

impl Gateway {
    /// Writes one row's mutations with whatever other MutateRow requests of `name` are
    /// queued at the time.
    pub(super) async fn mutate_row_combined(
        &self,
        name: TableName,
        row_key: Bytes,
        mutations: Vec<Mutation>,
    ) -> Result<(), Status> {
        let (done, answer) = oneshot::channel();
        let item = Pending {
            row_key,
            mutations,
            done,
        };
        let start = {
            let mut pending = self.combiner.pending.lock();
            match pending.get_mut(&name) {
                Some(queue) => {
                    queue.push(item);
                    false
                }
                None => {
                    pending.insert(name.clone(), vec![item]);
                    true
                }
            }
        };
        if start {
            let gw = self.clone();
            tokio::task::spawn_blocking(move || gw.drain(&name));
        }
        answer
            .await
            .map_err(|_| Status::internal("the write of this request's group failed"))?
    }

    /// Writes `name`'s queued requests, group after group, until none is left.
    fn drain(&self, name: &TableName) {
        let _guard = DrainGuard { gw: self, name };
        loop {
            let group = {
                let mut pending = self.combiner.pending.lock();
                let Some(queue) = pending.get_mut(name) else {
                    return;
                };
                if queue.is_empty() {
                    pending.remove(name);
                    return;
                }
                std::mem::take(queue)
            };
            let entries: Vec<(&Bytes, &[Mutation])> = group
                .iter()
                .map(|p| (&p.row_key, p.mutations.as_slice()))
                .collect();
            let results = write_entries(self, name, &entries);
            for (p, r) in group.into_iter().zip(results) {
                // A client that went away no longer waits for its answer.
                let _ = p.done.send(r);
            }
        }
    }
}

/// Removes a panicking drainer's table (invariant 3).
struct DrainGuard<'a> {
    gw: &'a Gateway,
    name: &'a TableName,
}

impl Drop for DrainGuard<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.gw.combiner.pending.lock().remove(self.name);
        }
    }
}
