//! How a worker gets the plugin an [`Init`] names: the bytes sent with it, or, when
//! the coordinator's plugin came from a registry, a pull by manifest digest into this
//! worker's own cache, with this worker's registry flags and Docker credentials (a
//! large plugin is not streamed to every worker, and each machine keeps it by digest
//! for the next run). Whatever the source, the caller checks the bytes against
//! `Init::plugin_sha256` and `host worker --plugin`.

use super::protocol::Init;
use crate::oci::pull::{self, Expected};
use crate::oci::RegistryOptions;
use crate::plugin::reference::Reference;
use anyhow::{bail, Context, Result};
use std::borrow::Cow;
use std::path::Path;

/// The plugin's bytes: those sent in `init`; else, when `init` names a reference, the
/// file `local` (this worker's `--plugin FILE`, passed only when its sha256 is the one
/// `init` names: no registry is needed then), else a pull through `registry`.
pub(crate) async fn plugin_bytes<'a>(
    init: &'a Init,
    local: Option<&Path>,
    registry: &RegistryOptions,
) -> Result<Cow<'a, [u8]>> {
    let Some(text) = &init.plugin_reference else {
        return Ok(Cow::Borrowed(&init.plugin));
    };
    if !init.plugin.is_empty() {
        // Two sources would leave it open which one ran: refused rather than guessed.
        bail!("the coordinator sent both the plugin's bytes and a reference ({text}): refused");
    }
    if let Some(path) = local {
        return Ok(Cow::Owned(crate::plugin::read_plugin(path)?.0));
    }
    let reference = Reference::parse(text)
        .with_context(|| format!("the coordinator named the plugin {text:?}"))?;
    if reference.digest.is_none() {
        // A tag may move between the coordinator's pull and this one: by digest only.
        bail!("the coordinator named the plugin {text} without a manifest digest: refused (workers pull by digest only)");
    }
    let expected = Expected {
        layer: format!("sha256:{}", init.plugin_sha256),
        origin: "the coordinator".into(),
    };
    let fetched = match pull::pull(&reference, Some(&expected), registry).await {
        Ok(fetched) => fetched,
        Err(e) => bail!(
            "cannot pull the plugin {reference}: {e:#}. The coordinator names the plugin by its \
             registry reference and each worker pulls it itself: give this worker access to the \
             registry (its own --plain-http, and credentials in its Docker config.json: \
             `host login {}`), or have the coordinator send the bytes (`host coordinate --send-plugin`, \
             or a plugin file instead of a reference)",
            reference.registry
        ),
    };
    if let Some(why) = &fetched.offline {
        crate::stderr::line(format_args!(
            "warning: {why}; this worker runs the plugin sha256 {} from its cache",
            init.plugin_sha256
        ));
    }
    let (bytes, _) = crate::plugin::read_plugin(&fetched.path)?;
    Ok(Cow::Owned(bytes))
}
