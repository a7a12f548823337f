//! k6/http as k6 1.1.0 behaves where this host differed: a body sent gzip-, deflate-,
//! brotli- or zstd-encoded reads decoded in `res.body` and `res.json()` (k6 1.1.0 passes
//! the same 8 checks against a server sending the same bytes); credentials in the URL
//! go as basic auth (k6 sends `Basic dXNAZXI6cDpzcw==` for `us%40er:p%3Ass@`); a
//! cookie set for a domain the URL is not in is dropped without an exception.

use crate::support as common;

use super::scripts::run_script;
use common::output_text as text;
use std::io::Write;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const JSON: &[u8] = br#"{"ok":true,"n":[1,2,3]}"#;

/// The body of `path` and its Content-Encoding.
fn encoded(path: &str) -> (Vec<u8>, &'static str) {
    match path {
        "/gzip" => {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            e.write_all(JSON).unwrap();
            (e.finish().unwrap(), "gzip")
        }
        "/deflate" => {
            let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
            e.write_all(JSON).unwrap();
            (e.finish().unwrap(), "deflate")
        }
        // Made by the brotli and zstd command-line tools (host/src/net/testdata).
        "/br" => (
            include_bytes!("../../../src/net/testdata/body.json.br").to_vec(),
            "br",
        ),
        "/zstd" => (
            include_bytes!("../../../src/net/testdata/body.json.zst").to_vec(),
            "zstd",
        ),
        _ => (JSON.to_vec(), "identity"),
    }
}

/// A server that answers each request with `encoded(path)`, or at `/auth` with the
/// request's Authorization field as JSON.
async fn server() -> String {
    common::servers::raw_server(|mut stream| async move {
        let mut buf = Vec::new();
        let mut chunk = [0u8; 2048];
        loop {
            while let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&buf[..end]).into_owned();
                buf.drain(..end + 4);
                let path = head.split_whitespace().nth(1).unwrap_or("/").to_owned();
                let (body, coding) = if path == "/auth" {
                    let auth = head
                        .lines()
                        .find_map(|l| l.strip_prefix("authorization: ").or_else(|| l.strip_prefix("Authorization: ")))
                        .unwrap_or("");
                    (serde_json::json!({ "authorization": auth }).to_string().into_bytes(), "identity")
                } else {
                    encoded(&path)
                };
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-encoding: {coding}\r\ncontent-length: {}\r\n\r\n",
                    body.len()
                );
                if stream.write_all(head.as_bytes()).await.is_err() || stream.write_all(&body).await.is_err() {
                    return;
                }
            }
            match stream.read(&mut chunk).await {
                Ok(n) if n > 0 => buf.extend_from_slice(&chunk[..n]),
                _ => return,
            }
        }
    })
    .await
}

const SCRIPT: &str = r#"import http from 'k6/http';
import { check } from 'k6';

export const options = { vus: 1, iterations: 1 };
const BASE = __ENV.BASE_URL;

export default function () {
  for (const e of ['gzip', 'deflate', 'br', 'zstd']) {
    const r = http.get(`${BASE}${e}`, { headers: { 'Accept-Encoding': e } });
    const j = r.json();
    check(r, {
      [`${e}: json() decodes`]: () => j.n.length === 3,
      [`${e}: body after json()`]: () => JSON.parse(r.body).ok === true && r.headers['Content-Encoding'] === e,
    });
  }
  const a = http.get(BASE.replace('http://', 'http://us%40er:p%3Ass@') + 'auth');
  check(a, {
    'URL credentials go as basic auth': (r) => r.json().authorization === 'Basic dXNAZXI6cDpzcw==',
    'the URL goes on without them': (r) => !r.url.includes('@'),
  });
  const jar = http.cookieJar();
  jar.set(BASE, 'elsewhere', '1', { domain: 'example.com' });
  jar.set(BASE, 'here', '2');
  const c = jar.cookiesForURL(BASE);
  check(c, { 'a cookie for another domain is dropped, one for this URL kept': (c) => !c.elsewhere && c.here[0] === '2' });
}
"#;

/// The checks k6 1.1.0 passes (the 8 of the encodings and the basic auth's header,
/// measured against the same bytes) pass here.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn encoded_bodies_url_credentials_and_foreign_cookies_as_k6() {
    let base = server().await;
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("compat.js"), SCRIPT).unwrap();
    let (ran, out) = run_script(tmp.path(), "compat.js", &base, &[]).await;
    let shown = text(&ran);
    assert_eq!(ran.status.code(), Some(0), "{shown}");
    let summary = common::summary_json(&common::only_results_dir(&out));
    let checks = summary["checks"].as_array().unwrap();
    assert_eq!(checks.len(), 11, "{}\n{shown}", summary["checks"]);
    for c in checks {
        assert_eq!(
            (c["passes"].as_u64(), c["fails"].as_u64()),
            (Some(1), Some(0)),
            "{c}\n{shown}"
        );
    }
}
