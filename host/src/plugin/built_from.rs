//! Which script a component in the build cache was built from, in this process: an
//! error about the plugin (a `describe()` that looped in a k6 script's init code) names
//! the script the user wrote, not a file in the cache. The author module records each
//! build here; the plugin module, below it, reads it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Builds of this process: the component's path → the script's.
static BUILT_FROM: Mutex<BTreeMap<PathBuf, PathBuf>> = Mutex::new(BTreeMap::new());

/// Records that `built` is the build of `script`.
pub(crate) fn remember(script: &Path, built: &Path) {
    if let Ok(mut map) = BUILT_FROM.lock() {
        map.insert(built.to_path_buf(), script.to_path_buf());
    }
}

/// The script `component` was built from in this process, if it is a script's build.
pub(crate) fn script_of(component: &Path) -> Option<PathBuf> {
    BUILT_FROM.lock().ok()?.get(component).cloned()
}
