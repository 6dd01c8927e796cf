//! Writing: staging an edit (sequence id, WAL record, memstore) and finishing it (WAL sync,
//! then visibility), and mini-batches that stage many rows' edits before one sync, as
//! HBase's `doMiniBatchMutation` does.
//!
//! # Invariants
//! 1. An edit is staged under the region's `updates` lock (a split or merge closing the region
//!    sees every staged edit) and under its row's lock.
//! 2. No edit is visible to readers before the WAL sync its durability asks for, and none is
//!    acknowledged before readers can see it (HBase's `completeAndWait`).
//! 3. An edit whose WAL sync failed is never visible: it is held back from the read point,
//!    taken out of the memstore, and only then completed (HBase rolls such edits back and
//!    never advances the read point past them). If a later writer's healed sync made it
//!    durable and visible first, it stays: it will not be lost.

use basalt_model::descriptor::Durability;
use basalt_model::ops::Mutation;
use basalt_model::{Cell, Error, Result, RowResult};

use super::mutate::fold_repeated_columns;
use super::Region;
use crate::wal::Ticket;

/// An edit in the WAL's buffer and the memstore, not yet synced or visible.
#[derive(Debug)]
pub(super) struct Staged {
    seq: u64,
    ticket: Option<Ticket>,
    durability: Durability,
    /// The edit's row (all its cells are in it), to take them out if the sync fails.
    row: bytes::Bytes,
}

impl Region {
    /// Gives `cells` a sequence id, appends them to the WAL (unless SKIP_WAL) and inserts them
    /// into the memstore, invisible until [`Region::finish`]. Caller holds `updates` and the
    /// row's lock.
    pub(super) fn stage(&self, durability: Durability, mut cells: Vec<Cell>) -> Result<Staged> {
        let durability = durability.resolve(self.table().durability);
        let stores = self.stores.read();
        // An online alter may have dropped a family since the row was validated.
        if let Some(c) = cells.iter().find(|c| !stores.contains_key(&c.family)) {
            return Err(self.family_error(&c.family));
        }
        // Folding compares keys only: every cell gets the same sequence id below.
        fold_repeated_columns(&mut cells);
        let row = cells
            .first()
            .map(basalt_model::Cell::row_bytes)
            .unwrap_or_default();
        let (seq, ticket) = if durability == Durability::SkipWal {
            let seq = self.mvcc.begin();
            cells.iter_mut().for_each(|c| c.seq_id = seq);
            (seq, None)
        } else {
            let (seq, appended) = self
                .wal
                .append_sequenced(self.info.id, &mut cells, || self.mvcc.begin())?;
            match appended {
                Ok(t) => (seq, Some(t)),
                Err(e) => {
                    self.mvcc.complete(seq);
                    return Err(e);
                }
            }
        };
        let mut added = 0;
        for c in &cells {
            added += stores
                .get(&c.family)
                .expect("families were checked under the row lock")
                .insert(c);
        }
        self.memstore_changed(added);
        // Visible once synced, when the durability waits for a sync (invariant 2).
        self.mvcc
            .staged(seq, ticket.filter(|_| waits_for_sync(durability)));
        Ok(Staged {
            seq,
            ticket,
            durability,
            row,
        })
    }

    /// Syncs the WAL once for every staged edit (the last ticket covers the earlier ones),
    /// then makes them visible and waits until readers see them (invariant 2). A failed sync
    /// is the result of every edit.
    pub(super) fn finish(&self, staged: &[Staged]) -> Result<()> {
        let ticket = staged.iter().filter_map(|s| s.ticket).max();
        let durability = staged
            .iter()
            .filter(|s| s.ticket.is_some())
            .map(|s| s.durability)
            .max();
        let synced = match (ticket, durability) {
            (Some(t), Some(d)) => self.wal.sync_for(t, d),
            _ => Ok(()),
        };
        let synced = match synced {
            Ok(()) => {
                // Makes this group visible, and every older write the same sync covered.
                self.mvcc.advance(self.wal.synced());
                Ok(())
            }
            Err(e) => self.roll_back(staged, e),
        };
        if let Some(last) = staged.iter().map(|s| s.seq).max() {
            self.mvcc.wait_for(last);
        }
        self.writes
            .fetch_add(staged.len() as u64, std::sync::atomic::Ordering::Relaxed);
        synced
    }

    /// Takes the edits of a failed sync out of the memstore before readers can see them
    /// (invariant 3). The error stands unless every edit was made durable and visible by a
    /// later writer's healed sync first.
    fn roll_back(&self, staged: &[Staged], e: Error) -> Result<()> {
        let mut rolled_back = false;
        let held = |s: &&Staged| s.ticket.is_some() && waits_for_sync(s.durability);
        for s in staged.iter().filter(held) {
            if !self.mvcc.hold(s.seq) {
                continue;
            }
            let freed: usize = self
                .stores()
                .iter()
                .map(|st| st.remove_edit(&s.row, s.seq))
                .sum();
            self.memstore_shrank(freed);
            self.mvcc.complete(s.seq);
            rolled_back = true;
        }
        if rolled_back {
            Err(e)
        } else {
            Ok(())
        }
    }

    /// Applies Puts and Deletes of distinct rows of this region with one WAL sync. Each row's
    /// edit is atomic and has its own sequence id; the batch as a whole is not atomic (a
    /// refused mutation does not stop the others). One result per mutation, in order.
    ///
    /// # Panics
    /// In debug builds, when a mutation is a read-modify-write or two name the same row (the
    /// caller sends those alone: they must see the writes before them).
    pub fn mutate_batch(&self, ms: &[&Mutation]) -> Vec<Result<Option<RowResult>>> {
        debug_assert!(ms
            .iter()
            .all(|m| matches!(m, Mutation::Put(_) | Mutation::Delete(_))));
        let mut out: Vec<Option<Result<Option<RowResult>>>> = ms
            .iter()
            .map(|m| {
                m.validate()
                    .and_then(|()| self.check_writable(m.row()))
                    .err()
                    .map(Err)
            })
            .collect();
        let mut stripes: Vec<usize> = ms
            .iter()
            .zip(&out)
            .filter(|(_, o)| o.is_none())
            .map(|(m, _)| self.row_stripe(m.row()))
            .collect();
        stripes.sort_unstable();
        stripes.dedup();
        // Stripes are locked in increasing order, so two batches cannot deadlock.
        let _locks: Vec<_> = stripes.iter().map(|i| self.row_locks[*i].lock()).collect();
        let mut staged = Vec::new();
        let mut staged_at = Vec::new();
        {
            let _u = self.updates.read();
            for (i, m) in ms.iter().enumerate() {
                if out[i].is_some() {
                    continue;
                }
                let now = self.row_clock.now(m.row(), self.env.now_ms());
                let step = self.check_serving().and_then(|()| {
                    let (cells, _) = self.prepare(m, now)?;
                    if cells.is_empty() {
                        return Ok(None);
                    }
                    self.stage(m.durability(), cells).map(Some)
                });
                match step {
                    Ok(Some(s)) => {
                        staged.push(s);
                        staged_at.push(i);
                    }
                    Ok(None) => out[i] = Some(Ok(None)),
                    Err(e) => out[i] = Some(Err(e)),
                }
            }
        }
        let finished = self.finish(&staged);
        for i in staged_at {
            out[i] = Some(match &finished {
                Ok(()) => Ok(None),
                // Every edit of the batch waited on the one sync that failed.
                Err(e) => Err(Error::io(
                    "syncing the WAL for a batch",
                    std::io::Error::other(e.to_string()),
                )),
            });
        }
        out.into_iter().map(|o| o.unwrap_or(Ok(None))).collect()
    }
}

/// Whether an edit of this durability becomes visible only once the WAL has synced it.
fn waits_for_sync(d: Durability) -> bool {
    matches!(
        d,
        Durability::SyncWal | Durability::FsyncWal | Durability::UseDefault
    )
}
