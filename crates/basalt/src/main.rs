//! The `basalt` binary. `basalt shell` is the HBase shell; `basalt bench` runs engine
//! workloads in-process and prints throughput and latency percentiles.

use std::path::PathBuf;

mod bench_report;
mod bigtable_bench;
mod cluster;
mod gateway;
mod gateway_bench;
mod hbck;
mod server;
mod shell;
mod ycsb;

use anyhow::Context;

/// mimalloc serves the many small, short-lived allocations of requests and memstore cells
/// across threads faster than glibc's allocator, whose per-thread arenas grow and trim.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
use basalt_bench::{BasaltEngine, Config, Workload};
use basalt_model::{ColumnFamilyDescriptor, Compression};
use basalt_node::Options;
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
    /// The standalone server: the native gRPC API on a local data directory. Stops cleanly
    /// on SIGINT or SIGTERM.
    Server(server::ServerArgs),
    /// A cluster's master (HBase's HMaster): elected through ZooKeeper, keeps the catalog
    /// on shared storage and assigns regions. Start several: the others wait as backups.
    Master(cluster::RoleArgs),
    /// A cluster's region server: serves the regions the master assigns it, from shared
    /// storage, with its log there.
    Regionserver(cluster::RoleArgs),
    /// HBase's Thrift1 gateway as its own process, over a server's native API
    /// (`hbase thrift start`). Stops on SIGINT or SIGTERM.
    Thrift(gateway::ThriftArgs),
    /// Google Bigtable's v2 data and table admin APIs as their own process, over a
    /// server's native API. Stops on SIGINT or SIGTERM.
    Bigtable(gateway::BigtableArgs),
    /// HBase's REST gateway (Stargate) as its own process, over a server's native API
    /// (`hbase rest start`). Stops on SIGINT or SIGTERM.
    Rest(gateway::RestArgs),
    /// The HBase shell, on a data directory opened in this process (refused while a server
    /// holds it). Runs a script file, or what stdin pipes in, or interactively.
    Shell {
        /// A server to talk to (`host:port`) instead of opening a data directory.
        #[arg(long, conflicts_with = "data_dir")]
        server: Option<String>,
        /// The data directory to open.
        #[arg(long, default_value = "./basalt-data")]
        data_dir: PathBuf,
        /// Non-interactive: read commands from stdin even on a terminal. Scripts and piped
        /// input always stop at the first error with a non-zero exit code.
        #[arg(short = 'n', long = "noninteractive")]
        noninteractive: bool,
        /// A script of shell commands to run instead of reading the terminal.
        script: Option<PathBuf>,
    },
    /// Checks a data directory offline (no server may hold it) and repairs what the flags ask
    /// for: a lost catalog or manifest, damaged store files, a damaged WAL (HBase's hbck2).
    Hbck(hbck::HbckArgs),
    /// Runs engine workloads in-process: 16-byte keys, 100-byte values (db_bench's); or,
    /// as `basalt bench ycsb`, YCSB's core workloads against a server; or, as `basalt bench
    /// bigtable`, a load through the Bigtable API against one or more endpoints.
    #[command(args_conflicts_with_subcommands = true)]
    Bench {
        #[command(subcommand)]
        against: Option<BenchCommand>,
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
        /// Region split threshold (`hbase.hregion.max.filesize`) in MiB; HBase's 10 GiB
        /// when omitted.
        #[arg(long)]
        max_filesize_mib: Option<u64>,
        /// Regions the table starts with, of equal key ranges (a pre-split table).
        #[arg(long, default_value_t = 1)]
        pre_split: u64,
        /// The table's MEMSTORE_FLUSHSIZE in MiB (HBase's 128 when omitted).
        #[arg(long)]
        flush_mib: Option<u64>,
    },
}

#[derive(Subcommand, Debug)]
enum BenchCommand {
    /// YCSB's core workloads A-F against a server through the client.
    Ycsb(ycsb::YcsbArgs),
    /// Single-row writes, point reads and scans through the Bigtable v2 API, against one or
    /// more endpoints in turn (Basalt's gateway beside Google's emulator, say).
    Bigtable(bigtable_bench::BigtableArgs),
    /// Single-row writes, point reads and scanners through HBase's REST gateway (JSON and
    /// protobuf) and its Thrift gateway, one after the other in one run.
    Gateways(gateway_bench::GatewaysArgs),
}

fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::Server(args) => server::run(args),
        Command::Master(args) => cluster::run(cluster::Kind::Master, args),
        Command::Regionserver(args) => cluster::run(cluster::Kind::RegionServer, args),
        Command::Thrift(args) => gateway::run(&args),
        Command::Bigtable(args) => gateway::run_bigtable(&args),
        Command::Rest(args) => gateway::run_rest(&args),
        Command::Hbck(args) => std::process::exit(hbck::run(&args)?),
        Command::Shell {
            server,
            data_dir,
            noninteractive,
            script,
        } => {
            let target = match server {
                Some(addr) => shell::Target::Server(addr),
                None => shell::Target::DataDir(data_dir),
            };
            let code = shell::run(&target, noninteractive, script.as_deref())?;
            std::process::exit(code);
        }
        Command::Bench {
            against: Some(BenchCommand::Ycsb(args)),
            ..
        } => ycsb::run(&args),
        Command::Bench {
            against: Some(BenchCommand::Bigtable(args)),
            ..
        } => bigtable_bench::run(&args),
        Command::Bench {
            against: Some(BenchCommand::Gateways(args)),
            ..
        } => gateway_bench::run(&args),
        Command::Bench {
            against: None,
            workloads,
            rows,
            reads,
            synced_puts,
            value_size,
            cache_mib,
            block_kib,
            data_dir,
            max_filesize_mib,
            pre_split,
            flush_mib,
        } => {
            let cfg = Config {
                rows,
                value_size,
                reads,
                synced_puts,
            };
            let mut options = Options {
                block_cache_bytes: cache_mib << 20,
                ..Options::default()
            };
            if let Some(m) = max_filesize_mib {
                options.max_filesize_bytes = m << 20;
            }
            let layout = Layout {
                block_kib,
                pre_split,
                flush_bytes: flush_mib.map(|m| m << 20),
                data_dir,
            };
            bench(&workloads, &cfg, options, &layout)
        }
    }
}

/// How the benchmark's table is laid out.
struct Layout {
    block_kib: u32,
    pre_split: u64,
    flush_bytes: Option<u64>,
    data_dir: Option<PathBuf>,
}

fn bench(
    workloads: &[Workload],
    cfg: &Config,
    options: Options,
    layout: &Layout,
) -> anyhow::Result<()> {
    let temporary = layout.data_dir.is_none();
    let dir = layout.data_dir.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("basalt-bench-{}", std::process::id()))
    });
    let cache_mib = options.block_cache_bytes >> 20;
    let max_mib = options.max_filesize_bytes >> 20;
    let block_kib = layout.block_kib;
    let family = ColumnFamilyDescriptor::new("f")
        .with_block_size_bytes(block_kib << 10)
        .with_compression(Compression::None);
    let mut engine = BasaltEngine::open(&dir, options, family).context("opening the database")?;
    if layout.pre_split > 1 || layout.flush_bytes.is_some() {
        engine.recreate_table(layout.pre_split, cfg.rows, layout.flush_bytes)?;
    }
    println!(
        "basalt: {} rows, {}-byte values, {cache_mib} MiB block cache, {block_kib} KiB blocks, \
         {} regions to start, split past {max_mib} MiB",
        cfg.rows, cfg.value_size, layout.pre_split
    );
    basalt_bench::run(&mut engine, workloads, cfg, |r| println!("{r}"))?;
    let db = engine.database()?;
    let stats = db.engine_stats();
    let regions = db.regions(&basalt_model::TableName::parse("bench")?)?.len();
    println!(
        "flushes {}, minor compactions {}, major compactions {}, delayed writes {}, regions {regions}",
        stats.flushes, stats.minor_compactions, stats.major_compactions, stats.delayed_writes
    );
    engine.close()?;
    if temporary {
        std::fs::remove_dir_all(&dir).ok();
    }
    Ok(())
}
