//! The `.proto` files of k6's `client.load(importPaths, ...files)` (k6/net/grpc), read at
//! build time as `open()`ed files are: a plugin has no file system, so the files a
//! script loads, and the files they import, are bundled into the component and handed
//! to the host's `grpc` import when the script connects. The arguments must be
//! literals, or `__ENV.NAME` read from the build's environment (`-e`, then the
//! process's), so that the build knows which files to take. Each file is compiled here
//! (protox) so a broken `.proto` fails the build with its file and line, as k6 fails in
//! the init code.

use super::scan::{call_sites, line_of};
use anyhow::{anyhow, bail, Result};
use protox::file::{ChainFileResolver, File, FileResolver, GoogleFileResolver};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;

/// One `.proto` file named in a `load` call, with everything it needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Loaded {
    /// The name as the script gives it (`'counter.proto'`): the layer's key.
    pub given: String,
    /// The file and the files it imports, by the names imports use, with their text.
    /// Google's well-known types are left to the host, which carries them.
    pub files: Vec<(String, String)>,
}

/// The files of every `client.load(...)` call of one module. `code` is the module with
/// its strings and comments blanked (scan.rs); `dir` its folder, from which relative
/// import paths are resolved, as k6 resolves them from the script's folder. A file
/// read outside `root`, the script's folder, is refused as `open()` refuses one there.
pub(crate) fn loads(
    src: &str,
    code: &str,
    shown: &str,
    dir: &Path,
    root: &Path,
    env: &BTreeMap<String, String>,
) -> Result<Vec<Loaded>> {
    let mut out = Vec::new();
    for (at, open) in call_sites(code, ".load") {
        let where_ = format!("{shown}:{}", line_of(src, at));
        let args = Args {
            src,
            at: open + 1,
            env,
            where_: &where_,
            call: "client.load()",
            example: "load(['protos'], 'api.proto')",
        }
        .parse()?;
        let (paths, files) = args
            .split_first()
            .ok_or_else(|| anyhow!("{where_}: client.load() needs import paths and a file"))?;
        if files.iter().all(Vec::is_empty) {
            bail!("{where_}: client.load() names no .proto file: load([paths], 'file.proto')");
        }
        let mut dirs: Vec<PathBuf> = paths
            .iter()
            .map(|p| dir.join(p.strip_prefix("file://").unwrap_or(p)))
            .collect();
        if dirs.is_empty() {
            dirs.push(dir.to_path_buf());
        }
        for given in files.iter().flatten() {
            out.push(compile(given, &dirs, root, &where_)?);
        }
    }
    Ok(out)
}

/// The argument list of one call: each argument a list of strings (a string is a list
/// of one, `null` an empty one).
pub(super) struct Args<'a> {
    /// The module's source.
    pub(super) src: &'a str,
    /// Where the arguments start (after the `(`).
    pub(super) at: usize,
    /// The build's environment, for `__ENV.NAME`.
    pub(super) env: &'a BTreeMap<String, String>,
    /// `file:line` of the call, for errors.
    pub(super) where_: &'a str,
    /// The call, as errors name it (`client.load()`).
    pub(super) call: &'a str,
    /// A call that can be bundled, for errors.
    pub(super) example: &'a str,
}

impl Args<'_> {
    /// The arguments.
    pub(super) fn parse(mut self) -> Result<Vec<Vec<String>>> {
        let mut args = Vec::new();
        loop {
            self.skip();
            match self.peek() {
                Some(')') => return Ok(args),
                Some('[') => {
                    self.at += 1;
                    let mut list = Vec::new();
                    loop {
                        self.skip();
                        if self.peek() == Some(']') {
                            self.at += 1;
                            break;
                        }
                        list.push(self.value()?);
                        self.skip();
                        match self.peek() {
                            Some(',') => self.at += 1,
                            Some(']') => {}
                            _ => return Err(self.unreadable()),
                        }
                    }
                    args.push(list);
                }
                _ if self.word("null") || self.word("undefined") => args.push(Vec::new()),
                _ => {
                    let v = self.value()?;
                    args.push(vec![v]);
                }
            }
            self.skip();
            match self.peek() {
                Some(',') => self.at += 1,
                Some(')') => return Ok(args),
                _ => return Err(self.unreadable()),
            }
        }
    }

    fn peek(&self) -> Option<char> {
        self.src[self.at..].chars().next()
    }

    fn skip(&mut self) {
        let rest = &self.src[self.at..];
        self.at += rest.len() - rest.trim_start().len();
    }

    /// Consumes `w` if it is the next word.
    fn word(&mut self, w: &str) -> bool {
        let rest = &self.src[self.at..];
        let next = rest[w.len().min(rest.len())..].chars().next();
        if rest.starts_with(w) && !next.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            self.at += w.len();
            return true;
        }
        false
    }

    /// A string literal or `__ENV.NAME` / `__ENV['NAME']`, optionally `|| fallback`;
    /// or the name of a module-level `const NAME = <one of those>` (k6's own examples
    /// hold a proto's path in a const).
    fn value(&mut self) -> Result<String> {
        let rest = &self.src[self.at..];
        let n = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$'))
            .unwrap_or(rest.len());
        let name = &rest[..n];
        let is_name = rest
            .chars()
            .next()
            .is_some_and(|c| c.is_alphabetic() || c == '_' || c == '$');
        if is_name && name != "__ENV" {
            let at = const_init(self.src, name).ok_or_else(|| {
                anyhow!(
                    "{}: {} names `{name}`, which is not a `const {name} = '...'` of this module: {} needs literal paths (or __ENV.NAME, or a const holding one) so that host build can bundle the files: {}",
                    self.where_, self.call, self.call, self.example
                )
            })?;
            let mut inner = Args { at, ..*self };
            let value = inner.literal()?;
            self.at += n;
            return Ok(value);
        }
        self.literal()
    }

    /// A string literal or `__ENV.NAME` / `__ENV['NAME']`, optionally `|| fallback`.
    fn literal(&mut self) -> Result<String> {
        let rest = &self.src[self.at..];
        if let Some(q) = rest
            .chars()
            .next()
            .filter(|c| matches!(c, '\'' | '"' | '`'))
        {
            let len = rest[1..].find(q).ok_or_else(|| self.unreadable())?;
            let text = &rest[1..1 + len];
            if q == '`' && text.contains("${") {
                return Err(self.unreadable());
            }
            self.at += len + 2;
            return Ok(text.to_string());
        }
        if let Some(after) = rest.strip_prefix("__ENV") {
            let (name, used) = if let Some(r) = after.strip_prefix('.') {
                let n = r
                    .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .unwrap_or(r.len());
                (r[..n].to_string(), 6 + n)
            } else if let Some(r) = after.strip_prefix('[') {
                let q = r.chars().next().filter(|c| *c == '\'' || *c == '"');
                let q = q.ok_or_else(|| self.unreadable())?;
                let len = r[1..].find(q).ok_or_else(|| self.unreadable())?;
                let close = r[len + 2..].trim_start();
                if !close.starts_with(']') {
                    return Err(self.unreadable());
                }
                (
                    r[1..1 + len].to_string(),
                    5 + (after.len() - close.len()) + 1,
                )
            } else {
                return Err(self.unreadable());
            };
            self.at += used;
            // `__ENV.NAME || 'default'`, as k6 scripts write an optional setting: the
            // default when the build's environment lacks NAME.
            let after_name = self.at;
            self.skip();
            if self.src[self.at..].starts_with("||") {
                self.at += 2;
                self.skip();
                let fallback = self.literal();
                return match self.env.get(&name) {
                    Some(v) => Ok(v.clone()),
                    None => fallback,
                };
            }
            self.at = after_name;
            return match self.env.get(&name) {
                Some(v) => Ok(v.clone()),
                None => bail!(
                    "{}: {} reads __ENV.{name}, which is not set when the script is built: give it with -e {name}=VALUE (the files are bundled at build time)",
                    self.where_, self.call
                ),
            };
        }
        Err(self.unreadable())
    }

    fn unreadable(&self) -> anyhow::Error {
        anyhow!(
            "{}: {} needs literal paths (or __ENV.NAME) so that host build can bundle the files: {}",
            self.where_, self.call, self.example
        )
    }
}

/// Where the value of `const NAME = VALUE` begins in `src` (the first such const).
fn const_init(src: &str, name: &str) -> Option<usize> {
    let word = |c: char| c.is_alphanumeric() || c == '_' || c == '$';
    for (at, _) in src.match_indices("const") {
        if src[..at].chars().next_back().is_some_and(word) {
            continue;
        }
        let rest = &src[at + 5..];
        let after = rest.trim_start();
        if after.len() == rest.len() || !after.starts_with(name) {
            continue;
        }
        let tail = &after[name.len()..];
        if tail.chars().next().is_some_and(word) {
            continue;
        }
        let tail = tail.trim_start();
        let Some(value) = tail.strip_prefix('=') else {
            continue;
        };
        if value.starts_with('=') {
            continue;
        }
        let value = value.trim_start();
        return Some(src.len() - value.len());
    }
    None
}

/// `.proto` files found in the import paths, recorded as the compiler opens them.
struct Recording {
    dirs: Vec<PathBuf>,
    /// The script's folder: a file found outside it is refused (outside.rs).
    root: PathBuf,
    /// Where the call is, for the refusal.
    where_: String,
    read: Rc<RefCell<BTreeMap<String, String>>>,
    /// The first file refused for lying outside `root`: the compiler is told it was not
    /// found, and the build fails with this instead.
    refused: Rc<RefCell<Option<anyhow::Error>>>,
}

impl FileResolver for Recording {
    fn open_file(&self, name: &str) -> Result<File, protox::Error> {
        let candidates: Vec<PathBuf> = if Path::new(name).is_absolute() {
            vec![PathBuf::from(name)]
        } else {
            self.dirs.iter().map(|d| d.join(name)).collect()
        };
        for path in candidates {
            if !path.is_file() {
                continue;
            }
            let what = format!("client.load() importing {name:?}");
            if let Err(e) = super::outside::check(&self.root, &path, &self.where_, &what) {
                self.refused.borrow_mut().get_or_insert(e);
                return Err(protox::Error::file_not_found(name));
            }
            if let Ok(source) = std::fs::read_to_string(&path) {
                self.read
                    .borrow_mut()
                    .insert(name.to_string(), source.clone());
                return File::from_source(name, &source);
            }
        }
        Err(protox::Error::file_not_found(name))
    }
}

/// Compiles `given` from `dirs`, returning it with the files it imports.
fn compile(given: &str, dirs: &[PathBuf], root: &Path, where_: &str) -> Result<Loaded> {
    let read = Rc::new(RefCell::new(BTreeMap::new()));
    let refused = Rc::new(RefCell::new(None));
    let mut chain = ChainFileResolver::new();
    chain.add(Recording {
        dirs: dirs.to_vec(),
        root: root.to_path_buf(),
        where_: where_.to_owned(),
        read: read.clone(),
        refused: refused.clone(),
    });
    chain.add(GoogleFileResolver::new());
    let mut compiler = protox::Compiler::with_file_resolver(chain);
    compiler.include_imports(true);
    if let Err(e) = compiler.open_file(given) {
        if let Some(refusal) = refused.borrow_mut().take() {
            return Err(refusal);
        }
        let searched: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
        bail!(
            "{where_}: client.load() cannot compile {given} (searched {}): {e}",
            searched.join(", ")
        );
    }
    let mut files: Vec<(String, String)> = Vec::new();
    let read = read.borrow();
    // The named file first, then what it imports.
    if let Some(source) = read.get(given) {
        files.push((given.to_string(), source.clone()));
    }
    for (name, source) in read.iter() {
        if name != given {
            files.push((name.clone(), source.clone()));
        }
    }
    Ok(Loaded {
        given: given.to_string(),
        files,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::author::js::scan::scan;

    fn found(src: &str, dir: &Path, env: &[(&str, &str)]) -> Result<Vec<Loaded>> {
        let code = String::from_utf8(scan(src).code).unwrap();
        let env = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        loads(src, &code, "s.js", dir, dir, &env)
    }

    /// A `.proto` (or one it imports) outside the script's folder was read into the
    /// component without a word (issue 49), where `open()` of the same file is refused.
    #[test]
    fn protos_outside_the_scripts_folder_are_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("script");
        std::fs::create_dir_all(root.join("protos")).unwrap();
        std::fs::write(
            tmp.path().join("secret.proto"),
            "syntax = \"proto3\"; package s; message S { string a = 1; }\n",
        )
        .unwrap();
        std::fs::write(
            root.join("protos/svc.proto"),
            "syntax = \"proto3\"; package p; import \"secret.proto\";\nmessage T { string b = 1; }\n",
        )
        .unwrap();
        let code = |src: &str| String::from_utf8(scan(src).code).unwrap();
        let env = BTreeMap::new();
        for src in [
            "c.load(['..'], 'secret.proto');\n",
            "c.load(['protos', '..'], 'svc.proto');\n",
        ] {
            let err = loads(src, &code(src), "s.js", &root, &root, &env).unwrap_err();
            assert!(
                format!("{err:#}").contains("outside the script's folder"),
                "{src}: {err:#}"
            );
        }
    }

    #[test]
    fn load_takes_the_files_and_their_imports_from_the_import_paths() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("protos/api")).unwrap();
        std::fs::write(
            dir.path().join("protos/api/svc.proto"),
            "syntax = \"proto3\"; package p; import \"api/types.proto\"; import \"google/protobuf/empty.proto\";\nservice S { rpc M(T) returns (google.protobuf.Empty); }\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("protos/api/types.proto"),
            "syntax = \"proto3\"; package p; message T { string a = 1; }\n",
        )
        .unwrap();
        let src = "const c = new grpc.Client();\n// c.load(['x'], 'y.proto')\nc.load(['protos'], 'api/svc.proto');\nc.loadProtoset('x');\n";
        let got = found(src, dir.path(), &[]).unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].given, "api/svc.proto");
        let names: Vec<&str> = got[0].files.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["api/svc.proto", "api/types.proto"]);

        // __ENV from the build's environment; null means the script's folder.
        let src = "c.load([__ENV.PROTO_DIR], __ENV['FILE']);\n";
        let got = found(
            src,
            Path::new("/"),
            &[
                ("PROTO_DIR", dir.path().join("protos").to_str().unwrap()),
                ("FILE", "api/types.proto"),
            ],
        )
        .unwrap();
        assert_eq!(got[0].files.len(), 1);
        // `__ENV.NAME || 'default'`: the default when NAME is not given, else NAME.
        let src = "c.load([__ENV.PROTO_DIR], __ENV.FILE || 'api/types.proto');\n";
        let protos = dir.path().join("protos");
        let env = [("PROTO_DIR", protos.to_str().unwrap())];
        let got = found(src, Path::new("/"), &env).unwrap();
        assert_eq!(got[0].given, "api/types.proto");
        let env = [
            ("PROTO_DIR", protos.to_str().unwrap()),
            ("FILE", "api/svc.proto"),
        ];
        let got = found(src, Path::new("/"), &env).unwrap();
        assert_eq!(got[0].given, "api/svc.proto");
        let got = found("c.load(null, 'protos/api/types.proto')", dir.path(), &[]).unwrap();
        assert_eq!(got[0].files[0].0, "protos/api/types.proto");
    }

    #[test]
    fn what_cannot_be_bundled_says_what_to_write() {
        let dir = tempfile::tempdir().unwrap();
        let err = found("\nc.load([dir], 'a.proto');\n", dir.path(), &[])
            .unwrap_err()
            .to_string();
        assert!(err.contains("s.js:2") && err.contains("literal"), "{err}");
        let err = found("c.load([__ENV.NOPE], 'a.proto');\n", dir.path(), &[])
            .unwrap_err()
            .to_string();
        assert!(err.contains("-e NOPE="), "{err}");
        let err = found("c.load([], 'missing.proto');\n", dir.path(), &[])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("missing.proto") && err.contains("s.js:1"),
            "{err}"
        );
        std::fs::write(
            dir.path().join("bad.proto"),
            "syntax = \"proto3\";\nmessage {\n",
        )
        .unwrap();
        let err = found("c.load([], 'bad.proto');\n", dir.path(), &[])
            .unwrap_err()
            .to_string();
        assert!(err.contains("bad.proto"), "{err}");
    }
}
