//! The command line: `host run`, `host inspect`, `host demo`, `host compare`, `host target`,
//! `host up`, `host down`.

use crate::config::{parse_duration, Overrides};
use crate::run::{self, RunRequest};
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;
use std::time::Duration;

/// Load tests whose scenarios are sandboxed WebAssembly components.
#[derive(Parser, Debug)]
#[command(name = "host", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run a scenario plugin (its default config, or --config).
    Run(RunArgs),
    /// Show a plugin's name, version, scenarios, default config and contract version.
    Inspect {
        /// The plugin component (.wasm).
        plugin: PathBuf,
    },
    /// Start the embedded demo target and run the bundled `notes` plugin against it.
    Demo(DemoArgs),
    /// Compare two runs' summary.json side by side; exits 98 when B regressed beyond
    /// the tolerance (latency or errors up, throughput down).
    Compare {
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
    },
    /// Start a Compose stack (images built from this project's binaries), pinned to
    /// cores with memory limits, wait until every service is ready, print its URLs.
    Up(UpArgs),
    /// Remove a Compose project's containers, networks and volumes (by its label).
    Down {
        /// The Compose project name.
        #[arg(long, short = 'p')]
        project: Option<String>,
        /// Run config whose `[stack]` names the project.
        #[arg(short, long)]
        config: Option<PathBuf>,
    },
    /// Serve the demo target until Ctrl-C (the same app `host demo` embeds).
    Target {
        /// Address to listen on (loopback only).
        #[arg(long, default_value = "127.0.0.1:8080")]
        listen: std::net::SocketAddr,
        #[command(flatten)]
        faults: FaultArgs,
    },
}

/// Faults the demo target injects into every request but /health and /admin/*.
#[derive(Args, Debug, Clone)]
struct FaultArgs {
    /// Latency added to every request (`250ms`, `2s`).
    #[arg(long, value_parser = duration_arg, default_value = "0")]
    latency: Duration,
    /// Stall all requests periodically: a stall window opens every this long after the
    /// target starts (`5s`); requests arriving inside one wait until it closes.
    #[arg(long, value_parser = duration_arg)]
    stall_every: Option<Duration>,
    /// Length of each stall window (with --stall-every).
    #[arg(long, value_parser = duration_arg, default_value = "1s")]
    stall_for: Duration,
    /// Share of requests answered with an injected 500, from 0.0 to 1.0.
    #[arg(long, value_parser = share_arg, default_value_t = 0.0)]
    error_rate: f64,
}

impl FaultArgs {
    fn faults(&self) -> demo_target::Faults {
        demo_target::Faults {
            latency: self.latency,
            stall_every: self.stall_every,
            stall_for: self.stall_for,
            error_rate: self.error_rate,
        }
    }
}

/// Where the stack is and what it gets: shared by `host up` and `host run --stack`.
#[derive(Args, Debug, Clone, Default)]
struct StackArgs {
    /// The Compose project name (default: [stack] project, else `loadtest`).
    #[arg(long, short = 'p')]
    project: Option<String>,
    /// Pin a service to cores: SERVICE=LIST, e.g. api=0 or api=0-1 (repeatable).
    #[arg(long, value_name = "SERVICE=LIST")]
    cpus: Vec<String>,
    /// Limit a service's memory: SERVICE=SIZE, e.g. api=256m (repeatable).
    #[arg(long, value_name = "SERVICE=SIZE")]
    memory: Vec<String>,
    /// How long to wait until every service is ready (default 120s).
    #[arg(long, value_parser = duration_arg)]
    timeout: Option<Duration>,
}

#[derive(Args, Debug)]
struct UpArgs {
    /// The compose file (default: [stack] file, else compose/docker-compose.yml).
    #[arg(short, long)]
    file: Option<PathBuf>,
    /// Run config whose `[stack]` section gives the file, project, cpus and memory.
    #[arg(short, long)]
    config: Option<PathBuf>,
    #[command(flatten)]
    stack: StackArgs,
}

impl StackArgs {
    fn flags(&self, file: Option<PathBuf>, quiet: bool) -> crate::stack::up::StackFlags {
        crate::stack::up::StackFlags {
            file,
            project: self.project.clone(),
            cpus: self.cpus.clone(),
            memory: self.memory.clone(),
            timeout: self.timeout,
            quiet,
        }
    }
}

/// The `[stack]` section of a run config file (the rest of the file is not checked).
fn stack_section(path: Option<&std::path::Path>) -> anyhow::Result<crate::config::StackConfig> {
    let Some(path) = path else {
        return Ok(Default::default());
    };
    let text = std::fs::read_to_string(path)
        .map_err(|e| anyhow::anyhow!("cannot read config {}: {e}", path.display()))?;
    let table = crate::config::parse_toml(&text, &path.display().to_string())
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    crate::config::stack::parse(&table).map_err(|e| anyhow::anyhow!("config error: {e}"))
}

#[derive(Args, Debug)]
struct RunArgs {
    /// The plugin component (.wasm).
    plugin: PathBuf,
    #[command(flatten)]
    common: CommonArgs,
}

#[derive(Args, Debug)]
struct DemoArgs {
    /// Run this plugin instead of the bundled `notes` example.
    #[arg(long)]
    plugin: Option<PathBuf>,
    #[command(flatten)]
    faults: FaultArgs,
    #[command(flatten)]
    common: CommonArgs,
}

#[derive(Args, Debug)]
struct CommonArgs {
    /// Run config (TOML) overlaid on the plugin's defaults.
    #[arg(short, long)]
    config: Option<PathBuf>,
    /// VUs of every scenario that has a `vus` option.
    #[arg(long)]
    vus: Option<u64>,
    /// Duration of every constant-vus / constant-arrival-rate scenario (`30s`, `1m30s`).
    #[arg(long, value_parser = duration_arg)]
    duration: Option<Duration>,
    /// Total iterations (constant-vus scenarios become shared-iterations, as in k6).
    #[arg(long)]
    iterations: Option<u64>,
    /// Rate of every constant-arrival-rate scenario (per its time_unit).
    #[arg(long)]
    rate: Option<f64>,
    /// An environment variable for the plugin: -e KEY=VALUE (repeatable).
    #[arg(short = 'e', long = "env", value_parser = key_value)]
    env: Vec<(String, String)>,
    /// Allow a target (scheme://host:port) besides those in the config (repeatable).
    #[arg(long)]
    allow: Vec<String>,
    /// Folder under which the results folder is made.
    #[arg(long, default_value = "results")]
    out: PathBuf,
    /// No progress lines.
    #[arg(short, long)]
    quiet: bool,
}

impl CommonArgs {
    fn request(self, plugin: PathBuf) -> RunRequest {
        RunRequest {
            plugin,
            config: self.config,
            overrides: Overrides {
                vus: self.vus,
                duration: self.duration,
                iterations: self.iterations,
                rate: self.rate,
                env: self.env,
                allow: self.allow,
            },
            out: self.out,
            quiet: self.quiet,
            handle_signals: true,
        }
    }
}

fn duration_arg(text: &str) -> Result<Duration, String> {
    parse_duration(text).map_err(|e| e.to_string())
}

fn share_arg(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(share) if (0.0..=1.0).contains(&share) => Ok(share),
        _ => Err(format!("{text:?} is not a number from 0.0 to 1.0")),
    }
}

fn key_value(text: &str) -> Result<(String, String), String> {
    let (k, v) = text
        .split_once('=')
        .ok_or_else(|| format!("expected KEY=VALUE, got {text:?}"))?;
    if k.is_empty() {
        return Err(format!("empty key in {text:?}"));
    }
    Ok((k.to_string(), v.to_string()))
}

/// Parses the command line, runs the command, returns the exit code.
pub fn main() -> i32 {
    let cli = Cli::parse();
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
    match runtime.block_on(dispatch(cli.command)) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            1
        }
    }
}

async fn dispatch(command: Command) -> anyhow::Result<i32> {
    match command {
        Command::Run(args) => {
            let outcome = run::run(args.common.request(args.plugin)).await?;
            Ok(finish(outcome))
        }
        Command::Inspect { plugin } => {
            let inspected =
                run::inspect(&plugin, crate::config::Limits::default().memory_bytes).await?;
            print!("{}", crate::output::text::render_inspection(&inspected));
            Ok(0)
        }
        Command::Demo(args) => {
            let faults = args.faults.faults();
            let demo =
                crate::demo::run_demo(args.plugin, faults, |plugin| args.common.request(plugin))
                    .await?;
            let code = finish(demo.outcome);
            println!("  the demo target served {} requests", demo.served);
            Ok(code)
        }
        Command::Compare {
            a,
            b,
            tolerance,
            min_latency_change,
        } => {
            let tolerance = crate::output::compare::Tolerance {
                relative: tolerance,
                min_latency_ms: min_latency_change.as_secs_f64() * 1000.0,
            };
            let comparison = crate::output::compare::compare_runs(&a, &b, tolerance)?;
            print!("{}", crate::output::compare::render(&comparison));
            Ok(if comparison.regressions() > 0 {
                run::exit_code::REGRESSION
            } else {
                run::exit_code::OK
            })
        }
        Command::Up(args) => {
            let config = stack_section(args.config.as_deref())?;
            let options =
                crate::stack::UpOptions::resolve(&args.stack.flags(args.file, false), &config)?;
            let up = crate::stack::up(&options);
            // Ctrl-C while starting: remove what was started, as after any failure.
            let stack = tokio::select! {
                stack = up => stack?,
                _ = tokio::signal::ctrl_c() => {
                    eprintln!("interrupted: removing project {}", options.project);
                    crate::stack::up::down_quietly(&options.project).await;
                    return Ok(run::exit_code::INTERRUPTED);
                }
            };
            print!("{}", crate::stack::render::render(&stack));
            println!("stop it with: host down --project {}", stack.project);
            Ok(0)
        }
        Command::Down { project, config } => {
            let config = stack_section(config.as_deref())?;
            let project = project
                .or(config.project)
                .unwrap_or_else(|| crate::stack::up::DEFAULT_PROJECT.to_string());
            let removed = crate::stack::down(&project).await?;
            println!(
                "project {project}: removed {}",
                crate::stack::up::describe_removed(&removed)
            );
            Ok(0)
        }
        Command::Target { listen, faults } => {
            if !listen.ip().is_loopback() {
                anyhow::bail!("the demo target listens on loopback only; use 127.0.0.1:PORT");
            }
            let config = demo_target::DemoConfig {
                faults: faults.faults(),
                ..Default::default()
            };
            let server = demo_target::DemoServer::start(listen, config).await?;
            println!("demo target listening on {}", server.base_url());
            tokio::signal::ctrl_c().await?;
            server.shutdown().await;
            Ok(0)
        }
    }
}

/// Prints the summary and where the results are; returns the exit code.
pub fn finish(outcome: run::RunOutcome) -> i32 {
    print!("{}", crate::output::text::render(&outcome.summary));
    println!("\n  results: {}", outcome.results_dir.display());
    outcome.exit_code
}
