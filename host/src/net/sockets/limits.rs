//! The bounds of raw sockets: what one read, one write, one datagram and one VU's
//! sockets may make the host hold.

/// The most one read returns or waits for, and the most the host buffers for one TCP
/// socket: 4 MiB (a Redis value or a PostgreSQL row batch fits; a plugin cannot make
/// the host hold more per socket).
pub(crate) const MAX_READ: u32 = 4 << 20;

/// The most one write takes: 4 MiB (the bytes are already a copy out of the plugin's
/// memory, whose cap bounds them too; this makes the bound the contract's).
pub(crate) const MAX_WRITE: u32 = 4 << 20;

/// The most sockets one VU holds at once (TCP and UDP together): past it a connect
/// fails with `invalid`, so a plugin that forgets its sockets in a loop stops at a
/// bound instead of at the process's open-file limit.
pub(crate) const MAX_SOCKETS: u32 = 1024;

/// The largest UDP payload over IPv4 (65,535 − 8 − 20).
pub(crate) const MAX_DATAGRAM: usize = 65_507;
