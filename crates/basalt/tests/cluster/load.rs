//! The failover tests' load and its checkers. Eight writers run SYNC_WAL puts, increments
//! and check-and-mutates through the client, each on rows of its own, and a ninth task
//! writes a big linked list. Afterwards:
//! - the acknowledged-write ledger: every put a writer saw acknowledged is there, each
//!   counter holds at least its acknowledged increments and at most those attempted, and
//!   each check-and-mutate row holds exactly the value its history leads to;
//! - per-cell linearizability of everything the writers saw (with a final read of each
//!   cell), by the Wing-Gong checker;
//! - the linked list: no node names a node that is not there, and each generator's chain
//!   holds every node it saw acknowledged.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use basalt_client::{Connection, Table};
use basalt_model::ops::{CheckAndMutate, CompareOp, Get, Increment, Put, Scan};
use basalt_testkit::checkers::linearizability::{
    check_each, CellAnswer, CellModel, CellOp, Operation, Outcome,
};
use basalt_testkit::checkers::linked_list::{self, Generator};
use bytes::Bytes;

/// A history entry: the cell (`row/qualifier`) and what was asked and answered.
type Entry = (String, Operation<CellOp, CellAnswer>);

/// What one writer saw.
#[derive(Debug, Default)]
pub struct Ledger {
    /// Its counter's row and its check-and-mutate row.
    counter: String,
    cam_row: String,
    /// Rows whose put was acknowledged.
    puts: Vec<String>,
    /// Increments acknowledged, and those whose outcome is unknown (an error).
    increments: (u64, u64),
    /// The value this writer's check-and-mutate row must hold.
    cam: u64,
    errors: usize,
    history: Vec<Entry>,
}

/// What a phase's load saw: the writers' ledgers and the linked list.
pub struct Load {
    pub ledgers: Vec<Ledger>,
    list: Generator,
    list_keys: Vec<Bytes>,
    began: Instant,
}

fn key(i: usize) -> String {
    format!("k{:05}", i * 7919 % 100_000)
}

/// Nanoseconds since the load began: the history's clock.
fn at(began: Instant) -> u64 {
    u64::try_from(began.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

struct Writer {
    t: Table,
    w: usize,
    began: Instant,
    l: Ledger,
}

impl Writer {
    /// Records an operation called at `call`: a failed read changed nothing and is left
    /// out; a failed write may or may not have taken effect.
    fn record(&mut self, cell: String, input: CellOp, call: u64, answer: Option<CellAnswer>) {
        let (output, ret) = match answer {
            Some(a) => (Outcome::Returned(a), Some(at(self.began))),
            None if input == CellOp::Get => return,
            None => (Outcome::Unknown, None),
        };
        let op = Operation {
            client: self.w,
            input,
            call,
            output,
            ret,
        };
        self.l.history.push((cell, op));
    }

    async fn increment(&mut self) {
        let call = at(self.began);
        let inc = Increment::new(self.l.counter.clone()).add("f", "n", 1);
        let answer = match self.t.increment(inc).await {
            Ok(r) => {
                self.l.increments.0 += 1;
                let v = r.value(b"f", b"n").unwrap();
                Some(CellAnswer::Counter(i64::from_be_bytes(
                    v[..].try_into().unwrap(),
                )))
            }
            Err(_) => {
                self.l.increments.1 += 1;
                self.l.errors += 1;
                None
            }
        };
        let cell = format!("{}/n", self.l.counter);
        self.record(cell, CellOp::Increment(1), call, answer);
    }

    /// Reads the check-and-mutate row (to learn what one in doubt did).
    async fn read_cam(&mut self) -> Option<u64> {
        let call = at(self.began);
        let row = self.l.cam_row.clone();
        let got = self.t.get(Get::new(row.clone())).await.ok();
        let value = got
            .as_ref()
            .map(|r| r.value(b"f", b"v").map(bytes::Bytes::copy_from_slice));
        self.record(
            format!("{row}/v"),
            CellOp::Get,
            call,
            value.clone().map(CellAnswer::Value),
        );
        Some(value?.map_or(0, |v| std::str::from_utf8(&v).unwrap().parse().unwrap()))
    }

    /// The next check-and-mutate: the row from its value to the next. Returns whether its
    /// outcome is in doubt.
    async fn check_and_mutate(&mut self) -> bool {
        let row = self.l.cam_row.clone();
        let next = (self.l.cam + 1).to_string();
        let (cam, expected) = if self.l.cam == 0 {
            (CheckAndMutate::if_not_exists(row.clone(), "f", "v"), None)
        } else {
            let now = self.l.cam.to_string();
            let c =
                CheckAndMutate::if_matches(row.clone(), "f", "v", CompareOp::Equal, now.clone());
            (c, Some(Bytes::from(now)))
        };
        let input = CellOp::CheckAndPut {
            expected,
            new: Bytes::from(next.clone()),
        };
        let call = at(self.began);
        let put = Put::new(row.clone()).add("f", "v", next);
        let done = self.t.check_and_mutate(cam.then_put(put)).await;
        let answer = match done {
            Ok(true) => {
                self.l.cam += 1;
                Some(CellAnswer::Applied(true))
            }
            Ok(false) => panic!(
                "writer {}: {row} is not at {} though only it writes the row",
                self.w, self.l.cam
            ),
            Err(_) => {
                self.l.errors += 1;
                None
            }
        };
        let doubt = answer.is_none();
        self.record(format!("{row}/v"), input, call, answer);
        doubt
    }

    async fn put(&mut self, n: usize, phase: usize) {
        let row = format!("{}-p{phase}-w{}", key(n), self.w);
        let call = at(self.began);
        let done = self.t.put(Put::new(row.clone()).add("f", "q", "x")).await;
        let answer = done.is_ok().then_some(CellAnswer::Done);
        match done {
            Ok(()) => self.l.puts.push(row.clone()),
            Err(_) => self.l.errors += 1,
        }
        self.record(
            format!("{row}/q"),
            CellOp::Put(Bytes::from_static(b"x")),
            call,
            answer,
        );
    }
}

async fn write(t: Table, w: usize, phase: usize, began: Instant, stop: &AtomicBool) -> Ledger {
    let mut wr = Writer {
        t,
        w,
        began,
        l: Ledger {
            counter: format!("{}-ctr-p{phase}-w{w}", key(w)),
            cam_row: format!("{}-cam-p{phase}-w{w}", key(w + 8)),
            ..Ledger::default()
        },
    };
    let mut in_doubt = false;
    let mut n = 0usize;
    while !stop.load(Ordering::SeqCst) {
        n += 1;
        match n % 4 {
            0 => wr.increment().await,
            1 => {
                if in_doubt {
                    // Learn what a check-and-mutate in doubt did before the next one.
                    match wr.read_cam().await {
                        Some(v) => wr.l.cam = v,
                        None => continue,
                    }
                }
                in_doubt = wr.check_and_mutate().await;
            }
            _ => wr.put(n, phase).await,
        }
    }
    if in_doubt {
        wr.l.cam = wr
            .read_cam()
            .await
            .expect("the row reads once the cluster has recovered");
    }
    wr.l
}

/// A linked-list node's row: its key behind a prefix that spreads the nodes over the
/// regions.
fn list_row(node: &[u8]) -> Bytes {
    let spread = node.iter().fold(0usize, |h, b| {
        h.wrapping_mul(31).wrapping_add(usize::from(*b))
    });
    let mut row = format!("{}-", key(spread % 100_000)).into_bytes();
    row.extend_from_slice(node);
    Bytes::from(row)
}

/// The linked list's generator: a node at a time, each after the one before it was
/// acknowledged. Returns the generator and every key it wrote or tried to.
async fn write_list(t: Table, phase: usize, stop: &AtomicBool) -> (Generator, Vec<Bytes>) {
    let mut g = Generator::new(u32::try_from(phase).unwrap(), phase as u64);
    let mut keys = Vec::new();
    while !stop.load(Ordering::SeqCst) {
        let (key, value) = g.next_node();
        keys.push(key.clone());
        match t.put(Put::new(list_row(&key)).add("f", "ll", value)).await {
            Ok(()) => g.acknowledged(key),
            Err(_) => g.abandoned(),
        }
    }
    (g, keys)
}

/// Runs the load of `phase` for a second, then `disrupt`, then a second more.
pub async fn under_load<F: std::future::Future<Output = ()>>(
    conn: &Connection,
    phase: usize,
    disrupt: F,
) -> Load {
    let stop = Arc::new(AtomicBool::new(false));
    let began = Instant::now();
    let writing: Vec<_> = (0..8)
        .map(|w| {
            let t = conn.table("f").unwrap();
            let stop = Arc::clone(&stop);
            tokio::spawn(async move { write(t, w, phase, began, &stop).await })
        })
        .collect();
    let listing = {
        let t = conn.table("f").unwrap();
        let stop = Arc::clone(&stop);
        tokio::spawn(async move { write_list(t, phase, &stop).await })
    };
    tokio::time::sleep(Duration::from_millis(1000)).await; // load running when it happens
    disrupt.await;
    tokio::time::sleep(Duration::from_millis(1000)).await; // writes after recovery too
    stop.store(true, Ordering::SeqCst);
    let mut ledgers = Vec::new();
    for w in writing {
        ledgers.push(w.await.unwrap());
    }
    let (list, list_keys) = listing.await.unwrap();
    Load {
        ledgers,
        list,
        list_keys,
        began,
    }
}

async fn cam_value(t: &Table, row: &str) -> Option<u64> {
    let r = t.get(Get::new(row.to_owned())).await.ok()?;
    Some(
        r.value(b"f", b"v")
            .map_or(0, |v| std::str::from_utf8(v).unwrap().parse().unwrap()),
    )
}

async fn counter_value(t: &Table, row: &str) -> u64 {
    let r = t.get(Get::new(row.to_owned())).await.unwrap();
    r.value(b"f", b"n")
        .map_or(0, |v| u64::from_be_bytes(v[..].try_into().unwrap()))
}

impl Load {
    /// Every checker: the ledger, linearizability, the linked list.
    pub async fn check(&self, conn: &Connection) {
        let t = conn.table("f").unwrap();
        self.check_ledgers(&t).await;
        self.check_history(&t).await;
        self.check_list(&t).await;
    }

    async fn check_ledgers(&self, t: &Table) {
        let rows: BTreeSet<Bytes> = t
            .scan(Scan::new())
            .await
            .unwrap()
            .collect()
            .await
            .unwrap()
            .into_iter()
            .map(|r| r.row_bytes())
            .collect();
        let mut lost = Vec::new();
        for (w, l) in self.ledgers.iter().enumerate() {
            lost.extend(
                l.puts
                    .iter()
                    .filter(|p| !rows.contains(p.as_bytes()))
                    .cloned(),
            );
            let stored = counter_value(t, &l.counter).await;
            let (acked, doubt) = l.increments;
            assert!(
                (acked..=acked + doubt).contains(&stored),
                "writer {w}: counter {stored}, {acked} increments acknowledged, {doubt} in doubt"
            );
            let cam = cam_value(t, &l.cam_row).await.unwrap();
            assert_eq!(cam, l.cam, "writer {w}: its check-and-mutate row");
        }
        let acked: usize = self.ledgers.iter().map(|l| l.puts.len()).sum();
        assert!(
            lost.is_empty(),
            "{} of {acked} acknowledged puts lost: {:?}",
            lost.len(),
            &lost[..lost.len().min(10)]
        );
        assert!(acked > 100, "only {acked} puts acknowledged");
    }

    /// Reads every cell once more, then checks each cell's history.
    async fn check_history(&self, t: &Table) {
        let mut history: Vec<Entry> = self
            .ledgers
            .iter()
            .flat_map(|l| l.history.clone())
            .collect();
        let cells: BTreeSet<String> = history.iter().map(|(c, _)| c.clone()).collect();
        for cell in cells {
            let (row, q) = cell.rsplit_once('/').unwrap();
            let call = at(self.began);
            let r = t.get(Get::new(row.to_owned())).await.unwrap();
            let value = r
                .value(b"f", q.as_bytes())
                .map(bytes::Bytes::copy_from_slice);
            let op = Operation {
                client: usize::MAX,
                input: CellOp::Get,
                call,
                output: Outcome::Returned(CellAnswer::Value(value)),
                ret: Some(at(self.began)),
            };
            history.push((cell, op));
        }
        let ops = history.len();
        if let Err((cell, verdict)) = check_each(&CellModel, history.clone()) {
            let of: Vec<String> = history
                .iter()
                .filter(|(c, _)| *c == cell)
                .map(|(_, op)| format!("{op:?}"))
                .collect();
            panic!(
                "{cell} is not linearizable ({verdict:?}):\n{}",
                of.join("\n")
            );
        }
        eprintln!("{ops} operations linearizable");
    }

    async fn check_list(&self, t: &Table) {
        let mut nodes = Vec::new();
        for key in &self.list_keys {
            let r = t.get(Get::new(list_row(key))).await.unwrap();
            if let Some(v) = r.value(b"f", b"ll") {
                nodes.push((key.clone(), bytes::Bytes::copy_from_slice(v)));
            }
        }
        let report = linked_list::verify(nodes);
        if let Err(e) = report.check(std::slice::from_ref(&self.list)) {
            panic!("the linked list: {e}");
        }
        assert!(
            self.list.acknowledged_count() > 10,
            "only {} list nodes acknowledged",
            self.list.acknowledged_count()
        );
    }
}
