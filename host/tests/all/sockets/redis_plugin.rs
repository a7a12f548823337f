//! The `redis` plugin (plugins/redis: RESP in the plugin, over the host's TCP sockets)
//! against Debian's redis-server: what the plugin's metrics say it did is what the
//! server counted and holds. Then the failures a socket meets, each typed and counted:
//! a denied host:port (no connection reaches it), a refused one, a peer that closes in
//! the middle of a reply, and a reply larger than the host holds for a socket.

use crate::support::redis::Redis;
use crate::support::run;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const COMMANDS: [&str; 5] = ["SET", "GET", "INCR", "HSET", "LPUSH"];

/// A run of `iterations` shared by `vus` VUs, with a threshold per sub-metric the
/// test reads (so the summary carries each).
fn config(vus: u32, iterations: u32, extra: &str) -> String {
    let mut c = format!(
        "[scenarios.default]\nexecutor = \"shared-iterations\"\nvus = {vus}\niterations = {iterations}\nmax_duration = \"30s\"\n{extra}\n[thresholds]\nallow_missing = true\n"
    );
    for cmd in COMMANDS {
        c += &format!("\"redis_cmds{{command:{cmd}}}\" = [\"count>=0\"]\n");
    }
    for kind in ["denied", "refused", "closed", "too_large"] {
        c += &format!("\"socket_errors{{error:{kind}}}\" = [\"count>=0\"]\n");
        c += &format!("\"redis_connect_errors{{error:{kind}}}\" = [\"count>=0\"]\n");
    }
    c
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_plugin_counts_equal_the_servers() {
    let redis = Redis::start();
    let port = redis.port.to_string();
    let run = run(
        "redis",
        &config(3, 60, ""),
        &[("REDIS_PORT", &port), ("REDIS_PREFIX", "t")],
    )
    .await
    .unwrap();
    assert_eq!(run.outcome.exit_code, 0, "{}", run.json["metrics"]);
    let calls = redis.calls();
    for cmd in COMMANDS {
        let counted = run.count(&format!("redis_cmds{{command:{cmd}}}"));
        assert_eq!(counted, 60, "{cmd}: {}", run.json["metrics"]);
        assert_eq!(
            calls.get(&cmd.to_ascii_lowercase()).copied(),
            Some(counted),
            "{cmd}: the server's count: {calls:?}"
        );
    }
    assert_eq!(run.count("redis_cmds"), 300);
    assert_eq!(redis.int(&["GET", "t:counter"]), 60);
    assert_eq!(redis.int(&["HLEN", "t:hash"]), 60);
    assert_eq!(redis.int(&["LLEN", "t:list"]), 60);
    // One string key per VU that ran, plus the counter, the hash and the list.
    let strings = redis.cli(&["KEYS", "t:str:*"]).lines().count() as i64;
    assert!((1..=3).contains(&strings), "{strings}");
    assert_eq!(redis.int(&["DBSIZE"]), strings + 3);
    let (passes, fails) = crate::support::check_counts(&run.json, "GET returns what SET wrote");
    assert_eq!((passes, fails), (60, 0));
    // The host's side: one connection per VU that ran, its bytes, none failed.
    assert_eq!(run.count("socket_connects") as i64, strings);
    assert_eq!(run.count("socket_errors"), 0);
    assert!(run.metric("data_sent", "count") > 300.0 * 20.0);
    assert!(run.metric("data_received", "count") > 300.0 * 4.0);
    assert!(run.metric("socket_connecting", "max") > 0.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denied_port_is_counted_and_never_reached() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port().to_string();
    // Only another port is allowed.
    let extra = "[targets]\nallow = [\"tcp://127.0.0.1:1\"]\n";
    let run = run("redis", &config(1, 3, extra), &[("REDIS_PORT", &port)])
        .await
        .unwrap();
    assert_eq!(run.count("socket_connects_denied"), 3, "{}", run.json);
    assert_eq!(run.count("redis_connect_errors{error:denied}"), 3);
    assert_eq!(run.count("socket_connects"), 0);
    assert_eq!(run.count("redis_cmds"), 0);
    let reached = tokio::time::timeout(Duration::from_millis(200), listener.accept()).await;
    assert!(reached.is_err(), "a denied connect reached the port");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_connection_is_typed() {
    let port = crate::support::servers::dead_port().port().to_string();
    let run = run("redis", &config(1, 2, ""), &[("REDIS_PORT", &port)])
        .await
        .unwrap();
    assert_eq!(
        run.count("socket_errors{error:refused}"),
        2,
        "{}",
        run.json["metrics"]
    );
    assert_eq!(run.count("redis_connect_errors{error:refused}"), 2);
    assert_eq!(run.count("socket_connects"), 0);
}

/// A fake Redis that answers the first command of each connection with `reply` and
/// closes; the port it listens on.
async fn answering(reply: &'static [u8]) -> String {
    let url = crate::support::servers::raw_server(move |mut s| async move {
        let mut buf = [0u8; 256];
        let _ = s.read(&mut buf).await;
        let _ = s.write_all(reply).await;
        let _ = s.shutdown().await;
    })
    .await;
    url.trim_start_matches("http://127.0.0.1:")
        .trim_end_matches('/')
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_closing_mid_reply_and_a_reply_past_the_bound_are_typed() {
    // A bulk string of 10 bytes, of which 3 come before the close.
    let port = answering(b"$10\r\nabc").await;
    let run = run("redis", &config(1, 2, ""), &[("REDIS_PORT", &port)])
        .await
        .unwrap();
    assert_eq!(
        run.count("socket_errors{error:closed}"),
        2,
        "{}",
        run.json["metrics"]
    );
    assert_eq!(
        run.json["metrics"]["redis_cmd_failed"]["passes"].as_u64(),
        Some(2),
        "the two SETs failed: {}",
        run.json["metrics"]
    );
    // A bulk string of 100 MB: more than the host holds for a socket (4 MiB).
    let port = answering(b"$100000000\r\n").await;
    let run = crate::support::run("redis", &config(1, 2, ""), &[("REDIS_PORT", &port)])
        .await
        .unwrap();
    assert_eq!(
        run.count("socket_errors{error:too_large}"),
        2,
        "{}",
        run.json["metrics"]
    );
    assert_eq!(run.count("socket_connects"), 2);
    assert_eq!(run.outcome.exit_code, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_setget_scenario_sends_only_set_and_get() {
    // What bench/sockets measures: one SET and one GET per iteration, nothing else.
    let redis = Redis::start();
    let port = redis.port.to_string();
    let toml = config(2, 40, "").replace(
        "[scenarios.default]\n",
        "[scenarios.default]\nexec = \"setget\"\n",
    );
    let run = run(
        "redis",
        &toml,
        &[("REDIS_PORT", &port), ("REDIS_PREFIX", "sg")],
    )
    .await
    .unwrap();
    assert_eq!(run.outcome.exit_code, 0, "{}", run.json["metrics"]);
    let calls = redis.calls();
    assert_eq!(calls.get("set").copied(), Some(40), "{calls:?}");
    assert_eq!(calls.get("get").copied(), Some(40), "{calls:?}");
    for cmd in ["incr", "hset", "lpush"] {
        assert_eq!(calls.get(cmd), None, "{cmd}: {calls:?}");
    }
    assert_eq!(run.count("redis_cmds"), 80);
    let (passes, fails) = crate::support::check_counts(&run.json, "GET returns what SET wrote");
    assert_eq!((passes, fails), (40, 0));
}
