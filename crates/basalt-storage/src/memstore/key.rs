//! A cell's key as 64-bit words that compare as the cells do, so a skip-list search compares
//! keys a word at a time, in the node, without decoding anything.
//!
//! The key is written as bytes, then packed eight to a word, big-endian (a word's numeric
//! order is its bytes' order), the last word padded with zeros:
//!
//! ```text
//! key := part(row) part(family) part(qualifier) !ts' !type !seq
//! part(s) := s with each 0x00 written 0x00 0xFF, then 0x00 0x01
//! ts'     := timestamp as u64 with its sign bit flipped (8 bytes)
//! ```
//!
//! A part sorts exactly as its bytes do and no part is a prefix of another, so parts compare as
//! the tuple of fields; `!x` reverses the order of the fixed-width fields that sort
//! descending.
//!
//! # Invariants
//! 1. `compare(encode(a), encode(b)) == compare_keys(a, b)` for any two cells (cell.rs,
//!    invariant 1): proved by the property test below.
//! 2. No key is a prefix of another, padded or not, so comparing words stops at the first
//!    word that differs, and keys with every word equal are equal.
//! 3. A key decodes to the cell it was encoded from (the value and TTL are kept beside it).

use std::cmp::Ordering;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use basalt_model::{Cell, CellType, Spans};
use bytes::{Bytes, BytesMut};

const SIGN: u64 = 1 << 63;

/// A word read for a comparison: a plain one (a search key) or one in a node.
pub trait Word {
    /// The word's value.
    fn get(&self) -> u64;
}

impl Word for u64 {
    fn get(&self) -> u64 {
        *self
    }
}

impl Word for AtomicU64 {
    fn get(&self) -> u64 {
        self.load(Relaxed)
    }
}

/// Bytes of `cell`'s encoded key.
pub fn encoded_len(cell: &Cell) -> usize {
    let part = |s: &[u8]| s.len() + zeros(s) + 2;
    part(cell.row()) + part(&cell.family) + part(cell.qualifier()) + 17
}

fn zeros(s: &[u8]) -> usize {
    s.iter().filter(|&&b| b == 0).count()
}

/// Writes `cell`'s key, word by word, to `put`.
pub fn encode(cell: &Cell, put: impl FnMut(u64)) {
    let mut p = Packer::new(put);
    p.part(cell.row());
    p.part(&cell.family);
    p.part(cell.qualifier());
    p.eight(!((cell.timestamp as u64) ^ SIGN));
    p.byte(!cell.cell_type.code());
    p.eight(!cell.seq_id);
    p.finish();
}

/// `cell`'s key as words, in `out` (cleared first): a search key.
pub fn encode_into(cell: &Cell, out: &mut Vec<u64>) {
    out.clear();
    encode(cell, |w| out.push(w));
}

/// Writes `bytes` packed into words to `put`, the last padded with zeros (a value).
pub fn pack(bytes: &[u8], put: impl FnMut(u64)) {
    let mut p = Packer::new(put);
    p.bytes(bytes);
    p.finish();
}

/// Compares a node's key with another key (invariants 1 and 2).
pub fn compare<W: Word>(node: &[AtomicU64], key: &[W]) -> Ordering {
    for (a, b) in node.iter().zip(key) {
        let (a, b) = (a.load(Relaxed), b.get());
        if a != b {
            return a.cmp(&b);
        }
    }
    node.len().cmp(&key.len())
}

/// Whether two keys of `len` bytes each are of one column: the same row, family and
/// qualifier, all but the last 17 bytes (timestamp, type and sequence id).
pub fn same_column(a: &[AtomicU64], b: &[AtomicU64], len: usize) -> bool {
    debug_assert!(len > 17, "a key holds three parts and 17 fixed bytes");
    let column = len - 17;
    let (whole, rest) = (column / 8, column % 8);
    let equal = |i: usize| a[i].load(Relaxed) == b[i].load(Relaxed);
    if !(0..whole).all(equal) {
        return false;
    }
    if rest == 0 {
        return true;
    }
    let mask = !(u64::MAX >> (8 * rest));
    (a[whole].load(Relaxed) ^ b[whole].load(Relaxed)) & mask == 0
}

/// A row's part of the key (`part(row)`, packed as keys are), to tell whether a node's key,
/// read where it lies, is of that row: no part is a prefix of another (invariant 2), so a
/// key is of the row exactly when it begins with these bytes.
#[derive(Debug)]
pub struct RowPart {
    words: Vec<u64>,
    /// The bits of the last word that the part fills.
    last_mask: u64,
}

impl RowPart {
    /// `row`'s part.
    pub fn of(row: &[u8]) -> RowPart {
        let len = row.len() + zeros(row) + 2;
        let mut words = Vec::with_capacity(len.div_ceil(8));
        let mut p = Packer::new(|w| words.push(w));
        p.part(row);
        p.finish();
        let rest = len % 8;
        let last_mask = if rest == 0 {
            u64::MAX
        } else {
            !(u64::MAX >> (8 * rest))
        };
        RowPart { words, last_mask }
    }

    /// Whether `key` (a node's) is of this row.
    pub fn begins(&self, key: &[AtomicU64]) -> bool {
        let Some((last, whole)) = self.words.split_last() else {
            return false;
        };
        key.len() >= self.words.len()
            && whole.iter().zip(key).all(|(w, k)| *w == k.load(Relaxed))
            && (key[whole.len()].load(Relaxed) ^ last) & self.last_mask == 0
    }
}

/// The sequence id of a key of `len` bytes: its last eight bytes.
pub fn seq_id(key: &[AtomicU64], len: usize) -> u64 {
    !read_u64(key, len - 8)
}

/// The eight bytes at byte offset `at` of `words`, big-endian.
fn read_u64(words: &[AtomicU64], at: usize) -> u64 {
    let load = |i: usize| words.get(i).map_or(0, |w| w.load(Relaxed));
    let (word, shift) = (at / 8, (at % 8) as u32 * 8);
    if shift == 0 {
        return load(word);
    }
    (load(word) << shift) | (load(word + 1) >> (64 - shift))
}

/// Where cells copied out of a memstore keep their bytes: chunks shared by the cells one reader
/// copies out, growing from [`FIRST_CHUNK`] to [`MAX_CHUNK`] bytes, so a Get allocates once
/// and a long scan once per many cells. The family, the same for every cell of a store, is
/// the process's kept copy of the name (storefile/family.rs), as a store file's cells carry it.
#[derive(Debug, Default)]
pub struct CellBuf {
    chunk: BytesMut,
    next_chunk: usize,
    /// The family of the last cell copied out (a kept name: its clones share no count).
    family: Bytes,
}

const FIRST_CHUNK: usize = 256;
const MAX_CHUNK: usize = 16 << 10;

impl CellBuf {
    /// The chunk, with room for `n` more bytes: a chunk never grows (growing would move the
    /// bytes of cells already handed out), it is replaced.
    fn room(&mut self, n: usize) -> &mut BytesMut {
        if self.chunk.capacity() - self.chunk.len() < n {
            self.next_chunk = (self.next_chunk * 2).clamp(FIRST_CHUNK, MAX_CHUNK);
            self.chunk = BytesMut::with_capacity(n.max(self.next_chunk));
        }
        &mut self.chunk
    }

    /// `name` as the process's kept copy: looked up once per reader and family, not per cell.
    fn family(&mut self, name: &[u8]) -> Bytes {
        if !basalt_model::bytes_order::equal(&self.family, name) {
            self.family = crate::storefile::family::interned(name);
        }
        self.family.clone()
    }
}

/// The cell whose key is `key` (`key_len` bytes) and whose value is the first `value_len`
/// bytes of `value` (invariant 3). Its row, family, qualifier and value are copied into `out`.
pub fn decode(
    key: &[AtomicU64],
    key_len: usize,
    value: &[AtomicU64],
    value_len: usize,
    ttl_ms: Option<u64>,
    out: &mut CellBuf,
) -> Cell {
    let buf = out.room(key_len + value_len);
    let at = key_len - 17;
    // The parts' bytes go in as they are, and the cell's spans skip their terminators; only
    // a part with an escaped zero is unescaped, where it lies. The value follows them. The
    // buffer is grown once for both (growing it writes zeros, a call of `memset`).
    debug_assert!(
        buf.is_empty(),
        "each cell takes the whole of what it copied"
    );
    buf.resize(at + value_len, 0);
    let (parts_bytes, value_bytes) = buf.split_at_mut(at);
    unpack(key, parts_bytes);
    unpack(value, value_bytes);
    let [row, family, qualifier] = parts(parts_bytes);
    let timestamp = ((!read_u64(key, at)) ^ SIGN) as i64;
    let code = !(read_u64(key, at + 8) >> 56) as u8;
    let seq_id = !read_u64(key, at + 9);
    let all = buf.split().freeze();
    let family = out.family(&all[family]);
    let spans = Spans {
        row,
        qualifier,
        value: at..all.len(),
    };
    // The cell takes the chunk's handle itself: its parts share one count.
    let mut cell = Cell::in_buffer(all, &spans, family)
        .unwrap_or_else(|| unreachable!("the parts were unescaped within the buffer they lie in"));
    cell.timestamp = timestamp;
    // Only codes of real types are encoded (invariant 3); Put stands in for the impossible
    // rest so that a read never panics.
    cell.cell_type = CellType::from_code(code).unwrap_or(CellType::Put);
    cell.seq_id = seq_id;
    cell.ttl_ms = ttl_ms;
    cell
}

/// Fills `out` with the first `out.len()` bytes packed in `words`.
fn unpack(words: &[AtomicU64], out: &mut [u8]) {
    let (whole, rest) = out.as_chunks_mut::<8>();
    let n = whole.len();
    for (c, w) in whole.iter_mut().zip(words) {
        *c = w.load(Relaxed).to_be_bytes();
    }
    if let Some(w) = words.get(n).filter(|_| !rest.is_empty()) {
        rest.copy_from_slice(&w.load(Relaxed).to_be_bytes()[..rest.len()]);
    }
}

/// Where the row, family and qualifier lie in `buf`, which holds the key's three parts: each
/// runs to its terminator (`0x00 0x01`). A part with an escaped zero (`0x00 0xFF`) is
/// unescaped where it lies (an unescaped part is never longer); the others are not moved.
fn parts(buf: &mut [u8]) -> [std::ops::Range<usize>; 3] {
    let mut found = [0..0, 0..0, 0..0];
    let mut read = 0;
    for part in &mut found {
        // `read` is past the end only for a key without its terminators, which `encode`
        // never writes; the part then ends there, and what follows is empty.
        let start = read.min(buf.len());
        let mut write = start;
        loop {
            let run = buf
                .get(read..)
                .map_or(0, |rest| first_zero(rest).unwrap_or(rest.len()));
            if run > 0 && read != write {
                buf.copy_within(read..read + run, write);
            }
            (read, write) = (read + run + 2, write + run);
            // After the zero: 0xFF for an escaped zero, anything else ends the part.
            if buf.get(read - 1) != Some(&0xFF) {
                break;
            }
            buf[write] = 0;
            write += 1;
        }
        *part = start..write.min(buf.len());
    }
    found
}

/// Where the first zero byte of `s` is, found eight bytes at a time: every cell copied out
/// of the memstore searches its key for the three parts' terminators, and a search a byte
/// at a time took a loop turn for each byte of the key (`BENCHMARKS.md` gives the counts).
fn first_zero(s: &[u8]) -> Option<usize> {
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);
    let (words, rest) = s.as_chunks::<8>();
    for (n, &w) in words.iter().enumerate() {
        let v = u64::from_le_bytes(w);
        // A byte's high bit is set here for the first zero byte, and for no byte before it
        // (a borrow only runs towards the later bytes), so the lowest set bit names it.
        let zero = v.wrapping_sub(ONES) & !v & HIGHS;
        if zero != 0 {
            return Some(n * 8 + zero.trailing_zeros() as usize / 8);
        }
    }
    rest.iter()
        .position(|&b| b == 0)
        .map(|at| words.len() * 8 + at)
}

/// Packs bytes into big-endian words.
struct Packer<F: FnMut(u64)> {
    /// The bytes of the word being filled, in its low `filled * 8` bits.
    word: u64,
    filled: u32,
    put: F,
}

impl<F: FnMut(u64)> Packer<F> {
    fn new(put: F) -> Packer<F> {
        Packer {
            word: 0,
            filled: 0,
            put,
        }
    }

    fn byte(&mut self, b: u8) {
        self.word = (self.word << 8) | u64::from(b);
        self.filled += 1;
        if self.filled == 8 {
            (self.put)(self.word);
            (self.word, self.filled) = (0, 0);
        }
    }

    /// Eight bytes at once: `w`'s, most significant first.
    fn eight(&mut self, w: u64) {
        if self.filled == 0 {
            (self.put)(w);
            return;
        }
        let kept = self.filled * 8;
        (self.put)((self.word << (64 - kept)) | (w >> kept));
        self.word = w & ((1 << kept) - 1);
    }

    fn bytes(&mut self, s: &[u8]) {
        let mut chunks = s.chunks_exact(8);
        for c in &mut chunks {
            self.eight(u64::from_be_bytes([
                c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7],
            ]));
        }
        chunks.remainder().iter().for_each(|&b| self.byte(b));
    }

    /// A part: `s` with its zero bytes escaped, then the terminator.
    fn part(&mut self, s: &[u8]) {
        let mut chunks = s.chunks_exact(8);
        for c in &mut chunks {
            if c.contains(&0) {
                c.iter().for_each(|&b| self.escaped(b));
            } else {
                self.eight(u64::from_be_bytes([
                    c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7],
                ]));
            }
        }
        chunks.remainder().iter().for_each(|&b| self.escaped(b));
        self.byte(0);
        self.byte(1);
    }

    fn escaped(&mut self, b: u8) {
        self.byte(b);
        if b == 0 {
            self.byte(0xFF);
        }
    }

    fn finish(mut self) {
        if self.filled > 0 {
            (self.put)(self.word << (64 - self.filled * 8));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use basalt_model::CellParts;
    use proptest::prelude::*;

    fn atomics(words: &[u64]) -> Vec<AtomicU64> {
        words.iter().map(|&w| AtomicU64::new(w)).collect()
    }

    proptest! {
        /// The search a word at a time finds what a byte at a time does, wherever the zero
        /// lies in its word and whatever bytes follow it (a borrow runs into them).
        #[test]
        fn first_zero_is_the_first_zero_byte(
            s in prop::collection::vec(prop::sample::select(vec![0u8, 1, 0x80, 0xFF, b'a']), 0..40)
        ) {
            prop_assert_eq!(first_zero(&s), s.iter().position(|&b| b == 0));
        }
    }

    fn words(cell: &Cell) -> Vec<u64> {
        let mut out = Vec::new();
        encode_into(cell, &mut out);
        assert_eq!(out.len(), encoded_len(cell).div_ceil(8));
        out
    }

    fn field() -> impl Strategy<Value = Vec<u8>> {
        // Few distinct bytes, zero and 0xFF among them: escapes and shared prefixes are common;
        // half the fields have no zero byte, so keys without an escape are common too.
        let bytes = |b: Vec<u8>| prop::collection::vec(prop::sample::select(b), 0..20);
        prop_oneof![
            bytes(vec![0u8, 1, 0xFF, b'a']),
            bytes(vec![1u8, 0xFF, b'a'])
        ]
    }

    fn cell() -> impl Strategy<Value = Cell> {
        let types = prop::sample::select(vec![
            CellType::Minimum,
            CellType::Put,
            CellType::Delete,
            CellType::DeleteColumn,
            CellType::DeleteFamily,
            CellType::DeleteFamilyVersion,
            CellType::Maximum,
        ]);
        let ts = prop_oneof![Just(i64::MIN), Just(-1i64), 0i64..3, Just(i64::MAX)];
        let seq = prop_oneof![0u64..3, Just(u64::MAX)];
        (
            field(),
            field(),
            field(),
            ts,
            types,
            seq,
            field(),
            any::<Option<u64>>(),
        )
            .prop_map(
                |(row, family, qualifier, timestamp, cell_type, seq_id, value, ttl_ms)| {
                    Cell::from(basalt_model::CellParts {
                        row: row.into(),
                        family: family.into(),
                        qualifier: qualifier.into(),
                        timestamp,
                        cell_type,
                        seq_id,
                        value: value.into(),
                        ttl_ms,
                    })
                },
            )
    }

    proptest! {
        /// Invariants 1 and 2.
        #[test]
        fn keys_compare_as_cells_do(a in cell(), b in cell()) {
            let (ka, kb) = (words(&a), words(&b));
            prop_assert_eq!(compare(&atomics(&ka), &kb), a.cmp(&b));
            prop_assert_eq!(compare(&atomics(&kb), &atomics(&ka)), b.cmp(&a));
        }

        /// Keys of one length are of one column exactly when their cells' rows, families and
        /// qualifiers are equal, whatever their timestamps, types and sequence ids.
        #[test]
        fn same_column_is_row_family_and_qualifier(a in cell(), b in cell(), same in any::<bool>()) {
            let b = if same {
                Cell::from(CellParts { row: a.row_bytes(), family: a.family.clone(), qualifier: a.qualifier_bytes(), ..b.into_parts() })
            } else {
                b
            };
            let (ka, kb) = (atomics(&words(&a)), atomics(&words(&b)));
            let len = encoded_len(&a);
            prop_assume!(len == encoded_len(&b));
            let expected = (&a.row(), &a.family, &a.qualifier()) == (&b.row(), &b.family, &b.qualifier());
            prop_assert_eq!(same_column(&ka, &kb, len), expected);
        }

        /// A key begins with a row's part exactly when its cell is of that row (rows that
        /// are prefixes of each other and rows with zero bytes among them).
        #[test]
        fn a_row_part_begins_the_keys_of_its_row_alone(a in cell(), b in cell(), same in any::<bool>()) {
            let b = if same { Cell::from(CellParts { row: a.row_bytes(), ..b.into_parts() }) } else { b };
            let part = RowPart::of(a.row());
            prop_assert!(part.begins(&atomics(&words(&a))));
            prop_assert_eq!(part.begins(&atomics(&words(&b))), a.row() == b.row());
        }

        /// Invariant 3, and the sequence id read in place.
        #[test]
        fn keys_decode_to_their_cells(c in cell()) {
            let key = atomics(&words(&c));
            let mut packed = Vec::new();
            pack(c.value(), |w| packed.push(w));
            prop_assert_eq!(packed.len(), c.value().len().div_ceil(8));
            let len = encoded_len(&c);
            prop_assert_eq!(seq_id(&key, len), c.seq_id);
            let mut buf = CellBuf::default();
            let back = decode(&key, len, &atomics(&packed), c.value().len(), c.ttl_ms, &mut buf);
            let again = decode(&key, len, &atomics(&packed), c.value().len(), c.ttl_ms, &mut buf);
            prop_assert_eq!(&again, &back);
            prop_assert_eq!(&back, &c);
            // The family is the kept copy of the name, the same for every cell decoded.
            prop_assert_eq!(back.family.as_ptr(), again.family.as_ptr());
            prop_assert_eq!(
                (back.seq_id, back.cell_type, &back.value(), back.ttl_ms),
                (c.seq_id, c.cell_type, &c.value(), c.ttl_ms)
            );
        }
    }

    /// Part bytes without their terminators (which `encode` never writes) give parts that
    /// end where the bytes do, and empty ones after: never a span past the buffer.
    #[test]
    fn parts_without_terminators_stay_within_the_buffer() {
        for bytes in [&b"row"[..], b"row\0\x01fam", b"r\0\xFF", b""] {
            let mut buf = BytesMut::from(bytes);
            let found = parts(&mut buf);
            assert!(
                found.iter().all(|p| p.start <= p.end && p.end <= buf.len()),
                "{bytes:?}: {found:?}"
            );
        }
        let mut buf = BytesMut::from(&b"row\0\x01fam"[..]);
        assert_eq!(parts(&mut buf), [0..3, 5..8, 8..8]);
    }

    #[test]
    fn a_row_with_zero_bytes_sorts_after_its_prefix() {
        let a = Cell::put(vec![b'r'], "f", "q", 1, "v");
        let b = Cell::put(vec![b'r', 0], "f", "q", 1, "v");
        let c = Cell::put(vec![b'r', 0, 0], "", "", 1, "v");
        let (ka, kb, kc) = (words(&a), words(&b), words(&c));
        assert_eq!(compare(&atomics(&ka), &kb), Ordering::Less);
        assert_eq!(compare(&atomics(&kb), &kc), Ordering::Less);
        assert_eq!(compare(&atomics(&kc), &ka), Ordering::Greater);
    }
}
