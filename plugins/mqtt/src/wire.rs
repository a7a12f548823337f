//! An MQTT 3.1.1 client session over a host socket: the packets are written and
//! parsed by `mqttbytes` (sans I/O); this module moves them and keeps the exchange's
//! rules: CONNECT then CONNACK, PUBLISH at QoS 0 (written) or 1 (until its PUBACK),
//! SUBSCRIBE until its SUBACK, PUBLISHes received answered with PUBACK at QoS 1,
//! PINGREQ when the session has been quiet for half its keep-alive.
//!
//! What a broker sends is untrusted: a packet longer than [`MAX_PACKET`] is refused
//! from its header, and messages that arrive while the session waits for an
//! acknowledgement are kept up to [`MAX_PENDING`] (later ones are dropped and
//! counted in [`Session::dropped`]).

use bytes::BytesMut;
use loadtest::sockets::{SocketError, TcpStream};
use mqttbytes::v4::{self, ConnAck, ConnectReturnCode, Packet, PubAck, Publish, Subscribe};
use mqttbytes::QoS;
use std::collections::VecDeque;
use std::fmt;
use std::time::{Duration, Instant};

/// The longest packet read (1 MiB of remaining length).
pub const MAX_PACKET: usize = 1 << 20;

/// The most received messages held while waiting for an acknowledgement.
pub const MAX_PENDING: usize = 1000;

/// How much is asked of the host per read.
const READ_CHUNK: usize = 64 * 1024;

/// Why a call failed.
#[derive(Debug)]
pub enum MqttError {
    /// The socket failed (denied, refused, timeout, closed, ...).
    Socket(SocketError),
    /// The broker sent a malformed packet or one the exchange does not allow here.
    Protocol(String),
    /// The broker refused the connection in its CONNACK.
    Refused(String),
}

impl MqttError {
    /// A short name for metric tags: the socket error's kind, `protocol`, or
    /// `connack` for a broker's refusal.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Socket(e) => e.kind(),
            Self::Protocol(_) => "protocol",
            Self::Refused(_) => "connack",
        }
    }
}

impl fmt::Display for MqttError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Socket(e) => write!(f, "socket: {e}"),
            Self::Protocol(m) => write!(f, "protocol: {m}"),
            Self::Refused(m) => write!(f, "the broker refused the connection: {m}"),
        }
    }
}

impl From<SocketError> for MqttError {
    fn from(e: SocketError) -> Self {
        Self::Socket(e)
    }
}

impl From<mqttbytes::Error> for MqttError {
    fn from(e: mqttbytes::Error) -> Self {
        Self::Protocol(format!("{e:?}"))
    }
}

/// How to connect.
pub struct Options<'a> {
    /// The client identifier (unique per connection on a broker).
    pub client_id: &'a str,
    /// Seconds of quiet the broker allows before it drops the session.
    pub keep_alive: u16,
    /// User name and password, if the broker wants them.
    pub login: Option<(&'a str, &'a str)>,
}

/// A received message.
pub struct Message {
    /// Its topic.
    pub topic: String,
    /// Its payload.
    pub payload: Vec<u8>,
}

/// A connected session.
pub struct Session {
    stream: TcpStream,
    incoming: BytesMut,
    outgoing: BytesMut,
    next_pkid: u16,
    pending: VecDeque<Message>,
    /// Messages dropped because [`MAX_PENDING`] were held.
    pub dropped: u64,
    keep_alive: Duration,
    last_sent: Instant,
    timeout: Duration,
}

impl Session {
    /// Sends CONNECT (clean session) and reads the CONNACK; `timeout` bounds each
    /// read and write after.
    pub fn connect(
        stream: TcpStream,
        options: &Options<'_>,
        timeout: Duration,
    ) -> Result<Session, MqttError> {
        let mut session = Session {
            stream,
            incoming: BytesMut::new(),
            outgoing: BytesMut::new(),
            next_pkid: 0,
            pending: VecDeque::new(),
            dropped: 0,
            keep_alive: Duration::from_secs(options.keep_alive.into()),
            last_sent: Instant::now(),
            timeout,
        };
        let mut connect = v4::Connect::new(options.client_id);
        connect.keep_alive = options.keep_alive;
        if let Some((user, password)) = options.login {
            connect.set_login(user, password);
        }
        connect.write(&mut session.outgoing)?;
        session.flush()?;
        match session.next()? {
            Packet::ConnAck(ConnAck {
                code: ConnectReturnCode::Success,
                ..
            }) => Ok(session),
            Packet::ConnAck(ConnAck { code, .. }) => Err(MqttError::Refused(refusal(code))),
            _ => Err(MqttError::Protocol(
                "the broker answered CONNECT with something other than CONNACK".into(),
            )),
        }
    }

    /// Publishes `payload` on `topic`: QoS 0 returns once written, QoS 1 once the
    /// broker's PUBACK came. QoS 2 is not supported.
    pub fn publish(&mut self, topic: &str, qos: QoS, payload: &[u8]) -> Result<(), MqttError> {
        let mut publish = Publish::new(topic, qos, payload.to_vec());
        let pkid = match qos {
            QoS::AtMostOnce => 0,
            QoS::AtLeastOnce => self.pkid(),
            QoS::ExactlyOnce => {
                return Err(MqttError::Protocol(
                    "QoS 2 is not supported by this client: use 0 or 1".into(),
                ))
            }
        };
        publish.pkid = pkid;
        publish.write(&mut self.outgoing)?;
        self.flush()?;
        if qos == QoS::AtMostOnce {
            return Ok(());
        }
        loop {
            match self.next()? {
                Packet::PubAck(ack) if ack.pkid == pkid => return Ok(()),
                other => self.take(other)?,
            }
        }
    }

    /// Subscribes to `filter` at `qos`; the QoS the broker granted.
    pub fn subscribe(&mut self, filter: &str, qos: QoS) -> Result<QoS, MqttError> {
        let mut subscribe = Subscribe::new(filter, qos);
        let pkid = self.pkid();
        subscribe.pkid = pkid;
        subscribe.write(&mut self.outgoing)?;
        self.flush()?;
        loop {
            match self.next()? {
                Packet::SubAck(ack) if ack.pkid == pkid => {
                    return match ack.return_codes.first() {
                        Some(v4::SubscribeReasonCode::Success(granted)) => Ok(*granted),
                        _ => Err(MqttError::Protocol(format!(
                            "the broker refused the subscription to {filter:?}"
                        ))),
                    }
                }
                other => self.take(other)?,
            }
        }
    }

    /// The next message received, waiting up to `wait`; `None` when none came.
    pub fn receive(&mut self, wait: Duration) -> Result<Option<Message>, MqttError> {
        if let Some(m) = self.pending.pop_front() {
            return Ok(Some(m));
        }
        if self.last_sent.elapsed() >= self.keep_alive / 2 {
            v4::PingReq.write(&mut self.outgoing)?;
            self.flush()?;
        }
        let deadline = Instant::now() + wait;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(None);
            }
            self.stream.set_read_timeout(left);
            let packet = self.next();
            self.stream.set_read_timeout(self.timeout);
            match packet {
                Ok(p) => self.take(p)?,
                Err(MqttError::Socket(SocketError::Timeout(_))) => return Ok(None),
                Err(e) => return Err(e),
            }
            if let Some(m) = self.pending.pop_front() {
                return Ok(Some(m));
            }
        }
    }

    /// Sends DISCONNECT and closes the socket.
    pub fn disconnect(mut self) {
        if v4::Disconnect.write(&mut self.outgoing).is_ok() {
            let _ = self.flush();
        }
        self.stream.close();
    }

    /// Deals with a packet that is not the one awaited: a message is kept (and
    /// acknowledged at QoS 1), a PINGRESP dropped, anything else is a protocol error.
    fn take(&mut self, packet: Packet) -> Result<(), MqttError> {
        match packet {
            Packet::Publish(p) => {
                if p.qos == QoS::AtLeastOnce {
                    PubAck::new(p.pkid).write(&mut self.outgoing)?;
                    self.flush()?;
                }
                if self.pending.len() >= MAX_PENDING {
                    self.dropped += 1;
                } else {
                    self.pending.push_back(Message {
                        topic: p.topic,
                        payload: p.payload.to_vec(),
                    });
                }
                Ok(())
            }
            Packet::PingResp | Packet::PubAck(_) | Packet::SubAck(_) => Ok(()),
            other => Err(MqttError::Protocol(format!(
                "unexpected {} from the broker",
                name(&other)
            ))),
        }
    }

    /// Packet ids 1..=65535, in turn.
    fn pkid(&mut self) -> u16 {
        self.next_pkid = self.next_pkid.checked_add(1).unwrap_or(1);
        self.next_pkid
    }

    fn flush(&mut self) -> Result<(), MqttError> {
        let bytes = self.outgoing.split();
        self.stream.send(&bytes)?;
        self.last_sent = Instant::now();
        Ok(())
    }

    /// The next packet, reading from the socket as needed.
    fn next(&mut self) -> Result<Packet, MqttError> {
        loop {
            match v4::read(&mut self.incoming, MAX_PACKET) {
                Ok(packet) => return Ok(packet),
                Err(mqttbytes::Error::InsufficientBytes(_)) => {}
                Err(mqttbytes::Error::PayloadSizeLimitExceeded(n)) => {
                    return Err(MqttError::Protocol(format!(
                        "a packet of {n} bytes: more than the {MAX_PACKET} this client reads"
                    )))
                }
                Err(e) => return Err(e.into()),
            }
            let chunk = self.stream.read_some(READ_CHUNK)?;
            self.incoming.extend_from_slice(&chunk);
        }
    }
}

fn refusal(code: ConnectReturnCode) -> String {
    match code {
        ConnectReturnCode::Success => "accepted",
        ConnectReturnCode::RefusedProtocolVersion => {
            "unacceptable protocol version (the broker does not speak MQTT 3.1.1)"
        }
        ConnectReturnCode::BadClientId => "identifier rejected (set MQTT_CLIENT_ID)",
        ConnectReturnCode::ServiceUnavailable => "server unavailable",
        ConnectReturnCode::BadUserNamePassword => {
            "bad user name or password (set MQTT_USER and MQTT_PASSWORD)"
        }
        ConnectReturnCode::NotAuthorized => {
            "not authorized (the broker wants a login: set MQTT_USER and MQTT_PASSWORD)"
        }
    }
    .to_string()
}

fn name(packet: &Packet) -> &'static str {
    match packet {
        Packet::Connect(_) => "CONNECT",
        Packet::ConnAck(_) => "CONNACK",
        Packet::Publish(_) => "PUBLISH",
        Packet::PubAck(_) => "PUBACK",
        Packet::PubRec(_) => "PUBREC",
        Packet::PubRel(_) => "PUBREL",
        Packet::PubComp(_) => "PUBCOMP",
        Packet::Subscribe(_) => "SUBSCRIBE",
        Packet::SubAck(_) => "SUBACK",
        Packet::Unsubscribe(_) => "UNSUBSCRIBE",
        Packet::UnsubAck(_) => "UNSUBACK",
        Packet::PingReq => "PINGREQ",
        Packet::PingResp => "PINGRESP",
        Packet::Disconnect => "DISCONNECT",
    }
}
