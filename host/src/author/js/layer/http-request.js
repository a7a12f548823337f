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
  // The regular expression only for a URL with an `@` (it needs one): matching it cost
  // ~20 k guest instructions per request.
  const cred = url.indexOf('@') >= 0 ? CREDENTIALS.exec(url) : null;
  const auth = params.auth === undefined || params.auth === null ? 'basic' : String(params.auth).toLowerCase();
  if (auth !== 'basic' && auth !== 'digest') {
    throw new Error(`params.auth ${JSON.stringify(params.auth)} is not supported here (basic, digest)`);
  }
  let digest = null;
  if (cred) {
    url = cred[1] + url.slice(cred[0].length);
    const colon = cred[2].indexOf(':');
    const user = decodeURIComponent(colon < 0 ? cred[2] : cred[2].slice(0, colon));
    const pass = colon < 0 ? '' : decodeURIComponent(cred[2].slice(colon + 1));
    if (auth === 'digest') digest = { user, pass };
    else if (!hasAuth) headers.push(['Authorization', `Basic ${b64encode(`${user}:${pass}`)}`]);
  }
  // A jar of the script's own (`new http.CookieJar()`): its cookies, not the VU's.
  const localJar = params.jar && params.jar._local ? params.jar._local : null;
  if (localJar) {
    const own = localJar.cookiesFor(url);
    const pairs = [];
    for (const k in own) for (const v of own[k]) pairs.push(`${k}=${v}`);
    if (pairs.length && !(params.cookies && Object.keys(params.cookies).length)) headers.push(['Cookie', pairs.join('; ')]);
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
      bytes = formEncode(body);
      if (!hasType) headers.push(['Content-Type', 'application/x-www-form-urlencoded']);
    } else {
      // A text body goes to the host as the string: the runtime encodes it as UTF-8 in
      // its C (what utf8Encode did, a lone surrogate as its three bytes too), where the
      // layer's loop spent two interpreted steps per character.
      bytes = typeof body === 'string' ? body : toBytes(body);
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
      noCookieJar: localJar !== null,
    },
    responseType,
    digest,
    localJar,
  };
}

