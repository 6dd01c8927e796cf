//! Engine workloads in the manner of RocksDB's `db_bench`, for any engine behind [`Engine`]:
//! Basalt itself ([`BasaltEngine`]) in `basalt bench`, and RocksDB beside it in the separate
//! benchmark workspace (`bench/`), so both run the same code in the same process.
//!
//! Keys are 16 bytes (a scrambled 8-byte prefix spreading them over the key space, then the
//! index), values 100 bytes by default. Each workload reports throughput and latency
//! percentiles; latencies are measured per operation with `Instant`, which costs about 20 ns.

mod basalt;
mod workloads;

pub use basalt::BasaltEngine;
pub use workloads::{run, run_workload, Config, Report, Workload};

/// What the workloads need of an engine. Every method may be called from many threads.
pub trait Engine: Sync {
    /// Writes `value` under `key`; `sync`: durable before returning (fdatasync), else the
    /// engine's write-ahead log without a sync.
    ///
    /// # Errors
    /// The engine's error.
    fn put(&self, key: &[u8], value: &[u8], sync: bool) -> anyhow::Result<()>;
    /// Reads `key`; returns whether it was found.
    ///
    /// # Errors
    /// The engine's error.
    fn get(&self, key: &[u8]) -> anyhow::Result<bool>;
    /// Seeks to `start` and reads up to `n` entries; returns how many it read.
    ///
    /// # Errors
    /// The engine's error.
    fn seek_next(&self, start: &[u8], n: usize) -> anyhow::Result<usize>;
    /// Reads every entry in order; returns how many.
    ///
    /// # Errors
    /// The engine's error.
    fn scan_all(&self) -> anyhow::Result<usize>;
    /// Makes the data written so far readable from files (flush) and waits for background
    /// work, so reads measure the read path of files and cache, not the memtable.
    ///
    /// # Errors
    /// The engine's error.
    fn settle(&self) -> anyhow::Result<()>;
    /// Starts over with an empty store (fills start from nothing).
    ///
    /// # Errors
    /// The engine's error.
    fn reset(&mut self) -> anyhow::Result<()>;
    /// Drops the block cache's contents (closes and reopens), for cold reads.
    ///
    /// # Errors
    /// The engine's error.
    fn drop_cache(&mut self) -> anyhow::Result<()>;
}

/// The 16-byte key of index `i`: zero-padded big-endian, so index order is key order.
#[must_use]
pub fn key(i: u64) -> [u8; 16] {
    let mut k = [0u8; 16];
    k[8..].copy_from_slice(&i.to_be_bytes());
    k
}

/// The `i`th index of a pseudo-random permutation of `0..n`: every index once, in an order
/// that jumps all over the key space (multiplication by a prime above any `n` used, mod `n`).
#[must_use]
pub fn permuted(i: u64, n: u64) -> u64 {
    const PRIME: u128 = 2_147_483_647;
    ((u128::from(i) * PRIME + 12_345) % u128::from(n.max(1))) as u64
}
