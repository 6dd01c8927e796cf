//! A region server without a master: regions open, serve, close and open on another server,
//! and a server that died leaves a log the next one replays.

use std::path::Path;
use std::sync::Arc;

use basalt_model::ops::{Get, Mutation, Put};
use basalt_model::{ColumnFamilyDescriptor, TableDescriptor, TableName};
use basalt_storage::env::{Env, ManualClock};
use basalt_storage::region::{Region, RegionInfo};
use bytes::Bytes;

use super::{MasterQueue, MasterRequest, RegionServer, RegionServerServices};
use crate::options::Options;

const T0: i64 = 1_700_000_000_000;

/// A region server over `root` whose start code is the clock's time now.
fn start(
    root: &Path,
    clock: &Arc<ManualClock>,
) -> (RegionServer, std::sync::mpsc::Receiver<MasterRequest>) {
    let options = Options {
        env: Env::with_clock(Arc::clone(clock) as _),
        ..Options::default()
    };
    let (queue, inbox) = MasterQueue::new();
    (RegionServer::start(root, &options, queue).unwrap(), inbox)
}

/// A data directory holding one new, empty region (id 7) of table `t`, and a clock.
fn new_region() -> (tempfile::TempDir, Arc<ManualClock>, std::path::PathBuf) {
    let root = tempfile::tempdir().unwrap();
    let rdir = root.path().join("data/default/t/7");
    Region::create_empty(&Env::default(), &rdir, 7).unwrap();
    (root, Arc::new(ManualClock::new(T0)), rdir)
}

fn table() -> Arc<TableDescriptor> {
    let name = TableName::parse("t").unwrap();
    Arc::new(TableDescriptor::new(
        &name,
        [ColumnFamilyDescriptor::new("f")],
    ))
}

fn whole_table_region() -> RegionInfo {
    RegionInfo {
        id: 7,
        start_key: Bytes::new(),
        end_key: Bytes::new(),
    }
}

fn put(r: &Region, row: &str, v: &str) {
    let m = Mutation::Put(Put::new(row.to_owned()).add("f", "q", v));
    r.mutate(&m).unwrap();
}

fn value(r: &Region, row: &str) -> Option<Bytes> {
    let res = r.get_scan(&Get::new(row.to_owned()).into_scan()).unwrap();
    res.value(b"f", b"q").map(bytes::Bytes::copy_from_slice)
}

#[test]
fn a_region_closes_on_one_server_and_opens_on_another_with_its_data() {
    let (root, clock, rdir) = new_region();
    let (first, _inbox) = start(root.path(), &clock);
    first.recover(false).unwrap();
    let r = first
        .open_region(&rdir, &whole_table_region(), &table())
        .unwrap();
    put(&r, "a", "1");
    assert_eq!(first.region(7).map(|x| x.info().id), Some(7));
    first.close_region(&r).unwrap();
    assert!(first.region(7).is_none(), "a closed region is released");
    assert!(r.is_closed());

    clock.advance(1);
    let (second, _inbox2) = start(root.path(), &clock);
    assert_ne!(
        first.name(),
        second.name(),
        "each start has its own start code"
    );
    second.recover(false).unwrap();
    let moved = second
        .open_region(&rdir, &whole_table_region(), &table())
        .unwrap();
    assert_eq!(value(&moved, "a").as_deref(), Some(&b"1"[..]));
    // The new server numbers the region's next edits above everything it stored.
    put(&moved, "b", "2");
    assert!(moved.min_unflushed_seq_id() > r.max_stored_seq_id());
}

#[test]
fn a_region_moved_within_the_millisecond_its_row_ran_ahead_orders_later_writes_above() {
    use basalt_model::ops::Delete;
    let delete = |r: &Region, row: &str| {
        let m = Mutation::Delete(Delete::new(row.to_owned()).add_columns("f", "q"));
        r.mutate(&m).unwrap();
    };
    let (root, clock, rdir) = new_region();
    let (first, _inbox) = start(root.path(), &clock);
    first.recover(false).unwrap();
    clock.advance(1);
    let (second, _inbox2) = start(root.path(), &clock);
    second.recover(false).unwrap();
    let r = first
        .open_region(&rdir, &whole_table_region(), &table())
        .unwrap();
    // A Delete and then a Put in one millisecond: the Put lands a millisecond ahead of the
    // clock, above the Delete's marker.
    delete(&r, "a");
    put(&r, "a", "1");
    assert_eq!(value(&r, "a").as_deref(), Some(&b"1"[..]));
    first.close_region(&r).unwrap();

    // Moved in that same millisecond: a Delete through the next server masks the Put, and a
    // Put after it shows.
    let moved = second
        .open_region(&rdir, &whole_table_region(), &table())
        .unwrap();
    assert_eq!(value(&moved, "a").as_deref(), Some(&b"1"[..]));
    delete(&moved, "a");
    assert_eq!(value(&moved, "a"), None, "the Delete landed below the Put");
    put(&moved, "a", "2");
    assert_eq!(value(&moved, "a").as_deref(), Some(&b"2"[..]));
}

#[test]
fn a_region_closed_after_a_failed_flush_hands_on_what_came_in_since() {
    use basalt_storage::env::{FaultInjector, Op};
    let (root, clock, rdir) = new_region();
    let faults = Arc::new(FaultInjector::new(1));
    let options = Options {
        env: Env::with_faults(Arc::clone(&clock) as _, Arc::clone(&faults)),
        ..Options::default()
    };
    let (queue, _inbox) = MasterQueue::new();
    let first = RegionServer::start(root.path(), &options, queue).unwrap();
    first.recover(false).unwrap();
    let r = first
        .open_region(&rdir, &whole_table_region(), &table())
        .unwrap();
    put(&r, "a", "1");
    // The flush's store file cannot be created: its snapshot stays for a retry.
    faults.fail_nth(Op::Create, 1);
    assert!(r.flush().is_err());
    put(&r, "b", "2");
    // The closing flush writes the snapshot that failed, and what came in after it.
    first.close_region(&r).unwrap();
    assert_eq!(r.memstore_size_bytes(), 0);

    clock.advance(1);
    let (second, _inbox2) = start(root.path(), &clock);
    second.recover(false).unwrap();
    let moved = second
        .open_region(&rdir, &whole_table_region(), &table())
        .unwrap();
    assert_eq!(value(&moved, "a").as_deref(), Some(&b"1"[..]));
    assert_eq!(value(&moved, "b").as_deref(), Some(&b"2"[..]));
}

#[test]
fn a_dead_servers_log_is_replayed_by_the_next_and_then_retired() {
    let (root, clock, rdir) = new_region();
    let dead_log = {
        let (dead, _inbox) = start(root.path(), &clock);
        dead.recover(false).unwrap();
        let r = dead
            .open_region(&rdir, &whole_table_region(), &table())
            .unwrap();
        put(&r, "a", "1");
        dead.shutdown();
        root.path().join("wal").join(dead.name().to_string())
        // Dropped without a flush: the edit is in the dead server's log alone.
    };
    assert!(dead_log.is_dir());
    clock.advance(1);
    let (next, _inbox) = start(root.path(), &clock);
    let r = next
        .open_region(&rdir, &whole_table_region(), &table())
        .unwrap();
    next.recover(false).unwrap();
    assert_eq!(
        value(&r, "a").as_deref(),
        Some(&b"1"[..]),
        "replayed from the dead server's log"
    );
    assert!(
        next.wal_segment_count() > 1,
        "the dead log's segments are kept until flushed"
    );
    next.flush_region(&r).unwrap();
    next.retire_wal().unwrap();
    assert_eq!(
        next.wal_segment_count(),
        1,
        "flushed past, the dead log's segments go"
    );
    // Its emptied directory goes at the next start.
    drop(next);
    clock.advance(1);
    let (_third, _inbox) = start(root.path(), &clock);
    assert!(!dead_log.exists());
}

#[test]
fn a_region_grown_past_its_split_size_is_reported_to_the_master() {
    let (root, clock, rdir) = new_region();
    let options = Options {
        env: Env::with_clock(Arc::clone(&clock) as _),
        max_filesize_bytes: 1,
        ..Options::default()
    };
    let (queue, inbox) = MasterQueue::new();
    let rs = RegionServer::start(root.path(), &options, queue).unwrap();
    rs.recover(false).unwrap();
    let r = rs
        .open_region(&rdir, &whole_table_region(), &table())
        .unwrap();
    put(&r, "a", "1");
    rs.flush_region(&r).unwrap();
    rs.request_compaction(&r);
    let got = inbox
        .recv_timeout(std::time::Duration::from_secs(10))
        .unwrap();
    assert_eq!(got, MasterRequest::Split(7));
}

#[test]
fn a_region_replays_its_recovered_edits_before_it_serves_and_keeps_their_row_times() {
    use basalt_model::Cell;
    use basalt_storage::wal::split::{recovered_edits, write_recovered_edits};
    use basalt_storage::wal::WalEdit;
    let (root, clock, rdir) = new_region();
    // A dead server's log left two edits for the region, at sequence ids of its own; one
    // cell ran 500 ms ahead of the clock (increments faster than one per millisecond).
    let edits = [
        WalEdit {
            region_id: 7,
            seq_id: 40,
            cells: vec![Cell::put("a", "f", "q", T0, b"1".to_vec())],
        },
        WalEdit {
            region_id: 7,
            seq_id: 41,
            cells: vec![Cell::put("ahead", "f", "q", T0 + 500, b"old".to_vec())],
        },
    ];
    let file = rdir
        .join("recovered.edits")
        .join("dead,1,1-00000000000000000001.wal");
    assert!(write_recovered_edits(&Env::default(), &file, &edits).unwrap());
    let (rs, _inbox) = start(root.path(), &clock);
    rs.recover(false).unwrap();
    let r = rs
        .open_region(&rdir, &whole_table_region(), &table())
        .unwrap();
    assert_eq!(value(&r, "a").as_deref(), Some(&b"1"[..]));
    assert_eq!(value(&r, "ahead").as_deref(), Some(&b"old"[..]));
    // Flushed and deleted before the region served: nothing to replay a second time.
    assert!(r.max_stored_seq_id() >= 41);
    assert!(recovered_edits(&Env::default(), &rdir).unwrap().is_empty());
    // A write at server time lands at or above the replayed cell's time, so it shows.
    put(&r, "ahead", "new");
    assert_eq!(value(&r, "ahead").as_deref(), Some(&b"new"[..]));
    assert!(
        r.min_unflushed_seq_id() > 41,
        "later writes order after the replayed ones"
    );
}

/// Writes the manifest of region `id` of `[start, end)` in `tdir`, following `parents` (a
/// split's or a merge's), and returns its directory and info.
fn successor(
    tdir: &Path,
    id: u64,
    start: &str,
    end: &str,
    parents: &[&Arc<Region>],
) -> (std::path::PathBuf, RegionInfo) {
    let handed: Vec<_> = parents.iter().map(|p| p.handed_files()).collect();
    let flushed = handed.iter().map(|h| h.1).max().unwrap();
    let files =
        basalt_storage::region::join_handed_files(handed.into_iter().map(|h| h.0).collect());
    let dir = tdir.join(id.to_string());
    Region::create_successor(&Env::default(), &dir, id, &files, flushed).unwrap();
    let info = RegionInfo {
        id,
        start_key: Bytes::from(start.to_owned()),
        end_key: Bytes::from(end.to_owned()),
    };
    (dir, info)
}

/// NEW_VERSION_BEHAVIOR masks by sequence id, so a region's next write must be numbered
/// above every id in the files it inherits, or an old marker would mask it. Here each region
/// opens on a server whose own counter lags far behind the one that wrote its files.
#[test]
fn daughters_and_a_merged_region_on_a_lagging_server_write_above_inherited_markers() {
    use basalt_model::ops::Delete;
    let write = |r: &Region, m: Mutation| r.mutate(&m).unwrap();
    let put_at = |r: &Region, row: &str, v: &str| {
        write(
            r,
            Mutation::Put(Put::new(row.to_owned()).add_at("f", "q", 5, v)),
        );
    };
    let put_and_delete = |r: &Region, row: &str| {
        put_at(r, row, "before");
        write(
            r,
            Mutation::Delete(Delete::new(row.to_owned()).add_family_at("f", 9)),
        );
    };
    let (root, clock, rdir) = new_region();
    // Every server starts before any write: none learns another's sequence ids from a log.
    let servers: Vec<_> = (0..3)
        .map(|_| {
            clock.advance(1);
            let (rs, inbox) = start(root.path(), &clock);
            rs.recover(false).unwrap();
            (rs, inbox)
        })
        .collect();
    let (first, second, third) = (&servers[0].0, &servers[1].0, &servers[2].0);
    let name = TableName::parse("t").unwrap();
    let table = Arc::new(TableDescriptor::new(
        &name,
        [ColumnFamilyDescriptor::new("f").with_new_version_behavior(true)],
    ));
    let tdir = rdir.parent().unwrap();
    let parent = first
        .open_region(&rdir, &whole_table_region(), &table)
        .unwrap();
    for i in 0..40 {
        put(&parent, "filler", &i.to_string());
    }
    put_and_delete(&parent, "a");
    first.close_region(&parent).unwrap();

    // A split: the daughter reads the parent's files through references.
    let (dir, info) = successor(tdir, 8, "", "m", &[&parent]);
    let low = second.open_region(&dir, &info, &table).unwrap();
    let (dir, info) = successor(tdir, 9, "m", "", &[&parent]);
    let high = second.open_region(&dir, &info, &table).unwrap();
    assert!(low.has_references());
    put_at(&low, "a", "after split");
    assert!(low.min_unflushed_seq_id() > parent.max_stored_seq_id());
    assert_eq!(value(&low, "a").as_deref(), Some(&b"after split"[..]));

    // A merge, once compactions rewrote the references: markers written on the daughters'
    // server are in the files the merged region reads.
    low.compact(true).unwrap();
    high.compact(true).unwrap();
    put_and_delete(&high, "z");
    second.close_region(&low).unwrap();
    second.close_region(&high).unwrap();
    let (dir, info) = successor(tdir, 10, "", "", &[&low, &high]);
    let merged = third.open_region(&dir, &info, &table).unwrap();
    put_at(&merged, "z", "after merge");
    assert!(merged.min_unflushed_seq_id() > high.max_stored_seq_id());
    assert_eq!(value(&merged, "z").as_deref(), Some(&b"after merge"[..]));
    assert_eq!(value(&merged, "a").as_deref(), Some(&b"after split"[..]));
}
