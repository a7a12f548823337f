//! WebCrypto keys: made, read from raw, JWK, SPKI and PKCS #8, and written back, in the
//! one form per kind the operations take (see the module above).

use super::{Algorithm, Hash, KeyKind};
use base64::engine::{general_purpose::GeneralPurpose, DecodePaddingMode, GeneralPurposeConfig};
use base64::Engine as _;
use p256::elliptic_curve;
use rand_core_06::OsRng;
use rsa::pkcs8::{DecodePrivateKey, DecodePublicKey, EncodePrivateKey, EncodePublicKey};
use rsa::traits::{PrivateKeyParts, PublicKeyParts};
use rsa::{BigUint, RsaPrivateKey, RsaPublicKey};
use serde_json::{json, Map, Value};

/// JWK's base64url, read with or without padding (JWK has none; some tools add it).
const B64: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::URL_SAFE,
    GeneralPurposeConfig::new()
        .with_encode_padding(false)
        .with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// The most RSA modulus bits `generate-key` makes (a 16,384-bit key takes minutes of one
/// core; WebCrypto scripts use 2,048 to 4,096).
const MAX_RSA_BITS: u32 = 8192;

/// A key as `import-key` read it (see `layer.wit`'s `imported-key`).
#[derive(Debug, Clone)]
pub(crate) struct Imported {
    /// Secret, private or public.
    pub kind: KeyKind,
    /// The key in its kind's form.
    pub bytes: Vec<u8>,
    /// An EC key's curve.
    pub named_curve: Option<String>,
    /// An RSA key's modulus bits.
    pub modulus_length: Option<u32>,
    /// An RSA key's public exponent, big-endian.
    pub public_exponent: Option<Vec<u8>>,
    /// A secret key's bits.
    pub length: Option<u32>,
}

impl Imported {
    fn secret(bytes: Vec<u8>) -> Imported {
        let length = Some(bytes.len() as u32 * 8);
        Imported {
            kind: KeyKind::Secret,
            bytes,
            named_curve: None,
            modulus_length: None,
            public_exponent: None,
            length,
        }
    }
}

/// The family an algorithm's keys belong to.
enum Family {
    /// HMAC, AES-*, PBKDF2: raw bytes.
    Secret,
    /// ECDSA and ECDH on P-256 or P-384.
    Ec,
    /// RSASSA-PKCS1-v1_5, RSA-PSS, RSA-OAEP.
    Rsa,
}

fn family(alg: &Algorithm) -> Result<Family, String> {
    Ok(match alg.name.as_str() {
        "HMAC" | "AES-CBC" | "AES-CTR" | "AES-GCM" | "PBKDF2" => Family::Secret,
        "ECDSA" | "ECDH" => Family::Ec,
        "RSASSA-PKCS1-V1_5" | "RSA-PSS" | "RSA-OAEP" => Family::Rsa,
        other => return Err(format!(
            "{other} is not an algorithm this host's crypto has (HMAC, AES-CBC, AES-CTR, AES-GCM, PBKDF2, ECDSA, ECDH, RSASSA-PKCS1-v1_5, RSA-PSS, RSA-OAEP)"
        )),
    })
}

/// Runs `$body` with `$C` the curve type `alg.named_curve` names.
macro_rules! on_curve {
    ($alg:expr, $C:ident => $body:expr) => {
        match $alg.named_curve.as_deref() {
            Some("P-256") => {
                type $C = p256::NistP256;
                $body
            }
            Some("P-384") => {
                type $C = p384::NistP384;
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

fn der_err(e: impl std::fmt::Display) -> String {
    format!("the key does not read as one: {e}")
}

/// A new key: (secret or private, public), public empty for a secret key.
pub(crate) fn generate(alg: &Algorithm) -> Result<(Vec<u8>, Vec<u8>), String> {
    match family(alg)? {
        Family::Secret => {
            let bits =
                match alg.name.as_str() {
                    "HMAC" => alg.length.unwrap_or(alg.hash()?.block_bits()),
                    "PBKDF2" => return Err(
                        "PBKDF2 keys are imported from a password (importKey 'raw'), not generated"
                            .into(),
                    ),
                    _ => match alg.length {
                        Some(b @ (128 | 192 | 256)) => b,
                        other => {
                            return Err(format!(
                                "{}: length is 128, 192 or 256, not {other:?}",
                                alg.name
                            ))
                        }
                    },
                };
            if bits == 0 || bits % 8 != 0 || bits > 8192 {
                return Err(format!("{}: a key of {bits} bits is not one this host makes (a multiple of 8, up to 8192)", alg.name));
            }
            Ok((super::random_bytes(bits / 8), Vec::new()))
        }
        Family::Ec => on_curve!(alg, C => {
            let secret = elliptic_curve::SecretKey::<C>::random(&mut OsRng);
            let private = secret.to_pkcs8_der().map_err(der_err)?.as_bytes().to_vec();
            let public = secret.public_key().to_public_key_der().map_err(der_err)?.into_vec();
            Ok((private, public))
        }),
        Family::Rsa => {
            let bits = alg
                .modulus_length
                .ok_or_else(|| format!("{} needs modulusLength", alg.name))?;
            if !(1024..=MAX_RSA_BITS).contains(&bits) {
                return Err(format!(
                    "{}: modulusLength is 1024 to {MAX_RSA_BITS} here, not {bits}",
                    alg.name
                ));
            }
            let exp = BigUint::from_bytes_be(alg.public_exponent.as_deref().unwrap_or(&[1, 0, 1]));
            let key = RsaPrivateKey::new_with_exp(&mut OsRng, bits as usize, &exp)
                .map_err(|e| format!("{}: {e}", alg.name))?;
            let private = key.to_pkcs8_der().map_err(der_err)?.as_bytes().to_vec();
            let public = key
                .to_public_key()
                .to_public_key_der()
                .map_err(der_err)?
                .into_vec();
            Ok((private, public))
        }
    }
}

/// Reads a key from `format` (`raw`, `jwk` as JSON text, `spki`, `pkcs8`).
pub(crate) fn import(alg: &Algorithm, format: &str, data: &[u8]) -> Result<Imported, String> {
    match (family(alg)?, format) {
        (Family::Secret, "raw") => {
            if alg.name.starts_with("AES") && ![16, 24, 32].contains(&data.len()) {
                return Err(format!(
                    "{}: an AES key is 128, 192 or 256 bits, not {}",
                    alg.name,
                    data.len() * 8
                ));
            }
            Ok(Imported::secret(data.to_vec()))
        }
        (Family::Secret, "jwk") if alg.name != "PBKDF2" => {
            let jwk = jwk_of(data, "oct")?;
            import(alg, "raw", &field(&jwk, "k")?)
        }
        (Family::Ec, _) => on_curve!(alg, C => import_ec::<C>(alg, format, data)),
        (Family::Rsa, "spki") => {
            rsa_public(RsaPublicKey::from_public_key_der(data).map_err(der_err)?)
        }
        (Family::Rsa, "pkcs8") => {
            rsa_private(RsaPrivateKey::from_pkcs8_der(data).map_err(der_err)?)
        }
        (Family::Rsa, "jwk") => {
            let jwk = jwk_of(data, "RSA")?;
            let n = BigUint::from_bytes_be(&field(&jwk, "n")?);
            let e = BigUint::from_bytes_be(&field(&jwk, "e")?);
            if jwk.get("d").is_none() {
                return rsa_public(RsaPublicKey::new(n, e).map_err(der_err)?);
            }
            let d = BigUint::from_bytes_be(&field(&jwk, "d")?);
            let primes = vec![
                BigUint::from_bytes_be(&field(&jwk, "p")?),
                BigUint::from_bytes_be(&field(&jwk, "q")?),
            ];
            let mut key = RsaPrivateKey::from_components(n, e, d, primes).map_err(der_err)?;
            key.precompute().map_err(der_err)?;
            key.validate().map_err(der_err)?;
            rsa_private(key)
        }
        (_, f) => Err(format!(
            "{}: keys are not imported from {f:?} (formats: {})",
            alg.name,
            formats(alg)
        )),
    }
}

fn formats(alg: &Algorithm) -> &'static str {
    match family(alg) {
        Ok(Family::Secret) if alg.name == "PBKDF2" => "raw",
        Ok(Family::Secret) => "raw, jwk",
        Ok(Family::Ec) => "raw (public), spki, pkcs8, jwk",
        _ => "spki, pkcs8, jwk",
    }
}

fn rsa_public(key: RsaPublicKey) -> Result<Imported, String> {
    Ok(Imported {
        kind: KeyKind::Public,
        modulus_length: Some(key.n().bits() as u32),
        public_exponent: Some(key.e().to_bytes_be()),
        bytes: key.to_public_key_der().map_err(der_err)?.into_vec(),
        named_curve: None,
        length: None,
    })
}

fn rsa_private(key: RsaPrivateKey) -> Result<Imported, String> {
    Ok(Imported {
        kind: KeyKind::Private,
        modulus_length: Some(key.n().bits() as u32),
        public_exponent: Some(key.e().to_bytes_be()),
        bytes: key.to_pkcs8_der().map_err(der_err)?.as_bytes().to_vec(),
        named_curve: None,
        length: None,
    })
}

fn import_ec<C>(alg: &Algorithm, format: &str, data: &[u8]) -> Result<Imported, String>
where
    C: elliptic_curve::CurveArithmetic
        + elliptic_curve::JwkParameters
        + elliptic_curve::pkcs8::AssociatedOid
        + elliptic_curve::sec1::ValidatePublicKey,
    elliptic_curve::AffinePoint<C>:
        elliptic_curve::sec1::FromEncodedPoint<C> + elliptic_curve::sec1::ToEncodedPoint<C>,
    elliptic_curve::FieldBytesSize<C>: elliptic_curve::sec1::ModulusSize,
{
    use elliptic_curve::{PublicKey, SecretKey};
    let public = |k: PublicKey<C>| -> Result<Imported, String> {
        Ok(Imported {
            kind: KeyKind::Public,
            bytes: k.to_public_key_der().map_err(der_err)?.into_vec(),
            named_curve: alg.named_curve.clone(),
            modulus_length: None,
            public_exponent: None,
            length: None,
        })
    };
    let private = |k: SecretKey<C>| -> Result<Imported, String> {
        Ok(Imported {
            kind: KeyKind::Private,
            bytes: k.to_pkcs8_der().map_err(der_err)?.as_bytes().to_vec(),
            named_curve: alg.named_curve.clone(),
            modulus_length: None,
            public_exponent: None,
            length: None,
        })
    };
    let curve = alg.named_curve.as_deref().unwrap_or_default();
    match format {
        "raw" => public(
            PublicKey::<C>::from_sec1_bytes(data)
                .map_err(|_| format!("{}: the raw key is not a {curve} point", alg.name))?,
        ),
        "spki" => public(
            PublicKey::<C>::from_public_key_der(data)
                .map_err(|e| format!("{}: not a {curve} public key: {e}", alg.name))?,
        ),
        "pkcs8" => private(
            SecretKey::<C>::from_pkcs8_der(data)
                .map_err(|e| format!("{}: not a {curve} private key: {e}", alg.name))?,
        ),
        "jwk" => {
            let jwk = jwk_of(data, "EC")?;
            if jwk.get("crv").and_then(Value::as_str) != Some(curve) {
                return Err(format!(
                    "{}: the JWK's crv is {:?}, not {curve}",
                    alg.name,
                    jwk.get("crv")
                ));
            }
            // The key's own members only: the curve crate's reader refuses the others
            // a WebCrypto JWK carries (`key_ops`, `ext`, `alg`).
            let own: Map<String, Value> = jwk
                .into_iter()
                .filter(|(k, _)| matches!(k.as_str(), "kty" | "crv" | "x" | "y" | "d"))
                .collect();
            let text = Value::Object(own).to_string();
            if text.contains("\"d\"") {
                private(SecretKey::<C>::from_jwk_str(&text).map_err(der_err)?)
            } else {
                public(PublicKey::<C>::from_jwk_str(&text).map_err(der_err)?)
            }
        }
        f => Err(format!(
            "{}: keys are not imported from {f:?} (formats: {})",
            alg.name,
            formats(alg)
        )),
    }
}

/// Writes a key in `format` (`jwk` as JSON text, without `key_ops` and `ext`, which the
/// layer adds from the CryptoKey).
pub(crate) fn export(
    alg: &Algorithm,
    format: &str,
    kind: KeyKind,
    key: &[u8],
) -> Result<Vec<u8>, String> {
    match (family(alg)?, format, kind) {
        (Family::Secret, "raw", _) => Ok(key.to_vec()),
        (Family::Secret, "jwk", _) if alg.name != "PBKDF2" => {
            let mut jwk = json!({ "kty": "oct", "k": B64.encode(key) });
            if let Some(a) = secret_jwk_alg(alg, key.len())? {
                jwk["alg"] = Value::String(a);
            }
            Ok(jwk.to_string().into_bytes())
        }
        (Family::Ec, _, _) => on_curve!(alg, C => export_ec::<C>(alg, format, kind, key)),
        (Family::Rsa, "spki", KeyKind::Public) | (Family::Rsa, "pkcs8", KeyKind::Private) => {
            Ok(key.to_vec())
        }
        (Family::Rsa, "jwk", KeyKind::Public) => {
            let k = RsaPublicKey::from_public_key_der(key).map_err(der_err)?;
            Ok(json!({ "kty": "RSA", "n": B64.encode(k.n().to_bytes_be()), "e": B64.encode(k.e().to_bytes_be()) }).to_string().into_bytes())
        }
        (Family::Rsa, "jwk", KeyKind::Private) => {
            let k = RsaPrivateKey::from_pkcs8_der(key).map_err(der_err)?;
            let b = |v: &BigUint| B64.encode(v.to_bytes_be());
            let p = k.primes();
            let (dp, dq) = (
                k.dp().ok_or("RSA key without CRT values")?,
                k.dq().ok_or("RSA key without CRT values")?,
            );
            let qi = k.crt_coefficient().ok_or("RSA key without CRT values")?;
            Ok(json!({
                "kty": "RSA", "n": b(k.n()), "e": b(k.e()), "d": b(k.d()),
                "p": b(&p[0]), "q": b(&p[1]), "dp": b(dp), "dq": b(dq), "qi": b(&qi),
            })
            .to_string()
            .into_bytes())
        }
        (_, f, kind) => Err(format!(
            "{}: a {kind:?} key is not exported as {f:?} (formats: {})",
            alg.name,
            formats(alg)
        )
        .to_lowercase()),
    }
}

fn secret_jwk_alg(alg: &Algorithm, bytes: usize) -> Result<Option<String>, String> {
    Ok(match alg.name.as_str() {
        "HMAC" => Some(match alg.hash()? {
            Hash::Sha1 => "HS1".into(),
            h => format!("HS{}", &h.web_name()[4..]),
        }),
        name => name
            .strip_prefix("AES-")
            .map(|mode| format!("A{}{mode}", bytes * 8)),
    })
}

fn export_ec<C>(alg: &Algorithm, format: &str, kind: KeyKind, key: &[u8]) -> Result<Vec<u8>, String>
where
    C: elliptic_curve::CurveArithmetic
        + elliptic_curve::JwkParameters
        + elliptic_curve::pkcs8::AssociatedOid
        + elliptic_curve::sec1::ValidatePublicKey,
    elliptic_curve::AffinePoint<C>:
        elliptic_curve::sec1::FromEncodedPoint<C> + elliptic_curve::sec1::ToEncodedPoint<C>,
    elliptic_curve::FieldBytesSize<C>: elliptic_curve::sec1::ModulusSize,
{
    use elliptic_curve::sec1::ToEncodedPoint;
    use elliptic_curve::{PublicKey, SecretKey};
    match (format, kind) {
        ("spki", KeyKind::Public) | ("pkcs8", KeyKind::Private) => Ok(key.to_vec()),
        ("raw", KeyKind::Public) => {
            let k = PublicKey::<C>::from_public_key_der(key).map_err(der_err)?;
            Ok(k.to_encoded_point(false).as_bytes().to_vec())
        }
        ("jwk", KeyKind::Public) => Ok(PublicKey::<C>::from_public_key_der(key)
            .map_err(der_err)?
            .to_jwk_string()
            .into_bytes()),
        ("jwk", KeyKind::Private) => Ok(SecretKey::<C>::from_pkcs8_der(key)
            .map_err(der_err)?
            .to_jwk_string()
            .as_bytes()
            .to_vec()),
        (f, kind) => Err(format!(
            "{}: a {kind:?} key is not exported as {f:?} (formats: {})",
            alg.name,
            formats(alg)
        )
        .to_lowercase()),
    }
}

fn jwk_of(data: &[u8], kty: &str) -> Result<Map<String, Value>, String> {
    let v: Value = serde_json::from_slice(data).map_err(|e| format!("the JWK is not JSON: {e}"))?;
    let Value::Object(map) = v else {
        return Err("a JWK is a JSON object".into());
    };
    if map.get("kty").and_then(Value::as_str) != Some(kty) {
        return Err(format!(
            "the JWK's kty is {:?}, where this algorithm takes {kty:?}",
            map.get("kty")
        ));
    }
    Ok(map)
}

fn field(jwk: &Map<String, Value>, name: &str) -> Result<Vec<u8>, String> {
    let text = jwk
        .get(name)
        .and_then(Value::as_str)
        .ok_or_else(|| format!("the JWK has no {name:?}"))?;
    B64.decode(text)
        .map_err(|e| format!("the JWK's {name:?} is not base64url: {e}"))
}
