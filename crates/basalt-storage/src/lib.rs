//! Basalt's single-node storage engine and its embedded API, [`Database`].
//!
//! Writes go WAL → memstore; flushes turn memstores into immutable store files tracked by a
//! region manifest; compactions merge them. Reads merge memstores and files through a store
//! scanner whose every decision comes from a pure query matcher. See the project's
//! `DESIGN.md` for the architecture and `docs/formats/` for the file formats.
//!
//! This crate is not the server (`basalt-server`) and not a client: it is what both sit on.
//!
//! ```
//! use basalt_model::ops::{Get, Put};
//! use basalt_model::{ColumnFamilyDescriptor, TableDescriptor, TableName};
//! use basalt_storage::Database;
//!
//! let dir = tempfile::tempdir()?;
//! let db = Database::open(dir.path())?;
//! let name = TableName::parse("users")?;
//! db.create_table(TableDescriptor::new(&name, [ColumnFamilyDescriptor::new("cf")]), &[])?;
//! let users = db.table("users")?;
//! users.put(Put::new("alice").add("cf", "email", "alice@example.com"))?;
//! let row = users.get(Get::new("alice"))?;
//! assert_eq!(row.value(b"cf", b"email").map(|v| &v[..]), Some(&b"alice@example.com"[..]));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod archive;
pub mod block_cache;
pub mod catalog;
mod codec;
pub mod compaction;
mod database;
pub mod env;
pub mod fuzzing;
pub mod hbck;
mod manifest;
pub mod memstore;
pub mod region;
pub mod store;
pub mod storefile;
pub mod wal;

pub use catalog::{RegionState, RetiredRegion};
pub use database::{BackgroundConfig, Database, EngineStatsSnapshot, Options, Table, TableScanner};
pub use region::{BackgroundEvent, RegionInfo, RegionLoad};

/// The README's example, compiled and run as a doc test so it cannot rot.
#[doc = include_str!("../../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
