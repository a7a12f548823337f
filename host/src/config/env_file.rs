//! `--env-file FILE`: plugin environment variables read from a dotenv-style file.
//!
//! One `KEY=VALUE` a line; blank lines and lines starting with `#` are skipped; an
//! optional `export ` prefix is allowed (so the file can be sourced by a shell too).
//! A value in double quotes may hold `#`, spaces and the escapes `\n`, `\t`, `\"`,
//! `\\`; a value in single quotes is taken as written; an unquoted value ends at ` #`
//! (a comment) and is trimmed. Every bad line is reported, with its number.

use std::path::Path;

/// Reads the file; errors name the file and line, and say what to fix.
pub(crate) fn read(path: &Path) -> Result<Vec<(String, String)>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("--env-file {}: cannot read it: {e}", path.display()))?;
    parse(&text).map_err(|lines| {
        let mut message = format!("--env-file {}:", path.display());
        for line in lines {
            message.push_str(&format!("\n  {line}"));
        }
        message
    })
}

/// Parses the text of an env file, in order; the later of two equal keys wins when the
/// pairs are applied. On error, one message per bad line (`line 3: ...`).
pub(crate) fn parse(text: &str) -> Result<Vec<(String, String)>, Vec<String>> {
    let mut pairs = Vec::new();
    let mut errors = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        match parse_line(line) {
            Ok(pair) => pairs.push(pair),
            Err(e) => errors.push(format!("line {}: {e}", i + 1)),
        }
    }
    if errors.is_empty() {
        Ok(pairs)
    } else {
        Err(errors)
    }
}

fn parse_line(line: &str) -> Result<(String, String), String> {
    let line = line.strip_prefix("export ").unwrap_or(line);
    let Some((key, value)) = line.split_once('=') else {
        return Err(format!("expected KEY=VALUE, got {line:?}"));
    };
    let key = key.trim();
    if key.is_empty() {
        return Err(format!("empty key in {line:?}"));
    }
    if !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(format!("key {key:?} may hold only letters, digits and `_`"));
    }
    Ok((key.to_string(), value_of(value.trim_start())?))
}

fn value_of(text: &str) -> Result<String, String> {
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
        return Err("a double quote is not closed (values span one line)".into());
    }
    if let Some(rest) = text.strip_prefix('\'') {
        return match rest.split_once('\'') {
            Some((value, after)) => after_quote(after, value.to_string()),
            None => Err("a single quote is not closed (values span one line)".into()),
        };
    }
    let value = match text.find(" #") {
        Some(at) => &text[..at],
        None => text,
    };
    Ok(value.trim_end().to_string())
}

/// After a closing quote only spaces and a comment may follow.
fn after_quote(after: &str, value: String) -> Result<String, String> {
    let after = after.trim_start();
    if after.is_empty() || after.starts_with('#') {
        Ok(value)
    } else {
        Err(format!(
            "unexpected {after:?} after the closing quote; quote the whole value"
        ))
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
        assert_eq!(errors.len(), 4, "{errors:?}");
        assert!(
            errors[0].starts_with("line 2: expected KEY=VALUE"),
            "{errors:?}"
        );
        assert!(errors[1].starts_with("line 3: empty key"), "{errors:?}");
        assert!(errors[2].contains("not closed"), "{errors:?}");
        assert!(errors[3].starts_with("line 5: key"), "{errors:?}");
    }
}
