//! `host coordinate` with local `host worker` processes (the built binary) against the
//! demo target on loopback: exact merging, setup once, lost workers, a lost
//! coordinator, and the workers that are refused.

mod common;

use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
use hdrhistogram::Histogram;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const HOST: &str = env!("CARGO_BIN_EXE_host");

/// The demo target, served by a runtime of its own so the test can block.
struct Target {
    server: demo_target::DemoServer,
    _runtime: tokio::runtime::Runtime,
}

impl Target {
    fn start() -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let server = runtime.block_on(common::demo_target(Duration::from_millis(2)));
        Self {
            server,
            _runtime: runtime,
        }
    }

    fn url(&self) -> String {
        self.server.base_url()
    }
}

/// A child process whose stderr is collected line by line; killed if still running
/// when dropped, so a failing test leaves no process behind.
struct Proc {
    child: Child,
    lines: Arc<Mutex<Vec<String>>>,
}

impl Proc {
    fn spawn(args: &[&str]) -> Self {
        Self::spawn_env(args, &[])
    }

    /// Spawns with extra environment variables.
    fn spawn_env(args: &[&str], env: &[(&str, &str)]) -> Self {
        let mut child = Command::new(HOST)
            .args(args)
            .envs(env.iter().copied())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the host binary starts");
        let lines = Arc::new(Mutex::new(Vec::new()));
        let stderr = child.stderr.take().unwrap();
        let sink = lines.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                sink.lock().unwrap().push(line);
            }
        });
        Self { child, lines }
    }

    fn stderr(&self) -> String {
        self.lines.lock().unwrap().join("\n")
    }

    /// Waits until a stderr line contains `text`; returns the line.
    fn wait_for_line(&self, text: &str, within: Duration) -> String {
        let deadline = Instant::now() + within;
        loop {
            if let Some(line) = self.lines.lock().unwrap().iter().find(|l| l.contains(text)) {
                return line.clone();
            }
            assert!(
                Instant::now() < deadline,
                "no line with {text:?} within {within:?}; stderr:\n{}",
                self.stderr()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn wait(&mut self, within: Duration) -> ExitStatus {
        let deadline = Instant::now() + within;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                // The reader thread may still hold the last lines.
                std::thread::sleep(Duration::from_millis(100));
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "still running after {within:?}; stderr:\n{}",
                self.stderr()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn signal(&self, signal: i32) {
        // SAFETY: a plain kill(2) of our own child's pid.
        unsafe {
            libc::kill(self.child.id() as i32, signal);
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A coordinator and its workers, each writing under its own folder of `dir`.
struct Cluster {
    coordinator: Proc,
    workers: Vec<Proc>,
    addr: String,
    dir: tempfile::TempDir,
}

impl Cluster {
    /// Three spawned workers running `hello` against `target` with `toml`, once each
    /// has said which segment it runs (the load is on).
    fn hello_running(target: &Target, toml: &str) -> Self {
        let cluster = Self::start(
            "hello",
            toml,
            &[format!("BASE_URL={}", target.url())],
            3,
            true,
        );
        for w in &cluster.workers {
            w.wait_for_line("runs segment", Duration::from_secs(60));
        }
        cluster
    }

    /// A coordinator expecting `workers`, and those workers (with `spawn`; else the
    /// test adds them).
    fn start(plugin: &str, toml: &str, env: &[String], workers: usize, spawn: bool) -> Self {
        Self::start_in(
            tempfile::tempdir().unwrap(),
            plugin,
            toml,
            env,
            workers,
            spawn,
        )
    }

    /// As [`Cluster::start`], with the config written into `dir` (which may hold files
    /// the config names).
    fn start_in(
        dir: tempfile::TempDir,
        plugin: &str,
        toml: &str,
        env: &[String],
        workers: usize,
        spawn: bool,
    ) -> Self {
        let config = common::write_config(dir.path(), toml);
        let plugin = common::plugin(plugin);
        let out = dir.path().join("coordinator");
        let n = workers.to_string();
        let mut args: Vec<&str> = vec![
            "coordinate",
            plugin.to_str().unwrap(),
            "--workers",
            &n,
            "--listen",
            "127.0.0.1:0",
            "--config",
            config.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ];
        for e in env {
            args.extend(["-e", e.as_str()]);
        }
        let coordinator = Proc::spawn(&args);
        let line = coordinator.wait_for_line(host::LISTENING, Duration::from_secs(60));
        // `coordinator listening on 127.0.0.1:PORT: waiting for N worker(s)`
        let rest = line.split(host::LISTENING).nth(1).unwrap();
        let addr = rest.split(": ").next().unwrap().to_string();
        let mut cluster = Self {
            coordinator,
            workers: Vec::new(),
            addr,
            dir,
        };
        if spawn {
            for i in 0..workers {
                cluster.add_worker(&format!("w{i}"));
            }
        }
        cluster
    }

    fn worker_out(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn add_worker(&mut self, name: &str) {
        self.add_worker_with(name, &[], &[]);
    }

    /// Adds a worker with extra arguments and environment variables.
    fn add_worker_with(&mut self, name: &str, extra: &[&str], env: &[(&str, &str)]) {
        let out = self.worker_out(name);
        let mut args = vec![
            "worker",
            "--coordinator",
            &self.addr,
            "--name",
            name,
            "--out",
            out.to_str().unwrap(),
        ];
        args.extend(extra);
        self.workers.push(Proc::spawn_env(&args, env));
    }

    fn summary(&self) -> serde_json::Value {
        common::summary_json(&common::only_results_dir(
            &self.dir.path().join("coordinator"),
        ))
    }
}

/// Every interval of a histogram log, merged.
fn merged_log(path: &Path) -> Histogram<u64> {
    use base64::Engine;
    let log = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut merged = Histogram::<u64>::new(3).unwrap();
    for entry in IntervalLogIterator::new(&log) {
        if let LogEntry::Interval(i) = entry.unwrap() {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(i.encoded_histogram())
                .unwrap();
            let h: Histogram<u64> = hdrhistogram::serialization::Deserializer::new()
                .deserialize(&mut &bytes[..])
                .unwrap();
            merged.add(&h).unwrap();
        }
    }
    merged
}

fn http_reqs(summary: &serde_json::Value) -> u64 {
    summary["metrics"]["http_reqs"]["count"].as_f64().unwrap() as u64
}

#[test]
fn three_workers_merge_exactly_and_garbage_or_late_workers_are_refused() {
    let target = Target::start();
    let toml = "[scenarios.default]\nexecutor = \"constant-vus\"\nvus = 3\nduration = \"3s\"\n";
    let mut cluster = Cluster::start(
        "hello",
        toml,
        &[format!("BASE_URL={}", target.url())],
        3,
        false,
    );

    // A connection that is no worker is dropped with a message; the run is not hurt.
    {
        use std::io::Write;
        let mut stray = std::net::TcpStream::connect(&cluster.addr).unwrap();
        stray
            .write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            .unwrap();
        cluster
            .coordinator
            .wait_for_line("sent garbage", Duration::from_secs(10));
    }
    // A worker of another host version is refused with a message.
    {
        use host::protocol::{self, CoordMsg, WorkerHello, WorkerMsg};
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let answer: CoordMsg = rt.block_on(async {
            let mut s = tokio::net::TcpStream::connect(&cluster.addr).await.unwrap();
            let hello = WorkerMsg::Hello(WorkerHello {
                magic: protocol::MAGIC,
                protocol: protocol::PROTOCOL_VERSION,
                host_version: "0.0.0-other".into(),
                name: "old".into(),
                plugin_sha256: None,
                index: None,
            });
            protocol::write(&mut s, &hello).await.unwrap();
            protocol::read(&mut s, protocol::MAX_FRAME).await.unwrap()
        });
        assert!(
            matches!(&answer, CoordMsg::Refused(why) if why.contains("0.0.0-other")),
            "{answer:?}"
        );
    }
    for i in 0..3 {
        cluster.add_worker(&format!("w{i}"));
    }
    cluster
        .coordinator
        .wait_for_line("segments", Duration::from_secs(60));
    // One worker too many, once the run has its three: refused, with the reason.
    cluster.add_worker("late");
    let late = cluster.workers.last_mut().unwrap();
    assert!(!late.wait(Duration::from_secs(30)).success());
    assert!(late.stderr().contains("refused"), "{}", late.stderr());

    let status = cluster.coordinator.wait(Duration::from_secs(90));
    assert_eq!(status.code(), Some(0), "{}", cluster.coordinator.stderr());
    for w in &mut cluster.workers[..3] {
        w.wait(Duration::from_secs(10));
    }
    let summary = cluster.summary();
    common::assert_http_counts_add_up(&summary);
    let merged = http_reqs(&summary);
    assert!(merged > 0);
    assert_eq!(
        target.server.requests_served(),
        merged,
        "the target served what the coordinator merged"
    );

    // Per-worker figures add up to the merged ones.
    let workers = summary["workers"].as_array().unwrap();
    assert_eq!(workers.len(), 3, "{summary}");
    let per_worker: u64 = workers
        .iter()
        .map(|w| w["http_reqs"].as_u64().unwrap())
        .sum();
    assert_eq!(per_worker, merged);
    let mut segments: Vec<&str> = workers
        .iter()
        .map(|w| w["segment"].as_str().unwrap())
        .collect();
    segments.sort();
    assert_eq!(segments, ["0:1/3", "1/3:2/3", "2/3:1"]);

    // The merged percentiles are those of the workers' own histogram logs merged here.
    let mut offline = Histogram::<u64>::new(3).unwrap();
    for i in 0..3 {
        let dir = common::only_results_dir(&cluster.worker_out(&format!("w{i}")));
        offline
            .add(merged_log(&dir.join("histograms/http_req_duration.hlog")))
            .unwrap();
    }
    assert_eq!(offline.len(), merged);
    let m = &summary["metrics"]["http_req_duration"];
    for (q, field) in [(0.5, "med"), (0.9, "p90"), (0.95, "p95"), (0.99, "p99")] {
        let offline_ms = offline.value_at_quantile(q) as f64 / 1000.0;
        assert_eq!(m[field].as_f64().unwrap(), offline_ms, "{field}: {m}");
    }
    assert_eq!(m["max"].as_f64().unwrap(), offline.max() as f64 / 1000.0);
    // And the coordinator's own log is the merge too.
    let own = merged_log(
        &common::only_results_dir(&cluster.dir.path().join("coordinator"))
            .join("histograms/http_req_duration.hlog"),
    );
    assert_eq!(own.len(), offline.len());
    assert_eq!(own.value_at_quantile(0.99), offline.value_at_quantile(0.99));
}

#[test]
fn setup_and_teardown_run_once_at_the_coordinator() {
    let target = Target::start();
    let toml = "[scenarios.default]\nexecutor = \"per-vu-iterations\"\nvus = 2\niterations = 5\n";
    let env = [
        format!("BASE_URL={}", target.url()),
        "MODE=setup".to_string(),
    ];
    let mut cluster = Cluster::start("http_probe", toml, &env, 3, true);
    let status = cluster.coordinator.wait(Duration::from_secs(90));
    assert_eq!(status.code(), Some(0), "{}", cluster.coordinator.stderr());
    // setup() calls /health twice and teardown() once: three calls, not one set per
    // worker.
    assert_eq!(
        target.server.internal_requests(),
        3,
        "setup and teardown ran once; coordinator:\n{}",
        cluster.coordinator.stderr()
    );
    let summary = cluster.summary();
    // Each worker's iterations went to `/` only, and the coordinator merged them all.
    let served_to_slash = target.server.requests_served() - 3;
    let slash: u64 = summary["endpoints"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["name"] == "/")
        .map(|e| e["count"].as_u64().unwrap())
        .sum();
    assert_eq!(served_to_slash, slash, "{}", summary["endpoints"]);
}

#[test]
fn a_killed_worker_is_named_and_the_run_goes_on() {
    let target = Target::start();
    // Two VUs per worker, so the worker killed has load to lose (see below).
    let toml = "[scenarios.default]\nexecutor = \"constant-vus\"\nvus = 6\nduration = \"6s\"\n";
    let mut cluster = Cluster::start(
        "hello",
        toml,
        &[format!("BASE_URL={}", target.url())],
        3,
        true,
    );
    cluster
        .coordinator
        .wait_for_line("segments", Duration::from_secs(60));
    // Well into the run (workers compile and start after the segments are handed out).
    cluster.workers[1].wait_for_line("runs segment", Duration::from_secs(60));
    std::thread::sleep(Duration::from_secs(3));
    cluster.workers[1].signal(libc::SIGKILL);
    let killed = Instant::now();
    let line = cluster
        .coordinator
        .wait_for_line("lost at", Duration::from_secs(3));
    assert!(killed.elapsed() < Duration::from_secs(3), "{line}");
    assert!(line.contains("w1") && line.contains("goes on"), "{line}");
    let status = cluster.coordinator.wait(Duration::from_secs(60));
    assert_eq!(status.code(), Some(0), "{}", cluster.coordinator.stderr());
    let summary = cluster.summary();
    let lost: Vec<&serde_json::Value> = summary["workers"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|w| w["lost_at_s"].is_number())
        .collect();
    assert_eq!(lost.len(), 1, "{}", summary["workers"]);
    assert_eq!(lost[0]["name"], "w1");
    assert!(lost[0]["lost_at_s"].as_f64().unwrap() < 6.0);
    // The others ran to the end, and what the lost one reported is counted (its last
    // second died with it).
    let served = target.server.requests_served();
    let merged = http_reqs(&summary);
    assert!(served >= merged && merged > served / 2, "{served} {merged}");
    assert!(summary["warnings"].to_string().contains("w1"));
}

#[test]
fn a_cut_off_worker_aborts_the_run_with_its_code_and_results() {
    let target = Target::start();
    // Two VUs each: with fewer VUs than workers, the worker that draws a segment
    // without a VU finishes at once, and cutting it off later is no loss.
    let toml = "[scenarios.default]\nexecutor = \"constant-vus\"\nvus = 6\nduration = \"20s\"\n\n[distributed]\non_worker_loss = \"abort\"\n";
    let mut cluster = Cluster::start(
        "hello",
        toml,
        &[format!("BASE_URL={}", target.url())],
        3,
        true,
    );
    cluster.workers[2].wait_for_line("runs segment", Duration::from_secs(60));
    std::thread::sleep(Duration::from_secs(3));
    // Stopped, not killed: its connection stays open and only its heartbeats stop.
    cluster.workers[2].signal(libc::SIGSTOP);
    let cut = Instant::now();
    let line = cluster
        .coordinator
        .wait_for_line("lost at", Duration::from_secs(4));
    assert!(cut.elapsed() <= Duration::from_secs(3), "{line}");
    assert!(line.contains("w2") && line.contains("abort"), "{line}");
    let status = cluster.coordinator.wait(Duration::from_secs(30));
    assert_eq!(
        status.code(),
        Some(host::exit_code::WORKER_LOST),
        "{}",
        cluster.coordinator.stderr()
    );
    let summary = cluster.summary();
    assert_eq!(summary["status"], "aborted");
    assert_eq!(summary["stop_reason"]["by"], "worker_lost");
    assert!(summary["duration_s"].as_f64().unwrap() < 15.0);
    let stopped_worker = &mut cluster.workers[2];
    stopped_worker.signal(libc::SIGCONT);
    stopped_worker.signal(libc::SIGKILL);
}

#[test]
fn workers_stop_within_five_seconds_when_the_coordinator_dies() {
    let target = Target::start();
    let toml = "[scenarios.default]\nexecutor = \"constant-vus\"\nvus = 2\nduration = \"60s\"\n";
    let mut cluster = Cluster::hello_running(&target, toml);
    std::thread::sleep(Duration::from_secs(3));
    cluster.coordinator.signal(libc::SIGKILL);
    let killed = Instant::now();
    for w in &mut cluster.workers {
        w.wait(Duration::from_secs(5).saturating_sub(killed.elapsed()));
    }
    assert!(killed.elapsed() < Duration::from_secs(5));
    // No load after they are gone.
    let served = target.server.requests_served();
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(target.server.requests_served(), served, "no orphaned load");
}

/// Removes a Compose project when dropped, so a failing test leaves nothing behind.
struct ComposeCleanup(String);

impl Drop for ComposeCleanup {
    fn drop(&mut self) {
        let project = self.0.clone();
        let _ = std::thread::spawn(move || {
            let runtime = tokio::runtime::Runtime::new().unwrap();
            runtime.block_on(async {
                if let Ok(docker) = host::connect_docker().await {
                    let _ = host::remove_project(&docker, &project).await;
                }
            });
        })
        .join();
    }
}

#[test]
fn compose_scaled_to_three_workers_counts_what_the_api_served() {
    let project = format!("t{}-dist", std::process::id());
    let _cleanup = ComposeCleanup(project.clone());
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (host_tag, target_tag) = runtime.block_on(async {
        let docker = host::connect_docker()
            .await
            .expect("the Docker engine answers");
        let mut tags = Vec::new();
        for name in ["host", "demo-target"] {
            let binary = host::find_binary(name).unwrap();
            let image = host::ensure_image(&docker, name, &binary).await.unwrap();
            tags.push(image.reference.rsplit(':').next().unwrap().to_string());
        }
        (tags[0].clone(), tags[1].clone())
    });
    let results = tempfile::tempdir().unwrap();
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../compose/distributed.yml");
    let compose = |args: &[&str]| {
        Command::new("docker-compose")
            .arg("-f")
            .arg(&file)
            .args(["-p", &project])
            .args(args)
            .env("HOST_TAG", &host_tag)
            .env("DEMO_TARGET_TAG", &target_tag)
            .env("PLUGIN_DIR", host::PLUGINS_DIR)
            .env("RESULTS_DIR", results.path())
            .env("WORKERS", "3")
            .env("DURATION", "3s")
            .output()
            .expect("docker-compose runs")
    };
    let up = compose(&["up", "-d", "--scale", "worker=3"]);
    assert!(
        up.status.success(),
        "{}",
        String::from_utf8_lossy(&up.stderr)
    );
    let id = String::from_utf8(compose(&["ps", "-q", "coordinator"]).stdout).unwrap();
    let id = id.trim().to_string();
    let mut wait = Command::new("docker")
        .args(["wait", &id])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(180);
    while wait.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "the coordinator did not finish");
        std::thread::sleep(Duration::from_millis(200));
    }
    let mut code = String::new();
    use std::io::Read;
    wait.stdout
        .take()
        .unwrap()
        .read_to_string(&mut code)
        .unwrap();
    let logs = Command::new("docker").args(["logs", &id]).output().unwrap();
    let logs = String::from_utf8_lossy(&logs.stderr).to_string();
    assert_eq!(code.trim(), "0", "coordinator:\n{logs}");
    let port = String::from_utf8(compose(&["port", "api", "8080"]).stdout).unwrap();
    let served = common::scrape_user_requests(port.trim());
    let summary = common::summary_json(&common::only_results_dir(results.path()));
    assert_eq!(summary["workers"].as_array().unwrap().len(), 3, "{logs}");
    assert!(http_reqs(&summary) > 0);
    assert_eq!(
        served,
        http_reqs(&summary),
        "the API served what was merged"
    );
}

#[test]
fn a_constant_arrival_rate_over_three_workers_starts_rate_times_duration() {
    let target = Target::start();
    let toml = "[scenarios.default]\nexecutor = \"constant-arrival-rate\"\nrate = 30\ntime_unit = \"1s\"\nduration = \"3s\"\npre_allocated_vus = 5\nmax_vus = 10\n";
    let mut cluster = Cluster::start(
        "hello",
        toml,
        &[format!("BASE_URL={}", target.url())],
        3,
        true,
    );
    let status = cluster.coordinator.wait(Duration::from_secs(90));
    assert_eq!(status.code(), Some(0), "{}", cluster.coordinator.stderr());
    let summary = cluster.summary();
    let started = summary["scenarios"]["default"]["started"].as_u64().unwrap();
    // 30/s for 3 s, striped over three segments: 90 in all, ± 1 per worker.
    assert!(started.abs_diff(90) <= 3, "{}", summary["scenarios"]);
    assert_eq!(summary["scenarios"]["default"]["dropped"], 0);
    assert_eq!(target.server.requests_served(), http_reqs(&summary));
}

#[test]
fn indexed_workers_run_their_own_segments_whatever_their_join_order() {
    let target = Target::start();
    let toml = "[scenarios.default]\nexecutor = \"constant-vus\"\nvus = 6\nduration = \"2s\"\n";
    let mut cluster = Cluster::start(
        "hello",
        toml,
        &[format!("BASE_URL={}", target.url())],
        3,
        false,
    );
    // Joined in the order 2, 0, 1: one by one, so the join order is sure. Index 0
    // comes as Kubernetes gives it, in JOB_COMPLETION_INDEX.
    cluster.add_worker_with("i2", &["--index", "2"], &[]);
    cluster
        .coordinator
        .wait_for_line("worker i2 (", Duration::from_secs(30));
    cluster.add_worker_with("i0", &[], &[("JOB_COMPLETION_INDEX", "0")]);
    cluster
        .coordinator
        .wait_for_line("worker i0 (", Duration::from_secs(30));

    // A second worker for index 0, and one beyond the run's three: refused, saying why.
    for (name, index, says) in [
        ("dup", "0", "index 0 is taken by worker i0"),
        ("far", "3", "index 3 is out of range"),
    ] {
        cluster.add_worker_with(name, &["--index", index], &[]);
        let refused = cluster.workers.last_mut().unwrap();
        assert!(!refused.wait(Duration::from_secs(30)).success());
        assert!(refused.stderr().contains(says), "{}", refused.stderr());
    }
    let coordinator = cluster.coordinator.stderr();
    assert!(
        coordinator.contains("refused worker dup") && coordinator.contains("refused worker far"),
        "{coordinator}"
    );

    cluster.add_worker_with("i1", &["--index", "1"], &[]);
    let status = cluster.coordinator.wait(Duration::from_secs(90));
    assert_eq!(status.code(), Some(0), "{}", cluster.coordinator.stderr());
    cluster.workers[0].wait_for_line("runs segment 2/3:1", Duration::from_secs(10));

    let summary = cluster.summary();
    let workers: Vec<(String, u64, String)> = summary["workers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| {
            (
                w["name"].as_str().unwrap().to_string(),
                w["index"].as_u64().unwrap(),
                w["segment"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let expected: Vec<(String, u64, String)> =
        [("i0", 0, "0:1/3"), ("i1", 1, "1/3:2/3"), ("i2", 2, "2/3:1")]
            .iter()
            .map(|(n, i, s)| (n.to_string(), *i, s.to_string()))
            .collect();
    assert_eq!(workers, expected, "{}", summary["workers"]);
    assert_eq!(target.server.requests_served(), http_reqs(&summary));
    // summary.txt shows them too, by index.
    let text = std::fs::read_to_string(
        common::only_results_dir(&cluster.dir.path().join("coordinator")).join("summary.txt"),
    )
    .unwrap();
    let i0 = text.find("0 i0 (").expect(&text);
    let i2 = text.find("2 i2 (").expect(&text);
    assert!(i0 < i2 && text[i2..].contains("segment 2/3:1"), "{text}");
}

#[test]
fn sigint_at_the_coordinator_stops_every_worker_and_writes_the_results() {
    let target = Target::start();
    let toml = "[scenarios.default]\nexecutor = \"constant-vus\"\nvus = 6\nduration = \"120s\"\ngraceful_stop = \"5s\"\n";
    let mut cluster = Cluster::hello_running(&target, toml);
    std::thread::sleep(Duration::from_secs(3));
    cluster.coordinator.signal(libc::SIGINT);
    let signalled = Instant::now();
    let status = cluster.coordinator.wait(Duration::from_secs(30));
    assert_eq!(
        status.code(),
        Some(host::exit_code::INTERRUPTED),
        "{}",
        cluster.coordinator.stderr()
    );
    // Every worker stopped too: told why, not left to notice the coordinator gone.
    for (i, w) in cluster.workers.iter_mut().enumerate() {
        w.wait(Duration::from_secs(10));
        let own = common::summary_json(&common::only_results_dir(
            &cluster.dir.path().join(format!("w{i}")),
        ));
        assert_eq!(
            own["stop_reason"]["by"], "coordinator",
            "{}",
            own["stop_reason"]
        );
        let why = own["stop_reason"]["reason"].as_str().unwrap();
        assert!(why.contains("Ctrl-C"), "{why}");
    }
    assert!(signalled.elapsed() < Duration::from_secs(20));
    let served = target.server.requests_served();
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        target.server.requests_served(),
        served,
        "no load after the stop"
    );

    // One results folder with what was gathered: every worker's last second included.
    let dir = common::only_results_dir(&cluster.dir.path().join("coordinator"));
    for file in [
        "summary.json",
        "summary.txt",
        "timeseries.jsonl",
        "junit.xml",
    ] {
        assert!(dir.join(file).is_file(), "{file} is written");
    }
    let summary = cluster.summary();
    assert_eq!(summary["status"], "interrupted");
    assert_eq!(summary["stop_reason"]["by"], "interrupted");
    assert!(summary["duration_s"].as_f64().unwrap() < 60.0);
    let merged = http_reqs(&summary);
    assert!(merged > 0);
    assert_eq!(served, merged, "the target served what was merged");
    let workers = summary["workers"].as_array().unwrap();
    assert_eq!(workers.len(), 3);
    assert!(
        workers
            .iter()
            .all(|w| w["http_reqs"].as_u64().unwrap() > 0 && w["lost_at_s"].is_null()),
        "{}",
        summary["workers"]
    );
}

#[test]
fn sigint_before_the_start_tells_the_joined_workers_and_exits_interrupted() {
    let toml = "[scenarios.default]\nexecutor = \"constant-vus\"\nvus = 3\nduration = \"10s\"\n";
    let mut cluster = Cluster::start("hello", toml, &[], 3, false);
    cluster.add_worker("early");
    cluster
        .coordinator
        .wait_for_line("worker early (", Duration::from_secs(30));
    cluster.coordinator.signal(libc::SIGINT);
    let status = cluster.coordinator.wait(Duration::from_secs(10));
    let stderr = cluster.coordinator.stderr();
    assert_eq!(
        status.code(),
        Some(host::exit_code::INTERRUPTED),
        "{stderr}"
    );
    assert!(stderr.contains("1 of 3 joined"), "{stderr}");
    let early = &mut cluster.workers[0];
    assert!(!early.wait(Duration::from_secs(5)).success());
    assert!(
        early
            .stderr()
            .contains("stopped before the start: the operator (Ctrl-C or SIGTERM)"),
        "{}",
        early.stderr()
    );
}

#[test]
fn data_files_travel_to_the_workers_with_the_plugin() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("users.csv"),
        "name,city\nalice,\"Paris, France\"\nbob,Oslo\n",
    )
    .unwrap();
    let toml = "[scenarios.default]\nexecutor = \"per-vu-iterations\"\nvus = 3\niterations = 1\n\n[data]\nusers = \"users.csv\"\n";
    let mut cluster = Cluster::start_in(dir, "misbehave", toml, &["MODE=data".into()], 3, true);
    let status = cluster.coordinator.wait(Duration::from_secs(90));
    assert_eq!(status.code(), Some(0), "{}", cluster.coordinator.stderr());

    // Each worker's one iteration read both records.
    let summary = cluster.summary();
    let mut checks: Vec<(String, u64)> = summary["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["name"].as_str().unwrap().to_string(),
                c["passes"].as_u64().unwrap(),
            )
        })
        .collect();
    checks.sort();
    assert_eq!(
        checks,
        [
            (
                r#"users 0: {"city":"Paris, France","name":"alice"}"#.to_string(),
                3
            ),
            (r#"users 1: {"city":"Oslo","name":"bob"}"#.to_string(), 3),
        ],
        "{}",
        summary["checks"]
    );
    // And read it from the copy the coordinator sent, not from the coordinator's path.
    let original = cluster.dir.path().join("users.csv");
    for i in 0..3 {
        let w = &mut cluster.workers[i];
        w.wait(Duration::from_secs(10));
        let own = common::summary_json(&common::only_results_dir(
            &cluster.worker_out(&format!("w{i}")),
        ));
        let path = own["config"]["data"]["users"].as_str().unwrap();
        assert!(
            path.contains(".worker-") && path.ends_with("data-0-users.csv"),
            "{path}"
        );
        assert_ne!(Path::new(path), original);
    }
}

#[test]
fn the_workers_plugin_errors_are_listed_in_the_merged_summary() {
    // One VU per worker, three iterations each: the third panics, once per worker.
    let toml = "[scenarios.default]\nexecutor = \"per-vu-iterations\"\nvus = 3\niterations = 3\n";
    let mut cluster = Cluster::start("misbehave", toml, &["MODE=panic-every-3".into()], 3, true);
    let status = cluster.coordinator.wait(Duration::from_secs(90));
    let summary = cluster.summary();
    assert_eq!(status.code(), Some(0), "{}", cluster.coordinator.stderr());
    let errors = summary["plugin_errors"].as_array().unwrap();
    assert_eq!(errors.len(), 1, "{}", summary["plugin_errors"]);
    assert_eq!(errors[0]["kind"], "panic");
    assert_eq!(errors[0]["scenario"], "default");
    assert!(
        errors[0]["message"]
            .as_str()
            .unwrap()
            .contains("boom at iteration 2"),
        "{}",
        errors[0]
    );
    assert_eq!(errors[0]["count"], 3, "one per worker");
    assert_eq!(summary["scenarios"]["default"]["failed"], 3);
    let per_worker: Vec<u64> = summary["workers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["plugin_errors"].as_u64().unwrap())
        .collect();
    assert_eq!(per_worker, [1, 1, 1]);
    // summary.txt lists them as a single run's does.
    let text = std::fs::read_to_string(
        common::only_results_dir(&cluster.dir.path().join("coordinator")).join("summary.txt"),
    )
    .unwrap();
    assert!(text.contains("boom at iteration 2"), "{text}");
}

#[test]
fn a_plugin_abort_at_one_worker_stops_every_worker_with_its_exit_code() {
    // VU 2 (at one worker only) fails its init, and init failures abort: the whole run
    // stops, not just that worker's share.
    let toml = "[scenarios.default]\nexecutor = \"constant-vus\"\nvus = 3\nduration = \"60s\"\n\n[limits]\ninit_failures = \"abort\"\n";
    let env = [
        "MODE=sleep".to_string(),
        "SLEEP_MS=50".to_string(),
        "INIT=fail-vu-2".to_string(),
    ];
    let mut cluster = Cluster::start("misbehave", toml, &env, 3, true);
    let status = cluster.coordinator.wait(Duration::from_secs(60));
    let stderr = cluster.coordinator.stderr();
    assert_eq!(
        status.code(),
        Some(host::exit_code::PLUGIN_ABORT),
        "{stderr}"
    );
    assert!(
        stderr.contains("the plugin aborted the run at worker"),
        "{stderr}"
    );
    let summary = cluster.summary();
    assert_eq!(
        summary["stop_reason"]["by"], "plugin_abort",
        "{}",
        summary["stop_reason"]
    );
    let why = summary["stop_reason"]["reason"].as_str().unwrap();
    assert!(why.contains("init refused"), "{why}");
    assert!(summary["duration_s"].as_f64().unwrap() < 30.0);
    // The other workers were stopped by the coordinator.
    let mut told = 0;
    for (i, w) in cluster.workers.iter_mut().enumerate() {
        w.wait(Duration::from_secs(10));
        let own = common::summary_json(&common::only_results_dir(
            &cluster.dir.path().join(format!("w{i}")),
        ));
        if own["stop_reason"]["by"] == "coordinator" {
            told += 1;
        }
    }
    assert_eq!(
        told, 2,
        "the two workers whose plugin did not abort were stopped"
    );
}

#[test]
fn the_workers_plugin_log_lines_show_at_the_coordinator() {
    // One VU per worker, two iterations, one info line each.
    let toml = "[scenarios.default]\nexecutor = \"per-vu-iterations\"\nvus = 3\niterations = 2\n";
    let env = [
        "MODE=log".to_string(),
        "LOG_LINES=1".to_string(),
        "LOG_BYTES=12".to_string(),
    ];
    let mut cluster = Cluster::start("misbehave", toml, &env, 3, true);
    let status = cluster.coordinator.wait(Duration::from_secs(90));
    let stderr = cluster.coordinator.stderr();
    assert_eq!(status.code(), Some(0), "{stderr}");
    for i in 0..3 {
        let from = stderr
            .lines()
            .filter(|l| l.starts_with(&format!("[worker w{i}] [default vu ")))
            .filter(|l| l.ends_with("info: xxxxxxxxxxxx"))
            .count();
        assert_eq!(from, 2, "two lines from w{i}:\n{stderr}");
    }
    let summary = cluster.summary();
    assert_eq!(summary["log"]["written"], 6, "{}", summary["log"]);
}
