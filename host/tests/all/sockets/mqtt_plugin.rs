//! The `mqtt` plugin (plugins/mqtt: MQTT 3.1.1 in the plugin, on `mqttbytes`, over
//! the host's TCP sockets) against Debian's mosquitto: what the plugin says it
//! published is what a `mosquitto_sub` subscriber received; messages come back to
//! the plugin's own subscription; a broker that refuses anonymous clients is named
//! as such; a denied port is never reached.

use crate::support::mosquitto::Mosquitto;
use crate::support::run;
use std::time::Duration;

/// A run of `iterations` shared by `vus` VUs of `scenario`, with a threshold per
/// sub-metric the test reads (so the summary carries each).
fn config(scenario: &str, vus: u32, iterations: u32, extra: &str) -> String {
    let mut c = format!(
        "[scenarios.{scenario}]\nexec = \"{scenario}\"\nexecutor = \"shared-iterations\"\nvus = {vus}\niterations = {iterations}\nmax_duration = \"60s\"\n{extra}\n[thresholds]\nallow_missing = true\n"
    );
    for qos in ["0", "1"] {
        c += &format!("\"mqtt_publishes{{qos:{qos}}}\" = [\"count>=0\"]\n");
    }
    for kind in ["connack", "denied"] {
        c += &format!("\"mqtt_connect_errors{{error:{kind}}}\" = [\"count>=0\"]\n");
    }
    c
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mqtt_publishes_equal_what_a_subscriber_received() {
    let broker = Mosquitto::start(true);
    let port = broker.port.to_string();
    for (qos, n) in [("1", 40u64), ("0", 30)] {
        let topic = format!("lt{qos}");
        let subscriber = broker.subscriber(&format!("{topic}/#"));
        let run = run(
            "mqtt",
            &config("default", 2, n as u32, ""),
            &[
                ("MQTT_PORT", &port),
                ("MQTT_QOS", qos),
                ("MQTT_TOPIC", &topic),
            ],
        )
        .await
        .unwrap();
        assert_eq!(run.outcome.exit_code, 0, "{}", run.json);
        assert_eq!(
            run.count(&format!("mqtt_publishes{{qos:{qos}}}")),
            n,
            "{}",
            run.json["metrics"]
        );
        assert_eq!(run.metric("mqtt_publish_failed", "passes"), 0.0);
        assert_eq!(
            subscriber.count_after(n),
            n,
            "QoS {qos}: what the subscriber got"
        );
        let vus = run.count("socket_connects");
        assert!((1..=2).contains(&vus), "{vus}");
        assert!(run.metric("data_sent", "count") > n as f64 * 64.0);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_come_back_to_the_plugins_own_subscription() {
    let broker = Mosquitto::start(true);
    let port = broker.port.to_string();
    let outside = broker.subscriber("rt/#");
    let run = run(
        "mqtt",
        &config("roundtrip", 2, 20, ""),
        &[("MQTT_PORT", &port), ("MQTT_TOPIC", "rt")],
    )
    .await
    .unwrap();
    assert_eq!(run.outcome.exit_code, 0, "{}", run.json);
    let (passes, fails) = crate::support::check_counts(&run.json, "the message came back");
    assert_eq!((passes, fails), (20, 0));
    assert_eq!(run.count("mqtt_messages_received"), 20);
    assert_eq!(run.count("mqtt_roundtrip_duration"), 20);
    assert_eq!(outside.count_after(20), 20);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broker_refusing_anonymous_clients_is_named() {
    let broker = Mosquitto::start(false);
    let port = broker.port.to_string();
    let run = run(
        "mqtt",
        &config("default", 1, 2, ""),
        &[("MQTT_PORT", &port)],
    )
    .await
    .unwrap();
    assert_eq!(
        run.count("mqtt_connect_errors{error:connack}"),
        2,
        "{}",
        run.json
    );
    assert_eq!(run.count("mqtt_publishes"), 0);
    let message = run.json["plugin_errors"][0]["message"].as_str().unwrap();
    assert!(
        message.contains("refused the connection") && message.contains("MQTT_USER"),
        "{message}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denied_port_is_counted_and_never_reached() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port().to_string();
    let extra = "[targets]\nallow = [\"tcp://127.0.0.1:1\"]\n";
    let run = run(
        "mqtt",
        &config("default", 1, 3, extra),
        &[("MQTT_PORT", &port)],
    )
    .await
    .unwrap();
    assert_eq!(run.count("socket_connects_denied"), 3, "{}", run.json);
    assert_eq!(run.count("mqtt_connect_errors{error:denied}"), 3);
    assert_eq!(run.count("socket_connects"), 0);
    let reached = tokio::time::timeout(Duration::from_millis(200), listener.accept()).await;
    assert!(reached.is_err(), "a denied connect reached the port");
}
