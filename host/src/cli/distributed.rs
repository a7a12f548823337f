//! `host coordinate` and `host worker`: one run over several processes, the coordinator
//! that merges their metrics and the workers that make the load.

use super::common::CommonArgs;
use super::results::{export_summary, finish, print_summary};
use crate::config::args::duration_arg;
use crate::run;
use clap::Args;
use std::path::PathBuf;
use std::time::Duration;

// The flags of `host coordinate` (its help is the variant's in `Command`).
#[derive(Args, Debug)]
pub(super) struct CoordinateArgs {
    /// The plugin component (.wasm), a k6 script (.js, .mjs or .ts, built here), or a registry
    /// reference; the workers receive the component from the coordinator, or, for a
    /// reference, pull it themselves by its manifest digest.
    plugin: PathBuf,
    #[command(flatten)]
    registry: crate::oci::RegistryOptions,
    /// Send the plugin's bytes to every worker even when it came from a registry (for
    /// workers that cannot reach the registry).
    #[arg(long)]
    send_plugin: bool,
    /// How many workers take part (the run starts when all have joined).
    #[arg(long)]
    workers: u32,
    /// Address the workers dial (0.0.0.0:PORT to take workers from other machines:
    /// that needs a cluster token).
    #[arg(long, default_value = "127.0.0.1:7878")]
    listen: std::net::SocketAddr,
    /// File holding the cluster token every worker must prove it holds (else
    /// HOST_CLUSTER_TOKEN; without either, loopback only).
    #[arg(long, value_name = "FILE")]
    token_file: Option<PathBuf>,
    #[command(flatten)]
    common: CommonArgs,
}

// The flags of `host worker`.
#[derive(Args, Debug)]
pub(super) struct WorkerArgs {
    /// The coordinator's address (HOST:PORT).
    #[arg(long)]
    coordinator: String,
    /// This worker's name in messages and summary.json (default: host name and pid).
    #[arg(long)]
    name: Option<String>,
    /// The plugin this worker expects: it is refused if the coordinator runs another.
    #[arg(long)]
    plugin: Option<PathBuf>,
    /// Folder under which the worker's own results folder is made.
    #[arg(long, default_value = "results")]
    out: PathBuf,
    /// How long to keep dialling a coordinator that is not listening yet.
    #[arg(long, default_value = "30s", value_parser = duration_arg)]
    connect_timeout: Duration,
    /// Run segment I of N (from 0): a Kubernetes Indexed Job's pods have it in
    /// JOB_COMPLETION_INDEX. Without it the coordinator deals segments by join order.
    #[arg(long, env = "JOB_COMPLETION_INDEX", value_name = "I")]
    index: Option<u32>,
    /// File holding the cluster token the coordinator must prove it holds (else
    /// HOST_CLUSTER_TOKEN).
    #[arg(long, value_name = "FILE")]
    token_file: Option<PathBuf>,
    /// Targets this worker lets the plugin reach (repeatable): the coordinator's
    /// `[targets] allow` is narrowed to those listed here too.
    #[arg(long, value_name = "URL")]
    allow: Vec<String>,
    /// How to reach the registry when the coordinator names the plugin by reference
    /// (credentials come from this worker's own Docker config.json).
    #[command(flatten)]
    registry: crate::oci::RegistryOptions,
    /// A source of the secrets a k6 script reads with `k6/secrets` on this worker
    /// (repeatable; as `host run --secret-source`): the coordinator's do not travel.
    /// A value this worker hands out is redacted here, and in the tags it sends.
    #[arg(long = "secret-source", value_name = "KIND=OPTIONS", value_parser = super::common::secret_source_arg)]
    secret_source: Vec<crate::plugin::secrets::SecretSource>,
}

/// `host coordinate`: resolves the plugin, hands the run to the workers, prints the
/// merged summary; Ctrl-C before the start is an interruption, not a failure.
pub(super) async fn coordinate(mut args: CoordinateArgs) -> anyhow::Result<i32> {
    args.common.read_env_file()?;
    let configs: Vec<&std::path::Path> = args.common.config.iter().map(PathBuf::as_path).collect();
    let resolved =
        crate::oci::resolve(Some(args.plugin.as_path()), &configs, &args.registry).await?;
    let plugin = resolved.path;
    // A plugin from a registry is pulled by each worker, by digest, unless asked
    // to send it (or the registry was out of reach here: then it is sent, said so).
    let plugin_reference = match resolved.by_digest {
        Some(reference) if !args.send_plugin => {
            crate::stderr::line(format_args!(
                "coordinator: the workers pull the plugin {reference} themselves"
            ));
            Some(reference)
        }
        None if crate::plugin::reference::names_reference(&args.plugin) => {
            crate::stderr::line(format_args!(
                "coordinator: the registry was out of reach here; the workers are sent the plugin's bytes"
            ));
            None
        }
        _ => None,
    };
    let export = args.common.summary_export.clone();
    let remember = args.common.remember();
    let request = crate::distributed::coordinator::CoordinateRequest {
        run: {
            let built = crate::author::js::plugin_path_with(&plugin, &args.common.env)?;
            args.common.request(built)
        },
        workers: args.workers,
        listen: args.listen,
        token: crate::distributed::trust::ClusterToken::from_flag_or_env(
            args.token_file.as_deref(),
        )?,
        plugin_reference,
    };
    match crate::distributed::coordinator::coordinate(request, print_summary).await {
        Ok(outcome) => Ok(finish(
            export_summary(outcome, export.as_deref()),
            &remember,
        )),
        Err(e) => {
            match e.downcast_ref::<crate::distributed::coordinator::StoppedBeforeStart>() {
                // Ctrl-C before the start is an interruption, not a failure.
                Some(stopped) => {
                    crate::stderr::line(format_args!("coordinator: {stopped}"));
                    Ok(run::exit_code::INTERRUPTED)
                }
                None => Err(e),
            }
        }
    }
}

/// `host worker`: joins the coordinator, makes its share of the load, and exits with
/// the run's code.
pub(super) async fn worker(mut args: WorkerArgs) -> anyhow::Result<i32> {
    crate::plugin::secrets::check_sources(&args.secret_source).map_err(anyhow::Error::msg)?;
    crate::plugin::secrets::set_sources(std::mem::take(&mut args.secret_source));
    let outcome = crate::distributed::worker::work(crate::distributed::worker::WorkerRequest {
        coordinator: args.coordinator,
        name: args.name,
        plugin: args.plugin,
        out: args.out,
        connect_timeout: args.connect_timeout,
        index: args.index,
        token: crate::distributed::trust::ClusterToken::from_flag_or_env(
            args.token_file.as_deref(),
        )?,
        allow: args.allow,
        registry: args.registry,
    })
    .await?;
    // A `k6/secrets` value this worker handed out is kept out of its own results too.
    if let Err(e) = crate::stderr::redact::redact_files(&outcome.results_dir) {
        eprintln!(
            "warning: cannot redact the secrets from {}: {e}",
            outcome.results_dir.display()
        );
    }
    println!(
        "worker: results in {}, exit code {}",
        outcome.results_dir.display(),
        outcome.exit_code
    );
    Ok(outcome.exit_code)
}
