//! Test-only support for Basalt.
//!
//! [`oracle`] is a slow, obviously-correct in-memory model of HBase's data model as
//! SEMANTICS.md describes it, quirks included (deletes mask later puts until a major
//! compaction; versions beyond VERSIONS may come back before one). It models the physical
//! layers too — a memstore and a list of files per family, and what a flush or compaction
//! keeps — because HBase's answers depend on them. [`strategies`] generates operation
//! sequences for model-based property tests. [`checkers`] judges what clients saw across a
//! failover: per-row linearizability, and a big linked list whose holes are lost writes.
//! Nothing here is used by production code.

#![allow(clippy::unwrap_used)] // test support: a failed unwrap is a failed test

pub mod checkers;
pub mod oracle;
pub mod services;
pub mod strategies;
