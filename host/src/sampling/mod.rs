//! Resource sampling during a run: the target's containers (one streaming Docker stats
//! call each) and processes (/proc), and the generator itself. The sampler keeps off the
//! hot path on a thread of its own; the run loop folds its samples at each aggregator
//! tick into `stats.jsonl`, `stats.md`, the report's charts, summary.json's `stack`
//! section and the verdict on whether the generator was the bottleneck.
//!
//! One job per file: [`sample`] is a sample and the `docker stats` arithmetic,
//! [`docker`] and [`process`] read the two kinds of source, [`sampler`] runs them,
//! [`book`] folds samples per service, [`saturation`] judges the generator, [`files`]
//! writes the files, [`watch`] ties them to a run, [`live`] is `host stats`.

pub mod book;
pub mod docker;
pub mod files;
pub mod live;
pub mod process;
pub mod sample;
pub mod sampler;
pub mod saturation;
pub mod watch;

pub use book::StackSummary;
pub use saturation::GeneratorVerdict;
pub use watch::{prepare, Prepared, ResourceWatch, Sampled};
