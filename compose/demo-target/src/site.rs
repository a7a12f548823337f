//! The app's page and its files, for a first visit with an empty cache: an app shell
//! (`GET /app`) that links 40 generated assets (style sheets, scripts, icons, fonts,
//! images of varied sizes, as a bundler would emit them) and names the API calls its
//! script makes once loaded. The assets are generated once, deterministically, so
//! their sizes and ETags are the same in every run and every process.

use std::fmt::Write as _;
use std::sync::LazyLock;

use bytes::Bytes;

use crate::counters::{self, Counter};

/// One generated asset.
pub struct Asset {
    /// File name under `/assets/`.
    pub name: String,
    /// Its `Content-Type`.
    pub content_type: &'static str,
    /// Its bytes.
    pub body: Bytes,
    /// Strong validator derived from the content.
    pub etag: String,
}

/// The kinds of asset the page links, with how many of each and their sizes in bytes
/// (spread from the first to the second figure).
const KINDS: [(&str, &str, &str, usize, usize, usize); 5] = [
    // (stem, extension, content type, count, smallest, largest)
    ("style", "css", "text/css; charset=utf-8", 10, 2_000, 40_000),
    (
        "chunk",
        "js",
        "text/javascript; charset=utf-8",
        14,
        4_000,
        150_000,
    ),
    ("icon", "svg", "image/svg+xml", 10, 500, 8_000),
    ("font", "woff2", "font/woff2", 4, 20_000, 60_000),
    ("hero", "png", "image/png", 2, 10_000, 80_000),
];

/// The API calls the app shell's script makes after the page loaded, in order
/// (`{token}` is the sign-in token the first call returns).
pub const SHELL_CALLS: [&str; 4] = [
    "POST /auth/token",
    "GET /api/config",
    "GET /api/me",
    "GET /groups/1/notes?limit=20",
];

/// Every asset, generated on first use.
pub static ASSETS: LazyLock<Vec<Asset>> = LazyLock::new(generate);

/// The app shell page, built on first use from [`ASSETS`].
pub static SHELL: LazyLock<(Bytes, String)> = LazyLock::new(|| {
    let body = Bytes::from(shell_html(&ASSETS));
    let etag = etag(&body);
    (body, etag)
});

/// The asset called `name`.
pub fn asset(name: &str) -> Option<&'static Asset> {
    ASSETS.iter().find(|a| a.name == name)
}

fn generate() -> Vec<Asset> {
    let mut assets = Vec::new();
    let mut seed = 0x5EED_u64;
    for (stem, ext, content_type, count, smallest, largest) in KINDS {
        for i in 0..count {
            // Sizes spread evenly from smallest to largest, as a bundle's files are.
            let size = smallest + (largest - smallest) * i / (count - 1).max(1);
            let body = match ext {
                "css" => text_of(size, &mut seed, css_rule),
                "js" => text_of(size, &mut seed, js_function),
                "svg" => svg(size, &mut seed),
                _ => binary(size, &mut seed),
            };
            let body = Bytes::from(body);
            let tag = etag(&body);
            // A content hash in the name, as bundlers do for long-lived caching.
            let name = format!("{stem}-{i:02}.{}.{ext}", &tag[1..9]);
            assets.push(Asset {
                name,
                content_type,
                body,
                etag: tag,
            });
        }
    }
    assets
}

/// SplitMix64: a small deterministic generator; no entropy wanted here.
fn next(seed: &mut u64) -> u64 {
    *seed = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *seed;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn text_of(size: usize, seed: &mut u64, piece: fn(u64) -> String) -> Vec<u8> {
    let mut out = String::with_capacity(size + 200);
    while out.len() < size {
        out.push_str(&piece(next(seed)));
    }
    out.truncate(size);
    out.into_bytes()
}

fn css_rule(n: u64) -> String {
    format!(
        ".c{:x} {{ margin: {}px; color: #{:06x}; display: flex; }}\n",
        n >> 40,
        n % 32,
        n & 0xff_ffff
    )
}

fn js_function(n: u64) -> String {
    format!(
        "function f{:x}(a, b) {{ return a * {} + b - {}; }}\n",
        n >> 36,
        n % 97,
        (n >> 8) % 13
    )
}

fn svg(size: usize, seed: &mut u64) -> Vec<u8> {
    let mut out =
        String::from("<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 64 64\">\n");
    let end = "</svg>\n";
    while out.len() + end.len() < size {
        let n = next(seed);
        let _ = writeln!(
            out,
            "<circle cx=\"{}\" cy=\"{}\" r=\"{}\" fill=\"#{:06x}\"/>",
            n % 64,
            (n >> 8) % 64,
            (n >> 16) % 16,
            n >> 40
        );
    }
    out.push_str(end);
    out.into_bytes()
}

fn binary(size: usize, seed: &mut u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(size + 8);
    while out.len() < size {
        out.extend_from_slice(&next(seed).to_le_bytes());
    }
    out.truncate(size);
    out
}

/// FNV-1a of the content, as a quoted ETag.
fn etag(body: &[u8]) -> String {
    let mut hash = 0xcbf2_9ce4_8422_2325u64;
    for byte in body {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("\"{hash:016x}\"")
}

fn shell_html(assets: &[Asset]) -> String {
    let mut html = String::from(
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>Notes</title>\n",
    );
    for a in assets {
        let url = format!("/assets/{}", a.name);
        let _ = match a.name.rsplit('.').next() {
            Some("css") => writeln!(html, "<link rel=\"stylesheet\" href=\"{url}\">"),
            Some("woff2") => writeln!(
                html,
                "<link rel=\"preload\" as=\"font\" crossorigin href=\"{url}\">"
            ),
            Some("js") => writeln!(html, "<script defer src=\"{url}\"></script>"),
            _ => Ok(()),
        };
    }
    html.push_str("</head>\n<body>\n<div id=\"app\">\n");
    for a in assets {
        if a.name.ends_with(".svg") || a.name.ends_with(".png") {
            let _ = writeln!(html, "<img alt=\"\" src=\"/assets/{}\">", a.name);
        }
    }
    html.push_str("</div>\n<script type=\"application/json\" id=\"api-calls\">");
    html.push_str(&serde_json::to_string(&SHELL_CALLS).unwrap_or_default());
    html.push_str("</script>\n</body>\n</html>\n");
    html
}

/// What the page, its files and the app shell's API served.
#[derive(Default)]
pub struct SiteCounters {
    /// `GET /app` answered with the page.
    pub shells: Counter,
    /// Assets answered with their bytes (200).
    pub assets: Counter,
    /// Assets answered 304 (the client's copy is current).
    pub not_modified: Counter,
    /// Bytes of asset bodies sent.
    pub asset_bytes: Counter,
    /// `GET /api/config` answered.
    pub configs: Counter,
    /// `GET /api/me` answered.
    pub me: Counter,
    /// `GET /inbox` answered.
    pub inbox_polls: Counter,
}

impl SiteCounters {
    /// Appends the counters to a Prometheus text exposition.
    pub fn render(&self, out: &mut String) {
        let rows = [
            (
                "demo_app_shell_total",
                "App shell pages served (GET /app).",
                &self.shells,
            ),
            (
                "demo_assets_served_total",
                "Assets served with their body (200).",
                &self.assets,
            ),
            (
                "demo_assets_not_modified_total",
                "Asset requests answered 304.",
                &self.not_modified,
            ),
            (
                "demo_asset_bytes_total",
                "Bytes of asset bodies served.",
                &self.asset_bytes,
            ),
            (
                "demo_api_config_total",
                "GET /api/config answered.",
                &self.configs,
            ),
            ("demo_api_me_total", "GET /api/me answered 200.", &self.me),
            (
                "demo_inbox_polls_total",
                "GET /inbox answered 200.",
                &self.inbox_polls,
            ),
        ];
        for (name, help, counter) in rows {
            counters::render(out, name, "counter", help, counter.get());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forty_assets_of_varied_sizes_all_linked_from_the_shell() {
        assert_eq!(ASSETS.len(), 40);
        let sizes: Vec<usize> = ASSETS.iter().map(|a| a.body.len()).collect();
        assert!(sizes.iter().min().unwrap() < &1_000);
        assert!(sizes.iter().max().unwrap() > &100_000);
        let html = std::str::from_utf8(&SHELL.0).unwrap();
        for a in ASSETS.iter() {
            assert!(
                html.contains(&format!("/assets/{}\"", a.name)),
                "{}",
                a.name
            );
            assert_eq!(asset(&a.name).unwrap().etag, a.etag);
        }
        // Deterministic: the same bytes on every generation.
        assert_eq!(generate()[7].etag, ASSETS[7].etag);
    }
}
