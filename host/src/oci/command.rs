//! The `host push`, `host pull` and `host login` commands.

use super::session::{RegistryOptions, Session, SMALL};
use super::{artifact, credentials};
use crate::plugin::reference::Reference;
use anyhow::{anyhow, bail, Context, Result};
use bytes::Bytes;
use clap::Args;
use hyper::{Method, StatusCode};
use std::io::BufRead as _;
use std::path::PathBuf;

/// `host push`.
#[derive(Args, Debug)]
pub(crate) struct PushArgs {
    /// The plugin component (.wasm), or a plugin project's folder (built first, as
    /// `host build` does).
    pub plugin: PathBuf,
    /// Where to push: REGISTRY/REPOSITORY:TAG, e.g. ghcr.io/team/checkout:1.2.0.
    pub reference: String,
    #[command(flatten)]
    pub registry: RegistryOptions,
}

/// Bytes of an annotation's value `host pull` prints (a description is a sentence).
const ANNOTATION_BYTES: usize = 512;

/// `host pull`.
#[derive(Args, Debug)]
pub(crate) struct PullArgs {
    /// What to pull: REGISTRY/REPOSITORY:TAG or REGISTRY/REPOSITORY@sha256:DIGEST.
    pub reference: String,
    /// Refuse the component unless it has this sha256 (64 hex digits, as a run
    /// config's plugin.sha256).
    #[arg(long, value_name = "HEX")]
    pub sha256: Option<String>,
    /// Also copy the component to this file (it is kept in the cache either way).
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub registry: RegistryOptions,
}

/// `host login`.
#[derive(Args, Debug)]
pub(crate) struct LoginArgs {
    /// The registry (HOST or HOST:PORT, e.g. ghcr.io).
    pub registry: String,
    /// The user name.
    #[arg(short, long)]
    pub username: String,
    /// Read the password (or access token) from stdin, one line: keeps it out of the
    /// shell's history and the process list. Without it the password is read from
    /// stdin all the same.
    #[arg(long)]
    pub password_stdin: bool,
    #[command(flatten)]
    pub registry_options: RegistryOptions,
}

/// `host push PLUGIN|DIR REF`: prints the digest that names the push for good and the
/// pin to put in a run config.
pub(crate) async fn push(args: PushArgs) -> Result<i32> {
    let reference = Reference::parse(&args.reference)?;
    let path = if args.plugin.is_dir() {
        let built = crate::author::build::build(&args.plugin)?;
        println!("built {}", built.display());
        built
    } else {
        args.plugin.clone()
    };
    let (bytes, _) = crate::plugin::read_plugin(&path)?;
    // The annotations are what the plugin says of itself (describe() and its sections).
    let inspected = crate::run::inspect(&path, crate::config::Limits::default().memory_bytes)
        .await
        .with_context(|| format!("{} cannot be pushed", path.display()))?;
    let created = time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default();
    let annotations = artifact::annotations(
        &inspected.info.name,
        &inspected.info.version,
        &inspected.info.description,
        inspected.embedded.source.as_deref(),
        &created,
    );
    let file_name = path.file_name().map_or_else(
        || "plugin.wasm".to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let pushed =
        super::push::push(&bytes, &file_name, &annotations, &reference, &args.registry).await?;
    println!(
        "pushed {} {} to {reference}",
        inspected.info.name, inspected.info.version
    );
    println!("  digest:  {}", pushed.manifest);
    println!("  by digest: {}", reference.with_digest(&pushed.manifest));
    println!("  component sha256: {}", hex(&pushed.layer));
    if pushed.skipped > 0 {
        println!("  ({} of 2 blobs were there already)", pushed.skipped);
    }
    println!("  pin it in a run config:");
    println!(
        "    plugin = {{ oci = \"{reference}\", sha256 = \"{}\" }}",
        hex(&pushed.layer)
    );
    Ok(0)
}

/// `host pull REF`: fetches into the cache, prints where it is and its digests.
pub(crate) async fn pull(args: PullArgs) -> Result<i32> {
    let reference = Reference::parse(&args.reference)?;
    let expected = match &args.sha256 {
        None => None,
        Some(hex) => {
            let hex = hex
                .trim()
                .trim_start_matches("sha256:")
                .to_ascii_lowercase();
            if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                bail!("--sha256 must be 64 hex digits (as `host push` prints), got {hex:?}");
            }
            Some(super::pull::Expected {
                layer: format!("sha256:{hex}"),
                origin: "--sha256".to_string(),
            })
        }
    };
    let fetched = super::pull::pull(&reference, expected.as_ref(), &args.registry).await?;
    if let Some(why) = &fetched.offline {
        crate::stderr::line(format_args!(
            "warning: {why}; the pinned component is in the cache"
        ));
    }
    println!(
        "{} {reference}",
        if fetched.cached { "cached" } else { "pulled" }
    );
    // The registry's text: escaped (no terminal controls, no line breaks) and cut.
    for (key, value) in &fetched.annotations {
        if let Some(short) = key.strip_prefix("org.opencontainers.image.") {
            let short = crate::stderr::escape_controls(short, false);
            let value = crate::stderr::escape_controls(value, false);
            println!(
                "  {short:<12} {}",
                crate::bounded::cut(&value, ANNOTATION_BYTES)
            );
        }
    }
    if let Some(manifest) = &fetched.manifest {
        println!("  digest:  {manifest}");
    }
    println!("  component sha256: {}", hex(&fetched.layer));
    println!("  file: {}", fetched.path.display());
    if let Some(out) = &args.output {
        std::fs::copy(&fetched.path, out)
            .with_context(|| format!("cannot copy the component to {}", out.display()))?;
        println!("  copied to {}", out.display());
    }
    Ok(0)
}

/// `host login REGISTRY -u USER`: checks the credentials against the registry, then
/// stores them in Docker's config file.
pub(crate) async fn login(args: LoginArgs) -> Result<i32> {
    let registry = args.registry.trim_end_matches('/').to_string();
    let registry = registry
        .strip_prefix("https://")
        .or_else(|| registry.strip_prefix("http://"))
        .unwrap_or(&registry)
        .to_string();
    let reference = Reference::parse(&format!("{registry}/login-check")).map_err(|_| {
        anyhow!("{registry:?} is not a registry host (HOST or HOST:PORT, e.g. ghcr.io)")
    })?;
    let mut line = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut line)
        .context("cannot read the password from stdin")?;
    let password = line.trim_end_matches(['\n', '\r']).to_string();
    if password.is_empty() {
        bail!("no password on stdin: pipe it in, e.g. `echo \"$TOKEN\" | host login {registry} -u USER --password-stdin`");
    }
    let creds = credentials::Credentials {
        username: args.username.clone(),
        password,
    };
    let mut session = Session::with_credentials(&reference, &args.registry_options, creds.clone());
    let response = session
        .call(Method::GET, "/v2/", &[], Bytes::new(), SMALL)
        .await?;
    if response.status() != StatusCode::OK {
        bail!(
            "{} did not accept the login: {}",
            session.base(),
            super::session::error_words(&response)
        );
    }
    let path = credentials::store(&registry, &creds)?;
    println!(
        "logged in to {registry} as {}; credentials stored in {}",
        creds.username,
        path.display()
    );
    Ok(0)
}

fn hex(digest: &str) -> &str {
    digest.strip_prefix("sha256:").unwrap_or(digest)
}
