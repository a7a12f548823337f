//! The chunked transfer coding of a response body (RFC 9112 §7.1), decoded with the
//! rules of hyper 1.x's decoder so that both clients accept and refuse the same
//! bodies: hex sizes without overflow, spaces or tabs after the size, extensions up
//! to 16 KiB and never containing a bare LF, CRLF after every line and chunk, and
//! trailer fields (at most `max_headers` of them, 16 KiB in all) checked and dropped,
//! as the host drops hyper's.

use bytes::{Buf, BytesMut};

/// Extension bytes a body may carry in all (hyper's `CHUNKED_EXTENSIONS_LIMIT`).
const EXTENSIONS_LIMIT: u64 = 16 * 1024;
/// Trailer bytes a body may carry (hyper's `TRAILER_LIMIT`).
const TRAILER_LIMIT: usize = 16 * 1024;

/// Where the decoder is in the coding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Start,
    Size,
    SizeLws,
    Extension,
    SizeLf,
    Body,
    BodyCr,
    BodyLf,
    Trailer,
    TrailerLf,
    EndCr,
    EndLf,
    End,
}

/// A chunked body being decoded.
#[derive(Debug)]
pub(super) struct Chunked {
    state: State,
    size: u64,
    extensions: u64,
    trailers: Vec<u8>,
    trailer_lines: usize,
    max_headers: usize,
}

/// What one pass over the buffered bytes came to.
pub(super) enum Step {
    /// The buffer is used up; read more.
    More,
    /// The last chunk and the trailers are in: the body is complete.
    Done,
    /// The sink refused data (the body cap): stop.
    Stopped,
}

impl Chunked {
    /// A decoder at the first chunk's size; trailers beyond `max_headers` lines fail.
    pub(super) fn new(max_headers: usize) -> Self {
        Self {
            state: State::Start,
            size: 0,
            extensions: 0,
            trailers: Vec::new(),
            trailer_lines: 0,
            max_headers,
        }
    }

    /// Whether the decoder stopped inside a chunk's size line (for the EOF message).
    pub(super) fn eof_message(&self) -> &'static str {
        match self.state {
            State::Body => "end of file before message length reached",
            _ => "unexpected EOF during chunk size line",
        }
    }

    /// Decodes what `buf` holds, handing chunk data to `sink` (which answers false to
    /// stop) and consuming it from `buf`.
    pub(super) fn decode(
        &mut self,
        buf: &mut BytesMut,
        sink: &mut (dyn FnMut(&[u8]) -> bool + Send),
    ) -> Result<Step, &'static str> {
        loop {
            if self.state == State::End {
                return Ok(Step::Done);
            }
            if buf.is_empty() {
                return Ok(Step::More);
            }
            if self.state == State::Body {
                let n = (self.size.min(buf.len() as u64)) as usize;
                let go_on = sink(&buf[..n]);
                buf.advance(n);
                self.size -= n as u64;
                if self.size == 0 {
                    self.state = State::BodyCr;
                }
                if !go_on {
                    return Ok(Step::Stopped);
                }
                continue;
            }
            let byte = buf[0];
            buf.advance(1);
            self.state = self.next(byte)?;
        }
    }

    /// The state after `byte` outside chunk data.
    fn next(&mut self, byte: u8) -> Result<State, &'static str> {
        Ok(match self.state {
            State::Start => {
                self.size = 0;
                self.digit(byte)
                    .ok_or("Invalid chunk size line: missing size digit")??;
                State::Size
            }
            State::Size => match self.digit(byte) {
                Some(r) => {
                    r?;
                    State::Size
                }
                None => match byte {
                    b'\t' | b' ' => State::SizeLws,
                    b';' => State::Extension,
                    b'\r' => State::SizeLf,
                    _ => return Err("Invalid chunk size line: Invalid Size"),
                },
            },
            State::SizeLws => match byte {
                b'\t' | b' ' => State::SizeLws,
                b';' => State::Extension,
                b'\r' => State::SizeLf,
                _ => return Err("Invalid chunk size linear white space"),
            },
            State::Extension => match byte {
                b'\r' => State::SizeLf,
                b'\n' => return Err("invalid chunk extension contains newline"),
                _ => {
                    self.extensions += 1;
                    if self.extensions >= EXTENSIONS_LIMIT {
                        return Err("chunk extensions over limit");
                    }
                    State::Extension
                }
            },
            State::SizeLf => match (byte, self.size) {
                (b'\n', 0) => State::EndCr,
                (b'\n', _) => State::Body,
                _ => return Err("Invalid chunk size LF"),
            },
            State::BodyCr => match byte {
                b'\r' => State::BodyLf,
                _ => return Err("Invalid chunk body CR"),
            },
            State::BodyLf => match byte {
                b'\n' => State::Start,
                _ => return Err("Invalid chunk body LF"),
            },
            State::Trailer => {
                self.push_trailer(byte)?;
                match byte {
                    b'\r' => State::TrailerLf,
                    _ => State::Trailer,
                }
            }
            State::TrailerLf => match byte {
                b'\n' => {
                    if self.trailer_lines >= self.max_headers {
                        return Err("chunk trailers count overflow");
                    }
                    self.trailer_lines += 1;
                    self.push_trailer(byte)?;
                    State::EndCr
                }
                _ => return Err("invalid trailer end LF"),
            },
            State::EndCr => match byte {
                b'\r' => {
                    if !self.trailers.is_empty() {
                        self.push_trailer(byte)?;
                    }
                    State::EndLf
                }
                _ => {
                    self.push_trailer(byte)?;
                    State::Trailer
                }
            },
            State::EndLf => match byte {
                b'\n' => {
                    if !self.trailers.is_empty() {
                        self.push_trailer(byte)?;
                        self.check_trailers()?;
                    }
                    State::End
                }
                _ => return Err("Invalid chunk end LF"),
            },
            State::Body | State::End => unreachable!("handled by decode"),
        })
    }

    /// Adds a hex digit to the size; `None` if `byte` is not one.
    fn digit(&mut self, byte: u8) -> Option<Result<(), &'static str>> {
        let value = match byte {
            b'0'..=b'9' => byte - b'0',
            b'a'..=b'f' => byte + 10 - b'a',
            b'A'..=b'F' => byte + 10 - b'A',
            _ => return None,
        };
        Some(
            self.size
                .checked_mul(16)
                .and_then(|s| s.checked_add(u64::from(value)))
                .map(|s| self.size = s)
                .ok_or("invalid chunk size: overflow"),
        )
    }

    fn push_trailer(&mut self, byte: u8) -> Result<(), &'static str> {
        if self.trailers.len() >= TRAILER_LIMIT {
            return Err("chunk trailers bytes over limit");
        }
        self.trailers.push(byte);
        Ok(())
    }

    /// The trailer section parses as header fields, as hyper requires before it hands
    /// them over (the host then drops them).
    fn check_trailers(&self) -> Result<(), &'static str> {
        let mut fields = vec![httparse::EMPTY_HEADER; self.trailer_lines.max(1)];
        match httparse::parse_headers(&self.trailers, &mut fields) {
            Ok(httparse::Status::Complete(_)) => Ok(()),
            _ => Err("Invalid trailers"),
        }
    }
}
