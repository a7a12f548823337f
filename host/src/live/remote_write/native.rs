//! An HDR histogram as a Prometheus native histogram: every recorded value goes to its
//! exponential bucket, and runs of buckets become spans with delta-coded counts.

use super::proto::{BucketSpan, Histogram};
use std::collections::BTreeMap;

/// Buckets per doubling: 2^3 = 8, each about 9 % wide (HDR keeps 0.1 %, so this is
/// where the precision goes).
pub(crate) const SCHEMA: i32 = 3;

/// The bucket of a positive value at `schema`.
pub(crate) fn bucket_index(v: f64, schema: i32) -> i32 {
    let scaled = v.log2() * f64::from(1u32 << schema);
    let mut i = scaled.ceil() as i32;
    // Exact powers sit on their bucket's upper bound; float error must not push them up.
    let upper = |i: i32| 2f64.powf(f64::from(i) / f64::from(1u32 << schema));
    if upper(i - 1) >= v {
        i -= 1;
    }
    i
}

/// `h` (stored integers) as a native histogram of values times `scale`, at `timestamp`.
pub(crate) fn native(h: &hdrhistogram::Histogram<u64>, scale: f64, timestamp: i64) -> Histogram {
    let mut buckets: BTreeMap<i32, u64> = BTreeMap::new();
    let mut zero = 0;
    for v in h.iter_recorded() {
        let value = v.value_iterated_to() as f64 * scale;
        let n = v.count_at_value();
        if value <= 0.0 {
            zero += n;
        } else {
            *buckets.entry(bucket_index(value, SCHEMA)).or_default() += n;
        }
    }
    let mut spans: Vec<BucketSpan> = Vec::new();
    let mut deltas = Vec::with_capacity(buckets.len());
    let mut previous_index: Option<i32> = None;
    let mut previous_count = 0i64;
    for (index, count) in buckets {
        match previous_index {
            Some(p) if index == p + 1 => {
                if let Some(last) = spans.last_mut() {
                    last.length += 1;
                }
            }
            Some(p) => spans.push(BucketSpan {
                offset: index - p - 1,
                length: 1,
            }),
            None => spans.push(BucketSpan {
                offset: index,
                length: 1,
            }),
        }
        deltas.push(count as i64 - previous_count);
        previous_count = count as i64;
        previous_index = Some(index);
    }
    Histogram {
        count_int: h.len(),
        sum: if h.is_empty() {
            0.0
        } else {
            h.mean() * h.len() as f64 * scale
        },
        schema: SCHEMA,
        zero_threshold: 0.0,
        zero_count_int: zero,
        positive_spans: spans,
        positive_deltas: deltas,
        timestamp,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::value::new_histogram;

    #[test]
    fn buckets_hold_their_upper_bound() {
        assert_eq!(bucket_index(1.0, 3), 0);
        assert_eq!(bucket_index(2.0, 3), 8);
        assert_eq!(bucket_index(1.05, 3), 1);
        assert_eq!(bucket_index(0.5, 3), -8);
    }

    #[test]
    fn spans_and_deltas_add_up_to_the_count() {
        let mut h = new_histogram();
        for v in [1_000u64, 1_000, 1_050, 4_000, 0] {
            h.record(v).unwrap();
        }
        let n = native(&h, 1e-3, 7);
        assert_eq!(n.count_int, 5);
        assert_eq!(n.zero_count_int, 1);
        // Buckets 0 (1.0 twice), 1 (1.05), 17 (4.0, which HDR holds as 4.001 at 3
        // digits, just past bucket 16's bound): spans [0,2] then a gap of 15.
        assert_eq!(
            n.positive_spans,
            vec![
                BucketSpan {
                    offset: 0,
                    length: 2
                },
                BucketSpan {
                    offset: 15,
                    length: 1
                }
            ]
        );
        assert_eq!(n.positive_deltas, vec![2, -1, 0]);
        let mut running = 0;
        let total: i64 = n
            .positive_deltas
            .iter()
            .map(|d| {
                running += d;
                running
            })
            .sum();
        assert_eq!(total as u64 + n.zero_count_int, n.count_int);
    }
}
