//! Generates the gRPC face's code from proto/gateway.proto with no protoc: protox
//! parses the file into a FileDescriptorSet, tonic-prost-build turns it into the
//! messages and the server trait, and the encoded set is kept for the reflection
//! service (so clients such as the host's `grpc-call` need no .proto file).

use prost::Message as _;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto/gateway.proto");
    let fds = protox::compile(["gateway.proto"], ["proto"])?;
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR")?);
    std::fs::write(out.join("gateway_descriptor.bin"), fds.encode_to_vec())?;
    tonic_prost_build::configure()
        // Only the server: the demo target answers calls, it makes none.
        .build_client(false)
        .build_transport(false)
        .compile_fds(fds)?;
    Ok(())
}
