//! WebCrypto (the global `crypto`) and the Encoding globals as k6 scripts use them: a
//! script that k6 1.1.0 itself passes (24 of 24 checks: `k6 run --no-usage-report
//! webcrypto.js`) passes here with the same checks, each against a published vector
//! (FIPS 180-4, RFC 4231, the GCM spec, SP 800-38A) or a round trip; PBKDF2, deriveKey
//! and TextEncoder/TextDecoder, which k6 1.1.0 lacks, in a script of their own.

use crate::support as common;

use super::scripts::run_script;
use common::output_text as text;

/// Passes under k6 1.1.0 too (24 checks, all passing).
const K6_SCRIPT: &str = r#"import { check } from 'k6';

export const options = { vus: 1, iterations: 1 };

const ascii = (s) => new Uint8Array(s.split('').map((c) => c.charCodeAt(0)));
const hex = (buf) => Array.from(new Uint8Array(buf), (b) => b.toString(16).padStart(2, '0')).join('');
const unhex = (h) => new Uint8Array(h.match(/../g).map((x) => parseInt(x, 16)));
const same = (a, b) => hex(a) === hex(b);

export default async function () {
  const r1 = crypto.getRandomValues(new Uint8Array(16));
  const r2 = crypto.getRandomValues(new Uint8Array(16));
  check(r1, { 'getRandomValues fills fresh bytes': () => !same(r1, r2) && r1.length === 16 });
  check(crypto.randomUUID(), { 'randomUUID is a v4 UUID': (u) => /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/.test(u) });

  const d = await crypto.subtle.digest('SHA-256', ascii('abc'));
  check(d, { 'SHA-256 of abc (FIPS 180-4)': (x) => hex(x) === 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad' });
  const d1 = await crypto.subtle.digest({ name: 'SHA-1' }, ascii('abc'));
  check(d1, { 'SHA-1 of abc': (x) => hex(x) === 'a9993e364706816aba3e25717850c26c9cd0d89d' });

  const hk = await crypto.subtle.importKey('raw', ascii('Jefe'), { name: 'HMAC', hash: 'SHA-256' }, true, ['sign', 'verify']);
  const mac = await crypto.subtle.sign('HMAC', hk, ascii('what do ya want for nothing?'));
  check(mac, { 'HMAC-SHA-256 (RFC 4231 case 2)': (x) => hex(x) === '5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843' });
  check(await crypto.subtle.verify('HMAC', hk, mac, ascii('what do ya want for nothing?')), { 'HMAC verifies': (ok) => ok === true });
  const hjwk = await crypto.subtle.exportKey('jwk', hk);
  check(hjwk, { 'HMAC key as JWK': (j) => j.kty === 'oct' && j.k === 'SmVmZQ' && j.alg === 'HS256' });

  const gk = await crypto.subtle.importKey('raw', unhex('feffe9928665731c6d6a8f9467308308'), { name: 'AES-GCM' }, false, ['encrypt', 'decrypt']);
  const gct = await crypto.subtle.encrypt({ name: 'AES-GCM', iv: unhex('cafebabefacedbaddecaf888'), additionalData: unhex('feedfacedeadbeeffeedfacedeadbeefabaddad2') }, gk,
    unhex('d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a721c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39'));
  check(gct, { 'AES-GCM (GCM spec case 4) tag': (x) => hex(x).endsWith('5bc94fbc3221a5db94fae95ae7121a47') });

  const ck = await crypto.subtle.importKey('raw', unhex('2b7e151628aed2a6abf7158809cf4f3c'), 'AES-CBC', true, ['encrypt', 'decrypt']);
  const cbc = await crypto.subtle.encrypt({ name: 'AES-CBC', iv: unhex('000102030405060708090a0b0c0d0e0f') }, ck, unhex('6bc1bee22e409f96e93d7e117393172a'));
  check(cbc, { 'AES-CBC (SP 800-38A F.2.1) block 1': (x) => hex(x).startsWith('7649abac8119b246cee98e9b12e9197d') && x.byteLength === 32 });
  const back = await crypto.subtle.decrypt({ name: 'AES-CBC', iv: unhex('000102030405060708090a0b0c0d0e0f') }, ck, cbc);
  check(back, { 'AES-CBC decrypts': (x) => hex(x) === '6bc1bee22e409f96e93d7e117393172a' });

  const tk = await crypto.subtle.importKey('raw', unhex('2b7e151628aed2a6abf7158809cf4f3c'), 'AES-CTR', true, ['encrypt', 'decrypt']);
  const ctr = await crypto.subtle.encrypt({ name: 'AES-CTR', counter: unhex('f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff'), length: 64 }, tk, unhex('6bc1bee22e409f96e93d7e117393172a'));
  check(ctr, { 'AES-CTR (SP 800-38A F.5.1)': (x) => hex(x) === '874d6191b620e3261bef6864990db6ce' });

  const ak = await crypto.subtle.generateKey({ name: 'AES-GCM', length: 256 }, true, ['encrypt', 'decrypt']);
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const sealed = await crypto.subtle.encrypt({ name: 'AES-GCM', iv }, ak, ascii('hello k6'));
  const opened = await crypto.subtle.decrypt({ name: 'AES-GCM', iv }, ak, sealed);
  check(opened, { 'AES-GCM 256 round trip': (x) => hex(x) === hex(ascii('hello k6')) && ak.algorithm.length === 256 });

  const ec = await crypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, true, ['sign', 'verify']);
  const esig = await crypto.subtle.sign({ name: 'ECDSA', hash: 'SHA-256' }, ec.privateKey, ascii('payload'));
  check(esig, { 'ECDSA P-256 signature is r||s': (x) => x.byteLength === 64 });
  check(await crypto.subtle.verify({ name: 'ECDSA', hash: 'SHA-256' }, ec.publicKey, esig, ascii('payload')), { 'ECDSA verifies': (ok) => ok });
  check(await crypto.subtle.verify({ name: 'ECDSA', hash: 'SHA-256' }, ec.publicKey, esig, ascii('payloae')), { 'ECDSA refuses another message': (ok) => ok === false });
  const pubJwk = await crypto.subtle.exportKey('jwk', ec.publicKey);
  const pub2 = await crypto.subtle.importKey('jwk', pubJwk, { name: 'ECDSA', namedCurve: 'P-256' }, true, ['verify']);
  check(await crypto.subtle.verify({ name: 'ECDSA', hash: 'SHA-256' }, pub2, esig, ascii('payload')), { 'ECDSA key through JWK verifies': (ok) => ok });
  const spki = await crypto.subtle.exportKey('spki', ec.publicKey);
  const raw = await crypto.subtle.exportKey('raw', ec.publicKey);
  check(raw, { 'EC public key raw is 65 bytes, spki 91': (x) => x.byteLength === 65 && spki.byteLength === 91 });
  const pkcs8 = await crypto.subtle.exportKey('pkcs8', ec.privateKey);
  const priv2 = await crypto.subtle.importKey('pkcs8', pkcs8, { name: 'ECDSA', namedCurve: 'P-256' }, false, ['sign']);
  const esig2 = await crypto.subtle.sign({ name: 'ECDSA', hash: 'SHA-256' }, priv2, ascii('payload'));
  check(await crypto.subtle.verify({ name: 'ECDSA', hash: 'SHA-256' }, ec.publicKey, esig2, ascii('payload')), { 'ECDSA key through PKCS8 signs': (ok) => ok });

  const alice = await crypto.subtle.generateKey({ name: 'ECDH', namedCurve: 'P-384' }, true, ['deriveBits']);
  const bob = await crypto.subtle.generateKey({ name: 'ECDH', namedCurve: 'P-384' }, true, ['deriveBits']);
  const s1 = await crypto.subtle.deriveBits({ name: 'ECDH', public: bob.publicKey }, alice.privateKey, 384);
  const s2 = await crypto.subtle.deriveBits({ name: 'ECDH', public: alice.publicKey }, bob.privateKey, 384);
  check(s1, { 'ECDH P-384 agrees both ways': (x) => x.byteLength === 48 && same(x, s2) });

  const rs = await crypto.subtle.generateKey({ name: 'RSASSA-PKCS1-v1_5', modulusLength: 2048, publicExponent: new Uint8Array([1, 0, 1]), hash: 'SHA-256' }, true, ['sign', 'verify']);
  const rsig = await crypto.subtle.sign('RSASSA-PKCS1-v1_5', rs.privateKey, ascii('payload'));
  check(await crypto.subtle.verify('RSASSA-PKCS1-v1_5', rs.publicKey, rsig, ascii('payload')), { 'RSASSA-PKCS1-v1_5 verifies': (ok) => ok && rsig.byteLength === 256 });
  const rjwk = await crypto.subtle.exportKey('jwk', rs.publicKey);
  check(rjwk, { 'RSA public JWK': (j) => j.kty === 'RSA' && j.e === 'AQAB' });

  const ps = await crypto.subtle.generateKey({ name: 'RSA-PSS', modulusLength: 2048, publicExponent: new Uint8Array([1, 0, 1]), hash: 'SHA-256' }, true, ['sign', 'verify']);
  const psig = await crypto.subtle.sign({ name: 'RSA-PSS', saltLength: 32 }, ps.privateKey, ascii('payload'));
  check(await crypto.subtle.verify({ name: 'RSA-PSS', saltLength: 32 }, ps.publicKey, psig, ascii('payload')), { 'RSA-PSS verifies': (ok) => ok });

  const oa = await crypto.subtle.generateKey({ name: 'RSA-OAEP', modulusLength: 2048, publicExponent: new Uint8Array([1, 0, 1]), hash: 'SHA-256' }, true, ['encrypt', 'decrypt']);
  const oct = await crypto.subtle.encrypt({ name: 'RSA-OAEP' }, oa.publicKey, ascii('secret'));
  const opt = await crypto.subtle.decrypt({ name: 'RSA-OAEP' }, oa.privateKey, oct);
  check(opt, { 'RSA-OAEP round trip': (x) => hex(x) === hex(ascii('secret')) });

  let refused = '';
  try { await crypto.subtle.sign('HMAC', gk, ascii('x')); } catch (e) { refused = e.name; }
  check(refused, { 'a key of another algorithm is refused': (n) => n === 'InvalidAccessError' });
}
"#;

/// What k6 1.1.0 does not have (PBKDF2, TextEncoder, TextDecoder) or does otherwise.
const BEYOND_K6: &str = r#"import { check } from 'k6';
import { randomBytes } from 'k6/crypto';

export const options = { vus: 1, iterations: 1 };

const hex = (buf) => Array.from(new Uint8Array(buf), (b) => b.toString(16).padStart(2, '0')).join('');

export default async function () {
  const enc = new TextEncoder();
  const pw = await crypto.subtle.importKey('raw', enc.encode('password'), 'PBKDF2', false, ['deriveBits', 'deriveKey']);
  const bits = await crypto.subtle.deriveBits({ name: 'PBKDF2', hash: 'SHA-1', salt: enc.encode('salt'), iterations: 4096 }, pw, 160);
  check(bits, { 'PBKDF2-SHA-1 4096 rounds (RFC 6070)': (x) => hex(x) === '4b007901b765489abead49d926f721d065a429c1' });
  const aes = await crypto.subtle.deriveKey({ name: 'PBKDF2', hash: 'SHA-256', salt: enc.encode('salt'), iterations: 1000 }, pw,
    { name: 'AES-GCM', length: 256 }, true, ['encrypt', 'decrypt']);
  const iv = new Uint8Array(12);
  const sealed = await crypto.subtle.encrypt({ name: 'AES-GCM', iv }, aes, enc.encode('héllo ✓'));
  const text = new TextDecoder().decode(await crypto.subtle.decrypt({ name: 'AES-GCM', iv }, aes, sealed));
  check(text, { 'deriveKey gives an AES-GCM key; TextEncoder and TextDecoder round trip UTF-8': (t) => t === 'héllo ✓' && aes.algorithm.length === 256 });
  check(new TextDecoder().decode(new Uint8Array([0x61, 0xff, 0x62])), { 'TextDecoder replaces bytes that are not UTF-8': (t) => t === 'a\ufffdb' });
  let fatal = '';
  try { new TextDecoder('utf-8', { fatal: true }).decode(new Uint8Array([0xff])); } catch (e) { fatal = e.name; }
  check(fatal, { 'a fatal TextDecoder throws TypeError': (n) => n === 'TypeError' });
  const a = new Uint8Array(randomBytes(32));
  const b = new Uint8Array(randomBytes(32));
  check(a, { 'k6/crypto randomBytes are fresh': () => hex(a) !== hex(b) && a.length === 32 });
  let unsupported = '';
  try { await crypto.subtle.generateKey({ name: 'Ed25519' }, true, ['sign']); } catch (e) { unsupported = `${e.name}: ${e.message}`; }
  check(unsupported, { 'an algorithm not built is refused by name': (m) => m.startsWith('NotSupportedError') && m.includes('Ed25519') });
}
"#;

/// Runs `script` (named `name`) and asserts every one of its `want` checks passed once.
async fn all_checks_pass(name: &str, script: &str, want: usize) {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join(name), script).unwrap();
    let (ran, out) = run_script(tmp.path(), name, "http://127.0.0.1:9", &[]).await;
    let shown = text(&ran);
    assert_eq!(ran.status.code(), Some(0), "{shown}");
    let summary = common::summary_json(&common::only_results_dir(&out));
    let checks = summary["checks"].as_array().unwrap();
    assert_eq!(checks.len(), want, "{}\n{shown}", summary["checks"]);
    for c in checks {
        assert_eq!(
            (c["passes"].as_u64(), c["fails"].as_u64()),
            (Some(1), Some(0)),
            "{c}\n{shown}"
        );
    }
}

/// The script k6 1.1.0 passes gives the same 24 passing checks here.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webcrypto_passes_the_checks_k6_passes() {
    all_checks_pass("webcrypto.js", K6_SCRIPT, 24).await;
}

/// PBKDF2 (RFC 6070's vector), deriveKey, TextEncoder/TextDecoder, k6/crypto's
/// randomBytes, and a refusal that names the algorithm.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pbkdf2_derive_key_and_text_encoding_work() {
    all_checks_pass("beyond.js", BEYOND_K6, 6).await;
}
