//! The tag sets of a VU's requests, made once per distinct request and kept: a VU
//! repeats the same few requests, and building `{scenario, name, method, status, ...}`
//! for every request was a dozen allocations each time.
//!
//! A request is known by its method, URL and tags (the `name` tag defaults to the URL).
//! Each entry keeps the tag sets of the outcomes seen so far (status and whether it was
//! expected, or the error kind). The cache is bounded: past `MAX_ENTRIES` distinct
//! requests it starts over, so a plugin that makes every URL unique costs memory only
//! in the series it creates, as it would anyway.

use super::types::Proto;
use crate::metrics::TagSet;
use rustc_hash::FxHashMap;

/// Distinct requests remembered per VU before the cache starts over.
const MAX_ENTRIES: usize = 256;

/// Where a request's tag sets live in the cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Slot {
    index: usize,
    generation: u32,
}

/// The tag sets of one distinct request.
struct Entry {
    request: TagSet,
    outcomes: Vec<(u16, bool, Option<Proto>, TagSet)>,
    errors: Vec<(&'static str, TagSet)>,
}

/// One VU's cache of request tag sets.
pub(crate) struct RequestTags {
    base: TagSet,
    scratch: String,
    index: FxHashMap<Box<str>, usize>,
    entries: Vec<Entry>,
    generation: u32,
}

impl RequestTags {
    /// An empty cache.
    pub(crate) fn new() -> Self {
        Self {
            base: TagSet::empty(),
            scratch: String::new(),
            index: FxHashMap::default(),
            entries: Vec::new(),
            generation: 0,
        }
    }

    /// The slot of a request and its tag set (`base` plus the request's tags, `name`
    /// and `method`), made on first sight.
    pub(crate) fn request(
        &mut self,
        base: &TagSet,
        method: &str,
        url: &str,
        tags: &[(String, String)],
    ) -> (Slot, TagSet) {
        if *base != self.base || self.entries.len() >= MAX_ENTRIES {
            self.clear(base);
        }
        // The key spells each part with its length first, so no two requests share one.
        let key = &mut self.scratch;
        key.clear();
        for part in [method, url]
            .into_iter()
            .chain(tags.iter().flat_map(|(k, v)| [k.as_str(), v.as_str()]))
        {
            // The length as raw bytes, not formatted: this runs for every request.
            key.extend((part.len() as u32).to_le_bytes().map(char::from));
            key.push_str(part);
        }
        let index = match self.index.get(key.as_str()) {
            Some(&i) => i,
            None => {
                let name = tags
                    .iter()
                    .find(|(k, _)| k == "name")
                    .map_or(url, |(_, v)| v.as_str());
                let request = base.with(
                    tags.iter()
                        .map(|(k, v)| (k.as_str(), v.as_str()))
                        .chain([("name", name), ("method", method)]),
                );
                self.entries.push(Entry {
                    request,
                    outcomes: Vec::new(),
                    errors: Vec::new(),
                });
                let i = self.entries.len() - 1;
                self.index.insert(key.as_str().into(), i);
                i
            }
        };
        let slot = Slot {
            index,
            generation: self.generation,
        };
        (slot, self.entries[index].request.clone())
    }

    /// Whether `slot`, handed out earlier for requests of base tags `base`, still
    /// holds its tag set: the cache has not started over since (a prepared request
    /// keeps its slot).
    pub(crate) fn current(&self, slot: Slot, base: &TagSet) -> bool {
        slot.generation == self.generation && *base == self.base
    }

    /// The request's tags plus `status`, `expected_response` and, when a response came,
    /// `proto` (`HTTP/1.1` or `HTTP/2`, as k6 names it).
    pub(crate) fn outcome(
        &mut self,
        slot: Slot,
        request: &TagSet,
        status: u16,
        expected: bool,
        proto: Option<Proto>,
    ) -> TagSet {
        let make = || {
            let status = status.to_string();
            request.with(
                [
                    ("status", status.as_str()),
                    ("expected_response", if expected { "true" } else { "false" }),
                ]
                .into_iter()
                .chain(proto.map(|p| ("proto", p.name()))),
            )
        };
        let Some(entry) = self.entry(slot) else {
            return make();
        };
        if let Some((_, _, _, t)) = entry
            .outcomes
            .iter()
            .find(|(s, e, p, _)| *s == status && *e == expected && *p == proto)
        {
            return t.clone();
        }
        let tags = make();
        entry.outcomes.push((status, expected, proto, tags.clone()));
        tags
    }

    /// The request's tags plus `error`.
    pub(crate) fn error(&mut self, slot: Slot, request: &TagSet, kind: &'static str) -> TagSet {
        let make = || request.with([("error", kind)]);
        let Some(entry) = self.entry(slot) else {
            return make();
        };
        if let Some((_, t)) = entry.errors.iter().find(|(k, _)| *k == kind) {
            return t.clone();
        }
        let tags = make();
        entry.errors.push((kind, tags.clone()));
        tags
    }

    /// The entry of a slot, unless the cache started over since it was handed out.
    fn entry(&mut self, slot: Slot) -> Option<&mut Entry> {
        if slot.generation != self.generation {
            return None;
        }
        self.entries.get_mut(slot.index)
    }

    fn clear(&mut self, base: &TagSet) {
        self.base = base.clone();
        self.index.clear();
        self.entries.clear();
        self.generation = self.generation.wrapping_add(1);
    }
}

impl Default for RequestTags {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tags(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn same_request_same_sets_and_names_default_to_the_url() {
        let base = TagSet::from_pairs([("scenario", "s")]);
        let mut cache = RequestTags::new();
        let (slot, t) = cache.request(&base, "GET", "http://a/x", &[]);
        assert_eq!(t.to_string(), "{method:GET,name:http://a/x,scenario:s}");
        let (slot2, t2) = cache.request(&base, "GET", "http://a/x", &[]);
        assert_eq!(slot, slot2);
        assert_eq!(t, t2);
        let ok = cache.outcome(slot, &t, 200, true, Some(Proto::Http1));
        assert_eq!(ok.get("status"), Some("200"));
        assert_eq!(ok.get("expected_response"), Some("true"));
        assert_eq!(ok.get("proto"), Some("HTTP/1.1"));
        assert_eq!(cache.outcome(slot, &t, 200, true, Some(Proto::Http1)), ok);
        let h2 = cache.outcome(slot, &t, 200, true, Some(Proto::Http2));
        assert_eq!(h2.get("proto"), Some("HTTP/2"));
        assert_eq!(
            cache.outcome(slot, &t, 404, false, None).get("status"),
            Some("404")
        );
        assert_eq!(
            cache.error(slot, &t, "timeout").get("error"),
            Some("timeout")
        );
    }

    #[test]
    fn parts_are_not_confused_and_tags_are_kept() {
        let base = TagSet::empty();
        let mut cache = RequestTags::new();
        let (a, ta) = cache.request(&base, "GET", "u", &tags(&[("name", "n"), ("g", "1")]));
        let (b, tb) = cache.request(&base, "GET", "u", &tags(&[("name", "n1"), ("g", "")]));
        assert_ne!(a, b);
        assert_eq!(ta.get("name"), Some("n"));
        assert_eq!(ta.get("g"), Some("1"));
        assert_eq!(tb.get("name"), Some("n1"));
    }

    #[test]
    fn bounded_and_stale_slots_still_get_right_tags() {
        let base = TagSet::empty();
        let mut cache = RequestTags::new();
        let (first, t) = cache.request(&base, "GET", "u0", &[]);
        for i in 1..=MAX_ENTRIES {
            cache.request(&base, "GET", &format!("u{i}"), &[]);
        }
        assert!(cache.entries.len() <= MAX_ENTRIES);
        let tags = cache.outcome(first, &t, 500, false, None);
        assert_eq!(tags.get("name"), Some("u0"));
        assert_eq!(tags.get("status"), Some("500"));
    }
}
