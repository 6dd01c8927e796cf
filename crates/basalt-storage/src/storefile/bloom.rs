//! Bloom filters of store files (docs/formats/storefile.md, "Bloom block").

use basalt_model::BloomType;
use xxhash_rust::xxh3::{xxh3_64, Xxh3};

use crate::codec::Reader;

const BITS_PER_KEY: u64 = 10;
const HASH_COUNT: u32 = 7;

/// Kind codes on disk: never renumber. 1 and 2 spread a key's probes over the whole filter
/// (files written before blocked filters); 3 and 4 keep them in one 64-byte line.
fn kind_code(t: BloomType) -> u8 {
    match t {
        BloomType::Row => 3,
        BloomType::RowCol | BloomType::None => 4,
    }
}

/// Bits in a line of a blocked filter: one cache line.
const LINE_BITS: u64 = 512;

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

    /// The encoded bloom block body (a blocked filter).
    #[must_use]
    pub fn finish(&self) -> Vec<u8> {
        let lines = (self.hashes.len() as u64 * BITS_PER_KEY)
            .div_ceil(LINE_BITS)
            .max(1);
        let bits = lines * LINE_BITS;
        let mut data = vec![0u8; usize::try_from(bits / 8).unwrap_or(0)];
        for &h in &self.hashes {
            for bit in blocked_probes(h, lines) {
                data[usize::try_from(bit / 8).unwrap_or(0)] |= 1 << (bit % 8);
            }
        }
        let mut out = vec![kind_code(self.kind)];
        out.extend_from_slice(&HASH_COUNT.to_le_bytes());
        out.extend_from_slice(&bits.to_le_bytes());
        out.extend_from_slice(&data);
        out
    }
}

/// The bits of key hash `h` in a blocked filter of `lines` lines: the line from the high half
/// of the hash (multiply-shift, no division), the bits in it by double hashing of the low half.
fn blocked_probes(h: u64, lines: u64) -> impl Iterator<Item = u64> {
    let line = ((u128::from(h >> 32) * u128::from(lines)) >> 32) as u64;
    let base = line * LINE_BITS;
    let h1 = h & 0xffff_ffff;
    let h2 = (((h1 >> 16) | (h1 << 16)) & 0xffff_ffff) | 1;
    (0..u64::from(HASH_COUNT))
        .map(move |i| base + (h1.wrapping_add(i.wrapping_mul(h2)) % LINE_BITS))
}

/// The bits of key hash `h` in an unblocked filter of `bits` bits (kinds 1 and 2).
fn probes(h: u64, bits: u64) -> impl Iterator<Item = u64> {
    let h1 = h & 0xffff_ffff;
    let h2 = h >> 32;
    (0..u64::from(HASH_COUNT)).map(move |i| h1.wrapping_add(i.wrapping_mul(h2)) % bits)
}

/// A loaded bloom filter.
#[derive(Debug)]
pub struct Bloom {
    pub kind: BloomType,
    blocked: bool,
    bits: u64,
    data: Vec<u8>,
}

impl Bloom {
    /// Decodes a bloom block body; `None` when malformed.
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
        self.may_contain_hash(xxh3_64(row))
    }

    /// False when the column is certainly absent (a ROWCOL filter). Hashes the parts of
    /// [`bloom_key`] in a stream, so a probe allocates nothing.
    #[must_use]
    pub fn may_contain_row_col(&self, row: &[u8], qualifier: &[u8]) -> bool {
        let mut h = Xxh3::new();
        let len = u16::try_from(row.len()).unwrap_or(u16::MAX);
        h.update(&len.to_be_bytes());
        h.update(row);
        h.update(qualifier);
        self.may_contain_hash(h.digest())
    }

    /// False when the key is certainly absent.
    #[must_use]
    pub fn may_contain(&self, key: &[u8]) -> bool {
        self.may_contain_hash(xxh3_64(key))
    }

    fn may_contain_hash(&self, h: u64) -> bool {
        if self.blocked {
            return blocked_probes(h, self.bits / LINE_BITS).all(|bit| self.is_set(bit));
        }
        probes(h, self.bits).all(|bit| self.is_set(bit))
    }

    fn is_set(&self, bit: u64) -> bool {
        let byte = self
            .data
            .get(usize::try_from(bit / 8).unwrap_or(usize::MAX))
            .copied()
            .unwrap_or(0);
        byte & (1 << (bit % 8)) != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_false_negatives_and_few_false_positives() {
        let mut b = BloomBuilder::new(BloomType::Row);
        for i in 0..10_000u32 {
            b.add(&i.to_be_bytes());
        }
        let bloom = Bloom::decode(&b.finish()).unwrap();
        assert!((0..10_000u32).all(|i| bloom.may_contain(&i.to_be_bytes())));
        let fp = (10_000..20_000u32)
            .filter(|i| bloom.may_contain(&i.to_be_bytes()))
            .count();
        assert!(fp < 300, "false positive rate too high: {fp}/10000");
    }

    #[test]
    fn filters_of_the_first_layout_still_answer() {
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
    }

    #[test]
    fn streamed_row_col_probe_matches_the_stored_key() {
        let mut b = BloomBuilder::new(BloomType::RowCol);
        for i in 0..1000u32 {
            b.add(&bloom_key(BloomType::RowCol, &i.to_be_bytes(), b"qual"));
        }
        let bloom = Bloom::decode(&b.finish()).unwrap();
        assert!((0..1000u32).all(|i| bloom.may_contain_row_col(&i.to_be_bytes(), b"qual")));
        let fp = (0..1000u32)
            .filter(|i| bloom.may_contain_row_col(&i.to_be_bytes(), b"other"))
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
            assert_eq!(built.finish(), whole.finish(), "{kind:?}");
        }
    }
}
