//! Turns for tests that must not overlap. In one test binary, tests of different
//! files run side by side in one process; the locks that each file kept for its own
//! tests are kept here, one per shared resource, so that tests of different files that
//! need the same resource take turns too.

use tokio::sync::Mutex;

/// Tests whose assertions count or time what the machine does (open-model runs, pairs
/// of runs compared for significance, sweeps) and tests that load the machine for
/// seconds (a million arrivals a second, a saturated generator): one at a time, so
/// that their runs do not measure each other on a small, shared CI machine. In one
/// binary a test of one file can run beside the last test of the file before it, which
/// separate binaries never did.
pub static MEASURING: Mutex<()> = Mutex::const_new(());

/// Tests that start Chromium and watch a short run: two at once on a small machine
/// can leave a run over before a page has opened.
pub static BROWSER: Mutex<()> = Mutex::const_new(());

/// Tests that sample containers' stats: the engine's stats stream stalls while it
/// starts containers for a test beside them, and load beside them takes the cores
/// their figures are checked against.
pub static DOCKER_HEAVY: Mutex<()> = Mutex::const_new(());
