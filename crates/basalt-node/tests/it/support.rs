use std::sync::Arc;

use basalt_model::ops::{Get, Scan};
use basalt_model::{Cell, ColumnFamilyDescriptor, RowResult, TableDescriptor, TableName};
use basalt_node::{Database, Options, Table};
use basalt_storage::env::{Env, ManualClock};

pub const T0: i64 = 1_700_000_000_000;

pub struct Fixture {
    pub dir: tempfile::TempDir,
    pub db: Database,
    pub clock: Arc<ManualClock>,
}

impl Fixture {
    pub fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let clock = Arc::new(ManualClock::new(T0));
        let db = open(dir.path(), &clock);
        Fixture { dir, db, clock }
    }

    pub fn create(&self, name: &str, families: Vec<ColumnFamilyDescriptor>) -> Table {
        let t = TableName::parse(name).unwrap();
        self.db
            .create_table(TableDescriptor::new(&t, families), &[])
            .unwrap();
        self.db.table(name).unwrap()
    }

    /// Closes and reopens the database (drop table handles first: they hold it open).
    pub fn reopen(self) -> Fixture {
        let Fixture { dir, db, clock } = self;
        db.close().unwrap();
        let db = open(dir.path(), &clock);
        Fixture { dir, db, clock }
    }

    pub fn flush(&self, name: &str) {
        self.db.flush(&TableName::parse(name).unwrap()).unwrap();
    }

    pub fn major(&self, name: &str) {
        self.db
            .major_compact(&TableName::parse(name).unwrap())
            .unwrap();
    }

    pub fn minor(&self, name: &str) {
        self.db.compact(&TableName::parse(name).unwrap()).unwrap();
    }
}

pub fn open(dir: &std::path::Path, clock: &Arc<ManualClock>) -> Database {
    open_with_env(dir, Env::with_clock(Arc::clone(clock) as _))
}

/// Opens the database in `dir` on `env` (a local or a shared-storage one).
pub fn open_with_env(dir: &std::path::Path, env: Env) -> Database {
    let mut options = Options {
        env,
        ..Options::default()
    };
    // Semantics tests and the oracle decide when files are flushed and compacted; the
    // background must not compact behind their backs (background.rs tests it on its own).
    options.background.compaction.automatic = false;
    Database::open_with(dir, options).unwrap()
}

pub fn cf(name: &str, versions: u32) -> ColumnFamilyDescriptor {
    ColumnFamilyDescriptor::new(name.to_owned()).with_max_versions(versions)
}

/// Timestamps of f:q in a Get for all versions.
pub fn versions(t: &Table, row: &str, f: &str, q: &str) -> Vec<i64> {
    let r = t
        .get(
            Get::new(row.to_owned())
                .add_column(f.to_owned(), q.to_owned())
                .all_versions(),
        )
        .unwrap();
    r.timestamps(f.as_bytes(), q.as_bytes())
}

pub fn values(r: &RowResult) -> Vec<String> {
    r.cells
        .iter()
        .map(|c| String::from_utf8_lossy(c.value()).into_owned())
        .collect()
}

pub fn scan_all(t: &Table, scan: Scan) -> Vec<RowResult> {
    t.scan(scan).unwrap().collect_rows().unwrap()
}

/// A scan's results read in place (`TableScanner::next_cells`), one vector passed to every
/// call and each result copied out of it. The vector starts with a cell of its own, which
/// the first call must let go of, and must be empty once the scan ends.
pub fn scan_in_place(t: &Table, scan: Scan) -> Vec<RowResult> {
    let mut s = t.scan(scan).unwrap();
    let mut cells = vec![Cell::first_on_row(&bytes::Bytes::from_static(b"left over"))];
    let mut out = Vec::new();
    while let Some(partial) = s.next_cells(&mut cells).unwrap() {
        out.push(RowResult::of_cells(cells.clone(), partial));
    }
    assert!(cells.is_empty(), "an ended scan left cells: {cells:?}");
    out
}

/// `row/f:q@ts=value` or `row/f:q@ts/Type` for markers, one per cell.
pub fn render(rows: &[RowResult]) -> Vec<String> {
    rows.iter()
        .flat_map(|r| r.cells.iter())
        .map(|c| {
            let base = format!(
                "{}/{}:{}@{}",
                String::from_utf8_lossy(c.row()),
                String::from_utf8_lossy(&c.family),
                String::from_utf8_lossy(c.qualifier()),
                c.timestamp
            );
            if c.cell_type.is_delete() {
                format!("{base}/{}", c.cell_type.name())
            } else {
                format!("{base}={}", String::from_utf8_lossy(c.value()))
            }
        })
        .collect()
}

/// Region directories of a table directory (its descriptor directory aside).
pub fn region_dirs(table_dir: &std::path::Path) -> usize {
    table_dir
        .read_dir()
        .unwrap()
        .filter(|e| {
            !e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with('.')
        })
        .count()
}
