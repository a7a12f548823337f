//! Removes the build-time `local:init/module-loader` import from a snapshotted
//! component: a stub component exporting it (every function traps) is composed in, so
//! the result imports only the contract and WASI (as componentize-qjs's `stubwasi` does).

use anyhow::{bail, Context, Result};
use wit_component::{dummy_module, embed_component_metadata, ComponentEncoder, StringEncoding};
use wit_parser::decoding::{decode, DecodedWasm};
use wit_parser::{Docs, ManglingAndAbi, Stability, World, WorldItem, WorldKey};

/// The import only the build needs.
const LOADER: &str = "local:init/module-loader";

/// `component` without its module-loader import.
pub(crate) fn stub_module_loader(component: &[u8]) -> Result<Vec<u8>> {
    let (resolve, world_id) = match decode(component).context("cannot decode the snapshot")? {
        DecodedWasm::Component(resolve, world) => (resolve, world),
        _ => bail!("the snapshot is not a component"),
    };
    let world = &resolve.worlds[world_id];
    let imports: indexmap::IndexMap<WorldKey, WorldItem> = world
        .imports
        .clone()
        .into_iter()
        .filter(|(key, _)| resolve.name_world_key(key) == LOADER)
        .collect();
    if imports.is_empty() {
        return Ok(component.to_vec());
    }
    let mut stub_resolve = resolve.clone();
    let stub_world = stub_resolve.worlds.alloc(World {
        name: "loader-stub".to_string(),
        imports: Default::default(),
        exports: imports,
        package: world.package,
        docs: Docs::default(),
        stability: Stability::default(),
        includes: Vec::new(),
        span: Default::default(),
    });
    let mut module = dummy_module(&stub_resolve, stub_world, ManglingAndAbi::Standard32);
    embed_component_metadata(&mut module, &stub_resolve, stub_world, StringEncoding::UTF8)?;
    let stub = ComponentEncoder::default()
        .module(&module)?
        .validate(true)
        .encode()
        .context("cannot encode the module-loader stub")?;
    let dir = std::env::temp_dir().join(format!(
        "host-js-compose-{}-{:x}",
        std::process::id(),
        rand::random::<u64>()
    ));
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let composed = (|| {
        let original = dir.join("original.wasm");
        std::fs::write(&original, component)?;
        std::fs::write(dir.join("stubs.wasm"), &stub)?;
        let config = wasm_compose::config::Config {
            dir: dir.clone(),
            definitions: vec!["stubs.wasm".into()],
            ..Default::default()
        };
        wasm_compose::composer::ComponentComposer::new(&original, &config)
            .compose()
            .context("cannot compose the module-loader stub in")
    })();
    let _ = std::fs::remove_dir_all(&dir);
    composed
}
