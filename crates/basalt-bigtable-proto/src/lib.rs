//! Google Cloud Bigtable's v2 APIs as Rust types, with tonic servers and clients, generated at
//! build time from Google's published `.proto` files (vendored under `proto/`, Apache-2.0).
//!
//! Only `google.bigtable.v2` (data) and `google.bigtable.admin.v2` (table admin) are served;
//! the other packages are here because those two import them.

#![allow(missing_debug_implementations, clippy::all, clippy::pedantic)]

pub mod google {
    pub mod api {
        tonic::include_proto!("google.api");
    }
    pub mod bigtable {
        pub mod v2 {
            tonic::include_proto!("google.bigtable.v2");
        }
        pub mod admin {
            pub mod v2 {
                tonic::include_proto!("google.bigtable.admin.v2");
            }
        }
    }
    pub mod iam {
        pub mod v1 {
            tonic::include_proto!("google.iam.v1");
        }
    }
    pub mod longrunning {
        tonic::include_proto!("google.longrunning");
    }
    pub mod rpc {
        tonic::include_proto!("google.rpc");
    }
    pub mod r#type {
        tonic::include_proto!("google.r#type");
    }
}
