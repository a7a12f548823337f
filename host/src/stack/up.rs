//! `host up` and `host down` from start to end: check the input, clear what an earlier
//! run left behind, build the images, write the override, `docker-compose up -d`, wait
//! until ready; and on any failure remove what was started.

use super::claim::{Claim, Mark};
use super::compose::{self, ComposeFile};
use super::containers::ServiceContainer;
use super::entry::{self, EntryUrl};
use super::resources::Resources;
use super::teardown::{remove_project, Removed};
use super::{engine, health, images, CpuSet};
use crate::config::StackConfig;
use anyhow::{anyhow, Context, Result};
use bollard::Docker;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The compose file used when none is given.
pub(crate) const DEFAULT_FILE: &str = "compose/docker-compose.yml";

/// The Compose project name used when none is given.
pub(crate) const DEFAULT_PROJECT: &str = "loadtest";

/// How long `up` waits for the services when not told otherwise.
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

/// What `host up` was asked for.
#[derive(Debug, Clone)]
pub struct UpOptions {
    /// The compose file.
    pub file: PathBuf,
    /// The Compose project name (the label everything is found by).
    pub project: String,
    /// Cores and memory per service.
    pub resources: Resources,
    /// How long to wait until every service is ready.
    pub timeout: Duration,
    /// No progress lines on stderr.
    pub quiet: bool,
}

impl UpOptions {
    /// Flags over the run config's `[stack]` over the defaults.
    pub fn resolve(flags: &StackFlags, config: &StackConfig) -> Result<UpOptions> {
        let mut from_config = Resources::default();
        for (service, list) in &config.cpus {
            from_config.add_cpus(&format!("{service}={list}"))?;
        }
        for (service, size) in &config.memory {
            from_config.add_memory(&format!("{service}={size}"))?;
        }
        let mut from_flags = Resources::default();
        for spec in &flags.cpus {
            from_flags.add_cpus(spec)?;
        }
        for spec in &flags.memory {
            from_flags.add_memory(spec)?;
        }
        Ok(UpOptions {
            file: flags
                .file
                .clone()
                .or_else(|| config.file.clone())
                .unwrap_or_else(|| PathBuf::from(DEFAULT_FILE)),
            project: flags
                .project
                .clone()
                .or_else(|| config.project.clone())
                .unwrap_or_else(|| DEFAULT_PROJECT.to_string()),
            resources: from_config.overlaid(from_flags),
            timeout: flags.timeout.or(config.timeout).unwrap_or(DEFAULT_TIMEOUT),
            quiet: flags.quiet,
        })
    }
}

/// The stack options given on the command line (`host up`, `host run --stack`).
#[derive(Debug, Clone, Default)]
pub struct StackFlags {
    /// `-f FILE` / `--stack FILE`.
    pub file: Option<PathBuf>,
    /// `--project NAME`.
    pub project: Option<String>,
    /// `--cpus SERVICE=LIST`, in order.
    pub cpus: Vec<String>,
    /// `--memory SERVICE=SIZE`, in order.
    pub memory: Vec<String>,
    /// `--timeout D`.
    pub timeout: Option<Duration>,
    /// No progress lines.
    pub quiet: bool,
}

/// A stack that is up and ready.
#[derive(Debug, Clone)]
pub struct Stack {
    /// Its Compose project name.
    pub project: String,
    /// Its containers when it became ready.
    pub containers: Vec<ServiceContainer>,
    /// The URLs of its published ports.
    pub entry_urls: Vec<EntryUrl>,
    /// How long `up` took, from the first check to every service ready.
    pub took: Duration,
    /// The project's lock, held as long as this stack (or a clone) lives.
    claim: Arc<Claim>,
}

impl Stack {
    /// Marks the stack as left running on purpose (`host up`, `--keep`): a later `up`
    /// with its name is refused until it is taken down.
    pub fn keep(&self) {
        self.claim.mark_kept();
    }
}

/// Brings the stack up and waits until it is ready; on failure nothing is left running.
pub async fn up(options: &UpOptions) -> Result<Stack> {
    let begun = Instant::now();
    compose::check_project_name(&options.project)?;
    // A stack that someone else uses is theirs: refused (before anything slow), never
    // removed.
    let claim = Claim::take(&options.project)?;
    let online = CpuSet::online();
    for (service, set) in &options.resources.cpus {
        set.check_within(&online)
            .map_err(|e| anyhow::anyhow!("--cpus {service}={set}: {e}"))?;
    }
    let file = ComposeFile::load(&options.file, &options.project).await?;
    let names: Vec<&str> = file.services.keys().map(String::as_str).collect();
    options.resources.check(&names, &online)?;
    let docker = engine::connect().await?;

    refuse_if_running(&docker, &options.project, claim.previous()).await?;
    let left = remove_project(&docker, &options.project).await?;
    if !left.is_empty() && !options.quiet {
        eprintln!(
            "removed what an earlier run of project {} left behind: {}",
            options.project,
            describe_removed(&left)
        );
    }
    let images = build_images(&docker, &file, options.quiet).await?;
    let override_file = write_override(&options.project, &images, &options.resources)?;
    if !options.quiet {
        eprintln!(
            "starting project {} from {}",
            options.project,
            options.file.display()
        );
    }
    let h3_port = h3_port()?;
    let started = async {
        compose::up(
            &options.file,
            &override_file,
            &options.project,
            options.timeout,
            h3_port,
        )
        .await?;
        health::wait_ready(&docker, &options.project, &names, options.timeout).await
    }
    .await;
    let containers = match started {
        Ok(containers) => containers,
        Err(e) => {
            // Nothing half-started stays behind; the cause is what the user needs.
            if let Err(cleanup) = remove_project(&docker, &options.project).await {
                eprintln!(
                    "warning: could not remove project {}: {cleanup:#}",
                    options.project
                );
            }
            return Err(e);
        }
    };
    let entry_urls = match entry_urls_with_cas(&docker, &containers, &options.project).await {
        Ok(urls) => urls,
        Err(e) => {
            down_quietly(&options.project).await;
            return Err(e);
        }
    };
    Ok(Stack {
        project: options.project.clone(),
        containers,
        entry_urls,
        took: begun.elapsed(),
        claim: Arc::new(claim),
    })
}

/// The host port for the stack's HTTP/3 ([`compose::H3_PORT_VAR`]): the variable's
/// value when it is set, else a port free on 127.0.0.1 for both TCP and UDP right now,
/// so that https and HTTP/3 share one number as one origin. Chosen here, before the
/// containers start, because the API must name it in `Alt-Svc` from its first answer
/// and cannot learn the number Docker would pick (a FROM-scratch container has no way
/// to ask the Engine). A compose file that does not use the variable ignores it.
fn h3_port() -> Result<u16> {
    let var = compose::H3_PORT_VAR;
    if let Some(value) = std::env::var_os(var) {
        let text = value.to_string_lossy();
        return text.trim().parse().map_err(|_| {
            anyhow!("{var}={text:?} is not a port number; unset it to have `host up` choose one")
        });
    }
    for _ in 0..50 {
        let tcp = std::net::TcpListener::bind(("127.0.0.1", 0))
            .context("cannot find a free port on 127.0.0.1")?;
        let port = tcp.local_addr()?.port();
        if std::net::UdpSocket::bind(("127.0.0.1", port)).is_ok() {
            return Ok(port);
        }
    }
    Err(anyhow!(
        "found no port free for both TCP and UDP on 127.0.0.1 in 50 tries; set {var} to one"
    ))
}

/// Refuses to go on when the project has running containers that are not what a host
/// killed mid-run left behind (its lock is free, and its file says `run`): a stack
/// that `host up` or `--keep` left, or one started by hand with docker-compose.
async fn refuse_if_running(docker: &Docker, project: &str, mark: &Mark) -> Result<()> {
    if matches!(mark, Mark::Run(_)) {
        return Ok(());
    }
    let running: Vec<String> = super::containers::list_project(docker, project)
        .await?
        .into_iter()
        .filter(|c| {
            c.state.as_ref().is_some_and(|s| {
                matches!(s.to_string().as_str(), "running" | "paused" | "restarting")
            })
        })
        .map(|c| {
            c.labels
                .and_then(|l| l.get(super::SERVICE_LABEL).cloned())
                .unwrap_or_else(|| c.id.unwrap_or_default().chars().take(12).collect())
        })
        .collect();
    if running.is_empty() {
        return Ok(());
    }
    let mut running = running;
    running.sort();
    let started_by = if *mark == Mark::Kept {
        "`host up` (or a run with --keep)"
    } else {
        "someone else (docker-compose, or a host of another machine)"
    };
    Err(anyhow!(
        "project {project} is already running ({} running: {}), started by {started_by}; \
         give this stack another name (--project NAME or [stack] project), or remove that \
         one first with: host down --project {project}",
        if running.len() == 1 {
            "1 container".to_string()
        } else {
            format!("{} containers", running.len())
        },
        running.join(", ")
    ))
}

/// The entry URLs, with the CAs of https entries read into the project's folder
/// (beside the override file, so `down` removes them too).
async fn entry_urls_with_cas(
    docker: &Docker,
    containers: &[ServiceContainer],
    project: &str,
) -> Result<Vec<EntryUrl>> {
    let mut urls = entry::entry_urls(containers)?;
    let dir = override_dir(project);
    crate::files::own_private_dir(&dir)?;
    entry::fetch_cas(docker, containers, &mut urls, &dir).await?;
    Ok(urls)
}

/// Removes the project's containers, networks and volumes (and the override file).
pub async fn down(project: &str) -> Result<Removed> {
    compose::check_project_name(project)?;
    let docker = engine::connect().await?;
    let removed = remove_project(&docker, project).await?;
    let _ = std::fs::remove_dir_all(override_dir(project));
    super::claim::forget(project);
    Ok(removed)
}

/// Removes the project with a connection of its own, for cleanup after errors.
pub(crate) async fn down_quietly(project: &str) {
    if let Err(e) = down(project).await {
        eprintln!("warning: could not remove the stack {project}: {e:#}");
    }
}

/// `2 containers, 1 network, 0 volumes`.
pub(crate) fn describe_removed(r: &Removed) -> String {
    let plural = |n: usize, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
    format!(
        "{}, {}, {}",
        plural(r.containers, "container"),
        plural(r.networks, "network"),
        plural(r.volumes, "volume")
    )
}

async fn build_images(
    docker: &Docker,
    file: &ComposeFile,
    quiet: bool,
) -> Result<BTreeMap<String, String>> {
    let mut by_binary: BTreeMap<String, String> = BTreeMap::new();
    let mut images = BTreeMap::new();
    for (service, binary) in compose::project_binaries(file) {
        if !by_binary.contains_key(&binary) {
            let path = images::find_binary(&binary)?;
            let t = Instant::now();
            let image = images::ensure_image(docker, &binary, &path).await?;
            if image.imported && !quiet {
                eprintln!(
                    "imported image {} from {} in {:.1}s",
                    image.reference,
                    path.display(),
                    t.elapsed().as_secs_f64()
                );
            }
            by_binary.insert(binary.clone(), image.reference);
        }
        images.insert(service, by_binary[&binary].clone());
    }
    Ok(images)
}

/// The project's folder (the override file Compose runs, the CAs the run trusts): a
/// fixed name, so that `host down` finds it from another process, but one per user
/// (`$XDG_RUNTIME_DIR` is the user's own; in the shared temporary folder the name
/// carries the user id), and [`crate::files::own_private_dir`] refuses one that another
/// user made first, who could otherwise swap the files.
pub fn override_dir(project: &str) -> PathBuf {
    match std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from) {
        Some(base) if base.is_absolute() && base.is_dir() => {
            base.join(format!("host-stack-{project}"))
        }
        _ => {
            // SAFETY: geteuid has no preconditions and cannot fail.
            let uid = unsafe { libc::geteuid() };
            std::env::temp_dir().join(format!("host-stack-{uid}-{project}"))
        }
    }
}

fn write_override(
    project: &str,
    images: &BTreeMap<String, String>,
    resources: &Resources,
) -> Result<PathBuf> {
    let dir = override_dir(project);
    crate::files::own_private_dir(&dir)?;
    let path = dir.join("docker-compose.override.yml");
    let text = format!(
        "# Written by `host up` for project {project}: images built from this project's\n\
         # binaries, and the cores and memory asked for.\n{}",
        compose::override_yaml(images, resources)?
    );
    crate::files::create_private(&path)
        .and_then(|mut f| std::io::Write::write_all(&mut f, text.as_bytes()))
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(path)
}
