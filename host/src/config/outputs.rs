//! The `[outputs]` section: how the streaming outputs (`--out KIND=TARGET`) write.
//!
//! ```toml
//! [outputs.prometheus]
//! trend_as = "percentiles"   # or "native": trends as native histograms
//! max_series = 1000          # series sent at most; more are left out, with a warning
//! prefix = "k6_"             # before every metric name, as k6's remote write
//! ```

use crate::table::{unknown_message, ConfigError, TableReader};

/// How trends go out to Prometheus.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TrendAs {
    /// One gauge per statistic (`_p95`, `_avg`, `_count`, ...), as k6's default.
    #[default]
    Percentiles,
    /// One native (sparse, exponential) histogram per series; the Prometheus must run
    /// with `--enable-feature=native-histograms`.
    Native,
}

/// `[outputs.prometheus]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrometheusOptions {
    /// How trends are sent.
    pub trend_as: TrendAs,
    /// Series sent at most (each metric × tag combination counts once).
    pub max_series: usize,
    /// Put before every metric name.
    pub prefix: String,
}

impl Default for PrometheusOptions {
    fn default() -> Self {
        Self {
            trend_as: TrendAs::Percentiles,
            max_series: 1000,
            prefix: "k6_".into(),
        }
    }
}

/// `[outputs]`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OutputsConfig {
    /// `[outputs.prometheus]`.
    pub prometheus: PrometheusOptions,
}

/// Reads `[outputs]`, or the defaults when it is absent.
pub(crate) fn parse(source: &toml::Table) -> Result<OutputsConfig, ConfigError> {
    let mut config = OutputsConfig::default();
    let Some(value) = source.get("outputs") else {
        return Ok(config);
    };
    let table = value.as_table().ok_or_else(|| ConfigError {
        path: "outputs".into(),
        message: "must be a table: write it as [outputs.prometheus]".into(),
    })?;
    for (key, value) in table {
        if key != "prometheus" {
            return Err(ConfigError {
                path: format!("outputs.{key}"),
                message: unknown_message("output", key, &["prometheus"]),
            });
        }
        let table = value.as_table().ok_or_else(|| ConfigError {
            path: "outputs.prometheus".into(),
            message: "must be a table: write it as [outputs.prometheus]".into(),
        })?;
        let p = &mut config.prometheus;
        let mut r = TableReader::new("outputs.prometheus", table);
        if let Some(text) = r.string("trend_as")? {
            p.trend_as = match text.as_str() {
                "percentiles" => TrendAs::Percentiles,
                "native" => TrendAs::Native,
                _ => {
                    return Err(r.error(
                        "trend_as",
                        format!("must be \"percentiles\" or \"native\", got {text:?}"),
                    ))
                }
            };
        }
        if let Some(n) = r.uint("max_series")? {
            if n == 0 {
                return Err(r.error("max_series", "must be at least 1"));
            }
            p.max_series = n as usize;
        }
        if let Some(prefix) = r.string("prefix")? {
            if !prefix
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
                || prefix.starts_with(|c: char| c.is_ascii_digit())
            {
                return Err(r.error(
                    "prefix",
                    "may hold only letters, digits, `_` and `:`, and not start with a digit",
                ));
            }
            p.prefix = prefix;
        }
        r.finish()?;
    }
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_text(text: &str) -> Result<OutputsConfig, ConfigError> {
        parse(&toml::from_str(text).unwrap())
    }

    #[test]
    fn reads_prometheus_options_and_refuses_typos() {
        assert_eq!(parse_text("").unwrap(), OutputsConfig::default());
        let c = parse_text(
            "[outputs.prometheus]\ntrend_as = \"native\"\nmax_series = 5\nprefix = \"lt_\"",
        )
        .unwrap();
        assert_eq!(c.prometheus.trend_as, TrendAs::Native);
        assert_eq!(c.prometheus.max_series, 5);
        assert_eq!(c.prometheus.prefix, "lt_");
        let e = parse_text("[outputs.prometheus]\ntrend_as = \"avg\"").unwrap_err();
        assert!(e.message.contains("\"percentiles\" or \"native\""), "{e:?}");
        let e = parse_text("[outputs.prometheus]\ntrend = \"native\"").unwrap_err();
        assert!(e.path.contains("trend"), "{e:?}");
        let e = parse_text("[outputs.promethus]").unwrap_err();
        assert!(e.message.contains("prometheus"), "{e:?}");
    }
}
