//! Time ranges `[min, max)` (SEMANTICS.md §F).

use std::cmp::Ordering;

use serde::{Deserialize, Serialize};

use crate::cell::Timestamp;
use crate::error::{Error, Result};

/// A half-open range of timestamps: `min` inclusive, `max` exclusive.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimeRange {
    min: Timestamp,
    max: Timestamp,
}

impl Default for TimeRange {
    fn default() -> Self {
        TimeRange::all()
    }
}

impl TimeRange {
    /// Every timestamp.
    #[must_use]
    pub const fn all() -> TimeRange {
        TimeRange {
            min: 0,
            max: i64::MAX,
        }
    }

    /// `[min, max)`.
    ///
    /// # Errors
    /// `IllegalArgument` for a negative bound or `max < min`, as HBase's TimeRange does.
    pub fn new(min: Timestamp, max: Timestamp) -> Result<TimeRange> {
        if min < 0 || max < 0 {
            return Err(Error::illegal(format!(
                "Timestamp cannot be negative. minStamp:{min}, maxStamp:{max}"
            )));
        }
        if max < min {
            return Err(Error::illegal("maxStamp is smaller than minStamp"));
        }
        Ok(TimeRange { min, max })
    }

    /// Exactly one timestamp: `[ts, ts+1)`.
    ///
    /// # Errors
    /// `IllegalArgument` for a negative timestamp.
    pub fn at(ts: Timestamp) -> Result<TimeRange> {
        TimeRange::new(ts, ts.saturating_add(1))
    }

    /// Inclusive lower bound.
    #[must_use]
    pub fn min(&self) -> Timestamp {
        self.min
    }

    /// Exclusive upper bound.
    #[must_use]
    pub fn max(&self) -> Timestamp {
        self.max
    }

    /// Whether the range covers every timestamp.
    #[must_use]
    pub fn is_all(&self) -> bool {
        self.min == 0 && self.max == i64::MAX
    }

    /// Whether `ts` is inside the range.
    #[must_use]
    pub fn contains(&self, ts: Timestamp) -> bool {
        ts >= self.min && ts < self.max
    }

    /// `Less` when `ts` is older than the range, `Greater` when it is at or past `max`.
    #[must_use]
    pub fn compare(&self, ts: Timestamp) -> Ordering {
        if ts < self.min {
            Ordering::Less
        } else if ts >= self.max {
            Ordering::Greater
        } else {
            Ordering::Equal
        }
    }

    /// Whether `ts` is inside the range or newer than it (a delete marker there still matters).
    #[must_use]
    pub fn within_or_after(&self, ts: Timestamp) -> bool {
        ts >= self.min
    }

    /// Whether the ranges share a timestamp; `other_max` inclusive (file metadata style).
    #[must_use]
    pub fn overlaps_inclusive(&self, other_min: Timestamp, other_max: Timestamp) -> bool {
        other_min < self.max && other_max >= self.min
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_open() {
        let tr = TimeRange::new(10, 20).unwrap();
        assert!(!tr.contains(9));
        assert!(tr.contains(10));
        assert!(tr.contains(19));
        assert!(!tr.contains(20));
        assert_eq!(tr.compare(20), Ordering::Greater);
        assert_eq!(tr.compare(9), Ordering::Less);
        assert!(TimeRange::at(5).unwrap().contains(5));
        assert!(!TimeRange::at(5).unwrap().contains(6));
    }

    #[test]
    fn rejects_negative_and_inverted() {
        assert!(TimeRange::new(-1, 5).is_err());
        assert!(TimeRange::new(5, 4).is_err());
        assert!(TimeRange::new(5, 5).is_ok());
    }
}
