//! `redis`: a Redis load test whose client lives in the plugin, over the host's TCP
//! sockets (contract 0.3.7; whole replies by `read_frame`, 0.3.9): RESP written and
//! read by `resp`, the connection held by
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
//! Metrics, each tagged `command` (registered once per command, then recorded by
//! number: `metrics::Registered`): `redis_cmds` (counter), `redis_cmd_duration`
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

use loadtest::metrics::{check, counter, Kind, Registered};
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
    /// Each command's three metrics, registered with the host at its first use: a
    /// sample then crosses as a number and a value (contract 0.3.9).
    static SERIES: RefCell<Vec<(&'static str, Series)>> = const { RefCell::new(Vec::new()) };
    /// `REDIS_PREFIX`, read once.
    static PREFIX: String = vu::env_or("REDIS_PREFIX", "lt");
    /// The VU's string key, `{prefix}:str:{vu}`, made once.
    static KEY: RefCell<Option<(u64, String)>> = const { RefCell::new(None) };
}

/// The VU's string key (the VU's id does not change, but is checked).
fn string_key(prefix: &str, id: u64) -> String {
    KEY.with(|cell| {
        let mut key = cell.borrow_mut();
        match &*key {
            Some((of, k)) if *of == id => k.clone(),
            _ => {
                let k = format!("{prefix}:str:{id}");
                *key = Some((id, k.clone()));
                k
            }
        }
    })
}

/// A command's metrics, each tagged with it.
struct Series {
    duration: Registered,
    count: Registered,
    failed: Registered,
}

impl Series {
    fn new(name: &str) -> Series {
        let tags = [("command", name)];
        Series {
            duration: Registered::trend_time("redis_cmd_duration", &tags),
            count: Registered::new("redis_cmds", Kind::Counter, &tags),
            failed: Registered::new("redis_cmd_failed", Kind::Rate, &tags),
        }
    }
}

/// Records one command of `name` that took `ms` and failed or not.
fn record(name: &'static str, ms: f64, failed: bool) {
    SERIES.with(|cell| {
        let mut all = cell.borrow_mut();
        let at = match all.iter().position(|(n, _)| *n == name) {
            Some(at) => at,
            None => {
                all.push((name, Series::new(name)));
                all.len() - 1
            }
        };
        let s = &all[at].1;
        s.duration.add(ms);
        s.count.add(1.0);
        s.failed.add(if failed { 1.0 } else { 0.0 });
    });
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
fn run(conn: &mut Option<TcpStream>, name: &'static str, args: &[&[u8]]) -> Option<Reply> {
    let stream = conn.as_mut()?;
    let started = Instant::now();
    let mut words = Vec::with_capacity(args.len() + 1);
    words.push(name.as_bytes());
    words.extend_from_slice(args);
    let reply = command(stream, &words);
    let error = match &reply {
        Ok(Reply::Error(_)) => Some("server"),
        Ok(_) => None,
        Err(e) => Some(e.kind()),
    };
    record(
        name,
        started.elapsed().as_secs_f64() * 1000.0,
        error.is_some(),
    );
    if let Some(kind) = error {
        counter(
            "redis_cmd_errors",
            1.0,
            &[("command", name), ("error", kind)],
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
        let info = vu::info();
        let (id, n) = (info.vu_id, info.iteration);
        PREFIX.with(|prefix| iterate(&scenario, prefix, id, n))
    }
}

/// One iteration of `scenario` for VU `id`, its iteration `n`.
fn iterate(scenario: &str, prefix: &str, id: u64, n: u64) -> Result<(), String> {
    CONN.with(|cell| {
        let mut conn = cell.borrow_mut();
        if conn.is_none() {
            // A failed connect is counted; the next iteration tries again.
            match open() {
                Ok(c) => *conn = Some(c),
                Err(_) => return Ok(()),
            }
        }
        let key = string_key(prefix, id);
        let mut value = Vec::with_capacity(21);
        value.push(b'v');
        resp::push_number(&mut value, n);
        run(&mut conn, "SET", &[key.as_bytes(), &value]);
        let got = run(&mut conn, "GET", &[key.as_bytes()]);
        if conn.is_some() {
            check(
                "GET returns what SET wrote",
                got == Some(Reply::Bulk(Some(value))),
            );
        }
        if scenario == "setget" {
            return Ok(());
        }
        let field = format!("{id}:{n}");
        run(&mut conn, "INCR", &[format!("{prefix}:counter").as_bytes()]);
        run(
            &mut conn,
            "HSET",
            &[
                format!("{prefix}:hash").as_bytes(),
                field.as_bytes(),
                n.to_string().as_bytes(),
            ],
        );
        run(
            &mut conn,
            "LPUSH",
            &[format!("{prefix}:list").as_bytes(), field.as_bytes()],
        );
        Ok(())
    })
}

loadtest::export!(Redis);
