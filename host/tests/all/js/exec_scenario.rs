//! `exec.scenario.executor`, and `-s 1s:1` on a script whose top-level `vus` is 2,
//! side by side with k6 1.1.0: k6 starts the ramping-vus scenario the stage makes with
//! the script's 2 VUs and ramps down to 1 over the second, so both VUs run; so here.

use crate::support as common;

use common::k6::k6_in;
use common::{host_in as host, output_text as text};
use std::collections::{BTreeMap, BTreeSet};

const SCRIPT: &str = r#"import exec from 'k6/execution';
import { sleep } from 'k6';
export const options = { vus: 2 };
export function setup() {
  try { exec.scenario.executor; } catch (e) { console.log(`SETUP ${String(e.message).split(' ')[0]}`); }
}
export default function () {
  console.log(`EXEC ${exec.scenario.executor} ${exec.scenario.name} VU ${exec.vu.idInTest}`);
  sleep(0.3);
}
"#;

/// The `EXEC ...` lines' (executor and scenario, iterations by VU id), and the SETUP
/// line's first word.
type Seen = (BTreeSet<String>, BTreeMap<String, usize>, Vec<String>);

fn seen(stderr: &[u8]) -> Seen {
    let (mut what, mut vus, mut setup) = (BTreeSet::new(), BTreeMap::new(), Vec::new());
    for line in String::from_utf8_lossy(stderr).lines() {
        if let Some(at) = line.find("EXEC ") {
            let words: Vec<&str> = line[at..].split_whitespace().collect();
            what.insert(format!("{} {}", words[1], words[2]));
            *vus.entry(words[4].trim_end_matches('"').to_string())
                .or_insert(0) += 1;
        }
        if let Some(at) = line.find("SETUP ") {
            setup.push(
                line[at + 6..]
                    .split(['"', ' '])
                    .next()
                    .unwrap_or("")
                    .to_string(),
            );
        }
    }
    (what, vus, setup)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stage_flag_starts_the_script_s_vus_and_names_the_executor_as_k6() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("s.js"), SCRIPT).unwrap();
    let h = host(dir.path(), ["run", "s.js", "-q", "-s", "1s:1"]).await;
    assert!(h.status.success(), "{}", text(&h));
    let k = k6_in(
        dir.path(),
        vec!["s.js".into(), "-q".into(), "-s".into(), "1s:1".into()],
    )
    .await;
    assert!(k.status.success(), "{}", text(&k));
    let (hw, hv, hs) = seen(&h.stderr);
    let (kw, kv, ks) = seen(&k.stderr);
    assert_eq!(
        kw,
        BTreeSet::from(["ramping-vus default".to_string()]),
        "{}",
        text(&k)
    );
    assert_eq!(kv.len(), 2, "k6 runs both VUs: {}", text(&k));
    assert_eq!(hw, kw, "{}", text(&h));
    // Both VUs loop the whole second (0.3 s iterations: 4 each in k6), none dropped
    // as soon as the ramp to 1 begins.
    for (name, by_vu, out) in [("k6", &kv, &k), ("host", &hv, &h)] {
        assert!(
            by_vu.values().all(|&n| n >= 3),
            "{name}: {by_vu:?}: {}",
            text(out)
        );
    }
    assert_eq!(
        hv.keys().collect::<Vec<_>>(),
        kv.keys().collect::<Vec<_>>(),
        "{}",
        text(&h)
    );
    // setup runs outside any scenario: k6 throws ("getting scenario information ...").
    assert_eq!(ks, vec!["getting".to_string()], "{}", text(&k));
    assert_eq!(hs, ks, "{}", text(&h));
}

/// Two scenarios (2 VUs for 2 s; 1 VU sharing 4 iterations from 1 s on) printing
/// `exec.scenario.startTime/progress`, `exec.instance.*` and `exec.test.options`, and
/// what setup and teardown get (k6 1.1.0: scenario fields throw in both; instance
/// fields work in setup and throw in teardown).
const LIVE: &str = r#"import exec from 'k6/execution';
import { sleep } from 'k6';
export const options = {
  scenarios: {
    a: { executor: 'constant-vus', vus: 2, duration: '2s' },
    b: { executor: 'shared-iterations', vus: 1, iterations: 4, startTime: '1s', maxDuration: '5s' },
  },
};
function tries(f) { try { f(); return 'ok'; } catch (e) { return String(e.message).split(' ').slice(0, 2).join('_'); } }
function inst() { const i = exec.instance; return `${i.iterationsCompleted} ${i.iterationsInterrupted} ${i.vusActive} ${i.vusInitialized} ${i.currentTestRunDuration}`; }
// vu.metrics.tags are vu.tags: a tag set through one reads in the other (k6 wraps them
// anew on each read, so `===` is false there).
function tagged() { exec.vu.metrics.tags.via = 'metrics'; return exec.vu.tags.via === 'metrics'; }
export function setup() {
  const o = exec.test.options;
  console.log(`SETUP ${tries(() => exec.scenario.startTime)} ${tries(() => exec.scenario.progress)} ${tries(inst)} ${Object.keys(o.scenarios).join(',')}`);
}
export default function () {
  const o = exec.test.options;
  const frozen = tries(() => { o.scenarios.a.vus = 9; }) !== 'ok' && o.scenarios.a.vus === 2 && Object.isFrozen(o);
  console.log(`LIVE ${exec.scenario.name} ${exec.vu.idInTest} ${exec.scenario.startTime} ${exec.scenario.progress} ${inst()} ${frozen} ${tagged()} ${typeof exec.vu.metrics.metadata}`);
  sleep(0.4);
}
export function teardown() {
  console.log(`TEARDOWN ${tries(() => exec.scenario.startTime)} ${tries(() => exec.scenario.progress)} ${tries(inst)}`);
}
"#;

/// One `LIVE` line: scenario, VU, startTime, progress, completed, interrupted, VUs
/// active, VUs initialised, test run duration (ms), options frozen, whether a tag set
/// in `vu.metrics.tags` reads in `vu.tags`, metadata's type.
#[derive(Debug)]
struct Live {
    scenario: String,
    vu: String,
    start: f64,
    progress: f64,
    completed: u64,
    active: u64,
    initialized: u64,
    duration: f64,
    frozen: bool,
    tagged: bool,
    metadata: String,
}

/// The `LIVE` lines and the `SETUP`/`TEARDOWN` lines' words.
fn live(stderr: &[u8]) -> (Vec<Live>, Vec<String>, Vec<String>) {
    let (mut lines, mut setup, mut teardown) = (Vec::new(), Vec::new(), Vec::new());
    for line in String::from_utf8_lossy(stderr).lines() {
        let words = |tag: &str| {
            line.find(tag).map(|at| {
                line[at + tag.len()..]
                    .split('"')
                    .next()
                    .unwrap_or("")
                    .split_whitespace()
                    .map(str::to_string)
                    .collect::<Vec<_>>()
            })
        };
        if let Some(w) = words("LIVE ") {
            let n = |i: usize| w[i].parse::<f64>().unwrap_or(f64::NAN);
            lines.push(Live {
                scenario: w[0].clone(),
                vu: w[1].clone(),
                start: n(2),
                progress: n(3),
                completed: w[4].parse().unwrap(),
                active: w[6].parse().unwrap(),
                initialized: w[7].parse().unwrap(),
                duration: n(8),
                frozen: w[9] == "true",
                tagged: w[10] == "true",
                metadata: w[11].clone(),
            });
        }
        if let Some(w) = words("SETUP ") {
            setup = w;
        }
        if let Some(w) = words("TEARDOWN ") {
            teardown = w;
        }
    }
    (lines, setup, teardown)
}

fn unix_ms() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
        * 1000.0
}

/// Checks one run's lines (host or k6) against the script's schedule, run between
/// `before` and `after` (Unix ms).
fn check_live(name: &str, lines: &[Live], before: f64, after: f64, out: &str) {
    let of = |s: &str| lines.iter().filter(|l| l.scenario == s).collect::<Vec<_>>();
    let (a, b) = (of("a"), of("b"));
    // 2 VUs for 2 s of 0.4 s iterations; all 4 shared iterations.
    assert!(a.len() >= 8, "{name}: {a:?}\n{out}");
    assert_eq!(b.len(), 4, "{name}: {b:?}\n{out}");
    let (sa, sb) = (a[0].start, b[0].start);
    assert!(a.iter().all(|l| l.start == sa) && b.iter().all(|l| l.start == sb));
    assert!(
        before <= sa && sb <= after,
        "{name}: {sa} {sb} not in {before}..{after}"
    );
    // b starts 1 s after a (its startTime): to the millisecond in the host, whose
    // startTime is the schedule's; k6's is when the scenario did start (up to ~5 ms
    // later when loaded).
    assert!((999.0..=1050.0).contains(&(sb - sa)), "{name}: {sa} {sb}");
    for l in lines {
        assert!((0.0..=1.0).contains(&l.progress), "{name}: {l:?}");
        // a's 2 VUs and b's 1 are made before the start.
        assert_eq!(l.initialized, 3, "{name}: {l:?}");
        assert!(l.active >= 1 && l.active <= 3, "{name}: {l:?}");
        assert!(l.frozen, "{name}: options can be changed: {l:?}");
        assert!(l.tagged, "{name}: {l:?}");
        assert_eq!(l.metadata, "object", "{name}: {l:?}");
    }
    // Before b starts, a's 2 VUs alone are active (once both have started: the host
    // counts a VU as its loop begins, so the first iteration may see 1).
    for l in a.iter().filter(|l| (100.0..900.0).contains(&l.duration)) {
        assert_eq!(l.active, 2, "{name}: {l:?}");
    }
    // Iterations done over 4: b's iterations read 0, 0.25, 0.5, 0.75 as they start.
    let bp: Vec<f64> = b.iter().map(|l| l.progress).collect();
    assert_eq!(bp, [0.0, 0.25, 0.5, 0.75], "{name}\n{out}");
    // Per VU, in its own order: progress, iterations completed and the run's duration
    // grow.
    let vus: BTreeSet<&str> = lines.iter().map(|l| l.vu.as_str()).collect();
    for vu in vus {
        let mine: Vec<&Live> = lines.iter().filter(|l| l.vu == vu).collect();
        for w in mine.windows(2) {
            assert!(w[1].duration > w[0].duration + 300.0, "{name}: {w:?}");
            assert!(w[1].completed > w[0].completed, "{name}: {w:?}");
            assert!(w[1].progress >= w[0].progress, "{name}: {w:?}");
        }
    }
    let last_a = a.iter().map(|l| l.progress).fold(0.0, f64::max);
    assert!(a[0].progress < 0.1 && last_a > 0.7, "{name}: {a:?}");
    assert!(
        lines.iter().all(|l| l.duration < after - before),
        "{name}\n{out}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scenario_times_progress_instance_numbers_and_options_read_as_k6() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("s.js"), LIVE).unwrap();
    let before = unix_ms();
    let h = host(dir.path(), ["run", "s.js", "-q"]).await;
    let after = unix_ms();
    assert!(h.status.success(), "{}", text(&h));
    let (hl, hs, ht) = live(&h.stderr);
    check_live("host", &hl, before, after, &text(&h));

    let before = unix_ms();
    let k = k6_in(dir.path(), vec!["s.js".into(), "-q".into()]).await;
    let after = unix_ms();
    assert!(k.status.success(), "{}", text(&k));
    let (kl, ks, kt) = live(&k.stderr);
    check_live("k6", &kl, before, after, &text(&k));

    // setup: scenario fields throw k6's "getting scenario ..."; instance fields are
    // read; the options carry both scenarios. teardown: instance fields throw too.
    assert_eq!(
        ks,
        ["getting_scenario", "getting_scenario", "ok", "a,b"],
        "{}",
        text(&k)
    );
    assert_eq!(hs, ks, "{}", text(&h));
    assert_eq!(
        kt,
        ["getting_scenario", "getting_scenario", "getting_instance"],
        "{}",
        text(&k)
    );
    assert_eq!(ht, kt, "{}", text(&h));
}
