//! Basalt behind the benchmark trait: one table, one family `f`, the value in `f:q` of the
//! key's row (so every entry is a full HBase cell: row, family, qualifier, timestamp, type).

use std::path::{Path, PathBuf};

use basalt_model::ops::{Get, Put, Scan};
use basalt_model::{ColumnFamilyDescriptor, Durability, TableDescriptor, TableName};
use basalt_node::{Database, Options, Table};

use crate::Engine;

/// An embedded Basalt database in a directory of its own.
#[derive(Debug)]
pub struct BasaltEngine {
    dir: PathBuf,
    options: Options,
    family: ColumnFamilyDescriptor,
    /// Split keys of the table when it is created (a pre-split table).
    split_keys: Vec<bytes::Bytes>,
    /// The table's `MEMSTORE_FLUSHSIZE` (HBase's default when `None`).
    flush_size_bytes: Option<u64>,
    db: Option<(Database, Table)>,
}

const TABLE: &str = "bench";

impl BasaltEngine {
    /// Opens (creating if needed) the store in `dir` with `options`; the table's family is
    /// `family` (block size, compression, bloom).
    ///
    /// # Errors
    /// Opening or creating failed.
    pub fn open(
        dir: &Path,
        options: Options,
        family: ColumnFamilyDescriptor,
    ) -> anyhow::Result<BasaltEngine> {
        let mut e = BasaltEngine {
            dir: dir.to_owned(),
            options,
            family,
            split_keys: Vec::new(),
            flush_size_bytes: None,
            db: None,
        };
        e.reopen()?;
        Ok(e)
    }

    /// Creates the table anew with `regions` regions of equal key ranges (for `rows` keys),
    /// as `create 'bench', 'f', SPLITS => [...]` would, and the flush size given.
    ///
    /// # Errors
    /// Dropping or creating the table failed.
    pub fn recreate_table(
        &mut self,
        regions: u64,
        rows: u64,
        flush_size_bytes: Option<u64>,
    ) -> anyhow::Result<()> {
        self.split_keys = (1..regions)
            .map(|j| bytes::Bytes::copy_from_slice(&crate::key(rows * j / regions)))
            .collect();
        self.flush_size_bytes = flush_size_bytes;
        let (db, _) = self.parts()?;
        let name = TableName::parse(TABLE)?;
        db.disable_table(&name)?;
        db.delete_table(&name)?;
        self.reopen()
    }

    fn reopen(&mut self) -> anyhow::Result<()> {
        if let Some((db, t)) = self.db.take() {
            drop(t);
            db.close()?;
        }
        let db = Database::open_with(&self.dir, self.options.clone())?;
        let name = TableName::parse(TABLE)?;
        if !db.table_exists(&name) {
            let mut desc = TableDescriptor::new(&name, [self.family.clone()]);
            if let Some(n) = self.flush_size_bytes {
                desc.memstore_flushsize_bytes = n;
            }
            db.create_table(desc, &self.split_keys)?;
        }
        let t = db.table(TABLE)?;
        self.db = Some((db, t));
        Ok(())
    }

    fn parts(&self) -> anyhow::Result<&(Database, Table)> {
        self.db
            .as_ref()
            .ok_or_else(|| anyhow::anyhow!("the database is closed"))
    }

    /// The open database (for its statistics).
    ///
    /// # Errors
    /// The engine is closed after a failed reopen.
    pub fn database(&self) -> anyhow::Result<&Database> {
        Ok(&self.parts()?.0)
    }

    /// Compacts the table's stores into one file each (a major compaction) and waits for it.
    ///
    /// # Errors
    /// The engine is closed, or the compaction failed.
    pub fn major_compact(&self) -> anyhow::Result<()> {
        let db = &self.parts()?.0;
        db.major_compact(&TableName::parse(TABLE)?)?;
        db.wait_for_background()?;
        Ok(())
    }

    /// Closes the database.
    ///
    /// # Errors
    /// The final WAL sync failed.
    pub fn close(mut self) -> anyhow::Result<()> {
        if let Some((db, t)) = self.db.take() {
            drop(t);
            db.close()?;
        }
        Ok(())
    }
}

impl Engine for BasaltEngine {
    fn put(&self, key: &[u8], value: &[u8], sync: bool) -> anyhow::Result<()> {
        let durability = if sync {
            Durability::SyncWal
        } else {
            Durability::AsyncWal
        };
        let put = Put::new(key.to_vec())
            .add("f", "q", value)
            .with_durability(durability);
        Ok(self.parts()?.1.put(put)?)
    }

    /// The key's entry is the cell `f:q` of its row, so the Get names it, as a key-value
    /// Get names its key.
    fn get(&self, key: &[u8]) -> anyhow::Result<bool> {
        let get = Get::new(key.to_vec()).add_column("f", "q");
        Ok(!self.parts()?.1.get(get)?.is_empty())
    }

    fn seek_next(&self, start: &[u8], n: usize) -> anyhow::Result<usize> {
        let scan = Scan::new()
            .with_start_row(start.to_vec(), true)
            .with_limit(n as u64);
        let mut s = self.parts()?.1.scan(scan)?;
        let mut read = 0;
        let mut cells = Vec::new();
        while s.next_cells(&mut cells)?.is_some() {
            read += 1;
        }
        Ok(read)
    }

    fn scan_all(&self) -> anyhow::Result<usize> {
        let mut s = self.parts()?.1.scan(Scan::new())?;
        let mut read = 0;
        let mut cells = Vec::new();
        while s.next_cells(&mut cells)?.is_some() {
            read += 1;
        }
        Ok(read)
    }

    fn settle(&self) -> anyhow::Result<()> {
        let db = &self.parts()?.0;
        db.flush(&TableName::parse(TABLE)?)?;
        db.wait_for_background()?;
        Ok(())
    }

    fn reset(&mut self) -> anyhow::Result<()> {
        if let Some((db, t)) = self.db.take() {
            drop(t);
            db.close()?;
        }
        if self.dir.exists() {
            std::fs::remove_dir_all(&self.dir)?;
        }
        self.reopen()
    }

    fn drop_cache(&mut self) -> anyhow::Result<()> {
        self.reopen()
    }
}
