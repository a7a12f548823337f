//! The command line: `host run`, `host inspect`, `host demo`, `host compare`, `host target`,
//! `host up`, `host down`, `host sweep`, `host k8s render`, `host push`, `host pull`,
//! `host login`, `host runs`, `host completions`, `host man`, `host schema`.
//!
//! This module declares the commands and hands each to one function in a module of its
//! own: [`run`] (`run`, `inspect`), [`demo`] (`demo`, `target`), [`stack`] (`up`, `down`,
//! `stats`, `images`), [`distributed`] (`coordinate`, `worker`), [`compare`], [`runs`],
//! [`sweep`] (`sweep`, `k8s render`) and [`docs`] (`completions`, `man`, `schema`);
//! [`common`] holds the flags every run-like command shares, [`results`] what they print
//! at the end, [`remember`] how they record the run in the store and judge it against
//! a baseline.

mod common;
mod compare;
mod demo;
mod distributed;
mod docs;
mod remember;
mod results;
mod run;
mod runs;
mod stack;
mod sweep;
mod value_errors;

use clap::{CommandFactory, Parser, Subcommand};
use std::time::Duration;

/// `host --version`: the version, and the QuickJS runtime k6 scripts are built on (a
/// host built without clang falls back to the vendored one, issue #53).
const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (k6 scripts on ",
    env!("HOST_JS_RUNTIME"),
    ")"
);

/// Load tests whose scenarios are sandboxed WebAssembly components.
#[derive(Parser, Debug)]
#[command(name = "host", version = VERSION, about, long_about = None)]
pub(crate) struct Cli {
    /// No colours in the output (as the NO_COLOR convention).
    #[arg(long, global = true, env = "K6_NO_COLOR", value_parser = clap::builder::BoolishValueParser::new())]
    no_color: bool,
    /// Let a k6 script's `import` and `open()` bundle files outside the script's
    /// folder (absolute paths, `../`, symlinks out of it); each is named on stderr.
    /// Without it such a file is refused: it would travel inside the built component.
    #[arg(long, global = true, env = "HOST_ALLOW_OUTSIDE_FILES", value_parser = clap::builder::BoolishValueParser::new())]
    allow_outside_files: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run a scenario plugin (its default config, or --config).
    Run(run::RunArgs),
    /// Show a plugin's name, version, scenarios, default config and contract version.
    Inspect(run::InspectArgs),
    /// Push a plugin (or a plugin project, built first) to an OCI registry as a
    /// WebAssembly artifact, and print its digest and the pin for a run config.
    Push(crate::oci::command::PushArgs),
    /// Pull a plugin from an OCI registry into the cache (verified by digest).
    Pull(crate::oci::command::PullArgs),
    /// Check credentials for a registry and store them in Docker's config.json.
    Login(crate::oci::command::LoginArgs),
    /// Start the embedded demo target and run the bundled `notes` plugin against it.
    Demo(demo::DemoArgs),
    /// Start a plugin project in a folder of its own (scenario, run.toml, README, SDK).
    New(crate::author::NewArgs),
    /// Build a plugin project for wasm32-wasip2 and print the component's path.
    Build(crate::author::BuildArgs),
    /// Write a k6 script's remote modules into `vendor/` beside it (pinned by the lock
    /// file), so that it builds where the network is not reachable.
    Vendor(crate::author::VendorArgs),
    /// Compare two runs' summary.json side by side; exits 98 when B regressed beyond
    /// the tolerance (latency or errors up, throughput down).
    Compare(compare::CompareArgs),
    /// The store of runs: `list`, `show RUN`, `trend METRIC`, `baseline set RUN`,
    /// `compare A B`, `import DIR` (every run is recorded in it when it ends).
    Runs(runs::RunsCommand),
    /// A live table of a Compose project's containers: CPU, cpuset, memory and limit,
    /// network, block I/O and pids, as `docker stats` shows them.
    Stats(stack::StatsArgs),
    /// Start a Compose stack (images built from this project's binaries), pinned to
    /// cores with memory limits, wait until every service is ready, print its URLs.
    Up(stack::UpArgs),
    /// Remove a Compose project's containers, networks and volumes (by its label).
    Down(stack::DownArgs),
    /// Import the images of this project's binaries (`loadtest/NAME:TAG`, no registry)
    /// and print `NAME_TAG=TAG` lines for compose/distributed.yml and compose/swarm.yml.
    Images(stack::ImagesArgs),
    /// Run a plugin at rising load levels until its thresholds break, and model the
    /// target's capacity (breakpoint, knee, USL fit): sweep.md, sweep.json, sweep.html.
    Sweep(sweep::SweepCommand),
    /// Kubernetes: `host k8s render` writes the manifests of a distributed run.
    #[command(subcommand)]
    K8s(sweep::K8sCommand),
    /// Run a test over several `host worker` processes: hand them the plugin, the config,
    /// an execution segment each and setup()'s data, start them together, merge their
    /// metrics every second, and write one results folder.
    Coordinate(distributed::CoordinateArgs),
    /// Join a `host coordinate` run and make its share of the load.
    Worker(distributed::WorkerArgs),
    /// Serve the demo target until Ctrl-C (the same app `host demo` embeds).
    Target(demo::TargetArgs),
    /// Print a shell completion script: `host completions bash > ~/.local/share/bash-completion/completions/host`.
    Completions(docs::CompletionsArgs),
    /// Print the manual page (roff): `host man | man -l -`; with --dir, write one page
    /// per command there (host.1, host-run.1, ...).
    Man(docs::ManArgs),
    /// Print the JSON Schema of a run config (run.toml), for editors' TOML plugins.
    Schema,
}

/// Parses the command line, runs the command, returns the exit code.
pub fn main() -> i32 {
    let cli = Cli::parse();
    if cli.no_color {
        // Read by the terminal styling of the progress bars (the `console` crate);
        // set before any thread starts.
        std::env::set_var("NO_COLOR", "1");
    }
    crate::author::js::outside::allow(cli.allow_outside_files);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return 1;
        }
    };
    let code = match runtime.block_on(dispatch(cli.command)) {
        Ok(code) => code,
        Err(e) => {
            crate::stderr::line(format_args!("error: {e:#}"));
            1
        }
    };
    // What is queued for stderr is written before exiting, unless nobody reads it.
    crate::stderr::writer().flush(STDERR_DRAIN);
    code
}

/// Longest the process waits at exit for its queued stderr lines to be written.
const STDERR_DRAIN: Duration = Duration::from_secs(2);

/// Hands each command to its function; returns the exit code.
async fn dispatch(command: Command) -> anyhow::Result<i32> {
    match command {
        Command::Completions(args) => docs::completions(args, Cli::command()),
        Command::Man(args) => docs::man(args, Cli::command()),
        Command::Schema => docs::schema(),
        Command::Run(args) => run::run(args).await,
        Command::Inspect(args) => run::inspect(args).await,
        Command::K8s(command) => sweep::k8s(command, |argv| Cli::try_parse_from(argv).map(drop)),
        Command::New(args) => crate::author::new::run(&args),
        Command::Build(args) => crate::author::build::run(&args),
        Command::Vendor(args) => crate::author::build::vendor(&args),
        Command::Demo(args) => demo::demo(args).await,
        Command::Stats(args) => stack::stats(args).await,
        Command::Compare(args) => compare::compare(args),
        Command::Runs(args) => runs::runs(args),
        Command::Up(args) => stack::up(args).await,
        Command::Images(args) => stack::images(args).await,
        Command::Down(args) => stack::down(args).await,
        Command::Sweep(args) => sweep::sweep(args).await,
        Command::Push(args) => crate::oci::command::push(args).await,
        Command::Pull(args) => crate::oci::command::pull(args).await,
        Command::Login(args) => crate::oci::command::login(args).await,
        Command::Coordinate(args) => distributed::coordinate(args).await,
        Command::Worker(args) => distributed::worker(args).await,
        Command::Target(args) => demo::target(args).await,
    }
}
