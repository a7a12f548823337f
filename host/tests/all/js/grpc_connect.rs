//! k6 gRPC scripts using what `client.connect` and the client gained with contract
//! 0.3.5, run by `host run script.js` against Python's grpcio (support/grpc_server.rs):
//! `loadProtoset` with a protoset written by grpcio-tools' protoc, `healthCheck` and
//! the `HealthCheck*` constants, `reflectMetadata` seen by the server on every
//! reflection request, and the `tls` param (`cacerts`, `cert`, `key`) against a port
//! that demands a client certificate. What the server served equals `grpc_reqs` less
//! the calls it refused at the handshake.

use crate::support as common;
use crate::support::{check_counts as check, metric_count as count};

use crate::support::grpc_server::{self, Server};
use common::{host_in as host, output_text as text};
use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
use std::path::Path;

const SCRIPT: &str = r#"
import grpc from 'k6/net/grpc';
import { Client, Stream, StatusOK, HealthCheckServing, HealthCheckNotServing } from 'k6/net/grpc';
import { check } from 'k6';
import { Counter } from 'k6/metrics';

const fromSet = new Client();
const setMethods = fromSet.loadProtoset('counter.protoset');
const secure = new Client();
secure.loadProtoset('counter.protoset');
const bare = new Client();
const reflecting = new Client();
const ca = open('ca.pem');
const cert = open('client.pem');
const key = open('client.key');
const data = new Counter('script_stream_data');

export const options = {
  scenarios: {
    protoset: { executor: 'shared-iterations', vus: 2, iterations: 10, exec: 'protoset' },
    health: { executor: 'shared-iterations', vus: 1, iterations: 6, exec: 'health' },
    reflectmd: { executor: 'shared-iterations', vus: 1, iterations: 3, exec: 'reflectmd' },
    mutual: { executor: 'shared-iterations', vus: 2, iterations: 4, exec: 'mutual' },
    refused: { executor: 'shared-iterations', vus: 1, iterations: 2, exec: 'refused' },
  },
};

let connected = false;

export function protoset() {
  if (!connected) {
    fromSet.connect(__ENV.PLAIN, { plaintext: true });
    connected = true;
  }
  const res = fromSet.invoke('loadtest.test.Counter/Echo', { text: 'set' });
  check(res, {
    'protoset echo': (r) => r.status === StatusOK && r.message.text === 'set',
    'protoset methods': () => setMethods.length === 7 && setMethods.some((m) =>
      m.full_method === '/loadtest.test.Counter/Watch' && m.service === 'Counter'
      && m.package === 'loadtest.test' && m.is_server_stream && !m.is_client_stream),
  });
  const s = new Stream(fromSet, 'loadtest.test.Counter/Watch');
  s.on('data', () => data.add(1));
  s.write({ text: 'w', count: 3 });
  s.end();
}

export function health() {
  // Material that cannot be used is named at connect.
  let why = '';
  try { bare.connect(__ENV.TLS, { tls: { cacerts: 'not pem' } }); } catch (e) { why = String(e.message); }
  check(why, { 'bad cacerts named': (t) => t.includes('tls.cacerts') });
  why = '';
  try { bare.connect(__ENV.TLS, { tls: { cert, key, password: 'pw' } }); } catch (e) { why = String(e.message); }
  check(why, { 'password refused': (t) => t.includes('decrypt') });
  bare.connect(__ENV.PLAIN, { plaintext: true });
  check(bare.healthCheck(), { 'server serving': (r) => r.status === HealthCheckServing && r.status === 1 });
  check(bare.healthCheck('down'), { 'down not serving': (r) => r.status === grpc.HealthCheckNotServing && r.status === HealthCheckNotServing });
  let thrown = '';
  try { bare.healthCheck('nope'); } catch (e) { thrown = String(e.message || e); }
  check(thrown, { 'unknown service throws NotFound': (t) => t.includes('code = NotFound') && t.includes('unknown service') });
  bare.close();
}

export function reflectmd() {
  reflecting.connect(__ENV.PLAIN, { plaintext: true, reflect: true, reflectMetadata: { 'x-reflect-token': 'abc' } });
  const res = reflecting.invoke('loadtest.test.Counter/Echo', { text: 'reflected' });
  check(res, { 'reflected echo': (r) => r.status === StatusOK && r.message.text === 'reflected' });
  reflecting.close();
}

export function mutual() {
  secure.connect(__ENV.MTLS, { tls: { cacerts: [ca], cert, key } });
  const res = secure.invoke('loadtest.test.Counter/Echo', { text: 'mutual' });
  check(res, { 'client certificate accepted': (r) => r.status === StatusOK && r.message.text === 'mutual' });
  secure.close();
}

export function refused() {
  // The server's CA not given: the host refuses the server's certificate.
  secure.connect(__ENV.TLS, {});
  const untrusted = secure.invoke('loadtest.test.Counter/Echo', { text: 'x' });
  check(untrusted, { 'untrusted server refused': (r) => r.status === grpc.StatusUnavailable && r.error.message.includes('tls') });
  // Trusted, but without a client certificate: the server refuses the handshake.
  secure.connect(__ENV.MTLS, { tls: { cacerts: ca } });
  const anonymous = secure.invoke('loadtest.test.Counter/Echo', { text: 'x' });
  check(anonymous, { 'no client certificate refused': (r) => r.status !== StatusOK && r.error !== null });
  secure.close();
}
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn protosets_health_checks_reflect_metadata_and_client_certificates_reach_grpcio() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // One CA signs the server's certificate and the client's.
    let ca_key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "grpc test CA");
    let ca = params.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(params, ca_key);
    let leaf = |names: Vec<String>, stem: &str| {
        let key = KeyPair::generate().unwrap();
        let cert = CertificateParams::new(names)
            .unwrap()
            .signed_by(&key, &issuer)
            .unwrap();
        std::fs::write(dir.join(format!("{stem}.pem")), cert.pem()).unwrap();
        std::fs::write(dir.join(format!("{stem}.key")), key.serialize_pem()).unwrap();
    };
    leaf(vec!["127.0.0.1".into()], "server");
    leaf(vec!["vu.example".into()], "client");
    std::fs::write(dir.join("ca.pem"), ca.pem()).unwrap();
    let mut server = Server::start_mtls(
        &dir.join("server.pem"),
        &dir.join("server.key"),
        &dir.join("ca.pem"),
    );

    // The protoset, as a third-party tool writes it: grpcio-tools' protoc.
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/grpc");
    let made = std::process::Command::new(grpc_server::python())
        .args(["-m", "grpc_tools.protoc"])
        .arg(format!("-I{}", fixtures.display()))
        .arg(format!(
            "--descriptor_set_out={}",
            dir.join("counter.protoset").display()
        ))
        .args(["--include_imports", "counter.proto"])
        .output()
        .unwrap();
    assert!(made.status.success(), "{}", text(&made));

    std::fs::write(dir.join("script.js"), SCRIPT).unwrap();
    let out = dir.join("results");
    let env = |name: &str, port: u16| format!("{name}=127.0.0.1:{port}");
    let ran = host(
        dir,
        &[
            "run",
            "script.js",
            "-e",
            &env("PLAIN", server.plain),
            "-e",
            &env("TLS", server.tls),
            "-e",
            &env("MTLS", server.mtls),
            "--out",
            out.to_str().unwrap(),
            "--quiet",
        ],
    )
    .await;
    assert!(ran.status.success(), "{}", text(&ran));
    let served = server.stats();
    let calls = |m: &str| served["calls"][m].as_f64().unwrap_or(0.0);
    let summary = common::summary_json(&common::only_results_dir(&out));
    assert_eq!(
        summary["plugin_errors"].as_array().map_or(0, Vec::len),
        0,
        "{}",
        summary["plugin_errors"]
    );
    for (name, n) in [
        ("protoset echo", 10),
        ("protoset methods", 10),
        ("bad cacerts named", 6),
        ("password refused", 6),
        ("server serving", 6),
        ("down not serving", 6),
        ("unknown service throws NotFound", 6),
        ("reflected echo", 3),
        ("client certificate accepted", 4),
        ("untrusted server refused", 2),
        ("no client certificate refused", 2),
    ] {
        assert_eq!(check(&summary, name), (n, 0), "{name}");
    }

    // What the server answered: the echoes of three scenarios, three health checks per
    // iteration; the four refused calls never reached it but are counted.
    assert_eq!(calls("Echo"), 10.0 + 3.0 + 4.0, "{served}");
    assert_eq!(calls("Check"), 18.0, "{served}");
    assert_eq!(
        count(&summary, "grpc_reqs"),
        calls("Echo") + calls("Check") + 4.0,
        "{}",
        summary["metrics"]
    );
    // The protoset's server stream: 3 messages per call, as the server sent them.
    assert_eq!(calls("Watch"), 10.0, "{served}");
    assert_eq!(served["stream_sent"].as_f64().unwrap(), 30.0);
    assert_eq!(count(&summary, "grpc_streams_msgs_received"), 30.0);
    assert_eq!(count(&summary, "script_stream_data"), 30.0);
    // Every reflection request carried the script's metadata.
    let reflected = served["reflection_requests"].as_f64().unwrap();
    assert!(reflected >= 3.0, "{served}");
    assert_eq!(served["reflect_tokens"]["abc"].as_f64(), Some(reflected));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn protosets_that_cannot_be_bundled_fail_the_build_with_their_line() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("text.protoset"), "syntax = \"proto3\";\n").unwrap();
    for (script, line, what) in [
        (
            "import grpc from 'k6/net/grpc';\nconst c = new grpc.Client();\n\nc.loadProtoset('missing.protoset');\n",
            "s.js:4",
            "missing.protoset",
        ),
        (
            "import grpc from 'k6/net/grpc';\nconst c = new grpc.Client();\nc.loadProtoset('text.protoset');\n",
            "s.js:3",
            "--descriptor_set_out",
        ),
    ] {
        std::fs::write(tmp.path().join("s.js"), script).unwrap();
        let ran = host(tmp.path(), &["build", "s.js"]).await;
        let said = text(&ran);
        assert!(!ran.status.success(), "{said}");
        assert!(said.contains(line) && said.contains(what), "{said}");
    }
}
