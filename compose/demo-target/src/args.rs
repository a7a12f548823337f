//! The demo target's serving flags as clap `Args` structs, declared once and flattened
//! into both command lines that serve it: its own binary (`demo-target`, which adds
//! `DEMO_*` environment variables to them, see [`ENV`]) and the host's `host target`;
//! `host demo` takes the [`FaultArgs`] and passes them on to its child target with
//! [`FaultArgs::flags`]. Checks that need more than one flag are in
//! [`ServeArgs::check`], which both binaries call.

use crate::{Capacity, Cidr, DemoConfig, Faults};
use clap::Args;
use std::time::Duration;

/// Faults the demo target injects into every request but /health and /admin/*.
#[derive(Args, Debug, Clone)]
pub struct FaultArgs {
    /// Latency added to every request (`250ms`, `2s`).
    #[arg(long, value_parser = parse_duration, default_value = "0")]
    pub latency: Duration,
    /// Stall all requests periodically: a stall window opens every this long after the
    /// target starts (`5s`); requests arriving inside one wait until it closes.
    #[arg(long, value_parser = parse_duration)]
    pub stall_every: Option<Duration>,
    /// Length of each stall window (with --stall-every).
    #[arg(long, value_parser = parse_duration, default_value = "1s")]
    pub stall_for: Duration,
    /// Share of requests answered with an injected 500, from 0.0 to 1.0.
    #[arg(long, value_parser = parse_error_rate, default_value_t = 0.0)]
    pub error_rate: f64,
    #[command(flatten)]
    pub capacity: CapacityArgs,
}

/// `--workers`, `--service-time`, `--queue`, `--contention` and `--crosstalk`: a target
/// whose true capacity, N / D requests a second, is known, so a sweep's capacity model
/// can be checked. With `--crosstalk` (the retrograde mode) each request's service time
/// grows with the requests in service, so throughput peaks and then falls, as the
/// Universal Scalability Law describes.
#[derive(Args, Debug, Clone, Default)]
pub struct CapacityArgs {
    /// Capacity limit: serve at most this many requests at once; the rest wait.
    #[arg(long, requires = "service_time")]
    pub workers: Option<usize>,
    /// With --workers: how long each request holds its worker (`10ms`).
    #[arg(long, value_parser = parse_duration, requires = "workers")]
    pub service_time: Option<Duration>,
    /// With --workers: requests that may wait for a worker; past it, 503 + Retry-After.
    #[arg(long, default_value_t = crate::capacity::DEFAULT_QUEUE)]
    pub queue: usize,
    /// With --workers (retrograde mode): service time grows by this share of
    /// --service-time for each other request in service (the USL's σ).
    #[arg(long, default_value_t = 0.0, requires = "workers", value_parser = crate::capacity::parse_share)]
    pub contention: f64,
    /// With --workers (retrograde mode): service time grows by this share of
    /// --service-time for each pair of requests in service (the USL's κ): throughput
    /// peaks at √((1 − σ)/κ) requests in service and falls past it.
    #[arg(long, default_value_t = 0.0, requires = "workers", value_parser = crate::capacity::parse_share)]
    pub crosstalk: f64,
}

/// What the demo target serves besides its faults: limits, seeding and the gRPC face.
#[derive(Args, Debug, Clone)]
pub struct ServeArgs {
    #[command(flatten)]
    pub faults: FaultArgs,
    /// Requests per second each client address may make (except /health, /metrics
    /// and /admin/*); past it the answer is 429 with Retry-After.
    #[arg(long, value_name = "N")]
    pub rate_limit: Option<u32>,
    /// A proxy (address or CIDR range) whose X-Forwarded-For is believed as the
    /// client address (repeatable); from anyone else the header is ignored.
    #[arg(long = "trusted-proxy", value_name = "CIDR", value_parser = Cidr::parse)]
    pub trusted_proxies: Vec<Cidr>,
    /// How long an access token of the account API (`POST /accounts`,
    /// `POST /auth/refresh`) stays valid, e.g. `5s` (rest-mix refreshes before it ends).
    #[arg(long, value_parser = parse_duration, default_value = "30s")]
    pub access_token_ttl: Duration,
    /// Large groups to seed after the ten small ones (numbered from 11), for paging
    /// and search over many notes.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub large_groups: u32,
    /// Notes in each large group (with --large-groups).
    #[arg(long, value_name = "N", default_value_t = 10_000)]
    pub large_group_notes: u32,
    /// Also serve the demo target's gRPC face on this address: the gateway
    /// `demo.gateway.v1.Gateway` on the same state (create a process instance, a stream
    /// of activated jobs), with server reflection, over plaintext HTTP/2, e.g.
    /// 127.0.0.1:26500.
    #[arg(long, value_name = "ADDR")]
    pub grpc_listen: Option<std::net::SocketAddr>,
}

/// The environment variable of each flag, for the `demo-target` binary (a container is
/// configured by its environment); `host target` reads none. Keyed by the flag's id.
pub const ENV: &[(&str, &str)] = &[
    ("latency", "DEMO_LATENCY"),
    ("stall_every", "DEMO_STALL_EVERY"),
    ("stall_for", "DEMO_STALL_FOR"),
    ("error_rate", "DEMO_ERROR_RATE"),
    ("workers", "DEMO_WORKERS"),
    ("service_time", "DEMO_SERVICE_TIME"),
    ("queue", "DEMO_QUEUE"),
    ("contention", "DEMO_CONTENTION"),
    ("crosstalk", "DEMO_CROSSTALK"),
    ("rate_limit", "DEMO_RATE_LIMIT"),
    ("access_token_ttl", "DEMO_ACCESS_TOKEN_TTL"),
    ("large_groups", "DEMO_LARGE_GROUPS"),
    ("large_group_notes", "DEMO_LARGE_GROUP_NOTES"),
    ("grpc_listen", "DEMO_GRPC_LISTEN"),
];

/// Adds the [`ENV`] variables to a command that flattens [`ServeArgs`].
pub fn with_env(mut command: clap::Command) -> clap::Command {
    for (id, var) in ENV {
        command = command.mut_arg(*id, |a| a.env(*var));
    }
    command
}

impl FaultArgs {
    /// The faults to give the target.
    pub fn faults(&self) -> Faults {
        Faults {
            latency: self.latency,
            stall_every: self.stall_every,
            stall_for: self.stall_for,
            error_rate: self.error_rate,
            capacity: self.capacity.capacity(),
        }
    }

    /// The same faults as flags, for a child target (`host demo`). Every field is
    /// named, so a new fault flag does not compile until it is passed on here too.
    pub fn flags(&self) -> Vec<String> {
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
}

impl CapacityArgs {
    /// The limit to give the target, if one was asked for.
    pub fn capacity(&self) -> Option<Capacity> {
        match (self.workers, self.service_time) {
            (Some(workers), Some(service_time)) if workers > 0 => Some(Capacity {
                queue: self.queue,
                contention: self.contention,
                crosstalk: self.crosstalk,
                ..Capacity::new(workers, service_time)
            }),
            _ => None,
        }
    }

    /// The same limit as flags, for a child target.
    pub fn flags(&self) -> Vec<String> {
        match self.capacity() {
            None => Vec::new(),
            Some(c) => vec![
                format!("--workers={}", c.workers),
                format!("--service-time={}us", c.service_time.as_micros()),
                format!("--queue={}", c.queue),
                format!("--contention={}", c.contention),
                format!("--crosstalk={}", c.crosstalk),
            ],
        }
    }
}

impl ServeArgs {
    /// Refuses values each flag's parser cannot judge alone. `--rate-limit 0` is
    /// refused (it would answer every request 429); leaving the flag out means no limit.
    pub fn check(&self) -> Result<(), String> {
        if self.rate_limit == Some(0) {
            return Err(
                "--rate-limit must be at least 1 request per second; leave it out for no limit"
                    .into(),
            );
        }
        // A zero TTL would make every token expired on arrival: each request a 401.
        if self.access_token_ttl.is_zero() {
            return Err(
                "--access-token-ttl must be longer than 0, e.g. 5s; leave it out for 30s".into(),
            );
        }
        if self.large_groups > 0 && self.large_group_notes == 0 {
            return Err(
                "--large-group-notes 0 makes the large groups empty; give at least 1 (default 10000)"
                    .into(),
            );
        }
        Ok(())
    }

    /// The config these flags ask for; the rest as `base` has it.
    pub fn config(&self, base: DemoConfig) -> DemoConfig {
        DemoConfig {
            faults: self.faults.faults(),
            rate_limit: self.rate_limit,
            trusted_proxies: self.trusted_proxies.clone(),
            access_token_ttl: self.access_token_ttl,
            large_groups: self.large_groups,
            large_group_notes: self.large_group_notes,
            ..base
        }
    }
}

/// `--error-rate`: a share from 0.0 to 1.0.
fn parse_error_rate(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(share) if (0.0..=1.0).contains(&share) => Ok(share),
        _ => Err(format!("{text:?} is not a number from 0.0 to 1.0")),
    }
}

/// Parses a duration in k6's notation, as the host's run configs write them: `250ms`,
/// `10s`, `1m30s`, `1.5m`, `2h`, `500us`; every number needs a unit, a bare `0` is
/// accepted.
pub fn parse_duration(input: &str) -> Result<Duration, String> {
    duration_or_reason(input).map_err(|reason| {
        format!("invalid duration {input:?}: {reason} (write it like 500ms, 30s, 1m30s or 2h)")
    })
}

/// The duration `input` writes, or why it writes none (a few words); the one parser of
/// k6's notation, which the host's `parse_duration` wraps in its own error type too.
pub fn duration_or_reason(input: &str) -> Result<Duration, &'static str> {
    let text = input.trim();
    if text.is_empty() {
        return Err("it is empty");
    }
    if text == "0" {
        return Ok(Duration::ZERO);
    }
    let mut total = 0f64;
    let mut rest = text;
    while !rest.is_empty() {
        let number_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        if number_len == 0 {
            return Err("expected a number");
        }
        let number: f64 = rest[..number_len]
            .parse()
            .map_err(|_| "the number is malformed")?;
        rest = &rest[number_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let seconds_per_unit = match &rest[..unit_len] {
            "us" | "µs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            "" => return Err("a number has no unit"),
            _ => return Err("unknown unit"),
        };
        rest = &rest[unit_len..];
        total += number * seconds_per_unit;
    }
    if !total.is_finite() || total > 1e9 {
        return Err("it is too long");
    }
    Ok(Duration::from_secs_f64(total))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser, Debug)]
    struct Both {
        #[command(flatten)]
        serve: ServeArgs,
    }

    #[test]
    fn durations_parse_in_the_hosts_notation() {
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("1m30s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("500us"), Ok(Duration::from_micros(500)));
        assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
        assert!(parse_duration("5").is_err());
        assert!(parse_duration("5 parsecs").is_err());
        assert!(parse_duration("ms").is_err());
    }

    #[test]
    fn error_rate_must_be_a_share() {
        assert_eq!(parse_error_rate("0.25"), Ok(0.25));
        assert!(parse_error_rate("1.5").is_err());
        assert!(parse_error_rate("NaN").is_err());
    }

    #[test]
    fn a_rate_limit_of_zero_is_refused() {
        let args = Both::try_parse_from(["t", "--rate-limit", "0"]).unwrap();
        assert!(args.serve.check().unwrap_err().contains("at least 1"));
        let args = Both::try_parse_from(["t", "--rate-limit", "1"]).unwrap();
        assert!(args.serve.check().is_ok());
    }

    #[test]
    fn the_faults_pass_on_as_flags_that_parse_back_alike() {
        let argv = [
            "t",
            "--latency",
            "1m30s",
            "--stall-every",
            "5s",
            "--error-rate",
            "0.5",
            "--workers",
            "4",
            "--service-time",
            "1500us",
            "--crosstalk",
            "0.01",
        ];
        let first = Both::try_parse_from(argv).unwrap().serve.faults;
        let again: Vec<String> = std::iter::once("t".to_string())
            .chain(first.flags())
            .collect();
        let second = Both::try_parse_from(again).unwrap().serve.faults;
        assert_eq!(
            format!("{:?}", first.faults()),
            format!("{:?}", second.faults())
        );
    }

    #[test]
    fn every_environment_variable_names_a_flag() {
        use clap::CommandFactory;
        // mut_arg panics on an id that is not there.
        let command = with_env(Both::command());
        for (id, var) in ENV {
            let arg = command.get_arguments().find(|a| a.get_id() == *id).unwrap();
            assert_eq!(arg.get_env().and_then(|e| e.to_str()), Some(*var));
        }
    }
}
