//! Runs a sweep: each level a run of its own, with its results folder inside one sweep
//! folder; stops at the first failed level (unless told to go on), bisects between the
//! last pass and the first fail, and writes the outputs after every level, so that
//! Ctrl-C (or a crash) leaves `sweep.md` with the levels done. With `--stack` the
//! stack stays up across the levels and is removed at the end, Ctrl-C included.

use super::figures::{self, LevelFigures, Verdict};
use super::levels::{label, midpoint};
use super::model;
use super::report::{self, SweepResult};
use super::scale::Scaler;
use crate::config::{self, Overrides};
use crate::run::{self, RunRequest};
use anyhow::{anyhow, Context, Result};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// What a sweep is asked to do.
#[derive(Debug, Clone)]
pub(crate) struct SweepPlan {
    /// The plugin file.
    pub plugin: PathBuf,
    /// `--config run.toml`.
    pub config: Option<PathBuf>,
    /// `-e`, `--allow` and sampling flags, given to every level's run.
    pub overrides: Overrides,
    /// The levels, rising.
    pub levels: Vec<f64>,
    /// How long each level holds its load.
    pub hold: Duration,
    /// How long each level ramps up first.
    pub ramp: Duration,
    /// Bisections between the last pass and the first fail.
    pub refine: u32,
    /// `--continue`: run every level even after one failed.
    pub keep_going: bool,
    /// Folder under which the sweep folder is made.
    pub out: PathBuf,
    /// No progress lines from the levels' runs.
    pub quiet: bool,
    /// `--stack`: the Compose stack to bring up for the sweep, and whether to keep it.
    pub stack: Option<(crate::stack::up::StackFlags, bool)>,
}

/// How a sweep ended.
pub(crate) struct SweepOutcome {
    /// What sweep.json holds.
    pub result: SweepResult,
    /// The sweep folder.
    pub dir: PathBuf,
}

/// Runs the sweep. Ctrl-C stops it after the level running (which ends gracefully, as
/// any run does) and still writes the outputs.
pub(crate) async fn sweep(plan: SweepPlan) -> Result<SweepOutcome> {
    let inspected = run::inspect(&plan.plugin, config::Limits::default().memory_bytes).await?;
    let info = inspected.info;
    let source = merged_source(&info.default_config, plan.config.as_deref())?;
    let checked =
        config::build(source.clone(), &plan.overrides).map_err(|e| anyhow!("config error: {e}"))?;
    let scaler = Scaler::new(source, &checked)?;
    crate::output::check_writable(&plan.out)?;
    let dir = crate::files::new_dated_dir(&plan.out, &format!("sweep-{}", info.name), "sweep")?;

    let mut overrides = plan.overrides.clone();
    let stack = match &plan.stack {
        None => None,
        Some((flags, keep)) => {
            Some(super::stack::up(flags, plan.config.as_deref(), *keep, &mut overrides).await?)
        }
    };

    let interrupted = Arc::new(AtomicBool::new(false));
    let listener = tokio::spawn(watch_signals(interrupted.clone()));
    let mut sweep = Sweep {
        plan: &plan,
        overrides,
        scaler: &scaler,
        dir: &dir,
        result: SweepResult {
            schema: 1,
            plugin: info.name.clone(),
            unit: scaler.unit().into(),
            hold_s: plan.hold.as_secs_f64(),
            ramp_s: plan.ramp.as_secs_f64(),
            interrupted: false,
            levels: Vec::new(),
            model: model::build(&[], scaler.is_open()),
        },
        interrupted: &interrupted,
    };
    let outcome = sweep.run_all().await;
    listener.abort();
    // Removed whatever ended the sweep: its end, Ctrl-C or an error.
    if let Some(stack) = stack {
        stack.end().await;
    }
    sweep.result.interrupted = interrupted.load(Ordering::Relaxed)
        || sweep
            .result
            .levels
            .iter()
            .any(|l| l.verdict == Verdict::Interrupted);
    // Written whatever happened, so the levels done are never lost.
    sweep.write()?;
    outcome?;
    Ok(SweepOutcome {
        result: sweep.result,
        dir,
    })
}

/// The sweep under way.
struct Sweep<'a> {
    plan: &'a SweepPlan,
    /// The plan's overrides, pointed at the stack with `--stack`.
    overrides: Overrides,
    scaler: &'a Scaler,
    dir: &'a Path,
    result: SweepResult,
    interrupted: &'a AtomicBool,
}

impl Sweep<'_> {
    fn stopped(&self) -> bool {
        self.interrupted.load(Ordering::Relaxed)
            || self
                .result
                .levels
                .last()
                .is_some_and(|l| l.verdict == Verdict::Interrupted)
    }

    async fn run_all(&mut self) -> Result<()> {
        for &level in &self.plan.levels {
            if self.stopped() {
                return Ok(());
            }
            let verdict = self.level(level).await?;
            if matches!(verdict, Verdict::Fail { .. }) && !self.plan.keep_going {
                break;
            }
        }
        for _ in 0..self.plan.refine {
            if self.stopped() {
                return Ok(());
            }
            let bp = model::breakpoint(&self.result.levels);
            let (Some(passed), Some(failed)) = (bp.passed, bp.failed) else {
                break;
            };
            let mid = midpoint(passed, failed);
            let done = self.result.levels.iter().any(|l| l.level == mid);
            if done || mid <= passed || mid >= failed {
                break;
            }
            self.level(mid).await?;
        }
        Ok(())
    }

    /// Runs one level, records it, rewrites the outputs, and returns its verdict.
    async fn level(&mut self, level: f64) -> Result<Verdict> {
        let n = self.result.levels.len() + 1;
        let level_dir = self.dir.join(format!("level-{n:02}-{}", label(level)));
        crate::files::create_private_dir_all(&level_dir)
            .with_context(|| format!("cannot create {}", level_dir.display()))?;
        let table = self
            .scaler
            .level_config(level, self.plan.hold, self.plan.ramp);
        // The level folder keeps the config with its environment values shown as `***`;
        // the run reads the real one from a private folder removed after it.
        let record = toml::to_string(&config::secrets::redacted(&table))
            .context("cannot write the level's run config")?;
        crate::files::write_whole(&level_dir, "run.toml", record.as_bytes())
            .with_context(|| format!("cannot write {}", level_dir.join("run.toml").display()))?;
        let private = crate::files::private_temp_dir("host-sweep-level-")?;
        let text = toml::to_string(&table).context("cannot write the level's run config")?;
        crate::files::write_whole(private.path(), "run.toml", text.as_bytes())
            .with_context(|| format!("cannot write {}", private.path().display()))?;
        let config_path = private.path().join("run.toml");
        eprintln!(
            "sweep: level {n}: {} {} for {:.0} s",
            label(level),
            self.scaler.unit(),
            (self.plan.hold + self.plan.ramp).as_secs_f64()
        );
        let request = RunRequest {
            plugin: self.plan.plugin.clone(),
            config: Some(config_path),
            overrides: self.overrides.clone(),
            out: level_dir.clone(),
            quiet: self.plan.quiet,
            handle_signals: true,
            watch: None,
            live: Default::default(),
            remote: None,
        };
        let outcome = match run::run(request).await {
            Ok(outcome) => outcome,
            Err(e) => return Err(e.context(format!("level {} could not run", label(level)))),
        };
        let mut figures = figures::from_summary(
            level,
            self.scaler.is_open(),
            self.plan.ramp.as_secs_f64(),
            &outcome.summary,
            outcome.exit_code,
        );
        figures.results = outcome
            .results_dir
            .strip_prefix(self.dir)
            .unwrap_or(&outcome.results_dir)
            .display()
            .to_string();
        eprintln!("sweep: level {n}: {}", one_line(&figures));
        let verdict = figures.verdict.clone();
        self.result.levels.push(figures);
        self.write()?;
        Ok(verdict)
    }

    /// Rebuilds the model and writes sweep.json, sweep.md and sweep.html.
    fn write(&mut self) -> Result<()> {
        self.result.model = model::build(&self.result.levels, self.scaler.is_open());
        let json = serde_json::to_vec_pretty(&self.result)?;
        crate::files::write_whole(self.dir, "sweep.json", &json)
            .with_context(|| format!("cannot write sweep.json in {}", self.dir.display()))?;
        crate::files::write_whole(
            self.dir,
            "sweep.md",
            report::markdown(&self.result).as_bytes(),
        )
        .with_context(|| format!("cannot write sweep.md in {}", self.dir.display()))?;
        let html = super::html::render(&self.result)?;
        crate::files::write_whole(self.dir, "sweep.html", html.as_bytes())
            .with_context(|| format!("cannot write sweep.html in {}", self.dir.display()))?;
        Ok(())
    }
}

/// `throughput 398.2/s, p99 12.1 ms, errors 0.00%: pass`.
fn one_line(l: &LevelFigures) -> String {
    format!(
        "throughput {:.1}/s, p99 {}, errors {:.2}%: {}",
        l.throughput_per_s,
        l.http_req_duration
            .map_or("-".into(), |p| format!("{:.1} ms", p.p99)),
        l.error_rate * 100.0,
        l.verdict.text()
    )
}

/// Sets `flag` at Ctrl-C or SIGTERM. The level running has its own handler, which ends
/// it gracefully; this one keeps the next level from starting. (Once a signal has a
/// listener, the process no longer dies of it, so without this a Ctrl-C between two
/// levels would go unnoticed.)
async fn watch_signals(flag: Arc<AtomicBool>) {
    let mut signals = crate::signals::listen();
    loop {
        signals.next().await;
        if !flag.swap(true, Ordering::Relaxed) {
            eprintln!("sweep: interrupted; finishing the level running, then writing sweep.md");
        }
    }
}

/// The plugin's default config with the run config laid over it, `[data]` paths made
/// absolute (each level's config lives in a folder of its own).
fn merged_source(default_config: &str, path: Option<&Path>) -> Result<toml::Table> {
    let cwd = std::env::current_dir().context("cannot read the current folder")?;
    let file = path.map(|p| cwd.join(p));
    let files: Vec<&Path> = file.iter().map(PathBuf::as_path).collect();
    let mut merged = run::layered_source(default_config, &files)?;
    config::layers::resolve_paths(&mut merged, &cwd);
    Ok(merged)
}
