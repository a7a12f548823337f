//! gRPC's message framing on HTTP/2 DATA: a 1-byte compressed flag, a 4-byte
//! big-endian length, then the message. DATA frames need not align with messages, so
//! the decoder gathers bytes until a whole message is there.

use bytes::{Buf, BufMut, Bytes, BytesMut};

/// A message the decoder refuses; the plugin sees it as a `protocol` gRPC error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum FrameError {
    /// The compressed flag is set though the host asked for no compression.
    #[error("the server sent a compressed message, which the host did not ask for")]
    Compressed,
    /// The length prefix is over `[limits] max_body_mb`.
    #[error(
        "a message of {len} bytes is larger than the cap of {max} bytes ([limits] max_body_mb)"
    )]
    TooLarge {
        /// The announced length.
        len: u32,
        /// The cap.
        max: u64,
    },
}

impl From<FrameError> for super::status::GrpcError {
    fn from(e: FrameError) -> Self {
        Self::Protocol(e.to_string())
    }
}

/// `message` with its 5-byte prefix (never compressed: the host sends no
/// `grpc-encoding`, so servers answer uncompressed too).
pub(super) fn encode(message: &[u8]) -> Bytes {
    let mut out = BytesMut::with_capacity(5 + message.len());
    out.put_u8(0);
    out.put_u32(message.len() as u32);
    out.put_slice(message);
    out.freeze()
}

/// Splits received bytes into messages.
pub(super) struct Decoder {
    buf: BytesMut,
    /// Largest message accepted (`[limits] max_body_mb`).
    max: u64,
}

impl Decoder {
    /// A decoder refusing messages longer than `max` bytes.
    pub(super) fn new(max: u64) -> Self {
        Self {
            buf: BytesMut::new(),
            max,
        }
    }

    /// Adds received bytes.
    pub(super) fn push(&mut self, data: &[u8]) {
        self.buf.extend_from_slice(data);
    }

    /// The next whole message, if one is there.
    pub(super) fn next(&mut self) -> Result<Option<Bytes>, FrameError> {
        if self.buf.len() < 5 {
            return Ok(None);
        }
        let compressed = self.buf[0];
        let len = u32::from_be_bytes([self.buf[1], self.buf[2], self.buf[3], self.buf[4]]);
        if compressed != 0 {
            return Err(FrameError::Compressed);
        }
        if u64::from(len) > self.max {
            return Err(FrameError::TooLarge { len, max: self.max });
        }
        let len = len as usize;
        if self.buf.len() < 5 + len {
            return Ok(None);
        }
        self.buf.advance(5);
        Ok(Some(self.buf.split_to(len).freeze()))
    }

    /// Whether bytes of an unfinished message are left.
    #[cfg(test)]
    fn has_partial(&self) -> bool {
        !self.buf.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_split_across_pushes_are_rejoined() {
        let mut wire = encode(b"hello").to_vec();
        wire.extend_from_slice(&encode(b""));
        wire.extend_from_slice(&encode(b"world"));
        let mut d = Decoder::new(100);
        let mut got = Vec::new();
        for chunk in wire.chunks(3) {
            d.push(chunk);
            while let Some(m) = d.next().unwrap() {
                got.push(m);
            }
        }
        assert_eq!(got, vec![&b"hello"[..], b"", b"world"]);
        assert!(!d.has_partial());
    }

    #[test]
    fn oversize_and_compressed_messages_are_refused() {
        let mut d = Decoder::new(3);
        d.push(&encode(b"hello"));
        assert_eq!(
            d.next().unwrap_err().to_string(),
            "a message of 5 bytes is larger than the cap of 3 bytes ([limits] max_body_mb)"
        );
        let mut d = Decoder::new(100);
        d.push(&[1, 0, 0, 0, 0]);
        assert_eq!(d.next().unwrap_err(), FrameError::Compressed);
    }
}
