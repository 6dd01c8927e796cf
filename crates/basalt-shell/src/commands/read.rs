//! dml reads: get, scan, count, get_counter.

use basalt_model::filter::{parse_filter, Filter};
use basalt_model::ops::{Get, Scan};
use basalt_model::{RowResult, TimeRange};

use super::dml::{counter, parse_column};
use crate::args::{boolean, get as option, int, key_name, list, to_bytes, Args};
use crate::parser::Value;
use crate::{Returned, Shell, ShellError};

/// The options get and scan share.
#[derive(Debug, Default)]
struct ReadOptions {
    columns: Vec<Vec<u8>>,
    time_range: Option<TimeRange>,
    versions: Option<u32>,
    filter: Option<Filter>,
}

impl ReadOptions {
    fn from_hash(h: &[(Value, Value)]) -> Result<ReadOptions, ShellError> {
        let mut o = ReadOptions::default();
        for key in ["COLUMN", "COLUMNS"] {
            if let Some(v) = option(h, key) {
                o.columns.extend(list(v, key)?);
            }
        }
        if let Some(Value::Array(r)) = option(h, "TIMERANGE") {
            let (a, b) = match r.as_slice() {
                [a, b] => (int(a, "TIMERANGE")?, int(b, "TIMERANGE")?),
                _ => return Err(ShellError::usage("TIMERANGE takes [min, max]")),
            };
            o.time_range = Some(TimeRange::new(a, b)?);
        }
        if let Some(v) = option(h, "TIMESTAMP") {
            o.time_range = Some(TimeRange::at(int(v, "TIMESTAMP")?)?);
        }
        if let Some(v) = option(h, "VERSIONS") {
            o.versions = Some(u32::try_from(int(v, "VERSIONS")?).unwrap_or(1));
        }
        if let Some(v) = option(h, "FILTER") {
            o.filter = Some(parse_filter(&v.to_s())?);
        }
        Ok(o)
    }

    fn get(self, mut g: Get) -> Get {
        for c in self.columns {
            g = match parse_column(&c) {
                (f, Some(q)) => g.add_column(f, q),
                (f, None) => g.add_family(f),
            };
        }
        if let Some(tr) = self.time_range {
            g = g.with_time_range(tr);
        }
        if let Some(n) = self.versions {
            g = g.with_max_versions(n);
        }
        if let Some(f) = self.filter {
            g = g.with_filter(f);
        }
        g
    }

    fn scan(self, mut s: Scan) -> Scan {
        for c in self.columns {
            s = match parse_column(&c) {
                (f, Some(q)) => s.add_column(f, q),
                (f, None) => s.add_family(f),
            };
        }
        if let Some(tr) = self.time_range {
            s = s.with_time_range(tr);
        }
        if let Some(n) = self.versions {
            s = s.with_max_versions(n);
        }
        if let Some(f) = self.filter {
            s = s.with_filter(f);
        }
        s
    }
}

fn get_row(sh: &Shell<'_>, a: &mut Args) -> Result<RowResult, ShellError> {
    let table = a.table()?;
    let row = a.bytes("row")?;
    // `get 't', 'r', 'c1', 'c2'`, `get 't', 'r', ['c1', 'c2']` or an option hash.
    let mut shorthand = Vec::new();
    let mut opts = ReadOptions::default();
    while let Some(v) = a.take() {
        match v {
            Value::Hash(h) => opts = ReadOptions::from_hash(&h)?,
            other => shorthand.extend(list(&other, "column")?),
        }
    }
    opts.columns.splice(0..0, shorthand);
    Ok(sh.table(&table)?.get(opts.get(Get::new(row)))?)
}

pub fn get(sh: &mut Shell<'_>, mut a: Args) -> Result<Returned, ShellError> {
    let r = get_row(sh, &mut a)?;
    let header = sh.formatter.header("COLUMN", "CELL");
    sh.println(header)?;
    for c in &r.cells {
        let line = sh
            .formatter
            .line(&crate::format::column(c), &sh.formatter.cell_text(c, false));
        sh.println(line)?;
    }
    sh.println(format!("{} row(s)", usize::from(!r.is_empty())))?;
    Ok(Returned::Nothing)
}

fn scan_of(opts: &[(Value, Value)]) -> Result<Scan, ShellError> {
    let mut s = ReadOptions::from_hash(opts)?.scan(Scan::new());
    if let Some(v) = option(opts, "STARTROW") {
        s = s.with_start_row(to_bytes(v, "STARTROW")?, true);
    }
    if let Some(v) = option(opts, "STOPROW") {
        s = s.with_stop_row(to_bytes(v, "STOPROW")?, false);
    }
    if let Some(v) = option(opts, "ROWPREFIXFILTER") {
        s = s.with_row_prefix(to_bytes(v, "ROWPREFIXFILTER")?);
    }
    if let Some(v) = option(opts, "LIMIT") {
        s = s.with_limit(u64::try_from(int(v, "LIMIT")?).unwrap_or(0));
    }
    if let Some(v) = option(opts, "BATCH") {
        s = s.with_batch(u32::try_from(int(v, "BATCH")?).unwrap_or(0));
    }
    if option(opts, "RAW").map(|v| boolean(v, "RAW")).transpose()? == Some(true) {
        if option(opts, "COLUMNS").is_some() {
            return Err(ShellError::usage("Cannot specify COLUMNS when RAW is set"));
        }
        s = s.raw();
    }
    if option(opts, "REVERSED")
        .map(|v| boolean(v, "REVERSED"))
        .transpose()?
        == Some(true)
    {
        s = s.reversed();
    }
    if let Some(v) = option(opts, "CACHE_BLOCKS") {
        s.cache_blocks = boolean(v, "CACHE_BLOCKS")?;
    }
    for (k, _) in opts {
        let k = key_name(k);
        let known = [
            "COLUMN",
            "COLUMNS",
            "TIMERANGE",
            "TIMESTAMP",
            "VERSIONS",
            "FILTER",
            "STARTROW",
            "STOPROW",
            "ROWPREFIXFILTER",
            "LIMIT",
            "BATCH",
            "RAW",
            "REVERSED",
            "CACHE_BLOCKS",
            "CACHE",
            "MAXLENGTH",
            "MAX_RESULT_SIZE",
            "ALLOW_PARTIAL_RESULTS",
            "ATTRIBUTES",
            "INTERVAL",
        ];
        if !known.contains(&k.as_str()) {
            return Err(ShellError::usage(format!("Unknown scan option {k}")));
        }
    }
    Ok(s)
}

pub fn scan(sh: &mut Shell<'_>, mut a: Args) -> Result<Returned, ShellError> {
    let table = a.table()?;
    let opts = a.opt_hash();
    a.done()?;
    let scan = scan_of(&opts)?;
    let scanner = sh.table(&table)?.scan(scan)?;
    let header = sh.formatter.header("ROW", "COLUMN+CELL");
    sh.println(header)?;
    let mut rows = 0u64;
    for r in scanner {
        let r = r?;
        if !r.partial {
            rows += 1;
        }
        let row = basalt_model::bytes_fmt::to_string_binary(r.row());
        for c in &r.cells {
            let line = sh.formatter.line(&row, &sh.formatter.cell_text(c, true));
            sh.println(line)?;
        }
    }
    sh.println(format!("{rows} row(s)"))?;
    Ok(Returned::Nothing)
}

pub fn count(sh: &mut Shell<'_>, mut a: Args) -> Result<Returned, ShellError> {
    let table = a.table()?;
    let opts = a.opt_hash();
    a.done()?;
    let interval = option(&opts, "INTERVAL")
        .map(|v| int(v, "INTERVAL"))
        .transpose()?
        .unwrap_or(1000);
    let interval = u64::try_from(interval.max(1)).unwrap_or(1000);
    let scan_opts: Vec<(Value, Value)> = opts
        .into_iter()
        .filter(|(k, _)| !["INTERVAL", "CACHE"].contains(&key_name(k).as_str()))
        .collect();
    let scan = scan_of(&scan_opts)?;
    let mut n = 0u64;
    for r in sh.table(&table)?.scan(scan)? {
        let r = r?;
        n += 1;
        if n.is_multiple_of(interval) {
            let row = basalt_model::bytes_fmt::to_string_binary(r.row());
            sh.println(format!("Current count: {n}, row: {row}"))?;
        }
    }
    sh.println(format!("{n} row(s)"))?;
    Ok(Returned::Value(n.to_string()))
}

pub fn get_counter(sh: &mut Shell<'_>, mut a: Args) -> Result<Returned, ShellError> {
    let table = a.table()?;
    let row = a.bytes("row")?;
    let (f, q) = parse_column(&a.bytes("column")?);
    a.done()?;
    let q = q.unwrap_or_default();
    let r = sh
        .table(&table)?
        .get(Get::new(row).add_column(f.clone(), q.clone()))?;
    match r.value(&f, &q).map(counter) {
        Some(Some(n)) => sh.println(format!("COUNTER VALUE = {n}"))?,
        Some(None) => {
            return Err(ShellError::usage("the cell is not a counter (8 bytes)"));
        }
        None => sh.println("No counter found at specified coordinates")?,
    }
    Ok(Returned::Nothing)
}
