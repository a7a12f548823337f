//! Resource sampling during a run: the target's containers (one streaming Docker stats
//! call each) and processes (/proc), and the generator itself. The sampler keeps off the
//! hot path on a thread of its own; the run loop folds its samples at each aggregator
//! tick into `stats.jsonl`, `stats.md`, the report's charts, summary.json's `stack`
//! section and the verdict on who was the bottleneck: the generator, the target or neither.
//!
//! One job per file: [`sample`] is a sample and the `docker stats` arithmetic,
//! [`docker`] and [`process`] read the two kinds of source, [`sampler`] runs them,
//! [`book`] folds samples per service, [`saturation`] judges who saturated, [`files`]
//! writes the files, [`watch`] ties them to a run, [`live`] is `host stats`.

pub(crate) mod book;
pub(crate) mod docker;
pub(crate) mod files;
pub(crate) mod live;
pub(crate) mod process;
pub(crate) mod sample;
pub(crate) mod sampler;
pub(crate) mod saturation;
pub(crate) mod watch;

pub(crate) use book::StackSummary;
pub(crate) use saturation::{Bottleneck, RunFigures, SaturationVerdict, ScenarioCounts};
pub(crate) use watch::{prepare, Prepared, ResourceWatch};
