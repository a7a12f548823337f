//! The host's integration tests, in one binary (the shape of wasmtime's tests/all), so
//! a test run links wasmtime once instead of once per file. Modules are grouped by the
//! feature they test; `support` holds what several of them share. Fixtures stay in
//! host/tests/fixtures.
//!
//! Tests of different files run side by side in this one process (two at a time on a
//! 2-core machine, libtest's default): what used to be separated by processes is
//! shared here through `support::turns` (tests that measure, Docker-heavy tests, the
//! browser). No test sets environment variables or changes the current folder; add
//! none (they are process-wide): give a child process its environment instead.

mod support;

/// k6 browser scripts: the host's Chromium, the allowlist in the page, k6's browser
/// metrics, the faults.
mod browser;
/// k6 browser scripts: page events, routes, frames, handles and emulation.
mod browser_pages;

/// The `host` binary's commands, flags, reference and signals, as a user types them.
mod cli {
    mod bad_input;
    mod commands;
    mod config_flags;
    mod interrupt;
    mod k6_compat;
    mod k6_options;
    mod reference;
}

/// Executors: closed and open models, very high rates.
mod executors {
    mod closed;
    mod high_rate;
    mod open_model;
}

/// The plugin sandbox: files refused, per-VU limits, bounds on what a plugin grows,
/// failing iterations and inits, the VU capacity of a process, floods.
mod plugin {
    mod bounds;
    mod capacity;
    mod compile_cache;
    mod failures;
    mod floods;
    mod init_failures;
    mod refused;
    mod vu_limits;
}

/// The network imports: HTTP as browsers use it, prepared requests, TLS, HTTP/3,
/// network errors, counting by fate, HTML pages, limits that name their fix,
/// WebSockets.
mod net {
    mod browser;
    mod counting;
    mod html_pages;
    mod http3;
    mod lifting_limits;
    mod network_errors;
    mod prepared;
    mod tls;
    mod websockets;
}

/// Raw TCP/TLS/UDP sockets (contract 0.3.7): protocol clients in plugins (Redis,
/// PostgreSQL, MQTT; Rust and Python) against the real servers.
mod sockets {
    mod mqtt_plugin;
    mod postgres_plugin;
    mod python_redis;
    mod redis_plugin;
}

/// gRPC: against grpcio (a server this project did not write) and the demo's face.
mod grpc {
    mod demo_face;
    mod hostile_reflection;
    mod python_server;
}

/// k6 scripts run by `host run script.js`.
mod js {
    mod asyncs;
    mod exec_scenario;
    mod grpc;
    mod grpc_connect;
    mod hostile;
    mod http_compat;
    mod idioms;
    mod imports_cut;
    mod k6_files;
    mod layer_modules;
    mod messages;
    mod redis;
    mod remote_modules;
    mod repeated;
    mod responses;
    mod runtime_guards;
    mod runtime_source;
    mod scripts;
    mod stacks;
    mod streams;
    mod typescript;
    mod webcrypto;
}

/// Plugins from elsewhere: `host new`/`build`/`inspect`, Python, HAR import, OCI.
mod author {
    mod har;
    mod new_plugin;
    mod oci;
    mod oci_hostile;
    mod python;
}

/// The example plugins of plugins/ end to end against the demo target.
mod examples {
    mod async_limits_and_forms;
    mod end_to_end;
    mod users_and_capacity;
}

/// What a run writes: report.html, live outputs, remote write, compare, unwritable
/// results, the store of runs.
mod outputs {
    mod compare;
    mod compare_significance;
    mod live;
    mod remote_write_tls;
    mod report;
    mod results_writes;
    mod runs_store;
}

/// A run's verdict and what it keeps secret: thresholds, broken runs, secrets.
mod run {
    mod broken_runs;
    mod k6_secrets;
    mod secrets;
    mod thresholds;
}

/// The Compose stack and resource sampling on the real Docker engine.
mod stack {
    mod compose;
    mod sampling;
}

/// `host sweep` and who saturated.
mod sweep {
    mod capacity_model;
    mod saturation;
}

/// Distributed runs: coordinator and workers, execution segments, Swarm, Kubernetes.
mod distributed {
    mod coordinate;
    mod k8s_render;
    mod segments;
    mod swarm;
}
