//! Integration tests of the embedded database: one binary, one module per behaviour area.
#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

mod background;
mod coordination;
mod crash;
mod ddl_during_splits;
mod durability;
mod errors;
mod lost_metadata;
mod model;
mod new_version_behavior;
mod read_path;
mod regions;
mod schema;
mod semantics;
mod semantics_more;
mod shared_storage;
mod split_crash;
mod support;
