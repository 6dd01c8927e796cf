//! `basalt bench gateways`: HBase's two HTTP-era gateways, REST and Thrift, measured by one
//! compiled client in one run, so their costs compare on the same server and machine.
//!
//! The Thrift gateway is reached the way happybase reaches it by default (buffered
//! transport, binary protocol; the Apache Thrift library's generated HBase client). REST is
//! reached over HTTP/1.1 with keep-alive, in JSON and in protobuf. Each client is a thread
//! with one connection of its own that sends one request at a time.
//!
//! The table `bench` (family `cf`, one version) is recreated and loaded through Thrift with
//! `--rows` rows of `--field-count` columns of `--field-length` random bytes. Then every line
//! (single-row writes, point reads, scanners of `--scan-rows` rows, at each client count)
//! runs for `--seconds` against each target in turn. Every answer is checked: a write must
//! succeed, a read return its whole row, a scanner exactly `--scan-rows` rows.

use std::fmt;
use std::sync::Barrier;
use std::time::{Duration, Instant};

use anyhow::Context;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::bench_report::{micros, row_key, Lines, Measured, Workload};
use rest::{RestClient, RestFormat};
use thrift::ThriftClient;

mod rest;
pub mod thrift;

const TABLE: &str = "bench";
const FAMILY: &str = "cf";
/// Rows per `mutateRows` of the load.
const LOAD_BATCH: u64 = 500;
/// Concurrent loading connections.
const LOAD_STREAMS: u64 = 4;

/// The options of a run.
#[derive(clap::Args, Debug, Clone)]
pub struct GatewaysArgs {
    /// The Thrift gateway (also used to create and load the table).
    #[arg(long)]
    thrift: String,
    /// The REST gateway.
    #[arg(long)]
    rest: String,
    /// The targets measured, in this order (the ratio columns divide each one's rate by the
    /// last's).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "rest-json,rest-protobuf,thrift"
    )]
    targets: Vec<Target>,
    /// Rows per fetch of a scan's scanner (`scannerGetList`'s count; a REST page of this many rows'
    /// cells).
    #[arg(long, default_value_t = 100)]
    page_rows: u32,
    #[command(flatten)]
    lines: Lines,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum Target {
    RestJson,
    RestProtobuf,
    Thrift,
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Target::RestJson => "REST JSON",
            Target::RestProtobuf => "REST protobuf",
            Target::Thrift => "Thrift",
        })
    }
}

/// A row's cells: (column `family:qualifier`, value).
pub type Cells = Vec<(Vec<u8>, Vec<u8>)>;

/// What a client of either gateway does, each call one request and its answer, checked.
pub trait GatewayClient {
    /// Writes `cells` (column, value) to `row` at the server's time.
    fn put(&mut self, row: &[u8], cells: &[(Vec<u8>, Vec<u8>)]) -> anyhow::Result<()>;
    /// Reads `row` whole: how many cells it has.
    fn get(&mut self, row: &[u8]) -> anyhow::Result<usize>;
    /// Opens a scanner over `[start, stop)`, reads it to the end `page_rows` rows a fetch,
    /// and closes it: how many rows it read.
    fn scan(&mut self, start: &[u8], stop: &[u8], page_rows: u32) -> anyhow::Result<u64>;
}

/// Loads the table, runs every line against each target in turn, and prints a line per
/// measurement and a Markdown table of them all.
///
/// # Errors
/// A gateway cannot be reached, refuses a request, or answers a read wrongly.
pub fn run(args: &GatewaysArgs) -> anyhow::Result<()> {
    args.lines.check()?;
    anyhow::ensure!(args.page_rows > 0, "--page-rows must be positive");
    let started = Instant::now();
    load(args).context("loading the table through Thrift")?;
    println!(
        "loaded {} rows in {:.1} s",
        args.lines.rows,
        started.elapsed().as_secs_f64()
    );
    let names: Vec<String> = args.targets.iter().map(ToString::to_string).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    args.lines.run(&names, |t, w, clients| {
        run_line(args, args.targets[t], w, clients)
    })
}

fn key(n: u64) -> Vec<u8> {
    row_key(n).into_bytes()
}

/// A whole row's cells: every field, fresh random bytes.
fn row_cells(args: &GatewaysArgs, rng: &mut StdRng) -> Cells {
    (0..args.lines.field_count)
        .map(|f| {
            let value = (0..args.lines.field_length).map(|_| rng.gen()).collect();
            (format!("{FAMILY}:field{f}").into_bytes(), value)
        })
        .collect()
}

/// Recreates the table and writes every row, `LOAD_STREAMS` connections at a time.
fn load(args: &GatewaysArgs) -> anyhow::Result<()> {
    let mut admin = ThriftClient::connect(&args.thrift)?;
    admin.recreate_table(TABLE, FAMILY)?;
    std::thread::scope(|s| {
        let streams: Vec<_> = (0..LOAD_STREAMS)
            .map(|stream| s.spawn(move || load_stream(args, stream)))
            .collect();
        for t in streams {
            t.join()
                .map_err(|_| anyhow::anyhow!("a loading thread panicked"))??;
        }
        Ok(())
    })
}

/// Every `LOAD_STREAMS`th batch of rows, from the `stream`th.
fn load_stream(args: &GatewaysArgs, stream: u64) -> anyhow::Result<()> {
    let mut c = ThriftClient::connect(&args.thrift)?.on_table(TABLE);
    let mut rng = StdRng::seed_from_u64(stream);
    let mut first = stream * LOAD_BATCH;
    while first < args.lines.rows {
        let rows = (first..(first + LOAD_BATCH).min(args.lines.rows))
            .map(|n| (key(n), row_cells(args, &mut rng)))
            .collect();
        c.put_rows(rows)?;
        first += LOAD_STREAMS * LOAD_BATCH;
    }
    Ok(())
}

fn connect(args: &GatewaysArgs, t: Target) -> anyhow::Result<Box<dyn GatewayClient>> {
    let rest = |format| RestClient::connect(&args.rest, TABLE, format, args.lines.field_count);
    Ok(match t {
        Target::RestJson => Box::new(rest(RestFormat::Json)?),
        Target::RestProtobuf => Box::new(rest(RestFormat::Protobuf)?),
        Target::Thrift => Box::new(ThriftClient::connect(&args.thrift)?.on_table(TABLE)),
    })
}

/// Runs one line against one target: `clients` threads, each connected before the clock
/// starts, sending requests one after another until `--seconds` have passed.
fn run_line(
    args: &GatewaysArgs,
    t: Target,
    w: Workload,
    clients: usize,
) -> anyhow::Result<Measured> {
    let ready = Barrier::new(clients + 1);
    std::thread::scope(|s| {
        let threads: Vec<_> = (0..clients)
            .map(|i| {
                let ready = &ready;
                s.spawn(move || -> anyhow::Result<Vec<u64>> {
                    let client = connect(args, t);
                    // Wait whether or not the connection succeeded, so no one waits forever.
                    ready.wait();
                    let deadline = Instant::now() + Duration::from_secs_f64(args.lines.seconds);
                    client_loop(args, client?, w, i as u64, deadline)
                })
            })
            .collect();
        ready.wait();
        let started = Instant::now();
        let mut all = Vec::new();
        for t in threads {
            all.extend(
                t.join()
                    .map_err(|_| anyhow::anyhow!("a client thread panicked"))??,
            );
        }
        anyhow::ensure!(
            !all.is_empty(),
            "no request finished in {} s",
            args.lines.seconds
        );
        Ok(Measured::from_latencies(all, started.elapsed()))
    })
}

/// One client's requests until `deadline`: each one's latency in microseconds.
fn client_loop(
    args: &GatewaysArgs,
    mut c: Box<dyn GatewayClient>,
    w: Workload,
    client: u64,
    deadline: Instant,
) -> anyhow::Result<Vec<u64>> {
    let mut rng = StdRng::seed_from_u64(1000 + client);
    let mut latencies = Vec::new();
    while Instant::now() < deadline {
        // The values are the client's work, made before the clock starts.
        let cells = match w {
            Workload::Write => row_cells(args, &mut rng),
            Workload::Read | Workload::Scan => Vec::new(),
        };
        let started = Instant::now();
        match w {
            Workload::Write => c.put(&key(rng.gen_range(0..args.lines.rows)), &cells)?,
            Workload::Read => {
                let row = key(rng.gen_range(0..args.lines.rows));
                let n = c.get(&row)?;
                anyhow::ensure!(
                    n == args.lines.field_count as usize,
                    "row {} read as {n} cells",
                    String::from_utf8_lossy(&row)
                );
            }
            Workload::Scan => {
                let first = rng.gen_range(0..args.lines.rows - args.lines.scan_rows);
                let (start, stop) = (key(first), key(first + args.lines.scan_rows));
                let rows = c.scan(&start, &stop, args.page_rows)?;
                anyhow::ensure!(
                    rows == args.lines.scan_rows,
                    "a scanner of {} rows read {rows}",
                    args.lines.scan_rows
                );
            }
        }
        latencies.push(micros(started.elapsed()));
    }
    Ok(latencies)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_has_every_field_in_its_family() {
        let args = GatewaysArgs {
            thrift: String::new(),
            rest: String::new(),
            targets: vec![Target::Thrift],
            page_rows: 1,
            lines: Lines {
                rows: 10,
                field_count: 3,
                field_length: 7,
                scan_rows: 1,
                clients: vec![1],
                workloads: vec![Workload::Read],
                seconds: 1.0,
            },
        };
        let cells = row_cells(&args, &mut StdRng::seed_from_u64(0));
        let columns: Vec<&[u8]> = cells.iter().map(|(c, _)| c.as_slice()).collect();
        assert_eq!(
            columns,
            [&b"cf:field0"[..], &b"cf:field1"[..], &b"cf:field2"[..]]
        );
        assert!(cells.iter().all(|(_, v)| v.len() == 7));
    }
}
