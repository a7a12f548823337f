//! Hostile k6 scripts at build time (issue 49): a file that closes the bundle's wrapper
//! to run code during the build is refused naming its line, at once.

use crate::support as common;

use common::{host_in as host, output_text as text};
use std::time::{Duration, Instant};

fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

/// A `}` that closes the wrapper, then a loop and a 600 MB allocation: the build hung
/// (killed at 150 s) or the host panicked; now it is refused before anything runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_script_that_escapes_its_wrapper_is_refused_at_once_with_its_line() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(
        tmp.path().join("escape.js"),
        "export default function () {}\n}\nconst big = new Uint8Array(600 * 1024 * 1024);\nwhile (true) {}\n{\n",
    )
    .unwrap();
    let started = Instant::now();
    let built = host(tmp.path(), args(&["build", "escape.js"])).await;
    let took = started.elapsed();
    assert_eq!(built.status.code(), Some(1), "{}", text(&built));
    let err = String::from_utf8_lossy(&built.stderr);
    assert!(
        err.contains("escape.js:2: this `}` closes a bracket the file never opened"),
        "{}",
        text(&built)
    );
    assert!(took < Duration::from_secs(20), "{took:?}");
    assert!(!tmp.path().join("escape.wasm").exists());
}
