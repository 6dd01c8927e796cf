//! The checksums of the formats (`docs/formats/`).
//!
//! **CRC-32C** (Castagnoli), HBase's default `hbase.hstore.checksum.algorithm`: every WAL
//! record, manifest version and store file trailer, and the blocks of store files before
//! format version 5. It is computed with carry-less multiplication where the processor has
//! it (`crc-fast`, folding 64 bytes or more a step), which on a processor with AVX-512 takes
//! 1.1 µs for 64 KiB where the SSE 4.2 `crc32` instruction, three streams at a time, took
//! 2.5 µs (`BENCHMARKS.md`).
//!
//! **XXH3** (its 64-bit hash cut to 32 bits, as RocksDB checks its blocks): the blocks of
//! store files from format version 5 on. A read that misses the block cache checks the whole
//! block it read, 64 KiB by default. On a processor without AVX-512, `crc-fast` folds in
//! 128-bit registers and took 4.2–4.9 µs for 64 KiB, a sixth of a Get at 10M rows, where
//! XXH3 with AVX2 (`twox-hash` picks it at run time when the processor has it) took 0.30–0.51
//! of that time (`BENCHMARKS.md`).

use crc_fast::CrcAlgorithm;

/// The CRC-32C of `data`.
#[inline]
#[must_use]
pub(crate) fn crc32c(data: &[u8]) -> u32 {
    // A 32-bit CRC is answered in the low half of the `u64`: the cast drops only zeros.
    crc_fast::checksum(CrcAlgorithm::Crc32Iscsi, data) as u32
}

/// The low 32 bits of the XXH3-64 hash of `data` (seed 0).
#[inline]
#[must_use]
pub(crate) fn xxh3_32(data: &[u8]) -> u32 {
    twox_hash::XxHash3_64::oneshot(data) as u32
}

#[cfg(test)]
mod tests {
    use super::{crc32c, xxh3_32};
    use proptest::prelude::*;

    /// CRC-32C one bit at a time, from its definition: reflected polynomial 0x82F63B78,
    /// initial value and final XOR all ones.
    fn by_definition(data: &[u8]) -> u32 {
        let mut crc = u32::MAX;
        for &byte in data {
            crc ^= u32::from(byte);
            for _ in 0..8 {
                let low_bit = crc & 1;
                crc >>= 1;
                if low_bit == 1 {
                    crc ^= 0x82F6_3B78;
                }
            }
        }
        !crc
    }

    #[test]
    fn the_standard_check_values_hold() {
        // The catalogue's check value (CRC-32/ISCSI) and RFC 3720's test vectors.
        assert_eq!(crc32c(b"123456789"), 0xE306_9283);
        assert_eq!(crc32c(&[0u8; 32]), 0x8A91_36AA);
        assert_eq!(crc32c(&[0xFFu8; 32]), 0x62A8_AB43);
        let ascending: Vec<u8> = (0u8..32).collect();
        assert_eq!(crc32c(&ascending), 0x46DD_794E);
        assert_eq!(crc32c(b""), 0);
    }

    #[test]
    fn a_whole_block_agrees_with_the_definition() {
        // A default block and one past it, at an odd start: the long folding path and the
        // tails on both sides of it.
        let data: Vec<u8> = (0u32..(64 << 10) + 77)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        for (start, end) in [(0, 64 << 10), (3, data.len()), (1, 4099)] {
            assert_eq!(
                crc32c(&data[start..end]),
                by_definition(&data[start..end]),
                "bytes {start}..{end}"
            );
        }
    }

    /// XXH3-64 as a second implementation computes it (the one the bloom filters hash
    /// with), cut to 32 bits.
    fn xxh3_32_elsewhere(data: &[u8]) -> u32 {
        xxhash_rust::xxh3::xxh3_64(data) as u32
    }

    #[test]
    fn xxh3_holds_its_reference_value_and_agrees_on_a_whole_block() {
        // XXH3-64 of no bytes, seed 0 (the reference implementation's test vector).
        assert_eq!(xxh3_32(b""), 0x2D06_8005_38D3_94C2_u64 as u32);
        // A default block and one past it, at odd starts: the long loop (AVX2 where the
        // processor has it) and its last stripe.
        let data: Vec<u8> = (0u32..(64 << 10) + 77)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        for (start, end) in [(0, 64 << 10), (3, data.len()), (1, 4099)] {
            let bytes = &data[start..end];
            assert_eq!(
                xxh3_32(bytes),
                xxh3_32_elsewhere(bytes),
                "bytes {start}..{end}"
            );
        }
    }

    proptest! {
        /// Any length and any alignment: CRC-32C's short paths, each vector width's loop and
        /// the bytes left after it, against its definition; XXH3's paths by length (up to 16,
        /// 128 and 240 bytes, then stripes), against the second implementation.
        #[test]
        fn any_bytes_agree_with_the_definitions(
            data in prop::collection::vec(any::<u8>(), 0..2_100),
            start in 0usize..64,
        ) {
            let bytes = data.get(start..).unwrap_or_default();
            prop_assert_eq!(crc32c(bytes), by_definition(bytes));
            prop_assert_eq!(xxh3_32(bytes), xxh3_32_elsewhere(bytes));
        }
    }
}
