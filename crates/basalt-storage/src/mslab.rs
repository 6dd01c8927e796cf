//! The MemStore-Local Allocation Buffer (HBase's MSLAB): a memstore copies each cell's bytes
//! into large chunks of its own before it keeps the cell.
//!
//! Without it, a cell kept in a memstore would hold on to whatever buffer its bytes came
//! from: a request's whole receive buffer (several KiB for a row of one KiB) or a WAL
//! replay's read buffer, until the memstore is flushed. The memstore's size would count the
//! cell and not the buffer, so a memstore at its flush size could hold many times that in
//! memory, and every request would take fresh pages. With it, cells of one memstore sit
//! side by side in chunks of [`CHUNK_BYTES`], freed together when the flushed memstore is
//! dropped, and what a memstore holds is what it counts, give or take the unused end of its
//! last chunk.
//!
//! # Invariants
//! 1. A cell returned by [`Mslab::copy`] shares no buffer with the cell given: its row,
//!    family, qualifier and value are slices of a chunk, or, for a cell over
//!    [`MAX_ALLOC_BYTES`] (HBase's `hbase.hregion.memstore.mslab.max.allocation`), one
//!    allocation of exactly its size.
//! 2. Bytes written to a chunk are never written again: each copy takes the next free bytes,
//!    and a chunk too full for a cell is left as it is for a new one.

use basalt_model::Cell;
use bytes::BytesMut;
use parking_lot::Mutex;

/// Size of a chunk (HBase's `hbase.hregion.memstore.mslab.chunksize`, 2 MiB).
pub const CHUNK_BYTES: usize = 2 << 20;

/// Cells larger than this get an allocation of their own rather than a chunk's space
/// (HBase's default, 256 KiB), so a large cell does not waste most of a chunk.
pub const MAX_ALLOC_BYTES: usize = 256 << 10;

/// One memstore's chunks: the one being filled (the earlier ones are held by their cells).
#[derive(Debug, Default)]
pub struct Mslab {
    chunk: Mutex<BytesMut>,
}

impl Mslab {
    /// `cell` with its bytes copied into this memstore's chunks (invariant 1).
    #[must_use]
    pub fn copy(&self, cell: Cell) -> Cell {
        let parts = [&cell.row, &cell.family, &cell.qualifier, &cell.value];
        let total: usize = parts.iter().map(|p| p.len()).sum();
        let all = if total > MAX_ALLOC_BYTES {
            let mut own = BytesMut::with_capacity(total);
            parts.iter().for_each(|p| own.extend_from_slice(p));
            own.freeze()
        } else {
            let mut chunk = self.chunk.lock();
            // Invariant 2: a chunk without room is replaced, never grown (growing would
            // move the bytes earlier cells point into).
            if chunk.capacity() < total {
                *chunk = BytesMut::with_capacity(CHUNK_BYTES);
            }
            parts.iter().for_each(|p| chunk.extend_from_slice(p));
            chunk.split().freeze()
        };
        let mut at = 0;
        let mut take = |len: usize| {
            at += len;
            all.slice(at - len..at)
        };
        Cell {
            row: take(cell.row.len()),
            family: take(cell.family.len()),
            qualifier: take(cell.qualifier.len()),
            value: take(cell.value.len()),
            ..cell
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn cell(row: &[u8], value: Bytes) -> Cell {
        Cell::put(Bytes::copy_from_slice(row), "f", "q", 7, value)
    }

    fn within(b: &Bytes, buf: &[u8]) -> bool {
        let (start, end) = (buf.as_ptr() as usize, buf.as_ptr() as usize + buf.len());
        let p = b.as_ptr() as usize;
        p >= start && p + b.len() <= end
    }

    #[test]
    fn a_copied_cell_equals_the_original_and_shares_no_buffer_with_it() {
        let slab = Mslab::default();
        // A value that is a slice of a larger buffer, as a request's bytes are.
        let request = Bytes::from(vec![9u8; 8192]);
        let original = cell(b"row-1", request.slice(100..200));
        let copied = slab.copy(original.clone());
        assert_eq!(copied, original);
        assert_eq!(copied.seq_id, original.seq_id);
        assert!(!within(&copied.value, &request));
        let big = cell(b"row-2", Bytes::from(vec![1u8; MAX_ALLOC_BYTES + 1]));
        let copied_big = slab.copy(big.clone());
        assert_eq!(copied_big, big);
        assert_ne!(copied_big.value.as_ptr(), big.value.as_ptr());
    }

    #[test]
    fn cells_fill_a_chunk_in_order_and_a_full_chunk_is_left_as_it_is() {
        let slab = Mslab::default();
        let value = Bytes::from(vec![5u8; 1000]);
        let cells: Vec<Cell> = (0..5000)
            .map(|i| slab.copy(cell(format!("row-{i:05}").as_bytes(), value.clone())))
            .collect();
        // 5000 cells of ~1 KiB fill two chunks and start a third; each cell's parts lie
        // one after another in its chunk, and no two cells overlap.
        for c in &cells {
            assert_eq!(
                c.family.as_ptr() as usize,
                c.row.as_ptr() as usize + c.row.len()
            );
            assert_eq!(c.value.as_ptr() as usize, c.qualifier.as_ptr() as usize + 1);
        }
        let mut starts: Vec<usize> = cells.iter().map(|c| c.row.as_ptr() as usize).collect();
        starts.sort_unstable();
        let len = cells[0].row.len() + 2 + 1000;
        let chunks = 1 + starts.windows(2).filter(|w| w[1] - w[0] != len).count();
        assert!(starts.windows(2).all(|w| w[1] - w[0] >= len));
        assert_eq!(chunks, 5000 * len / CHUNK_BYTES + 1, "chunks used");
        for (i, c) in cells.iter().enumerate() {
            assert_eq!(c.row, Bytes::from(format!("row-{i:05}")));
            assert_eq!(c.value, value);
        }
    }
}
