//! A throwaway Mosquitto broker (Debian's mosquitto; `./dev test` installs it with
//! mosquitto-clients) on a free loopback port with its own config file in a temporary
//! folder, nothing persisted, killed when dropped; and `mosquitto_sub` subscribers
//! that count what the broker delivers.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A running broker.
pub struct Mosquitto {
    child: Child,
    /// Its port on 127.0.0.1.
    pub port: u16,
    _dir: tempfile::TempDir,
}

impl Drop for Mosquitto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Mosquitto {
    /// Starts a broker (anonymous clients allowed, or none when `anonymous` is
    /// false) and waits until it accepts connections.
    pub fn start(anonymous: bool) -> Mosquitto {
        let binary = ["/usr/sbin/mosquitto", "mosquitto"]
            .into_iter()
            .find(|b| Command::new(b).arg("-h").output().is_ok())
            .expect("the tests need mosquitto: install Debian's mosquitto package");
        let dir = tempfile::tempdir().unwrap();
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let config = dir.path().join("mosquitto.conf");
        std::fs::write(
            &config,
            format!(
                "listener {port} 127.0.0.1\nallow_anonymous {anonymous}\npersistence false\n\
                 log_dest none\nsys_interval 1\nmax_queued_messages 100000\n"
            ),
        )
        .unwrap();
        let child = Command::new(binary)
            .arg("-c")
            .arg(&config)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("cannot start mosquitto");
        let broker = Mosquitto {
            child,
            port,
            _dir: dir,
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "mosquitto did not start on {port}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        broker
    }

    /// A `mosquitto_sub` on `filter` at QoS 1, subscribed when this returns.
    pub fn subscriber(&self, filter: &str) -> Subscriber {
        let mut child = Command::new("mosquitto_sub")
            .args(["-h", "127.0.0.1", "-p", &self.port.to_string()])
            .args(["-q", "1", "-v", "-t", filter, "-t", "lt-ready"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("the tests need mosquitto_sub: install Debian's mosquitto-clients package");
        let lines = Arc::new(AtomicU64::new(0));
        let ready = Arc::new(AtomicU64::new(0));
        let stdout = child.stdout.take().unwrap();
        let (count, seen) = (lines.clone(), ready.clone());
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if line.starts_with("lt-ready ") {
                    seen.store(1, Ordering::Relaxed);
                } else {
                    count.fetch_add(1, Ordering::Relaxed);
                }
            }
        });
        let subscriber = Subscriber { child, lines };
        // Subscribed once a message on its readiness topic comes through.
        let deadline = Instant::now() + Duration::from_secs(10);
        while ready.load(Ordering::Relaxed) == 0 {
            assert!(Instant::now() < deadline, "mosquitto_sub did not subscribe");
            let _ = Command::new("mosquitto_pub")
                .args(["-h", "127.0.0.1", "-p", &self.port.to_string()])
                .args(["-t", "lt-ready", "-m", "x"])
                .status();
            std::thread::sleep(Duration::from_millis(100));
        }
        subscriber
    }
}

/// A `mosquitto_sub` counting the messages it printed, killed when dropped.
pub struct Subscriber {
    child: Child,
    lines: Arc<AtomicU64>,
}

impl Subscriber {
    /// Waits until `n` messages came (or 10 s passed, then a little longer to see
    /// any extra), and returns how many did.
    pub fn count_after(&self, n: u64) -> u64 {
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.lines.load(Ordering::Relaxed) < n && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        std::thread::sleep(Duration::from_millis(300));
        self.lines.load(Ordering::Relaxed)
    }
}

impl Drop for Subscriber {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
