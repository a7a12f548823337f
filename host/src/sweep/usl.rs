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
//! The fit starts from the exact least-squares solution of the linearised form
//! N/X = 1/λ + (σ/λ)(N − 1) + (κ/λ)N(N − 1), then refines λ, σ, κ on the throughput
//! residuals themselves with Levenberg–Marquardt (σ and κ kept at zero or above).

use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};

/// Fewest points a fit takes: three parameters need at least one more point than they
/// have, or any three points fit exactly and R² says nothing.
pub const MIN_POINTS: usize = 4;

/// A fitted model.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Usl {
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
    pub fn throughput(&self, n: f64) -> f64 {
        model(&[self.lambda, self.sigma, self.kappa], n)
    }
}

fn model(p: &[f64; 3], n: f64) -> f64 {
    let [lambda, sigma, kappa] = *p;
    lambda * n / (1.0 + sigma * (n - 1.0) + kappa * n * (n - 1.0))
}

/// Fits the model to `(concurrency, throughput)` points.
pub fn fit(points: &[(f64, f64)]) -> Result<Usl> {
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
    let mut p = initial_guess(&points);
    let mut cost = sse(&p, &points);
    let mut damping = 1e-3;
    for _ in 0..500 {
        let (jtj, jtr) = normal_equations(&p, &points);
        let mut improved = false;
        // Raise the damping until a step lowers the cost (or give up at a huge one).
        while damping < 1e12 {
            let mut a = jtj;
            for (i, row) in a.iter_mut().enumerate() {
                row[i] += damping * jtj[i][i].max(1e-12);
            }
            let Some(step) = solve3(a, jtr) else {
                damping *= 10.0;
                continue;
            };
            let candidate = [
                (p[0] + step[0]).max(1e-12),
                (p[1] + step[1]).max(0.0),
                (p[2] + step[2]).max(0.0),
            ];
            let c = sse(&candidate, &points);
            if c < cost {
                let gain = (cost - c) / cost.max(1e-300);
                p = candidate;
                cost = c;
                damping = (damping / 10.0).max(1e-12);
                improved = gain > 1e-15;
                break;
            }
            damping *= 10.0;
        }
        if !improved {
            break;
        }
    }
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

/// The linearised least squares: N/X = a + b(N − 1) + cN(N − 1), λ = 1/a, σ = b/a,
/// κ = c/a; negative terms are set to zero (the refinement keeps them there).
fn initial_guess(points: &[(f64, f64)]) -> [f64; 3] {
    let mut ata = [[0.0; 3]; 3];
    let mut aty = [0.0; 3];
    for &(n, x) in points {
        let row = [1.0, n - 1.0, n * (n - 1.0)];
        let y = n / x;
        for i in 0..3 {
            aty[i] += row[i] * y;
            for j in 0..3 {
                ata[i][j] += row[i] * row[j];
            }
        }
    }
    let fallback = {
        // λ from the point of least concurrency, no contention.
        let (n, x) =
            points
                .iter()
                .copied()
                .fold((f64::INFINITY, 0.0), |a, b| if b.0 < a.0 { b } else { a });
        [x / n, 0.0, 0.0]
    };
    match solve3(ata, aty) {
        Some([a, b, c]) if a > 0.0 => [1.0 / a, (b / a).max(0.0), (c / a).max(0.0)],
        _ => fallback,
    }
}

fn sse(p: &[f64; 3], points: &[(f64, f64)]) -> f64 {
    points.iter().map(|&(n, x)| (x - model(p, n)).powi(2)).sum()
}

/// JᵀJ and Jᵀr of the throughput residuals r = x − X(n) at `p`.
fn normal_equations(p: &[f64; 3], points: &[(f64, f64)]) -> ([[f64; 3]; 3], [f64; 3]) {
    let [lambda, sigma, kappa] = *p;
    let mut jtj = [[0.0; 3]; 3];
    let mut jtr = [0.0; 3];
    for &(n, x) in points {
        let d = 1.0 + sigma * (n - 1.0) + kappa * n * (n - 1.0);
        let f = lambda * n / d;
        // Partial derivatives of X(n) by λ, σ and κ.
        let j = [n / d, -f * (n - 1.0) / d, -f * n * (n - 1.0) / d];
        let r = x - f;
        for i in 0..3 {
            jtr[i] += j[i] * r;
            for k in 0..3 {
                jtj[i][k] += j[i] * j[k];
            }
        }
    }
    (jtj, jtr)
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
            for k in col..3 {
                a[row][k] -= f * a[col][k];
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
        // A target with a hard capacity of 400/s: linear up to it, flat after.
        let points = [
            (1.1, 100.0),
            (2.2, 200.0),
            (3.3, 300.0),
            (4.5, 395.0),
            (40.0, 400.0),
            (120.0, 401.0),
        ];
        let u = fit(&points).unwrap();
        assert!(within(u.peak_throughput, 400.0, 0.15), "{u:?}");
    }

    #[test]
    fn fewer_than_four_points_are_refused_with_a_message() {
        let e = fit(&[(1.0, 10.0), (2.0, 19.0), (4.0, 30.0)]).unwrap_err();
        assert!(e.to_string().contains("at least 4 levels"), "{e}");
        assert!(e.to_string().contains("got 3"), "{e}");
    }
}
