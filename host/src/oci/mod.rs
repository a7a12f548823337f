//! Plugins shared through OCI registries: `host push`, `host pull`, `host login`, and a
//! registry reference wherever a plugin file is taken (`host run REF`, a run config's
//! `plugin = { oci = "REF", sha256 = "…" }`).
//!
//! The Distribution API is spoken over the project's own hyper client and rustls
//! (`ring`) rather than through `oci-client`: its 0.18 pulls reqwest 0.13, whose TLS
//! default is aws-lc-rs (which the workspace avoids: cmake, minutes of CI), and with it
//! oci-spec, regex, chrono and a second sha2; the few calls a plugin needs (manifests
//! and blobs up and down, Docker's token and Basic flows) are a few hundred lines here.

pub(crate) mod artifact;
pub(crate) mod cache;
pub(crate) mod command;
pub(crate) mod credentials;
pub(crate) mod pull;
pub(crate) mod push;
pub(crate) mod session;
pub(crate) mod transport;

use crate::plugin::reference::{self, Reference};
use anyhow::{bail, Result};
pub(crate) use session::RegistryOptions;
use std::path::{Path, PathBuf};

/// A plugin argument made a file, and where it came from.
#[derive(Debug, Clone)]
pub(crate) struct Resolved {
    /// The component (the argument itself, or its copy in the cache).
    pub path: PathBuf,
    /// When it was pulled from a registry whose manifest was read: the reference pinned
    /// by that manifest's digest (`registry/repo:tag@sha256:…`), which names these bytes
    /// for good (`host coordinate` hands it to its workers to pull).
    pub by_digest: Option<String>,
}

/// Turns a plugin argument into a file: a path is itself; a registry reference is
/// pulled (or found in the cache) and checked against the pins of `configs`. Without
/// an argument, the first config's `plugin = { oci | path, sha256 }` names it.
pub(crate) async fn resolve_plugin(
    arg: Option<&Path>,
    configs: &[&Path],
    options: &RegistryOptions,
) -> Result<PathBuf> {
    Ok(resolve(arg, configs, options).await?.path)
}

/// As [`resolve_plugin`], and says which manifest digest a pulled plugin has.
pub(crate) async fn resolve(
    arg: Option<&Path>,
    configs: &[&Path],
    options: &RegistryOptions,
) -> Result<Resolved> {
    let file = |path: &Path| Resolved {
        path: path.to_path_buf(),
        by_digest: None,
    };
    let mut pins = Vec::new();
    for config in configs {
        if let Some(pin) = crate::plugin::pin::read(config)? {
            pins.push(pin);
        }
    }
    let text = match arg {
        Some(arg) if !reference::names_reference(arg) => return Ok(file(arg)),
        Some(arg) => arg.to_string_lossy().into_owned(),
        None => match pins.iter().find(|p| p.oci.is_some() || p.path.is_some()) {
            Some(pin) => match (&pin.oci, &pin.path) {
                (Some(oci), _) => oci.clone(),
                (None, Some(path)) => return Ok(file(path)),
                (None, None) => unreachable!("found by one of the two"),
            },
            None => bail!(
                "name the plugin: a file (`host run plugin.wasm`), a registry reference \
                 (`host run ghcr.io/team/checkout:1.2.0`), or a pin in the run config \
                 (plugin = {{ oci = \"REF\", sha256 = \"…\" }})"
            ),
        },
    };
    let reference = Reference::parse(&text)?;
    // The pin that applies: one naming this reference, or one giving a hash alone.
    let expected = pins
        .iter()
        .find(|p| match (&p.oci, &p.path) {
            (Some(oci), _) => Reference::parse(oci).is_ok_and(|r| r == reference),
            (None, None) => true,
            (None, Some(_)) => false,
        })
        .map(|p| pull::Expected {
            layer: format!("sha256:{}", p.sha256),
            origin: p.origin.display().to_string(),
        });
    let fetched = pull::pull(&reference, expected.as_ref(), options).await?;
    if let Some(why) = &fetched.offline {
        crate::stderr::line(format_args!(
            "warning: {why}; running the pinned sha256 {} from the cache",
            fetched.layer.trim_start_matches("sha256:")
        ));
    }
    Ok(Resolved {
        path: fetched.path,
        // None when the registry was out of reach and the pinned copy ran.
        by_digest: fetched
            .manifest
            .map(|digest| reference.with_digest(&digest).to_string()),
    })
}
