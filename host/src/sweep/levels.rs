//! The load levels of a sweep: a list (`--levels 50,100,200`) or a geometric series
//! (`--from 100 --to 3200 --factor 2`), and the bisection `--refine` makes between the
//! last level that passed and the first that failed.

use anyhow::{bail, Result};

/// Most levels one sweep may plan: past this, a typo in `--factor` is more likely
/// than a wish for a week-long sweep.
const MAX_LEVELS: usize = 100;

/// Parses `--levels 50,100,200`: positive numbers, strictly rising.
pub(crate) fn parse_list(text: &str) -> Result<Vec<f64>> {
    let mut levels = Vec::new();
    for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let level: f64 = match item.parse() {
            Ok(v) => v,
            Err(_) => bail!("--levels: {item:?} is not a number; write e.g. --levels 50,100,200"),
        };
        if !(level > 0.0 && level.is_finite()) {
            bail!("--levels: {item} must be a positive number");
        }
        if let Some(last) = levels.last() {
            if level <= *last {
                bail!("--levels must rise: {item} comes after {last}");
            }
        }
        levels.push(level);
    }
    if levels.is_empty() {
        bail!("--levels is empty; write e.g. --levels 50,100,200");
    }
    if levels.len() > MAX_LEVELS {
        bail!(
            "--levels lists {} levels; at most {MAX_LEVELS}",
            levels.len()
        );
    }
    Ok(levels)
}

/// `from`, `from × factor`, … up to `to` (included when the series lands on it within
/// a rounding error; otherwise the last level is the largest below `to`).
pub(crate) fn geometric(from: f64, to: f64, factor: f64) -> Result<Vec<f64>> {
    if !(from > 0.0 && from.is_finite()) {
        bail!("--from must be a positive number, got {from}");
    }
    if !(to >= from && to.is_finite()) {
        bail!("--to ({to}) must be at least --from ({from})");
    }
    if !(factor > 1.0 && factor.is_finite()) {
        bail!("--factor must be more than 1 (each level a multiple of the last), got {factor}");
    }
    let mut levels = Vec::new();
    let mut level = from;
    while level <= to * (1.0 + 1e-9) {
        levels.push(round_level(level));
        if levels.len() > MAX_LEVELS {
            bail!(
                "--from {from} --to {to} --factor {factor} makes more than {MAX_LEVELS} levels; \
                 raise --factor or narrow the range"
            );
        }
        level *= factor;
    }
    Ok(levels)
}

/// The level halfway between one that passed and one that failed. Levels are rounded
/// to whole numbers when both ends are at least 10 apart, so a table reads `450`, not
/// `449.99`.
pub(crate) fn midpoint(passed: f64, failed: f64) -> f64 {
    let mid = (passed + failed) / 2.0;
    if (failed - passed).abs() >= 10.0 {
        mid.round()
    } else {
        round_level(mid)
    }
}

/// Rounds a level to 3 significant decimals, hiding float noise (`100 × 1.1³`).
fn round_level(level: f64) -> f64 {
    (level * 1000.0).round() / 1000.0
}

/// A level as the tables print it: whole numbers without a point.
pub(crate) fn label(level: f64) -> String {
    if level.fract() == 0.0 {
        format!("{level:.0}")
    } else {
        format!("{level}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_must_rise_and_be_positive() {
        assert_eq!(parse_list("50, 100,200").unwrap(), vec![50.0, 100.0, 200.0]);
        assert!(parse_list("100,50")
            .unwrap_err()
            .to_string()
            .contains("rise"));
        assert!(parse_list("0,5").is_err());
        assert!(parse_list("a")
            .unwrap_err()
            .to_string()
            .contains("not a number"));
        assert!(parse_list("").is_err());
    }

    #[test]
    fn geometric_series_ends_at_or_below_to() {
        assert_eq!(
            geometric(100.0, 3200.0, 2.0).unwrap(),
            vec![100.0, 200.0, 400.0, 800.0, 1600.0, 3200.0]
        );
        assert_eq!(
            geometric(100.0, 1000.0, 3.0).unwrap(),
            vec![100.0, 300.0, 900.0]
        );
        assert!(geometric(100.0, 50.0, 2.0).is_err());
        assert!(geometric(100.0, 200.0, 1.0).is_err());
        assert!(geometric(1.0, 1e9, 1.01)
            .unwrap_err()
            .to_string()
            .contains("--factor"));
    }

    #[test]
    fn midpoints_are_whole_when_the_gap_is_wide() {
        assert_eq!(midpoint(400.0, 600.0), 500.0);
        assert_eq!(midpoint(400.0, 401.0), 400.5);
        assert_eq!(label(500.0), "500");
        assert_eq!(label(2.5), "2.5");
    }
}
