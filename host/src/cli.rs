//! The command line: `host run`, `host inspect`, `host demo`, `host compare`, `host target`,
//! `host up`, `host down`, `host sweep`, `host k8s render`, `host push`, `host pull`,
//! `host login`, `host completions`, `host man`, `host schema`.

use crate::config::args::{duration_arg, key_value};
use crate::config::{parse_duration, Overrides};
use crate::run::{self, RunRequest};
use clap::{Args, CommandFactory, Parser, Subcommand};
use std::path::PathBuf;
use std::time::Duration;

/// Load tests whose scenarios are sandboxed WebAssembly components.
#[derive(Parser, Debug)]
#[command(name = "host", version, about, long_about = None)]
pub(crate) struct Cli {
    /// No colours in the output (as the NO_COLOR convention).
    #[arg(long, global = true, env = "K6_NO_COLOR", value_parser = clap::builder::BoolishValueParser::new())]
    no_color: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run a scenario plugin (its default config, or --config).
    Run(RunArgs),
    /// Show a plugin's name, version, scenarios, default config and contract version.
    Inspect {
        /// The plugin component (.wasm), or a registry reference
        /// (REGISTRY/REPOSITORY:TAG or @sha256:DIGEST).
        plugin: PathBuf,
        #[command(flatten)]
        registry: crate::oci::RegistryOptions,
    },
    /// Push a plugin (or a plugin project, built first) to an OCI registry as a
    /// WebAssembly artifact, and print its digest and the pin for a run config.
    Push(crate::oci::command::PushArgs),
    /// Pull a plugin from an OCI registry into the cache (verified by digest).
    Pull(crate::oci::command::PullArgs),
    /// Check credentials for a registry and store them in Docker's config.json.
    Login(crate::oci::command::LoginArgs),
    /// Start the embedded demo target and run the bundled `notes` plugin against it.
    Demo(DemoArgs),
    /// Start a plugin project in a folder of its own (scenario, run.toml, README, SDK).
    New(crate::author::NewArgs),
    /// Build a plugin project for wasm32-wasip2 and print the component's path.
    Build(crate::author::BuildArgs),
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
    /// A live table of a Compose project's containers: CPU, cpuset, memory and limit,
    /// network, block I/O and pids, as `docker stats` shows them.
    Stats {
        /// The Compose project (default: the run config's `[stack] project`, else
        /// `loadtest`, as `host up`).
        #[arg(long, short = 'p')]
        project: Option<String>,
        /// Run config whose `[stack]` names the project.
        #[arg(short, long)]
        config: Option<PathBuf>,
        /// Time between two tables (`1s`, `5s`).
        #[arg(long, default_value = "1s", value_parser = duration_arg)]
        interval: Duration,
        /// Stop after this many tables (default: until Ctrl-C).
        #[arg(long)]
        count: Option<u64>,
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
    /// Import the images of this project's binaries (`loadtest/NAME:TAG`, no registry)
    /// and print `NAME_TAG=TAG` lines for compose/distributed.yml and compose/swarm.yml.
    Images {
        /// The binaries (default: host and demo-target).
        names: Vec<String>,
    },
    /// Run a plugin at rising load levels until its thresholds break, and model the
    /// target's capacity (breakpoint, knee, USL fit): sweep.md, sweep.json, sweep.html.
    Sweep(SweepCommand),
    /// Kubernetes: `host k8s render` writes the manifests of a distributed run.
    #[command(subcommand)]
    K8s(K8sCommand),
    /// Run a test over several `host worker` processes: hand them the plugin, the config,
    /// an execution segment each and setup()'s data, start them together, merge their
    /// metrics every second, and write one results folder.
    Coordinate(CoordinateArgs),
    /// Join a `host coordinate` run and make its share of the load.
    Worker(WorkerArgs),
    /// Serve the demo target until Ctrl-C (the same app `host demo` embeds).
    Target {
        /// Address to listen on (loopback only).
        #[arg(long, default_value = "127.0.0.1:8080")]
        listen: std::net::SocketAddr,
        #[command(flatten)]
        faults: FaultArgs,
        /// Requests per second each client address may make (except /health, /metrics
        /// and /admin/*); past it the answer is 429 with Retry-After.
        #[arg(long, value_name = "N")]
        rate_limit: Option<u32>,
        /// A proxy (address or CIDR range) whose X-Forwarded-For is believed as the
        /// client address (repeatable); from anyone else the header is ignored.
        #[arg(long = "trusted-proxy", value_name = "CIDR", value_parser = demo_target::Cidr::parse)]
        trusted_proxies: Vec<demo_target::Cidr>,
        /// How long an access token of the account API (`POST /accounts`,
        /// `POST /auth/refresh`) stays valid, e.g. `5s` (rest-mix refreshes before it ends).
        #[arg(long, value_parser = duration_arg, default_value = "30s")]
        access_token_ttl: Duration,
        /// Large groups to seed after the ten small ones (numbered from 11), for paging
        /// and search over many notes.
        #[arg(long, value_name = "N", default_value_t = 0)]
        large_groups: u32,
        /// Notes in each large group (with --large-groups).
        #[arg(long, value_name = "N", default_value_t = 10_000)]
        large_group_notes: u32,
        /// Also serve the demo target's gRPC face on this address (loopback only): the
        /// gateway `demo.gateway.v1.Gateway` on the same state, with server reflection,
        /// e.g. 127.0.0.1:26500.
        #[arg(long, value_name = "ADDR")]
        grpc_listen: Option<std::net::SocketAddr>,
    },
    /// Print a shell completion script: `host completions bash > ~/.local/share/bash-completion/completions/host`.
    Completions {
        /// The shell (bash, zsh, fish, powershell, elvish).
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff): `host man | man -l -`; with --dir, write one page
    /// per command there (host.1, host-run.1, ...).
    Man {
        /// Folder to write every command's page into, instead of printing host.1.
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
    /// Print the JSON Schema of a run config (run.toml), for editors' TOML plugins.
    Schema,
}

/// `host sweep`: its own flags, and how to reach a registry its plugin is in.
#[derive(Args, Debug)]
struct SweepCommand {
    #[command(flatten)]
    args: crate::sweep::command::SweepArgs,
    #[command(flatten)]
    registry: crate::oci::RegistryOptions,
}

/// `host k8s ...`.
#[derive(Subcommand, Debug)]
enum K8sCommand {
    /// Write the manifests of a distributed run: a ConfigMap with the plugin, a
    /// coordinator Job with its Service, and an Indexed Job of N workers.
    Render(crate::k8s::RenderArgs),
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
    #[command(flatten)]
    capacity: crate::sweep::target_capacity::CapacityArgs,
}

impl FaultArgs {
    /// The same faults as `host target` flags, for the demo's child target. Every field
    /// is named, so a new fault flag does not compile until it is passed on here too.
    fn flags(&self) -> Vec<String> {
        let FaultArgs {
            latency,
            stall_every,
            stall_for,
            error_rate,
            capacity,
        } = self;
        let mut flags = vec![
            format!("--latency={}ms", latency.as_millis()),
            format!("--stall-for={}ms", stall_for.as_millis()),
            format!("--error-rate={error_rate}"),
        ];
        if let Some(every) = stall_every {
            flags.push(format!("--stall-every={}ms", every.as_millis()));
        }
        flags.extend(capacity.flags());
        flags
    }

    fn faults(&self) -> demo_target::Faults {
        demo_target::Faults {
            latency: self.latency,
            stall_every: self.stall_every,
            stall_for: self.stall_for,
            error_rate: self.error_rate,
            capacity: self.capacity.capacity(),
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
}

#[derive(Args, Debug)]
struct UpArgs {
    /// How long to wait until every service is ready (default 120s).
    #[arg(long, value_parser = duration_arg)]
    timeout: Option<Duration>,
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
    fn flags(
        &self,
        file: Option<PathBuf>,
        timeout: Option<Duration>,
        quiet: bool,
    ) -> crate::stack::up::StackFlags {
        crate::stack::up::StackFlags {
            file,
            project: self.project.clone(),
            cpus: self.cpus.clone(),
            memory: self.memory.clone(),
            timeout,
            quiet,
        }
    }
}

/// The `[stack]` section of a run config file (the rest of the file is not checked).
fn stack_section(path: Option<&std::path::Path>) -> anyhow::Result<crate::config::StackConfig> {
    match path {
        None => Ok(Default::default()),
        Some(path) => {
            crate::config::stack::from_file(path).map_err(|e| anyhow::anyhow!("config error: {e}"))
        }
    }
}

#[derive(Args, Debug)]
struct RunArgs {
    /// The plugin component (.wasm), a plugin project's folder (as `host new` makes it,
    /// built first when its sources changed since its last build), a k6 script (.js: built into a
    /// component first, cached by the hash of its inputs), or a registry
    /// reference (REGISTRY/REPOSITORY:TAG or @sha256:DIGEST); without it, the run
    /// config's `plugin = { oci | path, sha256 }`.
    plugin: Option<PathBuf>,
    #[command(flatten)]
    registry: crate::oci::RegistryOptions,
    /// Start a Compose stack first (default: [stack] file, else
    /// compose/docker-compose.yml), run against its entry URLs only, then remove it.
    #[arg(long, value_name = "COMPOSE_FILE", num_args = 0..=1, value_parser = stack_arg)]
    stack: Option<Option<PathBuf>>,
    /// With --stack: leave the stack running after the run.
    #[arg(long, requires = "stack")]
    keep: bool,
    #[command(flatten)]
    stack_args: StackArgs,
    #[command(flatten)]
    common: CommonArgs,
}

#[derive(Args, Debug)]
struct CoordinateArgs {
    /// The plugin component (.wasm), a k6 script (.js, built here), or a registry
    /// reference; the workers receive the component from the coordinator, or, for a
    /// reference, pull it themselves by its manifest digest.
    plugin: PathBuf,
    #[command(flatten)]
    registry: crate::oci::RegistryOptions,
    /// Send the plugin's bytes to every worker even when it came from a registry (for
    /// workers that cannot reach the registry).
    #[arg(long)]
    send_plugin: bool,
    /// How many workers take part (the run starts when all have joined).
    #[arg(long)]
    workers: u32,
    /// Address the workers dial (0.0.0.0:PORT to take workers from other machines:
    /// that needs a cluster token).
    #[arg(long, default_value = "127.0.0.1:7878")]
    listen: std::net::SocketAddr,
    /// File holding the cluster token every worker must prove it holds (else
    /// HOST_CLUSTER_TOKEN; without either, loopback only).
    #[arg(long, value_name = "FILE")]
    token_file: Option<PathBuf>,
    #[command(flatten)]
    common: CommonArgs,
}

#[derive(Args, Debug)]
struct WorkerArgs {
    /// The coordinator's address (HOST:PORT).
    #[arg(long)]
    coordinator: String,
    /// This worker's name in messages and summary.json (default: host name and pid).
    #[arg(long)]
    name: Option<String>,
    /// The plugin this worker expects: it is refused if the coordinator runs another.
    #[arg(long)]
    plugin: Option<PathBuf>,
    /// Folder under which the worker's own results folder is made.
    #[arg(long, default_value = "results")]
    out: PathBuf,
    /// How long to keep dialling a coordinator that is not listening yet.
    #[arg(long, default_value = "30s", value_parser = duration_arg)]
    connect_timeout: Duration,
    /// Run segment I of N (from 0): a Kubernetes Indexed Job's pods have it in
    /// JOB_COMPLETION_INDEX. Without it the coordinator deals segments by join order.
    #[arg(long, env = "JOB_COMPLETION_INDEX", value_name = "I")]
    index: Option<u32>,
    /// File holding the cluster token the coordinator must prove it holds (else
    /// HOST_CLUSTER_TOKEN).
    #[arg(long, value_name = "FILE")]
    token_file: Option<PathBuf>,
    /// Targets this worker lets the plugin reach (repeatable): the coordinator's
    /// `[targets] allow` is narrowed to those listed here too.
    #[arg(long, value_name = "URL")]
    allow: Vec<String>,
    /// How to reach the registry when the coordinator names the plugin by reference
    /// (credentials come from this worker's own Docker config.json).
    #[command(flatten)]
    registry: crate::oci::RegistryOptions,
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
    /// Run config (TOML) overlaid on the plugin's defaults. Repeatable: files are
    /// layered in order, the later on top. Tables merge key by key at every depth;
    /// arrays and values are replaced whole; [scenarios.NAME] merges into the earlier
    /// scenario of that name, unless it sets another executor (then it replaces it).
    #[arg(short, long)]
    config: Vec<PathBuf>,
    /// VUs of every scenario that has a `vus` option (with --stage: the VUs at the
    /// start, 1 without it).
    #[arg(long, env = "K6_VUS")]
    vus: Option<u64>,
    /// Duration of every constant-vus / constant-arrival-rate scenario (`30s`, `1m30s`).
    #[arg(long, value_parser = duration_arg, env = "K6_DURATION")]
    duration: Option<Duration>,
    /// Total iterations (constant-vus scenarios become shared-iterations, as in k6).
    #[arg(long, env = "K6_ITERATIONS")]
    iterations: Option<u64>,
    /// A stage DURATION:TARGET (`30s:100`), repeatable or comma-separated, in order: as
    /// k6's --stage, the scenarios are replaced by one ramping-vus scenario `default`
    /// with these stages.
    #[arg(
        short = 's',
        long = "stage",
        value_name = "DURATION:TARGET",
        value_parser = stage_arg,
        value_delimiter = ',',
        env = "K6_STAGES",
        conflicts_with_all = ["duration", "iterations"]
    )]
    stage: Vec<crate::config::Stage>,
    /// Rate of every constant-arrival-rate scenario (per its time_unit).
    #[arg(long)]
    rate: Option<f64>,
    /// An environment variable for the plugin: -e KEY=VALUE (repeatable; wins over
    /// --env-file and [env]).
    #[arg(short = 'e', long = "env", value_parser = key_value)]
    env: Vec<(String, String)>,
    /// Environment variables for the plugin from a file: KEY=VALUE lines, `#` comments,
    /// 'single' or "double" quoted values (wins over [env]; -e wins over it).
    #[arg(long, value_name = "FILE")]
    env_file: Option<PathBuf>,
    /// The trend columns summary.txt prints, in order (summary.json keeps them all):
    /// a comma-separated list of avg, min, med, max, p(90), p(95), p(99), p(99.9),
    /// count.
    #[arg(long, value_name = "LIST", value_parser = trend_stats_arg, env = "K6_SUMMARY_TREND_STATS")]
    summary_trend_stats: Option<TrendColumns>,
    /// Also write the summary to FILE in the JSON shape of k6's --summary-export
    /// (metrics keyed as k6 keys them, `p(95)`, thresholds inline), for the scripts
    /// and CI steps that read k6 summaries.
    #[arg(long, value_name = "FILE", env = "K6_SUMMARY_EXPORT")]
    summary_export: Option<PathBuf>,
    /// Accept any server certificate (as `[tls] insecure_skip_verify = true`; the
    /// summary warns that certificates were not verified).
    #[arg(long, env = "K6_INSECURE_SKIP_TLS_VERIFY", value_parser = clap::builder::BoolishValueParser::new())]
    insecure_skip_tls_verify: bool,
    /// Allow a target (scheme://host:port) besides those in the config (repeatable).
    #[arg(long)]
    allow: Vec<String>,
    /// Folder under which the results folder is made (default `results`); or, as in
    /// k6, a streaming output KIND=TARGET: `csv=FILE` and `json=FILE` (k6's formats,
    /// gzipped when FILE ends in .gz), `prometheus-rw=URL` (Prometheus remote write).
    /// Repeatable.
    #[arg(long, value_name = "DIR|KIND=TARGET", value_parser = out_arg, env = "K6_OUT")]
    out: Vec<crate::live::spec::Either>,
    /// Serve a live dashboard of the run at ADDR (default 127.0.0.1:5665), with the
    /// run's metrics in OpenMetrics text at /metrics.
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = crate::live::DEFAULT_DASHBOARD, value_parser = dashboard_arg)]
    dashboard: Option<std::net::SocketAddr>,
    /// No progress lines.
    #[arg(short, long, env = "K6_QUIET", value_parser = clap::builder::BoolishValueParser::new())]
    quiet: bool,
    /// Sample this container's CPU, memory, network and block I/O during the run
    /// (name or id; repeatable).
    #[arg(long = "sample-container", value_name = "NAME")]
    sample_container: Vec<String>,
    /// Sample this process's CPU, memory and block I/O during the run: PID or NAME=PID
    /// (repeatable).
    #[arg(long = "sample-pid", value_name = "[NAME=]PID", value_parser = pid_arg)]
    sample_pid: Vec<String>,
    /// Time between two samples of each service (default 1s; at least 1s).
    #[arg(long, value_parser = duration_arg)]
    stats_interval: Option<Duration>,
    /// Run only this share of the test, as k6: `FROM:TO` or `TO` (`1/3:2/3`, `0.5`,
    /// `50%:75%`); processes with the segments of one sequence together run it whole.
    #[arg(long, value_name = "SEGMENT")]
    execution_segment: Option<String>,
    /// Every process's segment boundaries (`0,1/3,2/3,1`), so that all stripe alike.
    #[arg(long, value_name = "POINTS", requires = "execution_segment")]
    execution_segment_sequence: Option<String>,
}

impl CommonArgs {
    /// Reads --env-file, so that its variables come before the -e ones (which win), and
    /// checks that --out names at most one results folder.
    fn read_env_file(&mut self) -> anyhow::Result<()> {
        let folders = self
            .out
            .iter()
            .filter(|o| matches!(o, crate::live::spec::Either::Folder(_)))
            .count();
        if folders > 1 {
            anyhow::bail!(
                "--out names {folders} results folders; give one, and outputs as --out KIND=TARGET (KIND one of {})",
                crate::live::spec::KINDS.join(", ")
            );
        }
        if let Some(path) = self.env_file.take() {
            let mut env = crate::config::env_file::read(&path).map_err(anyhow::Error::msg)?;
            env.append(&mut self.env);
            self.env = env;
        }
        Ok(())
    }

    fn request(self, plugin: PathBuf) -> RunRequest {
        let mut configs = self.config.into_iter();
        let mut results = PathBuf::from("results");
        let mut outputs = Vec::new();
        for out in self.out {
            match out {
                crate::live::spec::Either::Folder(dir) => results = dir,
                crate::live::spec::Either::Output(o) => outputs.push(o),
            }
        }
        RunRequest {
            plugin,
            config: configs.next(),
            overrides: Overrides {
                vus: self.vus,
                duration: self.duration,
                iterations: self.iterations,
                stages: self.stage,
                summary_trend_stats: self.summary_trend_stats.map(|c| c.0),
                insecure_skip_tls_verify: self.insecure_skip_tls_verify,
                config_layers: configs.collect(),
                rate: self.rate,
                env: self.env,
                allow: self.allow,
                sample_containers: self.sample_container,
                sample_pids: self.sample_pid,
                stats_interval: self.stats_interval,
                execution_segment: self.execution_segment,
                execution_segment_sequence: self.execution_segment_sequence,
                ..Overrides::default()
            },
            out: results,
            quiet: self.quiet,
            handle_signals: true,
            watch: None,
            live: crate::live::LiveOptions {
                dashboard: self.dashboard,
                outputs,
                // From the command line the finished page stays up until Ctrl-C.
                linger: self.dashboard.is_some(),
            },
            remote: None,
        }
    }
}

/// `30s:100`: a stage of the --stage shortcut.
fn stage_arg(text: &str) -> Result<crate::config::Stage, String> {
    let (duration, target) = text
        .split_once(':')
        .ok_or_else(|| format!("expected DURATION:TARGET such as 30s:100, got {text:?}"))?;
    let duration = parse_duration(duration.trim()).map_err(|e| format!("{text:?}: {e}"))?;
    let target = target.trim().parse::<u64>().map_err(|_| {
        format!("{text:?}: the target {target:?} is not a whole number of VUs (30s:100)")
    })?;
    Ok(crate::config::Stage { duration, target })
}

/// The parsed --summary-trend-stats list (a type of its own, so that clap takes the
/// whole list as one value).
#[derive(Debug, Clone)]
struct TrendColumns(Vec<crate::config::TrendStat>);

fn trend_stats_arg(text: &str) -> Result<TrendColumns, String> {
    crate::config::trend_stats::parse_list(text).map(TrendColumns)
}

/// A flag whose value is optional takes the next word as its value, so `--dashboard
/// plugin.wasm` would read the plugin as the address: say how to write it instead.
fn plugin_taken_as_value(flag: &str, text: &str) -> Option<String> {
    text.ends_with(".wasm").then(|| {
        format!(
            "{text:?} is the plugin, not a value of --{flag}: put --{flag} after the plugin \
             (`host run {text} --{flag}`), or give its value with `=` (`--{flag}=VALUE`)"
        )
    })
}

fn dashboard_arg(text: &str) -> Result<std::net::SocketAddr, String> {
    if let Some(why) = plugin_taken_as_value("dashboard", text) {
        return Err(why);
    }
    text.parse().map_err(|_| {
        format!("{text:?} is not an address to listen on: write IP:PORT, such as 127.0.0.1:5665")
    })
}

fn stack_arg(text: &str) -> Result<PathBuf, String> {
    match plugin_taken_as_value("stack", text) {
        Some(why) => Err(why),
        None => Ok(PathBuf::from(text)),
    }
}

fn out_arg(text: &str) -> Result<crate::live::spec::Either, String> {
    crate::live::spec::parse_one(text)
}

fn pid_arg(text: &str) -> Result<String, String> {
    crate::config::sampling::parse_pid_target(text).map(|_| text.to_string())
}

fn share_arg(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(share) if (0.0..=1.0).contains(&share) => Ok(share),
        _ => Err(format!("{text:?} is not a number from 0.0 to 1.0")),
    }
}

/// Parses the command line, runs the command, returns the exit code.
pub fn main() -> i32 {
    let cli = Cli::parse();
    if cli.no_color {
        // Read by the terminal styling of the progress bars (the `console` crate);
        // set before any thread starts.
        std::env::set_var("NO_COLOR", "1");
    }
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

async fn dispatch(command: Command) -> anyhow::Result<i32> {
    match command {
        Command::Completions { shell } => {
            clap_complete::generate(shell, &mut Cli::command(), "host", &mut std::io::stdout());
            Ok(0)
        }
        Command::Man { dir } => {
            match dir {
                None => clap_mangen::Man::new(Cli::command()).render(&mut std::io::stdout())?,
                Some(dir) => {
                    std::fs::create_dir_all(&dir)
                        .map_err(|e| anyhow::anyhow!("cannot make {}: {e}", dir.display()))?;
                    clap_mangen::generate_to(Cli::command(), &dir)
                        .map_err(|e| anyhow::anyhow!("cannot write into {}: {e}", dir.display()))?;
                }
            }
            Ok(0)
        }
        Command::Schema => {
            print!("{}", crate::config::schema::render());
            Ok(0)
        }
        Command::Run(mut args) => {
            args.common.read_env_file()?;
            let quiet = args.common.quiet;
            let plugin =
                resolve_plugin(args.plugin.as_deref(), &args.common.config, &args.registry).await?;
            let plugin = crate::author::project::component_for(&plugin, quiet)?;
            let plugin = crate::author::js::plugin_path_with(&plugin, &args.common.env)?;
            let export = args.common.summary_export.clone();
            let request = args.common.request(plugin);
            let outcome = match args.stack {
                None => run::run_then(request, print_summary).await?,
                Some(file) => {
                    let stack_run = crate::stack::cycle::StackRun {
                        flags: args.stack_args.flags(file, None, quiet),
                        keep: args.keep,
                    };
                    let outcome = crate::stack::cycle::run_with_stack(request, stack_run).await?;
                    print_summary(&outcome.summary);
                    outcome
                }
            };
            Ok(finish(export_summary(outcome, export.as_deref())))
        }
        Command::Inspect { plugin, registry } => {
            let named = crate::oci::reference::names_reference(&plugin).then(|| plugin.clone());
            let plugin = resolve_plugin(Some(plugin.as_path()), &[], &registry).await?;
            let plugin = crate::author::js::plugin_path(&plugin)?;
            let inspected =
                run::inspect(&plugin, crate::config::Limits::default().memory_bytes).await?;
            if let Some(reference) = named {
                println!("reference:   {}", reference.display());
            }
            print!("{}", crate::output::text::render_inspection(&inspected));
            Ok(0)
        }
        Command::K8s(K8sCommand::Render(args)) => {
            // The run flags are checked as `host run` would take them.
            crate::k8s::render_command(args, |flags| {
                let argv = ["host", "run", "plugin.wasm"].map(String::from);
                Cli::try_parse_from(argv.iter().chain(flags))
                    .map(drop)
                    .map_err(|e| e.to_string().trim_end().to_string())
            })?;
            Ok(0)
        }
        Command::New(args) => crate::author::new::run(&args),
        Command::Build(args) => crate::author::build::run(&args),
        Command::Demo(mut args) => {
            args.common.read_env_file()?;
            let export = args.common.summary_export.clone();
            let flags = args.faults.flags();
            let demo = crate::demo::run_demo(
                args.plugin,
                flags,
                |plugin| args.common.request(plugin),
                print_summary,
            )
            .await?;
            let code = finish(export_summary(demo.outcome, export.as_deref()));
            match demo.served {
                Some(n) => println!("  the demo target served {n} requests"),
                None => println!("  the demo target did not say how many requests it served"),
            }
            Ok(code)
        }
        Command::Stats {
            project,
            config,
            interval,
            count,
        } => {
            let config = stack_section(config.as_deref())?;
            let project = project
                .or(config.project)
                .unwrap_or_else(|| crate::stack::up::DEFAULT_PROJECT.to_string());
            if interval < Duration::from_secs(1) {
                anyhow::bail!(
                    "--interval must be 1s or more: the Docker engine reports stats once a second"
                );
            }
            crate::sampling::live::run(crate::sampling::live::LiveOptions {
                project,
                interval,
                count,
            })
            .await
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
            let options = crate::stack::UpOptions::resolve(
                &args.stack.flags(args.file, args.timeout, false),
                &config,
            )?;
            let up = crate::stack::up(&options);
            // Ctrl-C while starting: remove what was started, as after any failure.
            let stack = tokio::select! {
                stack = up => stack?,
                _ = crate::signals::next() => {
                    eprintln!("interrupted: removing project {}", options.project);
                    crate::stack::up::down_quietly(&options.project).await;
                    return Ok(run::exit_code::INTERRUPTED);
                }
            };
            // Left running on purpose: a second `up` with its name is refused.
            stack.keep();
            print!("{}", crate::stack::render::render(&stack));
            println!("stop it with: host down --project {}", stack.project);
            Ok(0)
        }
        Command::Images { names } => {
            let names = if names.is_empty() {
                vec!["host".to_string(), "demo-target".to_string()]
            } else {
                names
            };
            let docker = crate::docker::engine::connect().await?;
            for line in crate::stack::images::import_for_files(&docker, &names).await? {
                println!("{line}");
            }
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
        Command::Sweep(SweepCommand { mut args, registry }) => {
            let configs: Vec<PathBuf> = args.config.iter().cloned().collect();
            args.plugin = resolve_plugin(Some(args.plugin.as_path()), &configs, &registry).await?;
            crate::sweep::command::run(args).await
        }
        Command::Push(args) => crate::oci::command::push(args).await,
        Command::Pull(args) => crate::oci::command::pull(args).await,
        Command::Login(args) => crate::oci::command::login(args).await,
        Command::Coordinate(mut args) => {
            args.common.read_env_file()?;
            let configs: Vec<&std::path::Path> =
                args.common.config.iter().map(PathBuf::as_path).collect();
            let resolved =
                crate::oci::resolve(Some(args.plugin.as_path()), &configs, &args.registry).await?;
            let plugin = resolved.path;
            // A plugin from a registry is pulled by each worker, by digest, unless asked
            // to send it (or the registry was out of reach here: then it is sent, said so).
            let plugin_reference = match resolved.by_digest {
                Some(reference) if !args.send_plugin => {
                    crate::stderr::line(format_args!(
                        "coordinator: the workers pull the plugin {reference} themselves"
                    ));
                    Some(reference)
                }
                None if crate::oci::reference::names_reference(&args.plugin) => {
                    crate::stderr::line(format_args!(
                        "coordinator: the registry was out of reach here; the workers are sent the plugin's bytes"
                    ));
                    None
                }
                _ => None,
            };
            let export = args.common.summary_export.clone();
            let request = crate::distributed::coordinator::CoordinateRequest {
                run: {
                    let built = crate::author::js::plugin_path_with(&plugin, &args.common.env)?;
                    args.common.request(built)
                },
                workers: args.workers,
                listen: args.listen,
                token: crate::distributed::trust::ClusterToken::from_flag_or_env(
                    args.token_file.as_deref(),
                )?,
                plugin_reference,
            };
            match crate::distributed::coordinator::coordinate(request, print_summary).await {
                Ok(outcome) => Ok(finish(export_summary(outcome, export.as_deref()))),
                Err(e) => {
                    match e.downcast_ref::<crate::distributed::coordinator::StoppedBeforeStart>() {
                        // Ctrl-C before the start is an interruption, not a failure.
                        Some(stopped) => {
                            crate::stderr::line(format_args!("coordinator: {stopped}"));
                            Ok(run::exit_code::INTERRUPTED)
                        }
                        None => Err(e),
                    }
                }
            }
        }
        Command::Worker(args) => {
            let outcome =
                crate::distributed::worker::work(crate::distributed::worker::WorkerRequest {
                    coordinator: args.coordinator,
                    name: args.name,
                    plugin: args.plugin,
                    out: args.out,
                    connect_timeout: args.connect_timeout,
                    index: args.index,
                    token: crate::distributed::trust::ClusterToken::from_flag_or_env(
                        args.token_file.as_deref(),
                    )?,
                    allow: args.allow,
                    registry: args.registry,
                })
                .await?;
            println!(
                "worker: results in {}, exit code {}",
                outcome.results_dir.display(),
                outcome.exit_code
            );
            Ok(outcome.exit_code)
        }
        Command::Target {
            listen,
            faults,
            rate_limit,
            trusted_proxies,
            access_token_ttl,
            large_groups,
            large_group_notes,
            grpc_listen,
        } => {
            if !listen.ip().is_loopback() {
                anyhow::bail!("the demo target listens on loopback only; use 127.0.0.1:PORT");
            }
            if grpc_listen.is_some_and(|a| !a.ip().is_loopback()) {
                anyhow::bail!(
                    "--grpc-listen is loopback only, as the demo target is; use 127.0.0.1:PORT"
                );
            }
            if rate_limit == Some(0) {
                anyhow::bail!(
                    "--rate-limit must be at least 1 request per second; leave it out for no limit"
                );
            }
            // A zero TTL would make every token expired on arrival: each request a 401.
            if access_token_ttl.is_zero() {
                anyhow::bail!(
                    "--access-token-ttl must be longer than 0, e.g. 5s; leave it out for 30s"
                );
            }
            if large_groups > 0 && large_group_notes == 0 {
                anyhow::bail!(
                    "--large-group-notes 0 makes the large groups empty; give at least 1 (default 10000)"
                );
            }
            let config = demo_target::DemoConfig {
                faults: faults.faults(),
                rate_limit,
                trusted_proxies,
                access_token_ttl,
                large_groups,
                large_group_notes,
                ..Default::default()
            };
            let mut server = demo_target::DemoServer::start(listen, config).await?;
            // Bound before the first line, which callers wait for (target_process).
            let grpc = grpc_listen.map(|a| server.also_grpc(a)).transpose()?;
            println!("{}{}", crate::target_process::LISTENING, server.base_url());
            if let Some(bound) = grpc {
                println!("gRPC face (demo.gateway.v1.Gateway, reflection) on {bound}");
            }
            crate::signals::next().await;
            let served = server.requests_served();
            server.shutdown().await;
            println!("{}{served} requests", crate::target_process::SERVED);
            Ok(0)
        }
    }
}

/// The plugin file an argument names: itself, or a registry reference pulled into the
/// cache (checked against the pins of `configs`).
async fn resolve_plugin(
    arg: Option<&std::path::Path>,
    configs: &[PathBuf],
    registry: &crate::oci::RegistryOptions,
) -> anyhow::Result<PathBuf> {
    let configs: Vec<&std::path::Path> = configs.iter().map(PathBuf::as_path).collect();
    crate::oci::resolve_plugin(arg, &configs, registry).await
}

/// Prints a run's summary (before its results files are written).
pub(crate) fn print_summary(summary: &crate::summary::Summary) {
    print!("{}", crate::output::text::render(summary));
}

/// Writes `--summary-export FILE` (k6's shape) when asked; a failure joins the results
/// files that could not be written.
fn export_summary(mut outcome: run::RunOutcome, path: Option<&std::path::Path>) -> run::RunOutcome {
    if let Some(path) = path {
        if let Err(failure) = crate::output::k6_export::write(path, &outcome.summary) {
            outcome.write_failures.push(failure);
        }
    }
    outcome
}

/// Prints where the results are and each file that could not be written; returns
/// the exit code: the run's own, or 1 when it passed but its results were not all
/// written (the run's own code is named beside the failure).
pub(crate) fn finish(outcome: run::RunOutcome) -> i32 {
    println!("\n  results: {}", outcome.results_dir.display());
    if outcome.write_failures.is_empty() {
        return outcome.exit_code;
    }
    for f in &outcome.write_failures {
        crate::stderr::line(format_args!("error: cannot write {}: {}", f.file, f.error));
    }
    let run_said = match outcome.exit_code {
        run::exit_code::OK => "completed (exit code 0)".to_string(),
        code => format!(
            "ended with exit code {code} ({})",
            run::exit_code::meaning(code)
        ),
    };
    crate::stderr::line(format_args!(
        "error: {} of the results files could not be written to {}; the summary above is complete. The run itself {run_said}.",
        outcome.write_failures.len(),
        outcome.results_dir.display()
    ));
    if outcome.exit_code == run::exit_code::OK {
        1
    } else {
        outcome.exit_code
    }
}
