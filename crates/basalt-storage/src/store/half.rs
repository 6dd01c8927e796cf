//! A region's view of a store file it shares: after a split each daughter reads the parent's
//! files through references until its first compaction rewrites them, and sees only its own
//! rows of them (HBase's HalfStoreFileReader, here for any row range, so that a merged
//! region's references need no other kind).

use basalt_model::{Cell, Result};
use bytes::Bytes;

use super::scanner::CellSource;
use crate::storefile::StoreFileScanner;

/// The cells of `inner` (a store file's, but for tests) whose rows lie in `[start, end)`
/// (an empty `end`: no upper bound).
#[derive(Debug)]
pub struct RowRangeSource<S = StoreFileScanner> {
    inner: S,
    start: Bytes,
    end: Bytes,
}

impl<S: CellSource> RowRangeSource<S> {
    /// `inner`, cut to `[start, end)`.
    #[must_use]
    pub fn new(inner: S, start: Bytes, end: Bytes) -> RowRangeSource<S> {
        RowRangeSource { inner, start, end }
    }

    fn in_range(&self, row: &[u8]) -> bool {
        row >= &self.start[..] && (self.end.is_empty() || row < &self.end[..])
    }
}

impl<S: CellSource> CellSource for RowRangeSource<S> {
    fn peek(&self) -> Option<&Cell> {
        self.inner.peek().filter(|c| self.in_range(c.row()))
    }

    fn advance(&mut self) -> Result<()> {
        if self.peek().is_some() {
            self.inner.advance()?;
        }
        Ok(())
    }

    fn take_into(&mut self, out: &mut Vec<Cell>) -> Result<bool> {
        if self.peek().is_none() {
            return Ok(false);
        }
        self.inner.take_into(out)
    }

    fn take_last_version_into(&mut self, out: &mut Vec<Cell>) -> Result<bool> {
        if self.peek().is_none() {
            return Ok(false);
        }
        self.inner.take_last_version_into(out)
    }

    fn take_reusing(
        &mut self,
        out: &mut Vec<Cell>,
        last_version: bool,
        spare: &mut Vec<Cell>,
    ) -> Result<bool> {
        if self.peek().is_none() {
            return Ok(false);
        }
        self.inner.take_reusing(out, last_version, spare)
    }

    fn seek(&mut self, key: &Cell) -> Result<()> {
        if key.row()[..] < self.start[..] {
            self.inner.seek(&Cell::first_on_row(&self.start))
        } else {
            self.inner.seek(key)
        }
    }

    fn last_row_before(&mut self, key: Option<&Cell>) -> Result<Option<Bytes>> {
        let end = (!self.end.is_empty()).then(|| Cell::first_on_row(&self.end));
        let key = match (key, end.as_ref()) {
            (Some(k), Some(e)) if k > e => Some(e),
            (None, e) => e,
            (k, _) => k,
        };
        let row = self.inner.last_row_before(key)?;
        Ok(row.filter(|r| r[..] >= self.start[..]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::scanner::CellSource;

    /// A sorted vector as a source.
    #[derive(Debug)]
    struct Cells(Vec<Cell>, usize);

    impl CellSource for Cells {
        fn peek(&self) -> Option<&Cell> {
            self.0.get(self.1)
        }
        fn advance(&mut self) -> Result<()> {
            self.1 += 1;
            Ok(())
        }
        fn seek(&mut self, key: &Cell) -> Result<()> {
            self.1 = self.0.partition_point(|c| c < key);
            Ok(())
        }
        fn last_row_before(&mut self, key: Option<&Cell>) -> Result<Option<Bytes>> {
            let p = key.map_or(self.0.len(), |k| self.0.partition_point(|c| c < k));
            Ok(p.checked_sub(1).map(|i| self.0[i].row_bytes()))
        }
    }

    fn source(rows: &[&str], start: &str, end: &str) -> RowRangeSource<Cells> {
        let cells = rows
            .iter()
            .map(|r| Cell::put(r.to_string(), "f", "q", 1, "v"))
            .collect();
        RowRangeSource::new(
            Cells(cells, 0),
            Bytes::from(start.to_owned()),
            Bytes::from(end.to_owned()),
        )
    }

    fn rows_from(s: &mut RowRangeSource<Cells>, from: &str) -> Vec<String> {
        s.seek(&Cell::first_on_row(&Bytes::from(from.to_owned())))
            .unwrap();
        let mut cells = Vec::new();
        while s.take_into(&mut cells).unwrap() {}
        cells
            .iter()
            .map(|c| String::from_utf8(c.row().to_vec()).unwrap())
            .collect()
    }

    #[test]
    fn only_rows_in_range_are_seen() {
        let rows = ["a", "b", "c", "d", "e"];
        assert_eq!(rows_from(&mut source(&rows, "b", "d"), ""), ["b", "c"]);
        assert_eq!(rows_from(&mut source(&rows, "b", "d"), "c"), ["c"]);
        assert_eq!(
            rows_from(&mut source(&rows, "b", "d"), "d"),
            Vec::<String>::new()
        );
        assert_eq!(rows_from(&mut source(&rows, "c", ""), "a"), ["c", "d", "e"]);
        assert_eq!(rows_from(&mut source(&rows, "", "b"), ""), ["a"]);
    }

    #[test]
    fn reversed_lookups_stay_in_range() {
        let rows = ["a", "b", "c", "d", "e"];
        let mut s = source(&rows, "b", "d");
        assert_eq!(s.last_row_before(None).unwrap().as_deref(), Some(&b"c"[..]));
        let e = Cell::first_on_row(&Bytes::from_static(b"e"));
        assert_eq!(
            s.last_row_before(Some(&e)).unwrap().as_deref(),
            Some(&b"c"[..])
        );
        let b = Cell::first_on_row(&Bytes::from_static(b"b"));
        assert_eq!(s.last_row_before(Some(&b)).unwrap(), None);
    }
}
