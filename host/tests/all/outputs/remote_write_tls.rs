//! `--out prometheus-rw=https://…` end to end: a `host run` child pushes to a TLS
//! receiver on 127.0.0.1 (a CA made here, trusted through `SSL_CERT_FILE`), with k6's
//! `K6_PROMETHEUS_RW_BEARER_TOKEN` and `K6_PROMETHEUS_RW_HEADERS_*`; a refusal's 1 MB
//! body is quoted cut.

use crate::support as common;

use http_body_util::{BodyExt, Full};
use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};
use std::sync::{Arc, Mutex};

/// What the receiver saw: each push's `authorization` and `x-scope-orgid`.
type Seen = Arc<Mutex<Vec<(String, String)>>>;

/// A TLS remote-write receiver that accepts `Bearer good` and refuses anything else
/// with 401 and a 1 MB body; its URL and CA (PEM).
async fn receiver(seen: Seen) -> (String, String) {
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "remote write test CA");
    let ca_cert = ca_params.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca_params, ca_key);
    let key = KeyPair::generate().unwrap();
    let leaf = CertificateParams::new(vec!["127.0.0.1".to_string()])
        .unwrap()
        .signed_by(&key, &issuer)
        .unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
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
    let url = format!("https://{}/api/v1/write", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let (acceptor, seen) = (acceptor.clone(), seen.clone());
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let service = hyper::service::service_fn(
                    move |req: hyper::Request<hyper::body::Incoming>| {
                        let seen = seen.clone();
                        async move {
                            let header = |n: &str| {
                                req.headers()
                                    .get(n)
                                    .and_then(|v| v.to_str().ok())
                                    .unwrap_or("")
                                    .to_string()
                            };
                            let (auth, org) = (header("authorization"), header("x-scope-orgid"));
                            let _ = req.into_body().collect().await;
                            seen.lock().unwrap().push((auth.clone(), org));
                            let resp = if auth == "Bearer good" {
                                hyper::Response::builder()
                                    .status(204)
                                    .body(Full::new(bytes::Bytes::new()))
                            } else {
                                let body = format!("unauthorized {}", "x".repeat(1 << 20));
                                hyper::Response::builder()
                                    .status(401)
                                    .body(Full::new(bytes::Bytes::from(body)))
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
    (url, ca_cert.pem())
}

/// `host run misbehave` for 2 s pushing to `url` with `token`; its stderr.
fn run(url: &str, ca: &std::path::Path, token: &str, dir: &std::path::Path) -> (bool, String) {
    let config = common::write_config(
        dir,
        "[scenarios.default]\nexecutor = \"constant-vus\"\nvus = 1\nduration = \"2s\"\n[env]\nMODE = \"sleep\"\n",
    );
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_host"))
        .arg("run")
        .arg(common::plugin("misbehave"))
        .arg("--config")
        .arg(&config)
        .arg("--quiet")
        .arg("--out")
        .arg(dir.join("out"))
        .arg("--out")
        .arg(format!("prometheus-rw={url}"))
        .env("SSL_CERT_FILE", ca)
        .env("K6_PROMETHEUS_RW_BEARER_TOKEN", token)
        .env("K6_PROMETHEUS_RW_HEADERS_X-Scope-OrgID", "team-a")
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pushes_reach_an_https_endpoint_with_k6s_credentials_and_headers() {
    let seen: Seen = Default::default();
    let (url, ca_pem) = receiver(seen.clone()).await;
    let dir = tempfile::tempdir().unwrap();
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, ca_pem).unwrap();

    let (ok, stderr) = {
        let (url, ca, dir) = (url.clone(), ca.clone(), dir.path().to_path_buf());
        tokio::task::spawn_blocking(move || run(&url, &ca, "good", &dir))
            .await
            .unwrap()
    };
    assert!(ok, "{stderr}");
    assert!(!stderr.contains("push failed"), "{stderr}");
    {
        let seen = seen.lock().unwrap();
        assert!(seen.len() >= 2, "{} pushes", seen.len());
        assert!(
            seen.iter()
                .all(|(a, o)| a == "Bearer good" && o == "team-a"),
            "{seen:?}"
        );
    }

    // Refused: the warning quotes the status and the start of the 1 MB body only.
    let other = tempfile::tempdir().unwrap();
    let (_, stderr) = {
        let (url, ca, dir) = (url.clone(), ca.clone(), other.path().to_path_buf());
        tokio::task::spawn_blocking(move || run(&url, &ca, "wrong-t0ken-9", &dir))
            .await
            .unwrap()
    };
    let warning = stderr
        .lines()
        .find(|l| l.contains("push failed"))
        .unwrap_or_else(|| panic!("{stderr}"));
    assert!(
        warning.contains("HTTP 401 Unauthorized: unauthorized xxx"),
        "{warning}"
    );
    assert!(warning.len() < 2000, "{} bytes", warning.len());
    assert!(
        !stderr.contains("wrong-t0ken-9"),
        "the token is not printed"
    );
}
