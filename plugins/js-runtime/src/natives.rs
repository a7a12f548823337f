//! Native functions the k6 layer uses on this runtime beyond the WIT's (the vendored
//! runtime has none, and the layer then runs its JavaScript versions): the parts of a
//! WebSocket message's path that run once per message (issue #53 goal 2: capacity.js's
//! 200 sockets × ~20 pushes a second, each a wake-up of one VU among 200), so the
//! interpreter runs only the script's own callback.
//!
//! - `sockets.recvLoop`: the one-socket receive loop of the layer's event loop
//!   (layer/event-loop.js, `runLoop`), receiving with `sockets.recv-text` and calling
//!   the socket's handlers itself, for as long as the JavaScript loop would have.
//! - `samples.nativeAdd(epoch)`: `add` of a k6 metric (layer/metrics.js) for its common
//!   case, `counter.add(1)` with no tags of its own and the series' number known for
//!   the VU's and group's tags, recorded with `samples.add` as the JavaScript did; any
//!   other call goes to the metric's `_add`, the JavaScript path.

use crate::bindings::loadtest::k6_layer::{samples, sockets};
use crate::fast;
use crate::js::{call, Args, Cx, JSValue, Js, Thrown};
use crate::put_fn;
use core::ffi::{c_char, c_int, CStr};
use rquickjs_sys as q;

/// Adds the natives to the bridge's interface objects (by their module names).
pub(crate) fn install(cx: Cx, interfaces: &[(&'static str, JSValue)]) -> Js<()> {
    for (name, o) in interfaces {
        match *name {
            "loadtest:k6-layer/sockets@0.1.0" => put_fn(cx, *o, c"recvLoop", recv_loop, 11)?,
            "loadtest:k6-layer/samples@0.1.0" => put_fn(cx, *o, c"nativeAdd", native_add, 1)?,
            _ => {}
        }
    }
    Ok(())
}

/// Atoms of the property names read here, made on first use and never freed (an atom
/// per call would hash the name and look it up in the atom table each time).
struct Atoms {
    open: q::JSAtom,
    last: q::JSAtom,
    id: q::JSAtom,
    at: q::JSAtom,
    plain: q::JSAtom,
    add: q::JSAtom,
}

static mut ATOMS: Option<Atoms> = None;

#[allow(static_mut_refs)]
fn atoms(cx: Cx) -> &'static Atoms {
    unsafe {
        ATOMS.get_or_insert_with(|| {
            let atom = |name: &CStr| q::JS_NewAtom(cx.0, name.as_ptr());
            Atoms {
                open: atom(c"open"),
                last: atom(c"last"),
                id: atom(c"_id"),
                at: atom(c"_at"),
                plain: atom(c"_plain"),
                add: atom(c"_add"),
            }
        })
    }
}

/// `recvLoop(handle, until, ms, handlers, entry, owner, queue, microtasks, asyncQueue,
/// timerSeq, ids)`: receives text messages on `handle` (a WebSocket) with
/// `recv-text(handle, until, ms)` and calls `handlers` with each, until `recv-text`
/// gives nothing (returns `false`: the caller looks for a binary message or the
/// socket's end, as after its own `recvText`) or the JavaScript loop's condition to
/// stop holds after a message (returns `true`): `entry.open` false, a timer added
/// since (`timerSeq.last !== ids`), a callback, job or asyncRequest queued (`queue`,
/// `microtasks`, `asyncQueue` not empty), or `owner` (null or an entry) closed.
///
/// `handlers` is the k6/ws socket's array of 'message' handlers (each called as
/// `handlers[i](text)`, the array read again per message, so one added during a message
/// is called from the next on) or one function (called as `f(text)`). What a handler
/// throws is thrown from here, as from the JavaScript loop.
unsafe extern "C" fn recv_loop(
    ctx: *mut q::JSContext,
    _this: JSValue,
    argc: c_int,
    argv: *mut JSValue,
) -> JSValue {
    let cx = Cx(ctx);
    let args = Args::new(argc, argv);
    call(|| {
        let socket: u32 = args.get(cx, 0)?;
        let until: f64 = args.get(cx, 1)?;
        let ms: u32 = args.get(cx, 2)?;
        let handlers = args.at(3);
        let (entry, owner) = (args.at(4), args.at(5));
        let (queue, microtasks, async_queue) = (args.at(6), args.at(7), args.at(8));
        let (seq, ids) = (args.at(9), args.get::<f64>(cx, 10)?);
        let list = unsafe { q::JS_IsArray(handlers) };
        let a = atoms(cx);
        #[allow(static_mut_refs)]
        let (slots, text_js) = unsafe { (&mut LOOP_SLOTS, &mut MESSAGE) };
        loop {
            // The text is lowered into the scratch buffer (scratch.rs), copied into the
            // kept message string (fast.rs) and dropped before the next receive.
            let Some(text) = crate::scratch::lend(|| sockets::recv_text(socket, until, ms)) else {
                return Ok(q::JS_FALSE);
            };
            let mut t = text_js.make(cx, &text)?;
            drop(text);
            let called = if list {
                call_each(cx, handlers, &mut t)
            } else {
                call_one(cx, handlers, q::JS_UNDEFINED, &mut t)
            };
            text_js.done(cx, t);
            called?;
            if !fast::truthy(cx, entry, a.open, &mut slots.open)?
                || fast::number(cx, seq, a.last, &mut slots.last)? != ids
                || fast::length(cx, queue)? != 0
                || fast::length(cx, microtasks)? != 0
                || fast::length(cx, async_queue)? != 0
                || (!unsafe { q::JS_IsNull(owner) }
                    && !fast::truthy(cx, owner, a.open, &mut slots.owner_open)?)
            {
                return Ok(q::JS_TRUE);
            }
        }
    })
}

/// Where `recv_loop` found its per-message properties last (fast.rs).
struct LoopSlots {
    open: fast::Slot,
    owner_open: fast::Slot,
    last: fast::Slot,
}

/// One per instance (a VU): its socket entries share a shape, as its metrics do.
static mut LOOP_SLOTS: LoopSlots = LoopSlots {
    open: fast::Slot::new(),
    owner_open: fast::Slot::new(),
    last: fast::Slot::new(),
};

/// The string the last message was handed to the handlers in (fast.rs).
static mut MESSAGE: fast::MessageString = fast::MessageString::new();

/// `f.call(this, *arg)`, its value dropped.
fn call_one(cx: Cx, f: JSValue, this: JSValue, arg: &mut JSValue) -> Js<()> {
    let r = cx.check(unsafe { q::JS_Call(cx.0, f, this, 1, arg) })?;
    cx.free(r);
    Ok(())
}

/// `handlers[i](*arg)` for each `i` (the length read as the loop goes, as a `for` over
/// `handlers.length` reads it).
fn call_each(cx: Cx, handlers: JSValue, arg: &mut JSValue) -> Js<()> {
    let mut i = 0;
    while i < fast::length(cx, handlers)? {
        let f = cx.check(unsafe { q::JS_GetPropertyUint32(cx.0, handlers, i) })?;
        let r = call_one(cx, f, handlers, arg);
        cx.free(f);
        r?;
        i += 1;
    }
    Ok(())
}

/// The layer's epoch of the VU's and group's tags (a `Float64Array` of one element,
/// layer/state.js's `tagsEpoch`: counted up whenever either changes), as `nativeAdd`
/// was given it; null until then.
static mut EPOCH: *const f64 = core::ptr::null();

/// `nativeAdd(epoch)`: keeps `epoch`'s element's address (the array is the layer's,
/// alive for the instance's life, and an array buffer's bytes do not move) and returns
/// [`metric_add`], the function the layer makes its metrics' `add`.
unsafe extern "C" fn native_add(
    ctx: *mut q::JSContext,
    _this: JSValue,
    argc: c_int,
    argv: *mut JSValue,
) -> JSValue {
    let cx = Cx(ctx);
    let args = Args::new(argc, argv);
    call(|| {
        let arr = args.at(0);
        if unsafe { q::JS_GetTypedArrayType(arr) }
            != q::JSTypedArrayEnum_JS_TYPED_ARRAY_FLOAT64 as c_int
        {
            return Err(cx.type_error("nativeAdd wants a Float64Array"));
        }
        let (mut off, mut len, mut per): (q::size_t, q::size_t, q::size_t) = (0, 0, 0);
        let buf = cx
            .check(unsafe { q::JS_GetTypedArrayBuffer(cx.0, arr, &mut off, &mut len, &mut per) })?;
        let mut size: q::size_t = 0;
        let p = unsafe { q::JS_GetArrayBuffer(cx.0, &mut size, buf) };
        cx.free(buf);
        if p.is_null() || (len as usize) < 8 {
            return Err(cx.type_error("nativeAdd wants a Float64Array of one element"));
        }
        unsafe { EPOCH = p.add(off as usize) as *const f64 };
        // The array is referenced by the layer for the instance's life; this keeps it
        // alive even if the layer dropped it, so the address stays valid.
        unsafe { q::JS_DupValue(cx.0, arr) };
        cx.check(unsafe {
            q::JS_NewCFunction2(
                cx.0,
                Some(metric_add),
                c"add".as_ptr() as *const c_char,
                2,
                q::JSCFunctionEnum_JS_CFUNC_generic,
                0,
            )
        })
    })
}

/// A metric's `add(value, tags)`: for `value` 1 (or any number but NaN when the
/// metric's `_plain`: not a rate), no `tags`, and a series number `_id` the layer found
/// for the tags of `tagsEpoch`'s current count (`_at`), `samples.add(_id, value)` and
/// `true`, as layer/metrics.js's fast path; anything else is `this._add(value, tags)`.
unsafe extern "C" fn metric_add(
    ctx: *mut q::JSContext,
    this: JSValue,
    argc: c_int,
    argv: *mut JSValue,
) -> JSValue {
    let cx = Cx(ctx);
    let args = Args::new(argc, argv);
    call(|| {
        if let Some((id, value)) = fast_sample(cx, this, &args)? {
            samples::add(id, value);
            return Ok(q::JS_TRUE);
        }
        let a = atoms(cx);
        let f = cx.check(unsafe { q::JS_GetProperty(cx.0, this, a.add) })?;
        let r = unsafe { q::JS_Call(cx.0, f, this, argc, argv) };
        cx.free(f);
        cx.check(r)
    })
}

/// The series and value of an `add` call the fast path takes, or none.
fn fast_sample(cx: Cx, this: JSValue, args: &Args) -> Js<Option<(u32, f64)>> {
    let epoch = unsafe { EPOCH };
    if epoch.is_null()
        || !unsafe { q::JS_IsObject(this) }
        || !unsafe { q::JS_IsUndefined(args.at(1)) }
    {
        return Ok(None);
    }
    let v = args.at(0);
    if !unsafe { q::JS_IsNumber(v) } {
        return Ok(None);
    }
    let a = atoms(cx);
    #[allow(static_mut_refs)]
    let slots = unsafe { &mut ADD_SLOTS };
    let id = fast::number(cx, this, a.id, &mut slots.id)?;
    if !(id >= 0.0 && id <= u32::MAX as f64)
        || fast::number(cx, this, a.at, &mut slots.at)? != unsafe { *epoch }
    {
        return Ok(None);
    }
    let mut value = 0.0;
    if unsafe { q::JS_ToFloat64(cx.0, &mut value, v) } < 0 {
        return Err(Thrown);
    }
    if value != 1.0 && (value.is_nan() || !fast::truthy(cx, this, a.plain, &mut slots.plain)?) {
        return Ok(None);
    }
    Ok(Some((id as u32, value)))
}

/// Where `fast_sample` found a metric's `_id`, `_at` and `_plain` last (fast.rs): the
/// metrics of one kind share a shape.
struct AddSlots {
    id: fast::Slot,
    at: fast::Slot,
    plain: fast::Slot,
}

static mut ADD_SLOTS: AddSlots = AddSlots {
    id: fast::Slot::new(),
    at: fast::Slot::new(),
    plain: fast::Slot::new(),
};
