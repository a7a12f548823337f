//! `host sweep` and `host k8s render`: the commands that plan runs rather than make one
//! (a sweep drives many runs; a render writes the manifests of a distributed one).

use clap::{Args, Subcommand};
use std::path::PathBuf;

/// `host sweep`: its own flags, and how to reach a registry its plugin is in.
#[derive(Args, Debug)]
pub(super) struct SweepCommand {
    #[command(flatten)]
    args: crate::sweep::command::SweepArgs,
    #[command(flatten)]
    registry: crate::oci::RegistryOptions,
}

/// `host k8s ...`.
#[derive(Subcommand, Debug)]
pub(super) enum K8sCommand {
    /// Write the manifests of a distributed run: a ConfigMap with the plugin, a
    /// coordinator Job with its Service, and an Indexed Job of N workers.
    Render(crate::k8s::RenderArgs),
}

/// `host sweep`: resolves the plugin (a registry reference is pulled), then sweeps.
pub(super) async fn sweep(command: SweepCommand) -> anyhow::Result<i32> {
    let SweepCommand { mut args, registry } = command;
    let configs: Vec<PathBuf> = args.config.iter().cloned().collect();
    args.plugin =
        super::run::resolve_plugin(Some(args.plugin.as_path()), &configs, &registry).await?;
    crate::sweep::command::run(args).await
}

/// `host k8s render`: the run flags it passes on are checked as `host run` would take
/// them, by `parse` (the whole command line's parser, handed in by the dispatcher so
/// this module need not import it).
pub(super) fn k8s(
    command: K8sCommand,
    parse: impl Fn(Vec<String>) -> Result<(), clap::Error>,
) -> anyhow::Result<i32> {
    let K8sCommand::Render(args) = command;
    crate::k8s::render_command(args, |flags| {
        let argv = ["host", "run", "plugin.wasm"].map(String::from);
        parse(argv.iter().chain(flags).cloned().collect())
    })?;
    Ok(0)
}
