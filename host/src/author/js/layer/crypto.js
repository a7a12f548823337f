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
