//! Bloom filters of store files (docs/formats/storefile.md, "Bloom filter").
//!
//! A file's filter is stored in chunks of whole 64-byte lines, at most a data block's size
//! each, and a layout block that says where they lie (HBase's compound bloom filters, in
//! its `io.storefile.bloom.block.size` chunks). A read loads and caches only the chunk that
//! holds its key's line. A filter stored whole had to fit in one shard of the block cache:
//! one that did not (a file of some 25 million rows with a 512 MiB cache, 3 million with
//! 64 MiB) was read again, megabytes, by every Get, and one larger than the quarter of a
//! shard that protects index and bloom blocks (6 million rows at 512 MiB) was pushed out by
//! data blocks and read again now and then (`BENCHMARKS.md`).

use basalt_model::BloomType;
use xxhash_rust::xxh3::{xxh3_64, Xxh3};

use super::block::BLOCK_TRAILER_LEN;
use crate::codec::Reader;

const BITS_PER_KEY: u64 = 10;
const HASH_COUNT: u32 = 7;

/// Kind codes on disk: never renumber. 1 and 2 spread a key's probes over the whole filter
/// (files written before blocked filters); 3 and 4 keep them in one 64-byte line, in one
/// block (files before format version 4); 5 and 6 are 3 and 4 in chunks, and name a
/// [`BloomLayout`].
fn chunked_kind_code(t: BloomType) -> u8 {
    match t {
        BloomType::Row => 5,
        BloomType::RowCol | BloomType::None => 6,
    }
}

/// Bits in a line of a blocked filter: one cache line.
const LINE_BITS: u64 = 512;
/// Bytes in a line.
const LINE_BYTES: u64 = LINE_BITS / 8;

/// The hash a ROW filter holds for `row`.
#[must_use]
pub fn row_hash(row: &[u8]) -> u64 {
    xxh3_64(row)
}

/// The hash a ROWCOL filter holds for `row` and `qualifier` ([`bloom_key`]'s hash), taken in
/// a stream so that a probe allocates nothing.
#[must_use]
pub fn row_col_hash(row: &[u8], qualifier: &[u8]) -> u64 {
    let mut h = Xxh3::new();
    let len = u16::try_from(row.len()).unwrap_or(u16::MAX);
    h.update(&len.to_be_bytes());
    h.update(row);
    h.update(qualifier);
    h.digest()
}

/// The bloom key of a row and, for ROWCOL, a qualifier.
pub fn bloom_key(kind: BloomType, row: &[u8], qualifier: &[u8]) -> Vec<u8> {
    let mut k = Vec::new();
    put_bloom_key(&mut k, kind, row, qualifier);
    k
}

/// Writes [`bloom_key`] into `out`, which it clears first.
fn put_bloom_key(out: &mut Vec<u8>, kind: BloomType, row: &[u8], qualifier: &[u8]) {
    out.clear();
    match kind {
        BloomType::Row | BloomType::None => out.extend_from_slice(row),
        BloomType::RowCol => {
            out.reserve(row.len() + qualifier.len() + 2);
            let len = u16::try_from(row.len()).unwrap_or(u16::MAX);
            out.extend_from_slice(&len.to_be_bytes());
            out.extend_from_slice(row);
            out.extend_from_slice(qualifier);
        }
    }
}

/// Collects key hashes while a file is written.
#[derive(Debug)]
pub struct BloomBuilder {
    kind: BloomType,
    hashes: Vec<u64>,
    last: Option<u64>,
    /// The key being added ([`BloomBuilder::add_row_col`]).
    scratch: Vec<u8>,
}

impl BloomBuilder {
    /// A builder for `kind` (ROW or ROWCOL).
    #[must_use]
    pub fn new(kind: BloomType) -> BloomBuilder {
        BloomBuilder {
            kind,
            hashes: Vec::new(),
            last: None,
            scratch: Vec::new(),
        }
    }

    /// Adds a key (consecutive duplicates are folded).
    pub fn add(&mut self, key: &[u8]) {
        self.add_hash(xxh3_64(key));
    }

    /// Adds the key of `row` and, for ROWCOL, `qualifier` ([`bloom_key`]), built in a buffer
    /// the builder keeps: a file's writer adds one for each cell.
    pub fn add_row_col(&mut self, row: &[u8], qualifier: &[u8]) {
        let h = match self.kind {
            BloomType::Row | BloomType::None => xxh3_64(row),
            kind => {
                put_bloom_key(&mut self.scratch, kind, row, qualifier);
                xxh3_64(&self.scratch)
            }
        };
        self.add_hash(h);
    }

    fn add_hash(&mut self, h: u64) {
        if self.last != Some(h) {
            self.hashes.push(h);
            self.last = Some(h);
        }
    }

    /// The filter's lines, laid out in chunks of at most `chunk_bytes` (whole lines, at
    /// least one) to be stored one after another from `chunks_at`: the layout, and the
    /// bytes the chunks are cut from.
    #[must_use]
    pub fn finish(&self, chunk_bytes: usize, chunks_at: u64) -> (BloomLayout, Vec<u8>) {
        let lines = (self.hashes.len() as u64 * BITS_PER_KEY)
            .div_ceil(LINE_BITS)
            .max(1);
        let layout = BloomLayout {
            kind: self.kind,
            lines,
            lines_per_chunk: (chunk_bytes as u64 / LINE_BYTES).clamp(1, MAX_CHUNK_LINES),
            chunks_at,
        };
        (layout, self.lines(lines))
    }

    /// The bits of a blocked filter of `lines` lines holding every hash added.
    fn lines(&self, lines: u64) -> Vec<u8> {
        let mut data = vec![0u8; usize::try_from(lines * LINE_BYTES).unwrap_or(0)];
        for &h in &self.hashes {
            for bit in blocked_probes(h, lines) {
                data[usize::try_from(bit / 8).unwrap_or(0)] |= 1 << (bit % 8);
            }
        }
        data
    }
}

/// The most lines a chunk holds: its stored length is a `u32`.
const MAX_CHUNK_LINES: u64 = 1 << 20;

/// Where a chunked filter's chunks lie and which holds a key's line: the body of its layout
/// block (kinds 5 and 6).
///
/// # Invariants
/// Decoded or built, `lines` and `lines_per_chunk` are at least 1, `lines_per_chunk` at
/// most `MAX_CHUNK_LINES`, and the chunks' end does not overflow.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BloomLayout {
    pub kind: BloomType,
    lines: u64,
    lines_per_chunk: u64,
    chunks_at: u64,
}

impl BloomLayout {
    /// The layout block's body.
    #[must_use]
    pub fn encode(&self) -> Vec<u8> {
        let mut out = vec![chunked_kind_code(self.kind)];
        out.extend_from_slice(&HASH_COUNT.to_le_bytes());
        out.extend_from_slice(&self.lines.to_le_bytes());
        let per_chunk = u32::try_from(self.lines_per_chunk).unwrap_or(u32::MAX);
        out.extend_from_slice(&per_chunk.to_le_bytes());
        out.extend_from_slice(&self.chunks_at.to_le_bytes());
        out
    }

    /// Whether a bloom section's body is a layout block rather than a filter stored whole.
    #[must_use]
    pub fn is_layout(body: &[u8]) -> bool {
        matches!(body.first(), Some(5 | 6))
    }

    /// Decodes a layout block's body; `None` when malformed.
    #[must_use]
    pub fn decode(body: &[u8]) -> Option<BloomLayout> {
        let mut r = Reader::new(body);
        let kind = match r.u8()? {
            5 => BloomType::Row,
            6 => BloomType::RowCol,
            _ => return None,
        };
        if r.u32_le()? != HASH_COUNT {
            return None;
        }
        let lines = r.u64_le()?;
        let lines_per_chunk = u64::from(r.u32_le()?);
        let chunks_at = r.u64_le()?;
        let layout = BloomLayout {
            kind,
            lines,
            lines_per_chunk,
            chunks_at,
        };
        let sane = r.is_empty()
            && lines > 0
            && (1..=MAX_CHUNK_LINES).contains(&lines_per_chunk)
            && layout.checked_end().is_some();
        sane.then_some(layout)
    }

    /// Number of chunks.
    #[must_use]
    pub fn chunks(&self) -> u64 {
        self.lines.div_ceil(self.lines_per_chunk)
    }

    /// Lines in chunk `i` (`i < chunks()`).
    fn chunk_lines(&self, i: u64) -> u64 {
        self.lines_per_chunk
            .min(self.lines - i * self.lines_per_chunk)
    }

    /// Where chunk `i` is stored (`i < chunks()`): offset and stored length, its frame
    /// included.
    #[must_use]
    pub fn chunk_at(&self, i: u64) -> (u64, u32) {
        let stride = self.lines_per_chunk * LINE_BYTES + BLOCK_TRAILER_LEN as u64;
        let len = self.chunk_lines(i) * LINE_BYTES + BLOCK_TRAILER_LEN as u64;
        // Both fit: lines per chunk are at most MAX_CHUNK_LINES (invariant).
        (
            self.chunks_at + i * stride,
            u32::try_from(len).unwrap_or(u32::MAX),
        )
    }

    /// Where the last chunk ends: the layout block follows the chunks at once.
    #[must_use]
    pub fn chunks_end(&self) -> u64 {
        self.checked_end().unwrap_or(u64::MAX)
    }

    fn checked_end(&self) -> Option<u64> {
        let chunks = self.lines.div_ceil(self.lines_per_chunk);
        self.lines
            .checked_mul(LINE_BYTES)?
            .checked_add(chunks.checked_mul(BLOCK_TRAILER_LEN as u64)?)?
            .checked_add(self.chunks_at)
    }

    /// The chunk that holds the line of key hash `h`.
    #[must_use]
    pub fn chunk_of(&self, h: u64) -> u64 {
        line_of(h, self.lines) / self.lines_per_chunk
    }

    /// The chunks' bodies, cut from `lines` ([`BloomBuilder::finish`]'s).
    pub fn split<'a>(&self, lines: &'a [u8]) -> impl Iterator<Item = &'a [u8]> {
        lines.chunks(usize::try_from(self.lines_per_chunk * LINE_BYTES).unwrap_or(usize::MAX))
    }

    /// Chunk `i` (`i < chunks()`) loaded from its body; `None` when the body is not its
    /// length.
    #[must_use]
    pub fn chunk(&self, i: u64, body: &[u8]) -> Option<Bloom> {
        (body.len() as u64 == self.chunk_lines(i) * LINE_BYTES).then(|| Bloom {
            kind: self.kind,
            blocked: true,
            bits: self.lines * LINE_BITS,
            first_bit: i * self.lines_per_chunk * LINE_BITS,
            data: body.to_vec(),
        })
    }
}

/// The bits of key hash `h` in a blocked filter of `lines` lines: the line from the high half
/// of the hash (multiply-shift, no division), the bits in it by double hashing of the low half.
fn blocked_probes(h: u64, lines: u64) -> impl Iterator<Item = u64> {
    let base = line_of(h, lines) * LINE_BITS;
    let h1 = h & 0xffff_ffff;
    let h2 = (((h1 >> 16) | (h1 << 16)) & 0xffff_ffff) | 1;
    (0..u64::from(HASH_COUNT))
        .map(move |i| base + (h1.wrapping_add(i.wrapping_mul(h2)) % LINE_BITS))
}

/// The line of key hash `h` in a blocked filter of `lines` lines: from the high half of the
/// hash, by multiply-shift.
fn line_of(h: u64, lines: u64) -> u64 {
    ((u128::from(h >> 32) * u128::from(lines)) >> 32) as u64
}

/// The bits of key hash `h` in an unblocked filter of `bits` bits (kinds 1 and 2).
fn probes(h: u64, bits: u64) -> impl Iterator<Item = u64> {
    let h1 = h & 0xffff_ffff;
    let h2 = h >> 32;
    (0..u64::from(HASH_COUNT)).map(move |i| h1.wrapping_add(i.wrapping_mul(h2)) % bits)
}

/// A loaded bloom filter, or a chunk of one: the bits from `first_bit` of a filter of
/// `bits` bits.
#[derive(Debug)]
pub struct Bloom {
    pub kind: BloomType,
    blocked: bool,
    bits: u64,
    first_bit: u64,
    data: Vec<u8>,
}

impl Bloom {
    /// Decodes a filter stored whole (kinds 1 to 4, before format version 4); `None` when
    /// malformed.
    #[must_use]
    pub fn decode(body: &[u8]) -> Option<Bloom> {
        let mut r = Reader::new(body);
        let (kind, blocked) = match r.u8()? {
            1 => (BloomType::Row, false),
            2 => (BloomType::RowCol, false),
            3 => (BloomType::Row, true),
            4 => (BloomType::RowCol, true),
            _ => return None,
        };
        if r.u32_le()? != HASH_COUNT {
            return None;
        }
        let bits = r.u64_le()?;
        let data = r.take(usize::try_from(bits.div_ceil(8)).ok()?)?.to_vec();
        if bits == 0 || !r.is_empty() || (blocked && bits % LINE_BITS != 0) {
            return None;
        }
        Some(Bloom {
            kind,
            blocked,
            bits,
            first_bit: 0,
            data,
        })
    }

    /// Bytes the loaded filter occupies, its weight in the block cache.
    #[must_use]
    pub fn size_bytes(&self) -> usize {
        self.data.len() + std::mem::size_of::<Bloom>()
    }

    /// False when `row` is certainly absent (a ROW filter).
    #[must_use]
    pub fn may_contain_row(&self, row: &[u8]) -> bool {
        self.may_contain_hash(row_hash(row))
    }

    /// False when the column is certainly absent (a ROWCOL filter).
    #[must_use]
    pub fn may_contain_row_col(&self, row: &[u8], qualifier: &[u8]) -> bool {
        self.may_contain_hash(row_col_hash(row, qualifier))
    }

    /// False when the key is certainly absent.
    #[must_use]
    pub fn may_contain(&self, key: &[u8]) -> bool {
        self.may_contain_hash(xxh3_64(key))
    }

    /// False when the key of hash `h` ([`row_hash`], [`row_col_hash`]) is certainly
    /// absent. A chunk answers for the keys whose line it holds
    /// ([`BloomLayout::chunk_of`]); a bit it does not hold reads as set, so a chunk asked
    /// about another's key answers "maybe", never "absent".
    #[must_use]
    pub fn may_contain_hash(&self, h: u64) -> bool {
        if self.blocked {
            return blocked_probes(h, self.bits / LINE_BITS).all(|bit| self.is_set(bit));
        }
        probes(h, self.bits).all(|bit| self.is_set(bit))
    }

    fn is_set(&self, bit: u64) -> bool {
        let Some(at) = bit.checked_sub(self.first_bit) else {
            return true;
        };
        self.data
            .get(usize::try_from(at / 8).unwrap_or(usize::MAX))
            .is_none_or(|byte| byte & (1 << (at % 8)) != 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A filter of `b`'s keys in chunks of `chunk_bytes`, loaded as a reader loads it: the
    /// layout, decoded from its block, and every chunk.
    fn chunked(b: &BloomBuilder, chunk_bytes: usize) -> (BloomLayout, Vec<Bloom>) {
        let (layout, bits) = b.finish(chunk_bytes, 1000);
        let layout = BloomLayout::decode(&layout.encode()).unwrap();
        let chunks: Vec<Bloom> = layout
            .split(&bits)
            .enumerate()
            .map(|(i, body)| layout.chunk(i as u64, body).unwrap())
            .collect();
        assert_eq!(chunks.len() as u64, layout.chunks());
        (layout, chunks)
    }

    /// What the chunked filter answers for key hash `h`, from the chunk that holds it.
    fn may(layout: &BloomLayout, chunks: &[Bloom], h: u64) -> bool {
        chunks[usize::try_from(layout.chunk_of(h)).unwrap()].may_contain_hash(h)
    }

    /// A filter of the kinds stored whole (3 for ROW, 4 for ROWCOL), as files before format
    /// version 4 hold it.
    fn whole(b: &BloomBuilder, lines: u64) -> Bloom {
        let mut body = vec![if b.kind == BloomType::Row { 3 } else { 4 }];
        body.extend_from_slice(&HASH_COUNT.to_le_bytes());
        body.extend_from_slice(&(lines * LINE_BITS).to_le_bytes());
        body.extend_from_slice(&b.lines(lines));
        Bloom::decode(&body).unwrap()
    }

    fn rows(n: u32) -> BloomBuilder {
        let mut b = BloomBuilder::new(BloomType::Row);
        for i in 0..n {
            b.add(&i.to_be_bytes());
        }
        b
    }

    #[test]
    fn no_false_negatives_and_few_false_positives() {
        let b = rows(10_000);
        // One chunk and many: 10,000 keys take 196 lines.
        for chunk_bytes in [1 << 16, 64 * 7, 1] {
            let (layout, chunks) = chunked(&b, chunk_bytes);
            let h = |i: u32| row_hash(&i.to_be_bytes());
            assert!((0..10_000u32).all(|i| may(&layout, &chunks, h(i))));
            let fp = (10_000..20_000u32)
                .filter(|&i| may(&layout, &chunks, h(i)))
                .count();
            assert!(fp < 300, "false positive rate too high: {fp}/10000");
        }
    }

    #[test]
    fn chunks_answer_as_the_filter_stored_whole() {
        let b = rows(5_000);
        let (layout, chunks) = chunked(&b, 64 * 5);
        assert_eq!((layout.lines, layout.chunks()), (98, 20));
        let old = whole(&b, layout.lines);
        for i in 0..20_000u32 {
            let h = row_hash(&i.to_be_bytes());
            assert_eq!(may(&layout, &chunks, h), old.may_contain_hash(h), "{i}");
        }
        // A chunk asked about a key another chunk holds answers "maybe".
        let h = (0..u32::MAX)
            .map(|i| row_hash(&i.to_be_bytes()))
            .find(|&h| layout.chunk_of(h) == 7)
            .unwrap();
        assert!(chunks[0].may_contain_hash(h) && chunks[19].may_contain_hash(h));
    }

    #[test]
    fn chunks_lie_one_after_another_up_to_the_layout() {
        let (layout, _) = chunked(&rows(5_000), 64 * 5);
        let mut at = 1000;
        for i in 0..layout.chunks() {
            let (off, len) = layout.chunk_at(i);
            assert_eq!(off, at, "chunk {i}");
            let lines = if i + 1 == layout.chunks() { 3 } else { 5 };
            assert_eq!(len as usize, lines * 64 + BLOCK_TRAILER_LEN, "chunk {i}");
            at += u64::from(len);
        }
        assert_eq!(layout.chunks_end(), at);
        // A chunk of the wrong length is refused.
        assert!(layout.chunk(19, &[0; 64 * 5]).is_none());
        assert!(layout.chunk(19, &[0; 64 * 3]).is_some());
    }

    #[test]
    fn a_damaged_layout_is_refused() {
        let (layout, _) = chunked(&rows(100), 64);
        let good = layout.encode();
        assert_eq!(BloomLayout::decode(&good), Some(layout));
        assert!(BloomLayout::is_layout(&good));
        let damaged = |at: usize, bytes: &[u8]| {
            let mut d = good.clone();
            d.splice(at..at + bytes.len(), bytes.iter().copied());
            d
        };
        for (what, body) in [
            ("a kind stored whole", damaged(0, &[4])),
            ("an unknown kind", damaged(0, &[7])),
            ("another hash count", damaged(1, &[8])),
            ("no lines", damaged(5, &[0; 8])),
            ("no lines a chunk", damaged(13, &[0; 4])),
            ("more lines a chunk than fit", damaged(13, &[0, 0, 0x20, 0])),
            ("chunks past the end of any file", damaged(17, &[0xff; 8])),
            ("a byte too many", [good.as_slice(), &[0]].concat()),
            ("a byte too few", good[..good.len() - 1].to_vec()),
        ] {
            assert_eq!(BloomLayout::decode(&body), None, "{what}");
        }
    }

    #[test]
    fn filters_stored_whole_still_answer() {
        // Kind 1: probes spread over the whole filter, as files written before blocked filters.
        let bits = 64 * 10u64;
        let mut data = vec![0u8; 80];
        for i in 0..64u32 {
            for bit in probes(xxh3_64(&i.to_be_bytes()), bits) {
                data[(bit / 8) as usize] |= 1 << (bit % 8);
            }
        }
        let mut body = vec![1u8];
        body.extend_from_slice(&HASH_COUNT.to_le_bytes());
        body.extend_from_slice(&bits.to_le_bytes());
        body.extend_from_slice(&data);
        let bloom = Bloom::decode(&body).unwrap();
        assert!(!bloom.blocked);
        assert!((0..64u32).all(|i| bloom.may_contain_row(&i.to_be_bytes())));
        let fp = (1000..2000u32)
            .filter(|i| bloom.may_contain_row(&i.to_be_bytes()))
            .count();
        assert!(fp < 60, "{fp}");
        // Kind 3: blocked, in one block.
        let b = rows(1000);
        let bloom = whole(&b, 20);
        assert!(bloom.blocked);
        assert!((0..1000u32).all(|i| bloom.may_contain_row(&i.to_be_bytes())));
        assert!(!BloomLayout::is_layout(&[3]));
    }

    #[test]
    fn streamed_row_col_probe_matches_the_stored_key() {
        let mut b = BloomBuilder::new(BloomType::RowCol);
        for i in 0..1000u32 {
            b.add(&bloom_key(BloomType::RowCol, &i.to_be_bytes(), b"qual"));
        }
        let (layout, chunks) = chunked(&b, 64 * 4);
        let h = |i: u32, q: &[u8]| row_col_hash(&i.to_be_bytes(), q);
        assert!((0..1000u32).all(|i| may(&layout, &chunks, h(i, b"qual"))));
        let fp = (0..1000u32)
            .filter(|&i| may(&layout, &chunks, h(i, b"other")))
            .count();
        assert!(fp < 50, "{fp}");
    }

    #[test]
    fn a_writer_s_keys_hash_as_the_keys_built_whole() {
        for kind in [BloomType::Row, BloomType::RowCol] {
            let (mut whole, mut built) = (BloomBuilder::new(kind), BloomBuilder::new(kind));
            for i in 0..1000u32 {
                let (row, qualifier) = (i.to_be_bytes(), format!("q{}", i % 7));
                whole.add(&bloom_key(kind, &row, qualifier.as_bytes()));
                built.add_row_col(&row, qualifier.as_bytes());
            }
            assert_eq!(built.hashes, whole.hashes, "{kind:?}");
            assert_eq!(built.finish(4096, 0), whole.finish(4096, 0), "{kind:?}");
        }
    }
}
