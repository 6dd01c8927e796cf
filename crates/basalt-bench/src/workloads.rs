//! The workloads and their measurement.

use std::time::{Duration, Instant};

use anyhow::Context;
use rand::{rngs::StdRng, Rng, SeedableRng};

use crate::{key, permuted, Engine};

/// One workload of `basalt bench`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Workload {
    /// Keys in order into an empty store.
    Fillseq,
    /// Every key once, in random order, into an empty store.
    Fillrandom,
    /// Every key again, in another random order.
    Overwrite,
    /// Random gets with the block cache warm (a full scan first).
    Readrandom,
    /// Random gets right after the block cache was emptied (the OS page cache stays warm).
    ReadrandomCold,
    /// A full scan, in order.
    Readseq,
    /// Seek to a random key, then read the next 100.
    Seekrandom,
    /// Random gets while another thread overwrites at full speed.
    Readwhilewriting,
    /// Synced puts (fdatasync before acknowledging) from this many concurrent writers.
    Fillsync(usize),
}

impl Workload {
    /// Whether the workload leaves the store as it found it, so that it can be run again on
    /// the same data (its measurement repeated).
    #[must_use]
    pub fn is_read_only(self) -> bool {
        matches!(
            self,
            Workload::Readrandom
                | Workload::ReadrandomCold
                | Workload::Readseq
                | Workload::Seekrandom
        )
    }
}

impl std::str::FromStr for Workload {
    type Err = anyhow::Error;

    fn from_str(s: &str) -> anyhow::Result<Workload> {
        Ok(match s {
            "fillseq" => Workload::Fillseq,
            "fillrandom" => Workload::Fillrandom,
            "overwrite" => Workload::Overwrite,
            "readrandom" => Workload::Readrandom,
            "readrandomcold" => Workload::ReadrandomCold,
            "readseq" => Workload::Readseq,
            "seekrandom" => Workload::Seekrandom,
            "readwhilewriting" => Workload::Readwhilewriting,
            other => match other.strip_prefix("fillsync") {
                Some(n) => Workload::Fillsync(n.parse().context("fillsyncN: N writers")?),
                None => anyhow::bail!("unknown workload {other}"),
            },
        })
    }
}

impl std::fmt::Display for Workload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Workload::Fillsync(n) => write!(f, "fillsync{n}"),
            other => write!(f, "{}", format!("{other:?}").to_lowercase()),
        }
    }
}

/// Sizes of a run.
#[derive(Clone, Debug)]
pub struct Config {
    /// Keys in the store (`--rows`).
    pub rows: u64,
    pub value_size: usize,
    /// Operations of the read and seek workloads (0: as many as rows).
    pub reads: u64,
    /// Puts of each fillsync workload, over all writers.
    pub synced_puts: u64,
}

/// What one workload measured.
#[derive(Clone, Debug)]
pub struct Report {
    pub workload: Workload,
    pub ops: u64,
    pub elapsed: Duration,
    /// Latency percentiles of single operations, in microseconds: p50, p99, p99.9.
    pub p50_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    /// Entries read (scans) or found (gets), where that says more than `ops`.
    pub entries: u64,
    /// Puts made beside the reads (readwhilewriting's writer): the load the reads ran
    /// against, which a faster writer makes heavier.
    pub writes: u64,
}

impl Report {
    /// Operations per second.
    #[must_use]
    pub fn ops_per_sec(&self) -> f64 {
        self.ops as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:<17} {:>10} ops in {:>7.2}s = {:>10.0} ops/s",
            self.workload.to_string(),
            self.ops,
            self.elapsed.as_secs_f64(),
            self.ops_per_sec(),
        )?;
        if !self.p50_us.is_nan() {
            write!(
                f,
                "; p50 {:>8.1} us, p99 {:>8.1} us, p99.9 {:>8.1} us",
                self.p50_us, self.p99_us, self.p999_us
            )?;
        }
        if self.entries != self.ops {
            write!(f, "; {} entries", self.entries)?;
        }
        if self.writes > 0 {
            let per_sec = self.writes as f64 / self.elapsed.as_secs_f64().max(1e-9);
            write!(f, "; {per_sec:.0} writes/s beside")?;
        }
        Ok(())
    }
}

/// Latencies of one thread, in nanoseconds.
#[derive(Default)]
struct Latencies(Vec<u64>);

impl Latencies {
    fn time<T>(&mut self, f: impl FnOnce() -> T) -> T {
        let t = Instant::now();
        let out = f();
        self.0
            .push(u64::try_from(t.elapsed().as_nanos()).unwrap_or(u64::MAX));
        out
    }
}

fn report(workload: Workload, elapsed: Duration, mut lat: Vec<u64>, entries: u64) -> Report {
    lat.sort_unstable();
    let pct = |p: f64| {
        let i = ((lat.len().saturating_sub(1)) as f64 * p) as usize;
        lat.get(i).copied().unwrap_or(0) as f64 / 1000.0
    };
    Report {
        workload,
        ops: lat.len() as u64,
        elapsed,
        p50_us: pct(0.5),
        p99_us: pct(0.99),
        p999_us: pct(0.999),
        entries,
        writes: 0,
    }
}

/// Runs `workloads` in order against `engine`.
///
/// # Errors
/// The first engine error.
pub fn run(
    engine: &mut dyn Engine,
    workloads: &[Workload],
    cfg: &Config,
    mut on_report: impl FnMut(&Report),
) -> anyhow::Result<Vec<Report>> {
    let mut out = Vec::new();
    for (i, w) in workloads.iter().enumerate() {
        let r = run_workload(engine, *w, cfg, i)?;
        on_report(&r);
        out.push(r);
    }
    Ok(out)
}

/// Runs workload `w`, the `index`th of a list (its random keys are drawn from a seed of its
/// own place in the list, so that every engine and every repetition reads the same keys).
///
/// # Errors
/// The first engine error.
pub fn run_workload(
    engine: &mut dyn Engine,
    w: Workload,
    cfg: &Config,
    index: usize,
) -> anyhow::Result<Report> {
    run_one(engine, w, cfg, 42 + index as u64)
}

fn run_one(
    engine: &mut dyn Engine,
    w: Workload,
    cfg: &Config,
    seed: u64,
) -> anyhow::Result<Report> {
    let n = cfg.rows;
    let reads = if cfg.reads == 0 { n } else { cfg.reads };
    let value = vec![b'v'; cfg.value_size];
    let mut rng = StdRng::seed_from_u64(seed);
    let mut lat = Latencies(Vec::with_capacity(
        usize::try_from(n.max(reads)).unwrap_or(0),
    ));
    let mut entries = 0;
    match w {
        Workload::Fillsync(writers) => return fill_sync(engine, writers, cfg, &value),
        Workload::Readwhilewriting => return read_while_writing(engine, reads, n, &value),
        Workload::Fillseq | Workload::Fillrandom => engine.reset()?,
        Workload::Readrandom | Workload::Readseq | Workload::Seekrandom => {
            engine.settle()?;
            // Warm: a scan puts every block in the cache (if it fits).
            engine.scan_all()?;
        }
        Workload::ReadrandomCold => {
            engine.settle()?;
            engine.drop_cache()?;
        }
        Workload::Overwrite => {}
    }
    let start = Instant::now();
    match w {
        Workload::Fillseq => {
            for i in 0..n {
                lat.time(|| engine.put(&key(i), &value, false))?;
            }
        }
        Workload::Fillrandom | Workload::Overwrite => {
            let salt = if w == Workload::Overwrite { n / 3 } else { 0 };
            for i in 0..n {
                let k = key(permuted(i + salt, n));
                lat.time(|| engine.put(&k, &value, false))?;
            }
        }
        Workload::Readrandom | Workload::ReadrandomCold => {
            for _ in 0..reads {
                let k = key(rng.gen_range(0..n));
                entries += u64::from(lat.time(|| engine.get(&k))?);
            }
        }
        Workload::Readseq => {
            // `reads` above `rows` repeats the scan (longer runs for profiles).
            for _ in 0..(reads / n.max(1)).max(1) {
                entries += lat.time(|| engine.scan_all())? as u64;
            }
        }
        Workload::Seekrandom => {
            for _ in 0..reads / 10 {
                let k = key(rng.gen_range(0..n));
                entries += lat.time(|| engine.seek_next(&k, 100))? as u64;
            }
        }
        Workload::Fillsync(_) | Workload::Readwhilewriting => unreachable!("handled above"),
    }
    let elapsed = start.elapsed();
    let mut r = report(w, elapsed, lat.0, entries);
    match w {
        Workload::Fillseq | Workload::Fillrandom | Workload::Overwrite => r.entries = r.ops,
        Workload::Readseq => {
            // A scan is reported as entries per second; its one latency is the whole scan.
            r.ops = entries;
            r.entries = entries;
            (r.p50_us, r.p99_us, r.p999_us) = (f64::NAN, f64::NAN, f64::NAN);
        }
        _ => {}
    }
    Ok(r)
}

/// `writers` threads share `cfg.synced_puts` synced puts of random keys.
fn fill_sync(
    engine: &dyn Engine,
    writers: usize,
    cfg: &Config,
    value: &[u8],
) -> anyhow::Result<Report> {
    let writers = writers.max(1);
    let per = cfg.synced_puts / writers as u64;
    let n = cfg.rows.max(1);
    let start = Instant::now();
    let lats = std::thread::scope(|s| {
        let handles: Vec<_> = (0..writers)
            .map(|t| {
                s.spawn(move || -> anyhow::Result<Vec<u64>> {
                    let mut rng = StdRng::seed_from_u64(1000 + t as u64);
                    let mut lat = Latencies::default();
                    for _ in 0..per {
                        let k = key(rng.gen_range(0..n));
                        lat.time(|| engine.put(&k, value, true))?;
                    }
                    Ok(lat.0)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().map_err(|_| anyhow::anyhow!("a writer panicked"))?)
            .collect::<anyhow::Result<Vec<_>>>()
    })?;
    let elapsed = start.elapsed();
    let all: Vec<u64> = lats.into_iter().flatten().collect();
    let ops = all.len() as u64;
    Ok(report(Workload::Fillsync(writers), elapsed, all, ops))
}

/// One reader measured while one writer overwrites random keys until the reader is done.
fn read_while_writing(
    engine: &mut dyn Engine,
    reads: u64,
    n: u64,
    value: &[u8],
) -> anyhow::Result<Report> {
    engine.settle()?;
    let engine: &dyn Engine = engine;
    let done = std::sync::atomic::AtomicBool::new(false);
    let (elapsed, lat, found, writes) = std::thread::scope(|s| -> anyhow::Result<_> {
        let writer = s.spawn(|| -> anyhow::Result<u64> {
            let mut rng = StdRng::seed_from_u64(7);
            let mut written = 0;
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                engine.put(&key(rng.gen_range(0..n)), value, false)?;
                written += 1;
            }
            Ok(written)
        });
        let mut rng = StdRng::seed_from_u64(8);
        let mut lat = Latencies::default();
        let mut found = 0;
        let start = Instant::now();
        let result = (|| -> anyhow::Result<()> {
            for _ in 0..reads {
                let k = key(rng.gen_range(0..n));
                found += u64::from(lat.time(|| engine.get(&k))?);
            }
            Ok(())
        })();
        let elapsed = start.elapsed();
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        let written = writer
            .join()
            .map_err(|_| anyhow::anyhow!("the writer panicked"))??;
        result?;
        Ok((elapsed, lat.0, found, written))
    })?;
    Ok(Report {
        writes,
        ..report(Workload::Readwhilewriting, elapsed, lat, found)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for name in [
            "fillseq",
            "fillrandom",
            "overwrite",
            "readrandom",
            "readrandomcold",
            "readseq",
            "seekrandom",
            "readwhilewriting",
            "fillsync32",
        ] {
            let w: Workload = name.parse().unwrap();
            assert_eq!(w.to_string(), name);
        }
        assert!("fillsyncx".parse::<Workload>().is_err());
    }

    #[test]
    fn the_permutation_visits_every_key_once() {
        for n in [1u64, 7, 1000, 4096] {
            let mut seen: Vec<u64> = (0..n).map(|i| permuted(i, n)).collect();
            seen.sort_unstable();
            assert_eq!(seen, (0..n).collect::<Vec<_>>());
        }
    }
}
