//! Scanners: opened with a Thrift scan or start/stop rows, read a number of rows at a time,
//! closed by the client or when their lease expires.

use basalt_model::filter::{parse_filter_bytes, Filter};
use basalt_model::ops::Scan;
use basalt_model::TimeRange;
use hbase_thrift::hbase::{TRowResult, TScan, Text};

use super::{Handler, ThriftScanner};
use crate::thrift::convert::{self, illegal, io};

/// What the `scannerOpen*` methods other than `scannerOpenWithScan` can ask for.
#[derive(Debug, Default)]
pub(super) struct ScanArgs {
    pub start: Text,
    pub stop: Option<Text>,
    /// `scannerOpenWithPrefix`: rows while they start with this.
    pub prefix: Option<Text>,
    pub columns: Vec<Text>,
    pub timestamp: Option<i64>,
}

impl ScanArgs {
    pub(super) fn from_start(start: Text, columns: Vec<Text>) -> ScanArgs {
        ScanArgs {
            start,
            columns,
            ..ScanArgs::default()
        }
    }
}

const INVALID_SCANNER: &str = "scanner ID is invalid";

impl Handler {
    pub(super) fn open(&self, table: &[u8], args: ScanArgs) -> thrift::Result<i32> {
        let mut scan = Scan::new().with_start_row(args.start, true);
        if let Some(stop) = args.stop {
            scan = scan.with_stop_row(stop, false);
        }
        if let Some(p) = args.prefix {
            scan = scan.with_filter(Filter::WhileMatch {
                inner: Box::new(Filter::prefix(p)),
                done: false,
            });
        }
        if let Some(ts) = args.timestamp {
            scan = scan.with_time_range(TimeRange::new(0, ts).map_err(|e| io(&e))?);
        }
        let scan = convert::scan_columns(scan, &args.columns);
        self.register(table, scan, false)
    }

    /// `scannerOpenWithScan`. `caching` only sizes HBase's fetches from region servers, so
    /// it changes nothing here; `batchSize` caps the cells of each result.
    pub(super) fn open_with_scan(&self, table: &[u8], t: TScan) -> thrift::Result<i32> {
        let mut scan = Scan::new();
        if let Some(start) = t.start_row {
            scan = scan.with_start_row(start, true);
        }
        if let Some(stop) = t.stop_row {
            scan = scan.with_stop_row(stop, false);
        }
        if let Some(ts) = t.timestamp {
            scan = scan.with_time_range(TimeRange::new(0, ts).map_err(|e| io(&e))?);
        }
        if let Some(batch) = t.batch_size.filter(|b| *b > 0) {
            scan = scan.with_batch(batch.unsigned_abs());
        }
        scan = convert::scan_columns(scan, t.columns.as_deref().unwrap_or_default());
        // An empty filter string (some clients send every field) means no filter.
        if let Some(f) = t.filter_string.filter(|f| !f.trim_ascii().is_empty()) {
            scan = scan.with_filter(parse_filter_bytes(&f).map_err(|e| io(&e))?);
        }
        if t.reversed == Some(true) {
            scan = scan.reversed();
        }
        if let Some(cache) = t.cache_blocks {
            scan.cache_blocks = cache;
        }
        self.register(table, scan, t.sort_columns.unwrap_or(false))
    }

    fn register(&self, table: &[u8], scan: Scan, sorted: bool) -> thrift::Result<i32> {
        let t = self.table(table).map_err(|e| io(&e))?;
        let scanner = t.scan(scan).map_err(|e| io(&e))?;
        let id = self.scanners.open(ThriftScanner { scanner, sorted });
        // Ids wrap below i32::MAX (the scanners were made so).
        Ok(i32::try_from(id).unwrap_or(i32::MAX))
    }

    /// `scannerGet(List)`: up to `n` results; none at the end (the scanner stays open
    /// until closed, as in HBase).
    pub(super) fn next_rows(&self, id: i32, n: i32) -> thrift::Result<Vec<TRowResult>> {
        let id = u64::try_from(id).map_err(|_| illegal(INVALID_SCANNER))?;
        let mut s = self
            .scanners
            .take(id)
            .map_err(|_| illegal(INVALID_SCANNER))?;
        let want = usize::try_from(n).unwrap_or(0);
        let mut rows = Vec::with_capacity(want.min(1024));
        let mut failed = None;
        while rows.len() < want {
            match s.scanner.next_row() {
                Ok(Some(r)) => rows.push(r),
                Ok(None) => break,
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        let sorted = s.sorted;
        self.scanners.put_back(id, s);
        if let Some(e) = failed {
            return Err(io(&e));
        }
        Ok(convert::row_results(&rows, sorted))
    }

    pub(super) fn close_scanner(&self, id: i32) -> thrift::Result<()> {
        let id = u64::try_from(id).map_err(|_| illegal(INVALID_SCANNER))?;
        if self.scanners.close(id) {
            Ok(())
        } else {
            Err(illegal(INVALID_SCANNER))
        }
    }
}
