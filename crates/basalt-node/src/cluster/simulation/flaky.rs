//! An object store that fails at random, for the simulation: a seeded share of the driving
//! thread's operations fails, and half of the failed writes fail after taking effect (a
//! request the store carried out but whose answer was lost, as a timed-out request to S3
//! may be). Background threads (flusher, compactor) see no faults: their timing varies from
//! run to run, and a fault drawn by them would make a seed's schedule vary too. It can
//! also crash: after a number of operations, every one fails (the process that was acting
//! died there). A test may also fail every read of chosen keys' content, on any thread.

use std::io;
use std::sync::Arc;
use std::thread::ThreadId;

use basalt_storage::env::object::{Listing, Upload};
use basalt_storage::env::{MemoryStore, ObjectStore};
use bytes::Bytes;
use parking_lot::Mutex;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

#[derive(Debug)]
pub(in crate::cluster) struct FlakyStore {
    inner: Arc<MemoryStore>,
    faults: Arc<Faults>,
}

/// The faults to draw, shared with uploads under way.
#[derive(Debug)]
struct Faults {
    driver: ThreadId,
    state: Mutex<Flaky>,
}

#[derive(Debug)]
struct Flaky {
    rng: StdRng,
    /// Operations failed per thousand.
    per_mille: u32,
    injected: u64,
    /// Operations left before a crash: from then on every operation fails, as if the
    /// process making them had died there.
    crash_in: Option<u32>,
    /// Every read of the content of a key holding this fails, whatever the thread.
    unreadable: Option<String>,
}

/// What a faulty write does: nothing and fail, or take effect and fail.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Fault {
    None,
    Before,
    After,
}

fn injected(op: &str, key: &str) -> io::Error {
    io::Error::other(format!("injected fault: {op} {key}"))
}

impl FlakyStore {
    /// Faults drawn from `seed` on the calling thread's operations; none until
    /// [`FlakyStore::set_rate`].
    pub(in crate::cluster) fn new(inner: Arc<MemoryStore>, seed: u64) -> Arc<FlakyStore> {
        Arc::new(FlakyStore {
            inner,
            faults: Arc::new(Faults {
                driver: std::thread::current().id(),
                state: Mutex::new(Flaky {
                    rng: StdRng::seed_from_u64(seed),
                    per_mille: 0,
                    injected: 0,
                    crash_in: None,
                    unreadable: None,
                }),
            }),
        })
    }

    pub(super) fn set_rate(&self, per_mille: u32) {
        self.faults.state.lock().per_mille = per_mille;
    }

    /// The driver's next `ops` operations go as usual, and every one after them fails
    /// until [`FlakyStore::recover`]: the process acting then has crashed.
    pub(super) fn crash_after(&self, ops: u32) {
        self.faults.state.lock().crash_in = Some(ops);
    }

    pub(super) fn recover(&self) {
        self.faults.state.lock().crash_in = None;
    }

    /// Fails every read of the content of a key that holds `part` from now on (listing and
    /// sizes still answer), or none with `None`.
    pub(in crate::cluster) fn fail_reads_of(&self, part: Option<&str>) {
        self.faults.state.lock().unreadable = part.map(str::to_owned);
    }

    /// Faults injected so far.
    pub(super) fn injected(&self) -> u64 {
        self.faults.state.lock().injected
    }
}

impl Faults {
    fn draw(&self) -> Fault {
        if std::thread::current().id() != self.driver {
            return Fault::None;
        }
        let mut st = self.state.lock();
        if let Some(left) = st.crash_in.as_mut() {
            if *left == 0 {
                return Fault::Before;
            }
            *left -= 1;
        }
        if st.per_mille == 0 || st.rng.gen_range(0..1000) >= st.per_mille {
            return Fault::None;
        }
        st.injected += 1;
        if st.rng.gen_bool(0.5) {
            Fault::Before
        } else {
            Fault::After
        }
    }

    /// A read: fails or not (a read that took effect is one that answered).
    fn read(&self, op: &str, key: &str) -> io::Result<()> {
        let unreadable = self.state.lock().unreadable.clone();
        if op.starts_with("get") && unreadable.is_some_and(|part| key.contains(&part)) {
            return Err(injected(op, key));
        }
        match self.draw() {
            Fault::None => Ok(()),
            Fault::Before | Fault::After => Err(injected(op, key)),
        }
    }

    /// A write: `apply` runs unless the fault comes before it.
    fn write<T>(
        &self,
        op: &str,
        key: &str,
        apply: impl FnOnce() -> io::Result<T>,
    ) -> io::Result<T> {
        match self.draw() {
            Fault::None => apply(),
            Fault::Before => Err(injected(op, key)),
            Fault::After => {
                apply()?;
                Err(injected(op, key))
            }
        }
    }
}

struct FlakyUpload {
    faults: Arc<Faults>,
    key: String,
    inner: Box<dyn Upload>,
}

impl Upload for FlakyUpload {
    fn put_part(&mut self, data: Bytes) -> io::Result<()> {
        self.faults.read("upload part", &self.key)?;
        self.inner.put_part(data)
    }

    fn complete(self: Box<Self>) -> io::Result<()> {
        let FlakyUpload { faults, key, inner } = *self;
        faults.write("complete", &key, || inner.complete())
    }

    fn abort(self: Box<Self>) {
        self.inner.abort();
    }
}

impl ObjectStore for FlakyStore {
    fn url(&self) -> &str {
        self.inner.url()
    }

    fn put_if_absent(&self, key: &str, data: Bytes) -> io::Result<()> {
        self.faults
            .write("create", key, || self.inner.put_if_absent(key, data))
    }

    fn upload(&self, key: &str) -> io::Result<Box<dyn Upload>> {
        self.faults.read("upload", key)?;
        Ok(Box::new(FlakyUpload {
            faults: Arc::clone(&self.faults),
            key: key.to_owned(),
            inner: self.inner.upload(key)?,
        }))
    }

    fn get(&self, key: &str) -> io::Result<Option<Bytes>> {
        self.faults.read("get", key)?;
        self.inner.get(key)
    }

    fn get_range(&self, key: &str, offset: u64, len: usize) -> io::Result<Bytes> {
        self.faults.read("get range", key)?;
        self.inner.get_range(key, offset, len)
    }

    fn size(&self, key: &str) -> io::Result<Option<u64>> {
        self.faults.read("size", key)?;
        self.inner.size(key)
    }

    fn list(&self, prefix: &str) -> io::Result<Listing> {
        self.faults.read("list", prefix)?;
        self.inner.list(prefix)
    }

    fn list_all(&self, prefix: &str) -> io::Result<Vec<String>> {
        self.faults.read("list", prefix)?;
        self.inner.list_all(prefix)
    }

    fn delete(&self, key: &str) -> io::Result<()> {
        self.faults.write("delete", key, || self.inner.delete(key))
    }
}
