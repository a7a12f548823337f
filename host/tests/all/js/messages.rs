//! WebSocket messages through the k6 layer's own imports (`k6-layer/sockets.recv-text`,
//! `k6-layer/samples`): every push the target sends is handed to the script once, a
//! counter added per message counts exactly that many with its group's tag, and a timer
//! due while messages are waiting still runs between them; texts shorter and longer than
//! the runtime's scratch buffer arrive whole.

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

/// The sizes of the texts the sized test's server sends, in characters: empty, short,
/// around the runtime's 1,024-byte scratch buffer (plugins/js-runtime/src/scratch.rs,
/// where a message's text is lowered when it fits) on both sides, and far past it.
const SIZES: [usize; 12] = [0, 1, 190, 1023, 1024, 1025, 4096, 190, 70000, 3, 1024, 190];

/// The characters the texts are made of, two of them two or three bytes long in UTF-8
/// (so byte and character lengths differ); the script has the same string.
const ALPHABET: &str = "abcdefghijklmnopqrstuvwxyzé€";

/// Text `i` of [`SIZES`]: character `j` is `ALPHABET[(7 i + j) % 28]`.
fn sized_text(i: usize) -> String {
    let chars: Vec<char> = ALPHABET.chars().collect();
    (0..SIZES[i])
        .map(|j| chars[(i * 7 + j) % chars.len()])
        .collect()
}

/// Runs `script` in `dir` against a [`texts_server`] sending `texts` (its URL in
/// `WS_URL`); the run must succeed. Its summary.
async fn run_with_texts(
    dir: &std::path::Path,
    script: &str,
    texts: Vec<String>,
) -> serde_json::Value {
    let url = texts_server(texts).await;
    let ws_url = format!("WS_URL={url}");
    let (ran, out) = run_script(dir, script, "http://127.0.0.1:9", &["-e", &ws_url]).await;
    assert!(ran.status.success(), "{}", text(&ran));
    common::summary_json(&common::only_results_dir(&out))
}

/// A WebSocket server on 127.0.0.1 that sends every client `texts` at once, then reads
/// until the client closes. Returns its `ws://` URL.
async fn texts_server(texts: Vec<String>) -> String {
    use futures::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::Message;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("ws://{}/", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let texts = texts.clone();
            tokio::spawn(async move {
                let Ok(mut ws) = tokio_tungstenite::accept_async(tcp).await else {
                    return;
                };
                for t in &texts {
                    if ws.send(Message::text(t.clone())).await.is_err() {
                        return;
                    }
                }
                while let Some(Ok(_)) = ws.next().await {}
            });
        }
    });
    url
}

/// Texts shorter and longer than the runtime's scratch buffer, back to back and queued
/// before the script reads them: each reaches the 'message' handler whole, and the
/// strings a handler kept still hold their own texts after the later ones arrived (a
/// JavaScript string is a copy, not a view of the buffer the next text is lowered into).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn texts_around_the_scratch_buffers_size_arrive_whole_and_stay_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let sizes = SIZES.map(|n| n.to_string()).join(", ");
    std::fs::write(
        tmp.path().join("sized.js"),
        format!(
            r#"import ws from 'k6/ws';
import {{ Counter }} from 'k6/metrics';

const SIZES = [{sizes}];
const ALPHABET = '{ALPHABET}';
const same = new Counter('same');
const kept = new Counter('kept');
export const options = {{
  scenarios: {{ s: {{ executor: 'per-vu-iterations', vus: 2, iterations: 2 }} }},
}};

function expected(i) {{
  let s = '';
  for (let j = 0; j < SIZES[i]; j++) s += ALPHABET[(i * 7 + j) % ALPHABET.length];
  return s;
}}

export default function () {{
  const got = [];
  ws.connect(__ENV.WS_URL, {{}}, (socket) => {{
    socket.on('message', (text) => {{
      if (text === expected(got.length)) same.add(1);
      got.push(text);
      if (got.length === SIZES.length) {{
        for (let i = 0; i < got.length; i++) if (got[i] === expected(i)) kept.add(1);
        socket.close();
      }}
    }});
    socket.setTimeout(() => socket.close(), 20000);
  }});
}}
"#
        ),
    )
    .unwrap();
    let texts = (0..SIZES.len()).map(sized_text).collect();
    let m = &run_with_texts(tmp.path(), "sized.js", texts).await["metrics"];
    // 4 iterations × 12 texts.
    let all = (4 * SIZES.len()) as f64;
    assert_eq!(m["ws_msgs_received"]["count"].as_f64(), Some(all), "{m}");
    assert_eq!(m["same"]["count"].as_f64(), Some(all), "{m}");
    assert_eq!(m["kept"]["count"].as_f64(), Some(all), "{m}");
}

/// The lengths of [`ascii_text`]s: below, at and past the 256 bytes the runtime's kept
/// message string is first made with room for, past its 4,096-byte keep limit, and
/// shorter again after each.
const ASCII_SIZES: [usize; 16] = [
    10, 300, 5, 256, 257, 0, 100, 4096, 4097, 50, 1, 700, 20, 20, 3000, 7,
];

/// ASCII text `i`: its number, then letters, to [`ASCII_SIZES`]`[i]` bytes.
fn ascii_text(i: usize) -> String {
    let mut s = format!("{i}:");
    let letters = b"abcdefghijklmnopqrstuvwxyz";
    while s.len() < ASCII_SIZES[i] {
        s.push(letters[(s.len() * 3 + i) % 26] as char);
    }
    s.truncate(ASCII_SIZES[i]);
    s
}

/// ASCII texts of varied lengths, handled in five ways in turn: dropped, or kept as a
/// slice of the text, as an object's key, inside a concatenation, or as the text itself.
/// Every kept form still holds its own message's text after the later messages arrived
/// (the runtime rewrites the last message's string in place only when nothing holds
/// it: plugins/js-runtime/c/fast.c), and each text reached its handler whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn message_strings_kept_in_any_form_keep_their_text() {
    let tmp = tempfile::tempdir().unwrap();
    let texts: Vec<String> = (0..ASCII_SIZES.len()).map(ascii_text).collect();
    let expected = serde_json::to_string(&texts).unwrap();
    std::fs::write(
        tmp.path().join("kept.js"),
        format!(
            r#"import ws from 'k6/ws';
import {{ Counter }} from 'k6/metrics';

const TEXTS = {expected};
const same = new Counter('same');
const kept = new Counter('kept');
export const options = {{
  scenarios: {{ s: {{ executor: 'per-vu-iterations', vus: 2, iterations: 2 }} }},
}};

export default function () {{
  const held = [];
  let n = 0;
  ws.connect(__ENV.WS_URL, {{}}, (socket) => {{
    socket.on('message', (text) => {{
      const i = n++;
      if (text === TEXTS[i]) same.add(1);
      switch (i % 5) {{
        case 0: break;
        case 1: held.push([i, 'slice', text.slice(1)]); break;
        case 2: {{ const o = {{}}; o[text] = i; held.push([i, 'key', o]); break; }}
        case 3: held.push([i, 'concat', '<' + text + '>']); break;
        default: held.push([i, 'text', text]);
      }}
      if (n === TEXTS.length) {{
        for (const [j, how, v] of held) {{
          const t = TEXTS[j];
          const ok = how === 'slice' ? v === t.slice(1)
            : how === 'key' ? Object.keys(v).length === 1 && v[t] === j
            : how === 'concat' ? v === '<' + t + '>'
            : v === t;
          if (ok) kept.add(1);
        }}
        socket.close();
      }}
    }});
    socket.setTimeout(() => socket.close(), 20000);
  }});
}}
"#
        ),
    )
    .unwrap();
    let m = &run_with_texts(tmp.path(), "kept.js", texts.clone()).await["metrics"];
    // 4 iterations; of each iteration's 16 texts, the 12 with i % 5 != 0 are kept.
    let all = (4 * texts.len()) as f64;
    let held = (4 * (0..texts.len()).filter(|i| i % 5 != 0).count()) as f64;
    assert_eq!(m["ws_msgs_received"]["count"].as_f64(), Some(all), "{m}");
    assert_eq!(m["same"]["count"].as_f64(), Some(all), "{m}");
    assert_eq!(m["kept"]["count"].as_f64(), Some(held), "{m}");
}
