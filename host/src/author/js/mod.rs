//! k6 JavaScript scripts as plugins: `host build script.js` bundles the script (its
//! relative imports and the files it `open()`s), refuses what this host does not offer,
//! and turns it with the k6 layer (layer/, one JavaScript file per k6 module) into a
//! QuickJS component, cached by the hash of its inputs; `host run script.js` runs that
//! component as any plugin.

pub(crate) mod asyncs;
#[cfg(test)]
mod bridge;
pub(crate) mod browser_api;
pub(crate) mod bundle;
pub(crate) mod clauses;
pub(crate) mod colmap;
pub(crate) mod componentize;
pub(crate) mod exprs;
#[cfg(test)]
mod frontend_props;
pub(crate) mod fs_opens;
mod funcref_order;
pub(crate) mod known;
pub(crate) mod layer;
pub(crate) mod outside;
pub(crate) mod protos;
pub(crate) mod protosets;
pub(crate) mod prune;
pub(crate) mod remote;
pub(crate) mod scan;
pub(crate) mod specifiers;
pub(crate) mod srcmap;
pub(crate) mod streams_api;
pub(crate) mod stub;
pub(crate) mod throws;
pub(crate) mod tokens;
pub(crate) mod typescript;
pub(crate) mod whole;

use anyhow::{Context, Result};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Whether `path` names a script to build rather than a component: JavaScript, or
/// TypeScript as k6 runs it (types stripped at build, see `typescript`).
pub(crate) fn is_script(path: &Path) -> bool {
    matches!(
        path.extension().and_then(|e| e.to_str()),
        Some("js" | "mjs")
    ) || typescript::is_typescript(path)
}

/// The component to run for `path`: itself, or for a script the cached build of it.
pub(crate) fn plugin_path(path: &Path) -> Result<PathBuf> {
    plugin_path_with(path, &[])
}

/// As [`plugin_path`], with the run's `-e` variables, which the build reads where a
/// script names files by `__ENV` (k6/net/grpc's `client.load`).
pub(crate) fn plugin_path_with(path: &Path, env: &[(String, String)]) -> Result<PathBuf> {
    if is_script(path) {
        build_cached_with(path, env)
    } else {
        Ok(path.to_path_buf())
    }
}

/// The build's environment: the process's, overridden by `-e` (k6 gives a script both).
fn build_env(env: &[(String, String)]) -> BTreeMap<String, String> {
    let mut out: BTreeMap<String, String> = std::env::vars().collect();
    out.extend(env.iter().cloned());
    out
}

/// Builds `script` unless a build of the same inputs is cached; returns its path.
pub(crate) fn build_cached(script: &Path) -> Result<PathBuf> {
    build_cached_with(script, &[])
}

/// As [`build_cached`], with `-e` variables for the build (see [`plugin_path_with`]).
fn build_cached_with(script: &Path, env: &[(String, String)]) -> Result<PathBuf> {
    let (module, bundle) = module_for(script, &build_env(env))?;
    let runtime = componentize::chosen_runtime()?;
    let mut hasher = Sha256::new();
    hasher.update(env!("CARGO_PKG_VERSION"));
    // A build on a runtime built from source is another build (issue #53): its digest
    // is in the key, so the embedded one, an override and the vendored one never share
    // an entry (the vendored one is fixed per host version).
    if let Some(rt) = &runtime {
        hasher.update(b"runtime");
        hasher.update(Sha256::digest(rt.as_ref()));
        // Its components import only the interfaces the script reaches (`prune`) unless
        // `prune::KEEP_ENV` says otherwise: each way, and a build made before either
        // (importing all), is another entry.
        hasher.update(prune::key());
        // And their hot functions' references are placed first (`funcref_order`).
        hasher.update(funcref_order::KEY);
    }
    hasher.update(module.as_bytes());
    for (id, bytes) in &bundle.inputs {
        hasher.update(id.as_bytes());
        hasher.update((bytes.len() as u64).to_le_bytes());
        hasher.update(bytes);
    }
    let hash = hex::encode(hasher.finalize());
    let dir = crate::plugin::cache::cache_dir().join("js");
    let file = dir.join(format!("{}-{}.wasm", bundle.name, &hash[..16]));
    // Trusted as the compile cache trusts its entries (this user's, writable by no one
    // else, matching the digest written beside it): a component planted under the
    // script's name would otherwise run in its place, with its secrets and allowlist.
    crate::plugin::built_from::remember(script, &file);
    if crate::plugin::cache_entry::verified(&file) {
        return Ok(file);
    }
    let wasm = componentize_blocking(&module, runtime.as_deref())
        .with_context(|| format!("cannot build {}", script.display()))?;
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    // Not removed first: `store` renames over the entry, so a planted file is replaced,
    // never written through, and the entry never goes missing under another process
    // building the same script at once (which copied it out, `build_beside`, and used to
    // fail with "No such file or directory" when this removal came between its check
    // and its copy).
    crate::plugin::cache_entry::store(&file, &wasm);
    if crate::plugin::cache_entry::verified(&file) {
        return Ok(file);
    }
    // Another process building the same script at once (two runs of one script, the
    // workers of a distributed run on one machine) writes the same entry: its digest
    // and its component are two renames, so between them neither build's pair need
    // match. Its pair soon does; failing that, this
    // build goes under a name of this process's own.
    for _ in 0..RACE_WAITS {
        std::thread::sleep(RACE_WAIT);
        if crate::plugin::cache_entry::verified(&file) {
            return Ok(file);
        }
    }
    let own = dir.join(format!(
        "{}-{}.{}.wasm",
        bundle.name,
        &hash[..16],
        std::process::id()
    ));
    crate::plugin::built_from::remember(script, &own);
    crate::plugin::cache_entry::store(&own, &wasm);
    if crate::plugin::cache_entry::verified(&own) {
        return Ok(own);
    }
    anyhow::bail!(
        "cannot write the build of {} to {}: check that folder is yours and writable by \
         you alone",
        script.display(),
        dir.display()
    )
}

/// How often, and how long each time, a build whose cache entry another process was
/// writing at the same moment looks again for a matching pair (1 s in all).
const RACE_WAITS: u32 = 20;
/// The wait between two of those looks.
const RACE_WAIT: std::time::Duration = std::time::Duration::from_millis(50);

/// `host build script.js`: writes `<script>.wasm` beside the script.
pub(crate) fn build_beside(script: &Path) -> Result<PathBuf> {
    let built = build_cached(script)?;
    let out = script.with_extension("wasm");
    // Read, then written: an error names which side failed (the cache entry another
    // process replaced, or the file beside the script).
    let bytes = std::fs::read(&built).with_context(|| {
        format!(
            "cannot read the build of {} at {}",
            script.display(),
            built.display()
        )
    })?;
    std::fs::write(&out, bytes).with_context(|| format!("cannot write {}", out.display()))?;
    Ok(out)
}

/// The JavaScript `host build` evaluates for `script`: the k6 layer with the script's
/// bundle appended, one ES module importing the contract's interfaces. For tools that run
/// it outside the component, as the multi-VU prototype's driver does (issue #53,
/// `host/examples/js_multivu_ss.rs`).
pub fn module_text(script: &Path) -> Result<String> {
    Ok(module_for(script, &build_env(&[]))?.0)
}

/// The layer with the script's bundle appended: the layer's files the script's k6
/// imports need (`layer::text_for`), so a module the script does not import is not
/// built in its VUs.
fn module_for(script: &Path, env: &BTreeMap<String, String>) -> Result<(String, bundle::Bundle)> {
    let bundle = bundle::bundle(script, env)?;
    let k6_layer = layer::text_for(bundle.k6_modules.iter().map(String::as_str));
    let layer_lines = k6_layer.matches('\n').count();
    let js = bundle.js(layer_lines + 1);
    let mut module = String::with_capacity(k6_layer.len() + js.len() + 1);
    module.push_str(&k6_layer);
    if !k6_layer.ends_with('\n') {
        module.push('\n');
    }
    module.push_str(&js);
    Ok((module, bundle))
}

/// Runs the async build on a runtime of its own when called outside one.
fn componentize_blocking(module: &str, runtime: Option<&[u8]>) -> Result<Vec<u8>> {
    let wit = crate::author::sdk::SDK_FILES
        .iter()
        .find(|(n, _)| *n == "wit/scenario.wit")
        .expect("build.rs embeds the SDK's WIT")
        .1;
    let work = async {
        match runtime {
            Some(rt) => componentize::componentize_on(rt, module, prune::cuts()).await,
            None => componentize::componentize(wit, module).await,
        }
    };
    match tokio::runtime::Handle::try_current() {
        Ok(handle) => tokio::task::block_in_place(|| handle.block_on(work)),
        Err(_) => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?
            .block_on(work),
    }
}

#[cfg(test)]
mod tests {
    use crate::plugin::bindings::{WIT_PACKAGE, WIT_VERSION};

    /// The layer's own interface uses the contract's types by the version this host
    /// implements, and the layer imports it by the version `layer.wit` declares.
    #[test]
    fn the_layer_interface_names_this_contract_and_its_own_version() {
        use super::componentize::{LAYER_VERSION, LAYER_WIT};
        assert!(
            LAYER_WIT.contains(&format!("{WIT_PACKAGE}/types@{WIT_VERSION}.")),
            "layer.wit uses the contract @{WIT_VERSION}"
        );
        assert!(LAYER_WIT.contains(&format!("package loadtest:k6-layer@{LAYER_VERSION};")));
        let imports: Vec<&str> = super::layer::text()
            .lines()
            .filter(|l| l.starts_with("import ") && l.contains("loadtest:k6-layer/"))
            .collect();
        assert!(!imports.is_empty(), "the layer imports its own interface");
        for line in imports {
            assert!(
                line.contains(&format!("@{LAYER_VERSION}'")),
                "{line}: layer.wit is @{LAYER_VERSION}"
            );
        }
    }

    /// The layer imports the contract by its versioned name; a WIT bump that leaves
    /// the layer behind breaks every script's build ("module … is not bundled").
    #[test]
    fn the_k6_layer_imports_the_contract_this_host_implements() {
        let imports: Vec<&str> = super::layer::text()
            .lines()
            .filter(|l| l.starts_with("import ") && l.contains(WIT_PACKAGE))
            .collect();
        assert!(!imports.is_empty(), "the layer imports the contract");
        for line in imports {
            assert!(
                line.contains(&format!("@{WIT_VERSION}'")),
                "{line}: the contract is @{WIT_VERSION}"
            );
        }
    }
}
