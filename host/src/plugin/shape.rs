//! What one instance of a component takes from the pooling allocator: core instances,
//! memories and tables. A Rust plugin is one core module (plus WASI adapter shims); a
//! Python one (componentize-py) links CPython, libc and more as separate core modules,
//! so the pool is sized from the file, not from a guess that fits Rust only.

use wasmparser::{Parser, Payload};

/// Pool slots one instance of a component needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PoolNeeds {
    /// Core instances (each core module instantiated).
    pub core_instances: u32,
    /// Linear memories defined by its core modules.
    pub memories: u32,
    /// Tables defined by its core modules.
    pub tables: u32,
}

impl Default for PoolNeeds {
    /// What the host sized its pool for before reading plugins: enough for a Rust plugin.
    fn default() -> Self {
        Self {
            core_instances: 8,
            memories: 1,
            tables: 4,
        }
    }
}

impl PoolNeeds {
    /// Counts what `bytes` needs, never less than the default (so a file that does not
    /// parse gets the pool it always had; loading it reports the real error).
    pub(crate) fn of(bytes: &[u8]) -> PoolNeeds {
        let mut counted = PoolNeeds {
            core_instances: 0,
            memories: 0,
            tables: 0,
        };
        let mut nested_components = 0u32;
        for payload in Parser::new(0).parse_all(bytes) {
            match payload {
                // Only instantiations take a pool slot; instances bundled from
                // exports are views of others.
                Ok(Payload::InstanceSection(s)) => {
                    counted.core_instances += s
                        .into_iter()
                        .filter(|i| matches!(i, Ok(wasmparser::Instance::Instantiate { .. })))
                        .count() as u32
                }
                Ok(Payload::ComponentSection { .. }) => nested_components += 1,
                Ok(Payload::MemorySection(s)) => counted.memories += s.count(),
                Ok(Payload::TableSection(s)) => counted.tables += s.count(),
                Ok(_) => {}
                Err(_) => break,
            }
        }
        // Calls between nested components go through adapter modules that wasmtime
        // makes and instantiates with each instance, which no section of the file
        // counts: one slot per nested component covers them. Measured: a k6 script's
        // component (QuickJS, two nested components) counts 8 instantiations and takes
        // 9 slots, so a pool sized for 8 ran out near 30 VUs.
        let core_instances = counted.core_instances + nested_components;
        let floor = PoolNeeds::default();
        PoolNeeds {
            core_instances: core_instances.max(floor.core_instances),
            memories: counted.memories.max(floor.memories),
            tables: counted.tables.max(floor.tables),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn junk_gets_the_default_pool() {
        assert_eq!(PoolNeeds::of(b"junk"), PoolNeeds::default());
    }

    #[test]
    fn a_rust_plugin_keeps_the_pool_it_always_had() {
        // Capacity figures (10,000 VUs per process) were measured with this pool.
        let path = std::path::Path::new(env!("HOST_PLUGINS_DIR")).join("hello.wasm");
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(PoolNeeds::of(&bytes), PoolNeeds::default());
    }
}
