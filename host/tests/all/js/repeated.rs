//! Repeated requests: the layer finds a request it sent before by comparing the
//! call's URL, method and params with what it was made from, and sends the prepared
//! request again. These tests send one URL with other tags, header fields and VU tags
//! per call, and past the number of variants the layer compares in place, and count
//! what the server received and what the metrics were tagged with.

use super::scripts::{recording_server, run_script};
use crate::support as common;
use common::output_text as text;

/// One URL, fifteen calls per iteration that differ by tags, header fields and the
/// VU's tags (set from the fourth iteration on): each call reaches the server with its
/// own header fields, and each sample carries its own tags.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_to_one_url_keep_their_own_tags_and_header_fields() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(
        tmp.path().join("same.js"),
        r#"import http from 'k6/http';
import { check } from 'k6';
import exec from 'k6/execution';
export const options = {
  vus: 1, iterations: 6,
  thresholds: {
    'http_reqs{name:a}': ['count==6'],
    'http_reqs{name:b}': ['count==6'],
    'http_reqs{phase:late}': ['count==45'],
    'checks{phase:late}': ['rate==1'],
  },
};
export default function () {
  if (__ITER === 3) exec.vu.tags.phase = 'late';
  const u = `${__ENV.BASE_URL}/same`;
  http.get(u, { tags: { name: 'a' } });
  http.get(u, { tags: { name: 'b' }, headers: { 'X-Seq': 'b' } });
  http.get(u, { headers: { 'X-Seq': __ITER % 2 === 0 ? 'even' : 'odd' } });
  // Twelve variants of one URL: more than the layer compares in place.
  for (let k = 0; k < 12; k++) http.get(u, { headers: { 'X-N': `n${k}` } });
  check(exec.vu.tags.phase, { 'the VU tag as set': (p) => p === (__ITER >= 3 ? 'late' : undefined) });
}
"#,
    )
    .unwrap();
    let (base, seen) = recording_server().await;
    let (ran, out) = run_script(tmp.path(), "same.js", &base, &[]).await;
    assert!(ran.status.success(), "{}", text(&ran));
    let heads: Vec<String> = seen
        .lock()
        .unwrap()
        .iter()
        .map(|r| String::from_utf8_lossy(r).to_ascii_lowercase())
        .collect();
    assert_eq!(heads.len(), 90, "6 iterations of 15 requests");
    let count = |field: &str| heads.iter().filter(|h| h.contains(field)).count();
    assert_eq!(count("x-seq: b\r\n"), 6);
    assert_eq!(count("x-seq: even\r\n"), 3);
    assert_eq!(count("x-seq: odd\r\n"), 3);
    for k in 0..12 {
        assert_eq!(count(&format!("x-n: n{k}\r\n")), 6, "x-n: n{k}");
    }
    let summary = common::summary_json(&common::only_results_dir(&out));
    let thresholds = summary["thresholds"].as_array().unwrap();
    assert_eq!(thresholds.len(), 4, "{thresholds:?}");
    assert!(thresholds.iter().all(|t| t["ok"] == true), "{thresholds:?}");
    let c = summary["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "the VU tag as set")
        .expect("the check ran");
    assert_eq!(
        (c["passes"].as_u64(), c["fails"].as_u64()),
        (Some(6), Some(0)),
        "{c}"
    );
}
