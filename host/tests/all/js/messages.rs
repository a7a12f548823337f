//! WebSocket messages through the k6 layer's own imports (`k6-layer/sockets.recv-text`,
//! `k6-layer/samples`): every push the target sends is handed to the script once, a
//! counter added per message counts exactly that many with its group's tag, and a timer
//! due while messages are waiting still runs between them.

use super::scripts::{run_script, WS_COMMON};
use crate::support as common;
use common::output_text as text;
use std::time::Duration;

/// One socket, 30 notes made while it listens (their pushes queue up on the host while
/// the script makes the next request), an interval due all along: the script counts
/// every push once, in its group, and the interval ticks between the messages.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_push_is_received_and_counted_once_with_its_tags() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("common.js"), WS_COMMON).unwrap();
    std::fs::write(
        tmp.path().join("pushes.js"),
        r#"import http from 'k6/http';
import ws from 'k6/ws';
import { group } from 'k6';
import { Counter, Trend } from 'k6/metrics';
import { BASE, WS, token } from './common.js';

const N = 30;
const pushes = new Counter('pushes');
const sizes = new Trend('push_bytes');
const ticks = new Counter('ticks');
export const options = {
  scenarios: { live: { executor: 'per-vu-iterations', vus: 2, iterations: 1 } },
  thresholds: { 'pushes{group:::live}': ['count>0'], 'push_bytes': ['count>0'] },
};

export default function () {
  const t = token();
  const g = 100 + __VU;
  let got = 0;
  ws.connect(`${WS}/ws?token=${t}`, { tags: { name: '/ws' } }, (socket) => {
    socket.on('open', () => {
      socket.send(`{"subscribe": [${g}]}`);
      socket.setInterval(() => ticks.add(1), 2);
      socket.setTimeout(() => socket.close(), 20000);
    });
    socket.on('message', (text) => {
      if (text.indexOf('"subscribed"') >= 0) {
        for (let i = 0; i < N; i++) {
          http.post(`${BASE}/groups/${g}/notes`, JSON.stringify({ title: `n${i}`, body: 'b' }),
            { headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${t}` } });
        }
        return;
      }
      if (text.indexOf('"note.') < 0) return;
      group('live', () => pushes.add(1));
      sizes.add(text.length);
      got += 1;
      if (got === N) socket.close();
    });
  });
}
"#,
    )
    .unwrap();
    let target = common::demo_target(Duration::ZERO).await;
    let (ran, out) = run_script(tmp.path(), "pushes.js", &target.base_url(), &[]).await;
    assert!(ran.status.success(), "{}", text(&ran));
    let summary = common::summary_json(&common::only_results_dir(&out));
    let m = &summary["metrics"];
    // Two sockets, 30 pushes each, plus one subscription answer each.
    assert_eq!(m["pushes"]["count"].as_f64(), Some(60.0), "{m}");
    assert_eq!(m["push_bytes"]["count"].as_f64(), Some(60.0), "{m}");
    assert_eq!(m["ws_msgs_received"]["count"].as_f64(), Some(62.0), "{m}");
    assert!(m["ticks"]["count"].as_f64() > Some(0.0), "{m}");
}
