//! `basalt bench ycsb`: YCSB's six core workloads against a server, through the native API or
//! the Thrift gateway, printed as YCSB prints them (`[READ], 99thPercentileLatency(us), 230`).
//!
//! As YCSB's CoreWorkload: table `usertable`, family `family`, `fieldcount` fields
//! `field0..` of `fieldlength` random bytes, keys `user` + FNV-1a of the record number,
//! request keys from a scrambled zipfian (constant 0.99) or `latest` (D) distribution, scans
//! of 1..=100 rows (E), read-modify-writes (F). Every read of a loaded record is checked to
//! have all its fields.

mod thrift;
mod workload;

use std::time::{Duration, Instant};

use anyhow::Context;
use basalt_client::{ClientConfig, Connection, Table};
use basalt_model::ops::{Get, Mutation, Put, Scan};
use basalt_model::{ColumnFamilyDescriptor, TableDescriptor, TableName};
use rand::rngs::StdRng;
use rand::SeedableRng;

use crate::bench_report::micros;

use workload::{Draws, Op, Request, Shape, FAMILY};

/// The API a run goes through.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Api {
    /// The native gRPC API, through the Rust client.
    Native,
    /// The HBase Thrift1 gateway, through Apache Thrift's client (buffered transport, binary
    /// protocol: happybase's defaults), one connection per client thread.
    Thrift,
}

/// The options of a run.
#[derive(clap::Args, Debug, Clone)]
pub struct YcsbArgs {
    /// a: 50/50 read/update; b: 95/5 read/update; c: read only; d: read latest, 5% insert;
    /// e: short scans, 5% insert; f: read-modify-write.
    #[arg(long)]
    workload: char,
    /// The API: the server's address is its native API's, or with `thrift` its Thrift
    /// gateway's.
    #[arg(long, value_enum, default_value = "native")]
    api: Api,
    /// The server (`host:port`), or any servers of a cluster as seeds (`host:port,...`).
    #[arg(long, default_value = "localhost:16020")]
    server: String,
    /// Regions of `usertable`, pre-split at the quantiles of the keys the load writes (as
    /// YCSB's HBase guide pre-splits), so a cluster spreads it over its servers (native only).
    #[arg(long, default_value_t = 1)]
    regions: u64,
    /// Records loaded before the run (`recordcount`).
    #[arg(long, default_value_t = 100_000)]
    records: u64,
    /// Operations of the run (`operationcount`).
    #[arg(long, default_value_t = 100_000)]
    operations: u64,
    /// Client threads (`threadcount`), each making one call at a time. Native: tasks of
    /// one client, its calls spread over `--connections`; Thrift: threads with a connection
    /// each.
    #[arg(long, default_value_t = 8)]
    threads: u64,
    /// Native: connections to the server, which take the calls in turn
    /// (`hbase.client.ipc.pool.size`).
    #[arg(long, default_value_t = basalt_client::DEFAULT_CONNECTIONS_PER_SERVER)]
    connections: usize,
    /// Native: OS threads of the client's runtime. One keeps a call's tasks on one thread
    /// (a task hopping between threads costs a wake-up of the other); more spread the
    /// client threads over cores.
    #[arg(long, default_value_t = 1)]
    runtime_threads: usize,
    #[arg(long, default_value_t = 10)]
    field_count: u32,
    #[arg(long, default_value_t = 100)]
    field_length: usize,
    /// Skip the load phase (the table holds the records already).
    #[arg(long)]
    no_load: bool,
    /// Records per request in the load phase: above 1, each thread loads with batches of
    /// this many puts (YCSB's `batchsize`).
    #[arg(long, default_value_t = 1)]
    batch_size: usize,
}

impl YcsbArgs {
    fn shape(&self) -> Shape {
        Shape {
            records: self.records,
            field_count: self.field_count,
            field_length: self.field_length,
            threads: self.threads.max(1),
        }
    }

    /// The operations thread `worker` makes.
    fn operations_of(&self, worker: u64) -> u64 {
        let threads = self.threads.max(1);
        self.operations / threads + u64::from(worker < self.operations % threads)
    }

    /// The record numbers thread `worker` loads.
    fn records_of(&self, worker: u64) -> impl Iterator<Item = u64> {
        (worker..self.records).step_by(usize::try_from(self.threads.max(1)).unwrap_or(1))
    }
}

/// Latencies of one thread's operations, in microseconds.
type Measured = Vec<(Op, u64)>;

/// Runs the load and the workload; prints YCSB's report.
///
/// # Errors
/// The server cannot be reached or refuses an operation, or a read misses a record.
pub fn run(args: &YcsbArgs) -> anyhow::Result<()> {
    let (ops, _) = workload::mix(args.workload)?;
    let results = match args.api {
        Api::Native => run_native(args)?,
        Api::Thrift => thrift::run(args)?,
    };
    for (op, _) in &ops {
        let mut all = Latencies::default();
        for r in &results {
            all.0
                .extend(r.iter().filter(|(o, _)| o == op).map(|(_, l)| *l));
        }
        all.report(op.name());
    }
    Ok(())
}

/// When a phase started: the wall clock, and the CPU time this process had used.
pub(crate) struct Started {
    wall: Instant,
    cpu: Duration,
}

impl Started {
    pub(crate) fn now() -> Started {
        Started {
            wall: Instant::now(),
            cpu: process_cpu(),
        }
    }
}

/// CPU time this process has used, all its threads, user and system.
fn process_cpu() -> Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    Duration::new(
        u64::try_from(t.tv_sec).unwrap_or(0),
        u32::try_from(t.tv_nsec).unwrap_or(0),
    )
}

/// Prints a phase's run time and throughput, and the client's CPU time per operation (this
/// process's: on a machine the server shares, a steadier measure of the client's cost than
/// throughput).
fn report_phase(phase: &str, count: u64, started: &Started) {
    let took = started.wall.elapsed();
    let cpu = process_cpu().saturating_sub(started.cpu);
    println!("[{phase}], RunTime(ms), {}", took.as_millis());
    println!(
        "[{phase}], Throughput(ops/sec), {:.1}",
        count as f64 / took.as_secs_f64()
    );
    println!(
        "[{phase}], ClientCpuPerOperation(us), {:.1}",
        cpu.as_secs_f64() * 1e6 / count.max(1) as f64
    );
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

fn run_native(args: &YcsbArgs) -> anyhow::Result<Vec<Measured>> {
    let (ops, dist) = workload::mix(args.workload)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(args.runtime_threads.max(1))
        .enable_all()
        .build()?;
    rt.block_on(async {
        let config = ClientConfig {
            connections_per_server: args.connections,
            ..ClientConfig::default()
        };
        let conn = Connection::connect_with(&args.server, config)
            .await
            .with_context(|| format!("connecting to {}", args.server))?;
        if !args.no_load {
            create_table(&conn, args).await?;
            let t = conn.table("usertable")?;
            let started = Started::now();
            spawn_threads(args, |w| load_native(args.clone(), t.clone(), w)).await?;
            report_phase("LOAD", args.records, &started);
        }
        let t = conn.table("usertable")?;
        let started = Started::now();
        let results = spawn_threads(args, |w| {
            let draws = Draws::new(args.shape(), ops.clone(), dist, w);
            run_thread_native(t.clone(), draws, args.operations_of(w), args.shape())
        })
        .await?;
        report_phase("OVERALL", args.operations, &started);
        Ok(results)
    })
}

async fn create_table(conn: &Connection, args: &YcsbArgs) -> anyhow::Result<()> {
    let name = TableName::parse("usertable")?;
    let admin = conn.admin();
    if admin.table_exists(&name).await? {
        admin.disable_table(&name).await?;
        admin.delete_table(&name).await?;
    }
    let desc = TableDescriptor::new(&name, [ColumnFamilyDescriptor::new(FAMILY)]);
    admin
        .create_table(&desc, &workload::split_keys(args.records, args.regions))
        .await?;
    Ok(())
}

async fn spawn_threads<F, Fut>(args: &YcsbArgs, f: F) -> anyhow::Result<Vec<Measured>>
where
    F: Fn(u64) -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<Measured>> + Send + 'static,
{
    let handles: Vec<_> = (0..args.threads.max(1))
        .map(|w| tokio::spawn(f(w)))
        .collect();
    let mut out = Vec::new();
    for h in handles {
        out.push(h.await??);
    }
    Ok(out)
}

fn put_of(key: &str, values: Vec<Vec<u8>>) -> Put {
    let mut p = Put::new(key.to_owned());
    for (f, v) in (0..).zip(values) {
        p = p.add(FAMILY, workload::field_name(f), v);
    }
    p
}

/// An update of one field.
fn field_put(key: &str, field: u32, value: &[u8]) -> Put {
    Put::new(key.to_owned()).add(FAMILY, workload::field_name(field), value)
}

async fn load_native(args: YcsbArgs, t: Table, worker: u64) -> anyhow::Result<Measured> {
    let mut rng = StdRng::seed_from_u64(worker);
    let shape = args.shape();
    let mut batch = Vec::with_capacity(args.batch_size);
    for n in args.records_of(worker) {
        let put = put_of(&workload::key(n), workload::record(&shape, &mut rng));
        if args.batch_size <= 1 {
            t.put(put).await?;
            continue;
        }
        batch.push(Mutation::Put(put));
        if batch.len() == args.batch_size {
            for r in t.batch(std::mem::take(&mut batch)).await? {
                r?;
            }
        }
    }
    if !batch.is_empty() {
        for r in t.batch(batch).await? {
            r?;
        }
    }
    Ok(Vec::new())
}

async fn run_thread_native(
    t: Table,
    mut draws: Draws,
    count: u64,
    shape: Shape,
) -> anyhow::Result<Measured> {
    let mut latencies = Vec::with_capacity(usize::try_from(count).unwrap_or(0));
    for _ in 0..count {
        let request = draws.next_request();
        let started = Instant::now();
        match &request {
            Request::Read(key) => read_native(&t, key, &shape).await?,
            Request::Update { key, field, value } => {
                t.put(field_put(key, *field, value)).await?;
            }
            Request::Insert { key, values } => t.put(put_of(key, values.clone())).await?,
            Request::Scan { start, rows } => {
                let scan = Scan::new()
                    .with_start_row(start.clone(), true)
                    .with_limit(*rows);
                t.scan(scan).await?.collect().await?;
            }
            Request::ReadModifyWrite { key, field, value } => {
                read_native(&t, key, &shape).await?;
                t.put(field_put(key, *field, value)).await?;
            }
        }
        latencies.push((request.op(), micros(started.elapsed())));
    }
    Ok(latencies)
}

async fn read_native(t: &Table, key: &str, shape: &Shape) -> anyhow::Result<()> {
    let row = t.get(Get::new(key.to_owned())).await?;
    workload::check_read(key, row.cells.len(), shape)
}
