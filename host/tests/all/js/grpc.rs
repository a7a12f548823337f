//! k6 gRPC scripts (`k6/net/grpc`) run by `host run script.js` against a gRPC server
//! this project did not write (Python's grpcio with reflection, support/grpc_server.rs):
//! unary calls the server counted equal `grpc_reqs` and the script's checks; the
//! messages of server, client and bidirectional streams equal the server's counts, the
//! host's `grpc_streams_msgs_*` and the script's `data` events; reflection, a non-OK
//! status and a deadline are seen by the script with their codes; bench/grpc/k6.js
//! runs unmodified; what is not supported fails the build with its name and line.

use crate::support as common;
use crate::support::{check_counts as check, metric_count as count};

use crate::support::grpc_server;
use common::{host_in as host, output_text as text};

use grpc_server::Server;
use std::path::Path;

const SCRIPT: &str = r#"
import grpc from 'k6/net/grpc';
import { Client, Stream, StatusOK } from 'k6/net/grpc';
import { check } from 'k6';
import { Counter } from 'k6/metrics';

const client = new Client();
const methods = client.load(['protos'], 'counter.proto');
const reflected = new grpc.Client();
const data = new Counter('script_stream_data');
const ends = new Counter('script_stream_ends');
const errors = new Counter('script_stream_errors');

export const options = {
  scenarios: {
    unary: { executor: 'shared-iterations', vus: 2, iterations: 20, exec: 'unary' },
    failing: { executor: 'shared-iterations', vus: 1, iterations: 5, exec: 'failing' },
    reflect: { executor: 'shared-iterations', vus: 1, iterations: 3, exec: 'reflect' },
    watch: { executor: 'shared-iterations', vus: 2, iterations: 4, exec: 'watch' },
    upload: { executor: 'shared-iterations', vus: 2, iterations: 4, exec: 'upload' },
    chat: { executor: 'shared-iterations', vus: 1, iterations: 3, exec: 'chat' },
  },
};

let connected = false;
function connect() {
  if (!connected) {
    client.connect(__ENV.GRPC_TARGET, { plaintext: true, timeout: '5s' });
    connected = true;
  }
}

export async function unary() {
  connect();
  const res = client.invoke('loadtest.test.Counter/Echo', { text: 'hi' },
    { metadata: { 'x-test': 'js' }, tags: { name: 'echo' }, timeout: '5s' });
  check(res, {
    'echo ok': (r) => r.status === StatusOK && r.error === null,
    'echo message': (r) => r.message.text === 'hi' && r.message.seq === '1',
    'echo headers': (r) => Array.isArray(r.headers['content-type']) && r.headers['content-type'][0].startsWith('application/grpc'),
    'load listed the methods': () => methods.length === 7
      && methods.some((m) => m.full_method === '/loadtest.test.Counter/Watch' && m.is_server_stream && !m.is_client_stream),
  });
  // A real promise (the layer's): awaited in an async function.
  const r = await client.asyncInvoke('loadtest.test.Counter/Ping', {});
  check(r, { 'async ping ok': (x) => x.status === grpc.StatusOK && typeof x.message === 'object' });
}

export function failing() {
  connect();
  const res = client.invoke('loadtest.test.Counter/Fail', { text: 'x' });
  check(res, {
    'invalid argument seen': (r) => r.status === grpc.StatusInvalidArgument && r.error.code === 3
      && r.error.message === 'text must not be x' && r.message === null,
  });
  const slow = client.invoke('loadtest.test.Counter/Slow', { delay_ms: 400 }, { timeout: '100ms' });
  check(slow, { 'deadline seen': (r) => r.status === grpc.StatusDeadlineExceeded && r.error.code === 4 });
}

export function reflect() {
  reflected.connect(__ENV.GRPC_TARGET, { plaintext: true, reflect: true });
  const res = reflected.invoke('loadtest.test.Counter/Echo', { text: 'by reflection' });
  check(res, { 'reflection ok': (r) => r.status === StatusOK && r.message.text === 'by reflection' });
  reflected.close();
}

function stream(method, expect) {
  const s = new Stream(client, method, { tags: { name: method } });
  let n = 0;
  s.on('data', (m) => { n++; data.add(1); expect.onData(m); });
  s.on('error', () => errors.add(1));
  s.on('end', () => { ends.add(1); check(n, { [`${method} messages`]: (x) => x === expect.messages }); });
  return s;
}

export function watch() {
  connect();
  const s = stream('loadtest.test.Counter/Watch', { messages: 5, onData: () => {} });
  s.write({ text: 'w', count: 5 });
  s.end();
}

export function upload() {
  connect();
  const s = stream('loadtest.test.Counter/Upload', {
    messages: 1,
    onData: (m) => check(m, { 'upload counted 3': (x) => x.received === '3' }),
  });
  for (let i = 0; i < 3; i++) s.write({ text: `u${i}` });
  s.end();
}

export function chat() {
  connect();
  const s = stream('loadtest.test.Counter/Chat', { messages: 4, onData: () => {} });
  for (let i = 0; i < 4; i++) s.write({ text: `c${i}` });
  s.end();
}
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unary_calls_streams_reflection_and_statuses_match_what_grpcio_counted() {
    let mut server = Server::plaintext();
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(tmp.path().join("protos")).unwrap();
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/grpc/counter.proto"),
        tmp.path().join("protos/counter.proto"),
    )
    .unwrap();
    std::fs::write(tmp.path().join("script.js"), SCRIPT).unwrap();
    let out = tmp.path().join("results");
    let target = format!("GRPC_TARGET=127.0.0.1:{}", server.plain);
    let ran = host(
        tmp.path(),
        &[
            "run",
            "script.js",
            "-e",
            &target,
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

    // Unary: what the server answered is what the host counted, and what the script saw.
    assert_eq!(calls("Echo"), 23.0, "{served}");
    assert_eq!(calls("Ping"), 20.0, "{served}");
    assert_eq!(calls("Fail"), 5.0, "{served}");
    assert_eq!(calls("Slow"), 5.0, "{served}");
    assert_eq!(
        count(&summary, "grpc_reqs"),
        calls("Echo") + calls("Ping") + calls("Fail") + calls("Slow"),
        "{}",
        summary["metrics"]
    );
    for (name, n) in [
        ("echo ok", 20),
        ("echo message", 20),
        ("echo headers", 20),
        ("load listed the methods", 20),
        ("async ping ok", 20),
        ("invalid argument seen", 5),
        ("deadline seen", 5),
        ("reflection ok", 3),
    ] {
        assert_eq!(check(&summary, name), (n, 0), "{name}");
    }

    // Streams: messages each way as the server counted them, as the host recorded
    // them, and as the script's `data` events saw them.
    assert_eq!(
        calls("Watch") + calls("Upload") + calls("Chat"),
        11.0,
        "{served}"
    );
    assert_eq!(count(&summary, "grpc_streams"), 11.0);
    let sent = served["stream_received"].as_f64().unwrap();
    let received = served["stream_sent"].as_f64().unwrap();
    assert_eq!((sent, received), (4.0 + 12.0 + 12.0, 20.0 + 4.0 + 12.0));
    assert_eq!(count(&summary, "grpc_streams_msgs_sent"), sent);
    assert_eq!(count(&summary, "grpc_streams_msgs_received"), received);
    assert_eq!(count(&summary, "script_stream_data"), received);
    assert_eq!(count(&summary, "script_stream_ends"), 11.0);
    assert_eq!(count(&summary, "script_stream_errors"), 0.0);
    assert_eq!(
        check(&summary, "loadtest.test.Counter/Watch messages"),
        (4, 0)
    );
    assert_eq!(
        check(&summary, "loadtest.test.Counter/Upload messages"),
        (4, 0)
    );
    assert_eq!(check(&summary, "upload counted 3"), (4, 0));
    assert_eq!(
        check(&summary, "loadtest.test.Counter/Chat messages"),
        (3, 0)
    );
}

/// bench/grpc/k6.js, the script k6 runs in the benchmark, runs here unmodified: its
/// proto folder comes from `-e PROTO_DIR` at build time, as k6 reads it from __ENV.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_benchmark_script_runs_unmodified() {
    let mut server = Server::plaintext();
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let script = manifest.join("../bench/grpc/k6.js");
    let protos = manifest.join("tests/fixtures/grpc");
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("results");
    // The load run.sh gives k6 with --vus and --duration.
    let config = common::write_config(
        tmp.path(),
        "[scenarios.default]\nexecutor = \"constant-vus\"\nvus = 2\nduration = \"2s\"\n",
    );
    let ran = host(
        tmp.path(),
        &[
            "run",
            script.to_str().unwrap(),
            "-e",
            &format!("GRPC_TARGET=127.0.0.1:{}", server.plain),
            "-e",
            &format!("PROTO_DIR={}", protos.display()),
            // The protos lie outside bench/grpc/: the operator allows it.
            "--allow-outside-files",
            "--config",
            config.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--quiet",
        ],
    )
    .await;
    assert!(ran.status.success(), "{}", text(&ran));
    let served = server.stats()["calls"]["Echo"].as_f64().unwrap_or(0.0);
    let summary = common::summary_json(&common::only_results_dir(&out));
    assert!(served > 10.0, "only {served} calls in 2 s");
    assert_eq!(
        count(&summary, "grpc_reqs"),
        served,
        "{}",
        summary["metrics"]
    );
    assert_eq!(
        summary["plugin_errors"].as_array().map_or(0, Vec::len),
        0,
        "{}",
        summary["plugin_errors"]
    );

    // Without PROTO_DIR the build cannot know where counter.proto is, and says so.
    let ran = host(tmp.path(), &["build", script.to_str().unwrap()]).await;
    let said = text(&ran);
    assert!(!ran.status.success(), "{said}");
    // The line of the script's `client.load(` call, wherever the script has it.
    let line = std::fs::read_to_string(&script)
        .unwrap()
        .lines()
        .position(|l| l.contains("client.load("))
        .expect("bench/grpc/k6.js calls client.load")
        + 1;
    assert!(
        said.contains(&format!("k6.js:{line}")) && said.contains("-e PROTO_DIR="),
        "{said}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unsupported_grpc_apis_fail_the_build_with_their_name_and_line() {
    let tmp = tempfile::tempdir().unwrap();
    for (script, line, what) in [
        (
            "import grpc from 'k6/net/grpc';\nconst c = new grpc.Client();\n\nc.loadProtoset('api.protoset');\n",
            "s.js:4",
            "loadProtoset()",
        ),
        (
            // A `const` holding the path is read (js/idioms.rs); a `let` is not.
            "import grpc from 'k6/net/grpc';\nlet dir = 'protos';\nconst c = new grpc.Client();\nc.load([dir], 'api.proto');\n",
            "s.js:4",
            "literal paths",
        ),
        (
            "import grpc from 'k6/net/grpc';\nconst c = new grpc.Client();\nc.load([], 'missing.proto');\n",
            "s.js:3",
            "missing.proto",
        ),
    ] {
        std::fs::write(tmp.path().join("s.js"), script).unwrap();
        let ran = host(tmp.path(), &["build", "s.js"]).await;
        let said = text(&ran);
        assert!(!ran.status.success(), "{said}");
        assert!(said.contains(line) && said.contains(what), "{said}");
    }
}
