//! `hello`: the smallest useful scenario — one `GET {BASE_URL}/` per iteration.
//!
//! `BASE_URL` comes from the run's environment (`-e BASE_URL=...`) and defaults to
//! `http://127.0.0.1:8080`, where `host demo` serves the demo application.

use loadtest::http::PreparedRequest;
use loadtest::{check, http, PluginInfo, Scenario};
use std::sync::OnceLock;

/// Used when the run sets no `BASE_URL`.
const DEFAULT_BASE_URL: &str = "http://127.0.0.1:8080";

/// The run config used when the operator gives none.
const DEFAULT_CONFIG: &str = r#"[scenarios.default]
executor = "constant-vus"
vus = 2
duration = "5s"
"#;

/// The scenario.
struct Hello;

impl Scenario for Hello {
    fn describe() -> PluginInfo {
        PluginInfo::new("hello")
            .description("GET {BASE_URL}/ once per iteration and check for a 200")
            .scenario("default", "GET / and check the status")
            .default_config(DEFAULT_CONFIG)
    }

    fn iteration(_scenario: String) -> Result<(), String> {
        // The request is the same every iteration: built and handed to the host once
        // (BASE_URL asked for once), then sent by handle. A failed prepare (a denied
        // target) is not kept, so every iteration meets it and it is counted each time.
        static HOME: OnceLock<PreparedRequest> = OnceLock::new();
        let home = match HOME.get() {
            Some(home) => home,
            None => {
                let base = loadtest::vu::env_or("BASE_URL", DEFAULT_BASE_URL);
                let url = format!("{}/", base.trim_end_matches('/'));
                let prepared = http::get(url).name("/").prepare()?;
                HOME.get_or_init(|| prepared)
            }
        };
        let res = home.send()?;
        check("status is 200", res.status() == 200);
        Ok(())
    }
}

loadtest::export!(Hello);
