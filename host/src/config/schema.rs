//! `host schema`: the JSON Schema of a run config (run.toml), for the editors' TOML
//! plugins (Taplo, Even Better TOML: `#:schema ./run.schema.json` atop the file) to
//! complete and check it.
//!
//! The config is read by hand ([`crate::table::TableReader`], for its did-you-mean
//! errors), so the schema is described here beside it, as types schemars turns into a
//! schema. The tests in host/tests/all/cli/reference.rs keep the two together: every run
//! config of the repository, every bundled plugin's default config and `host new`'s
//! template must validate, and the sections must be the ones the reader knows.

// The types only describe the schema; nothing builds a value of them.
#![allow(dead_code)]

use schemars::JsonSchema;
use std::collections::BTreeMap;

/// The schema, as pretty JSON.
pub(crate) fn render() -> String {
    let schema = schemars::schema_for!(RunToml);
    serde_json::to_string_pretty(&schema).unwrap_or_default() + "\n"
}

/// A duration written as a string: `"500ms"`, `"30s"`, `"1m30s"`, `"2h"`.
#[derive(JsonSchema)]
#[schemars(transparent)]
struct DurationText(String);

/// A size: a whole number of bytes, or a string with a unit (`"1MiB"`, `"512KiB"`).
#[derive(JsonSchema)]
#[schemars(untagged)]
enum Size {
    /// Bytes.
    Bytes(u64),
    /// With a unit.
    Text(String),
}

/// A value of a string table (`[env]`, `tags`, `cpus`): numbers and booleans are
/// taken as their text.
#[derive(JsonSchema)]
#[schemars(untagged)]
enum Scalar {
    /// Text.
    Text(String),
    /// A whole number.
    Integer(i64),
    /// A number.
    Float(f64),
    /// true or false.
    Bool(bool),
}

/// A run config: the plugin's defaults overlaid by this file, overlaid by flags.
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields, title = "host run config (run.toml)")]
struct RunToml {
    /// The plugin this config runs, pinned: `{ path = "x.wasm", sha256 = "…" }`,
    /// `{ oci = "registry/repo:tag", sha256 = "…" }`, or `{ sha256 = "…" }` alone.
    plugin: Option<PluginPin>,
    /// The scenarios, run at once (each from its start_time): `[scenarios.NAME]`.
    scenarios: Option<BTreeMap<String, Scenario>>,
    /// Pass/fail criteria in k6's syntax, per metric or sub-metric
    /// (`"http_req_duration{name:static}" = ["p(95)<500"]`).
    thresholds: Option<Thresholds>,
    /// Environment variables every VU reads with `env(name)`.
    env: Option<BTreeMap<String, Scalar>>,
    /// Targets the plugin may reach besides loopback.
    targets: Option<Targets>,
    /// Per-VU and per-request limits.
    limits: Option<Limits>,
    /// Shared data sets: name = file (CSV or JSON), loaded once for every VU.
    data: Option<BTreeMap<String, String>>,
    /// How the host keeps WebSockets alive and how much it buffers.
    websocket: Option<WebSocket>,
    /// Browser scenarios: present, a browser starts before the run.
    browser: Option<Browser>,
    /// Redirects, cookies, source addresses, versions, batches.
    http: Option<Http>,
    /// What is sampled besides the generator, and how often.
    sampling: Option<Sampling>,
    /// The Compose stack of `host up` and `host run --stack`.
    stack: Option<Stack>,
    /// How `https://` and `wss://` connections are made.
    tls: Option<Tls>,
    /// How the streaming outputs (`--out KIND=TARGET`) write.
    outputs: Option<Outputs>,
    /// How `host coordinate` treats its workers.
    distributed: Option<Distributed>,
    /// What summary.txt shows.
    summary: Option<Summary>,
    /// What `host run --baseline` holds against the baseline run: per metric, a rule
    /// `"STAT +N%"` (a rise beyond N % is a regression) or `"STAT -N%"` (a fall), or a
    /// list of them (`http_req_duration = "p(95) +10%"`).
    regressions: Option<BTreeMap<String, RegressionRules>>,
    /// Written by the JavaScript layer from a k6 script's options: the command line
    /// then follows k6's precedence (docs/commands.md).
    k6: Option<K6>,
}

/// `[k6]`: what k6's command-line precedence needs of a k6 script's options.
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
struct K6 {
    /// The script declared `options.scenarios`.
    own_scenarios: Option<bool>,
    /// The script's top-level `vus`.
    vus: Option<u64>,
    /// The script's top-level `tags`.
    tags: Option<BTreeMap<String, Scalar>>,
}

/// One rule or several for a metric in `[regressions]`.
#[derive(JsonSchema)]
#[schemars(untagged)]
enum RegressionRules {
    /// One rule.
    One(RegressionRule),
    /// Several rules.
    Several(Vec<RegressionRule>),
}

/// `STAT +N%` or `STAT -N%`: STAT one of avg, min, med, p(50), p(90), p(95), p(99),
/// p(99.9), max, rate, count, value.
#[derive(JsonSchema)]
#[schemars(transparent)]
struct RegressionRule(
    #[schemars(regex(
        pattern = r"^\s*(avg|mean|min|med|max|rate|count|value|p\((50|90|95|99|99\.9)\)|p(50|90|95|99|99\.9))\s+[+-][0-9]+(\.[0-9]+)?%\s*$"
    ))]
    String,
);

/// `plugin = { … }`: the component a reviewed config runs, by its sha256.
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
struct PluginPin {
    /// A plugin file, relative to the config.
    path: Option<String>,
    /// A registry reference (`registry/repository:tag` or `@sha256:…`).
    oci: Option<String>,
    /// The component's sha256 (hex); any other component is refused.
    sha256: String,
}

/// k6's executors.
#[derive(JsonSchema)]
#[schemars(rename_all = "kebab-case")]
enum Executor {
    /// Closed model: `vus` VUs for `duration`.
    ConstantVus,
    /// Closed model: VUs ramped through `stages` from `start_vus`.
    RampingVus,
    /// Closed model: each of `vus` VUs runs `iterations` iterations.
    PerVuIterations,
    /// Closed model: `vus` VUs share `iterations` iterations.
    SharedIterations,
    /// Open model: `rate` iterations per `time_unit` for `duration`.
    ConstantArrivalRate,
    /// Open model: the rate ramped through `stages` from `start_rate`.
    RampingArrivalRate,
}

/// One scenario: its executor and the executor's options (k6's names).
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
struct Scenario {
    /// Which executor runs it.
    executor: Executor,
    /// Which scenario of the plugin each iteration runs (default `default`).
    exec: Option<String>,
    /// When it starts after the run does (default 0s).
    start_time: Option<DurationText>,
    /// How long running iterations may finish after its end (default 30s).
    graceful_stop: Option<DurationText>,
    /// Environment variables of this scenario's VUs.
    env: Option<BTreeMap<String, Scalar>>,
    /// Tags on every sample of this scenario.
    tags: Option<BTreeMap<String, Scalar>>,
    /// VUs (constant-vus, per-vu-iterations, shared-iterations).
    #[schemars(range(min = 1))]
    vus: Option<u64>,
    /// How long it runs (constant-vus, constant-arrival-rate).
    duration: Option<DurationText>,
    /// Iterations (per VU for per-vu-iterations, in all for shared-iterations).
    #[schemars(range(min = 1))]
    iterations: Option<u64>,
    /// Longest it may run (per-vu-iterations, shared-iterations; default 10m).
    max_duration: Option<DurationText>,
    /// VUs at the start (ramping-vus, default 1).
    start_vus: Option<u64>,
    /// Stages, in order (ramping-vus: target VUs; ramping-arrival-rate: target rate).
    stages: Option<Vec<Stage>>,
    /// Time given to VUs ramped down to finish their iteration (ramping-vus).
    graceful_ramp_down: Option<DurationText>,
    /// Iterations per time_unit (constant-arrival-rate).
    rate: Option<f64>,
    /// The rate at the start (ramping-arrival-rate, default 0).
    start_rate: Option<f64>,
    /// The period of the rate (arrival-rate executors, default 1s).
    time_unit: Option<DurationText>,
    /// VUs made before the start (arrival-rate executors).
    pre_allocated_vus: Option<u64>,
    /// Most VUs made, pre-allocated included (arrival-rate executors).
    max_vus: Option<u64>,
}

/// A stage of a ramping executor.
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
struct Stage {
    /// How long the ramp to the target lasts.
    duration: DurationText,
    /// VUs (ramping-vus) or iterations per time_unit (ramping-arrival-rate) at its end.
    target: f64,
}

/// `[thresholds]`: metric (or `metric{tag:value}`) = list of expressions.
#[derive(JsonSchema)]
struct Thresholds {
    /// A threshold whose metric got no sample passes (k6's behaviour) instead of failing.
    allow_missing: Option<bool>,
    /// The thresholds by metric.
    #[schemars(flatten)]
    by_metric: BTreeMap<String, Thresholds1>,
}

/// A metric's thresholds: a list, or one alone.
#[derive(JsonSchema)]
#[schemars(untagged)]
enum Thresholds1 {
    /// A list.
    List(ThresholdList),
    /// One threshold.
    One(Threshold),
}

/// `["p(95)<500", "avg<200"]` (at least one).
#[derive(JsonSchema)]
struct ThresholdList(#[schemars(length(min = 1))] Vec<Threshold>);

/// An expression such as `"p(95)<500"`, or a table with its abort settings.
#[derive(JsonSchema)]
#[schemars(untagged)]
enum Threshold {
    /// `"p(95)<500"`, `"rate<0.01"`, `"count>100"`.
    Expression(String),
    /// `{ threshold = "...", abort_on_fail = true, delay_abort_eval = "10s" }`.
    Full(FullThreshold),
}

/// A threshold that may stop the run.
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
struct FullThreshold {
    /// The expression.
    threshold: String,
    /// Stop the run as soon as it is crossed.
    abort_on_fail: Option<bool>,
    /// Do not judge it for aborting before this much of the run went by.
    delay_abort_eval: Option<DurationText>,
}

/// `[targets]`.
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
struct Targets {
    /// URLs (`scheme://host:port`) the plugin may reach besides loopback.
    allow: Option<Vec<String>>,
}

/// `[limits]`.
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
struct Limits {
    /// Linear memory of a VU's plugin instance, in MiB (1 to 4096, default 64).
    #[schemars(range(min = 1, max = 4096))]
    memory_mb: Option<u64>,
    /// Wall-clock limit of one iteration (default 120s).
    iteration_timeout: Option<DurationText>,
    /// Default timeout of one HTTP request (default 60s).
    request_timeout: Option<DurationText>,
    /// Largest response body accepted, in MiB (default 16).
    max_body_mb: Option<u64>,
    /// Consecutive failed iterations after which the run aborts (0 = never).
    abort_after_failures: Option<u64>,
    /// CPU one call into the plugin may use (default 10s).
    cpu_per_call: Option<DurationText>,
    /// Wall-clock limit of setup() and teardown() (default 60s).
    setup_timeout: Option<DurationText>,
    /// Lines per second each VU may log (0 = none; default 10).
    log_lines_per_s: Option<f64>,
    /// Longest log line kept (default 4096 bytes).
    log_line_bytes: Option<Size>,
    /// What a VU's failed init does to the run.
    init_failures: Option<InitFailures>,
}

/// `[limits] init_failures`.
#[derive(JsonSchema)]
#[schemars(rename_all = "lowercase")]
enum InitFailures {
    /// The run goes on; the VU tries again later.
    Retry,
    /// The run stops (exit code 107).
    Abort,
}

/// `[browser]`.
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
struct Browser {
    /// Chromium processes shared by all VUs (1 to 64).
    processes: Option<u64>,
}

/// `[websocket]`.
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
struct WebSocket {
    /// The host pings every open socket this often; "0s" = never.
    ping_interval: Option<DurationText>,
    /// Messages held per socket before the host stops reading it.
    recv_buffer: Option<u64>,
    /// Bytes held per socket before the host stops reading it.
    recv_buffer_bytes: Option<Size>,
    /// A larger message ends the socket with a `protocol` error.
    max_message: Option<Size>,
}

/// `[http]`.
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
struct Http {
    /// Redirects followed per request (0 = none).
    max_redirects: Option<u64>,
    /// Keep each VU's cookies across iterations.
    no_cookies_reset: Option<bool>,
    /// Source addresses, one per VU, round-robin (`"127.0.0.10-127.0.0.200"`).
    local_ips: Option<Vec<String>>,
    /// Count setup()/teardown() requests in the totals.
    count_setup: Option<bool>,
    /// Header fields a response may carry (HTTP/1.1).
    max_headers: Option<u64>,
    /// Versions offered to https servers by ALPN, preferred first.
    versions: Option<Vec<HttpVersion>>,
    /// Plain http:// as HTTP/2 with prior knowledge.
    h2c: Option<bool>,
    /// Requests of one send-batch in flight at once.
    batch: Option<u64>,
    /// ... and to one host (0 = no limit).
    batch_per_host: Option<u64>,
    /// The User-Agent header sent by default ("" sends none).
    user_agent: Option<String>,
    /// The HTTP/1.1 client: hyper's, or the lean one on httparse.
    client: Option<Http1Client>,
}

/// `[http] client`.
#[derive(JsonSchema)]
enum Http1Client {
    /// hyper's client connection.
    #[schemars(rename = "hyper")]
    Hyper,
    /// The host's own HTTP/1.1 client on httparse.
    #[schemars(rename = "lean")]
    Lean,
}

/// An HTTP version offered by ALPN.
#[derive(JsonSchema)]
enum HttpVersion {
    /// HTTP/2.
    #[schemars(rename = "h2")]
    H2,
    /// HTTP/1.1.
    #[schemars(rename = "http/1.1")]
    Http1,
    /// HTTP/3 over QUIC: first in the list, directly; after another, on Alt-Svc.
    #[schemars(rename = "h3")]
    H3,
}

/// `[sampling]`.
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
struct Sampling {
    /// A line per service in stats.jsonl this often (1s or more).
    stats_interval: Option<DurationText>,
    /// Containers by name or id (--sample-container).
    containers: Option<Vec<String>>,
    /// Processes: a PID, or `"NAME=PID"` (--sample-pid).
    pids: Option<Vec<Pid>>,
}

/// A process to sample.
#[derive(JsonSchema)]
#[schemars(untagged)]
enum Pid {
    /// Its PID.
    Number(u32),
    /// `"NAME=PID"` or `"PID"`.
    Named(String),
}

/// `[stack]`.
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
struct Stack {
    /// The compose file (default compose/docker-compose.yml).
    file: Option<String>,
    /// The Compose project name (default `loadtest`).
    project: Option<String>,
    /// Cores per service (cpuset: `api = "0-1"`).
    cpus: Option<BTreeMap<String, Scalar>>,
    /// Memory limit per service (`api = "256m"`).
    memory: Option<BTreeMap<String, Scalar>>,
    /// How long to wait until every service is ready (default 120s).
    timeout: Option<DurationText>,
    /// What a run does when a service of its stack dies.
    on_service_exit: Option<OnServiceExit>,
    /// Leave the stack running after `run --stack`.
    keep: Option<bool>,
    /// run --stack: as [sampling] stats_interval.
    stats_interval: Option<DurationText>,
}

/// `[stack] on_service_exit`.
#[derive(JsonSchema)]
#[schemars(rename_all = "lowercase")]
enum OnServiceExit {
    /// Stop the run (exit code 1).
    Abort,
    /// Note it in the summary and go on.
    Continue,
}

/// `[tls]`.
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
struct Tls {
    /// A CA file (PEM) trusted besides the system's roots.
    ca_file: Option<String>,
    /// Accept any certificate (warned in the summary).
    insecure_skip_verify: Option<bool>,
    /// Certificate chain (PEM) shown when the server asks for one.
    client_cert: Option<String>,
    /// Its private key (PKCS#8, PKCS#1 or SEC1 PEM).
    client_key: Option<String>,
    /// One version, or a range.
    tls_version: Option<TlsVersions>,
    /// Cipher suites offered, by their IANA names.
    tls_cipher_suites: Option<Vec<String>>,
}

/// `tls_version`.
#[derive(JsonSchema)]
#[schemars(untagged)]
enum TlsVersions {
    /// Exactly this version.
    One(TlsVersion),
    /// A range.
    Range(TlsRange),
}

/// A TLS version.
#[derive(JsonSchema)]
enum TlsVersion {
    /// TLS 1.2.
    #[schemars(rename = "tls1.2")]
    Tls12,
    /// TLS 1.3.
    #[schemars(rename = "tls1.3")]
    Tls13,
}

/// `{ min = "tls1.2", max = "tls1.3" }`.
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
struct TlsRange {
    /// Lowest version offered.
    min: Option<TlsVersion>,
    /// Highest version offered.
    max: Option<TlsVersion>,
}

/// `[outputs]`.
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
struct Outputs {
    /// `--out prometheus-rw=URL`.
    prometheus: Option<Prometheus>,
}

/// `[outputs.prometheus]`.
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
struct Prometheus {
    /// How trends are sent.
    trend_as: Option<TrendAs>,
    /// Series sent at most; more are left out, with a warning.
    max_series: Option<u64>,
    /// Before every metric name, as k6's remote write (`k6_`).
    prefix: Option<String>,
}

/// `[outputs.prometheus] trend_as`.
#[derive(JsonSchema)]
#[schemars(rename_all = "lowercase")]
enum TrendAs {
    /// Percentile gauges.
    Percentiles,
    /// Native histograms.
    Native,
}

/// `[distributed]`.
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
struct Distributed {
    /// What a lost worker does to the run.
    on_worker_loss: Option<OnWorkerLoss>,
    /// How long the coordinator waits for all its workers.
    join_timeout: Option<DurationText>,
}

/// `[summary]`.
#[derive(JsonSchema)]
#[schemars(deny_unknown_fields)]
struct Summary {
    /// The trend columns summary.txt prints, in order (k6's `summaryTrendStats`;
    /// `--summary-trend-stats` overrides it): `avg`, `min`, `med`, `max`, `p(90)`,
    /// `p(95)`, `p(99)`, `p(99.9)`, `count`.
    trend_stats: Option<TrendColumns>,
}

/// `[summary] trend_stats`: an array of column names, or one comma-separated string.
#[derive(JsonSchema)]
#[schemars(untagged)]
enum TrendColumns {
    /// `["avg", "p(95)"]`.
    List(Vec<String>),
    /// `"avg,p(95)"`.
    Text(String),
}

/// `[distributed] on_worker_loss`.
#[derive(JsonSchema)]
#[schemars(rename_all = "lowercase")]
enum OnWorkerLoss {
    /// The others go on; the summary says what was lost.
    Continue,
    /// The run stops (exit 108).
    Abort,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sections_are_the_ones_the_reader_knows() {
        let schema: serde_json::Value = serde_json::from_str(&render()).unwrap();
        let mut sections: Vec<&str> = schema["properties"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        sections.sort();
        // `plugin` is read by `plugin::pin` and taken out before the reader sees the
        // table (config/layers.rs), so it is known though not one of the sections.
        let mut known = super::super::SECTIONS.to_vec();
        known.push("plugin");
        known.sort();
        assert_eq!(sections, known);
        assert_eq!(schema["additionalProperties"], false);
    }

    /// A table of the schema or of the reader: its dotted path (`scenarios.*`,
    /// `scenarios.*.stages[*]`), its keys.
    type Tables = std::collections::BTreeMap<String, std::collections::BTreeSet<String>>;

    /// Every object of the schema with fixed keys, by path: `$ref`s followed, the
    /// variants of an `anyOf` merged, a map's values at `.*`, an array's items at `[*]`.
    fn schema_tables(root: &serde_json::Value) -> Tables {
        fn walk(root: &serde_json::Value, node: &serde_json::Value, path: &str, out: &mut Tables) {
            if let Some(reference) = node["$ref"].as_str() {
                let name = reference.rsplit('/').next().unwrap_or_default();
                walk(root, &root["$defs"][name], path, out);
            }
            for key in ["anyOf", "oneOf", "allOf"] {
                for variant in node[key].as_array().into_iter().flatten() {
                    walk(root, variant, path, out);
                }
            }
            if let Some(properties) = node["properties"].as_object() {
                out.entry(path.to_string())
                    .or_default()
                    .extend(properties.keys().cloned());
                for (key, sub) in properties {
                    let at = if path.is_empty() {
                        key.clone()
                    } else {
                        format!("{path}.{key}")
                    };
                    walk(root, sub, &at, out);
                }
            }
            if node["additionalProperties"].is_object() {
                walk(
                    root,
                    &node["additionalProperties"],
                    &format!("{path}.*"),
                    out,
                );
            }
            if node["items"].is_object() {
                walk(root, &node["items"], &format!("{path}[*]"), out);
            }
        }
        let mut out = Tables::new();
        walk(root, root, "", &mut out);
        out
    }

    /// A reader's path as the schema writes it: a scenario's name is `*`, an array's
    /// index `[*]`.
    fn schema_path(path: &str) -> String {
        let mut parts: Vec<String> = path.split('.').map(str::to_string).collect();
        if parts.len() > 1 && parts[0] == "scenarios" {
            parts[1] = "*".into();
        }
        let joined = parts.join(".");
        let mut out = String::new();
        let mut in_index = false;
        for c in joined.chars() {
            match c {
                '[' => {
                    in_index = true;
                    out.push_str("[*]");
                }
                ']' => in_index = false,
                _ if in_index => {}
                _ => out.push(c),
            }
        }
        out
    }

    /// One scenario of each executor, with the keys each requires.
    const SCENARIOS: &str = r#"
[scenarios.a]
executor = "constant-vus"
vus = 1
duration = "1s"
[scenarios.b]
executor = "ramping-vus"
stages = [{ duration = "1s", target = 1 }]
[scenarios.c]
executor = "per-vu-iterations"
vus = 1
iterations = 1
[scenarios.d]
executor = "shared-iterations"
vus = 1
iterations = 1
[scenarios.e]
executor = "constant-arrival-rate"
rate = 1
duration = "1s"
pre_allocated_vus = 1
[scenarios.f]
executor = "ramping-arrival-rate"
stages = [{ duration = "1s", target = 1 }]
pre_allocated_vus = 1
"#;

    /// Tables the config reads without a `TableReader` (so no reader's keys can be
    /// recorded for them), each with where it is read. A table of the schema that is
    /// neither read by a reader nor here fails the test.
    const READ_ELSEWHERE: &[(&str, &str)] = &[
        ("", "the sections: SECTIONS, config/mod.rs (the test above)"),
        ("plugin", "plugin::pin, config/layers.rs"),
        (
            "thresholds",
            "config/mod.rs thresholds(), thresholds::parse",
        ),
        ("thresholds.*", "thresholds::parse (a threshold's table)"),
        (
            "thresholds.*[*]",
            "thresholds::parse (a threshold's table in a list)",
        ),
        (
            "outputs",
            "config/outputs.rs (its one key, `prometheus`, checked by name)",
        ),
    ];

    /// The schema describes exactly the keys the reader reads, table by table: each
    /// reader is run over configs that reach it, and the keys it knew when it
    /// finished (read or marked known) must be the schema's keys of that table. A key
    /// added to one and not the other fails here, naming the table and the key.
    #[test]
    fn the_schema_lists_exactly_the_keys_each_reader_reads() {
        let schema: serde_json::Value = serde_json::from_str(&render()).unwrap();
        let described = schema_tables(&schema);
        let probes: Vec<String> = [
            "",
            "[websocket]",
            "[browser]",
            // Read only when present: the reader marks a list's key as it reads the list.
            "[http]\nlocal_ips = [\"127.0.0.1\"]\nversions = [\"http/1.1\"]",
            "[sampling]",
            "[stack]",
            "[tls]\ntls_version = { min = \"tls1.2\" }\ntls_cipher_suites = [\"TLS_AES_128_GCM_SHA256\"]",
            "[outputs.prometheus]",
            "[distributed]",
            "[summary]",
            "[limits]",
            "[targets]",
            "[k6]\nown_scenarios = true",
        ]
        .iter()
        .map(|section| format!("{SCENARIOS}\n{section}\n"))
        .collect();
        let read = crate::table::asked::during(|| {
            for probe in &probes {
                let table: toml::Table = toml::from_str(probe).expect(probe);
                let _ = super::super::build(table, &crate::config::Overrides::default());
            }
        });
        let mut by_schema_path = Tables::new();
        for (path, keys) in read {
            by_schema_path
                .entry(schema_path(&path))
                .or_default()
                .extend(keys);
        }
        let mut wrong = Vec::new();
        for (path, keys) in &by_schema_path {
            match described.get(path) {
                None => wrong.push(format!(
                    "the schema has no table `{path}`; the reader reads {keys:?}"
                )),
                Some(schema_keys) if schema_keys != keys => wrong.push(format!(
                    "`{path}`: only in the schema {:?}, only in the reader {:?}",
                    schema_keys.difference(keys).collect::<Vec<_>>(),
                    keys.difference(schema_keys).collect::<Vec<_>>()
                )),
                Some(_) => {}
            }
        }
        for path in described.keys() {
            let elsewhere = READ_ELSEWHERE.iter().any(|(p, _)| p == path);
            if !by_schema_path.contains_key(path) && !elsewhere {
                wrong.push(format!("no reader read the schema's table `{path}`"));
            }
        }
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }
}
