//! A bundled file's source map (`//# sourceMappingURL=`), honoured in stack traces as
//! k6 honours it: a frame in a bundle a tool made (webpack, esbuild, tsc) names the
//! original file, line and column. The map is read when the script is built: inline
//! (`data:application/json;base64,...`) or a file beside the bundle (in the script's
//! folder, as any file the build reads, unless `--allow-outside-files`); parsed by the
//! `sourcemap` crate (regular and index maps); its sources resolved against the map's
//! folder and `sourceRoot` and named from the script's folder. The layer gets each
//! module's sources and VLQ mappings (`BUNDLE.maps`, decoded by layer/bundle.js on the
//! first stack that needs them). A map that cannot be read or parsed is named in a
//! warning and the build goes on without it, as k6 warns and goes on.

use anyhow::{anyhow, bail, Context, Result};
use std::path::{Path, PathBuf};

/// Most bytes of one source map.
pub(crate) const MAX_BYTES: usize = 32 << 20;

/// A module's map, ready for the layer.
pub(crate) struct Loaded {
    /// `{ sources: [...], mappings: "..." }`, a JavaScript object literal.
    pub js: String,
    /// The map file, for the build's cache key (none for an inline map).
    pub input: Option<(String, Vec<u8>)>,
}

/// The map of the module `src` read from `path` (`None`: it names none, or names one
/// that cannot be had, which is warned). `remote`: a fetched module, whose only map
/// honoured is an inline one.
pub(crate) fn load(
    src: &str,
    path: &Path,
    root: &Path,
    shown: &str,
    remote: bool,
) -> Result<Option<Loaded>> {
    if !src.contains("sourceMappingURL") {
        return Ok(None);
    }
    match load_inner(src, path, root, shown, remote) {
        Ok(found) => Ok(found),
        // Outside the script's folder: refused as any file the build would read.
        Err(e) if e.to_string().contains("--allow-outside-files") => Err(e),
        Err(e) => {
            eprintln!("warning: {shown}: its source map is not used: {e:#}");
            Ok(None)
        }
    }
}

fn load_inner(
    src: &str,
    path: &Path,
    root: &Path,
    shown: &str,
    remote: bool,
) -> Result<Option<Loaded>> {
    let Some(reference) = sourcemap::locate_sourcemap_reference_slice(src.as_bytes())
        .map_err(|e| anyhow!("cannot read its sourceMappingURL: {e}"))?
    else {
        return Ok(None);
    };
    let url = reference.get_url().to_string();
    let dir = path.parent().unwrap_or(root).to_path_buf();
    let (decoded, input, map_dir) = if url.starts_with("data:") {
        if url.len() > MAX_BYTES * 4 / 3 + 64 {
            bail!("the inline map is larger than {} MiB", MAX_BYTES >> 20);
        }
        let decoded = reference
            .get_embedded_sourcemap()
            .map_err(|e| anyhow!("the inline map cannot be parsed: {e}"))?
            .ok_or_else(|| anyhow!("the inline map is not base64 JSON"))?;
        (decoded, None, dir)
    } else if remote {
        return Ok(None);
    } else {
        if url.contains("://") || url.starts_with('/') {
            bail!("`{url}` is not a path beside the bundle (http maps are not fetched)");
        }
        let file: PathBuf = dir.join(&url);
        let file = file
            .canonicalize()
            .with_context(|| format!("`{url}` names {}, which cannot be read", file.display()))?;
        super::outside::check(root, &file, shown, &format!("sourceMappingURL={url}"))?;
        let size = std::fs::metadata(&file)?.len();
        if size > MAX_BYTES as u64 {
            bail!("{} is larger than {} MiB", file.display(), MAX_BYTES >> 20);
        }
        let bytes = std::fs::read(&file)?;
        let decoded = sourcemap::decode_slice(&bytes)
            .map_err(|e| anyhow!("{} cannot be parsed: {e}", file.display()))?;
        let id = format!("sourcemap:{}", file.display());
        let map_dir = file.parent().unwrap_or(&dir).to_path_buf();
        (decoded, Some((id, bytes)), map_dir)
    };
    let map = match decoded {
        sourcemap::DecodedMap::Regular(m) => m,
        sourcemap::DecodedMap::Index(i) => i
            .flatten()
            .map_err(|e| anyhow!("its index map cannot be flattened: {e}"))?,
        sourcemap::DecodedMap::Hermes(h) => (*h).clone(),
    };
    let sources: Vec<String> = (0..map.get_source_count())
        .map(|i| {
            let name = map.get_source(i).unwrap_or("?");
            source_name(root, &map_dir, name)
        })
        .collect();
    // The mappings as VLQ again (an index map was flattened), from the crate's writer.
    let mut raw = Vec::new();
    map.to_writer(&mut raw)
        .map_err(|e| anyhow!("cannot write its mappings: {e}"))?;
    let value: serde_json::Value = serde_json::from_slice(&raw)?;
    let mappings = value
        .get("mappings")
        .and_then(|m| m.as_str())
        .unwrap_or_default();
    let js = format!(
        "{{ sources: {}, mappings: {} }}",
        serde_json::to_string(&sources)?,
        serde_json::to_string(mappings)?
    );
    Ok(Some(Loaded { js, input }))
}

/// A source's name as a frame shows it: its path from the script's folder when it is
/// inside it, else the path (or URL, `webpack://...`) as the map gives it.
fn source_name(root: &Path, map_dir: &Path, name: &str) -> String {
    if name.contains("://") {
        return name.to_string();
    }
    let joined = map_dir.join(name);
    let clean = normalize(&joined);
    match clean.strip_prefix(root) {
        Ok(rel) => rel.to_string_lossy().replace('\\', "/"),
        Err(_) => clean.to_string_lossy().into_owned(),
    }
}

/// `a/b/../c` as `a/c`, without touching the disk (a source need not exist).
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map_json() -> String {
        let mut b = sourcemap::SourceMapBuilder::new(Some("bundle.js"));
        let id = b.add_source("../src/app.js");
        b.add_raw(1, 0, 5, 2, Some(id), None, false);
        b.add_raw(1, 20, 7, 4, Some(id), None, false);
        let mut out = Vec::new();
        b.into_sourcemap().to_writer(&mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn inline_and_beside_maps_name_the_original_sources() {
        use base64::Engine as _;
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("dist")).unwrap();
        let json = map_json();
        let inline = format!(
            "x();\n//# sourceMappingURL=data:application/json;base64,{}\n",
            base64::engine::general_purpose::STANDARD.encode(&json)
        );
        let bundle = root.join("dist/b.js");
        let got = load(&inline, &bundle, &root, "dist/b.js", false)
            .unwrap()
            .unwrap();
        assert!(got.js.contains("\"src/app.js\""), "{}", got.js);
        assert!(got.input.is_none());
        std::fs::write(root.join("dist/b.js.map"), &json).unwrap();
        let beside = "x();\n//# sourceMappingURL=b.js.map\n";
        let got = load(beside, &bundle, &root, "dist/b.js", false)
            .unwrap()
            .unwrap();
        assert!(
            got.js.contains("\"src/app.js\"") && got.js.contains("mappings"),
            "{}",
            got.js
        );
        assert!(got.input.is_some());
        // A map that is not there is warned and left out; one outside the folder refused.
        let missing = "x();\n//# sourceMappingURL=nope.map\n";
        assert!(load(missing, &bundle, &root, "dist/b.js", false)
            .unwrap()
            .is_none());
        let outside = tempfile::tempdir().unwrap();
        let far = outside.path().join("far.map");
        std::fs::write(&far, &json).unwrap();
        let rel = pathdiff(&far, &root.join("dist"));
        let text = format!("x();\n//# sourceMappingURL={rel}\n");
        let err = load(&text, &bundle, &root, "dist/b.js", false)
            .err()
            .expect("refused")
            .to_string();
        assert!(err.contains("--allow-outside-files"), "{err}");
    }

    /// `to` relative to `from` through `..` (both absolute).
    fn pathdiff(to: &Path, from: &Path) -> String {
        let ups = from.components().count() - 1;
        format!(
            "{}{}",
            "../".repeat(ups),
            to.strip_prefix("/").unwrap().display()
        )
    }
}
