//! The distributed run on Docker Swarm (compose/swarm-target.yml, then compose/swarm.yml
//! into the same stack once the API answers): the coordinator and three
//! workers as replicated jobs against the demo API, from images imported locally. The
//! node is left as it was found: a swarm this test made is left again, and everything
//! the stack made (services, finished job containers, networks) is removed, even when
//! an assertion fails.

use crate::support as common;

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// Runs `docker ARGS` with `env`.
fn docker(args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new("docker")
        .args(args)
        .envs(env.iter().copied())
        .output()
        .expect("the docker CLI runs")
}

/// `docker ARGS`' stdout, trimmed; panics with its stderr if it fails.
fn docker_ok(args: &[&str]) -> String {
    let out = docker(args, &[]);
    assert!(
        out.status.success(),
        "docker {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// The node's swarm state (`inactive`, `active`, ...).
fn swarm_state() -> String {
    docker_ok(&["info", "--format", "{{.Swarm.LocalNodeState}}"])
}

fn network_exists(name: &str) -> bool {
    docker(&["network", "inspect", name], &[]).status.success()
}

/// Undoes what the test did to the node, when dropped: the stack and its leftovers,
/// then the swarm (only if the test made it) and the bridge Swarm adds for overlay
/// networks (only if it was not there before).
struct SwarmGuard {
    stack: String,
    made_swarm: bool,
    had_gwbridge: bool,
}

impl SwarmGuard {
    /// Notes the node's state, and joins it to a one-node swarm if it is in none.
    fn enter(stack: &str) -> Self {
        let had_gwbridge = network_exists("docker_gwbridge");
        let mut guard = Self {
            stack: stack.into(),
            made_swarm: false,
            had_gwbridge,
        };
        match swarm_state().as_str() {
            "active" => {}
            "inactive" => {
                // Set before the call: a half-made swarm is left as well.
                guard.made_swarm = true;
                docker_ok(&[
                    "swarm",
                    "init",
                    "--advertise-addr",
                    "127.0.0.1",
                    "--listen-addr",
                    "127.0.0.1:2377",
                ]);
            }
            other => panic!("the node's swarm is {other}: make it active or inactive first"),
        }
        guard
    }

    /// The stack's containers, running or finished.
    fn containers(&self) -> Vec<String> {
        let filter = format!("label=com.docker.stack.namespace={}", self.stack);
        let out = docker(&["ps", "-aq", "--filter", &filter], &[]);
        String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .map(String::from)
            .collect()
    }
}

impl Drop for SwarmGuard {
    fn drop(&mut self) {
        let _ = docker(&["stack", "rm", &self.stack], &[]);
        // Swarm keeps finished jobs' containers after their service is gone.
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let left = self.containers();
            if left.is_empty() || Instant::now() > deadline {
                break;
            }
            let mut rm = vec!["rm", "-f"];
            rm.extend(left.iter().map(String::as_str));
            let _ = docker(&rm, &[]);
            std::thread::sleep(Duration::from_millis(500));
        }
        let network = format!("{}_default", self.stack);
        while network_exists(&network) && Instant::now() < deadline {
            let _ = docker(&["network", "rm", &network], &[]);
            std::thread::sleep(Duration::from_millis(500));
        }
        if self.made_swarm {
            let _ = docker(&["swarm", "leave", "--force"], &[]);
            if !self.had_gwbridge && network_exists("docker_gwbridge") {
                let _ = docker(&["network", "rm", "docker_gwbridge"], &[]);
            }
        }
    }
}

/// Waits for the coordinator job's task to end; returns its state and exit code.
fn wait_for_coordinator(stack: &str, within: Duration) -> (String, String) {
    let service = format!("{stack}_coordinator");
    let deadline = Instant::now() + within;
    loop {
        let tasks = docker_ok(&["service", "ps", "-q", "--no-trunc", &service]);
        if let Some(task) = tasks.lines().next() {
            // A task gets its container status only once it has a container.
            let status: serde_json::Value = serde_json::from_str(&docker_ok(&[
                "inspect",
                "--format",
                "{{json .Status}}",
                task,
            ]))
            .unwrap();
            let state = status["State"].as_str().unwrap_or_default();
            if matches!(state, "complete" | "failed" | "rejected" | "shutdown") {
                let code = status["ContainerStatus"]["ExitCode"].to_string();
                return (state.to_string(), code);
            }
        }
        assert!(
            Instant::now() < deadline,
            "the coordinator did not finish within {within:?}; its log:\n{}",
            coordinator_log(stack)
        );
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// Waits until the API's task runs (healthy) and its published port answers; returns
/// that address (host mode: `docker port` of the task's container).
fn wait_for_api(stack: &str, within: Duration) -> String {
    let filter = format!("label=com.docker.swarm.service.name={stack}_api");
    let deadline = Instant::now() + within;
    loop {
        let running = docker_ok(&[
            "service",
            "ps",
            "--format",
            "{{.CurrentState}}",
            &format!("{stack}_api"),
        ])
        .starts_with("Running");
        let container = docker_ok(&["ps", "-q", "--filter", &filter]);
        if running && !container.is_empty() {
            let ports = docker_ok(&["port", &container, "8080/tcp"]);
            if let Some(port) = ports.lines().next().and_then(|l| l.rsplit(':').next()) {
                let addr = format!("127.0.0.1:{port}");
                if std::net::TcpStream::connect(&addr).is_ok() {
                    return addr;
                }
            }
        }
        assert!(
            Instant::now() < deadline,
            "the API did not come up within {within:?}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn coordinator_log(stack: &str) -> String {
    let out = docker(&["service", "logs", &format!("{stack}_coordinator")], &[]);
    String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr)
}

#[test]
fn swarm_jobs_of_three_workers_count_what_the_api_served() {
    // Three workers and an API in containers load both cores for seconds: a test that
    // counts what started on time beside it (the outbox example) dropped a quarter of
    // its iterations twice in CI.
    let _turn = common::turns::MEASURING.blocking_lock();
    let stack = format!("t{}swarm", std::process::id());
    // `host images` imports the images and names their tags, as a user would run it.
    let images = Command::new(env!("CARGO_BIN_EXE_host"))
        .arg("images")
        .output()
        .unwrap();
    assert!(
        images.status.success(),
        "{}",
        String::from_utf8_lossy(&images.stderr)
    );
    let tags: Vec<(String, String)> = String::from_utf8(images.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let (var, tag) = l.split_once('=').expect(l);
            (var.to_string(), tag.to_string())
        })
        .collect();
    let names: Vec<&str> = tags.iter().map(|(v, _)| v.as_str()).collect();
    assert_eq!(names, ["HOST_TAG", "DEMO_TARGET_TAG"]);
    let (state_before, gwbridge_before) = (swarm_state(), network_exists("docker_gwbridge"));
    let guard = SwarmGuard::enter(&stack);
    let results = tempfile::tempdir().unwrap();
    let secrets = tempfile::tempdir().unwrap();
    let token_file = secrets.path().join("cluster.token");
    std::fs::write(&token_file, "swarm-test-token-0123456789abcdef").unwrap();
    let compose = Path::new(env!("CARGO_MANIFEST_DIR")).join("../compose");
    let (target_file, run_file) = (compose.join("swarm-target.yml"), compose.join("swarm.yml"));
    let env = [
        (tags[0].0.as_str(), tags[0].1.as_str()),
        (tags[1].0.as_str(), tags[1].1.as_str()),
        ("PLUGIN_DIR", host::PLUGINS_DIR),
        ("RESULTS_DIR", results.path().to_str().unwrap()),
        ("CLUSTER_TOKEN_FILE", token_file.to_str().unwrap()),
        ("WORKERS", "3"),
        ("DURATION", "3s"),
    ];
    let deploy = |files: &[&Path]| {
        let mut args = vec!["stack", "deploy", "--resolve-image", "never"];
        for f in files {
            args.extend(["-c", f.to_str().unwrap()]);
        }
        args.push(&stack);
        let out = docker(&args, &env);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    // The API first, and the run once it answers (Swarm has no depends_on).
    deploy(&[&target_file]);
    let api_port = wait_for_api(&stack, Duration::from_secs(30));
    deploy(&[&target_file, &run_file]);

    let (state, code) = wait_for_coordinator(&stack, Duration::from_secs(45));
    let log = coordinator_log(&stack);
    assert_eq!((state.as_str(), code.as_str()), ("complete", "0"), "{log}");

    let served = common::scrape_user_requests(&api_port);

    let summary = common::summary_json(&common::only_results_dir(results.path()));
    let workers = summary["workers"].as_array().unwrap();
    assert_eq!(workers.len(), 3, "{log}");
    let merged = summary["metrics"]["http_reqs"]["count"].as_f64().unwrap() as u64;
    assert!(merged > 0, "{log}");
    assert_eq!(
        served, merged,
        "the API served what was merged; http: {}\n{log}",
        summary["http"]
    );
    drop(guard);
    assert!(
        docker_ok(&[
            "ps",
            "-aq",
            "--filter",
            &format!("label=com.docker.stack.namespace={stack}")
        ])
        .is_empty(),
        "the stack's containers are gone"
    );
    assert_eq!(swarm_state(), state_before, "the node's swarm is as it was");
    assert_eq!(network_exists("docker_gwbridge"), gwbridge_before);
}

#[test]
fn host_images_names_a_binary_it_cannot_find_and_how_to_build_it() {
    let out = Command::new(env!("CARGO_BIN_EXE_host"))
        .args(["images", "no-such-binary"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(out.stdout.is_empty());
    assert!(
        stderr.contains("no-such-binary") && stderr.contains("cargo build -p no-such-binary"),
        "{stderr}"
    );
}
