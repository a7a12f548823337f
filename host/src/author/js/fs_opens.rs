//! The files of k6/experimental/fs's `fs.open(path)` calls, bundled at build time as
//! `open()`'s are (a plugin has no file system): the path must be a literal, resolved
//! from the module's folder, and is checked against the script's folder by the caller
//! as `open()`'s is.

use super::scan::{call_sites, line_of, literal_argument};
use anyhow::{bail, Result};
use std::path::{Path, PathBuf};

/// The literal paths of the module's `X.open(...)` calls, with the files they name.
/// `code` is the module with its strings and comments blanked (scan.rs). Only a module
/// that imports k6/experimental/fs is read (another's `.open(` is not a file).
pub(crate) fn fs_opens(
    src: &str,
    code: &str,
    shown: &str,
    dir: &Path,
) -> Result<Vec<(String, PathBuf)>> {
    let mut out = Vec::new();
    if !src.contains("k6/experimental/fs") {
        return Ok(out);
    }
    for (at, paren) in call_sites(code, ".open") {
        let Some(literal) = literal_argument(src, paren, shown)? else {
            bail!(
                "{shown}:{}: fs.open() needs a literal path (fs.open('./data.csv')) so that host build can bundle the file",
                line_of(src, at)
            );
        };
        out.push((literal.clone(), dir.join(&literal)));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literal_paths_of_a_module_that_imports_fs() {
        let dir = Path::new("/s");
        let src = "import fs from 'k6/experimental/fs';\nconst f = await fs.open('./a.csv');\n";
        let got = fs_opens(src, src, "t.js", dir).unwrap();
        assert_eq!(got, vec![("./a.csv".to_string(), dir.join("./a.csv"))]);
        let src = "import fs from 'k6/experimental/fs';\nconst p = 'x';\nfs.open(p);\n";
        let e = fs_opens(src, src, "t.js", dir).unwrap_err().to_string();
        assert!(
            e.starts_with("t.js:3: fs.open() needs a literal path"),
            "{e}"
        );
        let src = "ws.open('x');\n";
        assert!(fs_opens(src, src, "t.js", dir).unwrap().is_empty());
    }
}
