//! The lean HTTP/1.1 client against hyper's, request for request: the same sequence
//! goes through a VU's client on each (`[http] client = "lean"` and `"hyper"`) to
//! servers of several kinds, and everything observable must agree: statuses, header
//! fields, bodies byte for byte, error kinds, which timing phases ran, bytes counted
//! each way, the bytes of every request as the server received them, and which
//! requests shared a connection. The servers: a scripted one on raw TCP (plain and
//! TLS) answering each path with bytes written by hand (chunked with extensions and
//! trailers, 1xx before the answer, HEAD, 204, 304, close-delimited HTTP/1.0,
//! keep-alive then close, a close while idle, too many and too large header fields,
//! early closes, resets, bad lengths, garbage, an upgrade), the demo target (hyper's
//! server), and Python's `http.server` (HTTP/1.0).

use crate::config::tls::TlsOptions;
use crate::config::{Http1Client, HttpOptions};
use crate::metrics::{builtin, Recorder, Registry, TagSet, Value};
use crate::net::tls::TlsClient;
use crate::net::{Allowlist, HttpClient, HttpRequest, NetShared};
use bytes::Bytes;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The body cap of the runs (bodies past it fail as too large).
const MAX_BODY: u64 = 1 << 20;

fn shared(client: Http1Client) -> Arc<NetShared> {
    let recorder = Arc::new(Recorder::new(Arc::new(Registry::new())));
    let http = HttpOptions {
        client,
        ..HttpOptions::default()
    };
    let tls = TlsClient::new(TlsOptions {
        insecure_skip_verify: true,
        ..TlsOptions::default()
    });
    Arc::new(
        NetShared::new(
            Allowlist::new(&[]).unwrap(),
            Duration::from_secs(5),
            MAX_BODY,
            recorder,
        )
        .with_http(http)
        .with_tls(Arc::new(tls)),
    )
}

/// One step of a sequence: a request, or a pause (for a server's close to land).
#[derive(Clone)]
enum Step {
    Send(HttpRequest),
    Pause(Duration),
}

fn get(url: &str) -> Step {
    request("GET", url, &[], "")
}

fn request(method: &str, url: &str, headers: &[(&str, &str)], body: &str) -> Step {
    Step::Send(HttpRequest {
        method: method.into(),
        url: url.into(),
        headers: headers
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect(),
        body: Bytes::copy_from_slice(body.as_bytes()),
        ..HttpRequest::default()
    })
}

fn pause(ms: u64) -> Step {
    Step::Pause(Duration::from_millis(ms))
}

/// Whether a request opened a connection (with a TLS handshake) and what it
/// received: compared apart, as hyper's pool is not deterministic there (below).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Conn {
    connected: bool,
    handshake: bool,
    received: u64,
}

/// What a request came to, as far as a plugin or the summary can tell.
#[derive(Debug, Clone, PartialEq)]
enum Seen {
    Response {
        status: u16,
        headers: Vec<(String, Vec<u8>)>,
        body: Vec<u8>,
        body_size: u64,
        /// Its duration is above zero.
        timed: bool,
        /// data_sent.
        sent: u64,
    },
    Failed {
        kind: &'static str,
        /// data_sent (received bytes of a failure depend on where a read stopped).
        sent: u64,
    },
}

/// Sends `steps` through one VU's client of kind `client`; what each request came
/// to, and the connections opened. Each request is tagged with its step number so
/// its bytes can be told apart.
async fn run(
    client: Http1Client,
    steps: &[Step],
    timeout: Duration,
) -> (Vec<(Seen, Option<Conn>)>, u64) {
    let shared = shared(client);
    let mut vu = HttpClient::new(shared.clone());
    let mut results = Vec::new();
    for (i, step) in steps.iter().enumerate() {
        let mut req = match step {
            Step::Send(req) => req.clone(),
            Step::Pause(d) => {
                tokio::time::sleep(*d).await;
                continue;
            }
        };
        req.tags = vec![("step".into(), i.to_string())];
        req.timeout = Some(timeout);
        req.redirects = Some(0);
        results.push((i, vu.send(req, &TagSet::empty()).await));
    }
    let series = shared.recorder.drain();
    let bytes = |metric, step: usize| -> u64 {
        series
            .iter()
            .filter(|((m, tags), _)| {
                *m == metric && tags.get("step") == Some(step.to_string().as_str())
            })
            .map(|(_, v)| match v {
                Value::Counter(c) => *c as u64,
                _ => 0,
            })
            .sum()
    };
    let seen = results
        .into_iter()
        .map(|(i, r)| match r {
            Ok(r) => (
                Seen::Response {
                    status: r.status,
                    headers: r
                        .content
                        .headers
                        .iter()
                        // The time of day differs between the runs.
                        .filter(|(n, _)| *n != http::header::DATE)
                        .map(|(n, v)| (n.as_str().to_owned(), v.as_bytes().to_vec()))
                        .collect(),
                    body: r.content.body,
                    body_size: r.body_size,
                    timed: !r.timings.duration().is_zero(),
                    sent: bytes(builtin::DATA_SENT, i),
                },
                Some(Conn {
                    connected: !r.timings.connecting.is_zero(),
                    handshake: !r.timings.tls_handshaking.is_zero(),
                    received: bytes(builtin::DATA_RECEIVED, i),
                }),
            ),
            Err(e) => (
                Seen::Failed {
                    kind: e.kind().tag(),
                    sent: bytes(builtin::DATA_SENT, i),
                },
                None,
            ),
        })
        .collect();
    let opened = shared
        .connections
        .summary()
        .map_or(0, |s| s.opened.values().sum());
    (seen, opened)
}

/// A server stream the scripted server can also reset (its TCP socket).
trait Raw: AsyncRead + AsyncWrite + Unpin + Send {
    fn tcp(&self) -> &TcpStream;
}

impl Raw for TcpStream {
    fn tcp(&self) -> &TcpStream {
        self
    }
}

impl Raw for tokio_rustls::server::TlsStream<TcpStream> {
    fn tcp(&self) -> &TcpStream {
        self.get_ref().0
    }
}

/// What the scripted server received: (connection number, the request's bytes).
type Log = Arc<Mutex<Vec<(usize, Vec<u8>)>>>;

/// A server under test: its base URL and, for the scripted one, what it received,
/// by connection, in order.
struct Scripted {
    base: String,
    /// (connection number, the request's bytes); empty for servers that keep none.
    log: Log,
    /// What keeps a server of another kind running until the test ends.
    _keep: Option<Box<dyn std::any::Any + Send>>,
}

impl Scripted {
    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    fn log(&self) -> Vec<(usize, Vec<u8>)> {
        self.log.lock().unwrap().clone()
    }
}

/// Starts the scripted server, over TLS (HTTP/1.1 by ALPN) when `tls`.
async fn scripted(tls: bool) -> Scripted {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let acceptor = tls.then(|| {
        let material = demo_target::DemoTls::generate(&["127.0.0.1"]).unwrap();
        let mut config = (*material.server_config().unwrap()).clone();
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        tokio_rustls::TlsAcceptor::from(Arc::new(config))
    });
    let log = Arc::new(Mutex::new(Vec::new()));
    let count = Arc::new(AtomicUsize::new(0));
    let server_log = log.clone();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let n = count.fetch_add(1, Ordering::Relaxed);
            let (log, acceptor) = (server_log.clone(), acceptor.clone());
            tokio::spawn(async move {
                match acceptor {
                    None => serve(tcp, n, log).await,
                    Some(a) => {
                        if let Ok(s) = a.accept(tcp).await {
                            serve(s, n, log).await
                        }
                    }
                }
            });
        }
    });
    let scheme = if tls { "https" } else { "http" };
    Scripted {
        base: format!("{scheme}://{addr}"),
        log,
        _keep: None,
    }
}

/// Reads one request whole (head, then a body by length or chunked); `None` at EOF.
async fn read_request<S: Raw>(s: &mut S, buf: &mut Vec<u8>) -> Option<(Vec<u8>, String)> {
    loop {
        let mut fields = [httparse::EMPTY_HEADER; 64];
        let mut req = httparse::Request::new(&mut fields);
        if let Ok(httparse::Status::Complete(len)) = req.parse(buf) {
            let path = req.path.unwrap_or("/").to_owned();
            let length = req
                .headers
                .iter()
                .find(|h| h.name.eq_ignore_ascii_case("content-length"))
                .and_then(|h| std::str::from_utf8(h.value).ok()?.parse::<usize>().ok());
            let chunked = req
                .headers
                .iter()
                .any(|h| h.name.eq_ignore_ascii_case("transfer-encoding"));
            let end = loop {
                if chunked {
                    if let Some(i) = buf.windows(5).position(|w| w == b"0\r\n\r\n") {
                        break i + 5;
                    }
                } else if buf.len() >= len + length.unwrap_or(0) {
                    break len + length.unwrap_or(0);
                }
                let mut more = [0u8; 65536];
                match s.read(&mut more).await {
                    Ok(0) | Err(_) => return None,
                    Ok(n) => buf.extend_from_slice(&more[..n]),
                }
            };
            let request = buf.drain(..end).collect();
            return Some((request, path));
        }
        let mut more = [0u8; 65536];
        match s.read(&mut more).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&more[..n]),
        }
    }
}

/// A body of `n` bytes that is not all one byte.
fn pattern(n: usize) -> Vec<u8> {
    (0..n).map(|i| b'a' + (i % 26) as u8).collect()
}

/// What the scripted server does after a request to a path.
enum Then {
    KeepOpen,
    Close,
    Reset,
}

/// Serves one connection: every request is logged, then answered as its path says.
async fn serve<S: Raw>(mut s: S, n: usize, log: Log) {
    let mut buf = Vec::new();
    while let Some((request, path)) = read_request(&mut s, &mut buf).await {
        log.lock().unwrap().push((n, request));
        let ok = |body: &str| {
            format!(
                "HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n{body}",
                body.len()
            )
            .into_bytes()
        };
        let (reply, then): (Vec<u8>, Then) = match path.as_str() {
            "/plain" | "/echo" => (
                b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\nx-a: 1\r\nX-Mixed: Two \r\nx-a: 3\r\nset-cookie: s=1; Path=/\r\n\r\nhello".to_vec(),
                Then::KeepOpen,
            ),
            "/chunked" | "/chunked-split" => (
                b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5;ext=1;q=\"a b\"\r\nhello\r\n6 \r\n world\r\nA\r\n0123456789\r\n0\r\nx-trailer: yes\r\nx-other: 2\r\n\r\n".to_vec(),
                Then::KeepOpen,
            ),
            "/informational" => (
                b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nlink: </s.css>; rel=preload\r\n\r\nHTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok".to_vec(),
                Then::KeepOpen,
            ),
            "/204" => (b"HTTP/1.1 204 No Content\r\ncontent-length: 10\r\n\r\n".to_vec(), Then::KeepOpen),
            "/304" => (
                b"HTTP/1.1 304 Not Modified\r\netag: \"x\"\r\ncontent-length: 100\r\n\r\n".to_vec(),
                Then::KeepOpen,
            ),
            "/head" => (b"HTTP/1.1 200 OK\r\ncontent-length: 1000\r\n\r\n".to_vec(), Then::KeepOpen),
            "/same-lengths" => (
                b"HTTP/1.1 200 OK\r\ncontent-length: 5, 5\r\ncontent-length: 5\r\n\r\nfives".to_vec(),
                Then::KeepOpen,
            ),
            "/te-and-length" => (
                b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n".to_vec(),
                Then::KeepOpen,
            ),
            "/close" => (
                b"HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 3\r\n\r\nbye".to_vec(),
                Then::Close,
            ),
            "/close-delimited" => (
                b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\n\r\nuntil the end".to_vec(),
                Then::Close,
            ),
            "/te-gzip" => (
                b"HTTP/1.1 200 OK\r\ntransfer-encoding: gzip\r\n\r\nnot really gzip".to_vec(),
                Then::Close,
            ),
            "/http10" => (b"HTTP/1.0 200 OK\r\nserver: old\r\n\r\nold body".to_vec(), Then::Close),
            "/http10-keep-alive" => (
                b"HTTP/1.0 200 OK\r\nconnection: keep-alive\r\ncontent-length: 4\r\n\r\nkeep".to_vec(),
                Then::KeepOpen,
            ),
            "/idle-close" => {
                let _ = s.write_all(&ok("ok")).await;
                tokio::time::sleep(Duration::from_millis(20)).await;
                let _ = s.shutdown().await;
                return;
            }
            "/extra" => {
                let mut reply = ok("one");
                reply.extend_from_slice(b"HTTP/1.1 200 OK\r\ncontent-length: 3\r\n\r\ntwo");
                (reply, Then::KeepOpen)
            }
            "/upgrade" => (
                b"HTTP/1.1 101 Switching Protocols\r\nupgrade: foo\r\nconnection: upgrade\r\n\r\n".to_vec(),
                Then::KeepOpen,
            ),
            "/big" => {
                let mut reply = b"HTTP/1.1 200 OK\r\ncontent-length: 300000\r\n\r\n".to_vec();
                reply.extend_from_slice(&pattern(300_000));
                (reply, Then::KeepOpen)
            }
            "/big-chunked" => {
                let mut reply = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n".to_vec();
                for size in [1usize, 4000, 70_000, 3, 100_000] {
                    reply.extend_from_slice(format!("{size:x}\r\n").as_bytes());
                    reply.extend_from_slice(&pattern(size));
                    reply.extend_from_slice(b"\r\n");
                }
                reply.extend_from_slice(b"0\r\n\r\n");
                (reply, Then::KeepOpen)
            }
            "/many-headers" => {
                let mut reply = b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n".to_vec();
                for i in 0..150 {
                    reply.extend_from_slice(format!("x-h{i}: v\r\n").as_bytes());
                }
                reply.extend_from_slice(b"\r\n");
                (reply, Then::KeepOpen)
            }
            "/huge-head" => {
                let mut reply = b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nx-huge: ".to_vec();
                reply.extend_from_slice(&pattern(500 * 1024));
                reply.extend_from_slice(b"\r\n\r\n");
                (reply, Then::KeepOpen)
            }
            "/too-big" => {
                let mut reply = b"HTTP/1.1 200 OK\r\ncontent-length: 2000000\r\n\r\n".to_vec();
                reply.extend_from_slice(&pattern(100));
                (reply, Then::KeepOpen)
            }
            "/too-big-chunked" => {
                let mut reply = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n".to_vec();
                for _ in 0..40 {
                    reply.extend_from_slice(b"10000\r\n");
                    reply.extend_from_slice(&pattern(0x10000));
                    reply.extend_from_slice(b"\r\n");
                }
                reply.extend_from_slice(b"0\r\n\r\n");
                (reply, Then::KeepOpen)
            }
            "/early-close" => {
                let mut reply = b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\n".to_vec();
                reply.extend_from_slice(&pattern(10));
                (reply, Then::Close)
            }
            "/chunked-early-close" => (
                b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhel".to_vec(),
                Then::Close,
            ),
            "/close-before-head" => (Vec::new(), Then::Close),
            "/half-head" => (b"HTTP/1.1 200 OK\r\ncontent-le".to_vec(), Then::Close),
            "/reset" => (Vec::new(), Then::Reset),
            "/reset-mid-body" => {
                let mut reply = b"HTTP/1.1 200 OK\r\ncontent-length: 1000\r\n\r\n".to_vec();
                reply.extend_from_slice(&pattern(10));
                (reply, Then::Reset)
            }
            "/bad-length" => (b"HTTP/1.1 200 OK\r\ncontent-length: 1x\r\n\r\n1".to_vec(), Then::KeepOpen),
            "/conflicting-lengths" => (
                b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\ncontent-length: 6\r\n\r\nhello!".to_vec(),
                Then::KeepOpen,
            ),
            "/http10-chunked" => (
                b"HTTP/1.0 200 OK\r\ntransfer-encoding: chunked\r\n\r\n0\r\n\r\n".to_vec(),
                Then::KeepOpen,
            ),
            "/bad-chunk" => (
                b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n".to_vec(),
                Then::KeepOpen,
            ),
            "/chunk-newline-ext" => (
                b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n1;a\nb\r\nx\r\n0\r\n\r\n".to_vec(),
                Then::KeepOpen,
            ),
            "/garbage" => (b"HELLO WORLD\r\n\r\n".to_vec(), Then::KeepOpen),
            "/bad-status" => (b"HTTP/1.1 099 Odd\r\ncontent-length: 0\r\n\r\n".to_vec(), Then::KeepOpen),
            "/folded" => (
                b"HTTP/1.1 200 OK\r\nx-folded: a\r\n b\r\ncontent-length: 0\r\n\r\n".to_vec(),
                Then::KeepOpen,
            ),
            "/slow" => {
                tokio::time::sleep(Duration::from_secs(3)).await;
                return;
            }
            _ => (b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n".to_vec(), Then::KeepOpen),
        };
        if path == "/chunked-split" {
            // In pieces of 1 to 3 bytes, each its own segment (and TLS record, the
            // same ones for both clients): every parse state meets the end of the
            // buffer.
            let mut rest = &reply[..];
            let mut i = 0;
            while !rest.is_empty() {
                let (piece, after) = rest.split_at((1 + i % 3).min(rest.len()));
                let _ = s.write_all(piece).await;
                let _ = s.flush().await;
                if i % 8 == 0 {
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
                rest = after;
                i += 1;
            }
        } else if !reply.is_empty() {
            let _ = s.write_all(&reply).await;
            let _ = s.flush().await;
        }
        match then {
            Then::KeepOpen => {}
            Then::Close => {
                let _ = s.shutdown().await;
                return;
            }
            Then::Reset => {
                // A linger of zero: the close sends RST at once (it cannot block,
                // which is what tokio's deprecation warns of).
                #[allow(deprecated)]
                let _ = s.tcp().set_linger(Some(Duration::ZERO));
                return;
            }
        }
    }
}

/// The scripted sequence: successes first (each shape of response, reuse and its
/// ends), then each failure, then a request that must still work.
fn scripted_steps(server: &Scripted) -> Vec<Step> {
    let u = |p: &str| server.url(p);
    let mut steps = vec![
        get(&u("/plain")),
        get(&u("/plain")),
        get(&u("/chunked")),
        get(&u("/chunked-split")),
        get(&u("/informational")),
        get(&u("/204")),
        get(&u("/304")),
        request("HEAD", &u("/head"), &[], ""),
        request(
            "POST",
            &u("/echo?x=1&y=%20"),
            &[
                ("Content-Type", "application/x-www-form-urlencoded"),
                ("X-Mixed-Case", "V"),
            ],
            "a=1&b=2",
        ),
        request("POST", &u("/echo"), &[], ""),
        request(
            "PUT",
            &u("/echo"),
            &[("Transfer-Encoding", "chunked")],
            "chunky",
        ),
        request(
            "PATCH",
            &u("/echo"),
            &[("Transfer-Encoding", "gzip")],
            "zipped?",
        ),
        request("POST", &u("/echo"), &[("Content-Length", "3")], "abc"),
        request(
            "GET",
            &u("/echo"),
            &[("Content-Length", "0"), ("Transfer-Encoding", "chunked")],
            "",
        ),
        request("POST", &u("/echo"), &[], &"x".repeat(40_000)),
        request("DELETE", &u("/plain"), &[("Connection", "close")], ""),
        get(&u("/plain")),
        get(&u("/same-lengths")),
        get(&u("/te-and-length")),
        get(&u("/close")),
        get(&u("/close-delimited")),
        get(&u("/te-gzip")),
        get(&u("/http10")),
        get(&u("/http10-keep-alive")),
        get(&u("/plain")),
        get(&u("/plain")),
        get(&u("/idle-close")),
        pause(150),
        get(&u("/plain")),
        get(&u("/extra")),
        pause(50),
        get(&u("/plain")),
        get(&u("/upgrade")),
        get(&u("/plain")),
        get(&u("/big")),
        get(&u("/big-chunked")),
        get(&u("/missing")),
    ];
    let mut discarded = get(&u("/big"));
    if let Step::Send(r) = &mut discarded {
        r.discard_body = true;
    }
    steps.push(discarded);
    for path in [
        "/many-headers",
        "/huge-head",
        "/too-big",
        "/too-big-chunked",
        "/early-close",
        "/chunked-early-close",
        "/close-before-head",
        "/half-head",
        "/reset",
        "/reset-mid-body",
        "/bad-length",
        "/conflicting-lengths",
        "/http10-chunked",
        "/bad-chunk",
        "/chunk-newline-ext",
        "/garbage",
        "/bad-status",
        "/folded",
        "/slow",
    ] {
        steps.push(get(&u(path)));
        steps.push(get(&u("/plain")));
    }
    steps
}

/// Runs `steps` on each client, hyper's against `hyper_server` and the lean one
/// against `lean_server` (the same server, or two alike for the scripted one, whose
/// logs are compared), and checks that everything observable agrees; returns the
/// lean run's results for further checks.
///
/// One thing is not the same, by hyper's doing: hyper's pool takes a connection back
/// only if hyper's connection task already asked for the next request, which it does
/// a moment after the response ends; when the VU is quicker, a good connection is
/// dropped and the next request opens another (seen after chunked and 1xx responses,
/// more often over TLS). The lean connection is ready the moment its response is
/// read. So the lean client must reuse a connection wherever hyper did (and may where
/// hyper did not); bytes received and request bytes are compared where both reused
/// alike (a TLS connection's first request also reads the server's session tickets,
/// which hyper's task may have read before the request began).
async fn differential(
    hyper_server: &Scripted,
    lean_server: &Scripted,
    steps: impl Fn(&Scripted) -> Vec<Step>,
) -> Vec<(Seen, Option<Conn>)> {
    let timeout = Duration::from_millis(400);
    let (hyper, hyper_opened) = run(Http1Client::Hyper, &steps(hyper_server), timeout).await;
    let (lean, lean_opened) = run(Http1Client::Lean, &steps(lean_server), timeout).await;
    assert_eq!(hyper.len(), lean.len());
    let report = || {
        for (i, (h, l)) in hyper.iter().zip(&lean).enumerate() {
            let same = if h == l { "same" } else { "DIFFERENT" };
            eprintln!("{i} {same}\n  hyper {h:?}\n  lean  {l:?}");
        }
    };
    // Where both clients were in the same state: the request and the one before it
    // reused a connection, or opened one, alike.
    let same: Vec<bool> = hyper
        .iter()
        .zip(&lean)
        .map(|((_, h), (_, l))| h.map(|c| c.connected) == l.map(|c| c.connected))
        .collect();
    let alike: Vec<bool> = (0..same.len())
        .map(|i| same[i] && (i == 0 || same[i - 1]))
        .collect();
    let tls = hyper_server.base.starts_with("https");
    for (i, ((h, hc), (l, lc))) in hyper.iter().zip(&lean).enumerate() {
        let (h, hs) = split_sent(h);
        let (l, ls) = split_sent(l);
        if h != l {
            report();
        }
        assert_eq!(h, l, "request {i}: hyper, then lean");
        // Over TLS, hyper's task sends the close alert (24 bytes) of a connection it
        // ends either before or after the request's bytes are taken.
        let close_alert = tls && hs.abs_diff(ls) == 24;
        assert!(
            hs == ls || close_alert || !alike[i],
            "request {i}: bytes sent, hyper {hs}, lean {ls}"
        );
        if let (Some(hc), Some(lc)) = (hc, lc) {
            if !hc.connected && lc.connected {
                report();
                panic!("request {i}: hyper reused a connection, the lean client opened one");
            }
            // A server that closes sends its TLS close alert (24 bytes) after the
            // response: a client reads it with the response or not, as the bytes
            // happen to arrive (seen on /close, where CI's run read it on one side).
            let alert_in = tls && hc.received.abs_diff(lc.received) == 24;
            if alike[i] && !hc.handshake && !alert_in {
                assert_eq!(hc.received, lc.received, "request {i}: bytes received");
            }
        }
    }
    // Request bytes as the server saw them (requests arrive one at a time, in order),
    // where both clients were in the same state.
    let (hyper_log, lean_log) = (hyper_server.log(), lean_server.log());
    if !std::ptr::eq(hyper_server, lean_server) {
        assert_eq!(hyper_log.len(), lean_log.len());
        // The Host field names each server's own port.
        let text = |bytes: &[u8], server: &Scripted| {
            let authority = server.base.split("://").nth(1).unwrap_or_default();
            String::from_utf8_lossy(bytes).replace(authority, "SERVER")
        };
        for (i, (h, l)) in hyper_log.iter().zip(&lean_log).enumerate() {
            if alike[i] {
                assert_eq!(
                    text(&h.1, hyper_server),
                    text(&l.1, lean_server),
                    "request {i} on the wire: hyper, then lean"
                );
            }
        }
    }
    assert!(
        lean_opened <= hyper_opened,
        "connections opened: lean {lean_opened}, hyper {hyper_opened}"
    );
    lean
}

/// A result without its bytes sent, and those bytes.
fn split_sent(seen: &Seen) -> (Seen, u64) {
    let mut seen = seen.clone();
    let sent = match &mut seen {
        Seen::Response { sent, .. } | Seen::Failed { sent, .. } => std::mem::take(sent),
    };
    (seen, sent)
}

/// The requests of a lean run that opened a connection.
fn fresh(results: &[(Seen, Option<Conn>)]) -> Vec<usize> {
    results
        .iter()
        .enumerate()
        .filter(|(_, (_, c))| c.is_some_and(|c| c.connected))
        .map(|(i, _)| i)
        .collect()
}

fn status((seen, _): &(Seen, Option<Conn>)) -> Option<u16> {
    match seen {
        Seen::Response { status, .. } => Some(*status),
        Seen::Failed { .. } => None,
    }
}

fn failed((seen, _): &(Seen, Option<Conn>)) -> Option<&'static str> {
    match seen {
        Seen::Failed { kind, .. } => Some(kind),
        Seen::Response { .. } => None,
    }
}

/// What the scripted sequence must come to on the lean client, over TCP or TLS:
/// each case as intended, and connections opened exactly where one had to be.
fn check_scripted(lean: &[(Seen, Option<Conn>)], tls: bool) {
    let statuses: Vec<Option<u16>> = lean.iter().map(status).collect();
    assert_eq!(
        statuses[..8],
        [
            Some(200),
            Some(200),
            Some(200),
            Some(200),
            Some(200),
            Some(204),
            Some(304),
            Some(200)
        ]
    );
    for i in [2, 3] {
        let (Seen::Response { body, .. }, _) = &lean[i] else {
            unreachable!()
        };
        assert_eq!(body, b"hello world0123456789", "request {i}");
    }
    let (successes, tail) = lean.split_at(lean.len() - 38);
    assert!(
        successes.iter().all(|s| failed(s).is_none()),
        "every request before the failures works: {successes:?}"
    );
    assert!(
        tail.iter().skip(1).step_by(2).all(|s| failed(s).is_none()),
        "a request after each failure works: {tail:?}"
    );
    let failures: Vec<&str> = tail
        .iter()
        .step_by(2)
        .map(|s| failed(s).unwrap_or("ok"))
        .collect();
    assert_eq!(
        failures,
        [
            "protocol",
            "protocol",
            "body_too_large",
            "body_too_large",
            "protocol",
            "protocol",
            "protocol",
            "protocol",
            "protocol",
            "protocol",
            "protocol",
            "protocol",
            "protocol",
            "protocol",
            "protocol",
            "protocol",
            "protocol",
            "protocol",
            "timeout",
        ]
    );
    // New connections: the first; after `Connection: close` asked by the request (16)
    // and by the server (20); after close-delimited bodies (21, 22, 23); after the
    // server closed while idle (27), sent bytes nobody asked for (29), upgraded (31);
    // after every failure. HTTP/1.0 with keep-alive (24) keeps its connection.
    let mut expected = vec![0, 16, 20, 21, 22, 23, 27, 29, 31];
    expected.extend((successes.len() + 1..lean.len()).step_by(2));
    assert_eq!(fresh(lean), expected);
    let handshakes: Vec<bool> = lean
        .iter()
        .filter_map(|(_, c)| c.map(|c| c.handshake))
        .collect();
    assert_eq!(
        handshakes.iter().filter(|h| **h).count(),
        if tls { expected.len() } else { 0 }
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lean_and_hyper_agree_on_scripted_responses_over_tcp() {
    let lean = differential(
        &scripted(false).await,
        &scripted(false).await,
        scripted_steps,
    )
    .await;
    check_scripted(&lean, false);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lean_and_hyper_agree_on_scripted_responses_over_tls() {
    let lean = differential(&scripted(true).await, &scripted(true).await, scripted_steps).await;
    check_scripted(&lean, true);
}

/// The demo target (hyper's server, with its own routes and headers).
async fn demo() -> Scripted {
    let server = demo_target::DemoServer::start(
        "127.0.0.1:0".parse().unwrap(),
        demo_target::DemoConfig::default(),
    )
    .await
    .unwrap();
    Scripted {
        base: server.base_url().trim_end_matches('/').to_owned(),
        log: Arc::default(),
        _keep: Some(Box::new(server)),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lean_and_hyper_agree_on_the_demo_target() {
    let server = demo().await;
    let lean = differential(&server, &server, |s| {
        let u = |p: &str| s.url(p);
        vec![
            get(&u("/health")),
            get(&u("/")),
            request("HEAD", &u("/health"), &[], ""),
            request("POST", &u("/health"), &[], "{}"),
            get(&u("/no/such/page")),
            get(&u("/health")),
        ]
    })
    .await;
    let statuses: Vec<Option<u16>> = lean.iter().map(status).collect();
    assert_eq!(
        statuses,
        [
            Some(200),
            Some(200),
            Some(405),
            Some(405),
            Some(404),
            Some(200)
        ]
    );
}

/// A process started for a test, killed when the test ends.
struct Child(std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A free port on 127.0.0.1, and a wait for a server to listen there.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

async fn listening(port: u16) {
    for _ in 0..200 {
        if TcpStream::connect(("127.0.0.1", port)).await.is_ok() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("nothing listens on port {port}");
}

/// A folder of files to serve: a text file, a larger one, a subfolder.
fn site() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("hello.txt"), "hello from a file\n").unwrap();
    std::fs::write(dir.path().join("big.bin"), pattern(200_000)).unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    std::fs::write(dir.path().join("sub/index.html"), "<p>sub</p>").unwrap();
    // One time for every file, so that both runs' servers name the same
    // Last-Modified and ETag.
    let when = std::time::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    for file in ["hello.txt", "big.bin", "sub/index.html"] {
        let f = std::fs::File::options()
            .write(true)
            .open(dir.path().join(file))
            .unwrap();
        f.set_modified(when).unwrap();
    }
    dir
}

/// Python's `http.server`: HTTP/1.0, a connection per request.
async fn python() -> Scripted {
    let dir = site();
    let port = free_port();
    let port_text = port.to_string();
    let args = ["-m", "http.server", "--bind", "127.0.0.1", &port_text];
    spawn_server("python3", &args, dir, port).await
}

fn file_steps(s: &Scripted) -> Vec<Step> {
    let u = |p: &str| s.url(p);
    vec![
        get(&u("/hello.txt")),
        get(&u("/hello.txt")),
        request("HEAD", &u("/hello.txt"), &[], ""),
        get(&u("/big.bin")),
        get(&u("/sub")),
        get(&u("/sub/")),
        get(&u("/missing")),
        get(&u("/hello.txt")),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lean_and_hyper_agree_on_python_http_server() {
    let server = python().await;
    let lean = differential(&server, &server, file_steps).await;
    let statuses: Vec<Option<u16>> = lean.iter().map(status).collect();
    assert_eq!(
        statuses,
        [
            Some(200),
            Some(200),
            Some(200),
            Some(200),
            Some(301),
            Some(200),
            Some(404),
            Some(200)
        ]
    );
    // HTTP/1.0 without keep-alive: every request had a connection of its own.
    assert_eq!(fresh(&lean), (0..lean.len()).collect::<Vec<_>>());
}

/// nginx (Debian's nginx-light; `./dev test` installs it), one worker in the
/// foreground, serving the site folder and chunked pages (gzip on the fly). (No
/// keep-alive limit: which response says `Connection: close` would then depend on
/// how many requests each connection carried, which hyper's pool leaves to chance.)
async fn nginx() -> Scripted {
    let binary = ["nginx", "/usr/sbin/nginx"]
        .into_iter()
        .find(|b| {
            std::process::Command::new(b)
                .arg("-v")
                .stderr(std::process::Stdio::null())
                .status()
                .is_ok()
        })
        .expect("the tests need nginx: install Debian's nginx-light package");
    let dir = site();
    let port = free_port();
    let root = dir.path().display();
    let config = format!(
        "daemon off; master_process off; worker_processes 1; pid {root}/nginx.pid;
         error_log stderr crit;
         events {{ worker_connections 64; }}
         http {{
           access_log off;
           client_body_temp_path {root}/tmp; proxy_temp_path {root}/tmp;
           fastcgi_temp_path {root}/tmp; uwsgi_temp_path {root}/tmp; scgi_temp_path {root}/tmp;
           server {{
             listen 127.0.0.1:{port};
             root {root};
             location /gz/ {{ alias {root}/; gzip on; gzip_min_length 1; gzip_types *; }}
             location = /echo {{ return 200 'posted'; }}
           }}
         }}"
    );
    std::fs::write(dir.path().join("nginx.conf"), config).unwrap();
    let config = format!("{root}/nginx.conf");
    let root = root.to_string();
    spawn_server(
        binary,
        &["-e", "stderr", "-p", &root, "-c", &config],
        dir,
        port,
    )
    .await
}

/// Starts `program` with `args` in `dir` (kept, with the process, as long as the
/// server), waits for it to listen on `port`.
async fn spawn_server(program: &str, args: &[&str], dir: tempfile::TempDir, port: u16) -> Scripted {
    let child = std::process::Command::new(program)
        .args(args)
        .current_dir(dir.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("{program} runs: {e}"));
    let child = Child(child);
    listening(port).await;
    Scripted {
        base: format!("http://127.0.0.1:{port}"),
        log: Arc::default(),
        _keep: Some(Box::new((child, dir))),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lean_and_hyper_agree_on_nginx() {
    let server = nginx().await;
    let lean = differential(&server, &server, |s| {
        let mut steps = file_steps(s);
        let gz = &[("Accept-Encoding", "gzip")];
        steps.push(request("GET", &s.url("/gz/big.bin"), gz, ""));
        steps.push(request("GET", &s.url("/gz/hello.txt"), gz, ""));
        steps.push(request("POST", &s.url("/echo"), &[], "a=1"));
        steps.push(get(&s.url("/hello.txt")));
        steps
    })
    .await;
    let statuses: Vec<Option<u16>> = lean.iter().map(status).collect();
    assert_eq!(
        statuses[..8],
        [
            Some(200),
            Some(200),
            Some(200),
            Some(200),
            Some(301),
            Some(200),
            Some(404),
            Some(200)
        ]
    );
    assert_eq!(fresh(&lean), [0], "one connection carried every request");
    let (Seen::Response { headers, .. }, _) = &lean[8] else {
        unreachable!()
    };
    assert!(
        headers
            .iter()
            .any(|(n, v)| n == "transfer-encoding" && v == b"chunked"),
        "{headers:?}"
    );
}
