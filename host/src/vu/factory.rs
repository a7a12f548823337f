//! Makes VUs: gives each its identity (numbered across the run and within its scenario,
//! with the scenario's environment and tags) and runs instantiate + `init`. The run
//! uses it for the VUs made before the start; arrival-rate executors use it to grow
//! their pool while running. Under an execution segment the numbers are the whole
//! test's (the segment's stripe of them), so no two processes number a VU alike.

use crate::config::{ExecutionTuple, ScenarioConfig};
use crate::metrics::{Recorder, TagSet};
use crate::plugin::numbers::IterationNumbers;
use crate::plugin::state::VuIdentity;
use crate::vu::{Vu, VuContext};
use anyhow::Result;
use futures::StreamExt;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// Makes the VUs of one scenario.
pub struct VuFactory {
    ctx: Arc<VuContext>,
    /// Shared by every scenario's factory, so VU ids are unique in the run.
    next_vu_id: Arc<AtomicU64>,
    next_in_scenario: AtomicU64,
    /// The scenario's iteration numbers, shared by its VUs.
    numbers: Arc<IterationNumbers>,
    scenario: Arc<str>,
    /// The scenario's executor, for k6's `exec.scenario.executor`.
    executor: &'static str,
    /// The run's execution segment: maps this process's numbers to the whole test's.
    segment: ExecutionTuple,
    tags: TagSet,
    env: Arc<BTreeMap<String, String>>,
}

impl VuFactory {
    /// Factories for every scenario of a run, in order, sharing one VU numbering.
    pub fn for_scenarios(
        ctx: &Arc<VuContext>,
        run_env: &BTreeMap<String, String>,
        scenarios: &[ScenarioConfig],
    ) -> Vec<Arc<VuFactory>> {
        let next_vu_id = Arc::new(AtomicU64::new(1));
        scenarios
            .iter()
            .map(|scenario| {
                let mut env = run_env.clone();
                env.extend(scenario.env.clone());
                let tags = TagSet::from_pairs(
                    scenario
                        .tags
                        .iter()
                        .map(|(k, v)| (k.as_str(), v.as_str()))
                        .chain([("scenario", scenario.name.as_str())]),
                );
                Arc::new(VuFactory {
                    ctx: ctx.clone(),
                    next_vu_id: next_vu_id.clone(),
                    next_in_scenario: AtomicU64::new(1),
                    numbers: Arc::new(IterationNumbers::new(scenario.iteration_stripe())),
                    scenario: Arc::from(scenario.name.as_str()),
                    executor: scenario.executor.name(),
                    segment: scenario.segment.clone(),
                    tags,
                    env: Arc::new(env),
                })
            })
            .collect()
    }

    /// The tags every sample of this scenario carries (its own plus `scenario`).
    pub fn tags(&self) -> &TagSet {
        &self.tags
    }

    /// Where the scenario's samples go.
    pub fn recorder(&self) -> &Arc<Recorder> {
        &self.ctx.services.recorder
    }

    /// The identity of the next VU; numbers are taken even if making it then fails.
    fn next_identity(&self) -> VuIdentity {
        // Numbers from 1: the local n-th is the stripe's (n − 1)-th index, plus 1.
        let global = |local: u64| {
            if self.segment.is_full() {
                local
            } else {
                self.segment.global(local - 1) + 1
            }
        };
        VuIdentity {
            vu_id: global(self.next_vu_id.fetch_add(1, Ordering::Relaxed)),
            vu_id_in_scenario: global(self.next_in_scenario.fetch_add(1, Ordering::Relaxed)),
            scenario: self.scenario.clone(),
            executor: self.executor,
            tags: self.tags.clone(),
            env: self.env.clone(),
            numbers: Some(self.numbers.clone()),
        }
    }

    /// Makes one VU (instantiate + `init`).
    pub async fn make(&self) -> Result<Vu> {
        Vu::new(self.ctx.clone(), self.next_identity()).await
    }

    /// Makes `count` VUs, `concurrency` at a time, before the start; the first failure
    /// is returned. Once `give_up` is cancelled (an `init` ran out of its budget), the
    /// VUs still initialising are handed over without an instance: each runs `init` on
    /// its first turn in the run, cut off at the scenario's end, instead of holding
    /// the start one budget after another.
    ///
    /// They are made here, in the caller's one task, not on the VU threads: measured
    /// on this 2-core VM, VUs made on both cores at once cost up to 2.5 × the start's
    /// CPU for no shorter start, each copy-on-write fault of one core's VU sending the
    /// other core a TLB-shootdown interrupt (results/js.md, "10,000 VUs starting").
    pub async fn make_many(
        &self,
        count: u64,
        concurrency: usize,
        give_up: &CancellationToken,
    ) -> Result<Vec<Vu>> {
        // Identities are taken up front so VU ids follow the order of the scenarios.
        let mut identities = (0..count).map(|_| self.next_identity()).collect::<Vec<_>>();
        if identities.is_empty() {
            return Ok(Vec::new());
        }
        // The first VU alone, on a core of its own: init code that loops then runs out
        // of its CPU budget in that budget's time, and gives up the others before they
        // start; begun together, 64 looping VUs shared two cores and each took 32
        // budgets of wall time to run out.
        let rest = identities.split_off(1);
        let first = Vu::before_start(self.ctx.clone(), identities.remove(0), give_up).await;
        let mut vus: Vec<Result<Vu>> = vec![first];
        vus.extend(
            futures::stream::iter(rest)
                .map(|id| Vu::before_start(self.ctx.clone(), id, give_up))
                .buffer_unordered(concurrency.max(1))
                .collect::<Vec<_>>()
                .await,
        );
        vus.into_iter().collect()
    }

    /// Records a VU that could not be made while the scenario ran, like a failed
    /// iteration, so it reaches the summary's plugin errors.
    pub fn report_failure(&self, error: &anyhow::Error) {
        self.ctx.errors.failure(
            crate::vu::errors::ErrorKind::Error,
            &self.scenario,
            &format!("{error:#}"),
        );
    }
}
