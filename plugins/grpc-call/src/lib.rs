//! `grpc-call`: a grpcurl-like gRPC load test driven by the environment.
//!
//! Each iteration makes one call of `GRPC_METHOD` on `GRPC_TARGET` with the JSON
//! request `GRPC_REQUEST`. A unary call is prepared once per VU (the host resolves the
//! method and encodes the request a single time) and invoked; a server stream gets the request
//! and is read to its end; a client or bidirectional stream sends `GRPC_MESSAGES`
//! copies of the request, half-closes and reads the answers to the end. The host
//! records `grpc_reqs`, `grpc_req_duration`, `grpc_req_failed` and the stream metrics.
//! A call that fails on the wire (a status, a deadline, a refused connection) is
//! counted there and the iteration goes on; a bad setting (an invalid method or
//! message, a denied target) fails the iteration with the host's message.
//!
//! Environment:
//! - `GRPC_TARGET`: `host:port` (required);
//! - `GRPC_METHOD`: `package.Service/Method` (required);
//! - `GRPC_REQUEST`: the request as proto3 JSON (default `{}`);
//! - `GRPC_PROTO`: the name of a `[data]` entry holding the `.proto` file (the host
//!   loads a `.proto` file as its text; a plugin reads no files itself); without it,
//!   the server's reflection service is asked;
//! - `GRPC_TLS=1`: TLS with the run's `[tls]` settings;
//! - `GRPC_MESSAGES`: messages a client or bidi stream sends (default 1);
//! - `GRPC_TIMEOUT_MS`: each call's deadline (default none);
//! - `GRPC_EXPECT`: status codes, comma-separated, that count as expected.

use std::cell::RefCell;
use std::time::Duration;

use loadtest::grpc::{Channel, GrpcError, Item, MethodInfo, PreparedCall};
use loadtest::{env, PluginInfo, Scenario};

const DEFAULT_CONFIG: &str = r#"[scenarios.default]
executor = "constant-vus"
vus = 1
duration = "10s"
"#;

/// How long a stream's `recv` waits before counting the stream as stuck.
const RECV_TIMEOUT: Duration = Duration::from_secs(60);

/// What a VU keeps across iterations: the settings, its channel, what the method is,
/// and the call prepared on the channel when the method is unary.
struct Vu {
    settings: Settings,
    channel: Channel,
    info: MethodInfo,
    prepared: Option<PreparedCall>,
}

thread_local! {
    /// This VU's state, made in its first iteration.
    static VU: RefCell<Option<Vu>> = const { RefCell::new(None) };
}

/// The run's settings, read from the environment.
struct Settings {
    method: String,
    request: String,
    messages: u32,
    timeout: Option<Duration>,
    expect: Vec<u32>,
}

fn required(name: &str) -> Result<String, String> {
    env(name)
        .filter(|v| !v.is_empty())
        .ok_or_else(|| format!("set {name} (for example with -e {name}=...)"))
}

fn settings() -> Result<Settings, String> {
    let number = |name: &str| -> Result<Option<u64>, String> {
        match env(name).filter(|v| !v.is_empty()) {
            None => Ok(None),
            Some(v) => v
                .trim()
                .parse()
                .map(Some)
                .map_err(|_| format!("{name}={v:?} is not a whole number")),
        }
    };
    let expect = match env("GRPC_EXPECT").filter(|v| !v.is_empty()) {
        None => Vec::new(),
        Some(v) => v
            .split(',')
            .map(|c| {
                c.trim()
                    .parse()
                    .map_err(|_| format!("GRPC_EXPECT={v:?}: write status codes such as 5,3"))
            })
            .collect::<Result<_, _>>()?,
    };
    Ok(Settings {
        method: required("GRPC_METHOD")?,
        request: env("GRPC_REQUEST").unwrap_or_else(|| "{}".into()),
        messages: number("GRPC_MESSAGES")?.unwrap_or(1) as u32,
        timeout: number("GRPC_TIMEOUT_MS")?.map(Duration::from_millis),
        expect,
    })
}

fn open(settings: Settings) -> Result<Vu, String> {
    let target = required("GRPC_TARGET")?;
    let mut builder = Channel::builder(&target).tls(env("GRPC_TLS").as_deref() == Some("1"));
    match env("GRPC_PROTO").filter(|v| !v.is_empty()) {
        Some(name) => {
            let source = loadtest::grpc::proto_from_data(&name).ok_or_else(|| {
                format!(
                    "GRPC_PROTO={name}: no [data] entry {name} holding a .proto file; add \
                     `{name} = \"path/to/file.proto\"` under [data]"
                )
            })?;
            let file = if name.ends_with(".proto") {
                name
            } else {
                format!("{name}.proto")
            };
            builder = builder.proto(&file, &source);
        }
        None => builder = builder.reflect(),
    }
    let channel = builder.connect()?;
    let info = channel.describe_method(&settings.method)?;
    let prepared = if info.client_streaming || info.server_streaming {
        None
    } else {
        let mut c = channel.call(&settings.method, &settings.request);
        if let Some(t) = settings.timeout {
            c = c.timeout(t);
        }
        for code in &settings.expect {
            c = c.expect_code(*code);
        }
        Some(c.prepare()?)
    };
    Ok(Vu {
        settings,
        channel,
        info,
        prepared,
    })
}

/// One call of the method, by its kind.
fn call(vu: &Vu) -> Result<(), GrpcError> {
    let (channel, s) = (&vu.channel, &vu.settings);
    if let Some(prepared) = &vu.prepared {
        prepared.invoke()?;
        return Ok(());
    }
    let mut open = channel.stream(&s.method);
    if let Some(t) = s.timeout {
        open = open.timeout(t);
    }
    for code in &s.expect {
        open = open.expect_code(*code);
    }
    let stream = open.open()?;
    let copies = if vu.info.client_streaming {
        s.messages
    } else {
        1
    };
    for _ in 0..copies {
        stream.send(&s.request)?;
    }
    stream.close_send()?;
    loop {
        match stream.recv(RECV_TIMEOUT)? {
            Item::Message(_) => {}
            Item::End(_) => return Ok(()),
            Item::Timeout => {
                stream.cancel();
                return Err(GrpcError::Deadline(format!(
                    "{}: nothing received for {} s",
                    s.method,
                    RECV_TIMEOUT.as_secs()
                )));
            }
        }
    }
}

struct GrpcCall;

impl Scenario for GrpcCall {
    fn describe() -> PluginInfo {
        PluginInfo::new("grpc-call")
            .description("A grpcurl-like gRPC load test: GRPC_TARGET, GRPC_METHOD, GRPC_REQUEST")
            .default_config(DEFAULT_CONFIG)
    }

    fn iteration(_scenario: String) -> Result<(), String> {
        VU.with(|slot| {
            let mut slot = slot.borrow_mut();
            if slot.is_none() {
                *slot = Some(open(settings()?)?);
            }
            match call(slot.as_ref().expect("set above")) {
                // A call that failed on the wire is counted by the host (grpc_reqs with
                // its status and error kind, grpc_req_failed): a result, as in k6,
                // not a fault of the script. A bad setting is.
                Err(e @ (GrpcError::Invalid(_) | GrpcError::Denied(_))) => Err(e.into()),
                _ => Ok(()),
            }
        })
    }
}

loadtest::export!(GrpcCall);
