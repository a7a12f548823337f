//! The summary of a finished run, from what the run itself knows: the metrics, the
//! scenarios, the setup stage, the services' counts and its own warnings. What its
//! observers know (the sampled resources, the distributed workers, the stack's
//! events) they add themselves.

use super::observe::Scope;
use super::plan::Plan;
use super::setup::Setup;
use crate::executor::ExecutorReport;
use crate::metrics::Aggregator;
use crate::metrics::SoFar;
use crate::plugin::PluginInfo;
use crate::summary::{self, Summary};
use std::collections::BTreeMap;
use std::time::Duration;

/// The summary with its threshold verdicts, the setup stage and the services' counts.
pub(super) fn summary(
    info: &PluginInfo,
    setup: &Setup,
    scope: &Scope<'_>,
    aggregator: &Aggregator,
    reports: &BTreeMap<String, ExecutorReport>,
    elapsed: Duration,
) -> Summary {
    let mut summary = Summary::build(summary::SummaryInput {
        info,
        plugin: &setup.plugin.meta,
        config: scope.config,
        started_at: setup.started_at,
        elapsed,
        aggregator,
        registry: scope.registry,
        contexts: scope.contexts,
        reports,
        errors: &setup.errors,
        stop_reason: setup.control.reason(),
        in_flight: setup.services.net.in_flight.get_signed(),
        net_warnings: setup
            .services
            .net
            .warnings()
            .into_iter()
            .chain(setup.services.warnings())
            .collect(),
    });
    let view = SoFar {
        totals: aggregator,
        registry: scope.registry,
        elapsed,
    };
    summary.thresholds = scope.thresholds.finish(&view);
    summary.setup_data = Some(setup.data.to_string());
    summary.setup = match &setup.apart {
        Some(apart) => summary::setup::summarize(&apart.drain(), false),
        None => summary::setup::summarize(aggregator.totals(), true),
    };
    summary.log = setup.services.log.counts();
    summary.tls = setup.services.net.tls.summary();
    summary.connections = setup.services.net.connections.summary();
    summary.grpc_failures = setup.services.net.grpc_failures.summary();
    summary
}

/// The run's own warnings, after its observers': the plugin's log, the bounds the
/// plugin reached, descriptors run out during the run, and the plan's.
pub(super) fn run_warnings(summary: &mut Summary, setup: &Setup, plan: &Plan) {
    summary
        .warnings
        .extend(summary.log.warning(&plan.config.limits.log));
    summary.warnings.extend(setup.services.bound_warnings());
    summary.warnings.extend(crate::net::descriptors::warning(
        crate::net::descriptors::exhausted_count() - plan.descriptors_exhausted,
    ));
    summary.warnings.extend(plan.warnings.iter().cloned());
}

/// Says the verdict's news on stderr: the failure of a run that measured nothing (once:
/// the thresholds without samples are explained by it), else each threshold's warning.
pub(super) fn say_verdict(summary: &mut Summary) {
    match &summary.failure {
        Some(failure) => {
            crate::thresholds::eval::blame_missing_samples_on_the_failure(&mut summary.thresholds);
            crate::stderr::line(format_args!("error: the run measured nothing: {failure}"));
        }
        None => {
            for warning in crate::thresholds::warnings(&summary.thresholds) {
                crate::stderr::warn(warning);
            }
        }
    }
}
