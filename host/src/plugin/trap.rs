//! Why a call into the guest trapped: the cause (panic, deadline, CPU, memory, stack)
//! read from the VU's state and the trap, and the most useful text about it.

use super::budget;
use super::state::VuState;

/// What stopped a plugin call that trapped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrapCause {
    /// A Rust panic (reported by the SDK's hook).
    Panic,
    /// The host's wall-clock deadline for the call.
    Deadline,
    /// The host's CPU budget for the call.
    Cpu,
    /// Linear memory ran out (the memory cap).
    Memory,
    /// The call stack overflowed.
    Stack,
    /// Any other trap.
    Other,
}

/// Why a call trapped, and the most useful text about it.
pub(crate) fn classify_trap(e: &wasmtime::Error, state: &VuState) -> (TrapCause, String) {
    use crate::config::format_duration;
    use budget::Exceeded;
    if let Some(exceeded) = state.budget.exceeded {
        return match exceeded {
            Exceeded::Deadline(d) => (
                TrapCause::Deadline,
                format!("call ran longer than its deadline ({})", format_duration(d)),
            ),
            Exceeded::Cpu(d) => (
                TrapCause::Cpu,
                format!(
                    "plugin computed for more than its CPU budget ({}) in one call",
                    format_duration(d)
                ),
            ),
        };
    }
    if state.panic_message.is_some() {
        return (TrapCause::Panic, trap_message(e, state));
    }
    let printed = state.output.text();
    if e.downcast_ref::<wasmtime::Trap>() == Some(&wasmtime::Trap::StackOverflow) {
        return (
            TrapCause::Stack,
            "call stack exhausted (unbounded recursion?)".into(),
        );
    }
    if let Some(line) = printed
        .lines()
        .rev()
        .find(|l| l.contains("memory allocation of"))
    {
        return (TrapCause::Memory, format!("out of memory: {}", line.trim()));
    }
    // A k6 script's build cuts the host functions the script cannot reach
    // (author/js/prune.rs): a call that got there anyway says which.
    if let Some(message) = e
        .downcast_ref::<wasmtime::WasmBacktrace>()
        .and_then(|t| t.frames().first()?.func_name())
        .and_then(cut_call_message)
    {
        return (TrapCause::Other, message);
    }
    if let Some(function) = recursing_function(e) {
        // Rust keeps its stack in linear memory; overflowing it shows up as an
        // out-of-bounds access deep inside one function calling itself.
        return (
            TrapCause::Stack,
            format!("stack overflow: `{function}` recursed until the plugin's stack ran out"),
        );
    }
    (TrapCause::Other, trap_message(e, state))
}

/// What the name of a guest function standing for a cut host import starts with (then
/// `interface#function`): a k6 script's build cuts the host functions the script cannot
/// reach (author/js/prune.rs names its stubs so), and a trap in one is told as the call
/// it was, not as a bare `unreachable`.
pub(crate) const CUT_MARK: &str = "loadtest-cut-import:";

/// What a VU's error says when the function that trapped (`name`, the innermost
/// frame's) stands for a cut host import; `None` for any other function.
fn cut_call_message(name: &str) -> Option<String> {
    let what = name.strip_prefix(CUT_MARK)?;
    Some(format!(
        "the script called {what}, a host function its build left out: it imports no \
         k6 module that uses it (a computed name through eval?); \
         LOADTEST_JS_KEEP_IMPORTS=1 builds with every host interface"
    ))
}

/// The function that fills the whole captured backtrace, if the trap came from
/// unbounded recursion.
fn recursing_function(e: &wasmtime::Error) -> Option<String> {
    let trace = e.downcast_ref::<wasmtime::WasmBacktrace>()?;
    let frames = trace.frames();
    if frames.len() < 16 {
        return None;
    }
    let name = frames[frames.len() / 2].func_name()?;
    let same = frames
        .iter()
        .filter(|f| f.func_name() == Some(name))
        .count();
    (same * 4 >= frames.len() * 3).then(|| format!("{:#}", rustc_demangle::demangle(name)))
}

/// The most useful text about a trap: the plugin's panic report, else the trap with
/// what the plugin last printed.
pub(crate) fn trap_message(e: &wasmtime::Error, state: &VuState) -> String {
    if let Some(panic) = &state.panic_message {
        return panic.clone();
    }
    let trap = e
        .downcast_ref::<wasmtime::Trap>()
        .map(|t| t.to_string())
        .unwrap_or_else(|| {
            // The whole reason (`{:#}`: `{}` omits a trap's), its first line that says
            // something; never an empty message.
            format!("{e:#}")
                .lines()
                .map(str::trim)
                .find(|l| !l.is_empty())
                .unwrap_or("the plugin trapped and the runtime gave no reason")
                .to_string()
        });
    let printed = state.output.text();
    let last_line = printed.lines().rev().find(|l| !l.trim().is_empty());
    match last_line {
        Some(line) => format!("{trap} (plugin output: {line})"),
        None => trap,
    }
}
