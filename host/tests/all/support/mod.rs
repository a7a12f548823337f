//! Helpers shared by the integration tests: plugins built from plugins/, the demo
//! target, runs in-process with a config written to a temp dir, and results read back.

#![allow(dead_code)]

pub mod containers;
pub mod grpc_server;
pub mod k6;
pub mod mosquitto;
pub mod postgres;
pub mod redis;
pub mod servers;
pub mod turns;

use demo_target::{DemoConfig, DemoServer, Faults};
use host::Overrides;
use host::{RunOutcome, RunRequest};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

/// The demo API's user requests in its `/metrics` text: all requests less its internal
/// ones (health checks, scrapes, the worker), which `/metrics` counts apart.
pub fn user_requests_in(metrics: &str) -> u64 {
    let counter = |name: &str| -> u64 {
        metrics
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{name} ")))
            .unwrap_or_else(|| panic!("no {name} in {metrics}"))
            .trim()
            .parse()
            .unwrap()
    };
    counter("demo_requests_total") - counter("demo_internal_requests_total")
}

/// [`user_requests_in`] of one blocking scrape of the demo API at `addr` (the scrape
/// itself is internal, and counted on arrival).
pub fn scrape_user_requests(addr: &str) -> u64 {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    user_requests_in(&text)
}

/// A plugin built from plugins/ by the host's build script.
pub fn plugin(name: &str) -> PathBuf {
    let path = PathBuf::from(host::PLUGINS_DIR).join(format!("{name}.wasm"));
    assert!(path.exists(), "{} was not built", path.display());
    path
}

/// A finished run and its summary.json.
pub struct Finished {
    pub outcome: RunOutcome,
    pub json: serde_json::Value,
    pub dir: tempfile::TempDir,
}

impl Finished {
    /// A metric's field from summary.json (`metrics.NAME.FIELD`), 0 when absent.
    pub fn metric(&self, name: &str, field: &str) -> f64 {
        self.json["metrics"][name][field].as_f64().unwrap_or(0.0)
    }

    /// A metric's count, or a sub-metric's (`name{tag:value}`) as its threshold observed
    /// it: 0 when it has no samples.
    pub fn count(&self, key: &str) -> u64 {
        if !key.contains('{') {
            return self.metric(key, "count") as u64;
        }
        self.json["thresholds"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|t| t["metric"] == key)
            .and_then(|t| t["observed"].as_f64())
            .unwrap_or(0.0) as u64
    }

    /// A scenario's counter from summary.json.
    pub fn scenario(&self, name: &str, field: &str) -> u64 {
        self.json["scenarios"][name][field]
            .as_u64()
            .unwrap_or_else(|| panic!("no scenarios.{name}.{field} in {}", self.json))
    }
}

/// Runs `plugin` with the run config `toml` (may be empty) and `env`.
pub async fn run(plugin_name: &str, toml: &str, env: &[(&str, &str)]) -> anyhow::Result<Finished> {
    let dir = tempfile::tempdir()?;
    let config = if toml.is_empty() {
        None
    } else {
        let path = dir.path().join("run.toml");
        std::fs::write(&path, toml)?;
        Some(path)
    };
    let request = RunRequest {
        plugin: plugin(plugin_name),
        config,
        overrides: Overrides {
            env: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            ..Default::default()
        },
        out: dir.path().join("results"),
        quiet: true,
        handle_signals: false,
        watch: None,
        live: Default::default(),
        remote: None,
    };
    let outcome = host::run(request).await?;
    let text = std::fs::read_to_string(outcome.results_dir.join("summary.json"))?;
    let json = serde_json::from_str(&text)?;
    assert_http_counts_add_up(&json);
    Ok(Finished { outcome, json, dir })
}

/// Every request written to a connection was answered, failed, or is still in flight
/// (`sent = received + failed + in_flight`), and the failures by kind add up.
pub fn assert_http_counts_add_up(summary: &serde_json::Value) {
    let h = &summary["http"];
    let n = |key: &str| {
        h[key]
            .as_u64()
            .unwrap_or_else(|| panic!("no http.{key} in {h}"))
    };
    let sum = |key: &str| -> u64 {
        h[key]
            .as_object()
            .unwrap_or_else(|| panic!("no http.{key} in {h}"))
            .values()
            .map(|v| v.as_u64().unwrap())
            .sum()
    };
    assert_eq!(
        n("sent"),
        n("received") + n("failed") + n("in_flight"),
        "sent = received + failed + in flight: {h}"
    );
    assert_eq!(n("failed"), sum("errors"), "failed by kind: {h}");
    assert!(n("succeeded") <= n("received"), "{h}");
    // Every request made (sent or not) has its http_reqs sample.
    let http_reqs = summary["metrics"]["http_reqs"]["count"]
        .as_f64()
        .unwrap_or(0.0) as u64;
    assert_eq!(
        http_reqs,
        n("received") + n("failed") + sum("not_sent"),
        "http_reqs = received + failed + not sent: {h}"
    );
}

/// The demo target on a free loopback port, with `latency` added to every request.
pub async fn demo_target(latency: Duration) -> DemoServer {
    let config = DemoConfig {
        faults: Faults {
            latency,
            ..Faults::default()
        },
        ..DemoConfig::default()
    };
    DemoServer::start("127.0.0.1:0".parse().unwrap(), config)
        .await
        .expect("demo target starts")
}

/// Writes `toml` as a run config in `dir` and returns its path.
pub fn write_config(dir: &Path, toml: &str) -> PathBuf {
    let path = dir.join("run.toml");
    std::fs::write(&path, toml).unwrap();
    path
}

/// Runs `plugin` in-process with `config` and `env`, results under `out`.
pub async fn run_at(
    plugin_name: &str,
    config: &Path,
    env: &[(&str, &str)],
    out: &Path,
) -> RunOutcome {
    let mut request = RunRequest {
        plugin: plugin(plugin_name),
        config: Some(config.to_path_buf()),
        out: out.to_path_buf(),
        quiet: true,
        handle_signals: false,
        ..RunRequest::default()
    };
    request.overrides.env = env
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let outcome = host::run(request).await.expect("the run completes");
    let json = summary_json(&outcome.results_dir);
    assert_http_counts_add_up(&json);
    outcome
}

/// The only run folder under `out`.
pub fn only_results_dir(out: &Path) -> PathBuf {
    let dirs: Vec<PathBuf> = std::fs::read_dir(out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    assert_eq!(
        dirs.len(),
        1,
        "one results folder in {}: {dirs:?}",
        out.display()
    );
    dirs.into_iter().next().unwrap()
}

/// (passes, fails) of the check `name` in summary.json.
pub fn check_counts(summary: &serde_json::Value, name: &str) -> (u64, u64) {
    let c = summary["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no check {name:?}: {}", summary["checks"]));
    (c["passes"].as_u64().unwrap(), c["fails"].as_u64().unwrap())
}

/// A metric's `count` in summary.json (0 when it has no samples).
pub fn metric_count(summary: &serde_json::Value, metric: &str) -> f64 {
    summary["metrics"][metric]["count"].as_f64().unwrap_or(0.0)
}

/// Reads a results folder's summary.json.
pub fn summary_json(dir: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(dir.join("summary.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// The summary.json of the one run under `out`, after checking that its HTTP counts add
/// up, that it counted `expected` requests (one per iteration), and that the target
/// served exactly what the host counted.
pub fn counted_and_served(out: &Path, served: u64, expected: u64) -> serde_json::Value {
    let summary = summary_json(&only_results_dir(out));
    assert_http_counts_add_up(&summary);
    let http_reqs = summary["metrics"]["http_reqs"]["count"].as_f64().unwrap() as u64;
    assert_eq!(
        http_reqs, expected,
        "one request per iteration: {}",
        summary["http"]
    );
    assert_eq!(served, http_reqs, "the target served what the host counted");
    summary
}

/// A finished command's status, stdout and stderr, for an assertion's message.
pub fn output_text(out: &Output) -> String {
    format!(
        "status {}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Runs the host binary in `dir` with `args` (off the async runtime: it blocks).
pub async fn host_in<I>(dir: &Path, args: I) -> Output
where
    I: IntoIterator,
    I::Item: AsRef<std::ffi::OsStr>,
{
    let dir = dir.to_path_buf();
    let args: Vec<std::ffi::OsString> = args
        .into_iter()
        .map(|a| a.as_ref().to_os_string())
        .collect();
    tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_host"))
            .current_dir(dir)
            .args(args)
            .output()
            .expect("the host binary runs")
    })
    .await
    .unwrap()
}
