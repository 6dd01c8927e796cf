//! The `basalt` binary. `basalt bench` runs engine workloads in-process and prints throughput
//! and latency percentiles.

use std::path::PathBuf;

use anyhow::Context;
use basalt_bench::{BasaltEngine, Config, Workload};
use basalt_model::{ColumnFamilyDescriptor, Compression};
use basalt_storage::Options;
use clap::{Parser, Subcommand};

#[derive(Parser, Debug)]
#[command(name = "basalt", about = "An HBase-compatible wide-column database")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// The workloads `basalt bench` runs when none are named.
const DEFAULT_WORKLOADS: &str = "fillseq,fillrandom,overwrite,readrandom,readrandomcold,readseq,\
                                 seekrandom,readwhilewriting,fillsync1,fillsync8,fillsync32";

#[derive(Subcommand, Debug)]
enum Command {
    /// Runs engine workloads in-process: 16-byte keys, 100-byte values (db_bench's).
    Bench {
        /// Workloads in order: fillseq, fillrandom, overwrite, readrandom, readrandomcold,
        /// readseq, seekrandom, readwhilewriting, fillsyncN (N concurrent synced writers).
        /// Fills start from an empty store; the others use what the fills left.
        #[arg(long, value_delimiter = ',', default_value = DEFAULT_WORKLOADS)]
        workloads: Vec<Workload>,
        /// Keys in the store.
        #[arg(long, default_value_t = 1_000_000)]
        rows: u64,
        /// Operations of each read workload (default: as many as rows).
        #[arg(long, default_value_t = 0)]
        reads: u64,
        /// Puts of each fillsync workload, over all its writers.
        #[arg(long, default_value_t = 20_000)]
        synced_puts: u64,
        #[arg(long, default_value_t = 100)]
        value_size: usize,
        /// Block cache capacity in MiB.
        #[arg(long, default_value_t = 512)]
        cache_mib: usize,
        /// Data block size in KiB (HBase's default BLOCKSIZE is 64).
        #[arg(long, default_value_t = 64)]
        block_kib: u32,
        /// Data directory (a fresh temporary one when omitted; removed afterwards).
        #[arg(long)]
        data_dir: Option<PathBuf>,
    },
}

fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::Bench {
            workloads,
            rows,
            reads,
            synced_puts,
            value_size,
            cache_mib,
            block_kib,
            data_dir,
        } => {
            let cfg = Config {
                rows,
                value_size,
                reads,
                synced_puts,
            };
            bench(&workloads, &cfg, cache_mib, block_kib, data_dir)
        }
    }
}

fn bench(
    workloads: &[Workload],
    cfg: &Config,
    cache_mib: usize,
    block_kib: u32,
    data_dir: Option<PathBuf>,
) -> anyhow::Result<()> {
    let temporary = data_dir.is_none();
    let dir = data_dir.unwrap_or_else(|| {
        std::env::temp_dir().join(format!("basalt-bench-{}", std::process::id()))
    });
    let options = Options {
        block_cache_bytes: cache_mib << 20,
        ..Options::default()
    };
    let family = ColumnFamilyDescriptor::new("f")
        .with_block_size_bytes(block_kib << 10)
        .with_compression(Compression::None);
    let mut engine = BasaltEngine::open(&dir, options, family).context("opening the database")?;
    println!(
        "basalt: {} rows, {}-byte values, {cache_mib} MiB block cache, {block_kib} KiB blocks",
        cfg.rows, cfg.value_size
    );
    basalt_bench::run(&mut engine, workloads, cfg, |r| println!("{r}"))?;
    let stats = engine.database()?.engine_stats();
    println!(
        "flushes {}, minor compactions {}, major compactions {}, delayed writes {}",
        stats.flushes, stats.minor_compactions, stats.major_compactions, stats.delayed_writes
    );
    engine.close()?;
    if temporary {
        std::fs::remove_dir_all(&dir).ok();
    }
    Ok(())
}
