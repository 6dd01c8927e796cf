//! Family names kept for the life of the process, so that a cell's family costs no atomic
//! count.
//!
//! Every cell a store file yields carries its family. As a shared handle, the family cost an
//! atomic increment when the cell was built and a decrement when it was dropped; with the
//! row, qualifier and value slices of the block, such counts took over a quarter of a
//! sequential scan's time (BENCHMARKS.md). A `Bytes` over a `&'static [u8]` is cloned and
//! dropped without one.
//!
//! # Invariants
//! 1. Each distinct name is kept once, however many stores, files and reopenings use it: what
//!    is kept is bounded by the distinct family names the process has opened files of.

use std::collections::BTreeSet;

use bytes::Bytes;
use parking_lot::Mutex;

static NAMES: Mutex<BTreeSet<&'static [u8]>> = parking_lot::const_mutex(BTreeSet::new());

/// `name` as a handle whose clones share no count.
pub(crate) fn interned(name: &[u8]) -> Bytes {
    let mut names = NAMES.lock();
    if let Some(&kept) = names.get(name) {
        return Bytes::from_static(kept);
    }
    let kept: &'static [u8] = Box::leak(name.to_vec().into_boxed_slice());
    names.insert(kept);
    Bytes::from_static(kept)
}

#[cfg(test)]
mod tests {
    use super::interned;

    #[test]
    fn a_name_is_kept_once_and_reads_back_unchanged() {
        let a = interned(b"interned-family-a");
        // The same name from another buffer.
        let owned = b"interned-family-a".to_vec();
        let again = interned(&owned);
        let b = interned(b"interned-family-b");
        assert_eq!(&a[..], b"interned-family-a");
        assert_eq!(&b[..], b"interned-family-b");
        // Invariant (1): the second call found the first copy.
        assert_eq!(a.as_ptr(), again.as_ptr());
        assert_ne!(a.as_ptr(), b.as_ptr());
        assert_eq!(&interned(b"")[..], b"");
    }
}
