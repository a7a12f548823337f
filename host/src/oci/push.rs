//! `host push`: uploads the component and its config as blobs (skipping those the
//! registry has), then the manifest under the reference's tag, the Distribution API's
//! monolithic upload (`POST …/blobs/uploads/`, then `PUT ?digest=`).

use super::artifact::{self, Annotations, MANIFEST};
use super::session::{error_words, RegistryOptions, Session, SMALL};
use crate::plugin::reference::Reference;
use anyhow::{anyhow, bail, Result};
use bytes::Bytes;
use hyper::header::LOCATION;
use hyper::{Method, StatusCode};

/// What a push leaves.
#[derive(Debug, Clone)]
pub(crate) struct Pushed {
    /// The manifest's digest: `REF@DIGEST` names this push for good.
    pub manifest: String,
    /// The component's digest (its sha256, the layer's digest).
    pub layer: String,
    /// The blobs the registry had already (not sent again).
    pub skipped: usize,
}

/// Pushes `component` to `reference` (which must name a tag).
pub(crate) async fn push(
    component: &[u8],
    file_name: &str,
    annotations: &Annotations,
    reference: &Reference,
    options: &RegistryOptions,
) -> Result<Pushed> {
    if reference.digest.is_some() {
        bail!("push to a tag, such as {}/{}:1.0.0: a digest is what the push makes, it cannot be chosen", reference.registry, reference.repository);
    }
    let tag = reference
        .tag
        .clone()
        .unwrap_or_else(|| "latest".to_string());
    let artifact = artifact::build(component, file_name, annotations);
    let mut session = Session::new(reference, options);
    let mut skipped = 0;
    for blob in [artifact.config.as_slice(), component] {
        if upload_blob(&mut session, reference, blob).await? {
            skipped += 1;
        }
    }
    let path = format!("/v2/{}/manifests/{tag}", reference.repository);
    let response = session
        .call(
            Method::PUT,
            &path,
            &[("content-type", MANIFEST.to_string())],
            Bytes::from(artifact.manifest.clone()),
            SMALL,
        )
        .await?;
    if !response.status().is_success() {
        bail!(
            "{}: the manifest of {reference} was refused: {}",
            session.base(),
            error_words(&response)
        );
    }
    Ok(Pushed {
        manifest: artifact::digest(&artifact.manifest),
        layer: artifact::digest(component),
        skipped,
    })
}

/// Uploads one blob unless the registry has it; returns whether it had.
async fn upload_blob(session: &mut Session, reference: &Reference, blob: &[u8]) -> Result<bool> {
    let digest = artifact::digest(blob);
    let repo = &reference.repository;
    let head = session
        .call(
            Method::HEAD,
            &format!("/v2/{repo}/blobs/{digest}"),
            &[],
            Bytes::new(),
            SMALL,
        )
        .await?;
    if head.status().is_success() {
        return Ok(true);
    }
    let start = session
        .call(
            Method::POST,
            &format!("/v2/{repo}/blobs/uploads/"),
            &[],
            Bytes::new(),
            SMALL,
        )
        .await?;
    if start.status() != StatusCode::ACCEPTED {
        bail!(
            "{}: cannot start an upload to {repo}: {}{}",
            session.base(),
            error_words(&start),
            if start.status() == StatusCode::FORBIDDEN || start.status() == StatusCode::UNAUTHORIZED
            {
                " (the credentials may read but not push: ask for push access)"
            } else {
                ""
            }
        );
    }
    let location = start
        .headers()
        .get(LOCATION)
        .and_then(|l| l.to_str().ok())
        .ok_or_else(|| anyhow!("{}: the upload started without a Location", session.base()))?;
    let separator = if location.contains('?') { '&' } else { '?' };
    let put = session
        .call(
            Method::PUT,
            &format!("{location}{separator}digest={digest}"),
            &[("content-type", "application/octet-stream".to_string())],
            Bytes::copy_from_slice(blob),
            SMALL,
        )
        .await?;
    if put.status() != StatusCode::CREATED {
        bail!(
            "{}: the upload of {digest} to {repo} was refused: {}",
            session.base(),
            error_words(&put)
        );
    }
    Ok(false)
}
