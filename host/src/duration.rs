//! Parses and prints durations in k6's notation: `500ms`, `30s`, `1m30s`, `1.5h`.

use std::time::Duration;

/// Why a duration could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid duration {input:?}: {reason} (write it like 500ms, 30s, 1m30s or 2h)")]
pub struct DurationError {
    /// The text that was given.
    pub input: String,
    /// What is wrong with it.
    pub reason: String,
}

/// Parses a duration such as `250ms`, `10s`, `1m30s`, `1.5m` or `2h`.
///
/// Every number needs a unit (`us`, `ms`, `s`, `m`, `h`); a bare `0` is accepted. The
/// notation is read by the demo target's parser (the one both command lines share).
pub fn parse_duration(input: &str) -> Result<Duration, DurationError> {
    demo_target::args::duration_or_reason(input).map_err(|reason| DurationError {
        input: input.to_string(),
        reason: reason.to_string(),
    })
}

/// Formats a duration compactly for people: `1m30s`, `250ms`, `2h0m0s`.
pub fn format_duration(d: Duration) -> String {
    let ms = d.as_millis();
    if ms < 1000 {
        return format!("{ms}ms");
    }
    let secs = d.as_secs_f64();
    let hours = (secs / 3600.0).floor() as u64;
    let minutes = ((secs % 3600.0) / 60.0).floor() as u64;
    let seconds = secs % 60.0;
    let seconds = if (seconds - seconds.round()).abs() < 1e-9 {
        format!("{}s", seconds.round() as u64)
    } else {
        format!("{seconds:.1}s")
    };
    match (hours, minutes) {
        (0, 0) => seconds,
        (0, m) => format!("{m}m{seconds}"),
        (h, m) => format!("{h}h{m}m{seconds}"),
    }
}

/// `d` as a config value that reads back as exactly `d`: [`format_duration`]'s text
/// when it does (`30s`, `1m30s`), else whole milliseconds or microseconds. What the
/// command line sets is written into the config the results keep and the workers read,
/// so a rounding there (`1250ms` shown as `1.2s`) would make them disagree with the run.
pub(crate) fn exact_text(d: Duration) -> String {
    let candidates = [
        Some(format_duration(d)),
        d.subsec_nanos()
            .is_multiple_of(1_000_000)
            .then(|| format!("{}ms", d.as_millis())),
        d.subsec_nanos()
            .is_multiple_of(1_000)
            .then(|| format!("{}us", d.as_micros())),
        Some(format!("{}s", d.as_secs_f64())),
    ];
    candidates
        .into_iter()
        .flatten()
        .find(|text| parse_duration(text).ok() == Some(d))
        .unwrap_or_else(|| format_duration(d))
}

/// [`exact_text`] as a TOML value.
pub(crate) fn exact_value(d: Duration) -> toml::Value {
    toml::Value::String(exact_text(d))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_k6_notation() {
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("30s").unwrap(), Duration::from_secs(30));
        assert_eq!(parse_duration("1m30s").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("1.5m").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("2h").unwrap(), Duration::from_secs(7200));
        assert_eq!(parse_duration("0").unwrap(), Duration::ZERO);
        assert_eq!(parse_duration("100us").unwrap(), Duration::from_micros(100));
    }

    #[test]
    fn rejects_bad_input_with_reason() {
        assert!(parse_duration("10").unwrap_err().reason.contains("no unit"));
        assert!(parse_duration("10x")
            .unwrap_err()
            .reason
            .contains("unknown unit"));
        assert!(parse_duration("").unwrap_err().reason.contains("empty"));
        assert!(parse_duration("s").unwrap_err().reason.contains("number"));
        assert!(parse_duration("1..2s").is_err());
    }

    #[test]
    fn formats_round_trip() {
        for text in ["250ms", "30s", "1m30s", "2h0m0s"] {
            let d = parse_duration(text).unwrap();
            assert_eq!(format_duration(d), text);
        }
    }
}

/// Property tests (moved from tests/properties.rs): whatever the text, a value or an
/// error, never a panic. Longer runs: `PROPTEST_CASES=200000 cargo test -p host --lib
/// properties`. Saved failing cases: host/proptest-regressions/duration.txt.
#[cfg(test)]
mod properties {
    use super::{exact_text, format_duration, parse_duration};
    use proptest::prelude::*;
    use std::time::Duration;

    proptest! {
        #[test]
        fn duration_parser_never_panics(text in "\\PC{0,24}") {
            if let Ok(d) = parse_duration(&text) {
                prop_assert!(d.as_secs_f64() <= 1e9);
            }
        }

        #[test]
        fn durations_in_k6_notation_parse(parts in proptest::collection::vec((0u32..1000, prop_oneof!["ms", "s", "m", "h", "us"]), 1..4)) {
            let text: String = parts.iter().map(|(n, u)| format!("{n}{u}")).collect();
            let expected: f64 = parts.iter().map(|(n, u)| *n as f64 * match u.as_str() {
                "us" => 1e-6, "ms" => 1e-3, "s" => 1.0, "m" => 60.0, _ => 3600.0,
            }).sum();
            let d = parse_duration(&text).unwrap();
            prop_assert!((d.as_secs_f64() - expected).abs() < 1e-6, "{} -> {:?}", text, d);
        }

        #[test]
        fn formatted_durations_parse_back(ms in 0u64..1000, secs in 1u64..400_000) {
            let sub_second = Duration::from_millis(ms);
            prop_assert_eq!(parse_duration(&format_duration(sub_second)).unwrap(), sub_second);
            let whole = Duration::from_secs(secs);
            prop_assert_eq!(parse_duration(&format_duration(whole)).unwrap(), whole);
        }
    }

    #[test]
    fn exact_text_reads_back_as_the_duration() {
        for text in [
            "30s", "1m30s", "500ms", "1.5s", "1250ms", "100us", "2h", "0", "1.0001s",
        ] {
            let d = parse_duration(text).unwrap();
            assert_eq!(parse_duration(&exact_text(d)).unwrap(), d, "{text}");
        }
        // Unchanged where the compact text is exact; whole milliseconds where it rounds.
        assert_eq!(exact_text(Duration::from_secs(90)), "1m30s");
        assert_eq!(exact_text(Duration::from_millis(1500)), "1.5s");
        let d = parse_duration("1250ms").unwrap();
        assert_eq!(format_duration(d), "1.2s");
        assert_eq!(exact_text(d), "1250ms");
    }
}
