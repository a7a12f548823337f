//! What a plugin can make the host keep or print has a fixed cost: texts it hands over
//! (error messages, tag values, names) are cut to a few KiB, and warnings it causes are
//! printed once per kind for a bounded number of kinds, then only counted. Without
//! these, a plugin inventing a new metric name or a 4 MiB error message every
//! iteration grew the host's own memory (outside the plugin's `memory_mb`) and its
//! results without limit.

use rustc_hash::{FxBuildHasher, FxHashSet};
use std::borrow::Cow;
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

/// Bytes of a plugin's error message that are kept.
pub(crate) const MESSAGE_BYTES: usize = 4096;

/// Bytes of a tag key or value that are kept (a URL used as the `name` tag is named by
/// its first part).
pub(crate) const TAG_BYTES: usize = 256;

/// Bytes of a name quoted in a warning.
pub(crate) const QUOTED_BYTES: usize = 80;

/// `text` cut to at most `max` bytes (at a character boundary), saying so and how long
/// it was; unchanged when it fits.
pub(crate) fn cut(text: &str, max: usize) -> Cow<'_, str> {
    if text.len() <= max {
        return Cow::Borrowed(text);
    }
    Cow::Owned(format!(
        "{}… (cut: {} bytes in all)",
        prefix(text, max),
        text.len()
    ))
}

/// [`cut`] of an owned text, which is kept as it is when it fits.
pub(crate) fn cut_owned(text: String, max: usize) -> String {
    if text.len() <= max {
        return text;
    }
    cut(&text, max).into_owned()
}

/// The first `max` bytes of `text` (less, to end at a character boundary).
pub(crate) fn prefix(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// Most distinct warnings printed; later ones are counted.
pub(crate) const MAX_WARNINGS: usize = 256;

/// Warnings printed once per key, for at most [`MAX_WARNINGS`] keys; a key is kept as
/// its hash (a key quoting a plugin's long name costs 8 bytes).
#[derive(Default)]
pub struct WarnOnce {
    seen: Mutex<FxHashSet<u64>>,
    unprinted: AtomicU64,
    told: AtomicBool,
}

impl WarnOnce {
    /// Prints `message` (cut to [`MESSAGE_BYTES`]) unless `key` was warned about, or
    /// too many keys were; whether it was printed.
    pub fn warn(&self, key: &str, message: &str) -> bool {
        let hash = FxBuildHasher.hash_one(key);
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        if seen.contains(&hash) {
            return false;
        }
        if seen.len() >= MAX_WARNINGS {
            drop(seen);
            self.unprinted.fetch_add(1, Ordering::Relaxed);
            if !self.told.swap(true, Ordering::Relaxed) {
                crate::stderr::warn(format_args!(
                    "more than {MAX_WARNINGS} distinct plugin warnings: the rest are counted \
                     in the summary's warnings, not printed"
                ));
            }
            return false;
        }
        seen.insert(hash);
        drop(seen);
        crate::stderr::warn(cut(message, MESSAGE_BYTES));
        true
    }

    /// Warnings not printed because too many distinct ones came first.
    pub fn unprinted(&self) -> u64 {
        self.unprinted.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_texts_are_cut_at_a_character_and_say_so() {
        assert_eq!(cut("short", 10), "short");
        let long = "é".repeat(100); // 200 bytes
        let c = cut(&long, 11);
        assert!(c.starts_with(&"é".repeat(5)), "{c}");
        assert!(c.ends_with("… (cut: 200 bytes in all)"), "{c}");
        assert_eq!(prefix(&long, 11).len(), 10);
    }

    #[test]
    fn warnings_are_bounded_in_number_and_cost() {
        let w = WarnOnce::default();
        assert!(w.warn("a", "first"));
        assert!(!w.warn("a", "again"));
        for i in 0..MAX_WARNINGS * 4 {
            w.warn(&format!("k{i}"), "x");
        }
        assert_eq!(w.seen.lock().unwrap().len(), MAX_WARNINGS);
        assert_eq!(w.unprinted(), (MAX_WARNINGS * 3 + 1) as u64);
    }
}
