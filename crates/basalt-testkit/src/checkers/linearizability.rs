//! Linearizability of a recorded history: is there an order of the operations, each taking
//! effect at one instant between its call and its answer, in which a sequential model gives
//! every answer the clients saw?
//!
//! The search is Wing & Gong's, with Lowe's memoization. The calls and answers, sorted by
//! time, form a doubly linked list of events. Walking it, a call is tried as the next
//! operation to take effect: if the model allows its answer, the call and its answer are
//! lifted out of the list and the walk starts again from the front. Reaching an answer whose
//! call has not taken effect means the choices so far cannot work, so the last one is undone
//! (its events put back, the state before it restored) and the walk goes on past it. The
//! memo holds every (set of operations taken effect, model state) pair already explored:
//! two paths reaching the same pair have the same future, so the second is skipped. That is
//! what keeps a history with many concurrent clients from exploding.
//!
//! Timing rule: at equal times, calls come before answers, so two operations that touch
//! (one answered at `t`, the other called at `t`) count as concurrent. Clocks of a test's
//! clients are not finer than that, and the rule can only accept more histories, never
//! flag a correct database.
//!
//! Operations with no answer ([`Outcome::Unknown`]) may take effect at any time after their
//! call, or never: a request that timed out may still be applied by a server later, or may
//! have been lost with it.

use std::collections::{BTreeMap, HashSet};

use bytes::Bytes;

/// How an operation ended as its client saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome<O> {
    Returned(O),
    /// No answer (a timeout, a lost connection): it may or may not have taken effect.
    Unknown,
}

/// One operation of a history, as a client recorded it.
#[derive(Clone, Debug)]
pub struct Operation<I, O> {
    pub client: usize,
    pub input: I,
    /// When the call was sent (any monotonic unit, e.g. nanoseconds since the test began).
    pub call: u64,
    pub output: Outcome<O>,
    /// When the answer came; `None` for `Outcome::Unknown` (the op may take effect at any
    /// time after its call).
    pub ret: Option<u64>,
}

/// An operation of `M`'s inputs and outputs.
pub type OperationOf<M> = Operation<<M as Model>::Input, <M as Model>::Output>;

/// A sequential specification: what the object under test should answer when operations
/// reach it one at a time.
pub trait Model {
    type Input;
    type Output;
    type State: Clone + Eq + std::hash::Hash + std::fmt::Debug;

    fn init(&self) -> Self::State;

    /// The state after `input` answered `output`, or `None` if that answer is impossible
    /// from `state`. For `Outcome::Unknown`, the op's effect is applied with any answer
    /// accepted.
    fn step(
        &self,
        state: &Self::State,
        input: &Self::Input,
        output: &Outcome<Self::Output>,
    ) -> Option<Self::State>;
}

/// The result of a check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    Linearizable,
    /// No order explains the history; the index (into the given slice) of the operations
    /// in the longest linearizable prefix found, for the failure message.
    Illegal {
        longest: Vec<usize>,
    },
}

/// A set of operation indices, small enough to clone for every memo entry.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Bitset(Vec<u64>);

impl Bitset {
    fn new(len: usize) -> Bitset {
        Bitset(vec![0; len.div_ceil(64)])
    }

    fn set(&mut self, i: usize) {
        self.0[i / 64] |= 1 << (i % 64);
    }

    fn clear(&mut self, i: usize) {
        self.0[i / 64] &= !(1 << (i % 64));
    }
}

/// The front of the event list: a node that is never lifted, so every event has a
/// predecessor to relink to.
const HEAD: usize = 0;

/// A call or an answer of operation `op`, linked by indices into [`Events::nodes`].
#[derive(Clone, Debug)]
struct Event {
    op: usize,
    /// For a call, the node of its answer; `None` for an answer.
    answer: Option<usize>,
    prev: usize,
    next: Option<usize>,
}

/// The doubly linked list of events. Unlinking leaves a node's own links as they were, so
/// undoing removals in the reverse order puts every node back where it was.
#[derive(Debug)]
struct Events {
    nodes: Vec<Event>,
}

impl Events {
    /// Sorts the history's calls and answers by time into a list.
    ///
    /// # Panics
    /// When an operation is answered before it was called.
    fn new<I, O>(history: &[Operation<I, O>]) -> Events {
        // (time, rank, op): calls (0) before answers (1) at equal times; the answers of
        // unknown ops (2) at the very end, so reaching one means all known ops took effect.
        let mut keyed = Vec::with_capacity(history.len() * 2);
        for (i, op) in history.iter().enumerate() {
            keyed.push((op.call, 0u8, i));
            keyed.push(match (&op.output, op.ret) {
                (Outcome::Unknown, _) => (u64::MAX, 2, i),
                (Outcome::Returned(_), None) => (u64::MAX, 1, i),
                (Outcome::Returned(_), Some(ret)) => {
                    assert!(
                        ret >= op.call,
                        "operation {i} answered at {ret}, before its call at {}",
                        op.call
                    );
                    (ret, 1, i)
                }
            });
        }
        keyed.sort_unstable();
        let mut nodes = vec![Event {
            op: usize::MAX,
            answer: None,
            prev: HEAD,
            next: None,
        }];
        let mut call_node = vec![HEAD; history.len()];
        for (n, &(_, rank, op)) in keyed.iter().enumerate() {
            let at = n + 1;
            nodes[at - 1].next = Some(at);
            nodes.push(Event {
                op,
                answer: None,
                prev: at - 1,
                next: None,
            });
            if rank == 0 {
                call_node[op] = at;
            } else {
                nodes[call_node[op]].answer = Some(at);
            }
        }
        Events { nodes }
    }

    fn first(&self) -> Option<usize> {
        self.nodes[HEAD].next
    }

    fn unlink(&mut self, at: usize) {
        let Event { prev, next, .. } = self.nodes[at];
        self.nodes[prev].next = next;
        if let Some(next) = next {
            self.nodes[next].prev = prev;
        }
    }

    fn relink(&mut self, at: usize) {
        let Event { prev, next, .. } = self.nodes[at];
        self.nodes[prev].next = Some(at);
        if let Some(next) = next {
            self.nodes[next].prev = at;
        }
    }

    /// Takes a call and its answer out of the list: the operation has taken effect.
    fn lift(&mut self, call: usize) {
        let answer = self.nodes[call].answer.expect("only calls are lifted");
        self.unlink(call);
        self.unlink(answer);
    }

    /// Undoes [`Events::lift`]; lifts are undone last first, which keeps the links valid.
    fn unlift(&mut self, call: usize) {
        let answer = self.nodes[call].answer.expect("only calls are lifted");
        self.relink(answer);
        self.relink(call);
    }
}

/// Checks that the whole `history` of one object is linearizable under `model`.
///
/// # Panics
/// When an operation is answered before it was called.
pub fn check<M: Model>(model: &M, history: &[Operation<M::Input, M::Output>]) -> Verdict {
    let mut events = Events::new(history);
    let mut taken = Bitset::new(history.len());
    let mut memo: HashSet<(Bitset, M::State)> = HashSet::new();
    // The calls taken so far, in order, each with the state before it.
    let mut stack: Vec<(usize, M::State)> = Vec::new();
    let mut longest: Vec<usize> = Vec::new();
    let mut state = model.init();
    let mut cursor = events.first();
    while let Some(at) = cursor {
        let Event { op, answer, .. } = events.nodes[at];
        let operation = &history[op];
        if answer.is_some() {
            if let Some(next) = model.step(&state, &operation.input, &operation.output) {
                let mut next_taken = taken.clone();
                next_taken.set(op);
                if memo.insert((next_taken.clone(), next.clone())) {
                    taken = next_taken;
                    stack.push((at, std::mem::replace(&mut state, next)));
                    events.lift(at);
                    cursor = events.first();
                    continue;
                }
            }
            cursor = events.nodes[at].next;
        } else if matches!(operation.output, Outcome::Unknown) {
            // Every known op has taken effect; the unknown ones left never did.
            return Verdict::Linearizable;
        } else {
            if stack.len() > longest.len() {
                longest = stack
                    .iter()
                    .map(|&(call, _)| events.nodes[call].op)
                    .collect();
            }
            let Some((call, before)) = stack.pop() else {
                return Verdict::Illegal { longest };
            };
            state = before;
            taken.clear(events.nodes[call].op);
            events.unlift(call);
            cursor = events.nodes[call].next;
        }
    }
    Verdict::Linearizable
}

/// Checks each key's history on its own (linearizability is local/compositional),
/// returning the first key whose history is illegal with its verdict. The indices in an
/// illegal verdict are into `history` as given. On success, the number of keys checked.
pub fn check_each<K: Ord + Clone, M: Model>(
    model: &M,
    history: Vec<(K, OperationOf<M>)>,
) -> Result<usize, (K, Verdict)> {
    let mut by_key: BTreeMap<K, (Vec<usize>, Vec<OperationOf<M>>)> = BTreeMap::new();
    for (i, (key, op)) in history.into_iter().enumerate() {
        let (indices, ops) = by_key.entry(key).or_default();
        indices.push(i);
        ops.push(op);
    }
    let keys = by_key.len();
    for (key, (indices, ops)) in by_key {
        if let Verdict::Illegal { longest } = check(model, &ops) {
            let longest = longest.into_iter().map(|i| indices[i]).collect();
            return Err((key, Verdict::Illegal { longest }));
        }
    }
    Ok(keys)
}

/// One operation on a single HBase cell (a row's column).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CellOp {
    Get,
    Put(Bytes),
    Delete,
    /// HBase's checkAndMutate with an equality comparison: put `new` if the cell holds
    /// `expected` (None: if the cell is absent).
    CheckAndPut {
        expected: Option<Bytes>,
        new: Bytes,
    },
    /// HBase's increment: the cell is an 8-byte big-endian i64 (absent = 0); answers the
    /// new value.
    Increment(i64),
}

/// What a [`CellOp`] answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CellAnswer {
    Value(Option<Bytes>),
    Done,
    Applied(bool),
    Counter(i64),
}

/// The sequential model of one HBase cell: its state is the cell's current value.
#[derive(Clone, Copy, Debug, Default)]
pub struct CellModel;

impl CellModel {
    /// The state after `op` and what it answers, or `None` when `op` cannot run (an
    /// increment of a value that is not a counter: HBase refuses it).
    fn apply(state: &Option<Bytes>, op: &CellOp) -> Option<(Option<Bytes>, CellAnswer)> {
        Some(match op {
            CellOp::Get => (state.clone(), CellAnswer::Value(state.clone())),
            CellOp::Put(value) => (Some(value.clone()), CellAnswer::Done),
            CellOp::Delete => (None, CellAnswer::Done),
            CellOp::CheckAndPut { expected, new } => {
                if state == expected {
                    (Some(new.clone()), CellAnswer::Applied(true))
                } else {
                    (state.clone(), CellAnswer::Applied(false))
                }
            }
            CellOp::Increment(delta) => {
                let old = match state {
                    None => 0,
                    Some(value) => i64::from_be_bytes(value.as_ref().try_into().ok()?),
                };
                // HBase adds Java longs, which wrap.
                let new = old.wrapping_add(*delta);
                let bytes = Bytes::copy_from_slice(&new.to_be_bytes());
                (Some(bytes), CellAnswer::Counter(new))
            }
        })
    }
}

impl Model for CellModel {
    type Input = CellOp;
    type Output = CellAnswer;
    type State = Option<Bytes>;

    fn init(&self) -> Option<Bytes> {
        None
    }

    fn step(
        &self,
        state: &Option<Bytes>,
        input: &CellOp,
        output: &Outcome<CellAnswer>,
    ) -> Option<Option<Bytes>> {
        let (next, answer) = CellModel::apply(state, input)?;
        match output {
            Outcome::Unknown => Some(next),
            Outcome::Returned(seen) => (*seen == answer).then_some(next),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Op = Operation<CellOp, CellAnswer>;

    fn b(s: &str) -> Bytes {
        Bytes::copy_from_slice(s.as_bytes())
    }

    fn done(client: usize, input: CellOp, call: u64, ret: u64, answer: CellAnswer) -> Op {
        Operation {
            client,
            input,
            call,
            output: Outcome::Returned(answer),
            ret: Some(ret),
        }
    }

    fn lost(client: usize, input: CellOp, call: u64) -> Op {
        Operation {
            client,
            input,
            call,
            output: Outcome::Unknown,
            ret: None,
        }
    }

    fn put(client: usize, value: &str, call: u64, ret: u64) -> Op {
        done(client, CellOp::Put(b(value)), call, ret, CellAnswer::Done)
    }

    fn get(client: usize, seen: Option<&str>, call: u64, ret: u64) -> Op {
        done(
            client,
            CellOp::Get,
            call,
            ret,
            CellAnswer::Value(seen.map(b)),
        )
    }

    fn cas(client: usize, expected: Option<&str>, new: &str, call: u64, ret: u64, ok: bool) -> Op {
        let input = CellOp::CheckAndPut {
            expected: expected.map(b),
            new: b(new),
        };
        done(client, input, call, ret, CellAnswer::Applied(ok))
    }

    fn inc(client: usize, delta: i64, call: u64, ret: u64, answer: i64) -> Op {
        done(
            client,
            CellOp::Increment(delta),
            call,
            ret,
            CellAnswer::Counter(answer),
        )
    }

    fn illegal(history: &[Op]) -> Vec<usize> {
        match check(&CellModel, history) {
            Verdict::Illegal { longest } => longest,
            Verdict::Linearizable => panic!("accepted an illegal history: {history:?}"),
        }
    }

    #[test]
    fn sequential_history_is_legal() {
        let history = [
            get(0, None, 0, 1),
            put(0, "a", 2, 3),
            get(1, Some("a"), 4, 5),
            cas(0, Some("a"), "b", 6, 7, true),
            cas(1, Some("a"), "c", 8, 9, false),
            get(1, Some("b"), 10, 11),
            done(0, CellOp::Delete, 12, 13, CellAnswer::Done),
            get(0, None, 14, 15),
            cas(1, None, "d", 16, 17, true),
            done(0, CellOp::Delete, 18, 19, CellAnswer::Done),
            inc(0, 3, 20, 21, 3),
            inc(1, -1, 22, 23, 2),
        ];
        assert_eq!(check(&CellModel, &history), Verdict::Linearizable);
    }

    #[test]
    fn a_read_overlapping_a_write_may_see_either_value() {
        for seen in ["a", "b"] {
            let history = [
                put(0, "a", 0, 1),
                put(0, "b", 2, 10),
                get(1, Some(seen), 3, 4),
            ];
            assert_eq!(
                check(&CellModel, &history),
                Verdict::Linearizable,
                "saw {seen}"
            );
        }
        // Touching counts as overlapping: the write answered at 5, the read was sent at 5.
        let history = [
            put(0, "a", 0, 1),
            put(0, "b", 2, 5),
            get(1, Some("a"), 5, 6),
        ];
        assert_eq!(check(&CellModel, &history), Verdict::Linearizable);
    }

    #[test]
    fn a_stale_read_after_a_write_returned_is_illegal() {
        let history = [
            put(0, "a", 0, 1),
            put(0, "b", 2, 3),
            get(1, Some("a"), 4, 5),
        ];
        assert_eq!(illegal(&history), vec![0, 1]);
    }

    #[test]
    fn a_lost_write_is_illegal() {
        let history = [
            put(0, "a", 0, 1),
            get(1, Some("a"), 2, 3),
            put(0, "b", 4, 5),
            get(1, Some("a"), 6, 7),
        ];
        assert_eq!(illegal(&history), vec![0, 1, 2]);
    }

    #[test]
    fn an_unanswered_write_may_or_may_not_take_effect() {
        for seen in ["a", "b"] {
            let history = [
                put(0, "a", 0, 1),
                lost(0, CellOp::Put(b("b")), 2),
                get(1, Some(seen), 5, 6),
            ];
            assert_eq!(
                check(&CellModel, &history),
                Verdict::Linearizable,
                "saw {seen}"
            );
        }
    }

    #[test]
    fn an_unanswered_write_once_seen_stays_seen() {
        let history = [
            put(0, "a", 0, 1),
            lost(0, CellOp::Put(b("b")), 2),
            get(1, Some("b"), 3, 4),
            get(1, Some("a"), 5, 6),
        ];
        assert_eq!(illegal(&history), vec![0, 1, 2]);
    }

    #[test]
    fn two_check_and_puts_cannot_both_win() {
        let both = [
            cas(0, None, "x", 0, 10, true),
            cas(1, None, "y", 1, 9, true),
        ];
        assert_eq!(illegal(&both).len(), 1);
        let one = [
            cas(0, None, "x", 0, 10, true),
            cas(1, None, "y", 1, 9, false),
        ];
        assert_eq!(check(&CellModel, &one), Verdict::Linearizable);
    }

    #[test]
    fn increments_skip_a_value_only_through_an_unanswered_one() {
        let skipped = [inc(0, 1, 0, 1, 1), inc(0, 1, 2, 3, 3)];
        assert_eq!(illegal(&skipped), vec![0]);
        let explained = [
            lost(1, CellOp::Increment(1), 0),
            inc(0, 1, 0, 1, 1),
            inc(0, 1, 2, 3, 3),
        ];
        assert_eq!(check(&CellModel, &explained), Verdict::Linearizable);
    }

    #[test]
    fn impossible_answers_are_illegal() {
        // An increment of a value that is not a counter, and an answer of the wrong kind.
        assert_eq!(illegal(&[put(0, "abc", 0, 1), inc(0, 1, 2, 3, 1)]), vec![0]);
        let wrong_kind = done(0, CellOp::Put(b("a")), 0, 1, CellAnswer::Applied(true));
        assert_eq!(illegal(&[wrong_kind]), Vec::<usize>::new());
    }

    /// splitmix64, for reproducible simulations without a dependency.
    struct Rng(u64);

    impl Rng {
        fn below(&mut self, n: u64) -> u64 {
            self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            (z ^ (z >> 31)) % n
        }
    }

    /// What a real cell does with `op`, written apart from the model it checks.
    fn run(cell: &mut Option<Bytes>, op: &CellOp) -> CellAnswer {
        match op {
            CellOp::Get => CellAnswer::Value(cell.clone()),
            CellOp::Put(v) => {
                *cell = Some(v.clone());
                CellAnswer::Done
            }
            CellOp::Delete => {
                *cell = None;
                CellAnswer::Done
            }
            CellOp::CheckAndPut { expected, new } => {
                let hit = cell == expected;
                if hit {
                    *cell = Some(new.clone());
                }
                CellAnswer::Applied(hit)
            }
            CellOp::Increment(d) => {
                let old = cell
                    .as_ref()
                    .map_or(0, |v| i64::from_be_bytes(v[..].try_into().unwrap()));
                *cell = Some(Bytes::copy_from_slice(&(old + d).to_be_bytes()));
                CellAnswer::Counter(old + d)
            }
        }
    }

    fn random_op(rng: &mut Rng, now: u64, recent: &[Bytes]) -> CellOp {
        let counter = |n: u64| Bytes::copy_from_slice(&n.to_be_bytes());
        let recent_or_none = |rng: &mut Rng| {
            let i = rng.below(recent.len() as u64 + 1) as usize;
            recent.get(i).cloned()
        };
        match rng.below(10) {
            0..=3 => CellOp::Get,
            4..=5 => CellOp::Put(counter(now)),
            6 => CellOp::Delete,
            7..=8 => CellOp::CheckAndPut {
                expected: recent_or_none(rng),
                new: counter(now),
            },
            _ => CellOp::Increment(1 + rng.below(3) as i64),
        }
    }

    /// Where a simulated client's operation is.
    #[derive(Clone, Copy)]
    enum Phase {
        Idle,
        Sent(usize),
        Applied(usize),
    }

    /// A history a correct cell produces: `clients` clients each send an operation, the
    /// cell applies it at some later instant, and the answer arrives later still, with
    /// other clients' events interleaved at random. One in `loss` sends or answers is lost.
    fn simulate(seed: u64, clients: usize, ops: usize, loss: u64) -> Vec<Op> {
        let mut rng = Rng(seed);
        let (mut cell, mut history, mut recent) = (None, Vec::<Op>::new(), Vec::new());
        let mut answers = Vec::new();
        let mut phases = vec![Phase::Idle; clients];
        let mut now = 0;
        while history.len() < ops || phases.iter().any(|p| !matches!(p, Phase::Idle)) {
            now += 1;
            let c = rng.below(clients as u64) as usize;
            phases[c] = match phases[c] {
                Phase::Idle if history.len() < ops => {
                    history.push(lost(c, random_op(&mut rng, now, &recent), now));
                    answers.push(None);
                    Phase::Sent(history.len() - 1)
                }
                Phase::Idle => Phase::Idle,
                Phase::Sent(_) if rng.below(loss) == 0 => Phase::Idle,
                Phase::Sent(i) => {
                    answers[i] = Some(run(&mut cell, &history[i].input));
                    recent.extend(cell.clone());
                    let keep = recent.len().saturating_sub(4);
                    recent.drain(..keep);
                    Phase::Applied(i)
                }
                Phase::Applied(_) if rng.below(loss) == 0 => Phase::Idle,
                Phase::Applied(i) => {
                    history[i].output = Outcome::Returned(answers[i].take().unwrap());
                    history[i].ret = Some(now);
                    Phase::Idle
                }
            };
        }
        history
    }

    #[test]
    fn a_long_concurrent_history_is_proved_legal() {
        for seed in 0..4 {
            let history = simulate(seed, 8, 200, 40);
            assert_eq!(history.len(), 200);
            assert!(history.iter().any(|op| op.output == Outcome::Unknown));
            assert_eq!(
                check(&CellModel, &history),
                Verdict::Linearizable,
                "seed {seed}"
            );
        }
    }

    #[test]
    fn a_long_history_with_one_impossible_read_is_illegal() {
        let mut history = simulate(7, 8, 200, 40);
        let bad = history
            .iter()
            .rposition(|op| op.input == CellOp::Get && op.output != Outcome::Unknown)
            .unwrap();
        history[bad].output = Outcome::Returned(CellAnswer::Value(Some(b("never written"))));
        let longest = illegal(&history);
        assert!(!longest.contains(&bad));
        assert!(longest.len() < history.len());
    }

    #[test]
    fn check_each_names_the_bad_key() {
        let mut history = Vec::new();
        for key in ["r1", "r2", "r3"] {
            history.push((key, put(0, "a", 0, 1)));
            history.push((key, put(1, "b", 2, 3)));
        }
        history.push(("r1", get(2, Some("b"), 4, 5)));
        history.push(("r2", get(2, Some("a"), 4, 5)));
        history.push(("r3", get(2, Some("b"), 4, 5)));
        assert_eq!(check_each(&CellModel, history[..6].to_vec()), Ok(3));
        // r2's puts are at 2 and 3 in the whole history.
        let err = check_each(&CellModel, history).unwrap_err();
        assert_eq!(
            err,
            (
                "r2",
                Verdict::Illegal {
                    longest: vec![2, 3]
                }
            )
        );
    }
}
