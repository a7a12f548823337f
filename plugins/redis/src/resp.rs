//! A minimal RESP2 client codec: commands written as arrays of bulk strings, each
//! reply read whole in one host call (`read_frame` with the host's RESP framing,
//! contract 0.3.9) and parsed here from its bytes. The host's bounds, not this code,
//! decide what a misbehaving server can make anyone hold: a reply larger than
//! `max_read` fails as `too_large` before it is read.

use loadtest::sockets::{max_read, Framing, SocketError, TcpStream};
use std::fmt;
use std::io::Write;

/// Deepest nesting of arrays accepted in a reply.
const MAX_DEPTH: usize = 8;

/// A reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// `+OK`.
    Status(String),
    /// `-ERR ...`: the server refused the command.
    Error(String),
    /// `:1`.
    Int(i64),
    /// `$n` and its bytes; `None` for `$-1`.
    Bulk(Option<Vec<u8>>),
    /// `*n` and its items; `None` for `*-1`.
    Array(Option<Vec<Reply>>),
}

/// Why a command got no reply.
#[derive(Debug)]
pub enum RespError {
    /// The socket failed (its kind is the host's: closed, timeout, too_large, ...).
    Socket(SocketError),
    /// The bytes are not RESP.
    Protocol(String),
}

impl fmt::Display for RespError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RespError::Socket(e) => write!(f, "{e}"),
            RespError::Protocol(m) => write!(f, "not a RESP reply: {m}"),
        }
    }
}

impl RespError {
    /// The kind, for a metric's `error` tag.
    pub fn kind(&self) -> &'static str {
        match self {
            RespError::Socket(e) => e.kind(),
            RespError::Protocol(_) => "protocol",
        }
    }
}

impl From<SocketError> for RespError {
    fn from(e: SocketError) -> Self {
        RespError::Socket(e)
    }
}

/// `args` as a RESP array of bulk strings.
#[cfg(test)]
pub fn encode(args: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::new();
    encode_into(args, &mut out);
    out
}

/// `args` as a RESP array of bulk strings, after what `out` holds. Lengths are written
/// digit by digit: `write!` went through `core::fmt` for each (with the key's
/// `format!`, a quarter of the plugin's samples in `perf`).
pub fn encode_into(args: &[&[u8]], out: &mut Vec<u8>) {
    out.reserve(16 + args.iter().map(|a| a.len() + 16).sum::<usize>());
    out.push(b'*');
    push_number(out, args.len() as u64);
    out.extend_from_slice(b"\r\n");
    for a in args {
        out.push(b'$');
        push_number(out, a.len() as u64);
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
}

/// `n` in decimal, after what `out` holds.
pub fn push_number(out: &mut Vec<u8>, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[at..]);
}

thread_local! {
    /// The command being written: one buffer kept for the VU's commands.
    static OUT: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Sends one command (through `std::io::Write`) and reads its reply: one whole RESP
/// value in one host call (`read_frame`), parsed here.
pub fn command(conn: &mut TcpStream, args: &[&[u8]]) -> Result<Reply, RespError> {
    OUT.with(|out| {
        let mut out = out.borrow_mut();
        out.clear();
        encode_into(args, &mut out);
        conn.write_all(&out)
    })
    .map_err(|e| match SocketError::from_io(&e) {
        Some(s) => RespError::Socket(s.clone()),
        None => RespError::Protocol(e.to_string()),
    })?;
    let frame = conn.read_frame(Framing::Resp, max_read() as usize)?;
    let mut at = 0;
    parse(&frame, &mut at, 0)
}

/// The reply at `at` of a whole frame, moving past it.
fn parse(frame: &[u8], at: &mut usize, depth: usize) -> Result<Reply, RespError> {
    let rest = &frame[*at..];
    let cr = rest
        .windows(2)
        .position(|w| w == b"\r\n")
        .ok_or_else(|| RespError::Protocol("a line without CRLF".into()))?;
    // A line is its type byte, its text and CRLF.
    if cr < 1 {
        return Err(RespError::Protocol("a line without a type and text".into()));
    }
    let kind = rest[0];
    let text = std::str::from_utf8(&rest[1..cr])
        .map_err(|_| RespError::Protocol("a type line that is not UTF-8".into()))?;
    *at += cr + 2;
    let number = || {
        text.parse::<i64>()
            .map_err(|_| RespError::Protocol(format!("{text:?} is not a number")))
    };
    Ok(match kind {
        b'+' => Reply::Status(text.to_string()),
        b'-' => Reply::Error(text.to_string()),
        b':' => Reply::Int(number()?),
        b'$' => match number()? {
            -1 => Reply::Bulk(None),
            n if n < 0 => return Err(RespError::Protocol(format!("bulk length {n}"))),
            n => {
                let n = n as usize;
                let data = frame
                    .get(*at..*at + n)
                    .ok_or_else(|| RespError::Protocol("a bulk string cut short".into()))?;
                *at += n + 2;
                Reply::Bulk(Some(data.to_vec()))
            }
        },
        b'*' => match number()? {
            -1 => Reply::Array(None),
            n if n < 0 => return Err(RespError::Protocol(format!("array length {n}"))),
            _ if depth >= MAX_DEPTH => {
                return Err(RespError::Protocol("arrays nested too deep".into()))
            }
            n => {
                let mut items = Vec::new();
                for _ in 0..n {
                    items.push(parse(frame, at, depth + 1)?);
                }
                Reply::Array(Some(items))
            }
        },
        other => {
            return Err(RespError::Protocol(format!(
                "unknown type byte {:?}",
                other as char
            )))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_frames_parse() {
        let reply = |b: &[u8]| parse(b, &mut 0, 0).unwrap();
        assert_eq!(reply(b"+OK\r\n"), Reply::Status("OK".into()));
        assert_eq!(reply(b"$2\r\nv1\r\n"), Reply::Bulk(Some(b"v1".to_vec())));
        assert_eq!(reply(b"$-1\r\n"), Reply::Bulk(None));
        assert_eq!(
            reply(b"*2\r\n:1\r\n$3\r\na\r\n\r\n"),
            Reply::Array(Some(vec![
                Reply::Int(1),
                Reply::Bulk(Some(b"a\r\n".to_vec()))
            ]))
        );
    }

    #[test]
    fn commands_are_arrays_of_bulk_strings() {
        assert_eq!(
            encode(&[b"SET", b"k", b"v1"]),
            b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2\r\nv1\r\n"
        );
        let long = vec![b'x'; 1234];
        let words = [&long[..]; 10];
        let out = encode(&words);
        assert!(out.starts_with(b"*10\r\n$1234\r\nxx"), "{:?}", &out[..12]);
    }

    #[test]
    fn numbers_are_decimal() {
        for n in [0, 7, 10, 99, 100, 65_536, u64::MAX] {
            let mut out = Vec::new();
            push_number(&mut out, n);
            assert_eq!(out, n.to_string().into_bytes());
        }
    }
}
