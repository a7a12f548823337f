//! `hello`: the smallest useful scenario — one `GET {BASE_URL}/` per iteration.
//!
//! `BASE_URL` comes from the run's environment (`-e BASE_URL=...`) and defaults to
//! `http://127.0.0.1:8080`, where `host demo` serves the demo application.

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
        // The URL is the same for every iteration: ask the host for BASE_URL once.
        static URL: OnceLock<String> = OnceLock::new();
        let url = URL.get_or_init(|| {
            let base = loadtest::vu::env_or("BASE_URL", DEFAULT_BASE_URL);
            format!("{}/", base.trim_end_matches('/'))
        });
        let res = http::get(url.as_str()).name("/").send()?;
        check("status is 200", res.status() == 200);
        Ok(())
    }
}

loadtest::export!(Hello);
