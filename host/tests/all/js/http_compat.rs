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
                // A request's body: `/echo` answers its bytes in hex.
                let length: usize = head
                    .lines()
                    .find_map(|l| {
                        let (k, v) = l.split_once(':')?;
                        k.eq_ignore_ascii_case("content-length").then(|| v.trim().parse().ok())?
                    })
                    .unwrap_or(0);
                if buf.len() < end + 4 + length {
                    break;
                }
                let sent: Vec<u8> = buf[end + 4..end + 4 + length].to_vec();
                buf.drain(..end + 4 + length);
                let path = head.split_whitespace().nth(1).unwrap_or("/").to_owned();
                let (body, coding) = if path == "/echo" {
                    let hex: String = sent.iter().map(|b| format!("{b:02x}")).collect();
                    let j = serde_json::json!({ "hex": hex, "n": [1, 2, 3], "o": { "k": "v" } });
                    (j.to_string().into_bytes(), "identity")
                } else if path == "/auth" {
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

const BODIES: &str = r#"import http from 'k6/http';
import { check } from 'k6';

export const options = { vus: 1, iterations: 2 };
const BASE = __ENV.BASE_URL;
const sent = (body, params) => http.post(`${BASE}echo`, body, params);

export default function () {
  const text = 'h\u00e9llo \u2713 \ud83d\ude00';
  const r = sent(text, { headers: { 'Content-Type': 'text/plain' }, tags: { name: 'echo' } });
  check(r, {
    'a text body goes as its UTF-8': (x) => x.json('hex') === '68c3a96c6c6f20e29c9320f09f9880',
    'request.body is the text sent': (x) => x.request.body === text,
    'json(name) of a field': (x) => x.json('o').k === 'v' && x.json('hex').length === 30,
    'json(path) through an object': (x) => x.json('o.k') === 'v',
    'json(path) into an array and #': (x) => x.json('n.1') === 2 && x.json('n.#') === 3,
    'json of a missing name or path is undefined': (x) => x.json('none') === undefined && x.json('none.k') === undefined && x.json('#') === undefined,
  });
  check(null, {
    'ASCII, empty and a number as text': () => sent('abc').json('hex') === '616263' && sent('').json('hex') === '' && sent(42).json('hex') === '3432',
    'an empty body reads as empty in request.body': () => sent('').request.body === '',
    'an object goes form-encoded': () => sent({ a: '\u00e9 b', c: 'x' }).json('hex') === '613d2543332541392532306226633d78',
    // The layer's own encoder sent a lone surrogate as its three bytes (k6 sends U+FFFD).
    'a lone surrogate goes as its three bytes': () => sent('\ud800x').json('hex') === 'eda08078',
    'bytes go as they are': () => sent(new Uint8Array([0, 255, 7]).buffer).json('hex') === '00ff07',
  });
}
"#;

/// Request bodies reach the server as the bytes k6 sends (text as UTF-8, a form
/// encoded, bytes as they are), `request.body` reads the text sent, and `json()` with a
/// selector of one name, of a path and with `#` reads what k6's selectors read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_bodies_and_json_selectors() {
    every_check_passes("bodies.js", BODIES, 11, 2).await;
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
    every_check_passes("compat.js", SCRIPT, 11, 1).await;
}

/// Runs `source` as `name` against the test server: the run exits 0 with `checks`
/// checks, each passed `passes` times and never failed.
async fn every_check_passes(name: &str, source: &str, checks: usize, passes: u64) {
    let base = server().await;
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join(name), source).unwrap();
    let (ran, out) = run_script(tmp.path(), name, &base, &[]).await;
    let shown = text(&ran);
    assert_eq!(ran.status.code(), Some(0), "{shown}");
    let summary = common::summary_json(&common::only_results_dir(&out));
    let found = summary["checks"].as_array().unwrap();
    assert_eq!(found.len(), checks, "{}\n{shown}", summary["checks"]);
    for c in found {
        assert_eq!(
            (c["passes"].as_u64(), c["fails"].as_u64()),
            (Some(passes), Some(0)),
            "{c}\n{shown}"
        );
    }
}
