//! `invoke`: a function endpoint behind an API key, at a constant arrival rate.
//!
//! The demo system's `POST /invoke` wants `X-Api-Key` (401 without) and serves a fixed
//! number of invocations at once; one that finds every slot busy is shed at once with
//! 503 and `Retry-After`, not queued. Each iteration of `invoke` makes one invocation
//! with a small JSON payload and counts the outcome: `invoke_ok`, and `invoke_shed` for
//! a 503 (checked for `Retry-After`); 503 is an expected status, so `http_req_failed`
//! keeps measuring real failures while `invoke_shed_rate` gives the share shed.
//! `setup()` checks once that a request without the key is refused (401).
//!
//! Environment: `BASE_URL` (default `http://127.0.0.1:8080`), `API_KEY` (`demo-key`).

use loadtest::{check, http, metrics, vu, PluginInfo, Scenario};

/// The run config used when the operator gives none: 300 invocations a second for
/// 30 s, which the demo's default 8 slots of 20 ms (400/s) mostly serve, shedding the
/// bursts.
const DEFAULT_CONFIG: &str = r#"[scenarios.invoke]
executor = "constant-arrival-rate"
exec = "invoke"
rate = 300
time_unit = "1s"
duration = "30s"
pre_allocated_vus = 20
max_vus = 100

[thresholds]
"http_req_duration{name:/invoke}" = ["p(95)<200"]
invoke_shed_rate = ["rate<0.10"]
http_req_failed = ["rate<0.01"]
"#;

/// The scenario.
struct Invoke;

impl Scenario for Invoke {
    fn describe() -> PluginInfo {
        PluginInfo::new("invoke")
            .description(
                "Invocations behind an API key at a constant arrival rate, counting the ones shed (503 + Retry-After)",
            )
            .scenario(
                "invoke",
                "one POST /invoke with X-Api-Key; ok counted in invoke_ok, shed (503) in invoke_shed",
            )
            .default_config(DEFAULT_CONFIG)
    }

    fn setup(_config: String) -> Result<String, String> {
        let res = http::post(format!("{}/invoke", vu::base_url("http://127.0.0.1:8080")))
            .json(&loadtest::serde_json::json!({ "ping": true }))
            .name("/invoke")
            .expect_status(401)
            .send()?;
        if res.status() != 401 {
            return Err(format!(
                "POST /invoke without X-Api-Key answered {}, not 401: is BASE_URL the demo system?",
                res.status()
            ));
        }
        Ok(String::new())
    }

    fn iteration(scenario: String) -> Result<(), String> {
        loadtest::dispatch(&scenario, &[("invoke", invoke)])
    }
}

/// One call of the API, shed (503) or served (200).
fn invoke() -> Result<(), String> {
    let info = vu::info();
    let res = http::post(format!("{}/invoke", vu::base_url("http://127.0.0.1:8080")))
        .header("X-Api-Key", vu::env_or("API_KEY", "demo-key"))
        .json(&loadtest::serde_json::json!({
            "vu": info.vu_id,
            "iteration": info.iteration,
        }))
        .name("/invoke")
        .expect_status(200)
        .expect_status(503)
        .send()?;
    let shed = res.status() == 503;
    metrics::rate("invoke_shed_rate", shed, &[]);
    if shed {
        metrics::counter("invoke_shed", 1.0, &[]);
        check(
            "shed answers carry Retry-After",
            res.header("retry-after").is_some(),
        );
    } else if check("invoke answers 200", res.status() == 200) {
        metrics::counter("invoke_ok", 1.0, &[]);
    } else {
        return Err(format!("POST /invoke answered {}", res.status()));
    }
    Ok(())
}

loadtest::export!(Invoke);
