// ---------------------------------------------------------------- k6/browser: handles and frames
//
// `evaluateHandle` (JSHandle), `page.$`/`$$` (ElementHandle): the value stays in the
// page, the script holds the host's number of it. Frames: `page.frames()`,
// `mainFrame()`, `frameLocator(selector)`, a frame's `locator()`; the host's element
// search enters same-origin iframes (host/src/browser/locate.js), so a frame's
// locator is a page locator whose chain starts in that frame.

function browserArg(arg) { return JSON.stringify(arg === undefined ? null : arg); }

class BrowserJSHandle {
  constructor(page, id) { this._page = page; this._id = id; }
  jsonValue() { return browserNow(() => browserJson(this._page._h.handleJson(this._id))); }
  evaluate(fn, arg) { return browserNow(() => browserJson(this._page._h.handleEvaluate(this._id, String(fn), browserArg(arg)))); }
  evaluateHandle(fn, arg) { return browserNow(() => new BrowserJSHandle(this._page, this._page._h.handleEvaluateHandle(this._id, String(fn), browserArg(arg)))); }
  dispose() { return browserNow(() => { this._page._h.handleDispose(this._id); }); }
  // An element's handle acts as one; another value fails when acted on.
  asElement() { return new BrowserElementHandle(this._page, this._id); }
}

class BrowserElementHandle extends BrowserJSHandle {
  _do(action, opts) {
    const p = this._page;
    return browserNow(() => browserJson(p._h.handleAct(this._id, action, browserMs(opts && opts.timeout, p._timeout))));
  }
  asElement() { return this; }
  // Elements under this one (CSS selectors, found now).
  $(selector) {
    const h = this._page._h;
    return browserNow(() => {
      const id = h.handleEvaluateHandle(this._id, '(e, s) => e.querySelector(s)', browserArg(String(selector)));
      if (browserJson(h.handleJson(id)) === null) { h.handleDispose(id); return null; }
      return new BrowserElementHandle(this._page, id);
    });
  }
  $$(selector) {
    const h = this._page._h;
    return browserNow(() => {
      const n = browserJson(h.handleEvaluate(this._id, '(e, s) => e.querySelectorAll(s).length', browserArg(String(selector))));
      const out = [];
      for (let i = 0; i < n; i++) {
        out.push(new BrowserElementHandle(this._page, h.handleEvaluateHandle(this._id, '(e, a) => e.querySelectorAll(a.s)[a.i]', browserArg({ s: String(selector), i }))));
      }
      return out;
    });
  }
  boundingBox() {
    return this.evaluate('(e) => { const r = e.getBoundingClientRect(); return { x: r.x, y: r.y, width: r.width, height: r.height }; }');
  }
  dispatchEvent(type, eventInit) {
    return this.evaluate('(e, a) => { e.dispatchEvent(new CustomEvent(a.type, Object.assign({ bubbles: true, cancelable: true, composed: true }, a.init))); }',
      { type: String(type), init: eventInit || {} });
  }
}
withElementActions(BrowserElementHandle);

// Where a frame's search starts: `internal:frame-path=[i, j]` (window.frames[i].frames[j]).
function browserFramePrefix(path) { return path.length ? `internal:frame-path=${JSON.stringify(path)} >> ` : ''; }

// The page's frames, in document order, from the page itself (same-origin frames
// tell their URL and name; another origin's are listed with neither).
const BROWSER_FRAMES = "() => { const out = []; (function walk(w, path, parent) { let url = '', name = ''; try { url = w.location.href; name = w.name; } catch (e) {} out.push({ url, name, path, parent }); for (let i = 0; i < w.frames.length && out.length < 256; i++) walk(w.frames[i], path.concat(i), path); })(window, [], null); return out; }";

class BrowserFrame {
  constructor(page, info) { this._page = page; this._info = info; }
  _p() { return browserFramePrefix(this._info.path); }
  page() { return this._page; }
  url() { return this._info.path.length ? this._info.url : this._page.url(); }
  name() { return this._info.name; }
  isDetached() { return false; }
  parentFrame() {
    const parent = this._info.parent;
    if (parent === null) return null;
    return this._page.frames().find((f) => JSON.stringify(f._info.path) === JSON.stringify(parent)) || null;
  }
  childFrames() {
    const me = JSON.stringify(this._info.path);
    return this._page.frames().filter((f) => f._info.parent !== null && JSON.stringify(f._info.parent) === me);
  }
  locator(selector) { return new BrowserLocator(this._page, this._p() + String(selector)); }
  getByRole(role, opts) { return new BrowserLocator(this._page, this._p() + byName('role', role, opts)); }
  getByText(text, opts) { return new BrowserLocator(this._page, this._p() + byName('text', text, opts)); }
  getByLabel(text, opts) { return new BrowserLocator(this._page, this._p() + byName('label', text, opts)); }
  getByPlaceholder(text, opts) { return new BrowserLocator(this._page, this._p() + byName('placeholder', text, opts)); }
  getByAltText(text, opts) { return new BrowserLocator(this._page, this._p() + byName('alt', text, opts)); }
  getByTitle(text, opts) { return new BrowserLocator(this._page, this._p() + byName('title', text, opts)); }
  getByTestId(id) { return new BrowserLocator(this._page, this._p() + byName('testid', id, { exact: true })); }
  frameLocator(selector) { return new BrowserFrameLocator(this._page, this._p() + String(selector)); }
  // Evaluated inside the frame (its own window), as k6's frame.evaluate.
  evaluate(fn, arg) {
    const path = JSON.stringify(this._info.path);
    const src = JSON.stringify(String(fn));
    const inFrame = `(a) => { let w = window; for (const i of ${path}) w = w.frames[i]; const f = w.eval('(' + ${src} + ')'); return typeof f === 'function' ? f(a) : f; }`;
    return browserNow(() => browserJson(this._page._h.evaluate(inFrame, browserArg(arg))));
  }
  title() { return this.evaluate('() => document.title'); }
  content() { return this.evaluate("() => (document.doctype ? new XMLSerializer().serializeToString(document.doctype) : '') + document.documentElement.outerHTML"); }
  waitForSelector(selector, opts) { return this._page.waitForSelector(this._p() + String(selector), opts); }
  click(sel, opts) { return this.locator(sel).click(opts); }
  fill(sel, v, opts) { return this.locator(sel).fill(v, opts); }
  type(sel, t, opts) { return this.locator(sel).type(t, opts); }
  check(sel, opts) { return this.locator(sel).check(opts); }
  textContent(sel, opts) { return this.locator(sel).textContent(opts); }
  innerText(sel, opts) { return this.locator(sel).innerText(opts); }
  getAttribute(sel, name, opts) { return this.locator(sel).getAttribute(name, opts); }
  inputValue(sel, opts) { return this.locator(sel).inputValue(opts); }
  isVisible(sel, opts) { return this.locator(sel).isVisible(opts); }
}

// The elements inside the iframe(s) `selector` finds (k6's frameLocator).
class BrowserFrameLocator {
  constructor(page, selector) { this._page = page; this._sel = selector; }
  _in() { return `${this._sel} >> internal:control=enter-frame >> `; }
  locator(selector) { return new BrowserLocator(this._page, this._in() + String(selector)); }
  getByRole(role, opts) { return new BrowserLocator(this._page, this._in() + byName('role', role, opts)); }
  getByText(text, opts) { return new BrowserLocator(this._page, this._in() + byName('text', text, opts)); }
  getByLabel(text, opts) { return new BrowserLocator(this._page, this._in() + byName('label', text, opts)); }
  getByPlaceholder(text, opts) { return new BrowserLocator(this._page, this._in() + byName('placeholder', text, opts)); }
  getByAltText(text, opts) { return new BrowserLocator(this._page, this._in() + byName('alt', text, opts)); }
  getByTitle(text, opts) { return new BrowserLocator(this._page, this._in() + byName('title', text, opts)); }
  getByTestId(id) { return new BrowserLocator(this._page, this._in() + byName('testid', id, { exact: true })); }
  frameLocator(selector) { return new BrowserFrameLocator(this._page, this._in() + String(selector)); }
  nth(i) { return new BrowserFrameLocator(this._page, `${this._sel} >> nth=${Number(i)}`); }
  first() { return this.nth(0); }
  last() { return this.nth(-1); }
}

// What BrowserPage gains for handles, frames and emulation (mixed in by browser.js).
const browserPageHandles = {
  evaluateHandle(fn, arg) { return browserNow(() => new BrowserJSHandle(this, this._h.evaluateHandle(String(fn), browserArg(arg)))); },
  $(selector) {
    return browserNow(() => {
      const ids = Array.from(this._h.query(String(selector), false));
      return ids.length ? new BrowserElementHandle(this, ids[0]) : null;
    });
  },
  $$(selector) { return browserNow(() => Array.from(this._h.query(String(selector), true)).map((id) => new BrowserElementHandle(this, id))); },
  frames() { return JSON.parse(this._h.evaluate(BROWSER_FRAMES, 'null')).map((f) => new BrowserFrame(this, f)); },
  mainFrame() { return new BrowserFrame(this, { path: [], url: '', name: '', parent: null }); },
  frameLocator(selector) { return new BrowserFrameLocator(this, String(selector)); },
  dispatchEvent(selector, type, eventInit, opts) { return this.locator(selector).dispatchEvent(type, eventInit, opts); },
  setExtraHTTPHeaders(headers) {
    const h = headers || {};
    return browserNow(() => { this._h.setExtraHttpHeaders(Object.keys(h).map((k) => [k, String(h[k])])); });
  },
  emulateMedia(opts) {
    const o = opts || {};
    const opt = (v) => (v === undefined || v === null ? undefined : String(v));
    return browserNow(() => { this._h.emulateMedia(opt(o.media), opt(o.colorScheme), opt(o.reducedMotion)); });
  },
  addInitScript(script, arg) { return browserNow(() => { this._h.addInitScript(browserInitSource(script, arg)); }); },
};

// An init script as source: a function (called with `arg`), its source, or { content }.
function browserInitSource(script, arg) {
  if (typeof script === 'function') return `(${String(script)})(${browserArg(arg)});`;
  if (script && typeof script === 'object') {
    if (script.path !== undefined) throw new Error('addInitScript({ path }) reads a file, which browser tests may not: give { content } or a function');
    return String(script.content || '');
  }
  return String(script);
}

// The page's methods of this file and browser-events.js (declared after BrowserPage).
Object.assign(BrowserPage.prototype, browserPageEvents, browserPageHandles);
