//! The check that a single-row call reached the region it names (HBase's
//! `NotServingRegionException` when it did not), without an MD5 and a handful of allocations
//! per call: every get and mutation names its region, and the check was 3% of a point read's
//! server time.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use basalt_model::region::RegionInfo;
use basalt_model::{Error, Result, TableName};
use bytes::Bytes;

use super::Services;

/// Regions remembered at most; past that the memo starts again (regions come and go with
/// splits, merges and dropped tables, and a few thousand cover any one server's).
const REMEMBERED: usize = 4096;

/// What the name of a region depends on besides its id, and the name.
type Named = (TableName, Bytes, Arc<str>);

/// Encoded names of the regions calls named lately, by region id.
///
/// # Invariant
/// An entry `id -> (table, start key, name)` holds `name == RegionInfo { id, start_key, .. }
/// .encoded_name(table)`: the name depends on nothing else, so an entry whose table and start
/// key match the region's answers for it.
#[derive(Debug, Default)]
pub struct EncodedNames(Mutex<HashMap<u64, Named, foldhash::fast::RandomState>>);

impl EncodedNames {
    /// `region`'s encoded name in `table` ([`RegionInfo::encoded_name`]).
    pub fn of(&self, table: &TableName, region: &RegionInfo) -> Arc<str> {
        let mut memo = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((t, start, name)) = memo.get(&region.id) {
            if t == table && *start == region.start_key {
                return Arc::clone(name);
            }
        }
        if memo.len() >= REMEMBERED {
            memo.clear();
        }
        let name: Arc<str> = region.encoded_name(table).into();
        memo.insert(
            region.id,
            (table.clone(), region.start_key.clone(), Arc::clone(&name)),
        );
        name
    }
}

/// Refuses a request aimed at a region that no longer holds its row (HBase's
/// `NotServingRegionException`): the client then looks its regions up again.
pub(super) fn check_region(
    s: &Services,
    table: &TableName,
    row: &[u8],
    region: Option<&str>,
) -> Result<()> {
    let Some(expected) = region else {
        return Ok(());
    };
    let info = s.conn.region_holding(table, row)?;
    if *s.region_names.of(table, &info) == *expected {
        return Ok(());
    }
    Err(Error::NotServingRegion(format!(
        "Region {expected} of table {table}"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn region(id: u64, start: &'static [u8]) -> RegionInfo {
        RegionInfo {
            id,
            start_key: Bytes::from_static(start),
            end_key: Bytes::new(),
        }
    }

    /// The memo answers what `encoded_name` answers: for new regions, for regions it
    /// remembers, for a region id seen before with another start key or table, and after it
    /// filled up and started again.
    #[test]
    fn the_memo_answers_what_encoded_name_answers() {
        let names = EncodedNames::default();
        let (a, b) = (
            TableName::parse("a").unwrap(),
            TableName::parse("ns:b").unwrap(),
        );
        let cases = [
            (&a, region(1, b"")),
            (&a, region(2, b"m")),
            (&a, region(1, b"")),
            (&a, region(1, b"k")),
            (&b, region(1, b"k")),
            (&b, region(2, b"m")),
        ];
        for (table, r) in &cases {
            assert_eq!(&*names.of(table, r), r.encoded_name(table), "{table} {r:?}");
        }
        for id in 0..(REMEMBERED as u64 + 10) {
            let r = region(id, b"z");
            assert_eq!(&*names.of(&a, &r), r.encoded_name(&a));
        }
        let len = names.0.lock().unwrap().len();
        assert!(len <= REMEMBERED, "{len} remembered");
        for (table, r) in &cases {
            assert_eq!(&*names.of(table, r), r.encoded_name(table), "{table} {r:?}");
        }
    }
}
