//! `outbox`: events at N per minute into an outbox that delivers signed webhooks, and
//! the time it takes to drain after the load.
//!
//! Each iteration of `events` posts one event (`POST /events`, 202); the demo system
//! keeps it in its outbox and delivers it, at its own pace, as an HMAC-SHA256-signed
//! webhook to its receiver, which verifies the signature. Events sent are counted in
//! `outbox_events_sent`. When the load stops, `teardown()` polls `GET /events` until
//! nothing is pending and records the wait in the trend `outbox_drain_time` (ms), the
//! events still pending at the end of the load in the gauge `outbox_pending_after_load`,
//! and the webhooks the receiver verified in the gauge `webhooks_received`. The default
//! config counts teardown with the run (`[http] count_setup = true`) so these metrics
//! reach the summary.
//!
//! Environment: `BASE_URL` (default `http://127.0.0.1:8080`), `DRAIN_TIMEOUT_S` (120),
//! `DRAIN_POLL_MS` (100).

use std::time::{Duration, Instant};

use loadtest::serde::Deserialize;
use loadtest::{check, http, log, metrics, vu, PluginInfo, Scenario};

/// The run config used when the operator gives none: 9,000 events a minute (150/s) for
/// 30 s, faster than the demo's default delivery rate (100/s), so a backlog builds and
/// the drain takes about 15 s.
const DEFAULT_CONFIG: &str = r#"[scenarios.events]
executor = "constant-arrival-rate"
exec = "events"
rate = 9000
time_unit = "1m"
duration = "30s"
pre_allocated_vus = 10
max_vus = 50

[http]
count_setup = true

[thresholds]
"http_req_duration{name:/events}" = ["p(95)<200"]
outbox_drain_time = ["max<60000"]
checks = ["rate>0.99"]
"#;

/// What `GET /events` answers.
#[derive(Deserialize)]
#[serde(crate = "loadtest::serde")]
struct Counts {
    pending: u64,
    received: u64,
}

/// The scenario.
struct Outbox;

fn counts(base: &str) -> Result<Counts, String> {
    let res = http::get(format!("{base}/events"))
        .name("GET /events")
        .send()?;
    if res.status() != 200 {
        return Err(format!("GET /events answered {}", res.status()));
    }
    res.json()
}

impl Scenario for Outbox {
    fn describe() -> PluginInfo {
        PluginInfo::new("outbox")
            .description(
                "Events at N per minute into an outbox of signed webhooks; the drain time after the load, in teardown",
            )
            .scenario(
                "events",
                "one POST /events (202); teardown waits for the outbox to drain and records outbox_drain_time",
            )
            .default_config(DEFAULT_CONFIG)
    }

    fn iteration(scenario: String) -> Result<(), String> {
        loadtest::dispatch(&scenario, &[("events", events)])
    }

    fn teardown(_data: String) -> Result<(), String> {
        let base = vu::base_url("http://127.0.0.1:8080");
        let began = Instant::now();
        let first = counts(&base)?;
        metrics::gauge("outbox_pending_after_load", first.pending as f64, &[]);
        let timeout = Duration::from_secs(vu::env_parse("DRAIN_TIMEOUT_S", 120u64));
        let poll = Duration::from_millis(vu::env_parse("DRAIN_POLL_MS", 100u64));
        let mut now = first;
        while now.pending > 0 {
            if began.elapsed() > timeout {
                check("outbox drained", false);
                return Err(format!(
                    "the outbox still holds {} events after {}s",
                    now.pending,
                    timeout.as_secs()
                ));
            }
            vu::sleep(poll);
            now = counts(&base)?;
        }
        let drain_ms = began.elapsed().as_secs_f64() * 1000.0;
        metrics::trend("outbox_drain_time", drain_ms, &[]);
        metrics::gauge("webhooks_received", now.received as f64, &[]);
        check("outbox drained", true);
        log::info(format!(
            "outbox drained in {drain_ms:.0} ms ({} webhooks received and verified)",
            now.received
        ));
        Ok(())
    }
}

/// Posts one event.
fn events() -> Result<(), String> {
    let info = vu::info();
    let res = http::post(format!("{}/events", vu::base_url("http://127.0.0.1:8080")))
        .json(&loadtest::serde_json::json!({
            "type": "order.created",
            "vu": info.vu_id,
            "iteration": info.iteration,
        }))
        .name("/events")
        .send()?;
    if !check("event accepted (202)", res.status() == 202) {
        return Err(format!("POST /events answered {}", res.status()));
    }
    metrics::counter("outbox_events_sent", 1.0, &[]);
    Ok(())
}

loadtest::export!(Outbox);
