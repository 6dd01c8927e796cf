//! Basalt's native API, `basalt.v1`: the generated messages and gRPC services, and the
//! conversions between them and the data model's types.

#![allow(clippy::missing_errors_doc)] // every conversion fails the same way: a malformed field

pub mod codec;
pub mod convert;
pub mod deadline;
pub mod fuzzing;
pub mod http2;
pub mod rows;
pub mod schema;
pub mod status;
pub mod unary;

/// The generated code of `proto/basalt/v1/basalt.proto`.
#[allow(
    missing_docs,
    clippy::all,
    clippy::pedantic,
    missing_debug_implementations
)]
pub mod pb {
    tonic::include_proto!("basalt.v1");
}
