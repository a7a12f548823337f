"""Raw TCP (plain or TLS) and UDP sockets held by the host (the contract's `sockets`
interface, 0.3.7), for protocols the contract does not name: Redis, PostgreSQL, MQTT,
a custom one.

`TcpSocket` reads and writes the way Python's `socket` module does (`sendall`,
`recv`, `settimeout`, `shutdown`, `close`), so protocol code written against a
socket moves over with few changes; its own reads take from a buffer the host keeps
for the socket, as protocols read: `recv_until` a line, `recv_exactly` a
length-prefixed payload.

    from loadtest import sockets

    redis = sockets.TcpSocket.connect("127.0.0.1", 6379)
    redis.sendall(b"PING\\r\\n")
    redis.recv_until(b"\\r\\n")  # b"+PONG\\r\\n"

The host checks every connect against the run's allowlist by host and port before any
packet (allow `tcp://host:port` or `udp://host:port` under `[targets] allow`; loopback
is allowed without it), and records `socket_connects`, `socket_connecting`,
`socket_errors{error}`, `socket_connects_denied`, `sockets_open`, `data_sent` and
`data_received`. A socket may be kept across iterations (on `self`) and is closed with
its VU. Import it as `from loadtest import sockets` (it needs a host of contract 0.3.7).
"""

from componentize_py_types import Err
from wit_world.imports import sockets as _s

#: How long a read or write waits when no timeout was set (seconds), as the host's
#: default request timeout.
DEFAULT_TIMEOUT = 60.0


class SocketError(Exception):
    """A socket call failed: `kind` is denied, invalid, refused, connect, tls, timeout,
    closed, too_large or io (as the host tags `socket_errors` with it)."""

    def __init__(self, kind: str, detail):
        super().__init__(f"{kind}: {detail}")
        self.kind = kind
        self.detail = detail


_KINDS = {
    _s.SocketError_Denied: "denied", _s.SocketError_Invalid: "invalid",
    _s.SocketError_Refused: "refused", _s.SocketError_Connect: "connect",
    _s.SocketError_Tls: "tls", _s.SocketError_Timeout: "timeout",
    _s.SocketError_Closed: "closed", _s.SocketError_TooLarge: "too_large",
    _s.SocketError_Io: "io",
}


def _call(f, *args):
    try:
        return f(*args)
    except Err as e:
        raise SocketError(_KINDS.get(type(e.value), "error"), e.value.value) from None


def _ms(seconds) -> int:
    """Seconds (a float) as the contract's milliseconds, within u32."""
    return max(0, min(int(seconds * 1000), 0xFFFFFFFF))


def _tags(tags) -> list:
    return [(str(k), str(v)) for k, v in (tags or {}).items()]


class TcpSocket:
    """A TCP connection, plain or TLS."""

    def __init__(self, raw):
        self._raw = raw
        self._timeout = DEFAULT_TIMEOUT

    @classmethod
    def connect(cls, host: str, port: int, tls: bool = False, server_name: str = None,
                timeout: float = None, tags: dict = None) -> "TcpSocket":
        """Opens a connection to `host:port`; with `tls`, TLS with the run's `[tls]`
        settings (`server_name` is the SNI and the name checked, the host by default).
        `timeout` bounds the connect and its handshake."""
        options = _s.ConnectOptions(
            tls=_s.TlsOptions(server_name=server_name) if tls else None,
            timeout_ms=None if timeout is None else _ms(timeout),
            tags=_tags(tags),
        )
        sock = cls(_call(_s.TcpSocket.connect, host, int(port), options))
        if timeout is not None:
            sock._timeout = timeout
        return sock

    def settimeout(self, seconds: float) -> None:
        """How long later reads and writes wait."""
        self._timeout = DEFAULT_TIMEOUT if seconds is None else float(seconds)

    def gettimeout(self) -> float:
        """How long reads and writes wait, in seconds."""
        return self._timeout

    def sendall(self, data: bytes, timeout: float = None) -> None:
        """Writes all of `data` (at most `max_write()` bytes)."""
        _call(self._raw.write, bytes(data), _ms(self._timeout if timeout is None else timeout))

    send = sendall

    def recv(self, max: int = 65536, timeout: float = None) -> bytes:
        """Between 1 and `max` bytes, waiting for the first; `b""` once the peer has
        closed and every byte was read."""
        return bytes(_call(self._raw.read, int(max),
                           _ms(self._timeout if timeout is None else timeout)))

    def recv_exactly(self, n: int, timeout: float = None) -> bytes:
        """Exactly `n` bytes (at most `max_read()`)."""
        return bytes(_call(self._raw.read_exact, int(n),
                           _ms(self._timeout if timeout is None else timeout)))

    def recv_until(self, delimiter: bytes, max: int = 65536, timeout: float = None) -> bytes:
        """The bytes up to and including the first `delimiter`, at most `max` of them."""
        return bytes(_call(self._raw.read_until, bytes(delimiter), int(max),
                           _ms(self._timeout if timeout is None else timeout)))

    def readline(self, max: int = 65536) -> bytes:
        """A line, its `\\n` included."""
        return self.recv_until(b"\n", max)

    def shutdown_write(self) -> None:
        """Half-closes the connection: no more writes; reads go on."""
        _call(self._raw.shutdown_write)

    def shutdown(self, how=None) -> None:
        """As `socket.shutdown(SHUT_WR)`: half-closes the connection."""
        self.shutdown_write()

    def close(self) -> None:
        """Closes the connection."""
        self._raw.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class UdpSocket:
    """A UDP socket that exchanges datagrams with one peer."""

    def __init__(self, raw):
        self._raw = raw

    @classmethod
    def connect(cls, host: str, port: int, tags: dict = None) -> "UdpSocket":
        """Binds a local port and connects it to `host:port` (nothing is sent)."""
        return cls(_call(_s.UdpSocket.connect, host, int(port), _tags(tags)))

    def send(self, data: bytes) -> None:
        """Sends one datagram (at most 65,507 bytes)."""
        _call(self._raw.send, bytes(data))

    def recv(self, timeout: float = DEFAULT_TIMEOUT) -> bytes:
        """The next datagram; raises `SocketError` (`timeout`) when none came in time."""
        return bytes(_call(self._raw.recv, _ms(timeout)))


def max_read() -> int:
    """The most one read returns and the host buffers for one TCP socket, in bytes."""
    return _s.max_read()


def max_write() -> int:
    """The most one write takes, in bytes."""
    return _s.max_write()


def max_sockets() -> int:
    """The most sockets one VU holds at once."""
    return _s.max_sockets()
