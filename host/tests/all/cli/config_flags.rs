//! The run command's config flags, through the `host` binary: `--config` layered,
//! every config mistake reported at once, `--stage`, `--env-file` beside `-e`, and
//! `--summary-trend-stats`.

use crate::support as common;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn host() -> Command {
    Command::new(env!("CARGO_BIN_EXE_host"))
}

/// Runs `host run` on the misbehave fixture with `args`, results under `out`.
fn run(out: &Path, args: &[&str]) -> Output {
    host()
        .args(["run", "--quiet", "--out"])
        .arg(out)
        .args(args)
        .arg(common::plugin("misbehave"))
        .output()
        .unwrap()
}

fn text(out: &Output) -> String {
    format!(
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn write(dir: &Path, name: &str, content: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, content).unwrap();
    path
}

fn summary(out: &Path) -> Value {
    common::summary_json(&common::only_results_dir(out))
}

#[test]
fn a_config_with_three_mistakes_reports_all_three() {
    let dir = tempfile::tempdir().unwrap();
    let config = write(
        dir.path(),
        "bad.toml",
        r#"
[scenarios.a]
executor = "per-vu-iterations"
vus = 1
iterations = 1
gracefull_stop = "1s"

[limits]
request_timeout = "0s"

[http]
max_redirects = 500
"#,
    );
    let out = run(
        &dir.path().join("results"),
        &["--config", config.to_str().unwrap()],
    );
    let all = text(&out);
    assert_eq!(out.status.code(), Some(1), "{all}");
    assert!(all.contains("3 mistakes"), "{all}");
    assert!(
        all.contains(
            "scenarios.a.gracefull_stop: unknown option `gracefull_stop`; did you mean `graceful_stop`?"
        ),
        "{all}"
    );
    assert!(
        all.contains("limits.request_timeout: must be longer than 0s"),
        "{all}"
    );
    assert!(
        all.contains("http.max_redirects: must be at most 100, got 500"),
        "{all}"
    );
    assert!(
        !dir.path().join("results").exists(),
        "nothing ran, so no results folder: {all}"
    );
}

/// Issue 29, item 4: a required key written with a typo was reported as missing, and
/// a scenario's table stopped at its first mistake.
#[test]
fn misspelled_required_keys_are_named_and_every_mistake_of_a_table_is_shown() {
    let dir = tempfile::tempdir().unwrap();
    let config = write(
        dir.path(),
        "typos.toml",
        r#"
[scenarios.open]
executor = "constant-arrival-rate"
rate = 10
duraton = "5s"
pre_alocated_vus = 2
max_vus = "many"
"#,
    );
    let out = run(
        &dir.path().join("results"),
        &["--config", config.to_str().unwrap()],
    );
    let all = text(&out);
    assert_eq!(out.status.code(), Some(1), "{all}");
    assert!(all.contains("3 mistakes"), "{all}");
    assert!(
        all.contains("scenarios.open.duraton: unknown option `duraton`; did you mean `duration`?"),
        "{all}"
    );
    assert!(
        all.contains(
            "scenarios.open.pre_alocated_vus: unknown option `pre_alocated_vus`; did you mean `pre_allocated_vus`?"
        ),
        "{all}"
    );
    assert!(
        all.contains("scenarios.open.max_vus: expected a whole number"),
        "{all}"
    );
    assert!(!all.contains("missing"), "the keys were written: {all}");
}

#[test]
fn configs_given_twice_are_layered_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let base = write(
        dir.path(),
        "base.toml",
        r#"
[scenarios.a]
executor = "per-vu-iterations"
vus = 1
iterations = 2
[scenarios.b]
executor = "per-vu-iterations"
vus = 1
iterations = 1
[env]
MODE = "fail"
KEPT = "from base"
[limits]
request_timeout = "7s"
"#,
    );
    let over = write(
        dir.path(),
        "over.toml",
        r#"
[scenarios.a]
vus = 3
[scenarios.b]
executor = "shared-iterations"
vus = 2
iterations = 4
[env]
MODE = "ok"
"#,
    );
    let results = dir.path().join("results");
    let out = run(
        &results,
        &[
            "--config",
            base.to_str().unwrap(),
            "--config",
            over.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let s = summary(&results);
    let config = &s["config"];
    assert_eq!(config["scenarios"]["a"]["vus"], 3, "later key wins");
    assert_eq!(
        config["scenarios"]["a"]["iterations"], 2,
        "earlier key kept"
    );
    assert_eq!(config["scenarios"]["b"]["executor"], "shared-iterations");
    // Values are masked in results (the keys stay): that MODE=ok won shows in the passes.
    assert_eq!(config["env"]["MODE"], "***");
    assert_eq!(config["env"]["KEPT"], "***");
    assert_eq!(config["limits"]["request_timeout"], "7s");
    // 3 VUs × 2 iterations, plus 4 shared: all passed, since MODE=ok won.
    assert_eq!(s["scenarios"]["a"]["completed"], 6, "{s:#}");
    assert_eq!(s["scenarios"]["b"]["completed"], 4, "{s:#}");
    assert_eq!(s["scenarios"]["a"]["failed"], 0);
}

#[test]
fn stage_replaces_the_scenarios_with_one_ramping_vus_scenario() {
    let dir = tempfile::tempdir().unwrap();
    let config = write(
        dir.path(),
        "two.toml",
        r#"
[scenarios.a]
executor = "constant-vus"
vus = 1
duration = "5s"
[scenarios.b]
executor = "per-vu-iterations"
vus = 1
iterations = 1
"#,
    );
    let results = dir.path().join("results");
    let out = run(
        &results,
        &[
            "--config",
            config.to_str().unwrap(),
            "--stage",
            "1s:3",
            "-s",
            "500ms:0",
            "--vus",
            "2",
            "-e",
            "MODE=sleep",
            "-e",
            "SLEEP_MS=50",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let s = summary(&results);
    let scenarios = s["scenarios"].as_object().unwrap();
    assert_eq!(
        scenarios.keys().collect::<Vec<_>>(),
        ["default"],
        "{scenarios:?}"
    );
    assert_eq!(s["scenarios"]["default"]["executor"], "ramping-vus");
    let scenario = &s["config"]["scenarios"]["default"];
    assert_eq!(scenario["start_vus"], 2, "--vus gives the start, as in k6");
    assert_eq!(scenario["stages"][0]["duration"], "1s");
    assert_eq!(scenario["stages"][0]["target"], 3);
    assert_eq!(scenario["stages"][1]["duration"], "500ms");
    assert_eq!(scenario["stages"][1]["target"], 0);
    assert!(
        s["scenarios"]["default"]["completed"].as_u64().unwrap() > 0,
        "{s:#}"
    );
    assert!(s["scenarios"]["default"]["vus_allocated"].as_u64().unwrap() <= 3);

    // As in k6, --stage does not mix with the other schedule shortcuts.
    for (flag, value) in [("--duration", "1s"), ("--iterations", "3")] {
        let out = run(&dir.path().join("never"), &["--stage", "1s:2", flag, value]);
        assert_eq!(out.status.code(), Some(2), "{}", text(&out));
        assert!(text(&out).contains("cannot be used with"), "{}", text(&out));
    }
    let out = run(&dir.path().join("never"), &["--stage", "1s"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).contains("DURATION:TARGET"), "{}", text(&out));
}

#[test]
fn env_file_is_read_and_e_wins_over_it() {
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        dir.path(),
        "test.env",
        "# the plugin's mode\nMODE=\"fail\"  # overridden by -e below\nexport QUOTED='a # b'\nPLAIN = two words # comment\n",
    );
    let results = dir.path().join("results");
    let out = run(
        &results,
        &[
            "--iterations",
            "3",
            "--env-file",
            file.to_str().unwrap(),
            "-e",
            "MODE=ok",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let s = summary(&results);
    // Values are masked in results (the keys stay); the run passing shows MODE=ok won.
    assert_eq!(s["config"]["env"]["MODE"], "***");
    assert_eq!(s["config"]["env"]["QUOTED"], "***");
    assert_eq!(s["config"]["env"]["PLAIN"], "***");
    assert_eq!(s["scenarios"]["default"]["completed"], 3);

    // Without -e, the file's MODE=fail is what the plugin sees.
    let results = dir.path().join("results-file-only");
    let out = run(
        &results,
        &["--iterations", "3", "--env-file", file.to_str().unwrap()],
    );
    assert!(!out.status.success(), "{}", text(&out));
    let s = summary(&results);
    assert_eq!(s["scenarios"]["default"]["failed"], 3, "{s:#}");

    // A bad file: every bad line, by number; nothing runs.
    let bad = write(dir.path(), "bad.env", "A=1\nnot a pair\nB=\"open\n");
    let out = run(
        &dir.path().join("never"),
        &["--env-file", bad.to_str().unwrap()],
    );
    let all = text(&out);
    assert_eq!(out.status.code(), Some(1), "{all}");
    assert!(all.contains("line 2: expected KEY=VALUE"), "{all}");
    assert!(
        all.contains("line 3: a double quote is not closed"),
        "{all}"
    );
    assert!(!dir.path().join("never").exists());
}

#[test]
fn summary_trend_stats_choose_the_columns_of_summary_txt() {
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("results");
    let out = run(
        &results,
        &[
            "--iterations",
            "5",
            "--summary-trend-stats",
            "p(99.9),avg,max",
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let txt =
        std::fs::read_to_string(common::only_results_dir(&results).join("summary.txt")).unwrap();
    let line = txt
        .lines()
        .find(|l| l.trim_start().starts_with("iteration_duration"))
        .unwrap_or_else(|| panic!("no iteration_duration line in {txt}"));
    let body = line.split(": ").nth(1).unwrap();
    let labels: Vec<&str> = body
        .split(' ')
        .map(|c| c.split('=').next().unwrap())
        .collect();
    assert_eq!(labels, ["p(99.9)", "avg", "max"], "{line}");
    // summary.json keeps every figure whatever summary.txt shows.
    let s = summary(&results);
    assert!(
        s["metrics"]["iteration_duration"]["med"].is_number(),
        "{s:#}"
    );

    let out = run(
        &dir.path().join("never"),
        &["--summary-trend-stats", "avg,p(97)"],
    );
    assert_eq!(out.status.code(), Some(2));
    let all = text(&out);
    assert!(all.contains("`p(97)` is not a trend column"), "{all}");
    assert!(all.contains("p(99.9)"), "the choices are listed: {all}");
}

#[test]
fn a_duration_that_shortens_no_scenario_says_how_long_it_really_runs() {
    let dir = tempfile::tempdir().unwrap();
    let config = write(
        dir.path(),
        "ramp.toml",
        "[scenarios.ramp]\nexecutor = \"ramping-vus\"\nstages = [{ duration = \"1s\", target = 2 }, \
         { duration = \"1s\", target = 0 }]\nenv = { MODE = \"sleep\", SLEEP_MS = \"50\" }\n\
         [scenarios.steady]\nexecutor = \"constant-vus\"\nvus = 1\nduration = \"5s\"\n\
         env = { MODE = \"sleep\", SLEEP_MS = \"50\" }\n",
    );
    let out = dir.path().join("out");
    let output = run(
        &out,
        &["--config", config.to_str().unwrap(), "--duration", "500ms"],
    );
    assert!(output.status.success(), "{}", text(&output));
    let said = "--duration 500ms does not shorten scenario `ramp` (ramping-vus: its stages set \
                its length); it runs for 2s";
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(stderr.matches(said).count(), 1, "{}", text(&output));
    // The scenario it does shorten is not named.
    assert!(!stderr.contains("scenario `steady`"), "{stderr}");
    let s = summary(&out);
    assert!(
        s["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w.as_str().unwrap().starts_with(said)),
        "{}",
        s["warnings"]
    );
    // It did run its two seconds: the warning tells the truth.
    let duration = s["duration_s"].as_f64().unwrap();
    assert!((1.9..10.0).contains(&duration), "{duration}");
}

#[test]
fn a_flags_value_reaches_the_run_its_summary_and_setup_alike() {
    let dir = tempfile::tempdir().unwrap();
    let config = write(
        dir.path(),
        "two.toml",
        "[scenarios.steady]\nexecutor = \"constant-vus\"\nvus = 1\nduration = \"30s\"\n\
         [scenarios.arrivals]\nexecutor = \"constant-arrival-rate\"\nrate = 1\n\
         duration = \"30s\"\npre_allocated_vus = 1\n",
    );
    let export = dir.path().join("export.json");
    let out = dir.path().join("out");
    let output = run(
        &out,
        &[
            "--config",
            config.to_str().unwrap(),
            "--iterations",
            "4",
            "--vus",
            "2",
            "--duration",
            "1250ms",
            "--rate",
            "4",
            "--stats-interval",
            "2s",
            "-e",
            "SETUP=config",
            "--summary-export",
            export.to_str().unwrap(),
        ],
    );
    assert!(output.status.success(), "{}", text(&output));
    let s = summary(&out);
    let config = &s["config"];
    // --iterations made constant-vus shared-iterations (k6's rule), with --vus's VUs;
    // --duration and --rate set the arrival-rate scenario, exactly as given.
    let steady = &config["scenarios"]["steady"];
    assert_eq!(steady["executor"], "shared-iterations", "{config:#}");
    assert_eq!(steady["vus"], 2);
    assert_eq!(steady["iterations"], 4);
    assert!(steady.get("duration").is_none(), "{steady}");
    let arrivals = &config["scenarios"]["arrivals"];
    assert_eq!(arrivals["duration"], "1250ms", "{arrivals}");
    assert_eq!(arrivals["rate"], 4.0);
    assert_eq!(config["sampling"]["stats_interval"], "2s");
    // The run used those values.
    assert_eq!(s["scenarios"]["steady"]["executor"], "shared-iterations");
    assert_eq!(s["scenarios"]["steady"]["completed"], 4, "{s:#}");
    // setup() was given the same config the summary records: the export shows what it
    // returned with every value masked (setup data holds secrets), so its shape.
    let export: Value = serde_json::from_slice(&std::fs::read(&export).unwrap()).unwrap();
    let seen = &export["setup_data"];
    assert_eq!(seen["scenarios"], masked(&config["scenarios"]), "{seen:#}");
    assert_eq!(seen["sampling"], masked(&config["sampling"]));
    assert_eq!(
        seen["env"]["SETUP"], "***",
        "setup saw SETUP; the export masks it"
    );
}

/// `value` with its shape kept and every scalar `***`, as --summary-export writes
/// setup()'s data.
fn masked(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            Value::Object(map.iter().map(|(k, v)| (k.clone(), masked(v))).collect())
        }
        Value::Array(items) => Value::Array(items.iter().map(masked).collect()),
        Value::Null => Value::Null,
        _ => Value::String("***".into()),
    }
}
