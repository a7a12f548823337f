// ---------------------------------------------------------------- WebCrypto (global crypto)
//
// k6's `crypto` global: getRandomValues and randomUUID from the host's cryptographic
// generator, and `crypto.subtle` whose every operation the host does
// (loadtest:k6-layer/crypto, imported in prelude.js; host/src/crypto/). A CryptoKey's bytes stay in a WeakMap of
// this module, out of the script's reach as WebCrypto hides them; they cross to the host
// with each operation (the host keeps no keys).

class WebCryptoError extends Error {
  constructor(name, message) { super(message); this.name = name; }
}

// The host's `result` errors arrive as a thrown value carrying the string.
function cryptoCall(name, fn) {
  try {
    return fn();
  } catch (e) {
    if (e instanceof WebCryptoError || e instanceof TypeError) throw e;
    const msg = e && e.payload !== undefined ? String(e.payload) : (e && e.message) || String(e);
    throw new WebCryptoError(name, msg);
  }
}

function bufferSource(v, what) {
  if (v instanceof ArrayBuffer) return new Uint8Array(v);
  if (ArrayBuffer.isView(v)) return new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
  throw new TypeError(`${what} is an ArrayBuffer or a typed array, not ${v === null ? 'null' : typeof v}`);
}

function outBuffer(bytes) {
  const b = bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes);
  return b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength);
}

const ALGORITHMS = ['HMAC', 'AES-CBC', 'AES-CTR', 'AES-GCM', 'PBKDF2', 'ECDSA', 'ECDH',
  'RSASSA-PKCS1-v1_5', 'RSA-PSS', 'RSA-OAEP', 'SHA-1', 'SHA-256', 'SHA-384', 'SHA-512'];
const BY_UPPER = new Map(ALGORITHMS.map((n) => [n.toUpperCase(), n]));

function algName(v, what) {
  const name = typeof v === 'string' ? v : v && typeof v === 'object' ? v.name : undefined;
  if (typeof name !== 'string') throw new TypeError(`${what}: the algorithm is a name or an object with a name`);
  const canonical = BY_UPPER.get(name.toUpperCase());
  if (!canonical) throw new WebCryptoError('NotSupportedError', `${what}: ${name} is not an algorithm k6's WebCrypto has (${ALGORITHMS.join(', ')})`);
  return canonical;
}

function optBytes(v, what) { return v === undefined || v === null ? null : bufferSource(v, what); }
function optNum(v) { return v === undefined || v === null ? null : Number(v); }

// The host's algorithm record from a script's algorithm object (and, for an operation on
// a key, the key's own algorithm: its hash and curve).
function hostAlgorithm(alg, what, key) {
  const a = typeof alg === 'string' ? { name: alg } : alg;
  const name = algName(a, what);
  const ka = key ? key.algorithm : {};
  const hash = a.hash !== undefined ? algName(a.hash, `${what}: hash`) : ka.hash ? ka.hash.name : null;
  let peer = null;
  if (name === 'ECDH' && what !== 'generateKey' && what !== 'importKey') {
    if (!(a.public instanceof CryptoKey) || a.public.type !== 'public') throw new TypeError(`${what}: ECDH's public is the peer's public CryptoKey`);
    peer = keyBytes.get(a.public);
  }
  return {
    name,
    hash,
    namedCurve: a.namedCurve !== undefined ? String(a.namedCurve) : ka.namedCurve || null,
    length: optNum(a.length),
    tagLength: optNum(a.tagLength),
    saltLength: optNum(a.saltLength),
    iterations: optNum(a.iterations),
    modulusLength: optNum(a.modulusLength),
    publicExponent: optBytes(a.publicExponent, `${what}: publicExponent`),
    iv: optBytes(a.iv !== undefined ? a.iv : a.counter, `${what}: iv`),
    additionalData: optBytes(a.additionalData !== undefined ? a.additionalData : a.label, `${what}: additionalData`),
    salt: optBytes(a.salt, `${what}: salt`),
    peer,
  };
}

const keyBytes = new WeakMap();

class CryptoKey {
  constructor(token, type, extractable, algorithm, usages, bytes) {
    if (token !== keyBytes) throw new TypeError('CryptoKey is made by crypto.subtle, not by new');
    this.type = type;
    this.extractable = extractable;
    this.algorithm = algorithm;
    this.usages = usages;
    keyBytes.set(this, bytes);
  }
}

// What a key of `hostAlg` looks like to the script (`CryptoKey.algorithm`).
function keyAlgorithm(hostAlg, info) {
  const out = { name: hostAlg.name };
  switch (hostAlg.name) {
    case 'HMAC': out.hash = { name: hostAlg.hash }; out.length = info.length; break;
    case 'AES-CBC': case 'AES-CTR': case 'AES-GCM': out.length = info.length; break;
    case 'ECDSA': case 'ECDH': out.namedCurve = info.namedCurve || hostAlg.namedCurve; break;
    case 'PBKDF2': break;
    default:
      out.modulusLength = info.modulusLength;
      out.publicExponent = new Uint8Array(info.publicExponent);
      out.hash = { name: hostAlg.hash };
  }
  return out;
}

const PUBLIC_USAGES = ['verify', 'encrypt', 'wrapKey'];

function usagesFor(type, usages) {
  const list = Array.from(usages || [], String);
  if (type === 'public') return list.filter((u) => PUBLIC_USAGES.includes(u));
  if (type === 'private') return list.filter((u) => !PUBLIC_USAGES.includes(u));
  return list;
}

function checkKey(key, alg, usage, what) {
  if (!(key instanceof CryptoKey)) throw new TypeError(`${what}: the key is a CryptoKey`);
  if (key.algorithm.name !== alg.name) throw new WebCryptoError('InvalidAccessError', `${what}: the key is for ${key.algorithm.name}, not ${alg.name}`);
  if (!key.usages.includes(usage)) throw new WebCryptoError('InvalidAccessError', `${what}: the key's usages (${key.usages.join(', ')}) do not include ${usage}`);
  return keyBytes.get(key);
}

// Each subtle method answers a promise, as WebCrypto's do; the work is done at the call.
function promised(fn) {
  return new Promise((resolve, reject) => {
    try { resolve(fn()); } catch (e) { reject(e); }
  });
}

function importInto(hostAlg, format, data, extractable, usages, what) {
  const info = cryptoCall('DataError', () => hostCrypto.importKey(hostAlg, format, data));
  const type = info.kind;
  return new CryptoKey(keyBytes, type, type === 'public' ? true : Boolean(extractable),
    keyAlgorithm(hostAlg, info), usagesFor(type, usages), info.bytes);
}

function deriveBitsOf(alg, baseKey, length, usage, what) {
  const hostAlg = hostAlgorithm(alg, what, baseKey);
  const bytes = checkKey(baseKey, hostAlg, usage, what);
  return cryptoCall('OperationError', () => hostCrypto.deriveBits(hostAlg, bytes, length === null || length === undefined ? 0 : Number(length)));
}

const subtle = {
  digest: (alg, data) => promised(() => {
    const name = algName(alg, 'digest');
    if (!name.startsWith('SHA-')) throw new WebCryptoError('NotSupportedError', `digest: ${name} is not a hash (SHA-1, SHA-256, SHA-384, SHA-512)`);
    return outBuffer(cryptoCall('OperationError', () => hostCrypto.digest(name, bufferSource(data, 'digest: data'))));
  }),
  generateKey: (alg, extractable, usages) => promised(() => {
    const hostAlg = hostAlgorithm(alg, 'generateKey');
    const [secret, pub] = cryptoCall('OperationError', () => hostCrypto.generateKey(hostAlg));
    if (pub.length === 0) {
      const info = { length: secret.length * 8 };
      return new CryptoKey(keyBytes, 'secret', Boolean(extractable), keyAlgorithm(hostAlg, info), usagesFor('secret', usages), secret);
    }
    // The pair's algorithm (modulus length, exponent) as its public key reads it.
    const info = cryptoCall('OperationError', () => hostCrypto.importKey(hostAlg, 'spki', pub));
    const algorithm = keyAlgorithm(hostAlg, info);
    return {
      privateKey: new CryptoKey(keyBytes, 'private', Boolean(extractable), algorithm, usagesFor('private', usages), secret),
      publicKey: new CryptoKey(keyBytes, 'public', true, algorithm, usagesFor('public', usages), info.bytes),
    };
  }),
  importKey: (format, keyData, alg, extractable, usages) => promised(() => {
    const hostAlg = hostAlgorithm(alg, 'importKey');
    const data = format === 'jwk' ? utf8Encode(JSON.stringify(keyData)) : bufferSource(keyData, 'importKey: keyData');
    return importInto(hostAlg, String(format), data, extractable, usages, 'importKey');
  }),
  exportKey: (format, key) => promised(() => {
    if (!(key instanceof CryptoKey)) throw new TypeError('exportKey: the key is a CryptoKey');
    if (!key.extractable) throw new WebCryptoError('InvalidAccessError', 'exportKey: the key is not extractable');
    const hostAlg = hostAlgorithm(key.algorithm, 'exportKey', key);
    const out = cryptoCall('NotSupportedError', () => hostCrypto.exportKey(hostAlg, String(format), key.type, keyBytes.get(key)));
    if (format !== 'jwk') return outBuffer(out);
    const jwk = JSON.parse(utf8Decode(out));
    const h = hostAlg.hash ? hostAlg.hash.slice(4) : '';
    if (hostAlg.name === 'RSASSA-PKCS1-v1_5') jwk.alg = `RS${h === '1' ? '1' : h}`;
    if (hostAlg.name === 'RSA-PSS') jwk.alg = `PS${h}`;
    if (hostAlg.name === 'RSA-OAEP') jwk.alg = h === '1' ? 'RSA-OAEP' : `RSA-OAEP-${h}`;
    jwk.key_ops = key.usages.slice();
    jwk.ext = key.extractable;
    return jwk;
  }),
  sign: (alg, key, data) => promised(() => {
    const hostAlg = hostAlgorithm(alg, 'sign', key);
    const bytes = checkKey(key, hostAlg, 'sign', 'sign');
    return outBuffer(cryptoCall('OperationError', () => hostCrypto.sign(hostAlg, bytes, bufferSource(data, 'sign: data'))));
  }),
  verify: (alg, key, signature, data) => promised(() => {
    const hostAlg = hostAlgorithm(alg, 'verify', key);
    const bytes = checkKey(key, hostAlg, 'verify', 'verify');
    return cryptoCall('OperationError', () => hostCrypto.verify(hostAlg, bytes, bufferSource(signature, 'verify: signature'), bufferSource(data, 'verify: data')));
  }),
  encrypt: (alg, key, data) => promised(() => {
    const hostAlg = hostAlgorithm(alg, 'encrypt', key);
    const bytes = checkKey(key, hostAlg, 'encrypt', 'encrypt');
    return outBuffer(cryptoCall('OperationError', () => hostCrypto.encrypt(hostAlg, bytes, bufferSource(data, 'encrypt: data'))));
  }),
  decrypt: (alg, key, data) => promised(() => {
    const hostAlg = hostAlgorithm(alg, 'decrypt', key);
    const bytes = checkKey(key, hostAlg, 'decrypt', 'decrypt');
    return outBuffer(cryptoCall('OperationError', () => hostCrypto.decrypt(hostAlg, bytes, bufferSource(data, 'decrypt: data'))));
  }),
  deriveBits: (alg, baseKey, length) => promised(() => outBuffer(deriveBitsOf(alg, baseKey, length, 'deriveBits', 'deriveBits'))),
  deriveKey: (alg, baseKey, derivedType, extractable, usages) => promised(() => {
    const target = hostAlgorithm(derivedType, 'deriveKey');
    let length = target.length;
    if (length === null && target.name === 'HMAC') length = target.hash === 'SHA-384' || target.hash === 'SHA-512' ? 1024 : 512;
    if (length === null) throw new TypeError(`deriveKey: ${target.name} needs length`);
    const bits = deriveBitsOf(alg, baseKey, length, 'deriveKey', 'deriveKey');
    return importInto(target, 'raw', bits, extractable, usages, 'deriveKey');
  }),
};
for (const name of ['wrapKey', 'unwrapKey']) {
  subtle[name] = () => promised(() => {
    throw new WebCryptoError('NotSupportedError', `crypto.subtle.${name} is not built here (as in k6 1.1)`);
  });
}

// Integer typed arrays only, at most 65,536 bytes, as WebCrypto says.
function getRandomValues(array) {
  const integer = array instanceof Int8Array || array instanceof Uint8Array || array instanceof Uint8ClampedArray
    || array instanceof Int16Array || array instanceof Uint16Array || array instanceof Int32Array
    || array instanceof Uint32Array || (typeof BigInt64Array !== 'undefined' && (array instanceof BigInt64Array || array instanceof BigUint64Array));
  if (!integer) throw new WebCryptoError('TypeMismatchError', 'crypto.getRandomValues takes an integer typed array');
  if (array.byteLength > 65536) throw new WebCryptoError('QuotaExceededError', `crypto.getRandomValues: ${array.byteLength} bytes asked, at most 65536`);
  new Uint8Array(array.buffer, array.byteOffset, array.byteLength).set(hostCrypto.randomBytes(array.byteLength));
  return array;
}

// A version 4 UUID (RFC 9562) from 16 random bytes.
function randomUUID() {
  const b = new Uint8Array(hostCrypto.randomBytes(16));
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const h = Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

globalThis.crypto = { getRandomValues, randomUUID, subtle };
globalThis.CryptoKey = CryptoKey;
