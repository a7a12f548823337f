//! The browser layer against Debian's real Chromium and real servers on 127.0.0.1:
//! a page loads in a context of its own, a denied origin is failed and never
//! contacted (HTTP, images, fetch, WebSocket), a page that never loads times out, a
//! browser that dies is replaced, and no browser process outlives its pool.

use super::launch::LaunchOptions;
use super::page::WaitUntil;
use super::pool::Pool;
use super::BrowserError;
use crate::metrics::{builtin, Recorder, Registry, TagSet, Value};
use crate::net::{Allowlist, NetShared};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

const TIMEOUT: Duration = Duration::from_secs(20);

fn net(allow: &[String]) -> Arc<NetShared> {
    let recorder = Arc::new(Recorder::new(Arc::new(Registry::new())));
    Arc::new(NetShared::new(
        Allowlist::new(allow).unwrap(),
        Duration::from_secs(5),
        1 << 20,
        recorder,
    ))
}

async fn pool(net: &Arc<NetShared>, size: usize) -> Pool {
    let options = LaunchOptions::from_env(|k| std::env::var(k).ok())
        .expect("Chromium is installed (./dev test installs Debian's chromium)");
    Pool::new(options, size, net.clone()).await.unwrap()
}

fn denied(net: &NetShared) -> f64 {
    net.recorder
        .drain()
        .iter()
        .filter(|((id, _), _)| *id == builtin::HTTP_REQS_DENIED)
        .map(|(_, v)| match v {
            Value::Counter(c) => *c,
            _ => 0.0,
        })
        .sum()
}

/// A server on 127.0.0.1 that answers every request with `page(path)` (or never, when
/// `page` is `None`) and counts the connections it accepted.
async fn server(page: Option<fn(&str) -> String>) -> (u16, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let accepted = Arc::new(AtomicUsize::new(0));
    let count = accepted.clone();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            count.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut buf = [0u8; 4096];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match s.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let Some(page) = page else {
                    // Never answers: held until the client goes.
                    let _ = s.read(&mut buf).await;
                    return;
                };
                let text = String::from_utf8_lossy(&head);
                let path = text.split(' ').nth(1).unwrap_or("/");
                let body = page(path);
                let reply = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: {}\r\n\
                     connection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = s.write_all(reply.as_bytes()).await;
            });
        }
    });
    (port, accepted)
}

fn titled(_: &str) -> String {
    "<!doctype html><title>Hello</title><p>hi</p>".into()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_loads_in_a_context_of_its_own() {
    let (port, _) = server(Some(titled)).await;
    let net = net(&[]);
    let pool = pool(&net, 1).await;
    let url = format!("http://127.0.0.1:{port}/");
    let first = pool.context().await.unwrap();
    let page = first.new_page(TagSet::empty()).await.unwrap();
    let status = page.goto(&url, WaitUntil::Load, TIMEOUT).await.unwrap();
    assert_eq!(status, 200);
    assert_eq!(page.title().await.unwrap(), "Hello");
    assert_eq!(page.url().await.unwrap(), url);
    page.evaluate("document.cookie = 'session=1; path=/'")
        .await
        .unwrap();
    assert_eq!(page.evaluate("document.cookie").await.unwrap(), "session=1");
    // A second context (the next iteration) shares the browser, not the cookies.
    let second = pool.context().await.unwrap();
    let other = second.new_page(TagSet::empty()).await.unwrap();
    other.goto(&url, WaitUntil::Load, TIMEOUT).await.unwrap();
    assert_eq!(other.evaluate("document.cookie").await.unwrap(), "");
    assert_eq!(pool.pids().await.len(), 1, "one browser serves both");
    page.close().await.unwrap();
    first.close().await.unwrap();
    second.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denied_origin_is_failed_and_never_contacted() {
    fn denied_page(_: &str) -> String {
        let port = DENIED_PORT.load(Ordering::SeqCst);
        format!(
            "<!doctype html><title>Page</title><img src='http://127.0.0.1:{port}/a.png'>\
             <script>fetch('http://127.0.0.1:{port}/api').catch(() => {{}});\
             try {{ new WebSocket('ws://127.0.0.1:{port}/ws'); }} catch (e) {{}}\
             new Worker(URL.createObjectURL(new Blob(['fetch(\"http://127.0.0.1:{port}/w\")'])));\
             </script>"
        )
    }
    static DENIED_PORT: std::sync::atomic::AtomicU16 = std::sync::atomic::AtomicU16::new(0);
    let (other, contacted) = server(Some(titled)).await;
    DENIED_PORT.store(other, Ordering::SeqCst);
    let (port, _) = server(Some(denied_page)).await;
    let net = net(&[format!("http://127.0.0.1:{port}")]);
    let pool = pool(&net, 1).await;
    let context = pool.context().await.unwrap();
    let page = context.new_page(TagSet::empty()).await.unwrap();
    page.goto(
        &format!("http://127.0.0.1:{port}/"),
        WaitUntil::Load,
        TIMEOUT,
    )
    .await
    .unwrap();
    // The fetches settle after load: wait until the image, the page's fetch and the
    // worker's were all refused.
    let deadline = tokio::time::Instant::now() + TIMEOUT;
    let mut refused = 0.0;
    while refused < 3.0 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
        refused += denied(&net);
    }
    assert!(refused >= 3.0, "denied requests counted: {refused}");
    // A navigation there is refused before it starts, and so is a local file.
    let e = page
        .goto(
            &format!("http://127.0.0.1:{other}/"),
            WaitUntil::Load,
            TIMEOUT,
        )
        .await
        .unwrap_err();
    assert!(matches!(e, BrowserError::Denied(_)), "{e}");
    assert!(e.to_string().contains("--allow"), "{e}");
    let e = page
        .goto("file:///etc/passwd", WaitUntil::Load, TIMEOUT)
        .await
        .unwrap_err();
    assert!(e.to_string().contains("file:"), "{e}");
    // A link the page follows itself is failed by the browser's gate.
    let mark = page.navigation_mark();
    page.evaluate(&format!("location.href = 'http://127.0.0.1:{other}/'; 1"))
        .await
        .unwrap();
    let _ = page
        .wait_for_navigation(mark, WaitUntil::Load, Duration::from_secs(5))
        .await;
    assert_eq!(
        contacted.load(Ordering::SeqCst),
        0,
        "the denied server was never contacted (WebSocket included)"
    );
    context.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_that_never_loads_times_out() {
    let (port, accepted) = server(None).await;
    let net = net(&[]);
    let pool = pool(&net, 1).await;
    let context = pool.context().await.unwrap();
    let page = context.new_page(TagSet::empty()).await.unwrap();
    let started = std::time::Instant::now();
    let e = page
        .goto(
            &format!("http://127.0.0.1:{port}/"),
            WaitUntil::Load,
            Duration::from_millis(1500),
        )
        .await
        .unwrap_err();
    assert!(matches!(e, BrowserError::Timeout(_)), "{e}");
    assert!(e.to_string().contains("timed out after 1500 ms"), "{e}");
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(accepted.load(Ordering::SeqCst) >= 1, "the request was made");
}

/// Processes whose process group is `pgid`.
fn group(pgid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // pid (comm) state ppid pgrp ...: comm may hold spaces, so split after ')'.
        let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if fields.get(2).and_then(|g| g.parse::<u32>().ok()) == Some(pgid) && fields[0] != "Z" {
            out.push(pid);
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_browser_is_replaced_and_none_outlives_the_pool() {
    let (port, _) = server(Some(titled)).await;
    let net = net(&[]);
    let pool = pool(&net, 1).await;
    pool.warm_up().await.unwrap();
    let first = pool.pids().await[0];
    assert!(
        group(first).len() > 1,
        "the browser runs helpers in its group"
    );
    // SAFETY: a plain kill of the browser this test started.
    unsafe {
        libc::kill(first as i32, libc::SIGKILL);
    }
    // No wait: the pool may not have seen the death yet, and must still hand out a
    // context on a live browser (the race a crash just before an iteration makes).
    let context = pool.context().await.unwrap();
    let page = context.new_page(TagSet::empty()).await.unwrap();
    page.goto(
        &format!("http://127.0.0.1:{port}/"),
        WaitUntil::Load,
        TIMEOUT,
    )
    .await
    .unwrap();
    let second = pool.pids().await[0];
    assert_ne!(first, second, "a new browser took the dead one's place");
    drop(page);
    drop(context);
    drop(pool);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while (!group(first).is_empty() || !group(second).is_empty())
        && std::time::Instant::now() < deadline
    {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        group(first),
        Vec::<u32>::new(),
        "the killed browser's helpers"
    );
    assert_eq!(group(second), Vec::<u32>::new(), "the pool's browser");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_program_that_is_not_a_browser_fails_before_the_run() {
    let net = net(&[]);
    let options = LaunchOptions::from_env(|k| {
        (k == "K6_BROWSER_EXECUTABLE_PATH").then(|| "/bin/true".into())
    })
    .unwrap();
    let pool = Pool::new(options, 1, net).await.unwrap();
    let e = pool.warm_up().await.unwrap_err().to_string();
    assert!(e.contains("/bin/true did not start"), "{e}");
}
