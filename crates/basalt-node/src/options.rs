//! The settings of a node, and the counters it reports.

use basalt_model::limits::DEFAULT_MAX_CELL_SIZE_BYTES;

use crate::regionserver::BackgroundConfig;
use basalt_storage::env::Env;
use basalt_storage::wal::DEFAULT_ROLL_SIZE_BYTES;

/// Counters of the engine's background work and flow control since the database opened.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EngineStatsSnapshot {
    pub flushes: u64,
    pub flushed_bytes: u64,
    pub minor_compactions: u64,
    pub major_compactions: u64,
    pub compacted_bytes_read: u64,
    pub compacted_bytes_written: u64,
    /// Writes that waited for a flush.
    pub delayed_writes: u64,
    /// Writes refused with `RegionTooBusy`.
    pub refused_writes: u64,
    /// Background flushes and compactions that failed (and were retried).
    pub background_errors: u64,
    /// Bytes in all memstores now.
    pub memstore_bytes: u64,
    /// Syncs of the WAL (each may acknowledge many writes: group commit).
    pub wal_syncs: u64,
    /// Periodic checks of the background workers finished (due compactions, periodic
    /// flushes, the archive cleaner).
    pub periodic_checks: u64,
}

/// Default block cache capacity.
pub const DEFAULT_BLOCK_CACHE_BYTES: usize = 256 << 20;

/// Settings of an embedded database. Every field has HBase's default.
#[derive(Clone, Debug)]
pub struct Options {
    pub env: Env,
    /// `hbase.server.keyvalue.maxsize` (10 MiB); 0 disables the check.
    pub max_cell_size_bytes: usize,
    /// `hbase.table.max.rowsize` (1 GiB): a larger row read without batching fails.
    pub max_row_size_bytes: usize,
    /// `hbase.hstore.time.to.purge.deletes` (0).
    pub time_to_purge_deletes_ms: i64,
    /// WAL segment roll size (64 MiB).
    pub wal_roll_size_bytes: u64,
    /// `hbase.hregion.max.filesize` (10 GiB): a region splits when its largest store passes
    /// it, unless its table sets its own `MAX_FILESIZE`.
    pub max_filesize_bytes: u64,
    /// Block cache capacity (256 MiB); 0 caches nothing.
    pub block_cache_bytes: usize,
    /// Flushes, compactions and write stalls.
    pub background: BackgroundConfig,
    /// How long an operation keeps retrying a region that a split or merge has closed
    /// (`NotServingRegion`) before it gives up with that error (60 s).
    pub region_retry_timeout: std::time::Duration,
    /// The host and port `hbase:meta` names as the regions' server.
    pub server_host: String,
    pub server_port: u16,
    /// How long archived files are kept before the cleaner removes them
    /// (`hbase.master.hfilecleaner.ttl`, 5 minutes).
    pub archive_retention_ms: i64,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            env: Env::default(),
            max_cell_size_bytes: DEFAULT_MAX_CELL_SIZE_BYTES,
            max_row_size_bytes: basalt_model::limits::DEFAULT_MAX_ROW_SIZE_BYTES,
            time_to_purge_deletes_ms: 0,
            wal_roll_size_bytes: DEFAULT_ROLL_SIZE_BYTES,
            max_filesize_bytes: basalt_model::descriptor::DEFAULT_MAX_FILESIZE_BYTES,
            block_cache_bytes: DEFAULT_BLOCK_CACHE_BYTES,
            background: BackgroundConfig::default(),
            region_retry_timeout: std::time::Duration::from_secs(60),
            server_host: "localhost".to_owned(),
            server_port: 16020,
            archive_retention_ms: basalt_storage::archive::DEFAULT_ARCHIVE_RETENTION_MS,
        }
    }
}
