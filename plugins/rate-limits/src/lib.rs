//! `rate-limits`: the same pool of users from one address, then from an address each.
//!
//! The demo system limits requests per client address (`--rate-limit N`) and takes the
//! client's address from `X-Forwarded-For` when the request comes from a proxy it
//! trusts (`--trusted-proxy 127.0.0.1`); past the limit it answers 429 with
//! `Retry-After`. Both scenarios run the same users at the same pace (each VU signs in
//! once, then lists a group's notes every `PACE_MS`):
//!
//! - `one_address`: every VU sends `X-Forwarded-For: SHARED_IP`, as users behind one NAT
//!   or a load generator on one machine look to the target: they share one budget.
//! - `per_vu_address`: each VU sends an address of its own out of `IP_RANGE`
//!   (`loadtest::vu::fake_ip`), as the same users spread over the internet look.
//!
//! Every 429 is counted in the counter `http_429` and the rate `rate_limited` (both tagged
//! `addresses`: `one` or `per_vu`), and checked for `Retry-After`; 429 is an expected
//! status, so `http_req_failed` keeps measuring real failures. A 429 at sign-in waits the
//! `Retry-After` and tries again.
//!
//! Environment: `BASE_URL` (default `http://127.0.0.1:8080`), `SHARED_IP`
//! (`198.51.100.7`), `IP_RANGE` (`10.0.0.0/8`), `PACE_MS` (200).

use std::cell::RefCell;
use std::time::Duration;

use loadtest::{auth, check, http, metrics, vu, PluginInfo, Scenario};

/// The run config used when the operator gives none: 10 users at 5 requests a second
/// each (50/s), 20 s from one address, then 20 s from an address each. Against
/// `host target --rate-limit 20 --trusted-proxy 127.0.0.1`, the first gets about 30
/// 429s a second and the second none.
const DEFAULT_CONFIG: &str = r#"[scenarios.one_address]
executor = "constant-vus"
exec = "one_address"
vus = 10
duration = "20s"

[scenarios.per_vu_address]
executor = "constant-vus"
exec = "per_vu_address"
vus = 10
duration = "20s"
start_time = "20s"

[thresholds]
"rate_limited{addresses:per_vu}" = ["rate==0"]
"http_req_failed" = ["rate<0.01"]
"#;

thread_local! {
    /// This VU's bearer token and the address it sends, set on its first iteration.
    static IDENTITY: RefCell<Option<(String, String)>> = const { RefCell::new(None) };
}

/// The scenario.
struct RateLimits;

/// Counts a response's status: a 429 (checked for `Retry-After`) or not.
fn count(res: &http::Response, addresses: &str) -> bool {
    let limited = res.status() == 429;
    let tags = [("addresses", addresses)];
    metrics::rate("rate_limited", limited, &tags);
    if limited {
        metrics::counter("http_429", 1.0, &tags);
        check(
            "429 carries Retry-After",
            res.header("retry-after").is_some(),
        );
    }
    limited
}

/// Signs in from `address`, waiting out 429s.
fn sign_in(base: &str, address: &str, addresses: &str) -> Result<String, String> {
    let user = format!("vu-{}", vu::id());
    for _ in 0..20 {
        let res = auth::request(base, &user)
            .header("X-Forwarded-For", address)
            .expect_status(200)
            .expect_status(429)
            .send()?;
        if count(&res, addresses) {
            let wait: u64 = res
                .header("retry-after")
                .and_then(|s| s.trim().parse().ok())
                .unwrap_or(1);
            vu::sleep(Duration::from_secs(wait.clamp(1, 10)));
            continue;
        }
        return auth::token_from(&res, &user);
    }
    Err(format!("sign-in as {user}: rate-limited 20 times in a row"))
}

impl Scenario for RateLimits {
    fn describe() -> PluginInfo {
        PluginInfo::new("rate-limits")
            .description(
                "The same users from one address, then from an address each (X-Forwarded-For), counting 429s",
            )
            .scenario(
                "one_address",
                "every VU sends X-Forwarded-For: SHARED_IP and lists notes every PACE_MS; 429s counted",
            )
            .scenario(
                "per_vu_address",
                "each VU sends an address of its own (vu::fake_ip of IP_RANGE), same pace; 429s counted",
            )
            .default_config(DEFAULT_CONFIG)
    }

    fn iteration(scenario: String) -> Result<(), String> {
        let addresses = loadtest::choose(
            &scenario,
            &[("one_address", "one"), ("per_vu_address", "per_vu")],
        )?;
        let base = vu::base_url("http://127.0.0.1:8080");
        let (token, address) = match IDENTITY.with(|i| i.borrow().clone()) {
            Some(identity) => identity,
            None => {
                let address = if addresses == "one" {
                    vu::env_or("SHARED_IP", "198.51.100.7")
                } else {
                    vu::fake_ip(&vu::env_or("IP_RANGE", "10.0.0.0/8"))?.to_string()
                };
                let token = sign_in(&base, &address, addresses)?;
                IDENTITY.with(|i| *i.borrow_mut() = Some((token.clone(), address.clone())));
                (token, address)
            }
        };
        let group = vu::iteration() % 10 + 1;
        let res = http::get(format!("{base}/groups/{group}/notes"))
            .bearer(&token)
            .header("X-Forwarded-For", address.as_str())
            .name("/groups/{g}/notes")
            .expect_status(200)
            .expect_status(429)
            .send()?;
        if !count(&res, addresses) {
            check("list status is 200", res.status() == 200);
        }
        drop(res);
        let pace = vu::env("PACE_MS")
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(200);
        vu::sleep(Duration::from_millis(pace));
        Ok(())
    }
}

loadtest::export!(RateLimits);
