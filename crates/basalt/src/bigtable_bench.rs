//! `basalt bench bigtable`: a load generator that speaks the Bigtable v2 API, so Basalt's
//! gateway and any other Bigtable endpoint (Google's emulator, say) are measured by the same
//! client in the same run.
//!
//! Each target gets the table `bench` (family `cf`, one version kept) loaded with `--rows`
//! rows of `--field-count` columns of `--field-length` random bytes, keys `row0000000000`
//! onwards. Then every line (single-row writes, point reads, scans of `--scan-rows` rows, at
//! each client count) runs for `--seconds` against each target in turn, so drift on the
//! machine falls on both alike. A client is a connection of its own that sends one request
//! at a time. Every answer is checked: a point read must return its row, a scan exactly
//! `--scan-rows` rows, a write and each loaded row an OK.

use std::str::FromStr;
use std::time::{Duration, Instant};

use anyhow::Context;
use basalt_bigtable_proto::google::bigtable::admin::v2 as admin;
use basalt_bigtable_proto::google::bigtable::v2 as data;
use bytes::Bytes;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tonic::transport::{Channel, Endpoint};

use crate::bench_report::{micros, row_key, Lines, Measured, Workload};

use admin::bigtable_table_admin_client::BigtableTableAdminClient;
use data::bigtable_client::BigtableClient;
use data::read_rows_response::cell_chunk::RowStatus;

const FAMILY: &str = "cf";
/// Rows per MutateRows request of the load.
const LOAD_BATCH: u64 = 500;
/// Concurrent MutateRows requests of the load.
const LOAD_STREAMS: u64 = 4;
/// How long a target has to start answering.
const CONNECT_DEADLINE: Duration = Duration::from_secs(30);

/// The options of a run.
#[derive(clap::Args, Debug, Clone)]
pub struct BigtableArgs {
    /// A Bigtable endpoint to measure, as `name=host:port` (repeat the flag for several; the
    /// ratio columns divide each target's rate by the last's).
    #[arg(long = "target", required = true)]
    targets: Vec<Target>,
    /// The instance whose table `bench` is (re)created on every target.
    #[arg(long, default_value = "projects/bench/instances/bench")]
    instance: String,
    #[command(flatten)]
    lines: Lines,
}

/// One endpoint under measurement.
#[derive(Debug, Clone)]
struct Target {
    name: String,
    addr: String,
}

impl FromStr for Target {
    type Err = String;

    fn from_str(s: &str) -> Result<Target, String> {
        match s.split_once('=') {
            Some((name, addr)) if !name.is_empty() && !addr.is_empty() => Ok(Target {
                name: name.to_owned(),
                addr: addr.to_owned(),
            }),
            _ => Err(format!("expected name=host:port, got {s:?}")),
        }
    }
}

/// Loads every target, runs every line against each in turn, and prints a line per
/// measurement and a Markdown table of them all.
///
/// # Errors
/// A target cannot be reached, refuses a request, or answers a read wrongly.
pub fn run(args: &BigtableArgs) -> anyhow::Result<()> {
    args.lines.check()?;
    let rt = tokio::runtime::Runtime::new()?;
    for t in &args.targets {
        let started = Instant::now();
        rt.block_on(load(args, t))
            .with_context(|| format!("loading {} ({})", t.name, t.addr))?;
        println!(
            "[{}] loaded {} rows in {:.1} s",
            t.name,
            args.lines.rows,
            started.elapsed().as_secs_f64()
        );
    }
    let names: Vec<&str> = args.targets.iter().map(|t| t.name.as_str()).collect();
    args.lines.run(&names, |t, w, clients| {
        rt.block_on(run_line(args, &args.targets[t], w, clients))
    })
}

fn key(n: u64) -> Bytes {
    Bytes::from(row_key(n))
}

fn table_name(args: &BigtableArgs) -> String {
    format!("{}/tables/bench", args.instance)
}

/// A connection to `addr`, retried until it answers or `CONNECT_DEADLINE` passes (a target
/// started just before the run may still be opening its port).
async fn connect(addr: &str) -> anyhow::Result<Channel> {
    let endpoint = Endpoint::from_shared(format!("http://{addr}"))?.tcp_nodelay(true);
    let deadline = Instant::now() + CONNECT_DEADLINE;
    loop {
        match endpoint.connect().await {
            Ok(c) => return Ok(c),
            Err(e) if Instant::now() >= deadline => {
                return Err(e).with_context(|| format!("connecting to {addr}"))
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
}

fn data_client(channel: Channel) -> BigtableClient<Channel> {
    BigtableClient::new(channel)
        .max_decoding_message_size(256 << 20)
        .max_encoding_message_size(256 << 20)
}

/// Recreates the table and writes every row, `LOAD_STREAMS` MutateRows at a time.
async fn load(args: &BigtableArgs, t: &Target) -> anyhow::Result<()> {
    let channel = connect(&t.addr).await?;
    let mut admin = BigtableTableAdminClient::new(channel.clone());
    let name = table_name(args);
    match admin
        .delete_table(admin::DeleteTableRequest { name: name.clone() })
        .await
    {
        Ok(_) => {}
        Err(s) if s.code() == tonic::Code::NotFound => {}
        Err(s) => return Err(s).context("deleting the previous table"),
    }
    let one_version = admin::GcRule {
        rule: Some(admin::gc_rule::Rule::MaxNumVersions(1)),
    };
    let family = admin::ColumnFamily {
        gc_rule: Some(one_version),
        value_type: None,
    };
    admin
        .create_table(admin::CreateTableRequest {
            parent: args.instance.clone(),
            table_id: "bench".into(),
            table: Some(admin::Table {
                column_families: [(FAMILY.to_owned(), family)].into_iter().collect(),
                ..admin::Table::default()
            }),
            initial_splits: Vec::new(),
        })
        .await
        .context("creating the table")?;
    let mut tasks = tokio::task::JoinSet::new();
    for stream in 0..LOAD_STREAMS {
        let (args, channel) = (args.clone(), channel.clone());
        tasks.spawn(async move { load_stream(&args, channel, stream).await });
    }
    while let Some(r) = tasks.join_next().await {
        r??;
    }
    Ok(())
}

/// Every `LOAD_STREAMS`th batch of rows, from the `stream`th.
async fn load_stream(args: &BigtableArgs, channel: Channel, stream: u64) -> anyhow::Result<()> {
    let mut client = data_client(channel);
    let mut rng = StdRng::seed_from_u64(stream);
    let mut first = stream * LOAD_BATCH;
    while first < args.lines.rows {
        let entries: Vec<_> = (first..(first + LOAD_BATCH).min(args.lines.rows))
            .map(|n| data::mutate_rows_request::Entry {
                row_key: key(n),
                mutations: row_mutations(args, &mut rng),
                ..Default::default()
            })
            .collect();
        let mut answers = client
            .mutate_rows(data::MutateRowsRequest {
                table_name: table_name(args),
                entries,
                ..Default::default()
            })
            .await?
            .into_inner();
        while let Some(a) = answers.message().await? {
            if let Some(bad) = a.entries.iter().find_map(|e| e.status.as_ref()) {
                anyhow::ensure!(bad.code == 0, "a row of the load failed: {bad:?}");
            }
        }
        first += LOAD_STREAMS * LOAD_BATCH;
    }
    Ok(())
}

/// A whole row: every field set, at the server's time.
fn row_mutations(args: &BigtableArgs, rng: &mut StdRng) -> Vec<data::Mutation> {
    (0..args.lines.field_count)
        .map(|f| {
            let value: Vec<u8> = (0..args.lines.field_length).map(|_| rng.gen()).collect();
            data::Mutation {
                mutation: Some(data::mutation::Mutation::SetCell(data::mutation::SetCell {
                    family_name: FAMILY.into(),
                    column_qualifier: Bytes::from(format!("field{f}")),
                    timestamp_micros: -1,
                    value: value.into(),
                })),
            }
        })
        .collect()
}

/// Runs one line against one target: `clients` connections, each sending requests one
/// after another until `--seconds` have passed.
async fn run_line(
    args: &BigtableArgs,
    t: &Target,
    w: Workload,
    clients: usize,
) -> anyhow::Result<Measured> {
    let mut channels = Vec::with_capacity(clients);
    for _ in 0..clients {
        channels.push(connect(&t.addr).await?);
    }
    let started = Instant::now();
    let deadline = started + Duration::from_secs_f64(args.lines.seconds);
    let mut tasks = tokio::task::JoinSet::new();
    for (i, channel) in channels.into_iter().enumerate() {
        let args = args.clone();
        tasks.spawn(async move { client_loop(&args, channel, w, i as u64, deadline).await });
    }
    let mut all = Vec::new();
    while let Some(r) = tasks.join_next().await {
        all.extend(r??);
    }
    anyhow::ensure!(
        !all.is_empty(),
        "no request finished in {} s",
        args.lines.seconds
    );
    Ok(Measured::from_latencies(all, started.elapsed()))
}

/// One client's requests until `deadline`: each one's latency in microseconds.
async fn client_loop(
    args: &BigtableArgs,
    channel: Channel,
    w: Workload,
    client: u64,
    deadline: Instant,
) -> anyhow::Result<Vec<u64>> {
    let mut c = data_client(channel);
    let mut rng = StdRng::seed_from_u64(1000 + client);
    let table_name = table_name(args);
    let mut latencies = Vec::new();
    while Instant::now() < deadline {
        // The values are the client's work, made before the clock starts.
        let mutations = match w {
            Workload::Write => row_mutations(args, &mut rng),
            Workload::Read | Workload::Scan => Vec::new(),
        };
        let started = Instant::now();
        match w {
            Workload::Write => {
                c.mutate_row(data::MutateRowRequest {
                    table_name: table_name.clone(),
                    row_key: key(rng.gen_range(0..args.lines.rows)),
                    mutations,
                    ..Default::default()
                })
                .await?;
            }
            Workload::Read => {
                let row_key = key(rng.gen_range(0..args.lines.rows));
                let rows = read(&mut c, &table_name, row_set_of_key(row_key.clone()), 0).await?;
                anyhow::ensure!(rows == 1, "row {row_key:?} read as {rows} rows");
            }
            Workload::Scan => {
                let start = key(rng.gen_range(0..args.lines.rows - args.lines.scan_rows));
                let rows = read(
                    &mut c,
                    &table_name,
                    row_set_from(start),
                    args.lines.scan_rows,
                )
                .await?;
                anyhow::ensure!(
                    rows == args.lines.scan_rows,
                    "a scan of {} rows read {rows}",
                    args.lines.scan_rows
                );
            }
        }
        latencies.push(micros(started.elapsed()));
    }
    Ok(latencies)
}

fn row_set_of_key(k: Bytes) -> data::RowSet {
    data::RowSet {
        row_keys: vec![k],
        row_ranges: Vec::new(),
    }
}

fn row_set_from(start: Bytes) -> data::RowSet {
    data::RowSet {
        row_keys: Vec::new(),
        row_ranges: vec![data::RowRange {
            start_key: Some(data::row_range::StartKey::StartKeyClosed(start)),
            end_key: None,
        }],
    }
}

/// Reads `rows` (at most `limit` of them, 0 for no limit) to the end of the stream: how
/// many rows were committed.
async fn read(
    c: &mut BigtableClient<Channel>,
    table_name: &str,
    rows: data::RowSet,
    limit: u64,
) -> anyhow::Result<u64> {
    let mut stream = c
        .read_rows(data::ReadRowsRequest {
            table_name: table_name.to_owned(),
            rows: Some(rows),
            rows_limit: i64::try_from(limit)?,
            ..Default::default()
        })
        .await?
        .into_inner();
    let mut committed = 0;
    while let Some(r) = stream.message().await? {
        committed += r
            .chunks
            .iter()
            .filter(|c| c.row_status == Some(RowStatus::CommitRow(true)))
            .count() as u64;
    }
    Ok(committed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_parse_as_name_equals_address() {
        let t: Target = "basalt=127.0.0.1:8086".parse().unwrap();
        assert_eq!(
            (t.name.as_str(), t.addr.as_str()),
            ("basalt", "127.0.0.1:8086")
        );
        assert!("127.0.0.1:8086".parse::<Target>().is_err());
        assert!("=127.0.0.1:8086".parse::<Target>().is_err());
        assert!("basalt=".parse::<Target>().is_err());
    }
}
