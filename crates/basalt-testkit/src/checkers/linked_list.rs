//! A big linked list in the manner of HBase's IntegrationTestBigLinkedList, simplified.
//!
//! Each generator writes nodes one at a time. A node's row key is random, so the writes
//! spread over every region, and its value names the previous node the same generator
//! wrote (the first node names none). A generator writes node i+1 only after node i was
//! acknowledged, so a node present whose predecessor is missing means an acknowledged write
//! was lost. A full scan at the end finds such holes without any record of timings, which
//! lets a failover test write far more than a linearizability check could search.
//!
//! What a scan cannot see as a hole is the loss of a generator's newest node (nobody points
//! at it yet), so [`Report::check`] also walks each generator's chain back from its last
//! acknowledged node and counts it.

use std::collections::{BTreeMap, BTreeSet};

use bytes::Bytes;

/// The value of a generator's first node.
const FIRST: &[u8] = b"first";
/// The prefix of every other node's value, before the previous node's key.
const PREV: &[u8] = b"prev:";

/// One writer of the list: it hands out nodes and learns which writes were acknowledged.
#[derive(Clone, Debug)]
pub struct Generator {
    id: u32,
    /// splitmix64 state: keys must be reproducible from a seed, and the crate takes no
    /// random-number dependency for this.
    rng: u64,
    /// The key of the node [`Generator::next_node`] hands out.
    next: Bytes,
    prev: Option<Bytes>,
    acknowledged: u64,
}

impl Generator {
    /// A generator whose keys follow from `seed` and `id` (distinct ids give distinct keys
    /// for the same seed).
    #[must_use]
    pub fn new(id: u32, seed: u64) -> Generator {
        let rng = seed
            ^ u64::from(id)
                .wrapping_mul(0xd1b5_4a32_d192_ed03)
                .rotate_left(17);
        let mut generator = Generator {
            id,
            rng,
            next: Bytes::new(),
            prev: None,
            acknowledged: 0,
        };
        generator.next = generator.fresh_key();
        generator
    }

    /// This generator's id, for messages.
    #[must_use]
    pub fn id(&self) -> u32 {
        self.id
    }

    /// "ll" and 16 random hex digits: unique in practice, and spread over the key space.
    fn fresh_key(&mut self) -> Bytes {
        self.rng = self.rng.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        Bytes::from(format!("ll{:016x}", z ^ (z >> 31)))
    }

    /// The next node: its row key and its value (see [`encode_prev`]). Asking again gives
    /// the same node until it is acknowledged or abandoned, so a retry writes the same row.
    #[must_use]
    pub fn next_node(&self) -> (Bytes, Bytes) {
        (self.next.clone(), encode_prev(self.prev.as_deref()))
    }

    /// The write of the node `next_node` returned was acknowledged: later nodes point at it.
    ///
    /// # Panics
    /// When `key` is not the node `next_node` hands out: the test lost track of its writes.
    pub fn acknowledged(&mut self, key: Bytes) {
        assert_eq!(
            key, self.next,
            "generator {} acknowledged a node it did not hand out",
            self.id
        );
        self.prev = Some(key);
        self.acknowledged += 1;
        self.next = self.fresh_key();
    }

    /// A write that was not acknowledged (an error or no answer): the generator moves on to
    /// a fresh key but keeps pointing at the last acknowledged node, so the verifier will
    /// see the possibly-written node as unreferenced, never as a hole.
    pub fn abandoned(&mut self) {
        self.next = self.fresh_key();
    }

    /// How many of this generator's writes were acknowledged.
    #[must_use]
    pub fn acknowledged_count(&self) -> u64 {
        self.acknowledged
    }

    /// The last acknowledged node, which nothing points at yet.
    #[must_use]
    pub fn head(&self) -> Option<&Bytes> {
        self.prev.as_ref()
    }
}

/// A node's value: `first` for a generator's first node, `prev:` and the previous node's
/// key otherwise.
#[must_use]
pub fn encode_prev(prev: Option<&[u8]>) -> Bytes {
    match prev {
        None => Bytes::from_static(FIRST),
        Some(key) => [PREV, key].concat().into(),
    }
}

/// The previous node's key named by a node's value (`None` for a first node).
///
/// # Errors
/// When `value` is not a value [`encode_prev`] makes.
pub fn decode_prev(value: &[u8]) -> Result<Option<Bytes>, String> {
    if value == FIRST {
        return Ok(None);
    }
    match value.strip_prefix(PREV) {
        Some(key) if !key.is_empty() => Ok(Some(Bytes::copy_from_slice(key))),
        _ => Err(format!(
            "not a linked-list node: {:?}",
            String::from_utf8_lossy(value)
        )),
    }
}

/// What a scan of the list found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// Nodes read back.
    pub defined: usize,
    /// Nodes read back that some node points at.
    pub referenced: usize,
    /// Nodes nobody points at: each generator's head, and writes that were not
    /// acknowledged.
    pub unreferenced: Vec<Bytes>,
    /// Keys some node points at that are not there: lost writes (holes).
    pub undefined: Vec<Bytes>,
    /// Values that do not decode.
    pub malformed: Vec<Bytes>,
    /// Each well-formed node's predecessor, for walking the chains.
    pub links: BTreeMap<Bytes, Option<Bytes>>,
}

/// Verifies the nodes read back (row key, value), e.g. a full scan of the table.
pub fn verify(nodes: impl IntoIterator<Item = (Bytes, Bytes)>) -> Report {
    let mut report = Report::default();
    let mut malformed = BTreeSet::new();
    for (key, value) in nodes {
        match decode_prev(&value) {
            Ok(prev) => {
                malformed.remove(&key);
                report.links.insert(key, prev);
            }
            Err(_) => {
                report.links.remove(&key);
                malformed.insert(key);
            }
        }
    }
    let targets: BTreeSet<&Bytes> = report.links.values().flatten().collect();
    let is_defined = |key: &Bytes| report.links.contains_key(key) || malformed.contains(key);
    report.defined = report.links.len() + malformed.len();
    report.referenced = targets.iter().filter(|key| is_defined(key)).count();
    report.undefined = targets
        .iter()
        .filter(|key| !is_defined(key))
        .map(|&k| k.clone())
        .collect();
    let mut unreferenced: Vec<Bytes> = report
        .links
        .keys()
        .chain(&malformed)
        .filter(|key| !targets.contains(key))
        .cloned()
        .collect();
    unreferenced.sort();
    report.unreferenced = unreferenced;
    report.malformed = malformed.into_iter().collect();
    report
}

/// A key for messages: the keys are ASCII, anything else is shown escaped.
fn show(key: &[u8]) -> String {
    key.escape_ascii().to_string()
}

impl Report {
    /// Checks there are no holes, nothing malformed, and every generator's acknowledged head
    /// and count are accounted for (each generator's head present and the chain from it
    /// walks back `acknowledged_count` nodes).
    ///
    /// # Errors
    /// A message naming the first problem found.
    pub fn check(&self, generators: &[Generator]) -> Result<(), String> {
        if let Some(key) = self.malformed.first() {
            let n = self.malformed.len();
            return Err(format!("{n} malformed node(s), the first {}", show(key)));
        }
        if let Some(key) = self.undefined.first() {
            let by = self
                .links
                .iter()
                .find(|(_, prev)| prev.as_ref() == Some(key));
            let by = by.map_or_else(String::new, |(k, _)| format!(" (named by {})", show(k)));
            let n = self.undefined.len();
            return Err(format!(
                "{n} acknowledged write(s) lost, the first {}{by}",
                show(key)
            ));
        }
        generators.iter().try_for_each(|g| self.check_chain(g))
    }

    /// Walks `generator`'s chain back from its head, which must hold exactly its
    /// acknowledged nodes: a missing head is a lost write no hole shows.
    fn check_chain(&self, generator: &Generator) -> Result<(), String> {
        let (id, expected) = (generator.id, generator.acknowledged);
        let Some(mut at) = generator.head().cloned() else {
            return Ok(());
        };
        let mut walked = 0u64;
        loop {
            let Some(prev) = self.links.get(&at) else {
                return Err(format!(
                    "generator {id}: acknowledged node {} ({walked} back from its head) is missing",
                    show(&at)
                ));
            };
            walked += 1;
            if walked > expected {
                return Err(format!(
                    "generator {id}: its chain is longer than its {expected} acknowledged nodes"
                ));
            }
            match prev {
                Some(prev) => at = prev.clone(),
                None => break,
            }
        }
        if walked == expected {
            Ok(())
        } else {
            Err(format!(
                "generator {id}: its chain holds {walked} of {expected} acknowledged nodes"
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes `count` acknowledged nodes of `generator` into `table`; returns their keys.
    fn write(
        generator: &mut Generator,
        table: &mut BTreeMap<Bytes, Bytes>,
        count: usize,
    ) -> Vec<Bytes> {
        (0..count)
            .map(|_| {
                let (key, value) = generator.next_node();
                table.insert(key.clone(), value);
                generator.acknowledged(key.clone());
                key
            })
            .collect()
    }

    fn three_lists() -> (Vec<Generator>, BTreeMap<Bytes, Bytes>, Vec<Vec<Bytes>>) {
        let mut generators: Vec<Generator> = (0..3).map(|id| Generator::new(id, 42)).collect();
        let mut table = BTreeMap::new();
        let keys = generators
            .iter_mut()
            .map(|g| write(g, &mut table, 5))
            .collect();
        (generators, table, keys)
    }

    #[test]
    fn values_round_trip() {
        assert_eq!(decode_prev(&encode_prev(None)), Ok(None));
        let key = Bytes::from_static(b"ll0123");
        assert_eq!(decode_prev(&encode_prev(Some(&key))), Ok(Some(key)));
        assert!(decode_prev(b"prev:").is_err());
        assert!(decode_prev(b"").is_err());
    }

    #[test]
    fn an_intact_list_verifies_clean() {
        let (generators, table, keys) = three_lists();
        let report = verify(table.clone());
        let mut heads: Vec<Bytes> = generators
            .iter()
            .map(|g| g.head().unwrap().clone())
            .collect();
        heads.sort();
        assert_eq!(report.defined, 15);
        assert_eq!(report.referenced, 12);
        assert_eq!(report.unreferenced, heads);
        assert!(report.undefined.is_empty() && report.malformed.is_empty());
        assert_eq!(report.check(&generators), Ok(()));
        assert_eq!(generators[1].head(), keys[1].last());
        assert_eq!(generators[1].acknowledged_count(), 5);
    }

    #[test]
    fn a_lost_middle_node_is_a_hole() {
        let (generators, mut table, keys) = three_lists();
        table.remove(&keys[1][2]);
        let report = verify(table);
        assert_eq!(report.undefined, vec![keys[1][2].clone()]);
        let err = report.check(&generators).unwrap_err();
        assert!(err.contains(&show(&keys[1][2])), "{err}");
        assert!(err.contains(&show(&keys[1][3])), "{err}");
    }

    #[test]
    fn a_lost_head_fails_the_chain_walk() {
        let (generators, mut table, keys) = three_lists();
        table.remove(&keys[2][4]);
        let report = verify(table);
        assert!(report.undefined.is_empty());
        let err = report.check(&generators).unwrap_err();
        assert!(
            err.contains("generator 2") && err.contains(&show(&keys[2][4])),
            "{err}"
        );
    }

    #[test]
    fn an_abandoned_write_is_unreferenced_not_a_hole() {
        let (mut generators, mut table, _) = three_lists();
        let (maybe, value) = generators[0].next_node();
        table.insert(maybe.clone(), value);
        generators[0].abandoned();
        assert_ne!(generators[0].next_node().0, maybe);
        let after = write(&mut generators[0], &mut table, 2);
        let report = verify(table);
        assert!(report.undefined.is_empty());
        assert!(report.unreferenced.contains(&maybe));
        assert!(report.unreferenced.contains(&after[1]));
        assert_eq!(report.unreferenced.len(), 4);
        assert_eq!(generators[0].acknowledged_count(), 7);
        assert_eq!(report.check(&generators), Ok(()));
    }

    #[test]
    fn a_malformed_value_is_reported() {
        let (generators, mut table, _) = three_lists();
        let bad = Bytes::from_static(b"llbad");
        table.insert(bad.clone(), Bytes::from_static(b"garbage"));
        let report = verify(table);
        assert_eq!(report.malformed, vec![bad]);
        assert_eq!(report.defined, 16);
        let err = report.check(&generators).unwrap_err();
        assert!(err.contains("malformed") && err.contains("llbad"), "{err}");
    }
}
