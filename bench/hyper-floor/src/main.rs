//! The floor under the host's HTTP client: how many requests per CPU-second an HTTP/1.1
//! client with no scripting, no metrics and no sandbox makes on this machine.
//!
//! Two clients, both `CONNS` tasks on one current-thread tokio runtime, each task one
//! keep-alive connection sending `GET` in a loop:
//!
//! - `hyper`: hyper 1.x's connection API as the host uses it (`http1::handshake`, the
//!   connection driven by a task of its own, `send_request` then `collect` of the body);
//! - `raw`: a hand-written loop (one `write` of a fixed request, `httparse` on what is
//!   read, the body skipped by its `Content-Length`), the least a client can do.
//!
//! Usage: `hyper-floor hyper|raw URL CONNS LIMIT`, LIMIT being seconds (`8s`) or a
//! number of requests over all tasks (`100000`, for instruction counts under
//! callgrind). Prints `requests N` and `seconds S`.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// When the tasks stop: after a time, or once a number of requests were claimed.
#[derive(Clone, Copy)]
enum Limit {
    Until(Instant),
    Requests(u64),
}

/// Requests claimed so far (a task claims one before sending it) and the limit.
struct Budget {
    claimed: AtomicU64,
    limit: Limit,
}

impl Budget {
    /// Whether the task may send one more request.
    fn claim(&self) -> bool {
        match self.limit {
            Limit::Until(end) => {
                self.claimed.fetch_add(1, Ordering::Relaxed);
                Instant::now() < end
            }
            Limit::Requests(n) => self.claimed.fetch_add(1, Ordering::Relaxed) < n,
        }
    }
}

fn usage() -> ! {
    eprintln!("usage: hyper-floor hyper|raw URL CONNS LIMIT (LIMIT: 8s, or a request count)");
    std::process::exit(2)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [mode, url, conns, limit] = args.as_slice() else {
        usage()
    };
    let uri: http::Uri = url.parse().unwrap_or_else(|_| usage());
    let conns: u64 = conns.parse().unwrap_or_else(|_| usage());
    let authority = uri.authority().unwrap_or_else(|| usage()).to_string();
    let start = Instant::now();
    let limit = match limit.strip_suffix('s') {
        Some(secs) => {
            Limit::Until(start + Duration::from_secs_f64(secs.parse().unwrap_or_else(|_| usage())))
        }
        None => Limit::Requests(limit.parse().unwrap_or_else(|_| usage())),
    };
    let budget = Arc::new(Budget {
        claimed: AtomicU64::new(0),
        limit,
    });
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let done: u64 = runtime.block_on(async {
        let mut tasks = Vec::new();
        for _ in 0..conns {
            let (budget, uri, authority) = (budget.clone(), uri.clone(), authority.clone());
            tasks.push(match mode.as_str() {
                "hyper" => tokio::spawn(hyper_loop(uri, authority, budget)),
                "raw" => tokio::spawn(raw_loop(uri, authority, budget)),
                _ => usage(),
            });
        }
        let mut done = 0;
        for t in tasks {
            done += t.await.expect("task");
        }
        done
    });
    println!("requests {done}");
    println!("seconds {:.3}", start.elapsed().as_secs_f64());
}

/// hyper's client connection API, as the host drives it.
async fn hyper_loop(uri: http::Uri, authority: String, budget: Arc<Budget>) -> u64 {
    let stream = TcpStream::connect(&authority).await.expect("connect");
    stream.set_nodelay(true).expect("nodelay");
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .expect("handshake");
    tokio::spawn(async move {
        let _ = conn.await;
    });
    let path = uri.path_and_query().map_or("/", |p| p.as_str()).to_string();
    let mut done = 0;
    while budget.claim() {
        let request = http::Request::get(path.as_str())
            .header(http::header::HOST, authority.as_str())
            .body(Full::new(Bytes::new()))
            .expect("request");
        sender.ready().await.expect("ready");
        let response = sender.send_request(request).await.expect("response");
        assert!(response.status().is_success(), "{}", response.status());
        let body = response.into_body().collect().await.expect("body");
        std::hint::black_box(body.to_bytes());
        done += 1;
    }
    done
}

/// One write per request and `httparse` on the response: the least a client does.
async fn raw_loop(uri: http::Uri, authority: String, budget: Arc<Budget>) -> u64 {
    let mut stream = TcpStream::connect(&authority).await.expect("connect");
    stream.set_nodelay(true).expect("nodelay");
    let path = uri.path_and_query().map_or("/", |p| p.as_str());
    let request = format!("GET {path} HTTP/1.1\r\nhost: {authority}\r\n\r\n").into_bytes();
    let mut buf = vec![0u8; 16 * 1024];
    let mut filled = 0;
    let mut done = 0;
    while budget.claim() {
        stream.write_all(&request).await.expect("write");
        // Read until the head parses and its body is in; keep what follows it.
        loop {
            let mut headers = [httparse::EMPTY_HEADER; 32];
            let mut response = httparse::Response::new(&mut headers);
            if let httparse::Status::Complete(head) =
                response.parse(&buf[..filled]).expect("a valid response")
            {
                assert_eq!(response.code, Some(200));
                let length: usize = response
                    .headers
                    .iter()
                    .find(|h| h.name.eq_ignore_ascii_case("content-length"))
                    .and_then(|h| std::str::from_utf8(h.value).ok()?.trim().parse().ok())
                    .expect("a Content-Length");
                if filled >= head + length {
                    buf.copy_within(head + length..filled, 0);
                    filled -= head + length;
                    break;
                }
            }
            let n = stream.read(&mut buf[filled..]).await.expect("read");
            assert!(n > 0, "the server closed the connection");
            filled += n;
        }
        done += 1;
    }
    done
}
