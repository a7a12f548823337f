//! Why a request failed on a lean connection: hyper's words for the same failures,
//! so that messages read alike whichever client ran, and the transport's error kept
//! for the classification that finds TLS failures in it.

use std::borrow::Cow;

/// Why a request failed on a lean connection, in hyper's words where hyper has them,
/// with the transport's error when there is one (a TLS failure is found in it).
#[derive(Debug)]
pub(crate) struct LeanError {
    message: Cow<'static, str>,
    io: Option<std::io::Error>,
    too_large: bool,
}

impl LeanError {
    pub(super) fn parse(message: &'static str) -> Self {
        Self {
            message: Cow::Borrowed(message),
            io: None,
            too_large: false,
        }
    }

    pub(super) fn too_large() -> Self {
        Self {
            message: Cow::Borrowed("message head is too large"),
            io: None,
            too_large: true,
        }
    }

    pub(super) fn io(context: &'static str, e: std::io::Error) -> Self {
        Self {
            message: Cow::Owned(format!("{context}: {e}")),
            io: Some(e),
            too_large: false,
        }
    }

    pub(super) fn short_body(missing: u64) -> Self {
        Self {
            message: Cow::Owned(format!(
                "user body write aborted: early end, expected {missing} more bytes"
            )),
            io: None,
            too_large: false,
        }
    }

    pub(super) fn incomplete() -> Self {
        Self::parse("connection closed before message completed")
    }

    pub(super) fn body(detail: &str) -> Self {
        Self {
            message: Cow::Owned(format!("error reading a body from connection: {detail}")),
            io: None,
            too_large: false,
        }
    }

    /// What happened, in words.
    pub(crate) fn message(&self) -> &str {
        &self.message
    }

    /// The transport's error, if the failure was one.
    pub(crate) fn io_error(&self) -> Option<&std::io::Error> {
        self.io.as_ref()
    }

    /// The head was over the field count or the size limit (hyper's
    /// `is_parse_too_large`).
    pub(crate) fn is_too_large(&self) -> bool {
        self.too_large
    }
}
