//! Purpose-built misbehaving servers on 127.0.0.1 for the fault tests: one that accepts
//! and never answers, a port where nothing listens, and one that answers every request
//! with a canned response chosen from its path.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// A server task, stopped when dropped.
pub struct Server {
    /// Where it listens.
    pub addr: SocketAddr,
    /// Connections accepted so far.
    pub accepted: Arc<AtomicU64>,
    /// Requests answered so far (canned servers only).
    pub answered: Arc<AtomicU64>,
    task: JoinHandle<()>,
}

impl Server {
    /// `http://127.0.0.1:PORT`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Connections accepted so far.
    pub fn accepted(&self) -> u64 {
        self.accepted.load(Ordering::Relaxed)
    }

    /// Requests answered so far.
    pub fn answered(&self) -> u64 {
        self.answered.load(Ordering::Relaxed)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Accepts every connection and reads what comes, but never answers.
pub async fn silent() -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let accepted = Arc::new(AtomicU64::new(0));
    let counter = accepted.clone();
    let task = tokio::spawn(async move {
        let mut held = tokio::task::JoinSet::new();
        while let Ok((mut socket, _)) = listener.accept().await {
            counter.fetch_add(1, Ordering::Relaxed);
            held.spawn(async move {
                let mut buf = [0u8; 4096];
                while matches!(socket.read(&mut buf).await, Ok(n) if n > 0) {}
            });
        }
    });
    Server {
        addr,
        accepted,
        answered: Default::default(),
        task,
    }
}

/// A loopback port where nothing listens (connections are refused).
pub fn dead_port() -> SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap()
}

/// Answers every request with `respond(path)`: a whole HTTP/1.1 response (head and
/// body), written as is on a keep-alive connection.
pub async fn canned(respond: impl Fn(&str) -> String + Send + Sync + 'static) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let accepted = Arc::new(AtomicU64::new(0));
    let answered = Arc::new(AtomicU64::new(0));
    let (acc, ans) = (accepted.clone(), answered.clone());
    let respond = Arc::new(respond);
    let task = tokio::spawn(async move {
        let mut held = tokio::task::JoinSet::new();
        while let Ok((mut socket, _)) = listener.accept().await {
            acc.fetch_add(1, Ordering::Relaxed);
            let (respond, answered) = (respond.clone(), ans.clone());
            held.spawn(async move {
                let mut pending = Vec::new();
                let mut buf = [0u8; 4096];
                loop {
                    // Requests without bodies: a head ends at the first blank line.
                    while let Some(end) = find_head_end(&pending) {
                        let head = String::from_utf8_lossy(&pending[..end]).into_owned();
                        pending.drain(..end);
                        let path = head.split_whitespace().nth(1).unwrap_or("/").to_owned();
                        let response = respond(&path);
                        if socket.write_all(response.as_bytes()).await.is_err() {
                            return;
                        }
                        answered.fetch_add(1, Ordering::Relaxed);
                    }
                    match socket.read(&mut buf).await {
                        Ok(n) if n > 0 => pending.extend_from_slice(&buf[..n]),
                        _ => return,
                    }
                }
            });
        }
    });
    Server {
        addr,
        accepted,
        answered,
        task,
    }
}

fn find_head_end(bytes: &[u8]) -> Option<usize> {
    bytes
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|i| i + 4)
}

/// A response with `status`, extra header lines (each ending in CRLF) and `body`.
pub fn response(status: &str, headers: &str, body: &str) -> String {
    format!(
        "HTTP/1.1 {status}\r\ncontent-length: {}\r\n{headers}\r\n{body}",
        body.len()
    )
}

/// A raw TCP server on loopback that answers each connection with `behave`.
pub async fn raw_server<F, Fut>(behave: F) -> String
where
    F: Fn(TcpStream) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(behave(stream));
        }
    });
    url
}

/// Reads a request's head (up to the blank line), so the server can answer it.
pub async fn read_head(stream: &mut TcpStream) {
    let _ = head_text(stream).await;
}

/// A request's head (up to the blank line, and what came with it) as text; None when
/// the peer closed or failed before the blank line.
pub async fn head_text(stream: &mut TcpStream) -> Option<String> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    Some(String::from_utf8_lossy(&buf).into_owned())
}

/// [`head_text`] on a blocking socket (servers on their own threads).
pub fn head_text_blocking(stream: &mut std::net::TcpStream) -> Option<String> {
    use std::io::Read;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    Some(String::from_utf8_lossy(&buf).into_owned())
}
