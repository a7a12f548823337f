// ---------------------------------------------------------------- k6/http: jars of the script's own

// `new http.CookieJar()`: cookies kept in the VU's layer, matched as RFC 6265 (and Go's
// cookiejar, which k6 uses) match them: host-only or domain cookies, path prefixes,
// Secure for https only, expiry. A cookie for a domain the URL is not in is dropped, as
// k6 drops it. A request sent with `params.jar` set to such a jar stores the response's
// Set-Cookie fields in it (redirects followed by the host do not: their cookies are not
// seen here).
function jarUrl(url) {
  const m = /^([a-z][a-z0-9+.-]*):\/\/([^/?#]*)([^?#]*)/i.exec(url);
  if (!m) throw new Error(`cookie jar: ${JSON.stringify(url)} is not an absolute URL`);
  const host = m[2].replace(/^[^@]*@/, '').replace(/:\d+$/, '').replace(/^\[|\]$/g, '').toLowerCase();
  return { secure: m[1].toLowerCase() === 'https', host, path: m[3] || '/' };
}

function defaultPath(path) {
  const i = path.lastIndexOf('/');
  return i <= 0 ? '/' : path.slice(0, i);
}

function domainMatch(host, domain) {
  return host === domain || (host.endsWith(`.${domain}`) && !/^[0-9.]+$/.test(host));
}

function pathMatch(path, cookiePath) {
  if (path === cookiePath) return true;
  if (!path.startsWith(cookiePath)) return false;
  return cookiePath.endsWith('/') || path[cookiePath.length] === '/';
}

class LocalJar {
  constructor() { this.cookies = []; }

  set(url, name, value, opts) {
    const u = jarUrl(url);
    let domain = opts.domain ? String(opts.domain).toLowerCase().replace(/^\./, '') : null;
    if (domain !== null && !domainMatch(u.host, domain)) return; // another domain: dropped
    const hostOnly = domain === null;
    if (hostOnly) domain = u.host;
    const path = opts.path ? String(opts.path) : defaultPath(u.path);
    let expires = null;
    if (opts.max_age !== undefined && opts.max_age !== null) expires = Date.now() + Number(opts.max_age) * 1000;
    else if (opts.expires) { const t = Date.parse(String(opts.expires)); if (!Number.isNaN(t)) expires = t; }
    this.cookies = this.cookies.filter((c) => !(c.name === name && c.domain === domain && c.path === path));
    if (expires !== null && expires <= Date.now()) return; // an expiry in the past deletes it
    this.cookies.push({ name, value, domain, hostOnly, path, secure: !!opts.secure, expires });
  }

  // One Set-Cookie field of a response to `url`.
  setCookieField(url, field) {
    const parts = String(field).split(';');
    const eq = parts[0].indexOf('=');
    if (eq <= 0) return;
    const opts = {};
    for (const attr of parts.slice(1)) {
      const i = attr.indexOf('=');
      const k = (i < 0 ? attr : attr.slice(0, i)).trim().toLowerCase();
      const v = i < 0 ? '' : attr.slice(i + 1).trim();
      if (k === 'domain') opts.domain = v;
      else if (k === 'path' && v.startsWith('/')) opts.path = v;
      else if (k === 'max-age' && /^-?\d+$/.test(v)) opts.max_age = Number(v);
      else if (k === 'expires') opts.expires = v;
      else if (k === 'secure') opts.secure = true;
    }
    this.set(url, parts[0].slice(0, eq).trim(), parts[0].slice(eq + 1).trim(), opts);
  }

  matching(url) {
    const u = jarUrl(url);
    const now = Date.now();
    this.cookies = this.cookies.filter((c) => c.expires === null || c.expires > now);
    return this.cookies
      .filter((c) => (c.hostOnly ? u.host === c.domain : domainMatch(u.host, c.domain))
        && pathMatch(u.path, c.path) && (!c.secure || u.secure))
      .sort((a, b) => b.path.length - a.path.length);
  }

  cookiesFor(url) {
    const out = {};
    for (const c of this.matching(url)) (out[c.name] = out[c.name] || []).push(c.value);
    return out;
  }

  clear(url) {
    const gone = new Set(this.matching(url));
    this.cookies = this.cookies.filter((c) => !gone.has(c));
  }

  delete(url, name) {
    const gone = new Set(this.matching(url).filter((c) => c.name === name));
    this.cookies = this.cookies.filter((c) => !gone.has(c));
  }
}

function localJarRequest(req) {
  const res = answer(req, hostResponses.send(req));
  if (res._slot >= 0) {
    for (const [k, v] of res._rawHeaders()) if (k === 'set-cookie') req.localJar.setCookieField(res.url || req.url, v);
  }
  return res;
}
