//! The cell's order, parts and building, checked.

use super::*;

#[test]
fn type_codes_are_pinned() {
    // On-disk codes: never renumber.
    let pinned = [
        (CellType::Minimum, 0),
        (CellType::Put, 4),
        (CellType::Delete, 8),
        (CellType::DeleteFamilyVersion, 10),
        (CellType::DeleteColumn, 12),
        (CellType::DeleteFamily, 14),
        (CellType::Maximum, 255),
    ];
    for (t, code) in pinned {
        assert_eq!(t.code(), code);
        assert_eq!(CellType::from_code(code), Some(t));
    }
    assert_eq!(CellType::from_code(5), None);
}

#[test]
fn a_refilled_cell_is_what_its_buffer_makes_and_lets_go_of_the_last() {
    let block = Bytes::from(b"r1q1v1r2q2v2".to_vec());
    let family = Bytes::from_static(b"f");
    let at = |o: usize| Spans {
        row: o..o + 2,
        qualifier: o + 2..o + 4,
        value: o + 4..o + 6,
    };
    let built = |data: &Bytes, o: usize, family: &Bytes| {
        Cell::in_buffer(data.clone(), &at(o), family.clone()).unwrap()
    };
    let mut c = built(&block, 0, &family);
    (c.timestamp, c.cell_type, c.seq_id, c.ttl_ms) = (9, CellType::Delete, 3, Some(5));
    // In its own buffer: the next cell's parts, and in_buffer's key fields.
    assert!(c.refill_in_buffer(&block, &at(6), &family));
    let second = built(&block, 6, &family);
    assert_eq!(c, second);
    assert_eq!(
        (c.row(), c.qualifier(), c.value()),
        (&b"r2"[..], &b"q2"[..], &b"v2"[..])
    );
    assert_eq!(
        (c.timestamp, c.cell_type, c.seq_id, c.ttl_ms),
        (LATEST_TIMESTAMP, CellType::Put, 0, None)
    );
    // In another buffer and family: that buffer's cell, and the first is let go.
    let other = Bytes::from(b"__r3q3v3".to_vec());
    let other_family = Bytes::from(b"g".to_vec());
    drop(second);
    assert!(!block.is_unique(), "the cell holds the first buffer");
    assert!(c.refill_in_buffer(&other, &at(2), &other_family));
    assert_eq!(c, built(&other, 2, &other_family));
    assert_eq!(&c.family[..], b"g");
    assert!(block.is_unique(), "the cell let go of the first buffer");
    // Parts outside the buffer: refused, the cell as it was.
    let before = c.clone();
    assert!(!c.refill_in_buffer(&block, &at(8), &family));
    assert_eq!(c, before);
    assert_eq!(c.row(), b"r3");
}

#[test]
fn the_last_key_of_a_cells_column_sorts_after_the_column_and_before_the_next() {
    let c = Cell::put("r", "f", "q", 5, "v");
    let last = c.last_on_its_column();
    assert_eq!(last, Cell::last_on_column(b"r", &Bytes::from("f"), b"q"));
    for version in [
        Cell::put("r", "f", "q", i64::MIN, "v"),
        Cell::put("r", "f", "q", i64::MAX, "v"),
        Cell::marker("r", "f", "q", 0, CellType::DeleteColumn),
    ] {
        assert!(version < last, "{version:?}");
    }
    for later in [
        Cell::put("r", "f", "q\0", i64::MAX, "v"),
        Cell::first_on_row(&Bytes::from("r\0")),
    ] {
        assert!(last < later, "{later:?}");
    }
}

#[test]
fn a_column_matches_by_family_and_qualifier_and_is_the_same_within_its_row() {
    let c = Cell::put("r", "f", "q", 1, "v");
    let other_row = Cell::put("s", "f", "q", 2, "w");
    assert!(c.matches_column(&other_row) && !c.same_column(&other_row));
    assert!(c.same_column(&Cell::marker("r", "f", "q", 9, CellType::DeleteColumn)));
    for other in [
        Cell::put("r", "f", "p", 1, "v"),
        Cell::put("r", "g", "q", 1, "v"),
    ] {
        assert!(!c.matches_column(&other) && !c.same_column(&other));
    }
}

#[test]
fn key_order_matches_hbase() {
    let put = |q: &'static str, ts| Cell::put("r", "f", q, ts, "v");
    let mk = |q: &'static str, ts, t| Cell::marker("r", "f", q, ts, t);
    let mut cells = [
        put("a", 1),
        mk("", 5, CellType::DeleteFamily),
        put("a", 2),
        mk("a", 2, CellType::Delete),
        mk("a", 2, CellType::DeleteColumn),
        Cell::put("r", "e", "z", 0, "v"),
        Cell::put("q", "z", "z", 0, "v"),
    ];
    cells.sort();
    let got: Vec<_> = cells
        .iter()
        .map(|c| {
            format!(
                "{}/{}:{}@{}/{}",
                std::str::from_utf8(c.row()).unwrap(),
                std::str::from_utf8(&c.family).unwrap(),
                std::str::from_utf8(c.qualifier()).unwrap(),
                c.timestamp,
                c.cell_type.name()
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            "q/z:z@0/Put",
            "r/e:z@0/Put",
            "r/f:@5/DeleteFamily",
            "r/f:a@2/DeleteColumn",
            "r/f:a@2/Delete",
            "r/f:a@2/Put",
            "r/f:a@1/Put",
        ]
    );
}

#[test]
fn newer_sequence_sorts_first_and_search_keys_bracket_rows() {
    let mut old = Cell::put("r", "f", "q", 1, "old");
    old.seq_id = 1;
    let mut new = Cell::put("r", "f", "q", 1, "new");
    new.seq_id = 2;
    assert!(new < old);
    let row = Bytes::from_static(b"r");
    assert!(Cell::first_on_row(&row) < Cell::marker("r", "", "", i64::MAX, CellType::DeleteFamily));
    assert_eq!(Cell::first_on_row_in(row.clone()), Cell::first_on_row(&row));
    let c = Cell::put("row1", "f", "q", 1, "v");
    assert!(c.is_of_row(b"row1"));
    assert!(!c.is_of_row(b"row"), "a prefix of the row is another row");
    assert!(!c.is_of_row(b"row10"));
    assert!(!c.is_of_row(b""));
    let f = Bytes::from_static(b"f");
    let q = Bytes::from_static(b"q");
    assert!(Cell::last_on_column(&row, &f, &q) > Cell::put("r", "f", "q", 0, ""));
    assert!(Cell::last_on_column(&row, &f, &q) < Cell::put("r", "f", "q\0", i64::MAX, ""));
}

/// A buffer laying out `row`, `qualifier` and `value` in the order `order` names, with
/// `gap` bytes before each, and the spans of the three parts in it.
fn laid_out(parts: [&[u8]; 3], order: [usize; 3], gap: usize) -> (Bytes, Spans) {
    let mut buf = Vec::new();
    let mut at = [0..0, 0..0, 0..0];
    for i in order {
        buf.extend(std::iter::repeat_n(0xEE, gap));
        at[i] = buf.len()..buf.len() + parts[i].len();
        buf.extend_from_slice(parts[i]);
    }
    let [row, qualifier, value] = at;
    (
        Bytes::from(buf),
        Spans {
            row,
            qualifier,
            value,
        },
    )
}

fn hash_of(c: &Cell) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    c.hash(&mut h);
    h.finish()
}

proptest::proptest! {
    /// Invariant 4: a cell made in a buffer of any layout reads back its parts, and is
    /// equal (and hashes alike) to the cell made from the parts, and to the cell its parts
    /// make again.
    #[test]
    fn a_cell_in_any_layout_is_its_parts(
        row in proptest::collection::vec(proptest::num::u8::ANY, 0..24),
        qualifier in proptest::collection::vec(proptest::num::u8::ANY, 0..24),
        value in proptest::collection::vec(proptest::num::u8::ANY, 0..64),
        order in proptest::sample::select(vec![[0, 1, 2], [0, 2, 1], [1, 0, 2], [1, 2, 0], [2, 0, 1], [2, 1, 0]]),
        gap in 0usize..4,
        ts in proptest::num::i64::ANY,
        seq in proptest::num::u64::ANY,
    ) {
        let (buf, spans) = laid_out([&row, &qualifier, &value], order, gap);
        let mut laid = Cell::in_buffer(buf, &spans, Bytes::from_static(b"f")).unwrap();
        laid.timestamp = ts;
        laid.seq_id = seq;
        proptest::prop_assert_eq!(laid.row(), &row[..]);
        proptest::prop_assert_eq!(laid.qualifier(), &qualifier[..]);
        proptest::prop_assert_eq!(laid.value(), &value[..]);
        let mut made = Cell::put(row.clone(), "f", qualifier.clone(), ts, value.clone());
        made.seq_id = seq;
        proptest::prop_assert_eq!(&laid, &made);
        proptest::prop_assert_eq!(hash_of(&laid), hash_of(&made));
        proptest::prop_assert_eq!(compare_keys(&laid, &made), Ordering::Equal);
        let again = Cell::from(laid.clone().into_parts());
        proptest::prop_assert_eq!(&again, &laid);
        proptest::prop_assert_eq!(again.serialized_size(), row.len() + 1 + qualifier.len() + value.len() + 20);
        let other_value = laid.clone().with_value(Bytes::from_static(b"other"));
        proptest::prop_assert_eq!(other_value.value(), b"other");
        proptest::prop_assert_eq!(other_value.row(), &row[..]);
        proptest::prop_assert_eq!(other_value.qualifier(), &qualifier[..]);
        proptest::prop_assert_eq!(value == b"other", other_value == laid);
    }
}

#[test]
fn a_span_outside_the_buffer_makes_no_cell() {
    let f = Bytes::from_static(b"f");
    let spans = |row, qualifier, value| Spans {
        row,
        qualifier,
        value,
    };
    let buf = Bytes::from_static(b"rowqv");
    assert!(Cell::in_buffer(buf.clone(), &spans(0..3, 3..4, 4..5), f.clone()).is_some());
    assert!(Cell::in_buffer(buf.clone(), &spans(0..3, 3..4, 4..6), f.clone()).is_none());
    assert!(Cell::in_buffer(buf.clone(), &spans(0..6, 3..4, 4..5), f.clone()).is_none());
    #[allow(clippy::reversed_empty_ranges)]
    let backwards = spans(0..3, 4..3, 4..5);
    assert!(Cell::in_buffer(buf, &backwards, f).is_none());
}

#[test]
fn a_cell_shows_its_parts() {
    let c = Cell::put("r", "f", "q", 7, "v");
    assert_eq!(
        format!("{c:?}"),
        "Cell { row: b\"r\", family: b\"f\", qualifier: b\"q\", timestamp: 7, \
         cell_type: Put, seq_id: 0, value: b\"v\", ttl_ms: None }"
    );
}
