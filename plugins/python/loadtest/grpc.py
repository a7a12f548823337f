"""gRPC calls made by the host (the contract's `grpc` interface, 0.3.3; descriptor
sets, reflection metadata and a channel's own TLS material 0.3.5; prepared calls
0.3.6).

A `Channel` is one target (`host:port`) with the descriptors of the services it calls:
`.proto` text (compiled by the host at run time; a `.proto` listed in `[data]` is one
record holding its text: `proto_from_data(name)`), binary descriptor sets (protosets),
or the server's reflection service. Every channel can also call
`grpc.health.v1.Health`, which the host carries (`Channel.health_check`).
Messages are dicts (sent and received as proto3 JSON). The host checks the allowlist,
connects at the first call and records `grpc_reqs`, `grpc_req_duration`,
`grpc_req_failed` and the stream metrics.

    from loadtest import grpc

    ch = grpc.Channel.connect("127.0.0.1:50051", reflect=True)
    reply = ch.invoke("helloworld.Greeter/SayHello", {"name": "py"})
    reply.message  # {"message": "Hello py"}

A call made again and again with the same request is cheaper prepared: the host
resolves the method and encodes the request once, and converts each answer to JSON
only when `message` is read.

    hello = ch.prepare("helloworld.Greeter/SayHello", {"name": "py"})
    hello.invoke().code  # 0

Import it as `from loadtest import grpc` (it needs a host of contract 0.3.6).
"""

import json as _json

from componentize_py_types import Err
from wit_world.imports import grpc as _g
from wit_world.imports import vu as _vu


class GrpcError(Exception):
    """A call failed: `kind` is denied, invalid, connect, tls, deadline, status or
    protocol; for `status`, `code` is the status code and `status` the whole status."""

    def __init__(self, kind: str, detail):
        self.kind = kind
        self.status = detail if kind == "status" else None
        self.code = detail.code if kind == "status" else {"deadline": 4}.get(kind, 14)
        text = f"{detail.code}: {detail.message}" if kind == "status" else detail
        super().__init__(f"grpc {kind}: {text}")


_KINDS = {
    _g.GrpcError_Denied: "denied", _g.GrpcError_Invalid: "invalid",
    _g.GrpcError_Connect: "connect", _g.GrpcError_Tls: "tls",
    _g.GrpcError_Deadline: "deadline", _g.GrpcError_Status: "status",
    _g.GrpcError_Protocol: "protocol",
}


def _call(f, *args):
    try:
        return f(*args)
    except Err as e:
        raise GrpcError(_KINDS.get(type(e.value), "error"), e.value.value) from None


def proto_from_data(name: str):
    """The text of the `.proto` file listed in `[data]` under `name`, or None."""
    record = _vu.data_get(name, 0)
    return None if record is None else _json.loads(record)


def _options(metadata, timeout, tags, name, expect):
    t = [(str(k), str(v)) for k, v in (tags or {}).items()]
    if name is not None:
        t.append(("name", name))
    m = [(str(k), str(v)) for k, v in (metadata or {}).items()]
    ms = None if timeout is None else int(timeout * 1000)
    return _g.CallOptions(m, ms, t, [int(c) for c in (expect or [])])


class Response:
    """A unary call's answer: `message` (a dict, None for an expected non-OK status),
    `code`, `status_message`, `headers`, `trailers`, `duration_us`."""

    def __init__(self, raw):
        self.message = None if raw.message is None else _json.loads(raw.message)
        self.code = raw.status.code
        self.status_message = raw.status.message
        self.headers = dict(raw.status.headers)
        self.trailers = dict(raw.status.trailers)
        self.duration_us = raw.duration_us


class PreparedResponse:
    """A prepared call's answer: `code`, `status_message`, `duration_us`; `message` (a
    dict, None for an expected non-OK status), `headers` and `trailers` are fetched
    from the host when read."""

    def __init__(self, raw):
        self.code = raw.code
        self.status_message = raw.status_message
        self.duration_us = raw.duration_us
        self._content = raw.content

    @property
    def message(self):
        text = _call(self._content.message)
        return None if text is None else _json.loads(text)

    @property
    def headers(self) -> dict:
        return dict(self._content.headers())

    @property
    def trailers(self) -> dict:
        return dict(self._content.trailers())


class PreparedCall:
    """A unary call the host prepared once (`Channel.prepare`); `invoke` makes it."""

    def __init__(self, raw):
        self._raw = raw

    def invoke(self) -> PreparedResponse:
        """Makes the call; counted as `Channel.invoke` would count it."""
        return PreparedResponse(_call(self._raw.invoke))


class Stream:
    """A client, server or bidirectional stream; `recv` gives a dict, `None` on timeout,
    and raises `StopIteration`-like `EOFError` at the end (with `.status`)."""

    def __init__(self, raw):
        self._raw = raw

    def send(self, message) -> None:
        """Sends one message (a dict, or JSON text)."""
        text = message if isinstance(message, str) else _json.dumps(message)
        _call(self._raw.send, text)

    def close_send(self) -> None:
        """Half-closes: no more messages will be sent."""
        _call(self._raw.close_send)

    def recv(self, timeout: float):
        """The next message as a dict; None when nothing came within `timeout` seconds;
        raises EOFError (its `status` attribute holds the end) when the stream ended."""
        item = _call(self._raw.recv, int(timeout * 1000))
        if isinstance(item, _g.StreamItem_Message):
            return _json.loads(item.value)
        if isinstance(item, _g.StreamItem_End):
            end = EOFError(f"the stream ended with status {item.value.code}")
            end.status = item.value
            raise end
        return None

    def cancel(self) -> None:
        """Cancels the stream."""
        self._raw.cancel()


class Channel:
    """A channel to one target; keep it across iterations (a module-level variable)."""

    def __init__(self, raw):
        self._raw = raw

    @classmethod
    def connect(cls, target: str, protos: dict = None, reflect: bool = False,
                tls: bool = False, timeout: float = None, descriptor_sets=None,
                reflect_metadata: dict = None, client_cert: str = None,
                client_key: str = None, ca_certs=None) -> "Channel":
        """A channel to `host:port`; `protos` maps file names to `.proto` text,
        `descriptor_sets` is a list of binary FileDescriptorSets (bytes),
        `reflect_metadata` is sent with the reflection requests; with `tls`,
        `client_cert` and `client_key` (PEM text) replace `[tls] client_cert` and
        `ca_certs` (PEM texts) are trusted besides the run's roots."""
        files = [_g.ProtoFile(str(n), str(s)) for n, s in (protos or {}).items()]
        ms = None if timeout is None else int(timeout * 1000)
        sets = [bytes(b) for b in (descriptor_sets or [])]
        md = [(str(k).lower(), str(v)) for k, v in (reflect_metadata or {}).items()]
        cas = [str(c) for c in (ca_certs or [])]
        material = None
        if client_cert is not None or client_key is not None or cas:
            material = _g.ChannelTls(client_cert, client_key, cas)
        options = _g.OpenOptions(tls, files, sets, reflect, md, material, ms)
        return cls(_call(_g.Channel.open, target, options))

    def invoke(self, method: str, request, metadata: dict = None, timeout: float = None,
               tags: dict = None, name: str = None, expect=None) -> Response:
        """A unary call of `package.Service/Method` with a dict (or JSON text)."""
        text = request if isinstance(request, str) else _json.dumps(request)
        options = _options(metadata, timeout, tags, name, expect)
        return Response(_call(self._raw.invoke, method, text, options))

    def prepare(self, method: str, request, metadata: dict = None, timeout: float = None,
                tags: dict = None, name: str = None, expect=None) -> PreparedCall:
        """Prepares a unary call to be made many times: the host resolves the method
        and encodes the request (a dict, or JSON text) now. Nothing is sent."""
        text = request if isinstance(request, str) else _json.dumps(request)
        options = _options(metadata, timeout, tags, name, expect)
        return PreparedCall(_call(self._raw.prepare, method, text, options))

    def stream(self, method: str, metadata: dict = None, timeout: float = None,
               tags: dict = None, name: str = None, expect=None) -> Stream:
        """Opens a stream of `package.Service/Method`."""
        options = _options(metadata, timeout, tags, name, expect)
        return Stream(_call(self._raw.open_stream, method, options))

    def methods(self):
        """The methods the channel knows so far."""
        return list(self._raw.methods())

    def health_check(self, service: str = "", timeout: float = None) -> str:
        """Asks the server's health service (`grpc.health.v1.Health/Check`, carried by
        the host) about `service` ("" for the whole server): `SERVING`,
        `NOT_SERVING`, `UNKNOWN` or `SERVICE_UNKNOWN`. A status other than OK (NOT_FOUND
        for a service the server does not know) raises GrpcError."""
        reply = self.invoke(HEALTH_CHECK, {"service": service}, timeout=timeout)
        return (reply.message or {}).get("status", "UNKNOWN")


HEALTH_CHECK = "grpc.health.v1.Health/Check"
"""The health service's method, which every channel can call."""
