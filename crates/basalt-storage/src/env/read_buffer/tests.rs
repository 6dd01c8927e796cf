use std::fs::File;

use super::{BufferPool, ReadBuffer, MAX_POOLED_LEN, MIN_POOLED_LEN};

/// A file of `len` bytes, each its offset's own pattern, so that bytes read from one place
/// never equal bytes read from another.
fn file_of(len: usize) -> (tempfile::TempDir, File, Vec<u8>) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("f");
    let bytes: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
    std::fs::write(&path, &bytes).expect("written");
    let file = File::open(&path).expect("opened");
    (dir, file, bytes)
}

const BLOCK: usize = 64 << 10;

#[test]
fn a_buffer_given_back_is_read_into_again_and_shows_only_the_new_read() {
    static POOL: BufferPool = BufferPool::new(4);
    let (_dir, file, bytes) = file_of(4 * BLOCK);
    let first = POOL.read_exact_at(&file, 0, BLOCK).expect("read");
    assert_eq!(*first, bytes[..BLOCK]);
    let at = first.as_ptr();
    drop(first);
    // A fresh buffer has room beyond its first read, initialized.
    assert_eq!(POOL.pooled(), [BLOCK + BLOCK / 32]);

    // Shorter, then as long as the room: the same buffer, and only the new read's bytes.
    for (offset, len) in [(7, BLOCK - 100), (BLOCK + 3, BLOCK + BLOCK / 32)] {
        let again = POOL.read_exact_at(&file, offset as u64, len).expect("read");
        assert_eq!(
            again.as_ptr(),
            at,
            "{len} bytes at {offset}: the pooled buffer"
        );
        assert_eq!(again.len(), len);
        assert_eq!(
            *again,
            bytes[offset..offset + len],
            "{len} bytes at {offset}"
        );
        assert!(POOL.pooled().is_empty());
    }
}

#[test]
fn a_read_longer_than_the_pooled_buffer_takes_a_fresh_one_with_room() {
    static POOL: BufferPool = BufferPool::new(4);
    let (_dir, file, bytes) = file_of(4 * BLOCK);
    drop(POOL.read_exact_at(&file, 0, BLOCK).expect("read"));
    let longer = 2 * BLOCK;
    let read = POOL.read_exact_at(&file, 5, longer).expect("read");
    assert_eq!(*read, bytes[5..5 + longer]);
    // The shorter buffer was freed, not kept.
    assert!(POOL.pooled().is_empty());
    drop(read);
    assert_eq!(POOL.pooled(), [longer + longer / 32]);
}

#[test]
fn a_fresh_buffer_near_the_files_end_has_its_room_zeroed() {
    static POOL: BufferPool = BufferPool::new(4);
    // The room past the read runs past the file's end: what the file does not fill is zeros.
    let (_dir, file, bytes) = file_of(BLOCK + 10);
    let read = POOL.read_exact_at(&file, 0, BLOCK).expect("read");
    assert_eq!(*read, bytes[..BLOCK]);
    let all = read.buf.clone();
    drop(read);
    assert_eq!(all.len(), BLOCK + BLOCK / 32);
    assert_eq!(all[..BLOCK + 10], bytes[..]);
    assert!(all[BLOCK + 10..].iter().all(|&b| b == 0));
}

#[test]
fn the_buffer_goes_back_when_the_last_handle_on_its_bytes_is_dropped() {
    static POOL: BufferPool = BufferPool::new(4);
    let (_dir, file, bytes) = file_of(2 * BLOCK);
    let read = POOL.read_exact_at(&file, 0, BLOCK).expect("read");
    let body = read.into_bytes(10..BLOCK - 5);
    let cell = body.slice(100..200);
    assert_eq!(body, bytes[10..BLOCK - 5]);
    drop(body);
    assert!(POOL.pooled().is_empty(), "a handle still shows its bytes");
    assert_eq!(cell, bytes[110..210]);
    drop(cell);
    assert_eq!(POOL.pooled().len(), 1);
}

#[test]
fn the_pool_keeps_at_most_its_limit() {
    static POOL: BufferPool = BufferPool::new(2);
    let (_dir, file, _) = file_of(4 * BLOCK);
    let reads: Vec<ReadBuffer> = (0..3)
        .map(|i| {
            POOL.read_exact_at(&file, i * BLOCK as u64, BLOCK)
                .expect("read")
        })
        .collect();
    drop(reads);
    assert_eq!(POOL.pooled().len(), 2);
}

#[test]
fn reads_not_of_a_blocks_size_are_not_pooled() {
    static POOL: BufferPool = BufferPool::new(4);
    let (_dir, file, bytes) = file_of(MAX_POOLED_LEN + 10);
    for len in [0, 40, MIN_POOLED_LEN - 1, MAX_POOLED_LEN + 1] {
        let read = POOL.read_exact_at(&file, 3, len).expect("read");
        assert_eq!(*read, bytes[3..3 + len], "{len} bytes");
        drop(read);
        assert!(POOL.pooled().is_empty(), "{len} bytes");
    }
    drop(POOL.read_exact_at(&file, 0, MIN_POOLED_LEN).expect("read"));
    assert_eq!(POOL.pooled().len(), 1);
}

#[test]
fn a_read_past_the_end_fails_and_pools_nothing() {
    static POOL: BufferPool = BufferPool::new(4);
    let (_dir, file, _) = file_of(2 * BLOCK);
    for _ in 0..2 {
        // Fresh, then (after a good read gave one back) into a pooled buffer.
        let e = POOL
            .read_exact_at(&file, BLOCK as u64 + 1, BLOCK)
            .expect_err("past the end");
        assert_eq!(e.kind(), std::io::ErrorKind::UnexpectedEof);
        assert!(POOL.pooled().is_empty());
        drop(POOL.read_exact_at(&file, 0, BLOCK).expect("read"));
        assert_eq!(POOL.pooled().len(), 1);
        let e = POOL
            .read_exact_at(&file, BLOCK as u64 + 1, BLOCK)
            .expect_err("past the end");
        assert_eq!(e.kind(), std::io::ErrorKind::UnexpectedEof);
        assert!(POOL.pooled().is_empty(), "a failed read's buffer is freed");
    }
}

#[test]
fn bytes_of_no_pool_are_what_they_were_made_of() {
    let read = ReadBuffer::from(vec![1, 2, 3, 4]);
    assert_eq!(*read, [1, 2, 3, 4]);
    assert_eq!(read.into_bytes(1..3), [2, 3][..]);
}

#[test]
fn debug_output_shows_lengths_not_bytes() {
    static POOL: BufferPool = BufferPool::new(4);
    let (_dir, file, _) = file_of(2 * BLOCK);
    let read = POOL.read_exact_at(&file, 0, BLOCK).expect("read");
    assert_eq!(
        format!("{read:?}"),
        format!(
            "ReadBuffer {{ len: {BLOCK}, room: {}, pooled: true }}",
            BLOCK + BLOCK / 32
        )
    );
    drop(read);
    assert_eq!(format!("{POOL:?}"), "BufferPool { pooled: 1, limit: 4 }");
}
