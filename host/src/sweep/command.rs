//! `host sweep`: its flags and what the command does with them.

use super::driver::{self, SweepPlan};
use super::levels;
use crate::config::Overrides;
use anyhow::{bail, Result};
use clap::Args;
use std::path::PathBuf;
use std::time::Duration;

/// `host sweep PLUGIN (--levels LIST | --from A --to B [--factor F]) ...`.
#[derive(Args, Debug)]
pub(crate) struct SweepArgs {
    /// The plugin component (.wasm).
    pub plugin: PathBuf,
    /// Run config (TOML) overlaid on the plugin's defaults; its scenarios are scaled to
    /// each level in proportion, its thresholds judge each level.
    #[arg(short, long)]
    pub config: Option<PathBuf>,
    /// The levels, rising: iterations/s for arrival-rate configs, VUs for closed ones
    /// (`50,100,200,400`).
    #[arg(long, conflicts_with_all = ["from", "to"])]
    pub levels: Option<String>,
    /// First level of a geometric series (with --to).
    #[arg(long, requires = "to")]
    pub from: Option<f64>,
    /// Last level of the series (included when the series lands on it).
    #[arg(long, requires = "from")]
    pub to: Option<f64>,
    /// Each level of the series is the last times this.
    #[arg(long, default_value_t = 2.0)]
    pub factor: f64,
    /// How long each level holds its load (`30s`).
    #[arg(long, default_value = "30s", value_parser = crate::config::args::duration_arg)]
    pub hold: Duration,
    /// How long each level ramps up from zero before holding (`5s`; default none).
    #[arg(long, default_value = "0", value_parser = crate::config::args::duration_arg)]
    pub ramp: Duration,
    /// Bisect this many times between the last level that passed and the first that
    /// failed.
    #[arg(long, default_value_t = 0)]
    pub refine: u32,
    /// Run every level, even after one failed.
    #[arg(long = "continue")]
    pub keep_going: bool,
    /// An environment variable for the plugin: -e KEY=VALUE (repeatable).
    #[arg(short = 'e', long = "env", value_parser = crate::config::args::key_value)]
    pub env: Vec<(String, String)>,
    /// Allow a target (scheme://host:port) besides those in the config (repeatable).
    #[arg(long)]
    pub allow: Vec<String>,
    /// Sample this process during each level: PID or NAME=PID (repeatable); its CPU and
    /// memory appear per level and can be the binding resource.
    #[arg(long = "sample-pid", value_name = "[NAME=]PID")]
    pub sample_pid: Vec<String>,
    /// Sample this container during each level (name or id; repeatable).
    #[arg(long = "sample-container", value_name = "NAME")]
    pub sample_container: Vec<String>,
    /// Folder under which the sweep folder is made.
    #[arg(long, default_value = "results")]
    pub out: PathBuf,
    /// No progress lines from the levels' runs.
    #[arg(short, long)]
    pub quiet: bool,
    /// Start a Compose stack first (default: [stack] file, else
    /// compose/docker-compose.yml), keep it up across the levels, sample its containers
    /// per level and run against its entry URLs only; remove it at the end.
    #[arg(long, value_name = "COMPOSE_FILE", num_args = 0..=1)]
    pub stack: Option<Option<PathBuf>>,
    /// With --stack: leave the stack running after the sweep.
    #[arg(long, requires = "stack")]
    pub keep: bool,
    /// With --stack: the Compose project name (default: [stack] project, else `loadtest`).
    #[arg(long, short = 'p', requires = "stack")]
    pub project: Option<String>,
    /// With --stack: pin a service to cores, SERVICE=LIST (repeatable).
    #[arg(long, value_name = "SERVICE=LIST", requires = "stack")]
    pub cpus: Vec<String>,
    /// With --stack: limit a service's memory, SERVICE=SIZE (repeatable).
    #[arg(long, value_name = "SERVICE=SIZE", requires = "stack")]
    pub memory: Vec<String>,
}

/// Runs `host sweep`; returns the exit code: 0 when the sweep ran to its end (whatever
/// its levels' verdicts), 105 when Ctrl-C ended it early.
pub(crate) async fn run(args: SweepArgs) -> Result<i32> {
    let levels = match (&args.levels, args.from, args.to) {
        (Some(list), _, _) => levels::parse_list(list)?,
        (None, Some(from), Some(to)) => levels::geometric(from, to, args.factor)?,
        _ => bail!(
            "say which levels to run: --levels 50,100,200 or --from 100 --to 3200 [--factor 2]"
        ),
    };
    if args.hold < Duration::from_secs(1) {
        bail!("--hold must be at least 1s: shorter levels measure start-up, not capacity");
    }
    for pid in &args.sample_pid {
        crate::config::sampling::parse_pid_target(pid).map_err(anyhow::Error::msg)?;
    }
    let plan = SweepPlan {
        plugin: args.plugin,
        config: args.config,
        overrides: Overrides {
            env: args.env,
            allow: args.allow,
            sample_pids: args.sample_pid,
            sample_containers: args.sample_container,
            ..Overrides::default()
        },
        levels,
        hold: args.hold,
        ramp: args.ramp,
        refine: args.refine,
        keep_going: args.keep_going,
        out: args.out,
        quiet: args.quiet,
        stack: args.stack.map(|file| {
            let flags = crate::stack::up::StackFlags {
                file,
                project: args.project,
                cpus: args.cpus,
                memory: args.memory,
                timeout: None,
                quiet: args.quiet,
            };
            (flags, args.keep)
        }),
    };
    let outcome = driver::sweep(plan).await?;
    print!("{}", super::report::printed(&outcome.result));
    println!("\n  sweep results: {}", outcome.dir.display());
    Ok(if outcome.result.interrupted {
        crate::run::exit_code::INTERRUPTED
    } else {
        crate::run::exit_code::OK
    })
}
