//! Group commit at the gateway: MutateRow requests that arrive while a batch is being written
//! are gathered into the next ([`crate::mini_batch`], which the native API's Mutate calls
//! share), and each table's requests of a batch are written together, as the entries of one
//! MutateRows ([`super::data::write_entries`]). The plain ones reach the engine as one batch,
//! so one blocking thread and one WAL sync serve the whole batch, where each request alone
//! would take a thread of its own and wait on the sync with the others. A request that finds
//! no writer under way starts one and is written at once, as before; each request still gets
//! its own status, all or nothing for its row.
//!
//! A region that blocks writes holds up its own requests, not the other tables' nor the other
//! regions': while a batch is held, the next request starts another writer (the gathering's
//! stall rule).
//!
//! # Invariants
//! 1. A request is answered only after the write of its batch returned, so an OK means its
//!    edit is synced and visible, as with a MutateRow written alone.
//! 2. Requests of one row in one batch are applied in the order they came, as one caller's
//!    would be.

use basalt_bigtable_proto::google::bigtable::v2::Mutation;
use basalt_model::TableName;
use bytes::Bytes;
use tokio::sync::oneshot;
use tonic::Status;

use super::data::write_entries;
use super::Gateway;
use crate::mini_batch::{self as gathered, Queue};

/// The MutateRow requests waiting to be written.
pub(super) type Combiner = Queue<Pending>;

/// One MutateRow waiting for its batch.
pub(crate) struct Pending {
    table: TableName,
    row_key: Bytes,
    mutations: Vec<Mutation>,
    done: oneshot::Sender<Result<(), Status>>,
}

impl Gateway {
    /// Writes one row's mutations with whatever other MutateRow requests are queued at the
    /// time.
    pub(super) async fn mutate_row_combined(
        &self,
        table: TableName,
        row_key: Bytes,
        mutations: Vec<Mutation>,
    ) -> Result<(), Status> {
        let (done, answer) = oneshot::channel();
        let request = Pending {
            table,
            row_key,
            mutations,
            done,
        };
        gathered::submit(self, request);
        answer
            .await
            .map_err(|_| Status::internal("the write of this request's batch failed"))?
    }
}

impl gathered::Writer for Gateway {
    type Call = Pending;

    fn queue(&self) -> &Queue<Pending> {
        &self.combiner
    }

    /// Each table's requests as the entries of one write, in the order they came.
    fn write(&self, batch: Vec<Pending>) {
        let mut tables: Vec<(TableName, Vec<Pending>)> = Vec::new();
        for p in batch {
            match tables.iter_mut().find(|(name, _)| *name == p.table) {
                Some((_, group)) => group.push(p),
                None => tables.push((p.table.clone(), vec![p])),
            }
        }
        for (name, group) in tables {
            let entries: Vec<(&Bytes, &[Mutation])> = group
                .iter()
                .map(|p| (&p.row_key, p.mutations.as_slice()))
                .collect();
            let results = write_entries(self, &name, &entries);
            for (p, r) in group.into_iter().zip(results) {
                // A client that went away no longer waits for its answer.
                let _ = p.done.send(r);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

    use std::sync::Arc;

    use basalt_bigtable_proto::google::bigtable::v2::mutation;
    use basalt_model::ops::Get;
    use basalt_model::{ColumnFamilyDescriptor, TableDescriptor};

    use super::*;
    use crate::metrics::RequestMetrics;
    use crate::mini_batch::tests::{
        eventually, only_the_blocked_region_s_calls_wait, runtime, with_a_region_blocking_writes,
    };

    fn gateway(db: &basalt_node::Database) -> Gateway {
        let metrics = Arc::new(RequestMetrics::new(&[]));
        Gateway::new(Arc::new(db.clone()), metrics)
    }

    fn set_cell(value: &str) -> Vec<Mutation> {
        vec![Mutation {
            mutation: Some(mutation::Mutation::SetCell(mutation::SetCell {
                family_name: "f".to_owned(),
                column_qualifier: b"q".to_vec().into(),
                timestamp_micros: -1,
                value: value.as_bytes().to_vec().into(),
            })),
        }]
    }

    fn table(name: &str) -> TableName {
        TableName::parse(name).unwrap()
    }

    fn value(db: &basalt_node::Database, table: &str, row: &str) -> Option<Vec<u8>> {
        let r = db
            .table(table)
            .unwrap()
            .get(Get::new(row.to_owned()))
            .unwrap();
        r.cells.first().map(|c| c.value().to_vec())
    }

    #[test]
    fn each_request_of_a_batch_gets_its_own_status_in_the_order_they_came() {
        let dir = tempfile::tempdir().unwrap();
        let db = basalt_node::Database::open(dir.path()).unwrap();
        for name in ["t", "u"] {
            let desc = TableDescriptor::new(&table(name), [ColumnFamilyDescriptor::new("f")]);
            db.create_table(desc, &[]).unwrap();
        }
        let gw = gateway(&db);
        let mut unknown_family = set_cell("x");
        if let Some(mutation::Mutation::SetCell(s)) = &mut unknown_family[0].mutation {
            s.family_name = "nope".to_owned();
        }
        let requests = [
            ("t", "r1", set_cell("1")),
            ("t", "r2", unknown_family),
            ("u", "r1", set_cell("2")),
            ("t", "r1", set_cell("later")),
        ];
        let mut answers = Vec::new();
        let batch = requests
            .into_iter()
            .map(|(t, row, mutations)| {
                let (done, answer) = oneshot::channel();
                answers.push(answer);
                Pending {
                    table: table(t),
                    row_key: Bytes::from(row.as_bytes().to_vec()),
                    mutations,
                    done,
                }
            })
            .collect();
        gathered::Writer::write(&gw, batch);
        let got: Vec<Result<(), Status>> = answers
            .into_iter()
            .map(|a| a.blocking_recv().unwrap())
            .collect();
        assert!(
            got[0].is_ok() && got[2].is_ok() && got[3].is_ok(),
            "{got:?}"
        );
        let refused = got[1].as_ref().unwrap_err();
        assert!(refused.message().contains("nope"), "{refused:?}");
        // Requests of one row are applied in the order they came; the refused one not at all.
        assert_eq!(value(&db, "t", "r1").as_deref(), Some(&b"later"[..]));
        assert_eq!(value(&db, "t", "r2"), None);
        assert_eq!(value(&db, "u", "r1").as_deref(), Some(&b"2"[..]));
    }

    #[test]
    fn a_region_blocking_writes_holds_up_only_its_own_requests() {
        let dir = tempfile::tempdir().unwrap();
        let db = with_a_region_blocking_writes(dir.path());
        let gw = gateway(&db);
        let written = |t: &str, row: &str| {
            let (gw, t, row) = (gw.clone(), table(t), Bytes::from(row.as_bytes().to_vec()));
            async move { gw.mutate_row_combined(t, row, set_cell("v")).await.is_ok() }
        };
        runtime(1).block_on(only_the_blocked_region_s_calls_wait(
            &db,
            || written("stall", "held"),
            // The table's other region.
            || written("stall", "s1"),
        ));
        assert_eq!(value(&db, "stall", "held").as_deref(), Some(&b"v"[..]));
        assert_eq!(value(&db, "stall", "s1").as_deref(), Some(&b"v"[..]));
        eventually("the writers' end", || gw.combiner.writers() == 0);
    }
}
