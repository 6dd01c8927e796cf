//! YCSB's CoreWorkload: the operation mixes of workloads A–F, the request distributions,
//! the record keys and values, and the requests a client thread makes, whichever API they
//! go through.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// The column family of `usertable`.
pub const FAMILY: &str = "family";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Read,
    Update,
    Insert,
    Scan,
    ReadModifyWrite,
}

impl Op {
    pub fn name(self) -> &'static str {
        match self {
            Op::Read => "READ",
            Op::Update => "UPDATE",
            Op::Insert => "INSERT",
            Op::Scan => "SCAN",
            Op::ReadModifyWrite => "READ-MODIFY-WRITE",
        }
    }
}

/// The operation mix and request distribution of a core workload.
pub fn mix(w: char) -> anyhow::Result<(Vec<(Op, f64)>, Dist)> {
    Ok(match w.to_ascii_lowercase() {
        'a' => (vec![(Op::Read, 0.5), (Op::Update, 0.5)], Dist::Zipfian),
        'b' => (vec![(Op::Read, 0.95), (Op::Update, 0.05)], Dist::Zipfian),
        'c' => (vec![(Op::Read, 1.0)], Dist::Zipfian),
        'd' => (vec![(Op::Read, 0.95), (Op::Insert, 0.05)], Dist::Latest),
        'e' => (vec![(Op::Scan, 0.95), (Op::Insert, 0.05)], Dist::Zipfian),
        'f' => (
            vec![(Op::Read, 0.5), (Op::ReadModifyWrite, 0.5)],
            Dist::Zipfian,
        ),
        other => anyhow::bail!("unknown workload {other}: use a, b, c, d, e or f"),
    })
}

#[derive(Clone, Copy, Debug)]
pub enum Dist {
    Zipfian,
    Latest,
}

/// FNV-1a 64 of a number, as YCSB hashes record numbers into keys.
fn fnv(n: u64) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in n.to_le_bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// The key of record `n`.
pub fn key(n: u64) -> String {
    format!("user{}", fnv(n))
}

/// The qualifier of field `f`.
pub fn field_name(f: u32) -> String {
    format!("field{f}")
}

/// The keys that cut `records` records into `regions` equal parts.
pub fn split_keys(records: u64, regions: u64) -> Vec<bytes::Bytes> {
    if regions <= 1 {
        return Vec::new();
    }
    let mut keys: Vec<String> = (0..records).map(key).collect();
    keys.sort_unstable();
    (1..regions)
        .filter_map(|i| keys.get(usize::try_from(i * records / regions).ok()?))
        .map(|k| bytes::Bytes::from(k.clone()))
        .collect()
}

/// YCSB's ZipfianGenerator (Gray et al.), over `0..items`.
pub struct Zipf {
    items: u64,
    theta: f64,
    alpha: f64,
    zetan: f64,
    eta: f64,
}

impl Zipf {
    pub fn new(items: u64) -> Zipf {
        let theta = 0.99;
        let zeta = |n: u64| (1..=n).map(|i| 1.0 / (i as f64).powf(theta)).sum::<f64>();
        let zetan = zeta(items);
        let zeta2 = zeta(2);
        let eta = (1.0 - (2.0 / items as f64).powf(1.0 - theta)) / (1.0 - zeta2 / zetan);
        Zipf {
            items,
            theta,
            alpha: 1.0 / (1.0 - theta),
            zetan,
            eta,
        }
    }

    pub fn next(&self, rng: &mut StdRng) -> u64 {
        let u: f64 = rng.gen();
        let uz = u * self.zetan;
        if uz < 1.0 {
            return 0;
        }
        if uz < 1.0 + 0.5f64.powf(self.theta) {
            return 1;
        }
        let v = (self.items as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha)) as u64;
        v.min(self.items - 1)
    }
}

/// The shape of a run's records.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    pub records: u64,
    pub field_count: u32,
    pub field_length: usize,
    /// Client threads: inserts take fresh record numbers interleaved between them.
    pub threads: u64,
}

/// `field_length` printable random bytes.
pub fn value(shape: &Shape, rng: &mut StdRng) -> Vec<u8> {
    (0..shape.field_length)
        .map(|_| rng.gen_range(b' '..=b'~'))
        .collect()
}

/// A record's every field value, in field order.
pub fn record(shape: &Shape, rng: &mut StdRng) -> Vec<Vec<u8>> {
    (0..shape.field_count).map(|_| value(shape, rng)).collect()
}

/// One request of a run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Request {
    /// Reads the whole record, which must have every field.
    Read(String),
    /// Writes one field.
    Update {
        key: String,
        field: u32,
        value: Vec<u8>,
    },
    /// Writes a new record.
    Insert { key: String, values: Vec<Vec<u8>> },
    /// Reads `rows` rows from `start` on.
    Scan { start: String, rows: u64 },
    /// Reads the record, then writes one field.
    ReadModifyWrite {
        key: String,
        field: u32,
        value: Vec<u8>,
    },
}

impl Request {
    pub fn op(&self) -> Op {
        match self {
            Request::Read(_) => Op::Read,
            Request::Update { .. } => Op::Update,
            Request::Insert { .. } => Op::Insert,
            Request::Scan { .. } => Op::Scan,
            Request::ReadModifyWrite { .. } => Op::ReadModifyWrite,
        }
    }
}

/// The requests of one client thread, drawn as YCSB's CoreWorkload draws them.
pub struct Draws {
    rng: StdRng,
    zipf: Zipf,
    ops: Vec<(Op, f64)>,
    dist: Dist,
    shape: Shape,
    next_insert: u64,
}

impl Draws {
    pub fn new(shape: Shape, ops: Vec<(Op, f64)>, dist: Dist, worker: u64) -> Draws {
        Draws {
            rng: StdRng::seed_from_u64(1000 + worker),
            zipf: Zipf::new(shape.records.max(2)),
            ops,
            dist,
            shape,
            next_insert: shape.records + worker,
        }
    }

    fn record_number(&mut self) -> u64 {
        let records = self.shape.records.max(1);
        match self.dist {
            Dist::Zipfian => fnv(self.zipf.next(&mut self.rng)) % records,
            Dist::Latest => records - 1 - self.zipf.next(&mut self.rng).min(records - 1),
        }
    }

    pub fn next_request(&mut self) -> Request {
        let r: f64 = self.rng.gen();
        let mut acc = 0.0;
        let op = self
            .ops
            .iter()
            .find(|(_, p)| {
                acc += p;
                r < acc
            })
            .map_or(self.ops[self.ops.len() - 1].0, |(o, _)| *o);
        let key = key(self.record_number());
        let fields = self.shape.field_count.max(1);
        match op {
            Op::Read => Request::Read(key),
            Op::Update | Op::ReadModifyWrite => {
                let field = self.rng.gen_range(0..fields);
                let value = value(&self.shape, &mut self.rng);
                if op == Op::Update {
                    Request::Update { key, field, value }
                } else {
                    Request::ReadModifyWrite { key, field, value }
                }
            }
            Op::Insert => {
                let key = self::key(self.next_insert);
                self.next_insert += self.shape.threads.max(1);
                Request::Insert {
                    key,
                    values: record(&self.shape, &mut self.rng),
                }
            }
            Op::Scan => Request::Scan {
                start: key,
                rows: self.rng.gen_range(1..=100u64),
            },
        }
    }
}

/// Checks that a read of a loaded record found all its fields.
pub fn check_read(key: &str, cells: usize, shape: &Shape) -> anyhow::Result<()> {
    anyhow::ensure!(
        cells == shape.field_count as usize,
        "record {key} has {cells} of its {} fields: was the table loaded with these --records and --field-count?",
        shape.field_count
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zipfian_favours_low_ranks_and_stays_in_range() {
        let z = Zipf::new(1000);
        let mut rng = StdRng::seed_from_u64(7);
        let draws: Vec<u64> = (0..20_000).map(|_| z.next(&mut rng)).collect();
        assert!(draws.iter().all(|d| *d < 1000));
        let low = draws.iter().filter(|d| **d < 10).count();
        let high = draws.iter().filter(|d| **d >= 990).count();
        assert!(low > 10 * high.max(1), "low {low}, high {high}");
    }

    #[test]
    fn workloads_have_ycsb_mixes() {
        for w in ['a', 'b', 'c', 'd', 'e', 'f'] {
            let (ops, _) = mix(w).unwrap();
            let total: f64 = ops.iter().map(|(_, p)| p).sum();
            assert!((total - 1.0).abs() < 1e-9, "{w}");
        }
        assert!(mix('g').is_err());
        assert_ne!(key(1), key(2));
    }

    /// Reads and updates name loaded records only; inserts name fresh ones, each thread
    /// its own, never one another's.
    #[test]
    fn requests_touch_loaded_records_and_inserts_fresh_ones() {
        let shape = Shape {
            records: 50,
            field_count: 3,
            field_length: 4,
            threads: 2,
        };
        let loaded: std::collections::HashSet<String> = (0..50).map(key).collect();
        let mut inserted = std::collections::HashSet::new();
        for w in ['a', 'd', 'e', 'f'] {
            let (ops, dist) = mix(w).unwrap();
            for worker in 0..2 {
                let mut draws = Draws::new(shape, ops.clone(), dist, worker);
                for _ in 0..500 {
                    match draws.next_request() {
                        Request::Read(k) | Request::Scan { start: k, .. } => {
                            assert!(loaded.contains(&k));
                        }
                        Request::Update { key, field, value }
                        | Request::ReadModifyWrite { key, field, value } => {
                            assert!(loaded.contains(&key) && field < 3 && value.len() == 4);
                        }
                        Request::Insert { key, values } => {
                            assert!(!loaded.contains(&key) && values.len() == 3);
                            assert!(inserted.insert((w, key)), "an insert's key came twice");
                        }
                    }
                }
            }
        }
    }
}
