//! `host run` and `host inspect`: a plugin (a file, a project, a k6 script or a registry
//! reference) run with its config and the command line's overrides, with or without a
//! Compose stack around it; or only described.

use super::common::CommonArgs;
use super::results::{export_summary, finish, print_summary};
use super::stack::StackArgs;
use super::value_errors::{plugin_taken_as_value, PluginTakenAsValue};

use clap::Args;
use std::path::{Path, PathBuf};

// The flags of `host run` (its help is the variant's in `Command`).
#[derive(Args, Debug)]
pub(super) struct RunArgs {
    /// The plugin component (.wasm), a plugin project's folder (as `host new` makes it,
    /// built first when its sources changed since its last build), a k6 script (.js, .mjs or
    /// .ts: built into a component first, cached by the hash of its inputs), or a registry
    /// reference (REGISTRY/REPOSITORY:TAG or @sha256:DIGEST); without it, the run
    /// config's `plugin = { oci | path, sha256 }`.
    plugin: Option<PathBuf>,
    #[command(flatten)]
    registry: crate::oci::RegistryOptions,
    /// Start a Compose stack first (default: [stack] file, else
    /// compose/docker-compose.yml), run against its entry URLs only, then remove it.
    #[arg(long, value_name = "COMPOSE_FILE", num_args = 0..=1, value_parser = stack_arg)]
    stack: Option<Option<PathBuf>>,
    /// With --stack: leave the stack running after the run.
    #[arg(long, requires = "stack")]
    keep: bool,
    #[command(flatten)]
    stack_args: StackArgs,
    #[command(flatten)]
    common: CommonArgs,
}

// The flags of `host inspect`.
#[derive(Args, Debug)]
pub(super) struct InspectArgs {
    /// The plugin component (.wasm), or a registry reference
    /// (REGISTRY/REPOSITORY:TAG or @sha256:DIGEST).
    plugin: PathBuf,
    #[command(flatten)]
    registry: crate::oci::RegistryOptions,
}

/// `--stack [COMPOSE_FILE]`.
fn stack_arg(text: &str) -> Result<PathBuf, PluginTakenAsValue> {
    match plugin_taken_as_value("stack", text) {
        Some(why) => Err(why),
        None => Ok(PathBuf::from(text)),
    }
}

/// `host run`: resolves and builds the plugin, runs it (inside a stack session with
/// `--stack`), prints the summary and says where the results are.
pub(super) async fn run(mut args: RunArgs) -> anyhow::Result<i32> {
    args.common.read_env_file()?;
    let quiet = args.common.quiet;
    let plugin =
        resolve_plugin(args.plugin.as_deref(), &args.common.config, &args.registry).await?;
    let plugin = crate::author::project::component_for(&plugin, quiet)?;
    let plugin = crate::author::js::plugin_path_with(&plugin, &args.common.env)?;
    let export = args.common.summary_export.clone();
    let remember = args.common.remember();
    let request = args.common.request(plugin);
    // This process ends after this run: its VUs' instances are left to the exit.
    crate::run::keep_instances_until_exit();
    let outcome = match args.stack {
        None => crate::run::run_then(request, print_summary).await?,
        Some(file) => {
            let stack_run = crate::stack::cycle::StackRun {
                flags: args.stack_args.flags(file, None, quiet),
                keep: args.keep,
            };
            let outcome = crate::stack::cycle::run_with_stack(request, stack_run).await?;
            print_summary(&outcome.summary);
            outcome
        }
    };
    Ok(finish(
        export_summary(outcome, export.as_deref()),
        &remember,
    ))
}

/// `host inspect`: prints what the plugin says of itself.
pub(super) async fn inspect(args: InspectArgs) -> anyhow::Result<i32> {
    let InspectArgs { plugin, registry } = args;
    let named = crate::plugin::reference::names_reference(&plugin).then(|| plugin.clone());
    let plugin = resolve_plugin(Some(plugin.as_path()), &[], &registry).await?;
    let plugin = crate::author::js::plugin_path(&plugin)?;
    let inspected =
        crate::run::inspect(&plugin, crate::config::Limits::default().memory_bytes).await?;
    if let Some(reference) = named {
        println!("reference:   {}", reference.display());
    }
    print!("{}", crate::output::text::render_inspection(&inspected));
    Ok(0)
}

/// The plugin file an argument names: itself, or a registry reference pulled into the
/// cache (checked against the pins of `configs`).
pub(super) async fn resolve_plugin(
    arg: Option<&Path>,
    configs: &[PathBuf],
    registry: &crate::oci::RegistryOptions,
) -> anyhow::Result<PathBuf> {
    let configs: Vec<&Path> = configs.iter().map(PathBuf::as_path).collect();
    crate::oci::resolve_plugin(arg, &configs, registry).await
}
