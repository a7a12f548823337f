//! Remote modules (`import ... from 'https://...'`) fetched when the script is built,
//! from an HTTPS server on 127.0.0.1 whose CA is made here and trusted through
//! `SSL_CERT_FILE` (no request leaves the machine): pinned in `SCRIPT.lock` (URL →
//! sha256), taken from the cache on a later build, a module changed on the server
//! refused until `host build --update`, `http://` refused, a fetched module checked as
//! a local one (no k6 module the host refuses, no files opened), and without server or
//! cache an error naming the URL.

use crate::support as common;
use common::output_text as text;

use http_body_util::Full;
use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};
use std::collections::HashMap;
use std::path::Path;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// What the server serves, by path.
type Files = Arc<Mutex<HashMap<String, String>>>;

/// An HTTPS server of `files` on 127.0.0.1: its base URL, its CA (PEM), the requests it
/// answered, and the task (aborted to stop it).
async fn server(files: Files) -> (String, String, Arc<AtomicU64>, tokio::task::JoinHandle<()>) {
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "remote modules test CA");
    let ca_cert = ca_params.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca_params, ca_key);
    let key = KeyPair::generate().unwrap();
    let leaf = CertificateParams::new(vec!["127.0.0.1".to_string()])
        .unwrap()
        .signed_by(&key, &issuer)
        .unwrap();
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(
        vec![leaf.der().clone()],
        PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
    )
    .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("https://{}", listener.local_addr().unwrap());
    let served = Arc::new(AtomicU64::new(0));
    let count = served.clone();
    let task = tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let (acceptor, files, count) = (acceptor.clone(), files.clone(), count.clone());
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let service = hyper::service::service_fn(
                    move |req: hyper::Request<hyper::body::Incoming>| {
                        let (files, count) = (files.clone(), count.clone());
                        async move {
                            count.fetch_add(1, Ordering::Relaxed);
                            let found = files.lock().unwrap().get(req.uri().path()).cloned();
                            let resp = match found {
                                Some(body) => hyper::Response::builder()
                                    .status(200)
                                    .header("content-type", "application/javascript")
                                    .body(Full::new(bytes::Bytes::from(body))),
                                None => hyper::Response::builder()
                                    .status(404)
                                    .body(Full::new(bytes::Bytes::new())),
                            };
                            Ok::<_, std::convert::Infallible>(resp.unwrap())
                        }
                    },
                );
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(tls), service)
                    .await;
            });
        }
    });
    (base, ca_cert.pem(), served, task)
}

/// `host ARGS` in `dir` with its own cache and the test CA trusted.
async fn host(dir: &Path, args: &[&str]) -> Output {
    let (dir, args) = (
        dir.to_path_buf(),
        args.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
    );
    tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_host"))
            .current_dir(&dir)
            .args(&args)
            .env("HOST_CACHE_DIR", dir.join("cache"))
            .env("SSL_CERT_FILE", dir.join("ca.pem"))
            .output()
            .unwrap()
    })
    .await
    .unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn sha256(text: &str) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(text.as_bytes()))
}

const LIB: &str = "import { twice } from './util.js';\nexport function greet(n) { return `hello ${twice(n)}`; }\n";
const UTIL: &str = "export function twice(n) { return n * 2; }\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remote_modules_are_fetched_pinned_and_checked_at_build() {
    let files: Files = Arc::new(Mutex::new(HashMap::from([
        ("/lib/1.0/index.js".to_string(), LIB.to_string()),
        ("/lib/1.0/util.js".to_string(), UTIL.to_string()),
        (
            "/bad/browser.js".to_string(),
            "import { chromium } from 'k6/experimental/browser';\nexport const s = chromium;\n"
                .to_string(),
        ),
        (
            "/bad/opens.js".to_string(),
            "export const data = open('./secrets.txt');\n".to_string(),
        ),
    ])));
    let (base, ca, served, task) = server(files.clone()).await;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("ca.pem"), ca).unwrap();
    std::fs::write(
        d.join("script.js"),
        format!(
            "import {{ greet }} from '{base}/lib/1.0/index.js';\nexport const options = {{ iterations: 1 }};\nexport default function () {{ console.log('REMOTE ' + greet(21)); }}\n"
        ),
    )
    .unwrap();

    // First build: both modules fetched and pinned.
    let built = host(d, &["build", "script.js"]).await;
    assert!(built.status.success(), "{}", text(&built));
    let lock: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("script.js.lock")).unwrap()).unwrap();
    assert_eq!(
        lock[format!("{base}/lib/1.0/index.js")],
        sha256(LIB),
        "{lock}"
    );
    assert_eq!(
        lock[format!("{base}/lib/1.0/util.js")],
        sha256(UTIL),
        "{lock}"
    );
    assert_eq!(served.load(Ordering::Relaxed), 2);
    let ran = host(d, &["run", "script.js", "-q", "--out", "results"]).await;
    assert!(ran.status.success(), "{}", text(&ran));
    assert!(stderr(&ran).contains("REMOTE hello 42"), "{}", text(&ran));
    // The run took the pinned, cached modules: nothing fetched.
    assert_eq!(served.load(Ordering::Relaxed), 2);

    // The module changes on the server: the cache still serves the pinned text; once
    // the cache is gone, the changed text is refused naming the URL and both hashes.
    let changed = UTIL.replace("n * 2", "n * 3");
    files
        .lock()
        .unwrap()
        .insert("/lib/1.0/util.js".into(), changed.clone());
    let again = host(d, &["build", "script.js"]).await;
    assert!(again.status.success(), "{}", text(&again));
    std::fs::remove_dir_all(d.join("cache")).unwrap();
    let refused = host(d, &["build", "script.js"]).await;
    assert!(!refused.status.success(), "{}", text(&refused));
    let why = stderr(&refused);
    assert!(
        why.contains(&format!(
            "{base}/lib/1.0/util.js changed on the server since it was pinned"
        )) && why.contains(&sha256(UTIL))
            && why.contains(&sha256(&changed))
            && why.contains("host build --update"),
        "{why}"
    );
    let updated = host(d, &["build", "--update", "script.js"]).await;
    assert!(updated.status.success(), "{}", text(&updated));
    let lock: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("script.js.lock")).unwrap()).unwrap();
    assert_eq!(lock[format!("{base}/lib/1.0/util.js")], sha256(&changed));
    let ran = host(d, &["run", "script.js", "-q", "--out", "results"]).await;
    assert!(stderr(&ran).contains("REMOTE hello 63"), "{}", text(&ran));

    // A fetched module is checked as a local one.
    for (path, want) in [
        (
            "/bad/browser.js",
            "`k6/experimental/browser` is not supported by this host",
        ),
        ("/bad/opens.js", "a remote module may not open files"),
    ] {
        std::fs::write(
            d.join("bad.js"),
            format!("import * as m from '{base}{path}';\nexport default function () {{ m; }}\n"),
        )
        .unwrap();
        let o = host(d, &["build", "bad.js"]).await;
        assert!(!o.status.success(), "{}", text(&o));
        assert!(stderr(&o).contains(want), "{path}: {}", text(&o));
    }
    // http:// is refused before anything is fetched.
    std::fs::write(
        d.join("plain.js"),
        "import { x } from 'http://127.0.0.1:1/x.js';\nexport default function () { x; }\n",
    )
    .unwrap();
    let o = host(d, &["build", "plain.js"]).await;
    assert!(
        stderr(&o).contains("remote modules are fetched over https only"),
        "{}",
        text(&o)
    );

    // No server and no cache: the error names the URL.
    task.abort();
    let _ = task.await;
    std::fs::remove_dir_all(d.join("cache")).unwrap();
    let offline = host(d, &["build", "script.js"]).await;
    assert!(!offline.status.success(), "{}", text(&offline));
    assert!(
        stderr(&offline).contains(&format!("cannot fetch {base}/lib/1.0/index.js")),
        "{}",
        text(&offline)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vendored_modules_build_without_the_network() {
    let files: Files = Arc::new(Mutex::new(HashMap::from([
        ("/lib/2.0/index.js".to_string(), LIB.to_string()),
        ("/lib/2.0/util.js".to_string(), UTIL.to_string()),
    ])));
    let (base, ca, served, task) = server(files.clone()).await;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("ca.pem"), ca).unwrap();
    std::fs::write(
        d.join("script.js"),
        format!(
            "import {{ greet }} from '{base}/lib/2.0/index.js';\nexport const options = {{ iterations: 1 }};\nexport default function () {{ console.log('VENDORED ' + greet(5)); }}\n"
        ),
    )
    .unwrap();
    let vendored = host(d, &["vendor", "script.js"]).await;
    assert!(vendored.status.success(), "{}", text(&vendored));
    assert_eq!(served.load(Ordering::Relaxed), 2);
    let port = base.rsplit(':').next().unwrap();
    let util = d.join(format!("vendor/127.0.0.1_{port}/lib/2.0/util.js"));
    assert_eq!(std::fs::read_to_string(&util).unwrap(), UTIL);
    assert!(
        stderr(&vendored).contains("2 remote modules vendored"),
        "{}",
        text(&vendored)
    );

    // The server gone and the cache emptied: the build reads vendor/ (nothing fetched).
    task.abort();
    let _ = task.await;
    std::fs::remove_dir_all(d.join("cache")).unwrap();
    let ran = host(d, &["run", "script.js", "-q", "--out", "results"]).await;
    assert!(ran.status.success(), "{}", text(&ran));
    assert!(stderr(&ran).contains("VENDORED hello 10"), "{}", text(&ran));
    assert_eq!(served.load(Ordering::Relaxed), 2);

    // A vendored copy that is not its pin is refused, naming it.
    std::fs::remove_dir_all(d.join("cache")).unwrap();
    std::fs::write(&util, UTIL.replace("n * 2", "n * 9")).unwrap();
    let o = host(d, &["build", "script.js"]).await;
    assert!(!o.status.success(), "{}", text(&o));
    assert!(
        stderr(&o).contains(&format!("the vendored copy of {base}/lib/2.0/util.js"))
            && stderr(&o).contains("host vendor"),
        "{}",
        text(&o)
    );

    // Neither vendored nor cached, offline: the error names the URL and the way out.
    std::fs::remove_dir_all(d.join("vendor")).unwrap();
    std::fs::remove_dir_all(d.join("cache")).unwrap();
    let offline = host(d, &["build", "script.js"]).await;
    assert!(!offline.status.success(), "{}", text(&offline));
    let why = stderr(&offline);
    assert!(
        why.contains(&format!("cannot fetch {base}/lib/2.0/index.js"))
            && why.contains("host vendor"),
        "{why}"
    );
}
