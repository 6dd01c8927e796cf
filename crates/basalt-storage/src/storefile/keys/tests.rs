use super::*;
use crate::storefile::block::DataBlockBuilder;

/// The body of a block of `cells`.
fn body_of(cells: &[Cell]) -> Vec<u8> {
    let mut b = DataBlockBuilder::default();
    cells.iter().for_each(|c| b.add(c));
    b.finish()
}

fn block_of(cells: &[Cell]) -> DataBlock {
    DataBlock::new(Bytes::from_static(b"f"), Bytes::from(body_of(cells))).unwrap()
}

proptest::proptest! {
    /// The usual header read at once answers as the general parse does, for any bytes:
    /// the headers it reads (short lengths, no TTL, a sequence id or none), the ones beside
    /// them (a TTL, a length of 128 or more, a bad flag) and any entry that ends too soon.
    #[test]
    fn a_header_read_at_once_is_the_header_parsed(
        entry in proptest::collection::vec(
            proptest::prop_oneof![0u8..5, 0x7eu8..0x82, proptest::arbitrary::any::<u8>()],
            0..200,
        ),
        at in 0usize..1000,
    ) {
        let limit = at + entry.len();
        proptest::prop_assert_eq!(
            header_of(&entry, at, limit),
            parse_header(&entry, at, limit)
        );
    }
}

#[test]
fn raw_keys_order_like_cells() {
    let mut cells = Vec::new();
    for row in ["a", "ab", "b"] {
        for q in ["", "q", "qq"] {
            for ts in [9, 5] {
                for t in [CellType::DeleteFamily, CellType::Put] {
                    let mut c = Cell::marker(row, "f", q, ts, t);
                    // A zero sequence id is left out of the block (format version 3).
                    c.seq_id = if ts == 9 { 0 } else { 3 };
                    cells.push(c);
                }
            }
        }
    }
    cells.sort();
    let block = block_of(&cells);
    assert_eq!(block.len(), cells.len());
    for (i, a) in cells.iter().enumerate() {
        assert_eq!(block.row(i), Ok(a.row_bytes()));
        assert_eq!(block.seq_id(i), Ok(a.seq_id));
        assert_eq!(block.cell(i).as_ref(), Ok(a));
        for b in &cells {
            assert_eq!(block.cmp_at(i, b), Ok(a.cmp(b)), "{a:?} vs {b:?}");
        }
        // Search keys of other families and of the row's edges order too.
        let first = Cell::first_on_row(a.row());
        assert_eq!(block.cmp_at(i, &first), Ok(a.cmp(&first)));
        let g = Cell::first_on_column(a.row(), &Bytes::from_static(b"g"), a.qualifier());
        assert_eq!(block.cmp_at(i, &g), Ok(a.cmp(&g)));
    }
}

/// Every entry of `body` read as a scan and a search would read it: the block built, each
/// cell read, and each searched for until the row probes are built; the block's length,
/// or the first damage found.
fn read_whole(body: Vec<u8>) -> Result<usize, Damage> {
    let block = DataBlock::new(Bytes::from_static(b"f"), Bytes::from(body))?;
    for i in 0..block.len() {
        let cell = block.cell(i)?;
        for _ in 0..=PLAIN_SEARCHES {
            assert!(block.lower_bound(&cell)? <= i);
        }
        block.row(i)?;
        block.seq_id(i)?;
    }
    Ok(block.len())
}

/// `body`, a block [`DataBlockBuilder`] wrote with two-byte offsets, with four-byte ones:
/// as format version 2 wrote every block, and version 3 a block past 64 KiB.
fn widened(body: &[u8]) -> Vec<u8> {
    let count_at = body.len() - 4;
    let count = u32::from_le_bytes(body[count_at..].try_into().unwrap());
    assert_ne!(count & NARROW_OFFSETS, 0, "a narrow block");
    let n = (count & !NARROW_OFFSETS) as usize;
    let at = count_at - 2 * n;
    let mut out = body[..at].to_vec();
    for o in body[at..count_at].chunks(2) {
        out.extend_from_slice(&u32::from(u16::from_le_bytes([o[0], o[1]])).to_le_bytes());
    }
    out.extend_from_slice(&u32::try_from(n).unwrap().to_le_bytes());
    out
}

/// A block whose layout is off is refused when it is read, naming what is wrong, and
/// never read past: the accessors rely on it. Both widths of offsets.
#[test]
fn a_damaged_layout_is_refused() {
    let cells: Vec<Cell> = (0..3u8)
        .map(|i| {
            let mut c = Cell::put(vec![b'r', i], "f", "q", 1, "value");
            c.seq_id = 7;
            c
        })
        .collect();
    let narrow = body_of(&cells);
    for (good, width) in [(widened(&narrow), 4), (narrow, 2)] {
        assert_damage_refused(&good, width);
    }
}

/// [`a_damaged_layout_is_refused`] for a block of three cells whose offsets are `width`
/// bytes each.
fn assert_damage_refused(good: &[u8], width: usize) {
    assert_eq!(read_whole(good.to_vec()), Ok(3));
    let n = good.len();
    let damaged = |at: usize, byte: u8| {
        let mut d = good.to_vec();
        d[at] = byte;
        read_whole(d).unwrap_err()
    };
    let offsets_at = n - 4 - 3 * width;
    // Entry 0: key_len 22 (2 + 2 row + 1 qualifier + 17), value_len 5, flags, key, value.
    assert_eq!(damaged(n - 1, 0x40), "offset array larger than the block");
    assert_eq!(damaged(n - 4, 4), "entry offset out of place", "{width}");
    let mut junk = good.to_vec();
    junk.insert(offsets_at, 0);
    assert_eq!(
        read_whole(junk).unwrap_err(),
        "bytes between the last entry and the offset array"
    );
    assert_eq!(damaged(offsets_at + width, 1), "entry offset out of place");
    assert_eq!(damaged(offsets_at, 1), "entry offset out of place");
    assert_eq!(damaged(0, 0x80), "malformed entry header");
    assert_eq!(damaged(1, 200), "malformed entry header");
    assert_eq!(damaged(2, 4), "malformed entry header");
    // Said to leave out its sequence id, the key's type is read from its id's bytes.
    assert_eq!(damaged(2, FLAG_NO_SEQ), "malformed key");
    assert_eq!(damaged(3, 9), "malformed key");
    assert_eq!(damaged(3 + 22 - 9, 0), "malformed key");
    // A value shorter than stored leaves a gap before the next entry.
    assert_eq!(damaged(1, 4), "entry offset out of place");
    assert_eq!(
        read_whole(good[..3].to_vec()).unwrap_err(),
        "block shorter than its entry count"
    );
    assert_eq!(read_whole(vec![0; 4]), Ok(0));
    assert_eq!(
        read_whole(vec![7, 0, 0, 0, 0]).unwrap_err(),
        "bytes between the last entry and the offset array"
    );
}

/// A zero sequence id is left out of its entry, which is eight bytes shorter and reads
/// back as the same cell; a block whose last entry starts at 64 KiB or later keeps
/// four-byte offsets, one below it two-byte ones, and both read alike.
#[test]
fn zero_sequence_ids_and_narrow_offsets_read_back() {
    let cell = |i: u8, seq: u64, value: usize| {
        let mut c = Cell::put(vec![b'r', i], "f", "q", 1, vec![b'v'; value]);
        c.seq_id = seq;
        c
    };
    let mut b = DataBlockBuilder::default();
    b.add(&cell(0, 7, 5));
    let with_seq = b.size_bytes();
    b.add(&cell(1, 0, 5));
    assert_eq!(
        b.size_bytes() - with_seq,
        with_seq - 4 - 8,
        "no sequence id stored"
    );

    let small: Vec<Cell> = (0..4).map(|i| cell(i, u64::from(i % 2), 5)).collect();
    let narrow = body_of(&small);
    assert_ne!(
        u32::from_le_bytes(narrow[narrow.len() - 4..].try_into().unwrap()) & NARROW_OFFSETS,
        0
    );
    // The last entry of a large block starts past 64 KiB.
    let large: Vec<Cell> = (0..4).map(|i| cell(i, u64::from(i % 2), 30_000)).collect();
    let wide = body_of(&large);
    assert_eq!(
        u32::from_le_bytes(wide[wide.len() - 4..].try_into().unwrap()),
        4,
        "four-byte offsets, no flag"
    );
    for (cells, body) in [(&small, widened(&narrow)), (&small, narrow), (&large, wide)] {
        let block = DataBlock::new(Bytes::from_static(b"f"), Bytes::from(body)).unwrap();
        assert_eq!(block.len(), cells.len());
        for (i, c) in cells.iter().enumerate() {
            assert_eq!(block.cell(i).as_ref(), Ok(c));
            assert_eq!(block.seq_id(i), Ok(c.seq_id));
            assert_eq!(block.lower_bound(c), Ok(i));
        }
    }
}

/// Damage in an entry a search does not touch is found when the entry is read, or when
/// the row probes are built, whichever comes first.
#[test]
fn damage_is_found_when_the_entry_is_read() {
    let cells: Vec<Cell> = (0..64u8)
        .map(|i| {
            let mut c = Cell::put(vec![b'r', i], "f", "q", 1, "value");
            c.seq_id = 7;
            c
        })
        .collect();
    let mut body = body_of(&cells);
    // Entry 40's key: its type byte (9 before the key's end) is no type.
    let entry = 3 + 22 + 5;
    body[40 * entry + 3 + 22 - 9] = 0xEE;
    let block = DataBlock::new(Bytes::from_static(b"f"), Bytes::from(body)).unwrap();
    let first = Cell::first_on_row(&Bytes::from_static(b"r\x00"));
    for _ in 0..PLAIN_SEARCHES {
        assert_eq!(block.lower_bound(&first), Ok(0), "a plain search");
    }
    assert_eq!(
        block.cell(39).map(|c| c.row_bytes()),
        Ok(cells[39].row_bytes())
    );
    assert_eq!(block.cell(40), Err("malformed key"));
    assert_eq!(
        block
            .next_visible(38, u64::MAX, None, &mut None)
            .map(|v| match v {
                Visible::Cell(i) => Some(i),
                Visible::PastRow(_) | Visible::End => None,
            }),
        Ok(Some(38))
    );
    assert_eq!(
        block.lower_bound(&first),
        Err("malformed key"),
        "the probes' walk"
    );
}

/// [`Visible`] as a value to compare.
fn seen(v: &Visible) -> (u8, usize) {
    match *v {
        Visible::Cell(i) => (0, i),
        Visible::PastRow(i) => (1, i),
        Visible::End => (2, 0),
    }
}

proptest::proptest! {
    /// A skip within the block stops where a walk over the cells stops: at the first cell
    /// within the steps allowed that the skip does not pass (a row's, a column's, or those
    /// below a key), and from there finds what `next_visible` finds, building the same
    /// cell; none when the steps run out first.
    #[test]
    fn a_skip_stops_where_a_walk_over_the_cells_stops(
        keys in proptest::collection::btree_set(
            (proptest::collection::vec(0u8..3, 1..3), 0usize..3, 1i64..4, 1u64..6), 1..40),
        from in 0usize..45,
        steps in 0usize..10,
        read_point in 0u64..7,
        which in 0usize..3,
        at in 0usize..40,
        one_row in proptest::arbitrary::any::<bool>(),
    ) {
        let qualifiers = ["", "a", "b"];
        let mut cells: Vec<Cell> = keys
            .iter()
            .map(|(row, q, ts, seq)| {
                let mut c = Cell::put(row.clone(), "f", qualifiers[*q], *ts, "v");
                c.seq_id = *seq;
                c
            })
            .collect();
        cells.sort();
        cells.dedup_by(|a, b| (*a).cmp(b).is_eq());
        let block = block_of(&cells);
        let pick = &cells[at % cells.len()];
        let passing = match which {
            0 => Passing::Row(pick.row()),
            1 => Passing::Column { row: pick.row(), qualifier: pick.qualifier() },
            _ => Passing::Below(pick),
        };
        let passes = |c: &Cell| match which {
            0 => c.row() == pick.row(),
            1 => c.row() == pick.row() && c.qualifier() == pick.qualifier(),
            _ => c < pick,
        };
        let row = one_row.then(|| pick.row());
        let end = (from + steps).min(cells.len());
        let want = (from..end).find(|&j| !passes(&cells[j])).map(|j| {
            (j..cells.len())
                .find_map(|k| {
                    if row.is_some_and(|r| cells[k].row() != r) {
                        Some((1, k))
                    } else {
                        (cells[k].seq_id <= read_point).then_some((0, k))
                    }
                })
                .unwrap_or((2, 0))
        });
        let mut slot = None;
        let got = block.pass(from, from + steps, &passing, read_point, row, &mut slot).unwrap();
        proptest::prop_assert_eq!(got.as_ref().map(seen), want);
        let built = match want {
            Some((0, k)) => Some(&cells[k]),
            _ => None,
        };
        proptest::prop_assert_eq!(slot.as_ref(), built);
    }
}

/// Sorted rows (at least `min_rows`) that share a prefix of 0, 5, [`PREFIX_INLINE`],
/// `PREFIX_INLINE + 1` or 40 bytes (kept inline by the probes or not), and rows to search for
/// with all of that prefix, half of it or none of it: the cases a search through the row
/// probes must answer as a plain one does.
fn rows_and_probes(
    min_rows: usize,
) -> impl proptest::strategy::Strategy<Value = (Vec<Vec<u8>>, Vec<Vec<u8>>)> {
    use proptest::collection::{btree_set, vec};
    use proptest::strategy::Strategy;
    (
        btree_set(vec(0u8..4, 0..12), min_rows..60),
        proptest::sample::select(vec![0, 5, PREFIX_INLINE, PREFIX_INLINE + 1, 40]),
        vec((0usize..3, vec(0u8..4, 0..12)), 1..30),
    )
        .prop_map(|(tails, shared, probes)| {
            let prefixed = |kept: usize, tail: &[u8]| [&vec![7u8; kept][..], tail].concat();
            let rows = tails.iter().map(|t| prefixed(shared, t)).collect();
            let probes = probes
                .iter()
                .map(|(part, t)| prefixed([shared, shared / 2, 0][*part], t))
                .collect();
            (rows, probes)
        })
}

proptest::proptest! {
    /// The block's search, plain and through the row probes, finds what a binary search over
    /// the cells finds: for rows that share a prefix kept inline or one too long for that,
    /// and for keys with the prefix, with part of it, or without it.
    #[test]
    fn lower_bound_agrees_with_a_plain_search((rows, probes) in rows_and_probes(1)) {
        let cells: Vec<Cell> = rows.iter().map(|r| Cell::put(r.clone(), "f", "q", 1, "v")).collect();
        let block = block_of(&cells);
        // The first searches are plain ones; the probes are built by a later one.
        let searches = 2 * probes.len();
        for p in probes {
            for key in [Cell::first_on_row(&Bytes::from(p.clone())), Cell::put(p.clone(), "f", "q", 1, "")] {
                let want = cells.partition_point(|c| c < &key);
                proptest::prop_assert_eq!(block.lower_bound(&key), Ok(want));
            }
        }
        let built = block.probes.get().map(|p| p.windows.len());
        let want = (searches > PLAIN_SEARCHES as usize).then_some(cells.len());
        proptest::prop_assert_eq!(built, want);
    }
}

/// An index over `cells` as the last keys of blocks of one cell each.
fn index_of(cells: &[Cell]) -> IndexKeys {
    let mut keys = Vec::new();
    let mut entries = Vec::new();
    for (i, c) in cells.iter().enumerate() {
        let at = u32::try_from(keys.len()).unwrap();
        crate::storefile::block::encode_key(&mut keys, c);
        let len = u32::try_from(keys.len()).unwrap() - at;
        entries.push((at, len, 100 * i as u64, 100));
    }
    IndexKeys::new(Bytes::from_static(b"f"), Bytes::from(keys), entries)
}

proptest::proptest! {
    /// The index's search through its row probes finds the block a binary search over the
    /// blocks' last keys finds: rows that share a prefix kept inline or one too long for
    /// that, keys with the prefix, part of it or none of it, and keys of one row that sort
    /// before, at and after a block's last key.
    #[test]
    fn the_index_finds_the_block_a_plain_search_finds((rows, probes) in rows_and_probes(0)) {
        let cells: Vec<Cell> = rows.into_iter().map(|r| Cell::put(r, "f", "q", 5, "v")).collect();
        let index = index_of(&cells);
        for p in probes {
            let row = Bytes::from(p);
            let keys = [
                Cell::first_on_row(&row),
                Cell::put(row.clone(), "f", "q", 9, ""),
                Cell::put(row.clone(), "f", "q", 5, ""),
                Cell::put(row.clone(), "f", "q", 1, ""),
                Cell::put(row.clone(), "f", "r", 5, ""),
            ];
            for key in keys {
                let want = cells.partition_point(|c| c < &key);
                proptest::prop_assert_eq!(index.lower_bound(&key), want, "{:?}", key);
            }
        }
    }
}

/// A search that fetches ahead finds what a plain one finds, and fetches only places
/// within the search's range; fetching all the way down, each comparison after the first
/// was fetched by the step before it, and stopping at eight places apart, each one before
/// the range shrank to eight.
#[test]
fn a_search_fetches_only_places_it_may_compare() {
    for apart in [0, 8] {
        for n in 0..70 {
            for split in 0..=n {
                assert_search_fetches_ahead(n, split, apart);
            }
        }
    }
}

/// [`a_search_fetches_only_places_it_may_compare`] for `n` places, the first `split` below
/// the key.
fn assert_search_fetches_ahead(n: usize, split: usize, apart: usize) {
    let fetched = std::cell::RefCell::new(Vec::new());
    let compared = std::cell::RefCell::new(Vec::new());
    let fetch = |i| {
        fetched.borrow_mut().push(i);
        0
    };
    let at = partition_fetching(n, (apart, fetch), |i| {
        compared.borrow_mut().push(i);
        i < split
    });
    assert_eq!(at, split, "{n} entries");
    let (fetched, compared) = (fetched.into_inner(), compared.into_inner());
    assert!(fetched.iter().all(|&i| i < n), "{n}: {fetched:?}");
    // The comparisons a step made while its range was wider than `apart` (the range of
    // step k is at most n / 2^k wide).
    let wide = compared
        .iter()
        .enumerate()
        .take_while(|&(k, _)| n >> k > apart.max(1) * 2)
        .count();
    for pair in compared[..wide.min(compared.len())].windows(2) {
        assert!(
            fetched.contains(&pair[1]),
            "{n}, {split}, {apart}: {pair:?}"
        );
    }
    if apart == 0 {
        for pair in compared.windows(2) {
            assert!(fetched.contains(&pair[1]), "{n}, {split}: {pair:?}");
        }
    }
}
