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
  if (req.body !== null || !iterating) return null;
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

// The entry an earlier call made for this one, or undefined: the method, group and
// response callback in force, then the params' names, and their fields' names and
// values, in the same order (`===`: a value of another type, or NaN, is no match and
// goes the long way). Object.keys, not for-in: QuickJS's for-in lists the prototype
// chain's names too (6 k wasm operations for a one-field object, against 3.7 k). The
// params are compared here, not by a function of their own: an interpreted call
// costs QuickJS more than the loop.
function quickFind(method, url, params) {
  let e = quickRequests.get(url);
  if (e === undefined) return undefined;
  const names = params ? Object.keys(params) : NO_PARAMS.names;
  const n = names.length;
  entries: for (; e !== undefined; e = e.next) {
    if (e.method !== method || e.group !== groupPath || e.version !== keyVersion) continue;
    const shape = e.shape;
    const pn = shape.names;
    if (n !== pn.length) continue;
    for (let j = 0; j < n; j++) {
      const p = names[j];
      if (p !== pn[j]) continue entries;
      const v = params[p];
      if (v === null || typeof v !== 'object') continue entries;
      const keys = Object.keys(v);
      const flat = shape.fields[j];
      if (keys.length * 2 !== flat.length) continue entries;
      for (let m = 0; m < keys.length; m++) {
        const k = keys[m];
        if (k !== flat[2 * m] || v[k] !== flat[2 * m + 1]) continue entries;
      }
    }
    return e;
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

