//! The runtime's functions that an event calls through its table are given the first
//! places among its function references, so a VU's wake-up touches one page of
//! wasmtime's per-instance context for them instead of six (issue #53, results/js.md
//! "The host-heap pages of a message's wake-up, by allocation").
//!
//! wasmtime keeps a `VMFuncRef` (32 bytes) in each instance's context for every
//! function that escapes (imported, exported, in an element segment), in the order the
//! functions first escape while the module is read: imports, exports, then the element
//! segments in order. The runtime's main module has ~900 of them (a 28 KiB context per
//! VU), and a `call_indirect` reads the callee's. QuickJS calls every native function
//! (`js_call_c_function`, a class's call hook), its allocator (`js_def_malloc`, ...)
//! and the layer's natives through the table, so the few functions an event calls sat
//! on six pages of that context, read at every wake-up of every VU.
//!
//! A declarative element segment (`(elem declare func ...)`) placed first in the element
//! section makes those functions escape first: their references sit together right
//! after the exports'. It only declares the functions; the table, its indices (the C
//! function pointers) and every active segment are unchanged, so nothing the module
//! does changes but where wasmtime puts the references.

use anyhow::{bail, Context, Result};
use std::ops::Range;
use wasm_encoder::Encode;
use wasmparser_258 as wp;

/// The functions that an event (a WebSocket message handed to a script, a metric
/// added, a native call) calls through the table, by name in the runtime's name
/// section; a Rust function's legacy mangled name is given without its hash
/// (`17h…E`). Measured with `bench/js/wsinstr.py`'s callgrind profile of wsrecv.js
/// (the table's functions run at every message). A name the runtime lacks is skipped:
/// the order only places references, so a stale list costs pages, never behaviour.
const HOT: &[&str] = &[
    // QuickJS's call hook for native functions: every native call goes through it.
    "js_call_c_function",
    // QuickJS's allocator hooks (`JSMallocFunctions`).
    "js_def_malloc",
    "js_def_free",
    "js_def_realloc",
    "js_def_calloc",
    // The layer's natives: the receive loop and metric adds.
    "_ZN10js_runtime7natives9recv_loop",
    "_ZN10js_runtime7natives10metric_add",
    "_ZN10js_runtime7natives10native_add",
    // `String.prototype.indexOf`, which capacity's message handler calls.
    "js_string_indexOf",
];

/// What the build cache's key holds for this step: a change to it changes the key.
pub(crate) const KEY: &[u8] = b"hot function references first, 1";

/// `component` with a declarative element segment naming [`HOT`]'s functions placed
/// first in its main core module's element section (the largest top-level core
/// module: the runtime's). A component whose main module has no element section, or
/// none of the functions, is returned as it is.
pub(crate) fn hot_first(component: &[u8]) -> Result<Vec<u8>> {
    let Some((header, body)) = largest_core_module(component)? else {
        return Ok(component.to_vec());
    };
    let module = &component[body.clone()];
    let Some(rewritten) = declare_first(module, HOT)? else {
        return Ok(component.to_vec());
    };
    let mut out = Vec::with_capacity(component.len() + 64);
    out.extend_from_slice(&component[..header]);
    out.push(1); // a core module section
    rewritten.len().encode(&mut out);
    out.extend_from_slice(&rewritten);
    out.extend_from_slice(&component[body.end..]);
    Ok(out)
}

/// The start of the largest top-level core module section's header and its module's
/// byte range.
fn largest_core_module(component: &[u8]) -> Result<Option<(usize, Range<usize>)>> {
    Ok(sections(component)?
        .into_iter()
        .filter(|section| section.id == 1)
        .max_by_key(|section| section.body.len())
        .map(|section| (section.whole.start, section.body)))
}

/// One top-level section of a wasm binary.
struct Section {
    /// Its id (a module's and a component's ids differ in meaning, not in form).
    id: u8,
    /// The whole section: id, size and body.
    whole: Range<usize>,
    /// Its body.
    body: Range<usize>,
}

/// The top-level sections of a module or a component, in order.
fn sections(bytes: &[u8]) -> Result<Vec<Section>> {
    if bytes.len() < 8 || &bytes[..4] != b"\0asm" {
        bail!("not a WebAssembly binary");
    }
    let mut out = Vec::new();
    let mut at = 8;
    while at < bytes.len() {
        let id = bytes[at];
        let (size, body) = read_u32(bytes, at + 1).context("cannot read a section's size")?;
        let end = body + size as usize;
        if end > bytes.len() {
            bail!("a section runs past the end of the binary");
        }
        out.push(Section {
            id,
            whole: at..end,
            body: body..end,
        });
        at = end;
    }
    Ok(out)
}

/// An unsigned LEB128 `u32` at `at`: its value and the offset after it.
fn read_u32(bytes: &[u8], at: usize) -> Result<(u32, usize)> {
    let Some(rest) = bytes.get(at..) else {
        bail!("a number runs past the end");
    };
    let mut reader = wp::BinaryReader::new(rest, at as u64);
    let value = reader.read_var_u32()?;
    Ok((value, reader.original_position() as usize))
}

/// `module` with a declarative segment of the functions named in `hot` first in its
/// element section; `None` when it has no element section or names none of them.
fn declare_first(module: &[u8], hot: &[&str]) -> Result<Option<Vec<u8>>> {
    let sections = sections(module)?;
    let mut names = Vec::new();
    let mut elements = None;
    for section in &sections {
        match section.id {
            9 => elements = Some(section.body.clone()),
            0 => {
                let body = section.body.clone();
                let reader = wp::CustomSectionReader::new(wp::BinaryReader::new(
                    &module[body.clone()],
                    body.start as u64,
                ))
                .context("cannot read a custom section")?;
                if let wp::KnownCustom::Name(reader) = reader.as_known() {
                    names = function_names(reader)?;
                }
            }
            _ => {}
        }
    }
    let Some(elements) = elements else {
        return Ok(None);
    };
    let wanted: Vec<u32> = hot
        .iter()
        .filter_map(|hot| {
            names
                .iter()
                .find(|(_, name)| named(name, hot))
                .map(|(index, _)| *index)
        })
        .collect();
    if wanted.is_empty() {
        return Ok(None);
    }
    // The element section: its count one more, the new segment, the old ones as they were.
    let (count, first) = read_u32(module, elements.start)?;
    let mut section = Vec::new();
    (count + 1).encode(&mut section);
    section.push(3); // declarative, `elemkind` and function indices
    section.push(0); // elemkind funcref
    wanted.len().encode(&mut section);
    for index in &wanted {
        index.encode(&mut section);
    }
    section.extend_from_slice(&module[first..elements.end]);
    let mut out = Vec::with_capacity(module.len() + section.len() - elements.len() + 8);
    out.extend_from_slice(&module[..8]);
    for each in &sections {
        if each.id == 9 {
            out.push(9);
            section.len().encode(&mut out);
            out.extend_from_slice(&section);
        } else {
            out.extend_from_slice(&module[each.whole.clone()]);
        }
    }
    wp::Validator::new_with_features(wp::WasmFeatures::all())
        .validate_all(&out)
        .context("the module with its hot functions declared first does not validate")?;
    Ok(Some(out))
}

/// Whether the name section's `name` is `hot`: equal, or a Rust legacy mangled name
/// that is `hot` followed by its hash (`17h` + 16 hex digits + `E`).
fn named(name: &str, hot: &str) -> bool {
    name == hot
        || name
            .strip_prefix(hot)
            .is_some_and(|rest| rest.len() == 20 && rest.starts_with("17h") && rest.ends_with('E'))
}

/// (function index, name) from a name section's function names.
fn function_names(reader: wp::NameSectionReader<'_>) -> Result<Vec<(u32, String)>> {
    let mut out = Vec::new();
    for sub in reader {
        if let wp::Name::Function(map) = sub.context("cannot read the name section")? {
            for naming in map {
                let naming = naming.context("cannot read a function's name")?;
                out.push((naming.index, naming.name.to_string()));
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A component whose main module calls `$hot` and `$cold` through its table and
    /// names them; a small second module beside it.
    fn component() -> Vec<u8> {
        wat::parse_str(
            r#"(component
                (core module $small (func $f))
                (core module $main
                  (table 4 funcref)
                  (func $cold (result i32) i32.const 1)
                  (func $other (result i32) i32.const 2)
                  (func $js_def_malloc (result i32) i32.const 3)
                  (func $_ZN10js_runtime7natives9recv_loop17h0123456789abcdefE (result i32) i32.const 4)
                  (func (export "run") (param i32) (result i32)
                    local.get 0
                    call_indirect (result i32))
                  (elem (i32.const 0) func $cold $other $js_def_malloc $_ZN10js_runtime7natives9recv_loop17h0123456789abcdefE))
              )"#,
        )
        .expect("the test component parses")
    }

    /// The element segments of the main module, in order: (declarative?, functions).
    fn segments(component: &[u8]) -> Vec<(bool, Vec<u32>)> {
        let (_, body) = largest_core_module(component).unwrap().unwrap();
        let mut out = Vec::new();
        for payload in wp::Parser::new(0).parse_all(&component[body]) {
            if let wp::Payload::ElementSection(reader) = payload.unwrap() {
                for segment in reader {
                    let segment = segment.unwrap();
                    let declared = matches!(segment.kind, wp::ElementKind::Declared);
                    let wp::ElementItems::Functions(funcs) = segment.items else {
                        panic!("function indices expected");
                    };
                    out.push((declared, funcs.into_iter().map(|f| f.unwrap()).collect()));
                }
            }
        }
        out
    }

    #[test]
    fn the_hot_functions_are_declared_first_and_the_table_is_unchanged() {
        let before = component();
        let after = hot_first(&before).unwrap();
        // $js_def_malloc is function 2, recv_loop (named with its hash) 3.
        assert_eq!(
            segments(&after),
            vec![(true, vec![2, 3]), (false, vec![0, 1, 2, 3])]
        );
        assert_eq!(segments(&before), vec![(false, vec![0, 1, 2, 3])]);
        wp::Validator::new_with_features(wp::WasmFeatures::all())
            .validate_all(&after)
            .expect("the rewritten component validates");
    }

    #[test]
    fn a_component_without_the_hot_functions_is_left_as_it_is() {
        let plain = wat::parse_str(
            r#"(component (core module (table 1 funcref) (func $f) (elem (i32.const 0) func $f)))"#,
        )
        .unwrap();
        assert_eq!(hot_first(&plain).unwrap(), plain);
    }

    /// The list is checked against the runtime this host embeds: a name it lacks (a
    /// function renamed, or no longer called through the table) fails here rather
    /// than costing pages unnoticed.
    #[cfg(js_runtime_built)]
    #[test]
    fn every_hot_function_is_in_the_embedded_runtimes_table() {
        let runtime = include_bytes!(concat!(env!("OUT_DIR"), "/js_runtime.wasm"));
        let after = hot_first(runtime).unwrap();
        let segments = segments(&after);
        let (declared, first) = &segments[0];
        assert!(declared);
        assert_eq!(
            first.len(),
            HOT.len(),
            "a name in HOT is missing from the runtime"
        );
        for index in first {
            assert!(
                segments[1..].iter().any(|(_, funcs)| funcs.contains(index)),
                "function {index} is not in the table"
            );
        }
    }

    #[test]
    fn a_name_matches_itself_or_its_hashed_rust_form_only() {
        assert!(named("js_def_free", "js_def_free"));
        assert!(named("_ZN2a1b17h0123456789abcdefE", "_ZN2a1b"));
        assert!(!named("_ZN2a1bc17h0123456789abcdefE", "_ZN2a1b"));
        assert!(!named("js_def_free2", "js_def_free"));
    }
}
