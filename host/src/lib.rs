//! The load-test host: runs scenarios written as sandboxed WebAssembly components
//! against targets on the network, with open and closed workload models, HDR-histogram
//! metrics and results files.
//!
//! Data flows one way: config → executors → VUs → imports → metric samples →
//! aggregator → outputs.

pub mod cli;
pub mod config;
pub mod deadline;
pub mod demo;
pub mod executor;
pub mod metrics;
pub mod net;
pub mod output;
pub mod plugin;
pub mod run;
pub mod sampling;
pub mod target_process;
pub mod thresholds;
pub mod vu;
