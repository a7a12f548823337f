//! The `host` binary itself: commands, output and exit codes.

use crate::support as common;

use std::process::Command;

fn host() -> Command {
    Command::new(env!("CARGO_BIN_EXE_host"))
}

#[test]
fn inspect_prints_name_scenarios_and_contract() {
    let out = host()
        .arg("inspect")
        .arg(common::plugin("notes"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("name:        notes"), "{text}");
    assert!(text.contains("browse"), "{text}");
    assert!(text.contains("loadtest:scenario@0.3.10"), "{text}");
    assert!(text.contains("executor = \"constant-vus\""), "{text}");
}

#[test]
fn run_with_flags_writes_results_and_exits_zero() {
    let dir = tempfile::tempdir().unwrap();
    let out = host()
        .args([
            "run",
            "--iterations",
            "12",
            "--vus",
            "3",
            "-e",
            "MODE=ok",
            "--quiet",
            "--out",
        ])
        .arg(dir.path())
        .arg(common::plugin("misbehave"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("12 complete"), "{stdout}");
    // One results folder, beside the store of runs (runs.db and its journal files).
    let runs: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            !p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("runs.db")
        })
        .collect();
    assert_eq!(runs.len(), 1, "{runs:?}");
    let run_dir = runs[0].clone();
    assert!(run_dir
        .file_name()
        .unwrap()
        .to_string_lossy()
        .ends_with("-misbehave"));
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("summary.json")).unwrap())
            .unwrap();
    assert_eq!(
        summary["scenarios"]["default"]["executor"],
        "shared-iterations"
    );
    assert_eq!(summary["metrics"]["iterations"]["count"], 12.0);
}

#[test]
fn bad_plugin_exits_one_with_the_reason() {
    let out = host().args(["run", "Cargo.toml"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("is not a WebAssembly file"), "{err}");
}

#[test]
fn bad_flag_value_exits_two() {
    let out = host()
        .args(["run", "--duration", "10"])
        .arg(common::plugin("hello"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no unit"), "{err}");
}

/// `--dashboard` and `--stack` take an optional value, so a plugin path right after
/// them would be read as their value: the error says so and how to write it.
#[test]
fn a_plugin_after_a_flag_with_an_optional_value_is_explained() {
    for flag in ["--dashboard", "--stack"] {
        let out = host()
            .args(["run", flag])
            .arg(common::plugin("hello"))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{flag}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("is the plugin, not a value of"), "{err}");
        assert!(
            err.contains(&format!("put {flag} after the plugin")),
            "{err}"
        );
    }
    let out = host()
        .args(["run", "--dashboard", "nowhere"])
        .arg(common::plugin("hello"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("write IP:PORT"), "{err}");
}

/// `host target --listen 127.0.0.1:0 ARGS...`, and the address it printed it listens on.
fn spawn_target(args: &[&str]) -> (std::process::Child, String) {
    use std::io::BufRead;
    let mut child = host()
        .args(["target", "--listen", "127.0.0.1:0"])
        .args(args)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    let addr = first
        .trim()
        .rsplit("http://")
        .next()
        .unwrap()
        .trim_end_matches('/')
        .to_string();
    (child, addr)
}

/// One `GET /` with `X-Forwarded-For: xff` over a fresh connection; the status line
/// and whether a `Retry-After` came with it.
fn get_from(addr: &str, xff: &str) -> (u16, bool) {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    write!(
        stream,
        "GET / HTTP/1.1\r\nHost: {addr}\r\nX-Forwarded-For: {xff}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let status = answer
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status in {answer:?}"));
    (
        status,
        answer.to_ascii_lowercase().contains("\r\nretry-after:"),
    )
}

#[test]
fn target_limits_each_client_address_behind_a_trusted_proxy() {
    let (mut child, addr) = spawn_target(&["--rate-limit", "3", "--trusted-proxy", "127.0.0.1/32"]);
    // 12 requests from one client: at 3 a second, even spread over two seconds at
    // most 6 get through; the rest are refused with Retry-After.
    let answers: Vec<(u16, bool)> = (0..12).map(|_| get_from(&addr, "10.0.0.1")).collect();
    // The proxy's X-Forwarded-For is believed: another client has its own budget.
    let other = get_from(&addr, "10.0.0.2");
    let _ = child.kill();
    let _ = child.wait();
    let limited: Vec<_> = answers.iter().filter(|(s, _)| *s == 429).collect();
    assert!(limited.len() >= 6, "{answers:?}");
    assert!(limited.iter().all(|(_, retry)| *retry), "{answers:?}");
    assert_eq!(answers[0].0, 200, "{answers:?}");
    assert_eq!(other.0, 200, "{other:?}");

    let out = host()
        .args(["target", "--rate-limit", "0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--rate-limit must be at least 1"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// One request over a fresh connection; the whole answer (status line, headers, body).
fn exchange(addr: &str, method: &str, path: &str, body: &str) -> String {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    answer
}

#[test]
fn target_passes_large_groups_and_access_token_ttl_to_the_demo_system() {
    // rest-mix needs both: a large group to search, and tokens short-lived enough to
    // be refreshed within a run.
    let (mut child, addr) = spawn_target(&[
        "--large-groups",
        "2",
        "--large-group-notes",
        "30",
        "--access-token-ttl",
        "7s",
    ]);
    let config = exchange(&addr, "GET", "/api/config", "");
    let account = exchange(&addr, "POST", "/accounts", r#"{"user":"ttl-check"}"#);
    let _ = child.kill();
    let _ = child.wait();
    // Ten small groups, then the two large ones numbered 11 and 12.
    assert!(config.contains(r#""large_groups":[11,12]"#), "{config}");
    assert!(account.starts_with("HTTP/1.1 201"), "{account}");
    assert!(account.contains(r#""expires_in":7.0"#), "{account}");

    let out = host()
        .args(["target", "--access-token-ttl", "0s"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--access-token-ttl must be longer than 0"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
