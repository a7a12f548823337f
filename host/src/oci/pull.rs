//! `host pull` and every plugin given as a reference: the manifest (by tag or digest,
//! checked against the digest when the reference names one), its one component
//! layer, the component (checked against the layer's digest and against a pinned
//! sha256), kept in the cache by digest.

use super::artifact::{self, ACCEPT};
use super::cache;
use super::session::{self, error_words, RegistryOptions, Session, SMALL};
use super::transport::TransportError;
use crate::plugin::reference::Reference;
use anyhow::{anyhow, bail, Result};
use bytes::Bytes;
use hyper::{Method, StatusCode};
use std::path::PathBuf;

/// Largest component a pull takes, whatever the manifest declares.
const MAX_COMPONENT: u64 = 1 << 30;

/// A pinned sha256 a pull must match, and the config that pins it (for messages).
#[derive(Debug, Clone)]
pub(crate) struct Expected {
    /// `sha256:…` of the component.
    pub layer: String,
    /// Where the pin is written.
    pub origin: String,
}

/// What a pull leaves.
#[derive(Debug, Clone)]
pub(crate) struct Fetched {
    /// The component in the cache.
    pub path: PathBuf,
    /// The component's digest (`sha256:…`), as plugin pins write it without the prefix.
    pub layer: String,
    /// The manifest's digest, when the registry was asked (or the reference named it).
    pub manifest: Option<String>,
    /// The manifest's annotations (empty when it came from a pin alone).
    pub annotations: artifact::Annotations,
    /// Whether the component came from the cache (no blob download).
    pub cached: bool,
    /// Set when the registry could not be reached and the pinned component ran from
    /// the cache: the reason, to warn with.
    pub offline: Option<String>,
}

/// Fetches `reference`'s component (from the cache when its digest is there).
pub(crate) async fn pull(
    reference: &Reference,
    expected: Option<&Expected>,
    options: &RegistryOptions,
) -> Result<Fetched> {
    // A reference by manifest digest seen before needs no registry.
    if let Some(digest) = &reference.digest {
        if let Some(manifest) = cache::manifest(digest) {
            let pulled = artifact::parse(&manifest, &reference.to_string())?;
            check_expected(reference, &pulled.layer, expected)?;
            if let Some(path) = cache::blob(&pulled.layer) {
                return Ok(Fetched {
                    path,
                    layer: pulled.layer,
                    manifest: Some(digest.clone()),
                    annotations: pulled.annotations,
                    cached: true,
                    offline: None,
                });
            }
        }
    }
    let mut session = Session::new(reference, options);
    let manifest = match fetch_manifest(&mut session, reference).await {
        Ok(m) => m,
        Err(e) if session::is_unreachable(&e) => {
            // A pinned component pulled before runs without the registry.
            if let Some(path) = expected.and_then(|x| cache::blob(&x.layer)) {
                let expected = expected.expect("checked above");
                return Ok(Fetched {
                    path,
                    layer: expected.layer.clone(),
                    manifest: None,
                    annotations: Default::default(),
                    cached: true,
                    offline: Some(format!("{e:#}")),
                });
            }
            return Err(e);
        }
        Err(e) => return Err(e),
    };
    let manifest_digest = artifact::digest(&manifest);
    if let Some(named) = &reference.digest {
        if *named != manifest_digest {
            bail!(
                "{reference}: the registry sent a manifest whose digest is {manifest_digest}, not the {named} \
                 the reference names; it is not the artifact asked for: do not run it, and tell the registry's owner"
            );
        }
    }
    let pulled = artifact::parse(&manifest, &reference.to_string())?;
    check_expected(reference, &pulled.layer, expected)?;
    cache::put_manifest(&manifest_digest, &manifest)?;
    if let Some(path) = cache::blob(&pulled.layer) {
        return Ok(Fetched {
            path,
            layer: pulled.layer,
            manifest: Some(manifest_digest),
            annotations: pulled.annotations,
            cached: true,
            offline: None,
        });
    }
    let blob = fetch_blob(&mut session, reference, &pulled.layer, pulled.size).await?;
    verify_layer(reference, &pulled.layer, &blob)?;
    crate::plugin::validate::check_header(std::path::Path::new(&reference.to_string()), &blob)?;
    let path = cache::put_blob(&pulled.layer, &blob)?;
    Ok(Fetched {
        path,
        layer: pulled.layer,
        manifest: Some(manifest_digest),
        annotations: pulled.annotations,
        cached: false,
        offline: None,
    })
}

/// Refuses a component whose bytes are not the layer the manifest names.
pub(crate) fn verify_layer(reference: &Reference, layer: &str, blob: &[u8]) -> Result<()> {
    let got = artifact::digest(blob);
    if got != layer {
        bail!(
            "{reference}: the component downloaded has the digest {got}, but the manifest names {layer}: \
             the registry's copy is damaged or was altered in transit; it was not kept or run \
             (pull again, and tell the registry's owner if it repeats)"
        );
    }
    Ok(())
}

/// Refuses a component other than the pinned one, naming both digests.
fn check_expected(reference: &Reference, layer: &str, expected: Option<&Expected>) -> Result<()> {
    let Some(expected) = expected else {
        return Ok(());
    };
    if expected.layer == layer {
        return Ok(());
    }
    let what = match &reference.tag {
        Some(tag) if reference.digest.is_none() => format!(
            "the tag {tag} moved since it was pinned: {reference} now holds the component sha256 {}",
            hex(layer)
        ),
        _ => format!("{reference} holds the component sha256 {}", hex(layer)),
    };
    bail!(
        "{what}, but {} pins sha256 {}; this is not the plugin the config was written for. \
         Run the pinned one (ask whoever pushed to restore the tag, or push it again), or, after \
         checking the new one (`host inspect {reference}`), pin its sha256",
        expected.origin,
        hex(&expected.layer)
    )
}

fn hex(digest: &str) -> &str {
    digest.strip_prefix("sha256:").unwrap_or(digest)
}

async fn fetch_manifest(session: &mut Session, reference: &Reference) -> Result<Vec<u8>> {
    let path = format!(
        "/v2/{}/manifests/{}",
        reference.repository,
        reference.manifest_ref()
    );
    let response = session
        .call(
            Method::GET,
            &path,
            &[("accept", ACCEPT.to_string())],
            Bytes::new(),
            SMALL,
        )
        .await?;
    match response.status() {
        s if s.is_success() => Ok(response.into_body().to_vec()),
        StatusCode::NOT_FOUND => Err(anyhow!(
            "{reference} is not in the registry ({}): check the repository and {}, or push it with `host push PLUGIN.wasm {reference}`",
            error_words(&response),
            if reference.digest.is_some() { "the digest (`host push` prints it)" } else { "the tag" }
        )),
        _ => Err(anyhow!(
            "{}: cannot get the manifest of {reference}: {}",
            session.base(),
            error_words(&response)
        )),
    }
}

/// The component blob `digest`, read to at most the `declared` size the manifest
/// gives it: a registry serving more is cut off there (and refused), so what a pull
/// holds is bounded by the manifest, itself bounded by [`MAX_COMPONENT`].
async fn fetch_blob(
    session: &mut Session,
    reference: &Reference,
    digest: &str,
    declared: u64,
) -> Result<Bytes> {
    if declared == 0 {
        bail!(
            "{reference}: the manifest gives its component layer no size (OCI requires one); \
             it was not downloaded: push the plugin again with `host push`"
        );
    }
    if declared > MAX_COMPONENT {
        bail!(
            "{reference}: the manifest declares a component of {declared} bytes, over the \
             {MAX_COMPONENT} bytes a pull takes; it was not downloaded"
        );
    }
    let path = format!("/v2/{}/blobs/{digest}", reference.repository);
    let response = session
        .call(Method::GET, &path, &[], Bytes::new(), declared as usize)
        .await
        .map_err(|e| {
            if TransportError::is_too_large(&e) {
                anyhow!(
                    "{reference}: the registry sent more than the {declared} bytes the manifest \
                     declares for the component {digest}; the download was stopped there and \
                     nothing was kept (the registry's copy is damaged or altered: tell its owner)"
                )
            } else {
                e
            }
        })?;
    if !response.status().is_success() {
        bail!(
            "{reference}: the registry has the manifest but not its component {digest} ({}); push it again",
            error_words(&response)
        );
    }
    let body = response.into_body();
    if body.len() as u64 != declared {
        bail!(
            "{reference}: the registry sent {} bytes for the component {digest}, whose manifest \
             declares {declared}; nothing was kept (the registry's copy is damaged or altered)",
            body.len()
        );
    }
    Ok(body)
}
