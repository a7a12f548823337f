//! Method descriptors: `.proto` text compiled in the host at run time (protox: no
//! protoc, no generated code), binary descriptor sets (protosets) decoded, the
//! services the host carries (`grpc.health.v1.Health`), and the lookup of
//! `package.Service/Method` in a pool.

use prost::Message;
use prost_reflect::{DescriptorPool, MethodDescriptor};
use prost_types::{FileDescriptorProto, FileDescriptorSet};
use protox::file::{ChainFileResolver, File, FileResolver, GoogleFileResolver};
use std::collections::{BTreeSet, HashMap};
use std::sync::OnceLock;

/// Why a `.proto` set or a method name cannot be used; the plugin sees it as an
/// `invalid` gRPC error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum DescriptorError {
    /// A file name that imports could not name.
    #[error("proto file name {0:?}: use a relative name with / (as imports write it)")]
    FileName(String),
    /// protox refused a file; the message starts with the file when protox knows it.
    #[error("{file}{reason}", file = .file.as_deref().map(|f| format!("{f}: ")).unwrap_or_default())]
    Compile {
        /// The file protox found the error in.
        file: Option<String>,
        /// protox's message.
        reason: String,
    },
    /// A descriptor set that does not decode.
    #[error(
        "{shown} is not a binary FileDescriptorSet (make one with protoc \
         --descriptor_set_out=FILE --include_imports, or buf build -o FILE): {reason}"
    )]
    NotASet {
        /// How errors name the set.
        shown: String,
        /// The decoder's reason.
        reason: String,
    },
    /// A descriptor set without files.
    #[error(
        "{0} holds no file descriptor (make one with protoc \
         --descriptor_set_out=FILE --include_imports, or buf build -o FILE)"
    )]
    EmptySet(String),
    /// A file of the set imports one the set lacks.
    #[error(
        "{shown}: {file} imports {import}, which the set does not hold; make the set \
         with --include_imports"
    )]
    MissingImport {
        /// How errors name the set.
        shown: String,
        /// The importing file.
        file: String,
        /// The file it imports.
        import: String,
    },
    /// The set's files do not build into the pool.
    #[error("{shown}: {reason}")]
    InSet {
        /// How errors name the set.
        shown: String,
        /// What failed.
        reason: String,
    },
    /// The host's own copy of a service did not build into the pool.
    #[error("the host's health.proto: {0}")]
    Carried(String),
    /// A method name not of the form `package.Service/Method`.
    #[error(
        "method {0:?}: write it as package.Service/Method (for example \
         helloworld.Greeter/SayHello)"
    )]
    MethodName(String),
    /// The service exists without this method.
    #[error("service {service} has no method {method}; it has: {}", .has.join(", "))]
    NoSuchMethod {
        /// The service's full name.
        service: String,
        /// The method asked for.
        method: String,
        /// The methods the service has.
        has: Vec<String>,
    },
}

impl From<DescriptorError> for super::status::GrpcError {
    fn from(e: DescriptorError) -> Self {
        Self::Invalid(e.to_string())
    }
}

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
pub(crate) fn compile(files: &[(String, String)]) -> Result<DescriptorPool, DescriptorError> {
    if files.is_empty() {
        return Ok(DescriptorPool::new());
    }
    let mut sources = HashMap::new();
    for (name, source) in files {
        if name.is_empty() || name.starts_with('/') || name.contains('\\') {
            return Err(DescriptorError::FileName(name.clone()));
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

/// Compiles `files` (as [`compile`]) and adds the binary `FileDescriptorSet`s `sets`
/// (as [`add_set`]).
pub(crate) fn build(
    files: &[(String, String)],
    sets: &[Vec<u8>],
) -> Result<DescriptorPool, DescriptorError> {
    let mut pool = compile(files)?;
    for (i, bytes) in sets.iter().enumerate() {
        let shown = if sets.len() == 1 {
            "the descriptor set".to_string()
        } else {
            format!("descriptor set {}", i + 1)
        };
        add_set(&mut pool, bytes, &shown)?;
    }
    Ok(pool)
}

/// Adds a binary `FileDescriptorSet` (`protoc --descriptor_set_out --include_imports`,
/// `buf build -o`; `shown` names it in errors) to `pool`. Google's well-known types
/// it imports without holding are taken from the host's copies; a file the pool
/// already has (the same import from a `.proto` or another set) is kept as it is.
pub(crate) fn add_set(
    pool: &mut DescriptorPool,
    bytes: &[u8],
    shown: &str,
) -> Result<(), DescriptorError> {
    let in_set = |reason: String| DescriptorError::InSet {
        shown: shown.to_owned(),
        reason,
    };
    let set = FileDescriptorSet::decode(bytes).map_err(|e| DescriptorError::NotASet {
        shown: shown.to_owned(),
        reason: e.to_string(),
    })?;
    if set.file.is_empty() {
        return Err(DescriptorError::EmptySet(shown.to_owned()));
    }
    let held: BTreeSet<&str> = set.file.iter().map(|f| f.name()).collect();
    let mut google = BTreeSet::new();
    for f in &set.file {
        for dep in &f.dependency {
            if held.contains(dep.as_str()) || pool.get_file_by_name(dep).is_some() {
                continue;
            }
            if dep.starts_with("google/protobuf/") {
                google.insert(dep.clone());
            } else {
                return Err(DescriptorError::MissingImport {
                    shown: shown.to_owned(),
                    file: f.name().to_owned(),
                    import: dep.clone(),
                });
            }
        }
    }
    if !google.is_empty() {
        let mut compiler = protox::Compiler::with_file_resolver(GoogleFileResolver::new());
        compiler.include_imports(true);
        for name in &google {
            compiler
                .open_file(name)
                .map_err(|e| in_set(e.to_string()))?;
        }
        let wanted: Vec<FileDescriptorProto> = compiler
            .file_descriptor_set()
            .file
            .into_iter()
            .filter(|f| pool.get_file_by_name(f.name()).is_none())
            .collect();
        pool.add_file_descriptor_protos(wanted)
            .map_err(|e| in_set(format!("the well-known types it imports: {e}")))?;
    }
    let new: Vec<FileDescriptorProto> = set
        .file
        .into_iter()
        .filter(|f| pool.get_file_by_name(f.name()).is_none())
        .collect();
    pool.add_file_descriptor_protos(new)
        .map_err(|e| in_set(format!("its descriptors do not build: {e}")))
}

/// The service every channel can call without a descriptor from the plugin.
pub(crate) const HEALTH_SERVICE: &str = "grpc.health.v1.Health";

/// The host's `grpc/health/v1/health.proto`, compiled once.
fn health_file() -> &'static FileDescriptorProto {
    static FILE: OnceLock<FileDescriptorProto> = OnceLock::new();
    FILE.get_or_init(|| {
        let source = include_str!("protos/health.proto");
        let pool = compile(&[("grpc/health/v1/health.proto".into(), source.into())])
            .expect("the carried health.proto compiles");
        let file = pool
            .file_descriptor_protos()
            .next()
            .expect("one file")
            .clone();
        file
    })
}

/// Adds the host's copy of `service` to `pool` when the host carries it and the pool
/// lacks it; whether it did.
pub(crate) fn add_carried(
    pool: &mut DescriptorPool,
    service: &str,
) -> Result<bool, DescriptorError> {
    if service != HEALTH_SERVICE || pool.get_service_by_name(service).is_some() {
        return Ok(false);
    }
    let file = health_file();
    if pool.get_file_by_name(file.name()).is_some() {
        // A file of that name without the service: the plugin's own, left alone.
        return Ok(false);
    }
    pool.add_file_descriptor_proto(file.clone())
        .map_err(|e| DescriptorError::Carried(e.to_string()))?;
    Ok(true)
}

/// A compile error with the file and line where protox found it.
fn describe(e: &protox::Error) -> DescriptorError {
    DescriptorError::Compile {
        file: e.file().map(str::to_owned),
        reason: e.to_string(),
    }
}

/// `package.Service/Method` (a leading `/` is accepted, as in the HTTP/2 path) split
/// into the service and the method.
pub(crate) fn split_method(method: &str) -> Result<(&str, &str), DescriptorError> {
    let trimmed = method.strip_prefix('/').unwrap_or(method);
    match trimmed.split_once('/') {
        Some((service, name)) if !service.is_empty() && !name.is_empty() && !name.contains('/') => {
            Ok((service, name))
        }
        _ => Err(DescriptorError::MethodName(method.to_owned())),
    }
}

/// The descriptor of `method` in `pool`; `None` when the pool has no such service.
/// A service that exists without the method is an error naming the methods it has.
pub(crate) fn find(
    pool: &DescriptorPool,
    method: &str,
) -> Result<Option<MethodDescriptor>, DescriptorError> {
    let (service, name) = split_method(method)?;
    let Some(svc) = pool.get_service_by_name(service) else {
        return Ok(None);
    };
    if let Some(m) = svc.methods().find(|m| m.name() == name) {
        return Ok(Some(m));
    }
    Err(DescriptorError::NoSuchMethod {
        service: service.to_owned(),
        method: name.to_owned(),
        has: svc.methods().map(|m| m.name().to_owned()).collect(),
    })
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
        assert_eq!(
            err.to_string(),
            "service demo.v1.Notes has no method Put; it has: Get, Ping, Watch"
        );
    }

    /// A set as protoc writes one, here from protox (the integration tests use
    /// grpcio-tools' protoc).
    fn set_of(files: &[(&str, &str)], with_imports: bool) -> Vec<u8> {
        let owned: Vec<(String, String)> = files
            .iter()
            .map(|(n, s)| (n.to_string(), s.to_string()))
            .collect();
        let pool = compile(&owned).unwrap();
        let file = pool
            .file_descriptor_protos()
            .filter(|f| with_imports || !f.name().starts_with("google/"))
            .cloned()
            .collect();
        FileDescriptorSet { file }.encode_to_vec()
    }

    #[test]
    fn descriptor_sets_are_decoded_with_or_without_their_imports() {
        let files = [("api.proto", API), ("types.proto", TYPES)];
        for with_imports in [true, false] {
            let pool = build(&[], &[set_of(&files, with_imports)]).unwrap();
            let watch = find(&pool, "demo.v1.Notes/Watch").unwrap().unwrap();
            assert!(watch.is_server_streaming());
            assert_eq!(methods(&pool).len(), 3);
        }
        // The same files from a .proto and from a set: kept once.
        let owned = [("types.proto".to_string(), TYPES.to_string())];
        let pool = build(&owned, &[set_of(&files, true)]).unwrap();
        assert_eq!(methods(&pool).len(), 3);

        let err = build(&[], &[b"not a set".to_vec()]).unwrap_err();
        assert!(matches!(err, DescriptorError::NotASet { .. }), "{err}");
        assert!(err.to_string().contains("--descriptor_set_out"), "{err}");
        let pool = compile(&[
            ("api.proto".into(), API.into()),
            ("types.proto".into(), TYPES.into()),
        ])
        .unwrap();
        let only_api = FileDescriptorSet {
            file: pool
                .file_descriptor_protos()
                .filter(|f| f.name() == "api.proto")
                .cloned()
                .collect(),
        };
        let err = build(&[], &[only_api.encode_to_vec()])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("imports types.proto") && err.contains("--include_imports"),
            "{err}"
        );
    }

    #[test]
    fn the_health_service_is_carried() {
        let mut pool = compile(&[("types.proto".into(), TYPES.into())]).unwrap();
        assert!(find(&pool, "grpc.health.v1.Health/Check")
            .unwrap()
            .is_none());
        assert!(add_carried(&mut pool, HEALTH_SERVICE).unwrap());
        let check = find(&pool, "grpc.health.v1.Health/Check").unwrap().unwrap();
        assert_eq!(
            check.output().full_name(),
            "grpc.health.v1.HealthCheckResponse"
        );
        assert!(!add_carried(&mut pool, HEALTH_SERVICE).unwrap(), "once");
        assert!(!add_carried(&mut pool, "demo.v1.Notes").unwrap());
    }

    #[test]
    fn errors_say_what_to_fix() {
        let err = compile(&[("api.proto".into(), API.into())]).unwrap_err();
        assert!(err.to_string().contains("types.proto"), "{err}");
        let err =
            compile(&[("bad.proto".into(), "syntax = \"proto3\"; message {".into())]).unwrap_err();
        assert!(matches!(&err, DescriptorError::Compile { file: Some(f), .. } if f == "bad.proto"));
        assert!(err.to_string().starts_with("bad.proto: "), "{err}");
        let err = compile(&[("/abs.proto".into(), String::new())]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "proto file name \"/abs.proto\": use a relative name with / (as imports write it)"
        );
        assert_eq!(
            split_method("demo.Notes.Get").unwrap_err().to_string(),
            "method \"demo.Notes.Get\": write it as package.Service/Method (for example \
             helloworld.Greeter/SayHello)"
        );
    }
}
