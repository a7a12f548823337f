//! `redis`: a Redis load test whose client lives in the plugin, over the host's TCP
//! sockets (contract 0.3.7): RESP written and read by `resp`, the connection held by
//! the host, checked against the allowlist and counted (`data_sent`,
//! `data_received`, `socket_connecting`).
//!
//! Each iteration, on the VU's connection (opened in its first iteration and kept;
//! reopened after a failure):
//!
//! - `SET {prefix}:str:{vu} v{iteration}`, then `GET` of it, checked;
//! - `INCR {prefix}:counter`;
//! - `HSET {prefix}:hash {vu}:{iteration} {iteration}` (a new field each time);
//! - `LPUSH {prefix}:list {vu}:{iteration}`.
//!
//! The `setget` scenario stops after the GET (what bench/sockets measures).
//!
//! Metrics, each tagged `command`: `redis_cmds` (counter), `redis_cmd_duration`
//! (trend of times), `redis_cmd_failed` (rate), and on failure `redis_cmd_errors`
//! with `error` (the socket error's kind, `protocol`, or `server` for a `-ERR`
//! reply); a failed connect counts in `redis_connect_errors{error}`. After a run the
//! server should hold: the counter equal to `redis_cmds{command:INCR}`, as many hash
//! fields and list items as HSETs and LPUSHes.
//!
//! Environment: `REDIS_HOST` (127.0.0.1), `REDIS_PORT` (6379), `REDIS_TLS` (`1`: TLS
//! with the run's `[tls]`), `REDIS_PREFIX` (`lt`), `REDIS_TIMEOUT_MS` (5000: each
//! read and write). Allow the server with `[targets] allow = ["tcp://HOST:PORT"]`
//! when it is not on loopback.

mod resp;

use loadtest::metrics::{check, counter, rate, trend_time};
use loadtest::sockets::TcpStream;
use loadtest::{vu, PluginInfo, Scenario};
use resp::{command, Reply, RespError};
use std::cell::RefCell;
use std::time::{Duration, Instant};

/// The run config used when the operator gives none.
const DEFAULT_CONFIG: &str = r#"[scenarios.default]
executor = "constant-vus"
vus = 2
duration = "5s"
"#;

thread_local! {
    /// The VU's connection (its instance lives as long as the VU).
    static CONN: RefCell<Option<TcpStream>> = const { RefCell::new(None) };
}

/// The scenario.
struct Redis;

fn open() -> Result<TcpStream, String> {
    let host = vu::env_or("REDIS_HOST", "127.0.0.1");
    let port: u16 = vu::env_or("REDIS_PORT", "6379")
        .parse()
        .map_err(|_| "REDIS_PORT must be a port number".to_string())?;
    let timeout = Duration::from_millis(
        vu::env_or("REDIS_TIMEOUT_MS", "5000")
            .parse()
            .map_err(|_| "REDIS_TIMEOUT_MS must be a number of milliseconds".to_string())?,
    );
    let mut options = TcpStream::options(&host, port).timeout(timeout);
    if vu::env_or("REDIS_TLS", "") == "1" {
        options = options.tls();
    }
    let mut conn = options.connect().map_err(|e| {
        counter("redis_connect_errors", 1.0, &[("error", e.kind())]);
        e.to_string()
    })?;
    conn.set_read_timeout(timeout);
    conn.set_write_timeout(timeout);
    Ok(conn)
}

/// Runs one command and records it; a socket or protocol failure closes the
/// connection (what is left on it cannot be trusted).
fn run(conn: &mut Option<TcpStream>, args: &[&[u8]]) -> Option<Reply> {
    let name = String::from_utf8_lossy(args[0]).to_ascii_uppercase();
    let tags = [("command", name.as_str())];
    let stream = conn.as_mut()?;
    let started = Instant::now();
    let reply = command(stream, args);
    trend_time(
        "redis_cmd_duration",
        started.elapsed().as_secs_f64() * 1000.0,
        &tags,
    );
    counter("redis_cmds", 1.0, &tags);
    let error = match &reply {
        Ok(Reply::Error(_)) => Some("server"),
        Ok(_) => None,
        Err(e) => Some(e.kind()),
    };
    rate("redis_cmd_failed", error.is_some(), &tags);
    if let Some(kind) = error {
        counter(
            "redis_cmd_errors",
            1.0,
            &[("command", name.as_str()), ("error", kind)],
        );
    }
    match reply {
        Ok(r) => Some(r),
        Err(e) => {
            if let RespError::Socket(_) = e {
                loadtest::log::warn(format!("redis {name}: {e}"));
            }
            *conn = None;
            None
        }
    }
}

impl Scenario for Redis {
    fn describe() -> PluginInfo {
        PluginInfo::new("redis")
            .description(
                "SET, GET, INCR, HSET and LPUSH over a host TCP socket, with redis_* metrics",
            )
            .scenario(
                "default",
                "one SET, GET, INCR, HSET and LPUSH per iteration",
            )
            .scenario(
                "setget",
                "one SET and one GET per iteration (bench/sockets)",
            )
            .default_config(DEFAULT_CONFIG)
    }

    fn iteration(scenario: String) -> Result<(), String> {
        let prefix = vu::env_or("REDIS_PREFIX", "lt");
        let id = vu::id();
        let n = vu::iteration();
        CONN.with(|cell| {
            let mut conn = cell.borrow_mut();
            if conn.is_none() {
                // A failed connect is counted; the next iteration tries again.
                match open() {
                    Ok(c) => *conn = Some(c),
                    Err(_) => return Ok(()),
                }
            }
            let key = format!("{prefix}:str:{id}");
            let value = format!("v{n}");
            let field = format!("{id}:{n}");
            run(&mut conn, &[b"SET", key.as_bytes(), value.as_bytes()]);
            let got = run(&mut conn, &[b"GET", key.as_bytes()]);
            if conn.is_some() {
                check(
                    "GET returns what SET wrote",
                    got == Some(Reply::Bulk(Some(value.into_bytes()))),
                );
            }
            if scenario == "setget" {
                return Ok(());
            }
            run(
                &mut conn,
                &[b"INCR", format!("{prefix}:counter").as_bytes()],
            );
            run(
                &mut conn,
                &[
                    b"HSET",
                    format!("{prefix}:hash").as_bytes(),
                    field.as_bytes(),
                    n.to_string().as_bytes(),
                ],
            );
            run(
                &mut conn,
                &[
                    b"LPUSH",
                    format!("{prefix}:list").as_bytes(),
                    field.as_bytes(),
                ],
            );
            Ok(())
        })
    }
}

loadtest::export!(Redis);
