//! A fault-injecting layer under [`Env`](super::Env), for crash and disk-full tests (in the
//! spirit of RocksDB's FaultInjectionTestEnv).
//!
//! It sits on the real file system and remembers, for every file written through it, how much
//! was synced, and which files were created since their directory was last synced. It can:
//! - fail the Nth operation of a kind once (a transient error);
//! - "crash" at the Nth operation: that operation and every later one fails, as if the process
//!   had died there; a crashing write may be torn (a prefix reaches the file);
//! - run out of space: writes beyond a byte budget fail with `ENOSPC` until it is raised;
//! - afterwards, [`FaultInjector::simulate_crash`] makes the files look as they would after a
//!   power cut: unsynced bytes are dropped (or a random part of them kept, a torn tail) and
//!   files whose directory entry was never synced disappear.
//!
//! Reads (opening, reading, listing, sizing) and the directory lock can be failed once too;
//! they do not count as operations a crash is placed at, so adding a read to the engine does
//! not move the crash points of existing tests.
//!
//! Files that existed before the injector saw them are taken as fully durable. Deletions and
//! renames are taken as durable at once (a resurrected file is not modelled).

#![allow(clippy::disallowed_methods)]

use std::collections::HashMap;
use std::fs::OpenOptions;
use std::path::{Path, PathBuf};

use parking_lot::Mutex;

/// The operations faults can target.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    Create,
    Write,
    Sync,
    SyncDir,
    Remove,
    Truncate,
    Rename,
    /// Opening a file for reading, or reading its size.
    Open,
    /// Reading a whole file.
    Read,
    /// Listing a directory.
    List,
    /// Taking a data directory's lock.
    Lock,
    /// Writing zeros ahead of a preallocated file's data, which only saves the syncs that
    /// follow their block allocations: not counted among the operations a crash is placed
    /// at, and its failure is only ever injected, so that tests of crashes, torn writes
    /// and full disks see the same operations with and without it.
    ZeroFill,
}

impl Op {
    /// Whether the operation stands outside the count a crash is placed at: those that
    /// change nothing on disk, and the zeros written ahead of data (see [`Op::ZeroFill`]).
    fn uncounted(self) -> bool {
        matches!(
            self,
            Op::Open | Op::Read | Op::List | Op::Lock | Op::ZeroFill
        )
    }
}

#[derive(Debug, Default)]
struct Track {
    written: u64,
    synced: u64,
    /// Created since its directory was last synced: a crash may lose its entry.
    entry_unsynced: bool,
}

#[derive(Debug, Default)]
struct State {
    ops: u64,
    /// Operations that succeeded, by kind.
    done: HashMap<Op, u64>,
    crash_at: Option<u64>,
    crashed: bool,
    tear: bool,
    fail_once: HashMap<Op, u64>,
    space_left: Option<u64>,
    sync_delay: Option<std::time::Duration>,
    files: HashMap<PathBuf, Track>,
    rng: u64,
}

/// What a caller must do with an operation: go ahead, fail, or (a write) write a prefix and
/// then fail.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    Proceed,
    Fail(std::io::ErrorKind, &'static str),
    Tear(usize),
}

/// Shared by every handle of one [`Env`](super::Env).
#[derive(Debug, Default)]
pub struct FaultInjector {
    state: Mutex<State>,
}

impl FaultInjector {
    /// An injector that injects nothing until told; `seed` drives torn-write lengths.
    #[must_use]
    pub fn new(seed: u64) -> FaultInjector {
        FaultInjector {
            state: Mutex::new(State {
                rng: seed | 1,
                ..State::default()
            }),
        }
    }

    /// Crashes at the `n`th operation from now (1: the next one); `tear` lets a crashing write
    /// leave a prefix behind.
    pub fn crash_after(&self, n: u64, tear: bool) {
        let mut s = self.state.lock();
        s.crash_at = Some(s.ops + n.max(1));
        s.tear = tear;
    }

    /// Fails the `n`th operation of kind `op` from now once, with an I/O error.
    pub fn fail_nth(&self, op: Op, n: u64) {
        self.state.lock().fail_once.insert(op, n.max(1));
    }

    /// Makes every file sync take at least `delay` (a slow disk, whatever the test's file
    /// system is).
    pub fn set_sync_delay(&self, delay: Option<std::time::Duration>) {
        self.state.lock().sync_delay = delay;
    }

    /// Sleeps for the sync delay, if one is set (outside the lock: syncs overlap).
    pub(crate) fn delay_sync(&self) {
        let delay = self.state.lock().sync_delay;
        if let Some(d) = delay {
            std::thread::sleep(d);
        }
    }

    /// Limits the bytes that may still be written (`None`: no limit).
    pub fn set_space_left(&self, bytes: Option<u64>) {
        self.state.lock().space_left = bytes;
    }

    /// Whether the simulated crash has happened.
    #[must_use]
    pub fn crashed(&self) -> bool {
        self.state.lock().crashed
    }

    /// Operations seen so far.
    #[must_use]
    pub fn op_count(&self) -> u64 {
        self.state.lock().ops
    }

    /// Operations of kind `op` that succeeded so far (syncs, say, to see group commit).
    #[must_use]
    pub fn done_count(&self, op: Op) -> u64 {
        self.state.lock().done.get(&op).copied().unwrap_or(0)
    }

    /// Rewinds the files to what a power cut at the crash would have left, and clears every
    /// fault. Call it once every handle on the files is dropped.
    ///
    /// # Errors
    /// An I/O error adjusting a file.
    pub fn simulate_crash(&self) -> std::io::Result<()> {
        let mut s = self.state.lock();
        let files = std::mem::take(&mut s.files);
        for (path, t) in files {
            if t.entry_unsynced {
                match std::fs::remove_file(&path) {
                    Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
                    _ => continue,
                }
            }
            if t.written > t.synced {
                let torn = s.rng_below(t.written - t.synced + 1);
                let keep = t.synced + if s.tear { torn } else { 0 };
                match OpenOptions::new().write(true).open(&path) {
                    Ok(f) => f.set_len(keep)?,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => return Err(e),
                }
            }
        }
        let rng = s.rng;
        *s = State {
            rng,
            ..State::default()
        };
        Ok(())
    }

    /// Moves what is tracked at or under `from` to `to`.
    pub(crate) fn renamed(&self, from: &Path, to: &Path) {
        let mut s = self.state.lock();
        *s.done.entry(Op::Rename).or_default() += 1;
        let moved: Vec<PathBuf> = s
            .files
            .keys()
            .filter(|p| p.starts_with(from))
            .cloned()
            .collect();
        for p in moved {
            if let (Some(t), Ok(rest)) = (s.files.remove(&p), p.strip_prefix(from)) {
                let dest = if rest.as_os_str().is_empty() {
                    to.to_owned()
                } else {
                    to.join(rest)
                };
                s.files.insert(dest, t);
            }
        }
    }

    /// Starts tracking a file that existed before (opened for appending) at `len` bytes.
    pub(crate) fn track_existing(&self, path: &Path, len: u64) {
        let mut s = self.state.lock();
        let t = s.track(path);
        t.written = t.written.max(len);
        t.synced = t.synced.max(len);
    }

    /// Decides the fate of an operation on `path` (`len`: bytes, for writes).
    pub(crate) fn check(&self, op: Op, path: &Path, len: usize) -> Verdict {
        let mut s = self.state.lock();
        if s.crashed {
            return Verdict::Fail(
                std::io::ErrorKind::Other,
                "simulated crash: process is gone",
            );
        }
        if op.uncounted() {
            return match s.fail_once.get_mut(&op) {
                Some(n) if *n <= 1 => {
                    s.fail_once.remove(&op);
                    Verdict::Fail(std::io::ErrorKind::Other, "injected I/O error")
                }
                Some(n) => {
                    *n -= 1;
                    Verdict::Proceed
                }
                None => Verdict::Proceed,
            };
        }
        s.ops += 1;
        if s.crash_at.is_some_and(|at| s.ops >= at) {
            s.crashed = true;
            if op == Op::Write && s.tear && len > 1 {
                let n = s.rng_below(len as u64) as usize;
                s.track(path).written += n as u64;
                return Verdict::Tear(n);
            }
            return Verdict::Fail(std::io::ErrorKind::Other, "simulated crash");
        }
        if let Some(n) = s.fail_once.get_mut(&op) {
            *n -= 1;
            if *n == 0 {
                s.fail_once.remove(&op);
                return Verdict::Fail(std::io::ErrorKind::Other, "injected I/O error");
            }
        }
        if op == Op::Write {
            if let Some(left) = s.space_left {
                if (len as u64) > left {
                    return Verdict::Fail(
                        std::io::ErrorKind::StorageFull,
                        "No space left on device (injected)",
                    );
                }
                s.space_left = Some(left - len as u64);
            }
        }
        Verdict::Proceed
    }

    /// Records the effect of an operation that succeeded.
    pub(crate) fn done(&self, op: Op, path: &Path, len: usize) {
        let mut s = self.state.lock();
        *s.done.entry(op).or_default() += 1;
        match op {
            Op::Create => {
                let t = s.track(path);
                t.entry_unsynced = true;
            }
            Op::Write => s.track(path).written += len as u64,
            Op::Sync => {
                let t = s.track(path);
                t.synced = t.written;
            }
            Op::SyncDir => {
                for (p, t) in &mut s.files {
                    if p.parent() == Some(path) {
                        t.entry_unsynced = false;
                    }
                }
            }
            Op::Remove => {
                s.files.remove(path);
                // Removing a directory removes what was tracked under it.
                s.files.retain(|p, _| !p.starts_with(path));
            }
            Op::Truncate => {
                let t = s.track(path);
                t.written = len as u64;
                t.synced = len as u64;
            }
            // Recorded by `renamed`, which knows both paths.
            Op::Rename => {}
            Op::Open | Op::Read | Op::List | Op::Lock | Op::ZeroFill => {}
        }
    }
}

impl State {
    fn track(&mut self, path: &Path) -> &mut Track {
        self.files.entry(path.to_owned()).or_default()
    }

    /// xorshift64*: deterministic per seed.
    fn rng_below(&mut self, n: u64) -> u64 {
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        self.rng.wrapping_mul(0x2545_F491_4F6C_DD1D) % n.max(1)
    }
}
