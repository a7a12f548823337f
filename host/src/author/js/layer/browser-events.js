// ---------------------------------------------------------------- k6/browser: events and routes
//
// `page.on('console' | 'request' | 'response' | 'metric')` and `page.route`. The host
// keeps the page's events of the kinds listened to; after each call to the page they
// are taken and the handlers run as jobs on the VU's thread, before the script's code
// after the call's `await` (k6 runs them on its event loop). A `metric` handler runs
// when it is registered: k6's MetricMessage has only `tag()`, whose rules the host
// then applies to every later sample of the page.
//
// While a page has routes, every request it is allowed to make waits for the script:
// a call to the page that is waiting when one comes back returns `routed-requests-wait`
// (kept by the host), the handlers answer the requests (`abort`, `continue`,
// `fulfill`), and the call is resumed. A handler answers before its first `await`
// (a request it leaves unanswered is continued as it was).

const ROUTED = 'routed-requests-wait';

function browserIsRouted(e) {
  const p = e && typeof e === 'object' ? (e.payload && typeof e.payload === 'object' ? e.payload : e) : null;
  return !!p && p.tag === 'script' && p.val === ROUTED;
}

// The page's calls whose result is JSON text: a resumed call gives JSON text too, the
// others' results are parsed from it.
const BROWSER_JSON_CALLS = new Set(['act', 'evaluate', 'waitForFunction', 'handleJson', 'handleEvaluate', 'handleAct']);

// The page's handle as the layer calls it: each call resumed through the route
// handlers when the host says requests wait, and the events taken after it.
function browserPageHandle(page, raw) {
  return new Proxy(raw, {
    get(target, key) {
      const f = target[key];
      if (typeof f !== 'function') return f;
      return function (...args) { return page._call(key, f, target, args); };
    },
  });
}

function browserHeadersLower(h) {
  const out = {};
  for (const k of Object.keys(h || {})) out[k.toLowerCase()] = String(h[k]);
  return out;
}

function browserHeadersArray(h) { return Object.keys(h || {}).map((k) => ({ name: k, value: String(h[k]) })); }

class BrowserRequest {
  constructor(page, r) { this._page = page; this._r = r; }
  url() { return this._r.url; }
  method() { return this._r.method; }
  headers() { return browserHeadersLower(this._r.headers); }
  allHeaders() { return LayerPromise.resolve(this.headers()); }
  headersArray() { return LayerPromise.resolve(browserHeadersArray(this._r.headers)); }
  headerValue(name) { const v = this.headers()[String(name).toLowerCase()]; return LayerPromise.resolve(v === undefined ? null : v); }
  postData() { return this._r.postData === undefined ? null : this._r.postData; }
  postDataBuffer() { const d = this.postData(); return d === null ? null : utf8Encode(d).buffer; }
  resourceType() { return this._r.resourceType; }
  isNavigationRequest() { return !!this._r.isNavigationRequest; }
  frame() { return this._page.mainFrame(); }
  response() { return LayerPromise.resolve(null); }
  size() { return { body: this._r.postData ? this._r.postData.length : 0, headers: JSON.stringify(this._r.headers || {}).length }; }
}

class BrowserResponse {
  constructor(page, r) { this._page = page; this._r = r; this._req = new BrowserRequest(page, r.request || {}); }
  url() { return this._r.url; }
  status() { return this._r.status; }
  statusText() { return this._r.statusText; }
  ok() { return this._r.status === 0 || (this._r.status >= 200 && this._r.status <= 299); }
  headers() { return browserHeadersLower(this._r.headers); }
  allHeaders() { return LayerPromise.resolve(this.headers()); }
  headersArray() { return LayerPromise.resolve(browserHeadersArray(this._r.headers)); }
  headerValue(name) { const v = this.headers()[String(name).toLowerCase()]; return LayerPromise.resolve(v === undefined ? null : v); }
  request() { return this._req; }
  frame() { return this._page.mainFrame(); }
  fromServiceWorker() { return false; }
  serverAddr() { return LayerPromise.resolve(this._r.remoteAddress || null); }
  body() { return LayerPromise.reject(new Error('response.body() of a page event is not supported by this host (see docs/k6-compatibility.md)')); }
  text() { return this.body(); }
  json() { return this.body(); }
}

function browserConsoleMessage(page, e) {
  const args = (e.args || []).map((v) => new BrowserJSValue(v));
  return { type() { return e.type; }, text() { return e.text; }, args() { return args; }, page() { return page; } };
}

// A console argument: k6 gives a JSHandle; its value came with the event (a number is
// a number here, where k6 1.1.0's jsonValue() gives its text).
class BrowserJSValue {
  constructor(v) { this._v = v; }
  jsonValue() { return LayerPromise.resolve(this._v); }
  evaluate(fn, arg) { return browserNow(() => (typeof fn === 'function' ? fn(this._v, arg) : fn)); }
  dispose() { return LayerPromise.resolve(); }
  asElement() { return null; }
}

function browserEventJob(j) { j.handler(j.value); }

// A route's URL pattern: a RegExp, a function of the URL, or a string: a glob (`*`
// within a path segment, `**` across them, `{a,b}`) or, without those, the URL itself.
function browserRouteMatcher(url) {
  if (url instanceof RegExp) return (u) => { url.lastIndex = 0; return url.test(u); };
  if (typeof url === 'function') return (u) => !!url(u);
  const s = String(url);
  if (!/[*{]/.test(s)) return (u) => u === s;
  let re = '';
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (c === '*' && s[i + 1] === '*') { re += '.*'; i++; } else if (c === '*') re += '[^/]*';
    else if (c === '{') re += '(?:'; else if (c === '}') re += ')'; else if (c === ',' && re.lastIndexOf('(?:') > re.lastIndexOf(')')) re += '|';
    else re += c.replace(/[.+?^$()|[\]\\]/g, '\\$&');
  }
  const r = new RegExp(`^${re}$`);
  return (u) => r.test(u);
}

class BrowserRoute {
  constructor(page, r) { this._page = page; this._r = r; this._done = false; this._req = new BrowserRequest(page, r); }
  request() { return this._req; }
  _answer(how, o) {
    if (this._done) throw new Error(`route for ${this._r.url} is handled already`);
    this._done = true;
    this._page._raw.routeAnswer(this._r.id, how, JSON.stringify(o || {}));
  }
  abort(errorCode) { return browserNow(() => this._answer('abort', { errorCode: errorCode === undefined ? '' : String(errorCode) })); }
  continue(opts) {
    const o = opts || {};
    return browserNow(() => this._answer('continue', {
      url: o.url === undefined ? undefined : String(o.url),
      method: o.method === undefined ? undefined : String(o.method),
      headers: o.headers === undefined ? undefined : Object.fromEntries(Object.keys(o.headers).map((k) => [k, String(o.headers[k])])),
      postData: o.postData === undefined ? undefined : String(o.postData),
    }));
  }
  fulfill(opts) {
    const o = opts || {};
    let body = o.body;
    if (body instanceof ArrayBuffer) body = utf8Decode(new Uint8Array(body));
    else if (ArrayBuffer.isView(body)) body = utf8Decode(new Uint8Array(body.buffer, body.byteOffset, body.byteLength));
    else if (body === undefined && o.json !== undefined) body = JSON.stringify(o.json);
    const headers = Object.assign({}, o.headers || {});
    const contentType = o.contentType !== undefined ? String(o.contentType) : (o.json !== undefined ? 'application/json' : undefined);
    if (o.path !== undefined) return LayerPromise.reject(new Error('route.fulfill({ path }) reads a file, which browser tests may not: give the body'));
    return browserNow(() => this._answer('fulfill', {
      status: o.status === undefined ? 200 : Number(o.status), headers: Object.fromEntries(Object.keys(headers).map((k) => [k, String(headers[k])])),
      contentType, body: body === undefined || body === null ? '' : String(body),
    }));
  }
}

// What BrowserPage gains for events and routes (mixed in by browser.js's constructor).
const browserPageEvents = {
  // A call to the page: through the route handlers while requests wait, then the
  // events taken.
  _call(key, f, target, args) {
    let r;
    try {
      try {
        r = f.apply(target, args);
      } catch (e) {
        if (!browserIsRouted(e)) throw e;
        r = this._routeLoop(BROWSER_JSON_CALLS.has(key));
      }
    } finally {
      if (this._listening) this._takeEvents();
    }
    return r;
  },
  _routeLoop(json) {
    for (;;) {
      this._runRoutes();
      let text;
      try { text = this._raw.resume(); } catch (e) { if (!browserIsRouted(e)) throw e; continue; }
      return json ? text : JSON.parse(text);
    }
  },
  _runRoutes() {
    const list = JSON.parse(this._raw.routed());
    let failure = null;
    for (const r of list) {
      const route = new BrowserRoute(this, r);
      for (let i = this._routes.length - 1; i >= 0; i--) {
        const rt = this._routes[i];
        let hit = false;
        try { hit = rt.match(r.url); } catch (e) { failure = failure || e; }
        if (!hit) continue;
        try { rt.handler(route, route.request()); } catch (e) { failure = failure || e; }
        break;
      }
      if (!route._done) route._answer('continue', {});
    }
    if (failure) {
      // The call waiting for these routes is not resumed: the host drops it.
      this._raw.setRouting(false);
      if (this._routes.length) this._raw.setRouting(true);
      throw failure;
    }
  },
  _takeEvents() {
    const taken = JSON.parse(this._raw.takeEvents());
    if (taken.dropped) console.warn(`page.on: ${taken.dropped} events were dropped (more than 1024 came between two calls to the page)`);
    for (const e of taken.events) {
      const handlers = this._handlers[e.event];
      if (!handlers || !handlers.length) continue;
      const value = e.event === 'console' ? browserConsoleMessage(this, e)
        : e.event === 'request' ? new BrowserRequest(this, e) : new BrowserResponse(this, e);
      asyncSeen = true;
      for (const handler of handlers) microtasks.push(browserEventJob, { handler, value });
    }
  },
  on(event, handler) {
    const name = String(event);
    if (typeof handler !== 'function') throw new Error(`page.on('${name}', handler): the handler must be a function`);
    if (name === 'metric') {
      this._metricHandlers.push(handler);
      const rules = [];
      const message = {
        tag(m) {
          const o = m || {};
          if (!o.name) throw new Error('metric.tag: name is required and must not be empty');
          if (!Array.isArray(o.matches)) throw new Error('metric.tag: matches must be an array of { url: /regexp/, method }');
          rules.push({
            name: String(o.name),
            matches: o.matches.map((x) => ({
              url: x.url instanceof RegExp ? { source: x.url.source, flags: x.url.flags } : String(x.url),
              method: x.method === undefined ? undefined : String(x.method),
            })),
          });
        },
      };
      for (const h of this._metricHandlers) h(message);
      try { this._raw.tagMetrics(JSON.stringify(rules)); } catch (e) { throw browserError(e); }
      return;
    }
    if (!['console', 'request', 'response'].includes(name)) {
      throw new Error(`page.on('${name}'): this host emits console, request, response and metric (see docs/k6-compatibility.md)`);
    }
    (this._handlers[name] || (this._handlers[name] = [])).push(handler);
    try { this._raw.listen(Object.keys(this._handlers)); } catch (e) { throw browserError(e); }
    this._listening = true;
  },
  route(url, handler) {
    return browserNow(() => {
      if (typeof handler !== 'function') throw new Error('page.route(url, handler): the handler must be a function ((route) => route.continue())');
      this._routes.push({ url, match: browserRouteMatcher(url), handler });
      this._raw.setRouting(true);
    });
  },
  unroute(url, handler) {
    return browserNow(() => {
      const same = (a, b) => a === b || (a instanceof RegExp && b instanceof RegExp && String(a) === String(b));
      this._routes = this._routes.filter((r) => !(same(r.url, url) && (handler === undefined || r.handler === handler)));
      if (!this._routes.length) this._raw.setRouting(false);
    });
  },
  unrouteAll() { return browserNow(() => { this._routes = []; this._raw.setRouting(false); }); },
};
