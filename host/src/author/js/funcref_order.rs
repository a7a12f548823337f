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
    leb(&mut out, rewritten.len() as u64);
    out.extend_from_slice(&rewritten);
    out.extend_from_slice(&component[body.end..]);
    Ok(out)
}

/// The start of the largest top-level core module section's header and its module's
/// byte range.
fn largest_core_module(component: &[u8]) -> Result<Option<(usize, std::ops::Range<usize>)>> {
    if component.len() < 8 || &component[..4] != b"\0asm" {
        bail!("not a WebAssembly binary");
    }
    let mut best: Option<(usize, std::ops::Range<usize>)> = None;
    let mut at = 8;
    while at < component.len() {
        let id = component[at];
        let (size, body) = read_leb(component, at + 1)?;
        let end = body + size as usize;
        if end > component.len() {
            bail!("a section runs past the end of the component");
        }
        if id == 1 && best.as_ref().is_none_or(|(_, r)| r.len() < end - body) {
            best = Some((at, body..end));
        }
        at = end;
    }
    Ok(best)
}

/// `module` with a declarative segment of the functions named in `hot` first in its
/// element section; `None` when it has no element section or names none of them.
fn declare_first(module: &[u8], hot: &[&str]) -> Result<Option<Vec<u8>>> {
    let mut names = Vec::new();
    let mut elements = None;
    let mut sections = Vec::new(); // (id, whole section's range)
    let mut at = 8;
    while at < module.len() {
        let id = module[at];
        let (size, body) = read_leb(module, at + 1)?;
        let end = body + size as usize;
        if end > module.len() {
            bail!("a section runs past the end of the module");
        }
        sections.push((id, at..end));
        match id {
            9 => elements = Some(body..end),
            0 => {
                let reader = wp::CustomSectionReader::new(wp::BinaryReader::new(
                    &module[body..end],
                    body as u64,
                ))
                .context("cannot read a custom section")?;
                if let wp::KnownCustom::Name(reader) = reader.as_known() {
                    names = function_names(reader)?;
                }
            }
            _ => {}
        }
        at = end;
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
    let (count, first) = read_leb(module, elements.start)?;
    let mut section = Vec::new();
    leb(&mut section, count + 1);
    section.push(3); // declarative, `elemkind` and function indices
    section.push(0); // elemkind funcref
    leb(&mut section, wanted.len() as u64);
    for index in &wanted {
        leb(&mut section, u64::from(*index));
    }
    section.extend_from_slice(&module[first..elements.end]);
    let mut out = Vec::with_capacity(module.len() + section.len() - elements.len() + 8);
    out.extend_from_slice(&module[..8]);
    for (id, range) in sections {
        if id == 9 {
            out.push(9);
            leb(&mut out, section.len() as u64);
            out.extend_from_slice(&section);
        } else {
            out.extend_from_slice(&module[range]);
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

/// An unsigned LEB128 at `at`: its value and the offset after it.
fn read_leb(bytes: &[u8], mut at: usize) -> Result<(u64, usize)> {
    let mut value = 0u64;
    let mut shift = 0;
    loop {
        let Some(&byte) = bytes.get(at) else {
            bail!("a LEB128 number runs past the end");
        };
        at += 1;
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok((value, at));
        }
        shift += 7;
        if shift > 35 {
            bail!("a LEB128 number is too long");
        }
    }
}

fn leb(out: &mut Vec<u8>, mut value: u64) {
    loop {
        let byte = (value & 0x7f) as u8;
        value >>= 7;
        if value == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
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
