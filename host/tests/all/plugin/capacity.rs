//! Asking for more VUs than the process can hold fails before the test starts, with a
//! message that says what to change. Each case runs the `host` binary in a process of
//! its own, since it exhausts that process's mappings or address space on purpose.

use crate::support as common;

use std::process::Command;

fn run_vus(executor_options: &str) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("run.toml");
    std::fs::write(&config, format!("[scenarios.many]\n{executor_options}\n")).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_host"))
        .args(["run", "--quiet", "-e", "MODE=ok", "--out"])
        .arg(dir.path())
        .arg("--config")
        .arg(&config)
        .arg(common::plugin("misbehave"))
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn more_vus_than_the_process_can_map_names_the_sysctl() {
    let max_map_count: u64 = std::fs::read_to_string("/proc/sys/vm/max_map_count")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // Each live instance takes about five memory mappings: ask for more VUs than the
    // limit allows. Past a raised limit the test would need too much memory to show it.
    let vus = max_map_count / 5 + 2000;
    assert!(
        vus <= 30_000,
        "vm.max_map_count is {max_map_count}; this test expects the default (65530)"
    );
    let (code, err) = run_vus(&format!(
        "executor = \"per-vu-iterations\"\nvus = {vus}\niterations = 1"
    ));
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("vm.max_map_count"), "{err}");
    assert!(err.contains("lower the VU count"), "{err}");
    assert!(err.contains("memory mappings"), "{err}");
}

#[test]
fn more_vus_than_the_address_space_holds_says_how_much_it_needs() {
    let (code, err) = run_vus("executor = \"constant-vus\"\nvus = 3000000\nduration = \"1s\"");
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("cannot reserve address space for 3000005"),
        "{err}"
    );
    assert!(err.contains("TiB"), "{err}");
}
