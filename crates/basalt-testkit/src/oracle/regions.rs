//! A table of several regions: one [`Oracle`] per row range. Flushes and compactions happen
//! per region in HBase (a minor compaction needs two files in that region's store), a split
//! or merge flushes only the regions involved, and a scan runs region by region with its own
//! filter state in each (so a `PageFilter` limits rows per region). Modelling regions keeps
//! those effects in the oracle.

use basalt_model::ops::{Append, Delete, Get, Increment, Put, Scan};
use basalt_model::{Cell, RowResult};
use bytes::Bytes;

use super::Oracle;

/// Regions in key order: each part's start key (the first is empty) and its rows.
#[derive(Clone, Debug)]
pub struct RegionedOracle {
    parts: Vec<(Bytes, Oracle)>,
}

impl RegionedOracle {
    /// One region holding `oracle`'s table.
    #[must_use]
    pub fn new(oracle: Oracle) -> RegionedOracle {
        RegionedOracle {
            parts: vec![(Bytes::new(), oracle)],
        }
    }

    /// The regions' start keys, in order.
    #[must_use]
    pub fn starts(&self) -> Vec<Bytes> {
        self.parts.iter().map(|(s, _)| s.clone()).collect()
    }

    fn index(&self, row: &[u8]) -> usize {
        self.parts
            .partition_point(|(s, _)| s[..] <= *row)
            .saturating_sub(1)
    }

    fn part(&mut self, row: &[u8]) -> &mut Oracle {
        let i = self.index(row);
        &mut self.parts[i].1
    }

    /// `put`.
    pub fn put(&mut self, p: &Put, now: i64) {
        self.part(&p.row).put(p, now);
    }

    /// `delete`.
    pub fn delete(&mut self, d: &Delete, now: i64) {
        self.part(&d.row).delete(d, now);
    }

    /// `increment`.
    pub fn increment(&mut self, inc: &Increment, now: i64) -> RowResult {
        self.part(&inc.row).increment(inc, now)
    }

    /// `append`.
    pub fn append(&mut self, app: &Append, now: i64) -> RowResult {
        self.part(&app.row).append(app, now)
    }

    /// The newest visible version of one column.
    #[must_use]
    pub fn current(&self, row: &Bytes, f: &Bytes, q: &Bytes, now: i64) -> Option<Cell> {
        self.parts[self.index(row)].1.current(row, f, q, now)
    }

    /// `get`.
    #[must_use]
    pub fn get(&self, get: &Get, now: i64) -> RowResult {
        self.parts[self.index(&get.row)].1.get(get, now)
    }

    /// `scan`: region after region (backwards when reversed), each with its own filter
    /// state, until the scan's limit.
    #[must_use]
    pub fn scan(&self, scan: &Scan, now: i64) -> Vec<RowResult> {
        let mut out = Vec::new();
        let mut parts: Vec<&Oracle> = self.parts.iter().map(|(_, o)| o).collect();
        if scan.reversed {
            parts.reverse();
        }
        for part in parts {
            let mut s = scan.clone();
            if scan.limit > 0 {
                let left = scan.limit - out.len() as u64;
                if left == 0 {
                    break;
                }
                s.limit = left;
            }
            out.extend(part.scan(&s, now));
        }
        out
    }

    /// A flush of every region.
    pub fn flush(&mut self, now: i64) {
        self.parts.iter_mut().for_each(|(_, o)| o.flush(now));
    }

    /// A compaction of every region.
    pub fn compact(&mut self, major: bool, now: i64) {
        self.parts
            .iter_mut()
            .for_each(|(_, o)| o.compact(major, now));
    }

    /// A split of the region holding `key` at `key`: it is flushed, and each daughter sees
    /// the parent's files cut to its rows (as many files as the parent, some maybe empty).
    /// False when `key` is the region's start key (no split).
    pub fn split(&mut self, key: &Bytes, now: i64) -> bool {
        let i = self.index(key);
        if self.parts[i].0 == *key {
            return false;
        }
        self.parts[i].1.flush(now);
        let mut parent = self.parts[i].1.clone();
        parent.forget_row_floors();
        let low = parent.part(|r| r < &key[..]);
        let high = parent.part(|r| r >= &key[..]);
        self.parts[i].1 = low;
        self.parts.insert(i + 1, (key.clone(), high));
        true
    }

    /// A merge of regions `i` and `i + 1`: both are flushed and the merged region's stores
    /// list the first one's files, then the second's.
    ///
    /// # Panics
    /// When there is no region `i + 1`.
    pub fn merge(&mut self, i: usize, now: i64) {
        let (_, second) = self.parts.remove(i + 1);
        let first = &mut self.parts[i].1;
        first.flush(now);
        let mut second = second;
        second.flush(now);
        first.join(second);
        first.forget_row_floors();
    }

    /// A reopen: every region forgets its rows' clock floors.
    pub fn reopen(&mut self) {
        for (_, o) in &mut self.parts {
            o.forget_row_floors();
        }
    }
}

impl Oracle {
    /// The rows that pass `keep`, with every file kept (empty or not) and its metadata.
    #[must_use]
    pub fn part(&self, keep: impl Fn(&[u8]) -> bool) -> Oracle {
        let mut o = self.clone();
        for fam in o.families.values_mut() {
            fam.mem.retain(|c| keep(c.row()));
            for f in &mut fam.files {
                f.cells.retain(|c| keep(c.row()));
            }
        }
        o
    }

    /// Adds `other`'s files after this one's (two flushed regions merged).
    pub fn join(&mut self, other: Oracle) {
        self.seq = self.seq.max(other.seq);
        for (name, fam) in other.families {
            if let Some(mine) = self.families.get_mut(&name) {
                mine.mem.extend(fam.mem);
                mine.files.extend(fam.files);
            }
        }
    }
}
