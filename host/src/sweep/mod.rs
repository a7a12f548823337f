//! `host sweep`: runs a plugin at one load level after another until its thresholds
//! break, then models the target's capacity from the levels: the breakpoint, the knee,
//! a Universal Scalability Law fit, the binding resource and a Little's-law check.
//!
//! One job per file: [`levels`] plans the levels, [`scale`] makes each level's run
//! config, [`driver`] runs them, [`figures`] reads each level's summary, [`usl`] fits
//! the USL, [`model`] draws the conclusions, [`report`] and [`html`] write them,
//! [`stack`] keeps a Compose stack up across the levels, [`command`] is the command
//! line. The demo target's capacity switch that sweeps are checked against
//! (`--workers`, `--service-time`, ...) is the demo target's own
//! (`demo_target::args::CapacityArgs`).

pub(crate) mod command;
pub(crate) mod driver;
pub(crate) mod figures;
pub(crate) mod html;
pub(crate) mod levels;
pub(crate) mod model;
pub(crate) mod report;
pub(crate) mod scale;
pub(crate) mod stack;
pub(crate) mod usl;
