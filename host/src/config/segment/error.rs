//! Why a share, a segment or a sequence given on the command line is refused; each
//! message says what to write instead.

use super::ratio::{Ratio, RatioError};
use std::fmt;

/// What is wrong with `--execution-segment` or `--execution-segment-sequence`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SegmentError {
    /// A share that does not parse.
    #[error("{0}")]
    Ratio(RatioError),
    /// A segment ending past the whole test.
    #[error("the segment's end {0} is more than 1")]
    EndAboveOne(Ratio),
    /// A segment that is empty or backwards.
    #[error("the segment's start {from} must be less than its end {to}")]
    StartNotBelowEnd {
        /// Its start.
        from: Ratio,
        /// Its end.
        to: Ratio,
    },
    /// A sequence of fewer than two points.
    #[error("a sequence needs at least 2 points (such as 0,1/2,1), got {0}")]
    TooFewPoints(usize),
    /// Two neighbouring points that do not rise.
    #[error(
        "its points must rise: {next} after {previous} would make an empty or overlapping segment"
    )]
    NotRising {
        /// The earlier point.
        previous: Ratio,
        /// The point after it.
        next: Ratio,
    },
    /// A sequence reaching past the whole test.
    #[error("the point {0} is more than 1")]
    PointAboveOne(Ratio),
    /// An even sequence of no segment.
    #[error("a sequence needs at least one segment")]
    NoSegment,
    /// The segment does not fall on two neighbouring points of the sequence.
    #[error(
        "the segment {} is not one of the sequence's segments ({}); \
         give a segment that starts and ends on two neighbouring points of the sequence",
        Listed(std::slice::from_ref(.segment)),
        Listed(.sequence)
    )]
    NotInSequence {
        /// The segment given, `(from, to)`.
        segment: (Ratio, Ratio),
        /// The sequence's segments, gaps filled.
        sequence: Vec<(Ratio, Ratio)>,
    },
    /// Striping would need a cycle longer than `max` indexes.
    #[error(
        "the segments' lengths have a common denominator above {max}; \
         use simpler fractions (such as 1/3 instead of 0.333333)"
    )]
    DenominatorTooLarge {
        /// The longest cycle allowed.
        max: u64,
    },
    /// A sequence without the segment this process runs.
    #[error(
        "--execution-segment-sequence needs --execution-segment, the segment of \
         the sequence this process runs"
    )]
    SequenceWithoutSegment,
    /// One of the flags' texts, with what is wrong with it.
    #[error("`{text}`: {problem}")]
    In {
        /// The flag's value as given.
        text: String,
        /// What is wrong with it.
        problem: Box<SegmentError>,
    },
}

impl SegmentError {
    /// The error as found in the flag value `text`.
    pub(super) fn in_text(self, text: &str) -> Self {
        Self::In {
            text: text.to_owned(),
            problem: Box::new(self),
        }
    }
}

impl From<RatioError> for SegmentError {
    fn from(e: RatioError) -> Self {
        Self::Ratio(e)
    }
}

/// Segments as `from:to`, separated by `, ` (as [`super::ExecutionSegment`] shows one).
struct Listed<'a>(&'a [(Ratio, Ratio)]);

impl fmt::Display for Listed<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (from, to)) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{from}:{to}")?;
        }
        Ok(())
    }
}
