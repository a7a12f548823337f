//! Plugins shared through a real OCI registry: Debian's `docker-registry` (the CNCF
//! distribution registry), started by each test on a free loopback port with its
//! storage in a temp folder, once open and once behind htpasswd (bcrypt) Basic auth.
//! `host push`, `host pull`, `host inspect` and `host run` by reference; the manifest
//! read back with plain HTTP; a wrong digest, a moved tag, a missing credential and an
//! unreachable registry refused with what to do; a pinned plugin run from the cache
//! with the registry stopped; distributed workers pulling the plugin by digest into
//! caches of their own; `host push DIR` building a project first.

use demo_target::{DemoConfig, DemoServer};
use sha2::{Digest, Sha256};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::support as common;

/// An HTTP answer: status, headers (names lowercased), body.
type Answer = (u16, Vec<(String, String)>, Vec<u8>);

/// A `docker-registry serve` child on 127.0.0.1, killed when dropped.
struct Registry {
    child: Option<Child>,
    addr: String,
    dir: tempfile::TempDir,
}

impl Registry {
    fn start(htpasswd: Option<&Path>) -> Registry {
        let auth = match htpasswd {
            Some(file) => format!(
                "auth:\n  htpasswd:\n    realm: basic-realm\n    path: {}\n",
                file.display()
            ),
            None => String::new(),
        };
        Registry::with_auth(&auth)
    }

    /// A registry with `auth` as its config's `auth:` section (YAML, or nothing).
    fn with_auth(auth: &str) -> Registry {
        let program = "docker-registry";
        let dir = tempfile::tempdir().unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let addr = format!("127.0.0.1:{port}");
        let config = dir.path().join("config.yml");
        std::fs::write(
            &config,
            format!(
                "version: 0.1\nlog:\n  level: warn\n  accesslog:\n    disabled: true\nstorage:\n  filesystem:\n    rootdirectory: {}\n  delete:\n    enabled: true\nhttp:\n  addr: {addr}\n{auth}",
                dir.path().join("data").display()
            ),
        )
        .unwrap();
        let log = std::fs::File::create(dir.path().join("registry.log")).unwrap();
        let child = Command::new(program)
            .arg("serve")
            .arg(&config)
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| {
                panic!("cannot start {program} ({e}): install Debian's docker-registry package (./dev test does)")
            });
        let registry = Registry {
            child: Some(child),
            addr,
            dir,
        };
        let deadline = Instant::now() + Duration::from_secs(15);
        while registry.get("/v2/", &[]).is_none() {
            assert!(
                Instant::now() < deadline,
                "the registry did not answer on {} within 15 s: {}",
                registry.addr,
                std::fs::read_to_string(registry.dir.path().join("registry.log"))
                    .unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        registry
    }

    fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// A plain-HTTP GET: (status, headers lowercased, body), or None when nothing answers.
    fn get(&self, path: &str, headers: &[(&str, &str)]) -> Option<Answer> {
        let mut stream = std::net::TcpStream::connect(&self.addr).ok()?;
        stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
        let mut head = format!(
            "GET {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n",
            self.addr
        );
        for (k, v) in headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str("\r\n");
        stream.write_all(head.as_bytes()).ok()?;
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw).ok()?;
        let split = raw.windows(4).position(|w| w == b"\r\n\r\n")?;
        let head = String::from_utf8_lossy(&raw[..split]).to_string();
        let mut lines = head.lines();
        let status = lines.next()?.split(' ').nth(1)?.parse().ok()?;
        let headers = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
            .collect();
        Some((status, headers, raw[split + 4..].to_vec()))
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The host binary with its own cache and Docker config folders.
struct Host {
    cache: tempfile::TempDir,
    docker: tempfile::TempDir,
}

impl Host {
    fn new() -> Host {
        Host {
            cache: tempfile::tempdir().unwrap(),
            docker: tempfile::tempdir().unwrap(),
        }
    }

    fn run(&self, args: &[&str]) -> Output {
        self.run_with_stdin(args, "")
    }

    fn run_with_stdin(&self, args: &[&str], stdin: &str) -> Output {
        let mut child = Command::new(env!("CARGO_BIN_EXE_host"))
            .args(args)
            .env("HOST_CACHE_DIR", self.cache.path())
            .env("DOCKER_CONFIG", self.docker.path())
            .env_remove("HOST_PLAIN_HTTP")
            .current_dir(self.cache.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the host binary runs");
        child
            .stdin
            .take()
            .unwrap()
            .write_all(stdin.as_bytes())
            .unwrap();
        child.wait_with_output().unwrap()
    }
}

fn text(out: &Output) -> String {
    format!(
        "status {}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn ok(out: Output) -> String {
    assert!(out.status.success(), "{}", text(&out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn refused(out: Output) -> String {
    assert!(!out.status.success(), "expected a refusal: {}", text(&out));
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The value after `label` on a line of `out`.
fn field(out: &str, label: &str) -> String {
    out.lines()
        .find_map(|l| l.trim().strip_prefix(label))
        .unwrap_or_else(|| panic!("no {label:?} in:\n{out}"))
        .trim()
        .to_string()
}

fn sha256_of(path: &Path) -> String {
    hex::encode(Sha256::digest(std::fs::read(path).unwrap()))
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plugins_go_through_an_open_registry_and_run_pinned_offline() {
    let target = DemoServer::start("127.0.0.1:0".parse().unwrap(), DemoConfig::default())
        .await
        .unwrap();
    let base = format!("BASE_URL={}", target.base_url());
    let mut registry = Registry::start(None);
    let host = Host::new();
    let hello = common::plugin("hello");
    let hello_sha = sha256_of(&hello);
    let reference = format!("{}/team/hello:1.0", registry.addr);

    let pushed = ok(host.run(&["push", hello.to_str().unwrap(), &reference]));
    assert_eq!(field(&pushed, "component sha256:"), hello_sha, "{pushed}");
    let digest = field(&pushed, "digest:");
    assert!(
        pushed.contains(&format!(
            "plugin = {{ oci = \"{reference}\", sha256 = \"{hello_sha}\" }}"
        )),
        "{pushed}"
    );

    // The manifest as any registry client reads it, over plain HTTP.
    let (status, headers, body) = registry
        .get(
            "/v2/team/hello/manifests/1.0",
            &[("Accept", "application/vnd.oci.image.manifest.v1+json")],
        )
        .unwrap();
    assert_eq!(status, 200);
    let header = |name: &str| {
        headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    };
    assert_eq!(
        header("content-type").as_deref(),
        Some("application/vnd.oci.image.manifest.v1+json")
    );
    assert_eq!(
        header("docker-content-digest").as_deref(),
        Some(digest.as_str())
    );
    assert_eq!(
        format!("sha256:{}", hex::encode(Sha256::digest(&body))),
        digest
    );
    let manifest: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(
        manifest["config"]["mediaType"],
        "application/vnd.wasm.config.v0+json"
    );
    assert_eq!(manifest["layers"].as_array().unwrap().len(), 1);
    assert_eq!(manifest["layers"][0]["mediaType"], "application/wasm");
    assert_eq!(
        manifest["layers"][0]["digest"],
        format!("sha256:{hello_sha}").as_str()
    );
    let annotations = &manifest["annotations"];
    assert_eq!(annotations["org.opencontainers.image.title"], "hello");
    assert!(annotations["org.opencontainers.image.description"]
        .as_str()
        .unwrap()
        .contains("GET"));
    assert!(annotations["org.opencontainers.image.version"].is_string());
    let config_digest = manifest["config"]["digest"].as_str().unwrap();
    let (status, _, config) = registry
        .get(&format!("/v2/team/hello/blobs/{config_digest}"), &[])
        .unwrap();
    assert_eq!(status, 200);
    let config: serde_json::Value = serde_json::from_slice(&config).unwrap();
    assert_eq!(
        (config["architecture"].as_str(), config["os"].as_str()),
        (Some("wasm"), Some("wasip2"))
    );
    assert_eq!(
        config["layerDigests"][0],
        format!("sha256:{hello_sha}").as_str()
    );

    // Pulled by digest: the same bytes as the file pushed.
    let copy = host.cache.path().join("copy.wasm");
    let by_digest = format!("{}/team/hello@{digest}", registry.addr);
    let pulled = ok(host.run(&["pull", &by_digest, "-o", copy.to_str().unwrap()]));
    assert_eq!(field(&pulled, "component sha256:"), hello_sha, "{pulled}");
    assert_eq!(
        std::fs::read(&copy).unwrap(),
        std::fs::read(&hello).unwrap()
    );

    let inspected = ok(host.run(&["inspect", &reference]));
    assert!(
        inspected.contains("hello") && inspected.contains(&hello_sha),
        "{inspected}"
    );

    let ran = ok(host.run(&[
        "run",
        &reference,
        "--iterations",
        "2",
        "--vus",
        "1",
        "-e",
        &base,
        "--quiet",
    ]));
    assert!(ran.contains("results:"), "{ran}");

    // Pinned in a run config, with no plugin on the command line.
    let pinned = write(
        host.cache.path(),
        "pinned.toml",
        &format!("plugin = {{ oci = \"{reference}\", sha256 = \"{hello_sha}\" }}\n"),
    );
    let pinned = pinned.to_str().unwrap();
    ok(host.run(&[
        "run",
        "--config",
        pinned,
        "--iterations",
        "1",
        "--vus",
        "1",
        "-e",
        &base,
        "--quiet",
    ]));

    // A wrong pinned digest is refused naming both.
    let wrong = "0".repeat(64);
    let bad_pin = write(
        host.cache.path(),
        "wrong.toml",
        &format!("plugin = {{ oci = \"{reference}\", sha256 = \"{wrong}\" }}\n"),
    );
    let err = refused(host.run(&["run", "--config", bad_pin.to_str().unwrap(), "-e", &base]));
    assert!(
        err.contains(&wrong) && err.contains(&hello_sha) && err.contains("pin"),
        "{err}"
    );
    // A digest the registry does not have.
    let err = refused(host.run(&[
        "pull",
        &format!("{}/team/hello@sha256:{wrong}", registry.addr),
    ]));
    assert!(
        err.contains("is not in the registry") && err.contains("check"),
        "{err}"
    );

    // The tag moves to another plugin: the pinned run is refused naming both digests.
    let other = common::plugin("notes");
    let other_sha = sha256_of(&other);
    ok(host.run(&["push", other.to_str().unwrap(), &reference]));
    let err = refused(host.run(&[
        "run",
        "--config",
        pinned,
        "--iterations",
        "1",
        "--vus",
        "1",
        "-e",
        &base,
    ]));
    assert!(
        err.contains("moved") && err.contains(&hello_sha) && err.contains(&other_sha),
        "{err}"
    );

    // With the registry stopped, the pinned (cached) plugin still runs, with a warning;
    // an unpinned reference cannot be resolved, and says why.
    registry.stop();
    let offline = host.run(&[
        "run",
        "--config",
        pinned,
        "--iterations",
        "1",
        "--vus",
        "1",
        "-e",
        &base,
        "--quiet",
    ]);
    assert!(offline.status.success(), "{}", text(&offline));
    let warned = String::from_utf8_lossy(&offline.stderr);
    assert!(
        warned.contains("cannot reach") && warned.contains("from the cache"),
        "{warned}"
    );
    let err = refused(host.run(&["run", &reference, "-e", &base]));
    assert!(
        err.contains("cannot reach the registry") && err.contains("check that it runs"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_registry_behind_basic_auth_takes_logins_from_docker_config() {
    let secrets = tempfile::tempdir().unwrap();
    let htpasswd = secrets.path().join("htpasswd");
    let made = Command::new("htpasswd")
        .args(["-Bbc", htpasswd.to_str().unwrap(), "tester", "s3cret"])
        .output()
        .expect("htpasswd runs: install Debian's apache2-utils package (./dev test does)");
    assert!(made.status.success(), "{}", text(&made));
    let registry = Registry::start(Some(&htpasswd));
    let host = Host::new();
    let hello = common::plugin("hello");
    let hello = hello.to_str().unwrap();
    let reference = format!("{}/team/hello:2.0", registry.addr);

    let err = refused(host.run(&["push", hello, &reference]));
    assert!(
        err.contains("wants credentials") && err.contains(&format!("host login {}", registry.addr)),
        "{err}"
    );
    let err = refused(host.run(&["pull", &reference]));
    assert!(err.contains("wants credentials"), "{err}");

    let err = refused(host.run_with_stdin(
        &["login", &registry.addr, "-u", "tester", "--password-stdin"],
        "wrong\n",
    ));
    assert!(err.contains("refused the credentials of tester"), "{err}");
    assert!(
        !host.docker.path().join("config.json").exists(),
        "a refused login was stored"
    );
    ok(host.run_with_stdin(
        &["login", &registry.addr, "-u", "tester", "--password-stdin"],
        "s3cret\n",
    ));
    let config_path = host.docker.path().join("config.json");
    let config: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&config_path).unwrap()).unwrap();
    assert!(
        config["auths"][&registry.addr]["auth"].is_string(),
        "{config}"
    );
    use std::os::unix::fs::PermissionsExt as _;
    assert_eq!(
        std::fs::metadata(&config_path)
            .unwrap()
            .permissions()
            .mode()
            & 0o777,
        0o600
    );

    let pushed = ok(host.run(&["push", hello, &reference]));
    let sha = field(&pushed, "component sha256:");
    let pulled = ok(host.run(&["pull", &reference, "--sha256", &sha]));
    assert!(pulled.contains(&sha), "{pulled}");
    ok(host.run(&["inspect", &reference]));
    // Without the stored login the same pull is refused again.
    std::fs::remove_file(&config_path).unwrap();
    let err = refused(host.run(&["pull", &reference]));
    assert!(err.contains("host login"), "{err}");
}

#[test]
fn an_unreachable_registry_says_what_to_check() {
    let host = Host::new();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let err = refused(host.run(&["pull", &format!("127.0.0.1:{port}/team/x:1")]));
    assert!(
        err.contains("cannot reach the registry http://127.0.0.1:")
            && err.contains("check that it runs"),
        "{err}"
    );
    // A file path that does not exist is not taken for a reference.
    let err = refused(host.run(&["inspect", "missing/plugin.wasm"]));
    assert!(err.contains("cannot read plugin"), "{err}");
}

/// A token service as Docker's token protocol has it: Basic credentials in, a JWT out
/// (ES256, its certificate in `x5c`, which the registry trusts through its
/// `rootcertbundle`), granting the scope asked for. Counts the tokens it issued.
struct TokenService {
    realm: String,
    root_pem: String,
    issued: std::sync::Arc<std::sync::atomic::AtomicU64>,
    asked: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

async fn token_service(user: &'static str, password: &'static str) -> TokenService {
    use base64::Engine as _;
    use rcgen::SigningKey as _;
    use tokio::io::AsyncWriteExt;
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec!["token-issuer".to_string()])
        .unwrap()
        .self_signed(&key)
        .unwrap();
    let x5c = base64::engine::general_purpose::STANDARD.encode(cert.der());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let realm = format!("http://{}/token", listener.local_addr().unwrap());
    let issued = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let asked = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let expected = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"))
    );
    let key = std::sync::Arc::new(key);
    let (issued2, asked2) = (issued.clone(), asked.clone());
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let (key, x5c, expected, issued, asked) = (
                key.clone(),
                x5c.clone(),
                expected.clone(),
                issued2.clone(),
                asked2.clone(),
            );
            tokio::spawn(async move {
                let Some(head) = common::servers::head_text(&mut stream).await else {
                    return;
                };
                let target = head.split(' ').nth(1).unwrap_or("/").to_string();
                let url = url::Url::parse(&format!("http://x{target}")).unwrap();
                let scope = url
                    .query_pairs()
                    .find(|(k, _)| k == "scope")
                    .map(|(_, v)| v.to_string());
                asked
                    .lock()
                    .unwrap()
                    .push(scope.clone().unwrap_or_default());
                let authorized = head.lines().any(|l| {
                    l.to_ascii_lowercase().starts_with("authorization:")
                        && l[14..].trim() == expected
                });
                let answer = if !authorized {
                    "HTTP/1.1 401 Unauthorized\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                        .to_string()
                } else {
                    let access: Vec<serde_json::Value> = scope
                        .iter()
                        .filter_map(|s| {
                            let mut parts = s.splitn(3, ':');
                            let (kind, name, actions) = (parts.next()?, parts.next()?, parts.next()?);
                            Some(serde_json::json!({ "type": kind, "name": name, "actions": actions.split(',').collect::<Vec<_>>() }))
                        })
                        .collect();
                    let now = std::time::SystemTime::now()
                        .duration_since(std::time::UNIX_EPOCH)
                        .unwrap()
                        .as_secs();
                    let b64 = |v: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v);
                    let header = serde_json::json!({ "typ": "JWT", "alg": "ES256", "x5c": [x5c] });
                    let claims = serde_json::json!({
                        "iss": "test-issuer", "sub": "tester", "aud": "test-registry",
                        "exp": now + 300, "nbf": now - 10, "iat": now - 10,
                        "jti": format!("{now}-{}", issued.load(std::sync::atomic::Ordering::Relaxed)),
                        "access": access,
                    });
                    let signing_input = format!(
                        "{}.{}",
                        b64(header.to_string().as_bytes()),
                        b64(claims.to_string().as_bytes())
                    );
                    let der = key.sign(signing_input.as_bytes()).unwrap();
                    let token = format!("{signing_input}.{}", b64(&der_to_raw(&der)));
                    issued.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let body = serde_json::json!({ "token": token }).to_string();
                    format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    )
                };
                let _ = stream.write_all(answer.as_bytes()).await;
            });
        }
    });
    TokenService {
        realm,
        root_pem: cert.pem(),
        issued,
        asked,
    }
}

/// An ECDSA signature from ASN.1 DER (`SEQUENCE { r, s }`) to JWS's 64 bytes r‖s.
fn der_to_raw(der: &[u8]) -> Vec<u8> {
    let mut at = 2;
    if der[1] & 0x80 != 0 {
        at += usize::from(der[1] & 0x7f);
    }
    let mut raw = Vec::new();
    for _ in 0..2 {
        assert_eq!(der[at], 2, "an INTEGER");
        let len = usize::from(der[at + 1]);
        let mut value = &der[at + 2..at + 2 + len];
        while value.len() > 32 && value[0] == 0 {
            value = &value[1..];
        }
        raw.extend(std::iter::repeat_n(0u8, 32 - value.len()));
        raw.extend_from_slice(value);
        at += 2 + len;
    }
    raw
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_registry_behind_bearer_tokens_is_reached_through_its_token_service() {
    let tokens = token_service("tester", "s3cret").await;
    let dir = tempfile::tempdir().unwrap();
    let bundle = write(dir.path(), "root.pem", &tokens.root_pem);
    let registry = Registry::with_auth(&format!(
        "auth:\n  token:\n    realm: {}\n    service: test-registry\n    issuer: test-issuer\n    rootcertbundle: {}\n",
        tokens.realm,
        bundle.display()
    ));
    let host = Host::new();
    let hello = common::plugin("hello");
    let reference = format!("{}/team/hello:3.0", registry.addr);

    // Anonymous: the token service refuses, and the message says to log in.
    let err = refused(host.run(&["push", hello.to_str().unwrap(), &reference]));
    assert!(
        err.contains("wants credentials") && err.contains("host login"),
        "{err}"
    );
    ok(host.run_with_stdin(
        &["login", &registry.addr, "-u", "tester", "--password-stdin"],
        "s3cret\n",
    ));
    let before = tokens.issued.load(std::sync::atomic::Ordering::Relaxed);
    let pushed = ok(host.run(&["push", hello.to_str().unwrap(), &reference]));
    assert_eq!(field(&pushed, "component sha256:"), sha256_of(&hello));
    assert!(tokens.issued.load(std::sync::atomic::Ordering::Relaxed) > before);
    assert!(
        tokens.asked.lock().unwrap().iter().any(|s| {
            // The registry lists the actions in no fixed order.
            s.strip_prefix("repository:team/hello:")
                .is_some_and(|actions| {
                    let mut actions: Vec<&str> = actions.split(',').collect();
                    actions.sort_unstable();
                    actions == ["pull", "push"]
                })
        }),
        "{:?}",
        tokens.asked.lock().unwrap()
    );
    let copy = dir.path().join("copy.wasm");
    ok(host.run(&["pull", &reference, "-o", copy.to_str().unwrap()]));
    assert_eq!(
        std::fs::read(&copy).unwrap(),
        std::fs::read(&hello).unwrap()
    );
}

/// A `host coordinate` or `host worker` child with its own cache and Docker config
/// (those of `host`), its stderr in a file; killed when dropped.
struct Spawned {
    child: Child,
    log: PathBuf,
}

impl Spawned {
    fn start(host: &Host, name: &str, args: &[&str]) -> Spawned {
        let log = host.cache.path().join(format!("{name}.stderr"));
        let child = Command::new(env!("CARGO_BIN_EXE_host"))
            .args(args)
            .env("HOST_CACHE_DIR", host.cache.path())
            .env("DOCKER_CONFIG", host.docker.path())
            .env(host::trust::TOKEN_ENV, "oci-test-cluster-token-0123456789")
            .env_remove("HOST_PLAIN_HTTP")
            .current_dir(host.cache.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("the host binary runs");
        Spawned { child, log }
    }

    fn stderr(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The first stderr line holding `text`, waiting for it up to `within`.
    fn line(&mut self, text: &str, within: Duration) -> String {
        let deadline = Instant::now() + within;
        loop {
            if let Some(line) = self.stderr().lines().find(|l| l.contains(text)) {
                return line.to_string();
            }
            let gone = self.child.try_wait().unwrap();
            assert!(
                gone.is_none() && Instant::now() < deadline,
                "no line with {text:?} ({gone:?}); stderr:\n{}",
                self.stderr()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The exit code, waiting up to `within` (a hang fails the test).
    fn exit(&mut self, within: Duration) -> Option<i32> {
        let deadline = Instant::now() + within;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status.code();
            }
            assert!(
                Instant::now() < deadline,
                "still running after {within:?}; stderr:\n{}",
                self.stderr()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Spawned {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `host coordinate` of `plugin` (with `extra` flags) for `workers` workers, run by
/// `host`: the coordinator, once it listens, and the address workers dial.
fn coordinate(
    host: &Host,
    name: &str,
    plugin: &str,
    extra: &[&str],
    workers: usize,
    base: &str,
) -> (Spawned, String) {
    let config = write(
        host.cache.path(),
        &format!("{name}.toml"),
        &format!(
            "[scenarios.default]\nexecutor = \"shared-iterations\"\nvus = {workers}\niterations = {}\n",
            5 * workers
        ),
    );
    let out = host.cache.path().join(name);
    let n = workers.to_string();
    let mut args = vec![
        "coordinate",
        plugin,
        "--workers",
        &n,
        "--listen",
        "127.0.0.1:0",
        "--config",
        config.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "-e",
        base,
        "--quiet",
    ];
    args.extend(extra);
    let mut coordinator = Spawned::start(host, name, &args);
    let line = coordinator.line(host::LISTENING, Duration::from_secs(60));
    // `coordinator listening on 127.0.0.1:PORT: waiting for N worker(s)`
    let addr = line.split(host::LISTENING).nth(1).unwrap();
    let addr = addr.split(": ").next().unwrap().to_string();
    (coordinator, addr)
}

/// `host worker` named `name` of the coordinator at `addr`, run by `host`.
fn worker(host: &Host, name: &str, addr: &str, extra: &[&str]) -> Spawned {
    let out = host.cache.path().join(format!("{name}-results"));
    let mut args = vec![
        "worker",
        "--coordinator",
        addr,
        "--name",
        name,
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend(extra);
    Spawned::start(host, name, &args)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_pull_the_plugin_by_digest_and_say_what_to_do_when_they_cannot() {
    let target = DemoServer::start("127.0.0.1:0".parse().unwrap(), DemoConfig::default())
        .await
        .unwrap();
    let base = format!("BASE_URL={}", target.base_url());
    let mut registry = Registry::start(None);
    let coordinator_host = Host::new();
    let hello = common::plugin("hello");
    let hello_sha = sha256_of(&hello);
    let reference = format!("{}/team/hello:1.0", registry.addr);
    let pushed = ok(coordinator_host.run(&["push", hello.to_str().unwrap(), &reference]));
    let digest = field(&pushed, "digest:");
    let blob_in = |host: &Host| {
        host.cache
            .path()
            .join(format!("oci/blobs/sha256/{hello_sha}.wasm"))
    };

    // Two workers, each with a cache of its own, pull the plugin themselves.
    let (mut coordinator, addr) = coordinate(&coordinator_host, "run1", &reference, &[], 2, &base);
    let said = coordinator.line("the workers pull the plugin", Duration::from_secs(5));
    assert!(
        said.contains(&format!("{}/team/hello:1.0@{digest}", registry.addr)),
        "{said}"
    );
    let hosts = [Host::new(), Host::new()];
    let mut workers: Vec<Spawned> = hosts
        .iter()
        .enumerate()
        .map(|(i, h)| worker(h, &format!("w{i}"), &addr, &[]))
        .collect();
    assert_eq!(
        coordinator.exit(Duration::from_secs(120)),
        Some(0),
        "{}",
        coordinator.stderr()
    );
    for (w, h) in workers.iter_mut().zip(&hosts) {
        assert_eq!(w.exit(Duration::from_secs(30)), Some(0), "{}", w.stderr());
        assert_eq!(
            sha256_of(&blob_in(h)),
            hello_sha,
            "the worker's own cache holds the component it pulled"
        );
    }
    let summary = common::summary_json(&common::only_results_dir(
        &coordinator_host.cache.path().join("run1"),
    ));
    let http_reqs = summary["metrics"]["http_reqs"]["count"].as_f64().unwrap() as u64;
    assert_eq!(http_reqs, 10, "{}", summary["metrics"]["http_reqs"]);
    assert_eq!(target.requests_served(), http_reqs);

    // With the registry gone, a coordinator given the digest runs from its cache, and
    // so does a worker that pulled before: a digest names its bytes for good.
    registry.stop();
    let by_digest = format!("{}/team/hello@{digest}", registry.addr);
    let (mut coordinator, addr) = coordinate(&coordinator_host, "run2", &by_digest, &[], 1, &base);
    let mut cached = worker(&hosts[0], "cached", &addr, &[]);
    assert_eq!(
        coordinator.exit(Duration::from_secs(120)),
        Some(0),
        "{}",
        coordinator.stderr()
    );
    assert_eq!(cached.exit(Duration::from_secs(30)), Some(0));

    // A worker that has never pulled it cannot reach the registry: it fails at once,
    // and both sides say what to do.
    let fresh = Host::new();
    let (mut coordinator, addr) = coordinate(&coordinator_host, "run3", &by_digest, &[], 1, &base);
    let started = Instant::now();
    let mut lost = worker(&fresh, "unreachable", &addr, &[]);
    assert_ne!(lost.exit(Duration::from_secs(45)), Some(0));
    assert_ne!(coordinator.exit(Duration::from_secs(45)), Some(0));
    assert!(
        started.elapsed() < Duration::from_secs(40),
        "{:?}",
        started.elapsed()
    );
    let err = lost.stderr();
    assert!(
        err.contains(&format!("cannot pull the plugin {by_digest}"))
            && err.contains("cannot reach the registry")
            && err.contains("give this worker access to the registry")
            && err.contains("--send-plugin"),
        "{err}"
    );
    let err = coordinator.stderr();
    assert!(
        err.contains("worker unreachable") && err.contains("failed: cannot pull the plugin"),
        "{err}"
    );
    assert!(!blob_in(&fresh).exists());

    // Asked to, the coordinator sends the bytes: that worker runs without a registry.
    let (mut coordinator, addr) = coordinate(
        &coordinator_host,
        "run4",
        &by_digest,
        &["--send-plugin"],
        1,
        &base,
    );
    assert!(!coordinator.stderr().contains("the workers pull"));
    let mut sent = worker(&fresh, "sent", &addr, &[]);
    assert_eq!(
        coordinator.exit(Duration::from_secs(120)),
        Some(0),
        "{}",
        coordinator.stderr()
    );
    assert_eq!(
        sent.exit(Duration::from_secs(30)),
        Some(0),
        "{}",
        sent.stderr()
    );
    assert!(
        !blob_in(&fresh).exists(),
        "the bytes came from the coordinator"
    );

    // A worker given the same plugin as a file runs its file: no registry needed.
    let (mut coordinator, addr) = coordinate(&coordinator_host, "run5", &by_digest, &[], 1, &base);
    let mut pinned = worker(
        &fresh,
        "pinned",
        &addr,
        &["--plugin", hello.to_str().unwrap()],
    );
    assert_eq!(
        coordinator.exit(Duration::from_secs(120)),
        Some(0),
        "{}",
        coordinator.stderr()
    );
    assert_eq!(
        pinned.exit(Duration::from_secs(30)),
        Some(0),
        "{}",
        pinned.stderr()
    );
    assert!(!blob_in(&fresh).exists(), "the worker ran its own file");
}

/// `host push DIR` builds the project first (the SDK's dependencies come compiled from
/// the plugins workspace's target folder), then pushes the component it built.
#[test]
fn push_builds_a_project_folder_first() {
    let registry = Registry::start(None);
    let host = Host::new();
    let made = host.run(&["new", "team-probe"]);
    assert!(made.status.success(), "{}", text(&made));
    let project = host.cache.path().join("team-probe");
    let shared_target = Path::new(host::PLUGINS_DIR)
        .ancestors()
        .nth(2)
        .expect("PLUGINS_DIR is plugins/target/wasm32-wasip2/release")
        .to_path_buf();
    let reference = format!("{}/team/probe:0.1.0", registry.addr);
    let out = Command::new(env!("CARGO_BIN_EXE_host"))
        .args(["push", project.to_str().unwrap(), &reference])
        .env("HOST_CACHE_DIR", host.cache.path())
        .env("DOCKER_CONFIG", host.docker.path())
        .env("CARGO_TARGET_DIR", &shared_target)
        .current_dir(host.cache.path())
        .output()
        .unwrap();
    let pushed = ok(out);
    let built = field(&pushed, "built");
    assert!(built.ends_with("team_probe.wasm"), "{pushed}");
    assert!(pushed.contains("pushed team-probe 0.1.0"), "{pushed}");
    assert_eq!(
        field(&pushed, "component sha256:"),
        sha256_of(Path::new(&built))
    );
    // What was pushed is what a pull by the digest printed gives back.
    let by_digest = field(&pushed, "by digest:");
    let pulled = ok(host.run(&["pull", &by_digest]));
    assert!(pulled.contains(&sha256_of(Path::new(&built))), "{pulled}");
}
