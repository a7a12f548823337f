//! Tag sets: the sorted key/value pairs that split a metric into series
//! (`http_req_duration{name:/notes/{id},status:200}`).
//!
//! A set is hashed once, when it is made: the recorder looks series up by
//! `(metric, tags)` a dozen times per request, and hashing every string each time was
//! the largest share of its cost. Equal sets made apart still compare equal.

use std::cmp::Ordering;
use std::fmt;
use std::hash::{BuildHasher, Hash, Hasher};
use std::sync::{Arc, LazyLock};

type Pairs = [(Arc<str>, Arc<str>)];

struct Inner {
    hash: u64,
    pairs: Box<Pairs>,
}

/// An immutable, sorted set of tags, cheap to clone, hash and compare.
#[derive(Clone)]
pub struct TagSet(Arc<Inner>);

/// One empty set for the whole process, so `TagSet::empty()` does not allocate.
static EMPTY: LazyLock<TagSet> = LazyLock::new(|| TagSet::from_sorted(Vec::new()));

impl TagSet {
    /// The empty set.
    pub fn empty() -> Self {
        EMPTY.clone()
    }

    fn from_sorted(pairs: Vec<(Arc<str>, Arc<str>)>) -> Self {
        // A fixed-key hasher: the hash must be the same for equal sets in every thread.
        let hash = rustc_hash::FxBuildHasher.hash_one(&pairs);
        Self(intern::get_or_insert(hash, pairs))
    }

    /// A set from pairs; a later duplicate key wins.
    pub fn from_pairs<K: AsRef<str>, V: AsRef<str>>(
        pairs: impl IntoIterator<Item = (K, V)>,
    ) -> Self {
        let mut v: Vec<(Arc<str>, Arc<str>)> = Vec::new();
        for (k, val) in pairs {
            let (k, val) = (bounded(k.as_ref()), bounded(val.as_ref()));
            let (k, val) = (&*k, &*val);
            match v.iter_mut().find(|(existing, _)| &**existing == k) {
                Some(slot) => slot.1 = val.into(),
                None => v.push((k.into(), val.into())),
            }
        }
        v.sort();
        Self::from_sorted(v)
    }

    /// This set plus `pairs` (which win on equal keys). Keys and values already in
    /// this set are shared, not copied.
    pub fn with<K: AsRef<str>, V: AsRef<str>>(
        &self,
        pairs: impl IntoIterator<Item = (K, V)>,
    ) -> Self {
        let mut v: Vec<(Arc<str>, Arc<str>)> = self.0.pairs.to_vec();
        for (k, val) in pairs {
            let (k, val) = (bounded(k.as_ref()), bounded(val.as_ref()));
            let (k, val) = (&*k, &*val);
            match v.iter_mut().find(|(existing, _)| &**existing == k) {
                Some(slot) => {
                    if &*slot.1 != val {
                        slot.1 = val.into();
                    }
                }
                None => v.push((k.into(), val.into())),
            }
        }
        v.sort();
        Self::from_sorted(v)
    }

    /// The value of `key`, if present.
    pub fn get(&self, key: &str) -> Option<&str> {
        let pairs = &self.0.pairs;
        pairs
            .binary_search_by(|(k, _)| (**k).cmp(key))
            .ok()
            .map(|i| &*pairs[i].1)
    }

    /// The pairs in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.pairs.iter().map(|(k, v)| (&**k, &**v))
    }

    /// Whether every pair of `selector` is in this set.
    pub fn contains_all(&self, selector: &TagSet) -> bool {
        selector.iter().all(|(k, v)| self.get(k) == Some(v))
    }

    /// Whether the set has no tags.
    pub fn is_empty(&self) -> bool {
        self.0.pairs.is_empty()
    }
}

/// A key or value as a set keeps it: cut to [`crate::bounded::TAG_BYTES`] (a 200 KB URL
/// used as the `name` tag is named by its first part), so no set holds a plugin's
/// megabytes for the run.
fn bounded(text: &str) -> std::borrow::Cow<'_, str> {
    crate::bounded::cut(text, crate::bounded::TAG_BYTES)
}

/// One allocation per distinct live tag set in the process. Sets are made only when a
/// VU's cache misses, and a recorder compares every sample's set with the keys of its
/// series: when equal sets are the same allocation, that comparison is a pointer
/// comparison instead of comparing every string (50 VUs made 50 copies of each set).
mod intern {
    use super::Inner;
    use rustc_hash::FxHashMap;
    use std::sync::{Arc, LazyLock, Mutex, Weak};

    /// Sets made between sweeps of dead entries: keeps the table near the live count.
    const SWEEP_EVERY: usize = 4096;

    #[derive(Default)]
    struct Table {
        by_hash: FxHashMap<u64, Vec<Weak<Inner>>>,
        since_sweep: usize,
    }

    static TABLE: LazyLock<Mutex<Table>> = LazyLock::new(Default::default);

    /// The live set equal to `pairs` (sorted, hashing to `hash`), or a new one.
    pub(super) fn get_or_insert(hash: u64, pairs: Vec<(Arc<str>, Arc<str>)>) -> Arc<Inner> {
        let mut table = TABLE.lock().unwrap_or_else(|p| p.into_inner());
        let bucket = table.by_hash.entry(hash).or_default();
        if let Some(live) = bucket
            .iter()
            .filter_map(Weak::upgrade)
            .find(|set| *set.pairs == *pairs)
        {
            return live;
        }
        bucket.retain(|w| w.strong_count() > 0);
        let set = Arc::new(Inner {
            hash,
            pairs: pairs.into_boxed_slice(),
        });
        bucket.push(Arc::downgrade(&set));
        table.since_sweep += 1;
        if table.since_sweep >= SWEEP_EVERY {
            table.since_sweep = 0;
            table.by_hash.retain(|_, bucket| {
                bucket.retain(|w| w.strong_count() > 0);
                !bucket.is_empty()
            });
        }
        set
    }
}

impl Default for TagSet {
    fn default() -> Self {
        Self::empty()
    }
}

impl PartialEq for TagSet {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
            || (self.0.hash == other.0.hash && self.0.pairs == other.0.pairs)
    }
}

impl Eq for TagSet {}

impl Hash for TagSet {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.0.hash);
    }
}

impl PartialOrd for TagSet {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for TagSet {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.pairs.cmp(&other.0.pairs)
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

    #[test]
    fn long_keys_and_values_are_cut() {
        let url = format!("http://127.0.0.1/{}", "a".repeat(200_000));
        let t = TagSet::from_pairs([("name", url.as_str())]);
        let name = t.get("name").unwrap();
        assert!(name.len() < 400, "{}", name.len());
        assert!(name.starts_with("http://127.0.0.1/aaa"));
        assert!(name.ends_with("(cut: 200017 bytes in all)"), "{name}");
        let u = TagSet::empty().with([(url.as_str(), "v")]);
        assert!(u.iter().all(|(k, _)| k.len() < 400));
    }

    #[test]
    fn equal_sets_made_apart_are_equal_and_hash_alike() {
        use std::collections::HashSet;
        let a = TagSet::from_pairs([("a", "1"), ("b", "2")]);
        let b = TagSet::from_pairs([("b", "2")]).with([("a", "1")]);
        assert_eq!(a, b);
        assert_ne!(a, TagSet::from_pairs([("a", "1"), ("b", "3")]));
        let set: HashSet<TagSet> = [a.clone(), b].into_iter().collect();
        assert_eq!(set.len(), 1);
        assert_eq!(
            TagSet::empty(),
            TagSet::from_pairs(Vec::<(&str, &str)>::new())
        );
    }

    #[test]
    fn equal_live_sets_share_one_allocation_that_dies_with_them() {
        let a = TagSet::from_pairs([("intern-test", "x"), ("b", "2")]);
        let b = TagSet::from_pairs([("b", "2")]).with([("intern-test", "x")]);
        assert!(Arc::ptr_eq(&a.0, &b.0));
        let c = TagSet::from_pairs([("intern-test", "y")]);
        assert!(!Arc::ptr_eq(&a.0, &c.0));
        let weak = Arc::downgrade(&a.0);
        drop((a, b));
        assert!(
            weak.upgrade().is_none(),
            "the intern table keeps no set alive"
        );
        let again = TagSet::from_pairs([("intern-test", "x"), ("b", "2")]);
        assert_eq!(again.get("intern-test"), Some("x"));
    }
}
