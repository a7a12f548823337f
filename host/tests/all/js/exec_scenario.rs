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
