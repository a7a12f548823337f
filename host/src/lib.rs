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
//! cli         → author, sweep, demo, run, stack, output, sampling, target_process,
//!               config
//! author      → (leaf: `host new`, `host build`, run cargo)
//! sweep       → run, stack, summary, config   (`host sweep`: levels, capacity model)
//! demo        → run, plugin, target_process
//! stack       → run, summary, control, config   (Compose stacks, Docker Engine API)
//! run         → summary, output, sampling, executor, thresholds, vu, plugin, net,
//!               metrics, control, config
//! output      → summary, sampling, plugin, metrics
//! summary     → sampling, executor, thresholds, vu, plugin, metrics, control, config
//! sampling    → executor, config, and stack's leaf files engine and containers
//!               (resource samples of the target and the generator)
//! executor    → vu, metrics, control, config
//! thresholds  → metrics, control, config
//! vu          → plugin, metrics, deadline, config   (VUs, their factory, their failures)
//! plugin      → net, metrics, config
//! net         → metrics, deadline, config
//! metrics, control, deadline, config, target_process: leaves
//! ```

pub mod author;
pub mod cli;
pub mod config;
pub mod control;
pub mod deadline;
pub mod demo;
pub mod executor;
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
