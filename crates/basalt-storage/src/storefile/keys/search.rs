//! Binary searches over entries that lie in memory the CPU's caches may not hold.

/// The byte at `at` of `buf` (0 past its end), read for its cache line to be fetched.
#[inline]
pub(super) fn fetch_line(buf: &[u8], at: usize) -> u64 {
    buf.get(at).copied().map_or(0, u64::from)
}

/// The first `i` in `0..n` for which `pred` is false (`pred` true then false, as in
/// `slice::partition_point`).
pub(in crate::storefile) fn partition(n: usize, pred: impl Fn(usize) -> bool) -> usize {
    partition_fetching(n, (usize::MAX, |_| 0), pred)
}

/// [`partition`], reading with `fetch`, before each step waits on `pred`, the two places
/// the next step may look at (one on either side), so that their cache lines are on their
/// way while this step's comparison waits for its own: a prefetch made of loads, which
/// safe Rust allows. What they read is folded into one value that no step waits on. A
/// search of a cached block or index that is not in the CPU's caches otherwise waits on one
/// cache miss at a time, about a dozen a search (`DataBlock::locate_into` was an eighth of a
/// random read at 10M rows, BENCHMARKS.md). Once the range is `apart` places or fewer,
/// what the next step reads lies on lines this one has: places `apart` apart share one.
pub(super) fn partition_fetching(
    n: usize,
    (apart, fetch): (usize, impl Fn(usize) -> u64),
    pred: impl Fn(usize) -> bool,
) -> usize {
    let (mut lo, mut hi) = (0, n);
    let mut fetched = 0;
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        // Within `apart` places, the next step's lie on lines this step reads.
        if hi - lo > apart {
            if mid > lo {
                fetched ^= fetch(lo + (mid - lo) / 2);
            }
            if mid + 1 < hi {
                fetched ^= fetch(mid + 1 + (hi - mid - 1) / 2);
            }
        }
        if pred(mid) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    std::hint::black_box(fetched);
    lo
}
