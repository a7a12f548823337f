"""Pages of a real browser, driven by the host (the contract's `browser` interface,
0.3.8): the host runs Chromium, shared by the VUs, with a fresh context (cookies,
storage) for each one that asks, and holds the run's allowlist inside it: a page's
request to an origin the run does not allow fails before it leaves and is counted in
`http_reqs_denied`. The page's requests and web vitals are recorded as k6's browser
metrics (`browser_http_req_duration`, `browser_web_vital_lcp`, ...).

    from loadtest import browser

    context = browser.Context.open()
    page = context.new_page()
    page.goto(base + "/survey/login")
    page.locator("input[name=user]").type("ann")
    page.locator("input[name=password]").type("demo")
    mark = page.navigation_mark()
    page.locator("button").click()
    page.wait_for_navigation(mark)
    who = page.locator("#user").text_content()
    context.close()

A context still open when its iteration ends is closed by the host. Import it as
`from loadtest import browser` (it needs a host of contract 0.3.8; events, routes,
handles, frame locators and emulation need 0.3.10):

    page.listen(["console"])             # k6's page.on: take_events() after calls
    page.route(lambda r: ("abort",) if r["url"].endswith(".png") else ("continue",))
    box = page.evaluate_handle("() => ({a: 1})").json_value()
    page.frame_locator("iframe").locator("#in").click()
"""

import json as _json

from componentize_py_types import Err
from wit_world.imports import browser as _b

#: How long actions, waits and navigations wait by default (seconds), as k6's.
DEFAULT_TIMEOUT = 30.0


class BrowserError(Exception):
    """A browser call failed: `kind` is denied, timeout, navigation, script, invalid or
    browser (missing, could not start, or went away)."""

    def __init__(self, kind: str, detail):
        super().__init__(f"browser {kind}: {detail}")
        self.kind = kind
        self.detail = detail


_KINDS = {
    _b.BrowserError_Denied: "denied", _b.BrowserError_Timeout: "timeout",
    _b.BrowserError_Navigation: "navigation", _b.BrowserError_Script: "script",
    _b.BrowserError_Invalid: "invalid", _b.BrowserError_Browser: "browser",
}


def _call(f, *args):
    try:
        return f(*args)
    except Err as e:
        raise BrowserError(_KINDS.get(type(e.value), "error"), e.value.value) from None


#: The error of a call that returned because routed requests wait for the plugin.
_ROUTED = "routed-requests-wait"


def _ms(seconds) -> int:
    return max(1, min(int(seconds * 1000), 0xFFFFFFFF))


class Context:
    """A browser context: a fresh profile of its own (cookies, storage, cache)."""

    def __init__(self, raw):
        self._raw = raw

    @classmethod
    def open(cls, viewport: tuple = None, user_agent: str = None, locale: str = None,
             timezone_id: str = None, color_scheme: str = None, is_mobile: bool = None,
             device_scale_factor: float = None, extra_http_headers: dict = None) -> "Context":
        """A new context for this VU; each option left out keeps the browser's default."""
        options = _b.ContextOptions(
            viewport_width=viewport[0] if viewport else None,
            viewport_height=viewport[1] if viewport else None,
            device_scale_factor=device_scale_factor, is_mobile=is_mobile,
            user_agent=user_agent, locale=locale, timezone_id=timezone_id,
            color_scheme=color_scheme,
            extra_http_headers=[(str(k), str(v)) for k, v in (extra_http_headers or {}).items()],
        )
        return cls(_call(_b.Context.open, options))

    def new_page(self) -> "Page":
        """A new page (tab) in this context."""
        return Page(_call(self._raw.new_page))

    def add_cookies(self, cookies: list):
        """Adds cookies: k6's cookie objects ({name, value, url} or {name, value, domain,
        path})."""
        _call(self._raw.add_cookies, _json.dumps(cookies))

    def cookies(self, *urls) -> list:
        """The context's cookies (those sent to one of `urls`, or all)."""
        return _json.loads(_call(self._raw.cookies, [str(u) for u in urls]))

    def clear_cookies(self):
        """Removes every cookie of the context."""
        _call(self._raw.clear_cookies)

    def grant_permissions(self, permissions: list, origin: str = None):
        """Grants permissions (`geolocation`, `notifications`, ...) to `origin`, or all."""
        _call(self._raw.grant_permissions, [str(p) for p in permissions], origin)

    def set_geolocation(self, latitude: float, longitude: float, accuracy: float = 0.0):
        """The position the context's pages report."""
        _call(self._raw.set_geolocation, float(latitude), float(longitude), float(accuracy))

    def close(self):
        """Closes the context and its pages."""
        _call(self._raw.close)


class Page:
    """A page of a `Context`."""

    def __init__(self, raw):
        self._raw = raw
        #: How long actions, waits and navigations wait (seconds).
        self.timeout = DEFAULT_TIMEOUT
        self._router = None

    def _resumed(self, f, *args, text=False):
        """`f(*args)`, through the route handler while routed requests wait; a
        resumed call's result is JSON (returned as text when `text`)."""
        try:
            return _call(f, *args)
        except BrowserError as e:
            if e.kind != "script" or e.detail != _ROUTED:
                raise
        while True:
            for r in _json.loads(self._raw.routed()):
                answer = self._router(r) if self._router else ("continue",)
                how = answer[0]
                options = answer[1] if len(answer) > 1 else {}
                _call(self._raw.route_answer, r["id"], how, _json.dumps(options))
            try:
                out = _call(self._raw.resume)
            except BrowserError as e:
                if e.kind == "script" and e.detail == _ROUTED:
                    continue
                raise
            return out if text else _json.loads(out)

    def route(self, handler):
        """Hands every request the page may make to `handler(request)` (a dict: id,
        url, method, headers, postData, resourceType), which returns ("continue",),
        ("continue", {"url": ..., "headers": {...}}), ("abort", {"errorCode":
        "failed"}) or ("fulfill", {"status": 200, "contentType": ..., "body": ...}).
        A continue to an origin the run does not allow fails and is counted denied."""
        self._router = handler
        self._raw.set_routing(True)

    def unroute_all(self):
        """Stops routing."""
        self._router = None
        self._raw.set_routing(False)

    def listen(self, kinds: list):
        """Keeps the page's events of `kinds` (console, request, response) for
        `take_events` (k6's page.on)."""
        _call(self._raw.listen, [str(k) for k in kinds])

    def take_events(self) -> list:
        """The events kept since the last take, as dicts with `event`."""
        return _json.loads(self._raw.take_events())["events"]

    def tag_metrics(self, rules: list):
        """Groups the page's metrics by URL (k6's metric.tag): rules of (name,
        url_regex, method or None)."""
        _call(self._raw.tag_metrics, _json.dumps([
            {"name": n, "matches": [{"url": {"source": u, "flags": ""}, "method": m}]}
            for n, u, m in rules]))

    def evaluate_handle(self, function: str, arg=None) -> "JSHandle":
        """Evaluates `function` with `arg`, keeping its value in the page."""
        return JSHandle(self, self._resumed(self._raw.evaluate_handle, function, _json.dumps(arg)))

    def query(self, selector: str):
        """The first element `selector` finds now (k6's page.$), or None."""
        ids = self._resumed(self._raw.query, selector, False)
        return JSHandle(self, ids[0]) if ids else None

    def query_all(self, selector: str) -> list:
        """Every element `selector` finds now (k6's page.$$)."""
        return [JSHandle(self, i) for i in self._resumed(self._raw.query, selector, True)]

    def frame_locator(self, selector: str) -> "FrameLocator":
        """The elements inside the (same-origin) iframe `selector` finds."""
        return FrameLocator(self, selector)

    def mouse_wheel(self, x: float, y: float, delta_x: float, delta_y: float):
        """The mouse wheel turned at a point of the viewport."""
        _call(self._raw.wheel, float(x), float(y), float(delta_x), float(delta_y))

    def set_extra_http_headers(self, headers: dict):
        """Headers sent with every later request of the page."""
        _call(self._raw.set_extra_http_headers, [(str(k), str(v)) for k, v in headers.items()])

    def emulate_media(self, media: str = None, color_scheme: str = None,
                      reduced_motion: str = None):
        """The CSS media the page sees; each left out stays as it is."""
        _call(self._raw.emulate_media, media, color_scheme, reduced_motion)

    def add_init_script(self, source: str):
        """JavaScript run in every document the page loads from now on."""
        _call(self._raw.add_init_script, source)

    def set_offline(self, offline: bool):
        """Takes the page off the network, or puts it back."""
        _call(self._raw.set_offline, bool(offline))

    def key_down(self, key: str):
        """A key (Shift, a) going down and staying down (k6's keyboard.down)."""
        _call(self._raw.keyboard_key, str(key), True)

    def key_up(self, key: str):
        """The key going up (k6's keyboard.up)."""
        _call(self._raw.keyboard_key, str(key), False)

    def goto(self, url: str, wait_until: str = "load") -> int:
        """Navigates and waits until `wait_until` (load, domcontentloaded, networkidle,
        commit); the document's status."""
        return self._resumed(self._raw.goto, url, wait_until, _ms(self.timeout))

    def navigation_mark(self) -> int:
        """Main-frame navigations so far: take it before the action that navigates."""
        return self._raw.navigation_mark()

    def wait_for_navigation(self, mark: int, wait_until: str = "load"):
        """Waits for a navigation after `mark` to reach `wait_until`."""
        self._resumed(self._raw.wait_for_navigation, mark, wait_until, _ms(self.timeout))

    def wait_for_selector(self, selector: str, state: str = "visible"):
        """Waits until the element `selector` finds is `state` (attached, detached,
        visible, hidden)."""
        self._resumed(self._raw.wait_for_selector, selector, state, _ms(self.timeout))

    def evaluate(self, function: str, arg=None):
        """Evaluates `function` (JavaScript source of a function, or an expression)
        with `arg` (JSON); its result, promises awaited."""
        return _json.loads(self._resumed(self._raw.evaluate, function, _json.dumps(arg), text=True))

    def locator(self, selector: str) -> "Locator":
        """The elements `selector` finds (CSS, `xpath=`, `text=`); acts on the first."""
        return Locator(self, selector, None)

    def title(self) -> str:
        """The document's title."""
        return _call(self._raw.title)

    def url(self) -> str:
        """The main frame's URL."""
        return _call(self._raw.url)

    def content(self) -> str:
        """The document's HTML."""
        return _call(self._raw.content)

    def screenshot(self, path: str, full_page: bool = False) -> str:
        """A PNG written into the run's results folder under `path`; the path written."""
        return _call(self._raw.screenshot, path, full_page)

    def press(self, key: str):
        """Presses a key (Enter, Tab, a, Control+A) in the focused element."""
        _call(self._raw.keyboard_press, key)

    def mouse_click(self, x: float, y: float, button: str = "left", click_count: int = 1):
        """A click at a point of the viewport (CSS pixels)."""
        _call(self._raw.mouse, "click", float(x), float(y), button, click_count)

    def tap(self, x: float, y: float):
        """A touch at a point of the viewport."""
        _call(self._raw.tap, float(x), float(y))

    def close(self):
        """Closes the page."""
        _call(self._raw.close)


class Locator:
    """Elements of a `Page` found by a selector, waited for when acted on."""

    def __init__(self, page: Page, selector: str, nth):
        self._page = page
        self._selector = selector
        self._nth = nth

    def nth(self, n: int) -> "Locator":
        """The `n`th element found (negative: from the end)."""
        return Locator(self._page, self._selector, int(n))

    def locator(self, selector: str) -> "Locator":
        """The elements `selector` finds inside this locator's."""
        chain = self._selector if self._nth is None else f"{self._selector} >> nth={self._nth}"
        return Locator(self._page, f"{chain} >> {selector}", None)

    def _act(self, action):
        p = self._page
        return _json.loads(p._resumed(p._raw.act, self._selector, self._nth, action,
                                      _ms(p.timeout), text=True))

    def frame_locator(self, selector: str) -> "FrameLocator":
        """The elements inside the iframe(s) this locator finds."""
        chain = self._selector if self._nth is None else f"{self._selector} >> nth={self._nth}"
        return FrameLocator(self._page, f"{chain} >> {selector}")

    def dispatch_event(self, kind: str, init: dict = None):
        """Dispatches DOM event `kind` with `init` on it."""
        p = self._page
        p._resumed(p._raw.dispatch_event, self._selector, self._nth, str(kind),
                   _json.dumps(init or {}), _ms(p.timeout))

    def click(self):
        """Clicks it (a real mouse click at its centre)."""
        self._act(_b.Action_Click())

    def fill(self, value: str):
        """Sets its value (events input and change)."""
        self._act(_b.Action_Fill(str(value)))

    def type(self, text: str):
        """Types `text` into it key by key."""
        self._act(_b.Action_Type(str(text)))

    def press(self, key: str):
        """Presses one key on it."""
        self._act(_b.Action_Press(str(key)))

    def check(self):
        """Checks a checkbox or radio button."""
        self._act(_b.Action_Check())

    def text_content(self):
        """Its textContent (None for a node without one)."""
        return self._act(_b.Action_TextContent())

    def get_attribute(self, name: str):
        """An attribute's value (None when absent)."""
        return self._act(_b.Action_GetAttribute(str(name)))

    def input_value(self) -> str:
        """The value of an input, textarea or select."""
        return self._act(_b.Action_InputValue())

    def is_visible(self) -> bool:
        """Whether it is visible now (never waits)."""
        return self._act(_b.Action_IsVisible())

    def count(self) -> int:
        """How many elements the selector finds now (never waits)."""
        return self._act(_b.Action_Count())


class FrameLocator:
    """The elements inside the iframe(s) a selector finds (`Page.frame_locator`)."""

    def __init__(self, page: Page, selector: str):
        self._page = page
        self._selector = selector

    def locator(self, selector: str) -> Locator:
        """The elements `selector` finds inside the iframe."""
        return Locator(self._page,
                       f"{self._selector} >> internal:control=enter-frame >> {selector}", None)


class JSHandle:
    """A value kept in the page (`evaluate_handle`, `query`); an element's handle acts
    on that element."""

    def __init__(self, page: Page, handle: int):
        self._page = page
        self._id = handle

    def json_value(self):
        """Its value."""
        p = self._page
        return _json.loads(p._resumed(p._raw.handle_json, self._id, text=True))

    def evaluate(self, function: str, arg=None):
        """`function(value, arg)` on it in the page; the result."""
        p = self._page
        return _json.loads(p._resumed(p._raw.handle_evaluate, self._id, function,
                                      _json.dumps(arg), text=True))

    def _act(self, action):
        p = self._page
        return _json.loads(p._resumed(p._raw.handle_act, self._id, action, _ms(p.timeout),
                                      text=True))

    def click(self):
        """Clicks the element."""
        self._act(_b.Action_Click())

    def fill(self, value: str):
        """Sets the element's value."""
        self._act(_b.Action_Fill(str(value)))

    def text_content(self):
        """The element's textContent."""
        return self._act(_b.Action_TextContent())

    def get_attribute(self, name: str):
        """An attribute of the element (None when absent)."""
        return self._act(_b.Action_GetAttribute(str(name)))

    def dispose(self):
        """Releases it."""
        self._page._raw.handle_dispose(self._id)
