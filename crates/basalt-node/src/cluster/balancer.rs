//! The count-based balancer (HBase's `SimpleLoadBalancer`): every server ends with the
//! floor or the ceiling of the mean number of regions.

use std::collections::BTreeMap;

/// One region to move.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Move {
    pub region: u64,
    pub from: String,
    pub to: String,
}

/// The moves that leave `servers` (each with its regions) within one region of each other,
/// moving as few regions as it can: each move takes a region from a server with the most
/// to one with the fewest, until they differ by at most one. Ties go to the server first by
/// name, so a plan is the same for the same input.
#[must_use]
pub fn plan_moves(servers: &BTreeMap<String, Vec<u64>>) -> Vec<Move> {
    let mut load: BTreeMap<String, Vec<u64>> = servers.clone();
    let mut moves = Vec::new();
    loop {
        let most = load
            .iter()
            .max_by(|a, b| a.1.len().cmp(&b.1.len()).then(b.0.cmp(a.0)));
        let fewest = load
            .iter()
            .min_by(|a, b| a.1.len().cmp(&b.1.len()).then(a.0.cmp(b.0)));
        let (Some((from, fr)), Some((to, tr))) = (most, fewest) else {
            return moves;
        };
        if fr.len() <= tr.len() + 1 {
            return moves;
        }
        let (from, to) = (from.clone(), to.clone());
        let region = load.get_mut(&from).and_then(Vec::pop);
        let Some(region) = region else {
            return moves;
        };
        if let Some(t) = load.get_mut(&to) {
            t.push(region);
        }
        moves.push(Move { region, from, to });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn servers(counts: &[(&str, u64)]) -> BTreeMap<String, Vec<u64>> {
        let mut next = 0;
        counts
            .iter()
            .map(|(name, n)| {
                let regions = (next..next + n).collect();
                next += n;
                ((*name).to_owned(), regions)
            })
            .collect()
    }

    fn after(before: &BTreeMap<String, Vec<u64>>, moves: &[Move]) -> BTreeMap<String, usize> {
        let mut counts: BTreeMap<String, usize> =
            before.iter().map(|(k, v)| (k.clone(), v.len())).collect();
        for m in moves {
            *counts.get_mut(&m.from).unwrap_or(&mut 0) -= 1;
            *counts.entry(m.to.clone()).or_default() += 1;
        }
        counts
    }

    #[test]
    fn plans_leave_servers_within_one_region_with_the_fewest_moves() {
        // (servers and their region counts, moves the fewest plan needs)
        let cases: &[(&[(&str, u64)], usize)] = &[
            (&[("a", 30), ("b", 0), ("c", 0)], 20),
            (&[("a", 10), ("b", 10), ("c", 10)], 0),
            (&[("a", 11), ("b", 10), ("c", 9)], 1),
            (&[("a", 11), ("b", 11), ("c", 9)], 1),
            (&[("a", 0), ("b", 0), ("c", 1)], 0),
            (&[("a", 7), ("b", 0)], 3),
            (&[("a", 5)], 0),
            (&[], 0),
        ];
        for (counts, fewest) in cases {
            let before = servers(counts);
            let moves = plan_moves(&before);
            assert_eq!(moves.len(), *fewest, "{counts:?}: {moves:?}");
            let c = after(&before, &moves);
            let (lo, hi) = (c.values().min(), c.values().max());
            if let (Some(lo), Some(hi)) = (lo, hi) {
                assert!(hi - lo <= 1, "{counts:?} gives {c:?}");
            }
            let mut moved: Vec<u64> = moves.iter().map(|m| m.region).collect();
            moved.sort_unstable();
            moved.dedup();
            assert_eq!(moved.len(), moves.len(), "a region moved twice: {moves:?}");
        }
    }

    #[test]
    fn a_plan_is_the_same_for_the_same_input() {
        let before = servers(&[("b", 9), ("a", 0), ("c", 0)]);
        assert_eq!(plan_moves(&before), plan_moves(&before));
        assert_eq!(plan_moves(&before)[0].to, "a");
    }
}
