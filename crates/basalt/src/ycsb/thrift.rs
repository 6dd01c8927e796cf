//! The run through the Thrift gateway: each client thread an OS thread with its own
//! connection, as YCSB's threads (or happybase's processes) have.

use std::time::Instant;

use rand::rngs::StdRng;
use rand::SeedableRng;

use super::workload::{self, Draws, Request, Shape, FAMILY};
use super::{report_phase, Measured, Started, YcsbArgs};
use crate::bench_report::micros;
use crate::gateway_bench::thrift::ThriftClient;
use crate::gateway_bench::GatewayClient;

/// Loads (unless told not to) and runs the workload through the gateway at `args.server`.
pub fn run(args: &YcsbArgs) -> anyhow::Result<Vec<Measured>> {
    anyhow::ensure!(
        args.regions <= 1,
        "--regions pre-splits through the native API; Thrift's createTable cannot"
    );
    let (ops, dist) = workload::mix(args.workload)?;
    if !args.no_load {
        ThriftClient::connect(&args.server)?.recreate_table("usertable", FAMILY)?;
        let started = Started::now();
        on_threads(args, |w| load(args, w))?;
        report_phase("LOAD", args.records, &started);
    }
    let started = Started::now();
    let results = on_threads(args, |w| {
        let draws = Draws::new(args.shape(), ops.clone(), dist, w);
        run_thread(args, draws, args.operations_of(w))
    })?;
    report_phase("OVERALL", args.operations, &started);
    Ok(results)
}

/// Runs `f` for each client thread on a thread of its own.
fn on_threads<F>(args: &YcsbArgs, f: F) -> anyhow::Result<Vec<Measured>>
where
    F: Fn(u64) -> anyhow::Result<Measured> + Sync,
{
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..args.threads.max(1))
            .map(|w| {
                let f = &f;
                s.spawn(move || f(w))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .map_err(|_| anyhow::anyhow!("a client thread panicked"))?
            })
            .collect()
    })
}

fn connect(args: &YcsbArgs) -> anyhow::Result<ThriftClient> {
    Ok(ThriftClient::connect(&args.server)?.on_table("usertable"))
}

fn column(field: u32) -> Vec<u8> {
    format!("{FAMILY}:{}", workload::field_name(field)).into_bytes()
}

fn cells(values: Vec<Vec<u8>>) -> Vec<(Vec<u8>, Vec<u8>)> {
    (0..).zip(values).map(|(f, v)| (column(f), v)).collect()
}

fn load(args: &YcsbArgs, worker: u64) -> anyhow::Result<Measured> {
    let mut client = connect(args)?;
    let mut rng = StdRng::seed_from_u64(worker);
    let shape = args.shape();
    let mut batch = Vec::with_capacity(args.batch_size);
    for n in args.records_of(worker) {
        let row = (
            workload::key(n).into_bytes(),
            cells(workload::record(&shape, &mut rng)),
        );
        if args.batch_size <= 1 {
            client.put(&row.0, &row.1)?;
            continue;
        }
        batch.push(row);
        if batch.len() == args.batch_size {
            client.put_rows(std::mem::take(&mut batch))?;
        }
    }
    if !batch.is_empty() {
        client.put_rows(batch)?;
    }
    Ok(Vec::new())
}

fn run_thread(args: &YcsbArgs, mut draws: Draws, count: u64) -> anyhow::Result<Measured> {
    let mut client = connect(args)?;
    let shape = args.shape();
    let mut latencies = Vec::with_capacity(usize::try_from(count).unwrap_or(0));
    for _ in 0..count {
        let request = draws.next_request();
        let started = Instant::now();
        match &request {
            Request::Read(key) => read(&mut client, key, &shape)?,
            Request::Update { key, field, value } => {
                client.put(key.as_bytes(), &[(column(*field), value.clone())])?;
            }
            Request::Insert { key, values } => {
                client.put(key.as_bytes(), &cells(values.clone()))?;
            }
            Request::Scan { start, rows } => {
                client.scan_rows(start.as_bytes(), *rows)?;
            }
            Request::ReadModifyWrite { key, field, value } => {
                read(&mut client, key, &shape)?;
                client.put(key.as_bytes(), &[(column(*field), value.clone())])?;
            }
        }
        latencies.push((request.op(), micros(started.elapsed())));
    }
    Ok(latencies)
}

fn read(client: &mut ThriftClient, key: &str, shape: &Shape) -> anyhow::Result<()> {
    let cells = client.get(key.as_bytes())?;
    workload::check_read(key, cells, shape)
}
