//! The Rust SDK's sources, embedded in the host binary at build time (see build.rs), so
//! `host new` can vendor the SDK into a new project without this checkout.

include!(concat!(env!("OUT_DIR"), "/sdk_files.rs"));

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sdk_is_embedded_whole() {
        let names: Vec<&str> = SDK_FILES.iter().map(|(n, _)| *n).collect();
        for needed in [
            "Cargo.toml",
            "src/lib.rs",
            "src/http.rs",
            "wit/scenario.wit",
        ] {
            assert!(names.contains(&needed), "{needed} missing from {names:?}");
        }
        let manifest = SDK_FILES
            .iter()
            .find(|(n, _)| *n == "Cargo.toml")
            .unwrap()
            .1;
        // A vendored copy must not need the plugins workspace.
        assert!(!manifest.contains(".workspace"), "{manifest}");
        assert!(PLUGINS_LOCK.contains("name = \"wit-bindgen\""));
    }
}
