//! `command-burst`: commands that complete asynchronously, submitted in rising bursts.
//!
//! Each VU signs in once (`init`). Each iteration of `burst` submits one command
//! (`POST /commands`, answered 202 with an id) and follows it (`GET /commands/{id}`
//! every `POLL_MS`) until its status is final, `done` or `failed`; the time from
//! submitting to seeing the final status goes to the custom trend
//! `command_submit_to_done` (tagged `status`). Counters `commands_submitted` and
//! `commands_followed` (tagged `status`) let a run be checked against the server's
//! `demo_commands_submitted_total` and `demo_commands_finished_total`.
//!
//! The default config is the seed's: a ramping arrival rate at 1, 5, 10 and 20 commands
//! a second, 10 s each.
//!
//! Environment: `BASE_URL` (default `http://127.0.0.1:8080`), `POLL_MS` (50),
//! `FOLLOW_TIMEOUT_S` (30), `FAIL_EVERY` (20: every 20th command exports the empty
//! group 0, which the worker fails; 0 for none).

use std::time::Duration;

use loadtest::serde::Deserialize;
use loadtest::{auth, check, http, jobs, metrics, vu, PluginInfo, Scenario};

/// The run config used when the operator gives none.
const DEFAULT_CONFIG: &str = r#"[scenarios.burst]
executor = "ramping-arrival-rate"
exec = "burst"
start_rate = 1
time_unit = "1s"
pre_allocated_vus = 10
max_vus = 100
stages = [
  { duration = "10s", target = 1 },
  { duration = "1s", target = 5 },
  { duration = "9s", target = 5 },
  { duration = "1s", target = 10 },
  { duration = "9s", target = 10 },
  { duration = "1s", target = 20 },
  { duration = "9s", target = 20 },
]

[thresholds]
command_submit_to_done = ["p(95)<2000"]
"http_req_duration{name:/commands}" = ["p(95)<500"]
checks = ["rate>0.99"]
"#;

/// A command as `GET /commands/{id}` answers it (only the field read here).
#[derive(Deserialize)]
#[serde(crate = "loadtest::serde")]
struct Command {
    status: String,
}

/// The scenario.
struct CommandBurst;

impl Scenario for CommandBurst {
    fn describe() -> PluginInfo {
        PluginInfo::new("command-burst")
            .description(
                "Asynchronous commands at 1, 5, 10 and 20 per second, each followed to done or failed",
            )
            .scenario(
                "burst",
                "submit one command (202 with an id), poll its status until done or failed; \
                 submit-to-final time in the trend command_submit_to_done",
            )
            .default_config(DEFAULT_CONFIG)
    }

    fn init(_data: String) -> Result<(), String> {
        let user = format!("vu-{}", vu::id());
        auth::sign_in_once(&vu::base_url("http://127.0.0.1:8080"), &user)
    }

    fn iteration(scenario: String) -> Result<(), String> {
        loadtest::dispatch(&scenario, &[("burst", burst)])
    }
}

/// Submits one command and follows it to its final status.
fn burst() -> Result<(), String> {
    let token = auth::token()?;
    let base = vu::base_url("http://127.0.0.1:8080");
    let info = vu::info();
    let fail_every = vu::env_parse("FAIL_EVERY", 20u64);
    let group = if fail_every > 0 && info.iteration_in_scenario % fail_every == fail_every - 1 {
        0
    } else {
        info.iteration_in_scenario % 10 + 1
    };
    let submit = http::post(format!("{base}/commands"))
        .bearer(token)
        .json(&loadtest::serde_json::json!({ "kind": "export", "group": group }))
        .name("/commands");
    let job = jobs::submit(submit, "submit answers 202")?;
    metrics::counter("commands_submitted", 1.0, &[]);

    let poll = Duration::from_millis(vu::env_parse("POLL_MS", 50u64));
    let deadline = Duration::from_secs(vu::env_parse("FOLLOW_TIMEOUT_S", 30u64));
    let mut last = String::new();
    let finished = job.follow(poll, deadline, |id| {
        let res = http::get(format!("{base}/commands/{id}"))
            .bearer(token)
            .name("/commands/{id}")
            .send()?;
        if !check("status answers 200", res.status() == 200) {
            return Err(format!("GET /commands/{id} answered {}", res.status()));
        }
        let command: Command = res.json()?;
        let done = command.status == "done" || command.status == "failed";
        last = command.status;
        Ok(done.then(|| last.clone()))
    })?;
    let Some(status) = finished else {
        check("command reached a final status", false);
        return Err(format!(
            "command {} still {last} after {}s",
            job.id,
            deadline.as_secs()
        ));
    };
    let took = job.submitted.elapsed().as_secs_f64() * 1000.0;
    let tags = [("status", status.as_str())];
    metrics::trend("command_submit_to_done", took, &tags);
    metrics::counter("commands_followed", 1.0, &tags);
    check("command reached a final status", true);
    Ok(())
}

loadtest::export!(CommandBurst);
