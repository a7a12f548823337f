//! Opening a socket: URL and allowlist checks, the upgrade request with the plugin's
//! headers, TCP connect, TLS for `wss://`, and handshake (timed as `ws_connecting`),
//! then the socket's task is started.

use super::driver;
use super::link::Link;
use super::message::WsError;
use super::session::Session;
use super::socket::Socket;
use super::transport::Stream;
use super::transport::Transport;
use crate::metrics::{builtin, TagSet};
use crate::net::allowlist::Origin;
use crate::net::connect::connect_tcp;
use crate::net::counting_io::{CountingIo, IoStats};
use crate::net::types::HttpErrorKind;
use crate::net::NetShared;
use http::header::{HeaderName, HeaderValue};
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Instant;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::handshake::client::Request;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;

/// Bytes read from the socket at a time, and the read buffer every socket keeps (all
/// of it touched: tungstenite zero-fills it before each read). Small, because there may
/// be tens of thousands of mostly idle sockets whose pushes are a few hundred bytes;
/// a longer message still arrives whole (the buffer grows to hold it), in reads of
/// this size. tungstenite's default (128 KiB) is for throughput.
const READ_BUFFER: usize = 1024;

/// Opens a socket to a `ws://` URL for a VU whose tags are `base_tags`, adding the
/// plugin's `headers` to the upgrade request and its `tags` to the socket's metrics.
/// `name` defaults to the URL without its query, which often carries a token.
#[cfg(test)]
pub(crate) async fn connect(
    shared: &Arc<NetShared>,
    url: &str,
    headers: &[(String, String)],
    tags: &[(String, String)],
    base_tags: &TagSet,
) -> Result<Socket, WsError> {
    connect_from(shared, url, headers, tags, base_tags, None).await
}

/// Opens a socket (see `connect`) from the source address `local` when given (`[http] local_ips`: a VU's
/// sockets leave from the same address as its HTTP requests).
pub(crate) async fn connect_from(
    shared: &Arc<NetShared>,
    url: &str,
    headers: &[(String, String)],
    tags: &[(String, String)],
    base_tags: &TagSet,
    local: Option<IpAddr>,
) -> Result<Socket, WsError> {
    let name = tags
        .iter()
        .find(|(k, _)| k == "name")
        .map(|(_, v)| v.clone())
        .unwrap_or_else(|| url.split(['?', '#']).next().unwrap_or(url).to_string());
    let tags = base_tags.with(
        tags.iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .chain([("name", name.as_str())]),
    );
    let opened = open(shared, url, headers, &tags, local).await;
    if let Err(e) = &opened {
        let tags = tags.with([("error", e.kind())]);
        shared.recorder.count(builtin::WS_ERRORS, &tags, 1.0);
    }
    opened
}

async fn open(
    shared: &Arc<NetShared>,
    url: &str,
    headers: &[(String, String)],
    tags: &TagSet,
    local: Option<IpAddr>,
) -> Result<Socket, WsError> {
    let origin = Origin::parse(url).map_err(|e| WsError::Invalid(e.to_string()))?;
    if origin.scheme != "ws" && origin.scheme != "wss" {
        return Err(WsError::Invalid(format!(
            "{url}: a WebSocket needs a ws:// or wss:// URL"
        )));
    }
    check_allowed(shared, &origin)?;
    let request = upgrade_request(url, headers)?;
    let started = Instant::now();
    let timeout = shared.default_timeout;
    let (stream, io) = tokio::time::timeout(timeout, handshake(&origin, request, shared, local))
        .await
        .map_err(|_| {
            WsError::Connect(format!(
                "{origin}: no WebSocket within {}",
                crate::config::format_duration(timeout)
            ))
        })??;
    let connecting = started.elapsed();
    shared.recorder.with_shard(|s| {
        s.count(builtin::WS_SESSIONS, tags, 1.0);
        s.trend(builtin::WS_CONNECTING, tags, connecting.as_micros() as u64);
    });
    let session = Session::open(shared.clone(), tags.clone(), started, io);
    let link = Arc::new(Link::new(
        session,
        shared.websocket.recv_buffer,
        shared.websocket.recv_buffer_bytes,
    ));
    tokio::spawn(driver::run(
        stream,
        link.clone(),
        driver::Timing {
            ping_interval: shared.websocket.ping_interval,
            write_timeout: shared.default_timeout,
        },
    ));
    Ok(Socket {
        link,
        max_message: shared.websocket.max_message,
    })
}

fn check_allowed(shared: &NetShared, origin: &Origin) -> Result<(), WsError> {
    shared.allowlist.check(origin).map_err(|why| {
        shared.warn_denied_once(origin, "open a WebSocket to", &why);
        WsError::Denied(why.to_string())
    })
}

/// The upgrade request: tungstenite's required fields, then the plugin's (which replace
/// a generated field of the same name and add to any other).
fn upgrade_request(url: &str, headers: &[(String, String)]) -> Result<Request, WsError> {
    let mut request = url
        .into_client_request()
        .map_err(|e| WsError::Invalid(format!("invalid URL {url:?}: {e}")))?;
    let generated: Vec<HeaderName> = request.headers().keys().cloned().collect();
    for (name, value) in headers {
        let name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| WsError::Invalid(format!("invalid header name {name:?}")))?;
        let value = HeaderValue::from_str(value).map_err(|_| {
            WsError::Invalid(format!(
                "invalid value for header {name}: {value:?} (CR, LF and other control characters are not allowed)"
            ))
        })?;
        if generated.contains(&name) {
            request.headers_mut().insert(name, value);
        } else {
            request.headers_mut().append(name, value);
        }
    }
    Ok(request)
}

async fn handshake(
    origin: &Origin,
    request: Request,
    shared: &NetShared,
    local: Option<IpAddr>,
) -> Result<(Stream, Arc<IoStats>), WsError> {
    let tcp = connect_tcp(origin, local)
        .await
        .map_err(|e| match e.kind() {
            HttpErrorKind::Connect => WsError::Connect(e.into_message()),
            _ => WsError::Connect(e.to_string()),
        })?;
    let (io, stats) = CountingIo::new(tcp);
    let io = if origin.scheme == "wss" {
        // A TLS failure is a `connect` error of the socket (the WIT `ws-error` has no
        // kind of its own for it); its message starts with `tls:` and names the cause.
        let (tls, _) = shared
            .tls
            .handshake(origin, io, crate::net::tls::Purpose::WebSocket)
            .await
            .map_err(|e| WsError::Connect(e.to_string()))?;
        Transport::Tls(Box::new(tls))
    } else {
        Transport::Plain(io)
    };
    // A frame's header announces its length: past the cap the read fails there,
    // before its payload is buffered.
    let max_message = shared.websocket.max_message;
    let config = WebSocketConfig::default()
        .read_buffer_size(READ_BUFFER)
        .write_buffer_size(0)
        .max_message_size(Some(max_message))
        .max_frame_size(Some(max_message));
    match tokio_tungstenite::client_async_with_config(request, io, Some(config)).await {
        Ok((stream, _response)) => Ok((stream, stats)),
        Err(tokio_tungstenite::tungstenite::Error::Http(response)) => {
            let body = response
                .body()
                .as_deref()
                .map(|b| String::from_utf8_lossy(&b[..b.len().min(200)]).into_owned())
                .unwrap_or_default();
            Err(WsError::Connect(format!(
                "{origin}: the server refused the upgrade with status {}{}{}",
                response.status(),
                if body.is_empty() { "" } else { ": " },
                body.trim()
            )))
        }
        Err(e) => Err(WsError::Connect(format!(
            "{origin}: WebSocket handshake failed: {e}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plugin_headers_replace_generated_ones_and_add_others() {
        let request = upgrade_request(
            "ws://127.0.0.1:1/ws?token=x",
            &[
                ("Authorization".into(), "Bearer t".into()),
                ("Sec-WebSocket-Protocol".into(), "chat".into()),
                ("host".into(), "example".into()),
            ],
        )
        .unwrap();
        let h = request.headers();
        assert_eq!(h["authorization"], "Bearer t");
        assert_eq!(h["sec-websocket-protocol"], "chat");
        assert_eq!(h.get_all("host").iter().count(), 1);
        assert_eq!(h["host"], "example");
        assert!(h.contains_key("sec-websocket-key"));
    }

    #[test]
    fn header_injection_is_refused() {
        let err =
            upgrade_request("ws://127.0.0.1:1/", &[("x".into(), "a\r\nb: c".into())]).unwrap_err();
        assert!(matches!(err, WsError::Invalid(m) if m.contains("CR, LF")));
    }
}
