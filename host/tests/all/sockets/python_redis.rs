//! The Python SDK's sockets (`loadtest.sockets`, plugins/python/loadtest/sockets.py):
//! a plugin made by `host new --lang python` whose app speaks RESP to Debian's
//! redis-server over `TcpSocket`, built by `host build` with componentize-py and run
//! by `host run`. What the server holds and counts is what the plugin did; a refused
//! connection comes to Python as a `SocketError` of kind `refused`.

use crate::support::redis::Redis;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The app: SET, GET (checked) and INCR per iteration on a socket kept on `self`.
const APP: &str = r#"
import loadtest
from loadtest import sockets


def command(sock, *args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    sock.sendall(out)
    line = sock.recv_until(b"\r\n", 1024)
    kind, rest = line[:1], line[1:-2]
    if kind == b"+":
        return rest.decode()
    if kind == b"-":
        raise RuntimeError(rest.decode())
    if kind == b":":
        return int(rest)
    if kind == b"$":
        n = int(rest)
        return None if n < 0 else sock.recv_exactly(n + 2)[:-2]
    raise RuntimeError(f"unexpected reply {line!r}")


class RedisPy(loadtest.Scenario):
    name = "redis-py"
    scenarios = [("default", "SET, GET and INCR over a host socket")]

    def init(self, data):
        self.sock = None

    def iteration(self, scenario):
        if self.sock is None:
            self.sock = sockets.TcpSocket.connect(
                "127.0.0.1", int(loadtest.env("REDIS_PORT")), timeout=5, tags={"db": "redis"})
            try:
                sockets.TcpSocket.connect("127.0.0.1", int(loadtest.env("DEAD_PORT")), timeout=5)
                loadtest.check("a refused connect raises", False)
            except sockets.SocketError as e:
                loadtest.check("a refused connect raises", e.kind == "refused")
        info = loadtest.info()
        key = f"py:str:{info.vu_id}"
        value = f"v{info.iteration}"
        loadtest.check("SET answers OK", command(self.sock, "SET", key, value) == "OK")
        loadtest.check("GET returns what SET wrote",
                       command(self.sock, "GET", key) == value.encode())
        command(self.sock, "INCR", "py:counter")
        loadtest.counter("py_redis_cmds", 3)


Plugin = loadtest.export(RedisPy)
"#;

/// componentize-py: `$COMPONENTIZE_PY`, else the venv `./dev test` makes.
fn componentize_py() -> PathBuf {
    if let Some(p) = std::env::var_os("COMPONENTIZE_PY") {
        return PathBuf::from(p);
    }
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/py-venv/bin/componentize-py");
    if venv.is_file() {
        return venv;
    }
    PathBuf::from("componentize-py")
}

fn host(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_host"))
        .current_dir(dir)
        .env("COMPONENTIZE_PY", componentize_py())
        .args(args)
        .output()
        .expect("the host binary runs")
}

fn text(out: &Output) -> String {
    format!(
        "status {}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn a_python_plugin_speaks_redis_over_a_host_socket() {
    let redis = Redis::start();
    let tmp = tempfile::tempdir().unwrap();
    let made = host(tmp.path(), &["new", "redis-py", "--lang", "python"]);
    assert!(made.status.success(), "{}", text(&made));
    let project = tmp.path().join("redis-py");
    assert!(
        project.join("loadtest/sockets.py").is_file(),
        "host new wrote no sockets.py"
    );
    std::fs::write(project.join("app.py"), APP).unwrap();
    let built = host(&project, &["build"]);
    assert!(built.status.success(), "{}", text(&built));
    let component = String::from_utf8(built.stdout.clone())
        .unwrap()
        .trim()
        .to_string();

    let config = crate::support::write_config(
        tmp.path(),
        "[scenarios.default]\nexecutor = \"shared-iterations\"\nvus = 2\niterations = 30\n",
    );
    let dead = crate::support::servers::dead_port().port().to_string();
    let out = tmp.path().join("results");
    let ran = host(
        tmp.path(),
        &[
            "run",
            &component,
            "--config",
            config.to_str().unwrap(),
            "-e",
            &format!("REDIS_PORT={}", redis.port),
            "-e",
            &format!("DEAD_PORT={dead}"),
            "--out",
            out.to_str().unwrap(),
            "--quiet",
        ],
    );
    assert!(ran.status.success(), "{}", text(&ran));
    let summary = crate::support::summary_json(&crate::support::only_results_dir(&out));
    for name in ["SET answers OK", "GET returns what SET wrote"] {
        assert_eq!(
            crate::support::check_counts(&summary, name),
            (30, 0),
            "{name}"
        );
    }
    // The server's count (read first: the reads below are commands too): one SET,
    // GET and INCR per iteration.
    let calls = redis.calls();
    for cmd in ["set", "get", "incr"] {
        assert_eq!(calls.get(cmd).copied(), Some(30), "{cmd}: {calls:?}");
    }
    let vus = redis.cli(&["KEYS", "py:str:*"]).lines().count() as u64;
    assert!((1..=2).contains(&vus), "{vus}");
    assert_eq!(
        crate::support::check_counts(&summary, "a refused connect raises"),
        (vus, 0)
    );
    assert_eq!(redis.int(&["GET", "py:counter"]), 30);
    let metrics = &summary["metrics"];
    assert_eq!(metrics["py_redis_cmds"]["count"].as_f64(), Some(90.0));
    // The host's side: one connection per VU to redis, one refused per VU.
    assert_eq!(
        metrics["socket_connects"]["count"].as_f64(),
        Some(vus as f64),
        "{metrics}"
    );
    assert_eq!(
        metrics["socket_errors"]["count"].as_f64(),
        Some(vus as f64),
        "{metrics}"
    );
    assert!(metrics["data_sent"]["count"].as_f64().unwrap() > 90.0 * 20.0);
}
