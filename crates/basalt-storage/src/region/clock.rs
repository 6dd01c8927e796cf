//! The server time a row's writes get.
//!
//! An Increment or Append stores its new version at `max(now, old + 1)`, so when they come
//! faster than one per millisecond a counter's newest version runs ahead of the clock. A Put or
//! Delete without a timestamp that followed in the same millisecond would then land below that
//! version: acknowledged, yet hidden. Likewise a Put at server time right after a Delete at
//! server time, in the same millisecond, lands on the markers' timestamp, which masks it.
//! (HBase has both hazards; its RPC latency hides them.) So each row remembers how far its
//! read-modify-writes ran ahead, and the millisecond after its last server-timed delete, and
//! later server-timestamped writes of the row get at least that time. A floor is kept only up
//! to [`MAX_AHEAD_MS`] ahead of the clock: a counter a client placed in the future on purpose,
//! or one incremented more than a thousand times a second for long, does not drag the row's
//! other writes along.
//!
//! The floors live in memory, and a region may open elsewhere (moved, split, merged, or
//! recovered after its server died) within the millisecond, or the second, its rows ran
//! ahead: a Put lifted above a Delete of the same millisecond, then a Delete through the
//! region's next server in that millisecond, would land below the Put and lose. So a region
//! that opens takes a floor for all its rows from its store files (the newest time they
//! hold, and the millisecond after it when they hold delete markers), and one that replays a
//! log sets its rows' floors again from the replayed cells. The same floor covers a next
//! server whose clock is behind the last one's by less than [`MAX_AHEAD_MS`].

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};

use bytes::Bytes;
use parking_lot::Mutex;

/// How far ahead of the clock a row's floor may be.
pub const MAX_AHEAD_MS: i64 = 1000;

/// Floors of the rows of one region. Callers hold the row's lock.
#[derive(Debug, Default)]
pub(crate) struct RowClock {
    floors: Mutex<HashMap<Bytes, i64>>,
    /// The floor of every row: the times a region's files hold when it opens.
    all: AtomicI64,
    /// The largest floor; while the clock is past it, no row has one (the common case costs
    /// one atomic load).
    max: AtomicI64,
}

impl RowClock {
    /// The time a write of `row` gets when the clock says `now`.
    pub(crate) fn now(&self, row: &[u8], now: i64) -> i64 {
        if self.max.load(Ordering::Acquire) <= now {
            return now;
        }
        let all = now.max(self.all.load(Ordering::Acquire));
        let floors = self.floors.lock();
        floors.get(row).map_or(all, |f| all.max(*f))
    }

    /// Notes that a write put `row`'s time at `ts` when the clock said `clock`: kept as the
    /// row's floor when it is ahead of the clock, by at most [`MAX_AHEAD_MS`].
    pub(crate) fn ran_ahead(&self, row: &[u8], ts: i64, clock: i64) {
        if !within_reach(ts, clock) {
            return;
        }
        let mut floors = self.floors.lock();
        if floors.len() > 4096 {
            floors.retain(|_, f| *f > clock);
        }
        match floors.get_mut(row) {
            Some(f) => *f = (*f).max(ts),
            None => {
                floors.insert(Bytes::copy_from_slice(row), ts);
            }
        }
        self.max.fetch_max(ts, Ordering::AcqRel);
    }

    /// Notes that every row's time is at `ts` when the clock says `clock` (what an opening
    /// region's files hold): kept as all rows' floor on the terms of [`RowClock::ran_ahead`].
    pub(crate) fn all_ran_ahead(&self, ts: i64, clock: i64) {
        if !within_reach(ts, clock) {
            return;
        }
        self.all.fetch_max(ts, Ordering::AcqRel);
        self.max.fetch_max(ts, Ordering::AcqRel);
    }
}

/// Whether a time `ts` is a floor when the clock says `clock`: ahead of it, by at most
/// [`MAX_AHEAD_MS`].
fn within_reach(ts: i64, clock: i64) -> bool {
    ts > clock && ts - clock <= MAX_AHEAD_MS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_ahead_of_the_clock_gets_its_floor_until_the_clock_passes_it() {
        let c = RowClock::default();
        let r = Bytes::from_static(b"r");
        assert_eq!(c.now(b"r", 100), 100);
        c.ran_ahead(&r, 102, 100);
        assert_eq!(c.now(b"r", 100), 102);
        assert_eq!(c.now(b"other", 100), 100);
        assert_eq!(c.now(b"r", 105), 105);
        // Far in the future on purpose: not a floor.
        c.ran_ahead(&r, 100 + MAX_AHEAD_MS + 1, 100);
        assert_eq!(c.now(b"r", 103), 103);
    }

    #[test]
    fn a_floor_of_all_rows_lifts_every_row_and_a_row_ahead_of_it_keeps_its_own() {
        let c = RowClock::default();
        let r = Bytes::from_static(b"r");
        c.all_ran_ahead(101, 100);
        c.ran_ahead(&r, 103, 100);
        assert_eq!(c.now(b"other", 100), 101);
        assert_eq!(c.now(b"r", 100), 103);
        assert_eq!(c.now(b"other", 102), 102);
        // Far in the future (a client's timestamp): not a floor.
        let far = RowClock::default();
        far.all_ran_ahead(100 + MAX_AHEAD_MS + 1, 100);
        assert_eq!(far.now(b"other", 100), 100);
    }
}
