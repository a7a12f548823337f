//! The load-test host: runs scenarios written as sandboxed WebAssembly components
//! against targets on the network, with open and closed workload models, HDR-histogram
//! metrics and results files.
//!
//! Data flows one way: config → executors → VUs → imports → metric samples →
//! aggregator → outputs.
//!
//! # Module graph
//!
//! Each module imports only from the modules listed below it (its lower layers), never
//! from one above; a module that two layers need lives below both.
//!
//! ```text
//! cli         → oci, author, sweep, demo, distributed, run, stack, runs, output,
//!               sampling, target_process, live, k8s, plugin, summary, net, docker,
//!               files, signals, stderr, config, table, duration
//! k8s         → distributed, author, plugin, files, config, table   (`host k8s render`: the
//!               manifests of a distributed run)
//! distributed → oci, run, summary, executor, vu, plugin, net, metrics, control, files,
//!               bounded, stderr, config, duration   (`host coordinate`, `host worker`:
//!               wire protocol, exact merging)
//! oci         → author, run, plugin, net, bounded, stderr, config   (`host push`,
//!               `host pull`, `host login`, plugins named by registry reference)
//! sweep       → stack, run, output, summary, sampling, metrics, files, signals, config
//!               (`host sweep`: levels, capacity model)
//! runs        → output, summary, metrics, files, config   (the store of runs: what
//!               `host runs` reads, `host run --baseline` judges)
//! demo        → run, plugin, summary, target_process
//! stack       → run, docker, control, files, signals, config   (Compose stacks)
//! run         → author, live, summary, output, sampling, executor, thresholds, vu,
//!               plugin, browser, net, metrics, control, files, signals, stderr, config,
//!               table, duration
//! live        → summary, sampling, thresholds, net, metrics, bounded, signals, stderr,
//!               config   (dashboard, /metrics, CSV/JSON and remote-write outputs)
//! output      → summary, sampling, plugin, net, metrics, files, bounded, stderr,
//!               config
//! summary     → sampling, executor, thresholds, vu, plugin, net, metrics, control,
//!               config
//! sampling    → executor, docker, files, signals, stderr, config
//!               (resource samples of the target and the generator)
//! executor    → vu, metrics, control, striped, stderr, config
//! vu          → plugin, metrics, control, deadline, bounded, config, duration   (VUs,
//!               their factory, their failures)
//! author      → plugin, net, stderr   (`host new`, `host build`, run cargo, k6 scripts)
//! plugin      → thresholds, browser, html, crypto, net, metrics, control, bounded, stderr,
//!               config, duration
//!               (components, the contract's imports, iteration numbers, registry
//!               references as `plugin.oci` names them)
//! browser     → net, metrics, bounded, stderr   (the host's Chromium over the DevTools
//!               protocol: shared browsers, a context per iteration, the allowlist held
//!               in the page)
//! net         → metrics, deadline, bounded, striped, stderr, config, duration
//! control     → docker   (stop signals; a run's watcher names containers to sample)
//! docker      → config   (the Engine connection, a project's containers)
//! config      → thresholds, metrics, table, duration   (the run config; `[tls]` is checked by
//!               building the rustls config it describes, the builder `net::tls`
//!               connects with)
//! thresholds  → metrics, table   (parsed with the config, judged by the run)
//! metrics     → bounded, striped, stderr
//! bounded     → stderr
//! table       → duration   (the TOML reader that collects every mistake)
//! deadline, duration, files, target_process, signals, striped, html, crypto, stderr: leaves
//! ```
//!
//! Within a module too, imports go one way: no two files import each other, directly
//! or through others (`module_graph`, a unit test, names any cycle it finds). The
//! table above is checked too (`module_graph::layers`): a module importing one its
//! line does not list, or a line listing a module above it, fails the test.
//!
//! # Public API
//!
//! Every module is private. The crate exports what the binary and the integration
//! tests use, re-exported at the root from the module that defines it: [`main`] (the
//! command line), [`run()`] with [`RunRequest`] and [`Summary`], the config parsers,
//! `host compare`, the Compose stack's calls and the distributed runs' [`protocol`].
//! `missing_docs` and `unreachable_pub` are denied, so an undocumented export or a
//! `pub` that nothing outside its module can reach does not build.

#![deny(missing_docs, unreachable_pub)]

mod author;
mod bounded;
mod browser;
mod cli;
mod config;
mod control;
mod crypto;
mod deadline;
mod demo;
mod distributed;
mod docker;
mod duration;
mod executor;
mod files;
mod html;
mod k8s;
mod live;
mod metrics;
#[cfg(test)]
mod module_graph;
mod net;
mod oci;
mod output;
mod plugin;
mod run;
mod runs;
mod sampling;
mod signals;
mod stack;
mod stderr;
mod striped;
mod summary;
mod sweep;
mod table;
mod target_process;
mod thresholds;
mod vu;

// The public API: what the binary (`main`) and the integration tests need, each item
// re-exported from the module that defines it. Everything else is private to the
// crate, so the compiler finds dead code and missing docs.

pub use cli::main;

// A run, as `host run` makes it, and what it leaves.
pub use run::{exit_code, inspect, run, RunOutcome, RunRequest};
pub use summary::{RunStatus, Summary, SCHEMA as SUMMARY_SCHEMA};

// The config: files, flags, durations, segments, thresholds.
pub use config::scenario::ExecutorConfig;
pub use config::{
    build as build_config, merge as merge_config, parse_toml as parse_config, Overrides,
};
pub use duration::{format_duration, parse_duration};
pub use metrics::summary::Aggregation;
pub use metrics::value::Unit;
pub use thresholds::{
    expression::parse_expression, metric_key::parse_metric_key, parse::parse_thresholds,
};

// `host compare`.
pub use output::compare::{
    compare_runs, render as render_comparison, Comparison, Row as ComparisonRow, Tolerance,
};
pub use output::significance::Significance;

// Live outputs (`--out`, `--dashboard`).
pub use live::spec::OutputSpec;
pub use live::LiveOptions;

// The Compose stack under test.
pub use config::cpuset::CpuSet;
pub use docker::containers::{project_containers, ServiceContainer};
pub use docker::engine::connect as connect_docker;
pub use docker::PROJECT_LABEL;
pub use stack::cycle::{run_with_stack, StackRun};
pub use stack::images::{ensure_image, find_binary};
pub use stack::resources::Resources;
pub use stack::teardown::remove_project;
pub use stack::up::{
    down as stack_down, override_dir as stack_dir, up as stack_up, StackFlags, UpOptions,
};

// Distributed runs: the coordinator's ready line, the wire protocol, k8s segments.
pub use distributed::coordinator::LISTENING;
pub use distributed::protocol;
pub use distributed::trust;
// The kind of a metric, as `protocol::WireSeries` names it.
pub use k8s::manifests::segment_of;
pub use metrics::value::MetricKind;

// Plugins: where the bundled ones are built, the Python tool's pinned version, the
// JavaScript a k6 script builds to.
pub use author::js::module_text as js_module_text;
pub use author::python::COMPONENTIZE_PY_VERSION;
pub use demo::PLUGINS_DIR;

/// The execution segment `--execution-segment` and `--execution-segment-sequence` give
/// (each optional), checked together: [`config::segment::ExecutionTuple::from_flags`].
pub fn segment_from_flags(
    segment: Option<&str>,
    sequence: Option<&str>,
) -> Result<config::segment::ExecutionTuple, config::segment::SegmentError> {
    config::segment::ExecutionTuple::from_flags(segment, sequence)
}
