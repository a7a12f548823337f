//! What a hostile registry cannot do to `host pull`: a tiny HTTP registry in the test
//! (std's TcpListener on 127.0.0.1, one thread per connection) serves a manifest whose
//! component layer declares 1,000 bytes, then streams hundreds of MiB as that blob.
//! The host stops at the declared size with a clear error and keeps its peak RSS
//! (VmHWM of the `host pull` child, read from /proc while it runs) small; before, it
//! read the blob whole (up to 1 GiB) and copied it. Annotations holding terminal
//! escapes are printed escaped, and a reference whose repository walks out with `..`
//! is refused before any request.

use sha2::{Digest, Sha256};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Peak RSS the host may reach while refusing an oversized blob.
const MAX_RSS_KIB: u64 = 120 * 1024;

/// Past this the `host` child is killed: the test has failed already.
const KILL_RSS_KIB: u64 = 500 * 1024;

/// What the hostile registry serves.
#[derive(Clone)]
pub(crate) struct Behaviour {
    /// The manifest's annotations (JSON object text).
    pub annotations: String,
    /// The size the manifest declares for the component layer.
    pub declared: u64,
    /// Bytes served as the blob (a valid component header, then zeros).
    pub served: u64,
    /// A real blob instead: the manifest then names its digest and size.
    pub blob: Option<Vec<u8>>,
}

/// A registry on 127.0.0.1 that answers every manifest request with one manifest and
/// every blob request with `served` bytes; it counts the paths it was asked.
pub(crate) struct HostileRegistry {
    /// `127.0.0.1:port`.
    pub addr: String,
    /// Blob bytes written to clients so far.
    pub blob_bytes: Arc<AtomicU64>,
    /// Request paths seen.
    pub paths: Arc<std::sync::Mutex<Vec<String>>>,
}

impl HostileRegistry {
    pub(crate) fn start(behaviour: Behaviour) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let blob_bytes = Arc::new(AtomicU64::new(0));
        let paths = Arc::new(std::sync::Mutex::new(Vec::new()));
        let (counted, seen) = (blob_bytes.clone(), paths.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { return };
                let (b, counted, seen) = (behaviour.clone(), counted.clone(), seen.clone());
                std::thread::spawn(move || serve(stream, &b, &counted, &seen));
            }
        });
        Self {
            addr,
            blob_bytes,
            paths,
        }
    }
}

/// The digest the manifest names: the real blob's, else of bytes nobody serves (the
/// check must fail).
fn layer_digest(b: &Behaviour) -> String {
    let bytes = b.blob.as_deref().unwrap_or(b"the declared component");
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

fn manifest(b: &Behaviour) -> Vec<u8> {
    let config = b"{}";
    format!(
        r#"{{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json",
"config":{{"mediaType":"application/vnd.wasm.config.v0+json","digest":"sha256:{}","size":2}},
"layers":[{{"mediaType":"application/wasm","digest":"{}","size":{}}}],
"annotations":{}}}"#,
        hex::encode(Sha256::digest(config)),
        layer_digest(b),
        b.blob.as_ref().map_or(b.declared, |blob| blob.len() as u64),
        b.annotations
    )
    .into_bytes()
}

fn serve(
    mut stream: TcpStream,
    b: &Behaviour,
    counted: &AtomicU64,
    seen: &std::sync::Mutex<Vec<String>>,
) {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match stream.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => return,
        }
    }
    let head = String::from_utf8_lossy(&head).to_string();
    let path = head.split(' ').nth(1).unwrap_or("").to_string();
    seen.lock().unwrap().push(path.clone());
    if path.contains("/manifests/") {
        let body = manifest(b);
        let _ = write!(
            stream,
            "HTTP/1.1 200 OK\r\ncontent-type: application/vnd.oci.image.manifest.v1+json\r\n\
             content-length: {}\r\nconnection: close\r\n\r\n",
            body.len()
        );
        let _ = stream.write_all(&body);
    } else if let (true, Some(blob)) = (path.contains("/blobs/"), &b.blob) {
        let _ = write!(
            stream,
            "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
            blob.len()
        );
        let _ = stream.write_all(blob);
    } else if path.contains("/blobs/") {
        let _ = write!(
            stream,
            "HTTP/1.1 200 OK\r\ncontent-type: application/octet-stream\r\n\
             content-length: {}\r\nconnection: close\r\n\r\n",
            b.served
        );
        let mut chunk = vec![0u8; 1 << 20];
        chunk[..8].copy_from_slice(b"\0asm\x0d\0\x01\0");
        let mut left = b.served;
        while left > 0 {
            let n = left.min(chunk.len() as u64) as usize;
            if stream.write_all(&chunk[..n]).is_err() {
                return;
            }
            counted.fetch_add(n as u64, Ordering::Relaxed);
            left -= n as u64;
            chunk[..8].fill(0);
        }
    } else {
        let _ = stream
            .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}");
    }
}

/// What a `host` child left: exit success, stdout, stderr, peak RSS.
pub(crate) struct Ran {
    pub success: bool,
    pub stdout: String,
    pub stderr: String,
    pub peak_kib: u64,
    pub killed: bool,
}

/// Runs `host args` with its own cache folder, watching its peak RSS.
pub(crate) fn host(args: &[&str]) -> Ran {
    let cache = tempfile::tempdir().unwrap();
    let out = cache.path().join("stdout.txt");
    let err = cache.path().join("stderr.txt");
    let mut child = Command::new(env!("CARGO_BIN_EXE_host"))
        .args(args)
        .env("HOST_CACHE_DIR", cache.path())
        .env("DOCKER_CONFIG", cache.path())
        .env_remove("HOST_PLAIN_HTTP")
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .unwrap();
    let status_file = PathBuf::from(format!("/proc/{}/status", child.id()));
    let (mut peak, mut killed) = (0, false);
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(hwm) = std::fs::read_to_string(&status_file).ok().and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        }) {
            peak = peak.max(hwm);
        }
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if peak > KILL_RSS_KIB || Instant::now() > deadline {
            killed = true;
            let _ = child.kill();
            break child.wait().unwrap();
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    eprintln!("host {}: peak RSS {} MiB", args.join(" "), peak / 1024);
    Ran {
        success: status.success() && !killed,
        stdout: std::fs::read_to_string(out).unwrap(),
        stderr: std::fs::read_to_string(err).unwrap(),
        peak_kib: peak,
        killed,
    }
}

#[test]
fn a_blob_larger_than_its_declared_size_is_cut_off_at_that_size() {
    let registry = HostileRegistry::start(Behaviour {
        annotations: "{}".into(),
        declared: 1000,
        served: 300 << 20,
        blob: None,
    });
    let reference = format!("{}/team/big:1", registry.addr);
    let ran = host(&["pull", &reference]);
    assert!(
        !ran.killed,
        "the host was killed at a peak RSS of {} MiB",
        ran.peak_kib / 1024
    );
    assert!(!ran.success, "the pull succeeded: {}", ran.stdout);
    assert!(
        ran.stderr
            .contains("more than the 1000 bytes the manifest declares"),
        "{}",
        ran.stderr
    );
    assert!(
        ran.peak_kib < MAX_RSS_KIB,
        "peak RSS {} MiB",
        ran.peak_kib / 1024
    );
    eprintln!(
        "the registry wrote {} MiB of blob before the host hung up",
        registry.blob_bytes.load(Ordering::Relaxed) >> 20
    );
}

#[test]
fn a_manifest_declaring_a_component_over_the_cap_is_refused_before_the_download() {
    let registry = HostileRegistry::start(Behaviour {
        annotations: "{}".into(),
        declared: 5 << 30,
        served: 10,
        blob: None,
    });
    let reference = format!("{}/team/big:1", registry.addr);
    let ran = host(&["pull", &reference]);
    assert!(!ran.success);
    assert!(
        ran.stderr
            .contains("declares a component of 5368709120 bytes"),
        "{}",
        ran.stderr
    );
    assert!(
        !registry
            .paths
            .lock()
            .unwrap()
            .iter()
            .any(|p| p.contains("/blobs/")),
        "the blob was asked for"
    );
}

#[test]
fn references_that_walk_out_of_the_repository_are_refused_before_any_request() {
    let registry = HostileRegistry::start(Behaviour {
        annotations: "{}".into(),
        declared: 1000,
        served: 1000,
        blob: None,
    });
    for repository in ["../../../v2/x", "team/../other", "./x"] {
        let reference = format!("{}/{repository}:1", registry.addr);
        let ran = host(&["pull", &reference]);
        assert!(!ran.success, "{reference} was pulled");
        assert!(
            ran.stderr.contains("has a `.` or `..` part"),
            "{}",
            ran.stderr
        );
    }
    assert!(
        registry.paths.lock().unwrap().is_empty(),
        "{:?}",
        registry.paths.lock().unwrap()
    );
}

#[test]
fn annotations_with_terminal_escapes_are_printed_escaped() {
    let registry = HostileRegistry::start(Behaviour {
        annotations: r#"{"org.opencontainers.image.title":"ok\u001b[2J\u001b]0;pwned\u0007",
            "org.opencontainers.image.description":"line\nforged \u202etxt.exe"}"#
            .into(),
        declared: 0,
        served: 0,
        blob: Some(b"\0asm\x0d\0\x01\0 a component".to_vec()),
    });
    let reference = format!("{}/team/escapes:1", registry.addr);
    let ran = host(&["pull", &reference]);
    assert!(ran.success, "{}\n{}", ran.stdout, ran.stderr);
    for raw in ['\x1b', '\x07', '\u{202e}'] {
        assert!(
            !ran.stdout.contains(raw),
            "{raw:?} printed raw: {:?}",
            ran.stdout
        );
    }
    assert!(
        ran.stdout.contains("ok\\x1b[2J\\x1b]0;pwned\\x07"),
        "{}",
        ran.stdout
    );
    assert!(
        ran.stdout.contains("line\\nforged \\u{202e}txt.exe"),
        "{}",
        ran.stdout
    );
    assert!(
        !ran.stdout.lines().any(|l| l.starts_with("forged")),
        "{}",
        ran.stdout
    );
}
