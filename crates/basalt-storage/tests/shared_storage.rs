//! The engine's files on shared storage with object semantics (create-if-absent, get, range
//! get, list, delete), over the in-memory store: objects, chunked logs, fencing, the WAL and
//! the manifest. The same store interface over a shared directory and S3 is tested in
//! `basalt-node`.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use basalt_model::{Cell, Error};
use basalt_storage::env::object::{self_test, Listing, Upload, PART_BYTES};
use basalt_storage::env::{Env, MemoryStore, ObjectStore, SystemClock};
use basalt_storage::manifest::VersionedFile;
use basalt_storage::wal::{Wal, DEFAULT_ROLL_SIZE_BYTES};
use bytes::Bytes;

const ROOT: &str = "memory://test/root";

fn shared(store: Arc<dyn ObjectStore>) -> Env {
    Env::on_shared(Arc::new(SystemClock), store, PathBuf::from(ROOT))
}

fn path(rel: &str) -> PathBuf {
    Path::new(ROOT).join(rel)
}

fn kind(e: &Error) -> io::ErrorKind {
    match e {
        Error::Io { source, .. } => source.kind(),
        other => panic!("not an I/O error: {other}"),
    }
}

#[test]
fn the_self_test_accepts_an_atomic_store() {
    let store = MemoryStore::new();
    self_test(store.as_ref(), 32).unwrap();
    assert!(store.list_all("").unwrap().is_empty(), "it cleans up");
}

/// The in-memory store with faults a test turns on: creates that overwrite (a store without
/// conditional writes), and a create that stores its object and then reports a failure (a
/// timeout after the write landed). It counts multipart uploads.
#[derive(Debug, Default)]
struct Hooked {
    inner: Arc<MemoryStore>,
    overwrite: bool,
    /// Makes an overwriting create one step, as a store's plain PUT is: every one succeeds,
    /// however the writers interleave.
    overwriting: std::sync::Mutex<()>,
    fail_next_create_after_storing: std::sync::atomic::AtomicBool,
    uploads: AtomicUsize,
    aborts: Arc<AtomicUsize>,
    /// One more than the deletes that still succeed before every later one fails (0: no
    /// limit).
    fail_deletes_after: AtomicUsize,
    /// Reads of content that fail before they answer again.
    failing_reads: AtomicUsize,
}

impl Hooked {
    fn read_fails(&self) -> io::Result<()> {
        let failing = self
            .failing_reads
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1));
        match failing {
            Ok(_) => Err(io::Error::new(io::ErrorKind::TimedOut, "no answer in time")),
            Err(_) => Ok(()),
        }
    }
}

/// An upload whose aborts [`Hooked`] counts.
struct CountedUpload {
    inner: Box<dyn Upload>,
    aborts: Arc<AtomicUsize>,
}

impl Upload for CountedUpload {
    fn put_part(&mut self, data: Bytes) -> io::Result<()> {
        self.inner.put_part(data)
    }
    fn complete(self: Box<Self>) -> io::Result<()> {
        self.inner.complete()
    }
    fn abort(self: Box<Self>) {
        self.aborts.fetch_add(1, Ordering::SeqCst);
        self.inner.abort();
    }
}

impl ObjectStore for Hooked {
    fn url(&self) -> &str {
        if self.overwrite {
            "s3://no-conditional-writes/x"
        } else {
            self.inner.url()
        }
    }
    fn put_if_absent(&self, key: &str, data: Bytes) -> io::Result<()> {
        let one_put = self.overwrite.then(|| self.overwriting.lock().unwrap());
        if one_put.is_some() {
            self.inner.delete(key)?;
        }
        self.inner.put_if_absent(key, data)?;
        drop(one_put);
        if self
            .fail_next_create_after_storing
            .swap(false, Ordering::SeqCst)
        {
            return Err(io::Error::new(io::ErrorKind::TimedOut, "no answer in time"));
        }
        Ok(())
    }
    fn upload(&self, key: &str) -> io::Result<Box<dyn Upload>> {
        self.uploads.fetch_add(1, Ordering::SeqCst);
        Ok(Box::new(CountedUpload {
            inner: self.inner.upload(key)?,
            aborts: Arc::clone(&self.aborts),
        }))
    }
    fn get(&self, key: &str) -> io::Result<Option<Bytes>> {
        self.read_fails()?;
        self.inner.get(key)
    }
    fn get_range(&self, key: &str, offset: u64, len: usize) -> io::Result<Bytes> {
        self.read_fails()?;
        self.inner.get_range(key, offset, len)
    }
    fn size(&self, key: &str) -> io::Result<Option<u64>> {
        self.inner.size(key)
    }
    fn list(&self, prefix: &str) -> io::Result<Listing> {
        self.inner.list(prefix)
    }
    fn list_all(&self, prefix: &str) -> io::Result<Vec<String>> {
        self.inner.list_all(prefix)
    }
    fn delete(&self, key: &str) -> io::Result<()> {
        let left = self.fail_deletes_after.load(Ordering::SeqCst);
        match left {
            0 => {}
            1 => return Err(io::Error::other("the store went away")),
            n => self.fail_deletes_after.store(n - 1, Ordering::SeqCst),
        }
        self.inner.delete(key)
    }
}

#[test]
fn the_self_test_refuses_a_store_without_atomic_create() {
    let store = Hooked {
        overwrite: true,
        ..Hooked::default()
    };
    let e = self_test(&store, 32).unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::Unsupported);
    let msg = e.to_string();
    assert!(
        msg.contains("s3://no-conditional-writes/x")
            && msg.contains("32 of 32 concurrent creates of one key succeeded")
            && msg.contains("If-None-Match"),
        "{msg}"
    );
}

#[test]
fn a_file_is_one_object_stored_at_its_sync_and_never_overwritten() {
    let store = MemoryStore::new();
    let env = shared(store.clone());
    let p = path("data/t/1/f/1.sf");
    let mut f = env.create(&p).unwrap();
    f.write_all(b"hello ").unwrap();
    f.write_all(b"world").unwrap();
    assert_eq!(
        store.get("data/t/1/f/1.sf").unwrap(),
        None,
        "nothing before the sync"
    );
    f.sync_all().unwrap();
    assert_eq!(env.read_all(&p).unwrap(), b"hello world");
    assert_eq!(env.file_size(&p).unwrap(), 11);
    let r = env.open(&p).unwrap();
    assert_eq!(*r.read_at(6, 5).unwrap(), *b"world");
    assert!(matches!(r.read_at(8, 5), Err(Error::Corruption { .. })));
    // Objects are immutable: no append after the sync, no second creation.
    assert_eq!(
        kind(&f.write_all(b"!").unwrap_err()),
        io::ErrorKind::Unsupported
    );
    let mut again = env.create(&p).unwrap();
    again.write_all(b"other").unwrap();
    assert_eq!(
        kind(&again.sync_all().unwrap_err()),
        io::ErrorKind::AlreadyExists
    );
    assert_eq!(env.read_all(&p).unwrap(), b"hello world");
}

#[test]
fn a_store_writer_that_finds_its_files_name_taken_leaves_the_file_alone() {
    use basalt_model::{CellType, ColumnFamilyDescriptor};
    use basalt_storage::block_cache::BlockCache;
    use basalt_storage::compaction::Throttle;
    use basalt_storage::region::RegionInfo;
    use basalt_storage::store::Store;
    // A region's next server and the zombie it took the region from (its session expired,
    // it has not noticed yet) number their store files alike, from the same manifest.
    let env = shared(MemoryStore::new());
    let region_dir = path("data/default/t/7");
    let info = RegionInfo {
        id: 7,
        start_key: Bytes::new(),
        end_key: Bytes::new(),
    };
    let cache = BlockCache::new(1 << 20);
    let open = || {
        let family = ColumnFamilyDescriptor::new("f");
        Store::open(&env, &region_dir, &info, family, &[], &cache).unwrap()
    };
    let (next, zombie) = (open(), open());
    let flush = |s: &Store, c: Cell, file: u64| {
        s.insert(&c);
        let snap = s.take_snapshot().unwrap();
        let written = s.write_flush(&snap, file, 10, 0, u64::MAX)?;
        s.finish_flush(written.clone());
        Ok::<_, Error>(written)
    };
    let put = |v: &str| Cell::put("r", "f", "q", 5, v.as_bytes().to_vec());
    let kept: Vec<_> = [1, 2]
        .into_iter()
        .map(|file| flush(&next, put("next"), file).unwrap().unwrap())
        .collect();
    let contents = || -> Vec<Vec<u8>> {
        kept.iter()
            .map(|f| env.read_all(f.path()).unwrap())
            .collect()
    };
    let before = contents();

    // The zombie's major compaction of a file holding only a marker writes nothing, and
    // stores nothing under the name of the next server's file 2...
    let marker = Cell::marker("r", "f", "q", 5, CellType::DeleteColumn);
    let own = flush(&zombie, marker, 3).unwrap().unwrap();
    let mut throttle = Throttle::new(None, env.instant());
    let out = zombie.write_compaction(&[own], 2, true, 10, 0, &mut throttle);
    assert!(out.unwrap().is_none());
    // ...and its flush finds the name of file 1 taken.
    let e = flush(&zombie, put("zombie"), 1).unwrap_err();
    assert_eq!(kind(&e), io::ErrorKind::AlreadyExists);

    assert_eq!(
        contents(),
        before,
        "the next server's files are left as they were"
    );
}

#[test]
fn a_large_file_goes_up_in_parts_and_reads_back_by_ranges() {
    let store = Arc::new(Hooked::default());
    let env = shared(store.clone());
    let p = path("big");
    let data: Vec<u8> = (0..(5 * PART_BYTES / 2 + 123))
        .map(|i| (i % 251) as u8)
        .collect();
    let mut f = env.create(&p).unwrap();
    for piece in data.chunks(1 << 20) {
        f.write_all(piece).unwrap();
    }
    assert_eq!(
        store.inner.size("big").unwrap(),
        Some(0),
        "before it completes the key holds only its claim"
    );
    // A second writer of the same name is refused when it claims the key.
    let mut rival = env.create(&p).unwrap();
    let e = rival.write_all(&data[..2 * PART_BYTES]).unwrap_err();
    assert_eq!(kind(&e), io::ErrorKind::AlreadyExists);
    let e = rival.write_all(b"more").unwrap_err();
    assert!(
        e.to_string().contains("takes no more"),
        "a failed writer stays failed: {e}"
    );
    drop(rival);
    // A writer dropped before its sync gives its upload up; its claim goes with the file.
    let abandoned_path = path("abandoned");
    let mut abandoned = env.create(&abandoned_path).unwrap();
    abandoned.write_all(&data[..2 * PART_BYTES]).unwrap();
    drop(abandoned);
    assert_eq!(store.aborts.load(Ordering::SeqCst), 1);
    assert_eq!(store.inner.size("abandoned").unwrap(), Some(0));
    env.remove_file(&abandoned_path).unwrap();
    assert_eq!(store.inner.size("abandoned").unwrap(), None);
    f.sync_all().unwrap();
    assert_eq!(store.uploads.load(Ordering::SeqCst), 2);
    assert_eq!(
        store.aborts.load(Ordering::SeqCst),
        1,
        "the completed upload is not aborted"
    );
    let r = env.open(&p).unwrap();
    assert_eq!(r.len(), data.len() as u64);
    let at = PART_BYTES as u64 - 10;
    assert_eq!(
        *r.read_at(at, 20).unwrap(),
        data[at as usize..at as usize + 20]
    );
    // A small file is a single create.
    let mut small = env.create(&path("small")).unwrap();
    small.write_all(&data[..1000]).unwrap();
    small.sync_all().unwrap();
    assert_eq!(store.uploads.load(Ordering::SeqCst), 2);
}

#[test]
fn directories_are_prefixes() {
    let store = MemoryStore::new();
    let env = shared(store.clone());
    for rel in ["d/a", "d/sub/b", "d/sub/deeper/c", "e"] {
        let mut f = env.create(&path(rel)).unwrap();
        f.write_all(rel.as_bytes()).unwrap();
        f.sync_data().unwrap();
    }
    env.create_dir_all(&path("d/empty")).unwrap();
    assert_eq!(env.list(&path("d")).unwrap(), ["a", "sub"]);
    assert_eq!(env.list(&path("")).unwrap(), ["d", "e"]);
    assert!(env.is_dir(&path("d/sub")).unwrap());
    assert!(!env.is_dir(&path("d/a")).unwrap());
    assert!(env.exists(&path("d/a")).unwrap() && env.exists(&path("d/sub")).unwrap());
    assert!(!env.exists(&path("d/none")).unwrap());
    env.rename(&path("d/sub"), &path("archive/1/sub")).unwrap();
    assert_eq!(
        store.list_all("").unwrap(),
        ["archive/1/sub/b", "archive/1/sub/deeper/c", "d/a", "e"]
    );
    env.remove_dir_all(&path("archive")).unwrap();
    env.remove_file(&path("d/a")).unwrap();
    assert_eq!(store.list_all("").unwrap(), ["e"]);
    let outside = env.create(Path::new("/elsewhere/x")).unwrap_err();
    assert!(
        outside.to_string().contains("outside the shared storage"),
        "{outside}"
    );
}

#[test]
fn a_log_is_one_chunk_per_sync_and_a_writer_that_finds_its_chunk_taken_is_fenced() {
    let store = MemoryStore::new();
    let env = shared(store.clone());
    let p = path("wal/s1/00000000000000000001.wal");
    let mut log = env.create_log(&p).unwrap();
    log.write_all(b"one").unwrap();
    log.try_clone().unwrap().sync_data().unwrap();
    // A clone syncs what was written before it was made, and no more.
    log.write_all(b"two").unwrap();
    let mut syncer = log.try_clone().unwrap();
    log.write_all(b"three").unwrap();
    syncer.sync_data().unwrap();
    syncer.sync_data().unwrap(); // nothing new for it: no chunk
    assert_eq!(env.read_all(&p).unwrap(), b"onetwo");
    log.sync_data().unwrap();
    let chunks = store.list_all("wal/s1/00000000000000000001.wal/").unwrap();
    assert_eq!(chunks.len(), 3, "{chunks:?}");
    assert_eq!(env.read_all(&p).unwrap(), b"onetwothree");
    assert_eq!(env.file_size(&p).unwrap(), 11);
    assert_eq!(
        env.list(&path("wal/s1")).unwrap(),
        ["00000000000000000001.wal"]
    );
    assert!(env.create_log(&p).is_err(), "a log is created once");
    // Another writer (a master fencing a dead server) takes the next chunk.
    store
        .put_if_absent(
            &format!("{}/{:020}", "wal/s1/00000000000000000001.wal", 3),
            Bytes::new(),
        )
        .unwrap();
    log.write_all(b"four").unwrap();
    let e = log.sync_data().unwrap_err();
    assert!(e.to_string().contains("fenced"), "{e}");
    log.write_all(b"five").unwrap();
    assert!(log.sync_data().unwrap_err().to_string().contains("fenced"));
    assert_eq!(
        store.list_all("wal/s1/").unwrap().len(),
        4,
        "it wrote nothing more"
    );
    // Reads end at the fence, and cutting the log back would delete the fence: refused.
    assert_eq!(env.read_all(&p).unwrap(), b"onetwothree");
    let e = env.truncate(&p, 3).unwrap_err();
    assert!(e.to_string().contains("fenced"), "{e}");
    env.remove_log(&p).unwrap();
    assert!(store.list_all("").unwrap().is_empty());
}

#[test]
fn cutting_a_log_back_deletes_whole_chunks_only() {
    let store = MemoryStore::new();
    let env = shared(store.clone());
    let p = path("wal/s1/00000000000000000001.wal");
    let mut log = env.create_log(&p).unwrap();
    for part in [&b"one"[..], b"two", b"three"] {
        log.write_all(part).unwrap();
        log.sync_data().unwrap();
    }
    env.truncate(&p, 3).unwrap();
    assert_eq!(env.read_all(&p).unwrap(), b"one");
    assert!(env.truncate(&p, 1).is_err(), "a chunk cannot be cut");
}

/// Appends `data` to the log at `p` as one chunk.
fn chunk(log: &mut basalt_storage::env::WritableFile, data: &[u8]) -> basalt_model::Result<()> {
    log.write_all(data)?;
    log.sync_data()
}

#[test]
fn fencing_a_log_directory_stops_its_writer_in_every_log_old_and_new() {
    let store = MemoryStore::new();
    let env = shared(store.clone());
    let dir = path("wal/rs,16020,1");
    let (a, b) = (dir.join("1.wal"), dir.join("2.wal"));
    let mut la = env.create_log(&a).unwrap();
    chunk(&mut la, b"a0").unwrap();
    chunk(&mut la, b"a1").unwrap();
    let mut lb = env.create_log(&b).unwrap();
    chunk(&mut lb, b"b0").unwrap();
    assert_eq!(env.fence_logs(&dir, "master").unwrap(), 2);
    // Each writer's next chunk collides with the fence.
    for log in [&mut la, &mut lb] {
        let e = chunk(log, b"late").unwrap_err();
        assert!(
            matches!(e, Error::DoNotRetry(ref m) if m.contains("fenced")),
            "{e}"
        );
    }
    // A log the writer creates after the fence is given up after its first chunk.
    let c = dir.join("3.wal");
    let mut lc = env.create_log(&c).unwrap();
    let e = chunk(&mut lc, b"header").unwrap_err();
    assert!(
        matches!(e, Error::DoNotRetry(ref m) if m.contains("fenced")),
        "{e}"
    );
    assert!(chunk(&mut lc, b"record").is_err(), "nothing more");
    // Readers see every chunk stored before the fences, and nothing of the late log's but
    // its header, which holds no record.
    assert_eq!(env.read_all(&a).unwrap(), b"a0a1");
    assert_eq!(env.read_all(&b).unwrap(), b"b0");
    assert_eq!(env.file_size(&a).unwrap(), 4);
    // Fencing again (a master resuming a recovery) fences the late log too, and then
    // changes nothing.
    assert_eq!(env.fence_logs(&dir, "master").unwrap(), 3);
    let before = store.list_all("").unwrap();
    assert_eq!(env.fence_logs(&dir, "master").unwrap(), 3);
    assert_eq!(store.list_all("").unwrap(), before);
    assert_eq!(env.read_all(&c).unwrap(), b"header");
    // Once split, a log's records go and its fence stays: the writer still collides.
    env.clear_fenced_log(&a).unwrap();
    assert_eq!(env.read_all(&a).unwrap(), b"");
    assert!(chunk(&mut la, b"later").is_err());
    let mut again = env.create_log(&a);
    assert!(
        again.as_mut().map_or(true, |l| chunk(l, b"x").is_err()),
        "nothing takes the log's place"
    );
    let d = path("wal/other/1.wal");
    let mut ld = env.create_log(&d).unwrap();
    chunk(&mut ld, b"d0").unwrap();
    assert!(
        env.clear_fenced_log(&d).is_err(),
        "an unfenced log is its writer's"
    );
    // A log made in the fenced directory after the fencing is fenced as it is cleared.
    let e = dir.join("4.wal");
    let mut le = env.create_log(&e).unwrap();
    assert!(chunk(&mut le, b"header").is_err());
    env.clear_fenced_log(&e).unwrap();
    assert_eq!(env.read_all(&e).unwrap(), b"");
    assert!(env.create_log(&e).is_err(), "its fence keeps its place");
}

#[test]
fn a_gap_that_only_fences_follow_ends_the_log() {
    // A writer cut its chunk in doubt (2) while the master fenced the log after it (3).
    let store = MemoryStore::new();
    let env = shared(store.clone());
    for (n, data) in [(0u64, &b"h"[..]), (1, b"x"), (3, b"")] {
        store
            .put_if_absent(&format!("log/{n:020}"), Bytes::copy_from_slice(data))
            .unwrap();
    }
    assert_eq!(env.read_all(&path("log")).unwrap(), b"hx");
}

#[test]
fn a_log_removed_part_way_is_a_prefix_of_itself() {
    let store = Arc::new(Hooked::default());
    let env = shared(store.clone());
    let p = path("wal/s1/1.wal");
    let mut log = env.create_log(&p).unwrap();
    for part in [&b"a"[..], b"b", b"c"] {
        chunk(&mut log, part).unwrap();
    }
    store.fail_deletes_after.store(2, Ordering::SeqCst); // one delete, then failures
    assert!(env.remove_log(&p).is_err());
    assert_eq!(env.read_all(&p).unwrap(), b"ab");
}

#[test]
fn a_gap_in_a_log_is_an_error_not_an_end() {
    let store = MemoryStore::new();
    let env = shared(store.clone());
    for n in [0u64, 2] {
        store
            .put_if_absent(&format!("log/{n:020}"), Bytes::from_static(b"x"))
            .unwrap();
    }
    let e = env.read_all(&path("log")).unwrap_err();
    assert!(e.to_string().contains("lacks chunk 1"), "{e}");
}

#[test]
fn a_stale_manifest_writer_is_fenced_on_shared_storage() {
    let env = shared(MemoryStore::new());
    let dir = path("catalog");
    let (mut first, _) = VersionedFile::load::<Vec<u32>>(&env, &dir, "DOC").unwrap();
    first.commit(&env, &vec![1]).unwrap();
    let (mut stale, _) = VersionedFile::load::<Vec<u32>>(&env, &dir, "DOC").unwrap();
    let (mut owner, _) = VersionedFile::load::<Vec<u32>>(&env, &dir, "DOC").unwrap();
    owner.commit(&env, &vec![2]).unwrap();
    let e = stale.commit(&env, &vec![666]).unwrap_err();
    assert!(
        matches!(e, Error::DoNotRetry(ref m) if m.contains("fenced")),
        "{e}"
    );
    let (_, doc) = VersionedFile::load::<Vec<u32>>(&env, &dir, "DOC").unwrap();
    assert_eq!(doc, Some(vec![2]));
}

#[test]
fn a_metadata_commit_whose_answer_was_lost_counts_when_its_bytes_are_there() {
    let store = Arc::new(Hooked::default());
    let env = shared(store.clone());
    let dir = path("catalog");
    let (mut vf, _) = VersionedFile::load::<Vec<u32>>(&env, &dir, "DOC").unwrap();
    vf.commit(&env, &vec![1]).unwrap();
    // The store takes the next version and then answers a timeout: the version holds this
    // writer's bytes, so the commit happened, and the writer's next one goes above it.
    store
        .fail_next_create_after_storing
        .store(true, Ordering::SeqCst);
    vf.commit(&env, &vec![2]).unwrap();
    assert_eq!(vf.version(), 2);
    vf.commit(&env, &vec![3]).unwrap();
    let (_, doc) = VersionedFile::load::<Vec<u32>>(&env, &dir, "DOC").unwrap();
    assert_eq!(doc, Some(vec![3]));
}

#[test]
fn a_metadata_commit_in_doubt_is_settled_by_the_next_one() {
    let store = Arc::new(Hooked::default());
    let env = shared(store.clone());
    let dir = path("region");
    let (mut vf, _) = VersionedFile::load::<Vec<u32>>(&env, &dir, "DOC").unwrap();
    vf.commit(&env, &vec![1]).unwrap();
    // The store takes version 2 and answers a timeout, and the read back times out too:
    // the writer cannot tell whether it committed.
    store
        .fail_next_create_after_storing
        .store(true, Ordering::SeqCst);
    store.failing_reads.store(1, Ordering::SeqCst);
    let e = vf.commit(&env, &vec![2]).unwrap_err();
    assert!(!basalt_storage::manifest::is_fenced(&e), "{e}");
    // Its next commit reads version 2 again, still in vain: nothing is written.
    store.failing_reads.store(1, Ordering::SeqCst);
    vf.commit(&env, &vec![3]).unwrap_err();
    let (_, doc) = VersionedFile::load::<Vec<u32>>(&env, &dir, "DOC").unwrap();
    assert_eq!(doc, Some(vec![2]));
    // Then it finds its own bytes there, and goes above them.
    vf.commit(&env, &vec![3]).unwrap();
    assert_eq!(vf.version(), 3);
    let (_, doc) = VersionedFile::load::<Vec<u32>>(&env, &dir, "DOC").unwrap();
    assert_eq!(doc, Some(vec![3]));
    // A writer in doubt that finds another writer's bytes there is fenced: its create did
    // not land after all, and a writer that loaded version 3 too took version 4.
    let (mut other, _) = VersionedFile::load::<Vec<u32>>(&env, &dir, "DOC").unwrap();
    let mut owner = vf;
    store
        .fail_next_create_after_storing
        .store(true, Ordering::SeqCst);
    store.failing_reads.store(1, Ordering::SeqCst);
    owner.commit(&env, &vec![4]).unwrap_err();
    let keys = store.inner.list_all("").unwrap();
    let fourth = keys
        .iter()
        .find(|k| k.ends_with("DOC-00000000000000000004"));
    store.inner.delete(fourth.unwrap()).unwrap();
    other.commit(&env, &vec![5]).unwrap();
    let e = owner.commit(&env, &vec![6]).unwrap_err();
    assert!(basalt_storage::manifest::is_fenced(&e), "{e}");
    let (_, doc) = VersionedFile::load::<Vec<u32>>(&env, &dir, "DOC").unwrap();
    assert_eq!(doc, Some(vec![5]));
}

#[test]
fn a_stale_writer_is_fenced_even_after_the_version_above_its_own_was_cleaned_away() {
    let store = MemoryStore::new();
    let env = shared(store.clone());
    let dir = path("region");
    let (mut first, _) = VersionedFile::load::<Vec<u32>>(&env, &dir, "DOC").unwrap();
    first.commit(&env, &vec![1]).unwrap();
    // A zombie loaded version 1; the new owner commits 2 (its fence), then 3 and 4, which
    // clean versions 1 to 3 away.
    let (mut zombie, _) = VersionedFile::load::<Vec<u32>>(&env, &dir, "DOC").unwrap();
    let (mut owner, _) = VersionedFile::load::<Vec<u32>>(&env, &dir, "DOC").unwrap();
    for v in 2..=4 {
        owner.commit(&env, &vec![v]).unwrap();
    }
    let e = zombie.commit(&env, &vec![666]).unwrap_err();
    assert!(basalt_storage::manifest::is_fenced(&e), "{e}");
    let left = store.list_all("").unwrap();
    assert!(
        !left.iter().any(|k| k.ends_with("DOC-00000000000000000002")),
        "the zombie's version is removed: {left:?}"
    );
    let (_, doc) = VersionedFile::load::<Vec<u32>>(&env, &dir, "DOC").unwrap();
    assert_eq!(doc, Some(vec![4]));
    owner.commit(&env, &vec![5]).unwrap();
    let (_, doc) = VersionedFile::load::<Vec<u32>>(&env, &dir, "DOC").unwrap();
    assert_eq!(doc, Some(vec![5]));
}

#[test]
fn the_wal_on_shared_storage_recovers_every_synced_edit() {
    let store = MemoryStore::new();
    let env = shared(store.clone());
    let dir = path("wal/host,16020,1");
    let wal = Wal::open(&env, &dir, DEFAULT_ROLL_SIZE_BYTES).unwrap();
    wal.recover(|_| Ok(())).unwrap();
    for seq in 1..=20u64 {
        let cell = Cell::put(format!("r{seq}"), "f", "q", 1, b"v".to_vec());
        let t = wal.append(7, seq, &[cell]).unwrap();
        wal.sync(t, false).unwrap();
    }
    drop(wal);
    let mut seqs = Vec::new();
    let again = Wal::open(&env, &dir, DEFAULT_ROLL_SIZE_BYTES).unwrap();
    again
        .recover(|e| {
            seqs.push(e.seq_id);
            Ok(())
        })
        .unwrap();
    assert_eq!(seqs, (1..=20).collect::<Vec<_>>());
}

fn put(wal: &Wal, seq: u64) -> basalt_model::Result<()> {
    let cell = Cell::put(format!("r{seq}"), "f", "q", 1, b"v".to_vec());
    let t = wal.append(7, seq, &[cell])?;
    wal.sync(t, false)
}

fn recovered(env: &Env, dir: &Path) -> Vec<u64> {
    let mut seqs = Vec::new();
    let wal = Wal::open(env, dir, DEFAULT_ROLL_SIZE_BYTES).unwrap();
    wal.recover(|e| {
        seqs.push(e.seq_id);
        Ok(())
    })
    .unwrap();
    seqs
}

#[test]
fn the_wal_heals_past_a_sync_in_doubt_without_replaying_an_edit_twice() {
    let store = Arc::new(Hooked::default());
    let env = shared(store.clone());
    let dir = path("wal/host,16020,1");
    let wal = Wal::open(&env, &dir, DEFAULT_ROLL_SIZE_BYTES).unwrap();
    wal.recover(|_| Ok(())).unwrap();
    for seq in 1..=5 {
        put(&wal, seq).unwrap();
    }
    // The chunk of edit 6 lands, but its writer hears a timeout: 6 is not acknowledged.
    store
        .fail_next_create_after_storing
        .store(true, Ordering::SeqCst);
    assert!(put(&wal, 6).is_err());
    // The next write heals: the chunk in doubt is cut away, and 6 goes on in a new segment.
    for seq in 7..=9 {
        put(&wal, seq).unwrap();
    }
    drop(wal);
    assert_eq!(recovered(&env, &dir), (1..=9).collect::<Vec<_>>());
}

#[test]
fn a_fenced_wal_never_heals_and_leaves_the_fencers_chunk_alone() {
    let store = MemoryStore::new();
    let env = shared(store.clone());
    let dir = path("wal/host,16020,1");
    let wal = Wal::open(&env, &dir, DEFAULT_ROLL_SIZE_BYTES).unwrap();
    wal.recover(|_| Ok(())).unwrap();
    put(&wal, 1).unwrap();
    // Another writer takes the segment's next chunk (a master fencing this server).
    let segment = store.list_all("wal/").unwrap()[0]
        .rsplit_once('/')
        .unwrap()
        .0
        .to_owned();
    let taken = format!("{segment}/{:020}", 2);
    store
        .put_if_absent(&taken, Bytes::from_static(b"fence"))
        .unwrap();
    let e = put(&wal, 2).unwrap_err();
    assert!(
        matches!(e, Error::DoNotRetry(ref m) if m.contains("fenced")),
        "{e}"
    );
    for seq in 3..=4 {
        let e = put(&wal, seq).unwrap_err();
        assert!(
            matches!(e, Error::DoNotRetry(ref m) if m.contains("fenced")),
            "{e}"
        );
    }
    assert_eq!(store.get(&taken).unwrap().as_deref(), Some(&b"fence"[..]));
    let segments: std::collections::BTreeSet<String> = store
        .list_all("wal/")
        .unwrap()
        .iter()
        .map(|k| k.rsplit_once('/').unwrap().0.to_owned())
        .collect();
    assert_eq!(segments.len(), 1, "no new segment: {segments:?}");
}
