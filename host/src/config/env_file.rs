//! `--env-file FILE`: plugin environment variables read from a dotenv-style file.
//!
//! One `KEY=VALUE` a line; blank lines and lines starting with `#` are skipped; an
//! optional `export ` prefix is allowed (so the file can be sourced by a shell too).
//! A value in double quotes may hold `#`, spaces and the escapes `\n`, `\t`, `\"`,
//! `\\`; a value in single quotes is taken as written; an unquoted value ends at ` #`
//! (a comment) and is trimmed. Every bad line is reported, with its number.

use std::fmt;
use std::path::{Path, PathBuf};

/// Why an env file gives no variables.
#[derive(Debug, thiserror::Error)]
pub(crate) enum EnvFileError {
    /// The file cannot be read.
    #[error("--env-file {}: cannot read it: {reason}", .path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The system's reason.
        reason: std::io::Error,
    },
    /// Lines that do not parse, each on a line of its own under the file's name.
    #[error("--env-file {}:{}", .path.display(), Indented(.lines))]
    Lines {
        /// The file.
        path: PathBuf,
        /// Every bad line, in order.
        lines: Vec<LineError>,
    },
}

/// Each error on a line of its own, indented.
struct Indented<'a>(&'a [LineError]);

impl fmt::Display for Indented<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.iter().try_for_each(|line| write!(f, "\n  {line}"))
    }
}

/// A bad line: its number (from 1) and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {number}: {problem}")]
pub(crate) struct LineError {
    /// The line's number, from 1.
    pub number: usize,
    /// What is wrong with it.
    pub problem: LineProblem,
}

/// What is wrong with a line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum LineProblem {
    /// No `=`.
    #[error("expected KEY=VALUE, got {0:?}")]
    NoEquals(String),
    /// Nothing before the `=`.
    #[error("empty key in {0:?}")]
    EmptyKey(String),
    /// A key with characters an environment name should not have.
    #[error("key {0:?} may hold only letters, digits and `_`")]
    BadKey(String),
    /// A double-quoted value without its closing quote.
    #[error("a double quote is not closed (values span one line)")]
    OpenDoubleQuote,
    /// A single-quoted value without its closing quote.
    #[error("a single quote is not closed (values span one line)")]
    OpenSingleQuote,
    /// Text after the closing quote that is not a comment.
    #[error("unexpected {0:?} after the closing quote; quote the whole value")]
    AfterQuote(String),
}

/// Reads the file; errors name the file and line, and say what to fix.
pub(crate) fn read(path: &Path) -> Result<Vec<(String, String)>, EnvFileError> {
    let text = std::fs::read_to_string(path).map_err(|reason| EnvFileError::Read {
        path: path.to_owned(),
        reason,
    })?;
    parse(&text).map_err(|lines| EnvFileError::Lines {
        path: path.to_owned(),
        lines,
    })
}

/// Parses the text of an env file, in order; the later of two equal keys wins when the
/// pairs are applied. On error, every bad line.
pub(crate) fn parse(text: &str) -> Result<Vec<(String, String)>, Vec<LineError>> {
    let mut pairs = Vec::new();
    let mut errors = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        match parse_line(line) {
            Ok(pair) => pairs.push(pair),
            Err(problem) => errors.push(LineError {
                number: i + 1,
                problem,
            }),
        }
    }
    if errors.is_empty() {
        Ok(pairs)
    } else {
        Err(errors)
    }
}

fn parse_line(line: &str) -> Result<(String, String), LineProblem> {
    let line = line.strip_prefix("export ").unwrap_or(line);
    let Some((key, value)) = line.split_once('=') else {
        return Err(LineProblem::NoEquals(line.to_owned()));
    };
    let key = key.trim();
    if key.is_empty() {
        return Err(LineProblem::EmptyKey(line.to_owned()));
    }
    if !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(LineProblem::BadKey(key.to_owned()));
    }
    Ok((key.to_string(), value_of(value.trim_start())?))
}

fn value_of(text: &str) -> Result<String, LineProblem> {
    if let Some(rest) = text.strip_prefix('"') {
        let mut out = String::new();
        let mut chars = rest.chars();
        while let Some(c) = chars.next() {
            match c {
                '"' => return after_quote(chars.as_str(), out),
                '\\' => match chars.next() {
                    Some('n') => out.push('\n'),
                    Some('t') => out.push('\t'),
                    Some(other @ ('"' | '\\' | '$')) => out.push(other),
                    Some(other) => {
                        out.push('\\');
                        out.push(other);
                    }
                    None => break,
                },
                c => out.push(c),
            }
        }
        return Err(LineProblem::OpenDoubleQuote);
    }
    if let Some(rest) = text.strip_prefix('\'') {
        return match rest.split_once('\'') {
            Some((value, after)) => after_quote(after, value.to_string()),
            None => Err(LineProblem::OpenSingleQuote),
        };
    }
    let value = match text.find(" #") {
        Some(at) => &text[..at],
        None => text,
    };
    Ok(value.trim_end().to_string())
}

/// After a closing quote only spaces and a comment may follow.
fn after_quote(after: &str, value: String) -> Result<String, LineProblem> {
    let after = after.trim_start();
    if after.is_empty() || after.starts_with('#') {
        Ok(value)
    } else {
        Err(LineProblem::AfterQuote(after.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_comments_quotes_and_exports() {
        let text = "# a comment\n\nA=1\nexport B = two words # note\nC=\"x # not a comment\\n\"\nD='$raw \\n'\nE=\nA=3\n";
        let pairs = parse(text).unwrap();
        let get = |k: &str| {
            pairs
                .iter()
                .rev()
                .find(|(key, _)| key == k)
                .map(|(_, v)| v.as_str())
        };
        assert_eq!(get("A"), Some("3"), "the later line wins");
        assert_eq!(get("B"), Some("two words"));
        assert_eq!(get("C"), Some("x # not a comment\n"));
        assert_eq!(get("D"), Some("$raw \\n"));
        assert_eq!(get("E"), Some(""));
    }

    #[test]
    fn reports_every_bad_line_by_number() {
        let errors = parse("OK=1\nno equals\n=x\nQ=\"open\nBAD KEY=1\n").unwrap_err();
        let messages: Vec<String> = errors.iter().map(ToString::to_string).collect();
        assert_eq!(
            messages,
            [
                "line 2: expected KEY=VALUE, got \"no equals\"",
                "line 3: empty key in \"=x\"",
                "line 4: a double quote is not closed (values span one line)",
                "line 5: key \"BAD KEY\" may hold only letters, digits and `_`",
            ]
        );
        assert_eq!(errors[2].problem, LineProblem::OpenDoubleQuote);
    }

    #[test]
    fn a_file_error_names_the_file_and_lists_its_lines() {
        let path = std::env::temp_dir().join(format!("env-file-test-{}", std::process::id()));
        std::fs::write(&path, "A=1\nB='x' y\nC\n").unwrap();
        let err = read(&path).unwrap_err();
        std::fs::remove_file(&path).unwrap();
        assert_eq!(
            err.to_string(),
            format!(
                "--env-file {}:\n  line 2: unexpected \"y\" after the closing quote; quote the \
                 whole value\n  line 3: expected KEY=VALUE, got \"C\"",
                path.display()
            )
        );
        let missing = read(Path::new("/nonexistent/env")).unwrap_err();
        assert!(matches!(missing, EnvFileError::Read { .. }));
        assert!(
            missing
                .to_string()
                .starts_with("--env-file /nonexistent/env: cannot read it: "),
            "{missing}"
        );
    }
}
