//! NEW_VERSION_BEHAVIOR (invariant 5): a marker masks only the cells written before it. Each
//! case gives what a family without the attribute keeps and what one with it keeps, cells
//! shown as `qualifier@ts/type#seq`.

use proptest::prelude::*;

use super::*;
use crate::store::query_matcher::delete_tracker::{DeleteResult, DeleteTracker};

fn put_at(q: &str, ts: i64, seq: u64) -> Cell {
    {
        let mut c = put(q, ts);
        c.seq_id = seq;
        c
    }
}

fn mark_at(q: &str, ts: i64, t: CellType, seq: u64) -> Cell {
    {
        let mut c = mark(q, ts, t);
        c.seq_id = seq;
        c
    }
}

fn nvb(max_versions: u32) -> ScanInfo {
    ScanInfo {
        new_version_behavior: true,
        ..info(max_versions)
    }
}

fn show(cells: &[Cell]) -> Vec<String> {
    cells
        .iter()
        .map(|c| {
            format!(
                "{}@{}/{}#{}",
                String::from_utf8_lossy(c.qualifier()),
                c.timestamp,
                c.cell_type.name(),
                c.seq_id
            )
        })
        .collect()
}

/// What a family without and with NEW_VERSION_BEHAVIOR keeps of `cells` in `mode`.
fn both(mode: &Mode, max_versions: u32, cells: &[Cell]) -> (Vec<String>, Vec<String>) {
    let default = run(mode.clone(), info(max_versions), cells.to_vec());
    let with = run(mode.clone(), nvb(max_versions), cells.to_vec());
    (show(&default), show(&with))
}

fn all() -> Mode {
    user(10, TimeRange::all())
}

#[test]
fn each_marker_kind_masks_what_was_written_before_it_and_nothing_after() {
    use CellType::{Delete, DeleteColumn, DeleteFamily, DeleteFamilyVersion};
    // (cells, kept without the attribute, kept with it)
    let cases: Vec<(Vec<Cell>, Vec<&str>, Vec<&str>)> = vec![
        // a version delete, then a put at the same timestamp
        (
            vec![
                put_at("a", 5, 1),
                mark_at("a", 5, Delete, 2),
                put_at("a", 5, 3),
            ],
            vec![],
            vec!["a@5/Put#3"],
        ),
        // a column delete, then puts at an equal and an older timestamp
        (
            vec![
                put_at("a", 5, 1),
                mark_at("a", 5, DeleteColumn, 2),
                put_at("a", 5, 3),
                put_at("a", 4, 4),
            ],
            vec![],
            vec!["a@5/Put#3", "a@4/Put#4"],
        ),
        // a family delete: an older write of any column masked, a later one not, a newer
        // timestamp never
        (
            vec![
                put_at("a", 4, 1),
                put_at("b", 6, 1),
                mark_at("", 5, DeleteFamily, 2),
                put_at("b", 3, 3),
            ],
            vec!["b@6/Put#1"],
            vec!["b@6/Put#1", "b@3/Put#3"],
        ),
        // a family version delete: only its timestamp, only earlier writes
        (
            vec![
                put_at("a", 5, 1),
                put_at("b", 4, 1),
                mark_at("", 5, DeleteFamilyVersion, 2),
                put_at("b", 5, 3),
            ],
            vec!["b@4/Put#1"],
            vec!["b@5/Put#3", "b@4/Put#1"],
        ),
    ];
    for (cells, default, with) in cases {
        let (d, w) = both(&all(), 10, &cells);
        assert_eq!(d, default, "without NEW_VERSION_BEHAVIOR: {cells:?}");
        assert_eq!(w, with, "with NEW_VERSION_BEHAVIOR: {cells:?}");
    }
}

#[test]
fn each_of_several_column_markers_masks_by_its_own_sequence_id() {
    // A DeleteColumn at ts 10 written at seq 5 and one at ts 3 written at seq 9: a put at
    // ts 2 seq 7 is below both but older only than the second; a put at ts 8 seq 7 is below
    // only the first and newer than it; a put at ts 9 seq 4 is older than the first.
    let cells = vec![
        mark_at("a", 10, CellType::DeleteColumn, 5),
        mark_at("a", 3, CellType::DeleteColumn, 9),
        put_at("a", 9, 4),
        put_at("a", 8, 7),
        put_at("a", 2, 7),
    ];
    let (d, w) = both(&all(), 10, &cells);
    assert!(d.is_empty(), "{d:?}");
    assert_eq!(w, ["a@8/Put#7"]);
}

#[test]
fn a_masked_cell_does_not_end_its_column() {
    // Without the attribute the first masked cell seeks past the column; with it, the older
    // cells of the column may have been written after the marker and are each looked at.
    let cells = vec![
        mark_at("", 20, CellType::DeleteFamily, 5),
        mark_at("a", 10, CellType::DeleteColumn, 5),
        put_at("a", 9, 1),
        put_at("a", 8, 6),
        put_at("a", 7, 2),
        put_at("a", 6, 7),
        put_at("b", 9, 1),
        put_at("b", 8, 6),
    ];
    let (d, w) = both(&all(), 10, &cells);
    assert!(d.is_empty(), "{d:?}");
    assert_eq!(w, ["a@8/Put#6", "a@6/Put#7", "b@8/Put#6"]);
}

#[test]
fn a_marker_does_not_mask_a_put_of_its_own_mutation() {
    // One row mutation writes every cell at one sequence id: its marker masks only what was
    // there before it.
    let cells = vec![
        put_at("a", 5, 3),
        mark_at("a", 5, CellType::Delete, 4),
        put_at("a", 5, 4),
        mark_at("", 5, CellType::DeleteFamily, 4),
    ];
    let (d, w) = both(&all(), 10, &cells);
    assert!(d.is_empty(), "{d:?}");
    assert_eq!(w, ["a@5/Put#4"]);
}

#[test]
fn masked_cells_do_not_count_toward_versions() {
    let cells = vec![
        put_at("a", 3, 1),
        mark_at("a", 3, CellType::Delete, 2),
        put_at("a", 2, 3),
        put_at("a", 1, 4),
    ];
    let (d, w) = both(&user(1, TimeRange::all()), 1, &cells);
    assert_eq!(d, ["a@2/Put#3"]);
    assert_eq!(w, ["a@2/Put#3"]);
    // A later write at the deleted timestamp is the newest version again.
    let mut again = cells;
    again.push(put_at("a", 3, 5));
    let (d, w) = both(&user(1, TimeRange::all()), 1, &again);
    assert_eq!(d, ["a@2/Put#3"]);
    assert_eq!(w, ["a@3/Put#5"]);
}

#[test]
fn time_ranges_and_raw_scans_are_unchanged() {
    let cells = vec![
        put_at("a", 10, 1),
        mark_at("a", 12, CellType::DeleteColumn, 2),
        put_at("a", 11, 3),
    ];
    // KEEP_DELETED_CELLS=FALSE: the marker after the range still masks, only older writes.
    let tr = TimeRange::new(0, 12).unwrap();
    let (d, w) = both(&user(5, tr), 5, &cells);
    assert!(d.is_empty(), "{d:?}");
    assert_eq!(w, ["a@11/Put#3"]);
    let raw = Mode::User {
        raw: true,
        time_range: TimeRange::all(),
        max_versions: 10,
        has_filter: false,
        explicit_columns: None,
    };
    let (d, w) = both(&raw, 10, &cells);
    assert_eq!(d, ["a@12/DeleteColumn#2", "a@11/Put#3", "a@10/Put#1"]);
    assert_eq!(w, d);
}

#[test]
fn flush_and_major_compaction_drop_only_what_was_written_before_a_marker() {
    let cells = vec![
        put_at("a", 1, 1),
        put_at("a", 2, 2),
        mark_at("a", 2, CellType::DeleteColumn, 3),
        put_at("a", 1, 4),
        put_at("a", 2, 5),
        mark_at("", 9, CellType::DeleteFamily, 6),
        put_at("b", 4, 7),
    ];
    // flush / minor compaction: markers stay
    let (d, w) = both(&Mode::RetainDeletes, 3, &cells);
    assert_eq!(d, ["@9/DeleteFamily#6", "a@2/DeleteColumn#3"]);
    assert_eq!(w, ["@9/DeleteFamily#6", "a@2/DeleteColumn#3", "b@4/Put#7"]);
    // major compaction: markers go, and what they masked; later writes stay
    let major = Mode::DropDeletes { earliest_put_ts: 1 };
    let (d, w) = both(&major, 3, &cells);
    assert!(d.is_empty(), "{d:?}");
    assert_eq!(w, ["b@4/Put#7"]);
}

#[test]
fn compaction_keeps_puts_written_after_a_marker() {
    let cells = vec![
        put_at("a", 1, 1),
        put_at("a", 2, 2),
        mark_at("a", 2, CellType::DeleteColumn, 3),
        put_at("a", 1, 4),
        put_at("a", 2, 5),
    ];
    let (d, w) = both(&Mode::RetainDeletes, 3, &cells);
    assert_eq!(d, ["a@2/DeleteColumn#3"]);
    assert_eq!(w, ["a@2/DeleteColumn#3", "a@2/Put#5", "a@1/Put#4"]);
    let (d, w) = both(&Mode::DropDeletes { earliest_put_ts: 1 }, 3, &cells);
    assert!(d.is_empty(), "{d:?}");
    assert_eq!(w, ["a@2/Put#5", "a@1/Put#4"]);
}

fn tracked_cell() -> impl Strategy<Value = Cell> {
    let types = prop::sample::select(vec![
        CellType::Put,
        CellType::Delete,
        CellType::DeleteColumn,
        CellType::DeleteFamily,
        CellType::DeleteFamilyVersion,
    ]);
    (
        types,
        prop::sample::select(vec!["a", "b"]),
        0i64..6,
        1u64..12,
    )
        .prop_map(|(t, q, ts, seq)| {
            let q = if t.is_family_delete() { "" } else { q };
            if t == CellType::Put {
                put_at(q, ts, seq)
            } else {
                mark_at(q, ts, t, seq)
            }
        })
}

/// Whether some marker before `c` masks it, by definition (markers of another qualifier
/// count only when family-wide).
fn masked_by_definition(markers: &[Cell], c: &Cell, by_seq: bool) -> bool {
    markers.iter().any(|m| {
        let newer = !by_seq || c.seq_id < m.seq_id;
        let same_column = m.qualifier() == c.qualifier();
        let hits = match m.cell_type {
            CellType::DeleteFamily => c.timestamp <= m.timestamp,
            CellType::DeleteFamilyVersion => c.timestamp == m.timestamp,
            CellType::DeleteColumn => same_column && c.timestamp <= m.timestamp,
            CellType::Delete => same_column && c.timestamp == m.timestamp,
            _ => false,
        };
        newer && hits
    })
}

proptest! {
    /// The tracker keeps only the markers that can still mask (invariant 1 of
    /// `delete_tracker`); its answers must be those of every marker seen.
    #[test]
    fn the_delete_tracker_answers_as_every_marker_would(
        by_seq in any::<bool>(),
        mut cells in prop::collection::vec(tracked_cell(), 1..40),
    ) {
        cells.sort();
        let mut tracker = DeleteTracker::new(by_seq);
        let mut seen: Vec<Cell> = Vec::new();
        for c in &cells {
            if c.cell_type.is_delete() {
                tracker.add(c);
                seen.push(c.clone());
                continue;
            }
            let column_markers: Vec<Cell> = seen
                .iter()
                .filter(|m| m.cell_type.is_family_delete() || m.qualifier() == c.qualifier())
                .cloned()
                .collect();
            let want = masked_by_definition(&column_markers, c, by_seq);
            prop_assert_eq!(tracker.is_deleted(c) != DeleteResult::NotDeleted, want, "{:?}", c);
        }
    }
}
