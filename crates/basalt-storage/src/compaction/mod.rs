//! Compaction selection and pacing.

pub mod policy;

use std::time::{Duration, Instant};

pub use policy::{CompactionConfig, FileStat, Selection};

/// Bounds of the compaction throughput limit (HBase's
/// `hbase.hstore.compaction.throughput.lower.bound` / `.higher.bound`, 50 and 100 MiB/s).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ThroughputBounds {
    pub lower_bytes_per_sec: u64,
    pub higher_bytes_per_sec: u64,
}

impl Default for ThroughputBounds {
    fn default() -> Self {
        ThroughputBounds {
            lower_bytes_per_sec: 50 << 20,
            higher_bytes_per_sec: 100 << 20,
        }
    }
}

impl ThroughputBounds {
    /// HBase's PressureAwareCompactionThroughputController: the limit rises from the lower to
    /// the higher bound as a store's file count nears the blocking count, and is lifted once
    /// writes are blocked (`None`: unlimited).
    #[must_use]
    pub fn limit_for(&self, files: usize, cfg: &CompactionConfig) -> Option<u64> {
        let span = cfg
            .blocking_store_files
            .saturating_sub(cfg.min_files)
            .max(1) as f64;
        let pressure = files.saturating_sub(cfg.min_files) as f64 / span;
        if pressure >= 1.0 {
            return None;
        }
        let (lo, hi) = (
            self.lower_bytes_per_sec as f64,
            self.higher_bytes_per_sec as f64,
        );
        Some((lo + (hi - lo) * pressure) as u64)
    }
}

/// Sleeps a compaction's writer so it averages no more than its limit.
#[derive(Debug)]
pub struct Throttle {
    limit_bytes_per_sec: Option<u64>,
    start: Instant,
    bytes: u64,
    unchecked: u64,
    slept: Duration,
}

/// Bytes written between checks of the clock.
const CHECK_EVERY_BYTES: u64 = 256 << 10;

impl Throttle {
    /// A throttle at `limit` bytes per second (`None`: unlimited), counting from `start`
    /// (now on the environment's monotonic clock, [`crate::env::Env::instant`]).
    #[must_use]
    pub fn new(limit_bytes_per_sec: Option<u64>, start: Instant) -> Throttle {
        Throttle {
            limit_bytes_per_sec: limit_bytes_per_sec.filter(|l| *l > 0),
            start,
            bytes: 0,
            unchecked: 0,
            slept: Duration::ZERO,
        }
    }

    /// Accounts for `n` bytes written, sleeping if the writer is ahead of its limit.
    pub fn consume(&mut self, n: usize) {
        let Some(limit) = self.limit_bytes_per_sec else {
            return;
        };
        self.bytes += n as u64;
        self.unchecked += n as u64;
        if self.unchecked < CHECK_EVERY_BYTES {
            return;
        }
        self.unchecked = 0;
        let due = Duration::from_secs_f64(self.bytes as f64 / limit as f64);
        let elapsed = self.start.elapsed();
        if due > elapsed {
            std::thread::sleep(due - elapsed);
            self.slept += due - elapsed;
        }
    }

    /// Time spent sleeping so far.
    #[must_use]
    pub fn slept(&self) -> Duration {
        self.slept
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_limit_rises_with_pressure_and_lifts_when_blocked() {
        let b = ThroughputBounds::default();
        let cfg = CompactionConfig::default();
        assert_eq!(b.limit_for(3, &cfg), Some(50 << 20));
        let mid = b.limit_for(9, &cfg).unwrap();
        assert!(mid > 50 << 20 && mid < 100 << 20);
        assert_eq!(b.limit_for(16, &cfg), None);
    }

    #[test]
    fn a_throttle_holds_its_average() {
        let start = crate::env::Env::default().instant();
        let mut t = Throttle::new(Some(8 << 20), start);
        for _ in 0..64 {
            t.consume(64 << 10); // 4 MiB in all: half a second at 8 MiB/s
        }
        let took = start.elapsed();
        assert!(took >= Duration::from_millis(400), "{took:?}");
        assert!(t.slept() > Duration::ZERO);
        let mut free = Throttle::new(None, start);
        free.consume(1 << 30);
        assert_eq!(free.slept(), Duration::ZERO);
    }
}
