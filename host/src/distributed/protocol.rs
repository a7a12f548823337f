//! The wire protocol between `host coordinate` and `host worker` (docs/protocol.md).
//!
//! A connection is a stream of frames: a 4-byte big-endian length, then that many
//! bytes of one message in postcard (serde's compact binary encoding: varints, no
//! field names), inside TLS. The worker opens with a hello that carries [`MAGIC`],
//! [`PROTOCOL_VERSION`] and a nonce; a peer with another version is refused with a
//! message before anything else is read. Then each side proves it holds the cluster
//! token ([`super::trust`]) before anything else is sent. Histograms travel as
//! HdrHistogram's V2 deflate encoding.

use serde::{de::DeserializeOwned, Deserialize, Serialize};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// The first four bytes of every hello: a stray connection (an HTTP client, a port
/// scanner) is told apart from a worker at once.
pub const MAGIC: [u8; 4] = *b"LTD\x01";

/// The protocol's version: bumped on any change to a message. Both sides must agree.
pub const PROTOCOL_VERSION: u32 = 5;

/// Largest frame, either way, until both sides have proved they hold the token: a
/// garbage length cannot make the reader allocate much.
pub const MAX_HELLO_FRAME: u32 = 64 * 1024;

/// Largest frame a worker sends once it has proved itself: a second's samples, its
/// plugin failures and log lines fit many times over.
pub const MAX_WORKER_FRAME: u32 = 8 * 1024 * 1024;

/// Largest frame the coordinator sends once it has proved itself (the plugin's bytes
/// and the data files travel in one frame).
pub const MAX_FRAME: u32 = 512 * 1024 * 1024;

/// Bytes reserved for a frame's body before any of it arrived: past it, the buffer
/// grows as bytes come, so a length prefix alone reserves no memory.
const FIRST_RESERVE: usize = 16 * 1024;

/// Messages a worker sends.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub enum WorkerMsg {
    /// First message: the worker's version, name and nonce.
    Hello(WorkerHello),
    /// The plugin is loaded and the VUs are made: the worker waits at the start line.
    Ready,
    /// The worker could not prepare (bad plugin, config error): it leaves the run.
    Failed(String),
    /// A second of samples (deltas), and the live counters (absolute).
    Tick(Tick),
    /// Sent every heartbeat interval (`HEARTBEAT`, 500 ms) so that a silent worker is
    /// known to be gone.
    Heartbeat,
    /// The worker's run is over: its last samples and its executors' reports.
    Final(Final),
    /// The plugin aborted the worker's run (`abort_after_failures`, `init_failures =
    /// "abort"`), and why: the coordinator stops the whole run, as one process would.
    Aborted(String),
    /// The answer to the coordinator's [`CoordMsg::Challenge`]: HMAC-SHA256 with the
    /// cluster token over the worker's role, the TLS export and both nonces.
    Proof([u8; 32]),
    /// Once the coordinator has proved itself: what the worker asks of the run.
    Join(Join),
}

/// What a worker asks of the run, sent once both sides have proved themselves.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Join {
    /// With `host worker --plugin FILE`: the sha256 of the plugin the worker expects.
    pub plugin_sha256: Option<String>,
    /// With `host worker --index I` (or `JOB_COMPLETION_INDEX`): the worker runs
    /// segment `I` of N. Without it, segments go by join order.
    pub index: Option<u32>,
}

/// A worker's hello.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct WorkerHello {
    /// [`MAGIC`].
    pub magic: [u8; 4],
    /// [`PROTOCOL_VERSION`].
    pub protocol: u32,
    /// The worker's host version (`CARGO_PKG_VERSION`): it must equal the coordinator's.
    pub host_version: String,
    /// The worker's name (for messages and summary.json).
    pub name: String,
    /// The worker's challenge: the coordinator's proof covers it.
    pub nonce: [u8; 32],
}

/// The start of a hello of any protocol version (new fields are only ever appended):
/// enough to refuse a worker of another version with a message instead of dropping it.
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub enum HelloHead {
    /// The same variant index as [`WorkerMsg::Hello`].
    Hello {
        /// [`MAGIC`].
        magic: [u8; 4],
        /// The peer's protocol version.
        protocol: u32,
        /// The peer's host version.
        host_version: String,
        /// The peer's name.
        name: String,
    },
}

/// Messages the coordinator sends.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub enum CoordMsg {
    /// The worker is taken (after its [`WorkerMsg::Join`]): the coordinator's version.
    Welcome {
        /// [`MAGIC`].
        magic: [u8; 4],
        /// [`PROTOCOL_VERSION`].
        protocol: u32,
        /// The coordinator's host version.
        host_version: String,
    },
    /// The worker is not taken, and why; the connection closes after it.
    Refused(String),
    /// What to run.
    Init(Init),
    /// Start at this instant (milliseconds since the Unix epoch, UTC).
    Start {
        /// When the executors start.
        at_unix_ms: u64,
    },
    /// Stop: gracefully (running iterations get `graceful_stop`), or at once.
    Stop {
        /// Why, in words (shown in the worker's summary).
        reason: String,
        /// Interrupt running iterations now.
        hard: bool,
    },
    /// Sent every heartbeat interval (`HEARTBEAT`): a worker that hears nothing for
    /// `LOSS_AFTER` stops its load.
    Heartbeat,
    /// The answer to a hello of this version: the coordinator's nonce. The worker
    /// proves itself first ([`WorkerMsg::Proof`]).
    Challenge {
        /// [`MAGIC`].
        magic: [u8; 4],
        /// [`PROTOCOL_VERSION`].
        protocol: u32,
        /// The coordinator's nonce.
        nonce: [u8; 32],
    },
    /// The coordinator's proof, sent once the worker's verified: HMAC-SHA256 with the
    /// token over the coordinator's role, the TLS export and both nonces.
    Proof([u8; 32]),
}

/// What a worker runs.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Init {
    /// The plugin's file name (for the worker's results).
    pub plugin_name: String,
    /// The plugin component; empty when [`Init::plugin_reference`] names it.
    pub plugin: Vec<u8>,
    /// When the coordinator's plugin came from a registry: its reference pinned by the
    /// manifest's digest (`registry/repo:tag@sha256:…`), which the worker pulls itself
    /// (a large plugin is not streamed to every worker).
    pub plugin_reference: Option<String>,
    /// The component's sha256, hex (a registry's layer digest without `sha256:`): the
    /// worker checks the bytes against it, sent or pulled.
    pub plugin_sha256: String,
    /// The resolved run config (plugin defaults, files and flags), as TOML.
    pub config_toml: String,
    /// This worker's execution segment (`1/3:2/3`).
    pub segment: String,
    /// The whole sequence (`0,1/3,2/3,1`).
    pub sequence: String,
    /// What `setup()` returned at the coordinator.
    pub setup_data: String,
    /// The worker's index, from 0.
    pub index: u32,
    /// The run's `[data]` files, which `config_toml` names by these bare names.
    pub data_files: Vec<DataFile>,
    /// The coordinator runs with `-v`: the worker's plugin `debug` log lines are
    /// written, as they would be in one process. (Before, this place held `quiet`:
    /// the same bool in postcard; both ends run the same host version.)
    pub verbose: bool,
}

/// A `[data]` file sent with the plugin.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct DataFile {
    /// Its name in the sent config (`data-0-users.csv`): a plain file name.
    pub name: String,
    /// Its bytes.
    pub bytes: Vec<u8>,
}

/// One series of a metric: name, kind, tags and the value of one interval.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct WireSeries {
    /// The metric's name.
    pub metric: String,
    /// Its kind (the registry's ids differ between processes: names travel).
    pub kind: crate::metrics::MetricKind,
    /// Its tags, sorted by key.
    pub tags: Vec<(String, String)>,
    /// The interval's value.
    pub value: WireValue,
}

/// A series' value for one interval.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub enum WireValue {
    /// Added in the interval.
    Counter(f64),
    /// The last value.
    Gauge(f64),
    /// Samples true, and all samples.
    Rate(u64, u64),
    /// The interval's histogram, HdrHistogram V2 deflate encoding.
    Trend(Vec<u8>),
}

/// A scenario's live counters at a worker (absolute, not deltas: a lost message
/// cannot make them drift).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct ScenarioCounts {
    /// The scenario.
    pub name: String,
    /// VUs active now.
    pub active_vus: u64,
    /// VUs made.
    pub allocated_vus: u64,
    /// Iterations started.
    pub started: u64,
    /// Iterations ended on their own.
    pub completed: u64,
    /// Iterations failed.
    pub failed: u64,
    /// Iterations interrupted.
    pub interrupted: u64,
    /// Iterations dropped.
    pub dropped: u64,
}

/// A second at a worker.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Tick {
    /// Milliseconds since the common start.
    pub elapsed_ms: u64,
    /// The interval's samples (gauges included, as last values).
    pub series: Vec<WireSeries>,
    /// Each scenario's counters.
    pub scenarios: Vec<ScenarioCounts>,
    /// Requests in flight now.
    pub in_flight: i64,
    /// WebSockets open now.
    pub ws_open: i64,
    /// Raw TCP and UDP sockets (contract 0.3.7) open now (protocol version 5).
    pub sockets_open: i64,
    /// The plugin's failures so far, whole (absolute, like the counters), sent only
    /// when they changed since the last tick that carried them.
    pub errors: Option<PluginErrors>,
    /// The plugin's log lines written in the interval (as the worker wrote them), at
    /// most 1,000.
    pub log: Vec<String>,
    /// Lines of the interval past that many, not sent.
    pub log_not_sent: u64,
}

/// A worker's plugin failures: what its summary.json would list in `plugin_errors`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct PluginErrors {
    /// Distinct failures (kind, scenario, message) with their counts.
    pub entries: Vec<crate::vu::errors::ErrorEntry>,
    /// Failures past the distinct ones kept.
    pub unlisted: u64,
}

/// A worker's last message.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Final {
    /// The last interval and counters.
    pub tick: Tick,
    /// Each scenario's executor report: its stages' targets and what was reached.
    pub reports: Vec<(String, Vec<crate::executor::StageReport>)>,
}

/// Why a frame could not be read.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    /// The connection closed or failed.
    #[error("connection: {0}")]
    Io(#[from] std::io::Error),
    /// The length prefix is larger than allowed.
    #[error("a frame of {0} bytes is larger than allowed ({1})")]
    TooLarge(u32, u32),
    /// The bytes are not a message of this protocol.
    #[error("not a message of this protocol: {0}")]
    Garbage(String),
}

/// Writes one message as a frame.
pub async fn write<W: AsyncWrite + Unpin, M: Serialize>(w: &mut W, msg: &M) -> std::io::Result<()> {
    let bytes = encode(msg)?;
    w.write_all(&bytes).await?;
    w.flush().await
}

/// One message as a frame (length prefix included).
pub fn encode<M: Serialize>(msg: &M) -> std::io::Result<Vec<u8>> {
    let body = postcard::to_allocvec(msg).map_err(std::io::Error::other)?;
    let len = u32::try_from(body.len())
        .map_err(|_| std::io::Error::other("message larger than 4 GiB"))?;
    let mut frame = Vec::with_capacity(4 + body.len());
    frame.extend_from_slice(&len.to_be_bytes());
    frame.extend_from_slice(&body);
    Ok(frame)
}

/// Reads one frame of at most `max` bytes and decodes it.
pub async fn read<R: AsyncRead + Unpin, M: DeserializeOwned>(
    r: &mut R,
    max: u32,
) -> Result<M, FrameError> {
    decode(&read_frame(r, max).await?)
}

/// Reads one frame of at most `max` bytes, undecoded.
pub async fn read_frame<R: AsyncRead + Unpin>(r: &mut R, max: u32) -> Result<Vec<u8>, FrameError> {
    let mut len = [0u8; 4];
    r.read_exact(&mut len).await?;
    let len = u32::from_be_bytes(len);
    if len > max {
        return Err(FrameError::TooLarge(len, max));
    }
    // Not `vec![0; len]`: a peer that sends a length and then trickles (or nothing)
    // would hold that much memory; the buffer grows as the bytes arrive instead.
    let mut body = Vec::with_capacity((len as usize).min(FIRST_RESERVE));
    let got = r.take(u64::from(len)).read_to_end(&mut body).await?;
    if got < len as usize {
        return Err(FrameError::Io(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            format!("the connection closed {got} bytes into a frame of {len}"),
        )));
    }
    Ok(body)
}

/// Decodes a frame's body (postcard ignores bytes after the message, which is what
/// lets [`HelloHead`] read a longer hello).
pub fn decode<M: DeserializeOwned>(body: &[u8]) -> Result<M, FrameError> {
    postcard::from_bytes(body).map_err(|e| FrameError::Garbage(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn messages_round_trip_and_garbage_is_named() {
        let hello = WorkerMsg::Hello(WorkerHello {
            magic: MAGIC,
            protocol: PROTOCOL_VERSION,
            host_version: "0.1.0".into(),
            name: "w1".into(),
            nonce: [7; 32],
        });
        let tick = WorkerMsg::Tick(Tick {
            elapsed_ms: 1000,
            series: vec![WireSeries {
                metric: "http_reqs".into(),
                kind: crate::metrics::MetricKind::Counter,
                tags: vec![("status".into(), "200".into())],
                value: WireValue::Counter(42.0),
            }],
            ..Default::default()
        });
        let mut buf = Vec::new();
        write(&mut buf, &hello).await.unwrap();
        write(&mut buf, &tick).await.unwrap();
        let mut r = buf.as_slice();
        let a: WorkerMsg = read(&mut r, MAX_HELLO_FRAME).await.unwrap();
        let b: WorkerMsg = read(&mut r, MAX_FRAME).await.unwrap();
        assert_eq!((a, b), (hello, tick));

        // An HTTP request is not a frame: its first bytes make a huge length.
        let mut http = b"GET / HTTP/1.1\r\n\r\n".as_slice();
        let err = read::<_, WorkerMsg>(&mut http, MAX_HELLO_FRAME)
            .await
            .unwrap_err();
        assert!(matches!(err, FrameError::TooLarge(..)), "{err}");
        // A frame of the right size whose bytes are no message.
        let mut junk = vec![0, 0, 0, 3, 0xff, 0xff, 0xff];
        let err = read::<_, WorkerMsg>(&mut junk.as_slice(), MAX_FRAME)
            .await
            .unwrap_err();
        assert!(matches!(err, FrameError::Garbage(_)), "{err}");
        junk.clear();
        // A frame cut short is an I/O error, not garbage.
        let mut short = vec![0, 0, 0, 10, 1, 2];
        let err = read_frame(&mut short.as_slice(), MAX_FRAME)
            .await
            .unwrap_err();
        assert!(matches!(err, FrameError::Io(_)), "{err}");
        short.clear();
    }

    /// A huge length followed by a few bytes: the reader takes what came and names
    /// the shortfall (tests/all/distributed/coordinate.rs measures that no memory was reserved).
    #[tokio::test]
    async fn a_huge_length_then_a_close_is_named() {
        let (mut tx, mut rx) = tokio::io::duplex(1024);
        tx.write_all(&MAX_FRAME.to_be_bytes()).await.unwrap();
        tx.write_all(&[0u8; 100]).await.unwrap();
        drop(tx);
        let err = read_frame(&mut rx, MAX_FRAME).await.unwrap_err();
        assert!(err.to_string().contains("100 bytes into a frame"), "{err}");
    }

    /// A hello of protocol 1 (no index), as an older worker sends it.
    #[derive(Serialize)]
    enum OldMsg {
        Hello {
            magic: [u8; 4],
            protocol: u32,
            host_version: String,
            name: String,
            plugin_sha256: Option<String>,
        },
    }

    #[test]
    fn a_hello_of_another_version_still_shows_its_version() {
        let old = postcard::to_allocvec(&OldMsg::Hello {
            magic: MAGIC,
            protocol: 1,
            host_version: "0.0.9".into(),
            name: "old".into(),
            plugin_sha256: None,
        })
        .unwrap();
        // Not a hello of this version (its last field is missing) ...
        assert!(decode::<WorkerMsg>(&old).is_err());
        // ... but its head says which version it is.
        let HelloHead::Hello {
            protocol,
            host_version,
            ..
        } = decode(&old).unwrap();
        assert_eq!((protocol, host_version.as_str()), (1, "0.0.9"));
        // And this version's hello has the same head.
        let new = postcard::to_allocvec(&WorkerMsg::Hello(WorkerHello {
            magic: MAGIC,
            protocol: PROTOCOL_VERSION,
            host_version: "0.1.0".into(),
            name: "w".into(),
            nonce: [1; 32],
        }))
        .unwrap();
        let head: HelloHead = decode(&new).unwrap();
        assert!(matches!(
            head,
            HelloHead::Hello {
                protocol: PROTOCOL_VERSION,
                ..
            }
        ));
    }
}
