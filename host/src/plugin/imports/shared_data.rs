//! `shared-data` (contract 0.3.3): data sets a plugin computes once, in `describe`, for
//! every VU to read through `vu.data-get` (a JavaScript `SharedArray`). The host keeps
//! one copy for the run instead of one per VU.

use crate::plugin::bindings::loadtest::scenario::shared_data as wit;
use crate::plugin::state::VuState;

/// Most bytes of records one plugin may publish, over all its sets: the same order as a
/// VU's memory cap, so a plugin cannot grow the host without bound.
pub(crate) const MAX_PUBLISHED_BYTES: usize = 1 << 30;

impl wit::Host for VuState {
    fn publish(
        &mut self,
        name: String,
        records: Vec<String>,
    ) -> wasmtime::Result<Result<(), String>> {
        let Some(published) = self.published.as_mut() else {
            return Ok(Err(
                "shared-data.publish is only taken from describe()".to_string()
            ));
        };
        if name.is_empty() || name.len() > 256 {
            return Ok(Err(format!(
                "a shared data set's name must be 1 to 256 bytes, not {}",
                name.len()
            )));
        }
        if published.sets.contains_key(&name) || self.services.data.contains_key(&name) {
            return Ok(Err(format!("the data set `{name}` already exists")));
        }
        let bytes: usize = records.iter().map(|r| r.len()).sum();
        if published.bytes.saturating_add(bytes) > MAX_PUBLISHED_BYTES {
            return Ok(Err(format!(
                "the data set `{name}` ({bytes} bytes) would take the plugin's shared data \
                 past {} MiB",
                MAX_PUBLISHED_BYTES >> 20
            )));
        }
        published.bytes += bytes;
        published.sets.insert(name, records);
        Ok(Ok(()))
    }
}
