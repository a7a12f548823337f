//! k6's Redis client (`k6/experimental/redis` as k6 1.x has it, `k6/x/redis` as k6 2.x
//! does) in a script run by `host run script.js` against Debian's redis-server: the keys,
//! counters, hash fields, list and set the script leaves are what the server holds, the
//! server's own command counts equal `redis_cmds` by command, and the script saw what
//! xk6-redis gives (a nil GET rejects with `redis: nil`, `sismember` is a boolean).
//! Checked by hand against k6 1.1.0 on the same script (thresholds removed: k6 has no
//! Redis metric): the same 34 keys, counter, hash, list and set, every check passing.

use crate::support as common;
use crate::support::redis::Redis;
use common::{host_in as host, output_text as text};

const SCRIPT: &str = r#"
import redis from 'MODULE';
import { check } from 'k6';

const client = new redis.Client(`redis://127.0.0.1:${__ENV.REDIS_PORT}`);

export const options = {
  scenarios: { default: { executor: 'per-vu-iterations', vus: 3, iterations: 10 } },
  thresholds: {
    'redis_cmds{command:get}': ['count>=0'],
    'redis_cmds{command:set}': ['count>=0'],
    'redis_cmd_duration{command:incr}': ['p(95)>=0'],
  },
};

export default async function () {
  const id = `${__VU}-${__ITER}`;
  await client.set(`k:${id}`, `v${id}`, 3600);
  const v = await client.get(`k:${id}`);
  await client.incr('counter');
  await client.hset('hash', `f${id}`, id);
  await client.lpush('list', id);
  await client.sadd('set', `m${(__VU * 31 + __ITER) % 7}`);
  const member = await client.sismember('set', `m${(__VU * 31 + __ITER) % 7}`);
  const ttl = await client.ttl(`k:${id}`);
  let missing = 'none';
  await client.get('no-such-key').catch((e) => { missing = String(e); });
  const exists = await client.sendCommand('EXISTS', `k:${id}`);
  check(v, {
    'get returns what set wrote': (x) => x === `v${id}`,
    'sismember is true': () => member === true,
    'ttl is set': () => ttl > 0 && ttl <= 3600,
    'a missing key rejects with redis: nil': () => missing === 'redis: nil',
    'sendCommand answers': () => exists === 1,
  });
}
"#;

async fn run_script(module: &str) {
    let redis = Redis::start();
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(
        tmp.path().join("script.js"),
        SCRIPT.replace("MODULE", module),
    )
    .unwrap();
    let out = tmp.path().join("results");
    let port = format!("REDIS_PORT={}", redis.port);
    let ran = host(
        tmp.path(),
        &[
            "run",
            "script.js",
            "-e",
            &port,
            "--out",
            out.to_str().unwrap(),
            "--quiet",
        ],
    )
    .await;
    assert!(ran.status.success(), "{module}: {}", text(&ran));
    let summary = common::summary_json(&common::only_results_dir(&out));
    for name in [
        "get returns what set wrote",
        "sismember is true",
        "ttl is set",
        "a missing key rejects with redis: nil",
        "sendCommand answers",
    ] {
        assert_eq!(
            common::check_counts(&summary, name),
            (30, 0),
            "{module}: {name}"
        );
    }
    // Read first: the checks below send commands of their own (GET counter).
    let calls = redis.calls();
    // What the server holds.
    assert_eq!(redis.int(&["GET", "counter"]), 30);
    assert_eq!(redis.int(&["HLEN", "hash"]), 30);
    assert_eq!(redis.int(&["LLEN", "list"]), 30);
    let members = redis.int(&["SCARD", "set"]);
    assert!((1..=7).contains(&members), "{members}");
    assert_eq!(redis.cli(&["KEYS", "k:*"]).lines().count(), 30);
    assert_eq!(redis.int(&["DBSIZE"]), 34);
    // What the server counted is what the host measured, command by command.
    for (cmd, n) in [
        ("set", 30),
        ("get", 60),
        ("incr", 30),
        ("hset", 30),
        ("lpush", 30),
        ("sadd", 30),
        ("sismember", 30),
        ("ttl", 30),
        ("exists", 30),
    ] {
        assert_eq!(
            calls.get(cmd).copied(),
            Some(n),
            "{module}: {cmd}: {calls:?}"
        );
    }
    assert_eq!(common::metric_count(&summary, "redis_cmds"), 300.0);
    let observed = |key: &str| {
        summary["thresholds"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["metric"] == key)
            .and_then(|t| t["observed"].as_f64())
    };
    assert_eq!(observed("redis_cmds{command:get}"), Some(60.0));
    assert_eq!(observed("redis_cmds{command:set}"), Some(30.0));
    assert_eq!(
        summary["metrics"]["redis_cmd_failed"]["passes"].as_u64(),
        Some(0),
        "{}",
        summary["metrics"]
    );
    assert_eq!(common::metric_count(&summary, "socket_connects"), 3.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn k6_experimental_redis_leaves_what_the_server_holds() {
    run_script("k6/experimental/redis").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn k6_x_redis_is_the_same_client() {
    run_script("k6/x/redis").await;
}
