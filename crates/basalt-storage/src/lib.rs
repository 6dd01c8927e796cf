//! Basalt's storage engine: how one region and one log work.
//!
//! Writes go WAL → memstore; flushes turn memstores into immutable store files tracked by a
//! region manifest; compactions merge them. Reads merge memstores and files through a store
//! scanner whose every decision comes from a pure query matcher. See the project's
//! `docs/architecture.md` for the architecture and `docs/formats/` for the file formats.
//!
//! Which regions and which log a machine has is decided above this crate, in `basalt-node`
//! (its region server and master, and the embedded `Database`).

pub mod archive;
pub mod block_cache;
mod codec;
pub mod compaction;
pub mod env;
pub mod fuzzing;
pub mod manifest;
pub mod memstore;
pub mod region;
pub mod store;
pub mod storefile;
pub mod wal;

pub use region::{BackgroundEvent, RegionInfo, RegionLoad};
