//! k6's secret sources (`--secret-source`), read by a k6 script's `k6/secrets`. The
//! command line parses and loads them once ([`parse_source`], [`set_sources`]); the
//! layer asks for a secret through the contract's `vu.env` under a reserved name
//! ([`ENV_PREFIX`]), which no `-e`, `--env-file` or `[env]` name can take (it begins
//! with a NUL). A value handed out is redacted from everything the host writes from
//! then on (`stderr::redact`), as k6 redacts it.
//!
//! Sources, with k6's syntax (k6 1.1.0 for `file`; `env` as k6's later versions
//! document it):
//! - `file=PATH`, or `file=name=NAME,filename=PATH[,default]`: `KEY=VALUE` lines
//!   (split at the first `=`, the value kept as written);
//! - `env`, or `env=[prefix=PREFIX][,name=NAME][,default]`: the host's environment
//!   variable `PREFIX` + the secret's name, read when the run starts;
//! - `url=urlTemplate=URL[,method=..][,headers.NAME=..][,responsePath=..][,timeout=..]
//!   [,requestsPerMinuteLimit=..][,requestsBurst=..][,maxRetries=..][,retryBackoff=..]
//!   [,name=NAME][,default]`, or `url=config=FILE.json[,name=NAME][,default]` (k6 1.5+):
//!   fetched from that server when a script first asks (`secret_url`).
//!
//! A lone source is the default one; among several, the one marked `default` is.

use std::collections::BTreeMap;
use std::sync::OnceLock;

/// The reserved `vu.env` name of a secret: `ENV_PREFIX` + source + NUL + name (an
/// empty source is the default one). `ENV_PREFIX` + `?` answers the sources' names.
pub(crate) const ENV_PREFIX: &str = "\u{0}k6-secret\u{0}";

/// Name of a source given without `name=`.
pub(crate) const DEFAULT_NAME: &str = "default";

/// Most bytes a secret file may hold.
const MAX_FILE: u64 = 1 << 20;

/// One `--secret-source`, loaded.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SecretSource {
    /// Its name (`name=`, else `default`).
    pub(crate) name: String,
    /// Marked `default` (or alone).
    pub(crate) default: bool,
    /// Its secrets by name.
    pub(crate) values: BTreeMap<String, String>,
    /// A URL source's options (its values are fetched when asked, not held here).
    pub(crate) url: Option<super::secret_url::UrlSource>,
}

static SOURCES: OnceLock<Vec<SecretSource>> = OnceLock::new();

/// Sets the run's sources (the command line, once); a second call is ignored.
pub(crate) fn set_sources(sources: Vec<SecretSource>) {
    let _ = SOURCES.set(sources);
}

/// What the layer's `vu.env(name)` gets for a reserved name; `None` for any other
/// name (an ordinary variable) is never returned: `Some(None)` is "no such secret".
pub(crate) fn lookup(env_name: &str) -> Option<Option<String>> {
    let rest = env_name.strip_prefix(ENV_PREFIX)?;
    let sources = SOURCES.get().map(Vec::as_slice).unwrap_or(&[]);
    if rest == "?" {
        // The sources' names, the default first, for the layer's error messages.
        let mut names: Vec<String> = Vec::new();
        if let Some(d) = default_source(sources) {
            names.push(format!("{}*", d.name));
        }
        names.extend(
            sources
                .iter()
                .filter(|s| !is_default(sources, s))
                .map(|s| s.name.clone()),
        );
        return Some(Some(names.join(",")));
    }
    let (source, name) = rest.split_once('\u{0}')?;
    let source = if source.is_empty() {
        default_source(sources)
    } else {
        sources.iter().find(|s| s.name == source)
    };
    let value = source.and_then(|s| match &s.url {
        Some(url) => super::secret_url::get(&s.name, url, name),
        None => s.values.get(name).cloned(),
    });
    Some(value.filter(|v| crate::stderr::redact::add(v)))
}

fn is_default(sources: &[SecretSource], s: &SecretSource) -> bool {
    default_source(sources).is_some_and(|d| std::ptr::eq(d, s))
}

/// The default source: the one marked, else a lone one.
fn default_source(sources: &[SecretSource]) -> Option<&SecretSource> {
    match sources {
        [only] => Some(only),
        _ => sources.iter().find(|s| s.default),
    }
}

/// Parses one `--secret-source` and loads it (reads its file, or the environment).
pub(crate) fn parse_source(text: &str) -> Result<SecretSource, String> {
    let (kind, options) = match text.split_once('=') {
        Some((k, o)) => (k, o),
        None => (text, ""),
    };
    match kind {
        "file" => file_source(text, options),
        "env" => env_source(text, options),
        "url" => url_source(text, options),
        other => Err(format!(
            "`{text}`: no secret source of type `{other}`; give file=PATH, file=name=NAME,filename=PATH[,default], or env[=prefix=PREFIX][,name=NAME][,default]"
        )),
    }
}

/// `name=..,filename=..,default` options, each key at most once, none unknown.
fn options<'a>(
    text: &str,
    options: &'a str,
    known: &[&str],
) -> Result<(BTreeMap<&'a str, &'a str>, bool), String> {
    let mut out = BTreeMap::new();
    let mut default = false;
    for part in options.split(',').filter(|p| !p.is_empty()) {
        if part == "default" {
            default = true;
            continue;
        }
        let Some((key, value)) = part.split_once('=') else {
            return Err(format!(
                "`{text}`: `{part}` is not KEY=VALUE (options: {}, default)",
                known.join("=, ") + "="
            ));
        };
        if !known.contains(&key) {
            return Err(format!(
                "`{text}`: unknown option `{key}` (options: {}, default)",
                known.join("=, ") + "="
            ));
        }
        if out.insert(key, value).is_some() {
            return Err(format!("`{text}`: `{key}` is given twice"));
        }
    }
    Ok((out, default))
}

/// `file=PATH` or `file=name=NAME,filename=PATH[,default]`.
fn file_source(text: &str, rest: &str) -> Result<SecretSource, String> {
    let keyed =
        rest.starts_with("name=") || rest.starts_with("filename=") || rest.contains(",filename=");
    let (name, path, default) = if keyed {
        let (o, default) = options(text, rest, &["name", "filename"])?;
        let path = o
            .get("filename")
            .filter(|p| !p.is_empty())
            .ok_or_else(|| format!("`{text}`: no filename=PATH"))?;
        (
            o.get("name").copied().unwrap_or(DEFAULT_NAME),
            *path,
            default,
        )
    } else {
        if rest.is_empty() {
            return Err(format!("`{text}`: no file; give file=PATH"));
        }
        (DEFAULT_NAME, rest, false)
    };
    check_name(text, name)?;
    let path = std::path::Path::new(path);
    let size = std::fs::metadata(path)
        .map_err(|e| format!("`{text}`: cannot read {}: {e}", path.display()))?
        .len();
    if size > MAX_FILE {
        return Err(format!(
            "`{text}`: {} is {size} bytes; a secret file may hold at most 1 MiB",
            path.display()
        ));
    }
    let body = std::fs::read_to_string(path)
        .map_err(|e| format!("`{text}`: cannot read {} as text: {e}", path.display()))?;
    let mut values = BTreeMap::new();
    for (i, line) in body.lines().enumerate() {
        // k6 refuses a blank line in the middle ("parsing \"\", needs ="); one is
        // skipped here, as at the end of a file.
        if line.is_empty() {
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            return Err(format!(
                "{}:{}: a line must be KEY=VALUE (k6's file secret source); this one has no `=`",
                path.display(),
                i + 1
            ));
        };
        if key.is_empty() {
            return Err(format!(
                "{}:{}: the line has no KEY before `=`",
                path.display(),
                i + 1
            ));
        }
        if values.insert(key.to_string(), value.to_string()).is_some() {
            return Err(format!(
                "{}:{}: `{key}` is given twice",
                path.display(),
                i + 1
            ));
        }
    }
    Ok(SecretSource {
        name: name.to_string(),
        default,
        values,
        url: None,
    })
}

/// `url=urlTemplate=...` (k6's options) or `url=config=FILE.json`.
fn url_source(text: &str, rest: &str) -> Result<SecretSource, String> {
    let mut given: BTreeMap<String, String> = BTreeMap::new();
    let mut default = false;
    let mut name = DEFAULT_NAME.to_string();
    for part in rest.split(',').filter(|p| !p.is_empty()) {
        if part == "default" {
            default = true;
            continue;
        }
        let Some((key, value)) = part.split_once('=') else {
            return Err(format!(
                "`{text}`: `{part}` is not KEY=VALUE (options: urlTemplate=, method=, headers.NAME=, responsePath=, timeout=, requestsPerMinuteLimit=, requestsBurst=, maxRetries=, retryBackoff=, config=, name=, default)"
            ));
        };
        if key == "name" {
            name = value.to_string();
            continue;
        }
        if key == "config" {
            for (k, v) in url_config(text, value)? {
                given.entry(k).or_insert(v);
            }
            continue;
        }
        if !super::secret_url::OPTIONS.contains(&key) && !key.starts_with("headers.") {
            return Err(format!(
                "`{text}`: unknown option `{key}` (options: {}, headers.NAME, config, name, default)",
                super::secret_url::OPTIONS.join(", ")
            ));
        }
        if given.insert(key.to_string(), value.to_string()).is_some() {
            return Err(format!("`{text}`: `{key}` is given twice"));
        }
    }
    check_name(text, &name)?;
    let url = super::secret_url::UrlSource::from_options(text, &given)?;
    Ok(SecretSource {
        name,
        default,
        values: BTreeMap::new(),
        url: Some(url),
    })
}

/// A URL source's `config=FILE.json`: its options as a JSON object (`headers` an
/// object of names to values); the inline options win over it.
fn url_config(text: &str, path: &str) -> Result<Vec<(String, String)>, String> {
    let body =
        std::fs::read_to_string(path).map_err(|e| format!("`{text}`: cannot read {path}: {e}"))?;
    let json: serde_json::Value =
        serde_json::from_str(&body).map_err(|e| format!("`{text}`: {path} is not JSON: {e}"))?;
    let obj = json
        .as_object()
        .ok_or_else(|| format!("`{text}`: {path} is not a JSON object of options"))?;
    let mut out = Vec::new();
    for (k, v) in obj {
        if k == "headers" {
            let headers = v
                .as_object()
                .ok_or_else(|| format!("`{text}`: {path}: headers is not an object"))?;
            for (h, hv) in headers {
                let hv = hv
                    .as_str()
                    .ok_or_else(|| format!("`{text}`: {path}: header {h} is not a string"))?;
                out.push((format!("headers.{h}"), hv.to_string()));
            }
            continue;
        }
        if !super::secret_url::OPTIONS.contains(&k.as_str()) {
            return Err(format!("`{text}`: {path}: unknown option `{k}`"));
        }
        let value = match v {
            serde_json::Value::String(s) => s.clone(),
            serde_json::Value::Number(n) => n.to_string(),
            _ => return Err(format!("`{text}`: {path}: `{k}` is not a string or number")),
        };
        out.push((k.clone(), value));
    }
    Ok(out)
}

/// `env`, or `env=[prefix=PREFIX][,name=NAME][,default]`: the variables of the host's
/// environment with that prefix, by the rest of their names.
fn env_source(text: &str, rest: &str) -> Result<SecretSource, String> {
    let (o, default) = options(text, rest, &["prefix", "name"])?;
    let prefix = o.get("prefix").copied().unwrap_or("");
    let name = o.get("name").copied().unwrap_or(DEFAULT_NAME);
    check_name(text, name)?;
    let values = std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .filter_map(|(k, v)| Some((k.strip_prefix(prefix)?.to_string(), v)))
        .filter(|(k, _)| !k.is_empty())
        .collect();
    Ok(SecretSource {
        name: name.to_string(),
        default,
        values,
        url: None,
    })
}

fn check_name(text: &str, name: &str) -> Result<(), String> {
    if name.is_empty() || name.contains('\u{0}') || name == "?" {
        return Err(format!("`{text}`: `{name}` is no source name"));
    }
    Ok(())
}

/// Refuses two sources of one name, or two marked `default`.
pub(crate) fn check_sources(sources: &[SecretSource]) -> Result<(), String> {
    let mut seen = std::collections::BTreeSet::new();
    for s in sources {
        if !seen.insert(s.name.as_str()) {
            return Err(format!(
                "two --secret-source are named `{}`; give each its own name=",
                s.name
            ));
        }
    }
    if sources.iter().filter(|s| s.default).count() > 1 {
        return Err("more than one --secret-source is marked default; mark one".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_sources_parse_as_k6s() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.secret");
        std::fs::write(&path, "cool=a=b\nother= spaced \n").unwrap();
        let p = path.display();
        let s = parse_source(&format!("file={p}")).unwrap();
        assert_eq!((s.name.as_str(), s.default), ("default", false));
        assert_eq!(s.values["cool"], "a=b");
        assert_eq!(s.values["other"], " spaced ");
        let s = parse_source(&format!("file=name=one,filename={p},default")).unwrap();
        assert_eq!((s.name.as_str(), s.default), ("one", true));
        std::fs::write(&path, "cool=a\nnoeq\n").unwrap();
        let e = parse_source(&format!("file={p}")).unwrap_err();
        assert!(
            e.ends_with(
                ":2: a line must be KEY=VALUE (k6's file secret source); this one has no `=`"
            ),
            "{e}"
        );
        for (bad, want) in [
            ("file=", "no file"),
            ("file=name=x", "no filename=PATH"),
            (
                "file=name=x,filename=/nonexistent/f",
                "cannot read /nonexistent/f",
            ),
            ("file=name=x,filname=y", "unknown option `filname`"),
            ("vault=x", "no secret source of type `vault`"),
            ("url=https://x", "is not KEY=VALUE"),
            ("url=method=GET", "no urlTemplate"),
            ("env=prefix=A,prefix=B", "given twice"),
        ] {
            let e = parse_source(bad).unwrap_err();
            assert!(e.contains(want), "{bad}: {e}");
        }
    }

    #[test]
    fn the_default_source_is_the_lone_or_the_marked_one() {
        let source = |name: &str, default| SecretSource {
            name: name.into(),
            default,
            values: BTreeMap::new(),
            url: None,
        };
        assert_eq!(default_source(&[source("a", false)]).unwrap().name, "a");
        assert!(default_source(&[source("a", false), source("b", false)]).is_none());
        assert_eq!(
            default_source(&[source("a", false), source("b", true)])
                .unwrap()
                .name,
            "b"
        );
        assert!(check_sources(&[source("a", false), source("a", false)]).is_err());
        assert!(check_sources(&[source("a", true), source("b", true)]).is_err());
    }
}
