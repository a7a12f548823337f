//! The `[browser]` section: a run with browser scenarios (k6's `k6/browser`). Its
//! presence makes the host start a browser before the run, so a browser that is
//! missing or cannot start is an error before the first iteration; the k6 layer writes
//! it when a scenario sets `options.browser.type`.
//!
//! ```toml
//! [browser]
//! processes = 1   # Chromium processes shared by all VUs (each VU iteration gets a
//!                 # context of its own in one of them)
//! ```

use crate::table::{ConfigError, TableReader};

/// Most browser processes a run may start.
const MAX_PROCESSES: u64 = 64;

/// The run's browser settings.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct BrowserOptions {
    /// Whether the run has browser scenarios (the section is present).
    pub enabled: bool,
    /// Browser processes shared by the VUs (at least 1).
    pub processes: usize,
}

/// Reads `[browser]`; absent, browsers start only when a plugin first asks for one.
pub(crate) fn parse(source: &toml::Table) -> Result<BrowserOptions, ConfigError> {
    let Some(value) = source.get("browser") else {
        return Ok(BrowserOptions {
            enabled: false,
            processes: 1,
        });
    };
    let table = value.as_table().ok_or_else(|| ConfigError {
        path: "browser".into(),
        message: "must be a table: write it as [browser]".into(),
    })?;
    let mut r = TableReader::new("browser", table);
    let processes = match r.uint("processes")? {
        None => 1,
        Some(n) if (1..=MAX_PROCESSES).contains(&n) => n as usize,
        Some(_) => {
            return Err(r.error(
                "processes",
                format!("must be between 1 and {MAX_PROCESSES}"),
            ))
        }
    };
    r.finish()?;
    Ok(BrowserOptions {
        enabled: true,
        processes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_text(text: &str) -> Result<BrowserOptions, ConfigError> {
        parse(&toml::from_str(text).unwrap())
    }

    #[test]
    fn present_means_enabled() {
        assert!(!parse_text("").unwrap().enabled);
        let o = parse_text("[browser]").unwrap();
        assert!(o.enabled);
        assert_eq!(o.processes, 1);
        assert_eq!(parse_text("[browser]\nprocesses = 3").unwrap().processes, 3);
        let e = parse_text("[browser]\nprocesses = 0").unwrap_err();
        assert_eq!(e.path, "browser.processes");
        let e = parse_text("[browser]\nprocess = 2").unwrap_err();
        assert!(e.message.contains("did you mean `processes`"), "{e}");
    }
}
