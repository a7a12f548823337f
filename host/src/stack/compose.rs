//! The `docker-compose` side: checking the tool is there, reading a compose file
//! through `docker-compose config` (so Compose itself validates and normalises it),
//! writing the override file, and `up -d`.

use super::images::binary_for_image;
use super::resources::Resources;
use anyhow::{anyhow, bail, Context, Result};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Output;
use tokio::process::Command;

/// The Compose program (v1 from Debian's package; `up --wait` does not exist there).
const COMPOSE: &str = "docker-compose";

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

/// Runs `docker-compose ARGS` and returns its output, or says how to install it.
async fn compose(args: &[&std::ffi::OsStr]) -> Result<Output> {
    // Killed if the caller gives up (Ctrl-C), instead of running on unseen.
    let mut command = Command::new(COMPOSE);
    command.args(args).kill_on_drop(true);
    command.output().await.map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            anyhow!(
                "`{COMPOSE}` is not installed (or not on PATH); install it with \
                 `sudo apt-get install docker-compose` (Debian's package, Compose v1)"
            )
        } else {
            anyhow!("cannot run `{COMPOSE}`: {e}")
        }
    })
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
    /// Reads `path` through `docker-compose config`; a missing file, a YAML error or
    /// an invalid service each get Compose's own message with the file named.
    pub(crate) async fn load(path: &Path, project: &str) -> Result<ComposeFile> {
        if !path.is_file() {
            bail!(
                "compose file {} does not exist; pass -f FILE (the demo stack is compose/docker-compose.yml)",
                path.display()
            );
        }
        let output = compose(&[
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

/// `docker-compose -f FILE -f OVERRIDE -p PROJECT up -d`; its error names the cause
/// when it is a port already in use.
pub(crate) async fn up(file: &Path, override_file: &Path, project: &str) -> Result<()> {
    let output = compose(&[
        "-f".as_ref(),
        file.as_os_str(),
        "-f".as_ref(),
        override_file.as_os_str(),
        "-p".as_ref(),
        project.as_ref(),
        "up".as_ref(),
        "-d".as_ref(),
        "--no-build".as_ref(),
        "--remove-orphans".as_ref(),
    ])
    .await?;
    if output.status.success() {
        return Ok(());
    }
    let message = stderr_of(&output);
    if message.contains("port is already allocated") || message.contains("address already in use") {
        bail!(
            "a port the stack publishes is already in use on this machine; stop what holds it \
             (`ss -ltnp` shows it) or publish another port in {}:\n{message}",
            file.display()
        );
    }
    bail!("`docker-compose up` failed for project {project}:\n{message}")
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
    fn project_names_compose_would_rewrite_are_refused() {
        assert!(check_project_name("loadtest-1_a").is_ok());
        for bad in ["", "Upper", "has space", "-lead", "dot.ted"] {
            assert!(check_project_name(bad).is_err(), "{bad}");
        }
    }
}
