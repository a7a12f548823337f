//! The Universal Scalability Law (Gunther) fitted by least squares:
//!
//! ```text
//! X(N) = λN / (1 + σ(N − 1) + κN(N − 1))
//! ```
//!
//! X is throughput and N concurrency; λ is the throughput of one unit of concurrency,
//! σ the share that serialises (contention) and κ the cost of keeping N workers
//! coherent (crosstalk). With κ > 0 throughput peaks at N* = √((1 − σ) / κ) and then
//! falls.
//!
//! The fit is the least-squares solution of the linearised form (Gunther's regression
//! of the deviation from linearity):
//!
//! ```text
//! N/X = a + b(N − 1) + cN(N − 1),   λ = 1/a, σ = b/a, κ = c/a
//! ```
//!
//! with σ and κ kept at zero or above (every subset of them set to zero is solved, and
//! the best solution that respects the signs is kept). Why not least squares of X
//! itself: past the capacity of an open system, the work in flight that Little's law
//! gives grows with the backlog while X stays flat, and residuals in X let the curve
//! overshoot in the gap between the last level below the capacity and the first past
//! it (measured on the demo target at 400/s: a Levenberg–Marquardt fit in X predicted a
//! peak of 475/s, this one 387/s). In the N/X form each level weighs by its concurrency,
//! so the levels on the plateau pin the ceiling. R² is reported on X.

use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};

/// Fewest points a fit takes: three parameters need at least one more point than they
/// have, or any three points fit exactly and R² says nothing.
pub(crate) const MIN_POINTS: usize = 4;

/// A fitted model.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub(crate) struct Usl {
    /// Throughput of a single unit of concurrency (per second).
    pub lambda: f64,
    /// Contention.
    pub sigma: f64,
    /// Crosstalk (coherency).
    pub kappa: f64,
    /// Share of the throughput's variance the model explains.
    pub r_squared: f64,
    /// Concurrency at the peak, `√((1 − σ)/κ)`; `None` when κ is zero (no peak: the
    /// curve rises toward λ/σ).
    pub peak_concurrency: Option<f64>,
    /// Throughput at the peak (or the asymptote λ/σ when κ is zero; infinite when both
    /// are zero).
    pub peak_throughput: f64,
}

impl Usl {
    /// Predicted throughput at concurrency `n`.
    pub(crate) fn throughput(&self, n: f64) -> f64 {
        model(&[self.lambda, self.sigma, self.kappa], n)
    }
}

fn model(p: &[f64; 3], n: f64) -> f64 {
    let [lambda, sigma, kappa] = *p;
    lambda * n / (1.0 + sigma * (n - 1.0) + kappa * n * (n - 1.0))
}

/// Fits the model to `(concurrency, throughput)` points.
pub(crate) fn fit(points: &[(f64, f64)]) -> Result<Usl> {
    let points: Vec<(f64, f64)> = points
        .iter()
        .copied()
        .filter(|(n, x)| n.is_finite() && x.is_finite() && *n > 0.0 && *x > 0.0)
        .collect();
    if points.len() < MIN_POINTS {
        bail!(
            "the Universal Scalability Law fit needs at least {MIN_POINTS} levels with \
             throughput, got {}; add levels (--levels or a smaller --factor)",
            points.len()
        );
    }
    let p = linearised(&points).ok_or_else(|| {
        anyhow::anyhow!(
            "the Universal Scalability Law fit has no solution for these levels (their \
             concurrency barely differs); spread the levels wider"
        )
    })?;
    let cost = sse(&p, &points);
    let mean = points.iter().map(|(_, x)| x).sum::<f64>() / points.len() as f64;
    let total: f64 = points.iter().map(|(_, x)| (x - mean).powi(2)).sum();
    let r_squared = if total > 0.0 { 1.0 - cost / total } else { 1.0 };
    let [lambda, sigma, kappa] = p;
    let (peak_concurrency, peak_throughput) = if kappa > 0.0 && sigma < 1.0 {
        let n = ((1.0 - sigma) / kappa).sqrt();
        (Some(n), model(&p, n))
    } else if sigma > 0.0 {
        (None, lambda / sigma)
    } else {
        (None, f64::INFINITY)
    };
    Ok(Usl {
        lambda,
        sigma,
        kappa,
        r_squared,
        peak_concurrency,
        peak_throughput,
    })
}

/// The linearised least squares with σ, κ ≥ 0: each choice of which of them are free
/// (the others zero) is solved, and the feasible solution nearest the points in N/X
/// wins.
fn linearised(points: &[(f64, f64)]) -> Option<[f64; 3]> {
    let mut best: Option<([f64; 3], f64)> = None;
    for (free_b, free_c) in [(true, true), (true, false), (false, true), (false, false)] {
        let mut ata = [[0.0; 3]; 3];
        let mut aty = [0.0; 3];
        for &(n, x) in points {
            // A fixed coefficient's column is zero; its diagonal is set to 1 below.
            let row = [
                1.0,
                if free_b { n - 1.0 } else { 0.0 },
                if free_c { n * (n - 1.0) } else { 0.0 },
            ];
            let y = n / x;
            for (i, ri) in row.iter().enumerate() {
                aty[i] += ri * y;
                for (j, rj) in row.iter().enumerate() {
                    ata[i][j] += ri * rj;
                }
            }
        }
        if !free_b {
            ata[1][1] = 1.0;
        }
        if !free_c {
            ata[2][2] = 1.0;
        }
        let Some([a, b, c]) = solve3(ata, aty) else {
            continue;
        };
        if a <= 0.0 || b < 0.0 || c < 0.0 {
            continue;
        }
        let cost: f64 = points
            .iter()
            .map(|&(n, x)| (n / x - (a + b * (n - 1.0) + c * n * (n - 1.0))).powi(2))
            .sum();
        if best.as_ref().is_none_or(|(_, c0)| cost < *c0) {
            best = Some(([1.0 / a, b / a, c / a], cost));
        }
    }
    best.map(|(p, _)| p)
}

fn sse(p: &[f64; 3], points: &[(f64, f64)]) -> f64 {
    points.iter().map(|&(n, x)| (x - model(p, n)).powi(2)).sum()
}

/// Solves a 3×3 system by Gaussian elimination with partial pivoting.
fn solve3(mut a: [[f64; 3]; 3], mut b: [f64; 3]) -> Option<[f64; 3]> {
    let scale = a.iter().flatten().fold(0.0_f64, |m, v| m.max(v.abs()));
    for col in 0..3 {
        let pivot = (col..3).max_by(|&i, &j| a[i][col].abs().total_cmp(&a[j][col].abs()))?;
        if a[pivot][col].abs() <= scale * 1e-15 {
            return None;
        }
        a.swap(col, pivot);
        b.swap(col, pivot);
        for row in col + 1..3 {
            let f = a[row][col] / a[col][col];
            let pivot_row = a[col];
            for (k, v) in a[row].iter_mut().enumerate().skip(col) {
                *v -= f * pivot_row[k];
            }
            b[row] -= f * b[col];
        }
    }
    let mut x = [0.0; 3];
    for row in (0..3).rev() {
        let tail: f64 = (row + 1..3).map(|k| a[row][k] * x[k]).sum();
        x[row] = (b[row] - tail) / a[row][row];
    }
    x.iter().all(|v| v.is_finite()).then_some(x)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn within(got: f64, want: f64, share: f64) -> bool {
        (got - want).abs() <= want.abs() * share
    }

    #[test]
    fn recovers_sigma_and_kappa_from_noisy_points() {
        let truth = [1000.0, 0.05, 0.0008];
        // ±1 % deterministic noise, alternating in sign.
        let points: Vec<(f64, f64)> = [1.0, 2.0, 4.0, 8.0, 16.0, 24.0, 32.0, 48.0, 64.0, 96.0]
            .iter()
            .enumerate()
            .map(|(i, &n)| {
                let noise = if i % 2 == 0 { 1.01 } else { 0.99 };
                (n, model(&truth, n) * noise)
            })
            .collect();
        let u = fit(&points).unwrap();
        assert!(within(u.sigma, 0.05, 0.05), "{u:?}");
        assert!(within(u.kappa, 0.0008, 0.05), "{u:?}");
        assert!(within(u.lambda, 1000.0, 0.05), "{u:?}");
        assert!(u.r_squared > 0.99, "{u:?}");
        // N* = √(0.95 / 0.0008) ≈ 34.5.
        assert!(within(u.peak_concurrency.unwrap(), 34.46, 0.05), "{u:?}");
        assert!(
            within(u.peak_throughput, model(&truth, 34.46), 0.02),
            "{u:?}"
        );
    }

    #[test]
    fn exact_points_are_recovered_exactly() {
        let truth = [50.0, 0.1, 0.01];
        let points: Vec<(f64, f64)> = (1..=8)
            .map(|n| (n as f64, model(&truth, n as f64)))
            .collect();
        let u = fit(&points).unwrap();
        assert!(within(u.sigma, 0.1, 1e-6), "{u:?}");
        assert!(within(u.kappa, 0.01, 1e-6), "{u:?}");
    }

    #[test]
    fn a_flat_ceiling_predicts_its_height() {
        // Measured: the demo target with 4 workers of 10 ms (400/s), swept at 100, 200,
        // 300, 400, 600 and 500/s; concurrency by Little's law.
        let points = [
            (1.2, 99.7),
            (2.3, 198.4),
            (3.0, 296.4),
            (6.7, 391.6),
            (317.4, 384.2),
            (153.1, 386.8),
        ];
        let u = fit(&points).unwrap();
        assert!(within(u.peak_throughput, 400.0, 0.05), "{u:?}");
    }

    #[test]
    fn fewer_than_four_points_are_refused_with_a_message() {
        let e = fit(&[(1.0, 10.0), (2.0, 19.0), (4.0, 30.0)]).unwrap_err();
        assert!(e.to_string().contains("at least 4 levels"), "{e}");
        assert!(e.to_string().contains("got 3"), "{e}");
    }
}
