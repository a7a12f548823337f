//! Execution segments with k6's semantics (`--execution-segment 1/3:2/3`,
//! `--execution-segment-sequence 0,1/3,2/3,1`): which share of a test one host process
//! runs, so that several processes together run exactly what one would.
//!
//! All arithmetic is exact: a [`Ratio`] is a reduced `u64` fraction, never a float.
//! The sequence's segments are "striped" as in k6's `lib/execution_segment.go`: every
//! run of `lcd` consecutive whole numbers (`lcd` = the least common denominator of the
//! segments' lengths) is dealt out among the segments, each getting as many as its
//! length's share, spread as evenly as possible. An [`ExecutionTuple`] (a segment within
//! its filled sequence) then scales counts (`scale`: VUs, iterations) and tells which
//! global indexes (iterations of an open model, iteration numbers) belong to it.

mod error;
mod ratio;

use ratio::gcd;
use std::fmt;
use std::sync::Arc;

pub(crate) use error::SegmentError;
pub(crate) use ratio::Ratio;

/// The largest least common denominator a sequence may have: striping deals out one
/// cycle of this many indexes, kept in memory (8 bytes each).
pub(crate) const MAX_LCD: u64 = 1_000_000;

/// The share `(from, to]` of a test one process runs: `0 ≤ from < to ≤ 1`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExecutionSegment {
    from: Ratio,
    to: Ratio,
}

impl Default for ExecutionSegment {
    fn default() -> Self {
        Self::FULL
    }
}

impl ExecutionSegment {
    /// The whole test, `0:1`.
    pub const FULL: ExecutionSegment = ExecutionSegment {
        from: Ratio::ZERO,
        to: Ratio::ONE,
    };

    /// `(from, to]`, checked.
    pub fn new(from: Ratio, to: Ratio) -> Result<Self, SegmentError> {
        if to > Ratio::ONE {
            return Err(SegmentError::EndAboveOne(to));
        }
        if from >= to {
            return Err(SegmentError::StartNotBelowEnd { from, to });
        }
        Ok(Self { from, to })
    }

    /// Parses `a:b`, or `b` alone for `0:b`, each a fraction, decimal or percentage; an
    /// empty text is the whole test, as in k6.
    pub fn parse(text: &str) -> Result<Self, SegmentError> {
        let t = text.trim();
        if t.is_empty() {
            return Ok(Self::FULL);
        }
        let (from, to) = match t.split_once(':') {
            Some((a, b)) => (Ratio::parse(a)?, Ratio::parse(b)?),
            None => (Ratio::ZERO, Ratio::parse(t)?),
        };
        Self::new(from, to)
    }

    /// The start (exclusive).
    pub fn from(&self) -> Ratio {
        self.from
    }

    /// The end (inclusive).
    pub fn to(&self) -> Ratio {
        self.to
    }

    /// `to − from`.
    pub fn length(&self) -> Ratio {
        self.to
            .checked_sub(self.from)
            .expect("a segment's start is below its end")
    }

    /// Whether this is the whole test.
    pub fn is_full(&self) -> bool {
        *self == Self::FULL
    }
}

impl fmt::Display for ExecutionSegment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.from, self.to)
    }
}

/// Consecutive segments given as their boundaries `r1,r2,…,rn`: `(r1,r2], (r2,r3], …`.
/// All processes of one test get the same sequence, so that each stripes alike.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SegmentSequence {
    points: Vec<Ratio>,
}

impl SegmentSequence {
    /// Parses `0,1/3,2/3,1`: at least two points, rising strictly, none above 1.
    pub fn parse(text: &str) -> Result<Self, SegmentError> {
        let points = text
            .split(',')
            .map(Ratio::parse)
            .collect::<Result<Vec<_>, _>>()?;
        Self::new(points)
    }

    /// From boundaries, checked.
    pub fn new(points: Vec<Ratio>) -> Result<Self, SegmentError> {
        if points.len() < 2 {
            return Err(SegmentError::TooFewPoints(points.len()));
        }
        for pair in points.windows(2) {
            if pair[1] <= pair[0] {
                return Err(SegmentError::NotRising {
                    previous: pair[0],
                    next: pair[1],
                });
            }
        }
        if let Some(last) = points.last().filter(|p| **p > Ratio::ONE) {
            return Err(SegmentError::PointAboveOne(*last));
        }
        Ok(Self { points })
    }

    /// `n` equal segments: `0,1/n,…,1`.
    pub fn even(n: u64) -> Result<Self, SegmentError> {
        if n == 0 {
            return Err(SegmentError::NoSegment);
        }
        Self::new((0..=n).map(|i| Ratio::new(i, n).expect("n > 0")).collect())
    }

    /// The segments, in order.
    pub fn segments(&self) -> Vec<ExecutionSegment> {
        self.points
            .windows(2)
            .map(|p| ExecutionSegment {
                from: p[0],
                to: p[1],
            })
            .collect()
    }
}

impl fmt::Display for SegmentSequence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let points: Vec<String> = self.points.iter().map(Ratio::to_string).collect();
        f.write_str(&points.join(","))
    }
}

/// A segment within its filled sequence (gaps at both ends filled with segments of
/// their own, as k6's `GetFilledExecutionSegmentSequence`), with the sequence's
/// striping: what an executor needs to run its share.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecutionTuple {
    segment: ExecutionSegment,
    sequence: Vec<ExecutionSegment>,
    index: usize,
    lcd: u64,
    /// For each segment of the sequence, the indexes in `0..lcd` it owns, rising.
    positions: Arc<Vec<Vec<u64>>>,
}

impl Default for ExecutionTuple {
    fn default() -> Self {
        Self::full()
    }
}

impl ExecutionTuple {
    /// The whole test: every count as it is, every index its own.
    pub fn full() -> Self {
        Self {
            segment: ExecutionSegment::FULL,
            sequence: vec![ExecutionSegment::FULL],
            index: 0,
            lcd: 1,
            positions: Arc::new(vec![vec![0]]),
        }
    }

    /// `segment` within `sequence` (or alone, the rest filled around it); an error when
    /// the sequence does not hold the segment, or its denominators are too large.
    pub fn new(
        segment: ExecutionSegment,
        sequence: Option<&SegmentSequence>,
    ) -> Result<Self, SegmentError> {
        let mut segments = match sequence {
            Some(s) => s.segments(),
            None => vec![segment],
        };
        if segments[0].from != Ratio::ZERO {
            segments.insert(0, ExecutionSegment::new(Ratio::ZERO, segments[0].from)?);
        }
        let last = segments[segments.len() - 1].to;
        if last != Ratio::ONE {
            segments.push(ExecutionSegment::new(last, Ratio::ONE)?);
        }
        let Some(index) = segments.iter().position(|s| *s == segment) else {
            return Err(SegmentError::NotInSequence {
                segment: (segment.from, segment.to),
                sequence: segments.iter().map(|s| (s.from, s.to)).collect(),
            });
        };
        Self::striped(segments, index)
    }

    /// Stripes a full sequence (k6's `NewExecutionSegmentSequenceWrapper`).
    fn striped(sequence: Vec<ExecutionSegment>, index: usize) -> Result<Self, SegmentError> {
        let mut lcd: u64 = 1;
        for s in &sequence {
            let d = s.length().denom();
            lcd = (lcd / gcd(lcd, d))
                .checked_mul(d)
                .filter(|l| *l <= MAX_LCD)
                .ok_or(SegmentError::DenominatorTooLarge { max: MAX_LCD })?;
        }
        // Each segment's share of one cycle of `lcd` indexes.
        let shares: Vec<u64> = sequence
            .iter()
            .map(|s| {
                let l = s.length();
                l.numer() * (lcd / l.denom())
            })
            .collect();
        // Largest first (stable), as k6: the largest are hardest to keep apart.
        let mut order: Vec<usize> = (0..sequence.len()).collect();
        order.sort_by(|a, b| shares[*b].cmp(&shares[*a]));
        let mut chosen = vec![0u64; sequence.len()];
        let mut positions: Vec<Vec<u64>> = shares
            .iter()
            .map(|n| Vec::with_capacity(*n as usize))
            .collect();
        for i in 0..lcd {
            // Index i goes to the first (largest) segment that is due another one: the
            // one whose next evenly spaced slot, count × lcd / share, is at or before i.
            for (rank, &segment) in order.iter().enumerate() {
                let share = shares[segment];
                if i as u128 * share as u128 >= chosen[rank] as u128 * lcd as u128 {
                    chosen[rank] += 1;
                    positions[segment].push(i);
                    break;
                }
            }
        }
        Ok(Self {
            segment: sequence[index],
            sequence,
            index,
            lcd,
            positions: Arc::new(positions),
        })
    }

    /// The segment this process runs.
    pub fn segment(&self) -> ExecutionSegment {
        self.segment
    }

    /// Its position in the filled sequence.
    pub fn index(&self) -> usize {
        self.index
    }

    /// The filled sequence.
    pub fn sequence(&self) -> &[ExecutionSegment] {
        &self.sequence
    }

    /// Whether this process runs the whole test.
    pub fn is_full(&self) -> bool {
        self.sequence.len() == 1
    }

    /// The striping's cycle length.
    pub fn lcd(&self) -> u64 {
        self.lcd
    }

    /// This segment's share of `value` (VUs, iterations): over all segments of the
    /// sequence the shares add up to `value` exactly, and each grows with `value`
    /// (k6's `ExecutionTuple.ScaleInt64`).
    pub fn scale(&self, value: u64) -> u64 {
        self.scale_at(self.index, value)
    }

    fn scale_at(&self, index: usize, value: u64) -> u64 {
        if self.is_full() {
            return value;
        }
        let own = &self.positions[index];
        let rest = value % self.lcd;
        (value / self.lcd) * own.len() as u64 + own.partition_point(|p| *p < rest) as u64
    }

    /// The global index of this segment's `local`-th index (both from 0): its
    /// iterations, in order, are these of the whole test.
    pub fn global(&self, local: u64) -> u64 {
        let own = &self.positions[self.index];
        let per_cycle = own.len() as u64;
        (local / per_cycle) * self.lcd + own[(local % per_cycle) as usize]
    }

    /// k6's striped offsets: the first index of this segment, then the steps from each
    /// to the next over one cycle (the last step wraps into the next cycle).
    pub fn striped_offsets(&self) -> (u64, Vec<u64>, u64) {
        let own = &self.positions[self.index];
        let mut steps: Vec<u64> = own.windows(2).map(|w| w[1] - w[0]).collect();
        steps.push(own[0] + self.lcd - own[own.len() - 1]);
        (own[0], steps, self.lcd)
    }

    /// The tuple re-striped over `value` things (k6's `GetNewExecutionTupleFromValue`):
    /// each segment's new length is its share of `value`, and segments with no share
    /// are dropped, so the others take over all of the indexes. `None` when this segment
    /// gets none of `value`. Arrival-rate executors stripe their iterations over their
    /// `max_vus` this way, so that a segment with no VU leaves no iteration unstarted.
    pub fn for_value(&self, value: u64) -> Option<Self> {
        if value == 0 {
            return None;
        }
        if value.is_multiple_of(self.lcd) {
            return Some(self.clone());
        }
        let mut sequence = Vec::new();
        let mut index = None;
        let mut prev = 0;
        for i in 0..self.sequence.len() {
            let share = self.scale_at(i, value);
            if share == 0 {
                continue;
            }
            if i == self.index {
                index = Some(sequence.len());
            }
            let from = Ratio::new(prev, value)?;
            prev += share;
            sequence.push(ExecutionSegment {
                from,
                to: Ratio::new(prev, value)?,
            });
        }
        Self::striped(sequence, index?).ok()
    }
}

impl fmt::Display for ExecutionTuple {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let points: Vec<String> = std::iter::once(self.sequence[0].from)
            .chain(self.sequence.iter().map(|s| s.to))
            .map(|r| r.to_string())
            .collect();
        write!(f, "{} in {}", self.segment, points.join(","))
    }
}

impl ExecutionTuple {
    /// `--execution-segment` and `--execution-segment-sequence` as given, checked into
    /// the tuple a run carries; `(None, None)` is the whole test.
    pub fn from_flags(
        segment: Option<&str>,
        sequence: Option<&str>,
    ) -> Result<ExecutionTuple, SegmentError> {
        let sequence = sequence
            .map(|s| SegmentSequence::parse(s).map_err(|e| e.in_text(s)))
            .transpose()?;
        let segment = match segment {
            Some(s) => ExecutionSegment::parse(s).map_err(|e| e.in_text(s))?,
            None if sequence.is_some() => return Err(SegmentError::SequenceWithoutSegment),
            None => return Ok(ExecutionTuple::full()),
        };
        ExecutionTuple::new(segment, sequence.as_ref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(text: &str) -> Ratio {
        Ratio::parse(text).unwrap()
    }

    fn tuple(seq: &str, seg: &str) -> ExecutionTuple {
        let seq = (!seq.is_empty()).then(|| SegmentSequence::parse(seq).unwrap());
        ExecutionTuple::new(ExecutionSegment::parse(seg).unwrap(), seq.as_ref()).unwrap()
    }

    #[test]
    fn ratios_parse_in_k6s_forms() {
        assert_eq!(r("1/3"), Ratio::new(1, 3).unwrap());
        assert_eq!(r("0.5"), Ratio::new(1, 2).unwrap());
        assert_eq!(r("50%"), Ratio::new(1, 2).unwrap());
        assert_eq!(r("12.5%"), Ratio::new(1, 8).unwrap());
        assert_eq!(r("2/4"), r("0.5"));
        assert_eq!(r("1"), Ratio::ONE);
        assert_eq!(r(".25"), Ratio::new(1, 4).unwrap());
        for bad in ["", "a", "1/0", "-1/2", "1.2.3", "1e3", "%", "1/x"] {
            assert!(Ratio::parse(bad).is_err(), "{bad}");
        }
        assert!(r("1/3") < r("0.34"));
        assert_eq!(r("2/3").checked_sub(r("1/3")), Some(r("1/3")));
    }

    /// k6's TestExecutionSegmentUnmarshalText and TestExecutionSegmentFailures.
    #[test]
    fn segments_parse_and_refuse_as_k6() {
        let seg = |t: &str| ExecutionSegment::parse(t).unwrap();
        assert_eq!(seg("0.5").to_string(), "0:1/2");
        assert_eq!(seg("1/2:3/4").to_string(), "1/2:3/4");
        assert_eq!(seg("0.5:0.75"), seg("50%:75%"));
        assert_eq!(seg("2/4:75%").to_string(), "1/2:3/4");
        assert_eq!(seg(""), ExecutionSegment::FULL);
        assert!(seg("1").is_full());
        for bad in ["-0.5:1", "1:0.5", "0.5:0.5", "0:1.5", "0:", "a:1", "1:2"] {
            assert!(ExecutionSegment::parse(bad).is_err(), "{bad}");
        }
        let err = ExecutionSegment::parse("0:1.5").unwrap_err();
        assert_eq!(err.to_string(), "the segment's end 3/2 is more than 1");
    }

    #[test]
    fn sequences_must_rise_within_one() {
        assert_eq!(
            SegmentSequence::parse("0,1/3,2/3,1").unwrap().to_string(),
            "0,1/3,2/3,1"
        );
        assert_eq!(
            SegmentSequence::even(4).unwrap().to_string(),
            "0,1/4,1/2,3/4,1"
        );
        let err = SegmentSequence::parse("0,1/2,1/3,1").unwrap_err();
        assert_eq!(
            err.to_string(),
            "its points must rise: 1/3 after 1/2 would make an empty or overlapping segment"
        );
        let err = SegmentSequence::parse("0,1/2,1/2,1").unwrap_err();
        assert!(err.to_string().contains("must rise"), "{err}");
        assert_eq!(
            SegmentSequence::parse("0,1.5").unwrap_err(),
            SegmentError::PointAboveOne(r("3/2"))
        );
        assert_eq!(
            SegmentSequence::parse("1/2").unwrap_err().to_string(),
            "a sequence needs at least 2 points (such as 0,1/2,1), got 1"
        );
        assert_eq!(
            Ratio::parse("1/0").unwrap_err().to_string(),
            "`1/0` divides by zero"
        );
    }

    /// k6's TestGetStripedOffsets, every case.
    #[test]
    fn striped_offsets_match_k6() {
        let cases: &[(&str, &str, u64, &[u64], u64)] = &[
            ("0,0.3,0.5,0.6,0.7,0.8,0.9,1", "0:0.3", 0, &[4, 3, 3], 10),
            ("0,0.3,0.5,0.6,0.7,0.8,0.9,1", "0.3:0.5", 1, &[4, 6], 10),
            ("0,0.3,0.5,0.6,0.7,0.8,0.9,1", "0.5:0.6", 2, &[10], 10),
            ("0,0.3,0.5,0.6,0.7,0.8,0.9,1", "0.6:0.7", 3, &[10], 10),
            ("0,0.3,0.5,0.6,0.7,0.8,0.9,1", "0.8:0.9", 8, &[10], 10),
            ("0,0.3,0.5,0.6,0.7,0.8,0.9,1", "0.9:1", 9, &[10], 10),
            ("0,0.2,0.5,0.6,0.7,0.8,0.9,1", "0.9:1", 9, &[10], 10),
            ("0,0.2,0.5,0.6,0.7,0.8,0.9,1", "0:0.2", 1, &[4, 6], 10),
            ("0,0.2,0.5,0.6,0.7,0.8,0.9,1", "0.6:0.7", 3, &[10], 10),
            ("0,0.2,0.5", "0:0.2", 3, &[6, 4], 10),
            ("0,0.2,0.5", "0.2:0.5", 1, &[4, 2, 4], 10),
            ("0,2/5,4/5", "0:2/5", 0, &[3, 2], 5),
            ("0,2/5,4/5", "2/5:4/5", 1, &[3, 2], 5),
            ("", "0:0.2", 1, &[5], 5),
            ("", "0:1/5", 1, &[5], 5),
            ("", "0:2/10", 1, &[5], 5),
            ("", "0:0.4", 1, &[2, 3], 5),
            ("", "0:2/5", 1, &[2, 3], 5),
            ("", "2/5:4/5", 1, &[3, 2], 5),
            ("", "0:4/10", 1, &[2, 3], 5),
            ("", "1/10:5/10", 1, &[2, 2, 4, 2], 10),
        ];
        for (seq, seg, start, offsets, lcd) in cases {
            let got = tuple(seq, seg).striped_offsets();
            assert_eq!(got, (*start, offsets.to_vec(), *lcd), "{seq} / {seg}");
        }
    }

    /// k6's TestExecutionTupleScale and the table in ExecutionTuple's documentation.
    #[test]
    fn scale_matches_k6() {
        assert_eq!(tuple("", "0.5").scale(2), 1);
        assert_eq!(tuple("", "0.5").scale(3), 2);
        assert_eq!(tuple("", "0.5:1.0").scale(2), 1);
        assert_eq!(tuple("", "0.5:1.0").scale(3), 1);
        assert_eq!(tuple("0,0.5,1", "0.5").scale(3), 2);
        assert_eq!(tuple("0,0.5,1", "0.5:1.0").scale(3), 1);
        let seq = "0,1/2,3/4,1";
        let table = [
            ("0:1/2", [1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6]),
            ("1/2:3/4", [0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3]),
            ("3/4:1", [0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3]),
        ];
        for (seg, want) in table {
            let t = tuple(seq, seg);
            let got: Vec<u64> = (1..=12).map(|v| t.scale(v)).collect();
            assert_eq!(got, want, "{seg}");
        }
        // The striped iterators of the same table.
        let first = |seg: &str| {
            (0..6)
                .map(|j| tuple(seq, seg).global(j))
                .collect::<Vec<_>>()
        };
        assert_eq!(first("0:1/2"), [0, 2, 4, 6, 8, 10]);
        assert_eq!(first("1/2:3/4"), [1, 5, 9, 13, 17, 21]);
        assert_eq!(first("3/4:1"), [3, 7, 11, 15, 19, 23]);
    }

    /// k6's TestSequenceLCD and TestGetNewExecutionTupleBesedOnValue.
    #[test]
    fn lcd_and_restriping_match_k6() {
        for (seq, lcd) in [
            ("0,0.3,0.5,0.6,0.7,0.8,0.9,1", 10),
            ("0,0.1,0.5,0.6,0.7,0.8,0.9,1", 10),
            ("0,1/3,5/6", 6),
            ("0,1/3,4/7", 21),
        ] {
            let first = SegmentSequence::parse(seq).unwrap().segments()[0];
            assert_eq!(tuple(seq, &first.to_string()).lcd(), lcd, "{seq}");
        }
        let t = tuple("0,1/3,2/3,1", "0:1/3").for_value(20).unwrap();
        let points: Vec<String> = std::iter::once(t.sequence()[0].from())
            .chain(t.sequence().iter().map(|s| s.to()))
            .map(|r| r.to_string())
            .collect();
        assert_eq!(points.join(","), "0,7/20,7/10,1");
        // A segment with no share of the value drops out.
        assert!(tuple("0,1/3,2/3,1", "2/3:1").for_value(1).is_none());
    }

    #[test]
    fn shares_add_up_and_indexes_partition() {
        for seq in ["0,1/3,2/3,1", "0,0.3,0.5,0.6,0.7,0.8,0.9,1", "0,1/7,1/2,1"] {
            let segments = SegmentSequence::parse(seq).unwrap().segments();
            let tuples: Vec<ExecutionTuple> = segments
                .iter()
                .map(|s| tuple(seq, &s.to_string()))
                .collect();
            for value in 0..200 {
                let total: u64 = tuples.iter().map(|t| t.scale(value)).sum();
                assert_eq!(total, value, "{seq} at {value}");
            }
            let mut seen: Vec<u64> = tuples
                .iter()
                .flat_map(|t| (0..t.scale(500)).map(|j| t.global(j)))
                .collect();
            seen.sort_unstable();
            assert_eq!(seen, (0..500).collect::<Vec<_>>(), "{seq}");
        }
    }

    #[test]
    fn flags_are_checked_together() {
        let from_flags = ExecutionTuple::from_flags;
        assert!(from_flags(None, None).unwrap().is_full());
        let t = from_flags(Some("1/3:2/3"), Some("0,1/3,2/3,1")).unwrap();
        assert_eq!(t.to_string(), "1/3:2/3 in 0,1/3,2/3,1");
        assert_eq!(t.index(), 1);
        let err = from_flags(Some("1/4:2/3"), Some("0,1/3,2/3,1")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "the segment 1/4:2/3 is not one of the sequence's segments (0:1/3, 1/3:2/3, \
             2/3:1); give a segment that starts and ends on two neighbouring points of the \
             sequence"
        );
        let err = from_flags(None, Some("0,1/2,1")).unwrap_err();
        assert_eq!(err, SegmentError::SequenceWithoutSegment);
        let err = from_flags(Some("0:1/1000003"), None).unwrap_err();
        assert!(err.to_string().contains("common denominator"), "{err}");
        let err = from_flags(Some("0:x"), None).unwrap_err();
        assert_eq!(
            err.to_string(),
            "`0:x`: `x` is not a fraction (1/3), a decimal (0.5) or a percentage (50%)"
        );
        // A segment alone is filled around.
        let t = from_flags(Some("1/4:1/2"), None).unwrap();
        assert_eq!(t.to_string(), "1/4:1/2 in 0,1/4,1/2,1");
    }
}
