//! Basalt's storage engine: how one region and one log work.
//!
//! Writes go WAL → memstore; flushes turn memstores into immutable store files tracked by a
//! region manifest; compactions merge them. Reads merge memstores and files through a store
//! scanner whose every decision comes from a pure query matcher. See the project's
//! `docs/architecture.md` for the architecture and `docs/formats/` for the file formats.
//!
//! Which regions and which log a machine has is decided above this crate, in `basalt-node`
//! (its region server and master, and the embedded `Database`).

/// Checks an invariant a module header states, when the `invariants` feature is on (tests and
/// CI: pebble's `invariants.Enabled`); without it the check compiles away. A violation
/// panics with the message: a bug, found where it happens rather than where it is noticed.
macro_rules! invariant {
    ($cond:expr, $($msg:tt)+) => {
        if cfg!(feature = "invariants") {
            assert!($cond, $($msg)+);
        }
    };
}

pub mod archive;
pub mod block_cache;
mod checksum;
mod codec;
pub mod compaction;
pub mod env;
pub mod failpoint;
pub mod fuzzing;
pub mod manifest;
pub mod memstore;
pub mod region;
pub mod store;
pub mod storefile;
pub mod wal;

pub use region::{BackgroundEvent, RegionInfo, RegionLoad};

/// Whether this build checks the invariants in module headers at run time.
pub const INVARIANTS: bool = cfg!(feature = "invariants");

#[cfg(all(test, feature = "invariants"))]
mod invariants_tests {
    #[test]
    #[should_panic(expected = "read point 5 above")]
    fn a_broken_invariant_panics_when_the_feature_is_on() {
        let (read, write) = (5, 4);
        invariant!(read <= write, "read point {read} above write point {write}");
    }
}
