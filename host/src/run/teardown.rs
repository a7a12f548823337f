//! The plugin's last calls, in the instance `setup()` ran in: `teardown()`, then its
//! own summary (k6's `handleSummary`) once the results are written. A worker leaves
//! both to its coordinator.

use super::request::{RunOutcome, RunRequest};
use super::setup::Setup;
use super::stage;
use crate::config::RunConfig;
use crate::plugin;

/// Teardown: `teardown()` gets the setup data, as in k6, even after an interrupted run;
/// its failure is a warning, since the results are already gathered.
pub(super) async fn teardown(request: &RunRequest, config: &RunConfig, setup: &mut Setup) {
    if is_worker(request) {
        // teardown() runs once, at the coordinator.
        return;
    }
    setup.store.data_mut().identity = stage::identity(&config.env, "teardown");
    setup
        .store
        .data_mut()
        .budget
        .start_call(config.limits.setup_timeout);
    let result = setup
        .instance
        .loadtest_scenario_plugin()
        .call_teardown(&mut setup.store, &setup.data)
        .await;
    if let Err(e) = plugin::outcome(result, setup.store.data()) {
        crate::stderr::warn(format_args!("teardown() {e}"));
    }
}

/// The plugin's own summary (k6's `handleSummary`), when it exports one: called after
/// the results are written, in the instance `setup()` and `teardown()` ran in, with the
/// summary in k6's shape; what it returns is printed or written into the results
/// folder. Its failure is a results file that could not be written, so a run that
/// passed exits 1 and says why. A worker leaves it to the coordinator, as `teardown()`.
pub(super) async fn handle_summary(
    request: &RunRequest,
    setup: &mut Setup,
    timeout: std::time::Duration,
    outcome: &mut RunOutcome,
) {
    let Some(export) = setup.plugin.summary else {
        return;
    };
    if is_worker(request) {
        return;
    }
    let data = crate::output::k6_export::handle_summary_data(&outcome.summary);
    // The identity stays teardown's: anything it records is tagged `stage=teardown`.
    setup.store.data_mut().budget.start_call(timeout);
    let called =
        plugin::summary::call(&mut setup.store, &setup.handle, &export, &data.to_string()).await;
    match called {
        Ok(renderings) => {
            let failures = crate::output::handled::deliver(&renderings, &outcome.results_dir);
            outcome.write_failures.extend(failures);
        }
        Err(e) => outcome.write_failures.push(crate::output::WriteFailure {
            file: "the plugin's own summary (handleSummary)".into(),
            error: e.to_string(),
        }),
    }
}

/// Whether this run is a worker's, whose `setup()` ran at its coordinator (and so do
/// `teardown()` and the plugin's own summary).
fn is_worker(request: &RunRequest) -> bool {
    request
        .remote
        .as_ref()
        .is_some_and(|r| r.0.given_setup_data().is_some())
}
