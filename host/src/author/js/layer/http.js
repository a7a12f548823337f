function request(method, url, body, params) {
  if (asyncQueue.length !== 0) flushAsync();
  const quick = (body === null || body === undefined) && typeof url === 'string' && iterating && !(params && (params.auth || params.jar));
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
  if (req.digest) return digestRequest(req);
  if (req.localJar) return localJarRequest(req);
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

// The VU's jar is the host's (`http.cookieJar()`, every request's by default); a jar
// made with `new http.CookieJar()` is the script's own, held here (localjar.js), and
// a request given it as `params.jar` sends its cookies and keeps the response's in it,
// leaving the VU's jar out.
class CookieJar {
  constructor() {
    Object.defineProperty(this, '_local', { value: vuJarMade ? new LocalJar() : null });
  }
  cookiesForURL(url) {
    if (this._local) return this._local.cookiesFor(String(url));
    const out = {};
    for (const [k, v] of hostCookies.cookiesFor(String(url))) (out[k] = out[k] || []).push(v);
    return out;
  }
  set(url, name, value, opts) {
    opts = opts || {};
    if (this._local) { this._local.set(String(url), String(name), String(value), opts); return; }
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
  clear(url) { if (this._local) this._local.clear(String(url)); else hostCookies.clear(String(url)); }
  delete(url, name) { if (this._local) this._local.delete(String(url), String(name)); else hostCookies.delete(String(url), String(name)); }
}
let vuJarMade = false;
const jar = new CookieJar();
vuJarMade = true;

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
    const quick = typeof u === 'string' && iterating && !(params && (params.auth || params.jar));
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

