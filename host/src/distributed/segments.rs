//! The execution segments a coordinator hands out: N equal shares of the run, written
//! in k6's syntax (`0:1/3`, `1/3:2/3`, `2/3:1`, and the sequence `0,1/3,2/3,1`).

/// The sequence of `n` equal segments (`0,1/3,2/3,1`).
pub(crate) fn sequence(n: u32) -> String {
    (0..=n)
        .map(|i| fraction(i, n))
        .collect::<Vec<_>>()
        .join(",")
}

/// The segment of worker `i` of `n` (`1/3:2/3`).
pub(crate) fn segment(i: u32, n: u32) -> String {
    format!("{}:{}", fraction(i, n), fraction(i + 1, n))
}

/// `i/n` in lowest terms, `0` and `1` bare.
fn fraction(i: u32, n: u32) -> String {
    if i == 0 {
        return "0".into();
    }
    if i == n {
        return "1".into();
    }
    let g = gcd(i, n);
    format!("{}/{}", i / g, n / g)
}

fn gcd(a: u32, b: u32) -> u32 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_cover_the_run_in_k6_syntax() {
        assert_eq!(sequence(1), "0,1");
        assert_eq!(segment(0, 1), "0:1");
        assert_eq!(sequence(3), "0,1/3,2/3,1");
        assert_eq!(
            (0..3).map(|i| segment(i, 3)).collect::<Vec<_>>(),
            ["0:1/3", "1/3:2/3", "2/3:1"]
        );
        assert_eq!(sequence(4), "0,1/4,1/2,3/4,1");
    }
}
