//! `basalt bench ycsb`: YCSB's six core workloads against a server through the client,
//! printed as YCSB prints them (`[READ], 99thPercentileLatency(us), 230`).
//!
//! As YCSB's CoreWorkload: table `usertable`, family `family`, `fieldcount` fields
//! `field0..` of `fieldlength` random bytes, keys `user` + FNV-1a of the record number,
//! request keys from a scrambled zipfian (constant 0.99), `latest` (D) or uniform
//! distribution, scans of 1..=100 rows (E), read-modify-writes (F).

use std::time::Instant;

use anyhow::Context;
use basalt_client::{Connection, Table};
use basalt_model::ops::{Get, Put, Scan};
use basalt_model::{ColumnFamilyDescriptor, TableDescriptor, TableName};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// The options of a run.
#[derive(clap::Args, Debug, Clone)]
pub struct YcsbArgs {
    /// a: 50/50 read/update; b: 95/5 read/update; c: read only; d: read latest, 5% insert;
    /// e: short scans, 5% insert; f: read-modify-write.
    #[arg(long)]
    workload: char,
    /// The server (`host:port`), or any servers of a cluster as seeds (`host:port,...`).
    #[arg(long, default_value = "localhost:16020")]
    server: String,
    /// Regions of `usertable`, pre-split at the quantiles of the keys the load writes (as
    /// YCSB's HBase guide pre-splits), so a cluster spreads it over its servers.
    #[arg(long, default_value_t = 1)]
    regions: u64,
    /// Records loaded before the run (`recordcount`).
    #[arg(long, default_value_t = 100_000)]
    records: u64,
    /// Operations of the run (`operationcount`).
    #[arg(long, default_value_t = 100_000)]
    operations: u64,
    /// Client threads (`threadcount`).
    #[arg(long, default_value_t = 8)]
    threads: u64,
    #[arg(long, default_value_t = 10)]
    field_count: u32,
    #[arg(long, default_value_t = 100)]
    field_length: usize,
    /// Skip the load phase (the table holds the records already).
    #[arg(long)]
    no_load: bool,
    /// Records per request in the load phase: above 1, each thread loads with `batch()`
    /// calls of this many puts (YCSB's `batchsize`).
    #[arg(long, default_value_t = 1)]
    batch_size: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Read,
    Update,
    Insert,
    Scan,
    ReadModifyWrite,
}

impl Op {
    fn name(self) -> &'static str {
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
fn mix(w: char) -> anyhow::Result<(Vec<(Op, f64)>, Dist)> {
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
enum Dist {
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

/// The keys that cut the records the load writes into `regions` equal parts.
fn split_keys(args: &YcsbArgs) -> Vec<bytes::Bytes> {
    if args.regions <= 1 {
        return Vec::new();
    }
    let mut keys: Vec<String> = (0..args.records).map(key).collect();
    keys.sort_unstable();
    (1..args.regions)
        .filter_map(|i| keys.get(usize::try_from(i * args.records / args.regions).ok()?))
        .map(|k| bytes::Bytes::from(k.clone()))
        .collect()
}

fn key(n: u64) -> String {
    format!("user{}", fnv(n))
}

/// YCSB's ZipfianGenerator (Gray et al.), over `0..items`.
struct Zipf {
    items: u64,
    theta: f64,
    alpha: f64,
    zetan: f64,
    eta: f64,
}

impl Zipf {
    fn new(items: u64) -> Zipf {
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

    fn next(&self, rng: &mut StdRng) -> u64 {
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

fn fields(args: &YcsbArgs, rng: &mut StdRng, row: &str) -> Put {
    let mut p = Put::new(row.to_owned());
    for f in 0..args.field_count {
        let value: Vec<u8> = (0..args.field_length)
            .map(|_| rng.gen_range(b' '..=b'~'))
            .collect();
        p = p.add("family", format!("field{f}"), value);
    }
    p
}

/// Latencies of one operation kind, in microseconds.
#[derive(Default)]
struct Latencies(Vec<u64>);

impl Latencies {
    fn report(&mut self, op: &str) {
        let v = &mut self.0;
        if v.is_empty() {
            return;
        }
        v.sort_unstable();
        let pct = |p: f64| v[((v.len() as f64 * p) as usize).min(v.len() - 1)];
        let avg = v.iter().sum::<u64>() as f64 / v.len() as f64;
        println!("[{op}], Operations, {}", v.len());
        println!("[{op}], AverageLatency(us), {avg:.1}");
        println!("[{op}], MinLatency(us), {}", v[0]);
        println!("[{op}], MaxLatency(us), {}", v[v.len() - 1]);
        println!("[{op}], 50thPercentileLatency(us), {}", pct(0.50));
        println!("[{op}], 95thPercentileLatency(us), {}", pct(0.95));
        println!("[{op}], 99thPercentileLatency(us), {}", pct(0.99));
    }
}

/// Runs the load and the workload; prints YCSB's report.
///
/// # Errors
/// The server cannot be reached or refuses an operation.
pub fn run(args: &YcsbArgs) -> anyhow::Result<()> {
    let (ops, dist) = mix(args.workload)?;
    let rt = tokio::runtime::Runtime::new()?;
    rt.block_on(async {
        let conn = Connection::connect(&args.server)
            .await
            .with_context(|| format!("connecting to {}", args.server))?;
        let name = TableName::parse("usertable")?;
        if !args.no_load {
            let admin = conn.admin();
            if admin.table_exists(&name).await? {
                admin.disable_table(&name).await?;
                admin.delete_table(&name).await?;
            }
            let desc = TableDescriptor::new(&name, [ColumnFamilyDescriptor::new("family")]);
            admin.create_table(&desc, &split_keys(args)).await?;
            let t = conn.table("usertable")?;
            let started = Instant::now();
            spawn_threads(args, &t, load_thread).await?;
            let took = started.elapsed();
            println!("[LOAD], RunTime(ms), {}", took.as_millis());
            println!(
                "[LOAD], Throughput(ops/sec), {:.1}",
                args.records as f64 / took.as_secs_f64()
            );
        }
        let t = conn.table("usertable")?;
        let ops2 = ops.clone();
        let started = Instant::now();
        let results = spawn_threads(args, &t, move |a, t, w| {
            run_thread(a, t, w, ops2.clone(), dist)
        })
        .await?;
        let took = started.elapsed();
        println!("[OVERALL], RunTime(ms), {}", took.as_millis());
        println!(
            "[OVERALL], Throughput(ops/sec), {:.1}",
            args.operations as f64 / took.as_secs_f64()
        );
        for (op, _) in &ops {
            let mut all = Latencies::default();
            for r in &results {
                all.0
                    .extend(r.iter().filter(|(o, _)| o == op).map(|(_, l)| *l));
            }
            all.report(op.name());
        }
        Ok(())
    })
}

async fn spawn_threads<F, Fut>(
    args: &YcsbArgs,
    t: &Table,
    f: F,
) -> anyhow::Result<Vec<Vec<(Op, u64)>>>
where
    F: Fn(YcsbArgs, Table, u64) -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<Vec<(Op, u64)>>> + Send + 'static,
{
    let handles: Vec<_> = (0..args.threads.max(1))
        .map(|w| tokio::spawn(f(args.clone(), t.clone(), w)))
        .collect();
    let mut out = Vec::new();
    for h in handles {
        out.push(h.await??);
    }
    Ok(out)
}

async fn load_thread(args: YcsbArgs, t: Table, worker: u64) -> anyhow::Result<Vec<(Op, u64)>> {
    let mut rng = StdRng::seed_from_u64(worker);
    let mut n = worker;
    let mut batch = Vec::with_capacity(args.batch_size);
    while n < args.records {
        let put = fields(&args, &mut rng, &key(n));
        n += args.threads.max(1);
        if args.batch_size <= 1 {
            t.put(put).await?;
            continue;
        }
        batch.push(basalt_model::ops::Mutation::Put(put));
        if batch.len() == args.batch_size || n >= args.records {
            for r in t.batch(std::mem::take(&mut batch)).await? {
                r?;
            }
        }
    }
    Ok(Vec::new())
}

async fn run_thread(
    args: YcsbArgs,
    t: Table,
    worker: u64,
    ops: Vec<(Op, f64)>,
    dist: Dist,
) -> anyhow::Result<Vec<(Op, u64)>> {
    let mut rng = StdRng::seed_from_u64(1000 + worker);
    let threads = args.threads.max(1);
    let count = args.operations / threads + u64::from(worker < args.operations % threads);
    let zipf = Zipf::new(args.records.max(2));
    // Inserts take fresh record numbers, interleaved between the threads.
    let mut next_insert = args.records + worker;
    let mut latencies = Vec::with_capacity(usize::try_from(count).unwrap_or(0));
    for _ in 0..count {
        let r: f64 = rng.gen();
        let mut acc = 0.0;
        let op = ops
            .iter()
            .find(|(_, p)| {
                acc += p;
                r < acc
            })
            .map_or(ops[ops.len() - 1].0, |(o, _)| *o);
        let n = match dist {
            Dist::Zipfian => fnv(zipf.next(&mut rng)) % args.records.max(1),
            Dist::Latest => {
                args.records.max(1) - 1 - zipf.next(&mut rng).min(args.records.max(1) - 1)
            }
        };
        let started = Instant::now();
        match op {
            Op::Read => {
                t.get(Get::new(key(n))).await?;
            }
            Op::Update => {
                let f = rng.gen_range(0..args.field_count.max(1));
                let value: Vec<u8> = (0..args.field_length)
                    .map(|_| rng.gen_range(b' '..=b'~'))
                    .collect();
                t.put(Put::new(key(n)).add("family", format!("field{f}"), value))
                    .await?;
            }
            Op::Insert => {
                t.put(fields(&args, &mut rng, &key(next_insert))).await?;
                next_insert += threads;
            }
            Op::Scan => {
                let len = rng.gen_range(1..=100u64);
                let scan = Scan::new().with_start_row(key(n), true).with_limit(len);
                t.scan(scan).await?.collect().await?;
            }
            Op::ReadModifyWrite => {
                t.get(Get::new(key(n))).await?;
                let f = rng.gen_range(0..args.field_count.max(1));
                let value: Vec<u8> = (0..args.field_length)
                    .map(|_| rng.gen_range(b' '..=b'~'))
                    .collect();
                t.put(Put::new(key(n)).add("family", format!("field{f}"), value))
                    .await?;
            }
        }
        latencies.push((
            op,
            u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX),
        ));
    }
    Ok(latencies)
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
}
