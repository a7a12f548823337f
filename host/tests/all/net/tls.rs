//! TLS end to end: https against the demo target with its generated CA, certificates
//! refused for the right reason (unknown issuer, name mismatch, expired, a server that
//! does not speak TLS), `insecure_skip_verify`, client certificates accepted and
//! refused, and handshake time on new connections only.

use crate::support as common;

use common::run;
use demo_target::{DemoConfig, DemoServer, DemoTls};
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Runs `http_probe` (one `GET /` per iteration, no pause) `iterations` times on one VU
/// against `base`, with `tls` as the run's `[tls]` section body.
async fn probe(base: &str, iterations: u32, tls: &str) -> common::Finished {
    let config = format!(
        "[scenarios.default]\nexecutor = \"per-vu-iterations\"\nvus = 1\niterations = {iterations}\n\
         [tls]\n{tls}\n"
    );
    run(
        "http_probe",
        &config,
        &[("BASE_URL", base), ("MODE", "paced"), ("SLEEP_MS", "0")],
    )
    .await
    .expect("run completes")
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

/// The first plugin error's message, or "" when there was none.
fn first_error(f: &common::Finished) -> String {
    f.json["plugin_errors"][0]["message"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

async fn demo_tls(names: &[&str]) -> (DemoServer, DemoTls) {
    let tls = DemoTls::generate(names).unwrap();
    let server = DemoServer::start_tls(
        "127.0.0.1:0".parse().unwrap(),
        DemoConfig::default(),
        tls.server_config().unwrap(),
    )
    .await
    .unwrap();
    (server, tls)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_with_the_generated_ca_verifies_and_times_the_handshake_once() {
    let (server, tls) = demo_tls(&["localhost", "127.0.0.1"]).await;
    let dir = tempfile::tempdir().unwrap();
    let ca = write(dir.path(), "ca.pem", &tls.ca_pem);
    let f = probe(&server.base_url(), 5, &format!("ca_file = {ca:?}")).await;
    assert!(server.base_url().starts_with("https://"));
    let h = &f.json["http"];
    assert_eq!(h["succeeded"], 5, "{h} {}", first_error(&f));
    assert_eq!(server.connections_accepted(), 1, "keep-alive over TLS");
    let t = &f.json["tls"];
    assert_eq!(t["handshakes"], 1, "{t}");
    assert_eq!(t["versions"]["tls1.3"], 1, "{t}");
    let suites = t["cipher_suites"].as_object().unwrap();
    assert!(
        suites.keys().all(|k| k.starts_with("TLS_")),
        "k6's names: {suites:?}"
    );
    // One new connection with a handshake, then four reused ones without.
    assert_eq!(f.metric("http_req_tls_handshaking", "count"), 5.0);
    assert!(f.metric("http_req_tls_handshaking", "max") > 0.0);
    assert_eq!(f.metric("http_req_tls_handshaking", "min"), 0.0);
    assert_eq!(f.metric("http_req_tls_handshaking", "med"), 0.0);
    let text = std::fs::read_to_string(f.outcome.results_dir.join("summary.txt")).unwrap();
    assert!(text.contains("tls: 1 handshakes (tls1.3=1)"), "{text}");
    assert!(f.json["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .all(|w| !w.as_str().unwrap().contains("insecure_skip_verify")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_self_signed_certificate_is_refused_unless_verification_is_skipped() {
    let key = KeyPair::generate().unwrap();
    let cert = CertificateParams::new(vec!["127.0.0.1".to_string()])
        .unwrap()
        .self_signed(&key)
        .unwrap();
    let server = TestServer::start(server_config(vec![cert.der().clone()], &key, None)).await;
    // Another CA is trusted too, so the refusal does not hang on what the system's
    // store holds.
    let dir = tempfile::tempdir().unwrap();
    let other = write(dir.path(), "other-ca.pem", &Ca::new("other CA").pem);
    let refused = probe(&server.url(), 2, &format!("ca_file = {other:?}")).await;
    let message = first_error(&refused);
    assert!(
        message.contains("TLS handshake failed")
            && message.contains("not signed by a trusted authority"),
        "{message}"
    );
    assert_eq!(refused.json["http"]["succeeded"], 0);
    assert_eq!(
        refused.json["http"]["not_sent"]["tls"], 2,
        "{}",
        refused.json["http"]
    );
    assert!(refused.json.get("tls").is_none(), "no handshake completed");

    let skipped = probe(&server.url(), 2, "insecure_skip_verify = true").await;
    assert_eq!(
        skipped.json["http"]["succeeded"],
        2,
        "{}",
        first_error(&skipped)
    );
    let warned = skipped.json["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|w| w.as_str().unwrap().contains("insecure_skip_verify is on"));
    assert!(warned, "{}", skipped.json["warnings"]);
}

/// Makes a certificate as most guides do, `openssl req -x509` (its CA flag set, the
/// openssl default), for `names` (subjectAltName entries such as `IP:127.0.0.1`);
/// returns its PEM and its key's PEM.
fn openssl_self_signed(dir: &Path, stem: &str, names: &str) -> (String, String) {
    let cert = dir.join(format!("{stem}.pem"));
    let key = dir.join(format!("{stem}.key"));
    let out = std::process::Command::new("openssl")
        .args(["req", "-x509", "-newkey", "ec", "-pkeyopt"])
        .args(["ec_paramgen_curve:prime256v1", "-nodes", "-days", "2"])
        .args(["-subj", "/CN=load test", "-addext"])
        .arg(format!("subjectAltName={names}"))
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .expect("the openssl CLI runs");
    assert!(out.status.success(), "{out:?}");
    let cert = std::fs::read_to_string(cert).unwrap();
    let text = std::process::Command::new("openssl")
        .args(["x509", "-noout", "-text"])
        .stdin(std::fs::File::open(dir.join(format!("{stem}.pem"))).unwrap())
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&text.stdout).contains("CA:TRUE"),
        "openssl's default sets the CA flag: {text:?}"
    );
    (cert, std::fs::read_to_string(key).unwrap())
}

/// A rustls server presenting the PEM certificate and key (no client auth).
fn pem_server_config(cert: &str, key: &str) -> Arc<rustls::ServerConfig> {
    let chain = vec![CertificateDer::from_pem_slice(cert.as_bytes()).unwrap()];
    let key = PrivateKeyDer::from_pem_slice(key.as_bytes()).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .unwrap();
    Arc::new(config)
}

/// Issue 29, item 3: webpki refuses a CA certificate as the server's own
/// (`CaUsedAsEndEntity`), which is what `openssl req -x509` makes; curl and k6 accept
/// it when it is itself trusted, and so does the host now. Not trusted, or for another
/// name, it is refused in words that say what to do.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_openssl_self_signed_certificate_given_as_ca_file_is_trusted() {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = openssl_self_signed(dir.path(), "server", "IP:127.0.0.1,DNS:localhost");
    let server = TestServer::start(pem_server_config(&cert, &key)).await;
    let ca = write(dir.path(), "trusted.pem", &cert);
    let f = probe(&server.url(), 3, &format!("ca_file = {ca:?}")).await;
    assert_eq!(f.json["http"]["succeeded"], 3, "{}", first_error(&f));
    assert_eq!(f.json["tls"]["handshakes"], 1, "{}", f.json["tls"]);

    // Another certificate of the same kind is trusted, not this one.
    let (other, _) = openssl_self_signed(dir.path(), "other", "IP:127.0.0.1");
    let other = write(dir.path(), "other-trusted.pem", &other);
    let f = probe(&server.url(), 1, &format!("ca_file = {other:?}")).await;
    let message = first_error(&f);
    assert!(
        message.contains("is a CA certificate")
            && message.contains("put this very certificate in ca_file"),
        "{message}"
    );
    assert!(!message.contains("OtherError"), "in words: {message}");
    assert_eq!(f.json["http"]["not_sent"]["tls"], 1, "{}", f.json["http"]);

    // Trusted as it is, but for another name: still refused, for the name.
    let (named, named_key) = openssl_self_signed(dir.path(), "named", "DNS:other.example");
    let wrong = TestServer::start(pem_server_config(&named, &named_key)).await;
    let named = write(dir.path(), "named-trusted.pem", &named);
    let f = probe(&wrong.url(), 1, &format!("ca_file = {named:?}")).await;
    let message = first_error(&f);
    assert!(message.contains("certificate name mismatch"), "{message}");
    assert_eq!(f.json["http"]["succeeded"], 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_name_mismatch_an_expired_certificate_and_plain_http_are_named() {
    let dir = tempfile::tempdir().unwrap();
    // Signed by a trusted CA, but for another name.
    let (server, tls) = demo_tls(&["other.example"]).await;
    let ca = write(dir.path(), "ca.pem", &tls.ca_pem);
    let f = probe(&server.base_url(), 1, &format!("ca_file = {ca:?}")).await;
    let message = first_error(&f);
    assert!(message.contains("certificate name mismatch"), "{message}");

    // Trusted and for the right name, but expired.
    let ca = Ca::new("test CA");
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(vec!["127.0.0.1".to_string()]).unwrap();
    params.not_before = rcgen::date_time_ymd(2020, 1, 1);
    params.not_after = rcgen::date_time_ymd(2021, 1, 1);
    let leaf = params.signed_by(&key, &ca.issuer).unwrap();
    let expired = TestServer::start(server_config(vec![leaf.der().clone()], &key, None)).await;
    let ca_path = write(dir.path(), "ca2.pem", &ca.pem);
    let f = probe(&expired.url(), 1, &format!("ca_file = {ca_path:?}")).await;
    let message = first_error(&f);
    assert!(message.contains("certificate expired"), "{message}");

    // A plain http server on an https:// URL.
    let plain = common::demo_target(std::time::Duration::ZERO).await;
    let url = plain.base_url().replace("http://", "https://");
    let f = probe(&url, 1, "").await;
    let message = first_error(&f);
    assert!(message.contains("does not speak TLS"), "{message}");
    assert_eq!(f.json["http"]["not_sent"]["tls"], 1, "{}", f.json["http"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_certificate_is_accepted_and_one_from_another_ca_refused() {
    let dir = tempfile::tempdir().unwrap();
    let server_ca = Ca::new("server CA");
    let client_ca = Ca::new("client CA");
    let server_key = KeyPair::generate().unwrap();
    let server_cert = CertificateParams::new(vec!["127.0.0.1".to_string()])
        .unwrap()
        .signed_by(&server_key, &server_ca.issuer)
        .unwrap();
    let server = TestServer::start(server_config(
        vec![server_cert.der().clone()],
        &server_key,
        Some(&client_ca),
    ))
    .await;
    let ca_path = write(dir.path(), "ca.pem", &server_ca.pem);
    let client = |ca: &Ca, stem: &str| {
        let key = KeyPair::generate().unwrap();
        let cert = CertificateParams::new(vec!["vu.example".to_string()])
            .unwrap()
            .signed_by(&key, &ca.issuer)
            .unwrap();
        (
            write(dir.path(), &format!("{stem}.pem"), &cert.pem()),
            write(dir.path(), &format!("{stem}.key"), &key.serialize_pem()),
        )
    };
    let (cert, key) = client(&client_ca, "good");
    let accepted = probe(
        &server.url(),
        2,
        &format!("ca_file = {ca_path:?}\nclient_cert = {cert:?}\nclient_key = {key:?}"),
    )
    .await;
    assert_eq!(
        accepted.json["http"]["succeeded"],
        2,
        "{}",
        first_error(&accepted)
    );
    assert_eq!(server.connections.load(Ordering::Relaxed), 1);

    let stranger = Ca::new("stranger CA");
    let (cert, key) = client(&stranger, "bad");
    let refused = probe(
        &server.url(),
        1,
        &format!("ca_file = {ca_path:?}\nclient_cert = {cert:?}\nclient_key = {key:?}"),
    )
    .await;
    let message = first_error(&refused);
    assert!(
        message.contains("TLS handshake failed")
            && message.contains("refused the client certificate"),
        "{message}"
    );
    let h = &refused.json["http"];
    // Under TLS 1.3 the refusal arrives after the client's side of the handshake,
    // with the request already written: a sent request failed as `tls`.
    let tls_failures =
        h["errors"]["tls"].as_u64().unwrap_or(0) + h["not_sent"]["tls"].as_u64().unwrap_or(0);
    assert_eq!(tls_failures, 1, "{h}");

    let without = probe(&server.url(), 1, &format!("ca_file = {ca_path:?}")).await;
    let message = first_error(&without);
    assert!(
        message.contains("refused the client certificate"),
        "{message}"
    );
}

#[tokio::test]
async fn config_mistakes_stop_the_run_with_the_key_to_fix() {
    let err = run(
        "http_probe",
        "[tls]\nca_file = \"/nonexistent/ca.pem\"\n",
        &[],
    )
    .await
    .err()
    .expect("refused");
    let text = format!("{err:#}");
    assert!(
        text.contains("tls.ca_file") && text.contains("/nonexistent/ca.pem"),
        "{text}"
    );
}

/// A certificate authority made for one test.
struct Ca {
    issuer: Issuer<'static, KeyPair>,
    pem: String,
}

impl Ca {
    /// A CA whose name is `name` (distinct names: a CA of the same name would be taken
    /// for the issuer, and the failure would be a bad signature instead).
    fn new(name: &str) -> Ca {
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, name);
        let cert = params.self_signed(&key).unwrap();
        Ca {
            issuer: Issuer::new(params, key),
            pem: cert.pem(),
        }
    }
}

/// A rustls server configuration for `chain` and `key`; with `client_ca`, it demands
/// a client certificate signed by that CA.
fn server_config(
    chain: Vec<CertificateDer<'static>>,
    key: &KeyPair,
    client_ca: Option<&Ca>,
) -> Arc<rustls::ServerConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .unwrap();
    let builder = match client_ca {
        None => builder.with_no_client_auth(),
        Some(ca) => {
            let mut roots = rustls::RootCertStore::empty();
            let der = CertificateDer::from_pem_slice(ca.pem.as_bytes()).unwrap();
            roots.add(der).unwrap();
            let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
                Arc::new(roots),
                provider,
            )
            .build()
            .unwrap();
            builder.with_client_cert_verifier(verifier)
        }
    };
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
    Arc::new(builder.with_single_cert(chain, key).unwrap())
}

use rustls::pki_types::pem::PemObject;

/// A small https server answering 200 to everything; it counts connections.
struct TestServer {
    addr: SocketAddr,
    connections: Arc<AtomicU64>,
    _task: tokio::task::JoinHandle<()>,
}

impl TestServer {
    async fn start(config: Arc<rustls::ServerConfig>) -> TestServer {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let connections = Arc::new(AtomicU64::new(0));
        let counted = connections.clone();
        let acceptor = tokio_rustls::TlsAcceptor::from(config);
        let task = tokio::spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    return;
                };
                counted.fetch_add(1, Ordering::Relaxed);
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let service = service_fn(|_req| async {
                        Ok::<_, std::convert::Infallible>(hyper::Response::new(
                            http_body_util::Full::new(bytes::Bytes::from_static(b"ok")),
                        ))
                    });
                    let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                        .serve_connection(TokioIo::new(tls), service)
                        .await;
                });
            }
        });
        TestServer {
            addr,
            connections,
            _task: task,
        }
    }

    fn url(&self) -> String {
        format!("https://{}", self.addr)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wss_to_the_demo_target_with_its_ca_delivers_every_push() {
    let (server, tls) = demo_tls(&["127.0.0.1"]).await;
    let dir = tempfile::tempdir().unwrap();
    let ca = write(dir.path(), "ca.pem", &tls.ca_pem);
    let config = format!(
        r#"
[scenarios.listeners]
executor = "constant-vus"
vus = 2
duration = "5s"
exec = "listeners"

[scenarios.writer]
executor = "constant-vus"
vus = 1
start_time = "1500ms"
duration = "2s"
exec = "writer"

[env]
BASE_URL = "{}"
TABS = "2"
DRAIN_MS = "500"

[tls]
ca_file = {ca:?}
"#,
        server.base_url()
    );
    let f = run("sockets", &config, &[]).await.expect("run completes");
    let count = |m: &str| f.metric(m, "count");
    assert_eq!(count("ws_sessions"), 4.0, "{}", first_error(&f));
    assert_eq!(count("ws_errors"), 0.0, "{}", first_error(&f));
    let expected = count("pushes_expected");
    assert!(expected >= 8.0, "pushes expected {expected}");
    assert_eq!(count("pushes_received"), expected);
    // Sign-ins and writes over https, sockets over wss: every handshake verified.
    assert!(
        f.json["tls"]["handshakes"].as_u64().unwrap() >= 5,
        "{}",
        f.json["tls"]
    );
    server.shutdown().await;
}

/// Runs one iteration of `http_probe` in `batch` mode (20 `GET /` at once) against
/// `base`, with `extra` appended to the run config.
async fn batch_of_20(base: &str, extra: &str) -> common::Finished {
    let config = format!(
        "[scenarios.default]\nexecutor = \"per-vu-iterations\"\nvus = 1\niterations = 1\n\
         [thresholds]\nallow_missing = true\n\"http_reqs{{proto:HTTP/2}}\" = [\"count>=0\"]\n\
         \"http_reqs{{proto:HTTP/1.1}}\" = [\"count>=0\"]\n{extra}\n"
    );
    run(
        "http_probe",
        &config,
        &[("BASE_URL", base), ("MODE", "batch"), ("BATCH", "20")],
    )
    .await
    .expect("run completes")
}

/// Requests answered over `proto`, from the threshold on `http_reqs{proto:...}` that
/// [`batch_of_20`] sets (its observed count; 0 when there was none).
fn by_proto(f: &common::Finished, proto: &str) -> f64 {
    let metric = format!("http_reqs{{proto:{proto}}}");
    f.json["thresholds"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["metric"] == metric.as_str())
        .unwrap_or_else(|| panic!("no threshold on {metric}"))["observed"]
        .as_f64()
        .unwrap_or(0.0)
}

async fn slow_demo(tls: Option<&DemoTls>) -> DemoServer {
    // Every `GET /` takes 300 ms: twenty one after the other would take 6 s.
    let config = DemoConfig {
        faults: demo_target::Faults {
            latency: std::time::Duration::from_millis(300),
            ..Default::default()
        },
        ..DemoConfig::default()
    };
    let addr = "127.0.0.1:0".parse().unwrap();
    match tls {
        Some(tls) => DemoServer::start_tls(addr, config, tls.server_config().unwrap()).await,
        None => DemoServer::start(addr, config).await,
    }
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn h2_by_alpn_sends_a_batch_as_concurrent_streams_of_one_connection() {
    let tls = DemoTls::generate(&["127.0.0.1"]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ca = write(dir.path(), "ca.pem", &tls.ca_pem);
    let server = slow_demo(Some(&tls)).await;
    let f = batch_of_20(&server.base_url(), &format!("[tls]\nca_file = {ca:?}")).await;
    assert_eq!(f.scenario("default", "failed"), 0, "{}", first_error(&f));
    assert_eq!(by_proto(&f, "HTTP/2"), 20.0);
    assert_eq!(by_proto(&f, "HTTP/1.1"), 0.0);
    assert_eq!(server.connections_accepted(), 1, "one connection");
    assert_eq!(server.requests_served(), 20, "twenty streams");
    assert_eq!(f.json["tls"]["handshakes"], 1);
    // Concurrent, not one after the other (that would be 6 s).
    let took = f.metric("iteration_duration", "max");
    assert!(took < 3000.0, "the batch took {took} ms");
    // Bytes are counted once each, though the streams shared one connection.
    let received = f.metric("data_received", "count");
    assert!(received > 0.0 && received < 200_000.0, "{received}");
}

/// `[http] batch` and `batch_per_host` bound a batch's requests in flight (k6's
/// `batch` and `batchPerHost`): the server sees as many connections as the limit
/// lets run at once, and the batch takes as many turns of the server's 300 ms.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batch_limits_bound_the_requests_in_flight() {
    let server = slow_demo(None).await;
    let f = batch_of_20(&server.base_url(), "[http]\nbatch_per_host = 0").await;
    assert_eq!(f.scenario("default", "failed"), 0, "{}", first_error(&f));
    assert_eq!(
        server.connections_accepted(),
        20,
        "no limit per host: all at once"
    );
    let took = f.metric("iteration_duration", "max");
    assert!(took < 1200.0, "one turn: {took} ms");

    let server = slow_demo(None).await;
    let f = batch_of_20(&server.base_url(), "[http]\nbatch = 5\nbatch_per_host = 0").await;
    assert_eq!(f.scenario("default", "failed"), 0, "{}", first_error(&f));
    assert_eq!(server.requests_served(), 20);
    assert_eq!(server.connections_accepted(), 5, "five at a time, reused");
    let took = f.metric("iteration_duration", "max");
    assert!(took >= 1200.0, "four turns of 300 ms: {took} ms");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn versions_restrict_alpn_and_h2c_speaks_http2_to_plain_http() {
    let tls = DemoTls::generate(&["127.0.0.1"]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ca = write(dir.path(), "ca.pem", &tls.ca_pem);
    let server = slow_demo(Some(&tls)).await;
    let f = batch_of_20(
        &server.base_url(),
        &format!("[http]\nversions = [\"http/1.1\"]\n[tls]\nca_file = {ca:?}"),
    )
    .await;
    assert_eq!(f.scenario("default", "failed"), 0, "{}", first_error(&f));
    assert_eq!(by_proto(&f, "HTTP/1.1"), 20.0);
    assert_eq!(
        server.connections_accepted(),
        6,
        "HTTP/1.1: six connections to the host, as a browser opens, reused in turn"
    );
    let took = f.metric("iteration_duration", "max");
    assert!(
        took >= 1200.0,
        "20 requests 6 at a time are 4 turns of 300 ms: {took} ms"
    );

    let plain = slow_demo(None).await;
    let f = batch_of_20(&plain.base_url(), "[http]\nh2c = true").await;
    assert_eq!(f.scenario("default", "failed"), 0, "{}", first_error(&f));
    assert_eq!(by_proto(&f, "HTTP/2"), 20.0);
    assert_eq!(plain.connections_accepted(), 1);
    assert!(f.json.get("tls").is_none());
}
