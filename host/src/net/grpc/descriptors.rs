//! Method descriptors: `.proto` text compiled in the host at run time (protox: no
//! protoc, no generated code), and the lookup of `package.Service/Method` in a pool.

use prost_reflect::{DescriptorPool, MethodDescriptor};
use protox::file::{ChainFileResolver, File, FileResolver, GoogleFileResolver};
use std::collections::HashMap;

/// `.proto` sources by the name other files import them by.
struct Sources(HashMap<String, String>);

impl FileResolver for Sources {
    fn open_file(&self, name: &str) -> Result<File, protox::Error> {
        match self.0.get(name) {
            Some(source) => File::from_source(name, source),
            None => Err(protox::Error::file_not_found(name)),
        }
    }
}

/// Compiles `files` (name, source), which may import one another and Google's
/// well-known types (`google/protobuf/empty.proto`, ...), into a pool.
pub(crate) fn compile(files: &[(String, String)]) -> Result<DescriptorPool, String> {
    if files.is_empty() {
        return Ok(DescriptorPool::new());
    }
    let mut sources = HashMap::new();
    for (name, source) in files {
        if name.is_empty() || name.starts_with('/') || name.contains('\\') {
            return Err(format!(
                "proto file name {name:?}: use a relative name with / (as imports write it)"
            ));
        }
        sources.insert(name.clone(), source.clone());
    }
    let mut resolver = ChainFileResolver::new();
    resolver.add(Sources(sources));
    resolver.add(GoogleFileResolver::new());
    let mut compiler = protox::Compiler::with_file_resolver(resolver);
    compiler.include_imports(true);
    for (name, _) in files {
        compiler.open_file(name).map_err(|e| describe(&e))?;
    }
    Ok(compiler.descriptor_pool())
}

/// A compile error with the file and line where protox found it.
fn describe(e: &protox::Error) -> String {
    let file = e.file().map(|f| format!("{f}: ")).unwrap_or_default();
    format!("{file}{e}")
}

/// `package.Service/Method` (a leading `/` is accepted, as in the HTTP/2 path) split
/// into the service and the method.
pub(crate) fn split_method(method: &str) -> Result<(&str, &str), String> {
    let trimmed = method.strip_prefix('/').unwrap_or(method);
    match trimmed.split_once('/') {
        Some((service, name)) if !service.is_empty() && !name.is_empty() && !name.contains('/') => {
            Ok((service, name))
        }
        _ => Err(format!(
            "method {method:?}: write it as package.Service/Method (for example \
             helloworld.Greeter/SayHello)"
        )),
    }
}

/// The descriptor of `method` in `pool`; `None` when the pool has no such service.
/// A service that exists without the method is an error naming the methods it has.
pub(crate) fn find(
    pool: &DescriptorPool,
    method: &str,
) -> Result<Option<MethodDescriptor>, String> {
    let (service, name) = split_method(method)?;
    let Some(svc) = pool.get_service_by_name(service) else {
        return Ok(None);
    };
    if let Some(m) = svc.methods().find(|m| m.name() == name) {
        return Ok(Some(m));
    }
    let names: Vec<String> = svc.methods().map(|m| m.name().to_owned()).collect();
    Err(format!(
        "service {service} has no method {name}; it has: {}",
        names.join(", ")
    ))
}

/// Every method of every service in `pool`, as `package.Service/Method`.
pub(crate) fn methods(pool: &DescriptorPool) -> Vec<String> {
    pool.services()
        .flat_map(|s| {
            let service = s.full_name().to_owned();
            s.methods()
                .map(move |m| format!("{service}/{}", m.name()))
                .collect::<Vec<_>>()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const API: &str = r#"
        syntax = "proto3";
        package demo.v1;
        import "google/protobuf/empty.proto";
        import "types.proto";
        service Notes {
            rpc Get(NoteId) returns (Note);
            rpc Ping(google.protobuf.Empty) returns (google.protobuf.Empty);
            rpc Watch(NoteId) returns (stream Note);
        }
    "#;
    const TYPES: &str = r#"
        syntax = "proto3";
        package demo.v1;
        message NoteId { int64 id = 1; }
        message Note { int64 id = 1; string text = 2; }
    "#;

    #[test]
    fn protos_importing_each_other_and_well_known_types_compile() {
        let pool = compile(&[
            ("api.proto".into(), API.into()),
            ("types.proto".into(), TYPES.into()),
        ])
        .unwrap();
        let get = find(&pool, "demo.v1.Notes/Get").unwrap().unwrap();
        assert_eq!(get.input().full_name(), "demo.v1.NoteId");
        let watch = find(&pool, "/demo.v1.Notes/Watch").unwrap().unwrap();
        assert!(watch.is_server_streaming() && !watch.is_client_streaming());
        assert_eq!(methods(&pool).len(), 3);
        assert!(find(&pool, "other.Svc/X").unwrap().is_none());
        let err = find(&pool, "demo.v1.Notes/Put").unwrap_err();
        assert!(err.contains("has: Get, Ping, Watch"), "{err}");
    }

    #[test]
    fn errors_say_what_to_fix() {
        let err = compile(&[("api.proto".into(), API.into())]).unwrap_err();
        assert!(err.contains("types.proto"), "{err}");
        let err =
            compile(&[("bad.proto".into(), "syntax = \"proto3\"; message {".into())]).unwrap_err();
        assert!(err.starts_with("bad.proto: "), "{err}");
        assert!(split_method("demo.Notes.Get")
            .unwrap_err()
            .contains("package.Service/Method"));
    }
}
