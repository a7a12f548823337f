//! WebCrypto's key operations: sign and verify (HMAC, ECDSA, RSASSA-PKCS1-v1_5,
//! RSA-PSS), encrypt and decrypt (AES-CBC, AES-CTR, AES-GCM, RSA-OAEP), and derive
//! bits (ECDH, PBKDF2), over keys in the forms `keys` writes.

use super::{aes, Algorithm, Hash};
use rand_core_06::OsRng;
use rsa::pkcs8::{DecodePrivateKey, DecodePublicKey};
use rsa::{Oaep, Pkcs1v15Sign, Pss, RsaPrivateKey, RsaPublicKey};

/// The most PBKDF2 rounds one call does (a million SHA-512 rounds is about a second of a
/// core: more is a script's mistake, not a load test).
const MAX_ITERATIONS: u32 = 10_000_000;

/// Runs `$body` with `$m` the crate of `alg.named_curve` (`p256` or `p384`).
macro_rules! curve_crate {
    ($alg:expr, $m:ident => $body:expr) => {
        match $alg.named_curve.as_deref() {
            Some("P-256") => {
                use p256 as $m;
                $body
            }
            Some("P-384") => {
                use p384 as $m;
                $body
            }
            Some(other) => Err(format!(
                "{}: namedCurve {other} is not one this host has (P-256, P-384)",
                $alg.name
            )),
            None => Err(format!("{} needs namedCurve (P-256 or P-384)", $alg.name)),
        }
    };
}

fn key_err(alg: &Algorithm, e: impl std::fmt::Display) -> String {
    format!("{}: the key does not fit the algorithm: {e}", alg.name)
}

/// Runs `$f::<D>(args)` for a WebCrypto hash (SHA-1, SHA-2).
macro_rules! with_web_digest {
    ($hash:expr, $f:ident ( $($arg:expr),* )) => {
        match $hash {
            Hash::Sha1 => $f::<sha1::Sha1>($($arg),*),
            Hash::Sha256 => $f::<sha2::Sha256>($($arg),*),
            Hash::Sha384 => $f::<sha2::Sha384>($($arg),*),
            _ => $f::<sha2::Sha512>($($arg),*),
        }
    };
}

fn pkcs1<D: sha2::Digest + rsa::pkcs8::AssociatedOid>() -> Pkcs1v15Sign {
    Pkcs1v15Sign::new::<D>()
}
fn pss<D: 'static + sha2::Digest + sha2::digest::DynDigest + Send + Sync>(salt: usize) -> Pss {
    Pss::new_with_salt::<D>(salt)
}
fn oaep<D: 'static + sha2::Digest + sha2::digest::DynDigest + Send + Sync>(
    label: Option<String>,
) -> Oaep {
    match label {
        Some(l) => Oaep::new_with_label::<D, String>(l),
        None => Oaep::new::<D>(),
    }
}

/// A signature of `data` (ECDSA's as r ‖ s, WebCrypto's IEEE P1363 form).
pub(crate) fn sign(alg: &Algorithm, key: &[u8], data: &[u8]) -> Result<Vec<u8>, String> {
    match alg.name.as_str() {
        "HMAC" => Ok(super::hmac(alg.hash()?.web()?, key, data)),
        "ECDSA" => {
            let digest = super::digest(alg.hash()?.web()?, data);
            curve_crate!(alg, m => {
                use m::ecdsa::signature::hazmat::PrehashSigner;
                let sk = m::ecdsa::SigningKey::from_pkcs8_der(key).map_err(|e| key_err(alg, e))?;
                let sig: m::ecdsa::Signature = sk.sign_prehash(&digest).map_err(|e| key_err(alg, e))?;
                Ok(sig.to_bytes().to_vec())
            })
        }
        "RSASSA-PKCS1-V1_5" | "RSA-PSS" => {
            let hash = alg.hash()?.web()?;
            let digest = super::digest(hash, data);
            let sk = RsaPrivateKey::from_pkcs8_der(key).map_err(|e| key_err(alg, e))?;
            let out = if alg.name == "RSA-PSS" {
                let salt = alg.salt_length.ok_or("RSA-PSS needs saltLength")? as usize;
                sk.sign_with_rng(&mut OsRng, with_web_digest!(hash, pss(salt)), &digest)
            } else {
                sk.sign(with_web_digest!(hash, pkcs1()), &digest)
            };
            out.map_err(|e| key_err(alg, e))
        }
        other => Err(format!(
            "{other} does not sign (HMAC, ECDSA, RSASSA-PKCS1-v1_5, RSA-PSS do)"
        )),
    }
}

/// Whether `signature` is `key`'s over `data`.
pub(crate) fn verify(
    alg: &Algorithm,
    key: &[u8],
    signature: &[u8],
    data: &[u8],
) -> Result<bool, String> {
    match alg.name.as_str() {
        "HMAC" => {
            let want = super::hmac(alg.hash()?.web()?, key, data);
            // Constant time in the signature's bytes, as a MAC check should be.
            Ok(want.len() == signature.len()
                && want
                    .iter()
                    .zip(signature)
                    .fold(0u8, |acc, (a, b)| acc | (a ^ b))
                    == 0)
        }
        "ECDSA" => {
            let digest = super::digest(alg.hash()?.web()?, data);
            curve_crate!(alg, m => {
                use m::ecdsa::signature::hazmat::PrehashVerifier;
                let vk = m::ecdsa::VerifyingKey::from_public_key_der(key).map_err(|e| key_err(alg, e))?;
                let Ok(sig) = m::ecdsa::Signature::from_slice(signature) else {
                    return Ok(false);
                };
                Ok(vk.verify_prehash(&digest, &sig).is_ok())
            })
        }
        "RSASSA-PKCS1-V1_5" | "RSA-PSS" => {
            let hash = alg.hash()?.web()?;
            let digest = super::digest(hash, data);
            let pk = RsaPublicKey::from_public_key_der(key).map_err(|e| key_err(alg, e))?;
            let ok = if alg.name == "RSA-PSS" {
                let salt = alg.salt_length.ok_or("RSA-PSS needs saltLength")? as usize;
                pk.verify(with_web_digest!(hash, pss(salt)), &digest, signature)
            } else {
                pk.verify(with_web_digest!(hash, pkcs1()), &digest, signature)
            };
            Ok(ok.is_ok())
        }
        other => Err(format!(
            "{other} does not verify (HMAC, ECDSA, RSASSA-PKCS1-v1_5, RSA-PSS do)"
        )),
    }
}

/// `data` encrypted (`encrypt`) or decrypted.
pub(crate) fn crypt(
    alg: &Algorithm,
    key: &[u8],
    data: &[u8],
    encrypt: bool,
) -> Result<Vec<u8>, String> {
    match alg.name.as_str() {
        "AES-CBC" => aes::cbc(key, alg.iv.as_deref(), data, encrypt),
        "AES-CTR" => aes::ctr(key, alg.iv.as_deref(), alg.length, data),
        "AES-GCM" => aes::gcm(
            key,
            alg.iv.as_deref(),
            alg.additional_data.as_deref(),
            alg.tag_length,
            data,
            encrypt,
        ),
        "RSA-OAEP" => {
            let hash = alg.hash()?.web()?;
            let label = match &alg.additional_data {
                None => None,
                // rsa 0.9 takes the label as a String: a label that is not UTF-8 is refused.
                Some(l) => Some(
                    String::from_utf8(l.clone())
                        .map_err(|_| "RSA-OAEP: this host takes a label of UTF-8 text only")?,
                ),
            };
            let padding = with_web_digest!(hash, oaep(label));
            if encrypt {
                let pk = RsaPublicKey::from_public_key_der(key).map_err(|e| key_err(alg, e))?;
                pk.encrypt(&mut OsRng, padding, data)
                    .map_err(|e| format!("RSA-OAEP: {e}"))
            } else {
                let sk = RsaPrivateKey::from_pkcs8_der(key).map_err(|e| key_err(alg, e))?;
                sk.decrypt(padding, data).map_err(|_| "RSA-OAEP: the data does not decrypt with this key and label (OperationError)".into())
            }
        }
        other => Err(format!(
            "{other} does not {} (AES-CBC, AES-CTR, AES-GCM, RSA-OAEP do)",
            if encrypt { "encrypt" } else { "decrypt" }
        )),
    }
}

/// `bits` bits derived from `key`: ECDH's shared secret (the x coordinate) or PBKDF2's
/// output.
pub(crate) fn derive_bits(alg: &Algorithm, key: &[u8], bits: u32) -> Result<Vec<u8>, String> {
    if !bits.is_multiple_of(8) {
        return Err(format!(
            "{}: length is a multiple of 8 here, not {bits}",
            alg.name
        ));
    }
    let bytes = bits as usize / 8;
    match alg.name.as_str() {
        "ECDH" => {
            let peer = alg
                .peer
                .as_deref()
                .ok_or("ECDH needs `public`, the peer's public key")?;
            let secret: Vec<u8> = curve_crate!(alg, m => {
                let sk = m::SecretKey::from_pkcs8_der(key).map_err(|e| key_err(alg, e))?;
                let pk = m::PublicKey::from_public_key_der(peer)
                    .map_err(|e| format!("ECDH: the public key is not a {} key: {e}", alg.named_curve.as_deref().unwrap_or_default()))?;
                Ok::<_, String>(m::ecdh::diffie_hellman(sk.to_nonzero_scalar(), pk.as_affine()).raw_secret_bytes().to_vec())
            })?;
            if bytes > secret.len() {
                return Err(format!(
                    "ECDH: the shared secret has {} bits, fewer than {bits}",
                    secret.len() * 8
                ));
            }
            Ok(secret[..if bits == 0 { secret.len() } else { bytes }].to_vec())
        }
        "PBKDF2" => {
            let hash = alg.hash()?.web()?;
            let salt = alg.salt.as_deref().ok_or("PBKDF2 needs salt")?;
            let rounds = alg.iterations.ok_or("PBKDF2 needs iterations")?;
            if rounds == 0 || rounds > MAX_ITERATIONS {
                return Err(format!(
                    "PBKDF2: iterations is 1 to {MAX_ITERATIONS} here, not {rounds}"
                ));
            }
            if bytes == 0 || bytes > 1 << 16 {
                return Err(format!(
                    "PBKDF2: length is 8 to {} bits here, not {bits}",
                    8 << 16
                ));
            }
            let mut out = vec![0; bytes];
            match hash {
                Hash::Sha1 => pbkdf2::pbkdf2_hmac::<sha1::Sha1>(key, salt, rounds, &mut out),
                Hash::Sha256 => pbkdf2::pbkdf2_hmac::<sha2::Sha256>(key, salt, rounds, &mut out),
                Hash::Sha384 => pbkdf2::pbkdf2_hmac::<sha2::Sha384>(key, salt, rounds, &mut out),
                _ => pbkdf2::pbkdf2_hmac::<sha2::Sha512>(key, salt, rounds, &mut out),
            }
            Ok(out)
        }
        other => Err(format!("{other} does not derive bits (ECDH, PBKDF2 do)")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::{keys, KeyKind};
    use p256::pkcs8::{EncodePrivateKey, EncodePublicKey};

    fn h(s: &str) -> Vec<u8> {
        hex::decode(s).unwrap()
    }

    fn alg(name: &str) -> Algorithm {
        Algorithm {
            name: name.into(),
            ..Algorithm::default()
        }
    }

    /// RFC 6979 A.2.5: P-256, SHA-256, message "sample": the deterministic signature
    /// is the RFC's r ‖ s, and it verifies; a changed message does not.
    #[test]
    fn ecdsa_p256_signs_rfc_6979s_vector() {
        let sk = p256::SecretKey::from_slice(&h(
            "c9afa9d845ba75166b5c215767b1d6934e50c3db36e89b127b8a622b120f6721",
        ))
        .unwrap();
        let private = sk.to_pkcs8_der().unwrap().as_bytes().to_vec();
        let public = sk.public_key().to_public_key_der().unwrap().into_vec();
        let a = Algorithm {
            hash: Some("SHA-256".into()),
            named_curve: Some("P-256".into()),
            ..alg("ECDSA")
        };
        let sig = sign(&a, &private, b"sample").unwrap();
        assert_eq!(
            hex::encode(&sig),
            "efd48b2aacb6a8fd1140dd9cd45e81d69d2c877b56aaf991c34d0ea84eaf3716f7cb1c942d657c41d436c7a1b6e29f65f3e900dbb9aff4064dc4ab2f843acda8"
        );
        assert!(verify(&a, &public, &sig, b"sample").unwrap());
        assert!(!verify(&a, &public, &sig, b"samplf").unwrap());
    }

    /// P-384 keys made here sign and verify with SHA-384.
    #[test]
    fn ecdsa_p384_round_trips() {
        let a = Algorithm {
            hash: Some("SHA-384".into()),
            named_curve: Some("P-384".into()),
            ..alg("ECDSA")
        };
        let (private, public) = keys::generate(&a).unwrap();
        let sig = sign(&a, &private, b"data").unwrap();
        assert_eq!(sig.len(), 96);
        assert!(verify(&a, &public, &sig, b"data").unwrap());
    }

    /// OpenSSL's RSASSA-PKCS1-v1_5 signature (deterministic) is the host's byte for
    /// byte; OpenSSL's RSA-PSS signature verifies; OpenSSL's RSA-OAEP ciphertext
    /// decrypts to "abc" (testdata/README.md says how they were made).
    #[test]
    fn rsa_agrees_with_openssl() {
        let private = include_bytes!("testdata/rsa1024-pkcs8.der");
        let public = include_bytes!("testdata/rsa1024-spki.der");
        let a = Algorithm {
            hash: Some("SHA-256".into()),
            ..alg("RSASSA-PKCS1-V1_5")
        };
        let want = include_bytes!("testdata/rsa1024-pkcs1-sha256-abc.sig");
        assert_eq!(sign(&a, private, b"abc").unwrap(), want.to_vec());
        assert!(verify(&a, public, want, b"abc").unwrap());
        assert!(!verify(&a, public, want, b"abd").unwrap());
        let pss = Algorithm {
            hash: Some("SHA-256".into()),
            salt_length: Some(32),
            ..alg("RSA-PSS")
        };
        assert!(verify(
            &pss,
            public,
            include_bytes!("testdata/rsa1024-pss32-sha256-abc.sig"),
            b"abc"
        )
        .unwrap());
        let ours = sign(&pss, private, b"abc").unwrap();
        assert!(verify(&pss, public, &ours, b"abc").unwrap());
        let oaep = Algorithm {
            hash: Some("SHA-256".into()),
            ..alg("RSA-OAEP")
        };
        let c = include_bytes!("testdata/rsa1024-oaep-sha256-abc.bin");
        assert_eq!(crypt(&oaep, private, c, false).unwrap(), b"abc");
        let mine = crypt(&oaep, public, b"hello", true).unwrap();
        assert_eq!(crypt(&oaep, private, &mine, false).unwrap(), b"hello");
        let labelled = Algorithm {
            additional_data: Some(b"l".to_vec()),
            ..oaep.clone()
        };
        assert!(crypt(&labelled, private, &mine, false)
            .unwrap_err()
            .contains("OperationError"));
    }

    /// RFC 6070's PBKDF2-HMAC-SHA1 vectors (1 and 4096 rounds) and the SHA-256 one
    /// RFC 7914 section 11 lists.
    #[test]
    fn pbkdf2_matches_rfc_6070_and_7914() {
        let mut a = Algorithm {
            hash: Some("SHA-1".into()),
            salt: Some(b"salt".to_vec()),
            iterations: Some(1),
            ..alg("PBKDF2")
        };
        assert_eq!(
            hex::encode(derive_bits(&a, b"password", 160).unwrap()),
            "0c60c80f961f0e71f3a9b524af6012062fe037a6"
        );
        a.iterations = Some(4096);
        assert_eq!(
            hex::encode(derive_bits(&a, b"password", 160).unwrap()),
            "4b007901b765489abead49d926f721d065a429c1"
        );
        let b = Algorithm {
            hash: Some("SHA-256".into()),
            salt: Some(b"salt".to_vec()),
            iterations: Some(1),
            ..alg("PBKDF2")
        };
        assert_eq!(
            hex::encode(derive_bits(&b, b"passwd", 512).unwrap()),
            "55ac046e56e3089fec1691c22544b605f94185216dde0465e68b9d57c20dacbc49ca9cccf179b645991664b39d77ef317c71b845b1e30bd509112041d3a19783"
        );
        a.iterations = Some(0);
        assert!(derive_bits(&a, b"p", 160)
            .unwrap_err()
            .contains("iterations"));
    }

    /// RFC 5903 section 8.1 (ECDH on P-256): the initiator's private key and the
    /// responder's public key give the RFC's shared x coordinate.
    #[test]
    fn ecdh_p256_matches_rfc_5903() {
        let i = p256::SecretKey::from_slice(&h(
            "c88f01f510d9ac3f70a292daa2316de544e9aab8afe84049c62a9c57862d1433",
        ))
        .unwrap();
        let r = p256::PublicKey::from_sec1_bytes(&h(
            "04d12dfb5289c8d4f81208b70270398c342296970a0bccb74c736fc7554494bf6356fbf3ca366cc23e8157854c13c58d6aac23f046ada30f8353e74f33039872ab",
        ))
        .unwrap();
        let a = Algorithm {
            named_curve: Some("P-256".into()),
            peer: Some(r.to_public_key_der().unwrap().into_vec()),
            ..alg("ECDH")
        };
        let private = i.to_pkcs8_der().unwrap().as_bytes().to_vec();
        assert_eq!(
            hex::encode(derive_bits(&a, &private, 256).unwrap()),
            "d6840f6b42f6edafd13116e0e12565202fef8e9ece7dce03812464d04b9442de"
        );
        assert_eq!(derive_bits(&a, &private, 128).unwrap().len(), 16);
        assert!(derive_bits(&a, &private, 512)
            .unwrap_err()
            .contains("fewer"));
    }

    /// RFC 7515 A.3's P-256 key read as a JWK writes the same JWK back, its public key
    /// as raw is 04 ‖ x ‖ y, and a 2048-bit RSA key made here goes through JWK intact.
    #[test]
    fn keys_go_through_jwk_spki_pkcs8_and_raw() {
        let a = Algorithm {
            named_curve: Some("P-256".into()),
            hash: Some("SHA-256".into()),
            ..alg("ECDSA")
        };
        let jwk = r#"{"kty":"EC","crv":"P-256","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0","d":"jpsQnnGQmL-YBIffH1136cspYG6-0iY7X1fCE9-E9LI"}"#;
        let k = keys::import(&a, "jwk", jwk.as_bytes()).unwrap();
        assert_eq!(k.kind, KeyKind::Private);
        let back: serde_json::Value =
            serde_json::from_slice(&keys::export(&a, "jwk", KeyKind::Private, &k.bytes).unwrap())
                .unwrap();
        assert_eq!(back["d"], "jpsQnnGQmL-YBIffH1136cspYG6-0iY7X1fCE9-E9LI");
        assert_eq!(back["x"], "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU");
        let public_jwk = r#"{"kty":"EC","crv":"P-256","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0","ext":true,"key_ops":["verify"]}"#;
        let p = keys::import(&a, "jwk", public_jwk.as_bytes()).unwrap();
        let raw = keys::export(&a, "raw", KeyKind::Public, &p.bytes).unwrap();
        assert_eq!(raw.len(), 65);
        assert_eq!(raw[0], 4);
        assert_eq!(keys::import(&a, "raw", &raw).unwrap().bytes, p.bytes);
        let sig = sign(&a, &k.bytes, b"x").unwrap();
        assert!(verify(&a, &p.bytes, &sig, b"x").unwrap());
        assert!(keys::import(
            &Algorithm {
                named_curve: Some("P-384".into()),
                ..a.clone()
            },
            "jwk",
            jwk.as_bytes()
        )
        .unwrap_err()
        .contains("crv"));

        let r = Algorithm {
            hash: Some("SHA-256".into()),
            modulus_length: Some(2048),
            ..alg("RSA-OAEP")
        };
        let (private, public) = keys::generate(&r).unwrap();
        let jwk = keys::export(&r, "jwk", KeyKind::Private, &private).unwrap();
        let again = keys::import(&r, "jwk", &jwk).unwrap();
        assert_eq!(again.bytes, private);
        assert_eq!(again.modulus_length, Some(2048));
        assert_eq!(again.public_exponent.as_deref(), Some(&[1u8, 0, 1][..]));
        let pj = keys::export(&r, "jwk", KeyKind::Public, &public).unwrap();
        assert_eq!(keys::import(&r, "jwk", &pj).unwrap().bytes, public);
        assert!(keys::export(&r, "raw", KeyKind::Public, &public)
            .unwrap_err()
            .contains("not exported"));

        let hm = Algorithm {
            hash: Some("SHA-384".into()),
            ..alg("HMAC")
        };
        let (secret, _) = keys::generate(&hm).unwrap();
        assert_eq!(secret.len(), 128);
        let j: serde_json::Value =
            serde_json::from_slice(&keys::export(&hm, "jwk", KeyKind::Secret, &secret).unwrap())
                .unwrap();
        assert_eq!(j["alg"], "HS384");
        assert_eq!(
            keys::import(&hm, "jwk", j.to_string().as_bytes())
                .unwrap()
                .bytes,
            secret
        );
    }
}
