//! `host demo` and `host target`: the demo target served until Ctrl-C, or started as a
//! child process with the bundled `notes` plugin run against it.

use super::common::CommonArgs;
use super::results::{export_summary, finish, print_summary};
use crate::config::args::duration_arg;
use clap::Args;
use std::path::PathBuf;
use std::time::Duration;

/// Faults the demo target injects into every request but /health and /admin/*.
#[derive(Args, Debug, Clone)]
pub(super) struct FaultArgs {
    /// Latency added to every request (`250ms`, `2s`).
    #[arg(long, value_parser = duration_arg, default_value = "0")]
    latency: Duration,
    /// Stall all requests periodically: a stall window opens every this long after the
    /// target starts (`5s`); requests arriving inside one wait until it closes.
    #[arg(long, value_parser = duration_arg)]
    stall_every: Option<Duration>,
    /// Length of each stall window (with --stall-every).
    #[arg(long, value_parser = duration_arg, default_value = "1s")]
    stall_for: Duration,
    /// Share of requests answered with an injected 500, from 0.0 to 1.0.
    #[arg(long, value_parser = share_arg, default_value_t = 0.0)]
    error_rate: f64,
    #[command(flatten)]
    capacity: crate::sweep::target_capacity::CapacityArgs,
}

impl FaultArgs {
    /// The same faults as `host target` flags, for the demo's child target. Every field
    /// is named, so a new fault flag does not compile until it is passed on here too.
    fn flags(&self) -> Vec<String> {
        let FaultArgs {
            latency,
            stall_every,
            stall_for,
            error_rate,
            capacity,
        } = self;
        let mut flags = vec![
            format!("--latency={}ms", latency.as_millis()),
            format!("--stall-for={}ms", stall_for.as_millis()),
            format!("--error-rate={error_rate}"),
        ];
        if let Some(every) = stall_every {
            flags.push(format!("--stall-every={}ms", every.as_millis()));
        }
        flags.extend(capacity.flags());
        flags
    }

    fn faults(&self) -> demo_target::Faults {
        demo_target::Faults {
            latency: self.latency,
            stall_every: self.stall_every,
            stall_for: self.stall_for,
            error_rate: self.error_rate,
            capacity: self.capacity.capacity(),
        }
    }
}

// The flags of `host demo` (its help is the variant's in `Command`).
#[derive(Args, Debug)]
pub(super) struct DemoArgs {
    /// Run this plugin instead of the bundled `notes` example.
    #[arg(long)]
    plugin: Option<PathBuf>,
    #[command(flatten)]
    faults: FaultArgs,
    #[command(flatten)]
    common: CommonArgs,
}

// The flags of `host target`.
#[derive(Args, Debug)]
pub(super) struct TargetArgs {
    /// Address to listen on (loopback only).
    #[arg(long, default_value = "127.0.0.1:8080")]
    listen: std::net::SocketAddr,
    #[command(flatten)]
    faults: FaultArgs,
    /// Requests per second each client address may make (except /health, /metrics
    /// and /admin/*); past it the answer is 429 with Retry-After.
    #[arg(long, value_name = "N")]
    rate_limit: Option<u32>,
    /// A proxy (address or CIDR range) whose X-Forwarded-For is believed as the
    /// client address (repeatable); from anyone else the header is ignored.
    #[arg(long = "trusted-proxy", value_name = "CIDR", value_parser = demo_target::Cidr::parse)]
    trusted_proxies: Vec<demo_target::Cidr>,
    /// How long an access token of the account API (`POST /accounts`,
    /// `POST /auth/refresh`) stays valid, e.g. `5s` (rest-mix refreshes before it ends).
    #[arg(long, value_parser = duration_arg, default_value = "30s")]
    access_token_ttl: Duration,
    /// Large groups to seed after the ten small ones (numbered from 11), for paging
    /// and search over many notes.
    #[arg(long, value_name = "N", default_value_t = 0)]
    large_groups: u32,
    /// Notes in each large group (with --large-groups).
    #[arg(long, value_name = "N", default_value_t = 10_000)]
    large_group_notes: u32,
    /// Also serve the demo target's gRPC face on this address (loopback only): the
    /// gateway `demo.gateway.v1.Gateway` on the same state, with server reflection,
    /// e.g. 127.0.0.1:26500.
    #[arg(long, value_name = "ADDR")]
    grpc_listen: Option<std::net::SocketAddr>,
}

/// `--error-rate`: a share from 0.0 to 1.0.
fn share_arg(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(share) if (0.0..=1.0).contains(&share) => Ok(share),
        _ => Err(format!("{text:?} is not a number from 0.0 to 1.0")),
    }
}

/// `host demo`: the demo target as a child process and a run against it.
pub(super) async fn demo(mut args: DemoArgs) -> anyhow::Result<i32> {
    args.common.read_env_file()?;
    let export = args.common.summary_export.clone();
    let flags = args.faults.flags();
    let demo = crate::demo::run_demo(
        args.plugin,
        flags,
        |plugin| args.common.request(plugin),
        print_summary,
    )
    .await?;
    let code = finish(export_summary(demo.outcome, export.as_deref()));
    match demo.served {
        Some(n) => println!("  the demo target served {n} requests"),
        None => println!("  the demo target did not say how many requests it served"),
    }
    Ok(code)
}

/// `host target`: serves the demo target until Ctrl-C, then says how many requests it
/// served.
pub(super) async fn target(args: TargetArgs) -> anyhow::Result<i32> {
    let TargetArgs {
        listen,
        faults,
        rate_limit,
        trusted_proxies,
        access_token_ttl,
        large_groups,
        large_group_notes,
        grpc_listen,
    } = args;
    if !listen.ip().is_loopback() {
        anyhow::bail!("the demo target listens on loopback only; use 127.0.0.1:PORT");
    }
    if grpc_listen.is_some_and(|a| !a.ip().is_loopback()) {
        anyhow::bail!("--grpc-listen is loopback only, as the demo target is; use 127.0.0.1:PORT");
    }
    if rate_limit == Some(0) {
        anyhow::bail!(
            "--rate-limit must be at least 1 request per second; leave it out for no limit"
        );
    }
    // A zero TTL would make every token expired on arrival: each request a 401.
    if access_token_ttl.is_zero() {
        anyhow::bail!("--access-token-ttl must be longer than 0, e.g. 5s; leave it out for 30s");
    }
    if large_groups > 0 && large_group_notes == 0 {
        anyhow::bail!(
            "--large-group-notes 0 makes the large groups empty; give at least 1 (default 10000)"
        );
    }
    let config = demo_target::DemoConfig {
        faults: faults.faults(),
        rate_limit,
        trusted_proxies,
        access_token_ttl,
        large_groups,
        large_group_notes,
        ..Default::default()
    };
    let mut server = demo_target::DemoServer::start(listen, config).await?;
    // Bound before the first line, which callers wait for (target_process).
    let grpc = grpc_listen.map(|a| server.also_grpc(a)).transpose()?;
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
