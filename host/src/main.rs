//! The `host` command: see `host --help`.

fn main() {
    std::process::exit(host::main());
}
