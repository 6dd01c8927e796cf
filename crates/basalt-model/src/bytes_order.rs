//! Keys compared as unsigned bytes, eight at a time (HBase's `Bytes.compareTo`, whose
//! comparer reads longs the same way).
//!
//! A merge compares rows, families and qualifiers several times for every cell it reads, and
//! they are short: a row is most often a few dozen bytes, a family a few, a qualifier a few
//! more. The slices' own `cmp` and `==` call the C library's `memcmp` for each, whose call
//! and dispatch on the length cost more than the compare of two short keys. These compare
//! them inline, and hand long ones to `memcmp`, which is faster there.
//!
//! A short key's copy has the same trouble: `copy_from_slice` of a length known only at run
//! time is a call to `memcpy`. [`copy`] copies keys of up to 32 bytes in two fixed-size
//! moves.
//!
//! # Invariants
//! 1. [`compare`] orders as `<[u8] as Ord>::cmp` and [`equal`] answers as `==`, for any two
//!    slices, and [`copy`] leaves its target equal to its source (property tests hold them
//!    so).

use std::cmp::Ordering;

/// Keys longer than this go to `memcmp`, whose vector loop is made for long keys. The limit
/// is a choice, not a measured crossing: the keys measured (rows of 16 to 23 bytes, families
/// and qualifiers of a few) are all well under it.
const INLINE_MAX: usize = 64;

/// `a`'s order against `b` as unsigned bytes, a shorter key first when one is the start of
/// the other (invariant 1). It does not look for two handles on the same bytes, as
/// [`equal`] does: rows, compared most, are never that ([`crate::cell::compare_families`]).
#[inline]
#[must_use]
pub fn compare(a: &[u8], b: &[u8]) -> Ordering {
    if a.len() > INLINE_MAX || b.len() > INLINE_MAX {
        return a.cmp(b);
    }
    let n = a.len().min(b.len());
    let (x, y) = (&a[..n], &b[..n]);
    let mut i = 0;
    while i + 8 <= n {
        let (u, v) = (word(&x[i..i + 8]), word(&y[i..i + 8]));
        if u != v {
            return u.cmp(&v);
        }
        i += 8;
    }
    if i < n {
        // The bytes left, fewer than eight, in one compare: the last eight of a longer key
        // (those before the tail were found equal, so the tail decides), or a short key's
        // bytes read at once.
        let (u, v) = if n >= 8 {
            (word(&x[n - 8..]), word(&y[n - 8..]))
        } else {
            (short(x), short(y))
        };
        if u != v {
            return u.cmp(&v);
        }
    }
    a.len().cmp(&b.len())
}

/// Whether `a` and `b` hold the same bytes (invariant 1). Two handles on the same bytes (the
/// family every cell of a store shares) are equal without a look at them.
#[inline]
#[must_use]
pub fn equal(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    std::ptr::eq(a, b) || compare(a, b).is_eq()
}

/// Copies `src` into `dst`, which must be as long (a panic otherwise, as
/// `copy_from_slice`'s). Up to 32 bytes, two moves of a fixed size, overlapping when the
/// length is not a power of two; longer keys go to `copy_from_slice`.
#[inline]
pub fn copy(dst: &mut [u8], src: &[u8]) {
    assert_eq!(
        dst.len(),
        src.len(),
        "a key copied into a slice of another length"
    );
    match src.len() {
        16..=32 => head_and_tail::<16>(dst, src),
        8..=15 => head_and_tail::<8>(dst, src),
        4..=7 => head_and_tail::<4>(dst, src),
        2..=3 => head_and_tail::<2>(dst, src),
        // A loop of bytes compiles to a call to `memcpy` too.
        1 => dst[0] = src[0],
        0 => {}
        _ => dst.copy_from_slice(src),
    }
}

/// The first and the last `W` bytes of `src` (of `W` to `2 * W` bytes) into `dst`: two moves
/// of a size known when compiled, which together cover every byte.
#[inline]
fn head_and_tail<const W: usize>(dst: &mut [u8], src: &[u8]) {
    let n = src.len();
    dst[..W].copy_from_slice(&src[..W]);
    dst[n - W..n].copy_from_slice(&src[n - W..n]);
}

/// Eight bytes as a big-endian number: numbers order as the bytes do.
#[inline]
fn word(bytes: &[u8]) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(bytes);
    u64::from_be_bytes(w)
}

/// Fewer than eight bytes as a number that orders as they do among slices of their length:
/// two reads, the first the higher half, which overlap when the length is not a power of
/// two (the overlapping bytes are in both halves, so the first byte that differs decides).
#[inline]
fn short(bytes: &[u8]) -> u64 {
    let n = bytes.len();
    if n >= 4 {
        let (mut hi, mut lo) = ([0u8; 4], [0u8; 4]);
        hi.copy_from_slice(&bytes[..4]);
        lo.copy_from_slice(&bytes[n - 4..]);
        (u64::from(u32::from_be_bytes(hi)) << 32) | u64::from(u32::from_be_bytes(lo))
    } else if n >= 2 {
        let (hi, lo) = ([bytes[0], bytes[1]], [bytes[n - 2], bytes[n - 1]]);
        (u64::from(u16::from_be_bytes(hi)) << 16) | u64::from(u16::from_be_bytes(lo))
    } else {
        bytes.first().map_or(0, |&b| u64::from(b))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Two keys that share a prefix and differ after it, in any length up to past the inline
    /// limit: the cases where a compare of words could go wrong (a byte's sign, a word's
    /// order, the tail, a key that is the start of the other).
    fn pair() -> impl Strategy<Value = (Vec<u8>, Vec<u8>)> {
        (
            proptest::collection::vec(any::<u8>(), 0..80),
            proptest::collection::vec(any::<u8>(), 0..12),
            proptest::collection::vec(any::<u8>(), 0..12),
        )
            .prop_map(|(prefix, a, b)| {
                let mut x = prefix.clone();
                x.extend(a);
                let mut y = prefix;
                y.extend(b);
                (x, y)
            })
    }

    proptest! {
        /// Keys of one length up to 19: every length under eight (a short key read at once)
        /// and every tail after one or two whole words (the last eight bytes read at once),
        /// bytes drawn from a few values so that most pairs share a prefix.
        #[test]
        fn short_keys_compare_as_the_slices_do(
            (a, b) in (0usize..20).prop_flat_map(|n| {
                let byte = prop_oneof![Just(0u8), Just(1u8), Just(0x7f), Just(0x80), Just(0xff)];
                (proptest::collection::vec(byte.clone(), n), proptest::collection::vec(byte, n))
            })
        ) {
            prop_assert_eq!(compare(&a, &b), a.cmp(&b));
            prop_assert_eq!(equal(&a, &b), a == b);
        }

        #[test]
        fn compare_and_equal_answer_as_the_slices_do((a, b) in pair()) {
            prop_assert_eq!(compare(&a, &b), a.cmp(&b));
            prop_assert_eq!(compare(&b, &a), b.cmp(&a));
            prop_assert_eq!(equal(&a, &b), a == b);
            prop_assert_eq!(compare(&a, &a), Ordering::Equal);
            prop_assert!(equal(&a, &a.clone()));
        }

        /// Every length up to past the inline copies: each of the moves' cases and its
        /// edges, into a target that held other bytes.
        #[test]
        fn copy_leaves_the_target_equal_to_the_source(
            src in proptest::collection::vec(any::<u8>(), 0..48),
            old in any::<u8>(),
        ) {
            let mut dst = vec![old; src.len()];
            copy(&mut dst, &src);
            prop_assert_eq!(dst, src);
        }
    }

    #[test]
    fn bytes_order_unsigned_and_a_prefix_first() {
        assert_eq!(compare(&[0x80], &[0x7f]), Ordering::Greater);
        assert_eq!(compare(&[1; 8], &[1; 9]), Ordering::Less);
        assert_eq!(compare(&[0xff; 16], &[0xff; 16]), Ordering::Equal);
        let long = vec![7u8; INLINE_MAX + 1];
        let mut longer = long.clone();
        longer.push(0);
        assert_eq!(compare(&long, &longer), Ordering::Less);
        assert!(!equal(&long, &longer[..INLINE_MAX]));
        assert!(equal(&long, &longer[..=INLINE_MAX]));
    }
}
