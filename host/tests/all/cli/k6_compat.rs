//! What the host shares with k6's ecosystem: `--summary-export` files that read as k6's
//! (checked against one k6 1.1.0 wrote, tests/fixtures/k6-summary-export.json), and
//! k6's environment variables, with k6's precedence (flags > environment > config >
//! the plugin's defaults).

use crate::support as common;

use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::{Command, Output};

/// The k6 variables a test may set: each run starts with none of them, so a value in
/// the environment running the tests cannot change what is measured.
const K6_VARS: &[&str] = &[
    "K6_VUS",
    "K6_DURATION",
    "K6_ITERATIONS",
    "K6_STAGES",
    "K6_OUT",
    "K6_NO_COLOR",
    "K6_QUIET",
    "K6_SUMMARY_TREND_STATS",
    "K6_SUMMARY_EXPORT",
    "K6_INSECURE_SKIP_TLS_VERIFY",
];

fn host(env: &[(&str, &str)]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_host"));
    for var in K6_VARS {
        command.env_remove(var);
    }
    command.envs(env.iter().copied());
    command
}

fn ok(out: &Output) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success() || out.status.code() == Some(99),
        "exit {:?}\n{stdout}\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// A metric of a summary-export, as k6 shapes it.
#[derive(Debug, PartialEq)]
enum Kind {
    Counter,
    Gauge,
    Rate,
    Trend,
}

/// A metric's kind, its figures, and its thresholds (expression → crossed).
type Metric = (Kind, BTreeMap<String, f64>, BTreeMap<String, bool>);

/// What a reader of k6 summaries gets out of a file.
#[derive(Debug)]
struct Export {
    /// Name → kind, its figures, and its thresholds (expression → crossed).
    metrics: BTreeMap<String, Metric>,
    /// Check name → (passes, fails).
    checks: BTreeMap<String, (u64, u64)>,
}

const TREND_STATS: &[&str] = &[
    "avg", "min", "med", "max", "count", "p(90)", "p(95)", "p(99)", "p(99.9)",
];

/// Reads a summary-export the way a script built for k6's does, refusing anything
/// outside the shape k6 writes: the same code reads k6's file and ours.
fn read_export(json: &Value) -> Export {
    let top: BTreeSet<&str> = json
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    // k6 adds `setup_data` when setup() returned something.
    assert!(
        top == BTreeSet::from(["metrics", "root_group"])
            || top == BTreeSet::from(["metrics", "root_group", "setup_data"]),
        "{top:?}"
    );
    let mut metrics = BTreeMap::new();
    for (name, body) in json["metrics"].as_object().unwrap() {
        let body = body.as_object().unwrap();
        let mut figures = BTreeMap::new();
        let mut thresholds = BTreeMap::new();
        for (key, value) in body {
            if key == "thresholds" {
                for (expr, crossed) in value.as_object().unwrap() {
                    thresholds.insert(expr.clone(), crossed.as_bool().unwrap());
                }
            } else {
                let v = value
                    .as_f64()
                    .unwrap_or_else(|| panic!("{name}.{key}: {value}"));
                figures.insert(key.clone(), v);
            }
        }
        let keys: BTreeSet<&str> = figures.keys().map(String::as_str).collect();
        let kind = if keys == BTreeSet::from(["count", "rate"]) {
            Kind::Counter
        } else if keys == BTreeSet::from(["value", "min", "max"]) {
            Kind::Gauge
        } else if keys == BTreeSet::from(["passes", "fails", "value"]) {
            Kind::Rate
        } else {
            assert!(
                !keys.is_empty() && keys.iter().all(|k| TREND_STATS.contains(k)),
                "{name}: not a k6 metric: {keys:?}"
            );
            Kind::Trend
        };
        if kind == Kind::Rate {
            for key in ["passes", "fails"] {
                assert_eq!(figures[key].fract(), 0.0, "{name}.{key}");
            }
        }
        metrics.insert(name.clone(), (kind, figures, thresholds));
    }
    let root = &json["root_group"];
    assert_eq!(root["name"], "");
    assert_eq!(root["path"], "");
    assert_eq!(root["id"], "d41d8cd98f00b204e9800998ecf8427e");
    assert!(root["groups"].is_object());
    let mut checks = BTreeMap::new();
    for (name, check) in root["checks"].as_object().unwrap() {
        assert_eq!(check["name"], name.as_str());
        assert_eq!(check["path"], format!("::{name}"));
        let id = check["id"].as_str().unwrap();
        assert!(
            id.len() == 32 && id.chars().all(|c| c.is_ascii_hexdigit()),
            "{id}"
        );
        checks.insert(
            name.clone(),
            (
                check["passes"].as_u64().unwrap(),
                check["fails"].as_u64().unwrap(),
            ),
        );
    }
    Export { metrics, checks }
}

fn read_file(path: &Path) -> Export {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    read_export(&serde_json::from_str(&text).unwrap())
}

/// The metrics both exports must have, with the kind k6 gives them.
const SHARED: &[(&str, Kind)] = &[
    ("http_reqs", Kind::Counter),
    ("iterations", Kind::Counter),
    ("data_sent", Kind::Counter),
    ("data_received", Kind::Counter),
    ("vus", Kind::Gauge),
    ("vus_max", Kind::Gauge),
    ("http_req_failed", Kind::Rate),
    ("checks", Kind::Rate),
    ("http_req_duration", Kind::Trend),
    ("http_req_waiting", Kind::Trend),
    ("http_req_blocked", Kind::Trend),
    ("iteration_duration", Kind::Trend),
    ("http_req_duration{expected_response:true}", Kind::Trend),
];

#[test]
fn the_k6_file_reads_with_the_shape_k6_writes() {
    let k6 = read_file(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/k6-summary-export.json"),
    );
    for (name, kind) in SHARED {
        assert_eq!(&k6.metrics[*name].0, kind, "{name}");
    }
    let (_, figures, thresholds) = &k6.metrics["http_req_duration"];
    let keys: Vec<&str> = figures.keys().map(String::as_str).collect();
    assert_eq!(keys, ["avg", "max", "med", "min", "p(90)", "p(95)"]);
    assert!(
        !thresholds["p(95)<500"],
        "k6 writes false for a threshold that held"
    );
    assert!(
        k6.metrics["my_counter"].2["count>1000"],
        "and true when crossed"
    );
    assert!(k6.metrics["http_req_duration{name:home}"]
        .2
        .contains_key("p(99)<800"));
    assert_eq!(k6.checks["status is 200"].1, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn summary_export_reads_as_k6s_with_the_same_code() {
    let target = common::demo_target(std::time::Duration::ZERO).await;
    let dir = tempfile::tempdir().unwrap();
    let config = common::write_config(
        dir.path(),
        "[scenarios.default]\nexecutor = \"constant-vus\"\nvus = 2\nduration = \"2s\"\n\
         [thresholds]\nhttp_req_duration = [\"p(95)<5000\", \"avg<5000\"]\n\
         \"http_req_duration{method:GET}\" = [\"p(99)<8000\"]\n\
         http_req_failed = [\"rate<0.01\"]\nchecks = [\"rate>0.99\"]\n\
         iterations = [\"count>100000000\"]\n",
    );
    let export = dir.path().join("export.json");
    let base = target.base_url();
    let out = {
        let (config, export, dir) = (config.clone(), export.clone(), dir.path().to_path_buf());
        tokio::task::spawn_blocking(move || {
            // K6_SUMMARY_TREND_STATS picks k6's default columns, so both files have the same.
            host(&[("K6_SUMMARY_TREND_STATS", "avg,min,med,max,p(90),p(95)")])
                .args(["run", "--quiet", "--summary-export"])
                .arg(&export)
                .arg("--config")
                .arg(&config)
                .arg("-e")
                .arg(format!("BASE_URL={base}"))
                .arg("--out")
                .arg(&dir)
                .arg(common::plugin("hello"))
                .output()
                .unwrap()
        })
        .await
        .unwrap()
    };
    ok(&out);
    assert_eq!(
        out.status.code(),
        Some(99),
        "the iterations threshold is crossed"
    );
    let ours = read_file(&export);
    let k6 = read_file(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/k6-summary-export.json"),
    );
    for (name, kind) in SHARED {
        let (our_kind, our_figures, _) = ours
            .metrics
            .get(*name)
            .unwrap_or_else(|| panic!("ours has no {name}: {:?}", ours.metrics.keys()));
        assert_eq!(our_kind, kind, "{name}");
        let theirs: Vec<&String> = k6.metrics[*name].1.keys().collect();
        let our_keys: Vec<&String> = our_figures.keys().collect();
        assert_eq!(our_keys, theirs, "{name}: the same figures as k6's");
    }
    let (_, _, thresholds) = &ours.metrics["http_req_duration"];
    assert_eq!(
        thresholds,
        &BTreeMap::from([
            ("avg<5000".to_string(), false),
            ("p(95)<5000".to_string(), false)
        ])
    );
    assert!(ours.metrics["iterations"].2["count>100000000"]);
    assert!(!ours.metrics["http_req_duration{method:GET}"].2["p(99)<8000"]);
    // The figures are the run's: the same as its summary.json.
    let summary = common::summary_json(&common::only_results_dir(dir.path()));
    let requests = summary["metrics"]["http_reqs"]["count"].as_f64().unwrap();
    assert!(requests > 0.0);
    assert_eq!(ours.metrics["http_reqs"].1["count"], requests);
    let p95 = summary["metrics"]["http_req_duration"]["p95"]
        .as_f64()
        .unwrap();
    assert_eq!(ours.metrics["http_req_duration"].1["p(95)"], p95);
    let (passes, fails) = ours.checks["status is 200"];
    assert_eq!((passes as f64, fails), (requests, 0));
    assert_eq!(
        ours.metrics["checks"].1["passes"], passes as f64,
        "checks as a rate, as k6"
    );
}

/// The scenario summary.json reports after a run with `args` and `env`.
fn run_misbehave(args: &[&str], env: &[(&str, &str)], config: Option<&str>) -> (Value, String) {
    let dir = tempfile::tempdir().unwrap();
    let mut command = host(env);
    command.arg("run").args(args).args(["-e", "MODE=ok"]);
    if let Some(toml) = config {
        command
            .arg("--config")
            .arg(common::write_config(dir.path(), toml));
    }
    // K6_OUT names the results folder when the test sets it; else --out does.
    let out_dir = match env.iter().find(|(k, _)| *k == "K6_OUT") {
        Some((_, v)) => std::path::PathBuf::from(v),
        None => {
            command.arg("--out").arg(dir.path());
            dir.path().to_path_buf()
        }
    };
    let out = command.arg(common::plugin("misbehave")).output().unwrap();
    let stdout = ok(&out);
    let summary = common::summary_json(&common::only_results_dir(&out_dir));
    (summary, stdout + &String::from_utf8_lossy(&out.stderr))
}

#[test]
fn k6_environment_variables_sit_between_flags_and_the_config() {
    let config = "[scenarios.default]\nexecutor = \"shared-iterations\"\nvus = 1\niterations = 3\n";
    // The config alone.
    let (s, _) = run_misbehave(&[], &[], Some(config));
    assert_eq!(s["metrics"]["iterations"]["count"], 3.0);
    // The environment over the config.
    let (s, _) = run_misbehave(
        &[],
        &[("K6_ITERATIONS", "5"), ("K6_VUS", "2")],
        Some(config),
    );
    assert_eq!(s["metrics"]["iterations"]["count"], 5.0);
    assert_eq!(s["scenarios"]["default"]["vus_allocated"], 2);
    // A flag over the environment.
    let (s, _) = run_misbehave(
        &["--iterations", "7"],
        &[("K6_ITERATIONS", "5")],
        Some(config),
    );
    assert_eq!(s["metrics"]["iterations"]["count"], 7.0);
    // The environment over the plugin's defaults (no config).
    let (s, _) = run_misbehave(&[], &[("K6_ITERATIONS", "4")], None);
    assert_eq!(s["metrics"]["iterations"]["count"], 4.0);
}

#[test]
fn k6_environment_variables_set_what_their_flags_set() {
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("from-k6-out");
    let export = dir.path().join("k6.json");
    let (s, output) = run_misbehave(
        &[],
        &[
            ("K6_STAGES", "1s:2,500ms:0"),
            ("K6_OUT", results.to_str().unwrap()),
            ("K6_QUIET", "true"),
            ("K6_NO_COLOR", "1"),
            ("K6_SUMMARY_EXPORT", export.to_str().unwrap()),
            ("K6_INSECURE_SKIP_TLS_VERIFY", "true"),
            ("K6_SUMMARY_TREND_STATS", "p(99),count"),
        ],
        None,
    );
    assert_eq!(s["scenarios"]["default"]["executor"], "ramping-vus");
    let stages = s["config"]["scenarios"]["default"]["stages"]
        .as_array()
        .unwrap();
    assert_eq!(stages.len(), 2, "{stages:?}");
    assert_eq!(s["config"]["tls"]["insecure_skip_verify"], true);
    assert!(
        !output.contains("http failed="),
        "K6_QUIET: no progress lines\n{output}"
    );
    let (_, loud) = run_misbehave(
        &[],
        &[("K6_STAGES", "1500ms:1"), ("K6_QUIET", "false")],
        None,
    );
    assert!(
        loud.contains("http failed="),
        "progress lines without it\n{loud}"
    );
    let exported = read_file(&export);
    let keys: Vec<&String> = exported.metrics["iteration_duration"].1.keys().collect();
    assert_eq!(keys, ["count", "p(99)"], "K6_SUMMARY_TREND_STATS");
    // A falsy value turns a switch off, as k6 reads it.
    let (s, _) = run_misbehave(
        &["--iterations", "1"],
        &[("K6_INSECURE_SKIP_TLS_VERIFY", "false")],
        None,
    );
    assert!(s["config"].get("tls").is_none(), "{}", s["config"]);
    // A bad value is refused with the variable named.
    let out = host(&[("K6_VUS", "many")])
        .args(["run"])
        .arg(common::plugin("misbehave"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("many") && err.contains("--vus"), "{err}");
}

/// The progress bars a run draws on a terminal (a pseudo-terminal made by `script`,
/// util-linux), with `env`.
fn drawn_on_a_terminal(env: &[(&str, &str)]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let line = format!(
        "{} run --stage 1500ms:1 -e MODE=ok --out {} {}",
        env!("CARGO_BIN_EXE_host"),
        dir.path().display(),
        common::plugin("misbehave").display()
    );
    let mut command = Command::new("script");
    for var in K6_VARS
        .iter()
        .chain(&["NO_COLOR", "CLICOLOR", "CLICOLOR_FORCE"])
    {
        command.env_remove(var);
    }
    let out = command
        .args(["-qec", &line, "/dev/null"])
        .env("TERM", "xterm-256color")
        .envs(env.iter().copied())
        .output()
        .expect("script (util-linux) runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn k6_no_color_takes_the_colours_out_of_the_bars() {
    const CYAN: &str = "\x1b[36m";
    let coloured = drawn_on_a_terminal(&[]);
    assert!(
        coloured.contains(CYAN),
        "bars are coloured on a terminal: {coloured:?}"
    );
    for env in [[("K6_NO_COLOR", "true")], [("NO_COLOR", "1")]] {
        let plain = drawn_on_a_terminal(&env);
        assert!(plain.contains("iterations="), "bars drawn: {plain:?}");
        assert!(!plain.contains(CYAN), "{env:?}: {plain:?}");
    }
}
