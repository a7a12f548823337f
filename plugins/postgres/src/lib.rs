//! `postgres`: a PostgreSQL load test whose client lives in the plugin, over the
//! host's TCP sockets (contract 0.3.7): the wire protocol written and read by `wire`
//! (on `postgres-protocol`, sans I/O), the connection held by the host, checked
//! against the allowlist and counted (`data_sent`, `data_received`,
//! `socket_connecting`).
//!
//! Each VU logs in on its first iteration (startup, then trust, md5 or
//! SCRAM-SHA-256, as the server asks) and keeps its session; a failure that leaves
//! the session unsure closes it and the next iteration logs in again. A login that
//! fails fails the iteration with the server's reason. Scenarios:
//!
//! - `default`: an extended query (Parse/Bind/Execute/Sync) `INSERT INTO {table}
//!   (vu, iteration, note) VALUES ($1, $2, $3)` (statement `insert`), the table
//!   created by each new session if it is not there; an extended
//!   `SELECT count(*) FROM {table} WHERE vu = $1` (statement `count`), checked to be
//!   at least 1; and a simple query `SELECT 1` (statement `ping`), checked.
//! - `query`: the simple query in `PG_QUERY`, each iteration (statement
//!   `PG_QUERY_NAME`, `query` by default).
//!
//! Metrics, each tagged `statement`: `pg_queries` (counter), `pg_query_duration`
//! (trend of times), `pg_query_failed` (rate), and on failure `pg_query_errors` with
//! `error` (the socket error's kind, `protocol`, or `server` for an ErrorResponse);
//! `pg_login_duration` (startup to ReadyForQuery, auth included) and
//! `pg_connect_errors{error}` (`auth` for a refused login). After a run of the
//! default scenario the table holds one row per INSERT counted.
//!
//! Environment: `PG_HOST` (127.0.0.1), `PG_PORT` (5432), `PG_USER` (postgres),
//! `PG_PASSWORD` (empty), `PG_DATABASE` (the user's name), `PG_TABLE`
//! (`loadtest_items`), `PG_TIMEOUT_MS` (5000: each read and write). Allow the server
//! with `[targets] allow = ["tcp://HOST:PORT"]` when it is not on loopback. TLS is
//! not offered: PostgreSQL 15 negotiates it inside the protocol (SSLRequest), which
//! the host's TLS connect does not do.

mod wire;

use loadtest::metrics::{check, counter, rate, trend_time};
use loadtest::sockets::TcpStream;
use loadtest::{vu, PluginInfo, Scenario};
use std::cell::RefCell;
use std::time::{Duration, Instant};
use wire::{Connection, Login, PgError, Rows};

/// The run config used when the operator gives none.
const DEFAULT_CONFIG: &str = r#"[scenarios.default]
executor = "constant-vus"
vus = 2
duration = "5s"
"#;

thread_local! {
    /// The VU's session (its instance lives as long as the VU).
    static CONN: RefCell<Option<Connection>> = const { RefCell::new(None) };
}

/// The scenario.
struct Postgres;

/// The table's name from `PG_TABLE`: a plain lower-case identifier, since it is
/// written into the SQL.
fn table() -> Result<String, String> {
    let name = vu::env_or("PG_TABLE", "loadtest_items");
    let ok = !name.is_empty()
        && name.len() <= 63
        && name.starts_with(|c: char| c.is_ascii_lowercase() || c == '_')
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if ok {
        Ok(name)
    } else {
        Err(format!(
            "PG_TABLE={name:?}: a table name of lower-case letters, digits and _ (at most 63), not starting with a digit"
        ))
    }
}

/// Connects and logs in; a failure is counted in `pg_connect_errors{error}` and
/// comes back as a message naming the server and the role.
fn open() -> Result<Connection, String> {
    let host = vu::env_or("PG_HOST", "127.0.0.1");
    let port: u16 = vu::env_or("PG_PORT", "5432")
        .parse()
        .map_err(|_| "PG_PORT must be a port number".to_string())?;
    let timeout = Duration::from_millis(
        vu::env_or("PG_TIMEOUT_MS", "5000")
            .parse()
            .map_err(|_| "PG_TIMEOUT_MS must be a number of milliseconds".to_string())?,
    );
    let user = vu::env_or("PG_USER", "postgres");
    let password = vu::env_or("PG_PASSWORD", "");
    let database = vu::env_or("PG_DATABASE", &user);
    let login = Login {
        user: &user,
        password: &password,
        database: &database,
    };
    let started = Instant::now();
    let session = TcpStream::options(&host, port)
        .timeout(timeout)
        .connect()
        .map_err(PgError::from)
        .and_then(|mut stream| {
            stream.set_read_timeout(timeout);
            stream.set_write_timeout(timeout);
            Connection::start(stream, &login)
        });
    match session {
        Ok(conn) => {
            trend_time(
                "pg_login_duration",
                started.elapsed().as_secs_f64() * 1000.0,
                &[],
            );
            Ok(conn)
        }
        Err(e) => {
            counter("pg_connect_errors", 1.0, &[("error", e.kind())]);
            Err(format!("postgres {user}@{host}:{port}/{database}: {e}"))
        }
    }
}

/// Runs one query (simple when `params` is `None`) and records it under
/// `statement`; a failure other than the server's own error closes the session
/// (what is left on it cannot be trusted).
fn run(
    conn: &mut Option<Connection>,
    statement: &str,
    sql: &str,
    params: Option<&[Option<&str>]>,
) -> Option<Rows> {
    let session = conn.as_mut()?;
    let tags = [("statement", statement)];
    let started = Instant::now();
    let result = match params {
        Some(params) => session.query(sql, params),
        None => session.simple_query(sql),
    };
    trend_time(
        "pg_query_duration",
        started.elapsed().as_secs_f64() * 1000.0,
        &tags,
    );
    counter("pg_queries", 1.0, &tags);
    rate("pg_query_failed", result.is_err(), &tags);
    match result {
        Ok(rows) => Some(rows),
        Err(e) => {
            counter(
                "pg_query_errors",
                1.0,
                &[("statement", statement), ("error", e.kind())],
            );
            loadtest::log::warn(format!("postgres {statement}: {e}"));
            if e.is_fatal() {
                if let Some(c) = conn.take() {
                    c.close();
                }
            }
            None
        }
    }
}

/// The first value of the first row.
fn scalar(rows: &Option<Rows>) -> Option<&str> {
    rows.as_ref()?.rows.first()?.first()?.as_deref()
}

impl Scenario for Postgres {
    fn describe() -> PluginInfo {
        PluginInfo::new("postgres")
            .description(
                "INSERT and SELECT over the PostgreSQL wire protocol on a host TCP socket, with pg_* metrics",
            )
            .scenario(
                "default",
                "one INSERT and one SELECT count(*) (extended queries with parameters) and a SELECT 1 (simple query) per iteration",
            )
            .scenario("query", "the simple query in PG_QUERY, once per iteration")
            .default_config(DEFAULT_CONFIG)
    }

    fn iteration(scenario: String) -> Result<(), String> {
        CONN.with(|cell| {
            let mut conn = cell.borrow_mut();
            match scenario.as_str() {
                "default" => {
                    if conn.is_none() {
                        *conn = Some(open()?);
                        create_table(&mut conn)?;
                    }
                    default(&mut conn)
                }
                "query" => {
                    if conn.is_none() {
                        *conn = Some(open()?);
                    }
                    let sql = vu::env("PG_QUERY")
                        .ok_or("the query scenario runs PG_QUERY: set it to a SQL statement")?;
                    let name = vu::env_or("PG_QUERY_NAME", "query");
                    run(&mut conn, &name, &sql, None);
                    Ok(())
                }
                other => Err(format!(
                    "no scenario {other:?} in the postgres plugin: default or query"
                )),
            }
        })
    }
}

/// Creates the table if it is not there, on each new session of the default
/// scenario (not counted in `pg_queries`). VUs logging in together race to create
/// it: the loser's unique violation (23505) or duplicate table (42P07) means it is
/// there.
fn create_table(conn: &mut Option<Connection>) -> Result<(), String> {
    let table = table()?;
    let sql = format!(
        "CREATE TABLE IF NOT EXISTS {table} (id bigserial PRIMARY KEY, vu bigint NOT NULL, iteration bigint NOT NULL, note text, at timestamptz NOT NULL DEFAULT now())"
    );
    let Some(session) = conn.as_mut() else {
        return Ok(());
    };
    match session.simple_query(&sql) {
        Ok(_) => Ok(()),
        // Sessions creating the table at once race inside PostgreSQL's catalogue
        // (`IF NOT EXISTS` is not atomic): the loser gets a unique violation (23505),
        // "already exists" (42P07, 42710) or another catalogue error, depending on
        // where the other session was. Whatever the code, a table that is there now is
        // what the iteration needs; the session is usable after a server error.
        Err(PgError::Server { .. }) if table_exists(session, &table) => Ok(()),
        Err(e) => {
            if let Some(c) = conn.take() {
                c.close();
            }
            Err(format!("postgres: creating the table {table}: {e}"))
        }
    }
}

/// Whether `table` (a checked plain identifier) exists, asked on `session`.
fn table_exists(session: &mut Connection, table: &str) -> bool {
    let rows = session.simple_query(&format!("SELECT to_regclass('{table}') IS NOT NULL"));
    scalar(&rows.ok()) == Some("t")
}

/// The default scenario's three queries.
fn default(conn: &mut Option<Connection>) -> Result<(), String> {
    let table = table()?;
    let id = vu::id().to_string();
    let n = vu::iteration().to_string();
    let note = format!("vu {id} iteration {n}");
    run(
        conn,
        "insert",
        &format!("INSERT INTO {table} (vu, iteration, note) VALUES ($1, $2, $3)"),
        Some(&[Some(&id), Some(&n), Some(&note)]),
    );
    let count = run(
        conn,
        "count",
        &format!("SELECT count(*) FROM {table} WHERE vu = $1"),
        Some(&[Some(&id)]),
    );
    if count.is_some() {
        check(
            "count sees the VU's rows",
            scalar(&count).and_then(|c| c.parse::<u64>().ok()) >= Some(1),
        );
    }
    let one = run(conn, "ping", "SELECT 1", None);
    if one.is_some() {
        check("SELECT 1 returns 1", scalar(&one) == Some("1"));
    }
    Ok(())
}

loadtest::export!(Postgres);
