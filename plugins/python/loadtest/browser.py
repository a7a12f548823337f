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
`from loadtest import browser` (it needs a host of contract 0.3.8).
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

    def goto(self, url: str, wait_until: str = "load") -> int:
        """Navigates and waits until `wait_until` (load, domcontentloaded, networkidle,
        commit); the document's status."""
        return _call(self._raw.goto, url, wait_until, _ms(self.timeout))

    def navigation_mark(self) -> int:
        """Main-frame navigations so far: take it before the action that navigates."""
        return self._raw.navigation_mark()

    def wait_for_navigation(self, mark: int, wait_until: str = "load"):
        """Waits for a navigation after `mark` to reach `wait_until`."""
        _call(self._raw.wait_for_navigation, mark, wait_until, _ms(self.timeout))

    def wait_for_selector(self, selector: str, state: str = "visible"):
        """Waits until the element `selector` finds is `state` (attached, detached,
        visible, hidden)."""
        _call(self._raw.wait_for_selector, selector, state, _ms(self.timeout))

    def evaluate(self, function: str, arg=None):
        """Evaluates `function` (JavaScript source of a function, or an expression)
        with `arg` (JSON); its result, promises awaited."""
        return _json.loads(_call(self._raw.evaluate, function, _json.dumps(arg)))

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
        return _json.loads(_call(p._raw.act, self._selector, self._nth, action, _ms(p.timeout)))

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
