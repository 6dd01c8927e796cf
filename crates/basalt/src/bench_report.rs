//! What the load generators of `basalt bench bigtable` and `basalt bench gateways` share:
//! a line's rate and latency percentiles, and the Markdown table of a run.

use std::fmt::Display;
use std::time::Duration;

/// What a line of a run does: one kind of request, one at a time per client.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Workload {
    /// A whole row written at the server's time.
    Write,
    /// One whole row read.
    Read,
    /// A run of rows read from a random key.
    Scan,
}

impl std::fmt::Display for Workload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Workload::Write => "single-row writes",
            Workload::Read => "point reads",
            Workload::Scan => "scans",
        })
    }
}

/// What both load generators' runs are made of: the table they load and the lines they run.
#[derive(clap::Args, Debug, Clone)]
pub struct Lines {
    /// Rows loaded before the lines run, keys `row0000000000` onwards.
    #[arg(long, default_value_t = 100_000)]
    pub rows: u64,
    /// Columns of each row.
    #[arg(long, default_value_t = 10)]
    pub field_count: u32,
    /// Random bytes of each column's value.
    #[arg(long, default_value_t = 100)]
    pub field_length: usize,
    /// Rows of each scan.
    #[arg(long, default_value_t = 1000)]
    pub scan_rows: u64,
    /// Concurrent clients of each line.
    #[arg(long, value_delimiter = ',', default_value = "1,16")]
    pub clients: Vec<usize>,
    /// The lines to run, of each client count.
    #[arg(long, value_delimiter = ',', default_value = "write,read,scan")]
    pub workloads: Vec<Workload>,
    /// How long each line runs against each target.
    #[arg(long, default_value_t = 10.0)]
    pub seconds: f64,
}

impl Lines {
    /// Refuses a run that cannot be made: scans longer than the table, no clients.
    ///
    /// # Errors
    /// What is wrong with the options.
    pub fn check(&self) -> anyhow::Result<()> {
        anyhow::ensure!(
            self.rows > self.scan_rows,
            "--rows ({}) must exceed --scan-rows ({})",
            self.rows,
            self.scan_rows
        );
        anyhow::ensure!(
            self.clients.iter().all(|c| *c > 0),
            "--clients must be positive"
        );
        Ok(())
    }

    /// Runs every workload at every client count against each of `targets` in turn (so
    /// drift on the machine falls on all alike), with `measure(target, workload, clients)`;
    /// prints a line per measurement, then the table.
    ///
    /// # Errors
    /// The first measurement that failed, naming its line and target.
    pub fn run(
        &self,
        targets: &[&str],
        mut measure: impl FnMut(usize, Workload, usize) -> anyhow::Result<Measured>,
    ) -> anyhow::Result<()> {
        let mut table = Vec::new();
        for &clients in &self.clients {
            for &w in &self.workloads {
                let mut row = Vec::new();
                for (i, name) in targets.iter().enumerate() {
                    let m = measure(i, w, clients)
                        .map_err(|e| e.context(format!("{w} by {clients} clients on {name}")))?;
                    println!(
                        "[{name}] {w}, {clients} clients: {:.0} ops/s, p50 {} us, p99 {} us",
                        m.ops_per_sec, m.p50_us, m.p99_us
                    );
                    row.push(m);
                }
                table.push((w, clients, row));
            }
        }
        print_table(targets, &table);
        Ok(())
    }
}

/// The key of row `n`: keys sort as their numbers do, so a scan from a key reads the rows
/// after it.
pub fn row_key(n: u64) -> String {
    format!("row{n:010}")
}

/// What one line measured on one target.
#[derive(Debug, Clone, Copy)]
pub struct Measured {
    pub ops_per_sec: f64,
    pub p50_us: u64,
    pub p99_us: u64,
}

impl Measured {
    /// The rate of `us.len()` operations in `elapsed`, and their latencies' percentiles.
    pub fn from_latencies(mut us: Vec<u64>, elapsed: Duration) -> Measured {
        us.sort_unstable();
        let pct = |p: f64| {
            let i = ((us.len() as f64 * p) as usize).min(us.len().saturating_sub(1));
            us.get(i).copied().unwrap_or(0)
        };
        Measured {
            ops_per_sec: us.len() as f64 / elapsed.as_secs_f64().max(1e-9),
            p50_us: pct(0.50),
            p99_us: pct(0.99),
        }
    }
}

/// A duration in whole microseconds.
pub fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

/// Prints the run as a Markdown table: a row per line and client count, a rate and
/// percentiles per target, and each other target's rate over the last's (the reference).
fn print_table<W: Display>(names: &[&str], table: &[(W, usize, Vec<Measured>)]) {
    let mut header = String::from("| line | clients |");
    for n in names {
        header.push_str(&format!(" {n} ops/s | {n} p50 / p99 (us) |"));
    }
    if let Some((reference, others)) = names.split_last() {
        for n in others {
            header.push_str(&format!(" {n} / {reference} |"));
        }
    }
    println!("\n{header}");
    println!("{}", "|---".repeat(header.matches(" |").count()) + "|");
    for (w, clients, row) in table {
        let mut line = format!("| {w} | {clients} |");
        for m in row {
            line.push_str(&format!(
                " {:.0} | {} / {} |",
                m.ops_per_sec, m.p50_us, m.p99_us
            ));
        }
        if let Some((reference, others)) = row.split_last() {
            for m in others {
                line.push_str(&format!(" {:.2} |", m.ops_per_sec / reference.ops_per_sec));
            }
        }
        println!("{line}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_come_from_the_sorted_latencies() {
        let m = Measured::from_latencies((1..=100).rev().collect(), Duration::from_secs(2));
        assert_eq!((m.p50_us, m.p99_us), (51, 100));
        assert!((m.ops_per_sec - 50.0).abs() < 1e-9);
    }

    #[test]
    fn keys_sort_as_their_numbers_do() {
        assert!(row_key(9) < row_key(10) && row_key(99_999) < row_key(100_000));
    }
}
