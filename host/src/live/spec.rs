//! `--out`, as k6 takes it: `--out KIND=TARGET` names a streaming output when KIND is
//! one this host knows (`csv`, `json`, `prometheus-rw`); any other value is the folder
//! under which the results folder is made, as before.

use std::fmt;
use std::path::PathBuf;

/// The kinds of streaming output, by the name `--out` gives them.
pub(crate) const KINDS: &[&str] = &["csv", "json", "prometheus-rw"];

/// One streaming output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OutputSpec {
    /// k6's CSV: one row per series per second (`.gz`: gzipped).
    Csv(PathBuf),
    /// k6's JSON lines: `Metric` declarations and one `Point` per series per second.
    Json(PathBuf),
    /// Prometheus remote write to this URL (`http://host:9090/api/v1/write`).
    PrometheusRw(String),
}

impl fmt::Display for OutputSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Csv(p) => write!(f, "csv={}", p.display()),
            Self::Json(p) => write!(f, "json={}", p.display()),
            Self::PrometheusRw(u) => write!(f, "prometheus-rw={u}"),
        }
    }
}

/// Why an `--out` value of a known kind is refused; each message says what to write.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum OutError {
    /// `KIND=` with nothing after it.
    #[error("--out {value}: say where the {kind} output goes (--out {kind}={})", example(.kind))]
    NoTarget {
        /// The whole value.
        value: String,
        /// The output's kind.
        kind: String,
    },
    /// A remote-write target that is not a URL.
    #[error(
        "--out {value}: {target:?} is not a URL ({reason}); write it as --out prometheus-rw=http://127.0.0.1:9090/api/v1/write"
    )]
    NotAUrl {
        /// The whole value.
        value: String,
        /// What follows `=`.
        target: String,
        /// The URL parser's reason.
        reason: url::ParseError,
    },
    /// A remote-write URL of another scheme.
    #[error("--out {kind}=…: a remote-write URL is http:// or https:// (got {scheme}://)")]
    Scheme {
        /// The output's kind.
        kind: String,
        /// The URL's scheme.
        scheme: String,
    },
}

/// Parses one `--out` value: an output when it starts with a known `KIND=`, else a
/// folder. A known kind with nothing after `=` is an error that says what to write.
pub(crate) fn parse_one(value: &str) -> Result<Either, OutError> {
    let Some((kind, target)) = value.split_once('=') else {
        return Ok(Either::Folder(PathBuf::from(value)));
    };
    if !KINDS.contains(&kind) {
        return Ok(Either::Folder(PathBuf::from(value)));
    }
    if target.trim().is_empty() {
        return Err(OutError::NoTarget {
            value: value.to_owned(),
            kind: kind.to_owned(),
        });
    }
    Ok(Either::Output(match kind {
        "csv" => OutputSpec::Csv(PathBuf::from(target)),
        "json" => OutputSpec::Json(PathBuf::from(target)),
        _ => {
            let url = url::Url::parse(target).map_err(|reason| OutError::NotAUrl {
                value: value.to_owned(),
                target: target.to_owned(),
                reason,
            })?;
            if !matches!(url.scheme(), "http" | "https") {
                return Err(OutError::Scheme {
                    kind: kind.to_owned(),
                    scheme: url.scheme().to_owned(),
                });
            }
            OutputSpec::PrometheusRw(target.to_string())
        }
    }))
}

fn example(kind: &str) -> &'static str {
    match kind {
        "csv" => "metrics.csv.gz",
        "json" => "metrics.json",
        _ => "http://127.0.0.1:9090/api/v1/write",
    }
}

/// One `--out` value, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Either {
    /// The results folder.
    Folder(PathBuf),
    /// A streaming output.
    Output(OutputSpec),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_kinds_are_outputs_and_the_rest_is_the_folder() {
        let one = |v| parse_one(v).unwrap();
        assert_eq!(one("runs"), Either::Folder("runs".into()));
        assert_eq!(
            one("csv=m.csv.gz"),
            Either::Output(OutputSpec::Csv("m.csv.gz".into()))
        );
        assert_eq!(
            one("json=/tmp/m.json"),
            Either::Output(OutputSpec::Json("/tmp/m.json".into()))
        );
        assert_eq!(
            one("prometheus-rw=http://127.0.0.1:9090/api/v1/write"),
            Either::Output(OutputSpec::PrometheusRw(
                "http://127.0.0.1:9090/api/v1/write".into()
            ))
        );
        // A folder whose name has `=` but no known kind stays a folder.
        assert_eq!(one("a=b"), Either::Folder("a=b".into()));
    }

    #[test]
    fn bad_values_say_what_to_write() {
        let e = parse_one("csv=").unwrap_err();
        assert_eq!(
            e.to_string(),
            "--out csv=: say where the csv output goes (--out csv=metrics.csv.gz)"
        );
        let e = parse_one("prometheus-rw=nope").unwrap_err();
        assert_eq!(
            e.to_string(),
            "--out prometheus-rw=nope: \"nope\" is not a URL (relative URL without a base); \
             write it as --out prometheus-rw=http://127.0.0.1:9090/api/v1/write"
        );
        let e = parse_one("prometheus-rw=ftp://x/api/v1/write").unwrap_err();
        assert_eq!(
            e.to_string(),
            "--out prometheus-rw=…: a remote-write URL is http:// or https:// (got ftp://)"
        );
        assert!(parse_one("prometheus-rw=https://x/api/v1/write").is_ok());
    }
}
