//! A plugin's identity beyond `describe()`: its README and the URL of its source, carried
//! in custom sections of the component, so `host inspect` can show them without running
//! any of the plugin's code. Use [`embed_meta!`](crate::embed_meta!) once per plugin.

/// Name of the custom section that carries the plugin's README (UTF-8 Markdown).
pub const README_SECTION: &str = "loadtest:readme";
/// Name of the custom section that carries the URL of the plugin's source (UTF-8).
pub const SOURCE_SECTION: &str = "loadtest:source";

/// Copies `text` into an array of its length, in a const context (a custom section is
/// a `static` byte array, and `include_str!` gives a `&str`).
#[doc(hidden)]
pub const fn bytes<const N: usize>(text: &str) -> [u8; N] {
    let from = text.as_bytes();
    let mut out = [0u8; N];
    let mut i = 0;
    while i < N {
        out[i] = from[i];
        i += 1;
    }
    out
}

/// Embeds the plugin's README and source URL in the component, as the custom sections
/// [`README_SECTION`] and [`SOURCE_SECTION`]; `host inspect` shows them. Use it once, at
/// the top level of the plugin crate:
///
/// ```no_run
/// loadtest::embed_meta!(
///     readme: "# checkout\nSigned-in users buying one item.\n",
///     source: "https://git.example.com/team/checkout",
/// );
/// ```
///
/// `readme: include_str!("../README.md")` embeds the crate's README file.
#[macro_export]
macro_rules! embed_meta {
    (readme: $readme:expr, source: $source:expr $(,)?) => {
        const _: () = {
            const README: &str = $readme;
            const SOURCE: &str = $source;
            // `#[used]` keeps the statics through LTO; the linker turns each
            // `link_section` into a custom section of the core module, which the
            // component keeps.
            #[used]
            #[link_section = "loadtest:readme"]
            static README_BYTES: [u8; README.len()] = $crate::meta::bytes(README);
            #[used]
            #[link_section = "loadtest:source"]
            static SOURCE_BYTES: [u8; SOURCE.len()] = $crate::meta::bytes(SOURCE);
        };
    };
}

#[cfg(test)]
mod tests {
    #[test]
    fn bytes_are_copied_whole() {
        const TEXT: &str = "héllo";
        const B: [u8; TEXT.len()] = super::bytes(TEXT);
        assert_eq!(&B, TEXT.as_bytes());
    }
}
