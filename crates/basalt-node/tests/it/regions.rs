//! Regions: splits and merges on request and by size, references, the catalog janitor,
//! routing and scans across changing regions.

use std::sync::Arc;

use basalt_model::ops::{Get, Put, Scan};
use basalt_model::{Error, TableDescriptor, TableName};
use basalt_node::{Database, Options, RegionInfo, Table};
use basalt_storage::env::{Env, ManualClock};
use bytes::Bytes;

use crate::support::{cf, region_dirs, render, scan_all, Fixture, T0};

fn row(i: u32) -> String {
    format!("row{i:05}")
}

fn fill(t: &Table, rows: std::ops::Range<u32>) {
    for i in rows {
        t.put(
            Put::new(row(i))
                .add("f", "q", format!("v{i}"))
                .add("g", "q", "x"),
        )
        .unwrap();
    }
}

fn rows_of(t: &Table, scan: Scan) -> Vec<String> {
    scan_all(t, scan)
        .iter()
        .map(|r| String::from_utf8_lossy(r.row()).into_owned())
        .collect()
}

/// Regions are sorted and cover the key space with no gap or overlap.
pub fn assert_covering(regions: &[RegionInfo]) {
    assert!(!regions.is_empty());
    assert!(regions[0].start_key.is_empty(), "{regions:?}");
    assert!(regions[regions.len() - 1].end_key.is_empty(), "{regions:?}");
    for w in regions.windows(2) {
        assert_eq!(w[0].end_key, w[1].start_key, "{regions:?}");
        assert!(w[0].start_key < w[0].end_key, "{regions:?}");
    }
}

fn check_all(t: &Table, n: u32) {
    let want: Vec<String> = (0..n).map(row).collect();
    assert_eq!(rows_of(t, Scan::new()), want);
    let mut rev = want.clone();
    rev.reverse();
    assert_eq!(rows_of(t, Scan::new().reversed()), rev);
    for i in (0..n).step_by(97) {
        let r = t.get(Get::new(row(i))).unwrap();
        assert_eq!(r.value(b"f", b"q").unwrap(), &Bytes::from(format!("v{i}")));
    }
}

#[test]
fn split_on_request_keeps_every_row_and_routes_new_writes() {
    let fx = Fixture::new();
    let t = fx.create("t", vec![cf("f", 1), cf("g", 1)]);
    let name = TableName::parse("t").unwrap();
    fill(&t, 0..1000);
    let first_region_id = fx.db.regions(&name).unwrap()[0].id;
    fx.db.split_table(&name, Some(row(400).as_bytes())).unwrap();
    let regions = fx.db.regions(&name).unwrap();
    assert_eq!(regions.len(), 2);
    assert_covering(&regions);
    assert_eq!(regions[0].end_key, Bytes::from(row(400)));
    check_all(&t, 1000);
    // Writes after the split land in the daughters; ranged scans cross the boundary.
    fill(&t, 1000..1200);
    check_all(&t, 1200);
    let got = rows_of(
        &t,
        Scan::new()
            .with_start_row(row(398), true)
            .with_stop_row(row(402), true),
    );
    assert_eq!(got, (398..=402).map(row).collect::<Vec<_>>());
    let got = rows_of(
        &t,
        Scan::new()
            .with_start_row(row(402), true)
            .with_stop_row(row(398), false)
            .reversed(),
    );
    assert_eq!(got, [row(402), row(401), row(400), row(399)]);
    assert_eq!(
        rows_of(&t, Scan::new().with_limit(3).with_start_row(row(399), true)).len(),
        3
    );
    // Daughters read the parent's files until compacted; then the janitor deletes the parent.
    let parent_dir = fx
        .dir
        .path()
        .join("data/default/t")
        .join(first_region_id.to_string());
    assert!(parent_dir.exists());
    fx.major("t");
    assert!(!parent_dir.exists());
    assert_eq!(fx.db.run_catalog_janitor().unwrap(), 0);
    check_all(&t, 1200);
    // Boundaries survive a restart.
    drop(t);
    let fx = fx.reopen();
    assert_eq!(fx.db.regions(&name).unwrap(), regions);
    check_all(&fx.db.table("t").unwrap(), 1200);
}

#[test]
fn split_without_a_key_uses_the_middle_of_the_largest_file() {
    let fx = Fixture::new();
    let t = fx.create("t", vec![cf("f", 1), cf("g", 1)]);
    let name = TableName::parse("t").unwrap();
    // Nothing to split in an empty table.
    fx.db.split_table(&name, None).unwrap();
    assert_eq!(fx.db.regions(&name).unwrap().len(), 1);
    fill(&t, 0..3000);
    fx.flush("t");
    fx.db.split_table(&name, None).unwrap();
    let regions = fx.db.regions(&name).unwrap();
    assert_eq!(regions.len(), 2);
    let mid: String = String::from_utf8_lossy(&regions[0].end_key).into_owned();
    assert!(mid > row(1000) && mid < row(2000), "split at {mid}");
    check_all(&t, 3000);
    // Daughters with references are not split again before a compaction.
    let err = fx
        .db
        .split_table(&name, Some(row(10).as_bytes()))
        .unwrap_err();
    assert!(err.to_string().contains("compact it first"), "{err}");
    fx.major("t");
    fx.db.split_table(&name, Some(row(10).as_bytes())).unwrap();
    assert_eq!(fx.db.regions(&name).unwrap().len(), 3);
    check_all(&t, 3000);
}

#[test]
fn bad_split_requests_are_refused_and_change_nothing() {
    let fx = Fixture::new();
    let t = fx.create("t", vec![cf("f", 1), cf("g", 1)]);
    let name = TableName::parse("t").unwrap();
    fill(&t, 0..100);
    fx.db.split_table(&name, Some(b"m")).unwrap();
    let regions = fx.db.regions(&name).unwrap();
    fx.major("t");
    let err = fx.db.split_table(&name, Some(b"m")).unwrap_err();
    assert_eq!(err.to_string(), "Split row is equal to startkey: m");
    let enc = regions[0].encoded_name(&name);
    let err = fx.db.split_region(enc.as_bytes(), Some(b"z")).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("Split row is not inside region key range splitKey:z"),
        "{err}"
    );
    let err = fx.db.split_region(b"nope", None).unwrap_err();
    assert!(matches!(err, Error::UnknownRegion(_)), "{err}");
    // SPLIT_ENABLED => false.
    let mut desc = fx.db.describe(&name).unwrap();
    desc.split_enabled = false;
    fx.db.modify_table(desc).unwrap();
    let err = fx.db.split_table(&name, Some(b"c")).unwrap_err();
    assert!(err.to_string().contains("split is disabled"), "{err}");
    assert_eq!(fx.db.regions(&name).unwrap(), regions);
    check_all(&t, 100);
}

#[test]
fn merge_joins_adjacent_regions() {
    let fx = Fixture::new();
    let name = TableName::parse("t").unwrap();
    let splits: Vec<Bytes> = [200, 400, 600]
        .iter()
        .map(|i| Bytes::from(row(*i)))
        .collect();
    fx.db
        .create_table(
            TableDescriptor::new(&name, [cf("f", 1), cf("g", 1)]),
            &splits,
        )
        .unwrap();
    let t = fx.db.table("t").unwrap();
    fill(&t, 0..800);
    let regions = fx.db.regions(&name).unwrap();
    let enc: Vec<String> = regions.iter().map(|r| r.encoded_name(&name)).collect();
    // Not adjacent, only one, unknown.
    let err = fx
        .db
        .merge_regions(&[enc[0].as_bytes(), enc[2].as_bytes()], false)
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("Unable to merge non-adjacent regions"),
        "{err}"
    );
    let err = fx
        .db
        .merge_regions(&[enc[0].as_bytes()], false)
        .unwrap_err();
    assert!(matches!(err, Error::MergeRegion(_)), "{err}");
    // Full region names work as well as encoded ones.
    let full = regions[2].region_name(&name);
    fx.db
        .merge_regions(&[enc[1].as_bytes(), &full[..]], false)
        .unwrap();
    let merged = fx.db.regions(&name).unwrap();
    assert_eq!(merged.len(), 3);
    assert_covering(&merged);
    assert_eq!(merged[1].start_key, regions[1].start_key);
    assert_eq!(merged[1].end_key, regions[2].end_key);
    check_all(&t, 800);
    fill(&t, 800..900);
    check_all(&t, 900);
    // The merged region reads its parents' files until compacted.
    let err = fx
        .db
        .merge_regions(
            &[enc[0].as_bytes(), merged[1].encoded_name(&name).as_bytes()],
            false,
        )
        .unwrap_err();
    assert!(err.to_string().contains("compact it first"), "{err}");
    fx.major("t");
    // The janitor archived the merged parents: three region directories are left.
    assert_eq!(region_dirs(&fx.dir.path().join("data/default/t")), 3);
    let all: Vec<String> = fx
        .db
        .regions(&name)
        .unwrap()
        .iter()
        .map(|r| r.encoded_name(&name))
        .collect();
    let refs: Vec<&[u8]> = all.iter().map(String::as_bytes).collect();
    fx.db.merge_regions(&refs, true).unwrap();
    assert_eq!(fx.db.regions(&name).unwrap().len(), 1);
    check_all(&t, 900);
    drop(t);
    let fx = fx.reopen();
    assert_eq!(fx.db.regions(&name).unwrap().len(), 1);
    check_all(&fx.db.table("t").unwrap(), 900);
}

fn open_small(dir: &std::path::Path, clock: &Arc<ManualClock>, max_filesize: u64) -> Database {
    let mut options = Options {
        env: Env::with_clock(Arc::clone(clock) as _),
        max_filesize_bytes: max_filesize,
        ..Options::default()
    };
    options.background.compaction.automatic = true;
    Database::open_with(dir, options).unwrap()
}

#[test]
fn regions_split_on_their_own_past_max_filesize() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(T0));
    let db = open_small(dir.path(), &clock, 1 << 20);
    let name = TableName::parse("t").unwrap();
    let mut desc = TableDescriptor::new(&name, [cf("f", 1), cf("g", 1)]);
    desc.memstore_flushsize_bytes = 1 << 20;
    db.create_table(desc, &[]).unwrap();
    let t = db.table("t").unwrap();
    let pad = "p".repeat(300);
    for i in 0..20_000 {
        t.put(
            Put::new(row(i))
                .add("f", "q", format!("v{i}"))
                .add("g", "q", pad.clone()),
        )
        .unwrap();
    }
    db.flush(&name).unwrap();
    db.wait_for_background().unwrap();
    db.wait_for_background().unwrap();
    let regions = db.regions(&name).unwrap();
    assert!(regions.len() >= 4, "{} regions", regions.len());
    assert_covering(&regions);
    check_all(&t, 20_000);
}

/// The value of row `i` in the large tests: `len` bytes derived from `i`.
fn big_value(i: u32, len: usize) -> Vec<u8> {
    let seed = format!("{i:08}-");
    seed.bytes().cycle().take(len).collect()
}

#[test]
fn hundreds_of_mib_end_in_many_regions_with_every_cell() {
    const ROWS: u32 = 260_000;
    const LEN: usize = 1024;
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(T0));
    let db = open_small(dir.path(), &clock, 8 << 20);
    let name = TableName::parse("big").unwrap();
    let mut desc = TableDescriptor::new(&name, [cf("f", 1)]);
    desc.memstore_flushsize_bytes = 4 << 20;
    db.create_table(desc, &[]).unwrap();
    // Two writers over interleaved rows, so splits happen under concurrent writes.
    std::thread::scope(|s| {
        for w in 0..2u32 {
            let t = db.table("big").unwrap();
            s.spawn(move || {
                for i in (w..ROWS).step_by(2) {
                    let key = format!("{:08x}", i.wrapping_mul(2_654_435_761));
                    let p = Put::new(key)
                        .add("f", "q", big_value(i, LEN))
                        .with_durability(basalt_model::Durability::AsyncWal);
                    t.put(p).unwrap();
                }
            });
        }
    });
    db.flush(&name).unwrap();
    db.wait_for_background().unwrap();
    let regions = db.regions(&name).unwrap();
    assert_covering(&regions);
    assert!(regions.len() >= 16, "{} regions", regions.len());
    eprintln!(
        "{} regions after {} MiB",
        regions.len(),
        (u64::from(ROWS) * LEN as u64) >> 20
    );
    // Every cell, once, with its value: a full scan in order, and gets of a sample.
    let t = db.table("big").unwrap();
    let mut want: Vec<(String, u32)> = (0..ROWS)
        .map(|i| (format!("{:08x}", i.wrapping_mul(2_654_435_761)), i))
        .collect();
    want.sort();
    let mut n = 0;
    for (r, (key, i)) in t.scan(Scan::new()).unwrap().zip(&want) {
        let r = r.unwrap();
        assert_eq!(r.row(), key.as_bytes());
        assert_eq!(r.value(b"f", b"q").unwrap()[..], big_value(*i, LEN)[..]);
        n += 1;
    }
    assert_eq!(n, ROWS as usize);
    for (key, i) in want.iter().step_by(997) {
        let r = t.get(Get::new(key.clone())).unwrap();
        assert_eq!(r.value(b"f", b"q").unwrap()[..], big_value(*i, LEN)[..]);
    }
}

#[test]
fn splits_and_merges_under_concurrent_writes_lose_and_duplicate_nothing() {
    let fx = Fixture::new();
    let t = fx.create("t", vec![cf("f", 1), cf("g", 1)]);
    let name = TableName::parse("t").unwrap();
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        let writers: Vec<_> = (0..3u32)
            .map(|w| {
                let t = t.clone();
                s.spawn(move || {
                    // Each writer owns its rows and bumps a counter in each, 4 times.
                    for round in 0..4 {
                        for i in 0..500u32 {
                            let r = format!("{i:04}-{w}");
                            t.increment_column_value(r.clone(), "g", "n", 1).unwrap();
                            if round == 0 {
                                t.put(Put::new(r).add("f", "q", "v")).unwrap();
                            }
                        }
                    }
                })
            })
            .collect();
        s.spawn(|| {
            let mut k = 0u32;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                k += 1;
                let key = format!("{:04}", (k * 137) % 500);
                let _ = fx.db.split_table(&name, Some(key.as_bytes()));
                if k.is_multiple_of(3) {
                    fx.major("t");
                    let regions = fx.db.regions(&name).unwrap();
                    if regions.len() > 2 {
                        let i = (k as usize) % (regions.len() - 1);
                        let a = regions[i].encoded_name(&name);
                        let b = regions[i + 1].encoded_name(&name);
                        let _ = fx.db.merge_regions(&[a.as_bytes(), b.as_bytes()], false);
                    }
                }
            }
        });
        for w in writers {
            w.join().unwrap();
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
    });
    let regions = fx.db.regions(&name).unwrap();
    assert_covering(&regions);
    assert!(regions.len() > 1);
    let rows = scan_all(&t, Scan::new());
    assert_eq!(rows.len(), 1500);
    for r in &rows {
        let n = r.value(b"g", b"n").unwrap();
        assert_eq!(i64::from_be_bytes(n[..].try_into().unwrap()), 4, "{r:?}");
        assert!(r.value(b"f", b"q").is_some());
    }
}

/// `hbase:meta` rows as (row, [qualifiers]) for the info and table families.
fn meta_rows(db: &Database) -> Vec<(String, Vec<String>)> {
    let meta = db.table("hbase:meta").unwrap();
    scan_all(&meta, Scan::new())
        .iter()
        .map(|r| {
            let cols = r
                .cells
                .iter()
                .map(|c| {
                    let f = String::from_utf8_lossy(&c.family).into_owned();
                    format!("{f}:{}", String::from_utf8_lossy(c.qualifier()))
                })
                .collect();
            (basalt_model::bytes_fmt::to_string_binary(r.row()), cols)
        })
        .collect()
}

/// A table of one family `f` in two regions, split at `m`.
fn create_split_at_m(fx: &Fixture, name: &TableName) {
    let desc = TableDescriptor::new(name, [cf("f", 1)]);
    fx.db
        .create_table(desc, &[Bytes::from_static(b"m")])
        .unwrap();
}

#[test]
fn hbase_meta_is_the_catalog_as_a_table() {
    use basalt_model::region::decode_meta_region_info;
    let fx = Fixture::new();
    let name = TableName::parse("ns:t").unwrap();
    fx.db.create_namespace("ns", Default::default()).unwrap();
    create_split_at_m(&fx, &name);
    let regions = fx.db.regions(&name).unwrap();
    let rows = meta_rows(&fx.db);
    let region_cols = [
        "info:regioninfo",
        "info:server",
        "info:serverstartcode",
        "info:sn",
        "info:state",
    ];
    // The table's row sorts before its regions' rows.
    let cols = || region_cols.map(String::from).to_vec();
    let want: Vec<(String, Vec<String>)> = vec![
        ("ns:t".to_owned(), vec!["table:state".to_owned()]),
        (regions[0].region_name_string(&name), cols()),
        (regions[1].region_name_string(&name), cols()),
    ];
    assert_eq!(rows, want);
    assert!(
        rows[1].0.starts_with(&format!("ns:t,,{}.", regions[0].id)),
        "{}",
        rows[1].0
    );
    // Values decode as HBase's; reads with columns and filters work as on any table.
    let meta = fx.db.table("hbase:meta").unwrap();
    let row0 = regions[0].region_name(&name);
    let got = meta
        .get(Get::new(row0.clone()).add_column("info", "regioninfo"))
        .unwrap();
    let (t, info, offline, split) =
        decode_meta_region_info(got.value(b"info", b"regioninfo").unwrap()).unwrap();
    assert_eq!(
        (t, info, offline, split),
        (name.clone(), regions[0].clone(), false, false)
    );
    let state = meta
        .get(Get::new(row0).add_column("info", "state"))
        .unwrap();
    assert_eq!(
        state.value(b"info", b"state").unwrap(),
        &Bytes::from_static(b"OPEN")
    );
    let t_state = meta.get(Get::new("ns:t")).unwrap();
    assert_eq!(
        t_state.value(b"table", b"state").unwrap(),
        &Bytes::from_static(b"PBUF\x08\x00")
    );
    // Disabling shows.
    fx.db.disable_table(&name).unwrap();
    let t_state = meta.get(Get::new("ns:t")).unwrap();
    assert_eq!(
        t_state.value(b"table", b"state").unwrap(),
        &Bytes::from_static(b"PBUF\x08\x01")
    );
    fx.db.enable_table(&name).unwrap();
    // Users cannot write to it; dropping a table removes its rows.
    let err = meta
        .put(Put::new("x").add("info", "state", "OPEN"))
        .unwrap_err();
    assert!(err.to_string().contains("read only"), "{err}");
    fx.db.disable_table(&name).unwrap();
    fx.db.delete_table(&name).unwrap();
    assert!(meta_rows(&fx.db).is_empty());
    // It is rebuilt at open.
    let t2 = TableName::parse("t2").unwrap();
    fx.db
        .create_table(TableDescriptor::new(&t2, [cf("f", 1)]), &[])
        .unwrap();
    drop(meta);
    let fx = fx.reopen();
    assert_eq!(meta_rows(&fx.db).len(), 2);
    assert!(fx.db.list_tables(None).unwrap() == ["t2"]);
}

#[test]
fn hbase_meta_shows_split_parents_and_merge_parents_until_freed() {
    use basalt_model::region::decode_meta_region_info;
    let fx = Fixture::new();
    let name = TableName::parse("t").unwrap();
    create_split_at_m(&fx, &name);
    let regions = fx.db.regions(&name).unwrap();
    let meta = fx.db.table("hbase:meta").unwrap();
    let t = fx.db.table("t").unwrap();
    for r in ["a", "c", "e", "x"] {
        t.put(Put::new(r).add("f", "q", "v")).unwrap();
    }
    fx.db.split_table(&name, Some(b"c")).unwrap();
    let parent = regions[0].region_name(&name);
    let got = meta.get(Get::new(parent.clone())).unwrap();
    assert_eq!(
        got.value(b"info", b"state").unwrap(),
        &Bytes::from_static(b"SPLIT")
    );
    let (_, _, offline, split) =
        decode_meta_region_info(got.value(b"info", b"regioninfo").unwrap()).unwrap();
    assert!(offline && split);
    let (_, a, _, _) = decode_meta_region_info(got.value(b"info", b"splitA").unwrap()).unwrap();
    assert_eq!(a.end_key, Bytes::from_static(b"c"));
    assert_eq!(meta_rows(&fx.db).len(), 5);
    fx.major("t");
    fx.db.run_catalog_janitor().unwrap();
    assert!(meta.get(Get::new(parent)).unwrap().cells.is_empty());
    // A merged region names its parents until they are freed.
    let now = fx.db.regions(&name).unwrap();
    let enc: Vec<String> = now[..2].iter().map(|r| r.encoded_name(&name)).collect();
    fx.db
        .merge_regions(&[enc[0].as_bytes(), enc[1].as_bytes()], false)
        .unwrap();
    let merged = fx.db.regions(&name).unwrap()[0].region_name(&name);
    let got = meta.get(Get::new(merged.clone())).unwrap();
    assert!(
        got.value(b"info", b"merge0000").is_some() && got.value(b"info", b"merge0001").is_some()
    );
    fx.major("t");
    fx.db.run_catalog_janitor().unwrap();
    let got = meta.get(Get::new(merged)).unwrap();
    assert!(got.value(b"info", b"merge0000").is_none(), "{got:?}");
    assert_eq!(meta_rows(&fx.db).len(), 3);
}

#[test]
fn a_batch_across_regions_reports_each_row() {
    use basalt_model::ops::Mutation;
    let fx = Fixture::new();
    let name = TableName::parse("t").unwrap();
    let splits = [Bytes::from_static(b"h"), Bytes::from_static(b"p")];
    fx.db
        .create_table(TableDescriptor::new(&name, [cf("f", 1)]), &splits)
        .unwrap();
    let t = fx.db.table("t").unwrap();
    let batch = vec![
        Mutation::Put(Put::new("a").add("f", "q", "1")),
        Mutation::Put(Put::new("k").add("nope", "q", "2")),
        Mutation::Put(Put::new("m").add("f", "q", "3")),
        Mutation::Put(Put::new("z").add("f", "q", "4")),
    ];
    let results = t.batch(batch);
    let ok: Vec<bool> = results.iter().map(Result::is_ok).collect();
    assert_eq!(ok, [true, false, true, true]);
    let err = results[1].as_ref().unwrap_err();
    assert!(matches!(err, Error::NoSuchColumnFamily { .. }), "{err}");
    assert_eq!(rows_of(&t, Scan::new()), ["a", "m", "z"]);
}

#[test]
fn region_loads_and_recent_work_are_reported() {
    let fx = Fixture::new();
    let t = fx.create("t", vec![cf("f", 1), cf("g", 1)]);
    let name = TableName::parse("t").unwrap();
    fill(&t, 0..10);
    for i in 0..3 {
        t.get(Get::new(row(i))).unwrap();
    }
    let loads = fx.db.region_loads(&name).unwrap();
    assert_eq!(loads.len(), 1);
    let load = &loads[0].1;
    assert_eq!((load.write_requests, load.read_requests), (10, 3));
    assert!(load.memstore_bytes > 0 && load.store_files == 0);
    assert!(fx.db.engine_stats().wal_syncs > 0);
    fx.flush("t");
    fx.major("t");
    let load = &fx.db.region_loads(&name).unwrap()[0].1;
    assert_eq!((load.store_files, load.memstore_bytes), (2, 0));
    assert!(load.store_file_bytes > 0);
    let kinds: Vec<&str> = fx.db.recent_events().iter().map(|e| e.kind).collect();
    assert_eq!(kinds, ["flush", "major compaction", "major compaction"]);
    fx.db.split_table(&name, Some(row(5).as_bytes())).unwrap();
    let last = fx.db.recent_events().pop().unwrap();
    assert_eq!(last.kind, "split");
    assert!(last.region.starts_with("t,,"), "{}", last.region);
}

/// A batch gives what applying its mutations one by one gives: mini-batches of distinct rows
/// per region, with increments, repeated rows and deletes of every scope in between.
#[test]
fn a_batch_gives_what_applying_it_in_order_gives() {
    use basalt_model::ops::{Delete, Increment, Mutation};
    use rand::{Rng, SeedableRng};
    let fx = Fixture::new();
    let splits = [Bytes::from_static(b"r3"), Bytes::from_static(b"r6")];
    for t in ["batched", "sequential"] {
        let name = TableName::parse(t).unwrap();
        fx.db
            .create_table(
                TableDescriptor::new(&name, [cf("f", 3), cf("g", 1)]),
                &splits,
            )
            .unwrap();
    }
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let mut ms = Vec::new();
    for i in 0..3000u32 {
        let row = format!("r{}", rng.gen_range(0..100));
        let ts = i64::from(rng.gen_range(1..50u32));
        ms.push(match rng.gen_range(0..10) {
            0..=4 => Mutation::Put(
                Put::new(row)
                    .add("f", "q", format!("v{i}"))
                    .add_at("g", "x", ts, "w"),
            ),
            5 => Mutation::Delete(Delete::new(row).add_columns_at("f", "q", ts)),
            6 => Mutation::Delete(Delete::new(row).add_family("g")),
            7 => Mutation::Delete(Delete::new(row).add_column("f", "q")),
            8 => Mutation::Increment(Increment::new(row).add("f", "n", 1)),
            _ => Mutation::Put(Put::new(row).add("nope", "q", "refused")),
        });
    }
    let batched = fx.db.table("batched").unwrap();
    let sequential = fx.db.table("sequential").unwrap();
    let got: Vec<bool> = batched
        .batch(ms.clone())
        .iter()
        .map(Result::is_ok)
        .collect();
    let want: Vec<bool> = ms
        .into_iter()
        .map(|m| sequential.mutate(m).is_ok())
        .collect();
    assert_eq!(got, want);
    assert!(want.iter().any(|ok| !ok) && want.iter().filter(|ok| **ok).count() > 2000);
    let raw = || Scan::new().raw().all_versions();
    let cells = |t: &Table| render(&scan_all(t, raw()));
    assert_eq!(cells(&batched), cells(&sequential));
}
