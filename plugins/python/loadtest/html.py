"""HTML pages, forms and links, parsed by the host (the contract's `html` interface:
html5ever and CSS selectors), so a response's body is parsed where it already is.

A form is submitted as a browser submits it: its hidden inputs (a CSRF field such as
`csrfmiddlewaretoken`) are kept, the fields given are set over them, and it goes to its
`action` with its `method` and encoding::

    page = loadtest.http.get(f"{base}/survey")
    token = page.html().json_script("survey-data")["token"]
    res = page.form("form[action='/survey/answer']").set("token", token).submit(name="/survey/answer")
    nxt = page.link("a.next").send()
"""

import json as _json
from urllib.parse import urlencode as _urlencode

from componentize_py_types import Err
from wit_world.imports import html as _html


def _ok(call):
    """The value of a host call that returns a result; its error raised as ValueError."""
    try:
        return call()
    except Err as e:
        raise ValueError(str(e.value)) from None


def resolve(base: str, reference: str) -> str:
    """`reference` (a link's href, a form's action) resolved against the URL `base`."""
    return _ok(lambda: _html.resolve(base, reference))


class Document:
    """A parsed page, queried with CSS selectors."""

    def __init__(self, text: str = None, *, url: str = "", _handle=None):
        self._doc = _handle if _handle is not None else _html.Document(text or "")
        self.url = url

    @classmethod
    def _from_content(cls, content, url):
        return cls(url=url, _handle=_html.Document.from_response(content))

    def select(self, css: str) -> list:
        """Every element matching `css`, in document order."""
        return [Element(self, i) for i in _ok(lambda: self._doc.select([], css))]

    def first(self, css: str):
        """The first element matching `css`, or None."""
        found = self.select(css)
        return found[0] if found else None

    def attr(self, css: str, name: str):
        """Attribute `name` of the first element matching `css`, or None."""
        e = self.first(css)
        return None if e is None else e.attr(name)

    def text(self, css: str):
        """The text of the first element matching `css`, or None."""
        e = self.first(css)
        return None if e is None else e.text()

    def json_script(self, id: str):
        """The JSON in `<script type="application/json" id="ID">`, parsed."""
        return self.json(f'script[type="application/json"][id="{id}"]')

    def json(self, css: str):
        """The JSON inside the first element matching `css`, parsed."""
        text = self.text(css)
        if text is None:
            raise ValueError(f"no element matches {css!r} in the page {self.url}")
        return _json.loads(text)

    def form(self, css: str = "form") -> "Form":
        """The form matching `css`, ready to fill in and submit."""
        e = self.first(css)
        if e is None or e.name != "form":
            raise ValueError(f"no form matches {css!r} in the page {self.url}")
        return Form(e)

    def link(self, css: str = "a[href]"):
        """A GET of the href of the first element matching `css`, as a click sends it:
        a `Request` to `send()`."""
        e = self.first(css)
        if e is None:
            raise ValueError(f"no element matches {css!r} in the page {self.url}")
        href = e.attr("href")
        if href is None:
            raise ValueError(f"the element matching {css!r} has no href")
        return Request("GET", self.resolve(href))

    def links(self, css: str = "a[href]") -> list:
        """The hrefs of every element matching `css`, resolved."""
        return [self.resolve(e.attr("href")) for e in self.select(css) if e.attr("href") is not None]

    def resolve(self, reference: str) -> str:
        """`reference` resolved against the page's URL."""
        if not self.url:
            raise ValueError(f"cannot resolve {reference!r}: the page has no URL (Document(text, url=...))")
        return resolve(self.url, reference)


class Element:
    """One element of a `Document`."""

    def __init__(self, doc: Document, id: int):
        self._doc = doc
        self._id = id

    def _node(self):
        return self._doc._doc.node(self._id)

    @property
    def name(self) -> str:
        """The tag name, in lower case."""
        n = self._node()
        return "" if n is None else n.name

    def attr(self, name: str):
        """An attribute's value, or None."""
        n = self._node()
        for k, v in (n.attributes if n is not None else []):
            if k == name:
                return v
        return None

    def attrs(self) -> list:
        """Every attribute, sorted by name."""
        n = self._node()
        return [] if n is None else list(n.attributes)

    def text(self) -> str:
        """The text inside, descendants included."""
        return self._doc._doc.text(self._id)

    def inner_html(self) -> str:
        """The markup inside."""
        return self._doc._doc.inner_html(self._id)

    def outer_html(self) -> str:
        """The element's own markup."""
        return self._doc._doc.outer_html(self._id)

    def select(self, css: str) -> list:
        """Elements inside this one matching `css`."""
        return [Element(self._doc, i) for i in _ok(lambda: self._doc._doc.select([self._id], css))]

    def form_fields(self) -> list:
        """The (name, value) fields a browser would submit for this form or control."""
        return list(self._doc._doc.form_fields(self._id))


class Request:
    """A request made by a form or a link, not sent yet: `send(**options)` takes the
    options of `loadtest.http.request` (`name`, `redirects`, `expected`, ...)."""

    def __init__(self, method, url, *, body=None, headers=None):
        self.method = method
        self.url = url
        self.body = body
        self.headers = dict(headers or {})

    def send(self, **options):
        """Sends it; returns the `Response`."""
        from . import http
        headers = dict(self.headers)
        headers.update(options.pop("headers", None) or {})
        return http.request(self.method, self.url, body=self.body, headers=headers, **options)


class Form:
    """A form being filled in."""

    def __init__(self, element: Element):
        self._form = element
        self._fields = []
        self._press = None

    def set(self, name: str, value) -> "Form":
        """Sets field `name`, replacing the page's value(s) of that name (or adding it);
        set a name twice to send it twice."""
        self._fields.append((str(name), str(value)))
        return self

    def press(self, css: str) -> "Form":
        """Presses the submit button matching `css`: its name and value are sent and its
        formaction, formmethod and formenctype win over the form's."""
        self._press = css
        return self

    def _submission(self):
        doc = self._form._doc
        submitter = None
        if self._press is not None:
            found = _ok(lambda: doc._doc.select([], self._press))
            if not found:
                raise ValueError(f"no submit button matches {self._press!r} in the page")
            submitter = found[0]
        if not doc.url:
            raise ValueError("the form's page has no URL: take it from a response (Response.form)")
        sub = _ok(lambda: doc._doc.submission(self._form._id, submitter, doc.url))
        given = {k for k, _ in self._fields}
        fields = [(k, v) for k, v in sub.fields if k not in given] + self._fields
        return sub, fields

    def fields(self) -> list:
        """The (name, value) fields as they would be sent."""
        return self._submission()[1]

    def request(self) -> Request:
        """The request a browser would send for this form."""
        sub, fields = self._submission()
        if sub.method == "GET":
            base = sub.url.split("#")[0].split("?")[0]
            query = _urlencode(fields)
            return Request("GET", f"{base}?{query}" if query else base)
        if sub.enctype == "multipart/form-data":
            boundary = "----loadtestform7f3a9c"
            parts = []
            for k, v in fields:
                name = k.replace('"', "%22").replace("\r", "%0D").replace("\n", "%0A")
                parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{v}\r\n')
            body = ("".join(parts) + f"--{boundary}--\r\n").encode()
            return Request("POST", sub.url, body=body,
                           headers={"content-type": f"multipart/form-data; boundary={boundary}"})
        if sub.enctype == "text/plain":
            body = "".join(f"{k}={v}\r\n" for k, v in fields).encode()
            return Request("POST", sub.url, body=body, headers={"content-type": "text/plain"})
        return Request("POST", sub.url, body=_urlencode(fields).encode(),
                       headers={"content-type": "application/x-www-form-urlencoded"})

    def submit(self, **options):
        """Submits the form; `options` as for `loadtest.http.request`."""
        return self.request().send(**options)
