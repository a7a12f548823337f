// ---------------------------------------------------------------- k6/http: auth 'digest'

// `params.auth = 'digest'` with the credentials in the URL, as k6's: the request goes
// without them; a 401 whose WWW-Authenticate is a Digest challenge is answered once,
// with RFC 7616's MD5 (or MD5-sess) response and, when offered, qop=auth (both
// requests are counted, as k6 counts them).
function digestParams(challenge) {
  const out = {};
  const re = /([a-zA-Z][a-zA-Z0-9_-]*)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^,\s]*))/g;
  let m;
  while ((m = re.exec(challenge)) !== null) {
    out[m[1].toLowerCase()] = m[2] !== undefined ? m[2].replace(/\\(.)/g, '$1') : m[3];
  }
  return out;
}

function digestMd5(text) { return k6crypto.md5(text, 'hex'); }

function digestAuthorization(method, url, user, pass, challenge) {
  const c = digestParams(challenge.replace(/^\s*digest\s+/i, ''));
  const algorithm = (c.algorithm || 'MD5').toUpperCase();
  if (algorithm !== 'MD5' && algorithm !== 'MD5-SESS') {
    throw new Error(`auth 'digest': the server asks for algorithm ${c.algorithm}; only MD5 and MD5-sess are supported here`);
  }
  if (c.nonce === undefined || c.realm === undefined) throw new Error("auth 'digest': the server's challenge has no realm or nonce");
  const m = /^[a-z][a-z0-9+.-]*:\/\/[^/?#]*([^#]*)/i.exec(url);
  const uri = m && m[1] ? m[1] : '/';
  const cnonce = Array.from(new Uint8Array(k6crypto.randomBytes(8)), (b) => b.toString(16).padStart(2, '0')).join('');
  const nc = '00000001';
  let ha1 = digestMd5(`${user}:${c.realm}:${pass}`);
  if (algorithm === 'MD5-SESS') ha1 = digestMd5(`${ha1}:${c.nonce}:${cnonce}`);
  const ha2 = digestMd5(`${method}:${uri}`);
  const qops = (c.qop || '').split(',').map((q) => q.trim());
  const quote = (s) => `"${String(s).replace(/(["\\])/g, '\\$1')}"`;
  const parts = [`username=${quote(user)}`, `realm=${quote(c.realm)}`, `nonce=${quote(c.nonce)}`, `uri=${quote(uri)}`];
  if (qops.includes('auth')) {
    parts.push(`response=${quote(digestMd5(`${ha1}:${c.nonce}:${nc}:${cnonce}:auth:${ha2}`))}`, 'qop=auth', `nc=${nc}`, `cnonce=${quote(cnonce)}`);
  } else if (c.qop !== undefined) {
    throw new Error(`auth 'digest': the server offers qop ${c.qop}; only auth is supported here`);
  } else {
    parts.push(`response=${quote(digestMd5(`${ha1}:${c.nonce}:${ha2}`))}`);
  }
  parts.push(`algorithm=${c.algorithm || 'MD5'}`);
  if (c.opaque !== undefined) parts.push(`opaque=${quote(c.opaque)}`);
  return `Digest ${parts.join(', ')}`;
}

function digestRequest(req) {
  const { user, pass } = req.digest;
  const res = answer(req, hostResponses.send(req));
  if (res.status !== 401) return res;
  let challenge = null;
  for (const k in res.headers) {
    if (k.toLowerCase() === 'www-authenticate' && /^\s*digest\s/i.test(String(res.headers[k]))) challenge = String(res.headers[k]);
  }
  if (challenge === null) return res;
  const authorization = digestAuthorization(req.method, req.url, user, pass, challenge);
  const again = Object.assign({}, req, { headers: req.headers.concat([['Authorization', authorization]]) });
  return answer(again, hostResponses.send(again));
}
