//! Input that used to be taken wrongly: CSV data parsed by splitting on commas, data
//! paths read from the current folder, and zero timeouts accepted. Each is run through
//! the `host` binary as a user would.

use crate::support as common;

use std::process::Command;

fn host() -> Command {
    Command::new(env!("CARGO_BIN_EXE_host"))
}

/// The check names a `misbehave` run in `data` mode recorded: one per record.
fn checks(dir: &std::path::Path) -> Vec<String> {
    let summary = common::summary_json(&common::only_results_dir(dir));
    let mut names: Vec<String> = summary["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap().to_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn csv_data_is_rfc_4180_and_found_beside_the_config() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("users.csv"),
        "name,city\nalice,\"Paris, France\"\nbob,\"the \"\"old\"\" town\"\n",
    )
    .unwrap();
    let config = common::write_config(
        dir.path(),
        "[scenarios.default]\nexecutor = \"per-vu-iterations\"\nvus = 1\niterations = 1\n\
         [data]\nusers = \"users.csv\"\n",
    );
    // Started from another folder: the data file is found beside the config.
    let elsewhere = tempfile::tempdir().unwrap();
    let out = host()
        .current_dir(elsewhere.path())
        .args(["run", "--quiet", "-e", "MODE=data", "--config"])
        .arg(&config)
        .arg("--out")
        .arg(dir.path().join("results"))
        .arg(common::plugin("misbehave"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(
        checks(&dir.path().join("results")),
        [
            r#"users 0: {"city":"Paris, France","name":"alice"}"#,
            r#"users 1: {"city":"the \"old\" town","name":"bob"}"#,
        ]
    );
}

#[test]
fn a_ragged_csv_row_is_refused_with_its_line() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("users.csv"),
        "name,city\nalice,Paris\nbob,Paris, France\n",
    )
    .unwrap();
    let config = common::write_config(
        dir.path(),
        "[scenarios.default]\nexecutor = \"per-vu-iterations\"\nvus = 1\niterations = 1\n\
         [data]\nusers = \"users.csv\"\n",
    );
    let out = host()
        .args(["run", "--quiet", "-e", "MODE=data", "--config"])
        .arg(&config)
        .arg("--out")
        .arg(dir.path().join("results"))
        .arg(common::plugin("misbehave"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("[data] users"), "{stderr}");
    assert!(
        stderr.contains("line 3 has 3 fields but the header has 2"),
        "{stderr}"
    );
    let results = dir.path().join("results");
    assert!(
        !results.exists() || std::fs::read_dir(&results).unwrap().next().is_none(),
        "no run was started"
    );
}

#[test]
fn zero_timeouts_are_refused_before_the_run() {
    for key in ["request_timeout", "iteration_timeout", "cpu_per_call"] {
        let dir = tempfile::tempdir().unwrap();
        let config = common::write_config(
            dir.path(),
            &format!(
                "[scenarios.default]\nexecutor = \"constant-vus\"\nvus = 2\nduration = \"1s\"\n\
                 [limits]\n{key} = \"0s\"\n"
            ),
        );
        let out = host()
            .args(["run", "--quiet", "--config"])
            .arg(&config)
            .arg("--out")
            .arg(dir.path().join("results"))
            .arg(common::plugin("misbehave"))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{key}: {stderr}");
        assert!(
            stderr.contains(&format!("limits.{key}: must be longer than 0s")),
            "{stderr}"
        );
        let results = dir.path().join("results");
        assert!(
            !results.exists() || std::fs::read_dir(&results).unwrap().next().is_none(),
            "{key}: no run started"
        );
    }
}
