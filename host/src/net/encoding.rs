//! Response bodies decoded by their `Content-Encoding` (gzip, deflate, br, zstd), as k6
//! reads a body before a script sees it: `res.body` and `res.json()` are the decoded
//! text. Decoding stops at the body cap (`[limits] max_body_mb`), so a small compressed
//! body cannot grow the host past what an uncompressed one may.

use std::io::Read;

/// The codings k6 decodes, by their `Content-Encoding` token.
const CODINGS: &str = "gzip, x-gzip, deflate, br, zstd";

/// `body` decoded as `encoding` says (a list such as `gzip, br` is undone from the
/// last); `Ok(None)` when there is nothing to decode (`identity` or no field).
pub(crate) fn decode(encoding: &str, body: &[u8], max: u64) -> Result<Option<Vec<u8>>, String> {
    let codings: Vec<String> = encoding
        .split(',')
        .map(|c| c.trim().to_ascii_lowercase())
        .filter(|c| !c.is_empty() && c != "identity")
        .collect();
    if codings.is_empty() || body.is_empty() {
        return Ok(None);
    }
    let mut data = body.to_vec();
    for coding in codings.iter().rev() {
        data = match coding.as_str() {
            "gzip" | "x-gzip" => {
                read_all(flate2::read::MultiGzDecoder::new(&data[..]), max, coding)?
            }
            // HTTP's deflate is zlib-wrapped (RFC 9110); some servers send it raw.
            "deflate" => read_all(flate2::read::ZlibDecoder::new(&data[..]), max, coding)
                .or_else(|_| read_all(flate2::read::DeflateDecoder::new(&data[..]), max, coding))?,
            "br" => read_all(
                brotli_decompressor::Decompressor::new(&data[..], 4096),
                max,
                coding,
            )?,
            "zstd" => {
                let decoder = ruzstd::decoding::StreamingDecoder::new(&data[..])
                    .map_err(|e| format!("the zstd body does not decode: {e}"))?;
                read_all(decoder, max, coding)?
            }
            other => {
                return Err(format!(
                    "Content-Encoding {other} is not one the host decodes ({CODINGS})"
                ))
            }
        };
    }
    Ok(Some(data))
}

fn read_all(reader: impl Read, max: u64, coding: &str) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    reader
        .take(max.saturating_add(1))
        .read_to_end(&mut out)
        .map_err(|e| format!("the {coding} body does not decode: {e}"))?;
    if out.len() as u64 > max {
        return Err(format!(
            "the {coding} body decodes to more than the cap of {max} bytes ([limits] max_body_mb)"
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::decode;
    use std::io::Write;

    const JSON: &[u8] = br#"{"ok":true,"n":[1,2,3]}"#;

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    /// Each coding gives the text back: gzip and zlib deflate from flate2, raw
    /// deflate, and brotli and zstd frames made by their reference tools (`brotli` and
    /// `zstd` CLIs, bytes pasted); `identity` and no coding decode nothing.
    #[test]
    fn each_coding_decodes_to_the_same_text() {
        assert_eq!(decode("gzip", &gzip(JSON), 1 << 20).unwrap().unwrap(), JSON);
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        z.write_all(JSON).unwrap();
        assert_eq!(
            decode("deflate", &z.finish().unwrap(), 1 << 20)
                .unwrap()
                .unwrap(),
            JSON
        );
        let mut raw =
            flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
        raw.write_all(JSON).unwrap();
        assert_eq!(
            decode("Deflate", &raw.finish().unwrap(), 1 << 20)
                .unwrap()
                .unwrap(),
            JSON
        );
        assert_eq!(
            decode("br", include_bytes!("testdata/body.json.br"), 1 << 20)
                .unwrap()
                .unwrap(),
            JSON
        );
        assert_eq!(
            decode("zstd", include_bytes!("testdata/body.json.zst"), 1 << 20)
                .unwrap()
                .unwrap(),
            JSON
        );
        assert_eq!(decode("identity", JSON, 1 << 20).unwrap(), None);
        assert_eq!(decode("", JSON, 1 << 20).unwrap(), None);
        assert!(decode("compress", JSON, 1 << 20)
            .unwrap_err()
            .contains("compress is not one"));
    }

    /// A megabyte of zeros gzips to about a kilobyte; under a 64 KiB cap it is refused
    /// after 64 KiB, not decoded whole.
    #[test]
    fn a_body_that_decodes_past_the_cap_is_refused() {
        let bomb = gzip(&vec![0u8; 1 << 20]);
        assert!(bomb.len() < 4096);
        let err = decode("gzip", &bomb, 64 << 10).unwrap_err();
        assert!(err.contains("more than the cap of 65536"), "{err}");
        assert!(decode("gzip", b"not gzip", 1 << 20)
            .unwrap_err()
            .contains("does not decode"));
    }
}
