//! `run-control` (contract 0.3.3): a plugin stops the whole run (k6's
//! `exec.test.abort()`), through the same signals as a crossed `abort_on_fail` threshold.

use crate::control::{RunControl, StopReason};
use crate::plugin::bindings::loadtest::scenario::run_control as wit;
use crate::plugin::state::VuState;
use wasmtime::component::HasData;

/// Most bytes of an abort's reason kept (the rest is cut): the reason goes into the
/// summary, which a plugin must not grow without bound.
const MAX_REASON: usize = 1024;

/// What `run-control` reaches of a VU's store: the run's stop signals, nothing else.
pub(crate) struct RunControlView<'a> {
    /// The run's stop signals.
    pub(crate) control: &'a RunControl,
}

/// The `HasData` of `run-control`: its imports see a [`RunControlView`].
pub(crate) struct HasRunControl;

impl HasData for HasRunControl {
    type Data<'a> = RunControlView<'a>;
}

impl VuState {
    /// What `run-control` sees of the store.
    pub(crate) fn run_control_view(&mut self) -> RunControlView<'_> {
        RunControlView {
            control: &self.services.control,
        }
    }
}

impl wit::Host for RunControlView<'_> {
    fn abort(&mut self, reason: String) -> wasmtime::Result<()> {
        let mut reason = reason;
        if reason.len() > MAX_REASON {
            let mut cut = MAX_REASON;
            while !reason.is_char_boundary(cut) {
                cut -= 1;
            }
            reason.truncate(cut);
        }
        let control = self.control;
        control.stop_with(StopReason::PluginAbort(format!("test.abort(): {reason}")));
        control.hard_stop.cancel();
        Ok(())
    }
}
