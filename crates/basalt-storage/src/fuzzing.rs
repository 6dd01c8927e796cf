//! Entry points for the fuzz targets (`fuzz/` in the repository) and for the tests that
//! replay their corpora on stable Rust. Each takes untrusted bytes, runs one decoder of bytes
//! from disk or the wire, and must return (an error is fine) without panicking.

use std::path::Path;

use bytes::Bytes;

use crate::storefile::{
    block, decode_index_block, parse_trailer, row_hash, Bloom, BloomLayout, Index,
};
use crate::wal::replay::decode_segment;

const PATH: &str = "fuzz-input";

/// A WAL segment: header and records, torn tails and corruption included.
pub fn wal_segment(data: &[u8]) {
    let mut edits = 0usize;
    let _ = decode_segment(data, Path::new(PATH), &mut |e| {
        edits += e.cells.len();
        Ok(())
    });
}

/// A stored data block: frame (codec and checksum), then the cells, read as both format
/// versions' layouts.
pub fn data_block(data: &[u8]) {
    let bodies = |body: Bytes| {
        let (family, path) = (&Bytes::from_static(b"f"), Path::new(PATH));
        let legacy = block::decode_legacy_data_block(&body, family, path, 0);
        // A block whose layout is placed is read whole, as its entries are checked when
        // read: each cell built, and searched for enough times that the row probes are built.
        for b in [legacy, block::decode_data_block(body, family, path, 0)]
            .iter()
            .flatten()
        {
            let _ = b.next_visible(0, u64::MAX, None, &mut None);
            for i in 0..b.len() {
                if let Ok(c) = b.cell(i) {
                    for _ in 0..8 {
                        let _ = b.lower_bound(&c);
                    }
                    let _ = (b.row(i), b.seq_id(i));
                }
            }
        }
    };
    for checksum in [block::BlockChecksum::Crc32c, block::BlockChecksum::Xxh3] {
        if let Ok(body) = block::unframe(data.to_vec(), checksum, Path::new(PATH), 0) {
            bodies(body);
        }
    }
    // The body alone too: the checksum would stop most mutations before the decoder.
    bodies(Bytes::copy_from_slice(data));
}

/// An index block body: a leaf, or the root of an index in two levels (the same layout).
pub fn index_block(data: &[u8]) -> Option<Index> {
    decode_index_block(data, &Bytes::from_static(b"f"), u64::MAX)
}

/// A bloom section's body: a filter stored whole (before store file format version 4) or a
/// chunked filter's layout, then probes of what decoded (the input read as a chunk too).
pub fn bloom_block(data: &[u8]) {
    if let Some(b) = Bloom::decode(data) {
        let _ = b.may_contain_row(data);
        let _ = b.may_contain_row_col(data, b"q");
    }
    if let Some(layout) = BloomLayout::decode(data) {
        let h = row_hash(data);
        let i = layout.chunk_of(h);
        let _ = (layout.chunk_at(i), layout.chunks_end());
        if let Some(chunk) = layout.chunk(i, data) {
            let _ = chunk.may_contain_hash(h);
        }
    }
}

/// A store file trailer.
pub fn trailer(data: &[u8]) {
    let _ = parse_trailer(data, Path::new(PATH));
}

/// A filter-language string (HBase's `ParseFilter`), from bytes taken as UTF-8 where valid.
pub fn filter_language(data: &[u8]) {
    if let Ok(s) = std::str::from_utf8(data) {
        let _ = basalt_model::filter::parse_filter(s);
    }
}
