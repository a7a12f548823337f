//! `host demo` and `host target`: the demo target served until Ctrl-C, or started as a
//! child process with the bundled `notes` plugin run against it. Their flags are the
//! demo target's own (`demo_target::args`), shared with its binary.

use super::common::CommonArgs;
use super::results::{export_summary, finish, print_summary};
use clap::Args;
use std::path::PathBuf;

// The flags of `host demo` (its help is the variant's in `Command`).
#[derive(Args, Debug)]
pub(super) struct DemoArgs {
    /// Run this plugin instead of the bundled `notes` example.
    #[arg(long)]
    plugin: Option<PathBuf>,
    #[command(flatten)]
    faults: demo_target::args::FaultArgs,
    #[command(flatten)]
    common: CommonArgs,
}

// The flags of `host target`.
#[derive(Args, Debug)]
pub(super) struct TargetArgs {
    /// Address to listen on (loopback only).
    #[arg(long, default_value = "127.0.0.1:8080")]
    listen: std::net::SocketAddr,
    // Declared once, in the demo target's crate, for its own binary too.
    #[command(flatten)]
    serve: demo_target::args::ServeArgs,
}

/// `host demo`: the demo target as a child process and a run against it.
pub(super) async fn demo(mut args: DemoArgs) -> anyhow::Result<i32> {
    args.common.read_env_file()?;
    let export = args.common.summary_export.clone();
    let remember = args.common.remember();
    let flags = args.faults.flags();
    let demo = crate::demo::run_demo(
        args.plugin,
        flags,
        |plugin| args.common.request(plugin),
        print_summary,
    )
    .await?;
    let code = finish(export_summary(demo.outcome, export.as_deref()), &remember);
    match demo.served {
        Some(n) => println!("  the demo target served {n} requests"),
        None => println!("  the demo target did not say how many requests it served"),
    }
    Ok(code)
}

/// `host target`: serves the demo target until Ctrl-C, then says how many requests it
/// served.
pub(super) async fn target(args: TargetArgs) -> anyhow::Result<i32> {
    let TargetArgs { listen, serve } = args;
    if !listen.ip().is_loopback() {
        anyhow::bail!("the demo target listens on loopback only; use 127.0.0.1:PORT");
    }
    if serve.grpc_listen.is_some_and(|a| !a.ip().is_loopback()) {
        anyhow::bail!("--grpc-listen is loopback only, as the demo target is; use 127.0.0.1:PORT");
    }
    serve.check().map_err(anyhow::Error::msg)?;
    let config = serve.config(demo_target::DemoConfig::default());
    let mut server = demo_target::DemoServer::start(listen, config).await?;
    // Bound before the first line, which callers wait for (target_process).
    let grpc = serve.grpc_listen.map(|a| server.also_grpc(a)).transpose()?;
    println!("{}{}", crate::target_process::LISTENING, server.base_url());
    if let Some(bound) = grpc {
        println!("gRPC face (demo.gateway.v1.Gateway, reflection) on {bound}");
    }
    crate::signals::next().await;
    let served = server.requests_served();
    server.shutdown().await;
    println!("{}{served} requests", crate::target_process::SERVED);
    Ok(0)
}
