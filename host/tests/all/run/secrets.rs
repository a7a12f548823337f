//! Secrets stay secret: the values given by `-e`, `--env-file`, `[env]` and a
//! scenario's `env` reach the plugin, and no file of a run's or a sweep's results
//! (every file read whole), nor the host's output, nor `host k8s render`'s arguments
//! and ConfigMap. Results folders are 0700 and their files 0600.

use crate::support as common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// One value per way of giving one, each unlike anything else a run writes.
const SECRETS: [(&str, &str); 4] = [
    ("API_TOKEN", "tok-5f1e0c9a7d3b"),
    ("DB_PASSWORD", "envfile-8c2d4e6f"),
    ("CONFIG_SECRET", "cfg-a9b8c7d6e5"),
    ("SCENARIO_SECRET", "scn-0f9e8d7c6b"),
];

fn config(dir: &Path, scenario: &str) -> PathBuf {
    common::write_config(
        dir,
        &format!(
            "{scenario}\nenv = {{ SCENARIO_SECRET = \"{}\" }}\n[env]\nMODE = \"metrics\"\nCONFIG_SECRET = \"{}\"\n",
            SECRETS[3].1, SECRETS[2].1
        ),
    )
}

/// Every file under `dir`, recursively.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let path = e.unwrap().path();
        if path.is_dir() {
            out.extend(files(&path));
        } else {
            out.push(path);
        }
    }
    out
}

fn assert_no_secret_in(texts: impl IntoIterator<Item = (String, Vec<u8>)>) -> usize {
    let mut n = 0;
    for (what, bytes) in texts {
        n += 1;
        let text = String::from_utf8_lossy(&bytes);
        for (key, value) in SECRETS {
            assert!(!text.contains(value), "{what} holds the value of {key}");
        }
    }
    n
}

fn assert_private(dir: &Path) {
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(dir), 0o700, "{}", dir.display());
    for e in std::fs::read_dir(dir).unwrap() {
        let path = e.unwrap().path();
        if path.is_dir() {
            assert_private(&path);
        } else {
            assert_eq!(mode(&path), 0o600, "{}", path.display());
        }
    }
}

fn output_text(out: &Output) -> (String, Vec<u8>) {
    let mut bytes = out.stdout.clone();
    bytes.extend_from_slice(&out.stderr);
    ("the host's output".into(), bytes)
}

#[test]
fn a_run_writes_no_value_of_its_environment() {
    let dir = tempfile::tempdir().unwrap();
    let config = config(
        dir.path(),
        "[scenarios.default]\nexecutor = \"per-vu-iterations\"\nvus = 1\niterations = 3",
    );
    let env_file = dir.path().join("secrets.env");
    std::fs::write(&env_file, format!("DB_PASSWORD={}\n", SECRETS[1].1)).unwrap();
    let out = dir.path().join("out");
    let result = Command::new(env!("CARGO_BIN_EXE_host"))
        .arg("run")
        .arg(common::plugin("misbehave"))
        .arg("--config")
        .arg(&config)
        .arg("--env-file")
        .arg(&env_file)
        .arg("-e")
        .arg(format!("API_TOKEN={}", SECRETS[0].1))
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        result.status.success(),
        "{}",
        String::from_utf8_lossy(&result.stderr)
    );
    let results = common::only_results_dir(&out);
    let read = files(&results)
        .into_iter()
        .map(|p| (p.display().to_string(), std::fs::read(&p).unwrap()));
    let n = assert_no_secret_in(read.chain([output_text(&result)]));
    assert!(n >= 5, "only {n} files");
    // The keys are kept, each value shown as ***.
    let summary = common::summary_json(&results);
    for key in ["API_TOKEN", "DB_PASSWORD", "CONFIG_SECRET"] {
        assert_eq!(
            summary["config"]["env"][key], "***",
            "{}",
            summary["config"]
        );
    }
    assert_eq!(
        summary["config"]["scenarios"]["default"]["env"]["SCENARIO_SECRET"],
        "***"
    );
    // The plugin did get them: its custom metrics ran (MODE came through [env]).
    assert!(summary["metrics"]["orders"]["count"].as_f64().unwrap() >= 3.0);
    assert_private(&results);
}

#[test]
fn a_sweep_writes_no_value_in_any_level() {
    let dir = tempfile::tempdir().unwrap();
    let config = config(
        dir.path(),
        "[scenarios.default]\nexecutor = \"constant-vus\"\nvus = 1\nduration = \"1s\"",
    );
    let out = dir.path().join("out");
    let result = Command::new(env!("CARGO_BIN_EXE_host"))
        .arg("sweep")
        .arg(common::plugin("misbehave"))
        .arg("--config")
        .arg(&config)
        .args(["--levels", "1,2", "--hold", "1s", "--quiet", "-e"])
        .arg(format!("API_TOKEN={}", SECRETS[0].1))
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        result.status.success(),
        "{}",
        String::from_utf8_lossy(&result.stderr)
    );
    let sweep = common::only_results_dir(&out);
    let all = files(&sweep);
    let levels = all
        .iter()
        .filter(|p| p.file_name().is_some_and(|n| n == "summary.json"))
        .count();
    assert_eq!(levels, 2, "{all:?}");
    let read = all
        .iter()
        .map(|p| (p.display().to_string(), std::fs::read(p).unwrap()));
    assert_no_secret_in(read.chain([output_text(&result)]));
    // Each level's config is kept, with its keys.
    let record = all
        .iter()
        .find(|p| p.file_name().is_some_and(|n| n == "run.toml"))
        .unwrap();
    let text = std::fs::read_to_string(record).unwrap();
    assert!(text.contains("CONFIG_SECRET = \"***\""), "{text}");
    assert_private(&sweep);
}

#[test]
fn k8s_render_puts_the_environment_in_a_secret() {
    let dir = tempfile::tempdir().unwrap();
    let config = config(
        dir.path(),
        "[scenarios.default]\nexecutor = \"constant-vus\"\nvus = 2\nduration = \"5s\"",
    );
    let env_file = dir.path().join("secrets.env");
    std::fs::write(&env_file, format!("DB_PASSWORD={}\n", SECRETS[1].1)).unwrap();
    let rendered = dir.path().join("k8s.json");
    let result = Command::new(env!("CARGO_BIN_EXE_host"))
        .args([
            "k8s",
            "render",
            "--workers",
            "2",
            "--format",
            "json",
            "--output",
        ])
        .arg(&rendered)
        .arg(common::plugin("misbehave"))
        .arg("-c")
        .arg(&config)
        .arg("--env-file")
        .arg(&env_file)
        .arg("-e")
        .arg(format!("API_TOKEN={}", SECRETS[0].1))
        .output()
        .unwrap();
    assert!(
        result.status.success(),
        "{}",
        String::from_utf8_lossy(&result.stderr)
    );
    let bytes = std::fs::read(&rendered).unwrap();
    assert_eq!(
        std::fs::metadata(&rendered).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let list: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    let items = list["items"].as_array().unwrap();
    let secret = items
        .iter()
        .find(|i| i["kind"] == "Secret" && i["data"].is_object())
        .expect("the environment's Secret");
    let data = secret["data"].as_object().unwrap();
    use base64::Engine;
    let value = |k: &str| {
        String::from_utf8(
            base64::engine::general_purpose::STANDARD
                .decode(data[k].as_str().unwrap())
                .unwrap(),
        )
        .unwrap()
    };
    assert_eq!(value("API_TOKEN"), SECRETS[0].1);
    assert_eq!(value("DB_PASSWORD"), SECRETS[1].1);
    assert_eq!(value("CONFIG_SECRET"), SECRETS[2].1);
    assert_eq!(value("MODE"), "metrics");
    // Everything but the Secret: no value anywhere (the scenario's env stays in its
    // config, where a scenario reads it).
    let others: Vec<(String, Vec<u8>)> = items
        .iter()
        .filter(|i| i["kind"] != "Secret")
        .map(|i| {
            let mut text = i.to_string();
            if i["kind"] == "ConfigMap" {
                for (k, v) in i["binaryData"].as_object().unwrap() {
                    if k != "plugin.wasm" {
                        let raw = base64::engine::general_purpose::STANDARD
                            .decode(v.as_str().unwrap())
                            .unwrap();
                        text.push_str(&String::from_utf8_lossy(&raw));
                    }
                }
            }
            (
                i["kind"].to_string(),
                text.replace(SECRETS[3].1, "(scenario env)").into_bytes(),
            )
        })
        .collect();
    assert_no_secret_in(others);
    // The coordinator reads each from the Secret into its environment, and -e KEY
    // takes it from there.
    let coordinator = items
        .iter()
        .find(|i| i["kind"] == "Job" && i["metadata"]["name"] == "loadtest-coordinator")
        .unwrap();
    let c = &coordinator["spec"]["template"]["spec"]["containers"][0];
    let env = c["env"].as_array().unwrap();
    let token = env.iter().find(|e| e["name"] == "API_TOKEN").unwrap();
    assert_eq!(token["valueFrom"]["secretKeyRef"]["name"], "loadtest-env");
    assert_eq!(token["valueFrom"]["secretKeyRef"]["key"], "API_TOKEN");
    let args: Vec<&str> = c["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert!(
        args.windows(2).any(|w| w == ["-e", "API_TOKEN"]),
        "{args:?}"
    );
}

#[test]
fn a_bare_e_key_takes_its_value_from_the_environment() {
    let dir = tempfile::tempdir().unwrap();
    let config = common::write_config(
        dir.path(),
        "[scenarios.default]\nexecutor = \"per-vu-iterations\"\nvus = 1\niterations = 1",
    );
    let run = |env: Option<&str>| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_host"));
        cmd.arg("run")
            .arg(common::plugin("misbehave"))
            .arg("--config")
            .arg(&config)
            .args(["-e", "MODE", "--quiet", "--out"])
            .arg(dir.path().join("out"));
        match env {
            Some(v) => cmd.env("MODE", v),
            None => cmd.env_remove("MODE"),
        };
        cmd.output().unwrap()
    };
    let ok = run(Some("metrics"));
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    let missing = run(None);
    assert!(!missing.status.success());
    let text = String::from_utf8_lossy(&missing.stderr);
    assert!(text.contains("\"MODE\" is not set"), "{text}");
}
