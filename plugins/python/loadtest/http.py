"""HTTP requests through the host's connection pools (`http.send` of the contract)."""

import json as _json
from urllib.parse import urlencode as _urlencode

from componentize_py_types import Err
from wit_world.imports import http as _http


class HttpError(Exception):
    """A request that got no response: `kind` is denied, invalid, connect, timeout, tls,
    protocol or body-too-large; `detail` the host's message."""

    def __init__(self, kind: str, detail):
        super().__init__(f"{kind}: {detail}")
        self.kind = kind
        self.detail = detail


_KINDS = {
    _http.HttpError_Denied: "denied", _http.HttpError_Invalid: "invalid",
    _http.HttpError_Connect: "connect", _http.HttpError_Timeout: "timeout",
    _http.HttpError_Tls: "tls", _http.HttpError_Protocol: "protocol",
    _http.HttpError_BodyTooLarge: "body-too-large",
}


def _error(value) -> HttpError:
    return HttpError(_KINDS.get(type(value), "error"), getattr(value, "value", value))


class Response:
    """A response: `status`, `url`, `body_size`, `timings` at once; headers and body are
    fetched from the host when first asked for."""

    def __init__(self, raw):
        self.status = raw.status
        self.url = raw.url
        self.body_size = raw.body_size
        self.timings = raw.timings
        self._content = raw.content
        self._body = None
        self._html = None

    def header(self, name: str):
        """The first header `name` (case-insensitive), or None."""
        return self._content.header(name)

    def headers(self) -> list:
        """All headers, in order, names in lower case."""
        return self._content.headers()

    @property
    def body(self) -> bytes:
        """The body (empty with `discard_body=True`)."""
        if self._body is None:
            self._body = self._content.body()
        return self._body

    @property
    def text(self) -> str:
        """The body as UTF-8 text."""
        return self.body.decode("utf-8", errors="replace")

    def json(self):
        """The body parsed as JSON."""
        return _json.loads(self.body)

    def html(self):
        """The body parsed as an HTML page by the host (once, with no copy of the body
        into the plugin): a `loadtest.html.Document`."""
        if self._html is None:
            from . import html
            self._html = html.Document._from_content(self._content, self.url)
        return self._html

    def form(self, css: str = "form"):
        """The page's form matching `css`, to fill in and submit as a browser would
        (hidden inputs such as a CSRF field kept): a `loadtest.html.Form`."""
        return self.html().form(css)

    def link(self, css: str = "a[href]"):
        """A GET of the link matching `css`, as a click sends it (`.send()` it)."""
        return self.html().link(css)


# `version=` values (contract 0.3.4): the ALPN names, and HTTP/1.1's short forms.
_VERSIONS = {
    "http/1.1": _http.HttpVersion.HTTP1, "h1": _http.HttpVersion.HTTP1,
    "h2": _http.HttpVersion.HTTP2, "h3": _http.HttpVersion.HTTP3,
}


def _version(version):
    """The contract's `http-version` of a `version=` option, or None when not given."""
    if version is None:
        return None
    try:
        return _VERSIONS[version]
    except (KeyError, TypeError):
        raise HttpError("invalid", f"version={version!r}: use \"http/1.1\", \"h2\" or \"h3\"") from None


def _split(method, url, version=None, **options):
    """The contract's request and its `http-version` (None: as the run chooses)."""
    return _request(method, url, **options), _version(version)


def _request(method, url, *, name=None, headers=None, body=None, json=None, form=None,
             timeout=None, tags=None, discard_body=False, expected=None, redirects=None,
             no_cookie_jar=False):
    headers = [(str(k), str(v)) for k, v in (headers or {}).items()]
    if json is not None:
        body = _json.dumps(json).encode()
        headers.append(("content-type", "application/json"))
    elif form is not None:
        body = _urlencode(form).encode()
        headers.append(("content-type", "application/x-www-form-urlencoded"))
    elif isinstance(body, str):
        body = body.encode()
    all_tags = [(str(k), str(v)) for k, v in (tags or {}).items()]
    if name is not None:
        all_tags.append(("name", name))
    return _http.Request(
        method=method.upper(),
        url=url,
        headers=headers,
        body=body,
        options=_http.RequestOptions(
            timeout_ms=None if timeout is None else int(timeout * 1000),
            tags=all_tags,
            discard_body=discard_body,
            expected_statuses=None if expected is None
            else [_http.StatusRange(min=lo, max=hi) for lo, hi in expected],
            redirects=redirects,
            no_cookie_jar=no_cookie_jar,
        ),
    )


def request(method: str, url: str, **options) -> Response:
    """Sends one request and waits for its response; raises `HttpError` when there is none.

    Options: `name` (groups URLs in the metrics), `headers` (dict), `body` (bytes/str),
    `json`, `form` (dict), `timeout` (seconds), `tags` (dict), `discard_body`,
    `expected` ([(min, max)] statuses that count as success; 200-399 by default),
    `redirects`, `no_cookie_jar`, `version` ("http/1.1", "h2" or "h3": this request
    goes over that HTTP version only, whatever the run's `[http] versions` prefer, and
    fails rather than use another; needs a host of contract 0.3.4).
    """
    req, version = _split(method, url, **options)
    try:
        if version is None:
            return Response(_http.send(req))
        return Response(_http.send_with_version(req, version))
    except Err as e:
        raise _error(e.value) from None


def get(url: str, **options) -> Response:
    """`request("GET", url, ...)`."""
    return request("GET", url, **options)


def post(url: str, **options) -> Response:
    """`request("POST", url, ...)`."""
    return request("POST", url, **options)


def batch(requests: list) -> list:
    """Sends requests in parallel, as a browser loads a page; `requests` is a list of
    (method, url, options dict); returns a Response or an HttpError for each, in order.
    An options dict may hold `version`, as for `request`."""
    split = [_split(m, u, **(o or {})) for m, u, o in requests]
    if any(v is not None for _, v in split):
        raw = _http.send_batch_with_versions(split)
    else:
        raw = _http.send_batch([r for r, _ in split])
    out = []
    for r in raw:
        if isinstance(r, Err):
            out.append(_error(r.value))
        else:
            out.append(Response(r.value))
    return out
