//! The outcome of one call into the guest, typed: the export's own error or a trap
//! with its cause. Every call site (setup, init, iteration, teardown) reads a call's
//! result through [`outcome`], so the classification of traps is written once.

use super::state::VuState;
use super::trap::{classify_trap, TrapCause};

/// Why a call into the guest did not return a value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum GuestCallError {
    /// The export returned `Err(message)`.
    #[error("failed: {0}")]
    Returned(String),
    /// The call trapped (panic, deadline, CPU or memory budget, stack, other).
    #[error("trapped: {message}")]
    Trapped {
        /// What stopped it.
        cause: TrapCause,
        /// The most useful text about it.
        message: String,
    },
}

/// Reads a guest call's result: its value, the export's error, or the trap classified
/// against the VU's state (budget, panic message, output).
pub(crate) fn outcome<T>(
    result: wasmtime::Result<Result<T, String>>,
    state: &VuState,
) -> Result<T, GuestCallError> {
    match result {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(message)) => Err(GuestCallError::Returned(message)),
        Err(trap) => {
            let (cause, message) = classify_trap(&trap, state);
            Err(GuestCallError::Trapped { cause, message })
        }
    }
}
