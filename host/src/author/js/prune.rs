//! A script's component imports only the host interfaces its module can reach (issue
//! #53): every imported function costs each VU's instance ~150 bytes whether it is
//! called or not (wasmtime's per-instance context holds the core import, the shim's and
//! fixups' entries for a function taking a `realloc`, and the component context's
//! lowering; results/js.md, "What the host holds per JavaScript VU"), and an idle script
//! reaches none of `browser`, `grpc`, `sockets`, `html` or `websocket`.
//!
//! The runtime built from source (plugins/js-runtime) imports every interface of the
//! script world, since its bindings are static. After Wizer, the snapshot's main core
//! module is rewritten: each import of an interface the module text cannot reach
//! becomes a local function that traps, named in the name section after what it
//! stood for (the VU's error then names the function cut: `plugin::trap`), and wit-component encodes
//! the component again from that module. wit-component imports only the interface
//! functions a core module imports, so the component, and every VU's instance of it,
//! holds only what is left.
//!
//! What the module can reach is read from its text, conservatively ([`reached`]): an
//! interface is kept when the name an `import NAME from 'loadtest:…'` binds is used
//! anywhere else in the text (the layer's files for the k6 modules the script imports,
//! and the script's own code, which shares the layer's scope), or when the interface's
//! name appears anywhere else in it. The layer's `prelude.js` binds one name per
//! interface, and a script's layer holds only the files of the k6 modules it imports
//! (`layer::text_for`), so this follows those files without a table to keep in step
//! with them. A resource of a cut interface that a kept one uses (`use` in the WIT)
//! keeps its `[resource-drop]`, the one function the runtime calls on such a handle
//! without the interface (its JavaScript object's finalizer).
//!
//! Code that still calls a cut function (a computed name reaching a binding through
//! `eval`) fails its call with an error naming that function; it never gets a wrong
//! answer. WASI and the runtime's own exports are left as they are.

use anyhow::{bail, Context, Result};
use std::collections::{BTreeMap, BTreeSet};
use wasm_encoder::reencode::{Reencode, RoundtripReencoder};
use wasmparser_258 as wp;
use wit_component::{embed_component_metadata, ComponentEncoder, StringEncoding};
use wit_parser::decoding::{decode, DecodedWasm};
use wit_parser::{Resolve, Type, TypeDefKind, TypeOwner, WorldItem, WorldKey};

/// The prefix of the interfaces that may be cut: the contract's and the k6 layer's.
/// WASI's are the runtime's own (libc), never the script's.
const CUTTABLE: &str = "loadtest:";

/// The environment variable that keeps every import (`1`): the build as it was before
/// this cut, to compare against (bench/js/multivu.py) or to rule the cut out.
pub(crate) const KEEP_ENV: &str = "LOADTEST_JS_KEEP_IMPORTS";

/// Whether builds cut the imports a script does not reach (unless `KEEP_ENV=1`).
pub(crate) fn cuts() -> bool {
    std::env::var_os(KEEP_ENV).is_none_or(|v| v != "1")
}

/// What the build cache's key holds for the way [`cuts`] says builds are made: a
/// change to what is cut (or how) changes it, so no entry built one way is taken for
/// one built another.
pub(crate) fn key() -> &'static [u8] {
    if cuts() {
        b"imports cut to the interfaces reached, 1"
    } else {
        b"every import kept"
    }
}

/// The snapshot `component` with the functions of the interfaces `module` (the text
/// the snapshot evaluated) cannot reach cut out of its imports (the snapshot itself
/// when it reaches them all).
pub(crate) fn prune(component: &[u8], module: &str) -> Result<Vec<u8>> {
    let (resolve, world_id) = match decode(component).context("cannot decode the snapshot")? {
        DecodedWasm::Component(resolve, world) => (resolve, world),
        _ => bail!("the snapshot is not a component"),
    };
    let world = &resolve.worlds[world_id];
    let names: Vec<(String, Option<wit_parser::InterfaceId>)> = world
        .imports
        .iter()
        .map(|(key, item)| {
            let id = match (key, item) {
                (WorldKey::Interface(id), _) => Some(*id),
                (_, WorldItem::Interface { id, .. }) => Some(*id),
                _ => None,
            };
            (resolve.name_world_key(key), id)
        })
        .collect();
    let candidates: Vec<&str> = names
        .iter()
        .map(|(n, _)| n.as_str())
        .filter(|n| n.starts_with(CUTTABLE))
        .collect();
    let reached = reached(module, &candidates);
    let cut: BTreeSet<String> = candidates
        .iter()
        .filter(|n| !reached.contains(**n))
        .map(|n| n.to_string())
        .collect();
    if cut.is_empty() {
        return Ok(component.to_vec());
    }
    // The resources of cut interfaces that kept ones use: their drops stay.
    let mut kept_drops: BTreeSet<(String, String)> = BTreeSet::new();
    for (name, id) in &names {
        let Some(id) = id else { continue };
        if cut.contains(name) {
            continue;
        }
        for ty in resolve.interfaces[*id].types.values() {
            if let Some((owner, resource)) = resource_of(&resolve, *ty) {
                if owner != *id {
                    let owner_name = interface_name(&resolve, owner);
                    if cut.contains(&owner_name) {
                        kept_drops.insert((owner_name, format!("[resource-drop]{resource}")));
                    }
                }
            }
        }
    }
    let main = main_module(component)?;
    let mut rewritten = cut_imports(main, &cut, &kept_drops)?;
    embed_component_metadata(&mut rewritten, &resolve, world_id, StringEncoding::UTF8)
        .context("cannot give the rewritten module its world")?;
    ComponentEncoder::default()
        .module(&rewritten)
        .context("the rewritten module does not fit its world")?
        .validate(true)
        .encode()
        .context("cannot encode the component without the cut interfaces")
}

/// The interface's full name, as the component imports it.
fn interface_name(resolve: &Resolve, id: wit_parser::InterfaceId) -> String {
    resolve
        .id_of(id)
        .unwrap_or_else(|| resolve.interfaces[id].name.clone().unwrap_or_default())
}

/// The interface owning the resource `ty` names (through `use` aliases), and its name.
fn resource_of(
    resolve: &Resolve,
    mut ty: wit_parser::TypeId,
) -> Option<(wit_parser::InterfaceId, String)> {
    loop {
        let def = &resolve.types[ty];
        match &def.kind {
            TypeDefKind::Type(Type::Id(next)) => ty = *next,
            TypeDefKind::Resource => {
                let TypeOwner::Interface(owner) = def.owner else {
                    return None;
                };
                return Some((owner, def.name.clone()?));
            }
            _ => return None,
        }
    }
}

/// Which of `interfaces` the module text reaches: an interface is reached when a name
/// an `import NAME from '<interface>'` line binds occurs elsewhere in the text, or when
/// the interface's name (without its version) occurs anywhere but on such a line.
pub(crate) fn reached<'a>(module: &str, interfaces: &[&'a str]) -> BTreeSet<&'a str> {
    // The import lines of the interfaces, and the text without them.
    let mut bound: Vec<(&str, &str)> = Vec::new();
    let mut rest = String::with_capacity(module.len());
    for line in module.split_inclusive('\n') {
        if let Some((name, spec)) = import_line(line) {
            if let Some(iface) = interfaces.iter().find(|i| **i == spec) {
                bound.push((name, iface));
                rest.push('\n');
                continue;
            }
        }
        rest.push_str(line);
    }
    let mut out = BTreeSet::new();
    for iface in interfaces {
        let unversioned = iface.split('@').next().unwrap_or(iface);
        if rest.contains(unversioned) {
            out.insert(*iface);
        }
    }
    for (name, iface) in bound {
        if has_word(&rest, name) {
            out.insert(iface);
        }
    }
    out
}

/// `import NAME from 'SPEC';` (or with double quotes): its name and specifier.
fn import_line(line: &str) -> Option<(&str, &str)> {
    let rest = line.trim().strip_prefix("import ")?;
    let (name, rest) = rest.split_once(" from ")?;
    let name = name.trim();
    if name.is_empty() || !name.bytes().all(is_ident_byte) {
        return None;
    }
    let rest = rest.trim().trim_end_matches(';').trim();
    let spec = rest
        .strip_prefix('\'')
        .and_then(|r| r.strip_suffix('\''))
        .or_else(|| rest.strip_prefix('"').and_then(|r| r.strip_suffix('"')))?;
    Some((name, spec))
}

fn is_ident_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'$'
}

/// Whether `word` occurs in `text` as a whole identifier.
fn has_word(text: &str, word: &str) -> bool {
    let bytes = text.as_bytes();
    text.match_indices(word).any(|(at, _)| {
        let before = at.checked_sub(1).map(|i| bytes[i]);
        let after = bytes.get(at + word.len()).copied();
        !before.is_some_and(is_ident_byte) && !after.is_some_and(is_ident_byte)
    })
}

/// The component's main core module (the one importing the contract).
/// The other core modules a runtime's component holds are wit-component's own (the
/// shim and its fixups, stateless, made again by the encoder); a component with any
/// other module holding state (an adapter's globals or data) is refused, since
/// encoding it again would lose what Wizer snapshotted in it.
fn main_module(component: &[u8]) -> Result<&[u8]> {
    let mut main = None;
    let mut depth = 0u32;
    for payload in wp::Parser::new(0).parse_all(component) {
        match payload.context("cannot parse the snapshot")? {
            wp::Payload::ModuleSection {
                unchecked_range, ..
            } if depth == 0 => {
                let bytes =
                    &component[unchecked_range.start as usize..unchecked_range.end as usize];
                let (imports_contract, has_state) = module_shape(bytes)?;
                if imports_contract {
                    if main.is_some() {
                        bail!("the snapshot has two modules importing the contract");
                    }
                    main = Some(bytes);
                } else if has_state {
                    bail!("the snapshot has a module with state besides the runtime's");
                }
                // Its payloads follow: skip them.
                depth += 1;
            }
            wp::Payload::ModuleSection { .. } | wp::Payload::ComponentSection { .. } => depth += 1,
            wp::Payload::End(_) if depth > 0 => depth -= 1,
            _ => {}
        }
    }
    main.context("the snapshot has no module importing the contract")
}

/// Whether a core module imports a function of the contract, and whether it holds
/// state (data, or a mutable global).
fn module_shape(bytes: &[u8]) -> Result<(bool, bool)> {
    let mut imports_contract = false;
    let mut state = false;
    for payload in wp::Parser::new(0).parse_all(bytes) {
        match payload? {
            wp::Payload::ImportSection(s) => {
                for import in s.into_imports() {
                    imports_contract |= import?.module.starts_with(CUTTABLE);
                }
            }
            wp::Payload::DataSection(s) => state |= s.count() > 0,
            wp::Payload::GlobalSection(s) => {
                for g in s {
                    state |= g?.ty.mutable;
                }
            }
            _ => {}
        }
    }
    Ok((imports_contract, state))
}

/// The reactor's initialiser (wasi-libc's constructors), which wit-component calls at
/// instantiation when the module exports it.
const INITIALIZE: &str = "_initialize";

/// A function import of the main module.
struct FuncImport {
    module: String,
    name: String,
    ty: u32,
}

/// The core module `bytes` with every function import of a `cut` interface (but
/// `keep`'s drops) replaced by a local function that traps.
fn cut_imports(
    bytes: &[u8],
    cut: &BTreeSet<String>,
    keep: &BTreeSet<(String, String)>,
) -> Result<Vec<u8>> {
    // First pass: the function imports and the count of defined functions.
    let mut imports: Vec<FuncImport> = Vec::new();
    let mut defined = 0u32;
    for payload in wp::Parser::new(0).parse_all(bytes) {
        match payload? {
            wp::Payload::ImportSection(s) => {
                for import in s.into_imports() {
                    let import = import?;
                    if let wp::TypeRef::Func(ty) = import.ty {
                        imports.push(FuncImport {
                            module: import.module.to_string(),
                            name: import.name.to_string(),
                            ty,
                        });
                    }
                }
            }
            wp::Payload::FunctionSection(s) => defined = s.count(),
            _ => {}
        }
    }
    let is_cut = |i: &FuncImport| {
        cut.contains(&i.module) && !keep.contains(&(i.module.clone(), i.name.clone()))
    };
    let kept = imports.iter().filter(|i| !is_cut(i)).count() as u32;
    // Old function index → new: kept imports in order, then the defined functions,
    // then one stub per cut import.
    let mut map = Vec::with_capacity(imports.len() + defined as usize);
    let (mut next_kept, mut next_stub) = (0u32, kept + defined);
    let mut stubs: Vec<(u32, String)> = Vec::new();
    for i in &imports {
        if is_cut(i) {
            map.push(next_stub);
            stubs.push((i.ty, format!("{}#{}", i.module, i.name)));
            next_stub += 1;
        } else {
            map.push(next_kept);
            next_kept += 1;
        }
    }
    map.extend((0..defined).map(|d| kept + d));
    let mut cutter = Cutter {
        map,
        is_cut: imports.iter().map(is_cut).collect(),
        stubs,
        named: false,
    };
    let mut module = wasm_encoder::Module::new();
    cutter
        .parse_core_module(&mut module, wp::Parser::new(0), bytes)
        .map_err(|e| anyhow::anyhow!("cannot rewrite the runtime's module: {e:?}"))?;
    if !cutter.named {
        let mut names = wasm_encoder::NameSection::new();
        names.functions(&cutter.stub_names(std::iter::empty()));
        module.section(&names);
    }
    Ok(module.finish())
}

/// The rewrite of [`cut_imports`].
struct Cutter {
    /// The new index of each old function.
    map: Vec<u32>,
    /// Whether each function import (by old index) is cut.
    is_cut: Vec<bool>,
    /// Each stub's type and what it stands for, in the order they are appended.
    stubs: Vec<(u32, String)>,
    /// Whether the module had a name section (rewritten with the stubs' names).
    named: bool,
}

impl Cutter {
    /// The function names: `kept` (new index, name) and each stub's, in index order.
    fn stub_names<'a>(&self, kept: impl Iterator<Item = (u32, &'a str)>) -> wasm_encoder::NameMap {
        let mut all: BTreeMap<u32, String> = kept.map(|(i, n)| (i, n.to_string())).collect();
        let first = self.map.len() as u32 - self.stubs.len() as u32;
        for (k, (_, what)) in self.stubs.iter().enumerate() {
            all.insert(
                first + k as u32,
                format!("{}{what}", crate::plugin::trap::CUT_MARK),
            );
        }
        let mut names = wasm_encoder::NameMap::new();
        for (i, n) in &all {
            names.append(*i, n);
        }
        names
    }
}

impl Reencode for Cutter {
    type Error = std::convert::Infallible;

    fn function_index(
        &mut self,
        func: u32,
    ) -> Result<u32, wasm_encoder::reencode::Error<Self::Error>> {
        Ok(self.map[func as usize])
    }

    fn parse_import_section(
        &mut self,
        section: &mut wasm_encoder::ImportSection,
        reader: wp::ImportSectionReader<'_>,
    ) -> Result<(), wasm_encoder::reencode::Error<Self::Error>> {
        let mut func = 0usize;
        for import in reader.into_imports() {
            let import = import?;
            if let wp::TypeRef::Func(_) = import.ty {
                func += 1;
                if self.is_cut[func - 1] {
                    continue;
                }
            }
            section.import(import.module, import.name, self.entity_type(import.ty)?);
        }
        Ok(())
    }

    fn parse_export_section(
        &mut self,
        section: &mut wasm_encoder::ExportSection,
        reader: wp::ExportSectionReader<'_>,
    ) -> Result<(), wasm_encoder::reencode::Error<Self::Error>> {
        for export in reader {
            let export = export?;
            // The snapshot is initialised: Wizer removed the start that called this
            // (wit-component's fixups), and an encoder seeing it would call it again
            // in every instance, over the snapshot's state.
            if export.name == INITIALIZE {
                continue;
            }
            self.parse_export(section, export)?;
        }
        Ok(())
    }

    fn parse_function_section(
        &mut self,
        section: &mut wasm_encoder::FunctionSection,
        reader: wp::FunctionSectionReader<'_>,
    ) -> Result<(), wasm_encoder::reencode::Error<Self::Error>> {
        for ty in reader {
            section.function(ty?);
        }
        for (ty, _) in &self.stubs {
            section.function(*ty);
        }
        Ok(())
    }

    fn parse_code_section(
        &mut self,
        code: &mut wasm_encoder::CodeSection,
        reader: wp::CodeSectionReader<'_>,
    ) -> Result<(), wasm_encoder::reencode::Error<Self::Error>> {
        for body in reader {
            self.parse_function_body(code, body?)?;
        }
        for _ in &self.stubs {
            let mut f = wasm_encoder::Function::new([]);
            f.instruction(&wasm_encoder::Instruction::Unreachable);
            f.instruction(&wasm_encoder::Instruction::End);
            code.function(&f);
        }
        Ok(())
    }

    fn parse_custom_section(
        &mut self,
        module: &mut wasm_encoder::Module,
        section: wp::CustomSectionReader<'_>,
    ) -> Result<(), wasm_encoder::reencode::Error<Self::Error>> {
        let wp::KnownCustom::Name(reader) = section.as_known() else {
            module.section(&RoundtripReencoder.custom_section(section)?);
            return Ok(());
        };
        self.named = true;
        let mut names = wasm_encoder::NameSection::new();
        for sub in reader {
            match sub? {
                wp::Name::Module { name, .. } => names.module(name),
                wp::Name::Function(map) => {
                    let mut kept = Vec::new();
                    for naming in map {
                        let naming = naming?;
                        let old = naming.index as usize;
                        if old < self.is_cut.len() && self.is_cut[old] {
                            continue;
                        }
                        kept.push((self.map[old], naming.name));
                    }
                    names.functions(&self.stub_names(kept.into_iter()));
                }
                // Locals and labels are keyed by function and only help a debugger;
                // the other maps do not index functions and are unchanged.
                wp::Name::Local(_) | wp::Name::Label(_) => {}
                other => RoundtripReencoder.parse_custom_name_subsection(&mut names, other)?,
            }
        }
        module.section(&names);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const IFACES: &[&str] = &[
        "loadtest:scenario/http@0.3.10",
        "loadtest:scenario/browser@0.3.10",
        "loadtest:k6-layer/crypto@0.1.0",
    ];

    /// A bound name used elsewhere keeps its interface; one used only on its import
    /// line, or inside a longer name, does not; the interface's name written anywhere
    /// else keeps it too (a dynamic import).
    #[test]
    fn an_interface_is_reached_by_its_bound_name_or_its_own_name() {
        let text = "import hostHttp from 'loadtest:scenario/http@0.3.10';\n\
                    import hostBrowser from 'loadtest:scenario/browser@0.3.10';\n\
                    import hostCrypto from 'loadtest:k6-layer/crypto@0.1.0';\n\
                    const x = hostHttp.request;\nconst hostBrowserish = 1;\n";
        let got = reached(text, IFACES);
        assert_eq!(got, BTreeSet::from(["loadtest:scenario/http@0.3.10"]));
        let got = reached(
            &format!("{text}// loadtest:k6-layer/crypto\nhostBrowser.x();\n"),
            IFACES,
        );
        assert_eq!(got.len(), 3, "{got:?}");
    }

    /// The cut imports leave the import section, every use of a function (a call, the
    /// table, an export) still names the function it named, and each cut one is a
    /// local trap named after what it stood for; `_initialize` is no longer exported.
    #[test]
    fn cut_imports_become_named_traps_and_every_index_follows() {
        let wat = r#"(module
            (import "loadtest:scenario/browser@0.3.10" "open" (func $open (param i32) (result i32)))
            (import "loadtest:scenario/vu@0.3.10" "id" (func $id (result i32)))
            (import "loadtest:scenario/browser@0.3.10" "[resource-drop]page" (func $drop (param i32)))
            (table (export "t") 2 funcref)
            (elem (i32.const 0) $open $f)
            (func $f (export "f") (result i32) (call $open (call $id)))
            (func (export "_initialize"))
            (func (export "g") (call $drop (i32.const 1))))"#;
        let bytes = wat::parse_str(wat).unwrap();
        let cut = BTreeSet::from(["loadtest:scenario/browser@0.3.10".to_string()]);
        let keep = BTreeSet::from([(
            "loadtest:scenario/browser@0.3.10".to_string(),
            "[resource-drop]page".to_string(),
        )]);
        let out = cut_imports(&bytes, &cut, &keep).unwrap();
        let engine = wasmtime::Engine::default();
        let module = wasmtime::Module::new(&engine, &out).unwrap();
        let imports: Vec<(&str, &str)> = module.imports().map(|i| (i.module(), i.name())).collect();
        assert_eq!(
            imports,
            [
                ("loadtest:scenario/vu@0.3.10", "id"),
                ("loadtest:scenario/browser@0.3.10", "[resource-drop]page"),
            ]
        );
        assert!(module.exports().all(|e| e.name() != INITIALIZE));
        let mut store = wasmtime::Store::new(&engine, Vec::<i32>::new());
        let mut linker = wasmtime::Linker::new(&engine);
        linker
            .func_wrap("loadtest:scenario/vu@0.3.10", "id", || 7i32)
            .unwrap();
        linker
            .func_wrap(
                "loadtest:scenario/browser@0.3.10",
                "[resource-drop]page",
                |mut c: wasmtime::Caller<'_, Vec<i32>>, h: i32| c.data_mut().push(h),
            )
            .unwrap();
        let instance = linker.instantiate(&mut store, &module).unwrap();
        // A kept import is still the one called.
        let g = instance.get_typed_func::<(), ()>(&mut store, "g").unwrap();
        g.call(&mut store, ()).unwrap();
        assert_eq!(store.data(), &[1]);
        // The cut one traps, named; so does the same function reached through the table.
        let f = instance.get_typed_func::<(), i32>(&mut store, "f").unwrap();
        let e = f.call(&mut store, ()).unwrap_err();
        let trace = e
            .downcast_ref::<wasmtime::WasmBacktrace>()
            .expect("a backtrace");
        assert_eq!(
            trace.frames()[0].func_name(),
            Some("loadtest-cut-import:loadtest:scenario/browser@0.3.10#open")
        );
        let table = instance.get_table(&mut store, "t").unwrap();
        let first = table.get(&mut store, 0).unwrap();
        let first = first.as_func().unwrap().unwrap();
        let e = first.call(
            &mut store,
            &[wasmtime::Val::I32(3)],
            &mut [wasmtime::Val::I32(0)],
        );
        let e = e.unwrap_err();
        let trace = e
            .downcast_ref::<wasmtime::WasmBacktrace>()
            .expect("a backtrace");
        assert_eq!(
            trace.frames()[0].func_name(),
            Some("loadtest-cut-import:loadtest:scenario/browser@0.3.10#open")
        );
    }
}
