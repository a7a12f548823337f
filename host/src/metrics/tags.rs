//! Tag sets: the sorted key/value pairs that split a metric into series
//! (`http_req_duration{name:/notes/{id},status:200}`).

use std::fmt;
use std::sync::Arc;

/// An immutable, sorted set of tags, cheap to clone and hash.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct TagSet(Arc<[(Arc<str>, Arc<str>)]>);

impl TagSet {
    /// The empty set.
    pub fn empty() -> Self {
        Self::default()
    }

    /// A set from pairs; a later duplicate key wins.
    pub fn from_pairs<K: AsRef<str>, V: AsRef<str>>(
        pairs: impl IntoIterator<Item = (K, V)>,
    ) -> Self {
        let mut v: Vec<(Arc<str>, Arc<str>)> = Vec::new();
        for (k, val) in pairs {
            let (k, val) = (k.as_ref(), val.as_ref());
            match v.iter_mut().find(|(existing, _)| &**existing == k) {
                Some(slot) => slot.1 = val.into(),
                None => v.push((k.into(), val.into())),
            }
        }
        v.sort();
        Self(v.into())
    }

    /// This set plus `pairs` (which win on equal keys).
    pub fn with<K: AsRef<str>, V: AsRef<str>>(
        &self,
        pairs: impl IntoIterator<Item = (K, V)>,
    ) -> Self {
        let own = self.iter().map(|(k, v)| (k.to_string(), v.to_string()));
        let extra = pairs
            .into_iter()
            .map(|(k, v)| (k.as_ref().to_string(), v.as_ref().to_string()));
        Self::from_pairs(own.chain(extra))
    }

    /// The value of `key`, if present.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0
            .binary_search_by(|(k, _)| (**k).cmp(key))
            .ok()
            .map(|i| &*self.0[i].1)
    }

    /// The pairs in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(k, v)| (&**k, &**v))
    }

    /// Whether every pair of `selector` is in this set.
    pub fn contains_all(&self, selector: &TagSet) -> bool {
        selector.iter().all(|(k, v)| self.get(k) == Some(v))
    }

    /// Whether the set has no tags.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Display for TagSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("{")?;
        for (i, (k, v)) in self.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{k}:{v}")?;
        }
        f.write_str("}")
    }
}

impl fmt::Debug for TagSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorted_deduplicated_and_selectable() {
        let t = TagSet::from_pairs([("status", "200"), ("name", "a"), ("status", "404")]);
        assert_eq!(t.to_string(), "{name:a,status:404}");
        assert_eq!(t.get("status"), Some("404"));
        assert!(t.contains_all(&TagSet::from_pairs([("name", "a")])));
        assert!(!t.contains_all(&TagSet::from_pairs([("name", "b")])));
        assert_eq!(t.with([("name", "b")]).get("name"), Some("b"));
    }
}
