//! Test-only support: the oracle of HBase semantics (see `oracle`).
