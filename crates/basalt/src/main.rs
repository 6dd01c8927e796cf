//! The `basalt` binary. `basalt bench` runs engine workloads in-process and prints throughput
//! and latency percentiles.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context;
use basalt_model::ops::{Get, Put};
use basalt_model::{ColumnFamilyDescriptor, Durability, TableDescriptor, TableName};
use basalt_storage::Database;
use clap::{Parser, Subcommand, ValueEnum};
use rand::{rngs::StdRng, Rng, SeedableRng};

#[derive(Parser, Debug)]
#[command(name = "basalt", about = "An HBase-compatible wide-column database")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Runs an engine workload in-process (16-byte keys, 100-byte values, one thread).
    Bench {
        /// Workloads in order; `readrandom` reads keys written by an earlier `fillrandom`.
        #[arg(long, value_delimiter = ',', default_value = "fillrandom,readrandom")]
        workloads: Vec<Workload>,
        #[arg(long, default_value_t = 1_000_000)]
        rows: u64,
        /// Data directory (a fresh temporary one when omitted).
        #[arg(long)]
        data_dir: Option<PathBuf>,
        /// Per-write durability: async (WAL on, synced in the background) or sync.
        #[arg(long, value_enum, default_value_t = Sync::Async)]
        sync: Sync,
    },
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Workload {
    Fillrandom,
    Readrandom,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Sync {
    Async,
    Sync,
}

fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::Bench {
            workloads,
            rows,
            data_dir,
            sync,
        } => bench(&workloads, rows, data_dir, sync),
    }
}

fn key(i: u64) -> Vec<u8> {
    // 16 bytes: a scrambled prefix spreads keys over the key space, the index keeps them unique.
    let mut k = (i.wrapping_mul(0x9E37_79B9_7F4A_7C15))
        .to_be_bytes()
        .to_vec();
    k.extend_from_slice(&i.to_be_bytes());
    k
}

fn bench(
    workloads: &[Workload],
    rows: u64,
    data_dir: Option<PathBuf>,
    sync: Sync,
) -> anyhow::Result<()> {
    let tmp;
    let dir = match data_dir {
        Some(d) => d,
        None => {
            tmp = std::env::temp_dir().join(format!("basalt-bench-{}", std::process::id()));
            tmp.clone()
        }
    };
    let db = Database::open(&dir).context("opening the database")?;
    let name = TableName::parse("bench")?;
    if !db.table_exists(&name) {
        db.create_table(
            TableDescriptor::new(&name, [ColumnFamilyDescriptor::new("f")]),
            &[],
        )?;
    }
    let t = db.table("bench")?;
    let durability = match sync {
        Sync::Async => Durability::AsyncWal,
        Sync::Sync => Durability::SyncWal,
    };
    let value = vec![b'v'; 100];
    let mut rng = StdRng::seed_from_u64(42);
    for w in workloads {
        let mut lat = Vec::with_capacity(usize::try_from(rows).unwrap_or(0));
        let start = Instant::now();
        for _ in 0..rows {
            let i = rng.gen_range(0..rows);
            let t0 = Instant::now();
            match w {
                Workload::Fillrandom => t.put(
                    Put::new(key(i))
                        .add("f", "q", value.clone())
                        .with_durability(durability),
                )?,
                Workload::Readrandom => {
                    t.get(Get::new(key(i)))?;
                }
            }
            lat.push(t0.elapsed().as_nanos());
        }
        let secs = start.elapsed().as_secs_f64();
        lat.sort_unstable();
        let pct = |p: f64| lat[((lat.len() as f64 - 1.0) * p) as usize] as f64 / 1000.0;
        println!(
            "{w:?}: {rows} ops in {secs:.2}s = {:.0} ops/s; latency p50 {:.1} us, p99 {:.1} us, p99.9 {:.1} us",
            rows as f64 / secs,
            pct(0.5),
            pct(0.99),
            pct(0.999)
        );
    }
    drop(t);
    db.close()?;
    if dir.starts_with(std::env::temp_dir())
        && dir
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("basalt-bench-"))
    {
        std::fs::remove_dir_all(&dir).ok();
    }
    Ok(())
}
