//! Generates the gRPC code of Google's Bigtable protos (vendored under `proto/`, with their
//! licence) with a vendored protoc, so a build needs nothing installed.

const PROTOS: &[&str] = &[
    "proto/google/bigtable/v2/bigtable.proto",
    "proto/google/bigtable/admin/v2/bigtable_table_admin.proto",
];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let protoc = protoc_bin_vendored::protoc_bin_path()?;
    let well_known = protoc_bin_vendored::include_path()?;
    std::env::set_var("PROTOC", protoc);
    println!("cargo:rerun-if-changed=proto");
    let well_known = well_known.to_string_lossy();
    tonic_prost_build::configure()
        .bytes(".google.bigtable")
        .generate_default_stubs(true)
        .compile_protos(PROTOS, &["proto", &well_known])?;
    Ok(())
}
