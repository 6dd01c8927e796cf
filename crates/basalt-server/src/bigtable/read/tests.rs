use basalt_bigtable_proto::google::bigtable::v2::row_range::{EndKey, StartKey};

use super::*;

fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

fn range(start: Option<StartKey>, end: Option<EndKey>) -> RowRange {
    RowRange {
        start_key: start,
        end_key: end,
    }
}

#[test]
fn row_sets_become_sorted_disjoint_ranges() {
    let set = RowSet {
        row_keys: vec![b("m"), b("a"), b("c")],
        row_ranges: vec![
            range(
                Some(StartKey::StartKeyClosed(b("b"))),
                Some(EndKey::EndKeyOpen(b("d"))),
            ),
            range(Some(StartKey::StartKeyOpen(b("x"))), None),
        ],
    };
    let ranges = key_ranges(Some(&set)).unwrap();
    assert_eq!(
        ranges,
        [
            KeyRange {
                start: Bound::Included(b("a")),
                end: Bound::Included(b("a"))
            },
            KeyRange {
                start: Bound::Included(b("b")),
                end: Bound::Excluded(b("d"))
            },
            KeyRange {
                start: Bound::Included(b("m")),
                end: Bound::Included(b("m"))
            },
            KeyRange {
                start: Bound::Excluded(b("x")),
                end: Bound::Unbounded
            },
        ]
    );
    let whole = key_ranges(None).unwrap();
    assert_eq!(
        whole,
        [KeyRange {
            start: Bound::Unbounded,
            end: Bound::Unbounded
        }]
    );
}

#[test]
fn touching_ranges_merge_and_open_ends_stay_apart() {
    let set = RowSet {
        row_keys: vec![],
        row_ranges: vec![
            range(
                Some(StartKey::StartKeyClosed(b("a"))),
                Some(EndKey::EndKeyOpen(b("c"))),
            ),
            range(
                Some(StartKey::StartKeyClosed(b("c"))),
                Some(EndKey::EndKeyClosed(b("e"))),
            ),
            range(
                Some(StartKey::StartKeyOpen(b("e"))),
                Some(EndKey::EndKeyOpen(b("g"))),
            ),
            range(
                Some(StartKey::StartKeyOpen(b("h"))),
                Some(EndKey::EndKeyOpen(b("i"))),
            ),
        ],
    };
    let ranges = key_ranges(Some(&set)).unwrap();
    assert_eq!(
        ranges,
        [
            KeyRange {
                start: Bound::Included(b("a")),
                end: Bound::Excluded(b("g"))
            },
            KeyRange {
                start: Bound::Excluded(b("h")),
                end: Bound::Excluded(b("i"))
            },
        ]
    );
}

#[test]
fn a_row_becomes_chunks_that_name_what_changed_and_commit_at_the_end() {
    let cell = |f: &str, q: &str, ts: i64, v: Bytes| BtCell {
        family: b(f),
        qualifier: b(q),
        timestamp_micros: ts,
        value: v,
        labels: Vec::new(),
    };
    let big = Bytes::from(vec![7u8; CHUNK_VALUE_BYTES * 2 + 5]);
    let mut chunks = Vec::new();
    push_row(
        &mut chunks,
        &b("r"),
        vec![
            cell("f", "a", 2000, b("x")),
            cell("f", "a", 1000, big.clone()),
            cell("g", "a", 5, b("y")),
        ],
    );
    let named: Vec<_> = chunks
        .iter()
        .map(|c| {
            (
                c.row_key.is_empty(),
                c.family_name.clone(),
                c.qualifier.clone(),
                c.value_size,
            )
        })
        .collect();
    let total = i32::try_from(big.len()).unwrap();
    assert_eq!(
        named,
        [
            (false, Some("f".to_owned()), Some(b"a".to_vec()), 0),
            (true, None, None, total),
            (true, None, None, total),
            (true, None, None, 0),
            (true, Some("g".to_owned()), Some(b"a".to_vec()), 0),
        ]
    );
    let joined: Vec<u8> = chunks[1..4].iter().flat_map(|c| c.value.to_vec()).collect();
    assert_eq!(joined, big);
    let commits: Vec<bool> = chunks.iter().map(|c| c.row_status.is_some()).collect();
    assert_eq!(commits, [false, false, false, false, true]);
}

#[test]
fn a_range_that_ends_before_it_starts_is_refused() {
    for (start, end) in [
        (StartKey::StartKeyClosed(b("q")), EndKey::EndKeyOpen(b("p"))),
        (StartKey::StartKeyOpen(b("k")), EndKey::EndKeyClosed(b("j"))),
    ] {
        let set = RowSet {
            row_keys: vec![b("a")],
            row_ranges: vec![range(Some(start), Some(end))],
        };
        let e = key_ranges(Some(&set)).unwrap_err();
        assert_eq!(e.code(), tonic::Code::InvalidArgument, "{e:?}");
    }
    let closed = RowSet {
        row_keys: vec![],
        row_ranges: vec![range(
            Some(StartKey::StartKeyClosed(b("k"))),
            Some(EndKey::EndKeyClosed(b("k"))),
        )],
    };
    assert_eq!(key_ranges(Some(&closed)).unwrap().len(), 1);
    // Start and end at one key with an open end: empty, not refused.
    let empty = RowSet {
        row_keys: vec![],
        row_ranges: vec![range(
            Some(StartKey::StartKeyClosed(b("k"))),
            Some(EndKey::EndKeyOpen(b("k"))),
        )],
    };
    assert!(key_ranges(Some(&empty)).unwrap().is_empty());
}
