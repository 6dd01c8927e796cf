//! Table-driven tests of the query matcher: each case feeds a row's cells in key order and
//! lists what the matcher keeps.

use basalt_model::{Cell, CellType, KeepDeletedCells, TimeRange};
use bytes::Bytes;

use super::*;

fn put(q: &str, ts: i64) -> Cell {
    Cell::put("r", "f", q.to_owned(), ts, format!("v{ts}"))
}

fn mark(q: &str, ts: i64, t: CellType) -> Cell {
    Cell::marker("r", "f", q.to_owned(), ts, t)
}

fn info(max_versions: u32) -> ScanInfo {
    ScanInfo {
        max_versions,
        min_versions: 0,
        ttl_ms: None,
        keep_deleted_cells: KeepDeletedCells::False,
        time_to_purge_deletes_ms: 0,
        new_version_behavior: false,
    }
}

fn user(max_versions: u32, tr: TimeRange) -> Mode {
    Mode::User {
        raw: false,
        time_range: tr,
        max_versions,
        has_filter: false,
        explicit_columns: None,
    }
}

/// Runs the matcher over sorted cells without seeking: seeks become "skip until past".
fn run(mode: Mode, info: ScanInfo, mut cells: Vec<Cell>) -> Vec<Cell> {
    cells.sort();
    let mut m = QueryMatcher::new(mode, info, 1_000_000, u64::MAX);
    m.set_row(&Bytes::from_static(b"r"));
    let mut out = Vec::new();
    let mut skip_to: Option<Cell> = None;
    for c in &cells {
        if skip_to.as_ref().is_some_and(|k| c < k) {
            continue;
        }
        skip_to = None;
        let code = m.matches(c, None);
        if matches!(code, MatchCode::Include | MatchCode::IncludeAndSeekNextCol) {
            out.push(c.clone());
        }
        match code {
            MatchCode::SeekNextCol | MatchCode::IncludeAndSeekNextCol => {
                skip_to = Some(Cell::last_on_column(c.row(), &c.family, c.qualifier()));
            }
            MatchCode::SeekTo(k) => skip_to = Some(*k),
            MatchCode::SeekNextRow | MatchCode::Done | MatchCode::DoneScan => break,
            _ => {}
        }
    }
    out
}

/// What the matcher keeps, as `qualifier@ts/type`.
fn kept(mode: Mode, info: ScanInfo, cells: Vec<Cell>) -> Vec<String> {
    run(mode, info, cells)
        .iter()
        .map(|c| {
            format!(
                "{}@{}/{}",
                String::from_utf8_lossy(c.qualifier()),
                c.timestamp,
                c.cell_type.name()
            )
        })
        .collect()
}

#[test]
fn versions_newest_first_and_capped() {
    let cells = vec![put("a", 1), put("a", 2), put("a", 4), put("a", 5)];
    assert_eq!(
        kept(user(2, TimeRange::all()), info(10), cells.clone()),
        ["a@5/Put", "a@4/Put"]
    );
    assert_eq!(
        kept(user(1, TimeRange::all()), info(10), cells.clone()),
        ["a@5/Put"]
    );
    // the family's VERSIONS caps before the query does (caller passes min of both)
    assert_eq!(kept(user(1, TimeRange::all()), info(1), cells).len(), 1);
}

#[test]
fn every_marker_kind_masks_what_it_should() {
    let cells = vec![
        put("a", 1),
        put("a", 2),
        put("a", 3),
        put("b", 1),
        put("b", 2),
        put("b", 3),
        put("c", 2),
        put("c", 3),
        mark("a", 2, CellType::Delete),
        mark("b", 2, CellType::DeleteColumn),
        mark("", 1, CellType::DeleteFamily),
        mark("", 3, CellType::DeleteFamilyVersion),
    ];
    assert_eq!(
        kept(user(10, TimeRange::all()), info(10), cells),
        ["c@2/Put"]
    );
}

#[test]
fn delete_marker_beats_put_at_same_timestamp_whatever_the_order_written() {
    let mut p = put("a", 5);
    p.seq_id = 9;
    let mut d = mark("a", 5, CellType::Delete);
    d.seq_id = 1;
    assert!(kept(user(1, TimeRange::all()), info(1), vec![p, d]).is_empty());
}

#[test]
fn time_range_and_markers_with_and_without_keep_deleted_cells() {
    let cells = vec![
        put("a", 10),
        put("a", 12),
        mark("a", 12, CellType::DeleteColumn),
    ];
    let tr = TimeRange::new(0, 11).unwrap();
    // FALSE: a marker at or after the range start still hides older cells
    assert!(kept(user(5, tr), info(5), cells.clone()).is_empty());
    // TRUE: only markers inside the range count
    let mut i = info(5);
    i.keep_deleted_cells = KeepDeletedCells::True;
    assert_eq!(kept(user(5, tr), i, cells), ["a@10/Put"]);
}

#[test]
fn raw_scan_returns_markers_and_masked_cells() {
    let cells = vec![
        put("a", 1),
        put("a", 2),
        mark("a", 2, CellType::Delete),
        mark("", 5, CellType::DeleteFamily),
    ];
    let mode = Mode::User {
        raw: true,
        time_range: TimeRange::all(),
        max_versions: 10,
        has_filter: false,
        explicit_columns: None,
    };
    assert_eq!(
        kept(mode, info(1), cells),
        ["@5/DeleteFamily", "a@2/Delete", "a@2/Put", "a@1/Put"]
    );
}

#[test]
fn ttl_and_min_versions() {
    let now = 1_000_000;
    let cells = vec![
        put("a", now - 5000),
        put("a", now - 4000),
        put("a", now - 3000),
        put("a", now - 100),
    ];
    let mut i = info(10);
    i.ttl_ms = Some(1000);
    assert_eq!(
        kept(user(10, TimeRange::all()), i, cells.clone()),
        [format!("a@{}/Put", now - 100)]
    );
    i.min_versions = 2;
    assert_eq!(kept(user(10, TimeRange::all()), i, cells).len(), 2);
}

#[test]
fn compaction_modes() {
    let cells = vec![
        put("a", 1),
        put("a", 2),
        put("a", 3),
        mark("a", 2, CellType::Delete),
        mark("", 0, CellType::DeleteFamily),
    ];
    // flush / minor: markers stay, the masked put and versions beyond VERSIONS go
    assert_eq!(
        kept(Mode::RetainDeletes, info(1), cells.clone()),
        ["@0/DeleteFamily", "a@3/Put", "a@2/Delete"]
    );
    // major: markers go too
    assert_eq!(
        kept(Mode::DropDeletes { earliest_put_ts: 1 }, info(1), cells),
        ["a@3/Put"]
    );
}

mod new_version_behavior;

/// A scan that is not raw leaves a column at the last version it wants, since no older cell
/// of the column could be kept; a raw scan reads on, as its markers are kept.
#[test]
fn the_last_wanted_version_leaves_its_column_unless_the_scan_is_raw() {
    let codes = |mode: Mode| {
        let mut m = QueryMatcher::new(mode, info(10), 1_000_000, u64::MAX);
        m.set_row(&Bytes::from_static(b"r"));
        [put("a", 5), put("a", 4), put("b", 3)]
            .iter()
            .map(|c| m.matches(c, None))
            .collect::<Vec<_>>()
    };
    use MatchCode::{Include, IncludeAndSeekNextCol};
    assert_eq!(
        codes(user(2, TimeRange::all())),
        [Include, IncludeAndSeekNextCol, Include]
    );
    assert_eq!(
        codes(user(1, TimeRange::all())),
        [
            IncludeAndSeekNextCol,
            MatchCode::SeekNextCol,
            IncludeAndSeekNextCol
        ]
    );
    let raw = Mode::User {
        raw: true,
        time_range: TimeRange::all(),
        max_versions: 2,
        has_filter: false,
        explicit_columns: None,
    };
    assert_eq!(codes(raw), [Include, Include, Include]);
}

#[test]
fn a_key_copy_holds_keys_inline_and_spilled_alike() {
    let mut k = KeyCopy::default();
    assert!(!k.is(b""), "nothing is held at first");
    let long = vec![b'x'; KEY_INLINE + 1];
    let edge = vec![b'y'; KEY_INLINE];
    for key in [&b""[..], b"row1", &long, b"row2", &edge, &long, b"row1"] {
        k.set(key);
        assert!(k.is(key));
        assert_eq!(k.bytes(), key);
        for other in [&b"row1"[..], b"row2", &long, &edge] {
            assert_eq!(k.is(other), other == key, "{key:?} against {other:?}");
        }
    }
    k.clear();
    assert!(!k.is(b"row1"));
}
