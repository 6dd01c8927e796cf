//! The delete markers seen in the current row, and whether they mask a cell (HBase's
//! ScanDeleteTracker, with the masking rule of its NewVersionBehaviorTracker when the family
//! has NEW_VERSION_BEHAVIOR).
//!
//! Every marker is remembered with a sequence id, and masks a cell only when the cell's
//! sequence id is lower. Under the default semantics a marker masks by timestamp alone, which
//! is the same rule with every marker at the highest sequence id and every cell at the lowest:
//! so one tracker serves both, and the default answers exactly as a timestamp-only one would.
//!
//! # Invariants
//! 1. A remembered set never holds a marker that another of its markers makes redundant:
//!    for "at or below" markers (DeleteFamily, DeleteColumn) one with both a timestamp and a
//!    sequence id at least as high; for "exactly at" markers (DeleteFamilyVersion, Delete) one
//!    at the same timestamp with a sequence id at least as high. So the sets stay as small
//!    as the answers they must give: under the default semantics, at most one marker for
//!    "at or below" and one per timestamp for "exactly at".
//! 2. Column markers are those of the current qualifier only: cells arrive in key order, so
//!    a new qualifier never meets an older one's markers again.

use basalt_model::{Cell, CellType, Timestamp};
use bytes::Bytes;

/// What masks a cell, in the order HBase checks (ScanDeleteTracker.isDeleted).
#[derive(Debug, PartialEq, Eq)]
#[allow(clippy::enum_variant_names)] // HBase's DeleteResult names
pub(super) enum DeleteResult {
    FamilyDeleted,
    FamilyVersionDeleted,
    ColumnDeleted,
    VersionDeleted,
    NotDeleted,
}

/// One marker as the tracker needs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Mark {
    ts: Timestamp,
    seq: u64,
}

/// Markers that mask every cell at or below their timestamp.
#[derive(Debug, Default)]
struct AtOrBelow(Vec<Mark>);

impl AtOrBelow {
    fn add(&mut self, m: Mark) {
        // Invariant (1): a marker another one covers adds nothing, and one that covers
        // others replaces them.
        if self.0.iter().any(|k| k.ts >= m.ts && k.seq >= m.seq) {
            return;
        }
        self.0.retain(|k| !(m.ts >= k.ts && m.seq >= k.seq));
        self.0.push(m);
    }

    fn masks(&self, ts: Timestamp, seq: u64) -> bool {
        self.0.iter().any(|k| ts <= k.ts && seq < k.seq)
    }
}

/// Markers that mask only the cells at exactly their timestamp.
#[derive(Debug, Default)]
struct ExactlyAt(Vec<Mark>);

impl ExactlyAt {
    fn add(&mut self, m: Mark) {
        // Invariant (1): one marker per timestamp, the newest.
        match self.0.iter_mut().find(|k| k.ts == m.ts) {
            Some(k) => k.seq = k.seq.max(m.seq),
            None => self.0.push(m),
        }
    }

    fn masks(&self, ts: Timestamp, seq: u64) -> bool {
        self.0.iter().any(|k| ts == k.ts && seq < k.seq)
    }
}

/// Remembers the markers seen in the current row.
#[derive(Debug, Default)]
pub(super) struct DeleteTracker {
    /// NEW_VERSION_BEHAVIOR: sequence ids take part in masking.
    by_seq: bool,
    family: AtOrBelow,
    family_versions: ExactlyAt,
    column: Option<Bytes>,
    columns: AtOrBelow,
    versions: ExactlyAt,
    /// Whether a marker was added since the row started. Most rows have none: their cells
    /// are then answered, and the next row started, without a look at the lists.
    any: bool,
}

impl DeleteTracker {
    /// A tracker for a family with (`by_seq`) or without NEW_VERSION_BEHAVIOR.
    pub(super) fn new(by_seq: bool) -> DeleteTracker {
        DeleteTracker {
            by_seq,
            ..DeleteTracker::default()
        }
    }

    /// Forgets the row's markers (a new row starts).
    pub(super) fn reset(&mut self) {
        if self.any {
            *self = DeleteTracker::new(self.by_seq);
        }
    }

    /// Remembers marker `m`.
    pub(super) fn add(&mut self, m: &Cell) {
        self.any = true;
        let mark = Mark {
            ts: m.timestamp,
            seq: if self.by_seq { m.seq_id } else { u64::MAX },
        };
        match m.cell_type {
            CellType::DeleteFamily => self.family.add(mark),
            CellType::DeleteFamilyVersion => self.family_versions.add(mark),
            CellType::DeleteColumn | CellType::Delete => {
                if self.column.as_deref() != Some(m.qualifier()) {
                    // Invariant (2).
                    self.column = Some(m.qualifier_bytes());
                    self.columns = AtOrBelow::default();
                    self.versions = ExactlyAt::default();
                }
                if m.cell_type == CellType::DeleteColumn {
                    self.columns.add(mark);
                } else {
                    self.versions.add(mark);
                }
            }
            CellType::Put | CellType::Minimum | CellType::Maximum => {}
        }
    }

    /// Whether a marker seen so far masks `c`, and which kind.
    pub(super) fn is_deleted(&self, c: &Cell) -> DeleteResult {
        if !self.any {
            return DeleteResult::NotDeleted;
        }
        let (ts, seq) = (c.timestamp, if self.by_seq { c.seq_id } else { 0 });
        if self.family.masks(ts, seq) {
            return DeleteResult::FamilyDeleted;
        }
        if self.family_versions.masks(ts, seq) {
            return DeleteResult::FamilyVersionDeleted;
        }
        if self.column.as_deref() == Some(c.qualifier()) {
            if self.columns.masks(ts, seq) {
                return DeleteResult::ColumnDeleted;
            }
            if self.versions.masks(ts, seq) {
                return DeleteResult::VersionDeleted;
            }
        }
        DeleteResult::NotDeleted
    }
}
