//! What a plugin carries besides `describe()`: its README and source URL in custom
//! sections (`loadtest:readme`, `loadtest:source`, written by the SDK's `embed_meta!`),
//! read from the file without running any of its code.

use wasmparser::{Parser, Payload};

/// Name of the custom section with the plugin's README.
pub(crate) const README_SECTION: &str = "loadtest:readme";
/// Name of the custom section with the URL of the plugin's source.
pub(crate) const SOURCE_SECTION: &str = "loadtest:source";

/// The plugin's embedded README and source URL, when it has them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Embedded {
    /// The README (Markdown).
    pub readme: Option<String>,
    /// Where the source is.
    pub source: Option<String>,
}

/// Reads the sections from a component (or module), its nested core modules included:
/// the linker writes them into the core module, which the component embeds whole.
/// Empty sections count as absent; a file that does not parse has none.
pub(crate) fn read(bytes: &[u8]) -> Embedded {
    let mut found = Embedded::default();
    for payload in Parser::new(0).parse_all(bytes) {
        let Ok(Payload::CustomSection(section)) = payload else {
            continue;
        };
        let slot = match section.name() {
            README_SECTION => &mut found.readme,
            SOURCE_SECTION => &mut found.source,
            _ => continue,
        };
        let text = String::from_utf8_lossy(section.data()).trim().to_string();
        if !text.is_empty() && slot.is_none() {
            *slot = Some(text);
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A core module with the given custom sections.
    fn module(sections: &[(&str, &str)]) -> Vec<u8> {
        let mut out = b"\0asm\x01\0\0\0".to_vec();
        for (name, data) in sections {
            let mut body = vec![name.len() as u8];
            body.extend_from_slice(name.as_bytes());
            body.extend_from_slice(data.as_bytes());
            out.push(0);
            out.push(body.len() as u8);
            out.extend(body);
        }
        out
    }

    #[test]
    fn sections_are_found() {
        let m = module(&[
            ("other", "x"),
            (README_SECTION, "# hi\n"),
            (SOURCE_SECTION, ""),
        ]);
        let e = read(&m);
        assert_eq!(e.readme.as_deref(), Some("# hi"));
        assert_eq!(e.source, None);
        assert_eq!(read(b"junk"), Embedded::default());
    }
}
