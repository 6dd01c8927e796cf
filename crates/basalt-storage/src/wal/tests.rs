// These tests damage and inspect files on purpose, beneath the engine's `Env`.
#![allow(clippy::disallowed_methods)]

use std::fs::OpenOptions;
use std::io::Write;

use basalt_model::{Cell, CellType};

use super::*;

fn cells(row: &str, n: usize) -> Vec<Cell> {
    (0..n)
        .map(|i| {
            let mut c = Cell::put(row.to_owned(), "f", format!("q{i}"), 7, vec![b'v'; i]);
            c.ttl_ms = (i % 2 == 1).then_some(1000);
            c
        })
        .collect()
}

fn reopen(dir: &Path) -> Result<Vec<WalEdit>> {
    let mut edits = Vec::new();
    let wal = Wal::open(&Env::default(), dir, DEFAULT_ROLL_SIZE_BYTES)?;
    wal.recover(|e| {
        edits.push(e);
        Ok(())
    })?;
    Ok(edits)
}

/// The sequence ids a reopened log replays, in order.
fn recovered_seqs(dir: &Path) -> Vec<u64> {
    reopen(dir).unwrap().iter().map(|e| e.seq_id).collect()
}

fn open(dir: &Path) -> Arc<Wal> {
    let wal = Wal::open(&Env::default(), dir, DEFAULT_ROLL_SIZE_BYTES).unwrap();
    wal.recover(|_| Ok(())).unwrap();
    wal
}

/// The newest segment holding records (opening always adds an empty one after it).
fn last_segment(dir: &Path) -> PathBuf {
    let ids = replay::list_segments(&Env::default(), dir).unwrap();
    let with_data = ids.iter().rev().find(|id| {
        std::fs::metadata(dir.join(replay::segment_name(**id)))
            .unwrap()
            .len()
            > record::HEADER_LEN as u64
    });
    dir.join(replay::segment_name(*with_data.unwrap_or(&ids[0])))
}

#[test]
fn edits_round_trip_with_every_field() {
    let tmp = tempfile::tempdir().unwrap();
    let wal = open(tmp.path());
    let mut marker = Cell::marker("r2", "f", "", -0, CellType::DeleteFamily);
    marker.seq_id = 0;
    let t1 = wal.append(5, 10, &cells("r1", 3)).unwrap();
    let t2 = wal.append(6, 11, &[marker]).unwrap();
    assert!(t2 > t1);
    wal.sync(t2, false).unwrap();
    drop(wal);
    let edits = reopen(tmp.path()).unwrap();
    assert_eq!(edits.len(), 2);
    assert_eq!((edits[0].region_id, edits[0].seq_id), (5, 10));
    let mut expect = cells("r1", 3);
    expect.iter_mut().for_each(|c| c.seq_id = 10);
    assert_eq!(edits[0].cells, expect);
    assert_eq!(edits[1].cells[0].cell_type, CellType::DeleteFamily);
    assert_eq!(edits[1].cells[0].seq_id, 11);
}

#[test]
fn torn_last_record_is_dropped_and_the_log_stays_usable() {
    let tmp = tempfile::tempdir().unwrap();
    let wal = open(tmp.path());
    let t = wal.append(1, 1, &cells("a", 2)).unwrap();
    let t = t.max(wal.append(1, 2, &cells("b", 2)).unwrap());
    wal.sync(t, false).unwrap();
    drop(wal);
    let seg = last_segment(tmp.path());
    let len = std::fs::metadata(&seg).unwrap().len();
    // Tear the last record: cut 5 bytes off its end.
    OpenOptions::new()
        .write(true)
        .open(&seg)
        .unwrap()
        .set_len(len - 5)
        .unwrap();
    let edits = reopen(tmp.path()).unwrap();
    assert_eq!(edits.iter().map(|e| e.seq_id).collect::<Vec<_>>(), [1]);
    // The torn bytes are gone: a second recovery sees the same, without error.
    assert_eq!(reopen(tmp.path()).unwrap().len(), 1);
}

#[test]
fn zero_filled_tail_is_a_torn_tail() {
    let tmp = tempfile::tempdir().unwrap();
    let wal = open(tmp.path());
    let t = wal.append(1, 1, &cells("a", 1)).unwrap();
    wal.sync(t, false).unwrap();
    drop(wal);
    let seg = last_segment(tmp.path());
    OpenOptions::new()
        .append(true)
        .open(&seg)
        .unwrap()
        .write_all(&[0; 100])
        .unwrap();
    assert_eq!(reopen(tmp.path()).unwrap().len(), 1);
}

/// A log in `dir` with three synced records; returns its segment.
fn three_synced_records(dir: &Path) -> PathBuf {
    let wal = open(dir);
    let mut t = 0;
    for i in 0..3 {
        t = wal.append(1, i + 1, &cells("row", 2)).unwrap();
    }
    wal.sync(t, false).unwrap();
    drop(wal);
    last_segment(dir)
}

/// Damage with whole records after it is in the middle of the log: opening fails, names
/// where, points at the repair and changes nothing.
#[test]
fn corrupt_record_in_the_middle_is_an_error_not_a_skip() {
    let tmp = tempfile::tempdir().unwrap();
    let seg = three_synced_records(tmp.path());
    let mut data = std::fs::read(&seg).unwrap();
    // Flip a byte inside the first record's payload.
    data[record::HEADER_LEN + record::RECORD_HEADER_LEN + 3] ^= 0xff;
    std::fs::write(&seg, &data).unwrap();
    let err = reopen(tmp.path()).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, Error::Corruption { .. }), "{msg}");
    assert!(msg.contains("checksum mismatch at offset 12"), "{msg}");
    assert!(msg.contains("basalt hbck --fix-wal"), "{msg}");
    assert_eq!(std::fs::read(&seg).unwrap(), data);
    assert!(msg.contains(".wal"), "{msg}");
}

/// Group commit under 8 and 32 writers: each sync returns only once its own ticket is
/// synced (invariant 7), and every edit replays.
#[test]
fn group_commit_under_concurrency_makes_every_ticket_durable() {
    for (writers, each) in [(8u64, 50u64), (32, 40)] {
        let tmp = tempfile::tempdir().unwrap();
        let wal = open(tmp.path());
        let threads: Vec<_> = (0..writers)
            .map(|t| {
                let wal = Arc::clone(&wal);
                std::thread::spawn(move || {
                    for i in 0..each {
                        let ticket = wal.append(1, t * 1000 + i + 1, &cells("r", 1)).unwrap();
                        wal.sync(ticket, false).unwrap();
                        assert!(wal.synced() >= ticket, "{} < {ticket}", wal.synced());
                    }
                })
            })
            .collect();
        threads.into_iter().for_each(|t| t.join().unwrap());
        drop(wal);
        let replayed = reopen(tmp.path()).unwrap().len() as u64;
        assert_eq!(replayed, writers * each, "{writers} writers");
    }
}

#[test]
fn segments_roll_and_are_retired_once_flushed() {
    let tmp = tempfile::tempdir().unwrap();
    let wal = Wal::open(&Env::default(), tmp.path(), 1024).unwrap();
    for seq in 1..=100 {
        // A sync rolls a segment an append took past the roll size.
        let t = wal.append(1, seq, &cells("row", 4)).unwrap();
        wal.sync(t, false).unwrap();
    }
    let before = wal.segment_count();
    assert!(before > 3, "{before}");
    wal.retire_segments(50).unwrap();
    let after = wal.segment_count();
    assert!(after < before && after > 1, "{before} -> {after}");
    wal.shutdown().unwrap();
    drop(wal);
    // Every edit above 50 is still recoverable.
    let seqs = recovered_seqs(tmp.path());
    let missing: Vec<u64> = (51..=100).filter(|s| !seqs.contains(s)).collect();
    assert!(missing.is_empty(), "missing {missing:?}, got {seqs:?}");
}

#[test]
fn a_damaged_length_in_the_middle_is_corruption_not_a_torn_tail() {
    let tmp = tempfile::tempdir().unwrap();
    let wal = open(tmp.path());
    let mut t = 0;
    for i in 0..5 {
        t = wal.append(1, i + 1, &cells("row", 2)).unwrap();
    }
    wal.sync(t, false).unwrap();
    drop(wal);
    let seg = last_segment(tmp.path());
    let mut data = std::fs::read(&seg).unwrap();
    // Make the second record's length huge: it now "runs past the end of the segment".
    let first_len = u32::from_le_bytes(data[12..16].try_into().unwrap()) as usize;
    let second = record::HEADER_LEN + record::RECORD_HEADER_LEN + first_len;
    data[second + 2] = 0x7f;
    std::fs::write(&seg, &data).unwrap();
    let err = reopen(tmp.path()).unwrap_err();
    assert!(
        err.to_string().contains("record length checksum mismatch"),
        "{err}"
    );
}

fn faulty(dir: &Path) -> (Arc<Wal>, Arc<crate::env::FaultInjector>) {
    let faults = Arc::new(crate::env::FaultInjector::new(7));
    let env = Env::with_faults(Arc::new(crate::env::SystemClock), Arc::clone(&faults));
    let wal = Wal::open(&env, dir, DEFAULT_ROLL_SIZE_BYTES).unwrap();
    wal.recover(|_| Ok(())).unwrap();
    (wal, faults)
}

fn seqs(edits: &[WalEdit]) -> Vec<u64> {
    edits.iter().map(|e| e.seq_id).collect()
}

#[test]
fn a_failed_sync_heals_into_a_new_segment_keeping_order() {
    let tmp = tempfile::tempdir().unwrap();
    let (wal, faults) = faulty(tmp.path());
    let t = wal.append(1, 1, &cells("a", 2)).unwrap();
    wal.sync(t, false).unwrap();
    faults.fail_nth(crate::env::Op::Sync, 1);
    let t = wal.append(1, 2, &cells("b", 2)).unwrap();
    assert!(
        wal.sync(t, false).is_err(),
        "the injected sync failure surfaces"
    );
    // The next append heals: edit 2 is rewritten after what was synced, then edit 3 follows.
    let t = wal.append(1, 3, &cells("c", 2)).unwrap();
    wal.sync(t, false).unwrap();
    assert_eq!(wal.segment_count(), 2);
    drop(wal);
    faults.simulate_crash().unwrap();
    assert_eq!(seqs(&reopen(tmp.path()).unwrap()), vec![1, 2, 3]);
}

#[test]
fn a_full_disk_refuses_appends_until_space_returns_and_loses_nothing_synced() {
    let tmp = tempfile::tempdir().unwrap();
    let (wal, faults) = faulty(tmp.path());
    let t = wal.append(1, 1, &cells("a", 3)).unwrap();
    wal.sync(t, false).unwrap();
    faults.set_space_left(Some(10));
    let t = wal.append(1, 2, &cells("b", 3)).unwrap();
    let err = wal.sync(t, false).unwrap_err();
    assert!(err.to_string().contains("No space left on device"), "{err}");
    let again = wal.append(1, 3, &cells("c", 3)).unwrap_err();
    assert!(again.is_retryable(), "{again}");
    assert!(
        again.to_string().contains("No space left on device"),
        "{again}"
    );
    faults.set_space_left(None);
    let t = wal.append(1, 4, &cells("d", 3)).unwrap();
    wal.sync(t, false).unwrap();
    drop(wal);
    faults.simulate_crash().unwrap();
    // Edit 2 was buffered when the disk filled and is written by the heal; edit 3 was refused.
    assert_eq!(seqs(&reopen(tmp.path()).unwrap()), vec![1, 2, 4]);
}

#[test]
fn unsynced_edits_vanish_in_a_simulated_crash_and_synced_ones_stay() {
    let tmp = tempfile::tempdir().unwrap();
    let (wal, faults) = faulty(tmp.path());
    let t = wal.append(1, 1, &cells("a", 3)).unwrap();
    wal.sync(t, false).unwrap();
    wal.append(1, 2, &cells("b", 3)).unwrap();
    *wal.shutdown.lock() = true; // no background sync thread runs here anyway
    drop(wal);
    faults.simulate_crash().unwrap();
    assert_eq!(seqs(&reopen(tmp.path()).unwrap()), vec![1]);
}

/// RELIABILITY.md D10: junk after the last record (what a power cut leaves on some file
/// systems) is a damaged tail: recovery keeps every record before it, the junk is kept in a
/// side file, and the log opens again.
#[test]
fn junk_after_the_last_record_is_set_aside_and_recovery_goes_on() {
    let tmp = tempfile::tempdir().unwrap();
    let seg = three_synced_records(tmp.path());
    let good_len = std::fs::metadata(&seg).unwrap().len();
    let junk: Vec<u8> = (0..100u32)
        .map(|i| u8::try_from(i * 37 % 251 + 1).unwrap())
        .collect();
    OpenOptions::new()
        .append(true)
        .open(&seg)
        .unwrap()
        .write_all(&junk)
        .unwrap();
    let edits = reopen(tmp.path()).unwrap();
    assert_eq!(seqs(&edits), [1, 2, 3]);
    assert_eq!(std::fs::metadata(&seg).unwrap().len(), good_len);
    let mut kept_name = seg.file_name().unwrap().to_owned();
    kept_name.push(format!(".damaged-{good_len}"));
    assert_eq!(std::fs::read(seg.with_file_name(kept_name)).unwrap(), junk);
    // Opened again, it is a healthy log.
    assert_eq!(seqs(&reopen(tmp.path()).unwrap()), [1, 2, 3]);
}

/// Rolling does not hold the append lock across its fsyncs: while the next segment's header
/// sync is stuck on a slow disk, appends go on.
#[test]
fn appends_go_on_while_a_roll_makes_the_next_segment() {
    use crate::env::{FaultInjector, Op, SystemClock};
    let tmp = tempfile::tempdir().unwrap();
    let faults = Arc::new(FaultInjector::new(3));
    let env = Env::with_faults(Arc::new(SystemClock), Arc::clone(&faults));
    let wal = Wal::open(&env, tmp.path(), 1024).unwrap();
    wal.recover(|_| Ok(())).unwrap();
    let mut t = 0;
    for seq in 1..=20 {
        t = wal.append(1, seq, &cells("row", 4)).unwrap();
    }
    let slow = std::time::Duration::from_secs(1);
    faults.set_sync_delay(Some(slow));
    let creates = faults.done_count(Op::Create);
    let roller = {
        let wal = Arc::clone(&wal);
        std::thread::spawn(move || wal.sync(t, false))
    };
    // The roll has created the next segment and is syncing its header (for `slow`).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while faults.done_count(Op::Create) == creates {
        assert!(std::time::Instant::now() < deadline, "no roll began");
        std::thread::yield_now();
    }
    let started = std::time::Instant::now();
    wal.append(1, 21, &cells("row", 4)).unwrap();
    let took = started.elapsed();
    assert!(
        took < slow / 2,
        "an append waited {took:?} for the roll's fsync"
    );
    roller.join().unwrap().unwrap();
    faults.set_sync_delay(None);
    assert!(wal.segment_count() >= 2, "the roll happened");
    let t = wal.append(1, 22, &cells("row", 4)).unwrap();
    wal.sync(t, false).unwrap();
    drop(wal);
    let seqs = recovered_seqs(tmp.path());
    assert_eq!(seqs, (1..=22).collect::<Vec<_>>());
}

fn len(path: &Path) -> u64 {
    std::fs::metadata(path).unwrap().len()
}

/// The size a segment is made at (invariant 6).
const MADE: u64 = DEFAULT_ROLL_SIZE_BYTES + MAX_BUFFER_BYTES as u64;

fn current_segment(wal: &Wal) -> PathBuf {
    wal.state.lock().segment.path().to_owned()
}

/// Invariant 6: a segment is made at its full size, so synced appends leave the file's size
/// as it is; closed, it ends where its records do, and they replay.
#[test]
fn a_segment_is_made_whole_and_closed_at_its_records() {
    let tmp = tempfile::tempdir().unwrap();
    let wal = open(tmp.path());
    let seg = current_segment(&wal);
    assert_eq!(len(&seg), MADE);
    let mut t = 0;
    for seq in 1..=20 {
        t = wal.append(1, seq, &cells("row", 3)).unwrap();
        wal.sync(t, false).unwrap();
        assert_eq!(len(&seg), MADE, "after the synced append of {seq}");
    }
    drop(wal);
    assert_eq!(len(&seg), record::HEADER_LEN as u64 + t);
    assert_eq!(recovered_seqs(tmp.path()), (1..=20).collect::<Vec<_>>());
}

/// Bytes of disk the file at `path` holds (its allocated blocks, not its length).
fn allocated(path: &Path) -> u64 {
    std::os::unix::fs::MetadataExt::blocks(&std::fs::metadata(path).unwrap()) * 512
}

/// Appends records 1 to 400 of 8 KiB values (3.3 MiB), syncing every eighth and calling
/// `synced(seq, ticket)` after that sync; returns the last ticket, synced.
fn append_big_records(wal: &Wal, mut synced: impl FnMut(u64, Ticket)) -> Ticket {
    let mut t = 0;
    for seq in 1..=400 {
        let cell = Cell::put(format!("row{seq}"), "f", "q", 7, vec![b'v'; 8 << 10]);
        t = wal.append(1, seq, &[cell]).unwrap();
        if seq % 8 == 0 {
            wal.sync(t, false).unwrap();
            synced(seq, t);
        }
    }
    wal.sync(t, false).unwrap();
    t
}

/// Invariant 6: the window past a segment's records is written zeros, not a hole, kept so
/// as appends go on, while the rest of the segment stays a hole; records written across
/// many top-ups of those zeros replay whole.
#[test]
fn a_segment_keeps_zeros_written_past_its_records() {
    let tmp = tempfile::tempdir().unwrap();
    let wal = open(tmp.path());
    let seg = current_segment(&wal);
    let header = record::HEADER_LEN as u64;
    let window = ZEROED_AHEAD_BYTES;
    assert!(
        allocated(&seg) >= header + window,
        "a new segment holds {} bytes of disk",
        allocated(&seg)
    );
    let t = append_big_records(&wal, |seq, t| {
        let records_end = header + t;
        let held = allocated(&seg);
        assert!(
            held >= records_end + window / 2,
            "after {seq} records ({records_end} bytes) the segment holds {held} bytes of disk"
        );
        assert!(
            held <= records_end + 2 * window,
            "after {seq} records ({records_end} bytes) the segment holds {held} bytes of disk: its zeros run ahead of the window"
        );
    });
    assert!(header + t > 3 * window, "the records span several windows");
    let data = std::fs::read(&seg).unwrap();
    let records_end = usize::try_from(header + t).unwrap();
    assert!(data[records_end..].iter().all(|&b| b == 0));
    drop(wal);
    assert_eq!(len(&seg), header + t);
    assert_eq!(recovered_seqs(tmp.path()), (1..=400).collect::<Vec<_>>());
}

/// Invariant 6: zeros that cannot be written cost the log nothing but their gain: a segment
/// whose first zeros fail writes none after them, and takes and replays its records as a
/// segment with zeros does.
#[test]
fn a_segment_whose_zeros_fail_goes_on_without_them() {
    let tmp = tempfile::tempdir().unwrap();
    let faults = Arc::new(crate::env::FaultInjector::new(7));
    faults.fail_nth(crate::env::Op::ZeroFill, 1);
    let env = Env::with_faults(Arc::new(crate::env::SystemClock), Arc::clone(&faults));
    let wal = Wal::open(&env, tmp.path(), DEFAULT_ROLL_SIZE_BYTES).unwrap();
    wal.recover(|_| Ok(())).unwrap();
    let seg = current_segment(&wal);
    let header = record::HEADER_LEN as u64;
    let t = append_big_records(&wal, |_, _| {});
    assert_eq!(
        faults.done_count(crate::env::Op::ZeroFill),
        0,
        "zeros were written after the first failed"
    );
    let records_end = header + t;
    assert!(
        allocated(&seg) < records_end + ZEROED_AHEAD_BYTES / 2,
        "the segment holds {} bytes of disk for {records_end} bytes of records",
        allocated(&seg)
    );
    drop(wal);
    assert_eq!(len(&seg), records_end);
    assert_eq!(recovered_seqs(tmp.path()), (1..=400).collect::<Vec<_>>());
}

/// A crash leaves the current segment in its zeros (the process never closed it): replay
/// ends its records there, keeps every synced one, and cuts the zeros away.
#[test]
fn a_crash_leaves_the_segment_in_its_zeros_and_replay_ends_there() {
    let tmp = tempfile::tempdir().unwrap();
    let (wal, faults) = faulty(tmp.path());
    let seg = current_segment(&wal);
    let mut t = 0;
    for seq in 1..=3 {
        t = wal.append(1, seq, &cells("row", 2)).unwrap();
    }
    wal.sync(t, false).unwrap();
    faults.crash_after(1, false);
    let t = wal.append(1, 4, &cells("row", 2)).unwrap();
    assert!(wal.sync(t, false).is_err());
    drop(wal);
    faults.simulate_crash().unwrap();
    assert_eq!(len(&seg), MADE);
    let records_end = {
        let data = std::fs::read(&seg).unwrap();
        data.iter().rposition(|&b| b != 0).unwrap() + 1
    };
    assert_eq!(recovered_seqs(tmp.path()), [1, 2, 3]);
    assert_eq!(len(&seg), records_end as u64);
}

/// Segments 1 and up of a log rolled at 1 KiB, every record synced and the log closed.
fn rolled_log(dir: &Path) -> Vec<PathBuf> {
    let wal = Wal::open(&Env::default(), dir, 1024).unwrap();
    wal.recover(|_| Ok(())).unwrap();
    for seq in 1..=30 {
        let t = wal.append(1, seq, &cells("row", 4)).unwrap();
        wal.sync(t, false).unwrap();
    }
    wal.shutdown().unwrap();
    drop(wal);
    let ids = replay::list_segments(&Env::default(), dir).unwrap();
    assert!(ids.len() > 3, "{ids:?}");
    ids.iter()
        .map(|id| dir.join(replay::segment_name(*id)))
        .collect()
}

fn set_len(path: &Path, len: u64) {
    OpenOptions::new()
        .write(true)
        .open(path)
        .unwrap()
        .set_len(len)
        .unwrap();
}

/// A closed segment still in its zeros (a power cut lost the cut that closed it) is read to
/// its last record, then the segments after it.
#[test]
fn a_closed_segment_in_its_zeros_replays_with_the_next() {
    let tmp = tempfile::tempdir().unwrap();
    let segments = rolled_log(tmp.path());
    let first = &segments[0];
    let records_end = len(first);
    set_len(first, records_end + 2048);
    assert_eq!(recovered_seqs(tmp.path()), (1..=30).collect::<Vec<_>>());
    assert_eq!(len(first), records_end);
}

/// Only zeros to the end are room never written: a torn record before them in a closed
/// segment is damage in the middle of the log, as it was without them.
#[test]
fn a_torn_record_before_the_zeros_of_a_closed_segment_is_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    let segments = rolled_log(tmp.path());
    let first = &segments[0];
    let records_end = len(first);
    set_len(first, records_end - 5);
    set_len(first, records_end + 2048);
    let before = std::fs::read(first).unwrap();
    let err = reopen(tmp.path()).unwrap_err();
    assert!(matches!(err, Error::Corruption { .. }), "{err}");
    assert!(err.to_string().contains("with records after it"), "{err}");
    assert_eq!(std::fs::read(first).unwrap(), before);
}

/// A crash after the log made its next segment and before a record reached it leaves that
/// segment as its header and zeros: the torn record before it is still the end of the log.
#[test]
fn a_torn_tail_before_a_segment_never_written_is_the_end_of_the_log() {
    let tmp = tempfile::tempdir().unwrap();
    let wal = open(tmp.path());
    let t = wal.append(1, 1, &cells("a", 2)).unwrap();
    let t = t.max(wal.append(1, 2, &cells("b", 2)).unwrap());
    wal.sync(t, false).unwrap();
    drop(wal);
    let seg = last_segment(tmp.path());
    set_len(&seg, len(&seg) - 5);
    let ids = replay::list_segments(&Env::default(), tmp.path()).unwrap();
    let next = tmp
        .path()
        .join(replay::segment_name(ids[ids.len() - 1] + 1));
    std::fs::write(&next, record::header()).unwrap();
    set_len(&next, MADE);
    assert_eq!(recovered_seqs(tmp.path()), [1]);
}

/// A record's header is never all zeros, so the search for a record after damage ends at
/// the last byte that is not a zero and still finds one there.
#[test]
fn the_search_for_a_record_after_damage_stops_where_the_zeros_begin() {
    assert_ne!(crate::checksum::crc32c(&[0; 4]), 0);
    let mut one = Vec::new();
    record::encode_record(&mut one, 1, 9, &cells("r", 1));
    let mut data = vec![0xee; 40];
    data.extend_from_slice(&one);
    data.extend_from_slice(&[0; 4096]);
    assert!(replay::holds_a_record_after(&data, 0));
    data.truncate(40);
    data.extend_from_slice(&[0; 4096]);
    assert!(!replay::holds_a_record_after(&data, 0));
}

/// Invariant 7: a sync's end releases the writers it covered and one other, to lead the
/// next; a failure releases every one.
#[test]
fn a_syncs_end_releases_the_covered_writers_and_one_to_lead() {
    let writer = |ticket: u64| {
        let t = std::thread::Builder::new()
            .name(format!("w{ticket}"))
            .spawn(|| ())
            .unwrap();
        let thread = t.thread().clone();
        t.join().unwrap();
        (ticket, thread)
    };
    let names = |ts: &[std::thread::Thread]| -> Vec<String> {
        ts.iter().map(|t| t.name().unwrap().to_owned()).collect()
    };
    let mut s = SyncState {
        synced: 12,
        waiters: [15, 5, 20, 12].map(writer).to_vec(),
        ..SyncState::default()
    };
    assert_eq!(names(&s.released()), ["w5", "w12", "w15"]);
    assert_eq!(s.waiters.len(), 1);
    assert_eq!(s.waiters[0].0, 20);
    s.waiters.extend([30, 40].map(writer));
    s.failed = Some("disk gone".into());
    assert_eq!(names(&s.released()), ["w20", "w30", "w40"]);
    assert!(s.waiters.is_empty());
}

/// A stopped log ends where its records do at once, though another thread still holds it.
#[test]
fn a_stopped_log_ends_at_its_records_while_still_held() {
    let tmp = tempfile::tempdir().unwrap();
    let wal = open(tmp.path());
    let held = Arc::clone(&wal);
    let seg = current_segment(&wal);
    let t = wal.append(1, 1, &cells("row", 2)).unwrap();
    wal.shutdown().unwrap();
    assert_eq!(len(&seg), record::HEADER_LEN as u64 + t);
    drop(wal);
    drop(held);
    assert_eq!(recovered_seqs(tmp.path()), [1]);
}

/// The split of a dead server's log reads a closed segment still in its zeros to its last
/// record, as replay does (invariant 6).
#[test]
fn the_split_reads_a_closed_segment_in_its_zeros_to_its_last_record() {
    let tmp = tempfile::tempdir().unwrap();
    let segments = rolled_log(tmp.path());
    let first = &segments[0];
    let edits = |path: &Path| -> Vec<u64> {
        let by_region = split::read_segment(&Env::default(), path).unwrap().unwrap();
        by_region.values().flatten().map(|e| e.seq_id).collect()
    };
    let before = edits(first);
    assert!(!before.is_empty());
    set_len(first, len(first) + 2048);
    assert_eq!(edits(first), before);
}
