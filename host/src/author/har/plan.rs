//! From a recording to a scenario's plan: which requests are kept (the application's
//! origin, and any the user keeps), how they fall into steps (the HAR's pages, or
//! bursts of requests where it has none), the think time before each step (the
//! recorded gap), a page's static files as one batch, redirects followed as the
//! client follows them, request names templated where paths differ only by ids, and
//! the checks (each request's recorded status). Correlation is [`super::correlate`].

use super::model::{is_static, Pair, Recording};
use std::collections::BTreeMap;
use url::Url;

/// A gap this long with no request in flight starts a new step when the HAR has no
/// pages: a person reading or typing, not a page's own requests.
pub(crate) const BURST_GAP_MS: f64 = 500.0;

/// What the user asked of the analysis.
#[derive(Debug, Default, Clone)]
pub(crate) struct Options {
    /// Origins besides the application's whose requests are kept (`--keep-origin`).
    pub keep_origins: Vec<String>,
}

/// The scenario to write.
#[derive(Debug)]
pub(crate) struct Plan {
    /// The recorded application's origin (`http://127.0.0.1:8080`).
    pub origin: String,
    /// Other origins kept (`--keep-origin`).
    pub kept: Vec<String>,
    /// The steps, in order.
    pub steps: Vec<Step>,
    /// Origins left out, with how many requests each.
    pub left_out: Vec<(String, usize)>,
    /// Correlation rules found.
    pub rules: Vec<super::rules::Rule>,
    /// Values sent back that no earlier response carried: replayed as recorded.
    pub unresolved: Vec<super::rules::Unresolved>,
    /// Values the server must see unique (a sign-up's user name or email), made per VU
    /// and iteration instead of replayed.
    pub uniques: Vec<super::rules::Unique>,
    /// Requests recorded, kept.
    pub requests: usize,
    /// Entries that are not http(s) (`data:`, `file:`, `javascript:`, ...), by scheme,
    /// with how many: nothing a load test can send.
    pub skipped: Vec<(String, usize)>,
}

/// Whether `url` is an http or https URL: the only entries a scenario can replay.
pub(crate) fn is_http(url: &str) -> bool {
    Url::parse(url).is_ok_and(|u| matches!(u.scheme(), "http" | "https"))
}

/// The scheme of `url`, as the skipped list names it.
fn scheme(url: &str) -> String {
    match Url::parse(url) {
        Ok(u) => format!("{}:", u.scheme()),
        Err(_) => "unparsable".to_string(),
    }
}

/// One page (or burst) of the recording.
#[derive(Debug)]
pub(crate) struct Step {
    /// Its name, as a person would say it (`GET /survey/login`, or the page's title).
    pub title: String,
    /// Seconds of think time before it (the recorded gap), 0.1 s resolution.
    pub think_s: f64,
    /// Its requests in order; the page's static files as one batch.
    pub items: Vec<Item>,
}

/// A request of a step, or the batch of its static files.
#[derive(Debug)]
// A step holds a handful of items, made once: boxing calls would buy nothing.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Item {
    /// One request.
    Call(Call),
    /// Static files loaded together, as a browser loads a page's files.
    Batch(Vec<Call>),
}

/// One request to make.
#[derive(Debug, Clone)]
pub(crate) struct Call {
    /// Its entry in the recording.
    pub entry: usize,
    /// The entry whose response this call's response is (the redirect's target when a
    /// redirect is followed).
    pub answered_by: usize,
    /// GET, POST, ...
    pub method: String,
    /// Its origin; the application's is written as `BASE_URL`.
    pub origin: String,
    /// Path and query as recorded.
    pub path: String,
    /// The name tag when the path has ids in it (`/notes/{id}`).
    pub name: Option<String>,
    /// The headers worth sending (not the ones the client or jar adds).
    pub headers: Vec<(String, String)>,
    /// The body, if any, with its content type.
    pub body: Option<(String, String)>,
    /// The status the recording got (after redirects followed).
    pub status: i64,
    /// The redirect followed, as `302 to /survey`.
    pub redirect: Option<String>,
    /// Headers the browser sent to the redirect's target but not with this request:
    /// the replay sends only this request's, so they are named (not their values).
    pub redirect_headers: Vec<String>,
    /// The variable its response is held in.
    pub var: String,
    /// Recorded values this call sends that are extracted at run time: value → the
    /// variable holding it (filled by correlation).
    pub subs: Vec<(String, String)>,
    /// The recording got 304 to a conditional request (the browser's cache asked); the
    /// replay has no cache and sends no `If-None-Match`, so it expects `status` (200).
    pub revalidated: bool,
    /// When the request is the submission of a form of an earlier page: that form, so
    /// the code submits it as a browser does (its hidden fields taken from the live page).
    pub form: Option<FormFill>,
}

/// A form of an earlier page that a call submits.
#[derive(Debug, Clone)]
pub(crate) struct FormFill {
    /// The variable of the response holding the page.
    pub page_var: String,
    /// Whether the page was loaded by an earlier step (its response is carried there).
    pub carried: bool,
    /// A CSS selector finding the form in the page (`form[action="/survey/answer"]`).
    pub selector: String,
    /// The recorded fields the page's form does not hold as they were sent (typed by the
    /// person, or added by the page's script), set over the form's own, in order.
    pub fields: Vec<(String, String)>,
    /// The fields left to the form: sent with the value the live page holds (a CSRF
    /// field in a hidden input).
    pub kept: Vec<String>,
}

impl Call {
    /// `METHOD /path` (templated), how checks and comments name the request.
    pub(crate) fn label(&self) -> String {
        let path = self
            .name
            .clone()
            .unwrap_or_else(|| self.path.split('?').next().unwrap_or("/").to_string());
        format!("{} {path}", self.method)
    }
}

/// Headers the client, the cookie jar or the browser itself sets: not written.
fn dropped_header(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    n.starts_with(':')
        || n.starts_with("sec-")
        || n.starts_with("if-")
        || [
            "cookie",
            "host",
            "content-length",
            "connection",
            "accept-encoding",
            "accept-language",
            "user-agent",
            "upgrade-insecure-requests",
            "origin",
            "referer",
            "cache-control",
            "pragma",
            "priority",
            "dnt",
            "te",
            "keep-alive",
            "accept",
            "purpose",
        ]
        .contains(&n.as_str())
}

/// The origin of `url` (`scheme://host[:port]`).
pub(crate) fn origin_of(url: &str) -> String {
    Url::parse(url)
        .map(|u| u.origin().ascii_serialization())
        .unwrap_or_default()
}

/// A path segment that is an id: digits, a UUID, or a long mix of letters and digits.
fn is_id(segment: &str) -> bool {
    if segment.is_empty() {
        return false;
    }
    if segment.chars().all(|c| c.is_ascii_digit()) {
        return true;
    }
    let hexish = segment.chars().all(|c| c.is_ascii_hexdigit() || c == '-');
    if hexish && segment.len() >= 16 && segment.chars().any(|c| c.is_ascii_digit()) {
        return true;
    }
    segment.len() >= 20
        && segment
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        && segment.chars().any(|c| c.is_ascii_digit())
        && segment.chars().any(|c| c.is_ascii_alphabetic())
}

/// `/notes/17/edit` → `/notes/{id}/edit`; `None` when no segment is an id.
pub(crate) fn templated(path: &str) -> Option<String> {
    let path = path.split('?').next().unwrap_or(path);
    let mut changed = false;
    let parts: Vec<&str> = path
        .split('/')
        .map(|s| {
            if is_id(s) {
                changed = true;
                "{id}"
            } else {
                s
            }
        })
        .collect();
    changed.then(|| parts.join("/"))
}

fn end_ms(rec: &Recording, i: usize) -> f64 {
    rec.start_ms[i] + rec.entries[i].time.unwrap_or(0.0).max(0.0)
}

/// The application's origin: the first document's, else the first request's.
fn app_origin(rec: &Recording) -> String {
    // A `data:` or `file:` entry has no origin (`null`): never the application's.
    let http = || rec.entries.iter().filter(|e| is_http(&e.request.url));
    let doc = http()
        .find(|e| e.resource_type.as_deref() == Some("document"))
        .or_else(|| {
            http().find(|e| {
                e.response
                    .content
                    .as_ref()
                    .is_some_and(|c| c.mime_type.contains("html"))
            })
        })
        .or_else(|| http().next());
    doc.map(|d| origin_of(&d.request.url)).unwrap_or_default()
}

/// Groups the kept entries into steps: by page when the HAR has pages, else by bursts.
fn group(rec: &Recording, kept: &[usize]) -> Vec<(String, Vec<usize>)> {
    let mut groups: Vec<(String, Vec<usize>)> = Vec::new();
    let by_page = !rec.pages.is_empty() && rec.entries.iter().any(|e| e.pageref.is_some());
    if by_page {
        let mut index: BTreeMap<&str, usize> = BTreeMap::new();
        for (i, p) in rec.pages.iter().enumerate() {
            index.insert(p.id.as_str(), i);
            groups.push((p.title.clone(), Vec::new()));
        }
        let mut last = 0;
        for &i in kept {
            let page = rec.entries[i]
                .pageref
                .as_deref()
                .and_then(|p| index.get(p).copied())
                .unwrap_or(last);
            groups[page].1.push(i);
            last = page;
        }
    } else {
        let mut busy_until = f64::NEG_INFINITY;
        for &i in kept {
            if groups.is_empty() || rec.start_ms[i] - busy_until > BURST_GAP_MS {
                groups.push((String::new(), Vec::new()));
            }
            groups.last_mut().expect("pushed").1.push(i);
            busy_until = busy_until.max(end_ms(rec, i));
        }
    }
    groups.retain(|(_, g)| !g.is_empty());
    groups
}

/// Analyses a recording into a plan: its steps and calls; forms and correlation are
/// filled in by their own passes (`forms::find`, `correlate::correlate`).
pub(crate) fn plan(rec: &Recording, opts: &Options) -> Plan {
    let origin = app_origin(rec);
    let kept_origins: Vec<String> = opts
        .keep_origins
        .iter()
        .map(|o| {
            let o = origin_of(o);
            o.trim_end_matches('/').to_string()
        })
        .collect();
    let mut left: BTreeMap<String, usize> = BTreeMap::new();
    let mut kept = Vec::new();
    let mut skipped: BTreeMap<String, usize> = BTreeMap::new();
    for (i, e) in rec.entries.iter().enumerate() {
        if !is_http(&e.request.url) {
            *skipped.entry(scheme(&e.request.url)).or_default() += 1;
            continue;
        }
        let o = origin_of(&e.request.url);
        // Failed or blocked requests (status 0) were never answered: nothing to replay.
        if e.response.status <= 0 {
            continue;
        }
        if o == origin || kept_origins.contains(&o) {
            kept.push(i);
        } else {
            *left.entry(o).or_default() += 1;
        }
    }
    // Redirects the client follows: the target's entry answers the redirect's call.
    let mut answered_by: BTreeMap<usize, usize> = BTreeMap::new();
    let mut folded = std::collections::BTreeSet::new();
    for (k, &i) in kept.iter().enumerate() {
        let e = &rec.entries[i];
        if !(300..400).contains(&e.response.status) {
            continue;
        }
        let Some(loc) = Pair::find(&e.response.headers, "location")
            .map(str::to_string)
            .or_else(|| e.response.redirect_url.clone().filter(|u| !u.is_empty()))
        else {
            continue;
        };
        let Ok(target) = Url::parse(&e.request.url).and_then(|u| u.join(&loc)) else {
            continue;
        };
        let mut at = i;
        if let Some(&next) = kept[k + 1..].iter().find(|&&n| {
            let n = &rec.entries[n];
            n.request.method == "GET"
                && !is_static(n)
                && Url::parse(&n.request.url).ok() == Some(target.clone())
        }) {
            at = next;
        }
        if at != i && !folded.contains(&at) {
            // Chains: a followed target that redirects again is followed too.
            let end = answered_by.get(&at).copied().unwrap_or(at);
            answered_by.insert(i, end);
            folded.insert(at);
        }
    }
    // Chains resolved: a call answered by a redirect answered by a page.
    let keys: Vec<usize> = answered_by.keys().copied().collect();
    for k in keys {
        let mut end = answered_by[&k];
        while let Some(&next) = answered_by.get(&end) {
            end = next;
        }
        answered_by.insert(k, end);
    }

    let mut steps = Vec::new();
    let mut calls = 0usize;
    let mut prev_end: Option<f64> = None;
    for (title, entries) in group(rec, &kept) {
        let mut items = Vec::new();
        let mut statics = Vec::new();
        let mut batch_at = None;
        let first_start = rec.start_ms[entries[0]];
        for &i in &entries {
            if folded.contains(&i) {
                continue;
            }
            let e = &rec.entries[i];
            calls += 1;
            let call = make_call(rec, i, answered_by.get(&i).copied().unwrap_or(i), calls);
            if is_static(e) {
                batch_at.get_or_insert(items.len());
                statics.push(call);
            } else {
                items.push(Item::Call(call));
            }
        }
        if let Some(at) = batch_at {
            items.insert(at, Item::Batch(statics));
        }
        let think = prev_end.map_or(0.0, |end| ((first_start - end) / 100.0).round() / 10.0);
        prev_end = Some(
            entries
                .iter()
                .map(|&i| end_ms(rec, i))
                .fold(f64::NEG_INFINITY, f64::max),
        );
        let named = items.iter().find_map(|it| match it {
            Item::Call(c) => Some(c.label()),
            Item::Batch(_) => None,
        });
        let title = if !title.is_empty() && !title.contains("://") {
            title
        } else {
            named.unwrap_or_else(|| "static files".to_string())
        };
        if !items.is_empty() {
            steps.push(Step {
                title,
                think_s: think.max(0.0),
                items,
            });
        }
    }
    Plan {
        origin,
        kept: kept_origins,
        steps,
        left_out: left.into_iter().collect(),
        rules: Vec::new(),
        unresolved: Vec::new(),
        uniques: Vec::new(),
        requests: calls,
        skipped: skipped.into_iter().collect(),
    }
}

fn make_call(rec: &Recording, i: usize, answered_by: usize, n: usize) -> Call {
    let e = &rec.entries[i];
    let url = Url::parse(&e.request.url).expect("checked when read");
    let mut path = url.path().to_string();
    if let Some(q) = url.query() {
        path.push('?');
        path.push_str(q);
    }
    let body = e.request_body().map(|b| {
        let mime = e
            .request
            .post_data
            .as_ref()
            .map(|p| p.mime_type.clone())
            .unwrap_or_default();
        (b, mime)
    });
    let headers = e
        .request
        .headers
        .iter()
        .filter(|h| !dropped_header(&h.name))
        // The body's type is written with the body.
        .filter(|h| !(body.is_some() && h.name.eq_ignore_ascii_case("content-type")))
        .map(|h| (h.name.clone(), h.value.clone()))
        .collect();
    let end = &rec.entries[answered_by];
    let redirect = (answered_by != i).then(|| {
        format!(
            "{} to {}",
            e.response.status,
            Url::parse(&end.request.url)
                .map(|u| u.path().to_string())
                .unwrap_or_default()
        )
    });
    let redirect_headers: Vec<String> = if answered_by != i {
        end.request
            .headers
            .iter()
            .filter(|h| !dropped_header(&h.name))
            .filter(|h| {
                !e.request
                    .headers
                    .iter()
                    .any(|o| o.name.eq_ignore_ascii_case(&h.name))
            })
            .map(|h| h.name.clone())
            .collect()
    } else {
        Vec::new()
    };
    // A 304 answered a conditional request the browser's cache made (`If-None-Match`,
    // `If-Modified-Since`); the replay has no cache and does not send those headers
    // (see `dropped_header`), so the server answers in full: 200.
    let mut status = end.response.status;
    let revalidated = status == 304;
    if revalidated {
        status = 200;
    }
    Call {
        entry: i,
        answered_by,
        method: e.request.method.to_ascii_uppercase(),
        origin: origin_of(&e.request.url),
        name: templated(&path),
        path,
        headers,
        body,
        status,
        redirect,
        redirect_headers,
        var: format!("res{n}"),
        subs: Vec::new(),
        revalidated,
        form: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_templated_and_hashed_assets_are_not() {
        assert_eq!(templated("/notes/17").unwrap(), "/notes/{id}");
        assert_eq!(
            templated("/a/3f2b9c1e-8d4a-4e2b-9c1e-8d4a4e2b9c1e/b?x=1").unwrap(),
            "/a/{id}/b"
        );
        assert_eq!(templated("/assets/style-00.1a2b3c4d.css"), None);
        assert_eq!(templated("/survey/login"), None);
    }
}
