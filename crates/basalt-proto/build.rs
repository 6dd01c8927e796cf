//! Generates the gRPC code of `proto/basalt/v1/basalt.proto` with a vendored protoc, so a
//! build needs nothing installed.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let protoc = protoc_bin_vendored::protoc_bin_path()?;
    std::env::set_var("PROTOC", protoc);
    println!("cargo:rerun-if-changed=proto/basalt/v1/basalt.proto");
    tonic_prost_build::configure()
        .bytes(".")
        .codec_path("crate::codec::Codec")
        .compile_protos(&["proto/basalt/v1/basalt.proto"], &["proto"])?;
    Ok(())
}
