//! `host compare A B`: two runs' summaries side by side; the exit code says whether B
//! regressed.

use crate::config::args::duration_arg;
use crate::run::exit_code;
use clap::Args;
use std::path::PathBuf;
use std::time::Duration;

// The flags of `host compare` (its help is the variant's in `Command`).
#[derive(Args, Debug)]
pub(super) struct CompareArgs {
    /// The baseline run: a results folder or its summary.json.
    a: PathBuf,
    /// The run to judge against it.
    b: PathBuf,
    /// Allowed change before a metric counts as a regression (`10%`).
    #[arg(long, default_value = "10%", value_parser = crate::output::compare::parse_tolerance)]
    tolerance: f64,
    /// Timings must also rise by at least this much to count (`1ms`, `500us`).
    #[arg(long, default_value = "1ms", value_parser = duration_arg)]
    min_latency_change: Duration,
}

/// Prints the comparison; exits [`exit_code::REGRESSION`] when B regressed.
pub(super) fn compare(args: CompareArgs) -> anyhow::Result<i32> {
    let tolerance = crate::output::compare::Tolerance {
        relative: args.tolerance,
        min_latency_ms: args.min_latency_change.as_secs_f64() * 1000.0,
    };
    let comparison = crate::output::compare::compare_runs(&args.a, &args.b, tolerance)?;
    print!("{}", crate::output::compare::render(&comparison));
    Ok(if comparison.regressions() > 0 {
        exit_code::REGRESSION
    } else {
        exit_code::OK
    })
}
