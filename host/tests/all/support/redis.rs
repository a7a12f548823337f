//! A throwaway redis-server (Debian's package; `./dev test` installs it) on a free
//! loopback port with its own temporary folder, nothing saved, killed when dropped;
//! and `redis-cli` (from redis-tools, which redis-server depends on) to read what it
//! holds.

use std::collections::HashMap;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running redis-server.
pub struct Redis {
    child: Child,
    /// Its port on 127.0.0.1.
    pub port: u16,
    _dir: tempfile::TempDir,
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Redis {
    /// Starts a server and waits until it answers PING.
    pub fn start() -> Redis {
        let binary = ["/usr/bin/redis-server", "redis-server"]
            .into_iter()
            .find(|b| Command::new(b).arg("--version").output().is_ok())
            .expect("the tests need redis-server: install Debian's redis-server package");
        let dir = tempfile::tempdir().unwrap();
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let child = Command::new(binary)
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no", "--daemonize", "no"])
            .arg("--dir")
            .arg(dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("cannot start redis-server");
        let redis = Redis {
            child,
            port,
            _dir: dir,
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        while redis.try_cli(&["PING"]).as_deref() != Some("PONG") {
            assert!(
                Instant::now() < deadline,
                "redis-server did not start on {port}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        redis
    }

    fn try_cli(&self, args: &[&str]) -> Option<String> {
        let out = Command::new("redis-cli")
            .args(["-h", "127.0.0.1", "-p", &self.port.to_string()])
            .args(args)
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
    }

    /// A command's reply as redis-cli prints it (one line per item).
    pub fn cli(&self, args: &[&str]) -> String {
        self.try_cli(args)
            .unwrap_or_else(|| panic!("redis-cli {args:?} failed"))
    }

    /// A command's integer reply.
    pub fn int(&self, args: &[&str]) -> i64 {
        let text = self.cli(args);
        text.parse()
            .unwrap_or_else(|_| panic!("redis-cli {args:?}: {text:?} is not an integer"))
    }

    /// Calls per command (lower case) since the server started, from INFO commandstats.
    pub fn calls(&self) -> HashMap<String, u64> {
        let text = self.cli(&["INFO", "commandstats"]);
        let mut out = HashMap::new();
        for line in text.lines() {
            // cmdstat_set:calls=60,usec=...
            let Some(rest) = line.strip_prefix("cmdstat_") else {
                continue;
            };
            let Some((name, stats)) = rest.split_once(':') else {
                continue;
            };
            let calls = stats
                .split(',')
                .find_map(|kv| kv.strip_prefix("calls="))
                .and_then(|n| n.trim().parse().ok())
                .unwrap_or(0);
            out.insert(name.to_string(), calls);
        }
        out
    }
}
