// ---------------------------------------------------------------- k6/crypto
//
// Hashes and HMACs in JavaScript inside the sandbox (the contract has no crypto import,
// and these are small): MD4, MD5, SHA-1, SHA-256, SHA-384, SHA-512, SHA-512/224,
// SHA-512/256, RIPEMD-160.
// `randomBytes` draws from the VU's Math.random generator, which is not a cryptographic
// one (docs/k6-compatibility.md says so).

function md5Digest(msg) {
  const K = new Int32Array(64);
  for (let i = 0; i < 64; i++) K[i] = Math.floor(Math.abs(Math.sin(i + 1)) * 4294967296) | 0;
  const S = [7, 12, 17, 22, 5, 9, 14, 20, 4, 11, 16, 23, 6, 10, 15, 21];
  const view = lePad(msg);
  let a0 = 0x67452301, b0 = 0xefcdab89 | 0, c0 = 0x98badcfe | 0, d0 = 0x10325476;
  const M = new Int32Array(16);
  for (let off = 0; off < view.byteLength; off += 64) {
    for (let i = 0; i < 16; i++) M[i] = view.getInt32(off + i * 4, true);
    let a = a0, b = b0, c = c0, d = d0;
    for (let i = 0; i < 64; i++) {
      let f, g;
      if (i < 16) { f = (b & c) | (~b & d); g = i; }
      else if (i < 32) { f = (d & b) | (~d & c); g = (5 * i + 1) & 15; }
      else if (i < 48) { f = b ^ c ^ d; g = (3 * i + 5) & 15; }
      else { f = c ^ (b | ~d); g = (7 * i) & 15; }
      const s = S[(i >> 4) * 4 + (i & 3)];
      const x = (a + f + K[i] + M[g]) | 0;
      a = d; d = c; c = b;
      b = (b + ((x << s) | (x >>> (32 - s)))) | 0;
    }
    a0 = (a0 + a) | 0; b0 = (b0 + b) | 0; c0 = (c0 + c) | 0; d0 = (d0 + d) | 0;
  }
  return leWordsOut([a0, b0, c0, d0]);
}

// Little-endian padding of MD4, MD5 and RIPEMD-160: the message, 0x80, zeros, and its
// length in bits in the block's last 8 bytes, low word first.
function lePad(msg) {
  const len = msg.length;
  const padded = new Uint8Array(((len + 8) >> 6 << 6) + 64);
  padded.set(msg);
  padded[len] = 0x80;
  const view = new DataView(padded.buffer);
  const bits = len * 8;
  view.setUint32(padded.length - 8, bits >>> 0, true);
  view.setUint32(padded.length - 4, Math.floor(bits / 4294967296), true);
  return view;
}

// Little-endian 32-bit words as bytes.
function leWordsOut(words) {
  const out = new Uint8Array(words.length * 4);
  const view = new DataView(out.buffer);
  for (let i = 0; i < words.length; i++) view.setInt32(i * 4, words[i], true);
  return out;
}

const rotl32 = (x, s) => (x << s) | (x >>> (32 - s));

// MD4 (RFC 1320): three rounds of 16 steps; each step's word order and shifts.
const MD4_ORDER = [
  [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15],
  [0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15],
  [0, 8, 4, 12, 2, 10, 6, 14, 1, 9, 5, 13, 3, 11, 7, 15],
];
const MD4_SHIFT = [[3, 7, 11, 19], [3, 5, 9, 13], [3, 9, 11, 15]];

function md4Digest(msg) {
  const view = lePad(msg);
  const h = [0x67452301, 0xefcdab89 | 0, 0x98badcfe | 0, 0x10325476];
  const x = new Int32Array(16);
  for (let off = 0; off < view.byteLength; off += 64) {
    for (let i = 0; i < 16; i++) x[i] = view.getInt32(off + i * 4, true);
    let [a, b, c, d] = h;
    for (let round = 0; round < 3; round++) {
      const order = MD4_ORDER[round], shift = MD4_SHIFT[round];
      for (let i = 0; i < 16; i++) {
        let f;
        if (round === 0) f = (b & c) | (~b & d);
        else if (round === 1) f = ((b & c) | (b & d) | (c & d)) + 0x5a827999;
        else f = (b ^ c ^ d) + 0x6ed9eba1;
        // Step [abcd k s] is a = (a + f(b, c, d) + X[k]) <<< s; the next step is
        // [dabc ...], so the names turn instead of the values.
        const t = rotl32((a + f + x[order[i]]) | 0, shift[i & 3]);
        a = d; d = c; c = b; b = t;
      }
    }
    h[0] = (h[0] + a) | 0; h[1] = (h[1] + b) | 0; h[2] = (h[2] + c) | 0; h[3] = (h[3] + d) | 0;
  }
  return leWordsOut(h);
}

// RIPEMD-160 (Dobbertin, Bosselaers, Preneel): two lines of 80 steps over each block,
// their word orders, shifts and constants per group of 16.
const RMD_R = [
  0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
  7, 4, 13, 1, 10, 6, 15, 3, 12, 0, 9, 5, 2, 14, 11, 8,
  3, 10, 14, 4, 9, 15, 8, 1, 2, 7, 0, 6, 13, 11, 5, 12,
  1, 9, 11, 10, 0, 8, 12, 4, 13, 3, 7, 15, 14, 5, 6, 2,
  4, 0, 5, 9, 7, 12, 2, 10, 14, 1, 3, 8, 11, 6, 15, 13,
];
const RMD_R2 = [
  5, 14, 7, 0, 9, 2, 11, 4, 13, 6, 15, 8, 1, 10, 3, 12,
  6, 11, 3, 7, 0, 13, 5, 10, 14, 15, 8, 12, 4, 9, 1, 2,
  15, 5, 1, 3, 7, 14, 6, 9, 11, 8, 12, 2, 10, 0, 4, 13,
  8, 6, 4, 1, 3, 11, 15, 0, 5, 12, 2, 13, 9, 7, 10, 14,
  12, 15, 10, 4, 1, 5, 8, 7, 6, 2, 13, 14, 0, 3, 9, 11,
];
const RMD_S = [
  11, 14, 15, 12, 5, 8, 7, 9, 11, 13, 14, 15, 6, 7, 9, 8,
  7, 6, 8, 13, 11, 9, 7, 15, 7, 12, 15, 9, 11, 7, 13, 12,
  11, 13, 6, 7, 14, 9, 13, 15, 14, 8, 13, 6, 5, 12, 7, 5,
  11, 12, 14, 15, 14, 15, 9, 8, 9, 14, 5, 6, 8, 6, 5, 12,
  9, 15, 5, 11, 6, 8, 13, 12, 5, 12, 13, 14, 11, 8, 5, 6,
];
const RMD_S2 = [
  8, 9, 9, 11, 13, 15, 15, 5, 7, 7, 8, 11, 14, 14, 12, 6,
  9, 13, 15, 7, 12, 8, 9, 11, 7, 7, 12, 7, 6, 15, 13, 11,
  9, 7, 15, 11, 8, 6, 6, 14, 12, 13, 5, 14, 13, 13, 7, 5,
  15, 5, 8, 11, 14, 14, 6, 14, 6, 9, 12, 9, 12, 5, 15, 8,
  8, 5, 12, 9, 12, 5, 14, 6, 8, 13, 6, 5, 15, 13, 11, 11,
];
const RMD_K = [0, 0x5a827999, 0x6ed9eba1, 0x8f1bbcdc | 0, 0xa953fd4e | 0];
const RMD_K2 = [0x50a28be6, 0x5c4dd124, 0x6d703ef3, 0x7a6d76e9, 0];

// The step function of group `g` (0-4): the left line uses them in order, the right
// line in reverse.
function rmdF(g, x, y, z) {
  switch (g) {
    case 0: return x ^ y ^ z;
    case 1: return (x & y) | (~x & z);
    case 2: return (x | ~y) ^ z;
    case 3: return (x & z) | (y & ~z);
    default: return x ^ (y | ~z);
  }
}

function ripemd160Digest(msg) {
  const view = lePad(msg);
  const h = [0x67452301, 0xefcdab89 | 0, 0x98badcfe | 0, 0x10325476, 0xc3d2e1f0 | 0];
  const x = new Int32Array(16);
  for (let off = 0; off < view.byteLength; off += 64) {
    for (let i = 0; i < 16; i++) x[i] = view.getInt32(off + i * 4, true);
    let [a, b, c, d, e] = h;
    let [a2, b2, c2, d2, e2] = h;
    for (let j = 0; j < 80; j++) {
      const g = j >> 4;
      let t = (rotl32((a + rmdF(g, b, c, d) + x[RMD_R[j]] + RMD_K[g]) | 0, RMD_S[j]) + e) | 0;
      a = e; e = d; d = rotl32(c, 10); c = b; b = t;
      t = (rotl32((a2 + rmdF(4 - g, b2, c2, d2) + x[RMD_R2[j]] + RMD_K2[g]) | 0, RMD_S2[j]) + e2) | 0;
      a2 = e2; e2 = d2; d2 = rotl32(c2, 10); c2 = b2; b2 = t;
    }
    const t = (h[1] + c + d2) | 0;
    h[1] = (h[2] + d + e2) | 0;
    h[2] = (h[3] + e + a2) | 0;
    h[3] = (h[4] + a + b2) | 0;
    h[4] = (h[0] + b + c2) | 0;
    h[0] = t;
  }
  return leWordsOut(h);
}

// Big-endian padding of SHA-1 and SHA-2: the message, 0x80, zeros, and its length in
// bits in the last `lenBytes` bytes of a block of `block` bytes.
function shaPad(msg, block, lenBytes) {
  const len = msg.length;
  const total = Math.ceil((len + 1 + lenBytes) / block) * block;
  const padded = new Uint8Array(total);
  padded.set(msg);
  padded[len] = 0x80;
  const view = new DataView(padded.buffer);
  const bits = len * 8;
  view.setUint32(total - 4, bits >>> 0);
  view.setUint32(total - 8, Math.floor(bits / 4294967296));
  return view;
}

function sha1Digest(msg) {
  const view = shaPad(msg, 64, 8);
  const h = [0x67452301, 0xefcdab89 | 0, 0x98badcfe | 0, 0x10325476, 0xc3d2e1f0 | 0];
  const w = new Int32Array(80);
  for (let off = 0; off < view.byteLength; off += 64) {
    for (let i = 0; i < 16; i++) w[i] = view.getInt32(off + i * 4);
    for (let i = 16; i < 80; i++) {
      const x = w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16];
      w[i] = (x << 1) | (x >>> 31);
    }
    let [a, b, c, d, e] = h;
    for (let i = 0; i < 80; i++) {
      let f, k;
      if (i < 20) { f = (b & c) | (~b & d); k = 0x5a827999; }
      else if (i < 40) { f = b ^ c ^ d; k = 0x6ed9eba1; }
      else if (i < 60) { f = (b & c) | (b & d) | (c & d); k = 0x8f1bbcdc | 0; }
      else { f = b ^ c ^ d; k = 0xca62c1d6 | 0; }
      const t = (((a << 5) | (a >>> 27)) + f + e + k + w[i]) | 0;
      e = d; d = c; c = (b << 30) | (b >>> 2); b = a; a = t;
    }
    h[0] = (h[0] + a) | 0; h[1] = (h[1] + b) | 0; h[2] = (h[2] + c) | 0;
    h[3] = (h[3] + d) | 0; h[4] = (h[4] + e) | 0;
  }
  return wordsOut(h, 5);
}

const SHA256_K = [
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
  0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
  0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
  0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
  0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
  0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
  0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
  0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
].map((k) => k | 0);

function sha256Digest(msg) {
  const view = shaPad(msg, 64, 8);
  const h = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
    0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19].map((x) => x | 0);
  const w = new Int32Array(64);
  const rotr = (x, n) => (x >>> n) | (x << (32 - n));
  for (let off = 0; off < view.byteLength; off += 64) {
    for (let i = 0; i < 16; i++) w[i] = view.getInt32(off + i * 4);
    for (let i = 16; i < 64; i++) {
      const s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >>> 3);
      const s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >>> 10);
      w[i] = (w[i - 16] + s0 + w[i - 7] + s1) | 0;
    }
    let [a, b, c, d, e, f, g, hh] = h;
    for (let i = 0; i < 64; i++) {
      const S1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25);
      const ch = (e & f) ^ (~e & g);
      const t1 = (hh + S1 + ch + SHA256_K[i] + w[i]) | 0;
      const S0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22);
      const maj = (a & b) ^ (a & c) ^ (b & c);
      const t2 = (S0 + maj) | 0;
      hh = g; g = f; f = e; e = (d + t1) | 0; d = c; c = b; b = a; a = (t1 + t2) | 0;
    }
    [a, b, c, d, e, f, g, hh].forEach((x, i) => { h[i] = (h[i] + x) | 0; });
  }
  return wordsOut(h, 8);
}

// SHA-512's round constants and initial values as [high, low] 32-bit halves.
const SHA512_K = [
  '428a2f98d728ae22', '7137449123ef65cd', 'b5c0fbcfec4d3b2f', 'e9b5dba58189dbbc', '3956c25bf348b538',
  '59f111f1b605d019', '923f82a4af194f9b', 'ab1c5ed5da6d8118', 'd807aa98a3030242', '12835b0145706fbe',
  '243185be4ee4b28c', '550c7dc3d5ffb4e2', '72be5d74f27b896f', '80deb1fe3b1696b1', '9bdc06a725c71235',
  'c19bf174cf692694', 'e49b69c19ef14ad2', 'efbe4786384f25e3', '0fc19dc68b8cd5b5', '240ca1cc77ac9c65',
  '2de92c6f592b0275', '4a7484aa6ea6e483', '5cb0a9dcbd41fbd4', '76f988da831153b5', '983e5152ee66dfab',
  'a831c66d2db43210', 'b00327c898fb213f', 'bf597fc7beef0ee4', 'c6e00bf33da88fc2', 'd5a79147930aa725',
  '06ca6351e003826f', '142929670a0e6e70', '27b70a8546d22ffc', '2e1b21385c26c926', '4d2c6dfc5ac42aed',
  '53380d139d95b3df', '650a73548baf63de', '766a0abb3c77b2a8', '81c2c92e47edaee6', '92722c851482353b',
  'a2bfe8a14cf10364', 'a81a664bbc423001', 'c24b8b70d0f89791', 'c76c51a30654be30', 'd192e819d6ef5218',
  'd69906245565a910', 'f40e35855771202a', '106aa07032bbd1b8', '19a4c116b8d2d0c8', '1e376c085141ab53',
  '2748774cdf8eeb99', '34b0bcb5e19b48a8', '391c0cb3c5c95a63', '4ed8aa4ae3418acb', '5b9cca4f7763e373',
  '682e6ff3d6b2b8a3', '748f82ee5defb2fc', '78a5636f43172f60', '84c87814a1f0ab72', '8cc702081a6439ec',
  '90befffa23631e28', 'a4506cebde82bde9', 'bef9a3f7b2c67915', 'c67178f2e372532b', 'ca273eceea26619c',
  'd186b8c721c0c207', 'eada7dd6cde0eb1e', 'f57d4f7fee6ed178', '06f067aa72176fba', '0a637dc5a2c898a6',
  '113f9804bef90dae', '1b710b35131c471b', '28db77f523047d84', '32caab7b40c72493', '3c9ebe0a15c9bebc',
  '431d67c49c100d4c', '4cc5d4becb3e42b6', '597f299cfc657e2a', '5fcb6fab3ad6faec', '6c44198c4a475817',
];
const SHA512_IV = {
  sha512: ['6a09e667f3bcc908', 'bb67ae8584caa73b', '3c6ef372fe94f82b', 'a54ff53a5f1d36f1',
    '510e527fade682d1', '9b05688c2b3e6c1f', '1f83d9abfb41bd6b', '5be0cd19137e2179'],
  sha384: ['cbbb9d5dc1059ed8', '629a292a367cd507', '9159015a3070dd17', '152fecd8f70e5939',
    '67332667ffc00b31', '8eb44a8768581511', 'db0c2e0d64f98fa7', '47b5481dbefa4fa4'],
  sha512_224: ['8c3d37c819544da2', '73e1996689dcd4d6', '1dfab7ae32ff9c82', '679dd514582f9fcf',
    '0f6d2b697bd44da8', '77e36f7304c48942', '3f9d85a86a1d36c8', '1112e6ad91d692a1'],
  sha512_256: ['22312194fc2bf72c', '9f555fa3c84c64c2', '2393b86b6f53b151', '963877195940eabd',
    '96283ee2a88effe3', 'be5e1e2553863992', '2b0199fc2c85b8aa', '0eb72ddc81c52ca2'],
};
const halves = (hex) => [parseInt(hex.slice(0, 8), 16) | 0, parseInt(hex.slice(8), 16) | 0];
let SHA512_KH = null; // [high, low] pairs, made on first use

function sha512Digest(msg, variant, outBytes) {
  if (!SHA512_KH) SHA512_KH = SHA512_K.map(halves);
  const view = shaPad(msg, 128, 16);
  const h = SHA512_IV[variant].map(halves);
  const wh = new Int32Array(80), wl = new Int32Array(80);
  // 64-bit values as (high, low) pairs; `add` keeps the carry out of the low word.
  const add = (ah, al, bh, bl) => {
    const lo = (al >>> 0) + (bl >>> 0);
    return [(ah + bh + Math.floor(lo / 4294967296)) | 0, lo | 0];
  };
  const rotrH = (h_, l, n) => n < 32 ? (h_ >>> n) | (l << (32 - n)) : (l >>> (n - 32)) | (h_ << (64 - n));
  const rotrL = (h_, l, n) => n < 32 ? (l >>> n) | (h_ << (32 - n)) : (h_ >>> (n - 32)) | (l << (64 - n));
  for (let off = 0; off < view.byteLength; off += 128) {
    for (let i = 0; i < 16; i++) {
      wh[i] = view.getInt32(off + i * 8);
      wl[i] = view.getInt32(off + i * 8 + 4);
    }
    for (let i = 16; i < 80; i++) {
      const xh = wh[i - 15], xl = wl[i - 15], yh = wh[i - 2], yl = wl[i - 2];
      const s0h = rotrH(xh, xl, 1) ^ rotrH(xh, xl, 8) ^ (xh >>> 7);
      const s0l = rotrL(xh, xl, 1) ^ rotrL(xh, xl, 8) ^ ((xl >>> 7) | (xh << 25));
      const s1h = rotrH(yh, yl, 19) ^ rotrH(yh, yl, 61) ^ (yh >>> 6);
      const s1l = rotrL(yh, yl, 19) ^ rotrL(yh, yl, 61) ^ ((yl >>> 6) | (yh << 26));
      let [th, tl] = add(wh[i - 16], wl[i - 16], s0h, s0l);
      [th, tl] = add(th, tl, wh[i - 7], wl[i - 7]);
      [th, tl] = add(th, tl, s1h, s1l);
      wh[i] = th; wl[i] = tl;
    }
    let v = h.map((p) => p.slice());
    for (let i = 0; i < 80; i++) {
      const [ah, al] = v[0], [bh, bl] = v[1], [ch, cl] = v[2];
      const [eh, el] = v[4], [fh, fl] = v[5], [gh, gl] = v[6], [hh, hl] = v[7];
      const S1h = rotrH(eh, el, 14) ^ rotrH(eh, el, 18) ^ rotrH(eh, el, 41);
      const S1l = rotrL(eh, el, 14) ^ rotrL(eh, el, 18) ^ rotrL(eh, el, 41);
      const chh = (eh & fh) ^ (~eh & gh), chl = (el & fl) ^ (~el & gl);
      let [t1h, t1l] = add(hh, hl, S1h, S1l);
      [t1h, t1l] = add(t1h, t1l, chh, chl);
      [t1h, t1l] = add(t1h, t1l, SHA512_KH[i][0], SHA512_KH[i][1]);
      [t1h, t1l] = add(t1h, t1l, wh[i], wl[i]);
      const S0h = rotrH(ah, al, 28) ^ rotrH(ah, al, 34) ^ rotrH(ah, al, 39);
      const S0l = rotrL(ah, al, 28) ^ rotrL(ah, al, 34) ^ rotrL(ah, al, 39);
      const majh = (ah & bh) ^ (ah & ch) ^ (bh & ch), majl = (al & bl) ^ (al & cl) ^ (bl & cl);
      const [t2h, t2l] = add(S0h, S0l, majh, majl);
      v = [add(t1h, t1l, t2h, t2l), v[0], v[1], v[2], add(v[3][0], v[3][1], t1h, t1l), v[4], v[5], v[6]];
    }
    for (let i = 0; i < 8; i++) h[i] = add(h[i][0], h[i][1], v[i][0], v[i][1]);
  }
  const words = [];
  h.forEach(([hi, lo]) => { words.push(hi, lo); });
  return wordsOut(words, 16).slice(0, outBytes);
}

// Big-endian 32-bit words as bytes.
function wordsOut(words, n) {
  const out = new Uint8Array(n * 4);
  const view = new DataView(out.buffer);
  for (let i = 0; i < n; i++) view.setInt32(i * 4, words[i]);
  return out;
}

const HASHES = {
  md4: { digest: md4Digest, block: 64 },
  md5: { digest: md5Digest, block: 64 },
  sha1: { digest: sha1Digest, block: 64 },
  sha256: { digest: sha256Digest, block: 64 },
  sha384: { digest: (m) => sha512Digest(m, 'sha384', 48), block: 128 },
  sha512: { digest: (m) => sha512Digest(m, 'sha512', 64), block: 128 },
  sha512_224: { digest: (m) => sha512Digest(m, 'sha512_224', 28), block: 128 },
  sha512_256: { digest: (m) => sha512Digest(m, 'sha512_256', 32), block: 128 },
  ripemd160: { digest: ripemd160Digest, block: 64 },
};

function hashOf(algorithm) {
  const name = String(algorithm).toLowerCase().replace('-', '_');
  const hash = HASHES[name === 'sha512/224' ? 'sha512_224' : name === 'sha512/256' ? 'sha512_256' : name];
  if (!hash) {
    throw new Error(`k6/crypto: ${algorithm} is not supported here (supported: ${Object.keys(HASHES).join(', ')})`);
  }
  return hash;
}

function cryptoBytes(input) {
  return typeof input === 'string' ? utf8Encode(input) : toBytes(input);
}

function concatBytes(parts) {
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

function hmacBytes(hash, secret, data) {
  let key = cryptoBytes(secret);
  if (key.length > hash.block) key = hash.digest(key);
  const pad = (x) => {
    const out = new Uint8Array(hash.block);
    for (let i = 0; i < hash.block; i++) out[i] = (key[i] || 0) ^ x;
    return out;
  };
  const inner = hash.digest(concatBytes([pad(0x36), data]));
  return hash.digest(concatBytes([pad(0x5c), inner]));
}

class Hasher {
  constructor(algorithm, secret) {
    this.hash = hashOf(algorithm);
    this.secret = secret;
    this.parts = [];
  }
  update(input) { this.parts.push(cryptoBytes(input)); return this; }
  digest(encoding) {
    const data = concatBytes(this.parts);
    const bytes = this.secret === undefined ? this.hash.digest(data) : hmacBytes(this.hash, this.secret, data);
    return encodeDigest(bytes, encoding);
  }
}

const k6crypto = {
  createHash: (algorithm) => new Hasher(algorithm),
  createHMAC: (algorithm, secret) => new Hasher(algorithm, secret),
  hmac: (algorithm, secret, data, encoding) =>
    encodeDigest(hmacBytes(hashOf(algorithm), secret, cryptoBytes(data)), encoding),
  randomBytes(size) {
    const out = new Uint8Array(size);
    for (let i = 0; i < size; i++) out[i] = Math.floor(Math.random() * 256);
    return out.buffer;
  },
};
for (const name of Object.keys(HASHES)) {
  k6crypto[name] = (input, encoding) => encodeDigest(HASHES[name].digest(cryptoBytes(input)), encoding);
}

