//! A browser the host did not start: `K6_BROWSER_WS_URL`, as k6 reads it, names the
//! DevTools WebSocket of a running Chromium (`ws://127.0.0.1:9222/devtools/browser/…`,
//! the `webSocketDebuggerUrl` of its `/json/version`). The host connects to it instead
//! of launching browsers, and never closes it: its contexts are disposed as with a
//! local browser.
//!
//! The allowlist holds in a remote browser as in a local one, with one difference: the
//! host cannot give a running browser its dead-end proxy switch, so each context is
//! created with a proxy of its own (`Target.createBrowserContext`'s `proxyServer`) at
//! a name that never resolves (`.invalid`, RFC 6761), bypassed only for the allowed
//! origins: a page's WebSocket to any other origin fails there.

use super::cdp::{Connection, MAX_MESSAGE};
use super::launch::LaunchError;
use super::BrowserError;
use std::time::Duration;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;

/// The proxy a remote browser's contexts use for the origins the run does not allow:
/// `.invalid` never resolves, so nothing is reached through it.
pub(crate) const DEAD_END_PROXY: &str = "http://dead-end.invalid:9";

/// `K6_BROWSER_WS_URL`, checked: `None` when unset (the host starts its browsers).
pub(crate) fn ws_url_from_env(
    get: impl Fn(&str) -> Option<String>,
) -> Result<Option<String>, LaunchError> {
    let Some(text) = get("K6_BROWSER_WS_URL").filter(|v| !v.trim().is_empty()) else {
        return Ok(None);
    };
    let text = text.trim().to_owned();
    let bad = |why| LaunchError::BadEnv {
        name: "K6_BROWSER_WS_URL",
        value: text.clone(),
        why,
    };
    let url = url::Url::parse(&text).map_err(|_| {
        bad("write the browser's DevTools WebSocket URL, ws://HOST:PORT/devtools/browser/ID")
    })?;
    match url.scheme() {
        "ws" => {}
        "wss" => {
            return Err(bad(
                "wss:// is not supported; reach the browser over ws:// (on loopback, or \
                 through an SSH tunnel)",
            ))
        }
        _ => {
            return Err(bad(
                "write the browser's DevTools WebSocket URL, ws://HOST:PORT/devtools/browser/ID",
            ))
        }
    }
    if url.host_str().is_none() {
        return Err(bad("the URL names no host"));
    }
    Ok(Some(text))
}

/// Connects to the browser at `url` (a checked `K6_BROWSER_WS_URL`) within `timeout`.
pub(crate) async fn connect(url: &str, timeout: Duration) -> Result<Connection, BrowserError> {
    let failed = |why: String| BrowserError::Start(format!("K6_BROWSER_WS_URL={url}: {why}"));
    let parsed = url::Url::parse(url).map_err(|e| failed(e.to_string()))?;
    let host = parsed
        .host_str()
        .unwrap_or_default()
        .trim_matches(['[', ']'])
        .to_owned();
    let port = parsed.port_or_known_default().unwrap_or(80);
    let work = async {
        let tcp = tokio::net::TcpStream::connect((host.as_str(), port))
            .await
            .map_err(|e| failed(format!("could not connect: {e}")))?;
        tcp.set_nodelay(true).ok();
        let config = WebSocketConfig::default()
            .max_message_size(Some(MAX_MESSAGE))
            .max_frame_size(Some(MAX_MESSAGE));
        let (ws, _) = tokio_tungstenite::client_async_with_config(url, tcp, Some(config))
            .await
            .map_err(|e| failed(format!("the DevTools handshake failed: {e}")))?;
        Ok(Connection::over_websocket(ws))
    };
    match tokio::time::timeout(timeout, work).await {
        Ok(r) => r,
        Err(_) => Err(failed(format!("no answer within {}s", timeout.as_secs()))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(v: &str) -> impl Fn(&str) -> Option<String> + '_ {
        move |k| (k == "K6_BROWSER_WS_URL").then(|| v.to_owned())
    }

    #[test]
    fn reads_k6s_variable() {
        assert_eq!(ws_url_from_env(env("")).unwrap(), None);
        assert_eq!(
            ws_url_from_env(env("ws://127.0.0.1:9222/devtools/browser/x")).unwrap(),
            Some("ws://127.0.0.1:9222/devtools/browser/x".to_owned())
        );
        let e = ws_url_from_env(env("wss://h/devtools/browser/x"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("wss:// is not supported"), "{e}");
        let e = ws_url_from_env(env("127.0.0.1:9222"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("ws://HOST:PORT"), "{e}");
    }
}
