//! The HBase data model, as Basalt implements it: no I/O, no threads.
//!
//! This crate owns what every other Basalt crate agrees on: the [`Cell`] and its key order
//! ([`cell`]), the naming rules for namespaces, tables and families ([`name`]), column-family
//! and table descriptors with HBase's defaults ([`descriptor`]), the operations a client sends
//! ([`ops`]), what reads return ([`Result`](result::RowResult)), filters and the filter language
//! ([`filter`]), and the error kinds ([`Error`]).
//!
//! It is not the storage engine (`basalt-storage`) and knows nothing of files or sockets. The
//! behaviour it encodes is specified in the project's `SEMANTICS.md`; where a type mirrors an
//! HBase class, it carries the HBase name so that an HBase user can find their way.

pub mod bytes_fmt;
pub mod bytes_order;
pub mod cell;
pub mod descriptor;
pub mod descriptor_values;
pub mod error;
pub mod filter;
pub mod limits;
pub mod name;
pub mod ops;
pub mod region;
pub mod result;
pub mod split;
pub mod time_range;

pub use cell::{Cell, CellParts, CellType, Spans, Timestamp, LATEST_TIMESTAMP};
pub use descriptor::{
    BloomType, ColumnFamilyDescriptor, Compression, DataBlockEncoding, Durability,
    KeepDeletedCells, TableDescriptor,
};
pub use error::{Error, Result};
pub use name::TableName;
pub use result::RowResult;
pub use time_range::TimeRange;
