//! The `[websocket]` section: how the host keeps the plugin's sockets alive and how
//! much it buffers for each of them.
//!
//! ```toml
//! [websocket]
//! ping_interval = "20s"        # the host pings every open socket this often; "0s" = never
//! recv_buffer = 64             # messages held per socket before the host stops reading it
//! recv_buffer_bytes = "1MiB"   # bytes held per socket before the host stops reading it
//! max_message = "1MiB"         # a larger message ends the socket with a `protocol` error
//! ```

use crate::table::{ConfigError, TableReader};
use std::time::Duration;

/// Largest `recv_buffer` accepted: the buffer is per socket and there may be thousands.
const MAX_RECV_BUFFER: u64 = 65_536;

/// Largest `max_message` and `recv_buffer_bytes` accepted (1 GiB): both are held per
/// socket, in the host's memory, outside the plugin's `memory_mb`.
const MAX_BYTES: u64 = 1 << 30;

/// WebSocket settings of a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebSocketOptions {
    /// How often the host pings each open socket and measures the round trip
    /// (`ws_ping`); a ping still unanswered when the next is due ends the socket with
    /// an error. `None`: the host never pings (it still answers the server's pings).
    pub ping_interval: Option<Duration>,
    /// Messages received and not yet taken by the plugin that the host holds per
    /// socket; when full, the host stops reading that socket (TCP backpressure).
    pub recv_buffer: usize,
    /// Bytes of received messages the host holds per socket: it stops reading once they
    /// reach this, so a socket costs at most this plus one message.
    pub recv_buffer_bytes: usize,
    /// Largest message (and frame) accepted from the peer; a larger one ends the socket
    /// with a `protocol` error as soon as its frame header announces it.
    pub max_message: usize,
}

impl Default for WebSocketOptions {
    fn default() -> Self {
        Self {
            ping_interval: None,
            recv_buffer: 64,
            recv_buffer_bytes: 1 << 20,
            max_message: 1 << 20,
        }
    }
}

/// Reads `[websocket]` from the run config, or the defaults when it is absent.
pub(crate) fn parse(source: &toml::Table) -> Result<WebSocketOptions, ConfigError> {
    let mut options = WebSocketOptions::default();
    let Some(value) = source.get("websocket") else {
        return Ok(options);
    };
    let table = value.as_table().ok_or_else(|| ConfigError {
        path: "websocket".into(),
        message: "must be a table: write it as [websocket]".into(),
    })?;
    let mut r = TableReader::new("websocket", table);
    if let Some(interval) = r.duration("ping_interval")? {
        options.ping_interval = (!interval.is_zero()).then_some(interval);
    }
    if let Some(n) = r.uint("recv_buffer")? {
        if !(1..=MAX_RECV_BUFFER).contains(&n) {
            return Err(r.error(
                "recv_buffer",
                format!("must be between 1 and {MAX_RECV_BUFFER} messages"),
            ));
        }
        options.recv_buffer = n as usize;
    }
    for (key, slot) in [
        ("recv_buffer_bytes", &mut options.recv_buffer_bytes),
        ("max_message", &mut options.max_message),
    ] {
        if let Some(n) = r.size(key)? {
            if !(1..=MAX_BYTES).contains(&n) {
                return Err(r.error(key, "must be between 1 byte and \"1GiB\""));
            }
            *slot = n as usize;
        }
    }
    r.finish()?;
    Ok(options)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_text(text: &str) -> Result<WebSocketOptions, ConfigError> {
        parse(&toml::from_str(text).unwrap())
    }

    #[test]
    fn defaults_ping_nothing_and_buffer_a_little() {
        let o = parse_text("").unwrap();
        assert_eq!(o, WebSocketOptions::default());
        assert_eq!(o.ping_interval, None);
    }

    #[test]
    fn reads_interval_and_buffer() {
        let o = parse_text("[websocket]\nping_interval = \"250ms\"\nrecv_buffer = 8").unwrap();
        assert_eq!(o.ping_interval, Some(Duration::from_millis(250)));
        assert_eq!(o.recv_buffer, 8);
        assert_eq!(o.max_message, 1 << 20);
        let o =
            parse_text("[websocket]\nmax_message = \"16MiB\"\nrecv_buffer_bytes = 4096").unwrap();
        assert_eq!(o.max_message, 16 << 20);
        assert_eq!(o.recv_buffer_bytes, 4096);
        let o = parse_text("[websocket]\nping_interval = \"0s\"").unwrap();
        assert_eq!(o.ping_interval, None);
    }

    #[test]
    fn mistakes_are_explained() {
        let err = parse_text("[websocket]\nping_intervall = \"1s\"").unwrap_err();
        assert!(
            err.message.contains("did you mean `ping_interval`"),
            "{err}"
        );
        let err = parse_text("[websocket]\nrecv_buffer = 0").unwrap_err();
        assert_eq!(err.path, "websocket.recv_buffer");
        let err = parse_text("[websocket]\nmax_message = \"lots\"").unwrap_err();
        assert!(err.message.contains("\"1MiB\""), "{err}");
        let err = parse_text("[websocket]\nmax_message = 0").unwrap_err();
        assert_eq!(err.path, "websocket.max_message");
        assert!(parse_text("websocket = 3").is_err());
    }
}
