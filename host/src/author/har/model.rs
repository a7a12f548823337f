//! The HAR 1.2 file as browsers write it, read leniently: Chromium's, Firefox's and
//! other tools' files differ in which optional fields they fill (`pages`, `pageref`,
//! `time`, `postData.text`, `content.text`, the `_resourceType` extension), so every
//! optional field has a default and only what a scenario cannot be made without
//! (`log.entries`, each entry's `startedDateTime`, request method and URL, response
//! status) is required. A file that lacks one is refused with the entry and the field.

use anyhow::{bail, Context, Result};
use serde::Deserialize;
use std::path::Path;
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

/// One page load.
#[derive(Debug, Deserialize)]
pub(crate) struct Page {
    /// What entries name in `pageref`.
    pub id: String,
    /// The page's title (Chromium writes the URL until the document names itself).
    #[serde(default)]
    pub title: String,
}

/// One request and its response.
#[derive(Debug, Deserialize)]
pub(crate) struct Entry {
    /// The page the request belongs to.
    #[serde(default)]
    pub pageref: Option<String>,
    /// When the request started (ISO 8601).
    #[serde(rename = "startedDateTime")]
    pub started: String,
    /// Its total time in milliseconds (-1 or absent when unknown).
    #[serde(default)]
    pub time: Option<f64>,
    /// The request sent.
    pub request: Request,
    /// The response received.
    pub response: Response,
    /// Chromium's resource type (`document`, `script`, `xhr`, `fetch`, ...).
    #[serde(default, rename = "_resourceType")]
    pub resource_type: Option<String>,
}

/// A name and a value (headers, query parameters, form fields).
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct Pair {
    /// The name.
    pub name: String,
    /// The value (absent in some exports for a field without one).
    #[serde(default)]
    pub value: String,
}

/// The request of an entry.
#[derive(Debug, Deserialize)]
pub(crate) struct Request {
    /// GET, POST, ...
    pub method: String,
    /// The absolute URL.
    pub url: String,
    /// Its headers as sent (HTTP/2 pseudo-headers included by some browsers).
    #[serde(default)]
    pub headers: Vec<Pair>,
    /// Its body, if any.
    #[serde(default, rename = "postData")]
    pub post_data: Option<PostData>,
}

/// A request body.
#[derive(Debug, Deserialize)]
pub(crate) struct PostData {
    /// Its content type.
    #[serde(default, rename = "mimeType")]
    pub mime_type: String,
    /// The body's text (Firefox leaves it out for forms and gives `params`).
    #[serde(default)]
    pub text: Option<String>,
    /// Form fields, when the browser parsed them.
    #[serde(default)]
    pub params: Vec<Pair>,
}

/// The response of an entry.
#[derive(Debug, Deserialize)]
pub(crate) struct Response {
    /// Its status (0 when the request failed or was blocked).
    pub status: i64,
    /// Its headers.
    #[serde(default)]
    pub headers: Vec<Pair>,
    /// Its body, when the exporter kept it.
    #[serde(default)]
    pub content: Option<Content>,
    /// The `Location` of a redirect, when the exporter filled it.
    #[serde(default, rename = "redirectURL")]
    pub redirect_url: Option<String>,
}

/// A response body.
#[derive(Debug, Deserialize)]
pub(crate) struct Content {
    /// Its content type.
    #[serde(default, rename = "mimeType")]
    pub mime_type: String,
    /// Its text (base64 when `encoding` says so); absent when not kept.
    #[serde(default)]
    pub text: Option<String>,
    /// `base64` for binary bodies.
    #[serde(default)]
    pub encoding: Option<String>,
}

impl Pair {
    /// The first value named `name` (case-insensitive) in `pairs`.
    pub(crate) fn find<'a>(pairs: &'a [Pair], name: &str) -> Option<&'a str> {
        pairs
            .iter()
            .find(|p| p.name.eq_ignore_ascii_case(name))
            .map(|p| p.value.as_str())
    }
}

impl Entry {
    /// The response's body as text, if the exporter kept it and it is text.
    pub(crate) fn response_text(&self) -> Option<&str> {
        let c = self.response.content.as_ref()?;
        if c.encoding.as_deref() == Some("base64") {
            return None;
        }
        c.text.as_deref()
    }

    /// The request body as text (from `params` when only they were kept).
    pub(crate) fn request_body(&self) -> Option<String> {
        let p = self.request.post_data.as_ref()?;
        if let Some(t) = &p.text {
            return Some(t.clone());
        }
        if p.params.is_empty() {
            return None;
        }
        Some(
            url::form_urlencoded::Serializer::new(String::new())
                .extend_pairs(p.params.iter().map(|p| (&p.name, &p.value)))
                .finish(),
        )
    }
}

/// A HAR file read and checked, with each entry's start in ms from the first.
#[derive(Debug)]
pub(crate) struct Recording {
    /// The pages (maybe none).
    pub pages: Vec<Page>,
    /// The entries, sorted by start.
    pub entries: Vec<Entry>,
    /// Each entry's start, in ms since the earliest entry.
    pub start_ms: Vec<f64>,
}

/// The largest HAR file read: a recording of a few hundred pages with their bodies is
/// tens of MiB; the parsed file takes several times its size in memory, so a larger
/// file (or `/dev/zero`, which grew the host to 8.2 GiB, issue 49) is refused.
pub(crate) const MAX_HAR_BYTES: u64 = 256 << 20;

/// Reads and checks a HAR file.
pub(crate) fn read(path: &Path) -> Result<Recording> {
    read_limited(path, MAX_HAR_BYTES)
}

/// As [`read`], with the size limit given.
fn read_limited(path: &Path, limit: u64) -> Result<Recording> {
    use std::io::Read as _;
    let file = std::fs::File::open(path)
        .with_context(|| format!("cannot read the HAR file {}", path.display()))?;
    // Read at most one byte past the limit: a device or a pipe has no size to check.
    let mut bytes = Vec::new();
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .with_context(|| format!("cannot read the HAR file {}", path.display()))?;
    if bytes.len() as u64 > limit {
        bail!(
            "{} is larger than {} MiB, the most a recording is read to: record fewer pages, \
             or save the HAR without the static files' bodies",
            path.display(),
            limit >> 20
        );
    }
    let text = String::from_utf8(bytes)
        .map_err(|_| anyhow::anyhow!("{} is not UTF-8 text", path.display()))
        .with_context(|| format!("cannot read the HAR file {}", path.display()))?;
    parse(&text).with_context(|| format!("{} is not a usable HAR file", path.display()))
}

/// Parses and checks HAR text.
pub(crate) fn parse(text: &str) -> Result<Recording> {
    let value: serde_json::Value = serde_json::from_str(text).context(
        "it is not JSON (a HAR file is the JSON a browser's \"Save all as HAR\" writes)",
    )?;
    if value.get("log").and_then(|l| l.get("entries")).is_none() {
        bail!("it has no log.entries: a HAR file is {{\"log\": {{\"entries\": [...]}}}}");
    }
    // Per entry, so that a refusal names the entry and the field.
    let entries_json = value["log"]["entries"]
        .as_array()
        .context("log.entries is not a list")?;
    let mut entries = Vec::with_capacity(entries_json.len());
    for (i, e) in entries_json.iter().enumerate() {
        let entry: Entry = serde_json::from_value(e.clone())
            .with_context(|| format!("log.entries[{i}] is not a HAR entry"))?;
        entries.push(entry);
    }
    let pages: Vec<Page> = match value["log"].get("pages") {
        Some(p) if !p.is_null() => {
            serde_json::from_value(p.clone()).context("log.pages is not a list of HAR pages")?
        }
        _ => Vec::new(),
    };
    if entries.is_empty() {
        bail!("it recorded no requests (log.entries is empty)");
    }
    let mut starts = Vec::with_capacity(entries.len());
    for (i, e) in entries.iter().enumerate() {
        let t = OffsetDateTime::parse(&e.started, &Rfc3339).with_context(|| {
            format!(
                "log.entries[{i}].startedDateTime {:?} is not an ISO 8601 time such as 2024-05-01T10:00:00.000Z",
                e.started
            )
        })?;
        if url::Url::parse(&e.request.url).is_err() {
            bail!(
                "log.entries[{i}].request.url {:?} is not an absolute URL",
                e.request.url
            );
        }
        starts.push(t.unix_timestamp_nanos() as f64 / 1e6);
    }
    let mut order: Vec<usize> = (0..entries.len()).collect();
    order.sort_by(|&a, &b| starts[a].total_cmp(&starts[b]));
    let first = starts[order[0]];
    let mut slots: Vec<Option<Entry>> = entries.into_iter().map(Some).collect();
    let mut sorted = Vec::with_capacity(slots.len());
    let mut start_ms = Vec::with_capacity(slots.len());
    for i in order {
        sorted.push(slots[i].take().expect("each index once"));
        start_ms.push(starts[i] - first);
    }
    Ok(Recording {
        pages,
        entries: sorted,
        start_ms,
    })
}

/// Whether an entry is a static file a page loads (style, script, image, font...).
pub(crate) fn is_static(e: &Entry) -> bool {
    if e.request.method != "GET" {
        return false;
    }
    if let Some(t) = &e.resource_type {
        return matches!(
            t.as_str(),
            "stylesheet" | "script" | "image" | "font" | "media" | "manifest" | "texttrack"
        );
    }
    // Exporters without resource types: by the path's extension, then the content type.
    let path = url::Url::parse(&e.request.url)
        .map(|u| u.path().to_ascii_lowercase())
        .unwrap_or_default();
    let ext = path.rsplit('/').next().unwrap_or("").rsplit_once('.');
    if let Some((_, ext)) = ext {
        if [
            "css", "js", "mjs", "png", "jpg", "jpeg", "gif", "svg", "webp", "avif", "ico", "woff",
            "woff2", "ttf", "otf", "eot", "map", "mp4", "webm",
        ]
        .contains(&ext)
        {
            return true;
        }
    }
    let mime = e
        .response
        .content
        .as_ref()
        .map(|c| c.mime_type.to_ascii_lowercase())
        .unwrap_or_default();
    ["text/css", "javascript", "image/", "font/"]
        .iter()
        .any(|m| mime.contains(m))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn optional_fields_may_be_missing_and_entries_are_sorted() {
        let rec = parse(
            r#"{"log":{"entries":[
              {"startedDateTime":"2024-05-01T10:00:01.500+01:00","request":{"method":"GET","url":"http://a.test/b"},"response":{"status":200}},
              {"startedDateTime":"2024-05-01T09:00:01.000Z","request":{"method":"POST","url":"http://a.test/a","postData":{"mimeType":"application/x-www-form-urlencoded","params":[{"name":"x","value":"1 2"}]}},"response":{"status":302}}
            ]}}"#,
        )
        .unwrap();
        assert!(rec.pages.is_empty());
        assert_eq!(rec.entries[0].request.url, "http://a.test/a");
        assert_eq!(rec.start_ms, vec![0.0, 500.0]);
        assert_eq!(rec.entries[0].request_body().unwrap(), "x=1+2");
    }

    #[test]
    fn a_har_past_the_size_limit_is_refused_without_reading_it_whole() {
        // /dev/zero has no size to check: it grew the host to 8.2 GiB.
        let e = format!(
            "{:#}",
            read_limited(Path::new("/dev/zero"), 1 << 20).unwrap_err()
        );
        assert!(e.contains("larger than 1 MiB"), "{e}");
        let tmp = tempfile::tempdir().unwrap();
        let big = tmp.path().join("big.har");
        std::fs::write(&big, vec![b' '; (1 << 20) + 1]).unwrap();
        let e = format!("{:#}", read_limited(&big, 1 << 20).unwrap_err());
        assert!(e.contains("big.har is larger than 1 MiB"), "{e}");
        assert_eq!(MAX_HAR_BYTES, 256 << 20);
    }

    #[test]
    fn refusals_name_what_is_wrong() {
        let err = |t: &str| format!("{:#}", parse(t).unwrap_err());
        assert!(err("<html>").contains("not JSON"));
        assert!(err(r#"{"log":{}}"#).contains("no log.entries"));
        assert!(err(r#"{"log":{"entries":[]}}"#).contains("no requests"));
        let e = err(
            r#"{"log":{"entries":[{"startedDateTime":"yesterday","request":{"method":"GET","url":"http://a/"},"response":{"status":200}}]}}"#,
        );
        assert!(e.contains("entries[0].startedDateTime"), "{e}");
        let e = err(
            r#"{"log":{"entries":[{"startedDateTime":"2024-05-01T09:00:01Z","request":{"url":"http://a/"},"response":{"status":200}}]}}"#,
        );
        assert!(e.contains("entries[0]") && e.contains("method"), "{e}");
    }
}
