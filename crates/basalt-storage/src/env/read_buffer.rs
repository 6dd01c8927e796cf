//! The buffers that block reads fill, pooled (HBase's `ByteBuffAllocator`, which pools the
//! buffers its block reads land in).
//!
//! A block that missed the block cache is read into a buffer that an evicted block gave
//! back, not into fresh memory. At 10M rows two in three random Gets miss the cache, and each
//! miss allocated about 64 KiB and, at the eviction it caused, freed as much: the allocator
//! took a large object from its page lists and gave one back each time, about a twentieth of
//! a Get (`BENCHMARKS.md`). The pool is a lock, a pop and a push.
//!
//! A buffer stays filled: its bytes past what the last read needed are initialized (with
//! what an earlier read left, or zeros), so a read into it needs no clearing first, and a
//! fresh buffer gets some room beyond its first read, so that the next block a few bytes
//! longer (blocks of one BLOCKSIZE differ by about one cell) still fits in it. That room,
//! a thirty-second of the read, is memory a cached block holds beyond the weight the block
//! cache charges it (the allocator's own size classes round a 64 KiB object up by more).

use std::fs::File;
use std::ops::{Deref, Range};
use std::os::unix::fs::FileExt;

use bytes::Bytes;
use parking_lot::Mutex;

/// Buffers the pool keeps: enough for the blocks a burst of reads evicts, 4 MiB of 64 KiB
/// blocks at most.
const POOLED: usize = 64;

/// Reads shorter than this (trailers, file info, small sections) use a buffer of their
/// own: a section a reader keeps for the file's life must not hold a block-sized buffer.
const MIN_POOLED_LEN: usize = 16 << 10;

/// Buffers larger than this (a block holding a huge cell) are freed, not pooled.
const MAX_POOLED_LEN: usize = 1 << 20;

/// The pool of the process's block reads. One pool, as one allocator: every store file of
/// every region reads through it.
pub(super) static BLOCK_READS: BufferPool = BufferPool::new(POOLED);

/// Buffers given back, ready for reads.
///
/// Lock order: the pool's lock is taken last and nothing is taken under it. A block cache
/// shard that evicts a block holds its own lock when the block's buffer comes back here.
pub struct BufferPool {
    free: Mutex<Vec<Vec<u8>>>,
    limit: usize,
}

/// The counts, not the buffers.
impl std::fmt::Debug for BufferPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BufferPool")
            .field("pooled", &self.free.lock().len())
            .field("limit", &self.limit)
            .finish()
    }
}

impl BufferPool {
    /// A pool that keeps at most `limit` buffers.
    #[must_use]
    pub const fn new(limit: usize) -> BufferPool {
        BufferPool {
            free: parking_lot::const_mutex(Vec::new()),
            limit,
        }
    }

    /// Reads exactly `len` bytes at `offset` of `file`, into a pooled buffer when `len`
    /// is a block's size.
    ///
    /// # Errors
    /// The read's; `UnexpectedEof` when the file ends first.
    pub fn read_exact_at(
        &'static self,
        file: &File,
        offset: u64,
        len: usize,
    ) -> std::io::Result<ReadBuffer> {
        if !(MIN_POOLED_LEN..=MAX_POOLED_LEN).contains(&len) {
            let mut buf = read_fresh(file, offset, len, len)?;
            buf.truncate(len);
            return Ok(ReadBuffer::from(buf));
        }
        let reused = self.free.lock().pop();
        let buf = match reused {
            Some(mut buf) if buf.len() >= len => {
                file.read_exact_at(&mut buf[..len], offset)?;
                buf
            }
            // Too short for this read: freed (outside the lock), and a fresh one made.
            _ => read_fresh(file, offset, len, len + len / 32)?,
        };
        Ok(ReadBuffer {
            buf,
            len,
            pool: Some(self),
        })
    }

    /// Takes `buf` back, unless the pool is full or the buffer is not of a block's size.
    fn give_back(&self, buf: Vec<u8>) {
        if !(MIN_POOLED_LEN..=MAX_POOLED_LEN).contains(&buf.len()) {
            return;
        }
        let mut free = self.free.lock();
        if free.len() < self.limit {
            free.push(buf);
            return;
        }
        drop(free);
        // `buf` is freed here, after the lock is let go.
    }

    /// The lengths of the buffers waiting in the pool, the next one to be taken last.
    #[cfg(test)]
    fn pooled(&self) -> Vec<usize> {
        self.free.lock().iter().map(Vec::len).collect()
    }
}

/// Reads exactly `len` bytes at `offset` into a fresh buffer of `room` bytes (at least
/// `len`), not zeroed first: a block read that missed the cache spent an eighth of its time
/// clearing the 64 KiB it was about to overwrite. The kernel writes into the vector's spare
/// capacity and the vector grows by exactly what it wrote; a read may fill the room past
/// `len` with the bytes that follow in the file, and what it leaves is zeroed, so that the
/// whole buffer is initialized for the reads that reuse it.
fn read_fresh(file: &File, offset: u64, len: usize, room: usize) -> std::io::Result<Vec<u8>> {
    let mut buf = Vec::with_capacity(room);
    while buf.len() < len {
        let at = offset + buf.len() as u64;
        if rustix::io::pread(file, rustix::buffer::spare_capacity(&mut buf), at)? == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
    }
    buf.resize(room.max(buf.len()), 0);
    Ok(buf)
}

/// Bytes a read returned: the first `len` bytes of its buffer, which goes back to its pool
/// when the last handle on it is dropped.
pub struct ReadBuffer {
    /// Initialized throughout; its first `len` bytes are the read's.
    buf: Vec<u8>,
    len: usize,
    pool: Option<&'static BufferPool>,
}

impl ReadBuffer {
    /// The bytes in `range` (of the read's), as a handle that shares this buffer: it goes
    /// back to its pool when the last handle is dropped.
    ///
    /// # Panics
    /// When `range` is not within the read's bytes.
    #[must_use]
    pub fn into_bytes(self, range: Range<usize>) -> Bytes {
        assert!(range.end <= self.len, "{range:?} past {} bytes", self.len);
        Bytes::from_owner(self).slice(range)
    }
}

/// The lengths, not the bytes (a block's 64 KiB would flood a log).
impl std::fmt::Debug for ReadBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadBuffer")
            .field("len", &self.len)
            .field("room", &self.buf.len())
            .field("pooled", &self.pool.is_some())
            .finish()
    }
}

impl From<Vec<u8>> for ReadBuffer {
    /// Bytes of no pool (a read from shared storage, or a test's), freed when dropped.
    fn from(buf: Vec<u8>) -> ReadBuffer {
        ReadBuffer {
            len: buf.len(),
            buf,
            pool: None,
        }
    }
}

impl Deref for ReadBuffer {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

impl AsRef<[u8]> for ReadBuffer {
    fn as_ref(&self) -> &[u8] {
        self
    }
}

impl Drop for ReadBuffer {
    fn drop(&mut self) {
        if let Some(pool) = self.pool {
            pool.give_back(std::mem::take(&mut self.buf));
        }
    }
}

#[cfg(test)]
mod tests;
