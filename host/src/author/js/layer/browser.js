// ---------------------------------------------------------------- k6/browser
//
// k6's browser module over the contract's `browser` interface: the host drives
// Chromium (shared browsers, a context per iteration, the run's allowlist held in every
// page) and this file gives it k6's API. Every call that k6 makes async returns a
// promise; the host call behind it runs at once (the VU waits on the host), except the
// waits that must start before the action that ends them: `waitForNavigation` takes
// its mark now and waits in a later job, so `Promise.all([page.waitForNavigation(),
// locator.click()])` clicks first and then waits, as in k6.

const BROWSER_TIMEOUT = 30000;

// What a host call threw, as the script's Error.
// The runtime throws a result's error as an Error holding it in `payload`.
function browserError(e) {
  if (e instanceof Error && e.payload && typeof e.payload === 'object' && e.payload.tag) return new Error(String(e.payload.val));
  if (e && typeof e === 'object' && e.tag) return new Error(String(e.val));
  return e instanceof Error ? e : new Error(String(e));
}

// Runs `fn` now; its value (or its failure) as a settled promise.
function browserNow(fn) {
  try {
    return LayerPromise.resolve(fn());
  } catch (e) {
    return LayerPromise.reject(browserError(e));
  }
}

// Runs `fn` in a job after the script's current synchronous code.
function browserLater(fn) {
  const p = newPromise();
  microtasks.push(browserLaterJob, { p, fn });
  return p;
}

function browserLaterJob(j) {
  let v;
  try { v = j.fn(); } catch (e) { settlePromise(j.p, P_REJECTED, browserError(e)); return; }
  settlePromise(j.p, P_FULFILLED, v);
}

function browserMs(v, d) {
  if (v === undefined || v === null) return d;
  const n = Number(v);
  if (!Number.isFinite(n) || n < 0) throw new Error(`timeout ${JSON.stringify(v)}: write milliseconds (0 means the default)`);
  return n === 0 ? d : Math.min(Math.round(n), 0xffffffff);
}

function browserJson(text) { return text === undefined || text === '' ? null : JSON.parse(text); }

// k6 refuses the module outside a scenario that names a browser type.
function browserScenarioCheck() {
  const scenarios = runOptions.scenarios || {};
  const name = vuInfo().scenario;
  const s = scenarios[name];
  const type = s && s.options && s.options.browser && s.options.browser.type;
  if (!type) {
    throw new Error('browser not found in registry. make sure to set browser type option in scenario definition in order to use the browser module (options.scenarios.'
      + `${name}.options.browser.type = 'chromium')`);
  }
}

// An action of the contract: `{ tag, val }`, the tag the WIT case's name as written
// (kebab-case: `text-content`).
function act(tag, val) { return val === undefined ? { tag } : { tag, val }; }

// The element actions a locator and an element handle share, each an action of the
// contract run by the class's own `_do` (a locator finds its element at each call, a
// handle holds one): written once, put on both prototypes as class methods are (not
// enumerable).
const BROWSER_ELEMENT_ACTIONS = {
  click(opts) { return this._do(act('click'), opts); },
  dblclick(opts) { return this._do(act('dblclick'), opts); },
  hover(opts) { return this._do(act('hover'), opts); },
  tap(opts) { return this._do(act('click'), opts); },
  focus(opts) { return this._do(act('focus'), opts); },
  check(opts) { return this._do(act('check'), opts); },
  uncheck(opts) { return this._do(act('uncheck'), opts); },
  setChecked(v, opts) { return this._do(act(v ? 'check' : 'uncheck'), opts); },
  fill(value, opts) { return this._do(act('fill', String(value)), opts); },
  type(text, opts) { return this._do(act('type', String(text)), opts); },
  press(key, opts) { return this._do(act('press', String(key)), opts); },
  selectOption(values, opts) {
    const list = (Array.isArray(values) ? values : [values]).map((v) => (v && typeof v === 'object' ? String(v.value !== undefined ? v.value : v.label) : String(v)));
    return this._do(act('select-option', list), opts);
  },
  textContent(opts) { return this._do(act('text-content'), opts); },
  innerText(opts) { return this._do(act('inner-text'), opts); },
  innerHTML(opts) { return this._do(act('inner-html'), opts); },
  inputValue(opts) { return this._do(act('input-value'), opts); },
  getAttribute(name, opts) { return this._do(act('get-attribute', String(name)), opts); },
  isVisible(opts) { return this._do(act('is-visible'), opts); },
  isHidden(opts) { return this._do(act('is-hidden'), opts); },
  isEnabled(opts) { return this._do(act('is-enabled'), opts); },
  isDisabled(opts) { return this._do(act('is-enabled'), opts).then((v) => !v); },
  isChecked(opts) { return this._do(act('is-checked'), opts); },
};
function withElementActions(cls) {
  for (const name of Object.keys(BROWSER_ELEMENT_ACTIONS)) {
    Object.defineProperty(cls.prototype, name, { value: BROWSER_ELEMENT_ACTIONS[name], writable: true, configurable: true });
  }
  return cls;
}

class BrowserLocator {
  constructor(page, selector, nth) {
    this._page = page; this._selector = String(selector); this._nth = nth === undefined ? undefined : nth;
  }
  _do(action, opts) {
    const p = this._page;
    return browserNow(() => browserJson(p._h.act(this._selector, this._nth, action, browserMs(opts && opts.timeout, p._timeout))));
  }
  clear(opts) { return this._do(act('fill', ''), opts); }
  pressSequentially(text, opts) { return this.type(text, opts); }
  // A locator of each element found now.
  all() { return this.count().then((n) => Array.from({ length: n }, (_, i) => this.nth(i))); }
  // Waits for the element as a read does, then measures it (through a handle).
  boundingBox(opts) {
    const p = this._page;
    return this._do(act('text-content'), opts).then(() => browserNow(() => {
      const ids = Array.from(p._h.query(this._chain(), false));
      if (!ids.length) return null;
      try { return browserJson(p._h.handleEvaluate(ids[0], '(e) => { const r = e.getBoundingClientRect(); return { x: r.x, y: r.y, width: r.width, height: r.height }; }', 'null')); } finally { p._h.handleDispose(ids[0]); }
    }));
  }
  // Waits for the element as a read does, then asks it (through a handle).
  isEditable(opts) {
    const p = this._page;
    return this._do(act('is-enabled'), opts).then((enabled) => browserNow(() => {
      const ids = Array.from(p._h.query(this._chain(), false));
      if (!ids.length) throw new Error(`${JSON.stringify(this._selector)} matches no element`);
      try { return enabled && browserJson(p._h.handleEvaluate(ids[0], '(e) => !e.readOnly && (e.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(e.tagName))', 'null')); } finally { p._h.handleDispose(ids[0]); }
    }));
  }
  count() { return this._do(act('count'), {}); }
  // The selector of this locator as the start of a chain (` >> ` joins its parts,
  // `nth=` picks one element: host/src/browser/locate.js).
  _chain() { return this._nth === undefined ? this._selector : `${this._selector} >> nth=${this._nth}`; }
  _then(part) { return new BrowserLocator(this._page, `${this._chain()} >> ${part}`); }
  nth(i) { return new BrowserLocator(this._page, this._chain(), Number(i)); }
  first() { return this.nth(0); }
  last() { return this.nth(-1); }
  locator(selector) { return this._then(String(selector)); }
  getByRole(role, opts) { return this._then(byName('role', role, opts)); }
  getByText(text, opts) { return this._then(byName('text', text, opts)); }
  getByLabel(text, opts) { return this._then(byName('label', text, opts)); }
  getByPlaceholder(text, opts) { return this._then(byName('placeholder', text, opts)); }
  getByAltText(text, opts) { return this._then(byName('alt', text, opts)); }
  getByTitle(text, opts) { return this._then(byName('title', text, opts)); }
  getByTestId(id) { return this._then(byName('testid', id, { exact: true })); }
  filter(opts) {
    const o = opts || {};
    const text = (v) => JSON.stringify(v instanceof RegExp ? { re: v.source, flags: v.flags } : { value: String(v) });
    const inner = (l) => {
      if (!(l instanceof BrowserLocator)) throw new Error('filter({ has }) takes a locator (page.locator(...))');
      return JSON.stringify({ selector: l._chain() });
    };
    let out = this;
    if (o.hasText !== undefined) out = out._then(`internal:has-text=${text(o.hasText)}`);
    if (o.hasNotText !== undefined) out = out._then(`internal:has-not-text=${text(o.hasNotText)}`);
    if (o.has !== undefined) out = out._then(`internal:has=${inner(o.has)}`);
    if (o.hasNot !== undefined) out = out._then(`internal:has-not=${inner(o.hasNot)}`);
    return out;
  }
  frameLocator(selector) { return new BrowserFrameLocator(this._page, `${this._chain()} >> ${String(selector)}`); }
  dispatchEvent(type, eventInit, opts) {
    const p = this._page;
    return browserNow(() => { p._h.dispatchEvent(this._selector, this._nth, String(type), JSON.stringify(eventInit || {}), browserMs(opts && opts.timeout, p._timeout)); });
  }
  waitFor(opts) {
    const o = opts || {};
    const p = this._page;
    return browserNow(() => { p._h.waitForSelector(this._chain(), String(o.state || 'visible'), browserMs(o.timeout, p._timeout)); });
  }
}
withElementActions(BrowserLocator);

function byName(kind, value, opts) {
  const o = opts || {};
  return `internal:${kind}=${JSON.stringify(Object.assign({ value: value instanceof RegExp ? value.source : String(value), exact: !!o.exact }, o.name !== undefined ? { name: String(o.name) } : {}))}`;
}

class BrowserKeyboard {
  constructor(page) { this._page = page; }
  press(key) { return browserNow(() => { this._page._h.keyboardPress(String(key)); }); }
  type(text) { return browserNow(() => { this._page._h.keyboardType(String(text)); }); }
  insertText(text) { return this.type(text); }
  down(key) { return browserNow(() => { this._page._h.keyboardKey(String(key), true); }); }
  up(key) { return browserNow(() => { this._page._h.keyboardKey(String(key), false); }); }
}

// k6's page.mouse: at viewport coordinates (CSS pixels); down and up where it last
// moved to.
class BrowserMouse {
  constructor(page) { this._page = page; this._x = 0; this._y = 0; }
  _at(kind, x, y, o, clicks) {
    const opts = o || {};
    this._x = Number(x); this._y = Number(y);
    const n = clicks === undefined ? Math.max(1, Number(opts.clickCount) || 1) : clicks;
    return browserNow(() => { this._page._h.mouse(kind, this._x, this._y, String(opts.button || 'left'), n >>> 0); });
  }
  move(x, y) { return this._at('move', x, y); }
  click(x, y, o) { return this._at('click', x, y, o); }
  dblclick(x, y, o) { return this._at('click', x, y, o, 2); }
  down(o) { return this._at('down', this._x, this._y, o); }
  up(o) { return this._at('up', this._x, this._y, o); }
  // Turned where the mouse last moved to.
  wheel(deltaX, deltaY) { return browserNow(() => { this._page._h.wheel(this._x, this._y, Number(deltaX) || 0, Number(deltaY) || 0); }); }
}

class BrowserTouchscreen {
  constructor(page) { this._page = page; }
  tap(x, y) { return browserNow(() => { this._page._h.tap(Number(x), Number(y)); }); }
}

class BrowserPage {
  constructor(context, handle) {
    // Calls go through browserPageHandle (browser-events.js): routes and events.
    this._context = context; this._raw = handle; this._h = browserPageHandle(this, handle); this._url = 'about:blank';
    this._handlers = {}; this._metricHandlers = []; this._routes = []; this._listening = false;
    this._timeout = BROWSER_TIMEOUT; this._navTimeout = BROWSER_TIMEOUT;
    this.keyboard = new BrowserKeyboard(this);
    this.mouse = new BrowserMouse(this);
    this.touchscreen = new BrowserTouchscreen(this);
  }
  context() { return this._context; }
  setDefaultTimeout(ms) { this._timeout = browserMs(ms, BROWSER_TIMEOUT); }
  setDefaultNavigationTimeout(ms) { this._navTimeout = browserMs(ms, BROWSER_TIMEOUT); }
  goto(url, opts) {
    const o = opts || {};
    return browserNow(() => {
      const status = this._h.goto(String(url), String(o.waitUntil || 'load'), browserMs(o.timeout, this._navTimeout));
      this._url = this._h.url();
      if (!status) return null;
      const at = this._url;
      return { status() { return status; }, ok() { return status >= 200 && status < 300; }, url() { return at; } };
    });
  }
  reload(opts) { return this.goto(this._h.url(), opts); }
  waitForNavigation(opts) {
    const o = opts || {};
    let mark;
    try { mark = this._h.navigationMark(); } catch (e) { return LayerPromise.reject(browserError(e)); }
    return browserLater(() => {
      this._h.waitForNavigation(mark, String(o.waitUntil || 'load'), browserMs(o.timeout, this._navTimeout));
      this._url = this._h.url();
      return null;
    });
  }
  waitForLoadState(state, opts) {
    const o = opts || {};
    return browserNow(() => { this._h.waitForLoadState(String(state || 'load'), browserMs(o.timeout, this._navTimeout)); });
  }
  waitForURL(url, opts) {
    const o = opts || {};
    const want = url instanceof RegExp ? { re: url.source, flags: url.flags } : { eq: String(url) };
    const f = 'function (w) { return w.re !== undefined ? new RegExp(w.re, w.flags).test(location.href) : location.href === w.eq; }';
    return browserNow(() => { this._h.waitForFunction(f, JSON.stringify(want), 50, browserMs(o.timeout, this._navTimeout)); this._url = this._h.url(); });
  }
  waitForSelector(selector, opts) {
    const o = opts || {};
    return browserNow(() => {
      this._h.waitForSelector(String(selector), String(o.state || 'visible'), browserMs(o.timeout, this._timeout));
      return this.locator(selector);
    });
  }
  waitForFunction(fn, opts, arg) {
    const o = opts || {};
    const polling = typeof o.polling === 'number' ? o.polling : 30;
    return browserNow(() => browserJson(this._h.waitForFunction(String(fn), JSON.stringify(arg === undefined ? null : arg), polling, browserMs(o.timeout, this._timeout))));
  }
  waitForTimeout(ms) {
    const wait = Math.max(0, Math.round(Number(ms) || 0));
    // With routes, the page's requests are answered while it waits.
    if (this._routes.length) return browserNow(() => { this._h.evaluate(`() => new Promise((r) => setTimeout(r, ${wait}))`, 'null'); });
    return browserNow(() => { hostVu.sleep(wait); });
  }
  locator(selector) { return new BrowserLocator(this, selector); }
  getByRole(role, opts) { return new BrowserLocator(this, byName('role', role, opts)); }
  getByText(text, opts) { return new BrowserLocator(this, byName('text', text, opts)); }
  getByLabel(text, opts) { return new BrowserLocator(this, byName('label', text, opts)); }
  getByPlaceholder(text, opts) { return new BrowserLocator(this, byName('placeholder', text, opts)); }
  getByAltText(text, opts) { return new BrowserLocator(this, byName('alt', text, opts)); }
  getByTitle(text, opts) { return new BrowserLocator(this, byName('title', text, opts)); }
  getByTestId(id) { return new BrowserLocator(this, byName('testid', id, { exact: true })); }
  evaluate(fn, arg) {
    return browserNow(() => browserJson(this._h.evaluate(String(fn), JSON.stringify(arg === undefined ? null : arg))));
  }
  title() { return browserNow(() => this._h.title()); }
  url() { try { this._url = this._h.url(); } catch (_) { /* closed: the last one known */ } return this._url; }
  content() { return browserNow(() => this._h.content()); }
  setViewportSize(size) {
    const s = size || {};
    return browserNow(() => { this._h.setViewportSize(Number(s.width) >>> 0, Number(s.height) >>> 0); });
  }
  screenshot(opts) {
    const o = opts || {};
    if (!o.path) return LayerPromise.reject(new Error('screenshot needs a path ({ path: "screenshots/page.png" }); it is written into the run\'s results folder'));
    return browserNow(() => { this._h.screenshot(String(o.path), !!o.fullPage); return new ArrayBuffer(0); });
  }
  // Shortcuts k6 keeps on the page: the same as a locator's, on the first match.
  click(sel, opts) { return this.locator(sel).click(opts); }
  dblclick(sel, opts) { return this.locator(sel).dblclick(opts); }
  fill(sel, v, opts) { return this.locator(sel).fill(v, opts); }
  type(sel, t, opts) { return this.locator(sel).type(t, opts); }
  press(sel, k, opts) { return this.locator(sel).press(k, opts); }
  check(sel, opts) { return this.locator(sel).check(opts); }
  uncheck(sel, opts) { return this.locator(sel).uncheck(opts); }
  hover(sel, opts) { return this.locator(sel).hover(opts); }
  focus(sel, opts) { return this.locator(sel).focus(opts); }
  selectOption(sel, v, opts) { return this.locator(sel).selectOption(v, opts); }
  textContent(sel, opts) { return this.locator(sel).textContent(opts); }
  innerText(sel, opts) { return this.locator(sel).innerText(opts); }
  innerHTML(sel, opts) { return this.locator(sel).innerHTML(opts); }
  inputValue(sel, opts) { return this.locator(sel).inputValue(opts); }
  getAttribute(sel, name, opts) { return this.locator(sel).getAttribute(name, opts); }
  isVisible(sel, opts) { return this.locator(sel).isVisible(opts); }
  isHidden(sel, opts) { return this.locator(sel).isHidden(opts); }
  isEnabled(sel, opts) { return this.locator(sel).isEnabled(opts); }
  isChecked(sel, opts) { return this.locator(sel).isChecked(opts); }
  close() { return browserNow(() => { this._closed = true; this._h.close(); }); }
  isClosed() { return !!this._closed; }
  isDisabled(sel, opts) { return this.locator(sel).isDisabled(opts); }
  isEditable(sel, opts) { return this.locator(sel).isEditable(opts); }
  setChecked(sel, v, opts) { return this.locator(sel).setChecked(v, opts); }
  tap(sel, opts) { return this.locator(sel).tap(opts); }
  // The document replaced by `html` (written into it), then its load waited for.
  setContent(html, opts) {
    const o = opts || {};
    return browserNow(() => {
      this._h.evaluate('(h) => { document.open(); document.write(h); document.close(); }', JSON.stringify(String(html)));
      this._h.waitForLoadState(String(o.waitUntil || 'load'), browserMs(o.timeout, this._navTimeout));
      return null;
    });
  }
  viewportSize() { return browserJson(this._h.evaluate('() => ({ width: innerWidth, height: innerHeight })', 'null')); }
}

function browserContextOptions(o) {
  o = o || {};
  const v = o.viewport || {};
  const headers = o.extraHTTPHeaders || {};
  const str = (x) => (x === undefined || x === null ? undefined : String(x));
  return {
    viewportWidth: v.width === undefined ? undefined : Number(v.width) >>> 0,
    viewportHeight: v.height === undefined ? undefined : Number(v.height) >>> 0,
    deviceScaleFactor: o.deviceScaleFactor === undefined ? undefined : Number(o.deviceScaleFactor),
    isMobile: o.isMobile === undefined ? undefined : !!o.isMobile,
    userAgent: str(o.userAgent),
    locale: str(o.locale),
    timezoneId: str(o.timezoneID !== undefined ? o.timezoneID : o.timezoneId),
    colorScheme: str(o.colorScheme),
    extraHttpHeaders: Object.keys(headers).map((k) => [k, String(headers[k])]),
  };
}

class BrowserContext {
  constructor(handle) { this._h = handle; this._pages = []; this._closed = false; this._init = []; this._offline = false; this._timeout = undefined; this._navTimeout = undefined; }
  browser() { return k6browser; }
  // For the context's pages, those open and those opened later.
  setDefaultTimeout(ms) { this._timeout = ms; for (const p of this._pages) p.setDefaultTimeout(ms); }
  setDefaultNavigationTimeout(ms) { this._navTimeout = ms; for (const p of this._pages) p.setDefaultNavigationTimeout(ms); }
  // A new page with what the context gives every page (init scripts, offline).
  _open() {
    const page = new BrowserPage(this, this._h.newPage());
    for (const src of this._init) page._h.addInitScript(src);
    if (this._offline) page._h.setOffline(true);
    if (this._timeout !== undefined) page.setDefaultTimeout(this._timeout);
    if (this._navTimeout !== undefined) page.setDefaultNavigationTimeout(this._navTimeout);
    this._pages.push(page);
    return page;
  }
  newPage() { return browserNow(() => this._open()); }
  addInitScript(script, arg) {
    return browserNow(() => {
      const src = browserInitSource(script, arg);
      this._init.push(src);
      for (const p of this._pages) p._h.addInitScript(src);
    });
  }
  setOffline(offline) {
    return browserNow(() => {
      this._offline = !!offline;
      for (const p of this._pages) p._h.setOffline(this._offline);
    });
  }
  pages() { return this._pages.slice(); }
  addCookies(cookies) { return browserNow(() => { this._h.addCookies(JSON.stringify(cookies || [])); }); }
  cookies(...urls) { return browserNow(() => JSON.parse(this._h.cookies(urls.flat().map(String)))); }
  clearCookies() { return browserNow(() => { this._h.clearCookies(); }); }
  grantPermissions(permissions, opts) {
    const o = opts || {};
    return browserNow(() => { this._h.grantPermissions((permissions || []).map(String), o.origin === undefined ? undefined : String(o.origin)); });
  }
  clearPermissions() { return browserNow(() => { this._h.clearPermissions(); }); }
  setGeolocation(g) { return browserNow(() => { browserGeolocation(this._h, g); }); }
  close() {
    return browserNow(() => {
      if (this._closed) return;
      this._closed = true;
      if (browserState.context === this) browserState.context = null;
      this._h.close();
    });
  }
}

// The VU's context of this iteration (k6 allows one at a time).
const browserState = { context: null, iteration: -1 };

function browserCurrent() {
  // A new iteration: the host closed the last one's context.
  const it = vuInfo().iteration;
  if (browserState.iteration !== it) { browserState.iteration = it; browserState.context = null; }
  return browserState.context;
}

function browserGeolocation(h, g) {
  const p = g || {};
  if (p.latitude === undefined || p.longitude === undefined) throw new Error('geolocation needs latitude and longitude ({ latitude: 52.52, longitude: 13.4, accuracy: 10 })');
  h.setGeolocation(Number(p.latitude), Number(p.longitude), Number(p.accuracy || 0));
}

function browserNewContext(opts) {
  browserScenarioCheck();
  if (browserCurrent()) throw new Error('existing browser context must be closed before creating a new one');
  const o = opts || {};
  const h = hostBrowser.Context.open(browserContextOptions(o));
  if (o.permissions && o.permissions.length) h.grantPermissions(o.permissions.map(String), undefined);
  if (o.geolocation) browserGeolocation(h, o.geolocation);
  const ctx = new BrowserContext(h);
  ctx._offline = !!o.offline;
  browserState.context = ctx;
  return ctx;
}

const k6browser = {
  newContext(opts) { return browserNow(() => browserNewContext(opts)); },
  newPage(opts) {
    return browserNow(() => {
      const ctx = browserNewContext(opts);
      return ctx._open();
    });
  },
  context() { return browserCurrent(); },
  closeContext() { const c = browserCurrent(); return c ? c.close() : LayerPromise.resolve(); },
  isConnected() { return true; },
  version() { return 'chromium'; },
};
