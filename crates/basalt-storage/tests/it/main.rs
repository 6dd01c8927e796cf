//! Integration tests of the embedded database: one binary, one module per behaviour area.

mod durability;
mod errors;
mod semantics;
mod support;
