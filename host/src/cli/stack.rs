//! `host up`, `host down`, `host stats` and `host images`: the Compose stack by hand,
//! and the stack flags `host run --stack` shares with `host up`.

use crate::config::args::duration_arg;
use crate::run;
use crate::stack::session::{Purpose, StackSession, Start};
use clap::Args;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Where the stack is and what it gets: shared by `host up` and `host run --stack`.
#[derive(Args, Debug, Clone, Default)]
pub(super) struct StackArgs {
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
pub(super) struct UpArgs {
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
    pub(super) fn flags(
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
fn stack_section(path: Option<&Path>) -> anyhow::Result<crate::config::StackConfig> {
    match path {
        None => Ok(Default::default()),
        Some(path) => {
            crate::config::stack::from_file(path).map_err(|e| anyhow::anyhow!("config error: {e}"))
        }
    }
}

// The flags of `host stats` (its help is the variant's in `Command`).
#[derive(Args, Debug)]
pub(super) struct StatsArgs {
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
}

// The flags of `host down`.
#[derive(Args, Debug)]
pub(super) struct DownArgs {
    /// The Compose project name.
    #[arg(long, short = 'p')]
    project: Option<String>,
    /// Run config whose `[stack]` names the project.
    #[arg(short, long)]
    config: Option<PathBuf>,
}

// The flags of `host images`.
#[derive(Args, Debug)]
pub(super) struct ImagesArgs {
    /// The binaries (default: host and demo-target).
    names: Vec<String>,
}

/// The project a command names: `--project`, else the config's `[stack] project`, else
/// the default.
fn project_of(project: Option<String>, config: Option<&Path>) -> anyhow::Result<String> {
    let config = stack_section(config)?;
    Ok(project
        .or(config.project)
        .unwrap_or_else(|| crate::stack::up::DEFAULT_PROJECT.to_string()))
}

/// `host up`: starts the stack and leaves it running; Ctrl-C while it starts removes
/// what was started.
pub(super) async fn up(args: UpArgs) -> anyhow::Result<i32> {
    let config = stack_section(args.config.as_deref())?;
    let options = crate::stack::UpOptions::resolve(
        &args.stack.flags(args.file, args.timeout, false),
        &config,
    )?;
    match StackSession::start(&options, true, Purpose::Up).await? {
        Start::Interrupted => Ok(run::exit_code::INTERRUPTED),
        Start::Ready(session) => {
            // Left running on purpose: a second `up` with its name is refused.
            let stack = session.leave_running();
            print!("{}", crate::stack::render::render(&stack));
            println!("stop it with: host down --project {}", stack.project);
            Ok(0)
        }
    }
}

/// `host down`: removes the project's containers, networks and volumes.
pub(super) async fn down(args: DownArgs) -> anyhow::Result<i32> {
    let project = project_of(args.project, args.config.as_deref())?;
    let removed = crate::stack::down(&project).await?;
    println!(
        "project {project}: removed {}",
        crate::stack::up::describe_removed(&removed)
    );
    Ok(0)
}

/// `host stats`: the live table of the project's containers.
pub(super) async fn stats(args: StatsArgs) -> anyhow::Result<i32> {
    let project = project_of(args.project, args.config.as_deref())?;
    if args.interval < Duration::from_secs(1) {
        anyhow::bail!(
            "--interval must be 1s or more: the Docker engine reports stats once a second"
        );
    }
    crate::sampling::live::run(crate::sampling::live::LiveOptions {
        project,
        interval: args.interval,
        count: args.count,
    })
    .await
}

/// `host images`: imports the binaries' images and prints their tags.
pub(super) async fn images(args: ImagesArgs) -> anyhow::Result<i32> {
    let names = if args.names.is_empty() {
        vec!["host".to_string(), "demo-target".to_string()]
    } else {
        args.names
    };
    let docker = crate::docker::engine::connect().await?;
    for line in crate::stack::images::import_for_files(&docker, &names).await? {
        println!("{line}");
    }
    Ok(0)
}
