//! The host's Chromium, driven over the Chrome DevTools Protocol, for browser tests
//! (k6's `k6/browser`): the plugin never drives the browser; the host does, as it makes
//! HTTP requests for the plugin, and holds the run's allowlist inside it.
//!
//! # The protocol client: our own, over a pipe
//!
//! The browser is Debian's `chromium` started with `--remote-debugging-pipe`: the
//! protocol's JSON messages go over the child's fds 3 and 4, NUL-separated, so no
//! DevTools port is opened on loopback (which any local process could connect to and
//! drive the browser, and its pages, outside the allowlist). The client is a few
//! hundred lines over tokio and serde_json ([`cdp`]), with the commands this host uses
//! typed where it reads their replies. `chromiumoxide` 0.9.1 (MIT/Apache-2.0) was the
//! alternative: its `chromiumoxide_cdp` crate is generated from the whole protocol
//! (every domain: 111,000 lines, 5.8 MB of Rust source); built alone in a scratch
//! project (debug, `CARGO_BUILD_JOBS=1`, 22 crates) it took 68 s of CPU and one rustc
//! peaked at 2.4 GB of memory, before `chromiumoxide` itself and its WebSocket stack.
//! It also connects over a WebSocket to a DevTools port, the open port avoided here;
//! the host needs a few dozen commands.
//!
//! # Parts
//!
//! - [`launch`]: finding the browser (`K6_BROWSER_EXECUTABLE_PATH`, `K6_BROWSER_ARGS`,
//!   `K6_BROWSER_HEADLESS` as k6 reads them) and starting it so it dies with the host.
//! - [`remote`]: a running browser instead (`K6_BROWSER_WS_URL`), over a WebSocket.
//! - [`cdp`]: the protocol connection (the pipes, or that WebSocket).
//! - [`pool`]: the bounded set of shared browsers and a context per VU iteration.
//! - [`allow`]: the allowlist in the browser (request interception, a dead-end proxy).
//! - [`page`]: one page's navigation, waiting and evaluation; [`actions`]: its elements;
//!   [`input`]: the mouse and touch at a point; [`handles`], [`jshandle`]: values and
//!   elements the script holds; [`emulation`]: headers, media, init scripts, offline.
//! - [`events`]: the page's console, requests and responses for `page.on`;
//!   [`tagging`]: `metric.tag`'s URL grouping; [`routes`]: `page.route`.
//! - [`permissions`]: a context's permissions and geolocation.
//! - [`service`]: the pool as a run holds it.
//! - [`vitals`], [`traffic`]: k6's browser metrics (web vitals, the page's requests).

pub(crate) mod actions;
pub(crate) mod allow;
pub(crate) mod cdp;
pub(crate) mod emulation;
pub(crate) mod events;
pub(crate) mod handles;
pub(crate) mod input;
pub(crate) mod jshandle;
pub(crate) mod launch;
pub(crate) mod page;
pub(crate) mod permissions;
pub(crate) mod pool;
pub(crate) mod remote;
pub(crate) mod routes;
pub(crate) mod service;
pub(crate) mod tagging;
pub(crate) mod traffic;
pub(crate) mod vitals;

#[cfg(test)]
mod tests;

/// Why a browser operation failed; the message is the script's error.
#[derive(Debug, thiserror::Error)]
pub(crate) enum BrowserError {
    /// No browser could be found or started.
    #[error(transparent)]
    Launch(#[from] launch::LaunchError),
    /// The browser started but did not come up.
    #[error("{0}")]
    Start(String),
    /// The protocol failed (the browser is gone, or refused a command).
    #[error(transparent)]
    Cdp(#[from] cdp::CdpError),
    /// A wait ran out of time.
    #[error("{0}")]
    Timeout(String),
    /// A navigation to a target the run does not allow.
    #[error("{0}")]
    Denied(String),
    /// A navigation failed (network error, crash).
    #[error("{0}")]
    Navigation(String),
    /// A script in the page threw.
    #[error("{0}")]
    Script(String),
    /// A bad argument from the script.
    #[error("{0}")]
    Invalid(String),
}
