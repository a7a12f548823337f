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
//! The same work has a gRPC variant, over the demo system's gRPC face (its gateway
//! `demo.gateway.v1.Gateway`, descriptors by server reflection): the scenario function
//! `start_grpc`, or `start` with `FACE=grpc`, creates the instance with
//! `CreateProcessInstance` and polls `GetProcessInstance`, the token of the REST sign-in
//! sent as `authorization` metadata. Both faces count into the same metrics, tagged
//! `face` (`rest`, `grpc`), so the two can be run side by side.
//!
//! Environment: `BASE_URL` (default `http://127.0.0.1:8080`), `POLL_MS` (100),
//! `COMPLETION_TIMEOUT_S` (30), `FACE` (`rest` or `grpc`; default `rest`),
//! `GRPC_TARGET` (the gRPC face's `host:port`; default `BASE_URL_API_26500` without its
//! scheme, as `host run --stack` sets it, else `127.0.0.1:26500`).

use std::cell::RefCell;
use std::time::{Duration, Instant};

use loadtest::grpc::Channel;
use loadtest::serde::Deserialize;
use loadtest::serde_json::{json, Value};
use loadtest::{auth, check, http, jobs, metrics, vu, PluginInfo, Scenario};

/// The gateway's methods this scenario calls.
const CREATE: &str = "demo.gateway.v1.Gateway/CreateProcessInstance";
const GET: &str = "demo.gateway.v1.Gateway/GetProcessInstance";

thread_local! {
    /// This VU's channel to the gRPC face, opened at its first gRPC iteration.
    static CHANNEL: RefCell<Option<Channel>> = const { RefCell::new(None) };
}

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

/// A command as `GET /commands/{id}` answers it (only the field read here).
#[derive(Deserialize)]
#[serde(crate = "loadtest::serde")]
struct Command {
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
                 (instances_received, instance_duration); over gRPC with FACE=grpc",
            )
            .scenario(
                "start_grpc",
                "the same over the demo system's gRPC face (CreateProcessInstance, then \
                 GetProcessInstance until done)",
            )
            .default_config(DEFAULT_CONFIG)
    }

    fn init(_data: String) -> Result<(), String> {
        let user = format!("starter-{}", vu::id());
        auth::sign_in_once(&vu::base_url("http://127.0.0.1:8080"), &user)
    }

    fn iteration(scenario: String) -> Result<(), String> {
        loadtest::dispatch(
            &scenario,
            &[("start", start_on_face), ("start_grpc", start_grpc)],
        )
    }
}

/// [`start`] or [`start_grpc`], as `FACE` says (`rest` by default).
fn start_on_face() -> Result<(), String> {
    match vu::env_or("FACE", "rest").as_str() {
        "rest" => start(),
        "grpc" => start_grpc(),
        other => Err(format!("FACE={other:?}: write rest or grpc")),
    }
}

/// Starts one instance and waits for it to complete.
fn start() -> Result<(), String> {
    let token = auth::token()?;
    let base = vu::base_url("http://127.0.0.1:8080");
    let group = vu::info().iteration_in_scenario % 10 + 1;
    let submit = http::post(format!("{base}/commands"))
        .bearer(token)
        .json(&loadtest::serde_json::json!({ "kind": "export", "group": group }))
        .name("/commands");
    let job = jobs::submit(submit, "instance started (202)")?;
    metrics::counter("instances_sent", 1.0, &[("face", "rest")]);

    let poll = Duration::from_millis(vu::env_parse("POLL_MS", 100u64));
    let deadline = Duration::from_secs(vu::env_parse("COMPLETION_TIMEOUT_S", 30u64));
    let completed = job.follow(poll, deadline, |id| {
        let res = http::get(format!("{base}/commands/{id}"))
            .bearer(token)
            .name("/commands/{id}")
            .send()?;
        if res.status() != 200 {
            check("instance visible (200)", false);
            return Err(format!("GET /commands/{id} answered {}", res.status()));
        }
        let command: Command = res.json()?;
        Ok(finished(&command.status, "rest", job.submitted).then_some(()))
    })?;
    if completed.is_none() {
        check("instance completed", false);
        return Err(format!(
            "instance {} not completed after {}s",
            job.id,
            deadline.as_secs()
        ));
    }
    Ok(())
}

/// Records a finished instance (true) or nothing while it is still in flight.
fn finished(status: &str, face: &str, started: Instant) -> bool {
    if status != "done" && status != "failed" {
        return false;
    }
    let tags = [("status", status), ("face", face)];
    metrics::counter("instances_received", 1.0, &tags);
    metrics::trend(
        "instance_duration",
        started.elapsed().as_secs_f64() * 1000.0,
        &tags,
    );
    check("instance completed", status == "done");
    true
}

/// The gRPC face's `host:port`.
fn grpc_target() -> String {
    if let Some(target) = vu::env("GRPC_TARGET").filter(|t| !t.is_empty()) {
        return target;
    }
    match vu::env("BASE_URL_API_26500") {
        Some(url) => url
            .trim_start_matches("http://")
            .trim_end_matches('/')
            .to_owned(),
        None => "127.0.0.1:26500".to_owned(),
    }
}

/// Runs `f` with this VU's channel, opening it first when needed.
fn with_channel<T>(f: impl FnOnce(&Channel) -> Result<T, String>) -> Result<T, String> {
    CHANNEL.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            *slot = Some(Channel::builder(&grpc_target()).reflect().connect()?);
        }
        f(slot.as_ref().expect("opened above"))
    })
}

/// The instance's id in a ProcessInstance message (proto3 JSON writes a uint64 as a
/// string).
fn instance_id(message: &Value) -> Result<u64, String> {
    match &message["id"] {
        Value::String(s) => s.parse().ok(),
        other => other.as_u64(),
    }
    .ok_or_else(|| format!("no id in the ProcessInstance {message}"))
}

/// [`start`] over the gRPC face.
fn start_grpc() -> Result<(), String> {
    let token = auth::token()?;
    let bearer = format!("Bearer {token}");
    let group = vu::info().iteration_in_scenario % 10 + 1;
    with_channel(|channel| {
        let started = Instant::now();
        let request = json!({ "kind": "export", "group": group }).to_string();
        let res = channel
            .call(CREATE, &request)
            .metadata("authorization", &bearer)
            .send();
        if !check("instance started (OK)", res.is_ok()) {
            return Err(format!(
                "CreateProcessInstance: {}",
                res.err().map(String::from).unwrap_or_default()
            ));
        }
        let message: Value = loadtest::serde_json::from_str(
            res.ok().and_then(|r| r.message).as_deref().unwrap_or("{}"),
        )
        .map_err(|e| format!("CreateProcessInstance answered bad JSON: {e}"))?;
        let id = instance_id(&message)?;
        metrics::counter("instances_sent", 1.0, &[("face", "grpc")]);

        let poll = Duration::from_millis(vu::env_parse("POLL_MS", 100u64));
        let deadline = Duration::from_secs(vu::env_parse("COMPLETION_TIMEOUT_S", 30u64));
        let request = json!({ "id": id.to_string() }).to_string();
        while started.elapsed() < deadline {
            vu::sleep(poll);
            let res = channel
                .call(GET, &request)
                .metadata("authorization", &bearer)
                .send();
            let res = match res {
                Ok(res) => res,
                Err(e) => {
                    check("instance visible (OK)", false);
                    return Err(format!("GetProcessInstance {id}: {e}"));
                }
            };
            let message: Value =
                loadtest::serde_json::from_str(res.message.as_deref().unwrap_or("{}"))
                    .map_err(|e| format!("GetProcessInstance answered bad JSON: {e}"))?;
            if finished(message["status"].as_str().unwrap_or(""), "grpc", started) {
                return Ok(());
            }
        }
        check("instance completed", false);
        Err(format!(
            "instance {id} not completed after {}s",
            deadline.as_secs()
        ))
    })
}

loadtest::export!(Starter);
