//! Execution segments: three runs of the thirds of one sequence, at the same time
//! against one demo target, together do what one run of the whole test does, for every
//! executor: the target serves the whole count, the VUs add up to the whole, and no
//! two segments give an iteration (or a VU) the same number.

use crate::support as common;

use demo_target::DemoServer;
use host::Overrides;
use host::RunRequest;
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

const SEQUENCE: &str = "0,1/3,2/3,1";
const THIRDS: [&str; 3] = ["0:1/3", "1/3:2/3", "2/3:1"];

/// One segment's run of the `misbehave` plugin in `numbered` mode (a request to the
/// target, then checks naming the iteration's and the VU's numbers).
async fn run_segment(config: &Path, segment: &str, target: &str, out: &Path) -> Value {
    let request = RunRequest {
        plugin: common::plugin("misbehave"),
        config: Some(config.to_path_buf()),
        overrides: Overrides {
            env: vec![
                ("MODE".into(), "numbered".into()),
                ("URL".into(), format!("{target}/")),
            ],
            execution_segment: Some(segment.into()),
            execution_segment_sequence: Some(SEQUENCE.into()),
            ..Default::default()
        },
        out: out.to_path_buf(),
        quiet: true,
        handle_signals: false,
        ..RunRequest::default()
    };
    let outcome = host::run(request).await.expect("the run completes");
    let json = common::summary_json(&outcome.results_dir);
    common::assert_http_counts_add_up(&json);
    json
}

/// The three thirds of `toml`, run at once against a fresh demo target; their
/// summaries, and what the target served.
async fn thirds(toml: &str) -> (Vec<Value>, u64) {
    thirds_at(toml, Duration::ZERO).await
}

/// As `thirds`, against a target that answers after `latency`. Executors that run for a
/// duration need one: each iteration names itself in a check, and a fast machine ran
/// more than the 10,000 series a run keeps apart (the rest fold into `series:other`), so
/// the numbers could not be told apart (CI of stop 44: 10,659 iterations in one third).
async fn thirds_at(toml: &str, latency: Duration) -> (Vec<Value>, u64) {
    let target: DemoServer = common::demo_target(latency).await;
    let base = format!("http://{}", target.addr());
    let dir = tempfile::tempdir().unwrap();
    let config = common::write_config(dir.path(), toml);
    let outs = THIRDS.map(|segment| dir.path().join(segment.replace([':', '/'], "_")));
    let [a, b, c] = THIRDS;
    // At once, in this task: a run is not `Send`, and one test's thread pool serves all.
    let (a, b, c) = tokio::join!(
        run_segment(&config, a, &base, &outs[0]),
        run_segment(&config, b, &base, &outs[1]),
        run_segment(&config, c, &base, &outs[2]),
    );
    (vec![a, b, c], target.requests_served())
}

/// A scenario counter of one summary.
fn scenario(summary: &Value, field: &str) -> u64 {
    summary["scenarios"]["s"][field]
        .as_u64()
        .unwrap_or_else(|| panic!("no scenarios.s.{field} in {}", summary["scenarios"]))
}

fn http_reqs(summary: &Value) -> u64 {
    summary["metrics"]["http_reqs"]["count"]
        .as_f64()
        .unwrap_or(0.0) as u64
}

/// The numbers of the checks named `PREFIX N` in a summary (each counted once per
/// iteration, so each iteration number must pass exactly once).
fn numbers(summary: &Value, prefix: &str) -> Vec<(u64, u64)> {
    summary["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .filter_map(|c| {
            let n = c["name"].as_str()?.strip_prefix(prefix)?.parse().ok()?;
            Some((n, c["passes"].as_u64().unwrap()))
        })
        .collect()
}

/// The iteration numbers of every segment: each is used once, in one segment only;
/// returns them all.
fn iteration_numbers(summaries: &[Value]) -> BTreeSet<u64> {
    let mut all = BTreeSet::new();
    for (summary, segment) in summaries.iter().zip(THIRDS) {
        let own = numbers(summary, "iteration ");
        assert_eq!(
            own.len() as u64,
            scenario(summary, "completed"),
            "one number per iteration in {segment}"
        );
        for (n, passes) in own {
            assert_eq!(passes, 1, "iteration {n} ran {passes} times in {segment}");
            assert!(all.insert(n), "iteration {n} numbered in two segments");
        }
    }
    all
}

/// The VU numbers (in the scenario) of every segment, disjoint across segments.
fn vu_numbers(summaries: &[Value]) -> BTreeSet<u64> {
    let mut all = BTreeSet::new();
    for (summary, segment) in summaries.iter().zip(THIRDS) {
        let own: BTreeSet<u64> = numbers(summary, "vu ")
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        for n in own {
            assert!(all.insert(n), "VU {n} in two segments (second: {segment})");
        }
    }
    all
}

/// What every segment's run served, and the target's count of it.
fn served_adds_up(summaries: &[Value], served: u64) -> u64 {
    let total: u64 = summaries.iter().map(http_reqs).sum();
    assert_eq!(total, served, "the target served what the segments counted");
    total
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shared_iterations_are_dealt_out_exactly() {
    let (runs, served) = thirds(
        r#"
        [scenarios.s]
        executor = "shared-iterations"
        vus = 4
        iterations = 50
        "#,
    )
    .await;
    // The VUs split 2 + 1 + 1; the iterations are dealt over the VUs (k6's rule): 25,
    // 13 and 12 of them.
    let vus: Vec<u64> = runs.iter().map(|r| scenario(r, "vus_allocated")).collect();
    assert_eq!(vus, [2, 1, 1]);
    let started: Vec<u64> = runs.iter().map(|r| scenario(r, "started")).collect();
    assert_eq!(started.iter().sum::<u64>(), 50, "{started:?}");
    assert_eq!(started, [25, 13, 12]);
    assert_eq!(served_adds_up(&runs, served), 50);
    // The numbers are exactly those of one run: 0 to 49.
    assert_eq!(iteration_numbers(&runs), (0..50).collect());
    assert_eq!(vu_numbers(&runs), (1..=4).collect());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_vu_iterations_split_the_vus() {
    let (runs, served) = thirds(
        r#"
        [scenarios.s]
        executor = "per-vu-iterations"
        vus = 5
        iterations = 4
        "#,
    )
    .await;
    let vus: Vec<u64> = runs.iter().map(|r| scenario(r, "vus_allocated")).collect();
    assert_eq!(vus.iter().sum::<u64>(), 5, "{vus:?}");
    assert_eq!(vus, [2, 2, 1]);
    for (run, vus) in runs.iter().zip(&vus) {
        assert_eq!(scenario(run, "completed"), vus * 4);
    }
    assert_eq!(served_adds_up(&runs, served), 20);
    assert_eq!(iteration_numbers(&runs).len(), 20);
    assert_eq!(vu_numbers(&runs), (1..=5).collect());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn constant_vus_split_the_vus() {
    // 5 ms an answer: at most 7 VUs × 1 s ÷ 5 ms = 1,400 iterations in all.
    let (runs, served) = thirds_at(
        r#"
        [scenarios.s]
        executor = "constant-vus"
        vus = 7
        duration = "1s"
        "#,
        Duration::from_millis(5),
    )
    .await;
    let vus: Vec<u64> = runs.iter().map(|r| scenario(r, "vus_allocated")).collect();
    assert_eq!(vus, [3, 2, 2]);
    assert_eq!(vu_numbers(&runs), (1..=7).collect());
    let iterations = iteration_numbers(&runs);
    assert!(iterations.len() > 7, "{} iterations", iterations.len());
    served_adds_up(&runs, served);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ramping_vus_follow_their_share_of_the_stages() {
    // 5 ms an answer: at most 8 VUs × 2 s ÷ 5 ms = 3,200 iterations in all.
    let (runs, served) = thirds_at(
        r#"
        [scenarios.s]
        executor = "ramping-vus"
        start_vus = 1
        stages = [{ duration = "500ms", target = 8 }, { duration = "1s", target = 8 }, { duration = "500ms", target = 2 }]
        "#,
        Duration::from_millis(5),
    )
    .await;
    let vus: Vec<u64> = runs.iter().map(|r| scenario(r, "vus_allocated")).collect();
    assert_eq!(vus.iter().sum::<u64>(), 8, "{vus:?}");
    // Each stage's target is split, so the shares add up to the whole's.
    for stage in 0..3 {
        let targets: Vec<u64> = runs
            .iter()
            .map(|r| {
                r["scenarios"]["s"]["stages"][stage]["target"]
                    .as_u64()
                    .unwrap()
            })
            .collect();
        let whole = [8, 8, 2][stage];
        assert_eq!(
            targets.iter().sum::<u64>(),
            whole,
            "stage {stage}: {targets:?}"
        );
    }
    // On the plateau every segment ran its share of the 8 VUs at once.
    let peaks: u64 = runs
        .iter()
        .map(|r| r["scenarios"]["s"]["stages"][1]["peak"].as_u64().unwrap())
        .sum();
    assert_eq!(peaks, 8);
    assert_eq!(vu_numbers(&runs), (1..=8).collect());
    iteration_numbers(&runs);
    served_adds_up(&runs, served);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn constant_arrival_rate_segments_start_the_whole_rate() {
    // 100/s for 3 s: 300 iterations in all, ± 1 per segment.
    let (runs, served) = thirds(
        r#"
        [scenarios.s]
        executor = "constant-arrival-rate"
        rate = 100
        duration = "3s"
        pre_allocated_vus = 30
        "#,
    )
    .await;
    let started: Vec<u64> = runs.iter().map(|r| scenario(r, "started")).collect();
    let dropped: u64 = runs.iter().map(|r| scenario(r, "dropped")).sum();
    assert_eq!(dropped, 0, "no VU ran short");
    let total: u64 = started.iter().sum();
    assert!((297..=303).contains(&total), "{started:?}");
    // Each started about its third (the VUs split 10 + 10 + 10: a third of a second of
    // iterations each, so a loaded machine's slow iteration does not drop the next;
    // 3 each dropped 8 of 300 at a load average of 15).
    for s in &started {
        assert!((99..=101).contains(s), "{started:?}");
    }
    assert_eq!(served_adds_up(&runs, served), total);
    let vus: Vec<u64> = runs.iter().map(|r| scenario(r, "vus_allocated")).collect();
    assert_eq!(vus, [10, 10, 10]);
    // Interleaved, not in blocks: the numbers are one run's, 0 to 299.
    let numbers = iteration_numbers(&runs);
    assert_eq!(numbers.len() as u64, total);
    assert!(numbers.iter().all(|n| *n < 300), "{numbers:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ramping_arrival_rate_segments_start_the_whole_schedule() {
    // 0 → 60/s over 2 s, then 60/s for 1 s: 60 + 60 = 120 iterations.
    let (runs, served) = thirds(
        r#"
        [scenarios.s]
        executor = "ramping-arrival-rate"
        start_rate = 0
        pre_allocated_vus = 12
        stages = [{ duration = "2s", target = 60 }, { duration = "1s", target = 60 }]
        "#,
    )
    .await;
    let started: Vec<u64> = runs.iter().map(|r| scenario(r, "started")).collect();
    let total: u64 = started.iter().sum();
    assert!((117..=123).contains(&total), "{started:?}");
    assert_eq!(runs.iter().map(|r| scenario(r, "dropped")).sum::<u64>(), 0);
    assert_eq!(served_adds_up(&runs, served), total);
    let numbers = iteration_numbers(&runs);
    assert!(numbers.iter().all(|n| *n < 120), "{numbers:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_segment_outside_the_sequence_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let config = common::write_config(
        dir.path(),
        "[scenarios.s]\nexecutor = \"per-vu-iterations\"\nvus = 1\niterations = 1\n",
    );
    let request = |segment: &str, sequence: &str| RunRequest {
        plugin: common::plugin("misbehave"),
        config: Some(config.clone()),
        overrides: Overrides {
            execution_segment: Some(segment.into()),
            execution_segment_sequence: Some(sequence.into()),
            ..Default::default()
        },
        out: dir.path().join("results"),
        quiet: true,
        handle_signals: false,
        ..RunRequest::default()
    };
    for (segment, sequence, says) in [
        ("1/4:2/3", SEQUENCE, "not one of the sequence's segments"),
        ("0:1/2", "0,1/2,1/3,1", "overlapping"),
        ("0:3/2", SEQUENCE, "more than 1"),
        ("half", SEQUENCE, "not a fraction"),
    ] {
        let Err(err) = host::run(request(segment, sequence)).await else {
            panic!("{segment} in {sequence} was not refused");
        };
        let text = format!("{err:#}");
        assert!(text.contains("--execution-segment"), "{text}");
        assert!(text.contains(says), "{segment} in {sequence}: {text}");
    }
}
