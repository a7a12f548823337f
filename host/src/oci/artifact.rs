//! The WebAssembly OCI artifact, laid out as the wasm ecosystem reads it (the CNCF
//! TAG-Runtime "Wasm OCI artifact" layout that `wkg`, `oci-wasm`, Spin and `oras` use):
//! an OCI image manifest whose config is `application/vnd.wasm.config.v0+json`
//! (`architecture: wasm`, `os: wasip2`, the layer digests, the component's imports and
//! exports) and whose one layer is the component itself, `application/wasm`, so the
//! layer's digest is the component's sha256. The manifest's annotations carry the
//! plugin's own metadata (`org.opencontainers.image.*`), what `host inspect` shows.

use anyhow::{bail, Result};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// The OCI image manifest's media type.
pub(crate) const MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
/// An OCI index (a multi-platform list): refused, a component has one platform.
pub(crate) const INDEX: &str = "application/vnd.oci.image.index.v1+json";
/// The wasm config's media type.
pub(crate) const WASM_CONFIG: &str = "application/vnd.wasm.config.v0+json";
/// The component layer's media type.
pub(crate) const WASM_LAYER: &str = "application/wasm";
/// What a pull accepts.
pub(crate) const ACCEPT: &str = "application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json";

/// `sha256:` and the hex digest of `bytes`.
pub(crate) fn digest(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

/// What the manifest says of the plugin (annotation key → value).
pub(crate) type Annotations = BTreeMap<String, String>;

/// The annotations of a plugin: its name, version, description and source, and the
/// time of the push.
pub(crate) fn annotations(
    name: &str,
    version: &str,
    description: &str,
    source: Option<&str>,
    created: &str,
) -> Annotations {
    let mut a = Annotations::new();
    let mut put = |key: &str, value: &str| {
        if !value.trim().is_empty() {
            a.insert(
                format!("org.opencontainers.image.{key}"),
                value.trim().to_string(),
            );
        }
    };
    put("title", name);
    put("version", version);
    put("description", description);
    put("source", source.unwrap_or(""));
    put("created", created);
    a
}

/// The blobs and manifest of an artifact, ready to upload.
pub(crate) struct Artifact {
    /// The config blob (JSON).
    pub config: Vec<u8>,
    /// The manifest (JSON).
    pub manifest: Vec<u8>,
}

/// Builds the config and manifest for `component`.
pub(crate) fn build(component: &[u8], file_name: &str, annotations: &Annotations) -> Artifact {
    let layer = digest(component);
    let (imports, exports) = interfaces(component);
    let mut config = json!({
        "architecture": "wasm",
        "os": "wasip2",
        "layerDigests": [layer],
        "component": { "imports": imports, "exports": exports, "target": null },
    });
    if let Some(created) = annotations.get("org.opencontainers.image.created") {
        config["created"] = json!(created);
    }
    let config = serde_json::to_vec(&config).expect("JSON of plain values");
    let manifest = json!({
        "schemaVersion": 2,
        "mediaType": MANIFEST,
        "config": { "mediaType": WASM_CONFIG, "digest": digest(&config), "size": config.len() },
        "layers": [{
            "mediaType": WASM_LAYER,
            "digest": layer,
            "size": component.len(),
            // oras names the file it pulls by the layer's title.
            "annotations": { "org.opencontainers.image.title": file_name },
        }],
        "annotations": annotations,
    });
    Artifact {
        config,
        manifest: serde_json::to_vec(&manifest).expect("JSON of plain values"),
    }
}

/// The component's top-level import and export names (WASI and the contract).
fn interfaces(component: &[u8]) -> (Vec<String>, Vec<String>) {
    let mut imports = Vec::new();
    let mut exports = Vec::new();
    let mut depth = 0u32;
    for payload in wasmparser::Parser::new(0).parse_all(component) {
        match payload {
            Ok(wasmparser::Payload::ComponentImportSection(s)) if depth == 0 => {
                imports.extend(s.into_iter().flatten().map(|i| i.name.name.to_string()));
            }
            Ok(wasmparser::Payload::ComponentExportSection(s)) if depth == 0 => {
                exports.extend(s.into_iter().flatten().map(|e| e.name.name.to_string()));
            }
            Ok(wasmparser::Payload::ModuleSection { .. })
            | Ok(wasmparser::Payload::ComponentSection { .. }) => depth += 1,
            Ok(wasmparser::Payload::End(_)) => depth = depth.saturating_sub(1),
            Err(_) => break,
            _ => {}
        }
    }
    (imports, exports)
}

/// The manifest of a pulled artifact, as far as running it needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Pulled {
    /// The component layer's digest (`sha256:…`): the component's sha256.
    pub layer: String,
    /// The layer's size in bytes, as the manifest gives it.
    pub size: u64,
    /// The manifest's annotations.
    pub annotations: Annotations,
}

/// Reads a manifest, refusing what is not a WebAssembly component artifact.
pub(crate) fn parse(manifest: &[u8], shown: &str) -> Result<Pulled> {
    let value: Value = serde_json::from_slice(manifest)
        .map_err(|e| anyhow::anyhow!("{shown}: the registry's manifest is not JSON: {e}"))?;
    let media = value["mediaType"].as_str().unwrap_or(MANIFEST);
    if media == INDEX || media.contains("manifest.list") {
        bail!("{shown} is an index of several platforms (an image), not a WebAssembly component: push the plugin with `host push`, `wkg oci push` or `oras push`");
    }
    let layers = value["layers"].as_array().cloned().unwrap_or_default();
    let wasm: Vec<&Value> = layers
        .iter()
        .filter(|l| l["mediaType"].as_str() == Some(WASM_LAYER))
        .collect();
    let config_type = value["config"]["mediaType"].as_str().unwrap_or("none");
    let [layer] = wasm.as_slice() else {
        let types: Vec<&str> = layers
            .iter()
            .map(|l| l["mediaType"].as_str().unwrap_or("?"))
            .collect();
        bail!(
            "{shown} is not a WebAssembly component artifact: it needs one {WASM_LAYER} layer, it has {} \
             (config {config_type}, layers: {}); push the plugin with `host push`",
            wasm.len(),
            if types.is_empty() { "none".to_string() } else { types.join(", ") }
        );
    };
    let layer_digest = layer["digest"]
        .as_str()
        .unwrap_or_default()
        .to_ascii_lowercase();
    let hex = layer_digest.strip_prefix("sha256:").unwrap_or("");
    if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        bail!("{shown}: the component layer's digest {layer_digest:?} is not a sha256 digest");
    }
    let annotations = value["annotations"]
        .as_object()
        .map(|o| {
            o.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default();
    Ok(Pulled {
        layer: layer_digest,
        size: layer["size"].as_u64().unwrap_or(0),
        annotations,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_manifests_read_back() {
        let component = b"\0asm\x0d\0\x01\0";
        let a = annotations(
            "hello",
            "1.0.0",
            "says hello",
            Some("https://x/y"),
            "2026-12-01T00:00:00Z",
        );
        let artifact = build(component, "hello.wasm", &a);
        let m: Value = serde_json::from_slice(&artifact.manifest).unwrap();
        assert_eq!(m["config"]["mediaType"], WASM_CONFIG);
        assert_eq!(m["config"]["digest"], digest(&artifact.config).as_str());
        assert_eq!(m["layers"][0]["mediaType"], WASM_LAYER);
        assert_eq!(
            m["annotations"]["org.opencontainers.image.source"],
            "https://x/y"
        );
        let c: Value = serde_json::from_slice(&artifact.config).unwrap();
        assert_eq!(
            (c["architecture"].as_str(), c["os"].as_str()),
            (Some("wasm"), Some("wasip2"))
        );
        let pulled = parse(&artifact.manifest, "r").unwrap();
        assert_eq!(pulled.layer, digest(component));
        assert_eq!(pulled.size, component.len() as u64);
        assert_eq!(
            pulled.annotations["org.opencontainers.image.title"],
            "hello"
        );
    }

    #[test]
    fn other_artifacts_are_refused() {
        let image = json!({
            "schemaVersion": 2, "mediaType": MANIFEST,
            "config": { "mediaType": "application/vnd.oci.image.config.v1+json" },
            "layers": [{ "mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": "sha256:00" }],
        });
        let err = parse(&serde_json::to_vec(&image).unwrap(), "r")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("not a WebAssembly component") && err.contains("tar+gzip"),
            "{err}"
        );
        let index = json!({ "schemaVersion": 2, "mediaType": INDEX, "manifests": [] });
        let err = parse(&serde_json::to_vec(&index).unwrap(), "r")
            .unwrap_err()
            .to_string();
        assert!(err.contains("index"), "{err}");
    }
}
