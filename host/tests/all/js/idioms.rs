//! k6 idioms the host refused or misread (issue 50): top-level `await` in a module, a
//! webpack bundle's unspaced `export{t as default};`, `client.load([...], PROTO)` with
//! the path in a `const`, and `auth: 'digest'` against Apache's mod_auth_digest (a real
//! RFC 7616 server; k6 1.1.0's own digest client is refused by it, AH01782).

use crate::support as common;

use crate::support::grpc_server::Server;
use common::k6::k6_in;
use common::{host_in as host, output_text as text};
use std::path::Path;
use std::process::{Child, Command};

fn run_args(out: &Path, script: &str) -> Vec<String> {
    vec![
        "run".into(),
        script.into(),
        "-q".into(),
        "--out".into(),
        out.display().to_string(),
    ]
}

/// The `LINE ...` lines a run logged, in order, from either tool's stderr.
fn lines(stderr: &[u8], prefix: &str) -> Vec<String> {
    let text = String::from_utf8_lossy(stderr);
    text.lines()
        .filter_map(|l| {
            let at = l.find(prefix)?;
            // k6 writes msg="..." with its quotes escaped; the host the text as is.
            let rest = &l[at..];
            let rest = rest.split("\" source=console").next().unwrap_or(rest);
            Some(rest.replace("\\\"", "\""))
        })
        .collect()
}

/// Top-level `await` in the entry module and in a module it imports: each finishes
/// before its importer reads it, and the values are the same as in k6 1.1.0.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn top_level_await_runs_in_the_init_code_as_k6() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("lib.js"),
        "export const base = await Promise.resolve(40);\nexport async function add(n) { return (await Promise.resolve(n)) + 1; }\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("tla.js"),
        r#"import { base, add } from './lib.js';
const total = await add(base);
const later = await new Promise((resolve) => resolve(total + 1));
export const options = { iterations: 2 };
export default function () {
  console.log(`TLA ${total} ${later}`);
}
"#,
    )
    .unwrap();
    let h = host(dir.path(), run_args(&dir.path().join("results"), "tla.js")).await;
    assert!(h.status.success(), "{}", text(&h));
    let k = k6_in(dir.path(), vec!["tla.js".into(), "-q".into()]).await;
    assert!(k.status.success(), "{}", text(&k));
    assert_eq!(
        lines(&h.stderr, "TLA "),
        vec!["TLA 41 42"; 2],
        "{}",
        text(&h)
    );
    assert_eq!(lines(&h.stderr, "TLA "), lines(&k.stderr, "TLA "));

    // An await on a timer cannot finish in the init code here: refused, naming it.
    std::fs::write(
        dir.path().join("timer.js"),
        "import { setTimeout } from 'k6/timers';\nawait new Promise((r) => setTimeout(r, 10));\nexport default function () {}\n",
    )
    .unwrap();
    let h = host(
        dir.path(),
        run_args(&dir.path().join("results"), "timer.js"),
    )
    .await;
    assert!(!h.status.success(), "{}", text(&h));
    assert!(
        String::from_utf8_lossy(&h.stderr).contains("a top-level await was still pending"),
        "{}",
        text(&h)
    );
}

/// A webpack bundle (minified, ES module output) ends `export{t as default};` with no
/// spaces: its default function runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_webpack_bundle_with_an_unspaced_export_runs() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("bundle.js"),
        "import*as e from\"k6/http\";import{check as o}from\"k6\";const n={iterations:3};var t=function(){o(1,{\"bundled ran\":t=>1===t}),console.log(\"BUNDLE \"+typeof e.get)};export{n as options,t as default};\n",
    )
    .unwrap();
    let h = host(
        dir.path(),
        run_args(&dir.path().join("results"), "bundle.js"),
    )
    .await;
    assert!(h.status.success(), "{}", text(&h));
    assert_eq!(
        lines(&h.stderr, "BUNDLE "),
        vec!["BUNDLE function"; 3],
        "{}",
        text(&h)
    );
    let k = k6_in(dir.path(), vec!["bundle.js".into(), "-q".into()]).await;
    assert_eq!(
        lines(&h.stderr, "BUNDLE "),
        lines(&k.stderr, "BUNDLE "),
        "{}",
        text(&k)
    );
}

/// `client.load(['protos'], PROTO)` with `const PROTO = 'counter.proto'` (k6's own
/// examples): bundled and called against the Python gRPC server; a name that is no
/// const of the module fails the build naming it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_load_takes_a_path_held_in_a_const() {
    let mut server = Server::plaintext();
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("protos")).unwrap();
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/grpc/counter.proto"),
        dir.path().join("protos/counter.proto"),
    )
    .unwrap();
    let script = |load: &str| {
        format!(
            r#"import {{ Client, StatusOK }} from 'k6/net/grpc';
import {{ check }} from 'k6';
const PROTO_DIR = 'protos';
const PROTO = "counter.proto";
const client = new Client();
{load}
export const options = {{ iterations: 2 }};
export default function () {{
  client.connect(__ENV.GRPC_TARGET, {{ plaintext: true, timeout: '5s' }});
  const res = client.invoke('loadtest.test.Counter/Echo', {{ text: 'const' }});
  check(res, {{ 'echo by a const path': (r) => r.status === StatusOK && r.message.text === 'const' }});
  client.close();
}}
"#
        )
    };
    std::fs::write(
        dir.path().join("grpc.js"),
        script("client.load([PROTO_DIR], PROTO);"),
    )
    .unwrap();
    let target = format!("GRPC_TARGET=127.0.0.1:{}", server.plain);
    let mut args = run_args(&dir.path().join("results"), "grpc.js");
    args.extend(["-e".to_string(), target]);
    let h = host(dir.path(), &args).await;
    assert!(h.status.success(), "{}", text(&h));
    let summary = common::summary_json(&common::only_results_dir(&dir.path().join("results")));
    assert_eq!(
        common::check_counts(&summary, "echo by a const path"),
        (2, 0)
    );
    assert_eq!(server.stats()["calls"]["Echo"].as_f64(), Some(2.0));

    std::fs::write(
        dir.path().join("bad.js"),
        script("client.load([PROTO_DIR], NOT_A_CONST);"),
    )
    .unwrap();
    let h = host(dir.path(), ["build", "bad.js"]).await;
    assert!(!h.status.success(), "{}", text(&h));
    let stderr = String::from_utf8_lossy(&h.stderr);
    assert!(
        stderr.contains("bad.js:6: client.load() names `NOT_A_CONST`, which is not a `const NOT_A_CONST = '...'` of this module"),
        "{stderr}"
    );
}

/// Apache httpd (Debian's apache2-bin) with mod_auth_digest on loopback, stopped when
/// dropped.
struct Apache {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Apache {
    fn start() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("htdocs/private")).unwrap();
        std::fs::write(root.join("htdocs/private/index.html"), "secret-page\n").unwrap();
        // htdigest's format: user:realm:md5(user:realm:password).
        let ha1 = md5_hex("alice:private:wonderland");
        std::fs::write(root.join("digest.pw"), format!("alice:private:{ha1}\n")).unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let r = root.display();
        std::fs::write(
            root.join("httpd.conf"),
            format!(
                r#"ServerRoot /usr/lib/apache2
LoadModule mpm_event_module modules/mod_mpm_event.so
LoadModule authn_core_module modules/mod_authn_core.so
LoadModule authn_file_module modules/mod_authn_file.so
LoadModule authz_core_module modules/mod_authz_core.so
LoadModule authz_user_module modules/mod_authz_user.so
LoadModule auth_digest_module modules/mod_auth_digest.so
LoadModule dir_module modules/mod_dir.so
Listen 127.0.0.1:{port}
ServerName 127.0.0.1
PidFile {r}/httpd.pid
ErrorLog {r}/error.log
DocumentRoot {r}/htdocs
DirectoryIndex index.html
<Directory {r}/htdocs/private>
  AuthType Digest
  AuthName "private"
  AuthDigestProvider file
  AuthUserFile {r}/digest.pw
  Require valid-user
</Directory>
"#
            ),
        )
        .unwrap();
        let child = Command::new("/usr/sbin/apache2")
            .args([
                "-f",
                &root.join("httpd.conf").display().to_string(),
                "-DFOREGROUND",
            ])
            .spawn()
            .expect("Apache httpd runs (./dev test installs Debian's apache2-bin)");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                std::time::Instant::now() < deadline,
                "Apache did not listen on {port}"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        Self {
            child,
            port,
            _dir: dir,
        }
    }
}

impl Drop for Apache {
    fn drop(&mut self) {
        // SIGTERM (the whole group of its workers stops with its parent).
        let _ = Command::new("kill")
            .arg(self.child.id().to_string())
            .status();
        let _ = self.child.wait();
    }
}

fn md5_hex(text: &str) -> String {
    use md5::Digest;
    md5::Md5::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// `auth: 'digest'` with the credentials in the URL: Apache answers 200 with the
/// page; a wrong password stays 401.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn digest_auth_passes_apaches_mod_auth_digest() {
    let apache = tokio::task::spawn_blocking(Apache::start).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("digest.js"),
        format!(
            r#"import http from 'k6/http';
import {{ check }} from 'k6';
export const options = {{ iterations: 2 }};
export default function () {{
  const ok = http.get('http://alice:wonderland@127.0.0.1:{p}/private/', {{ auth: 'digest' }});
  check(ok, {{ 'digest 200': (r) => r.status === 200 && r.body === 'secret-page\n' }});
  const bad = http.get('http://alice:nope@127.0.0.1:{p}/private/', {{ auth: 'digest' }});
  check(bad, {{ 'wrong password 401': (r) => r.status === 401 }});
  const none = http.get('http://127.0.0.1:{p}/private/');
  check(none, {{ 'no credentials 401': (r) => r.status === 401 }});
}}
"#,
            p = apache.port
        ),
    )
    .unwrap();
    let out = dir.path().join("results");
    let h = host(dir.path(), run_args(&out, "digest.js")).await;
    assert!(h.status.success(), "{}", text(&h));
    let summary = common::summary_json(&common::only_results_dir(&out));
    for name in ["digest 200", "wrong password 401", "no credentials 401"] {
        assert_eq!(
            common::check_counts(&summary, name),
            (2, 0),
            "{name}: {}",
            summary["checks"]
        );
    }
    drop(apache);
}

/// A server whose `/set/V` answers `Set-Cookie: s=V; Path=/` and whose `/echo`
/// answers the request's Cookie field as its body.
async fn cookie_server() -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    common::servers::raw_server(|mut stream| async move {
        let mut buf = Vec::new();
        let mut chunk = [0u8; 2048];
        loop {
            while let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&buf[..end]).into_owned();
                buf.drain(..end + 4);
                let path = head.split_whitespace().nth(1).unwrap_or("/").to_owned();
                let cookie = head
                    .lines()
                    .find_map(|l| {
                        let (k, v) = l.split_once(':')?;
                        k.eq_ignore_ascii_case("cookie")
                            .then(|| v.trim().to_string())
                    })
                    .unwrap_or_default();
                let (extra, body) = match path.strip_prefix("/set/") {
                    Some(v) => (format!("Set-Cookie: s={v}; Path=/\r\n"), String::new()),
                    None => (String::new(), cookie),
                };
                let response = format!(
                    "HTTP/1.1 200 OK\r\n{extra}content-length: {}\r\n\r\n{body}",
                    body.len()
                );
                if stream.write_all(response.as_bytes()).await.is_err() {
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

/// Two `new http.CookieJar()` jars and the VU's: each request given a jar sends and
/// keeps that jar's cookies only, as in k6 1.1.0 (the same line from both).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn separate_cookie_jars_as_k6() {
    let base = cookie_server().await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("jars.js"),
        r#"import http from 'k6/http';
const B = __ENV.BASE_URL;
const jarA = new http.CookieJar();
const jarB = new http.CookieJar();
export default function () {
  http.get(`${B}set/a`, { jar: jarA });
  http.get(`${B}set/b`, { jar: jarB });
  http.get(`${B}set/vu`);
  jarB.set(B, 'extra', 'x');
  const a = http.get(`${B}echo`, { jar: jarA }).body;
  const b = http.get(`${B}echo`, { jar: jarB }).body;
  const v = http.get(`${B}echo`).body;
  const own = jarA.cookiesForURL(B);
  const vu = http.cookieJar().cookiesForURL(B);
  console.log(`JARS ${a}|${b.split('; ').sort().join('; ')}|${v}|${JSON.stringify(own)}|${JSON.stringify(vu)}`);
}
"#,
    )
    .unwrap();
    let env = format!("BASE_URL={base}");
    let mut args = run_args(&dir.path().join("results"), "jars.js");
    args.extend(["-e".to_string(), env.clone()]);
    let h = host(dir.path(), &args).await;
    assert!(h.status.success(), "{}", text(&h));
    let k = k6_in(
        dir.path(),
        vec!["jars.js".into(), "-q".into(), "-e".into(), env],
    )
    .await;
    let got = lines(&h.stderr, "JARS ");
    assert_eq!(
        got,
        vec![r#"JARS s=a|extra=x; s=b|s=vu|{"s":["a"]}|{"s":["vu"]}"#],
        "{}",
        text(&h)
    );
    assert_eq!(got, lines(&k.stderr, "JARS "), "{}", text(&k));
}
