//! `run-control` (contract 0.3.3): a plugin stops the whole run (k6's
//! `exec.test.abort()`), through the same signals as a crossed `abort_on_fail` threshold.

use crate::control::StopReason;
use crate::plugin::bindings::loadtest::scenario::run_control as wit;
use crate::plugin::state::VuState;

/// Most bytes of an abort's reason kept (the rest is cut): the reason goes into the
/// summary, which a plugin must not grow without bound.
const MAX_REASON: usize = 1024;

impl wit::Host for VuState {
    fn abort(&mut self, reason: String) -> wasmtime::Result<()> {
        let mut reason = reason;
        if reason.len() > MAX_REASON {
            let mut cut = MAX_REASON;
            while !reason.is_char_boundary(cut) {
                cut -= 1;
            }
            reason.truncate(cut);
        }
        let control = &self.services.control;
        control.stop_with(StopReason::PluginAbort(format!("test.abort(): {reason}")));
        control.hard_stop.cancel();
        Ok(())
    }
}
