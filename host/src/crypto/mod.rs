//! Cryptography for the k6 layer (`k6/crypto` and WebCrypto's `crypto`), on RustCrypto's
//! crates: hashes and HMACs here, keys in [`keys`], the key operations in [`ops`]. A leaf:
//! it knows nothing of plugins; `plugin/layer_crypto.rs` carries its values across.
//!
//! Keys are bytes in one form per kind (secret: raw; private: PKCS #8 DER; public:
//! SubjectPublicKeyInfo DER), so every operation is a function of its inputs.

pub(crate) mod aes;
pub(crate) mod keys;
pub(crate) mod ops;

use hmac::{Mac, SimpleHmac};
use sha2::digest::{self, Digest};

/// The most bytes one `random-bytes` call returns (WebCrypto's `getRandomValues` bound;
/// k6/crypto's `randomBytes` asks in pieces of it).
pub(crate) const MAX_RANDOM: u32 = 65_536;

/// A WebCrypto algorithm as the layer normalised it (see `layer.wit`'s `algorithm`).
#[derive(Debug, Clone, Default)]
pub(crate) struct Algorithm {
    /// WebCrypto's name, upper case (`AES-GCM`).
    pub name: String,
    /// The hash, as `SHA-256`.
    pub hash: Option<String>,
    /// `P-256` or `P-384`.
    pub named_curve: Option<String>,
    /// AES or HMAC key bits, AES-CTR counter bits.
    pub length: Option<u32>,
    /// AES-GCM tag bits.
    pub tag_length: Option<u32>,
    /// RSA-PSS salt bytes.
    pub salt_length: Option<u32>,
    /// PBKDF2 rounds.
    pub iterations: Option<u32>,
    /// RSA modulus bits (generate-key).
    pub modulus_length: Option<u32>,
    /// RSA public exponent, big-endian.
    pub public_exponent: Option<Vec<u8>>,
    /// The IV or counter block.
    pub iv: Option<Vec<u8>>,
    /// AES-GCM additional data or RSA-OAEP label.
    pub additional_data: Option<Vec<u8>>,
    /// PBKDF2 salt.
    pub salt: Option<Vec<u8>>,
    /// ECDH's peer public key (SPKI DER).
    pub peer: Option<Vec<u8>>,
}

impl Algorithm {
    /// The hash it names, or an error saying the algorithm needs one.
    pub(crate) fn hash(&self) -> Result<Hash, String> {
        let name = self.hash.as_deref().ok_or_else(|| {
            format!(
                "{}: the algorithm needs a hash (SHA-1, SHA-256, SHA-384, SHA-512)",
                self.name
            )
        })?;
        Hash::named(name)
    }
}

/// What a key is (WebCrypto's `CryptoKey.type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum KeyKind {
    /// A symmetric key or a password.
    Secret,
    /// The private half of a pair.
    Private,
    /// The public half of a pair.
    Public,
}

/// The hashes of k6/crypto and WebCrypto.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Hash {
    /// RFC 1320 (k6/crypto only).
    Md4,
    /// RFC 1321 (k6/crypto only).
    Md5,
    /// FIPS 180-4.
    Sha1,
    /// FIPS 180-4.
    Sha256,
    /// FIPS 180-4.
    Sha384,
    /// FIPS 180-4.
    Sha512,
    /// FIPS 180-4 (k6/crypto only).
    Sha512_224,
    /// FIPS 180-4 (k6/crypto only).
    Sha512_256,
    /// RIPEMD-160 (k6/crypto only).
    Ripemd160,
}

/// Every name the hashes answer to, for errors.
const HASH_NAMES: &str =
    "md4, md5, sha1, sha256, sha384, sha512, sha512_224, sha512_256, ripemd160 (or SHA-1, SHA-256, SHA-384, SHA-512)";

impl Hash {
    /// The hash by k6/crypto's name (`sha256`, `sha512_224`) or WebCrypto's (`SHA-256`).
    pub(crate) fn named(name: &str) -> Result<Hash, String> {
        let key: String = name
            .chars()
            .filter(|c| *c != '-')
            .map(|c| {
                if c == '/' {
                    '_'
                } else {
                    c.to_ascii_lowercase()
                }
            })
            .collect();
        Ok(match key.as_str() {
            "md4" => Hash::Md4,
            "md5" => Hash::Md5,
            "sha1" => Hash::Sha1,
            "sha256" => Hash::Sha256,
            "sha384" => Hash::Sha384,
            "sha512" => Hash::Sha512,
            "sha512_224" => Hash::Sha512_224,
            "sha512_256" => Hash::Sha512_256,
            "ripemd160" => Hash::Ripemd160,
            _ => {
                return Err(format!(
                    "{name} is not a hash this host knows ({HASH_NAMES})"
                ))
            }
        })
    }

    /// WebCrypto's name for it (`SHA-256`), for JWK `alg` and errors.
    pub(crate) fn web_name(self) -> &'static str {
        match self {
            Hash::Md4 => "MD4",
            Hash::Md5 => "MD5",
            Hash::Sha1 => "SHA-1",
            Hash::Sha256 => "SHA-256",
            Hash::Sha384 => "SHA-384",
            Hash::Sha512 => "SHA-512",
            Hash::Sha512_224 => "SHA-512/224",
            Hash::Sha512_256 => "SHA-512/256",
            Hash::Ripemd160 => "RIPEMD-160",
        }
    }

    /// Its block size in bits: WebCrypto's default HMAC key length.
    pub(crate) fn block_bits(self) -> u32 {
        match self {
            Hash::Sha384 | Hash::Sha512 | Hash::Sha512_224 | Hash::Sha512_256 => 1024,
            _ => 512,
        }
    }

    /// Whether WebCrypto allows it (SHA-1 and SHA-2 of 256, 384, 512 bits).
    pub(crate) fn web(self) -> Result<Hash, String> {
        match self {
            Hash::Sha1 | Hash::Sha256 | Hash::Sha384 | Hash::Sha512 => Ok(self),
            _ => Err(format!(
                "{} is not a WebCrypto hash (SHA-1, SHA-256, SHA-384, SHA-512)",
                self.web_name()
            )),
        }
    }
}

/// Runs `$f::<D>($args)` for the digest type of `$hash`.
macro_rules! with_digest {
    ($hash:expr, $f:ident ( $($arg:expr),* )) => {
        match $hash {
            $crate::crypto::Hash::Md4 => $f::<md4::Md4>($($arg),*),
            $crate::crypto::Hash::Md5 => $f::<md5::Md5>($($arg),*),
            $crate::crypto::Hash::Sha1 => $f::<sha1::Sha1>($($arg),*),
            $crate::crypto::Hash::Sha256 => $f::<sha2::Sha256>($($arg),*),
            $crate::crypto::Hash::Sha384 => $f::<sha2::Sha384>($($arg),*),
            $crate::crypto::Hash::Sha512 => $f::<sha2::Sha512>($($arg),*),
            $crate::crypto::Hash::Sha512_224 => $f::<sha2::Sha512_224>($($arg),*),
            $crate::crypto::Hash::Sha512_256 => $f::<sha2::Sha512_256>($($arg),*),
            $crate::crypto::Hash::Ripemd160 => $f::<ripemd::Ripemd160>($($arg),*),
        }
    };
}

fn digest_of<D: Digest>(data: &[u8]) -> Vec<u8> {
    D::digest(data).to_vec()
}

fn hmac_of<D: Digest + digest::core_api::BlockSizeUser>(key: &[u8], data: &[u8]) -> Vec<u8> {
    // SimpleHmac takes a key of any length (longer ones are hashed first, as RFC 2104).
    let mut mac = <SimpleHmac<D> as Mac>::new_from_slice(key).expect("HMAC takes any key length");
    mac.update(data);
    mac.finalize().into_bytes().to_vec()
}

/// The digest of `data` by `hash`.
pub(crate) fn digest(hash: Hash, data: &[u8]) -> Vec<u8> {
    with_digest!(hash, digest_of(data))
}

/// HMAC of `data` under `key` by `hash` (RFC 2104).
pub(crate) fn hmac(hash: Hash, key: &[u8], data: &[u8]) -> Vec<u8> {
    with_digest!(hash, hmac_of(key, data))
}

/// `n` bytes (at most [`MAX_RANDOM`]) from the operating system's generator.
pub(crate) fn random_bytes(n: u32) -> Vec<u8> {
    use rand_core_06::RngCore;
    let mut out = vec![0; n.min(MAX_RANDOM) as usize];
    rand_core_06::OsRng.fill_bytes(&mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Digests of "abc" from FIPS 180-4's examples, RFC 1320/1321 and RIPEMD-160's
    /// authors' page; names in both spellings.
    #[test]
    fn digests_match_the_published_vectors_for_abc() {
        let cases = [
            ("md4", "a448017aaf21d8525fc10ae87aa6729d"),
            ("md5", "900150983cd24fb0d6963f7d28e17f72"),
            ("SHA-1", "a9993e364706816aba3e25717850c26c9cd0d89d"),
            ("sha256", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
            ("SHA-384", "cb00753f45a35e8bb5a03d699ac65007272c32ab0eded1631a8b605a43ff5bed8086072ba1e7cc2358baeca134c825a7"),
            ("sha512", "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f"),
            ("sha512/224", "4634270f707b6a54daae7530460842e20e37ed265ceee9a43e8924aa"),
            ("sha512_256", "53048e2681941ef99b2e29b76b4c7dabe4c2d0c634fc6d46e0e2f13107e7af23"),
            ("ripemd160", "8eb208f7e05d987a9b044a8e98c6b087f15a0bfc"),
        ];
        for (name, want) in cases {
            let hash = Hash::named(name).unwrap();
            assert_eq!(hex::encode(digest(hash, b"abc")), want, "{name}");
        }
        assert!(Hash::named("md6")
            .unwrap_err()
            .contains("md6 is not a hash"));
    }

    /// RFC 4231 test case 2 (HMAC-SHA-256/512 with key "Jefe") and RFC 2202's for
    /// SHA-1; test case 6's 131-byte key is hashed first.
    #[test]
    fn hmacs_match_rfc_4231_and_2202() {
        let data = b"what do ya want for nothing?";
        assert_eq!(
            hex::encode(hmac(Hash::Sha256, b"Jefe", data)),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        assert_eq!(
            hex::encode(hmac(Hash::Sha512, b"Jefe", data)),
            "164b7a7bfcf819e2e395fbe73b56e0a387bd64222e831fd610270cd7ea2505549758bf75c05a994a6d034f65f8f0e6fdcaeab1a34d4a6b4b636e070a38bce737"
        );
        assert_eq!(
            hex::encode(hmac(Hash::Sha1, b"Jefe", data)),
            "effcdf6ae5eb2fa2d27416d5f184df9c259a7c79"
        );
        let key = [0xaa; 131];
        assert_eq!(
            hex::encode(hmac(
                Hash::Sha256,
                &key,
                b"Test Using Larger Than Block-Size Key - Hash Key First"
            )),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
        );
    }

    /// Two draws differ and are as long as asked, capped at the bound.
    #[test]
    fn random_bytes_are_fresh_and_bounded() {
        let a = random_bytes(32);
        let b = random_bytes(32);
        assert_eq!(a.len(), 32);
        assert_ne!(a, b);
        assert_eq!(random_bytes(MAX_RANDOM + 5).len(), MAX_RANDOM as usize);
    }
}
