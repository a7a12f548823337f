//! The PostgreSQL frontend/backend protocol (version 3.0) over a host socket: the
//! messages are written and parsed by `postgres-protocol` (sans I/O, the crate
//! tokio-postgres is built on); this module moves them and keeps the order of the
//! exchange: startup, authentication (trust, cleartext, md5, SCRAM-SHA-256), the
//! simple query (`Q`) and the extended query (Parse/Bind/Execute/Sync).
//!
//! Every value goes and comes in text format: parameters are sent as text with their
//! types left to the server to infer, and a row is a list of `Option<String>` (`None`
//! for NULL), which is what a load test checks.
//!
//! What a server sends is untrusted: a message longer than [`MAX_MESSAGE`] is refused
//! before any of it is buffered (the length prefix would otherwise make the plugin
//! reserve it), and a result keeps at most [`MAX_ROWS`] rows.

use bytes::BytesMut;
use fallible_iterator::FallibleIterator;
use loadtest::sockets::{SocketError, TcpStream};
use postgres_protocol::authentication::md5_hash;
use postgres_protocol::authentication::sasl::{ChannelBinding, ScramSha256, SCRAM_SHA_256};
use postgres_protocol::message::backend::{ErrorFields, Header, Message};
use postgres_protocol::message::frontend;
use postgres_protocol::IsNull;
use std::fmt;

/// The longest backend message read (1 MiB): a row or an error past it is a
/// protocol error, not a buffer the plugin grows to the server's say.
pub const MAX_MESSAGE: usize = 1 << 20;

/// The most rows a result keeps; later rows are read and dropped (counted in
/// [`Rows::dropped`]).
pub const MAX_ROWS: usize = 10_000;

/// How much is asked of the host per read.
const READ_CHUNK: usize = 64 * 1024;

/// Why a call failed.
#[derive(Debug)]
pub enum PgError {
    /// The socket failed (denied, refused, timeout, closed, ...).
    Socket(SocketError),
    /// The server sent what the protocol does not allow here, or a malformed message.
    Protocol(String),
    /// The server refused the login (a wrong password, an unknown user or database,
    /// an authentication method this client does not speak).
    Auth(String),
    /// The server answered with an ErrorResponse (`code` is the SQLSTATE).
    Server {
        /// The SQLSTATE, e.g. `42P01` for an unknown table.
        code: String,
        /// The server's message.
        message: String,
    },
}

impl PgError {
    /// A short name for metric tags: the socket error's kind, or `protocol`, `auth`,
    /// `server`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Socket(e) => e.kind(),
            Self::Protocol(_) => "protocol",
            Self::Auth(_) => "auth",
            Self::Server { .. } => "server",
        }
    }

    /// Whether the connection can still be used (a server error ends a query, not
    /// the session).
    pub fn is_fatal(&self) -> bool {
        !matches!(self, Self::Server { .. })
    }
}

impl fmt::Display for PgError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Socket(e) => write!(f, "socket: {e}"),
            Self::Protocol(m) => write!(f, "protocol: {m}"),
            Self::Auth(m) => write!(f, "authentication failed: {m}"),
            Self::Server { code, message } => write!(f, "server error {code}: {message}"),
        }
    }
}

impl From<SocketError> for PgError {
    fn from(e: SocketError) -> Self {
        Self::Socket(e)
    }
}

impl From<std::io::Error> for PgError {
    fn from(e: std::io::Error) -> Self {
        match SocketError::from_io(&e) {
            Some(s) => Self::Socket(s.clone()),
            None => Self::Protocol(e.to_string()),
        }
    }
}

/// A query's result: its rows (text values, `None` for NULL) and the command tag
/// (`INSERT 0 1`, `SELECT 3`).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Rows {
    /// The rows kept (at most [`MAX_ROWS`]).
    pub rows: Vec<Vec<Option<String>>>,
    /// Rows past [`MAX_ROWS`], read and dropped.
    pub dropped: usize,
    /// The last CommandComplete's tag.
    pub tag: String,
}

/// Where to log in.
pub struct Login<'a> {
    /// The role.
    pub user: &'a str,
    /// Its password (unused when the server trusts the connection).
    pub password: &'a str,
    /// The database.
    pub database: &'a str,
}

/// A logged-in session on one socket.
pub struct Connection {
    stream: TcpStream,
    incoming: BytesMut,
    outgoing: BytesMut,
}

impl Connection {
    /// Sends the startup message on `stream` and answers the server's authentication
    /// request until it reports ReadyForQuery.
    pub fn start(stream: TcpStream, login: &Login<'_>) -> Result<Connection, PgError> {
        let mut conn = Connection {
            stream,
            incoming: BytesMut::new(),
            outgoing: BytesMut::new(),
        };
        frontend::startup_message(
            [
                ("user", login.user),
                ("database", login.database),
                ("application_name", "loadtest"),
                ("client_encoding", "UTF8"),
            ],
            &mut conn.outgoing,
        )?;
        conn.flush()?;
        conn.authenticate(login)?;
        // ParameterStatus and BackendKeyData until the session is ready.
        loop {
            match conn.next()? {
                Message::ReadyForQuery(_) => return Ok(conn),
                Message::ErrorResponse(body) => return Err(auth_error(body.fields())),
                Message::ParameterStatus(_)
                | Message::BackendKeyData(_)
                | Message::NoticeResponse(_) => {}
                _ => return Err(unexpected("before ReadyForQuery")),
            }
        }
    }

    fn authenticate(&mut self, login: &Login<'_>) -> Result<(), PgError> {
        match self.next()? {
            Message::AuthenticationOk => return Ok(()),
            Message::AuthenticationCleartextPassword => {
                frontend::password_message(login.password.as_bytes(), &mut self.outgoing)?;
            }
            Message::AuthenticationMd5Password(body) => {
                let hash = md5_hash(login.user.as_bytes(), login.password.as_bytes(), body.salt());
                frontend::password_message(hash.as_bytes(), &mut self.outgoing)?;
            }
            Message::AuthenticationSasl(body) => {
                let mut mechanisms = body.mechanisms();
                let mut scram = false;
                while let Some(m) = mechanisms.next()? {
                    scram |= m == SCRAM_SHA_256;
                }
                if !scram {
                    return Err(PgError::Auth(
                        "the server offers no SASL mechanism but SCRAM-SHA-256-PLUS, which needs channel binding this client does not do".into(),
                    ));
                }
                self.scram(login.password)?;
            }
            Message::ErrorResponse(body) => return Err(auth_error(body.fields())),
            Message::AuthenticationGss
            | Message::AuthenticationKerberosV5
            | Message::AuthenticationSspi
            | Message::AuthenticationScmCredential => {
                return Err(PgError::Auth(
                    "the server asks for GSS, Kerberos, SSPI or SCM credentials; this client speaks trust, password, md5 and SCRAM-SHA-256: change the role's line in pg_hba.conf".into(),
                ))
            }
            _ => return Err(unexpected("for authentication")),
        }
        self.flush()?;
        match self.next()? {
            Message::AuthenticationOk => Ok(()),
            Message::ErrorResponse(body) => Err(auth_error(body.fields())),
            _ => Err(unexpected("after the password")),
        }
    }

    /// SCRAM-SHA-256 (RFC 7677) without channel binding: the client-first message,
    /// the server's challenge, the proof, and the server's signature checked.
    fn scram(&mut self, password: &str) -> Result<(), PgError> {
        let mut scram = ScramSha256::new(password.as_bytes(), ChannelBinding::unsupported());
        frontend::sasl_initial_response(SCRAM_SHA_256, scram.message(), &mut self.outgoing)?;
        self.flush()?;
        match self.next()? {
            Message::AuthenticationSaslContinue(body) => scram
                .update(body.data())
                .map_err(|e| PgError::Auth(format!("SCRAM: {e}")))?,
            Message::ErrorResponse(body) => return Err(auth_error(body.fields())),
            _ => return Err(unexpected("for SCRAM's server-first message")),
        }
        frontend::sasl_response(scram.message(), &mut self.outgoing)?;
        self.flush()?;
        match self.next()? {
            Message::AuthenticationSaslFinal(body) => scram
                .finish(body.data())
                .map_err(|e| PgError::Auth(format!("SCRAM: the server's signature: {e}"))),
            Message::ErrorResponse(body) => Err(auth_error(body.fields())),
            _ => Err(unexpected("for SCRAM's server-final message")),
        }
    }

    /// A simple query (one or more statements, no parameters).
    pub fn simple_query(&mut self, sql: &str) -> Result<Rows, PgError> {
        frontend::query(sql, &mut self.outgoing)?;
        self.flush()?;
        self.results()
    }

    /// An extended query: Parse (unnamed statement), Bind with `params` as text
    /// (`None` is NULL), Describe, Execute, Sync, in one write.
    pub fn query(&mut self, sql: &str, params: &[Option<&str>]) -> Result<Rows, PgError> {
        frontend::parse("", sql, std::iter::empty(), &mut self.outgoing)?;
        frontend::bind(
            "",
            "",
            [0i16], // every parameter as text
            params.iter(),
            |p, buf| match p {
                Some(text) => {
                    buf.extend_from_slice(text.as_bytes());
                    Ok(IsNull::No)
                }
                None => Ok(IsNull::Yes),
            },
            [0i16], // every column as text
            &mut self.outgoing,
        )
        .map_err(|e| match e {
            frontend::BindError::Conversion(e) => PgError::Protocol(e.to_string()),
            frontend::BindError::Serialization(e) => e.into(),
        })?;
        frontend::describe(b'P', "", &mut self.outgoing)?;
        frontend::execute("", 0, &mut self.outgoing)?;
        frontend::sync(&mut self.outgoing);
        self.flush()?;
        self.results()
    }

    /// Reads a query's messages until ReadyForQuery: rows, the command tag, or the
    /// first error (the rest of the exchange is read so the session stays usable).
    fn results(&mut self) -> Result<Rows, PgError> {
        let mut out = Rows::default();
        let mut error = None;
        loop {
            match self.next()? {
                Message::ReadyForQuery(_) => break,
                Message::DataRow(row) => {
                    if out.rows.len() >= MAX_ROWS {
                        out.dropped += 1;
                        continue;
                    }
                    let buffer = row.buffer();
                    let values = row
                        .ranges()
                        .map(|r| Ok(r.map(|r| String::from_utf8_lossy(&buffer[r]).into_owned())))
                        .collect()?;
                    out.rows.push(values);
                }
                Message::CommandComplete(body) => out.tag = body.tag()?.to_string(),
                Message::ErrorResponse(body) => {
                    // Keep the first; the server skips to Sync and says ReadyForQuery.
                    if error.is_none() {
                        error = Some(server_error(body.fields()));
                    }
                }
                Message::ParseComplete
                | Message::BindComplete
                | Message::RowDescription(_)
                | Message::NoData
                | Message::EmptyQueryResponse
                | Message::NoticeResponse(_)
                | Message::ParameterStatus(_)
                | Message::NotificationResponse(_) => {}
                Message::CopyInResponse(_) | Message::CopyOutResponse(_) => {
                    return Err(PgError::Protocol(
                        "COPY is not supported by this client".into(),
                    ))
                }
                _ => return Err(unexpected("in a query's results")),
            }
        }
        match error {
            Some(e) => Err(e),
            None => Ok(out),
        }
    }

    /// Ends the session politely (Terminate) and closes the socket.
    pub fn close(mut self) {
        frontend::terminate(&mut self.outgoing);
        let _ = self.flush();
        self.stream.close();
    }

    fn flush(&mut self) -> Result<(), PgError> {
        let bytes = self.outgoing.split();
        self.stream.send(&bytes)?;
        Ok(())
    }

    /// The next backend message, reading from the socket as needed; a length past
    /// [`MAX_MESSAGE`] is refused from its header.
    fn next(&mut self) -> Result<Message, PgError> {
        loop {
            if let Some(header) = Header::parse(&self.incoming)? {
                let len = header.len() as usize;
                if len > MAX_MESSAGE {
                    return Err(PgError::Protocol(format!(
                        "a message of {len} bytes (type '{}'): more than the {MAX_MESSAGE} this client reads",
                        char::from(header.tag()).escape_default()
                    )));
                }
                if self.incoming.len() > len {
                    if let Some(message) = Message::parse(&mut self.incoming)? {
                        return Ok(message);
                    }
                }
            }
            let chunk = self.stream.read_some(READ_CHUNK)?;
            self.incoming.extend_from_slice(&chunk);
        }
    }
}

/// A server error's SQLSTATE and message.
fn fields_of(mut fields: ErrorFields<'_>) -> (String, String) {
    let (mut code, mut message) = (String::new(), String::new());
    while let Ok(Some(field)) = fields.next() {
        let value = String::from_utf8_lossy(field.value_bytes());
        match field.type_() {
            b'C' => code = value.into_owned(),
            b'M' => message = value.into_owned(),
            _ => {}
        }
    }
    // The server's words are shown to a terminal: no control characters.
    message.retain(|c| !c.is_control());
    code.retain(|c| c.is_ascii_alphanumeric());
    (code, message)
}

fn server_error(fields: ErrorFields<'_>) -> PgError {
    let (code, message) = fields_of(fields);
    PgError::Server { code, message }
}

/// An error during login: SQLSTATE class 28 (invalid authorization) and 3D000 (no
/// such database) are refusals of the login; others stay server errors.
fn auth_error(fields: ErrorFields<'_>) -> PgError {
    let (code, message) = fields_of(fields);
    if code.starts_with("28") || code == "3D000" {
        PgError::Auth(format!("{message} ({code})"))
    } else {
        PgError::Server { code, message }
    }
}

fn unexpected(when: &str) -> PgError {
    PgError::Protocol(format!("the server sent an unexpected message {when}"))
}
