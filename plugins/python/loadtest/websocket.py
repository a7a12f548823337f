"""WebSockets held by the host (the contract's `websocket` interface); a socket may be
kept across iterations and dies with its VU."""

from componentize_py_types import Err
from wit_world.imports import websocket as _ws


class WsError(Exception):
    """A socket operation failed: `kind` is denied, invalid, connect, closed or protocol."""

    def __init__(self, kind: str, detail):
        super().__init__(f"{kind}: {detail}")
        self.kind = kind
        self.detail = detail


_KINDS = {
    _ws.WsError_Denied: "denied", _ws.WsError_Invalid: "invalid",
    _ws.WsError_Connect: "connect", _ws.WsError_Closed: "closed",
    _ws.WsError_Protocol: "protocol",
}


def _call(f, *args):
    try:
        return f(*args)
    except Err as e:
        raise WsError(_KINDS.get(type(e.value), "error"), e.value.value) from None


class Socket:
    """An open WebSocket."""

    def __init__(self, raw):
        self._raw = raw

    @classmethod
    def connect(cls, url: str, headers: dict = None, tags: dict = None) -> "Socket":
        """Opens a socket to a `ws://` or `wss://` URL."""
        h = [(str(k), str(v)) for k, v in (headers or {}).items()]
        t = [(str(k), str(v)) for k, v in (tags or {}).items()]
        return cls(_call(_ws.Socket.connect, url, h, t))

    def send_text(self, text: str) -> None:
        """Sends a text message."""
        _call(self._raw.send_text, text)

    def send_binary(self, data: bytes) -> None:
        """Sends a binary message."""
        _call(self._raw.send_binary, data)

    def recv(self, timeout: float):
        """The next message (str or bytes), or None after `timeout` seconds."""
        message = _call(self._raw.recv, int(timeout * 1000))
        return None if message is None else message.value

    def close(self, code: int = 1000, reason: str = "") -> None:
        """Closes the socket."""
        _call(self._raw.close, code, reason)
