//! Basalt and RocksDB side by side: the same `basalt_bench` workloads, the same process, the
//! same run, comparable settings (WAL on, sync off or on as the workload says, the same block
//! size, no compression, the same block cache size, 10-bit blooms, index and filter blocks in
//! the cache). Prints each engine's figures and Basalt's ratio to RocksDB.
//!
//! ```text
//! cd bench && cargo run --release -- --rows 1000000
//! cd bench && cargo run --release -- --rows 1000000 --interleave --rounds 5
//! cd bench && cargo run --release -- --rows 1000000 --interleave --compact
//! ```
//!
//! By default all of Basalt's workloads run, then all of RocksDB's, minutes apart. On a
//! machine whose speed moves from minute to minute that puts the host's drift into every
//! ratio; `--interleave` runs each workload on one engine and then at once on the other
//! (the first alternating), and repeats the read-only ones, so that each ratio is of two runs
//! seconds apart and their spread shows. It keeps both engines open in one process, which is
//! not neutral: on one host RocksDB's seekrandom ran about a quarter slower interleaved than as
//! written, and Basalt's did not (`BENCHMARKS.md`), so a ratio is checked both ways.
//!
//! How a store file came into the OS page cache decides what a block read that misses the
//! block cache costs: the kernel copies a file written in MiB chunks, or read back whole,
//! from large folios, and one read back a block at a time by random reads from 4 KiB pages,
//! about half as fast (`BENCHMARKS.md`). Stores kept in `--data-dir` from run to run drift
//! apart in this, each with its own history; `--reread` evicts both stores' files from the
//! page cache and reads each back whole before the workloads, so that both start alike.

use std::path::{Path, PathBuf};

use anyhow::Context;
use basalt_bench::{BasaltEngine, Config, Engine, Report, Workload};
use basalt_model::{BloomType, ColumnFamilyDescriptor, Compression};
use basalt_node::Options;
use clap::Parser;
use rocksdb::{BlockBasedOptions, Cache, WaitForCompactOptions, WriteOptions, DB};

/// The allocator the `basalt` binary ships with (its `main.rs`), so that Basalt's side is the
/// engine as a server runs it. RocksDB's C++ code allocates through libc either way: the
/// global allocator is Rust's alone.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser, Debug)]
struct Args {
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "fillseq,fillrandom,overwrite,readrandom,readrandomcold,readseq,seekrandom,readwhilewriting,fillsync1,fillsync8,fillsync32"
    )]
    workloads: Vec<Workload>,
    #[arg(long, default_value_t = 1_000_000)]
    rows: u64,
    #[arg(long, default_value_t = 0)]
    reads: u64,
    #[arg(long, default_value_t = 20_000)]
    synced_puts: u64,
    #[arg(long, default_value_t = 100)]
    value_size: usize,
    #[arg(long, default_value_t = 512)]
    cache_mib: usize,
    #[arg(long, default_value_t = 64)]
    block_kib: usize,
    /// Where both stores live (two subdirectories); a temporary directory by default.
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// Run only this engine: basalt or rocksdb.
    #[arg(long)]
    only: Option<String>,
    /// Run each workload on both engines in turn, each engine settled after its run so that
    /// its background work does not overlap the other's timing; both stay open throughout.
    #[arg(long, conflicts_with = "only")]
    interleave: bool,
    /// With `--interleave`: runs of each read-only workload on each engine.
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// With `--interleave`: after each workload that writes, compact both stores whole
    /// (untimed), so that the reads after it meet one sorted run in either engine, whatever
    /// the background compactions had left: a comparison of two builds of one engine then
    /// compares their read paths, not the compactions each happened to run.
    #[arg(long, requires = "interleave")]
    compact: bool,
    /// Before the workloads, evict both stores' files from the OS page cache and read each
    /// back whole (see the module's header).
    #[arg(long, requires = "data_dir")]
    reread: bool,
}

struct RocksEngine {
    dir: PathBuf,
    cache_bytes: usize,
    block_bytes: usize,
    db: Option<DB>,
    sync: WriteOptions,
    nosync: WriteOptions,
}

impl RocksEngine {
    fn open(dir: &Path, cache_bytes: usize, block_bytes: usize) -> anyhow::Result<RocksEngine> {
        let mut sync = WriteOptions::default();
        sync.set_sync(true);
        let mut e = RocksEngine {
            dir: dir.to_owned(),
            cache_bytes,
            block_bytes,
            db: None,
            sync,
            nosync: WriteOptions::default(),
        };
        e.reopen()?;
        Ok(e)
    }

    fn reopen(&mut self) -> anyhow::Result<()> {
        self.db = None;
        let mut table = BlockBasedOptions::default();
        table.set_block_size(self.block_bytes);
        table.set_block_cache(&Cache::new_lru_cache(self.cache_bytes));
        table.set_bloom_filter(10.0, false);
        table.set_cache_index_and_filter_blocks(true);
        let mut opts = rocksdb::Options::default();
        opts.create_if_missing(true);
        opts.set_block_based_table_factory(&table);
        opts.set_compression_type(rocksdb::DBCompressionType::None);
        opts.set_max_background_jobs(2);
        self.db = Some(DB::open(&opts, &self.dir)?);
        Ok(())
    }

    fn db(&self) -> anyhow::Result<&DB> {
        self.db.as_ref().context("closed")
    }

    /// Compacts the whole key range into the last level and waits for it.
    fn compact_fully(&self) -> anyhow::Result<()> {
        let db = self.db()?;
        db.compact_range::<&[u8], &[u8]>(None, None);
        db.wait_for_compact(&WaitForCompactOptions::default())?;
        Ok(())
    }
}

impl Engine for RocksEngine {
    fn put(&self, key: &[u8], value: &[u8], sync: bool) -> anyhow::Result<()> {
        let opts = if sync { &self.sync } else { &self.nosync };
        Ok(self.db()?.put_opt(key, value, opts)?)
    }

    fn get(&self, key: &[u8]) -> anyhow::Result<bool> {
        Ok(self.db()?.get_pinned(key)?.is_some())
    }

    fn seek_next(&self, start: &[u8], n: usize) -> anyhow::Result<usize> {
        let mut it = self.db()?.raw_iterator();
        it.seek(start);
        let mut read = 0;
        while it.valid() && read < n {
            std::hint::black_box(it.value());
            read += 1;
            it.next();
        }
        it.status()?;
        Ok(read)
    }

    fn scan_all(&self) -> anyhow::Result<usize> {
        let mut it = self.db()?.raw_iterator();
        it.seek_to_first();
        let mut read = 0;
        while it.valid() {
            std::hint::black_box(it.value());
            read += 1;
            it.next();
        }
        it.status()?;
        Ok(read)
    }

    fn settle(&self) -> anyhow::Result<()> {
        let db = self.db()?;
        db.flush()?;
        db.wait_for_compact(&WaitForCompactOptions::default())?;
        Ok(())
    }

    fn reset(&mut self) -> anyhow::Result<()> {
        self.db = None;
        if self.dir.exists() {
            std::fs::remove_dir_all(&self.dir)?;
        }
        self.reopen()
    }

    fn drop_cache(&mut self) -> anyhow::Result<()> {
        self.reopen()
    }
}

fn main() -> anyhow::Result<()> {
    let a = Args::parse();
    let cfg = Config {
        rows: a.rows,
        value_size: a.value_size,
        reads: a.reads,
        synced_puts: a.synced_puts,
    };
    let temporary = a.data_dir.is_none();
    let root = a.data_dir.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("basalt-vs-rocksdb-{}", std::process::id()))
    });
    let cache = a.cache_mib << 20;
    println!(
        "{} rows, {}-byte values, 16-byte keys, {} MiB block cache, {} KiB blocks, no compression",
        a.rows, a.value_size, a.cache_mib, a.block_kib
    );
    let want = |e: &str| a.only.as_deref().is_none_or(|o| o == e);
    if a.reread {
        for engine in ["basalt", "rocksdb"] {
            let (files, bytes) = reread(&root.join(engine))?;
            println!(
                "{engine}: {files} files, {bytes} bytes evicted from the page cache and read back"
            );
        }
    }
    let open_basalt = || -> anyhow::Result<BasaltEngine> {
        let options = Options {
            block_cache_bytes: cache,
            ..Options::default()
        };
        let family = ColumnFamilyDescriptor::new("f")
            .with_block_size_bytes(u32::try_from(a.block_kib << 10)?)
            .with_compression(Compression::None)
            .with_bloom_filter(BloomType::Row);
        BasaltEngine::open(&root.join("basalt"), options, family)
    };
    if a.interleave {
        let mut b = open_basalt()?;
        let mut r = RocksEngine::open(&root.join("rocksdb"), cache, a.block_kib << 10)?;
        interleave(&mut b, &mut r, &a.workloads, &cfg, a.rounds, a.compact)?;
        b.close()?;
        if temporary {
            std::fs::remove_dir_all(&root).ok();
        }
        return Ok(());
    }
    let mut basalt = Vec::new();
    if want("basalt") {
        let mut e = open_basalt()?;
        println!("== basalt");
        basalt = basalt_bench::run(&mut e, &a.workloads, &cfg, |r| println!("{r}"))?;
        e.close()?;
    }
    let mut rocks = Vec::new();
    if want("rocksdb") {
        let mut e = RocksEngine::open(&root.join("rocksdb"), cache, a.block_kib << 10)?;
        println!("== rocksdb");
        rocks = basalt_bench::run(&mut e, &a.workloads, &cfg, |r| println!("{r}"))?;
    }
    if !basalt.is_empty() && !rocks.is_empty() {
        println!("== basalt / rocksdb (throughput ratio)");
        for (b, r) in basalt.iter().zip(&rocks) {
            print_ratio(b, r);
        }
    }
    if temporary {
        std::fs::remove_dir_all(&root).ok();
    }
    Ok(())
}

/// Each workload on both engines in turn (see the module's header), then each read-only
/// workload's ratios over `rounds` runs: their median and their range. With `compact`, both
/// stores are compacted whole after each workload that writes.
fn interleave(
    basalt: &mut BasaltEngine,
    rocks: &mut RocksEngine,
    workloads: &[Workload],
    cfg: &Config,
    rounds: usize,
    compact: bool,
) -> anyhow::Result<()> {
    let mut summary = Vec::new();
    for (i, &w) in workloads.iter().enumerate() {
        let compact_after = compact && !w.is_read_only();
        let runs = if w.is_read_only() { rounds.max(1) } else { 1 };
        let mut ratios = Vec::with_capacity(runs);
        for round in 0..runs {
            let (b, r) = if (i + round) % 2 == 0 {
                let b = run_settled(basalt, "basalt", w, cfg, i)?;
                (b, run_settled(rocks, "rocksdb", w, cfg, i)?)
            } else {
                let r = run_settled(rocks, "rocksdb", w, cfg, i)?;
                (run_settled(basalt, "basalt", w, cfg, i)?, r)
            };
            ratios.push(b.ops_per_sec() / r.ops_per_sec());
        }
        if compact_after {
            basalt.major_compact()?;
            rocks.compact_fully()?;
        }
        summary.push((w, ratios));
    }
    println!("== basalt / rocksdb (throughput ratio of each round; median, range)");
    for (w, mut ratios) in summary {
        let each: Vec<String> = ratios.iter().map(|x| format!("{x:.2}")).collect();
        ratios.sort_by(f64::total_cmp);
        println!(
            "{:<17} {:.2}x (median), {:.2}–{:.2}; rounds: {}",
            w.to_string(),
            ratios[ratios.len() / 2],
            ratios[0],
            ratios[ratios.len() - 1],
            each.join(", ")
        );
    }
    Ok(())
}

/// Runs `w` on `engine`, prints its report, and lets the engine's background work finish
/// before the other engine's turn (untimed).
fn run_settled(
    engine: &mut dyn Engine,
    name: &str,
    w: Workload,
    cfg: &Config,
    index: usize,
) -> anyhow::Result<Report> {
    let report = basalt_bench::run_workload(engine, w, cfg, index)?;
    println!("{name:<8} {report}");
    engine.settle()?;
    Ok(report)
}

fn print_ratio(b: &Report, r: &Report) {
    println!(
        "{:<17} {:>10.0} vs {:>10.0} ops/s = {:.2}x",
        b.workload.to_string(),
        b.ops_per_sec(),
        r.ops_per_sec(),
        b.ops_per_sec() / r.ops_per_sec()
    );
}

/// Evicts every file under `dir` from the OS page cache and reads it back whole, in MiB
/// reads: the files' pages then lie as the kernel's readahead places them, for every store
/// alike. Returns the files and bytes read.
fn reread(dir: &Path) -> anyhow::Result<(usize, u64)> {
    use std::io::Read;
    let (mut files, mut bytes) = (0, 0);
    let mut buf = vec![0u8; 1 << 20];
    let mut dirs = vec![dir.to_owned()];
    while let Some(d) = dirs.pop() {
        for entry in std::fs::read_dir(&d).with_context(|| format!("listing {}", d.display()))? {
            let path = entry?.path();
            if path.is_dir() {
                dirs.push(path);
                continue;
            }
            let mut f = std::fs::File::open(&path)?;
            // Dirty pages are not evicted: written out first.
            f.sync_data()?;
            rustix::fs::fadvise(&f, 0, None, rustix::fs::Advice::DontNeed)?;
            loop {
                let n = f.read(&mut buf)?;
                if n == 0 {
                    break;
                }
                bytes += n as u64;
            }
            files += 1;
        }
    }
    Ok((files, bytes))
}
