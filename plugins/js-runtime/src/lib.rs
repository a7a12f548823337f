//! The JavaScript route's QuickJS runtime built from source (issue #53): QuickJS-ng
//! (the C sources of the `rquickjs-sys` crate, compiled by Debian's clang) with the
//! script world's bindings made by wit-bindgen, so no dynamic linking and no prebuilt
//! runtime. `host build` selects it with `LOADTEST_JS_RUNTIME` (host/src/author/js):
//! the host calls `init` once under Wizer with the k6 layer and the script's bundle as
//! one ES module, and each VU's instance starts from that snapshot.
//!
//! The contract's imports reach JavaScript as the vendored componentize-qjs runtime
//! gives them (`import http from 'loadtest:scenario/http@0.3.10'`, values as `js.rs`
//! says) through `bridge.rs`, which the host generates from the WIT; the exports call
//! the module's `plugin` and `summary` objects.

#![allow(clippy::missing_safety_doc)]

// Generated (host/src/author/js/bridge.rs), compared byte for byte by the host's test.
#[rustfmt::skip]
mod bridge;
mod fast;
mod js;
mod natives;
mod scratch;

/// wasi-libc's `malloc`, except for the scratch buffer `cabi_realloc` lends a
/// WebSocket message's text (scratch.rs).
#[global_allocator]
static ALLOC: scratch::Alloc = scratch::Alloc;

use core::ffi::{c_char, c_int, CStr};
use js::{Cx, FromJs, Handle, JSValue, Js};
use rquickjs_sys as q;

#[allow(clippy::all, dead_code, unused_imports)]
mod bindings {
    wit_bindgen::generate!({
        path: ["../../wit/scenario.wit", "../../host/src/author/js/layer.wit", "wit/runtime.wit"],
        world: "loadtest:js-runtime/k6-script",
        generate_all,
    });
}

use bindings::exports::loadtest::scenario::{plugin, summary};

/// The runtime's state, made by `init` and kept in the snapshot.
struct State {
    cx: *mut q::JSContext,
    /// The module's namespace (its exports).
    namespace: JSValue,
    /// The imported interfaces, by name, for the module loader.
    interfaces: Vec<(&'static str, JSValue)>,
    /// The prototypes of the imported resources' classes, by the bridge's slot.
    protos: Vec<JSValue>,
    /// `plugin`, `plugin.iteration` and the last scenario name passed to it, found
    /// on the first iteration and kept: an iteration is the call made per request
    /// loop, and looking both names up (an atom each) and making the name's string
    /// every time was work the answer never changes (the layer's `plugin` object is
    /// the bundle's own export, out of the script's reach).
    iteration: Option<(JSValue, JSValue, String, JSValue)>,
}

static mut STATE: Option<State> = None;

extern "C" {
    /// Makes everything alive now immortal and invisible to the cycle collector, and
    /// takes the allocator's partly free arenas off its free lists (c/snapshot.c): a VU
    /// then writes fewer of the snapshot's pages it shares with every other VU.
    fn JS_FreezeSnapshot(ctx: *mut q::JSContext);
}

#[allow(static_mut_refs)]
fn state() -> &'static mut State {
    unsafe { STATE.as_mut().expect("init ran under Wizer") }
}

/// The prototype of imported resource class `slot` (the bridge's numbering).
pub(crate) fn proto(slot: usize) -> JSValue {
    state().protos[slot]
}

/// A bridged function as QuickJS calls it.
pub(crate) type Native =
    unsafe extern "C" fn(*mut q::JSContext, JSValue, c_int, *mut JSValue) -> JSValue;

/// Sets `obj[name]` to a native function.
pub(crate) fn put_fn(cx: Cx, obj: JSValue, name: &CStr, f: Native, len: usize) -> Js<()> {
    let v = cx.check(unsafe {
        q::JS_NewCFunction2(
            cx.0,
            Some(f),
            name.as_ptr(),
            len as c_int,
            q::JSCFunctionEnum_JS_CFUNC_generic,
            0,
        )
    })?;
    cx.set(obj, name, v)
}

/// `this`'s resource dropped (its handle released to the host); again is a no-op.
pub(crate) unsafe extern "C" fn dispose_fn<R: Handle>(
    ctx: *mut q::JSContext,
    this: JSValue,
    _argc: c_int,
    _argv: *mut JSValue,
) -> JSValue {
    let cx = Cx(ctx);
    js::call(|| {
        let h = cx.prop(this, js::HANDLE_KEY)?;
        if unsafe { q::JS_IsUndefined(h) } {
            return Ok(q::JS_UNDEFINED);
        }
        let handle = u32::from_js(cx, h)?;
        cx.set(this, js::HANDLE_KEY, q::JS_UNDEFINED)?;
        drop(unsafe { R::from_handle(handle) });
        Ok(q::JS_UNDEFINED)
    })
}

/// An imported resource's class: a constructor (one that throws when the WIT has none),
/// its prototype in slot `slot`, and `[Symbol.dispose]()` on the prototype.
pub(crate) fn class(
    cx: Cx,
    name: &CStr,
    ctor: Option<(Native, usize)>,
    slot: usize,
    dispose: Native,
) -> Js<(JSValue, JSValue)> {
    unsafe extern "C" fn no_ctor(
        ctx: *mut q::JSContext,
        _this: JSValue,
        _argc: c_int,
        _argv: *mut JSValue,
    ) -> JSValue {
        Cx(ctx).type_error("this resource has no constructor");
        q::JS_EXCEPTION
    }
    let (f, len) = ctor.unwrap_or((no_ctor, 0));
    let cls = cx.check(unsafe {
        q::JS_NewCFunction2(
            cx.0,
            Some(f),
            name.as_ptr(),
            len as c_int,
            q::JSCFunctionEnum_JS_CFUNC_constructor_or_func,
            0,
        )
    })?;
    let proto = cx.object()?;
    unsafe { q::JS_SetConstructor(cx.0, cls, proto) };
    // The well-known Symbol.dispose (the layer's `h[Symbol.dispose]()`) and the
    // registered one (`Symbol.for('dispose')`, the vendored runtime's).
    let global = unsafe { q::JS_GetGlobalObject(cx.0) };
    let symbol = cx.prop(global, c"Symbol")?;
    cx.free(global);
    let well_known = cx.prop(symbol, c"dispose")?;
    cx.free(symbol);
    let registered = unsafe { q::JS_NewSymbol(cx.0, c"dispose".as_ptr(), true) };
    for key in [well_known, registered] {
        let f = cx.check(unsafe {
            q::JS_NewCFunction2(
                cx.0,
                Some(dispose),
                c"dispose".as_ptr(),
                0,
                q::JSCFunctionEnum_JS_CFUNC_generic,
                0,
            )
        })?;
        if unsafe { q::JS_IsSymbol(key) } {
            let atom = unsafe { q::JS_ValueToAtom(cx.0, key) };
            unsafe { q::JS_SetProperty(cx.0, proto, atom, f) };
            unsafe { q::JS_FreeAtom(cx.0, atom) };
        } else {
            cx.free(f);
        }
        cx.free(key);
    }
    let protos = &mut state().protos;
    if protos.len() <= slot {
        protos.resize(slot + 1, q::JS_UNDEFINED);
    }
    protos[slot] = unsafe { q::JS_DupValue(cx.0, proto) };
    Ok((cls, proto))
}

/// Resolves `loadtest:...` imports to the bridge's interface objects (as the module's
/// `default` export); nothing else is importable (the bundle holds the script's files).
unsafe extern "C" fn load_module(
    ctx: *mut q::JSContext,
    name: *const c_char,
    _opaque: *mut core::ffi::c_void,
) -> *mut q::JSModuleDef {
    unsafe extern "C" fn init_module(ctx: *mut q::JSContext, m: *mut q::JSModuleDef) -> c_int {
        let cx = Cx(ctx);
        let atom = unsafe { q::JS_GetModuleName(ctx, m) };
        let v = unsafe { q::JS_AtomToString(ctx, atom) };
        unsafe { q::JS_FreeAtom(ctx, atom) };
        let name = cx.text(v).unwrap_or_default();
        cx.free(v);
        match state().interfaces.iter().find(|(n, _)| *n == name) {
            Some((_, o)) => unsafe {
                q::JS_SetModuleExport(ctx, m, c"default".as_ptr(), q::JS_DupValue(ctx, *o))
            },
            None => -1,
        }
    }
    let text = unsafe { CStr::from_ptr(name) }.to_string_lossy();
    let cx = Cx(ctx);
    if !state().interfaces.iter().any(|(n, _)| *n == text) {
        cx.type_error(&format!(
            "module {text} is not bundled (imports are bundled by host build)"
        ));
        return core::ptr::null_mut();
    }
    let m = unsafe { q::JS_NewCModule(ctx, name, Some(init_module)) };
    if !m.is_null() {
        unsafe { q::JS_AddModuleExport(ctx, m, c"default".as_ptr()) };
    }
    m
}

/// Runs the jobs QuickJS queued (promise reactions of native promises).
fn run_jobs(cx: Cx) {
    let rt = unsafe { q::JS_GetRuntime(cx.0) };
    loop {
        let mut pctx = core::ptr::null_mut();
        let r = unsafe { q::JS_ExecutePendingJob(rt, &mut pctx) };
        if r <= 0 {
            if r < 0 {
                let e = unsafe { q::JS_GetException(pctx) };
                Cx(pctx).free(e);
            }
            break;
        }
    }
}

/// The pending exception as text, its stack when it has one.
fn exception_text(cx: Cx) -> String {
    let e = unsafe { q::JS_GetException(cx.0) };
    let mut text = cx.text(e).unwrap_or_else(|_| "an exception".into());
    if unsafe { q::JS_IsObject(e) } {
        if let Ok(Some(stack)) = cx.field::<Option<String>>(e, c"stack") {
            if !stack.is_empty() {
                text = format!("{text}\n{stack}");
            }
        }
    }
    cx.free(e);
    text
}

/// Evaluates `src` as a script.
fn eval_script(cx: Cx, src: &str, file: &CStr) -> Result<(), String> {
    let v = unsafe {
        q::JS_Eval(
            cx.0,
            src.as_ptr() as *const c_char,
            src.len() as _,
            file.as_ptr(),
            q::JS_EVAL_TYPE_GLOBAL as c_int,
        )
    };
    if unsafe { q::JS_IsException(v) } {
        return Err(exception_text(cx));
    }
    cx.free(v);
    Ok(())
}

/// Compiles and evaluates `src` as the ES module; its namespace.
fn eval_module(cx: Cx, src: &str) -> Result<JSValue, String> {
    let mut text = src.as_bytes().to_vec();
    // JS_Eval wants a NUL after the text.
    text.push(0);
    let f = unsafe {
        q::JS_Eval(
            cx.0,
            text.as_ptr() as *const c_char,
            src.len() as _,
            c"script.js".as_ptr(),
            (q::JS_EVAL_TYPE_MODULE | q::JS_EVAL_FLAG_COMPILE_ONLY) as c_int,
        )
    };
    if unsafe { q::JS_IsException(f) } {
        return Err(exception_text(cx));
    }
    let m = unsafe { q::JS_VALUE_GET_PTR(f) } as *mut q::JSModuleDef;
    let p = unsafe { q::JS_EvalFunction(cx.0, f) };
    if unsafe { q::JS_IsException(p) } {
        return Err(exception_text(cx));
    }
    run_jobs(cx);
    if unsafe { q::JS_PromiseState(cx.0, p) } == q::JSPromiseStateEnum_JS_PROMISE_REJECTED {
        let r = unsafe { q::JS_PromiseResult(cx.0, p) };
        cx.free(p);
        cx.throw(r);
        return Err(exception_text(cx));
    }
    cx.free(p);
    Ok(unsafe { q::JS_GetModuleNamespace(cx.0, m) })
}

/// Calls `ns[object][method](args...)`; what it returned or what it threw.
fn call_export(object: &CStr, method: &CStr, args: &mut [JSValue]) -> Result<JSValue, JSValue> {
    let s = state();
    let cx = Cx(s.cx);
    let target = cx
        .prop(s.namespace, object)
        .map_err(|_| unsafe { q::JS_GetException(cx.0) })?;
    let f = cx
        .prop(target, method)
        .map_err(|_| unsafe { q::JS_GetException(cx.0) })?;
    let r = unsafe { q::JS_Call(cx.0, f, target, args.len() as c_int, args.as_mut_ptr()) };
    cx.free(f);
    cx.free(target);
    for a in args.iter() {
        cx.free(*a);
    }
    finish_call(cx, r)
}

/// The end of an export's call: its value, or the exception it threw, once the jobs
/// it queued (promise reactions) have run.
fn finish_call(cx: Cx, r: JSValue) -> Result<JSValue, JSValue> {
    let out = if unsafe { q::JS_IsException(r) } {
        Err(unsafe { q::JS_GetException(cx.0) })
    } else {
        Ok(r)
    };
    run_jobs(cx);
    out
}

/// `plugin.iteration(scenario)` as [`call_export`] calls it, with the function and the
/// scenario's string kept from the last call.
fn call_iteration(scenario: &str) -> Result<JSValue, JSValue> {
    let s = state();
    let cx = Cx(s.cx);
    if s.iteration.is_none() {
        let target = cx
            .prop(s.namespace, c"plugin")
            .map_err(|_| unsafe { q::JS_GetException(cx.0) })?;
        let f = match cx.prop(target, c"iteration") {
            Ok(f) => f,
            Err(_) => {
                cx.free(target);
                return Err(unsafe { q::JS_GetException(cx.0) });
            }
        };
        s.iteration = Some((target, f, String::new(), q::JS_UNDEFINED));
    }
    let Some((target, f, name, name_js)) = s.iteration.as_mut() else {
        unreachable!("set above")
    };
    if unsafe { q::JS_IsUndefined(*name_js) } || name != scenario {
        cx.free(*name_js);
        *name_js = arg(scenario);
        *name = scenario.to_owned();
    }
    let mut args = [*name_js];
    let r = unsafe { q::JS_Call(cx.0, *f, *target, 1, args.as_mut_ptr()) };
    finish_call(cx, r)
}

/// An export's thrown value as its `err` string: a `payload` it carries, an `Error`'s
/// message, or the value as text (the vendored runtime's rule for `result<_, string>`).
fn err_text(cx: Cx, e: JSValue) -> String {
    let own_payload = unsafe {
        q::JS_IsObject(e) && {
            let atom = q::JS_NewAtom(cx.0, c"payload".as_ptr());
            let has = q::JS_GetOwnProperty(cx.0, core::ptr::null_mut(), e, atom) > 0;
            q::JS_FreeAtom(cx.0, atom);
            has
        }
    };
    let text = if own_payload {
        cx.field::<String>(e, c"payload")
    } else if unsafe { q::JS_IsError(e) } {
        cx.field::<String>(e, c"message")
    } else {
        cx.text(e)
    };
    cx.free(e);
    text.unwrap_or_else(|_| exception_text(cx))
}

/// A string argument for an export call.
fn arg(s: &str) -> JSValue {
    Cx(state().cx).string(s).unwrap_or(q::JS_UNDEFINED)
}

/// `ok` with the value converted, or `err` with what was thrown.
fn result_of<T: FromJs>(r: Result<JSValue, JSValue>) -> Result<T, String> {
    let cx = Cx(state().cx);
    match r {
        Ok(v) => {
            let out = T::from_js(cx, v).map_err(|_| exception_text(cx));
            cx.free(v);
            out
        }
        Err(e) => Err(err_text(cx, e)),
    }
}

impl FromJs for plugin::ScenarioInfo {
    fn from_js(cx: Cx, v: JSValue) -> Js<Self> {
        Ok(Self {
            name: cx.field(v, c"name")?,
            description: cx.field(v, c"description")?,
        })
    }
}

impl FromJs for plugin::PluginInfo {
    fn from_js(cx: Cx, v: JSValue) -> Js<Self> {
        Ok(Self {
            name: cx.field(v, c"name")?,
            version: cx.field(v, c"version")?,
            description: cx.field(v, c"description")?,
            scenarios: cx.field(v, c"scenarios")?,
            default_config: cx.field(v, c"defaultConfig")?,
        })
    }
}

struct Runtime;

impl bindings::Guest for Runtime {
    fn init(
        shim: String,
        script: String,
        _entry_path: Option<String>,
        disable_gc: bool,
    ) -> Result<(), String> {
        unsafe {
            let rt = q::JS_NewRuntime();
            if disable_gc {
                q::JS_SetGCThreshold(rt, usize::MAX as _);
            }
            let ctx = q::JS_NewContext(rt);
            q::JS_SetModuleLoaderFunc(rt, None, Some(load_module), core::ptr::null_mut());
            STATE = Some(State {
                cx: ctx,
                namespace: q::JS_UNDEFINED,
                interfaces: Vec::new(),
                protos: vec![q::JS_UNDEFINED; bridge::RESOURCES],
                iteration: None,
            });
        }
        let cx = Cx(state().cx);
        let interfaces = bridge::interfaces(cx).map_err(|_| exception_text(cx))?;
        natives::install(cx, &interfaces).map_err(|_| exception_text(cx))?;
        state().interfaces = interfaces;
        eval_script(cx, &shim, c"shim.js")?;
        let ns = eval_module(cx, &script)?;
        state().namespace = ns;
        // The last step under Wizer: what is alive now is the snapshot every VU shares.
        // The texts first, so their memory is among what the freeze takes out of reuse.
        drop((shim, script));
        unsafe { JS_FreezeSnapshot(cx.0) };
        Ok(())
    }
}

impl plugin::Guest for Runtime {
    fn describe() -> plugin::PluginInfo {
        match result_of(call_export(c"plugin", c"describe", &mut [])) {
            Ok(info) => info,
            Err(e) => panic!("describe failed: {e}"),
        }
    }

    fn setup(config: String) -> Result<String, String> {
        result_of(call_export(c"plugin", c"setup", &mut [arg(&config)]))
    }

    fn init(data: String) -> Result<(), String> {
        result_of(call_export(c"plugin", c"init", &mut [arg(&data)]))
    }

    fn iteration(scenario: String) -> Result<(), String> {
        result_of(call_iteration(&scenario))
    }

    fn teardown(data: String) -> Result<(), String> {
        result_of(call_export(c"plugin", c"teardown", &mut [arg(&data)]))
    }
}

impl summary::Guest for Runtime {
    fn handle_summary(data: String) -> Result<Vec<(String, Vec<u8>)>, String> {
        result_of(call_export(c"summary", c"handleSummary", &mut [arg(&data)]))
    }
}

bindings::export!(Runtime with_types_in bindings);
