//! `vu`: identity, think time, environment, logging, shared data and panic reports,
//! implemented on [`VuView`]: who the VU is and what it may spend, nothing of its
//! connections.

use crate::plugin::bindings::loadtest::scenario::vu as wit;
use crate::plugin::budget::CallBudget;
use crate::plugin::log::{Level, LogBudget};
use crate::plugin::state::{HostServices, VuIdentity, VuState, MAX_SLEEP};
use std::time::Duration;
use wasmtime::component::HasData;

/// The reserved `vu.env` name under which a k6 script's layer reads its scenario's
/// executor (`exec.scenario.executor`); layer/execution.js asks for it.
pub(crate) const EXECUTOR_ENV: &str = "\u{0}k6-executor\u{0}";

/// What the `vu` imports reach of a VU's store.
pub(crate) struct VuView<'a> {
    /// Who the VU is: ids, scenario, env, where its iteration numbers come from.
    pub(crate) identity: &'a VuIdentity,
    /// The VU's iteration number.
    pub(crate) iteration: u64,
    /// The iteration's number in its scenario, taken on first ask.
    pub(crate) iteration_in_scenario: &'a mut Option<u64>,
    /// The run's log sink, data sets and cut-sleep count.
    pub(crate) services: &'a HostServices,
    /// The call's budget: a sleep gives the thread back, and is noted.
    pub(crate) budget: &'a mut CallBudget,
    /// The VU's log lines left this second.
    pub(crate) log_budget: &'a mut LogBudget,
    /// Where the plugin's panic hook leaves its message.
    pub(crate) panic_message: &'a mut Option<String>,
}

/// The `HasData` of `vu`: its imports see a [`VuView`].
pub(crate) struct HasVu;

impl HasData for HasVu {
    type Data<'a> = VuView<'a>;
}

impl VuState {
    /// What the `vu` imports see of the store.
    pub(crate) fn vu_view(&mut self) -> VuView<'_> {
        VuView {
            identity: &self.identity,
            iteration: self.iteration,
            iteration_in_scenario: &mut self.iteration_in_scenario,
            services: &self.services,
            budget: &mut self.budget,
            log_budget: &mut self.log_budget,
            panic_message: &mut self.panic_message,
        }
    }
}

impl VuView<'_> {
    /// The iteration's number in its scenario, taken from the scenario's count on the
    /// iteration's first ask (`vu.info`, or the k6 layer's `vu.numbers`) and the same
    /// on every later one.
    pub(crate) fn iteration_in_scenario(&mut self) -> u64 {
        let numbers = &self.identity.numbers;
        *(self.iteration_in_scenario)
            .get_or_insert_with(|| numbers.as_ref().map_or(0, |n| n.take()))
    }
}

impl wit::Host for VuView<'_> {
    fn info(&mut self) -> wasmtime::Result<wit::VuInfo> {
        Ok(wit::VuInfo {
            vu_id: self.identity.vu_id,
            vu_id_in_scenario: self.identity.vu_id_in_scenario,
            iteration: self.iteration,
            iteration_in_scenario: self.iteration_in_scenario(),
            scenario: self.identity.scenario.to_string(),
        })
    }

    async fn sleep(&mut self, ms: u64) {
        let asked = Duration::from_millis(ms);
        if asked > MAX_SLEEP {
            self.services.sleep_cut(ms, MAX_SLEEP);
        }
        let sleep = std::pin::pin!(tokio::time::sleep(asked.min(MAX_SLEEP)));
        self.budget.wait(sleep).await;
    }

    fn env(&mut self, name: String) -> wasmtime::Result<Option<String>> {
        // A k6 script's `k6/secrets` asks under a reserved name no variable can have.
        if let Some(secret) = crate::plugin::secrets::lookup(&name) {
            return Ok(secret);
        }
        // And `exec.scenario.executor` under another (a NUL first, as no variable has).
        if name == EXECUTOR_ENV {
            return Ok(Some(self.identity.executor.to_string()));
        }
        // And `exec.instance`, `exec.scenario.startTime/progress` under a third: the
        // live numbers, computed only now (setup and teardown are in no scenario).
        if name == crate::plugin::exec_live::LIVE_ENV {
            let scenario = match self.identity.executor {
                "" => "",
                _ => &self.identity.scenario,
            };
            return Ok(Some(self.services.exec.json(scenario)));
        }
        Ok(self.identity.env.get(&name).cloned())
    }

    fn log(&mut self, level: wit::LogLevel, message: String) -> wasmtime::Result<()> {
        let level = match level {
            wit::LogLevel::Trace => Level::Trace,
            wit::LogLevel::Debug => Level::Debug,
            wit::LogLevel::Info => Level::Info,
            wit::LogLevel::Warn => Level::Warn,
            wit::LogLevel::Error => Level::Error,
        };
        self.services.log.write(
            self.log_budget,
            &self.identity.scenario,
            self.identity.vu_id,
            level,
            &message,
        );
        Ok(())
    }

    fn data_len(&mut self, name: String) -> wasmtime::Result<Option<u64>> {
        Ok(self.services.data.get(&name).map(|d| d.len() as u64))
    }

    fn data_get(&mut self, name: String, index: u64) -> wasmtime::Result<Option<String>> {
        Ok(self
            .services
            .data
            .get(&name)
            .and_then(|d| d.get(index as usize))
            .cloned())
    }

    fn report_panic(&mut self, message: String) -> wasmtime::Result<()> {
        *self.panic_message = Some(message);
        Ok(())
    }
}
