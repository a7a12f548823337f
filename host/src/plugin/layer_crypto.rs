//! The k6 layer's cryptography (`loadtest:k6-layer/crypto`): the WIT values carried to
//! and from `crate::crypto`, which does the work.

use super::imports::Stateless;
use super::layer::bindings::loadtest::k6_layer::crypto as wit;
use crate::crypto::{self, keys, ops, Algorithm, Hash, KeyKind};

/// The most bytes one call hashes, signs or encrypts (64 MiB: a script's body is
/// bounded by the VU's memory anyway; this stops a call from tying up the host).
const MAX_INPUT: usize = 64 << 20;

fn algorithm(a: wit::Algorithm) -> Algorithm {
    Algorithm {
        name: a.name.to_ascii_uppercase(),
        hash: a.hash,
        named_curve: a.named_curve,
        length: a.length,
        tag_length: a.tag_length,
        salt_length: a.salt_length,
        iterations: a.iterations,
        modulus_length: a.modulus_length,
        public_exponent: a.public_exponent,
        iv: a.iv,
        additional_data: a.additional_data,
        salt: a.salt,
        peer: a.peer,
    }
}

fn kind_from(k: wit::KeyKind) -> KeyKind {
    match k {
        wit::KeyKind::Secret => KeyKind::Secret,
        wit::KeyKind::Private => KeyKind::Private,
        wit::KeyKind::Public => KeyKind::Public,
    }
}

fn kind_to(k: KeyKind) -> wit::KeyKind {
    match k {
        KeyKind::Secret => wit::KeyKind::Secret,
        KeyKind::Private => wit::KeyKind::Private,
        KeyKind::Public => wit::KeyKind::Public,
    }
}

fn bounded(data: &[u8]) -> Result<(), String> {
    if data.len() > MAX_INPUT {
        return Err(format!(
            "crypto: {} bytes in one call, more than this host takes ({MAX_INPUT})",
            data.len()
        ));
    }
    Ok(())
}

impl wit::Host for Stateless {
    fn random_bytes(&mut self, n: u32) -> wasmtime::Result<Vec<u8>> {
        Ok(crypto::random_bytes(n))
    }

    fn digest(&mut self, hash: String, data: Vec<u8>) -> wasmtime::Result<Result<Vec<u8>, String>> {
        Ok(bounded(&data).and_then(|()| Ok(crypto::digest(Hash::named(&hash)?, &data))))
    }

    fn hmac(
        &mut self,
        hash: String,
        key: Vec<u8>,
        data: Vec<u8>,
    ) -> wasmtime::Result<Result<Vec<u8>, String>> {
        Ok(bounded(&data).and_then(|()| Ok(crypto::hmac(Hash::named(&hash)?, &key, &data))))
    }

    fn generate_key(
        &mut self,
        alg: wit::Algorithm,
    ) -> wasmtime::Result<Result<(Vec<u8>, Vec<u8>), String>> {
        Ok(keys::generate(&algorithm(alg)))
    }

    fn import_key(
        &mut self,
        alg: wit::Algorithm,
        format: String,
        data: Vec<u8>,
    ) -> wasmtime::Result<Result<wit::ImportedKey, String>> {
        Ok(bounded(&data)
            .and_then(|()| keys::import(&algorithm(alg), &format, &data))
            .map(|k| wit::ImportedKey {
                kind: kind_to(k.kind),
                bytes: k.bytes,
                named_curve: k.named_curve,
                modulus_length: k.modulus_length,
                public_exponent: k.public_exponent,
                length: k.length,
            }))
    }

    fn export_key(
        &mut self,
        alg: wit::Algorithm,
        format: String,
        kind: wit::KeyKind,
        key: Vec<u8>,
    ) -> wasmtime::Result<Result<Vec<u8>, String>> {
        Ok(keys::export(
            &algorithm(alg),
            &format,
            kind_from(kind),
            &key,
        ))
    }

    fn sign(
        &mut self,
        alg: wit::Algorithm,
        key: Vec<u8>,
        data: Vec<u8>,
    ) -> wasmtime::Result<Result<Vec<u8>, String>> {
        Ok(bounded(&data).and_then(|()| ops::sign(&algorithm(alg), &key, &data)))
    }

    fn verify(
        &mut self,
        alg: wit::Algorithm,
        key: Vec<u8>,
        signature: Vec<u8>,
        data: Vec<u8>,
    ) -> wasmtime::Result<Result<bool, String>> {
        Ok(bounded(&data).and_then(|()| ops::verify(&algorithm(alg), &key, &signature, &data)))
    }

    fn encrypt(
        &mut self,
        alg: wit::Algorithm,
        key: Vec<u8>,
        data: Vec<u8>,
    ) -> wasmtime::Result<Result<Vec<u8>, String>> {
        Ok(bounded(&data).and_then(|()| ops::crypt(&algorithm(alg), &key, &data, true)))
    }

    fn decrypt(
        &mut self,
        alg: wit::Algorithm,
        key: Vec<u8>,
        data: Vec<u8>,
    ) -> wasmtime::Result<Result<Vec<u8>, String>> {
        Ok(bounded(&data).and_then(|()| ops::crypt(&algorithm(alg), &key, &data, false)))
    }

    fn derive_bits(
        &mut self,
        alg: wit::Algorithm,
        key: Vec<u8>,
        bits: u32,
    ) -> wasmtime::Result<Result<Vec<u8>, String>> {
        Ok(ops::derive_bits(&algorithm(alg), &key, bits))
    }
}
