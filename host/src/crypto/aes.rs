//! AES in WebCrypto's three modes: CBC with PKCS #7 padding and CTR with a counter of
//! `length` bits are written here over the `aes` block cipher (each a few lines; their
//! crates would add two more to the build), GCM is `aes-gcm`'s.

use aes::cipher::{generic_array::GenericArray, BlockDecrypt, BlockEncrypt, KeyInit};
use aes_gcm::aead::{Aead, Payload};

/// One of AES-128, -192 or -256, by the key's length.
enum Cipher {
    A128(aes::Aes128),
    A192(aes::Aes192),
    A256(aes::Aes256),
}

impl Cipher {
    fn new(key: &[u8]) -> Result<Cipher, String> {
        Ok(match key.len() {
            16 => Cipher::A128(aes::Aes128::new(GenericArray::from_slice(key))),
            24 => Cipher::A192(aes::Aes192::new(GenericArray::from_slice(key))),
            32 => Cipher::A256(aes::Aes256::new(GenericArray::from_slice(key))),
            n => return Err(format!("an AES key is 128, 192 or 256 bits, not {}", n * 8)),
        })
    }

    fn encrypt(&self, block: &mut [u8; 16]) {
        let b = GenericArray::from_mut_slice(block);
        match self {
            Cipher::A128(c) => c.encrypt_block(b),
            Cipher::A192(c) => c.encrypt_block(b),
            Cipher::A256(c) => c.encrypt_block(b),
        }
    }

    fn decrypt(&self, block: &mut [u8; 16]) {
        let b = GenericArray::from_mut_slice(block);
        match self {
            Cipher::A128(c) => c.decrypt_block(b),
            Cipher::A192(c) => c.decrypt_block(b),
            Cipher::A256(c) => c.decrypt_block(b),
        }
    }
}

fn iv16(iv: Option<&[u8]>, what: &str) -> Result<[u8; 16], String> {
    let iv = iv.ok_or_else(|| {
        format!(
            "{what} needs its 16-byte {}",
            if what == "AES-CTR" { "counter" } else { "iv" }
        )
    })?;
    iv.try_into().map_err(|_| {
        format!(
            "{what}: the {} is 16 bytes, not {}",
            if what == "AES-CTR" { "counter" } else { "iv" },
            iv.len()
        )
    })
}

/// AES-CBC with PKCS #7 padding (WebCrypto's only padding).
pub(crate) fn cbc(
    key: &[u8],
    iv: Option<&[u8]>,
    data: &[u8],
    encrypt: bool,
) -> Result<Vec<u8>, String> {
    let cipher = Cipher::new(key)?;
    let mut chain = iv16(iv, "AES-CBC")?;
    let mut out = Vec::with_capacity(data.len() + 16);
    if encrypt {
        let pad = 16 - data.len() % 16;
        let mut padded = data.to_vec();
        padded.extend(std::iter::repeat_n(pad as u8, pad));
        for chunk in padded.chunks_exact(16) {
            for (c, p) in chain.iter_mut().zip(chunk) {
                *c ^= p;
            }
            cipher.encrypt(&mut chain);
            out.extend_from_slice(&chain);
        }
        return Ok(out);
    }
    if data.is_empty() || !data.len().is_multiple_of(16) {
        return Err(format!(
            "AES-CBC: the ciphertext is a multiple of 16 bytes, not {}",
            data.len()
        ));
    }
    for chunk in data.chunks_exact(16) {
        let mut block: [u8; 16] = chunk.try_into().expect("chunks of 16");
        cipher.decrypt(&mut block);
        for (b, c) in block.iter_mut().zip(chain) {
            *b ^= c;
        }
        chain.copy_from_slice(chunk);
        out.extend_from_slice(&block);
    }
    let pad = *out.last().unwrap_or(&0) as usize;
    if pad == 0 || pad > 16 || !out[out.len() - pad..].iter().all(|&b| b as usize == pad) {
        return Err("AES-CBC: the decrypted data's padding is wrong (another key or iv?)".into());
    }
    out.truncate(out.len() - pad);
    Ok(out)
}

/// AES-CTR: the counter block's low `bits` bits count blocks and wrap, its other bits
/// stay (WebCrypto's `length`); encrypting and decrypting are the same.
pub(crate) fn ctr(
    key: &[u8],
    counter: Option<&[u8]>,
    bits: Option<u32>,
    data: &[u8],
) -> Result<Vec<u8>, String> {
    let cipher = Cipher::new(key)?;
    let start = u128::from_be_bytes(iv16(counter, "AES-CTR")?);
    let bits = bits.ok_or("AES-CTR needs `length`, the counter's bits (1 to 128)")?;
    if !(1..=128).contains(&bits) {
        return Err(format!("AES-CTR: `length` is 1 to 128 bits, not {bits}"));
    }
    let mask = if bits == 128 {
        u128::MAX
    } else {
        (1u128 << bits) - 1
    };
    let blocks = data.len().div_ceil(16) as u128;
    if bits < 128 && blocks > (1u128 << bits) {
        return Err(format!(
            "AES-CTR: {blocks} blocks would repeat a {bits}-bit counter"
        ));
    }
    let mut out = Vec::with_capacity(data.len());
    for (i, chunk) in data.chunks(16).enumerate() {
        let count = (start & mask).wrapping_add(i as u128) & mask;
        let mut block = ((start & !mask) | count).to_be_bytes();
        cipher.encrypt(&mut block);
        out.extend(chunk.iter().zip(block).map(|(d, k)| d ^ k));
    }
    Ok(out)
}

/// AES-GCM with a 96-bit iv and a tag of 96 to 128 bits (`tag_bits`, default 128); the
/// tag follows the ciphertext, as WebCrypto writes it.
pub(crate) fn gcm(
    key: &[u8],
    iv: Option<&[u8]>,
    aad: Option<&[u8]>,
    tag_bits: Option<u32>,
    data: &[u8],
    encrypt: bool,
) -> Result<Vec<u8>, String> {
    use aes_gcm::aead::consts::{U12, U13, U14, U15, U16};
    use aes_gcm::AesGcm;
    let iv = iv.ok_or("AES-GCM needs its iv (12 bytes)")?;
    if iv.len() != 12 {
        return Err(format!(
            "AES-GCM: the iv is 12 bytes here, not {} (WebCrypto's recommended size)",
            iv.len()
        ));
    }
    let payload = Payload {
        msg: data,
        aad: aad.unwrap_or_default(),
    };
    macro_rules! run {
        ($aes:ty, $tag:ty) => {{
            let c = AesGcm::<$aes, U12, $tag>::new_from_slice(key)
                .map_err(|_| "bad AES key".to_string())?;
            let nonce = GenericArray::from_slice(iv);
            if encrypt {
                c.encrypt(nonce, payload)
            } else {
                c.decrypt(nonce, payload)
            }
        }};
    }
    macro_rules! by_tag {
        ($aes:ty) => {
            match tag_bits.unwrap_or(128) {
                96 => run!($aes, U12),
                104 => run!($aes, U13),
                112 => run!($aes, U14),
                120 => run!($aes, U15),
                128 => run!($aes, U16),
                t => {
                    return Err(format!(
                        "AES-GCM: tagLength is 96, 104, 112, 120 or 128 bits here, not {t}"
                    ))
                }
            }
        };
    }
    let out = match key.len() {
        16 => by_tag!(aes::Aes128),
        24 => by_tag!(aes::Aes192),
        32 => by_tag!(aes::Aes256),
        n => return Err(format!("an AES key is 128, 192 or 256 bits, not {}", n * 8)),
    };
    out.map_err(|_| {
        if encrypt { "AES-GCM: encryption failed".into() } else { "AES-GCM: the data or its tag do not match the key, iv and additional data (OperationError)".into() }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(s: &str) -> Vec<u8> {
        hex::decode(s).unwrap()
    }

    /// NIST SP 800-38A F.2.1 (CBC-AES128.Encrypt, first two blocks), with the PKCS #7
    /// block WebCrypto appends; decryption gives the plaintext back.
    #[test]
    fn cbc_matches_sp800_38a() {
        let key = h("2b7e151628aed2a6abf7158809cf4f3c");
        let iv = h("000102030405060708090a0b0c0d0e0f");
        let pt = h("6bc1bee22e409f96e93d7e117393172aae2d8a571e03ac9c9eb76fac45af8e51");
        let ct = cbc(&key, Some(&iv), &pt, true).unwrap();
        assert_eq!(
            hex::encode(&ct[..32]),
            "7649abac8119b246cee98e9b12e9197d5086cb9b507219ee95db113a917678b2"
        );
        assert_eq!(ct.len(), 48);
        assert_eq!(cbc(&key, Some(&iv), &ct, false).unwrap(), pt);
        let mut bad = ct.clone();
        bad[47] ^= 1;
        assert!(cbc(&key, Some(&iv), &bad, false)
            .unwrap_err()
            .contains("padding"));
    }

    /// NIST SP 800-38A F.5.1 (CTR-AES128), a 128-bit counter; and a 2-bit counter
    /// wraps within its bits.
    #[test]
    fn ctr_matches_sp800_38a_and_wraps_in_its_bits() {
        let key = h("2b7e151628aed2a6abf7158809cf4f3c");
        let ctr0 = h("f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff");
        let pt = h("6bc1bee22e409f96e93d7e117393172aae2d8a571e03ac9c9eb76fac45af8e51");
        let ct = ctr(&key, Some(&ctr0), Some(128), &pt).unwrap();
        assert_eq!(
            hex::encode(&ct),
            "874d6191b620e3261bef6864990db6ce9806f66b7970fdff8617187bb9fffdff"
        );
        assert_eq!(ctr(&key, Some(&ctr0), Some(128), &ct).unwrap(), pt);
        // Counter ...ff with 8 bits: the second block's counter is ...00, not ...f0 00.
        let two = ctr(&key, Some(&ctr0), Some(8), &[0u8; 32]).unwrap();
        let mut c2 = ctr0.clone();
        c2[15] = 0;
        assert_eq!(
            two[16..],
            ctr(&key, Some(&c2), Some(128), &[0u8; 16]).unwrap()[..]
        );
        assert!(ctr(&key, Some(&ctr0), Some(1), &[0u8; 48])
            .unwrap_err()
            .contains("repeat"));
    }

    /// The GCM spec's test case 4 (AES-128, 60-byte plaintext, 20-byte AAD, 96-bit IV).
    #[test]
    fn gcm_matches_the_gcm_spec_test_case_4() {
        let key = h("feffe9928665731c6d6a8f9467308308");
        let iv = h("cafebabefacedbaddecaf888");
        let aad = h("feedfacedeadbeeffeedfacedeadbeefabaddad2");
        let pt = h("d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a721c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39");
        let out = gcm(&key, Some(&iv), Some(&aad), None, &pt, true).unwrap();
        assert_eq!(
            hex::encode(&out),
            "42831ec2217774244b7221b784d0d49ce3aa212f2c02a4e035c17e2329aca12e21d514b25466931c7d8f6a5aac84aa051ba30b396a0aac973d58e091\
             5bc94fbc3221a5db94fae95ae7121a47"
        );
        assert_eq!(
            gcm(&key, Some(&iv), Some(&aad), None, &out, false).unwrap(),
            pt
        );
        assert!(gcm(&key, Some(&iv), None, None, &out, false)
            .unwrap_err()
            .contains("do not match"));
        let short = gcm(&key, Some(&iv), Some(&aad), Some(96), &pt, true).unwrap();
        assert_eq!(short.len(), pt.len() + 12);
    }
}
