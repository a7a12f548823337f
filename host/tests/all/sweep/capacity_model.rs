//! `host sweep` end to end: the `host` binary sweeps the demo target (a `host target`
//! child whose true capacity is set with `--workers --service-time`), and the capacity
//! model is checked against that truth. Every process is real; the sweeps run one at a
//! time, since they measure capacity on a shared 2-core machine.

use crate::support as common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Sweeps measure: one at a time, with every other test that measures.
use common::turns::MEASURING as ONE_AT_A_TIME;

/// A `host target` child, killed when dropped.
struct Target {
    child: Child,
    url: String,
}

impl Target {
    fn start(flags: &[&str]) -> Target {
        let mut child = Command::new(env!("CARGO_BIN_EXE_host"))
            .args(["target", "--listen", "127.0.0.1:0"])
            .args(flags)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let url = line
            .trim()
            .strip_prefix("demo target listening on ")
            .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
            .to_string();
        Target { child, url }
    }
}

impl Drop for Target {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `host sweep` with `args`, against `target`, writing under `out`.
fn sweep_command(target: &Target, config: &Path, out: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_host"));
    cmd.arg("sweep")
        .arg(common::plugin("hello"))
        .arg("--config")
        .arg(config)
        .arg("--out")
        .arg(out)
        .args(["--quiet", "-e"])
        .arg(format!("BASE_URL={}", target.url))
        .arg("--sample-pid")
        .arg(format!("target={}", target.child.id()))
        .args(args);
    cmd
}

fn only_dir(out: &Path) -> PathBuf {
    let dirs: Vec<PathBuf> = std::fs::read_dir(out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    dirs.into_iter().next().unwrap()
}

fn sweep_json(dir: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(dir.join("sweep.json")).unwrap()).unwrap()
}

/// An open-model config at 100 iterations/s, its VUs scaled with each level: with 2.5
/// VUs per iteration/s, even 600/s queued for 1.5 s at a 400/s target has VUs to spare
/// (no drops: the level is judged on its latency, not on a VU pool too small).
const OPEN_CONFIG: &str = r#"
[scenarios.open]
executor = "constant-arrival-rate"
exec = "default"
rate = 100
time_unit = "1s"
duration = "3s"
pre_allocated_vus = 250
max_vus = 250

# Far above the service time (10 ms), so that a stall of a loaded machine does not fail
# a level below the capacity; far below what a queue past it adds (0.4 s at 450/s).
[thresholds]
http_req_duration = ["p(99)<250"]
"#;

/// The levels the capacity sweep plans (its refine steps come on top).
const PLANNED: [f64; 5] = [100.0, 200.0, 300.0, 400.0, 600.0];

#[test]
fn a_sweep_finds_the_capacity_of_a_target_with_four_workers_of_ten_ms() {
    let _serial = ONE_AT_A_TIME.blocking_lock();
    let dir = tempfile::tempdir().unwrap();
    let config = common::write_config(dir.path(), OPEN_CONFIG);
    // The truth: 4 workers × 10 ms = 400 requests/s, and a queue too long to shed.
    let target = Target::start(&["--workers", "4", "--service-time", "10ms"]);
    let out = dir.path().join("out");
    let began = Instant::now();
    let output = sweep_command(
        &target,
        &config,
        &out,
        &[
            "--levels",
            "100,200,300,400,600", // PLANNED
            "--hold",
            "3s",
            "--refine",
            "1",
        ],
    )
    .output()
    .unwrap();
    let took = began.elapsed();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stdout}\n{stderr}");
    let sweep_dir = only_dir(&out);
    let json = sweep_json(&sweep_dir);
    let report = format!(
        "{stdout}\n{stderr}\n{}",
        std::fs::read_to_string(sweep_dir.join("sweep.md")).unwrap()
    );

    let levels = json["levels"].as_array().unwrap();
    // Every level ran as a run of its own, with its results inside the sweep folder.
    for l in levels {
        let results = sweep_dir.join(l["results"].as_str().unwrap());
        assert!(
            results.join("summary.json").exists(),
            "{}",
            results.display()
        );
    }
    // Below the capacity the target keeps up.
    let level = |n: f64| levels.iter().find(|l| l["level"] == n);
    let at_200 = level(200.0).expect("level 200 ran");
    let x = at_200["throughput_per_s"].as_f64().unwrap();
    assert!(
        (180.0..=210.0).contains(&x),
        "throughput at 200/s was {x}\n{report}"
    );
    // None of the levels below the capacity fails (one may be invalid: on a loaded
    // machine the generator can start iterations late).
    for l in levels
        .iter()
        .filter(|l| l["level"].as_f64().unwrap() <= 300.0)
    {
        assert_ne!(l["verdict"]["verdict"], "fail", "{report}");
    }

    // The breakpoint brackets 400/s within one refine step. The step is half the gap
    // between the planned levels around the breakpoint that gave a verdict: a level
    // whose generator saturated (late starts on a loaded machine) is invalid and
    // widens it (300..600 without 400 gives a step of 150). On a 2-core machine shared
    // with other work, a target held at exactly its capacity (ρ = 1) has no spare
    // capacity to drain the queue a late burst of arrivals leaves, so 400/s itself may
    // fail: the highest pass may be up to 10 % over 400, the lowest fail up to 15 %
    // under it.
    let bp = &json["model"]["breakpoint"];
    let passed = bp["passed"]
        .as_f64()
        .unwrap_or_else(|| panic!("no pass\n{report}"));
    let failed = bp["failed"]
        .as_f64()
        .unwrap_or_else(|| panic!("no fail\n{report}"));
    assert!(passed <= 440.0, "passed at {passed}\n{report}");
    assert!(failed >= 340.0, "failed at {failed}\n{report}");
    let planned: Vec<&serde_json::Value> = levels
        .iter()
        .filter(|l| PLANNED.contains(&l["level"].as_f64().unwrap()))
        .collect();
    let verdict_of = |l: &serde_json::Value| l["verdict"]["verdict"].as_str().unwrap().to_string();
    let first_fail = planned
        .iter()
        .find(|l| verdict_of(l) == "fail")
        .map(|l| l["level"].as_f64().unwrap())
        .unwrap_or_else(|| panic!("no planned level failed\n{report}"));
    let last_pass = planned
        .iter()
        .filter(|l| verdict_of(l) == "pass" && l["level"].as_f64().unwrap() < first_fail)
        .map(|l| l["level"].as_f64().unwrap())
        .fold(0.0, f64::max);
    let step = (first_fail - last_pass) / 2.0;
    assert!(
        failed - passed <= step + 1.0,
        "bracket {passed}..{failed} is wider than one refine step ({step})\n{report}"
    );
    assert!(
        bp["threshold"].as_str().unwrap().contains("p(99)<250"),
        "{report}"
    );

    // The capacity the measurements support is the true 400/s, within 15 % (the
    // throughput of a level counts its drain too).
    let capacity = &json["model"]["capacity"];
    let x = capacity["throughput_per_s"].as_f64().unwrap();
    assert!((340.0..=420.0).contains(&x), "capacity {x}\n{report}");
    assert_ne!(capacity["basis"], "lower_bound", "{report}");
    assert!(stdout.contains("- capacity: "), "{stdout}");
    // The USL's predicted peak is within 15 % of the true 400/s.
    let peak = json["model"]["usl"]["peak_throughput"].as_f64().unwrap();
    assert!((340.0..=460.0).contains(&peak), "USL peak {peak}\n{report}");
    // The knee lies below the breakpoint's failing level.
    let knee = json["model"]["knee"]["level"]
        .as_f64()
        .unwrap_or_else(|| panic!("no knee\n{report}"));
    assert!(knee <= passed && knee < failed, "knee {knee}\n{report}");
    // The target was sampled: it is the binding resource candidate, with CPU figures.
    assert_eq!(json["model"]["binding"]["service"], "target", "{report}");
    assert!(levels[0]["services"]
        .as_array()
        .unwrap()
        .iter()
        .any(|s| s["service"] == "generator"));

    // The outputs: the printed model, sweep.md's rows, and a self-contained page.
    assert!(stdout.contains("breakpoint: passed at"), "{stdout}");
    assert!(stdout.contains("USL fit: λ ="), "{stdout}");
    let md = std::fs::read_to_string(sweep_dir.join("sweep.md")).unwrap();
    let rows = md
        .lines()
        .filter(|l| {
            [" | pass", " | fail:", " | invalid:"]
                .iter()
                .any(|v| l.contains(v))
        })
        .count();
    assert_eq!(rows, levels.len(), "{md}");
    let html = std::fs::read_to_string(sweep_dir.join("sweep.html")).unwrap();
    assert!(
        html.contains("<svg") && html.contains("USL fit"),
        "sweep.html"
    );
    assert!(!html.contains("<script"), "sweep.html fetches nothing");
    assert!(took < Duration::from_secs(120), "the sweep took {took:?}");
}

#[test]
fn a_target_of_three_workers_of_twenty_ms_breaks_at_150_and_its_capacity_is_150() {
    let _serial = ONE_AT_A_TIME.blocking_lock();
    let dir = tempfile::tempdir().unwrap();
    // One VU per iteration/s: 240/s queued for 2 s at 150/s holds about 180 in flight,
    // within its 240 VUs. A p99 of 100 ms passes at 140/s (no queue) and fails at
    // 160/s (10/s more than it serves: 130 ms of queue after 2 s).
    let config = common::write_config(
        dir.path(),
        r#"
[scenarios.open]
executor = "constant-arrival-rate"
exec = "default"
rate = 100
time_unit = "1s"
duration = "2s"
pre_allocated_vus = 100
max_vus = 100

[thresholds]
http_req_duration = ["p(99)<100"]
"#,
    );
    let target = Target::start(&["--workers", "3", "--service-time", "20ms"]);
    let out = dir.path().join("out");
    let output = sweep_command(
        &target,
        &config,
        &out,
        &["--levels", "60,120,140,160,240", "--hold", "2s"],
    )
    .output()
    .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let text = format!("{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(output.status.code(), Some(0), "{text}");
    let json = sweep_json(&only_dir(&out));
    let m = &json["model"];
    // The breakpoint brackets the true 150/s (a loaded machine may fail 140/s, at 93 %
    // of the capacity).
    let passed = m["breakpoint"]["passed"].as_f64().unwrap_or(0.0);
    let failed = m["breakpoint"]["failed"].as_f64().unwrap_or(0.0);
    assert!((120.0..=140.0).contains(&passed), "passed {passed}\n{text}");
    assert!((140.0..=160.0).contains(&failed), "failed {failed}\n{text}");
    // The capacity is what the target sustained past it: 150/s, not twice that.
    let capacity = &m["capacity"];
    let x = capacity["throughput_per_s"].as_f64().unwrap();
    assert!((135.0..=160.0).contains(&x), "capacity {x}\n{text}");
    assert_eq!(capacity["lower_bound"], false, "{text}");
    assert!(
        stdout.contains(&format!("- capacity: {x:.1} good iterations/s")),
        "{stdout}"
    );
    // The USL's peak is shown as a prediction only within the concurrency it was
    // fitted on; elsewhere it is marked as an extrapolation, with that range.
    if let Some(peak) = m["usl"]["peak_throughput"].as_f64() {
        let range = &m["usl_range"];
        if range["peak_within"] == true && range["above_measured"] == false {
            assert!((120.0..=165.0).contains(&peak), "USL peak {peak}\n{text}");
            assert!(stdout.contains("within the fitted range N = "), "{stdout}");
        } else if range["above_measured"] == true {
            assert!(peak > 1.1 * x, "{text}");
            assert!(stdout.contains("overshoot"), "{stdout}");
        } else {
            assert!(
                stdout.contains("extrapolation") && stdout.contains("fitted range N = "),
                "{stdout}"
            );
        }
    }
}

#[test]
fn a_retrograde_target_peaks_where_the_usl_says_and_its_capacity_is_the_peak() {
    let _serial = ONE_AT_A_TIME.blocking_lock();
    let dir = tempfile::tempdir().unwrap();
    // The truth: 20 ms alone, κ = 1/64, so N VUs (each waiting on one request) serve
    // X(N) = N / (20 ms × (1 + N(N − 1)/64)): 97/s at 2, 168 at 4, 213 at the peak
    // N* = 8, 196 at 12, 168 at 16 and 125 at 24 (192 ms each). Every level runs
    // (`--continue`): a stall of the loaded machine may fail one.
    let config = common::write_config(
        dir.path(),
        r#"
[scenarios.closed]
executor = "constant-vus"
exec = "default"
vus = 1
duration = "2s"

[thresholds]
http_req_duration = ["p(99)<1000"]
"#,
    );
    let target = Target::start(&[
        "--workers",
        "64",
        "--service-time",
        "20ms",
        "--crosstalk",
        "0.015625",
    ]);
    let out = dir.path().join("out");
    let output = sweep_command(
        &target,
        &config,
        &out,
        &["--levels", "2,4,8,12,16,24", "--hold", "2s", "--continue"],
    )
    .output()
    .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let text = format!("{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(output.status.code(), Some(0), "{text}");
    let json = sweep_json(&only_dir(&out));
    let m = &json["model"];
    let x_at = |n: f64| {
        json["levels"]
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l["level"] == n)
            .and_then(|l| l["throughput_per_s"].as_f64())
            .unwrap_or_else(|| panic!("level {n}\n{text}"))
    };
    // Throughput rises, peaks and falls.
    assert!(x_at(8.0) > x_at(2.0) && x_at(8.0) > x_at(24.0), "{text}");
    // The capacity is the peak measured.
    let capacity = &m["capacity"];
    assert_eq!(capacity["basis"], "peak", "{text}");
    let x = capacity["throughput_per_s"].as_f64().unwrap();
    assert!((170.0..=225.0).contains(&x), "capacity {x}\n{text}");
    let at = capacity["level"].as_f64().unwrap();
    assert!((4.0..=12.0).contains(&at), "peak at {at}\n{text}");
    // The USL is the right model here: its peak lies within the levels it saw, near
    // the true N* = 8 and 213/s.
    let usl = &m["usl"];
    let n_star = usl["peak_concurrency"].as_f64().unwrap();
    assert!((5.0..=12.0).contains(&n_star), "N* {n_star}\n{text}");
    let peak = usl["peak_throughput"].as_f64().unwrap();
    assert!((170.0..=240.0).contains(&peak), "USL peak {peak}\n{text}");
    assert!(usl["kappa"].as_f64().unwrap() > 0.0, "{text}");
    assert_eq!(m["usl_range"]["peak_within"], true, "{text}");
    assert!(
        stdout.contains("within the fitted range N = 2.0 to 24.0"),
        "{stdout}"
    );
}

#[test]
fn a_level_whose_vus_run_out_at_the_targets_latency_fails_it_is_not_invalid() {
    let _serial = ONE_AT_A_TIME.blocking_lock();
    let dir = tempfile::tempdir().unwrap();
    // 8 VUs per 100 iterations/s against a target that takes 100 ms: at 10/s one
    // iteration is in flight on average and the level keeps its 8 VUs (room for a
    // stall of the loaded machine); at 200/s twenty would be in flight but the level
    // has 16, so it drops iterations with every VU busy waiting on the target. That is
    // not the generator (it idles): the level fails on its thresholds (drops), and the
    // VU pool, too small for the target's latency, is named.
    let config = common::write_config(
        dir.path(),
        r#"
[scenarios.open]
executor = "constant-arrival-rate"
exec = "default"
rate = 100
time_unit = "1s"
duration = "2s"
pre_allocated_vus = 8
max_vus = 8

[thresholds]
allow_missing = true
http_req_duration = ["p(99)<1000"]
dropped_iterations = ["count<1"]
"#,
    );
    let target = Target::start(&["--latency", "100ms"]);
    let out = dir.path().join("out");
    let output = sweep_command(
        &target,
        &config,
        &out,
        &["--levels", "10,200", "--hold", "2s"],
    )
    .output()
    .unwrap();
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(output.status.code(), Some(0), "{text}");
    let json = sweep_json(&only_dir(&out));
    let levels = json["levels"].as_array().unwrap();
    assert_eq!(levels.len(), 2, "{text}");
    assert_eq!(levels[0]["verdict"]["verdict"], "pass", "{text}");
    assert_eq!(levels[1]["verdict"]["verdict"], "fail", "{text}");
    assert_eq!(levels[1]["bottleneck"], "vu_pool", "{text}");
    let bp = &json["model"]["breakpoint"];
    assert_eq!(bp["passed"], 10.0, "{text}");
    assert_eq!(bp["failed"], 200.0, "{text}");
    let little = json["model"]["littles_law"].as_array().unwrap();
    assert_eq!(little[1]["generator_limited"], false, "{text}");
    assert_eq!(little[1]["vu_limited"], true, "{text}");
    assert!(!text.contains("invalid"), "{text}");
    assert!(text.contains("not the generator"), "{text}");
    // 16 VUs of 100 ms serve 160/s at most: what max_vus allowed, not the capacity.
    let capacity = &json["model"]["capacity"];
    assert_eq!(capacity["lower_bound"], true, "{text}");
    assert!(
        capacity["note"].as_str().unwrap().contains("raise max_vus"),
        "{text}"
    );
}

#[test]
fn ctrl_c_during_a_sweep_writes_sweep_md_with_the_levels_done() {
    let _serial = ONE_AT_A_TIME.blocking_lock();
    let dir = tempfile::tempdir().unwrap();
    let config = common::write_config(dir.path(), OPEN_CONFIG);
    let target = Target::start(&["--workers", "4", "--service-time", "10ms"]);
    let out = dir.path().join("out");
    let mut child = sweep_command(
        &target,
        &config,
        &out,
        &["--levels", "50,100,150,200,250", "--hold", "2s"],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    // Wait until the first level is done (sweep.md is rewritten after every level).
    let deadline = Instant::now() + Duration::from_secs(60);
    let md = loop {
        let found = std::fs::read_dir(&out)
            .ok()
            .and_then(|mut d| d.next())
            .map(|e| e.unwrap().path().join("sweep.md"))
            .filter(|p| p.exists());
        if let Some(md) = found {
            break md;
        }
        assert!(Instant::now() < deadline, "no level finished within 60 s");
        std::thread::sleep(Duration::from_millis(100));
    };
    // SAFETY: kill(2) on our own child, not yet waited for.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    let status = child.wait().unwrap();
    let mut stderr = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut stderr).unwrap();
    assert_eq!(status.code(), Some(105), "{stderr}");
    let text = std::fs::read_to_string(&md).unwrap();
    assert!(text.contains("Interrupted"), "{text}");
    let json = sweep_json(md.parent().unwrap());
    let levels = json["levels"].as_array().unwrap();
    // The first level finished before the signal; the sweep stopped well before its end.
    assert!(!levels.is_empty() && levels.len() < 5, "{text}");
    assert_eq!(levels[0]["verdict"]["verdict"], "pass", "{text}");
    assert!(text.contains("| 50 |"), "{text}");
    assert_eq!(json["interrupted"], true);
}

#[test]
fn with_a_stack_levels_sample_its_containers_and_ctrl_c_tears_it_down() {
    let _serial = ONE_AT_A_TIME.blocking_lock();
    let dir = tempfile::tempdir().unwrap();
    let project = format!("t{}-sweep", std::process::id());
    let config = common::write_config(
        dir.path(),
        r#"
[scenarios.open]
executor = "constant-arrival-rate"
exec = "default"
rate = 10
time_unit = "1s"
duration = "2s"
pre_allocated_vus = 10
max_vus = 10
"#,
    );
    let out = dir.path().join("out");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut child = Command::new(env!("CARGO_BIN_EXE_host"))
        .current_dir(&root)
        .arg("sweep")
        .arg(common::plugin("hello"))
        .arg("--config")
        .arg(&config)
        .arg("--out")
        .arg(&out)
        .args([
            "--quiet",
            "--stack",
            "compose/docker-compose.yml",
            "--project",
        ])
        .arg(&project)
        // Docker reports a container's stats about once a second and its first frame
        // has no CPU figure: a level of 4 s gets a few samples of each.
        .args(["--levels", "20,40,60,80,100", "--hold", "4s"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let leftovers = || {
        let out = Command::new("docker")
            .args(["ps", "-aq", "--filter"])
            .arg(format!("label=com.docker.compose.project={project}"))
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).lines().count()
    };
    // The stack comes up (images built from this repository's binaries), then levels run.
    let deadline = Instant::now() + Duration::from_secs(240);
    let md = loop {
        let found = std::fs::read_dir(&out)
            .ok()
            .and_then(|mut d| d.next())
            .map(|e| e.unwrap().path().join("sweep.md"))
            .filter(|p| p.exists());
        if let Some(md) = found {
            break md;
        }
        if Instant::now() > deadline || child.try_wait().unwrap().is_some() {
            let _ = child.kill();
            let mut stderr = String::new();
            std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut stderr).unwrap();
            let _ = Command::new(env!("CARGO_BIN_EXE_host"))
                .args(["down", "--project", &project])
                .output();
            panic!("no level finished: {stderr}");
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(leftovers() > 0, "the stack is up while the sweep runs");
    // SAFETY: kill(2) on our own child, not yet waited for.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    let status = child.wait().unwrap();
    let mut stderr = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut stderr).unwrap();
    let remaining = leftovers();
    if remaining > 0 {
        let _ = Command::new(env!("CARGO_BIN_EXE_host"))
            .args(["down", "--project", &project])
            .output();
    }
    assert_eq!(status.code(), Some(105), "{stderr}");
    assert_eq!(remaining, 0, "the stack was not torn down: {stderr}");
    assert!(
        stderr.contains(&format!("stack {project} removed")),
        "{stderr}"
    );
    let json = sweep_json(md.parent().unwrap());
    let levels = json["levels"].as_array().unwrap();
    assert!(!levels.is_empty() && levels.len() < 5, "{stderr}");
    // Each level sampled the stack's containers: the API's figures are in its row.
    let services: Vec<&str> = levels[0]["services"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["service"].as_str().unwrap())
        .collect();
    assert!(services.contains(&"api"), "{services:?}");
    assert!(std::fs::read_to_string(&md)
        .unwrap()
        .contains("Interrupted"));
}
