//! What a run-like command does after its results are written: index the results
//! folder in the store of runs, and with `--baseline` hold the run against the
//! scenario's baseline (or a named run). The results folder is the source of truth:
//! a store that cannot be opened or written costs a warning, never the run's code.

use crate::output::compare::{self, Comparison, Tolerance};
use crate::run::{self, exit_code};
use crate::runs::{query, record, regress, schema};
use rusqlite::Connection;
use std::path::{Path, PathBuf};

/// `--store` and `--baseline`, as the run was given them.
#[derive(Debug, Clone, Default)]
pub(super) struct Remember {
    /// `--store PATH` (or HOST_RUNS_STORE).
    pub store: Option<PathBuf>,
    /// `--baseline [RUN]`: `Some(None)` for the scenario's baseline.
    pub baseline: Option<Option<String>>,
}

/// `host compare`'s default tolerance, which `--baseline` uses without `[regressions]`.
const DEFAULT_TOLERANCE: Tolerance = Tolerance {
    relative: 0.10,
    min_latency_ms: 1.0,
};

/// Records the run; with `--baseline`, compares it and returns
/// [`exit_code::REGRESSION`] when it regressed and the run itself passed.
pub(super) fn after_run(outcome: &run::RunOutcome, remember: &Remember) -> i32 {
    let root = outcome
        .results_dir
        .parent()
        .unwrap_or_else(|| Path::new("."));
    let path = crate::runs::store_path(remember.store.as_deref(), root);
    let recorded = schema::open(&path)
        .and_then(|mut conn| {
            let r = record::record(&mut conn, &outcome.results_dir, Some(outcome.exit_code))?;
            Ok((conn, r))
        })
        .map_err(|e| schema::explain(e, &path));
    let (conn, id) = match recorded {
        Ok((conn, r)) => {
            println!("  recorded as run {} in {}", r.id, path.display());
            (conn, r.id)
        }
        Err(e) => {
            crate::stderr::warn(format_args!(
                "the run was not recorded in the store of runs {}: {e:#}; its results folder \
                 is complete{}",
                path.display(),
                if remember.baseline.is_some() {
                    ", but without the store it cannot be compared with a baseline"
                } else {
                    ""
                }
            ));
            return outcome.exit_code;
        }
    };
    let code = judge(outcome, remember, &conn, id, &path);
    if outcome.results_dir.join("report.html").is_file() {
        if let Err(e) = crate::runs::report_section::add(&conn, id, &outcome.results_dir) {
            crate::stderr::warn(format_args!(
                "report.html does not show the last runs: {e:#}"
            ));
        }
    }
    code
}

/// With `--baseline`, the run held against its baseline: the exit code it ends with.
fn judge(
    outcome: &run::RunOutcome,
    remember: &Remember,
    conn: &Connection,
    id: i64,
    path: &Path,
) -> i32 {
    let Some(baseline) = &remember.baseline else {
        return outcome.exit_code;
    };
    match against_baseline(conn, id, baseline.as_deref()) {
        Ok(true) if outcome.exit_code == exit_code::OK => {
            // The store keeps the code the process ends with.
            if let Err(e) = query::set_exit_code(conn, id, exit_code::REGRESSION) {
                crate::stderr::warn(format_args!(
                    "the store of runs {} keeps the run's exit code 0, not 98: {e:#}",
                    path.display()
                ));
            }
            exit_code::REGRESSION
        }
        Ok(_) => outcome.exit_code,
        Err(e) => {
            crate::stderr::warn(format_args!("cannot compare with a baseline: {e:#}"));
            outcome.exit_code
        }
    }
}

/// Prints run `id` against its baseline; whether it regressed.
fn against_baseline(conn: &Connection, id: i64, named: Option<&str>) -> anyhow::Result<bool> {
    let run = query::get(conn, id)?;
    let (base, why) = match named {
        Some(spec) => (query::resolve(conn, spec)?, "the run named".to_string()),
        None => match query::baseline_for(conn, &run)? {
            Some((base, scenario)) => (base, format!("the baseline of {scenario}")),
            None => match query::previous(conn, &run)? {
                Some(base) => (
                    base,
                    "the previous run of the same plugin and scenarios (no baseline set: \
                     `host runs baseline set RUN`)"
                        .to_string(),
                ),
                None => {
                    println!(
                        "\n  baseline: none yet for {} ({}): this run is the first; \
                         `host runs baseline set {id}` makes it the baseline",
                        run.plugin, run.scenarios
                    );
                    return Ok(false);
                }
            },
        },
    };
    println!("\n  baseline: run {base}, {why}");
    let b_summary = query::summary(conn, id)?;
    let rules = rules_of(&b_summary)?;
    if rules.is_empty() {
        let c = compare_stored(conn, base, id, DEFAULT_TOLERANCE)?;
        print!("{}", compare::render(&c));
        return Ok(c.regressions() > 0);
    }
    let a_summary = query::summary(conn, base)?;
    let (sa, sb) = (
        crate::runs::series::load(conn, base)?,
        crate::runs::series::load(conn, id)?,
    );
    let judged = regress::judge(
        &rules,
        (&a_summary, sa.as_ref()),
        (&b_summary, sb.as_ref()),
        DEFAULT_TOLERANCE.min_latency_ms,
    );
    println!("  [regressions] against run {base}:");
    print!("{}", regress::render(&judged));
    let broken: Vec<String> = judged
        .iter()
        .filter(|j| j.regressed)
        .map(|j| {
            format!(
                "{} {} {}",
                j.rule.metric,
                j.rule.stat,
                j.change().map_or_else(
                    || "-".into(),
                    crate::config::regressions::Rule::describe_change
                )
            )
        })
        .collect();
    if broken.is_empty() {
        println!("  no regression against run {base}");
        Ok(false)
    } else {
        println!(
            "  regression against run {base}: {} (exit code {})",
            broken.join(", "),
            exit_code::REGRESSION
        );
        Ok(true)
    }
}

/// The `[regressions]` rules of a run, read back from its (redacted) config.
fn rules_of(
    summary: &crate::summary::Summary,
) -> anyhow::Result<Vec<crate::config::regressions::Rule>> {
    let Some(section) = summary.config.get("regressions") else {
        return Ok(Vec::new());
    };
    let mut table = toml::Table::new();
    table.insert(
        "regressions".into(),
        serde_json::from_value(section.clone())
            .map_err(|e| anyhow::anyhow!("[regressions] of the run cannot be read: {e}"))?,
    );
    crate::config::regressions::parse(&table).map_err(|e| anyhow::anyhow!("{e}"))
}

/// Two stored runs compared as `host compare` compares two folders.
pub(super) fn compare_stored(
    conn: &Connection,
    a: i64,
    b: i64,
    tolerance: Tolerance,
) -> anyhow::Result<Comparison> {
    let loaded = |id: i64| -> anyhow::Result<compare::Loaded> {
        Ok((
            PathBuf::from(query::get(conn, id)?.folder),
            query::summary(conn, id)?,
            crate::runs::series::load(conn, id)?,
        ))
    };
    Ok(compare::compare_loaded(loaded(a)?, loaded(b)?, tolerance))
}
