//! The native API's Mutate calls gathered into mini-batches ([`crate::mini_batch`]): the
//! Puts and Deletes that arrive while a batch is written are written with the next, one WAL
//! sync for all. A batch's calls are each checked as the call alone would have been checked;
//! the rest of each table's calls are written with one `Table::batch` (a mini-batch per
//! region, one WAL sync for it), and each call is answered.
//!
//! What a client sees is what a call of its own would give: its own error for a mutation
//! refused before writing (malformed, wrong region, unknown family, oversized cell), its own
//! outcome otherwise. Calls of one row in one batch are applied in the order they came, as
//! one caller's would be; calls that overlap in time have no order between them.

use std::sync::Arc;
use std::time::Instant;

use basalt_model::ops::Mutation;
use basalt_model::{Error, Result, RowResult, TableName};
use basalt_proto::convert::mutation_from_pb;
use basalt_proto::pb;
use tokio::sync::oneshot;

use super::region_check::check_region;
use super::{table, Services};
use crate::mini_batch::{self as gathered, Queue};

/// What a call's mutation came to.
pub(crate) type Outcome = Result<Option<RowResult>>;

/// The Mutate calls waiting to be written.
#[derive(Debug, Default)]
pub struct MiniBatches(Queue<Waiting>);

/// A call waiting for its batch.
pub(crate) struct Waiting {
    request: pb::MutateRequest,
    answer: oneshot::Sender<Outcome>,
}

/// Whether a Mutate call can join a mini-batch: a Put or a Delete. A read-modify-write
/// (Increment, Append) answers with what it read, and goes alone.
#[must_use]
pub(crate) fn joins(request: &pb::MutateRequest) -> bool {
    use pb::mutation::Kind;
    let kind = request.mutation.as_ref().and_then(|m| m.kind.as_ref());
    matches!(kind, Some(Kind::Put(_) | Kind::Delete(_)))
}

/// Queues `request` for the next batch and returns where its outcome will come.
pub(crate) fn submit(
    services: &Services,
    request: pb::MutateRequest,
) -> oneshot::Receiver<Outcome> {
    let (answer, outcome) = oneshot::channel();
    gathered::submit(services, Waiting { request, answer });
    outcome
}

impl gathered::Writer for Services {
    type Call = Waiting;

    fn queue(&self) -> &Queue<Waiting> {
        &self.mini_batches.0
    }

    fn write(&self, calls: Vec<Waiting>) {
        write(self, calls);
    }
}

/// Writes one batch: each call checked alone, then each table's calls that passed in one
/// `Table::batch`, and every call answered.
fn write(s: &Services, calls: Vec<Waiting>) {
    let mut tables: Vec<Gathered> = Vec::new();
    for Waiting { request, answer } in calls {
        match checked(s, request) {
            Ok((name, t, m)) => match tables.iter_mut().find(|g| g.name == name) {
                Some(g) => g.calls.push((m, answer)),
                None => tables.push(Gathered {
                    name,
                    table: t,
                    calls: vec![(m, answer)],
                }),
            },
            // The caller may have gone (its client reset the stream); nothing to tell.
            Err(e) => drop(answer.send(Err(e))),
        }
    }
    for g in tables {
        let (mutations, answers): (Vec<Mutation>, Vec<_>) = g.calls.into_iter().unzip();
        for (answer, outcome) in answers.into_iter().zip(g.table.batch(mutations)) {
            drop(answer.send(outcome));
        }
    }
}

/// One table's calls of a batch.
struct Gathered {
    name: TableName,
    table: Arc<dyn basalt_api::Table>,
    calls: Vec<(Mutation, oneshot::Sender<Outcome>)>,
}

/// The call's table and mutation, refused as the call alone would refuse it before writing:
/// malformed, sent to a region that does not hold its row, or failing the table's checks.
/// Those passing cannot make `Table::batch` refuse the whole batch, which it does only for
/// a mutation that fails the client's checks, a part of these.
fn checked(
    s: &Services,
    r: pb::MutateRequest,
) -> Result<(TableName, Arc<dyn basalt_api::Table>, Mutation)> {
    let m = r
        .mutation
        .ok_or_else(|| Error::illegal("malformed request: no mutation"))?;
    let m = mutation_from_pb(m)?;
    let name = table(&r.table)?;
    check_region(s, &name, m.row(), r.region.as_deref())?;
    let t = s.conn.table(&name)?;
    t.check(&m)?;
    Ok((name, t, m))
}

/// Awaits a submitted call's outcome, recording it as the `mutate` operation.
///
/// # Errors
/// The batch's task failed before it answered.
pub(crate) async fn outcome(
    s: &Services,
    started: Instant,
    outcome: oneshot::Receiver<Outcome>,
) -> std::result::Result<Outcome, tonic::Status> {
    let metrics = Arc::clone(&s.metrics);
    let out = outcome
        .await
        .map_err(|_| tonic::Status::internal("the write's task failed before it answered"))?;
    metrics.record("mutate", started.elapsed(), out.is_ok());
    Ok(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

    use basalt_model::ops::{Get, Put};
    use basalt_model::{ColumnFamilyDescriptor, TableDescriptor};
    use basalt_node::Database;
    use basalt_proto::convert::mutation_to_pb;

    use super::*;
    use crate::metrics::RequestMetrics;
    use crate::mini_batch::tests::{
        answered, eventually, only_the_blocked_region_s_calls_wait, runtime,
        with_a_region_blocking_writes,
    };

    /// Services over a database with tables `t` and `u`, each of family `f`.
    fn services(dir: &std::path::Path) -> Services {
        let db = Database::open(dir).unwrap();
        for name in ["t", "u"] {
            let name = TableName::parse(name).unwrap();
            let desc = TableDescriptor::new(&name, [ColumnFamilyDescriptor::new("f")]);
            db.create_table(desc, &[]).unwrap();
        }
        services_over(db)
    }

    fn services_over(db: Database) -> Services {
        Services {
            conn: Arc::new(db.clone()),
            node: Some(db),
            hosted: None,
            scanners: Arc::new(basalt_api::leases::Scanners::new(
                std::time::Duration::from_secs(60),
            )),
            metrics: Arc::new(RequestMetrics::new(&[("native", &super::super::OPS)])),
            region_names: Arc::default(),
            mini_batches: Arc::default(),
        }
    }

    fn put(table: &str, row: &str, family: &str, value: &str) -> pb::MutateRequest {
        let m = Mutation::Put(Put::new(row.to_owned()).add(family.to_owned(), "q", value));
        pb::MutateRequest {
            table: table.to_owned(),
            mutation: Some(mutation_to_pb(&m)),
            region: None,
        }
    }

    fn value(s: &Services, table: &str, row: &str) -> Option<Vec<u8>> {
        let t = s.conn.table(&TableName::parse(table).unwrap()).unwrap();
        let r = t.get(Get::new(row.to_owned())).unwrap();
        r.cells.first().map(|c| c.value().to_vec())
    }

    #[test]
    fn each_call_of_a_batch_gets_its_own_outcome() {
        let dir = tempfile::tempdir().unwrap();
        let s = services(dir.path());
        let mut wrong_region = put("t", "r4", "f", "4");
        wrong_region.region = Some("no-such-region".to_owned());
        let requests = vec![
            put("t", "r1", "f", "1"),
            put("t", "r2", "x", "2"),
            pb::MutateRequest {
                table: "t".to_owned(),
                mutation: None,
                region: None,
            },
            put("u", "r1", "f", "u1"),
            put("t", "r1", "f", "later"),
            wrong_region,
            put("t", "r9", "f", "unheard"),
        ];
        let mut outcomes = Vec::new();
        let calls = requests
            .into_iter()
            .map(|request| {
                let (answer, outcome) = oneshot::channel();
                outcomes.push(outcome);
                Waiting { request, answer }
            })
            .collect();
        // The last caller has gone: its write is still made, and nothing fails for it.
        drop(outcomes.pop());
        write(&s, calls);
        let got: Vec<Outcome> = outcomes
            .into_iter()
            .map(|o| o.blocking_recv().unwrap())
            .collect();
        assert!(got[0].as_ref().is_ok_and(Option::is_none), "{:?}", got[0]);
        assert!(
            matches!(&got[1], Err(Error::NoSuchColumnFamily { family, .. }) if family == "x"),
            "{:?}",
            got[1]
        );
        assert!(
            matches!(&got[2], Err(Error::IllegalArgument(why)) if why.contains("no mutation")),
            "{:?}",
            got[2]
        );
        assert!(got[3].is_ok() && got[4].is_ok(), "{got:?}");
        assert!(
            matches!(&got[5], Err(Error::NotServingRegion(_))),
            "{:?}",
            got[5]
        );
        // Calls of one row are applied in the order they came; the refused ones not at all.
        assert_eq!(value(&s, "t", "r1").as_deref(), Some(&b"later"[..]));
        assert_eq!(value(&s, "u", "r1").as_deref(), Some(&b"u1"[..]));
        assert_eq!(value(&s, "t", "r2"), None);
        assert_eq!(value(&s, "t", "r4"), None);
        assert_eq!(value(&s, "t", "r9").as_deref(), Some(&b"unheard"[..]));
    }

    fn rows_of(s: &Services, table: &str) -> usize {
        let t = s.conn.table(&TableName::parse(table).unwrap()).unwrap();
        t.scan(basalt_model::ops::Scan::new()).unwrap().count()
    }

    #[test]
    fn puts_and_deletes_join_and_read_modify_writes_go_alone() {
        let joining = |m: Mutation| {
            joins(&pb::MutateRequest {
                table: "t".to_owned(),
                mutation: Some(mutation_to_pb(&m)),
                region: None,
            })
        };
        assert!(joining(Mutation::Put(Put::new("r").add("f", "q", "v"))));
        assert!(joining(Mutation::Delete(basalt_model::ops::Delete::new(
            "r"
        ))));
        let inc = basalt_model::ops::Increment::new("r").add("f", "q", 1);
        assert!(!joining(Mutation::Increment(inc)));
        let app = basalt_model::ops::Append::new("r").add("f", "q", "v");
        assert!(!joining(Mutation::Append(app)));
        let empty = pb::MutateRequest {
            table: "t".to_owned(),
            mutation: None,
            region: None,
        };
        assert!(!joins(&empty));
    }

    #[test]
    fn every_call_submitted_at_once_is_answered_written_and_counted() {
        let dir = tempfile::tempdir().unwrap();
        let s = services(dir.path());
        let (callers, each) = (16, 40);
        runtime(2).block_on(async {
            let tasks: Vec<_> = (0..callers)
                .map(|c| {
                    let s = s.clone();
                    tokio::spawn(async move {
                        for i in 0..each {
                            let r = put("t", &format!("c{c:02}-{i:03}"), "f", "v");
                            let submitted = submit(&s, r);
                            let out = outcome(&s, Instant::now(), submitted).await.unwrap();
                            assert!(out.is_ok(), "{out:?}");
                        }
                    })
                })
                .collect();
            for t in tasks {
                answered(t).await.unwrap();
            }
        });
        assert_eq!(rows_of(&s, "t"), callers * each);
        // Each call is counted as one `mutate`, as a call of its own was.
        assert_eq!(s.metrics.requests("mutate"), (callers * each) as u64);
        eventually("the writers' end", || s.mini_batches.0.writers() == 0);
    }

    #[test]
    fn a_region_blocking_writes_holds_up_only_its_own_calls() {
        let dir = tempfile::tempdir().unwrap();
        let db = with_a_region_blocking_writes(dir.path());
        let s = services_over(db.clone());
        let written =
            |o: oneshot::Receiver<Outcome>| async move { matches!(o.await, Ok(Ok(None))) };
        runtime(1).block_on(only_the_blocked_region_s_calls_wait(
            &db,
            || written(submit(&s, put("stall", "held", "f", "v"))),
            || written(submit(&s, put("free", "r", "f", "v"))),
        ));
        assert_eq!(value(&s, "stall", "held").as_deref(), Some(&b"v"[..]));
        assert_eq!(value(&s, "free", "r").as_deref(), Some(&b"v"[..]));
    }
}
