//! Whether a change between two runs is more than noise. Machines vary from run to run
//! and from second to second, so a change is judged against how much each run varied
//! within itself: Welch's t-test on the per-second values of counters and rates
//! (`timeseries.jsonl`), and for timings a bootstrap over seconds of the HDR interval
//! logs (`histograms/*.hlog`): seconds are drawn with replacement from each run, the
//! statistic of B minus that of A is computed for each draw, and the middle 95 % of
//! those differences is the confidence interval. Seconds rather than single requests
//! are drawn because requests of the same second share the machine's state.

use anyhow::{Context, Result};
use rand::{RngExt, SeedableRng};
use statrs::distribution::{ContinuousCDF, StudentsT};
use std::collections::BTreeMap;
use std::path::Path;

/// Fewest whole seconds a run needs before a change in it can be judged.
pub(crate) const MIN_SECONDS: usize = 3;

/// A change is significant below this p-value, or when the 95 % interval leaves out 0.
pub(crate) const ALPHA: f64 = 0.05;

/// Draws of the bootstrap.
const RESAMPLES: usize = 1000;

/// Intervals shorter than this are partial seconds (the run's last) and left out.
pub(crate) const WHOLE_SECOND: f64 = 0.9;

/// How a change was judged.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Significance {
    /// Welch's t-test on per-second values: the two-sided p-value.
    Welch {
        /// Probability of a difference at least this large from noise alone.
        p: f64,
    },
    /// Bootstrap over seconds: the 95 % confidence interval of B − A, in the
    /// statistic's unit.
    Interval {
        /// Lower bound.
        low: f64,
        /// Upper bound.
        high: f64,
    },
    /// A run had fewer than `MIN_SECONDS` whole seconds (the fewer is given).
    TooShort {
        /// Whole seconds of the shorter run.
        seconds: usize,
    },
    /// No per-second data for this metric in one of the runs (only summary.json).
    NoData,
    /// Within the tolerance, so not tested (a bootstrap costs time, and could not
    /// make the change a regression).
    NotTested,
}

impl Significance {
    /// Whether the change is beyond noise; `None` when it could not be judged.
    pub fn significant(&self) -> Option<bool> {
        match *self {
            Self::Welch { p } => Some(p < ALPHA),
            Self::Interval { low, high } => Some(low > 0.0 || high < 0.0),
            Self::TooShort { .. } | Self::NoData | Self::NotTested => None,
        }
    }
}

/// Welch's two-sided t-test of the means of `a` and `b`; `None` with fewer than two
/// values on a side.
pub(crate) fn welch(a: &[f64], b: &[f64]) -> Option<f64> {
    if a.len() < 2 || b.len() < 2 {
        return None;
    }
    let (ma, va) = mean_var(a);
    let (mb, vb) = mean_var(b);
    let (sa, sb) = (va / a.len() as f64, vb / b.len() as f64);
    let se2 = sa + sb;
    if se2 <= 0.0 {
        // Both runs constant: any difference at all is certain.
        return Some(if ma == mb { 1.0 } else { 0.0 });
    }
    let t = (mb - ma) / se2.sqrt();
    let df = se2 * se2 / (sa * sa / (a.len() as f64 - 1.0) + sb * sb / (b.len() as f64 - 1.0));
    let dist = StudentsT::new(0.0, 1.0, df).ok()?;
    Some((2.0 * (1.0 - dist.cdf(t.abs()))).clamp(0.0_f64, 1.0))
}

fn mean_var(x: &[f64]) -> (f64, f64) {
    let n = x.len() as f64;
    let mean = x.iter().sum::<f64>() / n;
    let var = x.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, var)
}

/// A timing statistic, as `host compare` shows it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Stat {
    /// The mean.
    Avg,
    /// A quantile from 0 to 1.
    Quantile(f64),
}

/// One second of a trend: (value, count) pairs in ascending value.
pub(crate) type Second = Vec<(f64, u64)>;

/// The 95 % intervals of stat(B) − stat(A) for each of `stats`, drawing whole seconds
/// with replacement from each run (the draws are seeded, so a comparison prints the
/// same figures every time).
pub(crate) fn bootstrap(a: &[Second], b: &[Second], stats: &[Stat]) -> Vec<(f64, f64)> {
    let (mut da, mut db) = (Draws::new(a), Draws::new(b));
    let mut rng = rand::rngs::StdRng::seed_from_u64(0x5eed);
    let mut diffs: Vec<Vec<f64>> = vec![Vec::with_capacity(RESAMPLES); stats.len()];
    let (mut sa, mut sb) = (Vec::new(), Vec::new());
    for _ in 0..RESAMPLES {
        da.draw(&mut rng, stats, &mut sa);
        db.draw(&mut rng, stats, &mut sb);
        for (k, d) in diffs.iter_mut().enumerate() {
            d.push(sb[k] - sa[k]);
        }
    }
    diffs
        .into_iter()
        .map(|mut d| {
            d.sort_by(f64::total_cmp);
            let at = |q: f64| d[((d.len() - 1) as f64 * q).round() as usize];
            (at(0.025), at(0.975))
        })
        .collect()
}

/// One run's seconds, ready to be drawn from: values as indices into the run's sorted
/// distinct values, so a draw is summed into a dense array and read in one pass.
struct Draws {
    values: Vec<f64>,
    seconds: Vec<Vec<(usize, u64)>>,
    counts: Vec<u64>,
}

impl Draws {
    fn new(seconds: &[Second]) -> Self {
        let mut values: Vec<f64> = seconds.iter().flatten().map(|(v, _)| *v).collect();
        values.sort_by(f64::total_cmp);
        values.dedup();
        let seconds = seconds
            .iter()
            .map(|s| {
                s.iter()
                    .map(|(v, c)| (values.partition_point(|x| x < v), *c))
                    .collect()
            })
            .collect();
        Self {
            counts: vec![0; values.len()],
            values,
            seconds,
        }
    }

    /// Draws as many seconds as the run has, with replacement; `out` gets `stats`.
    fn draw(&mut self, rng: &mut rand::rngs::StdRng, stats: &[Stat], out: &mut Vec<f64>) {
        self.counts.iter_mut().for_each(|c| *c = 0);
        let n = self.seconds.len();
        for _ in 0..n {
            for (i, c) in &self.seconds[rng.random_range(0..n)] {
                self.counts[*i] += c;
            }
        }
        out.clear();
        out.extend(statistics(&self.values, &self.counts, stats));
    }
}

/// `stats` of the distribution `counts` over `values`, in one pass.
fn statistics(values: &[f64], counts: &[u64], stats: &[Stat]) -> Vec<f64> {
    let total: u64 = counts.iter().sum();
    if total == 0 {
        return vec![0.0; stats.len()];
    }
    // As HdrHistogram: a quantile is the smallest value with at least q of the samples
    // at or below it.
    let ranks: Vec<Option<u64>> = stats
        .iter()
        .map(|s| match s {
            Stat::Avg => None,
            Stat::Quantile(q) => Some(((q * total as f64).ceil() as u64).max(1)),
        })
        .collect();
    let mut out = vec![f64::NAN; stats.len()];
    let (mut seen, mut sum) = (0u64, 0.0);
    for (v, c) in values.iter().zip(counts) {
        if *c == 0 {
            continue;
        }
        let before = seen;
        seen += c;
        sum += v * *c as f64;
        for (k, rank) in ranks.iter().enumerate() {
            if let Some(rank) = rank {
                if before < *rank && seen >= *rank {
                    out[k] = *v;
                }
            }
        }
    }
    for (k, s) in stats.iter().enumerate() {
        if *s == Stat::Avg {
            out[k] = sum / total as f64;
        }
    }
    out
}

/// A run's per-second data: what its results folder holds besides summary.json.
#[derive(Debug, Default)]
pub(crate) struct Series {
    /// Whole seconds in the run.
    pub seconds: usize,
    /// Per whole second: a counter's rate (0 in a second without samples), or a rate
    /// metric's share.
    pub values: BTreeMap<String, Vec<f64>>,
    /// Per whole second: a trend's distribution, from its HDR interval log.
    pub trends: BTreeMap<String, Vec<Second>>,
}

/// Reads the per-second data of the results folder `dir`; `None` when it has no
/// `timeseries.jsonl` (only a summary.json was given, or it was not written).
pub(crate) fn load(dir: &Path) -> Result<Option<Series>> {
    let path = dir.join("timeseries.jsonl");
    let Ok(text) = std::fs::read_to_string(&path) else {
        return Ok(None);
    };
    // Whole seconds by their end time, in order.
    let mut lines = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let json: serde_json::Value = serde_json::from_str(line)
            .with_context(|| format!("{} line {} is not JSON", path.display(), n + 1))?;
        if json["interval_s"].as_f64().unwrap_or(0.0) >= WHOLE_SECOND {
            lines.push(json);
        }
    }
    let mut ends: Vec<f64> = lines.iter().filter_map(|l| l["t"].as_f64()).collect();
    ends.sort_by(f64::total_cmp);
    ends.dedup();
    let second_of = |t: f64| ends.partition_point(|e| *e < t);
    let mut series = Series {
        seconds: ends.len(),
        ..Series::default()
    };
    let mut counters = Vec::new();
    for line in &lines {
        let (Some(metric), Some(t)) = (line["metric"].as_str(), line["t"].as_f64()) else {
            continue;
        };
        match line["type"].as_str() {
            Some("counter") => {
                let per_second = series
                    .values
                    .entry(metric.to_owned())
                    .or_insert_with(|| vec![0.0; ends.len()]);
                per_second[second_of(t)] = line["rate"].as_f64().unwrap_or(0.0);
                counters.push(metric.to_owned());
            }
            Some("rate") => {
                if let Some(rate) = line["rate"].as_f64() {
                    series
                        .values
                        .entry(metric.to_owned())
                        .or_default()
                        .push(rate);
                }
            }
            _ => {}
        }
    }
    let histograms = dir.join("histograms");
    if let Ok(entries) = std::fs::read_dir(&histograms) {
        for entry in entries.flatten() {
            let path = entry.path();
            let Some(metric) = path
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_suffix(".hlog"))
            else {
                continue;
            };
            let seconds = read_hlog(&path)?;
            series.trends.insert(metric.to_owned(), seconds);
        }
    }
    Ok(Some(series))
}

/// The whole-second intervals of an HDR interval log, values divided by 1000 (the logs
/// hold microseconds for timings, which compare shows in milliseconds).
fn read_hlog(path: &Path) -> Result<Vec<Second>> {
    use base64::Engine;
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
    use hdrhistogram::serialization::Deserializer;
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut deserializer = Deserializer::new();
    let mut seconds = Vec::new();
    for entry in IntervalLogIterator::new(&bytes) {
        let Ok(LogEntry::Interval(interval)) = entry else {
            continue;
        };
        if interval.duration().as_secs_f64() < WHOLE_SECOND {
            continue;
        }
        let raw = base64::engine::general_purpose::STANDARD
            .decode(interval.encoded_histogram())
            .with_context(|| format!("{}: an interval is not base64", path.display()))?;
        let h: hdrhistogram::Histogram<u64> =
            deserializer.deserialize(&mut &raw[..]).map_err(|e| {
                anyhow::anyhow!("{}: an interval does not decode: {e:?}", path.display())
            })?;
        seconds.push(second_of(&h));
    }
    Ok(seconds)
}

/// One interval's histogram as a [`Second`], values divided by 1000 (the logs hold
/// microseconds for timings, which compare shows in milliseconds).
pub(crate) fn second_of(h: &hdrhistogram::Histogram<u64>) -> Second {
    h.iter_recorded()
        .map(|v| (v.value_iterated_to() as f64 / 1000.0, v.count_at_value()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn welch_matches_a_worked_example() {
        // Two samples with unequal variances: t = 2.4554 on 24.99 degrees of freedom,
        // p = 0.021378 (the t density integrated numerically, independently of statrs).
        let a = [
            27.5, 21.0, 19.0, 23.6, 17.0, 17.9, 16.9, 20.1, 21.9, 22.6, 23.1, 19.6, 19.0, 21.7,
            21.4,
        ];
        let b = [
            27.1, 22.0, 20.8, 23.4, 23.4, 23.5, 25.8, 22.0, 24.8, 20.2, 21.9, 22.1, 22.9, 20.5,
            24.4,
        ];
        let p = welch(&a, &b).unwrap();
        assert!((p - 0.021378).abs() < 0.00001, "p = {p}");
        assert_eq!(welch(&[1.0], &[2.0, 3.0]), None);
        assert_eq!(welch(&[5.0, 5.0], &[5.0, 5.0]), Some(1.0));
        assert_eq!(welch(&[5.0, 5.0], &[6.0, 6.0]), Some(0.0));
    }

    fn seconds(centre: f64, n: usize) -> Vec<Second> {
        (0..n)
            .map(|s| {
                (0..50)
                    .map(|i| (centre + (i as f64) * 0.01 + (s % 3) as f64 * 0.05, 10))
                    .collect()
            })
            .collect()
    }

    #[test]
    fn the_bootstrap_interval_holds_zero_for_equal_runs_and_not_for_a_shift() {
        let stats = [Stat::Avg, Stat::Quantile(0.95)];
        let same = bootstrap(&seconds(1.0, 6), &seconds(1.0, 6), &stats);
        for (low, high) in &same {
            assert!(*low <= 0.0 && *high >= 0.0, "{same:?}");
        }
        let shifted = bootstrap(&seconds(1.0, 6), &seconds(21.0, 6), &stats);
        for (low, high) in &shifted {
            assert!(*low > 19.0 && *high < 21.0, "{shifted:?}");
        }
    }

    #[test]
    fn statistics_follow_hdr_conventions() {
        let values = [1.0, 2.0, 3.0, 4.0];
        let counts = [1, 1, 0, 2];
        let stats = [
            Stat::Quantile(0.5),
            Stat::Quantile(0.95),
            Stat::Avg,
            Stat::Quantile(0.0),
        ];
        assert_eq!(
            statistics(&values, &counts, &stats),
            vec![2.0, 4.0, 2.75, 1.0]
        );
    }
}
