//! `host sweep`: runs a plugin at one load level after another until its thresholds
//! break, then models the target's capacity from the levels: the breakpoint, the knee,
//! a Universal Scalability Law fit, the binding resource and a Little's-law check.
//!
//! One job per file: [`levels`] plans the levels, [`scale`] makes each level's run
//! config, [`driver`] runs them, [`figures`] reads each level's summary, [`usl`] fits
//! the USL, [`model`] draws the conclusions, [`report`] and [`html`] write them,
//! [`stack`] keeps a Compose stack up across the levels, [`command`] is the command
//! line; [`target_capacity`] is the demo target's capacity
//! switch that sweeps are checked against.

pub mod command;
pub mod driver;
pub mod figures;
pub mod html;
pub mod levels;
pub mod model;
pub mod report;
pub mod scale;
pub mod stack;
pub mod target_capacity;
pub mod usl;
