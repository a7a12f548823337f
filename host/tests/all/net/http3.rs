//! HTTP/3 end to end, against the demo target's QUIC listener and against a server this
//! project did not write (Python's aioquic, started by the test): every request the
//! client counts is one the server answered, each is tagged `proto` `HTTP/3`, a batch
//! shares one QUIC connection per VU, `local_ips` binds the UDP socket, an untrusted
//! certificate is refused with its reason before any request goes out, a stream reset
//! is named with its code, `Alt-Svc` moves a VU from HTTP/1.1 to HTTP/3, and a denied
//! origin gets no datagram at all.

use crate::support as common;

use common::run;
use demo_target::{DemoConfig, DemoServer, DemoTls};
use std::net::{SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Runs `http_probe` in `mode` with `extra` appended to the run config (after the
/// scenario, so it may add `[http]`, `[tls]`, `[targets]`); thresholds on
/// `http_reqs{proto:...}` report the requests answered by each protocol.
async fn probe(
    base: &str,
    mode: &str,
    vus: u32,
    iterations: u32,
    extra: &str,
    env: &[(&str, &str)],
) -> common::Finished {
    let config = format!(
        "[scenarios.default]\nexecutor = \"per-vu-iterations\"\nvus = {vus}\n\
         iterations = {iterations}\n\
         [thresholds]\nallow_missing = true\n\"http_reqs{{proto:HTTP/3}}\" = [\"count>=0\"]\n\
         \"http_reqs{{proto:HTTP/1.1}}\" = [\"count>=0\"]\n{extra}\n"
    );
    let mut all = vec![("BASE_URL", base), ("MODE", mode), ("SLEEP_MS", "0")];
    all.extend_from_slice(env);
    run("http_probe", &config, &all)
        .await
        .expect("run completes")
}

/// Requests answered over `proto` (the threshold's observed count; 0 for none).
fn by_proto(f: &common::Finished, proto: &str) -> u64 {
    observed(f, &format!("http_reqs{{proto:{proto}}}"))
}

/// The observed value of the threshold on `metric` (0 for none).
fn observed(f: &common::Finished, metric: &str) -> u64 {
    f.json["thresholds"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["metric"] == metric)
        .unwrap_or_else(|| panic!("no threshold on {metric}"))["observed"]
        .as_f64()
        .unwrap_or(0.0) as u64
}

fn http_reqs(f: &common::Finished) -> u64 {
    f.metric("http_reqs", "count") as u64
}

/// The first plugin error's message, or "" when there was none.
fn first_error(f: &common::Finished) -> String {
    f.json["plugin_errors"][0]["message"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

/// The demo target over TLS on TCP, and over HTTP/3 on a UDP port of its own.
async fn demo_h3() -> (DemoServer, DemoTls, SocketAddr) {
    let tls = DemoTls::generate(&["127.0.0.1"]).unwrap();
    let mut server = DemoServer::start_tls(
        "127.0.0.1:0".parse().unwrap(),
        DemoConfig::default(),
        tls.server_config().unwrap(),
    )
    .await
    .unwrap();
    let udp = server
        .also_h3("127.0.0.1:0".parse().unwrap(), &tls)
        .unwrap();
    (server, tls, udp)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn h3_first_speaks_http3_to_the_demo_target_one_connection_per_vu() {
    let (server, tls, udp) = demo_h3().await;
    let dir = tempfile::tempdir().unwrap();
    let ca = write(dir.path(), "ca.pem", &tls.ca_pem);
    // The UDP port alone: nothing answers TCP there, so only HTTP/3 can succeed.
    let base = format!("https://{udp}");
    let f = probe(
        &base,
        "batch",
        2,
        2,
        &format!(
            "[http]\nversions = [\"h3\"]\nlocal_ips = [\"127.0.0.2\", \"127.0.0.3\"]\n\
             [tls]\nca_file = {ca:?}"
        ),
        &[("BATCH", "5")],
    )
    .await;
    assert_eq!(f.scenario("default", "failed"), 0, "{}", first_error(&f));
    assert_eq!(http_reqs(&f), 20);
    assert_eq!(
        server.requests_served(),
        http_reqs(&f),
        "the server saw each"
    );
    assert_eq!(by_proto(&f, "HTTP/3"), 20);
    assert_eq!(by_proto(&f, "HTTP/1.1"), 0);
    // One QUIC connection per VU, its batches multiplexed on it, each from its VU's
    // source address.
    let c = &f.json["connections"];
    assert_eq!(c["opened"]["HTTP/3"], 2, "{c}");
    assert_eq!(c["tls_handshakes"]["HTTP/3"], 2, "{c}");
    assert!(c["opened"].get("HTTP/1.1").is_none(), "{c}");
    assert_eq!(server.connections_accepted(), 2);
    assert_eq!(
        server.distinct_peers(),
        2,
        "local_ips bound the UDP sockets"
    );
    assert_eq!(f.json["tls"]["versions"]["tls1.3"], 2, "{}", f.json["tls"]);
    // The handshake is timed on the first request of each connection only.
    assert!(f.metric("http_req_connecting", "max") > 0.0);
    assert!(f.metric("http_req_tls_handshaking", "max") > 0.0);
    assert_eq!(f.metric("http_req_tls_handshaking", "med"), 0.0);
    assert!(f.metric("data_received", "count") > 0.0);
    let text = std::fs::read_to_string(f.outcome.results_dir.join("summary.txt")).unwrap();
    assert!(text.contains("connections: HTTP/3=2"), "{text}");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn h3_after_http1_upgrades_on_alt_svc_unless_the_allowlist_denies_it() {
    let (server, tls, udp) = demo_h3().await;
    let dir = tempfile::tempdir().unwrap();
    let ca = write(dir.path(), "ca.pem", &tls.ca_pem);
    let tcp = server.base_url();
    let versions = "[http]\nversions = [\"http/1.1\", \"h3\"]\n";
    let f = probe(
        &tcp,
        "paced",
        1,
        4,
        &format!("{versions}[tls]\nca_file = {ca:?}"),
        &[],
    )
    .await;
    assert_eq!(f.scenario("default", "failed"), 0, "{}", first_error(&f));
    // The first answer (HTTP/1.1) named the alternative; the next three used it.
    assert_eq!(by_proto(&f, "HTTP/1.1"), 1);
    assert_eq!(by_proto(&f, "HTTP/3"), 3);
    assert_eq!(server.requests_served(), 4);
    let c = &f.json["connections"];
    assert_eq!(c["opened"]["HTTP/1.1"], 1, "{c}");
    assert_eq!(c["opened"]["HTTP/3"], 1, "{c}");
    assert_eq!(c["alt_svc_upgrades"], 1, "{c}");
    let text = std::fs::read_to_string(f.outcome.results_dir.join("summary.txt")).unwrap();
    assert!(text.contains("1 upgrades to HTTP/3 on Alt-Svc"), "{text}");

    // Only the TCP origin allowed: the alternative's UDP port is never contacted.
    let accepted = server.connections_accepted();
    let tcp_origin = tcp.trim_end_matches('/');
    let f = probe(
        &tcp,
        "paced",
        1,
        3,
        &format!("{versions}[tls]\nca_file = {ca:?}\n[targets]\nallow = [{tcp_origin:?}]"),
        &[],
    )
    .await;
    assert_eq!(f.scenario("default", "failed"), 0, "{}", first_error(&f));
    assert_eq!(by_proto(&f, "HTTP/1.1"), 3);
    assert_eq!(by_proto(&f, "HTTP/3"), 0);
    let c = &f.json["connections"];
    assert_eq!(c["alt_svc_denied"], 1, "{c}");
    assert!(c["opened"].get("HTTP/3").is_none(), "{c}");
    assert_eq!(
        server.connections_accepted(),
        accepted + 1,
        "one TCP connection, no QUIC one to {udp}"
    );
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denied_origin_gets_no_datagram() {
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = socket.local_addr().unwrap().port();
    let f = probe(
        &format!("https://127.0.0.1:{port}"),
        "paced",
        1,
        2,
        "[http]\nversions = [\"h3\"]\n[targets]\nallow = [\"https://127.0.0.1:1\"]",
        &[],
    )
    .await;
    assert_eq!(f.json["http"]["denied"], 2, "{}", f.json["http"]);
    assert!(
        first_error(&f).contains("not an allowed target"),
        "{}",
        first_error(&f)
    );
    socket.set_nonblocking(true).unwrap();
    let mut buf = [0u8; 2048];
    let got = socket.recv_from(&mut buf);
    assert!(
        got.as_ref()
            .is_err_and(|e| e.kind() == std::io::ErrorKind::WouldBlock),
        "a datagram reached the denied port: {got:?}"
    );
}

/// aioquic's HTTP/3 server (host/tests/fixtures/h3_server.py) on a free UDP port,
/// with `cert` and `key`; killed when dropped.
struct Aioquic {
    child: Child,
    port: u16,
    counts: PathBuf,
    _dir: tempfile::TempDir,
}

impl Aioquic {
    fn start(cert_pem: &str, key_pem: &str) -> Aioquic {
        let dir = tempfile::tempdir().unwrap();
        let cert = write(dir.path(), "cert.pem", cert_pem);
        let key = write(dir.path(), "key.pem", key_pem);
        let counts = dir.path().join("counts");
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/h3_server.py");
        let mut child = Command::new(python())
            .arg(script)
            .args(["--cert", &cert, "--key", &key, "--counts"])
            .arg(&counts)
            .stdout(Stdio::piped())
            .spawn()
            .expect("start the aioquic server");
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(child.stdout.take().unwrap()),
            &mut line,
        )
        .unwrap();
        let port = line
            .strip_prefix("listening ")
            .and_then(|p| p.trim().parse().ok())
            .unwrap_or_else(|| panic!("the aioquic server said {line:?}"));
        Aioquic {
            child,
            port,
            counts,
            _dir: dir,
        }
    }

    /// (answered, reset) as the server counted them.
    fn counts(&self) -> (u64, u64) {
        let text = std::fs::read_to_string(&self.counts).unwrap();
        let mut n = text.split_whitespace().map(|n| n.parse().unwrap());
        (n.next().unwrap(), n.next().unwrap())
    }
}

impl Drop for Aioquic {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The Python with aioquic: `H3_PYTHON`, else the venv `./dev test` makes.
fn python() -> PathBuf {
    if let Some(p) = std::env::var_os("H3_PYTHON") {
        return p.into();
    }
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/h3-venv/bin/python");
    assert!(
        venv.exists(),
        "{} is missing: run ./dev test (it makes target/h3-venv with aioquic from PyPI), or \
         set H3_PYTHON to a Python that has aioquic",
        venv.display()
    );
    venv
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn against_aioquic_counts_match_and_untrusted_or_reset_requests_are_named() {
    // A server certificate of its own (no CA flag, so it can be trusted as it is).
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec!["127.0.0.1".to_string()])
        .unwrap()
        .self_signed(&key)
        .unwrap();
    let server = Aioquic::start(&cert.pem(), &key.serialize_pem());
    let dir = tempfile::tempdir().unwrap();
    let trusted = write(dir.path(), "server.pem", &cert.pem());
    let base = format!("https://127.0.0.1:{}", server.port);
    let h3 = "[http]\nversions = [\"h3\"]\n";
    let started = Instant::now();

    let f = probe(
        &base,
        "batch",
        1,
        3,
        &format!("{h3}[tls]\nca_file = {trusted:?}"),
        &[("BATCH", "4")],
    )
    .await;
    assert_eq!(f.scenario("default", "failed"), 0, "{}", first_error(&f));
    assert_eq!(http_reqs(&f), 12);
    assert_eq!(
        server.counts(),
        (12, 0),
        "the server answered each request counted"
    );
    assert_eq!(by_proto(&f, "HTTP/3"), 12);
    assert_eq!(f.json["connections"]["opened"]["HTTP/3"], 1);

    // Trusting only another certificate: refused with the reason, nothing sent.
    // (Named apart: one of the same name would be refused as a bad signature instead.)
    let mut other = rcgen::CertificateParams::new(vec!["127.0.0.1".to_string()]).unwrap();
    other
        .distinguished_name
        .push(rcgen::DnType::CommonName, "another server");
    let other = other
        .self_signed(&rcgen::KeyPair::generate().unwrap())
        .unwrap();
    let other = write(dir.path(), "other.pem", &other.pem());
    let f = probe(
        &base,
        "paced",
        1,
        2,
        &format!("{h3}[tls]\nca_file = {other:?}"),
        &[],
    )
    .await;
    let message = first_error(&f);
    assert!(
        message.contains("QUIC handshake failed")
            && message.contains("not signed by a trusted authority"),
        "{message}"
    );
    assert_eq!(f.json["http"]["succeeded"], 0);
    assert_eq!(f.json["http"]["not_sent"]["tls"], 2, "{}", f.json["http"]);
    assert_eq!(server.counts(), (12, 0), "no request reached the server");

    // A stream the server resets: a protocol error naming the code.
    let f = probe(
        &format!("{base}/reset"),
        "paced",
        1,
        2,
        &format!("{h3}[tls]\nca_file = {trusted:?}"),
        &[],
    )
    .await;
    let message = first_error(&f);
    assert!(
        message.contains("stream reset by the server with code H3_REQUEST_REJECTED (0x10b)"),
        "{message}"
    );
    assert_eq!(server.counts(), (12, 2));
    assert_eq!(
        f.json["http"]["errors"]["protocol"], 2,
        "{}",
        f.json["http"]
    );
    assert!(started.elapsed() < Duration::from_secs(30));
}

/// Passes and fails of check `name` in summary.json.
fn check(f: &common::Finished, name: &str) -> (u64, u64) {
    let checks = f.json["checks"].as_array().expect("checks");
    let c = checks
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no check {name:?} in {checks:?}"));
    (c["passes"].as_u64().unwrap(), c["fails"].as_u64().unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_request_goes_over_the_version_it_asks_for_on_one_origin() {
    // One origin as real servers are: https on a TCP port and HTTP/3 on the same port
    // number over UDP (UDP ports are apart from TCP's, so it is free but for a rare
    // clash with another program, which the bind would name).
    let tls = DemoTls::generate(&["127.0.0.1"]).unwrap();
    let mut server = DemoServer::start_tls(
        "127.0.0.1:0".parse().unwrap(),
        DemoConfig::default(),
        tls.server_config().unwrap(),
    )
    .await
    .unwrap();
    let udp = server.also_h3(server.addr(), &tls).unwrap();
    assert_eq!(udp.port(), server.addr().port());
    let dir = tempfile::tempdir().unwrap();
    let ca = write(dir.path(), "ca.pem", &tls.ca_pem);
    // No `[http] versions`: the run's default (h2 and http/1.1, no HTTP/3) would send
    // all of them over HTTP/2; each request's own version wins.
    let config = format!(
        "[scenarios.default]\nexecutor = \"per-vu-iterations\"\nvus = 2\niterations = 2\n\
         [thresholds]\nallow_missing = true\n\"http_reqs{{proto:HTTP/3}}\" = [\"count>=0\"]\n\
         \"http_reqs{{proto:HTTP/2}}\" = [\"count>=0\"]\n\
         \"http_reqs{{proto:HTTP/1.1}}\" = [\"count>=0\"]\n\
         \"http_reqs{{name:/h3,proto:HTTP/3}}\" = [\"count>=0\"]\n\
         \"http_reqs{{name:/h1,proto:HTTP/1.1}}\" = [\"count>=0\"]\n\
         \"http_reqs{{name:/h2,proto:HTTP/2}}\" = [\"count>=0\"]\n\
         [tls]\nca_file = {ca:?}\n"
    );
    let base = server.base_url();
    assert!(base.starts_with("https://"), "{base}");
    let f = run(
        "http_probe",
        &config,
        &[("BASE_URL", &base), ("MODE", "versions")],
    )
    .await
    .expect("run completes");
    assert_eq!(f.scenario("default", "failed"), 0, "{}", first_error(&f));
    // 4 iterations: HTTP/3 twice (alone and in the batch), HTTP/1.1 twice, HTTP/2 once.
    assert_eq!(http_reqs(&f), 20);
    assert_eq!(server.requests_served(), 20, "the server saw each");
    assert_eq!(by_proto(&f, "HTTP/3"), 8);
    assert_eq!(by_proto(&f, "HTTP/1.1"), 8);
    assert_eq!(by_proto(&f, "HTTP/2"), 4);
    assert_eq!(observed(&f, "http_reqs{name:/h3,proto:HTTP/3}"), 8);
    assert_eq!(observed(&f, "http_reqs{name:/h1,proto:HTTP/1.1}"), 8);
    assert_eq!(observed(&f, "http_reqs{name:/h2,proto:HTTP/2}"), 4);
    assert_eq!(check(&f, "each version answered 200"), (4, 0));
    assert_eq!(
        check(&f, "HTTP/3 of an http:// URL is refused as invalid"),
        (4, 0),
        "asked of http://, HTTP/3 is refused, not sent over TCP"
    );
    // One connection of each version per VU: the HTTP/1.1 one serves the VU's two
    // HTTP/1.1 requests in turn, the QUIC one its single and batched HTTP/3 requests.
    let c = &f.json["connections"];
    assert_eq!(c["opened"]["HTTP/3"], 2, "{c}");
    assert_eq!(c["opened"]["HTTP/2"], 2, "{c}");
    assert_eq!(c["opened"]["HTTP/1.1"], 2, "{c}");
    assert_eq!(c["tls_handshakes"]["HTTP/3"], 2, "{c}");
    assert_eq!(server.connections_accepted(), 6);
    server.shutdown().await;
}
