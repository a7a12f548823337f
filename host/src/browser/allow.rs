//! The run's allowlist, held inside the browser, in two layers.
//!
//! 1. Every request a page, a frame or a worker makes is paused by the protocol's
//!    `Fetch` domain, enabled once on the browser itself (so targets opened later are
//!    covered without a race), and checked here with the same [`Allowlist::check`] as a
//!    plugin's HTTP request: allowed, it continues; otherwise it fails with
//!    `BlockedByClient` before a byte leaves, counted in `http_reqs_denied` with the
//!    page's tags and warned about once per origin. Schemes that are not the network's
//!    (`file:`, `chrome:`, `ftp:` ...) are refused the same way.
//! 2. `Fetch` does not see WebSocket handshakes (nor WebRTC), so every browser is also
//!    given a proxy that leads nowhere ([`DeadEnd`]: a listener of the host that closes
//!    what connects to it) for every origin but the allowed ones
//!    (`--proxy-bypass-list`), and WebRTC may not use UDP outside a proxy. A WebSocket to
//!    a denied origin therefore fails at the proxy; the page's `Network.webSocketCreated`
//!    event (checked in [`super::page`]) counts it in `http_reqs_denied` as the first
//!    layer counts a request. A worker's WebSocket is not a page event: it still fails
//!    at the proxy, uncounted.

use crate::metrics::{builtin, Recorder, TagSet};
use crate::net::allowlist::{Allowlist, Origin};
use crate::net::NetShared;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::cdp::{Connection, Event};
use super::routes::Router;

/// What the check says of one URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// It may go.
    Allow,
    /// It may not; the reason, for the warning.
    Deny(String),
}

/// Checks `url` against the allowlist. `data:`, `blob:` and `about:` stay inside the
/// browser and pass.
pub(crate) fn check(allowlist: &Allowlist, url: &str) -> Verdict {
    let scheme = url
        .split_once(':')
        .map(|(s, _)| s.to_ascii_lowercase())
        .unwrap_or_default();
    match scheme.as_str() {
        "data" | "blob" | "about" => Verdict::Allow,
        "http" | "https" | "ws" | "wss" => match Origin::parse(url) {
            Ok(origin) => match allowlist.check(&origin) {
                Ok(()) => Verdict::Allow,
                Err(why) => Verdict::Deny(why.to_string()),
            },
            Err(e) => Verdict::Deny(e.to_string()),
        },
        _ => Verdict::Deny(format!(
            "{scheme}: URLs are refused in browser tests (only the run's http(s) targets \
             are reached)"
        )),
    }
}

/// Chromium's switches that route every origin the allowlist does not name to the
/// dead-end proxy at `proxy_port`.
pub(crate) fn proxy_switches(allowlist: &Allowlist, proxy_port: u16) -> Vec<String> {
    let mut switches = vec![
        format!("--proxy-server=http://127.0.0.1:{proxy_port}"),
        "--force-webrtc-ip-handling-policy=disable_non_proxied_udp".to_owned(),
        "--webrtc-ip-handling-policy=disable_non_proxied_udp".to_owned(),
    ];
    if let Some(bypass) = bypass_list(allowlist) {
        switches.push(format!("--proxy-bypass-list={bypass}"));
    }
    switches
}

/// The origins that bypass the dead-end proxy, in Chromium's bypass-list syntax; `None`
/// when the allowlist is loopback only (Chromium's own rule bypasses the proxy for
/// loopback). A list: `<-loopback>` removes that rule, so a loopback port the list does
/// not name goes to the dead end too.
pub(crate) fn bypass_list(allowlist: &Allowlist) -> Option<String> {
    let origins = allowlist.explicit()?;
    let mut bypass = vec!["<-loopback>".to_owned()];
    for o in origins {
        if matches!(o.scheme.as_str(), "http" | "https" | "ws" | "wss") {
            bypass.push(if o.host.contains(':') {
                format!("[{}]:{}", o.host, o.port)
            } else {
                format!("{}:{}", o.host, o.port)
            });
        }
    }
    Some(bypass.join(";"))
}

/// A proxy that leads nowhere: a loopback listener the host holds (so no other local
/// process can take its port) and that closes every connection at once.
pub(crate) struct DeadEnd {
    port: u16,
    task: tokio::task::JoinHandle<()>,
}

impl DeadEnd {
    /// Binds 127.0.0.1 on a free port and starts refusing.
    pub(crate) async fn start() -> std::io::Result<DeadEnd> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let port = listener.local_addr()?.port();
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                drop(stream);
            }
        });
        Ok(DeadEnd { port, task })
    }

    /// Its port.
    pub(crate) fn port(&self) -> u16 {
        self.port
    }
}

impl Drop for DeadEnd {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The checker of one browser's paused requests, and the tags and routes of the pages
/// it serves (by frame id: a page's main frame has its target's id; its other frames
/// are added as they attach).
pub(crate) struct Gate {
    net: Arc<NetShared>,
    pages: Mutex<HashMap<String, Frame>>,
}

/// What the gate knows of one frame: its page's tags and routes.
#[derive(Clone)]
struct Frame {
    tags: TagSet,
    router: Arc<Router>,
}

impl Gate {
    /// A gate that checks against `net`'s allowlist and counts in its recorder.
    pub(crate) fn new(net: Arc<NetShared>) -> Arc<Gate> {
        Arc::new(Gate {
            net,
            pages: Mutex::default(),
        })
    }

    /// The recorder the browser's metrics go to.
    pub(crate) fn recorder(&self) -> &Arc<Recorder> {
        &self.net.recorder
    }

    /// The run's allowlist.
    pub(crate) fn allowlist(&self) -> &Allowlist {
        &self.net.allowlist
    }

    /// Counts denied requests of frame `frame` with `tags` from now on, and hands its
    /// allowed ones to `router` while it routes.
    pub(crate) fn page_opened(&self, frame: &str, tags: TagSet, router: Arc<Router>) {
        self.lock().insert(frame.to_owned(), Frame { tags, router });
    }

    /// Frame `frame` attached under `parent`: it is the same page's.
    pub(crate) fn frame_attached(&self, frame: &str, parent: &str) {
        let mut pages = self.lock();
        if let Some(f) = pages.get(parent).cloned() {
            pages.insert(frame.to_owned(), f);
        }
    }

    /// Forgets frame `frame` (a page's main frame: the page's other frames too).
    pub(crate) fn page_closed(&self, frame: &str) {
        let mut pages = self.lock();
        if let Some(gone) = pages.remove(frame) {
            pages.retain(|_, f| !Arc::ptr_eq(&f.router, &gone.router));
        }
    }

    /// Forgets a page's frame `frame` that detached (not its main frame).
    pub(crate) fn frame_detached(&self, frame: &str, main: &str) {
        if frame != main {
            self.lock().remove(frame);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Frame>> {
        self.pages.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Handles one of the browser's own events: answers `Fetch.requestPaused`.
    pub(crate) fn on_event(&self, conn: &Connection, event: Event) {
        if event.method != "Fetch.requestPaused" {
            return;
        }
        let p = &event.params;
        let Some(id) = p.get("requestId").and_then(Value::as_str) else {
            return;
        };
        let url = p
            .pointer("/request/url")
            .and_then(Value::as_str)
            .unwrap_or("");
        let frame = p
            .get("frameId")
            .and_then(Value::as_str)
            .and_then(|f| self.lock().get(f).cloned());
        match check(&self.net.allowlist, url) {
            Verdict::Allow => {
                if !frame.is_some_and(|f| f.router.offer(p)) {
                    conn.send(None, "Fetch.continueRequest", json!({ "requestId": id }));
                }
            }
            Verdict::Deny(why) => {
                conn.send(
                    None,
                    "Fetch.failRequest",
                    json!({ "requestId": id, "errorReason": "BlockedByClient" }),
                );
                let tags = frame.map(|f| f.tags).unwrap_or_default();
                self.denied(url, &why, &tags);
            }
        }
    }

    /// Whether the run does not allow `url`; a denied one is counted (with `tags`) and
    /// warned about as every denied request of a page is.
    pub(crate) fn deny_counted(&self, url: &str, tags: &TagSet) -> bool {
        match check(&self.net.allowlist, url) {
            Verdict::Allow => false,
            Verdict::Deny(why) => {
                self.denied(url, &why, tags);
                true
            }
        }
    }

    /// Counts a page's request to `url` as denied (`why`) in `http_reqs_denied` with
    /// `tags`, and warns once per origin.
    pub(crate) fn denied(&self, url: &str, why: &str, tags: &TagSet) {
        self.net
            .recorder
            .count(builtin::HTTP_REQS_DENIED, tags, 1.0);
        let shown = crate::bounded::cut(url, crate::bounded::QUOTED_BYTES);
        let origin = Origin::parse(url)
            .map(|o| o.to_string())
            .unwrap_or_else(|_| shown.into_owned());
        self.net.denied_warned.warn(
            &origin,
            &format!(
                "a browser page tried to reach {}: denied ({why})",
                crate::stderr::escape_controls(&origin, false)
            ),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_check_as_http() {
        let list = Allowlist::new(&["http://127.0.0.1:8080".to_owned()]).unwrap();
        assert_eq!(check(&list, "http://127.0.0.1:8080/a.png"), Verdict::Allow);
        assert!(
            matches!(check(&list, "http://127.0.0.1:8081/"), Verdict::Deny(w) if w.contains("--allow http://127.0.0.1:8081"))
        );
        assert!(
            matches!(check(&list, "file:///etc/passwd"), Verdict::Deny(w) if w.contains("file:"))
        );
        assert!(matches!(
            check(&list, "chrome://settings"),
            Verdict::Deny(_)
        ));
        assert_eq!(check(&list, "data:text/plain,hi"), Verdict::Allow);
        let loopback = Allowlist::new(&[]).unwrap();
        assert_eq!(check(&loopback, "http://localhost:9/"), Verdict::Allow);
        assert!(matches!(
            check(&loopback, "https://example.com/"),
            Verdict::Deny(_)
        ));
    }

    #[test]
    fn only_listed_origins_bypass_the_dead_end() {
        let list = Allowlist::new(&[
            "http://127.0.0.1:8080".to_owned(),
            "https://[::1]".to_owned(),
            "tcp://127.0.0.1:6379".to_owned(),
        ])
        .unwrap();
        let s = proxy_switches(&list, 4000);
        assert!(s.contains(&"--proxy-server=http://127.0.0.1:4000".to_owned()));
        assert!(
            s.contains(&"--proxy-bypass-list=<-loopback>;127.0.0.1:8080;[::1]:443".to_owned()),
            "{s:?}"
        );
        let loopback = proxy_switches(&Allowlist::new(&[]).unwrap(), 4000);
        assert!(!loopback
            .iter()
            .any(|s| s.starts_with("--proxy-bypass-list")));
    }
}
