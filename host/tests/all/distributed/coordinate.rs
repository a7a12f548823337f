//! `host coordinate` with local `host worker` processes (the built binary) against the
//! demo target on loopback: exact merging, setup once, lost workers, a lost
//! coordinator, the workers that are refused, and the trust boundary (the cluster
//! token, rogue workers and coordinators written here, frame limits).

use crate::support as common;

use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
use hdrhistogram::Histogram;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const HOST: &str = env!("CARGO_BIN_EXE_host");

/// The cluster token every coordinator and worker of these tests holds (unless a test
/// says otherwise).
const TOKEN: &str = "test-cluster-token-0123456789abcdef";

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

    /// Spawns with extra environment variables (`HOST_CLUSTER_TOKEN` is [`TOKEN`]
    /// unless `env` sets it; set to "" it is removed).
    fn spawn_env(args: &[&str], env: &[(&str, &str)]) -> Self {
        let mut command = Command::new(HOST);
        command.args(args).env(host::trust::TOKEN_ENV, TOKEN);
        for (k, v) in env {
            if *k == host::trust::TOKEN_ENV && v.is_empty() {
                command.env_remove(k);
            } else {
                command.env(k, v);
            }
        }
        let mut child = command
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
        Self::start_with_flags(dir, plugin, toml, env, &[], workers, spawn)
    }

    /// As [`Cluster::start_in`], with more flags for the coordinator's run.
    fn start_with_flags(
        dir: tempfile::TempDir,
        plugin: &str,
        toml: &str,
        env: &[String],
        flags: &[&str],
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
        args.extend(flags);
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
    // A worker of another host version (with the token) is refused with a message.
    {
        use host::protocol::CoordMsg;
        let answer = rogue::runtime().block_on(async {
            let mut c = rogue::connect(&cluster.addr).await;
            let token = host::trust::ClusterToken::new(TOKEN).unwrap();
            rogue::prove(&mut c, "old", "0.0.0-other", &token).await;
            rogue::join(&mut c).await;
            rogue::rest::<_, CoordMsg>(&mut c).await
        });
        assert!(
            matches!(answer.as_slice(), [CoordMsg::Refused(why)] if why.contains("0.0.0-other")),
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

    // The distributed run is recorded once, by the coordinator, in the store beside its
    // results (the merged figures); no worker keeps a store of its own.
    let store = cluster.dir.path().join("coordinator/runs.db");
    let conn =
        rusqlite::Connection::open(&store).unwrap_or_else(|e| panic!("{}: {e}", store.display()));
    let runs: Vec<(String, Option<i64>)> = conn
        .prepare("SELECT folder, exit_code FROM runs")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let coordinator_folder = std::fs::canonicalize(common::only_results_dir(
        &cluster.dir.path().join("coordinator"),
    ))
    .unwrap();
    assert_eq!(
        runs,
        [(coordinator_folder.display().to_string(), Some(0))],
        "one run, the coordinator's"
    );
    let stored_reqs: f64 = conn
        .query_row(
            "SELECT value FROM figures WHERE metric = 'http_reqs' AND stat = 'count'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(stored_reqs as u64, merged, "the merged count is stored");
    for i in 0..3 {
        let worker = cluster.worker_out(&format!("w{i}"));
        assert!(!worker.join("runs.db").exists(), "w{i} keeps no store");
    }
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
    // Its last, unreported second is named: about what the target served and no one
    // merged (its rate then over the time to its loss).
    let not_merged = lost[0]["http_reqs_not_merged"].as_u64().expect("a count");
    let missing = served - merged;
    assert!(
        not_merged > 0 && not_merged <= 2 * missing + 100,
        "estimated {not_merged}, served but not merged {missing}"
    );
    assert!(
        summary["warnings"]
            .to_string()
            .contains(&format!("about {not_merged} requests")),
        "{}",
        summary["warnings"]
    );
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
    let secrets = tempfile::tempdir().unwrap();
    let token_file = secrets.path().join("cluster.token");
    std::fs::write(&token_file, TOKEN).unwrap();
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
            .env("CLUSTER_TOKEN_FILE", &token_file)
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
    // No drop is allowed: a CPU-heavy test beside it (in one binary, the last of
    // another file) made one iteration late.
    let _turn = common::turns::MEASURING.blocking_lock();
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
fn the_coordinators_flags_reach_every_worker_as_they_reach_its_summary() {
    let toml = "[scenarios.default]\nexecutor = \"constant-vus\"\nvus = 1\nduration = \"30s\"\n";
    let mut cluster = Cluster::start_with_flags(
        tempfile::tempdir().unwrap(),
        "misbehave",
        toml,
        &[],
        &["--iterations", "6", "--vus", "3"],
        3,
        true,
    );
    let status = cluster.coordinator.wait(Duration::from_secs(90));
    assert_eq!(status.code(), Some(0), "{}", cluster.coordinator.stderr());
    let summary = cluster.summary();
    let scenarios = &summary["config"]["scenarios"];
    // k6's rule: --iterations makes constant-vus shared-iterations, with --vus's VUs.
    assert_eq!(scenarios["default"]["executor"], "shared-iterations");
    assert_eq!(scenarios["default"]["vus"], 3, "{scenarios}");
    assert_eq!(scenarios["default"]["iterations"], 6);
    assert_eq!(
        summary["scenarios"]["default"]["completed"], 6,
        "{summary:#}"
    );
    // Each worker read the config it was sent as the coordinator's run used it.
    for i in 0..3 {
        cluster.workers[i].wait(Duration::from_secs(10));
        let own = common::summary_json(&common::only_results_dir(
            &cluster.worker_out(&format!("w{i}")),
        ));
        assert_eq!(own["config"]["scenarios"], *scenarios, "worker w{i}");
        assert_eq!(own["scenarios"]["default"]["executor"], "shared-iterations");
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

/// A client or server of the documented protocol written here: TLS as a worker makes
/// it, then the hello and the proofs, by hand.
mod rogue {
    use host::protocol::{self, CoordMsg, Join, WorkerHello, WorkerMsg};
    use host::trust::{self, ClusterToken, Role};
    use std::time::Duration;

    /// A worker's side of a connection.
    pub type Conn = tokio_rustls::client::TlsStream<tokio::net::TcpStream>;
    /// A coordinator's side of a connection.
    pub type ServerConn = tokio_rustls::server::TlsStream<tokio::net::TcpStream>;

    pub fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    /// TLS to `addr`, taking its certificate as a worker does.
    pub async fn connect(addr: &str) -> Conn {
        let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
        trust::connector()
            .unwrap()
            .connect(trust::server_name(), tcp)
            .await
            .unwrap()
    }

    /// The hello of this version; the nonce sent and the coordinator's answer.
    pub async fn hello(conn: &mut Conn, name: &str, host_version: &str) -> ([u8; 32], CoordMsg) {
        let nonce = trust::nonce();
        let hello = WorkerMsg::Hello(WorkerHello {
            magic: protocol::MAGIC,
            protocol: protocol::PROTOCOL_VERSION,
            host_version: host_version.into(),
            name: name.into(),
            nonce,
        });
        protocol::write(conn, &hello).await.unwrap();
        let answer = protocol::read(conn, protocol::MAX_FRAME).await.unwrap();
        (nonce, answer)
    }

    /// The hello and this side's proof with `token`; the coordinator's answer to it.
    pub async fn prove(
        conn: &mut Conn,
        name: &str,
        host_version: &str,
        token: &ClusterToken,
    ) -> CoordMsg {
        let (nonce, answer) = hello(conn, name, host_version).await;
        let CoordMsg::Challenge { nonce: theirs, .. } = answer else {
            panic!("no challenge: {answer:?}");
        };
        let exporter = trust::exporter(conn.get_ref().1).unwrap();
        let proof = token.proof(Role::Worker, &exporter, &nonce, &theirs);
        protocol::write(conn, &WorkerMsg::Proof(proof))
            .await
            .unwrap();
        protocol::read(conn, protocol::MAX_FRAME).await.unwrap()
    }

    /// The join, asking for nothing.
    pub async fn join(conn: &mut Conn) {
        let join = WorkerMsg::Join(Join {
            plugin_sha256: None,
            index: None,
        });
        protocol::write(conn, &join).await.unwrap();
    }

    /// Everything the peer sends until it closes (or is silent for 5 s).
    pub async fn rest<S, M>(conn: &mut S) -> Vec<M>
    where
        S: tokio::io::AsyncRead + Unpin,
        M: serde::de::DeserializeOwned,
    {
        let mut got = Vec::new();
        while let Ok(Ok(msg)) = tokio::time::timeout(
            Duration::from_secs(5),
            protocol::read::<_, M>(conn, protocol::MAX_FRAME),
        )
        .await
        {
            got.push(msg);
        }
        got
    }

    /// A forged tick: four billion requests in a second.
    pub fn forged_tick() -> WorkerMsg {
        WorkerMsg::Tick(protocol::Tick {
            elapsed_ms: 1000,
            series: vec![protocol::WireSeries {
                metric: "http_reqs".into(),
                kind: host::MetricKind::Counter,
                tags: Vec::new(),
                value: protocol::WireValue::Counter(4e9),
            }],
            ..Default::default()
        })
    }

    /// A coordinator written here: takes one worker's TLS connection and hello, sends
    /// a challenge, reads the worker's proof, and answers it with a proof of `token`.
    pub async fn coordinator_side(
        listener: &tokio::net::TcpListener,
        token: &ClusterToken,
    ) -> ServerConn {
        let (tcp, _) = listener.accept().await.unwrap();
        let mut conn = trust::acceptor().unwrap().accept(tcp).await.unwrap();
        let WorkerMsg::Hello(hello) = protocol::read(&mut conn, protocol::MAX_HELLO_FRAME)
            .await
            .unwrap()
        else {
            panic!("no hello");
        };
        let nonce = trust::nonce();
        let challenge = CoordMsg::Challenge {
            magic: protocol::MAGIC,
            protocol: protocol::PROTOCOL_VERSION,
            nonce,
        };
        protocol::write(&mut conn, &challenge).await.unwrap();
        let WorkerMsg::Proof(_) = protocol::read(&mut conn, protocol::MAX_HELLO_FRAME)
            .await
            .unwrap()
        else {
            panic!("no proof");
        };
        let exporter = trust::exporter(conn.get_ref().1).unwrap();
        let ours = token.proof(Role::Coordinator, &exporter, &hello.nonce, &nonce);
        protocol::write(&mut conn, &CoordMsg::Proof(ours))
            .await
            .unwrap();
        conn
    }
}

#[test]
fn a_rogue_without_the_token_gets_nothing_and_its_ticks_are_never_merged() {
    use host::protocol::{self, CoordMsg, WorkerMsg};
    use host::trust::ClusterToken;
    let target = Target::start();
    let toml = "[scenarios.default]\nexecutor = \"constant-vus\"\nvus = 2\nduration = \"3s\"\n";
    let mut cluster = Cluster::start(
        "hello",
        toml,
        &[format!("BASE_URL={}", target.url())],
        2,
        false,
    );
    let addr = cluster.addr.clone();
    let version = env!("CARGO_PKG_VERSION");
    let rt = rogue::runtime();
    let refused_only = |got: &[CoordMsg]| {
        assert!(
            matches!(got, [CoordMsg::Refused(why)] if why.contains("cluster token")),
            "a rogue was sent {got:?}"
        );
    };
    rt.block_on(async {
        // A wrong proof: refused with the reason, and nothing else.
        let mut c = rogue::connect(&addr).await;
        let (_, answer) = rogue::hello(&mut c, "rogue1", version).await;
        assert!(matches!(answer, CoordMsg::Challenge { .. }), "{answer:?}");
        protocol::write(&mut c, &WorkerMsg::Proof([0; 32]))
            .await
            .unwrap();
        refused_only(&rogue::rest::<_, CoordMsg>(&mut c).await);
        // The proof of another token.
        let mut c = rogue::connect(&addr).await;
        let other = ClusterToken::new("another-token-0123456789").unwrap();
        let answer = rogue::prove(&mut c, "rogue2", version, &other).await;
        let mut got = vec![answer];
        got.extend(rogue::rest::<_, CoordMsg>(&mut c).await);
        refused_only(&got);
        // No proof: the join at once, then forged ticks.
        let mut c = rogue::connect(&addr).await;
        rogue::hello(&mut c, "rogue3", version).await;
        rogue::join(&mut c).await;
        for _ in 0..3 {
            let _ = protocol::write(&mut c, &rogue::forged_tick()).await;
        }
        refused_only(&rogue::rest::<_, CoordMsg>(&mut c).await);
    });
    // Without TLS: a plain hello is no handshake, and the connection is dropped.
    {
        use std::io::{Read, Write};
        let mut plain = std::net::TcpStream::connect(&addr).unwrap();
        let frame = protocol::encode(&rogue::forged_tick()).unwrap();
        plain.write_all(&frame).unwrap();
        plain
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let mut buf = Vec::new();
        let _ = plain.read_to_end(&mut buf);
        // At most a TLS alert: no frame of the protocol.
        assert!(buf.len() < 64, "{buf:?}");
        cluster
            .coordinator
            .wait_for_line("no TLS handshake", Duration::from_secs(10));
    }
    // The real workers: one with the token in the environment, one from a file.
    let token_file = cluster.dir.path().join("cluster.token");
    std::fs::write(&token_file, format!("{TOKEN}\n")).unwrap();
    cluster.add_worker("w0");
    cluster.add_worker_with(
        "w1",
        &["--token-file", token_file.to_str().unwrap()],
        &[(host::trust::TOKEN_ENV, "")],
    );
    cluster.workers[1].wait_for_line("runs segment", Duration::from_secs(60));
    // During the run: forged ticks in place of the proof.
    rt.block_on(async {
        let mut c = rogue::connect(&addr).await;
        rogue::hello(&mut c, "rogue4", version).await;
        for _ in 0..3 {
            let _ = protocol::write(&mut c, &rogue::forged_tick()).await;
        }
        refused_only(&rogue::rest::<_, CoordMsg>(&mut c).await);
    });
    let status = cluster.coordinator.wait(Duration::from_secs(90));
    assert_eq!(status.code(), Some(0), "{}", cluster.coordinator.stderr());
    let summary = cluster.summary();
    let merged = http_reqs(&summary);
    assert!(merged > 0);
    assert_eq!(
        target.server.requests_served(),
        merged,
        "the target served what the coordinator merged: no forged tick"
    );
    let mut names: Vec<&str> = summary["workers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["name"].as_str().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["w0", "w1"]);
}

/// The coordinator's resident memory, MiB.
fn rss_mib(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kb: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap();
    kb / 1024.0
}

#[test]
fn an_unproven_peer_cannot_make_the_coordinator_allocate() {
    use host::protocol;
    let toml = "[scenarios.default]\nexecutor = \"constant-vus\"\nvus = 1\nduration = \"1s\"\n";
    let cluster = Cluster::start("hello", toml, &[], 1, false);
    let pid = cluster.coordinator.child.id();
    // Settled: the plugin compiled and setup() ran while no worker came.
    let mut baseline = rss_mib(pid);
    for _ in 0..20 {
        std::thread::sleep(Duration::from_millis(500));
        let now = rss_mib(pid);
        let settled = (now - baseline).abs() < 0.5;
        baseline = now;
        if settled {
            break;
        }
    }
    // Three connections say hello, then send a frame of 512 MiB, streaming its bytes;
    // two more send that length as their hello. Each streams until it is cut off.
    let streaming = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let mut peers = Vec::new();
    for i in 0..5 {
        let addr = cluster.addr.clone();
        peers.push(std::thread::spawn(move || {
            rogue::runtime().block_on(async move {
                use tokio::io::AsyncWriteExt;
                let mut c = rogue::connect(&addr).await;
                if i < 3 {
                    rogue::hello(&mut c, "flood", env!("CARGO_PKG_VERSION")).await;
                }
                let mut sent = 0usize;
                if c.write_all(&(512u32 << 20).to_be_bytes()).await.is_ok() {
                    let chunk = vec![0x5a; 1 << 20];
                    while sent < 512 << 20 {
                        if c.write_all(&chunk).await.is_err() || c.flush().await.is_err() {
                            break;
                        }
                        sent += chunk.len();
                    }
                }
                sent
            })
        }));
    }
    let mut peak = baseline;
    let sampler = {
        let streaming = streaming.clone();
        std::thread::spawn(move || {
            let mut peak: f64 = 0.0;
            while streaming.load(std::sync::atomic::Ordering::Relaxed) {
                peak = peak.max(rss_mib(pid));
                std::thread::sleep(Duration::from_millis(20));
            }
            peak
        })
    };
    let sent: Vec<usize> = peers.into_iter().map(|p| p.join().unwrap()).collect();
    std::thread::sleep(Duration::from_millis(300));
    streaming.store(false, std::sync::atomic::Ordering::Relaxed);
    peak = peak.max(sampler.join().unwrap());
    cluster
        .coordinator
        .wait_for_line("larger than allowed", Duration::from_secs(10));
    // Each was cut off long before its frame was whole.
    assert!(sent.iter().all(|&n| n < 64 << 20), "{sent:?}");
    assert!(
        peak - baseline < 16.0,
        "RSS went from {baseline:.1} to {peak:.1} MiB; the pre-proof limit is {} KiB",
        protocol::MAX_HELLO_FRAME / 1024
    );
}

#[test]
fn a_wrong_token_is_refused_both_ways() {
    use host::protocol::{self, CoordMsg, WorkerMsg};
    use host::trust::ClusterToken;
    let toml = "[scenarios.default]\nexecutor = \"constant-vus\"\nvus = 1\nduration = \"1s\"\n";
    let mut cluster = Cluster::start("hello", toml, &[], 1, false);
    // Workers with another token, or none: refused by the coordinator, with the reason.
    cluster.add_worker_with(
        "wrong",
        &[],
        &[(host::trust::TOKEN_ENV, "another-token-0123456789")],
    );
    cluster.add_worker_with("none", &[], &[(host::trust::TOKEN_ENV, "")]);
    for w in &mut cluster.workers {
        assert!(!w.wait(Duration::from_secs(30)).success());
        let err = w.stderr();
        assert!(
            err.contains("refused") && err.contains("cluster token"),
            "{err}"
        );
    }
    cluster
        .coordinator
        .wait_for_line("refused worker wrong", Duration::from_secs(5));
    // A worker whose --allow leaves nothing of the coordinator's targets refuses the
    // run (loopback-only here, and example.com is not loopback); the coordinator says so.
    cluster.add_worker_with("narrow", &["--allow", "http://example.com:80"], &[]);
    let status = cluster.coordinator.wait(Duration::from_secs(60));
    assert!(!status.success());
    let err = cluster.coordinator.stderr();
    assert!(
        err.contains("narrow") && err.contains("nothing is left"),
        "{err}"
    );

    // A coordinator written here, which holds another token: the worker leaves it and
    // sends nothing more (no join).
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let out = tempfile::tempdir().unwrap();
    let worker = |extra: &[&str]| {
        let mut args = vec![
            "worker",
            "--coordinator",
            &addr,
            "--name",
            "victim",
            "--out",
            out.path().to_str().unwrap(),
        ];
        args.extend(extra);
        Proc::spawn(&args)
    };
    let mut victim = worker(&[]);
    let other = ClusterToken::new("another-token-0123456789").unwrap();
    let after: Vec<WorkerMsg> = rt.block_on(async {
        let mut conn = rogue::coordinator_side(&listener, &other).await;
        rogue::rest(&mut conn).await
    });
    assert!(after.is_empty(), "the worker sent {after:?}");
    assert!(!victim.wait(Duration::from_secs(10)).success());
    assert!(
        victim
            .stderr()
            .contains("did not prove it holds the cluster token"),
        "{}",
        victim.stderr()
    );

    // With the token, a config that names a file of the worker's machine, and a plugin
    // other than the worker's --plugin: each refused by the worker.
    let token = ClusterToken::new(TOKEN).unwrap();
    let hello = std::fs::read(common::plugin("hello")).unwrap();
    let sha = {
        use sha2::Digest;
        hex::encode(sha2::Sha256::digest(&hello))
    };
    let probe = common::plugin("http_probe");
    for (extra, config, says) in [
        (
            vec![],
            "[data]\nusers = \"/etc/passwd\"\n",
            "\"/etc/passwd\" at data.users: refused",
        ),
        (
            vec![],
            "[tls]\nca_file = \"../../ca.pem\"\n",
            "at tls.ca_file: refused",
        ),
        (vec!["--plugin", probe.to_str().unwrap()], "", "--plugin"),
    ] {
        let mut victim = worker(&extra);
        let failed: Vec<WorkerMsg> = rt.block_on(async {
            let mut conn = rogue::coordinator_side(&listener, &token).await;
            let join: WorkerMsg = protocol::read(&mut conn, protocol::MAX_HELLO_FRAME)
                .await
                .unwrap();
            assert!(matches!(join, WorkerMsg::Join(_)), "{join:?}");
            let welcome = CoordMsg::Welcome {
                magic: protocol::MAGIC,
                protocol: protocol::PROTOCOL_VERSION,
                host_version: env!("CARGO_PKG_VERSION").into(),
            };
            protocol::write(&mut conn, &welcome).await.unwrap();
            let init = CoordMsg::Init(protocol::Init {
                plugin_name: "hello.wasm".into(),
                plugin: hello.clone(),
                plugin_reference: None,
                plugin_sha256: sha.clone(),
                config_toml: config.into(),
                segment: "0:1".into(),
                sequence: "0,1".into(),
                setup_data: "null".into(),
                index: 0,
                data_files: Vec::new(),
                verbose: false,
            });
            protocol::write(&mut conn, &init).await.unwrap();
            rogue::rest::<_, WorkerMsg>(&mut conn)
                .await
                .into_iter()
                .filter(|m| !matches!(m, WorkerMsg::Heartbeat))
                .collect()
        });
        assert!(
            matches!(failed.as_slice(), [WorkerMsg::Failed(why)] if why.contains(says)),
            "{says}: {failed:?}"
        );
        assert!(!victim.wait(Duration::from_secs(10)).success());
    }
}

#[test]
fn listening_beyond_loopback_without_a_token_is_refused() {
    let plugin = common::plugin("hello");
    let out = Command::new(HOST)
        .args(["coordinate", plugin.to_str().unwrap(), "--workers", "1"])
        .args(["--listen", "0.0.0.0:0"])
        .env_remove(host::trust::TOKEN_ENV)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("needs a cluster token") && err.contains("HOST_CLUSTER_TOKEN"),
        "{err}"
    );
    assert!(!err.contains(host::LISTENING), "{err}");
}

/// Lines of `text` that quote a refused or dropped unproven peer.
fn unproven_lines(text: &str) -> usize {
    text.lines()
        .filter(|l| {
            l.contains("coordinator: dropped a connection")
                || l.contains("coordinator: closed the oldest")
                || l.contains("coordinator: refused worker")
        })
        .count()
}

#[test]
fn idle_connections_do_not_lock_a_real_worker_out_and_cost_few_log_lines() {
    let target = Target::start();
    let toml = "[scenarios.default]\nexecutor = \"shared-iterations\"\nvus = 1\niterations = 3\n";
    let mut cluster = Cluster::start(
        "hello",
        toml,
        &[format!("BASE_URL={}", target.url())],
        1,
        false,
    );
    // 80 peers that connect and say nothing: more than the 64 handshake slots.
    let idle: Vec<std::net::TcpStream> = (0..80)
        .map(|_| std::net::TcpStream::connect(&cluster.addr).unwrap())
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    cluster.add_worker("real");
    cluster
        .coordinator
        .wait_for_line("worker real (", Duration::from_secs(30));
    let status = cluster.coordinator.wait(Duration::from_secs(60));
    assert!(status.success(), "{}", cluster.coordinator.stderr());
    assert!(cluster.workers[0].wait(Duration::from_secs(30)).success());
    drop(idle);
    let lines = unproven_lines(&cluster.coordinator.stderr());
    assert!(
        lines <= 15,
        "{lines} lines about unproven peers:\n{}",
        cluster.coordinator.stderr()
    );
}

#[test]
fn an_unproven_peers_name_cannot_forge_a_line_and_wrong_proofs_wait() {
    let toml = "[scenarios.default]\nexecutor = \"constant-vus\"\nvus = 1\nduration = \"1s\"\n";
    let mut cluster = Cluster::start("hello", toml, &[], 1, false);
    // A name with a line of its own in it, 60 KB long, and the wrong token.
    let forged = format!(
        "evil\ncoordinator: worker forged (127.0.0.1:1) joined\x1b[2J{}",
        "x".repeat(60_000)
    );
    cluster.add_worker_with(
        &forged,
        &[],
        &[(host::trust::TOKEN_ENV, "another-token-0123456789")],
    );
    assert!(!cluster.workers[0].wait(Duration::from_secs(30)).success());
    let line = cluster
        .coordinator
        .wait_for_line("refused worker evil", Duration::from_secs(10));
    assert!(line.len() < 600, "{} bytes: {line:.200}", line.len());
    assert!(
        line.contains("evil\\ncoordinator: worker forged"),
        "{line:.300}"
    );
    let err = cluster.coordinator.stderr();
    assert!(
        !err.lines()
            .any(|l| l.starts_with("coordinator: worker forged")),
        "{err:.500}"
    );
    assert!(!err.contains('\x1b'), "an escape reached the log");
    // Wrong proofs from one address are answered later and later: six at once take
    // 0.1 + 0.2 + ... + 3.2 s to be refused, not a moment.
    let started = Instant::now();
    for i in 0..6 {
        cluster.add_worker_with(
            &format!("guess{i}"),
            &[],
            &[(host::trust::TOKEN_ENV, "another-token-0123456789")],
        );
    }
    for w in cluster.workers.iter_mut().skip(1) {
        assert!(!w.wait(Duration::from_secs(30)).success());
    }
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(1500),
        "six wrong proofs refused in {took:?}"
    );
}

#[test]
fn raw_sockets_open_are_summed_over_the_workers() {
    // One VU per worker, each holding its Redis connection for the whole run: the
    // coordinator's `sockets_open` is the sum of the workers' (3), not one worker's.
    let redis = crate::support::redis::Redis::start();
    let toml = "[scenarios.default]\nexecutor = \"constant-vus\"\nvus = 3\nduration = \"3s\"\n";
    let env = [format!("REDIS_PORT={}", redis.port)];
    let mut cluster = Cluster::start("redis", toml, &env, 3, true);
    let status = cluster.coordinator.wait(Duration::from_secs(90));
    assert_eq!(status.code(), Some(0), "{}", cluster.coordinator.stderr());
    let summary = cluster.summary();
    let open = &summary["metrics"]["sockets_open"];
    assert_eq!(open["max"].as_f64(), Some(3.0), "{open}");
    assert_eq!(
        summary["metrics"]["socket_connects"]["count"].as_f64(),
        Some(3.0)
    );
}

/// Every file under `dir`, recursively.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let path = e.unwrap().path();
        if path.is_dir() {
            out.extend(files_under(&path));
        } else {
            out.push(path);
        }
    }
    out
}

/// A k6 script's secret on a worker (the worker's own `--secret-source`): the script
/// reads it, sends it in a URL (so in the `name` tag) and fails with it; the
/// coordinator, which never knew the value, writes it nowhere, and the worker's own
/// results redact it too.
#[test]
fn a_workers_secret_reaches_no_file_of_the_coordinator() {
    const SECRET: &str = "w0-s3cr3t-5d1e";
    let target = Target::start();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("secret.js"),
        "import secrets from 'k6/secrets';\nimport http from 'k6/http';\nexport default async function () {\n  const v = await secrets.get('cool');\n  http.get(`${__ENV.BASE_URL}/?token=${v}`);\n  throw new Error('failed with ' + v);\n}\n",
    )
    .unwrap();
    std::fs::write(d.join("one.secret"), format!("cool={SECRET}\n")).unwrap();
    let config = common::write_config(
        d,
        "[scenarios.default]\nexecutor = \"shared-iterations\"\nvus = 1\niterations = 3\n",
    );
    let out = d.join("coordinator");
    let base = format!("BASE_URL={}", target.url());
    let mut coordinator = Proc::spawn(&[
        "coordinate",
        d.join("secret.js").to_str().unwrap(),
        "--workers",
        "1",
        "--listen",
        "127.0.0.1:0",
        "--config",
        config.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "-e",
        &base,
    ]);
    let line = coordinator.wait_for_line(host::LISTENING, Duration::from_secs(120));
    let rest = line.split(host::LISTENING).nth(1).unwrap();
    let addr = rest.split(": ").next().unwrap().to_string();
    let source = format!("file={}", d.join("one.secret").display());
    let worker_out = d.join("w0");
    let mut worker = Proc::spawn(&[
        "worker",
        "--coordinator",
        &addr,
        "--name",
        "w0",
        "--out",
        worker_out.to_str().unwrap(),
        "--secret-source",
        &source,
    ]);
    coordinator.wait(Duration::from_secs(120));
    worker.wait(Duration::from_secs(30));
    let all = format!("{}\n{}", coordinator.stderr(), worker.stderr());
    assert!(all.contains("failed with ***SECRET_REDACTED***"), "{all}");
    assert!(!all.contains(SECRET), "{all}");
    let mut written = files_under(&out);
    written.extend(files_under(&worker_out));
    assert!(written.len() > 3, "{written:?}");
    for file in &written {
        let bytes = std::fs::read(file).unwrap();
        let found = bytes.windows(SECRET.len()).any(|w| w == SECRET.as_bytes());
        assert!(!found, "{} holds the secret", file.display());
    }
    // The request went with the value, and the coordinator's results have its URL
    // redacted (the tag crossed from the worker as ***SECRET_REDACTED***).
    let summary = common::summary_json(&common::only_results_dir(&out));
    assert!(
        summary.to_string().contains("token=***SECRET_REDACTED***"),
        "{}",
        summary["endpoints"]
    );
}
