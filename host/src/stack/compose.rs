//! The Compose side: finding the tool (Compose v2, the `docker compose` plugin, first;
//! v1, the `docker-compose` program, as the fallback), reading a compose file through
//! `compose config` (so Compose itself validates and normalises it), writing the
//! override file, and `up -d` (with `--wait` where v2 has it).
//!
//! Containers are never found by name (v1 names them `project_service_1`, v2
//! `project-service-1`): everything after `up` goes by the Engine's labels
//! (`com.docker.compose.project`, `com.docker.compose.service`), which both write.

use super::images::binary_for_image;
use super::resources::Resources;
use anyhow::{anyhow, bail, Context, Result};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Output;
use std::time::Duration;
use tokio::process::Command;

/// Which Compose runs the stack.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flavour {
    /// Compose v2, the Docker CLI plugin: `docker compose ...`, with `up --wait`.
    V2,
    /// Compose v1, the Python program: `docker-compose ...` (Debian's package).
    V1,
}

impl Flavour {
    /// The program and the words before Compose's own arguments.
    pub(crate) fn command(self) -> (&'static str, &'static [&'static str]) {
        match self {
            Flavour::V2 => ("docker", &["compose"]),
            Flavour::V1 => ("docker-compose", &[]),
        }
    }

    /// How it is written in messages (`docker compose`).
    pub(crate) fn name(self) -> &'static str {
        match self {
            Flavour::V2 => "docker compose",
            Flavour::V1 => "docker-compose",
        }
    }

    /// The arguments of `up`: detached, no builds (the images are imported), orphans
    /// removed; v2 also waits until every service is running or healthy (the host
    /// still checks each through the Engine afterwards, for its own messages).
    pub(crate) fn up_args(self, wait: Duration) -> Vec<String> {
        let mut args: Vec<String> = ["up", "-d", "--no-build", "--remove-orphans"]
            .map(String::from)
            .to_vec();
        if self == Flavour::V2 {
            args.push("--wait".into());
            args.push("--wait-timeout".into());
            args.push(wait.as_secs().max(1).to_string());
        }
        args
    }
}

/// The Compose of this machine, found once: `docker compose version` answers for v2,
/// `docker-compose version` for v1.
async fn flavour() -> Result<Flavour> {
    static FOUND: tokio::sync::OnceCell<Flavour> = tokio::sync::OnceCell::const_new();
    FOUND
        .get_or_try_init(|| async {
            for flavour in [Flavour::V2, Flavour::V1] {
                let (program, prefix) = flavour.command();
                let answered = Command::new(program)
                    .args(prefix)
                    .arg("version")
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::null())
                    .kill_on_drop(true)
                    .status()
                    .await
                    .is_ok_and(|s| s.success());
                if answered {
                    return Ok(flavour);
                }
            }
            Err(anyhow!(
                "Docker Compose is not installed: neither `docker compose version` (Compose v2, \
                 the Docker CLI plugin) nor `docker-compose version` (v1) answered; install the \
                 plugin (Debian/Ubuntu: `sudo apt-get install docker-compose-plugin`) or v1 \
                 (`sudo apt-get install docker-compose`)"
            ))
        })
        .await
        .copied()
}

/// A service of a compose file, as far as the host needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ServiceSpec {
    /// The image it runs, as written (`loadtest/NAME` is built from a binary).
    pub image: Option<String>,
    /// True when it has a healthcheck that is not disabled.
    pub healthcheck: bool,
    /// True when it publishes a port on the host (an entry service).
    pub publishes: bool,
}

/// A compose file that `docker-compose config` accepted.
#[derive(Debug, Clone)]
pub(crate) struct ComposeFile {
    /// Its services by name.
    pub services: BTreeMap<String, ServiceSpec>,
}

/// Checks that a Compose project name is one Compose keeps as it is (it lowercases
/// and strips other characters, and the project's label would then differ).
pub(crate) fn check_project_name(name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
        && name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric());
    if !ok {
        bail!(
            "project name {name:?}: use lowercase letters, digits, - and _, starting with a letter or digit"
        );
    }
    Ok(())
}

/// The variable through which `host up` tells Compose the host port it chose for
/// HTTP/3 (`compose/docker-compose.yml` publishes https and HTTP/3 there and has the API
/// name it in `Alt-Svc`). Set in the environment, it is used as it is.
pub(crate) const H3_PORT_VAR: &str = "LOADTEST_H3_PORT";

/// Runs `compose ARGS` with the machine's Compose and returns its output.
async fn compose(args: &[&std::ffi::OsStr]) -> Result<(Flavour, Output)> {
    compose_with(args, None).await
}

/// [`compose`], with [`H3_PORT_VAR`] set to `h3_port` when given.
async fn compose_with(
    args: &[&std::ffi::OsStr],
    h3_port: Option<u16>,
) -> Result<(Flavour, Output)> {
    let flavour = flavour().await?;
    let (program, prefix) = flavour.command();
    // Killed if the caller gives up (Ctrl-C), instead of running on unseen.
    let mut command = Command::new(program);
    command.args(prefix).args(args).kill_on_drop(true);
    if let Some(port) = h3_port {
        command.env(H3_PORT_VAR, port.to_string());
    }
    let output = command
        .output()
        .await
        .map_err(|e| anyhow!("cannot run `{}`: {e}", flavour.name()))?;
    Ok((flavour, output))
}

fn stderr_of(output: &Output) -> String {
    let text = String::from_utf8_lossy(&output.stderr).trim().to_string();
    if text.is_empty() {
        String::from_utf8_lossy(&output.stdout).trim().to_string()
    } else {
        text
    }
}

impl ComposeFile {
    /// Reads `path` through `compose config`; a missing file, a YAML error or
    /// an invalid service each get Compose's own message with the file named.
    pub(crate) async fn load(path: &Path, project: &str) -> Result<ComposeFile> {
        if !path.is_file() {
            bail!(
                "compose file {} does not exist; pass -f FILE (the demo stack is compose/docker-compose.yml)",
                path.display()
            );
        }
        let (_, output) = compose(&[
            "-f".as_ref(),
            path.as_os_str(),
            "-p".as_ref(),
            project.as_ref(),
            "config".as_ref(),
        ])
        .await?;
        if !output.status.success() {
            bail!(
                "compose file {} does not parse: {}",
                path.display(),
                stderr_of(&output)
            );
        }
        let text = String::from_utf8_lossy(&output.stdout);
        let services =
            parse_services(&text).with_context(|| format!("compose file {}", path.display()))?;
        if services.is_empty() {
            bail!("compose file {} has no services", path.display());
        }
        Ok(ComposeFile { services })
    }
}

/// The services of `docker-compose config` output.
fn parse_services(yaml: &str) -> Result<BTreeMap<String, ServiceSpec>> {
    let doc: serde_norway::Value =
        serde_norway::from_str(yaml).context("`docker-compose config` printed no YAML")?;
    let mut services = BTreeMap::new();
    let Some(map) = doc.get("services").and_then(|s| s.as_mapping()) else {
        return Ok(services);
    };
    for (name, spec) in map {
        let Some(name) = name.as_str() else { continue };
        let healthcheck = spec.get("healthcheck").is_some_and(|h| {
            let disabled = h.get("disable").and_then(|d| d.as_bool()) == Some(true);
            let none = h
                .get("test")
                .and_then(|t| t.as_sequence())
                .and_then(|t| t.first())
                .and_then(|t| t.as_str())
                == Some("NONE");
            !disabled && !none
        });
        let publishes = spec
            .get("ports")
            .and_then(|p| p.as_sequence())
            .is_some_and(|p| !p.is_empty());
        services.insert(
            name.to_string(),
            ServiceSpec {
                image: spec
                    .get("image")
                    .and_then(|i| i.as_str())
                    .map(str::to_string),
                healthcheck,
                publishes,
            },
        );
    }
    Ok(services)
}

/// The override file's content: per service, the image built for it, its `cpuset`,
/// and `mem_limit` (with `memswap_limit` equal, so the limit is not stretched by swap
/// and a service over it is OOM-killed, as it would be in production).
pub(crate) fn override_yaml(
    images: &BTreeMap<String, String>,
    resources: &Resources,
) -> Result<String> {
    let mut services = serde_norway::Mapping::new();
    let names: std::collections::BTreeSet<&String> = images
        .keys()
        .chain(resources.cpus.keys())
        .chain(resources.memory.keys())
        .collect();
    for name in names {
        let mut service = serde_norway::Mapping::new();
        if let Some(image) = images.get(name) {
            service.insert("image".into(), image.as_str().into());
        }
        if let Some(cpus) = resources.cpus.get(name) {
            service.insert("cpuset".into(), cpus.to_string().into());
        }
        if let Some(&bytes) = resources.memory.get(name) {
            service.insert("mem_limit".into(), bytes.into());
            service.insert("memswap_limit".into(), bytes.into());
        }
        services.insert(name.as_str().into(), service.into());
    }
    let mut doc = serde_norway::Mapping::new();
    doc.insert("services".into(), services.into());
    Ok(serde_norway::to_string(&doc)?)
}

/// The images a compose file's `loadtest/NAME` services need: service → binary name.
pub(crate) fn project_binaries(file: &ComposeFile) -> BTreeMap<String, String> {
    file.services
        .iter()
        .filter_map(|(service, spec)| {
            let binary = binary_for_image(spec.image.as_deref()?)?;
            Some((service.clone(), binary.to_string()))
        })
        .collect()
}

/// `compose -f FILE -f OVERRIDE -p PROJECT up -d` (v2: `--wait` up to `wait`), with
/// [`H3_PORT_VAR`] set to `h3_port`; its error names the cause when it is a port
/// already in use.
pub(crate) async fn up(
    file: &Path,
    override_file: &Path,
    project: &str,
    wait: Duration,
    h3_port: u16,
) -> Result<()> {
    let flavour = flavour().await?;
    let up_args = flavour.up_args(wait);
    let mut args: Vec<&std::ffi::OsStr> = vec![
        "-f".as_ref(),
        file.as_os_str(),
        "-f".as_ref(),
        override_file.as_os_str(),
        "-p".as_ref(),
        project.as_ref(),
    ];
    args.extend(up_args.iter().map(std::ffi::OsStr::new));
    let (flavour, output) = compose_with(&args, Some(h3_port)).await?;
    if output.status.success() {
        return Ok(());
    }
    let message = stderr_of(&output);
    if message.contains("port is already allocated") || message.contains("address already in use") {
        bail!(
            "a port the stack publishes is already in use on this machine; stop what holds it \
             (`ss -ltnup` shows it) or publish another port in {} (the HTTP/3 port was \
             {h3_port}, {H3_PORT_VAR}):\n{message}",
            file.display()
        );
    }
    bail!(
        "`{} up` failed for project {project}:\n{message}",
        flavour.name()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const CONFIG: &str = "services:\n  api:\n    image: loadtest/demo-target\n    ports:\n    - 127.0.0.1::8080/tcp\n    healthcheck:\n      test: [CMD, /bin/x]\n  db:\n    image: postgres\n    healthcheck:\n      test: [NONE]\n  worker:\n    image: loadtest/demo-target\nversion: '3.9'\n";

    #[test]
    fn config_output_gives_images_healthchecks_and_entry_services() {
        let services = parse_services(CONFIG).unwrap();
        assert_eq!(services.len(), 3);
        assert!(services["api"].healthcheck && services["api"].publishes);
        assert!(!services["db"].healthcheck, "test: [NONE] disables it");
        assert!(!services["worker"].healthcheck && !services["worker"].publishes);
        let file = ComposeFile { services };

        let binaries = project_binaries(&file);
        assert_eq!(binaries.len(), 2);
        assert_eq!(binaries["worker"], "demo-target");
    }

    #[test]
    fn both_flavours_have_their_command_and_only_v2_waits() {
        assert_eq!(Flavour::V2.command(), ("docker", &["compose"][..]));
        assert_eq!(Flavour::V1.command(), ("docker-compose", &[][..]));
        let wait = Duration::from_secs(90);
        assert_eq!(
            Flavour::V2.up_args(wait),
            [
                "up",
                "-d",
                "--no-build",
                "--remove-orphans",
                "--wait",
                "--wait-timeout",
                "90"
            ]
        );
        assert_eq!(
            Flavour::V1.up_args(wait),
            ["up", "-d", "--no-build", "--remove-orphans"],
            "v1 has no --wait: the host waits through the Engine"
        );
    }

    /// The Compose this machine has is the one picked: v2 when `docker compose`
    /// answers, else v1 (this project's machines have v1 only).
    #[tokio::test]
    async fn the_machines_compose_is_found() {
        let answers = |program: &str, args: &[&str]| {
            std::process::Command::new(program)
                .args(args)
                .output()
                .is_ok_and(|o| o.status.success())
        };
        let expected = if answers("docker", &["compose", "version"]) {
            Flavour::V2
        } else if answers("docker-compose", &["version"]) {
            Flavour::V1
        } else {
            assert!(flavour().await.is_err());
            return;
        };
        assert_eq!(flavour().await.unwrap(), expected);
        let (used, output) = compose(&["version".as_ref()]).await.unwrap();
        assert_eq!(used, expected);
        assert!(output.status.success());
    }

    #[test]
    fn project_names_compose_would_rewrite_are_refused() {
        assert!(check_project_name("loadtest-1_a").is_ok());
        for bad in ["", "Upper", "has space", "-lead", "dot.ted"] {
            assert!(check_project_name(bad).is_err(), "{bad}");
        }
    }
}
