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

// At the end of every call into the script: slots, then k6/html documents. The
// call's responses are looked at here, not in a function of their own (an
// interpreted call less at the end of every iteration): the ones the script still
// holds are kept past the call.
function endCall() {
  if (kept.length !== 0) releaseDropped();
  if (freshN !== 0) {
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
    if (kept.length > 2 * MAX_KEPT) trimKept();
  }
  if (heldDocs.length !== 0) releaseDocuments(); // k6/html
}

// Past 2 * MAX_KEPT kept responses, all but the last MAX_KEPT are read into the layer
// (or released, when dropped).
function trimKept() {
  const old = kept.slice(0, kept.length - MAX_KEPT);
  kept = kept.slice(kept.length - MAX_KEPT);
  for (let i = 0; i < old.length; i += 2) {
    const r = old[i].deref();
    if (r !== undefined && r._slot >= 0) r._readAll();
    else hostResponses.release(old[i + 1]);
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
    const value = { method: req.method, url: req.url, headers: Object.fromEntries(req.headers), body: typeof req.body === 'string' ? req.body : req.body ? utf8Decode(req.body) : '' };
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
    const path = String(selector);
    // A selector of one name (`r.json('id')`, the common case) without the split's array.
    if (path.indexOf('.') < 0) {
      if (v === null || v === undefined) return undefined;
      return path === '#' && Array.isArray(v) ? v.length : v[path];
    }
    for (const part of path.split('.')) {
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

// The shapes a Response goes through as its constructor adds its fields, kept alive by
// objects made here (in the snapshot), one per step. QuickJS finds a shape again only
// while some object holds it: without these, each `new Response` made a shape of its
// own, grew it six times and freed it with the response; with them each field added is
// a lookup of the next shape. The fields' names and order are the constructor's (both
// branches add them in this order).
const RESPONSE_FIELDS = ['_req', 'status', 'url', '_slot', 'error', 'error_code'];
const responseShapes = RESPONSE_FIELDS.concat([null]).map((_, n) => {
  const o = Object.create(Response.prototype);
  for (let i = 0; i < n; i++) o[RESPONSE_FIELDS[i]] = null;
  return o;
});

// The Response of a send's number; a failure throws when the options say `throw`.
function answer(req, word) {
  const res = new Response(req, word, null);
  if ((word | 0) < 0 && runOptions.throw) throw new Error(`${req.method} ${req.url}: ${res.error}`);
  return res;
}

