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

