//! Request counts and latencies by operation, and the Prometheus text of every metric.

use std::collections::HashMap;
use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use basalt_node::Database;

/// Latency bucket bounds in seconds (Prometheus' `le`).
const BUCKETS: [f64; 14] = [
    0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0,
];

#[derive(Debug, Default)]
struct OpStats {
    requests: AtomicU64,
    errors: AtomicU64,
    micros: AtomicU64,
    buckets: [AtomicU64; BUCKETS.len()],
}

/// An API whose requests are counted (`native`, `thrift`) and its operations' names, as
/// the adapter that serves it lists them.
pub type Api = (&'static str, &'static [&'static str]);

/// A gauge or counter read when `/metrics` is scraped: name, help, kind, and how to read it.
type Gauge = (
    &'static str,
    &'static str,
    &'static str,
    Box<dyn Fn() -> u64 + Send + Sync>,
);

/// Counters of every operation since the server started, and gauges other parts registered.
pub struct RequestMetrics {
    /// `(api, operation)` of each entry of `ops`.
    names: Vec<(&'static str, &'static str)>,
    /// The entry of each `(api, operation)`: every request looks its counters up, and a
    /// walk of the list compared names with about as many calls of `memcmp` as the
    /// operations ahead of it (34 for a native Get). Hashed by foldhash: SipHash took a
    /// point read's server about 290 instructions for these two short names.
    index: HashMap<(&'static str, &'static str), usize, foldhash::fast::RandomState>,
    ops: Vec<OpStats>,
    gauges: parking_lot::Mutex<Vec<Gauge>>,
}

impl std::fmt::Debug for RequestMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestMetrics")
            .field("operations", &self.names.len())
            .field("gauges", &self.gauges.lock().len())
            .finish()
    }
}

impl RequestMetrics {
    /// Counters for the operations of `apis`; requests of anything else are not counted.
    #[must_use]
    pub fn new(apis: &[Api]) -> Self {
        let names: Vec<_> = apis
            .iter()
            .flat_map(|(api, ops)| ops.iter().map(move |op| (*api, *op)))
            .collect();
        RequestMetrics {
            ops: names.iter().map(|_| OpStats::default()).collect(),
            // Reversed, so that a name listed twice counts in its first entry.
            index: names
                .iter()
                .enumerate()
                .rev()
                .map(|(i, n)| (*n, i))
                .collect(),
            names,
            gauges: parking_lot::Mutex::new(Vec::new()),
        }
    }
}

impl RequestMetrics {
    fn index(&self, api: &str, op: &str) -> Option<usize> {
        self.index.get(&(api, op)).copied()
    }

    /// Adds a gauge that `/metrics` reads with `read` at each scrape.
    pub fn register_gauge(
        &self,
        name: &'static str,
        help: &'static str,
        read: impl Fn() -> u64 + Send + Sync + 'static,
    ) {
        self.register("gauge", name, help, Box::new(read));
    }

    /// Adds a counter that `/metrics` reads with `read` at each scrape.
    pub fn register_counter(
        &self,
        name: &'static str,
        help: &'static str,
        read: impl Fn() -> u64 + Send + Sync + 'static,
    ) {
        self.register("counter", name, help, Box::new(read));
    }

    fn register(
        &self,
        kind: &'static str,
        name: &'static str,
        help: &'static str,
        read: Box<dyn Fn() -> u64 + Send + Sync>,
    ) {
        self.gauges.lock().push((name, help, kind, read));
    }

    /// Counts one request of `op` of the native API that took `took`.
    pub fn record(&self, op: &str, took: Duration, ok: bool) {
        self.record_api("native", op, took, ok);
    }

    /// Counts one request of `op` of `api` (`native` or `thrift`) that took `took`.
    pub fn record_api(&self, api: &str, op: &str, took: Duration, ok: bool) {
        let Some(i) = self.index(api, op) else {
            return;
        };
        let s = &self.ops[i];
        s.requests.fetch_add(1, Ordering::Relaxed);
        if !ok {
            s.errors.fetch_add(1, Ordering::Relaxed);
        }
        let micros = u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
        s.micros.fetch_add(micros, Ordering::Relaxed);
        let secs = took.as_secs_f64();
        if let Some(b) = BUCKETS.iter().position(|le| secs <= *le) {
            s.buckets[b].fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Requests of `op` of the native API so far.
    #[must_use]
    pub fn requests(&self, op: &str) -> u64 {
        self.requests_api("native", op)
    }

    /// Requests of `op` of `api` so far.
    #[must_use]
    pub fn requests_api(&self, api: &str, op: &str) -> u64 {
        self.index(api, op)
            .map_or(0, |i| self.ops[i].requests.load(Ordering::Relaxed))
    }

    /// `op="get"` for the native API, `api="thrift",op="getRow"` for another.
    fn labels(&self) -> impl Iterator<Item = (String, &OpStats)> {
        self.names.iter().zip(&self.ops).map(|((api, op), s)| {
            let l = if *api == "native" {
                format!("op=\"{op}\"")
            } else {
                format!("api=\"{api}\",op=\"{op}\"")
            };
            (l, s)
        })
    }
}

fn metric(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

/// Every metric in Prometheus' text format.
#[must_use]
pub fn prometheus(m: &RequestMetrics, engine: Option<EngineView>, open_scanners: usize) -> String {
    let mut out = String::new();
    metric(
        &mut out,
        "basalt_requests_total",
        "counter",
        "Requests by operation.",
    );
    for (l, s) in m.labels() {
        let n = s.requests.load(Ordering::Relaxed);
        let _ = writeln!(out, "basalt_requests_total{{{l}}} {n}");
    }
    metric(
        &mut out,
        "basalt_request_errors_total",
        "counter",
        "Requests that failed, by operation.",
    );
    for (l, s) in m.labels() {
        let n = s.errors.load(Ordering::Relaxed);
        let _ = writeln!(out, "basalt_request_errors_total{{{l}}} {n}");
    }
    metric(
        &mut out,
        "basalt_request_duration_seconds",
        "histogram",
        "Request latency by operation.",
    );
    for (l, s) in m.labels() {
        let mut cumulative = 0;
        for (le, b) in BUCKETS.iter().zip(&s.buckets) {
            cumulative += b.load(Ordering::Relaxed);
            let _ = writeln!(
                out,
                "basalt_request_duration_seconds_bucket{{{l},le=\"{le}\"}} {cumulative}"
            );
        }
        let n = s.requests.load(Ordering::Relaxed);
        let sum = s.micros.load(Ordering::Relaxed) as f64 / 1e6;
        let _ = writeln!(
            out,
            "basalt_request_duration_seconds_bucket{{{l},le=\"+Inf\"}} {n}"
        );
        let _ = writeln!(out, "basalt_request_duration_seconds_sum{{{l}}} {sum}");
        let _ = writeln!(out, "basalt_request_duration_seconds_count{{{l}}} {n}");
    }
    metric(
        &mut out,
        "basalt_open_scanners",
        "gauge",
        "Scanner leases held.",
    );
    let _ = writeln!(out, "basalt_open_scanners {open_scanners}");
    if let Some(e) = engine {
        engine_metrics(&mut out, &e);
    }
    for (name, help, kind, read) in m.gauges.lock().iter() {
        metric(&mut out, name, kind, help);
        let _ = writeln!(out, "{name} {}", read());
    }
    out
}

/// The counters of the engine a process runs: a standalone node's or a cluster region
/// server's (masters and gateways run none).
#[derive(Clone, Debug)]
pub struct EngineView {
    pub engine: basalt_node::EngineStatsSnapshot,
    pub cache: basalt_node::CacheStats,
}

impl EngineView {
    /// The engine `node` or `hosted` runs, if either.
    #[must_use]
    pub fn of(
        node: Option<&Database>,
        hosted: Option<&basalt_node::cluster::ClusterRegionServer>,
    ) -> Option<EngineView> {
        match (node, hosted) {
            (Some(db), _) => Some(EngineView {
                engine: db.engine_stats(),
                cache: db.block_cache_stats(),
            }),
            (None, Some(rs)) => Some(EngineView {
                engine: rs.engine_stats(),
                cache: rs.block_cache_stats(),
            }),
            (None, None) => None,
        }
    }
}

fn engine_metrics(out: &mut String, view: &EngineView) {
    let (e, c) = (&view.engine, &view.cache);
    let gauges = [
        (
            "basalt_memstore_bytes",
            "Bytes in every memstore.",
            e.memstore_bytes,
        ),
        (
            "basalt_block_cache_bytes",
            "Bytes in the block cache.",
            c.size_bytes,
        ),
        (
            "basalt_block_cache_capacity_bytes",
            "The block cache's capacity.",
            c.capacity_bytes,
        ),
    ];
    for (name, help, v) in gauges {
        metric(out, name, "gauge", help);
        let _ = writeln!(out, "{name} {v}");
    }
    engine_counters(out, e, c);
}

fn engine_counters(
    out: &mut String,
    e: &basalt_node::EngineStatsSnapshot,
    c: &basalt_node::CacheStats,
) {
    let counters = [
        ("basalt_block_cache_hits_total", "Block cache hits.", c.hits),
        (
            "basalt_block_cache_misses_total",
            "Block cache misses.",
            c.misses,
        ),
        (
            "basalt_block_cache_evictions_total",
            "Blocks evicted.",
            c.evictions,
        ),
        (
            "basalt_wal_syncs_total",
            "WAL syncs (group commits).",
            e.wal_syncs,
        ),
        ("basalt_flushes_total", "Memstore flushes.", e.flushes),
        (
            "basalt_flushed_bytes_total",
            "Bytes flushed.",
            e.flushed_bytes,
        ),
        (
            "basalt_compacted_bytes_read_total",
            "Bytes read by compactions.",
            e.compacted_bytes_read,
        ),
        (
            "basalt_compacted_bytes_written_total",
            "Bytes written by compactions.",
            e.compacted_bytes_written,
        ),
        (
            "basalt_delayed_writes_total",
            "Writes that waited for a flush.",
            e.delayed_writes,
        ),
        (
            "basalt_refused_writes_total",
            "Writes refused as too busy.",
            e.refused_writes,
        ),
    ];
    for (name, help, v) in counters {
        metric(out, name, "counter", help);
        let _ = writeln!(out, "{name} {v}");
    }
    metric(
        out,
        "basalt_compactions_total",
        "counter",
        "Compactions by kind.",
    );
    let _ = writeln!(
        out,
        "basalt_compactions_total{{kind=\"minor\"}} {}",
        e.minor_compactions
    );
    let _ = writeln!(
        out,
        "basalt_compactions_total{{kind=\"major\"}} {}",
        e.major_compactions
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grpc::OPS;

    #[test]
    fn latencies_land_in_cumulative_buckets() {
        let m = RequestMetrics::new(&[("native", &OPS)]);
        m.record("get", Duration::from_micros(80), true);
        m.record("get", Duration::from_millis(3), false);
        m.record("nope", Duration::from_millis(3), true);
        assert_eq!(m.requests("get"), 2);
        let s = &m.ops[OPS.iter().position(|o| *o == "get").unwrap_or(0)];
        assert_eq!(s.errors.load(Ordering::Relaxed), 1);
        assert_eq!(s.buckets[0].load(Ordering::Relaxed), 1);
        assert_eq!(s.buckets[5].load(Ordering::Relaxed), 1);
    }
}
