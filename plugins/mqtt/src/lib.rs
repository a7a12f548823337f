//! `mqtt`: an MQTT 3.1.1 load test whose client lives in the plugin, over the host's
//! TCP sockets (contract 0.3.7): packets written and read by `mqttbytes` (sans I/O)
//! in `wire`, the connection held by the host, checked against the allowlist and
//! counted (`data_sent`, `data_received`, `socket_connecting`).
//!
//! Each VU connects on its first iteration (clean session, client id
//! `MQTT_CLIENT_ID` or `lt-{vu}-{nonce}`) and keeps its session; a failure closes
//! it and the next iteration connects again. Scenarios:
//!
//! - `default`: one PUBLISH per iteration on `{MQTT_TOPIC}/{vu}` at `MQTT_QOS`
//!   (QoS 1 waits for the PUBACK);
//! - `subscribe`: subscribes to `MQTT_FILTER` once, then each iteration takes the
//!   messages that arrive within `MQTT_RECEIVE_MS`;
//! - `roundtrip`: subscribes to a topic of its own, then each iteration publishes on
//!   it and waits for the message to come back (checked).
//!
//! Metrics: `mqtt_publishes{qos}` (counter), `mqtt_publish_duration{qos}` (trend of
//! times: the write at QoS 0, to the PUBACK at QoS 1), `mqtt_publish_failed{qos}`
//! (rate), `mqtt_messages_received` (counter), `mqtt_roundtrip_duration` (trend),
//! `mqtt_connect_errors{error}` (`connack` when the broker refuses) and
//! `mqtt_errors{op,error}`. A broker's own count (`$SYS/broker/publish/messages/
//! received`, or a subscriber's) equals `mqtt_publishes` after a run.
//!
//! Environment: `MQTT_HOST` (127.0.0.1), `MQTT_PORT` (1883), `MQTT_TLS` (`1`: TLS
//! with the run's `[tls]`, e.g. port 8883), `MQTT_USER`, `MQTT_PASSWORD`,
//! `MQTT_TOPIC` (`loadtest`), `MQTT_FILTER` (`loadtest/#`), `MQTT_QOS` (1),
//! `MQTT_PAYLOAD_BYTES` (64), `MQTT_RECEIVE_MS` (1000), `MQTT_KEEP_ALIVE` (60 s),
//! `MQTT_TIMEOUT_MS` (5000: each read and write). Allow the broker with
//! `[targets] allow = ["tcp://HOST:PORT"]` when it is not on loopback.

mod wire;

use loadtest::metrics::{check, counter, rate, trend_time};
use loadtest::sockets::TcpStream;
use loadtest::{vu, PluginInfo, Scenario};
use mqttbytes::QoS;
use std::cell::RefCell;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use wire::{MqttError, Options, Session};

/// The run config used when the operator gives none.
const DEFAULT_CONFIG: &str = r#"[scenarios.default]
executor = "constant-vus"
vus = 2
duration = "5s"
"#;

/// The largest payload `MQTT_PAYLOAD_BYTES` may ask for (256 KiB).
const MAX_PAYLOAD: usize = 256 * 1024;

thread_local! {
    /// The VU's session and, for `roundtrip`, its own topic.
    static SESSION: RefCell<Option<(Session, String)>> = const { RefCell::new(None) };
}

/// The scenario.
struct Mqtt;

fn millis(name: &str, default: &str) -> Result<Duration, String> {
    vu::env_or(name, default)
        .parse()
        .map(Duration::from_millis)
        .map_err(|_| format!("{name} must be a number of milliseconds"))
}

fn qos() -> Result<QoS, String> {
    match vu::env_or("MQTT_QOS", "1").as_str() {
        "0" => Ok(QoS::AtMostOnce),
        "1" => Ok(QoS::AtLeastOnce),
        other => Err(format!(
            "MQTT_QOS={other:?}: this client publishes at QoS 0 or 1"
        )),
    }
}

/// Connects; a failure is counted in `mqtt_connect_errors{error}` and comes back as
/// a message naming the broker.
fn open() -> Result<Session, String> {
    let host = vu::env_or("MQTT_HOST", "127.0.0.1");
    let port: u16 = vu::env_or("MQTT_PORT", "1883")
        .parse()
        .map_err(|_| "MQTT_PORT must be a port number".to_string())?;
    let timeout = millis("MQTT_TIMEOUT_MS", "5000")?;
    let keep_alive: u16 = vu::env_or("MQTT_KEEP_ALIVE", "60")
        .parse()
        .map_err(|_| "MQTT_KEEP_ALIVE must be a number of seconds (up to 65535)".to_string())?;
    let nonce = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let client_id = vu::env("MQTT_CLIENT_ID")
        .map(|id| format!("{id}-{}", vu::id()))
        .unwrap_or_else(|| format!("lt-{}-{nonce:08x}", vu::id()));
    let user = vu::env("MQTT_USER");
    let password = vu::env_or("MQTT_PASSWORD", "");
    let options = Options {
        client_id: &client_id,
        keep_alive,
        login: user.as_deref().map(|u| (u, password.as_str())),
    };
    let mut connect = TcpStream::options(&host, port).timeout(timeout);
    if vu::env_or("MQTT_TLS", "") == "1" {
        connect = connect.tls();
    }
    let session = connect
        .connect()
        .map_err(MqttError::from)
        .and_then(|mut stream| {
            stream.set_read_timeout(timeout);
            stream.set_write_timeout(timeout);
            Session::connect(stream, &options, timeout)
        });
    session.map_err(|e| {
        counter("mqtt_connect_errors", 1.0, &[("error", e.kind())]);
        format!("mqtt {host}:{port} as {client_id}: {e}")
    })
}

/// Counts a failed operation and drops the session (its state is unknown).
fn failed(slot: &mut Option<(Session, String)>, op: &str, e: &MqttError) {
    counter("mqtt_errors", 1.0, &[("op", op), ("error", e.kind())]);
    loadtest::log::warn(format!("mqtt {op}: {e}"));
    if let Some((s, _)) = slot.take() {
        s.disconnect();
    }
}

/// Publishes one message and records it.
fn publish(
    slot: &mut Option<(Session, String)>,
    topic: &str,
    payload: &[u8],
) -> Result<bool, String> {
    let qos = qos()?;
    let tag = if qos == QoS::AtMostOnce { "0" } else { "1" };
    let Some((session, _)) = slot.as_mut() else {
        return Ok(false);
    };
    let started = Instant::now();
    let result = session.publish(topic, qos, payload);
    trend_time(
        "mqtt_publish_duration",
        started.elapsed().as_secs_f64() * 1000.0,
        &[("qos", tag)],
    );
    counter("mqtt_publishes", 1.0, &[("qos", tag)]);
    rate("mqtt_publish_failed", result.is_err(), &[("qos", tag)]);
    match result {
        Ok(()) => Ok(true),
        Err(e) => {
            failed(slot, "publish", &e);
            Ok(false)
        }
    }
}

/// The iteration's payload: who sent it, padded to `MQTT_PAYLOAD_BYTES`.
fn payload() -> Result<Vec<u8>, String> {
    let size: usize = vu::env_or("MQTT_PAYLOAD_BYTES", "64")
        .parse()
        .ok()
        .filter(|n| *n <= MAX_PAYLOAD)
        .ok_or_else(|| {
            format!("MQTT_PAYLOAD_BYTES must be a number of bytes up to {MAX_PAYLOAD}")
        })?;
    let mut p = format!("vu {} iteration {}", vu::id(), vu::iteration()).into_bytes();
    p.resize(size.max(p.len()), b'.');
    Ok(p)
}

/// Takes the messages that arrive within `wait`, counting them; how many came.
fn drain(slot: &mut Option<(Session, String)>, wait: Duration) -> u64 {
    let deadline = Instant::now() + wait;
    let mut got = 0;
    while let Some((session, _)) = slot.as_mut() {
        let left = deadline.saturating_duration_since(Instant::now());
        match session.receive(left) {
            Ok(Some(_)) => {
                got += 1;
                counter("mqtt_messages_received", 1.0, &[]);
            }
            Ok(None) => break,
            Err(e) => failed(slot, "receive", &e),
        }
    }
    got
}

impl Scenario for Mqtt {
    fn describe() -> PluginInfo {
        PluginInfo::new("mqtt")
            .description(
                "MQTT 3.1.1 publish and subscribe over a host TCP socket, with mqtt_* metrics",
            )
            .scenario("default", "one PUBLISH (QoS 0 or 1) per iteration")
            .scenario(
                "subscribe",
                "subscribes once, then takes what arrives each iteration",
            )
            .scenario(
                "roundtrip",
                "publishes on its own topic and waits for the message back",
            )
            .default_config(DEFAULT_CONFIG)
    }

    fn iteration(scenario: String) -> Result<(), String> {
        SESSION.with(|cell| {
            let mut slot = cell.borrow_mut();
            let wait = millis("MQTT_RECEIVE_MS", "1000")?;
            let prefix = vu::env_or("MQTT_TOPIC", "loadtest");
            if slot.is_none() {
                let mut session = open()?;
                let own = match scenario.as_str() {
                    "subscribe" => vu::env_or("MQTT_FILTER", "loadtest/#"),
                    "roundtrip" => format!("{prefix}/rt/{}", vu::id()),
                    _ => String::new(),
                };
                if !own.is_empty() {
                    if let Err(e) = session.subscribe(&own, qos()?) {
                        let mut s = Some((session, own));
                        failed(&mut s, "subscribe", &e);
                        return Err(format!("mqtt: subscribing to {:?}: {e}", s.map(|s| s.1)));
                    }
                }
                *slot = Some((session, own));
            }
            match scenario.as_str() {
                "default" => {
                    let topic = format!("{prefix}/{}", vu::id());
                    publish(&mut slot, &topic, &payload()?)?;
                }
                "subscribe" => {
                    drain(&mut slot, wait);
                }
                "roundtrip" => {
                    let topic = slot.as_ref().map(|s| s.1.clone()).unwrap_or_default();
                    let body = payload()?;
                    let started = Instant::now();
                    if publish(&mut slot, &topic, &body)? {
                        let back = loop {
                            let Some((session, _)) = slot.as_mut() else {
                                break false;
                            };
                            let left = wait.saturating_sub(started.elapsed());
                            match session.receive(left) {
                                Ok(Some(m)) => {
                                    counter("mqtt_messages_received", 1.0, &[]);
                                    if m.topic == topic && m.payload == body {
                                        break true;
                                    }
                                }
                                Ok(None) => break false,
                                Err(e) => {
                                    failed(&mut slot, "receive", &e);
                                    break false;
                                }
                            }
                        };
                        if back {
                            trend_time(
                                "mqtt_roundtrip_duration",
                                started.elapsed().as_secs_f64() * 1000.0,
                                &[],
                            );
                        }
                        check("the message came back", back);
                    }
                }
                other => {
                    return Err(format!(
                        "no scenario {other:?} in the mqtt plugin: default (publish), subscribe or roundtrip"
                    ))
                }
            }
            Ok(())
        })
    }
}

loadtest::export!(Mqtt);
