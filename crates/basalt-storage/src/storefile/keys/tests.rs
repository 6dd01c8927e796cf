use super::entry::{FLAG_NO_SEQ, FLAG_TTL};
use super::*;
use crate::codec::put_varint;
use crate::storefile::block::{encode_key, DataBlockBuilder};

/// The body of a block of `cells`, as the writer lays it out (compact).
fn body_of(cells: &[Cell]) -> Vec<u8> {
    let mut b = DataBlockBuilder::default();
    cells.iter().for_each(|c| b.add(c));
    b.finish()
}

/// The body of a block of `cells` laid out with whole keys, as format versions 3 and 4
/// wrote it: a zero sequence id left out, two-byte offsets where they fit.
fn whole_key_body(cells: &[Cell]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut offsets = Vec::new();
    for c in cells {
        offsets.push(u32::try_from(out.len()).unwrap());
        let mut key = Vec::new();
        encode_key(&mut key, c);
        let mut flags = 0;
        if c.seq_id == 0 {
            key.truncate(key.len() - 8);
            flags |= FLAG_NO_SEQ;
        }
        if c.ttl_ms.is_some() {
            flags |= FLAG_TTL;
        }
        put_varint(&mut out, key.len() as u64);
        put_varint(&mut out, c.value().len() as u64);
        out.push(flags);
        if let Some(ttl) = c.ttl_ms {
            put_varint(&mut out, ttl);
        }
        out.extend_from_slice(&key);
        out.extend_from_slice(c.value());
    }
    let narrow = offsets.last().is_none_or(|&o| o <= u32::from(u16::MAX));
    for &o in &offsets {
        if narrow {
            out.extend_from_slice(&u16::try_from(o).unwrap().to_le_bytes());
        } else {
            out.extend_from_slice(&o.to_le_bytes());
        }
    }
    let n = u32::try_from(offsets.len()).unwrap();
    out.extend_from_slice(&(if narrow { n | NARROW_OFFSETS } else { n }).to_le_bytes());
    out
}

/// A block of `cells` laid out as `layout`.
fn block_in(layout: Layout, cells: &[Cell]) -> DataBlock {
    let body = match layout {
        Layout::Compact => body_of(cells),
        Layout::WholeKeys => whole_key_body(cells),
    };
    DataBlock::new(Bytes::from_static(b"f"), Bytes::from(body), layout).unwrap()
}

fn block_of(cells: &[Cell]) -> DataBlock {
    block_in(Layout::Compact, cells)
}

const LAYOUTS: [Layout; 2] = [Layout::Compact, Layout::WholeKeys];

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
    for layout in LAYOUTS {
        assert_raw_keys_order_like_cells(&block_in(layout, &cells), &cells);
    }
}

/// [`raw_keys_order_like_cells`] for one block of `cells`.
fn assert_raw_keys_order_like_cells(block: &DataBlock, cells: &[Cell]) {
    assert_eq!(block.len(), cells.len());
    for (i, a) in cells.iter().enumerate() {
        assert_eq!(block.row(i), Ok(a.row_bytes()));
        assert_eq!(block.seq_id(i), Ok(a.seq_id));
        assert_eq!(block.cell(i).as_ref(), Ok(a));
        for b in cells {
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
fn read_whole(body: Vec<u8>, layout: Layout) -> Result<usize, Damage> {
    let block = DataBlock::new(Bytes::from_static(b"f"), Bytes::from(body), layout)?;
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

/// `body`, a block laid out as `layout` with two-byte offsets, with four-byte ones: as
/// format version 2 wrote every block, and later versions a block past 64 KiB.
fn widened(body: &[u8], layout: Layout) -> Vec<u8> {
    let count_at = body.len() - 4;
    let count = u32::from_le_bytes(body[count_at..].try_into().unwrap());
    assert_ne!(count & NARROW_OFFSETS, 0, "a narrow block");
    let n = (count & !NARROW_OFFSETS) as usize;
    let offsets_end = count_at - if layout == Layout::Compact { 8 } else { 0 };
    let at = offsets_end - 2 * n;
    let mut out = body[..at].to_vec();
    for o in body[at..offsets_end].chunks(2) {
        out.extend_from_slice(&u32::from(u16::from_le_bytes([o[0], o[1]])).to_le_bytes());
    }
    out.extend_from_slice(&body[offsets_end..count_at]);
    out.extend_from_slice(&u32::try_from(n).unwrap().to_le_bytes());
    out
}

/// A block whose layout is off is refused when it is read, naming what is wrong, and
/// never read past: the accessors rely on it. Both layouts, both widths of offsets.
#[test]
fn a_damaged_layout_is_refused() {
    let cells: Vec<Cell> = (0..3u8)
        .map(|i| {
            let mut c = Cell::put(vec![b'r', i], "f", "q", 1, "value");
            c.seq_id = 7;
            c
        })
        .collect();
    let narrow = whole_key_body(&cells);
    for (good, width) in [(widened(&narrow, Layout::WholeKeys), 4), (narrow, 2)] {
        assert_whole_key_damage_refused(&good, width);
    }
    let narrow = body_of(&cells);
    for (good, width) in [(widened(&narrow, Layout::Compact), 4), (narrow, 2)] {
        assert_compact_damage_refused(&good, width);
    }
}

/// `good` with byte `at` set to `byte`, read whole: the damage found.
fn damaged_at(good: &[u8], layout: Layout, at: usize, byte: u8) -> Damage {
    let mut d = good.to_vec();
    d[at] = byte;
    read_whole(d, layout).unwrap_err()
}

/// The damage to the count and the offsets that either layout finds, in a block of three
/// cells whose offsets are `width` bytes each and end at `offsets_end`.
fn assert_offset_damage_refused(good: &[u8], layout: Layout, width: usize, offsets_end: usize) {
    let damaged = |at, byte| damaged_at(good, layout, at, byte);
    let n = good.len();
    let offsets_at = offsets_end - 3 * width;
    assert_eq!(damaged(n - 1, 0x40), "offset array larger than the block");
    assert_eq!(damaged(n - 4, 4), "entry offset out of place", "{width}");
    let mut junk = good.to_vec();
    junk.insert(offsets_at, 0);
    assert_eq!(
        read_whole(junk, layout).unwrap_err(),
        "bytes between the last entry and the offset array"
    );
    assert_eq!(damaged(offsets_at + width, 1), "entry offset out of place");
    assert_eq!(damaged(offsets_at, 1), "entry offset out of place");
    assert_eq!(
        read_whole(good[..3].to_vec(), layout).unwrap_err(),
        "block shorter than its entry count"
    );
}

/// [`a_damaged_layout_is_refused`] for a whole-key block of three cells whose offsets are
/// `width` bytes each.
fn assert_whole_key_damage_refused(good: &[u8], width: usize) {
    let layout = Layout::WholeKeys;
    assert_eq!(read_whole(good.to_vec(), layout), Ok(3));
    assert_offset_damage_refused(good, layout, width, good.len() - 4);
    let damaged = |at, byte| damaged_at(good, layout, at, byte);
    // Entry 0: key_len 22 (2 + 2 row + 1 qualifier + 17), value_len 5, flags, key, value.
    assert_eq!(damaged(0, 0x80), "malformed entry header");
    assert_eq!(damaged(1, 200), "malformed entry header");
    assert_eq!(damaged(2, 4), "malformed entry header");
    // Said to leave out its sequence id, the key's type is read from its id's bytes.
    assert_eq!(damaged(2, FLAG_NO_SEQ), "malformed key");
    assert_eq!(damaged(3, 9), "malformed key");
    assert_eq!(damaged(3 + 22 - 9, 0), "malformed key");
    // A value shorter than stored leaves a gap before the next entry.
    assert_eq!(damaged(1, 4), "entry offset out of place");
    assert_eq!(read_whole(vec![0; 4], layout), Ok(0));
    assert_eq!(
        read_whole(vec![7, 0, 0, 0, 0], layout).unwrap_err(),
        "bytes between the last entry and the offset array"
    );
}

/// [`a_damaged_layout_is_refused`] for a compact block of three cells whose offsets are
/// `width` bytes each.
fn assert_compact_damage_refused(good: &[u8], width: usize) {
    let layout = Layout::Compact;
    assert_eq!(read_whole(good.to_vec(), layout), Ok(3));
    assert_offset_damage_refused(good, layout, width, good.len() - 12);
    let damaged = |at, byte| damaged_at(good, layout, at, byte);
    // Entry 0: head (Put, a sequence id), row 2, qualifier 1 and value 5 bytes long,
    // timestamp 0 from the base, sequence id 7, then row, qualifier and value.
    assert_eq!(&good[..6], &[4 | HEAD_SEQ, 2, 1, 5, 0, 7]);
    assert_eq!(
        damaged(0, 0x80 | 4 | HEAD_SEQ),
        "malformed entry",
        "a reserved bit"
    );
    assert_eq!(damaged(0, 7 | HEAD_SEQ), "malformed entry", "no type");
    assert_eq!(
        damaged(0, HEAD_SEQ),
        "malformed entry",
        "a search key's type"
    );
    assert_eq!(damaged(1, 200), "malformed entry", "a row past the entries");
    // Without its sequence id, the entry's parts start a byte early and end short.
    assert_eq!(damaged(0, 4), "entry offset out of place");
    assert_eq!(damaged(3, 4), "entry offset out of place");
    assert_eq!(
        read_whole(vec![0; 4], layout).unwrap_err(),
        "block shorter than its base timestamp"
    );
    assert_eq!(read_whole(vec![0; 12], layout), Ok(0));
    assert_eq!(
        read_whole([&[7][..], &[0; 12]].concat(), layout).unwrap_err(),
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
    // The block's base timestamp and count, then an entry and its offset; the sequence id
    // 7 took one byte.
    assert_eq!(
        b.size_bytes() - with_seq,
        with_seq - 8 - 4 - 1,
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
    let old_narrow = whole_key_body(&small);
    let cases = [
        (&small, widened(&narrow, Layout::Compact), Layout::Compact),
        (&small, narrow, Layout::Compact),
        (&large, wide, Layout::Compact),
        (
            &small,
            widened(&old_narrow, Layout::WholeKeys),
            Layout::WholeKeys,
        ),
        (&small, old_narrow, Layout::WholeKeys),
        (&large, whole_key_body(&large), Layout::WholeKeys),
    ];
    for (cells, body, layout) in cases {
        let block = DataBlock::new(Bytes::from_static(b"f"), Bytes::from(body), layout).unwrap();
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
    // Entry 40's head: its type is no type. An entry is a head, four one-byte varints
    // (lengths, timestamp), the sequence id, the row, the qualifier and the value.
    let entry = 1 + 4 + 1 + 2 + 1 + 5;
    assert_eq!(body[40 * entry], 4 | HEAD_SEQ);
    body[40 * entry] = 7 | HEAD_SEQ;
    let block =
        DataBlock::new(Bytes::from_static(b"f"), Bytes::from(body), Layout::Compact).unwrap();
    let first = Cell::first_on_row(&Bytes::from_static(b"r\x00"));
    for _ in 0..PLAIN_SEARCHES {
        assert_eq!(block.lower_bound(&first), Ok(0), "a plain search");
    }
    assert_eq!(
        block.cell(39).map(|c| c.row_bytes()),
        Ok(cells[39].row_bytes())
    );
    assert_eq!(block.cell(40), Err("malformed entry"));
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
        Err("malformed entry"),
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

proptest::proptest! {
    /// Any cells a block may hold read back as they were written, in both layouts, and each
    /// is found where it lies: timestamps anywhere (far before and after the block's first,
    /// whose distance the compact layout stores), every storable type, sequence ids and TTLs
    /// or none, and rows, qualifiers and values whose lengths take one varint byte or more.
    #[test]
    fn any_cells_read_back_in_both_layouts(
        keys in proptest::collection::btree_set(
            (
                proptest::collection::vec(0u8..3, 0..200),
                proptest::collection::vec(0u8..3, 0..150),
                proptest::prop_oneof![
                    proptest::arbitrary::any::<i64>(),
                    0i64..1000,
                    proptest::strategy::Just(i64::MAX - 1),
                ],
                0usize..5,
                proptest::prop_oneof![proptest::strategy::Just(0u64), proptest::arbitrary::any::<u64>()],
            ),
            1..30,
        ),
        values in proptest::collection::vec((0usize..300, proptest::option::of(0u64..1 << 40)), 30),
    ) {
        let types = [
            CellType::Put,
            CellType::Delete,
            CellType::DeleteFamilyVersion,
            CellType::DeleteColumn,
            CellType::DeleteFamily,
        ];
        let mut cells: Vec<Cell> = keys
            .iter()
            .zip(&values)
            .map(|((row, q, ts, t, seq), (len, ttl))| {
                let mut c = Cell::marker(row.clone(), "f", q.clone(), *ts, types[*t]);
                if types[*t] == CellType::Put {
                    c = Cell::put(row.clone(), "f", q.clone(), *ts, vec![b'v'; *len]);
                    c.ttl_ms = *ttl;
                }
                c.seq_id = *seq;
                c
            })
            .collect();
        cells.sort();
        cells.dedup_by(|a, b| (*a).cmp(b).is_eq());
        for layout in LAYOUTS {
            let block = block_in(layout, &cells);
            proptest::prop_assert_eq!(block.len(), cells.len());
            for (i, c) in cells.iter().enumerate() {
                let read = block.cell(i);
                proptest::prop_assert_eq!(read.as_ref(), Ok(c), "{:?}", layout);
                proptest::prop_assert_eq!(block.lower_bound(c), Ok(i), "{:?}", layout);
            }
        }
    }
}
