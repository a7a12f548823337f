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
//! Usage: `hyper-floor hyper|raw URL CONNS LIMIT [RUNTIME]`, LIMIT being seconds (`8s`)
//! or a number of requests over all tasks (`100000`, for instruction counts under
//! callgrind). Prints `requests N` and `seconds S`.
//!
//! RUNTIME says how the tasks are spread over threads (bench/scaling compares them):
//!
//! - `ct` (the default): one current-thread runtime, so one thread whatever the cores;
//! - `tpc`: thread per core, one current-thread runtime on each core the process may
//!   use (its affinity, as `taskset` sets it), the connections dealt out among them;
//!   a task and its connection always share a thread;
//! - `mt`: tokio's multi-thread runtime with its defaults (a worker per core, work
//!   stealing), as the host builds it.
//!
//! With `HYPER_FLOOR_SPIN_US` set in the environment, each task spins that many microseconds of
//! user CPU before each request: a client as slow per request as the host, with
//! hyper's syscalls, to tell what in the kernel's time per request follows the rate.

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

/// Requests claimed so far (a task claims one before sending it), the limit, and the
/// user CPU to burn per request (`SPIN_US`).
struct Budget {
    claimed: AtomicU64,
    limit: Limit,
    spin: Duration,
}

impl Budget {
    /// Whether the task may send one more request (after spinning `spin`).
    fn claim(&self) -> bool {
        if !self.spin.is_zero() {
            let start = Instant::now();
            while start.elapsed() < self.spin {
                std::hint::spin_loop();
            }
        }
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
    eprintln!(
        "usage: hyper-floor hyper|raw URL CONNS LIMIT [ct|tpc|mt] \
         (LIMIT: 8s, or a request count; ct: one thread, tpc: a thread per core, \
         mt: tokio's multi-thread runtime)"
    );
    std::process::exit(2)
}

/// What one connection's task needs.
#[derive(Clone)]
struct Job {
    mode: String,
    uri: http::Uri,
    authority: String,
    budget: Arc<Budget>,
}

impl Job {
    /// Runs `conns` connections' loops as tasks on the current runtime; their requests.
    async fn run(self, conns: u64) -> u64 {
        let mut tasks = Vec::new();
        for _ in 0..conns {
            let job = self.clone();
            tasks.push(match job.mode.as_str() {
                "hyper" => tokio::spawn(hyper_loop(job.uri, job.authority, job.budget)),
                "raw" => tokio::spawn(raw_loop(job.uri, job.authority, job.budget)),
                _ => usage(),
            });
        }
        let mut done = 0;
        for t in tasks {
            done += t.await.expect("task");
        }
        done
    }
}

/// A current-thread runtime, as each thread of `ct` and `tpc` runs.
fn current_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (mode, url, conns, limit, runtime) = match args.as_slice() {
        [mode, url, conns, limit] => (mode, url, conns, limit, None),
        [mode, url, conns, limit, runtime] => (mode, url, conns, limit, Some(runtime)),
        _ => usage(),
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
        spin: Duration::from_micros(
            std::env::var("HYPER_FLOOR_SPIN_US")
                .map_or(0, |v| v.parse().unwrap_or_else(|_| usage())),
        ),
    });
    let job = Job {
        mode: mode.clone(),
        uri,
        authority,
        budget,
    };
    let done: u64 = match runtime.map_or("ct", String::as_str) {
        "ct" => current_thread().block_on(job.run(conns)),
        "mt" => tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .expect("a runtime")
            .block_on(job.run(conns)),
        "tpc" => {
            let threads = std::thread::available_parallelism().map_or(1, |n| n.get()) as u64;
            let handles: Vec<_> = (0..threads)
                .map(|i| {
                    // Connections dealt out as evenly as they go.
                    let share = conns / threads + u64::from(i < conns % threads);
                    let job = job.clone();
                    std::thread::spawn(move || current_thread().block_on(job.run(share)))
                })
                .collect();
            handles.into_iter().map(|h| h.join().expect("thread")).sum()
        }
        _ => usage(),
    };
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
