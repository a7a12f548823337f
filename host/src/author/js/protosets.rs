//! The protosets of k6's `client.loadProtoset(path)` (k6/net/grpc): binary
//! `FileDescriptorSet`s (`protoc --descriptor_set_out --include_imports`, `buf build
//! -o`) read at build time, as `load`'s `.proto` files are (protos.rs), bundled into the
//! component and handed to the host's `grpc` import (`channel.open`'s
//! `descriptor-sets`) when the script connects. Each set is decoded here with the
//! host's own code, so a file that is not a set, or lacks what it imports, fails the
//! build with its line; the methods it defines are what `loadProtoset` returns.

use super::protos::Args;
use super::scan::{call_sites, line_of};
use crate::net::grpc::descriptors;
use anyhow::{anyhow, bail, Result};
use std::collections::BTreeMap;
use std::path::Path;

/// One protoset named in a `loadProtoset` call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Protoset {
    /// The path as the script gives it: the layer's key.
    pub given: String,
    /// The file's bytes.
    pub bytes: Vec<u8>,
    /// The methods of its services, in k6's shape, as JSON.
    pub methods: String,
}

/// The protosets of every `client.loadProtoset(...)` call of one module; `code` is the
/// module with its strings and comments blanked (scan.rs), `dir` its folder, from
/// which a relative path is read (as k6 reads it from the script's folder); a set
/// outside `root`, the script's folder, is refused as `open()` refuses a file there.
pub(crate) fn protosets(
    src: &str,
    code: &str,
    shown: &str,
    dir: &Path,
    root: &Path,
    env: &BTreeMap<String, String>,
) -> Result<Vec<Protoset>> {
    let mut out = Vec::new();
    for (at, open) in call_sites(code, ".loadProtoset") {
        let where_ = format!("{shown}:{}", line_of(src, at));
        let args = Args {
            src,
            at: open + 1,
            env,
            where_: &where_,
            call: "client.loadProtoset()",
            example: "loadProtoset('api.protoset')",
        }
        .parse()?;
        let given = match args.as_slice() {
            [one] if one.len() == 1 => one[0].clone(),
            _ => bail!(
                "{where_}: client.loadProtoset() takes one path: loadProtoset('api.protoset')"
            ),
        };
        let path = dir.join(given.strip_prefix("file://").unwrap_or(&given));
        super::outside::check(
            root,
            &path,
            &where_,
            &format!("client.loadProtoset({given:?})"),
        )?;
        let bytes = std::fs::read(&path).map_err(|e| {
            anyhow!(
                "{where_}: client.loadProtoset() cannot read {given} ({}): {e}",
                path.display()
            )
        })?;
        let pool = descriptors::build(&[], std::slice::from_ref(&bytes))
            .map_err(|e| anyhow!("{where_}: client.loadProtoset({given:?}): {e}"))?;
        out.push(Protoset {
            given,
            bytes,
            methods: methods(&pool),
        });
    }
    Ok(out)
}

/// What k6's `loadProtoset` returns: per method `package`, `service` (its short name),
/// `full_method`, `name`, `is_client_stream`, `is_server_stream`.
fn methods(pool: &prost_reflect::DescriptorPool) -> String {
    let list: Vec<serde_json::Value> = pool
        .services()
        .flat_map(|s| {
            s.methods()
                .map(|m| {
                    serde_json::json!({
                        "package": s.package_name(),
                        "service": s.name(),
                        "full_method": format!("/{}/{}", s.full_name(), m.name()),
                        "name": m.name(),
                        "is_client_stream": m.is_client_streaming(),
                        "is_server_stream": m.is_server_streaming(),
                    })
                })
                .collect::<Vec<_>>()
        })
        .collect();
    serde_json::Value::Array(list).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::author::js::scan::scan;
    use prost::Message;

    fn found(src: &str, dir: &Path) -> Result<Vec<Protoset>> {
        let code = String::from_utf8(scan(src).code).unwrap();
        protosets(src, &code, "s.js", dir, dir, &BTreeMap::new())
    }

    #[test]
    fn a_set_outside_the_scripts_folder_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("script");
        std::fs::create_dir(&root).unwrap();
        std::fs::write(tmp.path().join("api.protoset"), b"").unwrap();
        let src = "c.loadProtoset('../api.protoset');\n";
        let code = String::from_utf8(scan(src).code).unwrap();
        let err = protosets(src, &code, "s.js", &root, &root, &BTreeMap::new()).unwrap_err();
        assert!(
            format!("{err:#}").contains("outside the script's folder"),
            "{err:#}"
        );
    }

    #[test]
    fn a_set_is_read_and_its_methods_listed() {
        let dir = tempfile::tempdir().unwrap();
        let pool = descriptors::compile(&[(
            "svc.proto".into(),
            "syntax = \"proto3\"; package p.v1; import \"google/protobuf/empty.proto\";\n\
             service S { rpc M(google.protobuf.Empty) returns (stream google.protobuf.Empty); }\n"
                .into(),
        )])
        .unwrap();
        let set = prost_types::FileDescriptorSet {
            file: pool.file_descriptor_protos().cloned().collect(),
        };
        std::fs::write(dir.path().join("api.protoset"), set.encode_to_vec()).unwrap();
        let got = found(
            "const c = new grpc.Client();\n// c.loadProtoset('nope')\nc.loadProtoset('api.protoset');\n",
            dir.path(),
        )
        .unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].given, "api.protoset");
        let methods: serde_json::Value = serde_json::from_str(&got[0].methods).unwrap();
        assert_eq!(
            methods,
            serde_json::json!([{
                "package": "p.v1", "service": "S", "full_method": "/p.v1.S/M", "name": "M",
                "is_client_stream": false, "is_server_stream": true,
            }])
        );
    }

    #[test]
    fn what_cannot_be_read_says_what_to_fix() {
        let dir = tempfile::tempdir().unwrap();
        let err = found("\nc.loadProtoset(p);\n", dir.path())
            .unwrap_err()
            .to_string();
        assert!(err.contains("s.js:2") && err.contains("literal"), "{err}");
        let err = found("c.loadProtoset('missing.pb');\n", dir.path())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("s.js:1") && err.contains("missing.pb"),
            "{err}"
        );
        std::fs::write(dir.path().join("text.pb"), "syntax = \"proto3\";").unwrap();
        let err = found("c.loadProtoset('text.pb');\n", dir.path())
            .unwrap_err()
            .to_string();
        assert!(err.contains("--descriptor_set_out"), "{err}");
    }
}
