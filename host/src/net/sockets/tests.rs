//! Sockets against real peers on 127.0.0.1: the three reads over a buffer, the
//! bounds, a peer that closes mid-read, a refused and a denied connect (nothing
//! reaches a denied port), UDP, and the counts each leaves.

use super::account::socket_tags;
use super::limits::MAX_DATAGRAM;
use super::tcp::{connect, TcpOptions};
use super::*;
use crate::metrics::{builtin, MetricId, Recorder, Registry, TagSet, Value};
use crate::net::{Allowlist, NetShared};
use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

fn shared(allow: &[&str]) -> Arc<NetShared> {
    let recorder = Arc::new(Recorder::new(Arc::new(Registry::new())));
    let allow: Vec<String> = allow.iter().map(|s| s.to_string()).collect();
    Arc::new(NetShared::new(
        Allowlist::new(&allow).unwrap(),
        Duration::from_secs(5),
        1 << 20,
        recorder,
    ))
}

/// Every counter's sum, by metric, with `socket_errors` also by its `error` tag.
fn counters(shared: &NetShared) -> HashMap<String, f64> {
    let mut out = HashMap::new();
    for ((id, tags), v) in shared.recorder.drain().iter() {
        let Value::Counter(c) = v else { continue };
        *out.entry(name(*id)).or_default() += *c;
        if *id == builtin::SOCKET_ERRORS {
            let key = format!("socket_errors{{{}}}", tags.get("error").unwrap_or("?"));
            *out.entry(key).or_default() += *c;
        }
    }
    out
}

fn name(id: MetricId) -> String {
    Registry::new().def(id).name
}

fn options() -> TcpOptions {
    TcpOptions {
        tls: None,
        timeout: Duration::from_secs(5),
        local: None,
    }
}

fn tags(port: u16) -> TagSet {
    socket_tags(&TagSet::empty(), "tcp", &format!("127.0.0.1:{port}"), &[])
}

const SECOND: Duration = Duration::from_secs(1);

#[tokio::test]
async fn reads_some_exactly_and_up_to_a_delimiter_over_one_buffer() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = tokio::spawn(async move {
        let (mut s, _) = listener.accept().await.unwrap();
        let mut got = [0u8; 4];
        s.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b"PING");
        // One write holding a line, a 5-byte payload and part of a second line; the
        // rest of the line comes later.
        s.write_all(b"+OK\r\nhello$12").await.unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
        s.write_all(b"3\r\nrest").await.unwrap();
        s.shutdown().await.unwrap();
        let mut tail = Vec::new();
        s.read_to_end(&mut tail).await.unwrap();
        tail
    });
    let shared = shared(&[]);
    let mut c = connect(&shared, "127.0.0.1", port, options(), tags(port))
        .await
        .unwrap();
    assert_eq!(shared.sockets_open.load(Ordering::Relaxed), 1);
    c.write(b"PING", SECOND).await.unwrap();
    assert_eq!(c.read_until(b"\r\n", 64, SECOND).await.unwrap(), b"+OK\r\n");
    assert_eq!(c.read_exact(5, SECOND).await.unwrap(), b"hello");
    assert_eq!(
        c.read_until(b"\r\n", 64, SECOND).await.unwrap(),
        b"$123\r\n"
    );
    assert_eq!(c.read(100, SECOND).await.unwrap(), b"rest");
    assert_eq!(
        c.read(100, SECOND).await.unwrap(),
        b"",
        "the end of the stream"
    );
    c.write(b"bye", SECOND).await.unwrap();
    c.shutdown_write(SECOND).await.unwrap();
    assert_eq!(
        server.await.unwrap(),
        b"bye",
        "the half-close reached the peer"
    );
    drop(c);
    assert_eq!(shared.sockets_open.load(Ordering::Relaxed), 0);
    let n = counters(&shared);
    assert_eq!(n["socket_connects"], 1.0);
    assert_eq!(n["data_sent"], 7.0);
    assert_eq!(n["data_received"], 20.0);
    assert!(!n.contains_key("socket_errors"), "{n:?}");
}

#[tokio::test]
async fn a_peer_closing_mid_read_and_reads_past_the_bound_are_typed_errors() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        let (mut s, _) = listener.accept().await.unwrap();
        s.write_all(b"0123456789abcdef").await.unwrap();
        tokio::time::sleep(Duration::from_millis(300)).await;
        // Closes with 3 of a promised 10 bytes sent.
        s.write_all(b"xyz").await.unwrap();
    });
    let shared = shared(&[]);
    let mut c = connect(&shared, "127.0.0.1", port, options(), tags(port))
        .await
        .unwrap();
    let e = c.read_until(b"\n", 8, SECOND).await.unwrap_err();
    assert_eq!(e.kind, SocketErrorKind::TooLarge, "{e}");
    let e = c.read_exact(MAX_READ + 1, SECOND).await.unwrap_err();
    assert_eq!(e.kind, SocketErrorKind::TooLarge, "{e}");
    assert_eq!(c.read_exact(16, SECOND).await.unwrap(), b"0123456789abcdef");
    let e = c
        .read_exact(4, Duration::from_millis(50))
        .await
        .unwrap_err();
    assert_eq!(e.kind, SocketErrorKind::Timeout, "{e}");
    let e = c.read_exact(10, SECOND).await.unwrap_err();
    assert_eq!(e.kind, SocketErrorKind::Closed, "{e}");
    assert!(e.message.contains("after 3 of the 10 bytes"), "{e}");
    // What did arrive is still there for a plain read.
    assert_eq!(c.read(10, SECOND).await.unwrap(), b"xyz");
    c.close();
    let e = c.read(1, SECOND).await.unwrap_err();
    assert_eq!(e.kind, SocketErrorKind::Invalid, "{e}");
    let n = counters(&shared);
    assert_eq!(n["socket_errors{too_large}"], 2.0, "{n:?}");
    assert_eq!(n["socket_errors{timeout}"], 1.0, "{n:?}");
    assert_eq!(n["socket_errors{closed}"], 1.0, "{n:?}");
    assert_eq!(n["socket_errors{invalid}"], 1.0, "{n:?}");
}

#[tokio::test]
async fn a_denied_port_is_never_contacted_and_a_refused_one_is_typed() {
    // Allowed: another port of the same host. The listener must see no connection.
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let shared = shared(&["tcp://127.0.0.1:1"]);
    let e = connect(&shared, "127.0.0.1", port, options(), tags(port))
        .await
        .err()
        .unwrap();
    assert_eq!(e.kind, SocketErrorKind::Denied, "{e}");
    assert!(
        e.message
            .contains(&format!("--allow tcp://127.0.0.1:{port}")),
        "{e}"
    );
    let accepted = tokio::time::timeout(Duration::from_millis(200), listener.accept()).await;
    assert!(accepted.is_err(), "a denied connect reached the port");
    // An http:// entry for the port opens no raw socket.
    let shared_http = self::shared(&[&format!("http://127.0.0.1:{port}")]);
    let e = connect(&shared_http, "127.0.0.1", port, options(), tags(port))
        .await
        .err()
        .unwrap();
    assert_eq!(e.kind, SocketErrorKind::Denied, "{e}");
    // Refused: a port nothing listens on (bound, then freed).
    let free = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let loopback = self::shared(&[]);
    let e = connect(&loopback, "127.0.0.1", free, options(), tags(free))
        .await
        .err()
        .unwrap();
    assert_eq!(e.kind, SocketErrorKind::Refused, "{e}");
    let n = counters(&shared);
    assert_eq!(n["socket_connects_denied"], 1.0);
    assert!(!n.contains_key("socket_connects"));
    let n = counters(&loopback);
    assert_eq!(n["socket_errors{refused}"], 1.0);
    assert_eq!(loopback.sockets_open.load(Ordering::Relaxed), 0);
}

#[tokio::test]
async fn bad_hosts_and_ports_are_invalid() {
    let shared = shared(&[]);
    for (host, port) in [("", 80), ("127.0.0.1", 0), ("a b", 80), ("x/y", 80)] {
        let e = connect(&shared, host, port, options(), tags(port))
            .await
            .err()
            .unwrap();
        assert_eq!(e.kind, SocketErrorKind::Invalid, "{host:?}:{port}: {e}");
    }
}

#[tokio::test]
async fn tls_to_a_plain_server_fails_as_tls() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        let (mut s, _) = listener.accept().await.unwrap();
        s.write_all(b"-ERR not TLS\r\n").await.unwrap();
        tokio::time::sleep(Duration::from_millis(200)).await;
    });
    let shared = shared(&[]);
    let mut opts = options();
    opts.tls = Some(Some("localhost".into()));
    let e = connect(&shared, "127.0.0.1", port, opts, tags(port))
        .await
        .err()
        .unwrap();
    assert_eq!(e.kind, SocketErrorKind::Tls, "{e}");
    let n = counters(&shared);
    assert_eq!(n["socket_errors{tls}"], 1.0);
    assert!(
        n["data_sent"] > 0.0,
        "the ClientHello's bytes are counted: {n:?}"
    );
}

#[tokio::test]
async fn udp_sends_and_receives_datagrams() {
    let peer = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let port = peer.local_addr().unwrap().port();
    tokio::spawn(async move {
        let mut buf = [0u8; 100];
        let (n, from) = peer.recv_from(&mut buf).await.unwrap();
        peer.send_to(&buf[..n].repeat(2), from).await.unwrap();
    });
    let shared = shared(&[]);
    let tags = socket_tags(&TagSet::empty(), "udp", "x", &[]);
    let mut u = udp::connect(&shared, "127.0.0.1", port, None, tags)
        .await
        .unwrap();
    u.send(b"ab").await.unwrap();
    assert_eq!(u.recv(SECOND).await.unwrap(), b"abab");
    let e = u.recv(Duration::from_millis(30)).await.unwrap_err();
    assert_eq!(e.kind, SocketErrorKind::Timeout);
    let e = u.send(&vec![0; MAX_DATAGRAM + 1]).await.unwrap_err();
    assert_eq!(e.kind, SocketErrorKind::TooLarge);
    let udp_denied = self::shared(&["udp://127.0.0.1:1"]);
    let tags = socket_tags(&TagSet::empty(), "udp", "x", &[]);
    let e = udp::connect(&udp_denied, "127.0.0.1", port, None, tags)
        .await
        .err()
        .unwrap();
    assert_eq!(e.kind, SocketErrorKind::Denied);
    drop(u);
    let n = counters(&shared);
    assert_eq!(n["data_sent"], 2.0);
    assert_eq!(n["data_received"], 4.0);
    assert_eq!(shared.sockets_open.load(Ordering::Relaxed), 0);
}

/// One whole RESP reply, copied out.
async fn frame(c: &mut TcpConn) -> Result<Vec<u8>, SocketError> {
    c.read_frame(resp::frame_len, MAX_READ, SECOND, |b: &[u8]| b.to_vec())
        .await
}

#[tokio::test]
async fn whole_resp_replies_are_read_in_one_call_and_a_too_large_one_fails_at_once() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        let (mut s, _) = listener.accept().await.unwrap();
        // Two replies in one write, then one split in the middle of its bulk string,
        // then a bulk string announced larger than the read takes.
        s.write_all(b"+OK\r\n*2\r\n$2\r\nv1\r\n:7\r\n$5\r\nab")
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
        s.write_all(b"cde\r\n$100000000\r\n").await.unwrap();
        tokio::time::sleep(Duration::from_secs(2)).await;
    });
    let shared = shared(&[]);
    let mut c = connect(&shared, "127.0.0.1", port, options(), tags(port))
        .await
        .unwrap();
    assert_eq!(frame(&mut c).await.unwrap(), b"+OK\r\n");
    assert_eq!(frame(&mut c).await.unwrap(), b"*2\r\n$2\r\nv1\r\n:7\r\n");
    assert_eq!(frame(&mut c).await.unwrap(), b"$5\r\nabcde\r\n");
    // Refused on its header, without waiting the read's second for 100 MB that would
    // not fit (0.9 s: room for a loaded machine, still short of that second).
    let started = std::time::Instant::now();
    let e = frame(&mut c).await.unwrap_err();
    assert_eq!(e.kind, SocketErrorKind::TooLarge, "{e}");
    assert!(started.elapsed() < Duration::from_millis(900));
    let n = counters(&shared);
    assert_eq!(n["socket_errors{too_large}"], 1.0, "{n:?}");
}
