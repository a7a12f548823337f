//! Exact shares of a test: reduced `u64` fractions, parsed from k6's forms (`1/3`,
//! `0.5`, `50%`), compared and subtracted without floats.

use std::cmp::Ordering;
use std::fmt;

/// A share written in none of k6's forms.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RatioError {
    /// Not one of k6's forms of a share.
    #[error("`{0}` is not a fraction (1/3), a decimal (0.5) or a percentage (50%)")]
    NotAShare(String),
    /// A share below 0.
    #[error("`{0}` is negative; a share is between 0 and 1")]
    Negative(String),
    /// A fraction over 0.
    #[error("`{0}` divides by zero")]
    DividesByZero(String),
}

/// A fraction `num/den` in lowest terms, `den > 0`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Ratio {
    num: u64,
    den: u64,
}

/// The greatest common divisor (0 when both are 0).
pub(super) fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

impl Ratio {
    /// 0.
    pub const ZERO: Ratio = Ratio { num: 0, den: 1 };
    /// 1.
    pub const ONE: Ratio = Ratio { num: 1, den: 1 };

    /// `num/den` reduced; `None` when `den` is 0.
    pub fn new(num: u64, den: u64) -> Option<Ratio> {
        if den == 0 {
            return None;
        }
        let g = gcd(num, den).max(1);
        Some(Ratio {
            num: num / g,
            den: den / g,
        })
    }

    /// From a `u128` fraction, reduced; `None` when it does not fit in `u64` terms.
    fn from_wide(num: u128, den: u128) -> Option<Ratio> {
        let mut a = num;
        let mut b = den;
        while b != 0 {
            (a, b) = (b, a % b);
        }
        let g = a.max(1);
        Some(Ratio {
            num: u64::try_from(num / g).ok()?,
            den: u64::try_from(den / g).ok()?,
        })
    }

    /// The numerator (in lowest terms).
    pub fn numer(self) -> u64 {
        self.num
    }

    /// The denominator (in lowest terms).
    pub fn denom(self) -> u64 {
        self.den
    }

    /// `self − other`, `None` when negative or too large for `u64` terms.
    pub fn checked_sub(self, other: Ratio) -> Option<Ratio> {
        let a = self.num as u128 * other.den as u128;
        let b = other.num as u128 * self.den as u128;
        Ratio::from_wide(a.checked_sub(b)?, self.den as u128 * other.den as u128)
    }

    /// Parses k6's forms: a fraction (`1/3`), a decimal (`0.5`, `1`) or a percentage
    /// (`50%`, `12.5%`).
    pub fn parse(text: &str) -> Result<Ratio, RatioError> {
        let t = text.trim();
        let bad = || RatioError::NotAShare(text.to_owned());
        if t.starts_with('-') {
            return Err(RatioError::Negative(text.to_owned()));
        }
        if let Some(percent) = t.strip_suffix('%') {
            let r = parse_decimal(percent.trim()).ok_or_else(bad)?;
            return Ratio::from_wide(r.num as u128, r.den as u128 * 100).ok_or_else(bad);
        }
        if let Some((n, d)) = t.split_once('/') {
            let n: u64 = n.trim().parse().map_err(|_| bad())?;
            let d: u64 = d.trim().parse().map_err(|_| bad())?;
            return Ratio::new(n, d).ok_or_else(|| RatioError::DividesByZero(text.to_owned()));
        }
        parse_decimal(t).ok_or_else(bad)
    }
}

/// `12`, `0.25`, `.5`: digits with at most 18 after the point.
fn parse_decimal(t: &str) -> Option<Ratio> {
    let (int, frac) = t.split_once('.').unwrap_or((t, ""));
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    if !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit()) || frac.len() > 18 {
        return None;
    }
    let den = 10u64.pow(frac.len() as u32);
    let int: u64 = if int.is_empty() { 0 } else { int.parse().ok()? };
    let frac: u64 = if frac.is_empty() {
        0
    } else {
        frac.parse().ok()?
    };
    let num = int.checked_mul(den)?.checked_add(frac)?;
    Ratio::new(num, den)
}

impl Ord for Ratio {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.num as u128 * other.den as u128).cmp(&(other.num as u128 * self.den as u128))
    }
}

impl PartialOrd for Ratio {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Display for Ratio {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.den == 1 {
            write!(f, "{}", self.num)
        } else {
            write!(f, "{}/{}", self.num, self.den)
        }
    }
}
