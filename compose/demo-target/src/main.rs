//! The `demo-target` binary: runs the demo notes application until Ctrl-C; with
//! `worker`, the worker that completes its asynchronous commands; with `health URL`, a
//! healthcheck for images that have no shell or curl.

use std::net::SocketAddr;
use std::time::Duration;

use clap::error::ErrorKind;
use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use demo_target::args::{parse_duration, ServeArgs};
use demo_target::{Cidr, DemoConfig, DemoServer};

/// The demo system under test: a small notes application with injectable faults.
#[derive(Parser, Debug)]
#[command(version, about, args_conflicts_with_subcommands = true)]
struct Args {
    #[command(subcommand)]
    role: Option<Role>,
    /// Address to listen on.
    #[arg(long, env = "DEMO_LISTEN", default_value = "127.0.0.1:8080")]
    listen: SocketAddr,
    /// Allow listening on a non-loopback address (exposes the target to the network).
    #[arg(long, env = "DEMO_ALLOW_REMOTE")]
    allow_remote: bool,
    #[command(flatten)]
    serve: ServeArgs,
    /// How often the server pings each live-updates WebSocket (`GET /ws`).
    #[arg(long, env = "DEMO_WS_PING_INTERVAL", default_value = "30s", value_parser = parse_duration)]
    ws_ping_interval: Duration,
    /// A WebSocket silent (not even a pong) for this long is closed.
    #[arg(long, env = "DEMO_WS_IDLE_TIMEOUT", default_value = "90s", value_parser = parse_duration)]
    ws_idle_timeout: Duration,
    /// Most WebSockets one user may hold at once.
    #[arg(long, env = "DEMO_WS_MAX_PER_USER", default_value_t = 20)]
    ws_max_per_user: usize,
    /// Only these peers (address or CIDR range; repeatable) may call /admin/*, which
    /// switches faults and holds memory: others get 403. Default: anyone.
    #[arg(long = "admin-from", value_parser = Cidr::parse)]
    admin_from: Vec<Cidr>,
    /// Leave commands queued for a separate `demo-target worker` process (the Compose
    /// stack) instead of completing them in this process.
    #[arg(long, env = "DEMO_EXTERNAL_WORKER")]
    external_worker: bool,
    /// How long the in-process worker works on each command.
    #[arg(long, env = "DEMO_COMMAND_WORK", default_value = "50ms", value_parser = parse_duration)]
    command_work: Duration,
    /// Invocations (POST /invoke) served at once; past it, 503 with Retry-After.
    #[arg(long, env = "DEMO_INVOKE_CONCURRENCY", default_value_t = 8)]
    invoke_concurrency: usize,
    /// How long each invocation takes.
    #[arg(long, env = "DEMO_INVOKE_WORK", default_value = "20ms", value_parser = parse_duration)]
    invoke_work: Duration,
    /// Webhooks the outbox delivers per second at most.
    #[arg(long, env = "DEMO_WEBHOOK_RATE", default_value_t = 100)]
    webhook_rate: u32,
    /// Serve https (and h2 by ALPN) with a certificate made at start by a CA made at
    /// start; without --tls-ca-out the CA is printed.
    #[arg(long, env = "DEMO_TLS")]
    tls: bool,
    /// Also serve https (and h2) on this address, beside plain HTTP on --listen: TLS at
    /// the edge, as a Compose stack publishes it (compose/docker-compose.tls.yml).
    #[arg(long, env = "DEMO_TLS_LISTEN", conflicts_with = "tls")]
    tls_listen: Option<SocketAddr>,
    /// Also serve HTTP/3 (QUIC) on this UDP address, with the certificate of --tls or
    /// --tls-listen; their answers then carry `Alt-Svc: h3=":PORT"`.
    #[arg(long, env = "DEMO_H3_LISTEN")]
    h3_listen: Option<SocketAddr>,
    /// The port `Alt-Svc` names for HTTP/3 instead of the one --h3-listen binds: where
    /// clients reach it, when a container's UDP port is published at another number.
    #[arg(long, env = "DEMO_H3_ALT_SVC_PORT", requires = "h3_listen")]
    h3_alt_svc_port: Option<u16>,
    /// Where to write the generated CA certificate (PEM) for clients to trust.
    #[arg(long, env = "DEMO_TLS_CA_OUT")]
    tls_ca_out: Option<std::path::PathBuf>,
    /// Names the server certificate is valid for (DNS names or IP addresses); repeatable.
    #[arg(long = "tls-name", env = "DEMO_TLS_NAMES", value_delimiter = ',',
          default_values_t = ["localhost".to_string(), "127.0.0.1".to_string(), "::1".to_string()])]
    tls_names: Vec<String>,
}

/// The other roles of the binary; without one it serves the API.
#[derive(Subcommand, Debug)]
enum Role {
    /// Claim queued commands from the API's outbox and complete them, until stopped.
    Worker {
        /// The API to claim from.
        #[arg(long, env = "DEMO_API", default_value = "http://127.0.0.1:8080")]
        api: String,
        /// Where the worker serves its own /health and /metrics.
        #[arg(long, env = "DEMO_WORKER_LISTEN", default_value = "127.0.0.1:8081")]
        listen: SocketAddr,
    },
    /// GET a URL; exit 0 on a 2xx answer, 1 otherwise (a container healthcheck).
    Health {
        /// What to check, e.g. http://127.0.0.1:8080/health.
        url: String,
        /// How long to wait for the answer.
        #[arg(long, default_value = "2s", value_parser = parse_duration)]
        timeout: Duration,
    },
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    // The serving flags are `host target`'s, each also read from a DEMO_* variable here.
    let matches = demo_target::args::with_env(Args::command()).get_matches();
    let args = match Args::from_arg_matches(&matches) {
        Ok(args) => args,
        Err(e) => e.exit(),
    };
    match args.role {
        Some(Role::Health { url, timeout }) => {
            match demo_target::probe::check(&url, timeout).await {
                Ok(line) => println!("{line}"),
                Err(e) => {
                    println!("{e:#}");
                    std::process::exit(1);
                }
            }
            return Ok(());
        }
        Some(Role::Worker { api, listen }) => {
            tokio::select! {
                result = demo_target::worker::run(api, listen) => return result,
                result = shutdown_signal() => return result,
            }
        }
        None => {}
    }
    for addr in std::iter::once(args.listen).chain(args.serve.grpc_listen) {
        if !addr.ip().is_loopback() && !args.allow_remote {
            // A fault-injecting target should not end up on a shared network by accident.
            let message = format!(
                "refusing to listen on non-loopback address {addr}; pass --allow-remote to expose the demo target"
            );
            Args::command()
                .error(ErrorKind::ArgumentConflict, message)
                .exit();
        }
    }
    if let Err(message) = args.serve.check() {
        Args::command()
            .error(ErrorKind::ValueValidation, message)
            .exit();
    }
    let config = args.serve.config(DemoConfig {
        ws_ping_interval: args.ws_ping_interval,
        ws_idle_timeout: args.ws_idle_timeout,
        ws_max_per_user: args.ws_max_per_user,
        in_process_worker: !args.external_worker,
        command_work: args.command_work,
        invoke_concurrency: args.invoke_concurrency,
        invoke_work: args.invoke_work,
        webhook_rate: args.webhook_rate,
        admin_from: args.admin_from,
        ..DemoConfig::default()
    });
    if args.tls_ca_out.is_some() && !args.tls && args.tls_listen.is_none() {
        anyhow::bail!(
            "--tls-ca-out needs --tls or --tls-listen: without them no certificate is made"
        );
    }
    if args.h3_listen.is_some() && !args.tls && args.tls_listen.is_none() {
        anyhow::bail!(
            "--h3-listen needs --tls or --tls-listen: HTTP/3 always runs over TLS, and its \
             certificate is theirs"
        );
    }
    let mut demo_tls = None;
    let tls = if args.tls || args.tls_listen.is_some() {
        let names: Vec<&str> = args.tls_names.iter().map(String::as_str).collect();
        let tls = demo_target::DemoTls::generate(&names)?;
        match &args.tls_ca_out {
            Some(path) => std::fs::write(path, &tls.ca_pem).map_err(|e| {
                anyhow::anyhow!(
                    "cannot write the CA to {} (--tls-ca-out): {e}",
                    path.display()
                )
            })?,
            None => print!("{}", tls.ca_pem),
        }
        let config = tls.server_config()?;
        demo_tls = Some(tls);
        Some(config)
    } else {
        None
    };
    let mut server = match tls.clone() {
        Some(tls) if args.tls => DemoServer::start_tls(args.listen, config, tls).await?,
        _ => DemoServer::start(args.listen, config).await?,
    };
    if let (Some(addr), Some(tls)) = (args.tls_listen, tls) {
        let bound = server.also_tls(addr, tls)?;
        println!("demo target listening on https://{bound} too");
    }
    if let (Some(addr), Some(tls)) = (args.h3_listen, &demo_tls) {
        let bound = server.also_h3_advertised(addr, tls, args.h3_alt_svc_port)?;
        match args.h3_alt_svc_port {
            Some(port) => println!(
                "demo target listening on HTTP/3 (UDP) {bound} too, named in Alt-Svc as port {port}"
            ),
            None => println!("demo target listening on HTTP/3 (UDP) {bound} too"),
        }
    }
    if let Some(addr) = args.serve.grpc_listen {
        let bound = server.also_grpc(addr)?;
        println!("demo target listening on gRPC (plaintext HTTP/2) {bound} too");
    }
    println!("demo target listening on {}", server.base_url());
    shutdown_signal().await?;
    println!("demo target shutting down");
    server.shutdown().await;
    Ok(())
}

/// Ctrl-C, or SIGTERM too on Unix since that is how containers are stopped.
async fn shutdown_signal() -> anyhow::Result<()> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let mut term = signal(SignalKind::terminate())?;
        tokio::select! {
            result = tokio::signal::ctrl_c() => result?,
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    tokio::signal::ctrl_c().await?;
    Ok(())
}
