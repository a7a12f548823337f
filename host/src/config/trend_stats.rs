//! `--summary-trend-stats "avg,min,med,max,p(90),p(95),p(99.9)"`: which trend columns
//! summary.txt prints, in the order given (k6's option of the same name). Only the
//! figures a summary keeps can be named; anything else is refused with the list.
//!
//! The run config names them too, so that a k6 script's `summaryTrendStats` option
//! (which becomes its default config) holds; the flag overrides the config:
//!
//! ```toml
//! [summary]
//! trend_stats = ["avg", "med", "p(95)", "p(99.9)"]   # or one string: "avg,med,p(95)"
//! ```

use crate::metrics::summary::TrendStats;
use crate::table::{ConfigError, TableReader};

/// One column of a trend line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrendStat {
    /// Mean.
    Avg,
    /// Smallest.
    Min,
    /// Median.
    Med,
    /// Largest.
    Max,
    /// 50th percentile: the median under k6's name for it, which k6 scripts'
    /// `summaryTrendStats` often list beside `med`.
    P50,
    /// 90th percentile.
    P90,
    /// 95th percentile.
    P95,
    /// 99th percentile.
    P99,
    /// 99.9th percentile.
    P999,
    /// Samples.
    Count,
}

/// The columns printed when the flag is not given (what summary.txt always showed).
pub(crate) const DEFAULT: &[TrendStat] = &[
    TrendStat::Avg,
    TrendStat::Min,
    TrendStat::Med,
    TrendStat::P90,
    TrendStat::P95,
    TrendStat::P99,
    TrendStat::Max,
    TrendStat::Count,
];

/// Every column, as written on the command line.
const ALL: &[(TrendStat, &str)] = &[
    (TrendStat::Avg, "avg"),
    (TrendStat::Min, "min"),
    (TrendStat::Med, "med"),
    (TrendStat::Max, "max"),
    (TrendStat::P50, "p(50)"),
    (TrendStat::P90, "p(90)"),
    (TrendStat::P95, "p(95)"),
    (TrendStat::P99, "p(99)"),
    (TrendStat::P999, "p(99.9)"),
    (TrendStat::Count, "count"),
];

impl TrendStat {
    /// The column's label, as the flag names it (`p(95)`).
    pub fn label(self) -> &'static str {
        ALL.iter()
            .find(|(s, _)| *s == self)
            .map(|(_, l)| *l)
            .unwrap_or("?")
    }

    /// The column's value in `t`.
    pub fn value(self, t: &TrendStats) -> f64 {
        match self {
            Self::Avg => t.avg,
            Self::Min => t.min,
            Self::Med | Self::P50 => t.med,
            Self::Max => t.max,
            Self::P90 => t.p90,
            Self::P95 => t.p95,
            Self::P99 => t.p99,
            Self::P999 => t.p999,
            Self::Count => t.count as f64,
        }
    }
}

/// Why a `--summary-trend-stats` list is refused; each message lists the columns.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum TrendStatsError {
    /// An empty item (`avg,,max`).
    #[error("empty column in {0:?}; give a comma-separated list of: {known}", known = known())]
    EmptyColumn(String),
    /// A column the summary does not keep.
    #[error("`{0}` is not a trend column this summary keeps; choose from: {known}", known = known())]
    Unknown(String),
    /// A column given twice.
    #[error("`{item}` is given twice in {list:?}")]
    Twice {
        /// The column as written the second time.
        item: String,
        /// The whole list.
        list: String,
    },
}

/// Every column's label, separated by `, `.
fn known() -> String {
    ALL.iter().map(|(_, l)| *l).collect::<Vec<_>>().join(", ")
}

/// Parses a comma-separated list; `p(95)` may also be written `p95`, `p(99.9)` `p99.9`.
pub(crate) fn parse_list(text: &str) -> Result<Vec<TrendStat>, TrendStatsError> {
    let mut out = Vec::new();
    for item in text.split(',').map(str::trim) {
        if item.is_empty() {
            return Err(TrendStatsError::EmptyColumn(text.to_owned()));
        }
        let normal = match item.strip_prefix('p') {
            Some(rest) if !rest.starts_with('(') => format!("p({rest})"),
            _ => item.to_string(),
        };
        let Some((stat, _)) = ALL.iter().find(|(_, l)| *l == normal) else {
            return Err(TrendStatsError::Unknown(item.to_owned()));
        };
        if out.contains(stat) {
            return Err(TrendStatsError::Twice {
                item: item.to_owned(),
                list: text.to_owned(),
            });
        }
        out.push(*stat);
    }
    Ok(out)
}

/// Reads `[summary] trend_stats` (an array of column names, or one comma-separated
/// string); `None` when the config does not set it.
pub(crate) fn parse_section(source: &toml::Table) -> Result<Option<Vec<TrendStat>>, ConfigError> {
    let Some(value) = source.get("summary") else {
        return Ok(None);
    };
    let table = value.as_table().ok_or_else(|| ConfigError {
        path: "summary".into(),
        message: "must be a table: write it as [summary]".into(),
    })?;
    let mut r = TableReader::new("summary", table);
    let text = match table.get("trend_stats") {
        None => None,
        Some(toml::Value::String(s)) => Some(s.clone()),
        Some(toml::Value::Array(items)) => {
            let mut names = Vec::with_capacity(items.len());
            for item in items {
                let name = item.as_str().ok_or_else(|| {
                    r.error(
                        "trend_stats",
                        format!("must be an array of column names such as \"p(95)\", got {item}"),
                    )
                })?;
                names.push(name);
            }
            Some(names.join(","))
        }
        Some(other) => {
            return Err(r.error(
                "trend_stats",
                format!(
                    "must be an array of column names such as [\"avg\", \"p(95)\"], got {other}"
                ),
            ))
        }
    };
    r.known(&["trend_stats"]);
    r.finish()?;
    match text {
        None => Ok(None),
        Some(text) => parse_list(&text).map(Some).map_err(|e| ConfigError {
            path: "summary.trend_stats".into(),
            message: e.to_string(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn section(text: &str) -> Result<Option<Vec<TrendStat>>, ConfigError> {
        parse_section(&toml::from_str(text).unwrap())
    }

    #[test]
    fn the_summary_section_names_columns_as_an_array_or_a_string() {
        assert_eq!(section("").unwrap(), None);
        assert_eq!(
            section("[summary]\ntrend_stats = [\"med\", \"p(99.9)\", \"count\"]").unwrap(),
            Some(vec![TrendStat::Med, TrendStat::P999, TrendStat::Count])
        );
        assert_eq!(
            section("[summary]\ntrend_stats = \"avg,p95\"").unwrap(),
            Some(vec![TrendStat::Avg, TrendStat::P95])
        );
        let err = section("[summary]\ntrend_stats = [\"avg\", \"p(97)\"]").unwrap_err();
        assert_eq!(err.path, "summary.trend_stats");
        assert!(
            err.message.contains("`p(97)`") && err.message.contains("p(99.9)"),
            "{err:?}"
        );
        let err = section("[summary]\ntrend_stats = [1]").unwrap_err();
        assert!(err.message.contains("column names"), "{err:?}");
        let err = section("[summary]\ntrend_stat = [\"avg\"]").unwrap_err();
        assert!(err.message.contains("trend_stats"), "did you mean: {err:?}");
        let err = section("summary = 1").unwrap_err();
        assert!(err.message.contains("[summary]"), "{err:?}");
    }

    #[test]
    fn reads_k6_style_lists_in_order() {
        let list = parse_list("avg, p(95),max,p99.9").unwrap();
        assert_eq!(
            list,
            vec![
                TrendStat::Avg,
                TrendStat::P95,
                TrendStat::Max,
                TrendStat::P999
            ]
        );
        assert_eq!(TrendStat::P999.label(), "p(99.9)");
    }

    #[test]
    fn refuses_unknown_empty_and_repeated_columns() {
        let err = parse_list("avg,p(97)").unwrap_err().to_string();
        assert!(
            err.starts_with("`p(97)` is not a trend column this summary keeps; choose from: "),
            "{err}"
        );
        assert!(err.contains("p(99.9)"), "the choices are listed: {err}");
        let err = parse_list("avg,,max").unwrap_err();
        assert_eq!(err, TrendStatsError::EmptyColumn("avg,,max".into()));
        assert!(
            err.to_string()
                .starts_with("empty column in \"avg,,max\"; give a comma-separated list of: avg, "),
            "{err}"
        );
        assert_eq!(
            parse_list("avg,avg").unwrap_err().to_string(),
            "`avg` is given twice in \"avg,avg\""
        );
    }
}
