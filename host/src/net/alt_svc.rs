//! `Alt-Svc` (RFC 7838) as far as HTTP/3 needs it: the `h3` alternative an origin
//! names for itself, how long it holds (`ma`), and `clear`. Other protocols (`h3-29`,
//! `h2`) are skipped, as a client that speaks only final HTTP/3 skips them.

use std::time::Duration;

/// The default freshness of an alternative without `ma` (RFC 7838: 24 hours).
const DEFAULT_MAX_AGE: Duration = Duration::from_secs(24 * 3600);

/// What an `Alt-Svc` field says about HTTP/3.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum AltSvc {
    /// `clear`: forget the origin's alternatives.
    Clear,
    /// `h3="host:port"` (host empty: the origin's own).
    H3 {
        /// Another host, if named.
        host: Option<String>,
        /// The UDP port.
        port: u16,
        /// How long the alternative holds.
        max_age: Duration,
    },
}

/// The `h3` alternative of an `Alt-Svc` field value, `clear`, or `None` when it names
/// no HTTP/3 alternative (or is malformed: an alternative is only ever a hint).
pub(crate) fn parse(value: &str) -> Option<AltSvc> {
    let value = value.trim();
    if value.eq_ignore_ascii_case("clear") {
        return Some(AltSvc::Clear);
    }
    value.split(',').find_map(|entry| {
        let mut parts = entry.split(';');
        let (protocol, authority) = parts.next()?.trim().split_once('=')?;
        if protocol.trim() != "h3" {
            return None;
        }
        let authority = authority.trim().strip_prefix('"')?.strip_suffix('"')?;
        let (host, port) = authority.rsplit_once(':')?;
        let port: u16 = port.parse().ok().filter(|p| *p != 0)?;
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let max_age = parts
            .filter_map(|p| p.trim().strip_prefix("ma="))
            .find_map(|n| n.trim().parse().ok())
            .map_or(DEFAULT_MAX_AGE, Duration::from_secs);
        Some(AltSvc::H3 {
            host: (!host.is_empty()).then(|| host.to_ascii_lowercase()),
            port,
            max_age,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_h3_alternative() {
        assert_eq!(
            parse(r#"h3=":4433"; ma=60"#),
            Some(AltSvc::H3 {
                host: None,
                port: 4433,
                max_age: Duration::from_secs(60)
            })
        );
        assert_eq!(
            parse(r#"h3-29=":1", h2="x:2", h3="Alt.Example:443""#),
            Some(AltSvc::H3 {
                host: Some("alt.example".into()),
                port: 443,
                max_age: DEFAULT_MAX_AGE
            })
        );
        assert_eq!(parse("clear"), Some(AltSvc::Clear));
        for none in [r#"h2=":443""#, "h3=:443", r#"h3=":0""#, r#"h3="x""#, ""] {
            assert_eq!(parse(none), None, "{none}");
        }
    }
}
