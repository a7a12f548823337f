//! What every run-like command (`run`, `demo`, `coordinate`) does once its run is over:
//! print the summary, write `--summary-export`, say where the results are and which
//! files could not be written, record the run in the store of runs (and judge it
//! against a baseline), and pick the exit code.

use crate::run;

/// Prints a run's summary (before its results files are written).
pub(super) fn print_summary(summary: &crate::summary::Summary) {
    let text = crate::output::text::render(summary);
    print!("{}", crate::stderr::redact::redact(&text));
}

/// The summary with every secret a k6 script got (`k6/secrets`) redacted from its
/// text (check names, errors, tags...), before it is exported or stored; the results
/// folder's files are redacted in place ([`finish`]).
pub(super) fn redacted(mut outcome: run::RunOutcome) -> run::RunOutcome {
    if !crate::stderr::redact::active() {
        return outcome;
    }
    let clean = serde_json::to_string(&outcome.summary)
        .ok()
        .and_then(|json| serde_json::from_str(&crate::stderr::redact::redact(&json)).ok());
    if let Some(summary) = clean {
        outcome.summary = summary;
    }
    outcome
}

/// Writes `--summary-export FILE` (k6's shape) when asked; a failure joins the results
/// files that could not be written.
pub(super) fn export_summary(
    outcome: run::RunOutcome,
    path: Option<&std::path::Path>,
) -> run::RunOutcome {
    let mut outcome = redacted(outcome);
    if let Some(path) = path {
        if let Err(failure) = crate::output::k6_export::write(path, &outcome.summary) {
            outcome.write_failures.push(failure);
        } else if let Err(e) = crate::stderr::redact::redact_file(path) {
            outcome.write_failures.push(crate::output::WriteFailure {
                file: path.display().to_string(),
                error: format!("redacting its secrets: {e}"),
            });
        }
    }
    outcome
}

/// Prints where the results are and each file that could not be written; returns
/// the exit code: the run's own, or 1 when it passed but its results were not all
/// written (the run's own code is named beside the failure).
pub(super) fn finish(outcome: run::RunOutcome, remember: &super::remember::Remember) -> i32 {
    println!("\n  results: {}", outcome.results_dir.display());
    let mut outcome = redacted(outcome);
    if let Err(e) = crate::stderr::redact::redact_files(&outcome.results_dir) {
        outcome.write_failures.push(crate::output::WriteFailure {
            file: outcome.results_dir.display().to_string(),
            error: format!("redacting its secrets: {e}"),
        });
    }
    let code = super::remember::after_run(&outcome, remember);
    let outcome = run::RunOutcome {
        exit_code: code,
        ..outcome
    };
    if outcome.write_failures.is_empty() {
        return outcome.exit_code;
    }
    for f in &outcome.write_failures {
        crate::stderr::line(format_args!("error: cannot write {}: {}", f.file, f.error));
    }
    let run_said = match outcome.exit_code {
        run::exit_code::OK => "completed (exit code 0)".to_string(),
        code => format!(
            "ended with exit code {code} ({})",
            run::exit_code::meaning(code)
        ),
    };
    crate::stderr::line(format_args!(
        "error: {} of the results files could not be written to {}; the summary above is complete. The run itself {run_said}.",
        outcome.write_failures.len(),
        outcome.results_dir.display()
    ));
    if outcome.exit_code == run::exit_code::OK {
        1
    } else {
        outcome.exit_code
    }
}
