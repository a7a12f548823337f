//! Instances kept, not torn down, when the process ends right after its run.
//!
//! Tearing a wasm instance down gives its pages back one VU at a time (wasmtime's
//! pooling allocator resets each memory, stack and table slot with `madvise`): at the
//! end of a 10,000-VU run that was most of the last second's CPU, and with the VUs
//! ending on both VU threads at once every `madvise` also flushed the other core's
//! TLB (results/js.md, "10,000 VUs starting"). When the process exits right after the
//! run, the kernel frees the whole address space in one pass at exit, so that work
//! buys nothing.
//!
//! `host run` opens the graveyard ([`open`]); a VU dropped after that (its executor is
//! done with it) drops its state as before, in place, so every socket, WebSocket
//! session, browser context and counter ends when it did, and only the store, holding
//! an inert state, is kept until the process exits. Anything that runs several runs in
//! one process (tests, `host sweep`, a worker) never opens it: its VUs are torn down
//! as they always were.

use crate::plugin::state::{HostServices, VuState};
use std::sync::{Arc, Mutex, OnceLock};
use wasmtime::Store;

/// What is kept: the stores, and the services their inert states hold (none of the
/// run's: the run's services are dropped with the run, so its browsers still end).
pub(crate) struct Graveyard {
    services: Arc<HostServices>,
    buried: Mutex<Vec<Store<VuState>>>,
}

impl Graveyard {
    /// An empty graveyard whose inert states hold `services`.
    pub(crate) fn new(services: Arc<HostServices>) -> Self {
        Graveyard {
            services,
            buried: Mutex::new(Vec::new()),
        }
    }

    /// Drops `store`'s state now (in its place an inert one, holding nothing of the
    /// run's) and keeps the store with its instance.
    pub(crate) fn bury(&self, mut store: Store<VuState>) {
        let identity = store.data().identity.clone();
        let state = std::mem::replace(
            store.data_mut(),
            VuState::new(self.services.clone(), identity),
        );
        drop(state);
        self.buried
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(store);
    }

    /// How many stores are kept.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.buried.lock().unwrap_or_else(|e| e.into_inner()).len()
    }
}

static GRAVEYARD: OnceLock<Graveyard> = OnceLock::new();

/// Keeps the stores of VUs dropped from now on until the process exits; `services`
/// are what their inert states hold. For a process that exits after one run: a
/// process that runs again would keep every run's instances.
pub(crate) fn open(services: Arc<HostServices>) {
    let _ = GRAVEYARD.get_or_init(|| Graveyard::new(services));
}

/// Keeps `store` (its state dropped now) if the graveyard is open; drops the whole
/// store otherwise.
pub(crate) fn bury(store: Store<VuState>) {
    if let Some(graveyard) = GRAVEYARD.get() {
        graveyard.bury(store);
    }
}

#[cfg(test)]
mod tests {
    use super::Graveyard;
    use crate::plugin::state::VuState;
    use std::collections::BTreeMap;
    use std::sync::Arc;

    /// A buried store's own state is dropped at once (what it held of the run, here
    /// the run's services, is let go), while the store itself is kept, holding an
    /// inert state over the graveyard's services.
    #[test]
    fn a_buried_store_lets_go_of_the_run_and_is_kept() {
        let run = crate::run::inert_services().unwrap();
        let inert = crate::run::inert_services().unwrap();
        let engine = wasmtime::Engine::default();
        let identity = crate::run::setup_identity_for_tests(&BTreeMap::new());
        let store = wasmtime::Store::new(&engine, VuState::new(run.clone(), identity));
        assert_eq!(
            Arc::strong_count(&run),
            2,
            "the VU's state holds the run's services"
        );
        let graveyard = Graveyard::new(inert.clone());
        graveyard.bury(store);
        assert_eq!(Arc::strong_count(&run), 1, "the VU's own state was dropped");
        assert_eq!(graveyard.len(), 1, "the store is kept");
        assert_eq!(
            Arc::strong_count(&inert),
            3,
            "its inert state holds the graveyard's services"
        );
    }
}
