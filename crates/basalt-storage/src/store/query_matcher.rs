//! The pure decision logic of the read path (HBase's ScanQueryMatcher family).
//!
//! For each cell of one store, in key order, [`QueryMatcher::matches`] returns a [`MatchCode`]
//! that the store scanner turns into "keep", "step" or "seek". The same matcher, in compaction
//! mode, decides what a flush or compaction writes out. It does no I/O.
//!
//! # Invariants
//! 1. Cells are fed in key order within one row; `set_row` starts a row and resets the
//!    trackers.
//! 2. Delete markers are tracked before any column or version check, so a marker of any column
//!    masks what follows it even when that column is not part of the result.
//! 3. Markers never count toward VERSIONS, and neither do the cells they mask (with or
//!    without NEW_VERSION_BEHAVIOR).
//! 4. Without NEW_VERSION_BEHAVIOR a marker masks by timestamp alone: a later write at or
//!    below it stays masked until a major compaction drops the marker.
//! 5. With NEW_VERSION_BEHAVIOR a marker masks a cell only when, besides the timestamp rule,
//!    the cell was written before it: `cell.seq_id < marker.seq_id`. A delete removes what
//!    exists when it runs and never masks a later write, whatever that write's timestamp. So
//!    a masked cell says nothing of the older cells of its column (one may be a later write),
//!    and the matcher steps to the next cell instead of seeking past the column. This holds
//!    only while a region's new writes take sequence ids above every id in its files, also
//!    after a reopen, split or merge (`RegionServer::open_region` raises the counter).

mod delete_tracker;

use basalt_model::filter::{Filter, ReturnCode};
use basalt_model::{bytes_order, Cell, CellType, KeepDeletedCells, TimeRange, Timestamp};
use bytes::Bytes;
use delete_tracker::{DeleteResult, DeleteTracker};

/// What the scanner should do with the current cell.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MatchCode {
    Include,
    IncludeAndSeekNextCol,
    IncludeAndSeekNextRow,
    Skip,
    SeekNextCol,
    SeekNextRow,
    /// Seek to this key (from an explicit column list or a filter hint). Boxed: a code is
    /// returned for every cell a read looks at, and a whole cell inline made every code
    /// 176 bytes to move where the rare seek needs a pointer.
    SeekTo(Box<Cell>),
    /// The cell belongs to another row: this row is done.
    Done,
    /// The filter rules out every remaining row.
    DoneScan,
}

/// A family's retention settings as the matcher needs them (HBase's ScanInfo).
#[derive(Clone, Copy, Debug)]
pub struct ScanInfo {
    pub max_versions: u32,
    pub min_versions: u32,
    pub ttl_ms: Option<i64>,
    pub keep_deleted_cells: KeepDeletedCells,
    /// `hbase.hstore.time.to.purge.deletes`: markers younger than this survive major compaction.
    pub time_to_purge_deletes_ms: i64,
    /// NEW_VERSION_BEHAVIOR: markers mask only cells with a lower sequence id (invariant 5).
    pub new_version_behavior: bool,
}

/// How the matcher is used.
#[derive(Clone, Debug)]
pub enum Mode {
    /// A Get or Scan.
    User {
        raw: bool,
        time_range: TimeRange,
        /// The caller's version limit (already capped by VERSIONS unless raw).
        max_versions: u32,
        has_filter: bool,
        /// Taken out by the matcher's column tracker when the matcher is made.
        explicit_columns: Option<Vec<Bytes>>,
    },
    /// A flush or minor compaction: markers are kept.
    RetainDeletes,
    /// A major compaction: markers may be dropped. `earliest_put_ts` is the oldest Put in all
    /// files compacted.
    DropDeletes { earliest_put_ts: Timestamp },
}

/// The decision engine for one store and one scan or compaction.
#[derive(Debug)]
pub struct QueryMatcher {
    mode: Mode,
    info: ScanInfo,
    columns: ColumnTracker,
    deletes: DeleteTracker,
    now_ms: i64,
    oldest_unexpired_ts: Timestamp,
    /// Cells newer than this are not version-counted or used to mask (compaction only).
    max_read_point_to_track: u64,
    row: KeyCopy,
    versions_after_filter: u32,
    filter_count: u32,
    filter_col: KeyCopy,
}

impl QueryMatcher {
    /// A matcher for `mode` over a store with `info`, at time `now_ms`.
    #[must_use]
    pub fn new(
        mut mode: Mode,
        info: ScanInfo,
        now_ms: i64,
        max_read_point_to_track: u64,
    ) -> QueryMatcher {
        let oldest_unexpired_ts = info
            .ttl_ms
            .map_or(i64::MIN, |ttl| now_ms.saturating_sub(ttl));
        // The column tracker keeps the explicit list: the mode is not asked for it again.
        let (max_to_check, versions_after_filter, explicit) = match &mut mode {
            Mode::User {
                raw,
                max_versions,
                has_filter,
                explicit_columns,
                ..
            } => {
                // A user read keeps no more versions than the family does (HBase's
                // UserScanQueryMatcher); a raw one keeps what it asks for.
                let result_max = if *raw {
                    *max_versions
                } else {
                    (*max_versions).min(info.max_versions)
                };
                let check = match (*has_filter, *raw) {
                    (true, true) => u32::MAX,
                    (true, false) => info.max_versions,
                    (false, _) => result_max,
                };
                (check, result_max, explicit_columns.take())
            }
            Mode::RetainDeletes | Mode::DropDeletes { .. } => (info.max_versions, 0, None),
        };
        QueryMatcher {
            columns: ColumnTracker::new(
                explicit,
                info.min_versions,
                max_to_check,
                oldest_unexpired_ts,
            ),
            deletes: DeleteTracker::new(info.new_version_behavior),
            mode,
            info,
            now_ms,
            oldest_unexpired_ts,
            max_read_point_to_track,
            row: KeyCopy::default(),
            versions_after_filter,
            filter_count: 0,
            filter_col: KeyCopy::default(),
        }
    }

    /// Starts a new row.
    pub fn set_row(&mut self, row: &[u8]) {
        self.row.set(row);
        self.columns.reset();
        self.deletes.reset();
        self.filter_col.clear();
        self.filter_count = 0;
    }

    /// The first column a read names, where a Get's files may wait (HBase's lazy seek):
    /// `None` for reads of whole families, and for reads with a filter, which may look at
    /// rows and cells the read never keeps.
    #[must_use]
    pub fn lazy_seek_column(&self) -> Option<&[u8]> {
        match self.mode {
            Mode::User {
                has_filter: false, ..
            } => self.columns.explicit.as_ref()?.first().map(|q| &q[..]),
            _ => None,
        }
    }

    /// The first key of the first column named after `cell`'s, for reads of explicit
    /// columns; `None` for the others, or after the last column named.
    #[must_use]
    pub fn next_wanted_column(&self, cell: &Cell) -> Option<Cell> {
        let cols = self.columns.explicit.as_ref()?;
        let next = cols.iter().find(|q| q[..] > *cell.qualifier())?;
        Some(Cell::first_on_column(cell.row(), &cell.family, next))
    }

    /// Decides about `cell`, consulting `filter` for user scans.
    pub fn matches(&mut self, cell: &Cell, filter: Option<&mut Filter>) -> MatchCode {
        let code = self.decide(cell, filter);
        // Past the last column named, the row holds nothing more the read wants: it leaves
        // the row, as HBase's ExplicitColumnTracker does, and no source reads further (a
        // file that put off its seek never reads at all).
        if code == MatchCode::SeekNextCol && self.columns.is_last_wanted(cell.qualifier()) {
            return MatchCode::SeekNextRow;
        }
        code
    }

    fn decide(&mut self, cell: &Cell, filter: Option<&mut Filter>) -> MatchCode {
        let is_user = matches!(self.mode, Mode::User { .. });
        if is_user && filter.as_ref().is_some_and(|f| f.filter_all_remaining()) {
            return MatchCode::DoneScan;
        }
        if let Some(code) = self.pre_check(cell) {
            return code;
        }
        // Only the copyable parts of the mode are taken out: cloning it would copy the
        // explicit columns' list for every cell.
        let (raw, time_range, earliest_put_ts) = match &self.mode {
            Mode::User {
                raw, time_range, ..
            } => (Some(*raw), *time_range, None),
            Mode::RetainDeletes => (None, TimeRange::all(), None),
            Mode::DropDeletes { earliest_put_ts } => {
                (None, TimeRange::all(), Some(*earliest_put_ts))
            }
        };
        match raw {
            Some(true) => self.match_column(cell, time_range, filter),
            Some(false) => {
                if cell.cell_type.is_delete() {
                    let see_past = self.info.keep_deleted_cells != KeepDeletedCells::False;
                    let include = if see_past {
                        time_range.contains(cell.timestamp)
                    } else {
                        time_range.within_or_after(cell.timestamp)
                    };
                    if include {
                        self.deletes.add(cell);
                    }
                    return MatchCode::Skip;
                }
                if let Some(code) = self.check_deleted(cell) {
                    return code;
                }
                self.match_column(cell, time_range, filter)
            }
            None => self.match_compaction(cell, earliest_put_ts),
        }
    }

    /// A user scan that is not raw: delete markers and what they mask are never returned.
    fn is_cooked(&self) -> bool {
        matches!(self.mode, Mode::User { raw: false, .. })
    }

    fn pre_check(&mut self, cell: &Cell) -> Option<MatchCode> {
        if !self.row.is(cell.row()) {
            return Some(MatchCode::Done);
        }
        if self.columns.done() {
            return Some(MatchCode::SeekNextRow);
        }
        if self.columns.is_done(cell.timestamp) {
            return Some(MatchCode::SeekNextCol);
        }
        if let Some(ttl) = cell.ttl_ms {
            let ttl = i64::try_from(ttl).unwrap_or(i64::MAX);
            if cell.timestamp.saturating_add(ttl) < self.now_ms {
                return Some(MatchCode::Skip);
            }
        }
        None
    }

    fn check_deleted(&mut self, cell: &Cell) -> Option<MatchCode> {
        match self.deletes.is_deleted(cell) {
            // The older cells of the column are masked too, unless one of them was written
            // after the marker (invariant 5).
            DeleteResult::FamilyDeleted | DeleteResult::ColumnDeleted
                if !self.info.new_version_behavior =>
            {
                Some(MatchCode::SeekNextCol)
            }
            DeleteResult::FamilyDeleted
            | DeleteResult::ColumnDeleted
            | DeleteResult::VersionDeleted
            | DeleteResult::FamilyVersionDeleted => Some(MatchCode::Skip),
            DeleteResult::NotDeleted => None,
        }
    }

    fn match_column(
        &mut self,
        cell: &Cell,
        tr: TimeRange,
        filter: Option<&mut Filter>,
    ) -> MatchCode {
        match tr.compare(cell.timestamp) {
            std::cmp::Ordering::Greater => return MatchCode::Skip,
            std::cmp::Ordering::Less => return MatchCode::SeekNextCol,
            std::cmp::Ordering::Equal => {}
        }
        let code = self.columns.check_column(cell);
        if code != MatchCode::Include {
            return code;
        }
        let code = self.columns.check_versions(cell, false);
        match (&code, filter) {
            (MatchCode::Skip | MatchCode::SeekNextCol, _) => code,
            // The last version the column may give: each older cell of it would be
            // SeekNextCol (a put past the limit) or Skip (a marker, or a cell it masks, which
            // a scan that is not raw never returns). So the scan leaves the column now,
            // instead of reading its next cell only to leave it then, as HBase's
            // ExplicitColumnTracker does for the columns a Get names. After the last column
            // named, it leaves the row (`matches`).
            (MatchCode::Include, None) if self.is_cooked() && self.columns.is_full() => {
                if self.columns.is_last_wanted(cell.qualifier()) {
                    MatchCode::IncludeAndSeekNextRow
                } else {
                    MatchCode::IncludeAndSeekNextCol
                }
            }
            (_, None) => code,
            (_, Some(f)) => {
                let rc = f.filter_cell(cell);
                self.merge_filter_response(cell, code, rc, f)
            }
        }
    }

    /// UserScanQueryMatcher.mergeFilterResponse: combines the version decision with the
    /// filter's, then re-counts versions among the cells the filter kept.
    fn merge_filter_response(
        &mut self,
        cell: &Cell,
        code: MatchCode,
        rc: ReturnCode,
        f: &Filter,
    ) -> MatchCode {
        use MatchCode as M;
        let code = match rc {
            ReturnCode::Skip => match code {
                M::Include => return M::Skip,
                M::IncludeAndSeekNextCol => return M::SeekNextCol,
                _ => return M::SeekNextRow,
            },
            ReturnCode::NextCol => match code {
                M::IncludeAndSeekNextRow => return M::SeekNextRow,
                _ => return M::SeekNextCol,
            },
            ReturnCode::NextRow => return M::SeekNextRow,
            ReturnCode::SeekNextUsingHint => {
                return f
                    .next_cell_hint(cell)
                    .filter(|h| h > cell)
                    .map_or(M::Skip, |h| M::SeekTo(Box::new(h)));
            }
            ReturnCode::Include | ReturnCode::IncludeAndSeekNextRow => code,
            ReturnCode::IncludeAndNextCol => {
                if code == M::Include {
                    M::IncludeAndSeekNextCol
                } else {
                    code
                }
            }
        };
        if code != M::Include {
            return code;
        }
        if !self.filter_col.is(cell.qualifier()) {
            self.filter_col.set(cell.qualifier());
            self.filter_count = 0;
        }
        self.filter_count += 1;
        if self.filter_count > self.versions_after_filter {
            M::SeekNextCol
        } else {
            M::Include
        }
    }

    fn match_compaction(&mut self, cell: &Cell, drop_deletes: Option<Timestamp>) -> MatchCode {
        let untracked = cell.seq_id > self.max_read_point_to_track;
        if cell.cell_type.is_delete() {
            if untracked {
                return MatchCode::Include;
            }
            self.track_delete(cell);
            if let Some(earliest_put_ts) = drop_deletes {
                if let Some(code) = self.try_drop_delete(cell, earliest_put_ts) {
                    return code;
                }
            } else {
                return MatchCode::Include;
            }
        } else if let Some(code) = self.check_deleted(cell) {
            return code;
        }
        self.columns.check_versions(cell, untracked)
    }

    fn track_delete(&mut self, cell: &Cell) {
        let kdc = self.info.keep_deleted_cells;
        if kdc == KeepDeletedCells::False
            || (kdc == KeepDeletedCells::Ttl && cell.timestamp < self.oldest_unexpired_ts)
        {
            self.deletes.add(cell);
        }
    }

    fn try_drop_delete(&mut self, cell: &Cell, earliest_put_ts: Timestamp) -> Option<MatchCode> {
        let purge = self.info.time_to_purge_deletes_ms;
        if purge > 0 && self.now_ms.saturating_sub(cell.timestamp) <= purge {
            return None;
        }
        let kdc = self.info.keep_deleted_cells;
        if kdc == KeepDeletedCells::False
            || (kdc == KeepDeletedCells::Ttl && cell.timestamp < self.oldest_unexpired_ts)
        {
            return Some(MatchCode::Skip);
        }
        if cell.timestamp < earliest_put_ts {
            // Nothing older than the marker exists in the files compacted: it masks nothing.
            return Some(MatchCode::SeekNextCol);
        }
        None
    }
}

/// A row or column the matcher tracks, copied into a buffer kept from one key to the next.
/// The matcher sees every cell a read passes over; holding a reference-counted handle
/// instead cost an atomic increment and decrement per row and per column, where copying a
/// short key into a warm buffer costs neither. Keys of up to [`KEY_INLINE`] bytes are held
/// inline: a Get's matcher lives for one row, and a buffer on the heap cost each Get an
/// allocation for its row and one for its column.
#[derive(Debug, Default)]
struct KeyCopy {
    inline: [u8; KEY_INLINE],
    /// The key's length; longer than [`KEY_INLINE`], the key is in `spill`.
    len: usize,
    spill: Vec<u8>,
    /// Whether a key is held (an empty key is a key).
    held: bool,
}

/// Bytes of a key [`KeyCopy`] holds inline.
const KEY_INLINE: usize = 32;

impl KeyCopy {
    fn bytes(&self) -> &[u8] {
        match self.inline.get(..self.len) {
            Some(key) => key,
            None => &self.spill,
        }
    }

    fn is(&self, key: &[u8]) -> bool {
        self.held && bytes_order::equal(self.bytes(), key)
    }

    fn set(&mut self, key: &[u8]) {
        self.len = key.len();
        match self.inline.get_mut(..key.len()) {
            Some(inline) => basalt_model::bytes_order::copy(inline, key),
            None => {
                self.spill.clear();
                self.spill.extend_from_slice(key);
            }
        }
        self.held = true;
    }

    fn clear(&mut self) {
        self.held = false;
    }
}

/// Counts versions per column and, for explicit column lists, steers to wanted columns
/// (ScanWildcardColumnTracker and ExplicitColumnTracker in one).
#[derive(Debug)]
struct ColumnTracker {
    explicit: Option<Vec<Bytes>>,
    idx: usize,
    column: KeyCopy,
    count: u32,
    last_ts_type: Option<(Timestamp, CellType)>,
    min_versions: u32,
    max_versions: u32,
    oldest_unexpired_ts: Timestamp,
}

impl ColumnTracker {
    fn new(
        explicit: Option<Vec<Bytes>>,
        min_versions: u32,
        max_versions: u32,
        oldest: Timestamp,
    ) -> Self {
        ColumnTracker {
            explicit,
            idx: 0,
            column: KeyCopy::default(),
            count: 0,
            last_ts_type: None,
            min_versions,
            max_versions,
            oldest_unexpired_ts: oldest,
        }
    }

    fn reset(&mut self) {
        self.idx = 0;
        self.column.clear();
        self.count = 0;
        self.last_ts_type = None;
    }

    fn done(&self) -> bool {
        self.explicit
            .as_ref()
            .is_some_and(|cols| self.idx >= cols.len())
    }

    fn is_expired(&self, ts: Timestamp) -> bool {
        ts < self.oldest_unexpired_ts
    }

    /// Expired and no minimum to keep: this cell and the older ones of its column are gone.
    fn is_done(&self, ts: Timestamp) -> bool {
        self.min_versions == 0 && self.is_expired(ts)
    }

    fn check_column(&mut self, cell: &Cell) -> MatchCode {
        let Some(cols) = &self.explicit else {
            return MatchCode::Include;
        };
        while self.idx < cols.len() && cols[self.idx] < cell.qualifier() {
            self.idx += 1;
        }
        match cols.get(self.idx) {
            None => MatchCode::SeekNextRow,
            Some(want) if *want == cell.qualifier() => MatchCode::Include,
            Some(want) => MatchCode::SeekTo(Box::new(Cell::first_on_column(
                cell.row(),
                &cell.family,
                want,
            ))),
        }
    }

    /// Whether `qualifier` is the last column of the explicit list, or past it.
    fn is_last_wanted(&self, qualifier: &[u8]) -> bool {
        self.explicit
            .as_ref()
            .and_then(|cols| cols.last())
            .is_some_and(|last| qualifier >= &last[..])
    }

    /// The column gave as many versions as are wanted: any older put of it is past the
    /// limit.
    fn is_full(&self) -> bool {
        self.count >= self.max_versions
    }

    fn check_versions(&mut self, cell: &Cell, ignore_count: bool) -> MatchCode {
        if self.column.is(cell.qualifier()) {
            if ignore_count {
                return MatchCode::Include;
            }
            if self.last_ts_type == Some((cell.timestamp, cell.cell_type)) {
                return MatchCode::Skip;
            }
        } else {
            self.column.set(cell.qualifier());
            self.count = 0;
            self.last_ts_type = None;
            if ignore_count {
                return MatchCode::Include;
            }
        }
        if !cell.cell_type.is_delete() {
            self.count += 1;
        }
        if self.count > self.max_versions {
            return MatchCode::SeekNextCol;
        }
        if self.count <= self.min_versions || !self.is_expired(cell.timestamp) {
            self.last_ts_type = Some((cell.timestamp, cell.cell_type));
            MatchCode::Include
        } else {
            MatchCode::SeekNextCol
        }
    }
}

#[cfg(test)]
mod tests;
