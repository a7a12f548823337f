//! A VU's cache of the tag sets its checks and custom metrics use: a plugin calls
//! `check("status is 200", ..)` with the same name and tags every iteration, and
//! building the set each time (an allocation per key and value) was most of the cost
//! of a check. Bounded: past `MAX_ENTRIES` distinct sets it starts over.

use super::tags::TagSet;
use rustc_hash::FxHashMap;

/// Distinct tag sets remembered per VU before the cache starts over.
const MAX_ENTRIES: usize = 256;

/// Longest spelling of a tag list that is remembered.
const MAX_KEY_BYTES: usize = 1024;

/// Tag sets made from a base set plus a plugin's tags, remembered by their spelling.
#[derive(Default)]
pub struct TagCache {
    base: TagSet,
    scratch: String,
    sets: FxHashMap<Box<str>, TagSet>,
}

impl TagCache {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// `base` plus `tags` plus `extra` (later pairs win on equal keys), as
    /// `base.with(..)` would make it.
    pub fn with(
        &mut self,
        base: &TagSet,
        tags: &[(String, String)],
        extra: Option<(&str, &str)>,
    ) -> TagSet {
        if *base != self.base || self.sets.len() >= MAX_ENTRIES {
            self.base = base.clone();
            self.sets.clear();
        }
        let pairs = || {
            tags.iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .chain(extra)
        };
        // Each part is spelled with its length first (as raw bytes, not formatted:
        // this runs for every check), so no two lists share a key.
        let key = &mut self.scratch;
        key.clear();
        for (k, v) in pairs() {
            for part in [k, v] {
                key.extend((part.len() as u32).to_le_bytes().map(char::from));
                key.push_str(part);
            }
        }
        if let Some(set) = self.sets.get(key.as_str()) {
            return set.clone();
        }
        let set = base.with(pairs());
        // A long spelling (a plugin's huge tag value) is not remembered: 256 of them
        // would hold megabytes per VU.
        if key.len() <= MAX_KEY_BYTES {
            self.sets.insert(key.as_str().into(), set.clone());
        }
        if key.capacity() > MAX_KEY_BYTES * 4 {
            *key = String::new();
        }
        set
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owned(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn same_as_building_the_set_and_remembered() {
        let base = TagSet::from_pairs([("scenario", "s")]);
        let mut cache = TagCache::new();
        let tags = owned(&[("group", "g")]);
        let a = cache.with(&base, &tags, Some(("check", "ok")));
        assert_eq!(a, base.with([("group", "g"), ("check", "ok")]));
        assert_eq!(cache.sets.len(), 1);
        let b = cache.with(&base, &tags, Some(("check", "ok")));
        assert_eq!(a, b);
        assert_eq!(cache.sets.len(), 1);
        let c = cache.with(&base, &owned(&[("group", "g:1")]), Some(("check", "ok")));
        assert_eq!(c.get("group"), Some("g:1"));
        let other_base = TagSet::from_pairs([("scenario", "t")]);
        assert_eq!(
            cache.with(&other_base, &tags, None).get("scenario"),
            Some("t")
        );
    }

    #[test]
    fn bounded() {
        let base = TagSet::empty();
        let mut cache = TagCache::new();
        for i in 0..(MAX_ENTRIES * 3) {
            let n = i.to_string();
            let set = cache.with(&base, &[], Some(("check", n.as_str())));
            assert_eq!(set.get("check"), Some(n.as_str()));
        }
        assert!(cache.sets.len() <= MAX_ENTRIES);
    }
}
