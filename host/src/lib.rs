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
//! cli         → author, sweep, demo, distributed, run, stack, output, sampling,
//!               target_process, config
//! distributed → run, summary, metrics, plugin, executor, control, config
//!               (`host coordinate`, `host worker`: wire protocol, exact merging)
//! author      → (leaf: `host new`, `host build`, run cargo)
//! sweep       → run, stack, output, summary, metrics, files, config
//!               (`host sweep`: levels, capacity model)
//! demo        → run, plugin, target_process
//! stack       → run, sampling, docker, control, config   (Compose stacks)
//! run         → summary, output, sampling, executor, thresholds, vu, plugin, net,
//!               metrics, control, config
//! output      → summary, sampling, plugin, net, metrics, files, config
//! summary     → sampling, executor, thresholds, vu, plugin, net, metrics, control,
//!               config
//! sampling    → executor, docker, files, config
//!               (resource samples of the target and the generator)
//! executor    → vu, metrics, control, config
//! thresholds  → metrics, control, config
//! vu          → plugin, metrics, deadline, config   (VUs, their factory, their failures)
//! plugin      → net, metrics, config
//! net         → metrics, deadline, config
//! control     → docker   (stop signals; a run's watcher names containers to sample)
//! docker      → config   (the Engine connection, a project's containers)
//! config      → metrics   (the run config, `[thresholds]` parsing included; `[tls]` is
//!               checked by building the rustls config it describes, the builder
//!               `net::tls` connects with)
//! metrics, deadline, files, target_process, stderr, author: leaves
//! ```

pub mod author;
pub mod cli;
pub mod config;
pub mod control;
pub mod deadline;
pub mod demo;
pub mod distributed;
pub mod docker;
pub mod executor;
pub mod files;
pub mod metrics;
pub mod net;
pub mod output;
pub mod plugin;
pub mod run;
pub mod sampling;
pub mod stack;
pub mod stderr;
pub mod summary;
pub mod sweep;
pub mod target_process;
pub mod thresholds;
pub mod vu;
