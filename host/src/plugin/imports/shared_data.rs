//! `shared-data` (contract 0.3.3): data sets a plugin computes once, in `describe`, for
//! every VU to read through `vu.data-get` (a JavaScript `SharedArray`). The host keeps
//! one copy for the run instead of one per VU.

use crate::plugin::bindings::loadtest::scenario::shared_data as wit;
use crate::plugin::state::{DataSets, Published, VuState};
use wasmtime::component::HasData;

/// Most bytes of records one plugin may publish, over all its sets: the same order as a
/// VU's memory cap, so a plugin cannot grow the host without bound.
pub(crate) const MAX_PUBLISHED_BYTES: usize = 1 << 30;

/// Why a plugin's data set is refused; the plugin gets the message (the JavaScript
/// `SharedArray` shim looks for "already exists" in it).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum PublishError {
    /// Called outside `describe`.
    #[error("shared-data.publish is only taken from describe()")]
    NotInDescribe,
    /// An empty or overlong name.
    #[error("a shared data set's name must be 1 to 256 bytes, not {0}")]
    NameLength(usize),
    /// The plugin's own set or a `[data]` set has that name.
    #[error("the data set `{0}` already exists")]
    Exists(String),
    /// Past [`MAX_PUBLISHED_BYTES`] in all.
    #[error(
        "the data set `{name}` ({bytes} bytes) would take the plugin's shared data \
         past {} MiB",
        MAX_PUBLISHED_BYTES >> 20
    )]
    TooLarge {
        /// The set's name.
        name: String,
        /// Its size.
        bytes: usize,
    },
}

/// What `shared-data` reaches of a VU's store: the sets it published, and the run's
/// `[data]` sets whose names it may not take.
pub(crate) struct SharedDataView<'a> {
    /// The sets published so far; `None` outside `describe`.
    pub(crate) published: &'a mut Option<Published>,
    /// The run's `[data]` sets.
    pub(crate) data: &'a DataSets,
}

/// The `HasData` of `shared-data`: its imports see a [`SharedDataView`].
pub(crate) struct HasSharedData;

impl HasData for HasSharedData {
    type Data<'a> = SharedDataView<'a>;
}

impl VuState {
    /// What `shared-data` sees of the store.
    pub(crate) fn shared_data_view(&mut self) -> SharedDataView<'_> {
        SharedDataView {
            published: &mut self.published,
            data: &self.services.data,
        }
    }
}

impl SharedDataView<'_> {
    /// Keeps `records` as the data set `name`, or says why not.
    fn publish_set(&mut self, name: String, records: Vec<String>) -> Result<(), PublishError> {
        let Some(published) = self.published.as_mut() else {
            return Err(PublishError::NotInDescribe);
        };
        if name.is_empty() || name.len() > 256 {
            return Err(PublishError::NameLength(name.len()));
        }
        if published.sets.contains_key(&name) || self.data.contains_key(&name) {
            return Err(PublishError::Exists(name));
        }
        let bytes: usize = records.iter().map(|r| r.len()).sum();
        if published.bytes.saturating_add(bytes) > MAX_PUBLISHED_BYTES {
            return Err(PublishError::TooLarge { name, bytes });
        }
        published.bytes += bytes;
        published.sets.insert(name, records);
        Ok(())
    }
}

impl wit::Host for SharedDataView<'_> {
    fn publish(
        &mut self,
        name: String,
        records: Vec<String>,
    ) -> wasmtime::Result<Result<(), String>> {
        Ok(self.publish_set(name, records).map_err(|e| e.to_string()))
    }
}
