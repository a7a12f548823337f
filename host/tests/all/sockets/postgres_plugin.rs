//! The `postgres` plugin (plugins/postgres: the wire protocol in the plugin, on
//! `postgres-protocol`, over the host's TCP sockets) against Debian's PostgreSQL 15 in
//! a throwaway cluster: the rows the plugin says it inserted are the rows the table
//! holds; SCRAM-SHA-256, md5 and trust logins; a wrong password named as such; a
//! server error that leaves the session usable; a denied port never reached.

use crate::support::postgres::{Postgres, PASSWORD};
use crate::support::run;
use std::time::Duration;

/// A run of `iterations` shared by `vus` VUs, with a threshold per sub-metric the
/// test reads (so the summary carries each).
fn config(scenario: &str, vus: u32, iterations: u32, extra: &str) -> String {
    let mut c = format!(
        "[scenarios.{scenario}]\nexec = \"{scenario}\"\nexecutor = \"shared-iterations\"\nvus = {vus}\niterations = {iterations}\nmax_duration = \"60s\"\n{extra}\n[thresholds]\nallow_missing = true\n"
    );
    for statement in ["insert", "count", "ping", "missing"] {
        c += &format!("\"pg_queries{{statement:{statement}}}\" = [\"count>=0\"]\n");
        c += &format!(
            "\"pg_query_errors{{statement:{statement},error:server}}\" = [\"count>=0\"]\n"
        );
    }
    for kind in ["auth", "denied"] {
        c += &format!("\"pg_connect_errors{{error:{kind}}}\" = [\"count>=0\"]\n");
    }
    c
}

fn env<'a>(pg_port: &'a str, user: &'a str, table: &'a str) -> Vec<(&'a str, &'a str)> {
    vec![
        ("PG_PORT", pg_port),
        ("PG_USER", user),
        ("PG_PASSWORD", PASSWORD),
        ("PG_DATABASE", "loadtest"),
        ("PG_TABLE", table),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_plugin_rows_equal_the_tables_over_scram() {
    let pg = Postgres::start();
    let port = pg.port.to_string();
    let run = run(
        "postgres",
        &config("default", 3, 60, ""),
        &env(&port, "lt_scram", "items_scram"),
    )
    .await
    .unwrap();
    assert_eq!(run.outcome.exit_code, 0, "{}", run.json);
    for statement in ["insert", "count", "ping"] {
        assert_eq!(
            run.count(&format!("pg_queries{{statement:{statement}}}")),
            60,
            "{statement}: {} (plugin errors: {})",
            run.json["metrics"],
            run.json["plugin_errors"]
        );
    }
    assert_eq!(run.count("pg_queries"), 180);
    assert_eq!(run.metric("pg_query_failed", "passes"), 0.0);
    // The server's side: one row per INSERT, each VU's iterations in its own rows,
    // the parameters stored as sent.
    assert_eq!(pg.int("SELECT count(*) FROM items_scram"), 60);
    assert_eq!(
        pg.int("SELECT count(*) FROM items_scram WHERE note = 'vu ' || vu || ' iteration ' || iteration"),
        60
    );
    let vus = pg.int("SELECT count(DISTINCT vu) FROM items_scram");
    assert!((1..=3).contains(&vus), "{vus}");
    // Each session was the SCRAM role's, and only the plugin's sessions wrote.
    assert_eq!(
        pg.int("SELECT count(*) FROM pg_tables WHERE tablename = 'items_scram' AND tableowner = 'lt_scram'"),
        1
    );
    for name in ["count sees the VU's rows", "SELECT 1 returns 1"] {
        let (passes, fails) = crate::support::check_counts(&run.json, name);
        assert_eq!((passes, fails), (60, 0), "{name}");
    }
    // The host's side: one connection per VU that ran, one login each, bytes both ways.
    assert_eq!(run.count("socket_connects") as i64, vus);
    assert_eq!(run.count("pg_login_duration") as i64, vus);
    assert_eq!(run.count("socket_errors"), 0);
    assert!(run.metric("data_sent", "count") > 60.0 * 100.0);
    assert!(run.metric("pg_query_duration", "max") > 0.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn md5_and_trust_logins_and_a_server_error_keep_the_session() {
    let pg = Postgres::start();
    let port = pg.port.to_string();
    for (user, table) in [("lt_md5", "items_md5"), ("lt_trust", "items_trust")] {
        let run = run(
            "postgres",
            &config("default", 1, 5, ""),
            &env(&port, user, table),
        )
        .await
        .unwrap();
        assert_eq!(
            run.count("pg_queries{statement:insert}"),
            5,
            "{user}: {}",
            run.json
        );
        assert_eq!(
            pg.int(&format!("SELECT count(*) FROM {table}")),
            5,
            "{user}"
        );
        assert_eq!(run.count("socket_connects"), 1, "{user}");
    }
    // The md5 role's stored password is an md5 hash, so its login was md5 indeed.
    assert_eq!(
        pg.psql(
            "postgres",
            "SELECT left(rolpassword, 3) FROM pg_authid WHERE rolname = 'lt_md5'"
        ),
        "md5"
    );
    // A query the server refuses fails that query only: one session for all three.
    let mut e = env(&port, "lt_scram", "unused");
    e.push(("PG_QUERY", "SELECT * FROM no_such_table"));
    e.push(("PG_QUERY_NAME", "missing"));
    let run = run("postgres", &config("query", 1, 3, ""), &e)
        .await
        .unwrap();
    assert_eq!(
        run.count("pg_query_errors{statement:missing,error:server}"),
        3,
        "{}",
        run.json
    );
    assert_eq!(run.metric("pg_query_failed", "passes"), 3.0);
    assert_eq!(run.count("socket_connects"), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_password_is_named_as_such() {
    let pg = Postgres::start();
    let port = pg.port.to_string();
    let mut e = env(&port, "lt_scram", "items_bad");
    e[2] = ("PG_PASSWORD", "not the password");
    let run = run("postgres", &config("default", 1, 2, ""), &e)
        .await
        .unwrap();
    assert_eq!(
        run.count("pg_connect_errors{error:auth}"),
        2,
        "{}",
        run.json
    );
    assert_eq!(run.count("pg_queries"), 0);
    let errors = run.json["plugin_errors"].as_array().unwrap();
    let message = errors[0]["message"].as_str().unwrap();
    assert!(
        message.contains("authentication failed")
            && message.contains("password authentication failed for user \"lt_scram\"")
            && message.contains("28P01")
            && message.contains(&format!("lt_scram@127.0.0.1:{port}/loadtest")),
        "{message}"
    );
    assert_eq!(errors[0]["count"], 2);
    assert_eq!(
        pg.int("SELECT count(*) FROM pg_tables WHERE tablename = 'items_bad'"),
        0
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denied_port_is_counted_and_never_reached() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port().to_string();
    let extra = "[targets]\nallow = [\"tcp://127.0.0.1:1\"]\n";
    let run = run(
        "postgres",
        &config("default", 1, 3, extra),
        &env(&port, "lt_scram", "items"),
    )
    .await
    .unwrap();
    assert_eq!(run.count("socket_connects_denied"), 3, "{}", run.json);
    assert_eq!(run.count("pg_connect_errors{error:denied}"), 3);
    assert_eq!(run.count("socket_connects"), 0);
    let message = run.json["plugin_errors"][0]["message"].as_str().unwrap();
    assert!(
        message.contains("denied") || message.contains("allow"),
        "{message}"
    );
    let reached = tokio::time::timeout(Duration::from_millis(200), listener.accept()).await;
    assert!(reached.is_err(), "a denied connect reached the port");
}
