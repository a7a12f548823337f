//! `host runs ...`: the store of runs read back (list, show, trend, compare), baselines
//! set, results folders imported.

use crate::runs::{query, schema};
use clap::{Args, Subcommand};
use std::path::{Path, PathBuf};

/// Where the store is, for every `host runs` command.
#[derive(Args, Debug)]
pub(super) struct StoreArg {
    /// The store of runs (default: runs.db in the results folder, `results/runs.db`).
    #[arg(long, value_name = "PATH", env = crate::runs::ENV, global = true)]
    store: Option<PathBuf>,
}

impl StoreArg {
    fn path(&self) -> PathBuf {
        crate::runs::store_path(self.store.as_deref(), Path::new("results"))
    }
}

// `host runs` (its help is the variant's in `Command`).
#[derive(Args, Debug)]
pub(super) struct RunsCommand {
    #[command(flatten)]
    store: StoreArg,
    #[command(subcommand)]
    command: RunsSub,
}

#[derive(Subcommand, Debug)]
enum RunsSub {
    /// The recorded runs, oldest first (filters combine).
    List(ListArgs),
    /// One run: plugin, scenarios, tags, times, status, thresholds, every metric's figures.
    Show {
        /// The run: its id, `last`, or its results folder.
        run: String,
    },
    /// A statistic of a metric across runs, as a table (and a chart page with --html).
    Trend(TrendArgs),
    /// Baselines: `baseline set RUN` makes a run the baseline of its plugin's scenarios
    /// (or of one, with --scenario); `baseline show` lists them.
    Baseline {
        /// `set` or `show`.
        action: BaselineAction,
        /// The run to set: its id, `last`, or its results folder.
        #[arg(required_if_eq("action", "set"))]
        run: Option<String>,
        /// Only this scenario of the run.
        #[arg(long)]
        scenario: Option<String>,
    },
    /// Compares two recorded runs as `host compare` does; exits 98 when B regressed.
    Compare(CompareArgs),
    /// Indexes existing results folders (or every folder under a results root).
    Import {
        /// Results folders, or folders holding them.
        #[arg(required = true)]
        dirs: Vec<PathBuf>,
    },
}

#[derive(Args, Debug)]
struct Filters {
    /// Runs of this plugin (its name).
    #[arg(long)]
    plugin: Option<String>,
    /// Runs with a scenario of this name.
    #[arg(long)]
    scenario: Option<String>,
    /// Runs with a scenario tagged KEY=VALUE (`tags` of [scenarios.NAME]).
    #[arg(long, value_name = "KEY=VALUE", value_parser = tag_arg)]
    tag: Option<(String, String)>,
    /// Runs started on or after this UTC date or time (`2026-12-04`, `2026-12-04T10:00`).
    #[arg(long, value_name = "DATE", value_parser = date_arg)]
    since: Option<String>,
    /// Runs started before this UTC date or time.
    #[arg(long, value_name = "DATE", value_parser = date_arg)]
    until: Option<String>,
    /// Only the last N runs.
    #[arg(long, value_name = "N")]
    last: Option<usize>,
}

impl Filters {
    fn filter(&self) -> query::Filter {
        query::Filter {
            plugin: self.plugin.clone(),
            scenario: self.scenario.clone(),
            tag: self.tag.clone(),
            since: self.since.clone(),
            until: self.until.clone(),
            last: self.last,
        }
    }
}

#[derive(Args, Debug)]
struct ListArgs {
    #[command(flatten)]
    filters: Filters,
}

#[derive(Args, Debug)]
struct TrendArgs {
    /// The metric (`http_req_duration`, `http_reqs`, a sub-metric as thresholds name it).
    metric: String,
    /// The statistic: avg, min, med, max, rate, count, value, or any percentile p(N)
    /// (`p(95)`, `p(99.99)`, `p(75)`): one summary.json does not hold is recomputed
    /// from the run's stored per-second histograms (trends only).
    #[arg(long, default_value = "p(95)", value_parser = stat_arg)]
    stat: String,
    /// Recompute the statistic over this window of each run only, in seconds from its
    /// start (`10..20`), by merging the stored per-second histograms (trends only).
    #[arg(long, value_name = "FROM..TO", value_parser = window_arg)]
    window: Option<(f64, f64)>,
    /// Also write the trend as a chart page (like report.html) to FILE.
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
    #[command(flatten)]
    filters: Filters,
}

/// What `host runs baseline` does.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum BaselineAction {
    /// Make RUN the baseline.
    Set,
    /// List the baselines.
    Show,
}

#[derive(Args, Debug)]
struct CompareArgs {
    /// The baseline run: its id, `last`, or its results folder.
    a: String,
    /// The run to judge against it.
    b: String,
    /// Allowed change before a metric counts as a regression (`10%`).
    #[arg(long, default_value = "10%", value_parser = crate::output::compare::parse_tolerance)]
    tolerance: f64,
    /// Timings must also rise by at least this much to count (`1ms`, `500us`).
    #[arg(long, default_value = "1ms", value_parser = crate::config::args::duration_arg)]
    min_latency_change: std::time::Duration,
}

/// `--tag KEY=VALUE`.
fn tag_arg(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.trim().to_string())),
        _ => Err(format!(
            "invalid tag {text:?}: write KEY=VALUE, such as team=web"
        )),
    }
}

/// `--stat`: a statistic summary.json keys (`p(95)` → `p95`), or any percentile
/// `p(N)` / `pN` with N in 0..=100 (`p(99.99)` → `p99.99`).
fn stat_arg(text: &str) -> Result<String, String> {
    if let Some(key) = crate::config::regressions::stat_key(text) {
        return Ok(key.to_string());
    }
    let t = text.trim();
    let number = t
        .strip_prefix("p(")
        .and_then(|r| r.strip_suffix(')'))
        .or_else(|| t.strip_prefix('p'));
    match number.and_then(|n| n.trim().parse::<f64>().ok()) {
        Some(q) if (0.0..=100.0).contains(&q) => Ok(format!("p{q}")),
        _ => Err(format!(
            "unknown statistic {text:?}: use one of avg, min, med, max, rate, count, value, \
             or a percentile p(N) with N from 0 to 100, such as p(95) or p(99.99)"
        )),
    }
}

/// `--since` / `--until`: a UTC date or time, `2026-12-04`, `2026-12-04T10:00` or
/// `2026-12-04 10:00:30` (a trailing `Z` is allowed), as the prefix of an RFC 3339
/// time the stored starts are compared with.
fn date_arg(text: &str) -> Result<String, String> {
    let bad = || {
        format!(
            "invalid date {text:?}: write a UTC date or time such as 2026-12-04, \
             2026-12-04T10:00 or 2026-12-04T10:00:30"
        )
    };
    let t = text.trim().replacen(' ', "T", 1);
    let t = t.strip_suffix('Z').unwrap_or(&t);
    // The three lengths are the three forms a stored RFC 3339 start is compared with as
    // a prefix; `time` checks the digits and the calendar (no 2026-02-30, no 25:00).
    use time::macros::format_description as form;
    let valid = match t.len() {
        10 => time::Date::parse(t, form!("[year]-[month]-[day]")).is_ok(),
        16 => {
            time::PrimitiveDateTime::parse(t, form!("[year]-[month]-[day]T[hour]:[minute]")).is_ok()
        }
        19 => time::PrimitiveDateTime::parse(
            t,
            form!("[year]-[month]-[day]T[hour]:[minute]:[second]"),
        )
        .is_ok(),
        _ => false,
    };
    if !valid {
        return Err(bad());
    }
    Ok(t.to_string())
}

/// `10..20` → (10, 20).
fn window_arg(text: &str) -> Result<(f64, f64), String> {
    let bad = || format!("invalid window {text:?}: write FROM..TO in seconds, such as 10..20");
    let (from, to) = text.split_once("..").ok_or_else(bad)?;
    let (from, to): (f64, f64) = (
        from.trim().parse().map_err(|_| bad())?,
        to.trim().parse().map_err(|_| bad())?,
    );
    if !(from.is_finite() && to.is_finite() && from < to) {
        return Err(bad());
    }
    Ok((from, to))
}

/// Runs a `host runs` command; returns the exit code. Damage SQLite finds inside the
/// store is said with what to do ([`schema::explain`]).
pub(super) fn runs(command: RunsCommand) -> anyhow::Result<i32> {
    let path = command.store.path();
    dispatch(&path, command.command).map_err(|e| schema::explain(e, &path))
}

fn dispatch(path: &Path, command: RunsSub) -> anyhow::Result<i32> {
    match command {
        RunsSub::Import { dirs } => import(path, &dirs),
        RunsSub::List(args) => {
            let conn = schema::open_existing(path)?;
            let rows = query::list(&conn, &args.filters.filter())?;
            print!(
                "{}",
                crate::runs::text::list(&rows, &query::baselines(&conn)?)
            );
            Ok(0)
        }
        RunsSub::Show { run } => {
            let conn = schema::open_existing(path)?;
            let id = query::resolve(&conn, &run)?;
            print!(
                "{}",
                crate::runs::text::show(
                    &query::get(&conn, id)?,
                    &query::details(&conn, id)?,
                    &query::tags(&conn, id)?,
                    &query::thresholds(&conn, id)?,
                    &query::figures(&conn, id)?,
                )
            );
            Ok(0)
        }
        RunsSub::Trend(args) => trend(path, args),
        RunsSub::Baseline {
            action: BaselineAction::Set,
            run,
            scenario,
        } => {
            let conn = schema::open_existing(path)?;
            let id = query::resolve(&conn, run.as_deref().unwrap_or("last"))?;
            let set = query::set_baseline(&conn, id, scenario.as_deref())?;
            let plugin = query::get(&conn, id)?.plugin;
            println!(
                "run {id} is now the baseline of {} (plugin {plugin})",
                set.join(", ")
            );
            Ok(0)
        }
        RunsSub::Baseline {
            action: BaselineAction::Show,
            ..
        } => {
            let conn = schema::open_existing(path)?;
            let all = query::baselines(&conn)?;
            if all.is_empty() {
                println!("no baseline set (`host runs baseline set RUN`)");
            }
            for (plugin, scenario, id) in all {
                println!("{plugin} {scenario}: run {id}");
            }
            Ok(0)
        }
        RunsSub::Compare(args) => {
            let conn = schema::open_existing(path)?;
            let tolerance = crate::output::compare::Tolerance {
                relative: args.tolerance,
                min_latency_ms: args.min_latency_change.as_secs_f64() * 1000.0,
            };
            let a = query::resolve(&conn, &args.a)?;
            let b = query::resolve(&conn, &args.b)?;
            let comparison = super::remember::compare_stored(&conn, a, b, tolerance)?;
            print!("{}", crate::output::compare::render(&comparison));
            Ok(if comparison.regressions() > 0 {
                crate::run::exit_code::REGRESSION
            } else {
                crate::run::exit_code::OK
            })
        }
    }
}

/// `host runs trend`.
fn trend(path: &Path, args: TrendArgs) -> anyhow::Result<i32> {
    let stat = args.stat.as_str();
    let conn = schema::open_existing(path)?;
    let mut points = Vec::new();
    for run in query::list(&conn, &args.filters.filter())? {
        let stored = match args.window {
            None => query::figure(&conn, run.id, &args.metric, stat)?,
            Some(_) => None,
        };
        // A window, or a statistic summary.json does not hold (`p(99.99)`), is
        // recomputed from the run's interval histograms, merged.
        let value = match stored {
            Some(v) => Some(v),
            None => crate::runs::series::merged(&conn, run.id, &args.metric, args.window)?
                .and_then(|h| crate::runs::series::stat_of(&h, stat)),
        };
        points.push(crate::runs::text::TrendPoint { run, value });
    }
    if !points.iter().any(|p| p.value.is_some()) && !points.is_empty() {
        crate::stderr::warn(format_args!(
            "no run of these has {} {stat}{}",
            args.metric,
            if args.window.is_some() {
                " in that window (windows are recomputed from trends' histograms only)"
            } else {
                ""
            }
        ));
    }
    print!("{}", crate::runs::text::trend(&args.metric, stat, &points));
    if let Some(file) = &args.html {
        let page = crate::runs::trend_page::render(&args.metric, stat, &points)?;
        std::fs::write(file, page)
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", file.display()))?;
        println!("\n  chart: {}", file.display());
    }
    Ok(0)
}

/// `host runs import DIR...`: each results folder, or each folder under DIR holding a
/// summary.json.
fn import(path: &Path, dirs: &[PathBuf]) -> anyhow::Result<i32> {
    let mut folders = Vec::new();
    for dir in dirs {
        if dir.join("summary.json").is_file() {
            folders.push(dir.clone());
            continue;
        }
        let entries = std::fs::read_dir(dir).map_err(|e| {
            anyhow::anyhow!("cannot read {}: {e} (give results folders)", dir.display())
        })?;
        let mut found: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.join("summary.json").is_file())
            .collect();
        if found.is_empty() {
            anyhow::bail!(
                "{} is no results folder (no summary.json) and holds none",
                dir.display()
            );
        }
        found.sort();
        folders.extend(found);
    }
    let mut conn = schema::open(path)?;
    let (mut new, mut known, mut failed) = (0, 0, 0);
    for folder in &folders {
        match crate::runs::record::record(&mut conn, folder, None) {
            Ok(r) if r.new => {
                new += 1;
                println!("  run {}: {}", r.id, folder.display());
            }
            Ok(r) => {
                known += 1;
                println!("  run {} (indexed already): {}", r.id, folder.display());
            }
            Err(e) => {
                failed += 1;
                crate::stderr::line(format_args!(
                    "error: cannot index {}: {e:#}",
                    folder.display()
                ));
            }
        }
    }
    println!(
        "\n  {new} runs indexed, {known} indexed already, {failed} failed, in {}",
        path.display()
    );
    Ok(if failed > 0 { 1 } else { 0 })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_percentile_is_a_statistic_and_nonsense_is_refused() {
        assert_eq!(stat_arg("p(95)").unwrap(), "p95");
        assert_eq!(stat_arg("med").unwrap(), "med");
        assert_eq!(stat_arg("p(99.99)").unwrap(), "p99.99");
        assert_eq!(stat_arg("p75").unwrap(), "p75");
        assert_eq!(stat_arg("p(75.0)").unwrap(), "p75");
        for bad in ["p(101)", "p(-1)", "p()", "pct", "95", "p(x)"] {
            let e = stat_arg(bad).unwrap_err();
            assert!(
                e.contains("unknown statistic") && e.contains("p(N)"),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn dates_are_prefixes_of_stored_starts_and_others_are_refused() {
        assert_eq!(date_arg("2026-12-04").unwrap(), "2026-12-04");
        assert_eq!(date_arg("2026-12-04 10:00").unwrap(), "2026-12-04T10:00");
        assert_eq!(
            date_arg("2026-12-04T10:00:30Z").unwrap(),
            "2026-12-04T10:00:30"
        );
        // A prefix sorts with the stored RFC 3339 starts as their times do.
        let start = "2026-12-04T10:00:30.5Z";
        assert!(start >= date_arg("2026-12-04T10:00").unwrap().as_str());
        assert!(start < date_arg("2026-12-05").unwrap().as_str());
        for bad in [
            "yesterday",
            "2026-13-01",
            "2026-02-30",
            "2026-12-4",
            "2026/12/04",
            "2026-12-04T25:00",
            "2026-12-04T10",
            "2026-12-04T10:00:30.5",
        ] {
            let e = date_arg(bad).unwrap_err();
            assert!(
                e.contains("invalid date") && e.contains("2026-12-04T10:00"),
                "{bad}: {e}"
            );
        }
    }
}
