//! The store of runs: every run's results folder indexed in one SQLite file, so runs
//! can be listed, trended, compared and held against a baseline long after each ran.
//!
//! The results folder stays the source of truth: the store is written from it at the
//! end of a run ([`record`], the same code `host runs import` uses), and a store that
//! cannot be written costs a warning, never the run or its files. One job per file:
//! [`schema`] opens, creates and migrates the file (and refuses one it cannot read),
//! [`record`] indexes a folder, [`query`] reads runs back, [`series`] rebuilds the
//! per-second data the significance test needs, [`regress`] judges `[regressions]`
//! rules, [`trend_page`] draws a trend, [`text`] prints what the commands show,
//! [`report_section`] puts the run beside its last runs in its report.html.

pub(crate) mod query;
pub(crate) mod record;
pub(crate) mod regress;
pub(crate) mod report_section;
pub(crate) mod schema;
pub(crate) mod series;
pub(crate) mod text;
pub(crate) mod trend_page;

use std::path::{Path, PathBuf};

/// The environment variable that names the store when `--store` does not.
pub(crate) const ENV: &str = "HOST_RUNS_STORE";

/// The store's file name inside the results root.
pub(crate) const FILE_NAME: &str = "runs.db";

/// The store a command uses: `--store` (or [`ENV`], which clap reads into the flag),
/// else `runs.db` in the results root, beside the folders it indexes: a project's
/// `results/` carries its own history, and a CI job that keeps `results/` keeps it.
pub(crate) fn store_path(flag: Option<&Path>, results_root: &Path) -> PathBuf {
    match flag {
        Some(path) => path.to_path_buf(),
        None => results_root.join(FILE_NAME),
    }
}
