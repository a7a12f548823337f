//! Why the hub refuses a worker at its hello, or loses it on a message: the reasons
//! the coordinator prints and, for a refusal, sends the worker.

use crate::distributed::series::DecodeError;

/// Why a worker is not taken in.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum Refusal {
    /// Another wire protocol.
    #[error("protocol version {theirs} is not the coordinator's {ours}")]
    Protocol {
        /// The worker's version.
        theirs: u32,
        /// The coordinator's.
        ours: u32,
    },
    /// Another host build.
    #[error("host version {theirs} is not the coordinator's {ours}: run the same host binary on every machine")]
    HostVersion {
        /// The worker's version.
        theirs: String,
        /// The coordinator's.
        ours: &'static str,
    },
    /// Another plugin.
    #[error("its plugin (sha256 {theirs}) is not the coordinator's {plugin} (sha256 {ours})")]
    Plugin {
        /// The worker's plugin's digest.
        theirs: String,
        /// The coordinator's plugin's name.
        plugin: String,
        /// Its digest.
        ours: String,
    },
    /// The run has started.
    #[error("the run has started: a worker that joins late is refused")]
    Late,
    /// Every worker the run expects has joined.
    #[error("the run already has its {0} worker(s)")]
    Full(u32),
    /// An `--index` past the last.
    #[error("its index {index} is out of range: the run has {expected} worker(s), indexes 0 to {}", .expected - 1)]
    IndexOutOfRange {
        /// The index asked for.
        index: u32,
        /// How many workers the run has.
        expected: u32,
    },
    /// An `--index` another worker holds.
    #[error(
        "index {index} is taken by worker {holder} ({address}): give each worker its own --index"
    )]
    IndexTaken {
        /// The index asked for.
        index: u32,
        /// The worker holding it.
        holder: String,
        /// That worker's address.
        address: String,
    },
}

/// Why a worker is lost on one of its messages.
#[derive(Debug, thiserror::Error)]
pub(super) enum Lost {
    /// It reported a failure.
    #[error("it failed: {0}")]
    Failed(String),
    /// A hello after the first.
    #[error("it sent a second hello")]
    SecondHello,
    /// Samples before the run started.
    #[error("it sent samples before the start")]
    EarlySamples,
    /// Series that cannot be decoded.
    #[error("it sent garbage: {0}")]
    Garbage(DecodeError),
}
