//! `starter`: a process-instance starter in the style of Camunda's benchmark.
//!
//! Camunda's starter creates process instances at a fixed rate and counts what it sent
//! apart from what came back: a broker that falls behind shows as a gap between the two,
//! not as a slower starter. Here a process instance is an asynchronous command of the
//! demo system: each iteration of `start` submits one (`POST /commands`, 202: counted in
//! `instances_sent`), then waits for its completion (`GET /commands/{id}` until done or
//! failed: counted in `instances_received`, tagged `status`; its time in the trend
//! `instance_duration`). The arrival rate is constant and the in-flight instances are
//! bounded by `max_vus`: when every VU is waiting on an instance, the next start is
//! dropped and reported in `dropped_iterations`, as the starter's bounded queue of
//! in-flight requests would refuse it.
//!
//! Environment: `BASE_URL` (default `http://127.0.0.1:8080`), `POLL_MS` (100),
//! `COMPLETION_TIMEOUT_S` (30).

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use loadtest::serde::Deserialize;
use loadtest::{check, http, metrics, vu, PluginInfo, Scenario};

/// The run config used when the operator gives none: 50 starts a second for a minute,
/// at most 100 in flight.
const DEFAULT_CONFIG: &str = r#"[scenarios.start]
executor = "constant-arrival-rate"
exec = "start"
rate = 50
time_unit = "1s"
duration = "60s"
pre_allocated_vus = 20
max_vus = 100

[thresholds]
# No dropped start is the good case, and records no sample.
allow_missing = true
instance_duration = ["p(99)<1000"]
dropped_iterations = ["count<1"]
checks = ["rate>0.99"]
"#;

/// This VU's bearer token, set by `init`.
static TOKEN: OnceLock<String> = OnceLock::new();

#[derive(Deserialize)]
#[serde(crate = "loadtest::serde")]
struct TokenResponse {
    token: String,
}

#[derive(Deserialize)]
#[serde(crate = "loadtest::serde")]
struct Command {
    id: u64,
    status: String,
}

/// The scenario.
struct Starter;

impl Scenario for Starter {
    fn describe() -> PluginInfo {
        PluginInfo::new("starter")
            .description(
                "Camunda-style starter: process instances at a constant rate, in flight bounded by max_vus, \
                 sent counted apart from received",
            )
            .scenario(
                "start",
                "start one instance (an asynchronous command: instances_sent), wait for its completion \
                 (instances_received, instance_duration)",
            )
            .default_config(DEFAULT_CONFIG)
    }

    fn init(_data: String) -> Result<(), String> {
        let user = format!("starter-{}", vu::id());
        let res = http::post(format!(
            "{}/auth/token",
            vu::base_url("http://127.0.0.1:8080")
        ))
        .json(&loadtest::serde_json::json!({ "user": user }))
        .name("/auth/token")
        .send()?;
        if !check("sign-in status is 200", res.status() == 200) {
            return Err(format!("sign-in as {user} answered {}", res.status()));
        }
        let TokenResponse { token } = res.json()?;
        TOKEN
            .set(token)
            .map_err(|_| "init ran twice in one VU".to_owned())
    }

    fn iteration(scenario: String) -> Result<(), String> {
        match scenario.as_str() {
            "start" | "default" => start(),
            other => Err(format!(
                "unknown scenario `{other}`; this plugin has `start`"
            )),
        }
    }
}

/// Starts one instance and waits for it to complete.
fn start() -> Result<(), String> {
    let token = TOKEN.get().ok_or("no token: init did not run")?;
    let base = vu::base_url("http://127.0.0.1:8080");
    let group = vu::info().iteration_in_scenario % 10 + 1;
    let started = Instant::now();
    let res = http::post(format!("{base}/commands"))
        .bearer(token)
        .json(&loadtest::serde_json::json!({ "kind": "export", "group": group }))
        .name("/commands")
        .send()?;
    if !check("instance started (202)", res.status() == 202) {
        return Err(format!("POST /commands answered {}", res.status()));
    }
    let Command { id, .. } = res.json()?;
    drop(res);
    metrics::counter("instances_sent", 1.0, &[]);

    let poll = Duration::from_millis(vu::env_parse("POLL_MS", 100u64));
    let deadline = Duration::from_secs(vu::env_parse("COMPLETION_TIMEOUT_S", 30u64));
    while started.elapsed() < deadline {
        vu::sleep(poll);
        let res = http::get(format!("{base}/commands/{id}"))
            .bearer(token)
            .name("/commands/{id}")
            .send()?;
        if res.status() != 200 {
            check("instance visible (200)", false);
            return Err(format!("GET /commands/{id} answered {}", res.status()));
        }
        let command: Command = res.json()?;
        if command.status == "done" || command.status == "failed" {
            let tags = [("status", command.status.as_str())];
            metrics::counter("instances_received", 1.0, &tags);
            metrics::trend(
                "instance_duration",
                started.elapsed().as_secs_f64() * 1000.0,
                &tags,
            );
            check("instance completed", command.status == "done");
            return Ok(());
        }
    }
    check("instance completed", false);
    Err(format!(
        "instance {id} not completed after {}s",
        deadline.as_secs()
    ))
}

loadtest::export!(Starter);
