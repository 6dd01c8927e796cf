//! Which files a compaction takes: HBase's ExploringCompactionPolicy for minor compactions,
//! and the periodic major-compaction check of RatioBasedCompactionPolicy.
//!
//! Pure functions over file sizes and ages; the caller turns a [`Selection`] into work.

/// HBase's compaction settings (`hbase.hstore.compaction.*`, `hbase.hregion.majorcompaction*`).
#[derive(Clone, Debug, PartialEq)]
pub struct CompactionConfig {
    /// Whether flushes and the periodic check start compactions at all (the off switch).
    pub automatic: bool,
    /// `hbase.hstore.compaction.min` (3): fewest files a minor compaction takes.
    pub min_files: usize,
    /// `hbase.hstore.compaction.max` (10): most files a minor compaction takes.
    pub max_files: usize,
    /// `hbase.hstore.compaction.ratio` (1.2).
    pub ratio: f64,
    /// `hbase.hstore.compaction.min.size`: files below this always pass the ratio test.
    /// `None`: the table's flush size, as in HBase.
    pub min_size_bytes: Option<u64>,
    /// `hbase.hstore.compaction.max.size` (unbounded): larger files are left out of minor
    /// compactions.
    pub max_size_bytes: u64,
    /// `hbase.hregion.majorcompaction` (7 days); 0 turns periodic major compactions off.
    pub major_period_ms: i64,
    /// `hbase.hregion.majorcompaction.jitter` (0.5): each store's period is spread by up to
    /// this fraction either way, so stores do not all compact at once.
    pub major_jitter: f64,
    /// `hbase.hstore.blockingStoreFiles` (16): at this many files a store delays flushes.
    pub blocking_store_files: usize,
}

impl Default for CompactionConfig {
    fn default() -> Self {
        CompactionConfig {
            automatic: true,
            min_files: 3,
            max_files: 10,
            ratio: 1.2,
            min_size_bytes: None,
            max_size_bytes: u64::MAX,
            major_period_ms: 7 * 24 * 3600 * 1000,
            major_jitter: 0.5,
            blocking_store_files: 16,
        }
    }
}

/// What the policy knows of a store file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileStat {
    pub size: u64,
    /// When the file was written (ms since the epoch, the engine's clock).
    pub created_ms: i64,
    pub major_compacted: bool,
    /// The file's oldest cell timestamp.
    pub min_ts: i64,
}

/// The files a compaction takes (indices into the store's files, oldest first) and whether
/// it is major.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Selection {
    pub files: Vec<usize>,
    pub major: bool,
}

/// Chooses a compaction for a store whose files are `files`, oldest first. `seed` spreads
/// the major period (HBase seeds the jitter with the store's name); `ttl_ms` is the family's.
#[must_use]
pub fn select(
    files: &[FileStat],
    cfg: &CompactionConfig,
    min_size: u64,
    now_ms: i64,
    seed: u64,
    ttl_ms: Option<i64>,
) -> Option<Selection> {
    if files.is_empty() {
        return None;
    }
    if major_due(files, cfg, now_ms, seed, ttl_ms) {
        return Some(Selection {
            files: (0..files.len()).collect(),
            major: true,
        });
    }
    // Files too large for a minor compaction are skipped from the oldest end (HBase's
    // skipLargeFiles): newer files are never compacted without older ones in between.
    let skip = files
        .iter()
        .take_while(|f| f.size > cfg.max_size_bytes)
        .count();
    let candidates = &files[skip..];
    let stuck = files.len() >= cfg.blocking_store_files;
    let (start, len) = explore(candidates, cfg, min_size, stuck)?;
    let chosen: Vec<usize> = (skip + start..skip + start + len).collect();
    // Taking every file is a major compaction in all but name: HBase promotes it.
    let major = chosen.len() == files.len();
    Some(Selection {
        files: chosen,
        major,
    })
}

/// The best contiguous window of `files`: most files, then least bytes; when the store is
/// stuck and nothing passes the ratio test, the smallest window of `min_files`.
fn explore(
    files: &[FileStat],
    cfg: &CompactionConfig,
    min_size: u64,
    stuck: bool,
) -> Option<(usize, usize)> {
    let min = cfg.min_files.max(2);
    let mut best: Option<(usize, usize, u64)> = None;
    let mut smallest: Option<(usize, usize, u64)> = None;
    for start in 0..files.len() {
        for len in min..=cfg.max_files.min(files.len() - start) {
            let window = &files[start..start + len];
            let size: u64 = window.iter().map(|f| f.size).sum();
            if smallest.is_none_or(|(_, _, s)| size < s) {
                smallest = Some((start, len, size));
            }
            if size > cfg.max_size_bytes {
                continue;
            }
            if size >= min_size && !in_ratio(window, cfg.ratio) {
                continue;
            }
            if best.is_none_or(|b| better((len, size), (b.1, b.2), stuck)) {
                best = Some((start, len, size));
            }
        }
    }
    best.or(if stuck { smallest } else { None })
        .map(|(s, l, _)| (s, l))
}

/// HBase's isBetterSelection: a stuck store wants the most files per byte; otherwise more
/// files win, then fewer bytes.
fn better((len, size): (usize, u64), (best_len, best_size): (usize, u64), stuck: bool) -> bool {
    if stuck && size > 0 && best_size > 0 {
        return (len as f64 / size as f64) > (best_len as f64 / best_size as f64);
    }
    len > best_len || (len == best_len && size < best_size)
}

/// No file is larger than `ratio` times the others together (HBase's filesInRatio).
fn in_ratio(window: &[FileStat], ratio: f64) -> bool {
    if window.len() < 2 {
        return true;
    }
    let total: u64 = window.iter().map(|f| f.size).sum();
    window
        .iter()
        .all(|f| f.size as f64 <= (total - f.size) as f64 * ratio)
}

/// The store's major-compaction period with its jitter (deterministic per `seed`).
#[must_use]
pub fn major_period_ms(cfg: &CompactionConfig, seed: u64) -> i64 {
    if cfg.major_period_ms <= 0 {
        return 0;
    }
    let unit = (seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 11) as f64 / (1u64 << 53) as f64;
    let spread = cfg.major_period_ms as f64 * cfg.major_jitter.clamp(0.0, 1.0);
    (cfg.major_period_ms as f64 - spread + 2.0 * spread * unit).round() as i64
}

/// HBase's shouldPerformMajorCompaction: the oldest file is older than the period, unless the
/// store is one major-compacted file with nothing expired by TTL since.
fn major_due(
    files: &[FileStat],
    cfg: &CompactionConfig,
    now_ms: i64,
    seed: u64,
    ttl_ms: Option<i64>,
) -> bool {
    let period = major_period_ms(cfg, seed);
    if period <= 0 {
        return false;
    }
    let oldest = files.iter().map(|f| f.created_ms).min().unwrap_or(i64::MAX);
    if oldest > now_ms.saturating_sub(period) {
        return false;
    }
    if let [only] = files {
        let expired = ttl_ms.is_some_and(|ttl| only.min_ts < now_ms.saturating_sub(ttl));
        return !only.major_compacted || expired;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    const MB: u64 = 1 << 20;

    fn files(sizes: &[u64]) -> Vec<FileStat> {
        sizes
            .iter()
            .map(|&s| FileStat {
                size: s * MB,
                created_ms: 1_000,
                major_compacted: false,
                min_ts: 0,
            })
            .collect()
    }

    fn no_major() -> CompactionConfig {
        CompactionConfig {
            major_period_ms: 0,
            ..CompactionConfig::default()
        }
    }

    fn pick(sizes: &[u64]) -> Option<Vec<usize>> {
        select(&files(sizes), &no_major(), MB, 2_000, 1, None).map(|s| s.files)
    }

    #[test]
    fn too_few_files_select_nothing() {
        assert_eq!(pick(&[10, 10]), None);
    }

    #[test]
    fn similar_files_are_taken_together() {
        assert_eq!(pick(&[10, 10, 10, 10]), Some(vec![0, 1, 2, 3]));
    }

    #[test]
    fn a_big_old_file_is_left_out_by_the_ratio() {
        // 500 > 1.2 * (10 + 10 + 10): the big file stays; the small ones go together.
        assert_eq!(pick(&[500, 10, 10, 10]), Some(vec![1, 2, 3]));
    }

    #[test]
    fn at_most_max_files_are_taken_preferring_fewer_bytes() {
        let sizes = [5u64; 14];
        let got = pick(&sizes).unwrap();
        assert_eq!(got.len(), 10);
        let sizes: Vec<u64> = (0..14).map(|i| 20 - i).collect();
        // All windows of ten pass the ratio; the newest ten are the smallest.
        assert_eq!(pick(&sizes), Some((4..14).collect()));
    }

    #[test]
    fn files_below_the_minimum_size_pass_the_ratio() {
        // Tiny files: 0 MB each by size, so every window is under min_size.
        let tiny: Vec<FileStat> = [1u64, 1, 1]
            .iter()
            .map(|_| FileStat {
                size: 10,
                created_ms: 1_000,
                major_compacted: false,
                min_ts: 0,
            })
            .chain([FileStat {
                size: 100,
                created_ms: 1_000,
                major_compacted: false,
                min_ts: 0,
            }])
            .collect();
        let s = select(&tiny, &no_major(), MB, 2_000, 1, None).unwrap();
        assert_eq!(s.files, vec![0, 1, 2, 3]);
        assert!(s.major, "taking every file is promoted to major");
    }

    #[test]
    fn a_stuck_store_compacts_even_against_the_ratio() {
        let cfg = CompactionConfig {
            blocking_store_files: 4,
            ..no_major()
        };
        // Each file is more than 1.2x the sum of the newer ones: no window passes.
        let sizes = [4000u64, 1000, 300, 80];
        assert_eq!(pick(&sizes), None);
        let got = select(&files(&sizes), &cfg, MB, 2_000, 1, None).unwrap();
        assert_eq!(got.files, vec![1, 2, 3], "the smallest window of min_files");
    }

    #[test]
    fn files_over_the_max_size_are_skipped_from_the_old_end() {
        let cfg = CompactionConfig {
            max_size_bytes: 100 * MB,
            ..no_major()
        };
        let got = select(&files(&[200, 10, 10, 10]), &cfg, MB, 2_000, 1, None).unwrap();
        assert_eq!(got.files, vec![1, 2, 3]);
        assert!(!got.major);
    }

    #[test]
    fn periodic_major_compactions_follow_the_oldest_file() {
        let cfg = CompactionConfig {
            major_period_ms: 1_000_000,
            major_jitter: 0.0,
            ..CompactionConfig::default()
        };
        let two = files(&[10, 10]);
        assert_eq!(select(&two, &cfg, MB, 500_000, 1, None), None);
        let due = select(&two, &cfg, MB, 1_001_001, 1, None).unwrap();
        assert!(due.major && due.files == vec![0, 1]);
        // One major-compacted file is left alone, unless its TTL expired cells.
        let mut one = files(&[10]);
        one[0].major_compacted = true;
        one[0].min_ts = 900_000;
        assert_eq!(select(&one, &cfg, MB, 2_000_000, 1, None), None);
        let expired = select(&one, &cfg, MB, 2_000_000, 1, Some(1000)).unwrap();
        assert!(expired.major);
        let off = CompactionConfig {
            major_period_ms: 0,
            ..cfg
        };
        assert_eq!(select(&two, &off, MB, i64::MAX / 2, 1, None), None);
    }

    #[test]
    fn the_jitter_spreads_periods_within_bounds() {
        let cfg = CompactionConfig::default();
        let week = cfg.major_period_ms;
        let periods: Vec<i64> = (0..1000).map(|s| major_period_ms(&cfg, s)).collect();
        assert!(periods.iter().all(|p| *p >= week / 2 && *p <= week * 3 / 2));
        let distinct: std::collections::HashSet<_> = periods.iter().collect();
        assert!(distinct.len() > 900);
        assert_eq!(major_period_ms(&cfg, 7), major_period_ms(&cfg, 7));
    }
}
