// The k6 API inside a JavaScript plugin (QuickJS), over the host's imports.
//
// `host build script.js` appends the user's bundle to this file (a table of module
// functions, see bundle.rs) and evaluates both once under Wizer: the compiled code is in
// the snapshot, shared by every VU. Nothing of the user's runs at build time: each
// instance runs the init code of the modules on its first call (describe, setup, init or
// teardown), with its own __ENV and __VU, as k6 runs init code once per VU.
import hostHttp from 'loadtest:scenario/http@0.3.6';
import hostCookies from 'loadtest:scenario/cookies@0.3.6';
import hostMetrics from 'loadtest:scenario/metrics@0.3.6';
import hostVu from 'loadtest:scenario/vu@0.3.6';
import hostHtml from 'loadtest:scenario/html@0.3.6';
import hostWs from 'loadtest:scenario/websocket@0.3.6';
import hostShared from 'loadtest:scenario/shared-data@0.3.6';
import hostRun from 'loadtest:scenario/run-control@0.3.6';
import hostGrpc from 'loadtest:scenario/grpc@0.3.6';
import hostChecks from 'loadtest:k6-layer/checks@0.1.0';
import hostResponses from 'loadtest:k6-layer/responses@0.1.0';
import hostSamples from 'loadtest:k6-layer/samples@0.1.0';
import hostSockets from 'loadtest:k6-layer/sockets@0.1.0';

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

// Bytes to text. QuickJS has no TextDecoder, and a loop over the bytes runs in its
// interpreter at about 0.5 µs a byte: the 40 assets of the demo target's /app (1.5 MB)
// took 1.4 s to read as text, which stretched demo-visitor's iterations past k6's. So the
// bytes go to a string one char per byte (fromCharCode in chunks), a regex (native code)
// says whether any is past ASCII, and escape + decodeURIComponent (native too) decode
// UTF-8; they throw on bytes that are not UTF-8, which then take the loop below.
function utf8Decode(b) {
  const CHUNK = 8192;
  let latin = '';
  for (let i = 0; i < b.length; i += CHUNK) latin += String.fromCharCode.apply(null, b.subarray(i, i + CHUNK));
  if (!/[\x80-\xff]/.test(latin)) return latin;
  try {
    return decodeURIComponent(escape(latin));
  } catch (_) {
    return utf8DecodeLoop(b);
  }
}

// The byte loop: each byte that is not part of a UTF-8 sequence becomes U+FFFD.
function utf8DecodeLoop(b) {
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
    if (c >= 0xf8) { out += '\ufffd'; i++; continue; }
    if (c >= 0xf0) { cp = c & 7; n = 3; } else if (c >= 0xe0) { cp = c & 15; n = 2; } else if (c >= 0xc0) { cp = c & 31; n = 1; } else { out += '\ufffd'; i++; continue; }
    if (i + n >= b.length) { out += '\ufffd'; i++; continue; }
    let ok = true;
    for (let k = 1; k <= n; k++) {
      if ((b[i + k] & 0xc0) !== 0x80) { ok = false; break; }
      cp = (cp << 6) | (b[i + k] & 63);
    }
    // Bytes that are not UTF-8 (a binary body read as text) become U+FFFD, one each.
    if (!ok || cp > 0x10ffff) { out += '\ufffd'; i++; continue; }
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
// exec.vu.tags is a view of `vuTags` that counts its changes, so that what is keyed by
// the VU's tags (checks, repeated requests) compares a number, not the tags.
let vuTagsVersion = 0;
// Changes of what a repeated request is matched by beyond its call's arguments
// (exec.vu.tags, setResponseCallback).
let keyVersion = 0;
const vuTagsView = new Proxy(vuTags, {
  set(t, k, v) { t[k] = v; vuTagsVersion++; keyVersion++; return true; },
  deleteProperty(t, k) { const ok = delete t[k]; vuTagsVersion++; keyVersion++; return ok; },
  defineProperty(t, k, d) { Object.defineProperty(t, k, d); vuTagsVersion++; keyVersion++; return true; },
});
let vuTagsText = ''; // the VU's tags as a check's key spells them, as of vuTagsTextVersion
let vuTagsTextVersion = 0;
function vuTagsKey() {
  if (vuTagsTextVersion !== vuTagsVersion) {
    let text = '';
    for (const k in vuTags) text += `\u0001${k}\u0002${vuTags[k]}`;
    vuTagsText = text;
    vuTagsTextVersion = vuTagsVersion;
  }
  return vuTagsText;
}

function tagList(extra) {
  const list = [];
  for (const k in vuTags) list.push([k, String(vuTags[k])]);
  if (groupPath) list.push(['group', groupPath]);
  if (extra) for (const k in extra) list.push([k, String(extra[k])]);
  return list;
}

// The VU's and the group's tags as `tagList()` gives them, remade only when either
// changed: a sample without tags of its own (`counter.add(1)` per WebSocket message)
// then costs no for-in over the VU's tags and no new list. The host only reads it.
let plainTags = null;
let plainTagsVersion = -1;
let plainTagsGroup = '';
function plainTagList() {
  if (plainTags === null || plainTagsVersion !== vuTagsVersion || plainTagsGroup !== groupPath) {
    plainTags = tagList();
    plainTagsVersion = vuTagsVersion;
    plainTagsGroup = groupPath;
  }
  return plainTags;
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

// Checks by number (the layer's `checks` interface): a check's name and tags go to the
// host once, when first seen, and each result after that is one number and a bool.
// The key is the tags as text and the name, so a check under another group, VU tag
// or call tag is another number. Past the host's bound (register gives none) a check
// is recorded by name, as `metrics.check`.
const checkIds = new Map(); // key → number, or -1: recorded by name
const MAX_CHECK_IDS = 10000;
// The keys and numbers of the first CHECK_ORDER checks of the last iteration, by
// their order in it (`checkAt`, reset by each iteration): comparing a key with the
// one seen at the same place costs less than finding it in `checkIds`.
const CHECK_ORDER = 64;
const checkOrderKeys = [];
const checkOrderIds = [];
let checkAt = 0;

function check(val, sets, tags) {
  let all = true;
  let list = null;
  let prefix = groupPath;
  if (vuTagsVersion !== 0) prefix += vuTagsKey();
  if (tags) for (const k in tags) prefix += `\u0003${k}\u0002${tags[k]}`;
  // Object.keys, not for-in: QuickJS's for-in lists the prototype chain's names too.
  const names = sets === null || sets === undefined ? [] : Object.keys(sets);
  for (let i = 0; i < names.length; i++) {
    const name = names[i];
    const c = sets[name];
    const ok = !!(typeof c === 'function' ? c(val) : c);
    const key = prefix === '' ? name : `${prefix}\u0000${name}`;
    // The n-th check of an iteration is most often the n-th of the last one.
    const at = checkAt++;
    let id;
    if (at < CHECK_ORDER && checkOrderKeys[at] === key) {
      id = checkOrderIds[at];
    } else {
      id = checkIds.get(key);
      if (id === undefined) {
        if (list === null) list = tagList(tags);
        const got = checkIds.size < MAX_CHECK_IDS ? hostChecks.register(name, list) : null;
        id = got === null ? -1 : got;
        checkIds.set(key, id);
      }
      if (at < CHECK_ORDER) { checkOrderKeys[at] = key; checkOrderIds[at] = id; }
    }
    if (id >= 0) hostChecks.add(id, ok);
    else hostMetrics.check(name, ok, list === null ? (list = tagList(tags)) : list);
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

// The instance's first Math.random(): seeds the generator for this instance (the VU's
// id, or 0 in describe and setup), which then replaces it.
function lazyRandom() {
  freshRandom(phase === 'describe' || phase === 'setup' ? 0 : vuInfo().vuId);
  return nextRandom();
}

function randomSeed(n) {
  // A seeded generator replaces Math.random for the VU, as k6's randomSeed does: the
  // same seed gives the same sequence.
  seedRandom([Number(n) >>> 0]);
}

const k6 = { check, group, sleep, fail, randomSeed };

// ---------------------------------------------------------------- k6/metrics

// The custom metrics the init code made, declared to the host from describe().
const metricsMade = new Map([['group_duration', 'trend']]);

class Metric {
  constructor(name, kind, isTime) {
    if (typeof name !== 'string' || !/^[A-Za-z_][A-Za-z0-9_]{0,127}$/.test(name)) {
      throw new Error(`invalid metric name ${JSON.stringify(name)}: letters, digits and _ (k6's rule)`);
    }
    this.name = name; this.kind = kind; this.isTime = !!isTime;
    // The series of samples without tags of their own (`counter.add(1)` per
    // WebSocket message): its number (`samples.register`) for the current tag list,
    // and the numbers by the VU's and group's tags.
    this._list = null; this._id = -1; this._ids = null;
    metricsMade.set(name, kind);
  }
  add(value, tags) {
    let v;
    if (this.kind === 'rate') v = value ? 1 : 0;
    else if (typeof value === 'number') v = value;
    else v = typeof value === 'boolean' ? (value ? 1 : 0) : Number(value);
    if (v !== v) throw new Error(`${this.name}.add: ${JSON.stringify(value)} is not a number`);
    let list;
    if (tags === undefined || tags === null) {
      list = plainTagList();
      // A number and a value cross to the host, not the name, kind and tags.
      if (this._list !== list) { this._list = list; this._id = this._seriesId(list); }
      if (this._id >= 0) { hostSamples.add(this._id, v); return true; }
    } else {
      list = tagList(tags);
    }
    // A trend of times (`new Trend(name, true)`) goes through add-time: shown and
    // exported as times, as k6 shows it.
    if (this.isTime && this.kind === 'trend') hostMetrics.addTime(this.name, v, list);
    else hostMetrics.add(this.name, this.kind, v, list);
    return true;
  }
  // The host's number for this metric with the VU's and group's tags (`list`), or -1
  // when the host keeps no more series (then `metrics.add` records each sample).
  _seriesId(list) {
    let key = groupPath;
    if (vuTagsVersion !== 0) key += vuTagsKey();
    if (this._ids === null) this._ids = new Map();
    let id = this._ids.get(key);
    if (id === undefined) {
      const time = this.isTime && this.kind === 'trend';
      const got = seriesMade < MAX_SERIES_IDS ? hostSamples.register(this.name, this.kind, time, list) : null;
      seriesMade++;
      id = got === null ? -1 : got;
      this._ids.set(key, id);
    }
    return id;
  }
}
// Series registered by this VU (`samples.register`); the host keeps 10,000.
const MAX_SERIES_IDS = 10000;
let seriesMade = 0;
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

// ---------------------------------------------------------------- http.file, multipart bodies
//
// An object body holding an http.file value is sent as multipart/form-data, as k6 (Go's
// mime/multipart) writes it: a random 60-hex-digit boundary, one part per field in the
// object's order (an array value gives one part per element), a file part with its
// filename and content type (application/octet-stream by default).

class FileData {
  constructor(data, filename, contentType) {
    this.data = typeof data === 'string' ? data : toBytes(data);
    this.filename = filename === undefined || filename === null ? String(Date.now() * 1000000) : String(filename);
    this.content_type = contentType || 'application/octet-stream';
  }
}

function file(data, filename, contentType) {
  if (data === undefined || data === null) throw new Error('http.file needs data (a string or an ArrayBuffer)');
  return new FileData(data, filename, contentType);
}

function hasFile(body) {
  for (const k in body) {
    const v = body[k];
    if (v instanceof FileData || (Array.isArray(v) && v.some((x) => x instanceof FileData))) return true;
  }
  return false;
}

// Go's mime/multipart quoting of a name in Content-Disposition.
function quoteField(s) { return String(s).replace(/\\/g, '\\\\').replace(/"/g, '\\"'); }

function multipart(body) {
  let boundary = '';
  for (let i = 0; i < 30; i++) boundary += Math.floor(Math.random() * 256).toString(16).padStart(2, '0');
  const parts = [];
  for (const k in body) {
    const vals = Array.isArray(body[k]) ? body[k] : [body[k]];
    for (const v of vals) {
      let head = `--${boundary}\r\nContent-Disposition: form-data; name="${quoteField(k)}"`;
      if (v instanceof FileData) {
        head += `; filename="${quoteField(v.filename)}"\r\nContent-Type: ${v.content_type}\r\n\r\n`;
        parts.push(utf8Encode(head), typeof v.data === 'string' ? utf8Encode(v.data) : v.data, utf8Encode('\r\n'));
      } else {
        head += '\r\n\r\n';
        parts.push(utf8Encode(head), toBytes(v === null || v === undefined ? '' : String(v)), utf8Encode('\r\n'));
      }
    }
  }
  parts.push(utf8Encode(`--${boundary}--\r\n`));
  let n = 0;
  for (const p of parts) n += p.length;
  const bytes = new Uint8Array(n);
  let at = 0;
  for (const p of parts) { bytes.set(p, at); at += p.length; }
  return { boundary, bytes };
}

let defaultExpected = null; // setResponseCallback(...)
// The script's options the layer itself applies (discardResponseBodies, throw,
// minIterationDuration), read once its init code has run.
let runOptions = {};

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
  keyVersion++;
}

const ERROR_CODES = { denied: 1000, invalid: 1020, connect: 1212, timeout: 1050, tls: 1300, protocol: 1600, bodyTooLarge: 1501 };

const CREDENTIALS = /^([a-z][a-z0-9+.-]*:\/\/)([^@/?#]*)@/i;

function buildRequest(method, url, body, params) {
  params = params || {};
  method = String(method).toUpperCase();
  let urlName = null;
  if (url && typeof url === 'object' && url.url) { urlName = url.name; url = url.url; } // http.url`...`
  url = String(url);
  const headers = [];
  let hasType = false;
  let hasAuth = false;
  const h = params.headers || {};
  for (const k in h) {
    if (h[k] === undefined || h[k] === null) continue;
    const lower = k.toLowerCase();
    if (lower === 'content-type') hasType = true;
    else if (lower === 'authorization') hasAuth = true;
    headers.push([k, String(h[k])]);
  }
  // Credentials in the URL go as basic auth, as k6 (Go) sends them; the URL goes on
  // without them, so they are in no tag, log line or result file.
  const cred = CREDENTIALS.exec(url);
  if (cred) {
    url = cred[1] + url.slice(cred[0].length);
    const colon = cred[2].indexOf(':');
    const user = decodeURIComponent(colon < 0 ? cred[2] : cred[2].slice(0, colon));
    const pass = colon < 0 ? '' : decodeURIComponent(cred[2].slice(colon + 1));
    if (!hasAuth) headers.push(['Authorization', `Basic ${b64encode(`${user}:${pass}`)}`]);
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
    if (typeof body === 'object' && !(body instanceof ArrayBuffer) && !ArrayBuffer.isView(body) && hasFile(body)) {
      const form = multipart(body);
      bytes = form.bytes;
      if (!hasType) headers.push(['Content-Type', `multipart/form-data; boundary=${form.boundary}`]);
    } else if (typeof body === 'object' && !(body instanceof ArrayBuffer) && !ArrayBuffer.isView(body)) {
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
  const responseType = params.responseType || (runOptions.discardResponseBodies ? 'none' : 'text');
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

// Responses held on the host (layer.wit's `responses`): a send returns one number (the
// status, whether the URL moved, the slot), and what the script reads of a response
// (timings, URL, header fields, body) is asked for from its slot when it is read.
// A slot lives until the call that made it returns (an iteration, setup, ...), unless
// kept: at the end of each call the layer keeps the slots of the responses the script
// still holds (a weak reference per response says which: QuickJS counts references,
// so a response nothing holds is gone by then) and releases a kept one once the script
// drops it. A response kept past its iteration reads what it would have read in it.
// Past MAX_KEPT kept responses, the oldest are read in full into the layer and their
// slots released, so neither the host's table nor the check at each call's end grows.
// A send's number for a failure: FAILED + its place in `error`. The runtime hands a
// u32 over as a signed 32-bit number: `word | 0` reads a failure as negative either way.
const FAILED = 0x80000000 | 0;
let fresh = []; // WeakRefs to the responses of the current call: the first freshN
let freshN = 0; // (an index, not push and length = 0: fewer interpreted calls)
let kept = []; // [WeakRef, slot] pairs of responses kept past their call
const MAX_KEPT = 64;
const WeakRefOf = WeakRef; // a module binding is found faster than a global

// At the end of every call into the script: slots, then k6/html documents.
function endCall() {
  if (kept.length !== 0) releaseDropped();
  if (freshN !== 0) keepHeld();
  if (heldDocs.length !== 0) releaseDocuments(); // k6/html
}

function keepHeld() {
  for (let i = 0; i < freshN; i++) {
    const r = fresh[i].deref();
    if (r !== undefined && r._slot >= 0) {
      hostResponses.keep(r._slot);
      kept.push(fresh[i], r._slot);
    }
  }
  // A call that made many responses does not leave its list behind.
  if (freshN > MAX_KEPT) fresh = [];
  freshN = 0;
  if (kept.length > 2 * MAX_KEPT) {
    const old = kept.slice(0, kept.length - MAX_KEPT);
    kept = kept.slice(kept.length - MAX_KEPT);
    for (let i = 0; i < old.length; i += 2) {
      const r = old[i].deref();
      if (r !== undefined && r._slot >= 0) r._readAll();
      else hostResponses.release(old[i + 1]);
    }
  }
}

function releaseDropped() {
  let j = 0;
  for (let i = 0; i < kept.length; i += 2) {
    const r = kept[i].deref();
    if (r === undefined) hostResponses.release(kept[i + 1]);
    else if (r._slot >= 0) { kept[j++] = kept[i]; kept[j++] = kept[i + 1]; }
  }
  kept.length = j;
}

const NO_TIMINGS = [0, 0, 0, 0, 0, 0, 0]; // `timings-of`'s order, in ms

// A Response is built for every request, so what a script may never read is made on
// first access: `request`, `timings`, `headers`, `body` (a getter on the class that
// replaces itself with the value on the instance). Most scripts read only `status`.
class Response {
  constructor(req, word, err) {
    this._req = req;
    if ((word | 0) >= 0) {
      const slot = word >>> 11;
      const status = word & 1023;
      this.status = status;
      this.url = (word & 1024) === 0 ? req.url : hostResponses.urlOf(slot);
      this._slot = slot;
      this.error = '';
      this.error_code = status >= 400 ? 1000 + status : 0;
      fresh[freshN++] = new WeakRefOf(this);
    } else {
      if (err === null) {
        // The runtime throws a result's error as an Error holding it in `payload`.
        try { hostResponses.error(word & 0x7fffffff); } catch (e) { err = e && e.payload !== undefined ? e.payload : e; }
      }
      this.status = 0; this.url = req.url; this._slot = -1;
      this.error = typeof err === 'object' && err.tag ? `${err.tag}: ${err.val}` : String(err);
      this.error_code = typeof err === 'object' && err.tag ? (ERROR_CODES[err.tag] || 1000) : 1000;
    }
  }
  get _type() { return this._req.responseType; }
  // Everything the slot holds, read into the instance before the slot is released.
  _readAll() {
    void this.timings; void this.headers; void this.body; this._rawHeaders();
    hostResponses.release(this._slot);
    this._slot = -1;
  }
  _rawHeaders() {
    if (this._raw === undefined) this._raw = this._slot >= 0 ? hostResponses.headersOf(this._slot) : [];
    return this._raw;
  }
  get request() {
    const req = this._req;
    const value = { method: req.method, url: req.url, headers: Object.fromEntries(req.headers), body: req.body ? utf8Decode(req.body) : '' };
    Object.defineProperty(this, 'request', { value, writable: true, enumerable: true });
    return value;
  }
  get timings() {
    const t = this._slot >= 0 ? hostResponses.timingsOf(this._slot) : NO_TIMINGS;
    const value = {
      blocked: t[0], connecting: t[1], tls_handshaking: t[2], sending: t[3], waiting: t[4], receiving: t[5], duration: t[6],
    };
    Object.defineProperty(this, 'timings', { value, writable: true, enumerable: true });
    return value;
  }
  get headers() {
    const out = {};
    for (const [k, v] of this._rawHeaders()) {
      const name = canonicalHeader(k);
      out[name] = name in out ? `${out[name]}, ${v}` : v;
    }
    Object.defineProperty(this, 'headers', { value: out, writable: true, enumerable: true });
    return out;
  }
  get body() {
    let b = null;
    const type = this._req.responseType;
    if (this._slot >= 0 && type !== 'none') {
      // Text is decoded by the host (`responses.text`): QuickJS would decode a body
      // that is not plain ASCII byte by byte in its interpreter.
      b = type === 'binary' ? hostResponses.bodyOf(this._slot).buffer : hostResponses.textOf(this._slot);
    }
    Object.defineProperty(this, 'body', { value: b, writable: true, enumerable: true });
    return b;
  }
  get cookies() {
    const out = {};
    for (const [k, v] of this._rawHeaders()) {
      if (k !== 'set-cookie') continue;
      const [pair] = v.split(';');
      const eq = pair.indexOf('=');
      if (eq < 0) continue;
      const name = pair.slice(0, eq).trim();
      (out[name] = out[name] || []).push({ name, value: pair.slice(eq + 1).trim() });
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
  html(selector) { return responseHtml(this, selector); }
  submitForm(args) { return submitForm(this, args); }
  clickLink(args) { return clickLink(this, args); }
}

// The Response of a send's number; a failure throws when the options say `throw`.
function answer(req, word) {
  const res = new Response(req, word, null);
  if ((word | 0) < 0 && runOptions.throw) throw new Error(`${req.method} ${req.url}: ${res.error}`);
  return res;
}

// Prepared requests (contract 0.3.1): a request an iteration sends again and again (the
// same method, URL, header fields, tags and options, no body) is handed to the host once
// and then sent by handle, so its record is not copied out of QuickJS, parsed, checked
// against the allowlist and its tags interned on every send. The host applies the VU's
// cookie jar and its current tags at each send, so a prepared send is what `send` of the
// same request is. A request is prepared the second time it is seen (a URL made unique
// per iteration is never prepared), and a VU keeps at most MAX_PREPARED of them.
const MAX_PREPARED = 64;
const MAX_SEEN = 1024;
const preparedRequests = new Map(); // key → prepared-request handle
let seenRequests = new Set(); // keys sent once, not yet prepared

function pairsKey(list) {
  let k = '';
  for (let i = 0; i < list.length; i++) k += `${list[i][0]}\u0001${list[i][1]}\u0002`;
  return k;
}

function requestKey(req) {
  const o = req.options;
  let ranges = '';
  if (o.expectedStatuses) for (const r of o.expectedStatuses) ranges += `${r.min}-${r.max},`;
  return `${req.method}\u0000${req.url}\u0000${pairsKey(req.headers)}\u0000${pairsKey(o.tags)}\u0000${o.timeoutMs}\u0000${o.discardBody}\u0000${ranges}\u0000${o.redirects}`;
}

// The prepared handle for `req`, or null to send it as it is. A failed prepare throws
// as `send` would (a denied target is counted by the host once, as by `send`).
function preparedFor(req) {
  if (req.body !== null || phase !== 'iteration') return null;
  const key = requestKey(req);
  const known = preparedRequests.get(key);
  if (known) return known;
  if (preparedRequests.size >= MAX_PREPARED) return null;
  if (!seenRequests.has(key)) {
    if (seenRequests.size >= MAX_SEEN) seenRequests = new Set();
    seenRequests.add(key);
    return null;
  }
  seenRequests.delete(key);
  const prepared = hostHttp.prepare(req);
  preparedRequests.set(key, prepared);
  return prepared;
}

// Prepared requests found without building the request: a call with no body and no
// params beyond `tags` and `headers` (each a flat object of plain values) is looked
// up by its URL, then matched against what earlier calls to that URL were made from:
// the method, the params' names and values in order, the group, the VU's tags and
// the response callback in force. A match is the prepared handle and the request it
// was built from (what the Response reads), so a repeated call costs the lookup and
// the send. Values are compared in place: building a key string cost about a third
// of a request's guest instructions (QuickJS in WebAssembly spends ~100 wasm
// operations per bytecode). Any other call goes the long way.
const MAX_QUICK = 1024;
let quickRequests = new Map(); // URL → entry, entries of one URL chained by `next`
let quickCount = 0;
const NO_PARAMS = { names: [], fields: [] };

// The params' `tags` and `headers` as an entry compares them: `names`, the params'
// names in order, and `fields`, per param the names and values of its fields
// flattened; or null when the call is not matched in place (another param, one
// that is undefined, a nested object).
function paramsShape(params) {
  const names = Object.keys(params);
  const fields = [];
  for (let j = 0; j < names.length; j++) {
    const p = names[j];
    const v = params[p];
    if ((p !== 'tags' && p !== 'headers') || v === null || typeof v !== 'object') return null;
    const flat = [];
    const keys = Object.keys(v);
    for (let m = 0; m < keys.length; m++) {
      const x = v[keys[m]];
      if (x !== null && typeof x === 'object') return null;
      flat.push(keys[m], x);
    }
    fields.push(flat);
  }
  return { names, fields };
}

// Whether `params` (its names `names`) has the names, and its fields the names and
// values, of `shape`,
// in the same order (`===`: a value of another type, or NaN, is no match and goes
// the long way). Object.keys, not for-in: QuickJS's for-in lists the prototype
// chain's names too (6 k wasm operations for a one-field object, against 3.7 k).
function sameParams(shape, params, names) {
  const pn = shape.names;
  if (names.length !== pn.length) return false;
  for (let j = 0; j < names.length; j++) {
    const p = names[j];
    if (p !== pn[j]) return false;
    const v = params[p];
    if (v === null || typeof v !== 'object') return false;
    const keys = Object.keys(v);
    const flat = shape.fields[j];
    if (keys.length * 2 !== flat.length) return false;
    for (let m = 0; m < keys.length; m++) {
      const k = keys[m];
      if (k !== flat[2 * m] || v[k] !== flat[2 * m + 1]) return false;
    }
  }
  return true;
}

// The entry an earlier call made for this one, or undefined.
function quickFind(method, url, params) {
  let e = quickRequests.get(url);
  if (e === undefined) return undefined;
  const names = params ? Object.keys(params) : NO_PARAMS.names;
  for (; e !== undefined; e = e.next) {
    if (e.method === method && e.group === groupPath && e.version === keyVersion && sameParams(e.shape, params, names)) return e;
  }
  return undefined;
}

// The Response of a send by an entry.
function quickSend(e) {
  const res = new Response(e.req, hostResponses.sendPrepared(e.prepared), null);
  if (res._slot < 0 && runOptions.throw) throw new Error(`${e.req.method} ${e.req.url}: ${res.error}`);
  return res;
}

// Entries per URL compared in place; past them a URL's calls are found by a key
// string (`quickKey`), so a script that sends one URL with many tag values does not
// compare each call with all of them.
const QUICK_CHAIN = 4;
let keyedRequests = new Map(); // quickKey → entry

// The key of a call for `keyedRequests`, or null when it cannot be looked up.
function quickKey(method, url, params) {
  let k = `${method}\u0000${url}\u0000${keyVersion}\u0000${groupPath}`;
  if (params) {
    for (const p in params) {
      const v = params[p];
      if (v === undefined) continue;
      if ((p !== 'tags' && p !== 'headers') || v === null || typeof v !== 'object') return null;
      k += p === 'tags' ? '\u0003' : '\u0004';
      for (const n in v) {
        const x = v[n];
        if (x !== null && typeof x === 'object') return null;
        k += `\u0001${n}\u0002${typeof x}\u0002${x}`;
      }
    }
  }
  return k;
}

function quickRemember(method, url, params, prepared, req) {
  const shape = params ? paramsShape(params) : NO_PARAMS;
  if (quickCount >= MAX_QUICK) { quickRequests = new Map(); keyedRequests = new Map(); quickCount = 0; }
  const e = { method, group: groupPath, version: keyVersion, shape, prepared, req, next: undefined, length: 1 };
  const head = quickRequests.get(url);
  if (shape !== null && (head === undefined || head.length < QUICK_CHAIN)) {
    if (head !== undefined) { e.next = head; e.length = head.length + 1; }
    quickRequests.set(url, e);
  } else {
    const key = quickKey(method, url, params);
    if (key === null) return;
    keyedRequests.set(key, e);
  }
  quickCount++;
}

function request(method, url, body, params) {
  if (asyncQueue.length !== 0) flushAsync();
  const quick = (body === null || body === undefined) && typeof url === 'string' && phase === 'iteration';
  if (quick) {
    const hit = quickFind(method, url, params);
    if (hit !== undefined) return quickSend(hit);
  }
  return requestMissed(method, url, body, params, quick);
}

// A request `quickFind` did not find (`quick`: one it may find another time).
function requestMissed(method, url, body, params, quick) {
  if (quick && keyedRequests.size !== 0) {
    const keyed = keyedRequests.get(quickKey(method, url, params));
    if (keyed !== undefined) return quickSend(keyed);
  }
  const req = buildRequest(method, url, body, params);
  let prepared;
  try {
    prepared = preparedFor(req);
  } catch (e) {
    // `prepare` failed as `send` would have (denied, invalid).
    const failed = new Response(req, FAILED, e);
    if (runOptions.throw) throw new Error(`${req.method} ${req.url}: ${failed.error}`);
    return failed;
  }
  if (prepared && quick) quickRemember(method, url, params, prepared, req);
  return answer(req, prepared ? hostResponses.sendPrepared(prepared) : hostResponses.send(req));
}

function batch(reqs) {
  if (asyncQueue.length !== 0) flushAsync();
  const keys = Array.isArray(reqs) ? null : Object.keys(reqs);
  const items = keys ? keys.map((k) => reqs[k]) : reqs;
  const built = items.map((r) => {
    if (typeof r === 'string') return buildRequest('GET', r, null, null);
    if (Array.isArray(r)) return buildRequest(r[0], r[1], r[2], r[3]);
    return buildRequest(r.method || 'GET', r.url, r.body, r.params);
  });
  const words = hostResponses.sendBatch(built);
  const out = [];
  for (let i = 0; i < built.length; i++) out.push(new Response(built[i], words[i], null));
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
    try {
      hostCookies.set(String(url), String(name), String(value), {
        domain: opts.domain || null, path: opts.path || null,
        maxAgeS: opts.max_age !== undefined ? Number(opts.max_age) : null,
        secure: !!opts.secure, httpOnly: !!opts.http_only,
      });
    } catch (e) {
      // A cookie the URL may not set (another domain) is dropped without a word, as
      // k6's jar (Go's cookiejar) drops it; a malformed name or value still throws.
      const msg = e && e.payload !== undefined ? String(e.payload) : String(e);
      if (!msg.startsWith('cannot set cookie')) throw new Error(msg);
    }
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
  // A repeated GET is looked up here, one call shorter than through `request`.
  get(u, params) {
    if (asyncQueue.length !== 0) flushAsync();
    const quick = typeof u === 'string' && phase === 'iteration';
    if (quick) {
      const hit = quickFind('GET', u, params);
      if (hit !== undefined) {
        // quickSend, inline: one interpreted call less per request (the same message:
        // the request's own URL, as the first call's failure names it).
        const res = new Response(hit.req, hostResponses.sendPrepared(hit.prepared), null);
        if (res._slot < 0 && runOptions.throw) throw new Error(`GET ${hit.req.url}: ${res.error}`);
        return res;
      }
    }
    return requestMissed('GET', u, null, params, quick);
  },
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
  file,
  FileData,
};

// ---------------------------------------------------------------- k6/execution

const execution = {
  vu: {
    get idInTest() { return vuInfo().vuId; },
    get idInInstance() { return vuInfo().vuId; },
    get iterationInInstance() { return vuInfo().iteration; },
    get iterationInScenario() { return vuInfo().iteration; },
    tags: vuTagsView,
  },
  scenario: {
    get name() { return vuInfo().scenario; },
    get iterationInTest() { return vuInfo().iterationInScenario; },
    get iterationInInstance() { return vuInfo().iterationInScenario; },
  },
  instance: {},
  test: {
    abort(msg) {
      // The host stops the run (no new iterations, running ones interrupted); this
      // iteration ends here.
      const why = msg === undefined ? 'test aborted' : String(msg);
      hostRun.abort(why);
      throw new Abort(why);
    },
    options: {},
  },
};

// ---------------------------------------------------------------- k6/data, k6/encoding

// A SharedArray's function runs once, in describe(): its records go to the host
// (`shared-data.publish`), which keeps one copy for the run, as it keeps `[data]` sets;
// each VU reads a record through `vu.data-get` when it is indexed, parsed from JSON on
// each access as k6 does, so no VU holds the array. A SharedArray the host did not get
// (made outside the init code) is computed in the VU, as before.
const SHARED_PREFIX = 'k6/data:';

function sharedRecords(name, fn) {
  const data = fn();
  if (!Array.isArray(data)) throw new Error(`SharedArray ${name}: the function must return an array`);
  return data;
}

function sharedView(key, n) {
  const at = (i) => JSON.parse(hostVu.dataGet(key, i));
  const index = (p) => (typeof p === 'string' && /^(0|[1-9][0-9]*)$/.test(p) && Number(p) < n ? Number(p) : -1);
  // The target is a plain extensible object: a frozen array's own `length` (0) would bind
  // the proxy by the language's invariants.
  return new Proxy({}, {
    get(target, p) {
      if (p === 'length') return n;
      const i = index(p);
      if (i >= 0) return at(i);
      if (p === Symbol.iterator) return function* iterate() { for (let j = 0; j < n; j++) yield at(j); };
      const method = Array.prototype[p];
      if (typeof method === 'function') return (...args) => method.apply(Array.from({ length: n }, (_, j) => at(j)), args);
      return target[p];
    },
    has(target, p) { return index(p) >= 0 || p in target; },
    ownKeys() { return [...Array.from({ length: n }, (_, j) => String(j)), 'length']; },
    getOwnPropertyDescriptor(target, p) {
      if (p === 'length') return { value: n, writable: false, enumerable: false, configurable: true };
      const i = index(p);
      return i >= 0 ? { value: at(i), writable: false, enumerable: true, configurable: true } : undefined;
    },
    set() { throw new TypeError('a SharedArray is read-only'); },
    defineProperty() { throw new TypeError('a SharedArray is read-only'); },
    deleteProperty() { throw new TypeError('a SharedArray is read-only'); },
  });
}

class SharedArray {
  constructor(name, fn) {
    if (typeof fn !== 'function') throw new Error('SharedArray needs a function that returns an array');
    const key = SHARED_PREFIX + String(name);
    if (phase === 'describe') {
      const data = sharedRecords(name, fn);
      try {
        hostShared.publish(key, data.map((r) => JSON.stringify(r === undefined ? null : r)));
      } catch (e) {
        if (String(e).indexOf('already exists') < 0) throw new Error(`SharedArray ${name}: ${e}`);
      }
      return Object.freeze(data);
    }
    const n = hostVu.dataLen(key);
    if (n === null || n === undefined) return Object.freeze(sharedRecords(name, fn));
    return sharedView(key, Number(n));
  }
}

// ---------------------------------------------------------------- k6/crypto
//
// Hashes and HMACs done by the host (loadtest:k6-layer/crypto, which webcrypto.js
// imports, over RustCrypto's crates): MD4, MD5, SHA-1, SHA-256, SHA-384, SHA-512,
// SHA-512/224, SHA-512/256, RIPEMD-160. `randomBytes` draws from the host's
// cryptographic generator.

const HASH_NAMES = ['md4', 'md5', 'sha1', 'sha256', 'sha384', 'sha512', 'sha512_224', 'sha512_256', 'ripemd160'];

function hashOf(algorithm) {
  const name = String(algorithm).toLowerCase().replace('-', '_');
  const hash = name === 'sha512/224' ? 'sha512_224' : name === 'sha512/256' ? 'sha512_256' : name;
  if (!HASH_NAMES.includes(hash)) {
    throw new Error(`k6/crypto: ${algorithm} is not supported here (supported: ${HASH_NAMES.join(', ')})`);
  }
  return hash;
}

// A list<u8> from the host as a Uint8Array.
function hostBytes(b) { return b instanceof Uint8Array ? b : new Uint8Array(b); }

function cryptoBytes(input) {
  return typeof input === 'string' ? utf8Encode(input) : toBytes(input);
}

function concatBytes(parts) {
  if (parts.length === 1) return parts[0];
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) { out.set(p, at); at += p.length; }
  return out;
}

// k6's output encodings: hex, base64, base64url, base64rawurl, binary (an ArrayBuffer).
function encodeDigest(bytes, encoding) {
  switch (encoding === undefined ? 'binary' : encoding) {
    case 'hex': return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
    case 'base64': return b64encode(bytes, 'std');
    case 'base64url': return b64encode(bytes, 'url');
    case 'base64rawurl': return b64encode(bytes, 'rawurl');
    case 'binary': return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength);
    default: throw new Error(`k6/crypto: unknown output encoding ${JSON.stringify(encoding)} (hex, base64, base64url, base64rawurl, binary)`);
  }
}

class Hasher {
  constructor(algorithm, secret) {
    this.hash = hashOf(algorithm);
    this.secret = secret === undefined ? undefined : cryptoBytes(secret);
    this.parts = [];
  }
  update(input) { this.parts.push(cryptoBytes(input)); return this; }
  digest(encoding) {
    const data = concatBytes(this.parts);
    const bytes = this.secret === undefined ? hostCrypto.digest(this.hash, data) : hostCrypto.hmac(this.hash, this.secret, data);
    return encodeDigest(hostBytes(bytes), encoding);
  }
}

const k6crypto = {
  createHash: (algorithm) => new Hasher(algorithm),
  createHMAC: (algorithm, secret) => new Hasher(algorithm, secret),
  hmac: (algorithm, secret, data, encoding) =>
    encodeDigest(hostBytes(hostCrypto.hmac(hashOf(algorithm), cryptoBytes(secret), cryptoBytes(data))), encoding),
  // In pieces of the most one host call gives.
  randomBytes(size) {
    const out = new Uint8Array(size);
    for (let at = 0; at < size; at += 65536) out.set(hostCrypto.randomBytes(Math.min(65536, size - at)), at);
    return out.buffer;
  },
};
for (const name of HASH_NAMES) {
  k6crypto[name] = (input, encoding) => encodeDigest(hostBytes(hostCrypto.digest(name, cryptoBytes(input))), encoding);
}

// ---------------------------------------------------------------- k6-summary (jslib)

// jslib's k6-summary (`textSummary`, `jUnit`), which handleSummary scripts import by
// URL; the bundler maps any version of that URL here. The text follows k6's layout:
// the checks, then every metric as `name....: values`, sub-metrics indented.
function humanBytes(n) {
  const units = ['B', 'kB', 'MB', 'GB', 'TB'];
  let i = 0;
  while (Math.abs(n) >= 1000 && i < units.length - 1) { n /= 1000; i++; }
  return `${i === 0 ? Math.round(n) : n.toFixed(1)} ${units[i]}`;
}
function humanTime(ms) {
  if (ms === 0) return '0s';
  if (ms < 0.001) return `${(ms * 1e6).toFixed(0)}ns`;
  if (ms < 1) return `${(ms * 1000).toFixed(2)}µs`;
  if (ms < 1000) return `${ms.toFixed(2)}ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(2)}s`;
  const m = Math.floor(ms / 60000);
  return `${m}m${((ms - m * 60000) / 1000).toFixed(1)}s`;
}
function summaryValue(v, contains, timeUnit) {
  if (contains === 'time') {
    if (timeUnit === 'ms') return `${v.toFixed(2)}ms`;
    if (timeUnit === 's') return `${(v / 1000).toFixed(2)}s`;
    return humanTime(v);
  }
  if (contains === 'data') return humanBytes(v);
  return Number.isInteger(v) ? String(v) : v.toFixed(6).replace(/\.?0+$/, '');
}
function metricLine(name, m, stats, timeUnit) {
  const v = m.values || {};
  switch (m.type) {
    case 'counter': {
      const rate = m.contains === 'data' ? `${humanBytes(v.rate)}/s` : `${summaryValue(v.rate, 'default')}/s`;
      return [summaryValue(v.count, m.contains, timeUnit), rate];
    }
    case 'gauge':
      return [summaryValue(v.value, m.contains, timeUnit), `min=${summaryValue(v.min, m.contains, timeUnit)}`, `max=${summaryValue(v.max, m.contains, timeUnit)}`];
    case 'rate':
      return [`${(v.rate * 100).toFixed(2)}%`, `✓ ${v.passes}`, `✗ ${v.fails}`];
    default:
      return stats.filter((s) => v[s] !== undefined)
        .map((s) => `${s}=${s === 'count' ? summaryValue(v[s], 'default') : summaryValue(v[s], m.contains, timeUnit)}`);
  }
}
function textSummary(data, opts) {
  opts = opts || {};
  const indent = opts.indent === undefined ? ' ' : String(opts.indent);
  const color = opts.enableColors === true;
  const paint = (code, t) => (color ? `\x1b[${code}m${t}\x1b[0m` : t);
  const stats = (data.options && data.options.summaryTrendStats) || ['avg', 'min', 'med', 'max', 'p(90)', 'p(95)'];
  const timeUnit = (data.options && data.options.summaryTimeUnit) || '';
  const lines = [];
  const checks = (data.root_group && data.root_group.checks) || [];
  for (const c of checks) {
    const ok = c.fails === 0;
    const mark = ok ? paint(32, '✓') : paint(31, '✗');
    const detail = ok ? '' : `\n${indent}    ↳  ${Math.round((c.passes / Math.max(1, c.passes + c.fails)) * 100)}% — ✓ ${c.passes} / ✗ ${c.fails}`;
    lines.push(`${indent}  ${mark} ${c.name}${detail}`);
  }
  if (checks.length) lines.push('');
  const names = Object.keys(data.metrics || {}).sort();
  const top = names.filter((n) => !n.includes('{'));
  const rows = [];
  for (const name of top) {
    rows.push([name, name, 0]);
    for (const sub of names.filter((n) => n.startsWith(`${name}{`))) rows.push([sub, sub.slice(name.length), 1]);
  }
  const width = Math.max(0, ...rows.map(([, label, depth]) => label.length + depth * 2)) + 3;
  for (const [key, label, depth] of rows) {
    const m = data.metrics[key];
    const failed = m.thresholds && Object.values(m.thresholds).some((t) => t && t.ok === false);
    const mark = m.thresholds ? (failed ? paint(31, '✗') : paint(32, '✓')) : ' ';
    const shown = '  '.repeat(depth) + label;
    const dots = '.'.repeat(Math.max(1, width - shown.length));
    lines.push(`${indent}${mark} ${shown}${paint(90, dots)}: ${metricLine(key, m, stats, timeUnit).join(' ')}`);
  }
  return lines.join('\n') + '\n';
}
function xmlEscape(t) {
  return String(t).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}
function jUnit(data, opts) {
  opts = opts || {};
  const cases = [];
  let failures = 0;
  for (const name of Object.keys(data.metrics || {}).sort()) {
    const m = data.metrics[name];
    for (const [expr, t] of Object.entries(m.thresholds || {})) {
      const id = `${name} - ${expr}`;
      if (t.ok) {
        cases.push(`<testcase name="${xmlEscape(id)}" />`);
      } else {
        failures++;
        cases.push(`<testcase name="${xmlEscape(id)}"><failure message="failed" /></testcase>`);
      }
    }
  }
  const suite = xmlEscape(opts.name || 'k6 thresholds');
  const cls = opts.classname ? ` classname="${xmlEscape(opts.classname)}"` : '';
  return `<?xml version="1.0"?>\n<testsuites tests="${cases.length}" failures="${failures}">\n` +
    `<testsuite name="${suite}"${cls} tests="${cases.length}" failures="${failures}">${cases.join('\n')}\n</testsuite>\n</testsuites>\n`;
}
const k6summary = { textSummary, jUnit };

// ---------------------------------------------------------------- k6/html
//
// parseHTML, res.html(), res.submitForm() and res.clickLink() over the host's `html`
// interface: the page is parsed once on the host (html5ever, CSS selectors), and a
// Selection here is a list of node numbers in document order. Documents made by a
// call are dropped when it returns (as responses are); those made by the init code
// live as long as the VU, since init code may keep a Selection for its iterations.

const heldDocs = [];
function releaseDocuments() {
  for (const d of heldDocs) d.release();
  heldDocs.length = 0;
}

function hostResult(fn) {
  try {
    return fn();
  } catch (e) {
    throw new Error(typeof e === 'string' ? e : (e && e.val !== undefined ? String(e.val) : String(e)));
  }
}

class Doc {
  constructor(handle) {
    this.h = handle;
    this.nodes = new Map();
    if (loaded) heldDocs.push(this);
  }
  release() {
    const h = this.h;
    this.h = null;
    if (h) h[Symbol.dispose]();
  }
  live() {
    if (!this.h) throw new Error('k6/html: this document was parsed in an earlier iteration and has been freed; parse it again in the iteration that uses it');
    return this.h;
  }
  node(id) {
    let n = this.nodes.get(id);
    if (n === undefined) { n = this.live().node(id); this.nodes.set(id, n); }
    return n;
  }
  select(scope, selector) { return hostResult(() => this.live().select(scope, String(selector))); }
  matches(ids, selector) { return hostResult(() => this.live().matches(ids, String(selector))); }
  isElement(id) { const n = this.node(id); return !!n && n.kind === 'element'; }
  attr(id, name) {
    const n = this.node(id);
    if (!n) return undefined;
    for (const [k, v] of n.attributes) if (k === name) return v;
    return undefined;
  }
}

const sortIds = (ids) => Array.from(new Set(ids)).sort((a, b) => a - b);

// A matcher from a selector, a function (index, Selection) or a Selection.
function matcher(sel, what) {
  if (typeof what === 'function') return (ids) => ids.map((id, i) => !!what.call(new Selection(sel.doc, [id], sel.url), i, new Selection(sel.doc, [id], sel.url)));
  if (what instanceof Selection) { const set = new Set(what.ids); return (ids) => ids.map((id) => set.has(id)); }
  return (ids) => sel.doc.matches(ids, what);
}

function valueOf(doc, id) {
  const n = doc.node(id);
  if (!n || n.kind !== 'element') return undefined;
  switch (n.name) {
    case 'input': {
      const v = doc.attr(id, 'value');
      if (v !== undefined) return v;
      const t = (doc.attr(id, 'type') || '').toLowerCase();
      return t === 'radio' || t === 'checkbox' ? 'on' : '';
    }
    case 'button': { const v = doc.attr(id, 'value'); return v === undefined ? '' : v; }
    case 'textarea': return doc.live().text(id);
    case 'option': { const v = doc.attr(id, 'value'); return v === undefined ? doc.live().text(id) : v; }
    case 'select': {
      const values = doc.live().formFields(id).map(([, v]) => v);
      return doc.attr(id, 'multiple') !== undefined ? values : (values.length ? values[0] : '');
    }
    default: return undefined;
  }
}

function dataValue(v) {
  if (v === 'true') return true;
  if (v === 'false') return false;
  if (v === 'null') return null;
  if (/^-?\d+(\.\d+)?([eE][-+]?\d+)?$/.test(v)) { const n = Number(v); if (String(n) === v) return n; }
  if (/^[[{]/.test(v)) { try { return JSON.parse(v); } catch (_) { /* a plain string */ } }
  return v;
}

class Selection {
  constructor(doc, ids, url, prev) {
    this.doc = doc; this.ids = ids; this.url = url; this._prev = prev;
  }
  get length() { return this.ids.length; }
  _new(ids) { return new Selection(this.doc, sortIds(ids), this.url, this); }
  _walk(step, selector, until) {
    // Nodes reached by `step` from each node (elements only), filtered by `selector`.
    const out = [];
    for (const id of this.ids) {
      for (let cur = step(id, true); cur !== null && cur !== undefined; cur = step(cur, false)) {
        if (!this.doc.isElement(cur)) continue;
        if (until !== undefined && this.doc.matches([cur], until)[0]) break;
        out.push(cur);
      }
    }
    return this._new(this._only(sortIds(out), selector));
  }
  _only(ids, selector) {
    if (selector === undefined) return ids;
    const m = this.doc.matches(ids, selector);
    return ids.filter((_, i) => m[i]);
  }
  _sibling(id, dir) {
    const n = this.doc.node(id);
    if (!n || n.parent === null || n.parent === undefined) return null;
    const kids = this.doc.node(n.parent).children;
    const at = kids.indexOf(id) + dir;
    return at >= 0 && at < kids.length ? kids[at] : null;
  }
  _parentOf(id) { const n = this.doc.node(id); return n && n.parent !== undefined && n.parent !== null && n.parent !== 0 ? n.parent : null; }

  find(selector) { return this._new(this.ids.length ? this.doc.select(this.ids, selector) : []); }
  size() { return this.ids.length; }
  get(i) { const id = this.ids[i < 0 ? this.ids.length + i : i]; return id === undefined ? undefined : new Element(this.doc, id, this.url); }
  toArray() { return this.ids.map((id) => new Selection(this.doc, [id], this.url, this)); }
  first() { return this._new(this.ids.slice(0, 1)); }
  last() { return this._new(this.ids.slice(-1)); }
  eq(i) { const id = this.ids[i < 0 ? this.ids.length + i : i]; return this._new(id === undefined ? [] : [id]); }
  slice(start, end) { return this._new(this.ids.slice(start, end)); }
  end() { return this._prev || this._new([]); }
  add(what) {
    const more = what instanceof Selection ? what.ids : this.doc.select([], what);
    return this._new(this.ids.concat(more));
  }
  filter(what) { const m = matcher(this, what)(this.ids); return this._new(this.ids.filter((_, i) => m[i])); }
  not(what) { const m = matcher(this, what)(this.ids); return this._new(this.ids.filter((_, i) => !m[i])); }
  is(what) { return matcher(this, what)(this.ids).some(Boolean); }
  has(selector) { return this._new(this.ids.filter((id) => this.doc.select([id], selector).length > 0)); }
  children(selector) { return this._walk((id, first) => (first ? (this.doc.node(id).children[0] ?? null) : this._sibling(id, 1)), selector); }
  contents() {
    const out = [];
    for (const id of this.ids) out.push(...this.doc.node(id).children);
    return this._new(out);
  }
  parent(selector) { return this._walk((id, first) => (first ? this._parentOf(id) : null), selector); }
  parents(selector) { return this._walk((id) => this._parentOf(id), selector); }
  parentsUntil(until, filter) { return this._walk((id) => this._parentOf(id), filter, until); }
  closest(selector) {
    const out = [];
    for (const id of this.ids) {
      for (let cur = id; cur !== null; cur = this._parentOf(cur)) {
        if (this.doc.isElement(cur) && this.doc.matches([cur], selector)[0]) { out.push(cur); break; }
      }
    }
    return this._new(out);
  }
  next(selector) { return this._walkOne(1, selector); }
  prev(selector) { return this._walkOne(-1, selector); }
  _walkOne(dir, selector) {
    const out = [];
    for (const id of this.ids) {
      let cur = this._sibling(id, dir);
      while (cur !== null && !this.doc.isElement(cur)) cur = this._sibling(cur, dir);
      if (cur !== null) out.push(cur);
    }
    return this._new(this._only(sortIds(out), selector));
  }
  nextAll(selector) { return this._walk((id) => this._sibling(id, 1), selector); }
  prevAll(selector) { return this._walk((id) => this._sibling(id, -1), selector); }
  nextUntil(until, filter) { return this._walk((id) => this._sibling(id, 1), filter, until); }
  prevUntil(until, filter) { return this._walk((id) => this._sibling(id, -1), filter, until); }
  siblings(selector) {
    const out = [];
    for (const id of this.ids) {
      const p = this.doc.node(id).parent;
      if (p === null || p === undefined) continue;
      for (const c of this.doc.node(p).children) if (c !== id && this.doc.isElement(c)) out.push(c);
    }
    return this._new(this._only(sortIds(out), selector));
  }
  each(fn) {
    this.ids.forEach((id, i) => fn.call(new Element(this.doc, id, this.url), i, new Element(this.doc, id, this.url)));
    return this;
  }
  map(fn) {
    const out = [];
    this.ids.forEach((id, i) => {
      const s = new Selection(this.doc, [id], this.url, this);
      const v = fn.call(s, i, s);
      if (v === null || v === undefined) return;
      if (Array.isArray(v)) out.push(...v); else out.push(v);
    });
    return out;
  }
  attr(name, def) {
    if (!this.ids.length) return def;
    const v = this.doc.attr(this.ids[0], String(name));
    return v === undefined ? def : v;
  }
  text() { return this.ids.map((id) => this.doc.live().text(id)).join(''); }
  html() { return this.ids.length ? this.doc.live().innerHtml(this.ids[0]) : undefined; }
  val() { return this.ids.length ? valueOf(this.doc, this.ids[0]) : undefined; }
  data(key) {
    if (!this.ids.length) return undefined;
    const n = this.doc.node(this.ids[0]);
    const out = {};
    for (const [k, v] of n.attributes) {
      if (!k.startsWith('data-')) continue;
      out[k.slice(5).replace(/-([a-z])/g, (_, c) => c.toUpperCase())] = dataValue(v);
    }
    return key === undefined ? out : out[String(key).replace(/-([a-z])/g, (_, c) => c.toUpperCase())];
  }
  serializeArray() {
    const out = [];
    for (const id of this.ids) for (const [name, value] of this.doc.live().formFields(id)) out.push({ name, value });
    return out;
  }
  serializeObject() {
    const out = {};
    for (const { name, value } of this.serializeArray()) {
      if (name in out) out[name] = [].concat(out[name], value); else out[name] = value;
    }
    return out;
  }
  serialize() { return this.serializeArray().map((f) => `${encodeURIComponent(f.name)}=${encodeURIComponent(f.value)}`).join('&'); }
}

const NODE_TYPES = { element: 1, text: 3, comment: 8, document: 9, doctype: 10, other: 11 };

class Element {
  constructor(doc, id, url) { this._doc = doc; this._id = id; this._url = url; }
  _n() { return this._doc.node(this._id); }
  _el(id) { return id === null || id === undefined ? undefined : new Element(this._doc, id, this._url); }
  _kids(elementsOnly) { return this._n().children.filter((c) => !elementsOnly || this._doc.isElement(c)); }
  _sib(dir, elementsOnly) {
    const p = this._n().parent;
    if (p === null || p === undefined) return undefined;
    const kids = this._doc.node(p).children;
    for (let i = kids.indexOf(this._id) + dir; i >= 0 && i < kids.length; i += dir) {
      if (!elementsOnly || this._doc.isElement(kids[i])) return this._el(kids[i]);
    }
    return undefined;
  }
  selection() { return new Selection(this._doc, [this._id], this._url); }
  nodeName() { return this._n().name; }
  nodeType() { return NODE_TYPES[this._n().kind]; }
  nodeValue() { const n = this._n(); return n.kind === 'text' || n.kind === 'comment' ? n.value : undefined; }
  id() { return this.getAttribute('id') || ''; }
  innerHTML() { return this._doc.live().innerHtml(this._id); }
  outerHTML() { return this._doc.live().outerHtml(this._id); }
  textContent() { return this._doc.live().text(this._id); }
  ownerDocument() { return this._el(0); }
  attributes() {
    const out = {};
    for (const [k, v] of this._n().attributes) out[k] = { name: k, value: v, nodeName: k, nodeValue: v };
    return out;
  }
  firstChild() { return this._el(this._kids(false)[0]); }
  lastChild() { return this._el(this._kids(false).slice(-1)[0]); }
  childElementCount() { return this._kids(true).length; }
  firstElementChild() { return this._el(this._kids(true)[0]); }
  lastElementChild() { return this._el(this._kids(true).slice(-1)[0]); }
  previousSibling() { return this._sib(-1, false); }
  nextSibling() { return this._sib(1, false); }
  previousElementSibling() { return this._sib(-1, true); }
  nextElementSibling() { return this._sib(1, true); }
  parentElement() { const p = this._n().parent; return p && this._doc.isElement(p) ? this._el(p) : undefined; }
  parentNode() { return this._el(this._n().parent); }
  childNodes() { return this._kids(false).map((c) => this._el(c)); }
  children() { return this._kids(true).map((c) => this._el(c)); }
  classList() { return (this.getAttribute('class') || '').split(/\s+/).filter(Boolean); }
  className() { return this.getAttribute('class'); }
  lang() { return this.getAttribute('lang'); }
  toString() { return this._n().kind === 'element' ? `[object html${this._n().name}]` : `[object ${this._n().name}]`; }
  hasAttribute(name) { return this._doc.attr(this._id, String(name)) !== undefined; }
  getAttribute(name) { return this._doc.attr(this._id, String(name)); }
  getAttributeNode(name) { const v = this.getAttribute(name); return v === undefined ? undefined : { name, value: v, nodeName: name, nodeValue: v }; }
  hasAttributes() { return this._n().attributes.length > 0; }
  hasChildNodes() { return this._n().children.length > 0; }
  isSameNode(other) { return other instanceof Element && other._doc === this._doc && other._id === this._id; }
  isEqualNode(other) { return other instanceof Element && other.outerHTML() === this.outerHTML(); }
  getElementsByClassName(name) { return this.querySelectorAll(String(name).split(/\s+/).filter(Boolean).map((c) => `.${c}`).join('')); }
  getElementsByTagName(name) { return this.querySelectorAll(String(name)); }
  querySelector(selector) { return this._el(this._doc.select([this._id], selector)[0]); }
  querySelectorAll(selector) { return this._doc.select([this._id], selector).map((c) => this._el(c)); }
  contains(other) {
    for (let cur = other && other._id; cur !== null && cur !== undefined; cur = this._doc.node(cur).parent) if (cur === this._id) return true;
    return false;
  }
  matches(selector) { return this._doc.matches([this._id], selector)[0]; }
  namespaceURI() { return 'http://www.w3.org/1999/xhtml'; }
  isDefaultNamespace(ns) { return ns === 'http://www.w3.org/1999/xhtml'; }
  // Form controls and links, as k6's element types give them.
  value() { return valueOf(this._doc, this._id); }
  name() { return this.getAttribute('name'); }
  type() { return this.getAttribute('type'); }
  href() { const h = this.getAttribute('href'); return h === undefined || !this._url ? h : resolveUrl(this._url, h); }
  action() { const a = this.getAttribute('action'); return a === undefined || !this._url ? a : resolveUrl(this._url, a); }
  method() { return (this.getAttribute('method') || 'get').toLowerCase(); }
  checked() { return this.hasAttribute('checked'); }
  disabled() { return this.hasAttribute('disabled'); }
  selected() { return this.hasAttribute('selected'); }
  text() { return this.textContent(); }
}

// `ref` resolved against the absolute URL `base` by the host, as a browser would.
function resolveUrl(base, ref) {
  return hostResult(() => hostHtml.resolve(String(base), String(ref)));
}

function parseHTML(src) {
  const doc = new Doc(new hostHtml.Document(String(src)));
  return new Selection(doc, [0], '');
}

function responseDocument(res) {
  if (res._doc && res._doc.h) return res._doc;
  let doc;
  if (res._slot >= 0) doc = new Doc(hostResponses.documentOf(res._slot));
  else if (typeof res.body === 'string') doc = new Doc(new hostHtml.Document(res.body));
  else throw new Error(`response.html(): the response from ${res.url} has no text body (status ${res.status}, responseType ${res._type})`);
  Object.defineProperty(res, '_doc', { value: doc, writable: true, enumerable: false });
  return doc;
}

function responseHtml(res, selector) {
  const sel = new Selection(responseDocument(res), [0], res.url);
  return selector === undefined ? sel : sel.find(selector);
}

// The form's fields as the host's `submission` gives them (hidden inputs kept, the
// pressed button's own, method, action and encoding as a browser takes them), with
// `fields` set over them: a name given replaces every field of that name.
function submitForm(res, args) {
  args = args || {};
  const formSelector = args.formSelector || 'form';
  const submitSelector = args.submitSelector || '[type="submit"]';
  const form = responseHtml(res).find(formSelector).first();
  if (!form.size()) throw new Error(`submitForm: no form found for selector '${formSelector}' in response '${res.url}'`);
  const submit = form.find(submitSelector).first();
  const sub = hostResult(() => form.doc.live().submission(form.ids[0], submit.size() ? submit.ids[0] : null, res.url));
  const given = args.fields || {};
  const pairs = sub.fields.filter(([name]) => !(name in given));
  for (const k in given) {
    const v = given[k];
    for (const x of Array.isArray(v) ? v : [v]) pairs.push([k, x === null || x === undefined ? '' : String(x)]);
  }
  const encoded = pairs.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join('&');
  const params = Object.assign({}, args.params || {});
  const headers = Object.assign({}, params.headers || {});
  if (sub.method === 'GET') {
    const u = sub.url.replace(/[?#].*$/, '');
    return request('GET', encoded ? `${u}?${encoded}` : u, null, params);
  }
  let body;
  if (sub.enctype === 'multipart/form-data') {
    const boundary = `----k6html${Math.floor(Math.random() * 1e16).toString(36)}`;
    const esc = (n) => n.replace(/"/g, '%22').replace(/\r/g, '%0D').replace(/\n/g, '%0A');
    body = pairs.map(([k, v]) => `--${boundary}\r\nContent-Disposition: form-data; name="${esc(k)}"\r\n\r\n${v}\r\n`).join('') + `--${boundary}--\r\n`;
    headers['Content-Type'] = `multipart/form-data; boundary=${boundary}`;
  } else if (sub.enctype === 'text/plain') {
    body = pairs.map(([k, v]) => `${k}=${v}\r\n`).join('');
    headers['Content-Type'] = 'text/plain';
  } else {
    body = encoded;
    headers['Content-Type'] = 'application/x-www-form-urlencoded';
  }
  params.headers = headers;
  return request(sub.method, sub.url, body, params);
}

function clickLink(res, args) {
  args = args || {};
  const selector = args.selector || 'a[href]';
  const link = responseHtml(res).find(selector).first();
  if (!link.size()) throw new Error(`clickLink: no element found for selector '${selector}' in response '${res.url}'`);
  const href = link.attr('href');
  if (href === undefined) throw new Error(`clickLink: no valid href attribute value found on element '${selector}' in response '${res.url}'`);
  return request('GET', resolveUrl(res.url, href), null, args.params);
}

const k6html = { parseHTML };

// ---------------------------------------------------------------- k6/ws, k6/websockets, k6/timers
//
// Both of k6's WebSocket APIs over the host's `websocket` import (so the host records
// ws_sessions, ws_msgs_sent, ... as for any plugin). The host's socket is pull-based
// (`recv(timeout)`), so the callbacks run from a loop here: `ws.connect` (k6/ws) runs
// its socket's loop until the socket closes; the WebSocket class, `k6/timers` and the
// global setTimeout/setInterval share one loop that runs after the iteration function
// returns, until no socket or timer is left (k6's event loop).

// A loop's state: its timers (id → {fn, at, every, args}), its sockets and the
// callbacks queued to run on its next turn.
function newLoop() { return { timers: new Map(), sockets: new Set(), queue: [] }; }
let timerIds = 0;

function addTimer(loop, fn, ms, repeat, args) {
  if (typeof fn !== 'function') throw new TypeError('setTimeout/setInterval need a function');
  const every = Math.max(0, Number(ms) || 0);
  const id = ++timerIds;
  asyncSeen = true;
  loop.timers.set(id, { fn, at: Date.now() + every, every: repeat ? Math.max(1, every) : 0, args });
  return id;
}

// The first tick of an interval after `now`, on its grid `at + n × every`.
function nextTick(at, every, now) {
  const next = at + every;
  return next > now ? next : next + Math.ceil((now - next + 1) / every) * every;
}

// Receives from one socket for up to `ms` (0: only what has arrived) and not past
// `until` (a time as Date.now() reads it: the next timer's; Infinity when none) for a
// WebSocket; whether anything happened (a message, or the socket's end).
function pollSocket(s, ms, until) {
  if (s.poll) return s.poll(ms); // a gRPC stream
  // Arithmetic, not Math.max/min/round: each native call costs the interpreter
  // 1-4 k operations, and this runs once per message received.
  ms = ms > 0 ? (ms < 2147483647 ? (ms + 0.5) | 0 : 2147483647) : 0;
  // A text message comes as a string (`sockets.recv-text`), not as a result holding
  // an option holding a variant; the host stops waiting at `until`, so the loop needs
  // no clock read per message.
  const t = hostSockets.recvText(s.handle, until, ms);
  if (t !== null && t !== undefined) {
    s.text(t);
    return true;
  }
  // Nothing came, `until` passed, or a binary message or the end is next: the
  // contract's receive gives the last two, at once.
  if (until !== Infinity && Date.now() >= until) return false;
  let m;
  try {
    m = s.handle.recv(0);
  } catch (e) {
    s.ended(e);
    return true;
  }
  if (m === null || m === undefined) return false;
  s.received(m);
  return true;
}

// Turns the loop until `done()` or nothing is left to wait for. It runs once per
// message a socket receives (capacity.js: 200 live views, ~4,000 pushes a second), so
// a turn allocates nothing when no timer is due and one socket is open: no array of
// due timers, no copy of the socket set, the clock read only when a timer exists.
function runLoop(loop, done) {
  for (;;) {
    while (loop.queue.length) loop.queue.shift()();
    if (microtasks.length) drainMicrotasks(); // what the callbacks' promises resume
    // The asyncRequests the script started before it yielded, sent together; their
    // promises' jobs run on the next turn.
    if (asyncQueue.length) { flushAsync(); continue; }
    if (done()) return;
    let now = 0;
    let next = Infinity;
    let due = null;
    if (loop.timers.size) {
      now = Date.now();
      loop.timers.forEach((t, id) => {
        if (t.at <= now) (due || (due = [])).push([id, t]);
        else if (t.at < next) next = t.at;
      });
    }
    if (due !== null) {
      due.sort((a, b) => a[1].at - b[1].at || a[0] - b[0]);
      for (const [id, t] of due) {
        if (!loop.timers.has(id)) continue; // cleared by an earlier callback
        // An interval keeps its schedule (start + n × every), as k6's Go ticker does:
        // re-arming from `now` would let it drift behind a timeout set for the same
        // moment (demo-visitor's last inbox poll and its close). Missed ticks are
        // skipped, not run late in a burst.
        if (t.every) t.at = nextTick(t.at, t.every, now); else loop.timers.delete(id);
        t.fn(...(t.args || []));
        while (loop.queue.length) loop.queue.shift()();
        if (microtasks.length) drainMicrotasks();
        if (asyncQueue.length) break; // sent at the top of the loop, before the next timer
        if (done()) return;
      }
      continue;
    }
    // The open sockets: the first, and all of them only when there are several.
    let first = null;
    let open = null;
    for (const s of loop.sockets) {
      if (!s.open) continue;
      if (first === null) first = s;
      else (open || (open = [first])).push(s);
    }
    if (first === null) {
      if (!loop.timers.size) return;
      sleep((next - now) / 1000);
      continue;
    }
    let wait = next === Infinity ? 1000 : Math.max(1, next - now);
    if (open === null) {
      // One socket: receive message after message here while nothing else can have
      // become due (no callback, job or asyncRequest queued, no timer added, the next
      // timer not reached),
      // rather than re-walking the timers and sockets per message. A cleared timer
      // only ends this early, at the time it would have run.
      // A WebSocket's receive stops at the next timer itself (`until`); a gRPC
      // stream's is given what is left of the wait after each message.
      const ids = timerIds;
      const stream = first.poll !== undefined;
      if (!stream && next !== Infinity) wait = 2147483647;
      while (pollSocket(first, wait, next) && first.open && timerIds === ids && !loop.queue.length
        && !microtasks.length && !asyncQueue.length && !done()) {
        if (stream && next !== Infinity) {
          now = Date.now();
          if (now >= next) break;
          wait = next - now;
        }
      }
    } else {
      // The host waits on one socket at a time: take what has arrived on each, then
      // wait briefly on the first, so no socket waits more than ~10 ms behind another.
      let any = false;
      for (const s of open) if (pollSocket(s, 0, next)) any = true;
      if (!any) pollSocket(first, Math.min(wait, 10), next);
    }
  }
}

function wsError(e) {
  if (e && typeof e === 'object' && e.tag) return `${e.tag}: ${Array.isArray(e.val) ? e.val.join(' ') : e.val}`;
  return String(e);
}

function messageData(m, asBuffer) {
  if (m.tag === 'text') return m.val;
  const bytes = m.val instanceof Uint8Array ? m.val : new Uint8Array(m.val);
  return asBuffer ? bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) : bytes;
}

function wsConnectHost(url, params) {
  params = params || {};
  const headers = [];
  const h = params.headers || {};
  for (const k in h) if (h[k] !== undefined && h[k] !== null) headers.push([k, String(h[k])]);
  return hostWs.Socket.connect(String(url), headers, tagList(params.tags));
}

let pingWarned = false;
function warnPing() {
  if (pingWarned) return;
  pingWarned = true;
  hostVu.log('warn', 'ping(): the host answers and sends WebSocket pings itself; a script\'s ping is not sent and no pong event fires (docs/k6-compatibility.md)');
}

// k6/ws: `ws.connect(url, params, fn)` runs until the socket closes.
class K6Socket {
  constructor(handle, loop) {
    this._handle = handle; this._loop = loop; this._on = {}; this.open = true; this._closing = false;
    const self = this;
    this._entry = {
      handle, open: true,
      text(t) { self._emit('message', t); },
      received(m) {
        if (m.tag === 'text') self._emit('message', m.val);
        else { const b = messageData(m, true); self._emit('binaryMessage', b); self._emit('binary', b); }
      },
      ended(e) {
        self._end(e && e.tag === 'closed' ? Number(e.val[0]) : 1006, e && e.tag !== 'closed' ? wsError(e) : null);
      },
    };
    asyncSeen = true;
    loop.sockets.add(this._entry);
  }
  on(event, fn) { (this._on[event] = this._on[event] || []).push(fn); }
  // One argument, no rest array or spread: `message` is emitted once per message.
  _emit(event, arg) {
    const fns = this._on[event];
    if (fns !== undefined) for (let i = 0; i < fns.length; i++) fns[i](arg);
  }
  _end(code, error) {
    if (!this._entry.open) return;
    this._entry.open = false; this.open = false;
    if (error) this._emit('error', { error: () => error, toString: () => error });
    this._emit('close', code);
    this._loop.timers.clear();
    try { this._handle[Symbol.dispose](); } catch (_) { /* already gone */ }
  }
  send(text) {
    if (!this._entry.open) return;
    try { this._handle.sendText(String(text)); } catch (e) { this._end(1006, wsError(e)); }
  }
  sendBinary(data) {
    if (!this._entry.open) return;
    try { this._handle.sendBinary(toBytes(data)); } catch (e) { this._end(1006, wsError(e)); }
  }
  ping() { warnPing(); }
  close(code) {
    if (!this._entry.open) return;
    let err = null;
    try { this._handle.close(code === undefined ? 1000 : Number(code), ''); } catch (e) { if (!(e && e.tag === 'closed')) err = wsError(e); }
    this._end(code === undefined ? 1000 : Number(code), err);
  }
  setTimeout(fn, ms) { return addTimer(this._loop, fn, ms, false, []); }
  setInterval(fn, ms) { return addTimer(this._loop, fn, ms, true, []); }
  clearTimeout(id) { this._loop.timers.delete(id); }
  clearInterval(id) { this._loop.timers.delete(id); }
}

function wsConnect(url, params, fn) {
  if (typeof params === 'function') { fn = params; params = null; }
  let handle;
  try {
    handle = wsConnectHost(url, params);
  } catch (e) {
    throw new Error(`ws.connect ${url}: ${wsError(e)}`);
  }
  const loop = newLoop();
  const socket = new K6Socket(handle, loop);
  if (typeof fn === 'function') fn(socket);
  socket._emit('open');
  runLoop(loop, () => !socket.open);
  if (socket.open) socket.close(); // nothing left to wait for: k6 would wait forever
  return { status: 101, url: String(url), headers: {}, body: '', error: '' };
}

const k6ws = { connect: wsConnect };

// The loop of the WebSocket class and the global timers: run after the iteration.
const mainLoop = newLoop();

const READY = { CONNECTING: 0, OPEN: 1, CLOSING: 2, CLOSED: 3 };

// k6/experimental/websockets (and k6/websockets): the browser's WebSocket.
class WebSocket {
  constructor(url, protocols, params) {
    if (protocols && !(Array.isArray(protocols) && !protocols.length)) {
      throw new Error('WebSocket: subprotocols are not supported here (docs/k6-compatibility.md)');
    }
    this.url = String(url);
    this.readyState = READY.CONNECTING;
    this.binaryType = 'blob';
    this.bufferedAmount = 0;
    this.protocol = '';
    this.onopen = null; this.onmessage = null; this.onerror = null; this.onclose = null;
    this._listeners = {};
    const self = this;
    this._entry = {
      handle: null, open: false,
      text(t) { self._dispatch('message', { type: 'message', data: t, origin: self.url }); },
      received(m) {
        self._dispatch('message', { type: 'message', data: messageData(m, true), origin: self.url });
      },
      ended(e) {
        if (e && e.tag === 'closed') self._end(Number(e.val[0]), String(e.val[1] || ''), null);
        else self._end(1006, '', wsError(e));
      },
    };
    asyncSeen = true;
    mainLoop.sockets.add(this._entry);
    try {
      this._entry.handle = wsConnectHost(url, params);
    } catch (e) {
      const msg = wsError(e);
      mainLoop.queue.push(() => this._end(1006, '', msg));
      return;
    }
    mainLoop.queue.push(() => {
      if (this.readyState !== READY.CONNECTING) return;
      this.readyState = READY.OPEN;
      this._entry.open = true;
      this._dispatch('open', { type: 'open' });
    });
  }
  addEventListener(type, fn) { (this._listeners[type] = this._listeners[type] || []).push(fn); }
  removeEventListener(type, fn) {
    const l = this._listeners[type];
    if (l) { const i = l.indexOf(fn); if (i >= 0) l.splice(i, 1); }
  }
  _dispatch(type, event) {
    const own = this[`on${type}`];
    if (typeof own === 'function') own.call(this, event);
    for (const fn of (this._listeners[type] || []).slice()) fn.call(this, event);
  }
  _end(code, reason, error) {
    if (this.readyState === READY.CLOSED) return;
    this.readyState = READY.CLOSED;
    this._entry.open = false;
    mainLoop.sockets.delete(this._entry);
    if (error) this._dispatch('error', { type: 'error', error });
    this._dispatch('close', { type: 'close', code, reason, wasClean: !error });
    if (this._entry.handle) { try { this._entry.handle[Symbol.dispose](); } catch (_) { /* gone */ } }
  }
  send(data) {
    if (this.readyState !== READY.OPEN) throw new Error('WebSocket.send: the socket is not open');
    try {
      if (typeof data === 'string') this._entry.handle.sendText(data);
      else this._entry.handle.sendBinary(toBytes(data));
    } catch (e) { this._end(1006, '', wsError(e)); }
  }
  ping() { warnPing(); }
  close(code, reason) {
    if (this.readyState === READY.CLOSED || this.readyState === READY.CLOSING) return;
    const c = code === undefined ? 1000 : Number(code);
    const r = reason === undefined ? '' : String(reason);
    let err = null;
    if (this._entry.handle) {
      try { this._entry.handle.close(c, r); } catch (e) { if (!(e && e.tag === 'closed')) err = wsError(e); }
    }
    this._end(c, r, err);
  }
}
Object.assign(WebSocket, READY);

const k6websockets = { WebSocket };

const timers = {
  setTimeout: (fn, ms, ...args) => addTimer(mainLoop, fn, ms, false, args),
  setInterval: (fn, ms, ...args) => addTimer(mainLoop, fn, ms, true, args),
  clearTimeout: (id) => { mainLoop.timers.delete(id); },
  clearInterval: (id) => { mainLoop.timers.delete(id); },
};
Object.assign(globalThis, timers);

// After the iteration function: what its sockets and timers still have to do.
function runMainLoop() {
  if (mainLoop.queue.length || mainLoop.timers.size || mainLoop.sockets.size || asyncQueue.length) runLoop(mainLoop, () => false);
}

// An iteration that failed leaves nothing behind for the next one.
function resetMainLoop() {
  resetMicrotasks();
  asyncQueue.length = 0;
  mainLoop.queue.length = 0;
  mainLoop.timers.clear();
  for (const s of mainLoop.sockets) {
    if (s.handle) { try { s.handle[Symbol.dispose](); } catch (_) { /* gone */ } }
  }
  mainLoop.sockets.clear();
}

// ---------------------------------------------------------------- async: the layer's Promise, microtasks, the driver
//
// The runtime runs no promise jobs once a call into the component returns (its
// synchronous export path never drains QuickJS's job queue), so the engine's own
// Promise would never call a `then` callback. The layer has its own: the global
// `Promise` is `LayerPromise`, whose jobs go on the layer's microtask queue, drained at
// the end of every call into the script (init, setup, each iteration, teardown,
// handleSummary) and after every timer and socket callback. `async` functions were
// rewritten at build time into generator functions that `__k6async` drives
// (host/src/author/js/asyncs.rs): each `yield` is an `await`, resumed with the settled
// value of what it yielded. Jobs run in the order the language gives them (a `then`
// on a settled promise: one turn; resolving with a thenable: one more turn to call
// its `then`), so `.then` chains and `Promise.all` interleave as they do in k6.

// Jobs are pairs (function, argument), so queueing one allocates nothing.
const microtasks = [];
let microtaskHead = 0;

// Runs every queued job, and the jobs they queue, until none is left. A job may drain
// too (a socket loop inside `ws.connect` called from a job): it takes up the same queue.
function drainMicrotasks() {
  while (microtaskHead < microtasks.length) {
    const job = microtasks[microtaskHead];
    const arg = microtasks[microtaskHead + 1];
    microtasks[microtaskHead] = undefined;
    microtasks[microtaskHead + 1] = undefined;
    microtaskHead += 2;
    job(arg);
  }
  microtasks.length = 0;
  microtaskHead = 0;
}

// A failed iteration leaves no jobs for the next one.
function resetMicrotasks() {
  microtasks.length = 0;
  microtaskHead = 0;
  unhandledRejections.clear();
  uncaughtErrors.length = 0;
}

const P_PENDING = 0;
const P_FULFILLED = 1;
const P_REJECTED = 2;
// Rejected promises nobody has handled yet (k6 fails the iteration with
// "Uncaught (in promise)" for one left at its end), and errors thrown by
// queueMicrotask callbacks.
const unhandledRejections = new Set();
const uncaughtErrors = [];
// Whether the VU ever made a promise, a timer, a socket or a queued job: until then
// no call can have left work to settle, and an iteration skips looking (the sizes
// of the queues, maps and sets cost about 3 k wasm operations per iteration).
let asyncSeen = false;

function newPromise() {
  asyncSeen = true;
  const p = Object.create(LayerPromise.prototype);
  p._state = P_PENDING; p._value = undefined; p._reactions = []; p._handled = false;
  return p;
}

function settlePromise(p, state, value) {
  if (p._state !== P_PENDING) return;
  p._state = state;
  p._value = value;
  const reactions = p._reactions;
  p._reactions = null;
  if (state === P_REJECTED && !p._handled) unhandledRejections.add(p);
  for (const r of reactions) { r.from = p; microtasks.push(runReaction, r); }
}

// The language's promise resolve function: a thenable's `then` is called on a later
// turn (PromiseResolveThenableJob), anything else fulfils.
function resolvePromise(p, x) {
  if (p._state !== P_PENDING) return;
  if (x === p) { settlePromise(p, P_REJECTED, new TypeError('Chaining cycle detected for promise')); return; }
  if (x !== null && (typeof x === 'object' || typeof x === 'function')) {
    let then;
    try { then = x.then; } catch (e) { settlePromise(p, P_REJECTED, e); return; }
    if (typeof then === 'function') {
      microtasks.push(resolveThenableJob, { p, x, then });
      return;
    }
  }
  settlePromise(p, P_FULFILLED, x);
}

function resolveThenableJob(job) {
  const [res, rej] = resolvingFunctions(job.p);
  try { job.then.call(job.x, res, rej); } catch (e) { rej(e); }
}

// A resolve/reject pair of which only the first call counts.
function resolvingFunctions(p) {
  let done = false;
  return [
    (v) => { if (!done) { done = true; resolvePromise(p, v); } },
    (e) => { if (!done) { done = true; settlePromise(p, P_REJECTED, e); } },
  ];
}

// `r`: { onOk, onErr, child }; with no child (the driver's own await) the callbacks are
// the layer's and do not throw.
function addReaction(p, r) {
  if (p._state === P_PENDING) {
    p._reactions.push(r);
  } else {
    if (p._state === P_REJECTED && !p._handled) unhandledRejections.delete(p);
    r.from = p;
    microtasks.push(runReaction, r);
  }
  p._handled = true;
}

// The job of reaction `r` to the settled promise `r.from`.
function runReaction(r) {
  const state = r.from._state;
  const value = r.from._value;
  const fn = state === P_FULFILLED ? r.onOk : r.onErr;
  if (r.child === null) { fn(value); return; }
  if (typeof fn !== 'function') {
    if (state === P_FULFILLED) resolvePromise(r.child, value); else settlePromise(r.child, P_REJECTED, value);
    return;
  }
  let out;
  try { out = fn(value); } catch (e) { settlePromise(r.child, P_REJECTED, e); return; }
  resolvePromise(r.child, out);
}

function isLayerPromise(v) { return v instanceof LayerPromise && v.constructor === LayerPromise; }

// Each item of an iterable as a promise (Promise.all and its kin), or a TypeError.
function promiseItems(items, what) {
  if (items === null || items === undefined || typeof items[Symbol.iterator] !== 'function') {
    throw new TypeError(`${what} needs an iterable (an array of promises or values)`);
  }
  return Array.from(items, (x) => LayerPromise.resolve(x));
}

// The global Promise (the engine's own never runs its callbacks here).
class LayerPromise {
  constructor(executor) {
    if (typeof executor !== 'function') throw new TypeError('Promise resolver is not a function');
    asyncSeen = true;
    this._state = P_PENDING; this._value = undefined; this._reactions = []; this._handled = false;
    const [res, rej] = resolvingFunctions(this);
    try { executor(res, rej); } catch (e) { rej(e); }
  }
  then(onOk, onErr) {
    if (this === null || typeof this !== 'object' || this._reactions === undefined) throw new TypeError('Promise.prototype.then called on an object that is not a Promise');
    const child = newPromise();
    addReaction(this, { onOk, onErr, child, from: null });
    return child;
  }
  catch(onErr) { return this.then(undefined, onErr); }
  finally(fn) {
    if (typeof fn !== 'function') return this.then(fn, fn);
    return this.then(
      (v) => LayerPromise.resolve(fn()).then(() => v),
      (e) => LayerPromise.resolve(fn()).then(() => { throw e; }),
    );
  }
  static resolve(v) {
    if (isLayerPromise(v)) return v;
    const p = newPromise();
    resolvePromise(p, v);
    return p;
  }
  static reject(e) {
    const p = newPromise();
    settlePromise(p, P_REJECTED, e);
    return p;
  }
  static withResolvers() {
    const p = newPromise();
    const [resolve, reject] = resolvingFunctions(p);
    return { promise: p, resolve, reject };
  }
  static all(items) {
    return new LayerPromise((resolve, reject) => {
      const list = promiseItems(items, 'Promise.all');
      const values = new Array(list.length);
      let left = list.length;
      if (!left) resolve(values);
      list.forEach((p, i) => p.then((v) => { values[i] = v; if (--left === 0) resolve(values); }, reject));
    });
  }
  static allSettled(items) {
    return new LayerPromise((resolve) => {
      const list = promiseItems(items, 'Promise.allSettled');
      const values = new Array(list.length);
      let left = list.length;
      if (!left) resolve(values);
      const done = (i, v) => { values[i] = v; if (--left === 0) resolve(values); };
      list.forEach((p, i) => p.then(
        (value) => done(i, { status: 'fulfilled', value }),
        (reason) => done(i, { status: 'rejected', reason }),
      ));
    });
  }
  static race(items) {
    return new LayerPromise((resolve, reject) => {
      for (const p of promiseItems(items, 'Promise.race')) p.then(resolve, reject);
    });
  }
  static any(items) {
    return new LayerPromise((resolve, reject) => {
      const list = promiseItems(items, 'Promise.any');
      const errors = new Array(list.length);
      let left = list.length;
      const fail = () => {
        const e = typeof AggregateError === 'function' ? new AggregateError(errors, 'All promises were rejected') : new Error('All promises were rejected');
        e.errors = errors;
        reject(e);
      };
      if (!left) fail();
      list.forEach((p, i) => p.then(resolve, (e) => { errors[i] = e; if (--left === 0) fail(); }));
    });
  }
}
Object.defineProperty(LayerPromise.prototype, Symbol.toStringTag, { value: 'Promise' });
Object.defineProperty(LayerPromise, 'name', { value: 'Promise' });
globalThis.Promise = LayerPromise;
globalThis.queueMicrotask = (fn) => {
  if (typeof fn !== 'function') throw new TypeError('queueMicrotask needs a function');
  asyncSeen = true;
  microtasks.push(runUserJob, fn);
};

function runUserJob(fn) {
  try { fn(); } catch (e) { uncaughtErrors.push(e); }
}

// The driver of a rewritten `async` function: runs the generator `body` (with the
// function's `this` and, where it reads them, its `arguments`) up to each `yield` (an
// `await`) and resumes it with the settled value of what it yielded, on a later turn.
function __k6async(self, args, body) {
  const gen = args === null ? body.call(self) : body.apply(self, args);
  const p = newPromise();
  let onOk = null;
  let onErr = null;
  const step = (method, arg) => {
    let r;
    try { r = gen[method](arg); } catch (e) { settlePromise(p, P_REJECTED, e); return; }
    if (r.done) { resolvePromise(p, r.value); return; }
    const v = r.value;
    if (isLayerPromise(v)) { addReaction(v, { onOk, onErr, child: null, from: null }); return; }
    // Not a thenable (a Response, a number): resumed on the next turn, as a promise
    // fulfilled with it would resume it, without making that promise.
    if (v === null || (typeof v !== 'object' && typeof v !== 'function')) { microtasks.push(onOk, v); return; }
    let then;
    try { then = v.then; } catch (e) { microtasks.push(onErr, e); return; }
    if (typeof then !== 'function') { microtasks.push(onOk, v); return; }
    addReaction(LayerPromise.resolve(v), { onOk, onErr, child: null, from: null });
  };
  onOk = (v) => step('next', v);
  onErr = (e) => step('throw', e);
  step('next', undefined);
  return p;
}

// What a call into the script left behind: its jobs and (k6's event loop) its timers
// and sockets are run; then `returned`, or the value it settled with if it is a promise.
// A rejection throws (a failed iteration, with the error's stack), as does a rejection
// nobody handled ("Uncaught (in promise)", as k6 reports it).
let warnedPending = false;
function settleCall(returned, what) {
  if (microtasks.length) drainMicrotasks();
  runMainLoop();
  let out = returned;
  if (returned instanceof LayerPromise) {
    unhandledRejections.delete(returned);
    returned._handled = true;
    if (returned._state === P_REJECTED) {
      unhandledRejections.clear();
      throw returned._value;
    }
    if (returned._state === P_PENDING) {
      out = undefined;
      if (!warnedPending) {
        warnedPending = true;
        hostVu.log('warn', `the promise ${what} returned was still pending when nothing was left to wait for (no timer, socket or job): the call ends there, as in k6`);
      }
    } else {
      out = returned._value;
    }
  }
  throwUncaught();
  return out;
}

// After init code: its jobs, and what they left unhandled.
function settleInit() {
  if (microtasks.length) drainMicrotasks();
  throwUncaught();
}

function throwUncaught() {
  if (uncaughtErrors.length) {
    const e = uncaughtErrors[0];
    uncaughtErrors.length = 0;
    unhandledRejections.clear();
    throw e;
  }
  if (!unhandledRejections.size) return;
  const [first] = unhandledRejections;
  unhandledRejections.clear();
  const e = first._value;
  if (e instanceof Error) {
    e.message = `Uncaught (in promise) ${e.message}`;
    throw e;
  }
  throw new Error(`Uncaught (in promise) ${format(e)}`);
}

// k6/http's asyncRequest: k6 starts the request at once and lets the script go on, so
// requests a script starts before it awaits them are in flight together. Here a VU's
// requests go through the host's imports, which block the VU's one thread of JS, so
// the request is queued and its promise left pending; the queue is sent the next time
// the script yields (an `await`, the end of its call, a timer or socket turn) or makes
// a request of its own: one request alone as `http.request` sends it, several at once
// as `http.batch` sends them (in parallel, within `batch` and `batchPerHost`). Each
// promise then settles with its Response, or rejects with what `http.request` would
// have thrown. An iteration that fails with requests still queued sends them before
// it ends (k6 had started them), though nothing waits for their answers.
const asyncQueue = []; // request, promise, request, promise, ...
function asyncRequest(method, url, body, params) {
  if (phase !== 'iteration' && phase !== 'setup' && phase !== 'teardown') {
    // Init code and handleSummary: no turn of the event loop follows to send it.
    try {
      return LayerPromise.resolve(request(method, url, body, params));
    } catch (e) {
      return LayerPromise.reject(e);
    }
  }
  let req;
  try {
    req = buildRequest(method, url, body, params);
  } catch (e) {
    return LayerPromise.reject(e);
  }
  const p = newPromise();
  asyncQueue.push(req, p);
  return p;
}

// Sends the queued asyncRequests together and settles their promises.
function flushAsync() {
  const queued = asyncQueue.splice(0);
  const reqs = [];
  for (let i = 0; i < queued.length; i += 2) reqs.push(queued[i]);
  let words;
  try {
    words = reqs.length === 1 ? [hostResponses.send(reqs[0])] : hostResponses.sendBatch(reqs);
  } catch (e) {
    for (let i = 1; i < queued.length; i += 2) settlePromise(queued[i], P_REJECTED, e);
    return;
  }
  for (let i = 0; i < reqs.length; i++) {
    // `answer` throws what `http.request` would have thrown: the promise rejects with it.
    try {
      settlePromise(queued[2 * i + 1], P_FULFILLED, answer(reqs[i], words[i]));
    } catch (e) {
      settlePromise(queued[2 * i + 1], P_REJECTED, e);
    }
  }
}
k6http.asyncRequest = asyncRequest;

// ---------------------------------------------------------------- k6/net/grpc
//
// k6's gRPC client over the host's `grpc` import: the host holds the channel (one
// HTTP/2 connection of the VU), compiles the .proto files, asks reflection, makes the
// calls and records grpc_req_duration, grpc_reqs, grpc_streams and the stream message
// counts, as for any plugin. The .proto files that `load` names were read when the
// script was built (bundle.rs, protos.rs) and are in BUNDLE.protos; the protosets that
// `loadProtoset` names (protosets.rs) are in BUNDLE.protosets. The host carries
// grpc.health.v1, which `healthCheck` calls.

const GRPC_STATUS = {
  StatusOK: 0, StatusCanceled: 1, StatusUnknown: 2, StatusInvalidArgument: 3,
  StatusDeadlineExceeded: 4, StatusNotFound: 5, StatusAlreadyExists: 6,
  StatusPermissionDenied: 7, StatusResourceExhausted: 8, StatusFailedPrecondition: 9,
  StatusAborted: 10, StatusOutOfRange: 11, StatusUnimplemented: 12, StatusInternal: 13,
  StatusUnavailable: 14, StatusDataLoss: 15, StatusUnauthenticated: 16,
};

// grpc.health.v1.HealthCheckResponse.ServingStatus, under k6's names (k6 spells the
// last one HealthCheckServiceUnkown; both are given).
const GRPC_HEALTH = {
  HealthCheckUnknown: 0, HealthCheckServing: 1, HealthCheckNotServing: 2,
  HealthCheckServiceUnknown: 3, HealthCheckServiceUnkown: 3,
};
const SERVING_STATUS = { UNKNOWN: 0, SERVING: 1, NOT_SERVING: 2, SERVICE_UNKNOWN: 3 };

// Whether the script's init code is running (k6: `load` only there, `connect` never).
let inInitCode = false;

// Metadata as grpc-go gives it to k6: names in lower case, each a list of values; the
// status fields of the trailers are not metadata.
function grpcMetadata(list) {
  const out = {};
  for (const [k, v] of list || []) {
    const name = k.toLowerCase();
    if (name === 'grpc-status' || name === 'grpc-message' || name === 'grpc-status-details-bin') continue;
    (out[name] = out[name] || []).push(v);
  }
  return out;
}

function grpcCallOptions(params, what) {
  params = params || {};
  for (const k of Object.keys(params)) {
    if (!['metadata', 'tags', 'timeout', 'discardResponseMessage'].includes(k)) {
      throw new Error(`${what}: unknown parameter ${JSON.stringify(k)} (metadata, tags, timeout, discardResponseMessage)`);
    }
  }
  const metadata = [];
  const md = params.metadata || {};
  for (const k in md) {
    const v = md[k];
    if (v === undefined || v === null) continue;
    const name = k.toLowerCase();
    // k6 sends an ArrayBuffer (or a string) under a `-bin` name as binary metadata.
    if (typeof v !== 'string') {
      if (!name.endsWith('-bin')) throw new Error(`${what}: metadata ${k} must be a string (binary values need a name ending in -bin)`);
      metadata.push([name, b64encode(v, 'rawstd')]);
    } else {
      metadata.push([name, name.endsWith('-bin') ? b64encode(v, 'rawstd') : v]);
    }
  }
  return {
    options: {
      metadata,
      timeoutMs: params.timeout === undefined || params.timeout === null ? null : parseDuration(params.timeout, `${what}: timeout`),
      tags: tagList(params.tags),
      expectedCodes: [],
    },
    discard: !!params.discardResponseMessage,
  };
}

// An import's error variant ({tag, val}): the runtime throws an Error carrying it as
// `payload`.
function hostError(e) {
  return e instanceof Error && e.payload && typeof e.payload === 'object' && e.payload.tag ? e.payload : e;
}

// A failed call as k6's response: the status and the error object ({code, message}).
function grpcFailure(e) {
  e = hostError(e);
  if (!(e && typeof e === 'object' && e.tag)) throw e;
  if (e.tag === 'denied' || e.tag === 'invalid') throw new Error(`${e.tag}: ${e.val}`);
  if (e.tag === 'status') {
    const st = e.val;
    return {
      status: st.code, message: null, headers: grpcMetadata(st.headers), trailers: grpcMetadata(st.trailers),
      error: { code: st.code, message: st.message, details: [] },
    };
  }
  // What grpc-go reports for each: the deadline, an unreachable or refused peer, a
  // broken protocol.
  const code = e.tag === 'deadline' ? 4 : e.tag === 'protocol' ? 13 : 14;
  const message = e.tag === 'deadline' ? 'context deadline exceeded' : `${e.tag}: ${e.val}`;
  return { status: code, message: null, headers: {}, trailers: {}, error: { code, message, details: [] } };
}

function grpcErrorText(e) {
  e = hostError(e);
  if (e && typeof e === 'object' && e.tag === 'status') return `status ${e.val.code}: ${e.val.message}`;
  return wsError(e);
}

function grpcMethodName(method, what) {
  if (method === undefined || method === null || method === '') throw new Error(`${what}: method to invoke cannot be empty`);
  return String(method);
}

// The methods of a .proto's services: {package, service, full_method, name,
// is_client_stream, is_server_stream}, what k6's load returns.
function protoMethods(source) {
  const src = source.replace(/\/\/[^\n]*|\/\*[\s\S]*?\*\//g, '');
  const pkg = (/\bpackage\s+([\w.]+)\s*;/.exec(src) || [])[1] || '';
  const out = [];
  const svcRe = /\bservice\s+(\w+)\s*\{/g;
  let m;
  while ((m = svcRe.exec(src))) {
    // The service's body: up to its matching brace (methods may have option blocks).
    let depth = 1, i = svcRe.lastIndex;
    while (i < src.length && depth) { if (src[i] === '{') depth++; else if (src[i] === '}') depth--; i++; }
    const body = src.slice(svcRe.lastIndex, i);
    const rpcRe = /\brpc\s+(\w+)\s*\(\s*(stream\s+)?[\w.]+\s*\)\s*returns\s*\(\s*(stream\s+)?/g;
    let r;
    while ((r = rpcRe.exec(body))) {
      out.push({
        package: pkg, service: m[1], full_method: `/${pkg ? pkg + '.' : ''}${m[1]}/${r[1]}`,
        name: r[1], is_client_stream: !!r[2], is_server_stream: !!r[3],
      });
    }
  }
  return out;
}

// k6's connect param `tls` ({cert, key, password, cacerts}: PEM text, as open() reads
// it) as the host's channel-tls.
function grpcTlsMaterial(tls) {
  if (tls === undefined || tls === null) return null;
  if (typeof tls !== 'object' || Array.isArray(tls)) {
    throw new Error(`invalid tls value: '${String(tls)}', expected (optional) keys: cert, key, password, and cacerts`);
  }
  for (const k of Object.keys(tls)) {
    if (!['cert', 'key', 'password', 'cacerts'].includes(k)) throw new Error(`invalid tls value: unknown key ${JSON.stringify(k)}, expected (optional) keys: cert, key, password, and cacerts`);
  }
  const pem = (v, what) => {
    if (v === undefined || v === null || v === '') return null;
    if (typeof v !== 'string') throw new Error(`invalid tls ${what} value: it needs to be a PEM formatted string`);
    return v;
  };
  if (tls.password !== undefined && tls.password !== null && tls.password !== '') {
    throw new Error('client.connect: tls.password (an encrypted key) is not supported by this host: decrypt the key first (openssl pkey -in key.pem -out plain.pem) and give it without a password');
  }
  let cas = tls.cacerts === undefined || tls.cacerts === null ? [] : tls.cacerts;
  if (!Array.isArray(cas)) cas = [cas];
  const caCerts = cas.map((c) => pem(c, 'cacerts')).filter((c) => c !== null);
  const m = { clientCert: pem(tls.cert, 'cert'), clientKey: pem(tls.key, 'key'), caCerts };
  return m.clientCert === null && m.clientKey === null && !caCerts.length ? null : m;
}

// k6's reflectMetadata ({name: value}) as metadata pairs.
function grpcReflectMetadata(md) {
  if (md === undefined || md === null) return [];
  if (typeof md !== 'object' || Array.isArray(md)) throw new Error('invalid reflectMetadata param: it needs to be an object of strings');
  const out = [];
  for (const k of Object.keys(md)) {
    if (typeof md[k] !== 'string') throw new Error(`invalid reflectMetadata param: the value of ${k} needs to be a string`);
    out.push([k.toLowerCase(), md[k]]);
  }
  return out;
}

// `rpc error: code = NotFound desc = ...`, as grpc-go words a failed call.
function grpcRpcError(e) {
  e = hostError(e);
  if (e && typeof e === 'object' && e.tag === 'status') {
    const name = Object.keys(GRPC_STATUS).find((k) => GRPC_STATUS[k] === e.val.code);
    return `rpc error: code = ${name ? name.slice(6) : `Code(${e.val.code})`} desc = ${e.val.message}`;
  }
  return grpcErrorText(e);
}

class GrpcClient {
  constructor() {
    this._protos = [];
    this._names = new Set();
    this._sets = [];
    this._setNames = new Set();
    this._channel = null;
    this._addr = null;
  }

  // k6: load(importPaths, ...protoFiles), in the init code; the files come from the
  // bundle, where the build put them.
  load(importPaths, ...files) {
    if (!inInitCode) throw new Error('load must be called in the init context');
    const protos = BUNDLE.protos || {};
    const methods = [];
    for (const f of files) {
      const list = protos[String(f)];
      if (!list) throw new Error(`client.load: ${f} was not bundled by host build (load needs literal paths or __ENV values set at build time)`);
      for (const p of list) {
        if (this._names.has(p.name)) continue;
        this._names.add(p.name);
        this._protos.push(p);
      }
      // The methods of the files' services, as k6 returns them.
      for (const p of list) methods.push(...protoMethods(p.source));
    }
    return methods;
  }

  // k6: loadProtoset(path), in the init code; the file came from the bundle, decoded
  // once here (the init code runs when the component is built).
  loadProtoset(path) {
    if (!inInitCode) throw new Error('load must be called in the init context');
    const set = (BUNDLE.protosets || {})[String(path)];
    if (!set) throw new Error(`client.loadProtoset: ${path} was not bundled by host build (loadProtoset needs a literal path or an __ENV value set at build time)`);
    if (!this._setNames.has(String(path))) {
      this._setNames.add(String(path));
      this._sets.push(b64decodeBytes(set.b64));
    }
    return set.methods.map((m) => Object.assign({}, m));
  }

  connect(address, params) {
    if (inInitCode || phase === 'describe') throw new Error('connecting to a gRPC server in the init context is not supported');
    params = params || {};
    for (const k of Object.keys(params)) {
      if (!['plaintext', 'reflect', 'timeout', 'tls', 'maxReceiveSize', 'maxSendSize', 'reflectMetadata', 'authority'].includes(k)) {
        throw new Error(`client.connect: unknown parameter ${JSON.stringify(k)}`);
      }
    }
    const tlsMaterial = params.plaintext ? null : grpcTlsMaterial(params.tls);
    const reflectMetadata = grpcReflectMetadata(params.reflectMetadata);
    if (this._channel) this.close();
    const timeoutMs = params.timeout === undefined || params.timeout === null ? null : parseDuration(params.timeout, 'client.connect: timeout');
    try {
      this._channel = hostGrpc.Channel.open(String(address), {
        tls: !params.plaintext,
        protos: this._protos.map((p) => ({ name: p.name, source: p.source })),
        descriptorSets: this._sets,
        reflect: !!params.reflect,
        reflectMetadata,
        tlsMaterial,
        timeoutMs,
      });
    } catch (e) {
      throw new Error(`client.connect ${address}: ${grpcErrorText(e)}`);
    }
    this._addr = String(address);
    return true;
  }

  _call(method, request, params) {
    if (inInitCode || phase === 'describe') throw new Error('invoking RPC methods in the init context is not supported');
    if (!this._channel) throw new Error('no gRPC connection, you must call connect first');
    method = grpcMethodName(method, 'client.invoke');
    if (request === undefined || request === null) throw new Error('request cannot be nil');
    const { options, discard } = grpcCallOptions(params, 'client.invoke');
    // k6's default deadline of a unary call: 2 minutes.
    if (options.timeoutMs === null) options.timeoutMs = 120000;
    let res;
    try {
      res = this._channel.invoke(method, JSON.stringify(request), options);
    } catch (e) {
      return grpcFailure(e);
    }
    return {
      status: res.status.code,
      message: discard || res.message === null || res.message === undefined ? null : JSON.parse(res.message),
      headers: grpcMetadata(res.status.headers),
      trailers: grpcMetadata(res.status.trailers),
      error: null,
    };
  }

  invoke(method, request, params) { return this._call(method, request, params); }

  // k6: healthCheck(service?) calls grpc.health.v1.Health/Check (the host carries its
  // descriptors) and gives {status} (a HealthCheck* constant); a failed call throws.
  healthCheck(service) {
    if (inInitCode || phase === 'describe') throw new Error('invoking RPC methods in the init context is not supported');
    if (!this._channel) throw new Error('no gRPC connection, you must call connect first');
    const request = JSON.stringify({ service: service === undefined || service === null ? '' : String(service) });
    let res;
    try {
      // k6 gives no deadline; the unary default here (2 minutes) keeps a VU from waiting forever.
      res = this._channel.invoke('grpc.health.v1.Health/Check', request, { metadata: [], timeoutMs: 120000, tags: [], expectedCodes: [] });
    } catch (e) {
      throw new Error(grpcRpcError(e));
    }
    const status = JSON.parse(res.message).status;
    return { status: typeof status === 'number' ? status : (SERVING_STATUS[status] || 0) };
  }

  // The call is made now (the VU's one thread makes it: two asyncInvoke calls do not
  // overlap); its promise (the layer's) is already settled, and its callbacks run on
  // the layer's microtask queue, as k6's do on its event loop.
  asyncInvoke(method, request, params) {
    try {
      return LayerPromise.resolve(this._call(method, request, params));
    } catch (e) {
      return LayerPromise.reject(e);
    }
  }

  close() {
    if (!this._channel) return;
    try { this._channel[Symbol.dispose](); } catch (_) { /* already gone */ }
    this._channel = null;
  }
}

// k6's Stream: `new Stream(client, method, params)`, events `data`, `error`, `end`,
// `write(message)`, `end()`. Messages from the server are delivered by the layer's
// event loop (the same as the WebSocket class's), after the iteration function returns.
class GrpcStream {
  constructor(client, method, params) {
    if (!(client instanceof GrpcClient)) throw new Error('invalid GRPC Stream\'s client: not a gRPC client');
    if (!client._channel) throw new Error('invalid GRPC Stream\'s client: no gRPC connection, you must call connect first');
    method = grpcMethodName(method, 'new Stream');
    const { options, discard } = grpcCallOptions(params, 'new Stream');
    this._discard = discard;
    this._on = {};
    this._writing = true;
    try {
      this._info = client._channel.describeMethod(method);
      this._handle = client._channel.openStream(method, options);
    } catch (e) {
      throw new Error(`failed to create a new stream: ${grpcErrorText(e)}`);
    }
    const self = this;
    this._entry = {
      handle: this._handle, open: true,
      poll(ms) { return self._poll(ms); },
    };
    asyncSeen = true;
    mainLoop.sockets.add(this._entry);
  }

  on(event, fn) {
    if (typeof fn !== 'function') throw new Error(`handler for ${JSON.stringify(event)} event isn't a callable function`);
    if (!['data', 'error', 'end'].includes(event)) {
      hostVu.log('warn', `can't register ${event} event handler: unknown event (data, error, end)`);
      return;
    }
    (this._on[event] = this._on[event] || []).push(fn);
  }

  _emit(event, arg) {
    const meta = { ts: Math.floor(Date.now() / 1000) };
    for (const fn of this._on[event] || []) fn(arg, meta);
  }

  write(message) {
    if (!this._writing || !this._entry.open) return;
    if (message === undefined || message === null) { hostVu.log('warn', 'can\'t send empty message'); return; }
    try {
      this._handle.send(JSON.stringify(message));
    } catch (e) {
      this._fail(e);
      return;
    }
    // The host half-closes a server stream after its one request.
    if (!this._info.clientStreaming) this._writing = false;
  }

  end() {
    if (!this._writing) return;
    this._writing = false;
    if (!this._entry.open) return;
    try { this._handle.closeSend(); } catch (e) { this._fail(e); }
  }

  // One turn of the loop: waits up to `ms` for a message or the end; whether
  // anything happened.
  _poll(ms) {
    let item;
    try {
      item = this._handle.recv(Math.max(0, Math.min(Math.round(ms), 2147483647)));
    } catch (e) {
      this._fail(e);
      return true;
    }
    if (item.tag === 'timeout') return false;
    if (item.tag === 'message') {
      if (!this._discard) this._emit('data', JSON.parse(item.val));
      else this._emit('data', {});
      return true;
    }
    this._close();
    this._emit('end', {});
    return true;
  }

  _close() {
    this._entry.open = false;
    this._writing = false;
    mainLoop.sockets.delete(this._entry);
    try { this._handle[Symbol.dispose](); } catch (_) { /* already gone */ }
  }

  // A status other than OK, or a failure: `error` with k6's object, then `end`.
  _fail(e) {
    e = hostError(e);
    if (!this._entry.open) return;
    this._close();
    const r = e && typeof e === 'object' && e.tag && e.tag !== 'invalid' && e.tag !== 'denied' ? grpcFailure(e) : { error: { code: 2, message: grpcErrorText(e), details: [] } };
    if (!(this._on.error || []).length) hostVu.log('warn', `no handlers for error registered, but an error happened: ${r.error.message}`);
    this._emit('error', r.error);
    this._emit('end', {});
  }
}

const k6grpc = Object.assign({ Client: GrpcClient, Stream: GrpcStream }, GRPC_STATUS, GRPC_HEALTH);

const MODULES = {
  'k6': Object.assign({ default: k6 }, k6),
  'k6/http': Object.assign({ default: k6http }, k6http),
  'k6/metrics': Object.assign({ default: k6metrics }, k6metrics),
  'k6/execution': { default: execution },
  'k6/data': { default: { SharedArray }, SharedArray },
  'k6/encoding': { default: { b64encode, b64decode }, b64encode, b64decode },
  'k6/crypto': Object.assign({ default: k6crypto }, k6crypto),
  'k6-summary': Object.assign({ default: k6summary }, k6summary),
  'k6/html': Object.assign({ default: k6html }, k6html),
  'k6/ws': Object.assign({ default: k6ws }, k6ws),
  'k6/experimental/websockets': Object.assign({ default: k6websockets }, k6websockets),
  'k6/websockets': Object.assign({ default: k6websockets }, k6websockets),
  'k6/timers': Object.assign({ default: timers }, timers),
  'k6/net/grpc': Object.assign({ default: k6grpc }, k6grpc),
};

// ---------------------------------------------------------------- the bundle

let phase = 'describe';
let loaded = null; // the entry module's exports, once the init code has run
let setupData = null;

function load() {
  if (loaded) return loaded;
  // Before any of the script's code: its init code may draw random numbers too.
  // Math.random is seeded on its first draw, not here: seeding reads the clocks and the
  // VU's info, which made about 20 of the snapshot's pages private in every VU (measured
  // with bench/js/vumem.py), and an idle script never draws.
  Math.random = lazyRandom;
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
  inInitCode = true;
  try {
    loaded = require(BUNDLE.entry);
    settleInit();
  } finally {
    inInitCode = false;
  }
  runOptions = loaded.options || {};
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
    endCall();
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
  for (const name of Object.keys(scenarios)) {
    // Global tags go on every scenario; a scenario's own tags win.
    const s = o.tags ? Object.assign({}, scenarios[name], { tags: Object.assign({}, o.tags, scenarios[name].tags || {}) }) : scenarios[name];
    out.push(scenarioToml(name, s));
  }
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
  // k6 counts setup()'s and teardown()'s requests in http_reqs (a teardown that polls
  // a queue until it drains adds hundreds): the host leaves them out unless told.
  const http = ['count_setup = true'];
  if (o.maxRedirects !== undefined) http.push(`max_redirects = ${Number(o.maxRedirects)}`);
  if (o.batch !== undefined) http.push(`batch = ${Number(o.batch)}`);
  if (o.batchPerHost !== undefined) http.push(`batch_per_host = ${Number(o.batchPerHost)}`);
  if (o.noCookiesReset !== undefined) http.push(`no_cookies_reset = ${!!o.noCookiesReset}`);
  if (o.userAgent !== undefined) http.push(`user_agent = ${JSON.stringify(String(o.userAgent))}`);
  out.push('[http]', ...http);
  if (o.insecureSkipTLSVerify) out.push('[tls]', 'insecure_skip_verify = true');
  // The trend columns of the summary; the host checks the names (and --summary-trend-stats
  // overrides them).
  if (o.summaryTrendStats !== undefined) {
    if (!Array.isArray(o.summaryTrendStats)) throw new Error('options.summaryTrendStats must be an array such as ["avg", "p(95)"]');
    out.push('[summary]', `trend_stats = ${tomlValue(o.summaryTrendStats.map(String))}`);
  }
  // The host has one limit for setup() and teardown(): the larger of the two.
  const limit = [o.setupTimeout, o.teardownTimeout].filter((v) => v !== undefined)
    .map((v) => parseDuration(v, 'options.setupTimeout/teardownTimeout'));
  if (limit.length) out.push('[limits]', `setup_timeout = ${JSON.stringify(`${Math.max(...limit)}ms`)}`);
  return out.join('\n') + '\n';
}

// ---------------------------------------------------------------- the plugin export

function scenarioNames(mod) {
  return Object.keys(mod).filter((k) => typeof mod[k] === 'function' && !['setup', 'teardown', 'handleSummary'].includes(k));
}

// Declares the custom metrics the init code made, so that the host refuses before the
// run a threshold on a metric nothing records (k6 refuses one on an unknown metric too).
// The tags the thresholds select are declared with any value: a script may set any tag.
function declareMetrics(o) {
  const tags = new Set();
  for (const key of Object.keys(o.thresholds || {})) {
    const m = /\{(.*)\}$/.exec(key);
    if (!m) continue;
    for (const pair of m[1].split(',')) {
      const name = pair.split(':')[0].trim();
      if (name) tags.add(name);
    }
  }
  hostMetrics.declare(
    [...metricsMade].map(([name, kind]) => ({ name, kind })),
    [...tags].map((name) => ({ name, values: [] })),
  );
}

function describeScript() {
  phase = 'describe';
  const mod = load();
  const names = scenarioNames(mod);
  declareMetrics(mod.options || {});
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
      const data = typeof mod.setup === 'function' ? settleCall(mod.setup(), 'setup()') : undefined;
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
    info = null; groupPath = ''; checkAt = 0;
    phase = 'iteration';
    const fn = (loaded || load())[scenario];
    if (typeof fn !== 'function') throw `the script exports no function ${scenario}`;
    // The clock is read only for a minimum duration (each read is a WASI call). The
    // monotonic clock, not Date.now(): whole milliseconds on both reads could count up
    // to 1 ms too many and end the iteration short of the minimum (149.9 of 150 ms).
    const paced = runOptions.minIterationDuration !== undefined;
    const started = paced ? performance.now() : 0;
    try {
      const returned = fn(setupData);
      // An iteration that returned nothing and left nothing (no job, timer, socket
      // or uncaught error) has nothing to settle: the common case skips the call.
      if (returned !== undefined || (asyncSeen && (microtasks.length !== 0 || asyncQueue.length !== 0 || mainLoop.queue.length !== 0
        || mainLoop.timers.size !== 0 || mainLoop.sockets.size !== 0 || uncaughtErrors.length !== 0
        || unhandledRejections.size !== 0))) {
        settleCall(returned, `the function ${scenario}`);
      }
      if (paced) {
        const rest = parseDuration(runOptions.minIterationDuration, 'options.minIterationDuration') - (performance.now() - started);
        // The host sleeps whole milliseconds: rounded up, never short.
        if (rest > 0) hostVu.sleep(Math.ceil(rest));
      }
    } catch (e) {
      if (asyncQueue.length !== 0) { try { flushAsync(); } catch (_) { /* the iteration's own error is the one to report */ } }
      resetMainLoop();
      throw failure(e);
    } finally {
      endCall();
    }
  },
  teardown(data) {
    return guard('teardown', () => {
      phase = 'teardown'; info = null;
      const mod = load();
      if (typeof mod.teardown === 'function') settleCall(mod.teardown(JSON.parse(data || 'null')), 'teardown()');
    });
  },
};

// ---------------------------------------------------------------- handleSummary

// The `summary` export (contract 0.3.3): the host calls it once after the run with
// k6's handleSummary data; each key of what the script returns is `stdout`, `stderr`
// or a file name (written into the results folder), each value a string or bytes.
export const summary = {
  handleSummary(data) {
    return guard('handleSummary', () => {
      phase = 'teardown'; info = null;
      const mod = load();
      if (typeof mod.handleSummary !== 'function') return [];
      const out = settleCall(mod.handleSummary(JSON.parse(data)), 'handleSummary()');
      if (out === undefined || out === null) return [];
      if (typeof out !== 'object') throw new Error(`handleSummary must return an object of outputs, not ${typeof out}`);
      return Object.keys(out).map((to) => {
        const v = out[to];
        if (typeof v === 'string') return [to, utf8Encode(v)];
        if (v instanceof ArrayBuffer || ArrayBuffer.isView(v)) return [to, toBytes(v)];
        throw new Error(`handleSummary: the value for ${JSON.stringify(to)} must be a string or an ArrayBuffer, not ${v === null ? 'null' : typeof v}`);
      });
    });
  },
};
