//! Recognises what a plugin file is before compiling it, so that a wrong file gets a
//! message that says what it is and what was expected.

use super::bindings::{WIT_PACKAGE, WIT_VERSION};
use anyhow::{bail, Result};
use std::path::Path;
use wasmtime::component::types::ComponentItem;
use wasmtime::component::Component;
use wasmtime::Engine;

/// Checks the file's header: a component, not a core module or another file.
pub(crate) fn check_header(path: &Path, bytes: &[u8]) -> Result<()> {
    let shown = path.display();
    if (bytes.len() < 8 || &bytes[0..4] != b"\0asm") && std::str::from_utf8(bytes).is_ok() {
        bail!(
            "{shown} is not a WebAssembly file but text: a k6 script is run from a \
             .js, .mjs or .ts file (`host run script.ts`; rename it so), and a plugin is a \
             component built with `cargo build --target wasm32-wasip2`"
        );
    }
    if bytes.len() < 8 || &bytes[0..4] != b"\0asm" {
        bail!(
            "{shown} is not a WebAssembly file (it does not start with the \\0asm magic); \
             a plugin is a component built with `cargo build --target wasm32-wasip2`"
        );
    }
    match &bytes[4..8] {
        [0x0d, 0x00, 0x01, 0x00] => Ok(()),
        [0x01, 0x00, 0x00, 0x00] => bail!(
            "{shown} is a core WebAssembly module, not a component; build the plugin for \
             wasm32-wasip2 (which makes a component), or wrap the module with `wasm-tools component new`"
        ),
        other => bail!(
            "{shown} is a WebAssembly binary of an unknown version/layer {other:02x?}; expected a component (0d 00 01 00)"
        ),
    }
}

/// Checks that the component exports the `plugin` interface of this host's contract
/// version or of an earlier one that it still runs, naming both versions when not.
pub(crate) fn check_contract(engine: &Engine, component: &Component, shown: &Path) -> Result<()> {
    let ty = component.component_type();
    let expected = format!("{WIT_PACKAGE}/plugin@{WIT_VERSION}");
    let prefix = format!("{WIT_PACKAGE}/plugin@");
    let mut found = Vec::new();
    for (name, item) in ty.exports(engine) {
        if name.strip_prefix(&prefix).is_some_and(runs) {
            return Ok(());
        }
        if matches!(item.ty, ComponentItem::ComponentInstance(_)) {
            found.push(name.to_string());
        }
    }
    if let Some(other) = found.iter().find(|n| n.starts_with(&prefix)) {
        let version = &other[prefix.len()..];
        bail!(
            "{} was built against {WIT_PACKAGE}@{version}, but this host implements \
             {WIT_PACKAGE}@{WIT_VERSION}; rebuild the plugin with the SDK of this host version",
            shown.display()
        );
    }
    if found.is_empty() {
        bail!(
            "{} exports no interface; a plugin must export {expected} (use loadtest::export! from the SDK)",
            shown.display()
        );
    }
    bail!(
        "{} does not export {expected} (it exports: {}); is it a scenario plugin?",
        shown.display(),
        found.join(", ")
    )
}

/// Whether this host runs a plugin built against contract `version`: the same
/// version, or an earlier patch of the same 0.x line (a patch version only adds to the
/// contract, and wasmtime links a plugin's `@0.3.0` imports to the host's `@0.3.10`).
/// A later patch may import what this host lacks, and another line changed the
/// contract.
pub(crate) fn runs(version: &str) -> bool {
    let parse = |v: &str| -> Option<(u64, u64, u64)> {
        let mut parts = v.split('.').map(|p| p.parse::<u64>().ok());
        let version = (parts.next()??, parts.next()??, parts.next()??);
        parts.next().is_none().then_some(version)
    };
    match (parse(version), parse(WIT_VERSION)) {
        (Some((0, minor, patch)), Some((0, host_minor, host_patch))) => {
            minor == host_minor && patch <= host_patch
        }
        (Some(found), Some(host)) => found == host,
        _ => false,
    }
}

/// What a component imports and which contract it was built against, for `host inspect`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Interfaces {
    /// The contract version of the `plugin` interface it exports (`0.3.0`), if any.
    pub contract: Option<String>,
    /// The contract's interfaces it imports (`http`, `websocket`, `vu`, ...): what the
    /// plugin can do.
    pub contract_imports: Vec<String>,
    /// Every other import (`wasi:cli/environment@0.2.6`, ...), as named.
    pub other_imports: Vec<String>,
}

/// Lists a component's imports and the contract version of its `plugin` export.
pub(crate) fn interfaces(engine: &Engine, component: &Component) -> Interfaces {
    let ty = component.component_type();
    let prefix = format!("{WIT_PACKAGE}/");
    let mut found = Interfaces::default();
    for (name, _) in ty.exports(engine) {
        if let Some(version) = name.strip_prefix(&format!("{prefix}plugin@")) {
            found.contract = Some(version.to_string());
        }
    }
    for (name, _) in ty.imports(engine) {
        match name.strip_prefix(&prefix) {
            // `http@0.3.0` -> `http`: the version is the contract's, shown once.
            Some(rest) => {
                let interface = rest.split('@').next().unwrap_or(rest);
                // `types` has no functions: importing it grants nothing.
                if interface != "types" {
                    found.contract_imports.push(interface.to_string());
                }
            }
            // The k6 layer's own interface (JavaScript components built by the host):
            // host functions, listed with the contract's (`k6-layer/checks`).
            None => match name.strip_prefix("loadtest:k6-layer/") {
                Some(rest) => found.contract_imports.push(format!(
                    "k6-layer/{}",
                    rest.split('@').next().unwrap_or(rest)
                )),
                None => found.other_imports.push(name.to_string()),
            },
        }
    }
    found.contract_imports.sort();
    found.other_imports.sort();
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn earlier_patches_of_the_line_run_and_nothing_else() {
        assert!(runs(WIT_VERSION));
        assert!(runs("0.3.0"));
        assert!(runs("0.3.1"));
        assert!(runs("0.3.2"));
        assert!(runs("0.3.3"));
        assert!(runs("0.3.4"));
        assert!(runs("0.3.5"));
        assert!(runs("0.3.6"));
        assert!(runs("0.3.7"));
        assert!(runs("0.3.8"));
        assert!(runs("0.3.9"));
        assert!(
            !runs("0.3.11"),
            "a later patch may import what this host lacks"
        );
        assert!(!runs("0.2.0"));
        assert!(!runs("0.4.0"));
        assert!(!runs("1.0.0"));
        assert!(!runs("0.3.0-rc1"));
        assert!(!runs("0.3"));
    }

    #[test]
    fn headers_are_recognised() {
        let p = Path::new("x.wasm");
        let err = check_header(p, b"\x7fELF\x02\x01\x01\0\xff\xfe")
            .unwrap_err()
            .to_string();
        assert!(err.contains("not a WebAssembly file"), "{err}");
        // A script under another name is told how host runs scripts, not sent to Cargo.
        let err = check_header(Path::new("s.tsx"), b"export default function () {}")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("but text") && err.contains(".ts file"),
            "{err}"
        );
        let err = check_header(p, b"\0asm\x01\0\0\0").unwrap_err().to_string();
        assert!(err.contains("core WebAssembly module"), "{err}");
        assert!(check_header(p, b"\0asm\x0d\0\x01\0").is_ok());
    }
}
