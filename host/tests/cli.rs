//! The `host` binary itself: commands, output and exit codes.

mod common;

use std::process::Command;

fn host() -> Command {
    Command::new(env!("CARGO_BIN_EXE_host"))
}

#[test]
fn inspect_prints_name_scenarios_and_contract() {
    let out = host()
        .arg("inspect")
        .arg(common::plugin("notes"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("name:        notes"), "{text}");
    assert!(text.contains("browse"), "{text}");
    assert!(text.contains("loadtest:scenario@0.3.0"), "{text}");
    assert!(text.contains("executor = \"constant-vus\""), "{text}");
}

#[test]
fn run_with_flags_writes_results_and_exits_zero() {
    let dir = tempfile::tempdir().unwrap();
    let out = host()
        .args([
            "run",
            "--iterations",
            "12",
            "--vus",
            "3",
            "-e",
            "MODE=ok",
            "--quiet",
            "--out",
        ])
        .arg(dir.path())
        .arg(common::plugin("misbehave"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("12 complete"), "{stdout}");
    let runs: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(runs.len(), 1);
    let run_dir = runs[0].as_ref().unwrap().path();
    assert!(run_dir
        .file_name()
        .unwrap()
        .to_string_lossy()
        .ends_with("-misbehave"));
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("summary.json")).unwrap())
            .unwrap();
    assert_eq!(
        summary["scenarios"]["default"]["executor"],
        "shared-iterations"
    );
    assert_eq!(summary["metrics"]["iterations"]["count"], 12.0);
}

#[test]
fn bad_plugin_exits_one_with_the_reason() {
    let out = host().args(["run", "Cargo.toml"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("is not a WebAssembly file"), "{err}");
}

#[test]
fn bad_flag_value_exits_two() {
    let out = host()
        .args(["run", "--duration", "10"])
        .arg(common::plugin("hello"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no unit"), "{err}");
}
