// The k6 API inside a JavaScript plugin (QuickJS), over the host's imports.
//
// `host build script.js` appends the user's bundle to this file (a table of module
// functions, see bundle.rs) and evaluates both once under Wizer: the compiled code is in
// the snapshot, shared by every VU. Nothing of the user's runs at build time: each
// instance runs the init code of the modules on its first call (describe, setup, init or
// teardown), with its own __ENV and __VU, as k6 runs init code once per VU.
import hostHttp from 'loadtest:scenario/http@0.3.2';
import hostCookies from 'loadtest:scenario/cookies@0.3.2';
import hostMetrics from 'loadtest:scenario/metrics@0.3.2';
import hostVu from 'loadtest:scenario/vu@0.3.2';

// ---------------------------------------------------------------- text and bytes

function utf8Encode(s) {
  s = String(s);
  let ascii = true;
  for (let i = 0; i < s.length; i++) {
    if (s.charCodeAt(i) > 0x7f) { ascii = false; break; }
  }
  if (ascii) {
    const out = new Uint8Array(s.length);
    for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
    return out;
  }
  const bytes = [];
  for (let i = 0; i < s.length; i++) {
    let c = s.charCodeAt(i);
    if (c >= 0xd800 && c < 0xdc00 && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d < 0xe000) { c = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00); i++; }
    }
    if (c < 0x80) bytes.push(c);
    else if (c < 0x800) bytes.push(0xc0 | (c >> 6), 0x80 | (c & 63));
    else if (c < 0x10000) bytes.push(0xe0 | (c >> 12), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
    else bytes.push(0xf0 | (c >> 18), 0x80 | ((c >> 12) & 63), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
  }
  return new Uint8Array(bytes);
}

function utf8Decode(b) {
  let out = '';
  const CHUNK = 8192;
  let i = 0;
  while (i < b.length) {
    // Runs of ASCII go through fromCharCode in chunks.
    let j = i;
    while (j < b.length && j - i < CHUNK && b[j] < 0x80) j++;
    if (j > i) { out += String.fromCharCode.apply(null, b.subarray(i, j)); i = j; continue; }
    const c = b[i];
    let cp, n;
    if (c >= 0xf0) { cp = c & 7; n = 3; } else if (c >= 0xe0) { cp = c & 15; n = 2; } else if (c >= 0xc0) { cp = c & 31; n = 1; } else { out += '\ufffd'; i++; continue; }
    if (i + n >= b.length) { out += '\ufffd'; i++; continue; }
    for (let k = 1; k <= n; k++) cp = (cp << 6) | (b[i + k] & 63);
    i += n + 1;
    out += String.fromCodePoint(cp);
  }
  return out;
}

function toBytes(body) {
  if (body === null || body === undefined) return null;
  if (body instanceof Uint8Array) return body;
  if (body instanceof ArrayBuffer) return new Uint8Array(body);
  if (ArrayBuffer.isView(body)) return new Uint8Array(body.buffer, body.byteOffset, body.byteLength);
  return utf8Encode(body);
}

const B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
const B64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

function b64encode(input, encoding) {
  const bytes = typeof input === 'string' ? utf8Encode(input) : toBytes(input);
  const url = encoding === 'url' || encoding === 'rawurl';
  const raw = encoding === 'rawstd' || encoding === 'rawurl';
  const abc = url ? B64URL : B64;
  let out = '';
  for (let i = 0; i < bytes.length; i += 3) {
    const n = (bytes[i] << 16) | ((bytes[i + 1] || 0) << 8) | (bytes[i + 2] || 0);
    out += abc[(n >> 18) & 63] + abc[(n >> 12) & 63];
    out += i + 1 < bytes.length ? abc[(n >> 6) & 63] : (raw ? '' : '=');
    out += i + 2 < bytes.length ? abc[n & 63] : (raw ? '' : '=');
  }
  return out;
}

function b64decodeBytes(s) {
  s = String(s).replace(/[=\s]/g, '').replace(/-/g, '+').replace(/_/g, '/');
  const out = [];
  let bits = 0, acc = 0;
  for (let i = 0; i < s.length; i++) {
    const v = B64.indexOf(s[i]);
    if (v < 0) throw new Error(`b64decode: invalid character ${JSON.stringify(s[i])}`);
    acc = (acc << 6) | v; bits += 6;
    if (bits >= 8) { bits -= 8; out.push((acc >> bits) & 255); }
  }
  return new Uint8Array(out);
}

function b64decode(s, encoding, format) {
  const bytes = b64decodeBytes(s);
  return format === 's' ? utf8Decode(bytes) : bytes.buffer;
}

// ---------------------------------------------------------------- the VU's state

let info = null; // vu.info() of the current call, asked for once
function vuInfo() {
  if (info === null) info = hostVu.info();
  return info;
}

let groupPath = ''; // "::a::b" inside group("a", () => group("b", ...))
const vuTags = {}; // exec.vu.tags: added to every sample of the VU

function tagList(extra) {
  const list = [];
  for (const k in vuTags) list.push([k, String(vuTags[k])]);
  if (groupPath) list.push(['group', groupPath]);
  if (extra) for (const k in extra) list.push([k, String(extra[k])]);
  return list;
}

function format(v) {
  if (typeof v === 'string') return v;
  if (v instanceof Error) return v.stack ? `${v}\n${v.stack}` : String(v);
  try { const j = JSON.stringify(v); return j === undefined ? String(v) : j; } catch (_) { return String(v); }
}

const consoleLine = (level) => (...args) => hostVu.log(level, args.map(format).join(' '));
globalThis.console = {
  log: consoleLine('info'), info: consoleLine('info'), warn: consoleLine('warn'),
  error: consoleLine('error'), debug: consoleLine('debug'), trace: consoleLine('trace'),
};

globalThis.__ENV = new Proxy({}, {
  get(_, name) { if (typeof name !== 'string') return undefined; const v = hostVu.env(name); return v === null ? undefined : v; },
  has(_, name) { return typeof name === 'string' && hostVu.env(name) !== null; },
  set() { throw new TypeError('__ENV is read-only here: set variables with -e NAME=VALUE or [env]'); },
});
Object.defineProperty(globalThis, '__VU', { get() { return phase === 'setup' ? 0 : vuInfo().vuId; } });
Object.defineProperty(globalThis, '__ITER', { get() { return vuInfo().iteration; } });

// ---------------------------------------------------------------- k6

class Abort extends Error {}

function check(val, sets, tags) {
  let all = true;
  const list = tagList(tags);
  for (const name in sets) {
    const c = sets[name];
    const ok = !!(typeof c === 'function' ? c(val) : c);
    hostMetrics.check(name, ok, list);
    if (!ok) all = false;
  }
  return all;
}

function group(name, fn) {
  const outer = groupPath;
  groupPath = `${outer}::${name}`;
  const started = Date.now();
  try {
    return fn();
  } finally {
    hostMetrics.add('group_duration', 'trend', Date.now() - started, tagList());
    groupPath = outer;
  }
}

function sleep(s) {
  const ms = Math.round(Number(s) * 1000);
  if (ms > 0) hostVu.sleep(ms);
}

function fail(msg) { throw new Error(msg === undefined ? 'fail() called' : String(msg)); }

// Math.random is a xorshift128 of the layer's: QuickJS's own generator was seeded
// once, under Wizer at build time, so its state sat in the snapshot and every VU of
// every run drew the same sequence (a script picking a random user picked the same
// one in each VU). Each instance seeds its own on its first call (`freshRandom`).
const rng = new Uint32Array(4);
function step() {
  // Marsaglia's xorshift128: a period of 2^128 - 1, in 32-bit operations only.
  let t = rng[3];
  const s = rng[0];
  rng[3] = rng[2]; rng[2] = rng[1]; rng[1] = s;
  t ^= t << 11; t ^= t >>> 8;
  rng[0] = t ^ s ^ (s >>> 19);
  return rng[0];
}
// 53 random bits in [0, 1), as Math.random gives.
function nextRandom() { return ((step() >>> 5) * 67108864 + (step() >>> 6)) / 9007199254740992; }
function seedRandom(words) {
  // splitmix32 spreads the seed's words over the four of the state.
  let x = 0x9e3779b9;
  for (let i = 0; i < 4; i++) {
    x = (x + (words[i % words.length] >>> 0) + 0x9e3779b9) >>> 0;
    let z = x;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
    rng[i] = (z ^ (z >>> 16)) >>> 0;
  }
  if (rng[0] === 0 && rng[1] === 0 && rng[2] === 0 && rng[3] === 0) rng[0] = 1;
  Math.random = nextRandom;
}
function freshRandom(vuId) {
  // The wall clock (ms, and the monotonic clock's fraction) and the VU's id: two VUs
  // starting in the same millisecond still differ, and so do two runs.
  const now = Date.now();
  const fine = Math.floor((performance.now() % 1) * 4294967296);
  seedRandom([now >>> 0, Math.floor(now / 4294967296), fine, vuId]);
}

function randomSeed(n) {
  // A seeded generator replaces Math.random for the VU, as k6's randomSeed does: the
  // same seed gives the same sequence.
  seedRandom([Number(n) >>> 0]);
}

const k6 = { check, group, sleep, fail, randomSeed };

// ---------------------------------------------------------------- k6/metrics

class Metric {
  constructor(name, kind, isTime) {
    if (typeof name !== 'string' || !/^[A-Za-z_][A-Za-z0-9_]{0,127}$/.test(name)) {
      throw new Error(`invalid metric name ${JSON.stringify(name)}: letters, digits and _ (k6's rule)`);
    }
    this.name = name; this.kind = kind; this.isTime = !!isTime;
  }
  add(value, tags) {
    let v;
    if (this.kind === 'rate') v = value ? 1 : 0;
    else v = typeof value === 'boolean' ? (value ? 1 : 0) : Number(value);
    if (Number.isNaN(v)) throw new Error(`${this.name}.add: ${JSON.stringify(value)} is not a number`);
    hostMetrics.add(this.name, this.kind, v, tagList(tags));
    return true;
  }
}
class Counter extends Metric { constructor(name, isTime) { super(name, 'counter', isTime); } }
class Gauge extends Metric { constructor(name, isTime) { super(name, 'gauge', isTime); } }
class Rate extends Metric { constructor(name, isTime) { super(name, 'rate', isTime); } }
class Trend extends Metric { constructor(name, isTime) { super(name, 'trend', isTime); } }
const k6metrics = { Counter, Gauge, Rate, Trend };

// ---------------------------------------------------------------- k6/http

function canonicalHeader(name) {
  return name.replace(/(^|-)([a-z])/g, (_, d, c) => d + c.toUpperCase());
}

function parseDuration(v, what) {
  if (v === undefined || v === null) return null;
  if (typeof v === 'number') return Math.round(v);
  const m = /^\s*([0-9.]+)\s*(ms|s|m|h|us|µs)?\s*$/.exec(String(v));
  if (!m) throw new Error(`${what}: ${JSON.stringify(v)} is not a duration (e.g. "10s", 500)`);
  const n = Number(m[1]);
  const unit = { ms: 1, s: 1000, m: 60000, h: 3600000, us: 0.001, 'µs': 0.001 }[m[2] || 'ms'];
  return Math.round(n * unit);
}

function formEncode(obj) {
  const parts = [];
  for (const k in obj) {
    const v = obj[k];
    const vals = Array.isArray(v) ? v : [v];
    for (const x of vals) parts.push(`${encodeURIComponent(k)}=${encodeURIComponent(x === null || x === undefined ? '' : String(x))}`);
  }
  return parts.join('&');
}

let defaultExpected = null; // setResponseCallback(...)

function expectedStatuses(...args) {
  const ranges = [];
  for (const a of args) {
    if (typeof a === 'number') ranges.push({ min: a, max: a });
    else if (a && typeof a === 'object' && 'min' in a && 'max' in a) ranges.push({ min: a.min, max: a.max });
    else throw new Error(`expectedStatuses: ${JSON.stringify(a)} is neither a status nor {min, max}`);
  }
  return { __expected: ranges };
}

function setResponseCallback(cb) {
  if (cb !== null && cb !== undefined && !(cb && cb.__expected)) {
    throw new Error('setResponseCallback takes http.expectedStatuses(...) (or null)');
  }
  defaultExpected = cb || null;
}

const ERROR_CODES = { denied: 1000, invalid: 1020, connect: 1212, timeout: 1050, tls: 1300, protocol: 1600, bodyTooLarge: 1501 };

function buildRequest(method, url, body, params) {
  params = params || {};
  method = String(method).toUpperCase();
  let urlName = null;
  if (url && typeof url === 'object' && url.url) { urlName = url.name; url = url.url; } // http.url`...`
  url = String(url);
  const headers = [];
  let hasType = false;
  const h = params.headers || {};
  for (const k in h) {
    if (h[k] === undefined || h[k] === null) continue;
    if (k.toLowerCase() === 'content-type') hasType = true;
    headers.push([k, String(h[k])]);
  }
  if (params.cookies) {
    const pairs = [];
    for (const k in params.cookies) {
      const c = params.cookies[k];
      pairs.push(`${k}=${c && typeof c === 'object' ? c.value : c}`);
    }
    if (pairs.length) headers.push(['Cookie', pairs.join('; ')]);
  }
  let bytes = null;
  if (body !== null && body !== undefined) {
    if (typeof body === 'object' && !(body instanceof ArrayBuffer) && !ArrayBuffer.isView(body)) {
      bytes = utf8Encode(formEncode(body));
      if (!hasType) headers.push(['Content-Type', 'application/x-www-form-urlencoded']);
    } else {
      bytes = toBytes(body);
    }
  }
  const tags = [];
  for (const k in vuTags) tags.push([k, String(vuTags[k])]);
  if (groupPath) tags.push(['group', groupPath]);
  const t = params.tags || {};
  for (const k in t) tags.push([k, String(t[k])]);
  if (urlName !== null && !('name' in t)) tags.push(['name', urlName]);
  const cb = params.responseCallback !== undefined ? params.responseCallback : defaultExpected;
  const responseType = params.responseType || 'text';
  return {
    method, url, headers, body: bytes,
    options: {
      timeoutMs: parseDuration(params.timeout, 'params.timeout'),
      tags,
      discardBody: responseType === 'none',
      expectedStatuses: cb && cb.__expected ? cb.__expected : null,
      redirects: params.redirects === undefined || params.redirects === null ? null : Number(params.redirects),
      noCookieJar: false,
    },
    responseType,
  };
}

// Response contents held on the host, released when the call that made them returns
// (a response kept past its iteration keeps what was read of it).
const held = [];
function releaseContents() {
  for (const r of held) {
    const c = r._content;
    r._content = null;
    if (c) c[Symbol.dispose]();
  }
  held.length = 0;
}

class Response {
  constructor(req, res, err) {
    this.request = { method: req.method, url: req.url, headers: Object.fromEntries(req.headers), body: req.body ? utf8Decode(req.body) : '' };
    this._type = req.responseType;
    if (err) {
      this.status = 0; this.url = req.url; this._content = null;
      this.error = typeof err === 'object' && err.tag ? `${err.tag}: ${err.val}` : String(err);
      this.error_code = typeof err === 'object' && err.tag ? (ERROR_CODES[err.tag] || 1000) : 1000;
      this.timings = { blocked: 0, connecting: 0, tls_handshaking: 0, sending: 0, waiting: 0, receiving: 0, duration: 0 };
    } else {
      this.status = res.status; this.url = res.url; this._content = res.content;
      held.push(this);
      this.error = ''; this.error_code = 0;
      const t = res.timings;
      this.timings = {
        blocked: t.blockedUs / 1000, connecting: t.connectingUs / 1000, tls_handshaking: t.tlsHandshakingUs / 1000,
        sending: t.sendingUs / 1000, waiting: t.waitingUs / 1000, receiving: t.receivingUs / 1000, duration: t.durationUs / 1000,
      };
      if (res.status >= 400 && !this.error_code) { this.error_code = 1000 + res.status; }
    }
  }
  get headers() {
    const out = {};
    if (this._content) {
      for (const [k, v] of this._content.headers()) {
        const name = canonicalHeader(k);
        out[name] = name in out ? `${out[name]}, ${v}` : v;
      }
    }
    Object.defineProperty(this, 'headers', { value: out, writable: true, enumerable: true });
    return out;
  }
  get body() {
    let b = null;
    if (this._content && this._type !== 'none') {
      const bytes = this._content.body();
      b = this._type === 'binary' ? bytes.buffer : utf8Decode(bytes);
    }
    Object.defineProperty(this, 'body', { value: b, writable: true, enumerable: true });
    return b;
  }
  get cookies() {
    const out = {};
    if (this._content) {
      for (const [k, v] of this._content.headers()) {
        if (k !== 'set-cookie') continue;
        const [pair] = v.split(';');
        const eq = pair.indexOf('=');
        if (eq < 0) continue;
        const name = pair.slice(0, eq).trim();
        (out[name] = out[name] || []).push({ name, value: pair.slice(eq + 1).trim() });
      }
    }
    return out;
  }
  json(selector) {
    if (typeof this.body !== 'string') throw new Error(`json(): the response has no text body (responseType ${this._type})`);
    let v = JSON.parse(this.body);
    if (selector === undefined || selector === null || selector === '') return v;
    for (const part of String(selector).split('.')) {
      if (v === null || v === undefined) return undefined;
      if (part === '#' && Array.isArray(v)) { v = v.length; continue; }
      v = v[part];
    }
    return v;
  }
  html() { throw new Error('response.html() is not supported yet (docs/k6-compatibility.md)'); }
  submitForm() { throw new Error('response.submitForm() is not supported yet (docs/k6-compatibility.md)'); }
  clickLink() { throw new Error('response.clickLink() is not supported yet (docs/k6-compatibility.md)'); }
}

function request(method, url, body, params) {
  const req = buildRequest(method, url, body, params);
  let res;
  try {
    res = hostHttp.send(req);
  } catch (e) {
    return new Response(req, null, e);
  }
  return new Response(req, res, null);
}

function batch(reqs) {
  const keys = Array.isArray(reqs) ? null : Object.keys(reqs);
  const items = keys ? keys.map((k) => reqs[k]) : reqs;
  const built = items.map((r) => {
    if (typeof r === 'string') return buildRequest('GET', r, null, null);
    if (Array.isArray(r)) return buildRequest(r[0], r[1], r[2], r[3]);
    return buildRequest(r.method || 'GET', r.url, r.body, r.params);
  });
  const results = hostHttp.sendBatch(built);
  const out = results.map((r, i) => (r.tag === 'ok' ? new Response(built[i], r.val, null) : new Response(built[i], null, r.val)));
  if (!keys) return out;
  const obj = {};
  keys.forEach((k, i) => { obj[k] = out[i]; });
  return obj;
}

class CookieJar {
  cookiesForURL(url) {
    const out = {};
    for (const [k, v] of hostCookies.cookiesFor(String(url))) (out[k] = out[k] || []).push(v);
    return out;
  }
  set(url, name, value, opts) {
    opts = opts || {};
    hostCookies.set(String(url), String(name), String(value), {
      domain: opts.domain || null, path: opts.path || null,
      maxAgeS: opts.max_age !== undefined ? Number(opts.max_age) : null,
      secure: !!opts.secure, httpOnly: !!opts.http_only,
    });
  }
  clear(url) { hostCookies.clear(String(url)); }
  delete(url, name) { hostCookies.delete(String(url), String(name)); }
}
const jar = new CookieJar();

function url(strings, ...values) {
  let u = '';
  strings.forEach((s, i) => { u += s; if (i < values.length) u += '${}'; });
  let full = '';
  strings.forEach((s, i) => { full += s; if (i < values.length) full += values[i]; });
  return { url: full, name: u };
}

const k6http = {
  request,
  get: (u, params) => request('GET', u, null, params),
  head: (u, params) => request('HEAD', u, null, params),
  post: (u, body, params) => request('POST', u, body, params),
  put: (u, body, params) => request('PUT', u, body, params),
  patch: (u, body, params) => request('PATCH', u, body, params),
  del: (u, body, params) => request('DELETE', u, body, params),
  options: (u, body, params) => request('OPTIONS', u, body, params),
  batch,
  expectedStatuses,
  setResponseCallback,
  cookieJar: () => jar,
  CookieJar,
  url,
  file() { throw new Error('http.file() is not supported yet (docs/k6-compatibility.md)'); },
};

// ---------------------------------------------------------------- k6/execution

const execution = {
  vu: {
    get idInTest() { return vuInfo().vuId; },
    get idInInstance() { return vuInfo().vuId; },
    get iterationInInstance() { return vuInfo().iteration; },
    get iterationInScenario() { return vuInfo().iteration; },
    tags: vuTags,
  },
  scenario: {
    get name() { return vuInfo().scenario; },
    get iterationInTest() { return vuInfo().iterationInScenario; },
    get iterationInInstance() { return vuInfo().iterationInScenario; },
  },
  instance: {},
  test: {
    abort(msg) { throw new Abort(msg === undefined ? 'test aborted' : String(msg)); },
    options: {},
  },
};

// ---------------------------------------------------------------- k6/data, k6/encoding

class SharedArray {
  constructor(name, fn) {
    if (typeof fn !== 'function') throw new Error('SharedArray needs a function that returns an array');
    const data = fn();
    if (!Array.isArray(data)) throw new Error(`SharedArray ${name}: the function must return an array`);
    return Object.freeze(data);
  }
}

const MODULES = {
  'k6': Object.assign({ default: k6 }, k6),
  'k6/http': Object.assign({ default: k6http }, k6http),
  'k6/metrics': Object.assign({ default: k6metrics }, k6metrics),
  'k6/execution': { default: execution },
  'k6/data': { default: { SharedArray }, SharedArray },
  'k6/encoding': { default: { b64encode, b64decode }, b64encode, b64decode },
};

// ---------------------------------------------------------------- the bundle

let phase = 'describe';
let loaded = null; // the entry module's exports, once the init code has run
let setupData = null;

function load() {
  if (loaded) return loaded;
  // Before any of the script's code: its init code may draw random numbers too.
  freshRandom(phase === 'describe' || phase === 'setup' ? 0 : vuInfo().vuId);
  const cache = {};
  const files = BUNDLE.files;
  globalThis.open = (path, mode) => {
    const f = files[path];
    if (f === undefined) throw new Error(`open(${JSON.stringify(path)}): not bundled by host build`);
    return mode === 'b' ? b64decodeBytes(f.b64).buffer : f.text;
  };
  const require = (id) => {
    if (MODULES[id]) return MODULES[id];
    if (cache[id]) return cache[id];
    const fn = BUNDLE.modules[id];
    if (!fn) throw new Error(`module ${id} is not in the bundle`);
    const exports = {};
    cache[id] = exports;
    fn(require, exports);
    return exports;
  };
  loaded = require(BUNDLE.entry);
  return loaded;
}

// "at f (file:LINE:COL)" of the combined module → the user's file and line; frames
// of this layer are left out.
function mapStack(stack) {
  const out = [];
  for (const frame of String(stack || '').split('\n')) {
    if (!frame.trim()) continue;
    let layer = false;
    const mapped = frame.replace(/\(([^()]*?):(\d+)(?::(\d+))?\)/, (all, file, line, col) => {
      const n = Number(line);
      let best = null;
      for (const m of BUNDLE.lines) if (m.start <= n) best = m;
      if (!best) { layer = true; return all; }
      return `(${best.file}:${n - best.start + 1}${col ? ':' + col : ''})`;
    });
    if (!layer) out.push(mapped);
  }
  return out.join('\n');
}

function failure(e) {
  if (e instanceof Error) {
    const stack = mapStack(e.stack);
    return stack ? `${e.name}: ${e.message}\n${stack}` : `${e.name}: ${e.message}`;
  }
  return `uncaught ${format(e)}`;
}

function guard(what, fn) {
  try {
    return fn();
  } catch (e) {
    throw failure(e);
  } finally {
    releaseContents();
  }
}

// ---------------------------------------------------------------- options → run config

function tomlValue(v) {
  if (typeof v === 'string') return JSON.stringify(v);
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  if (Array.isArray(v)) return `[${v.map(tomlValue).join(', ')}]`;
  if (v && typeof v === 'object') return `{ ${Object.keys(v).filter((k) => v[k] !== undefined).map((k) => `${JSON.stringify(k)} = ${tomlValue(v[k])}`).join(', ')} }`;
  throw new Error(`options: ${JSON.stringify(v)} has no TOML form`);
}

const DURATION_KEYS = ['duration', 'startTime', 'gracefulStop', 'gracefulRampDown', 'maxDuration', 'timeUnit'];
const SCENARIO_KEYS = {
  executor: 'executor', exec: 'exec', vus: 'vus', duration: 'duration', iterations: 'iterations',
  stages: 'stages', startVUs: 'start_vus', preAllocatedVUs: 'pre_allocated_vus', maxVUs: 'max_vus',
  rate: 'rate', timeUnit: 'time_unit', startRate: 'start_rate', startTime: 'start_time',
  gracefulStop: 'graceful_stop', gracefulRampDown: 'graceful_ramp_down', maxDuration: 'max_duration',
  env: 'env', tags: 'tags',
};

function durationText(v) { return typeof v === 'number' ? `${v}ms` : String(v); }

function scenarioToml(name, s) {
  const lines = [`[scenarios.${JSON.stringify(name)}]`];
  for (const k of Object.keys(s)) {
    const key = SCENARIO_KEYS[k];
    if (!key) throw new Error(`options.scenarios.${name}.${k} is not supported (docs/k6-compatibility.md)`);
    let v = s[k];
    if (v === undefined) continue;
    if (DURATION_KEYS.includes(k)) v = durationText(v);
    if (k === 'stages') v = v.map((st) => ({ duration: durationText(st.duration), target: st.target }));
    lines.push(`${key} = ${tomlValue(v)}`);
  }
  return lines.join('\n');
}

function optionsToml(o) {
  const out = ['# From the script\'s `export const options` (k6 names in snake_case).'];
  let scenarios = o.scenarios;
  if (!scenarios) {
    if (o.stages) scenarios = { default: { executor: 'ramping-vus', startVUs: o.vus || 1, stages: o.stages } };
    else if (o.iterations) scenarios = { default: Object.assign({ executor: 'shared-iterations', vus: o.vus || 1, iterations: o.iterations }, o.duration ? { maxDuration: o.duration } : {}) };
    else if (o.duration) scenarios = { default: { executor: 'constant-vus', vus: o.vus || 1, duration: o.duration } };
    else scenarios = { default: { executor: 'per-vu-iterations', vus: o.vus || 1, iterations: 1 } };
  }
  for (const name of Object.keys(scenarios)) out.push(scenarioToml(name, scenarios[name]));
  if (o.thresholds) {
    out.push('[thresholds]');
    for (const metric of Object.keys(o.thresholds)) {
      let list = o.thresholds[metric];
      if (!Array.isArray(list)) list = [list];
      list = list.map((t) => (typeof t === 'string' ? t : Object.assign(
        { threshold: t.threshold },
        t.abortOnFail !== undefined ? { abort_on_fail: !!t.abortOnFail } : {},
        t.delayAbortEval !== undefined ? { delay_abort_eval: durationText(t.delayAbortEval) } : {},
      )));
      out.push(`${JSON.stringify(metric)} = ${tomlValue(list)}`);
    }
  }
  const http = [];
  if (o.maxRedirects !== undefined) http.push(`max_redirects = ${Number(o.maxRedirects)}`);
  if (o.batch !== undefined) http.push(`batch = ${Number(o.batch)}`);
  if (o.batchPerHost !== undefined) http.push(`batch_per_host = ${Number(o.batchPerHost)}`);
  if (o.noCookiesReset !== undefined) http.push(`no_cookies_reset = ${!!o.noCookiesReset}`);
  if (http.length) out.push('[http]', ...http);
  if (o.insecureSkipTLSVerify) out.push('[tls]', 'insecure_skip_verify = true');
  if (o.setupTimeout !== undefined) out.push('[limits]', `setup_timeout = ${JSON.stringify(durationText(o.setupTimeout))}`);
  return out.join('\n') + '\n';
}

// ---------------------------------------------------------------- the plugin export

function scenarioNames(mod) {
  return Object.keys(mod).filter((k) => typeof mod[k] === 'function' && !['setup', 'teardown', 'handleSummary'].includes(k));
}

function describeScript() {
  phase = 'describe';
  const mod = load();
  const names = scenarioNames(mod);
  return {
    name: BUNDLE.name,
    version: '0.0.0',
    description: `k6 script ${BUNDLE.entry}`,
    scenarios: names.map((n) => ({ name: n, description: n === 'default' ? 'the default function' : `exported function ${n}` })),
    defaultConfig: optionsToml(mod.options || {}),
  };
}

export const plugin = {
  describe() {
    try {
      return describeScript();
    } catch (e) {
      const msg = failure(e);
      hostVu.reportPanic(msg);
      throw new Error(msg);
    }
  },
  setup(_config) {
    return guard('setup', () => {
      phase = 'setup'; info = null;
      const mod = load();
      const data = typeof mod.setup === 'function' ? mod.setup() : undefined;
      return JSON.stringify(data === undefined ? null : data);
    });
  },
  init(data) {
    return guard('init', () => {
      phase = 'init'; info = null;
      setupData = JSON.parse(data || 'null');
      load();
    });
  },
  iteration(scenario) {
    info = null; groupPath = '';
    phase = 'iteration';
    const mod = loaded || load();
    const fn = mod[scenario];
    if (typeof fn !== 'function') throw `the script exports no function ${scenario}`;
    try {
      fn(setupData);
    } catch (e) {
      throw failure(e);
    } finally {
      releaseContents();
    }
  },
  teardown(data) {
    return guard('teardown', () => {
      phase = 'teardown'; info = null;
      const mod = load();
      if (typeof mod.teardown === 'function') mod.teardown(JSON.parse(data || 'null'));
    });
  },
};
