//! One Basalt machine: which regions and which log it has.
//!
//! The embedded API is [`Database`]: a master and one region server in this process over a
//! local data directory (HBase's standalone mode). It implements the operation layer,
//! `basalt_api::Connection`, so every front end can run over it in process.
//!
//! ```
//! use basalt_model::ops::{Get, Put};
//! use basalt_model::{ColumnFamilyDescriptor, TableDescriptor, TableName};
//! use basalt_node::Database;
//!
//! let dir = tempfile::tempdir()?;
//! let db = Database::open(dir.path())?;
//! let name = TableName::parse("users")?;
//! db.create_table(TableDescriptor::new(&name, [ColumnFamilyDescriptor::new("cf")]), &[])?;
//! let users = db.table("users")?;
//! users.put(Put::new("alice").add("cf", "email", "alice@example.com"))?;
//! let row = users.get(Get::new("alice"))?;
//! assert_eq!(row.value(b"cf", b"email"), Some(&b"alice@example.com"[..]));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod catalog;
pub mod cluster;
mod connection;
pub mod coordination;
mod database;
pub mod hbck;
mod master;
mod options;
mod regionserver;
pub mod runtime;
pub mod storage;

pub use basalt_storage::block_cache::CacheStats;
/// The engine's file system and clock, which [`Options`] carries.
pub use basalt_storage::env;
pub use basalt_storage::{BackgroundEvent, RegionInfo, RegionLoad};
pub use catalog::{RegionState, RetiredRegion};
pub use database::{Database, Table, TableScanner};
pub use options::{EngineStatsSnapshot, Options};
pub use regionserver::{BackgroundConfig, ServerName};

/// The README's example, compiled and run as a doc test so it cannot rot.
#[doc = include_str!("../../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
