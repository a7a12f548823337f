//! Reads and a string for the per-message natives (natives.rs) that skip QuickJS's
//! general paths: an array's length from its `length` slot, an own data property from
//! the slot its object's shape gave last time, and the message string rewritten in
//! place when nothing else holds it (c/fast.c, which has QuickJS's layouts). Each falls
//! back to the general path whenever its shortcut does not apply, so what a script sees
//! is the same; what changes is the cache lines a cold VU's message touches (issue #53).

use crate::js::{Cx, JSValue, Js, Thrown};
use core::ffi::c_char;
use rquickjs_sys as q;

/// Where an own data property was found last: its object's shape and its slot.
#[repr(C)]
pub(crate) struct Slot {
    shape: *mut core::ffi::c_void,
    slot: u32,
}

impl Slot {
    /// A slot that has found nothing yet.
    pub(crate) const fn new() -> Self {
        Slot {
            shape: core::ptr::null_mut(),
            slot: 0,
        }
    }
}

extern "C" {
    fn JS_FastArrayLength(v: JSValue) -> i64;
    fn JS_GetOwnDataCached(
        obj: JSValue,
        atom: q::JSAtom,
        cache: *mut Slot,
        out: *mut JSValue,
    ) -> i32;
    fn JS_ReuseAsciiString(
        ctx: *mut q::JSContext,
        old: JSValue,
        buf: *const c_char,
        len: q::size_t,
        cap: *mut u32,
    ) -> JSValue;
}

/// `v.length` as a `for` over it reads it: from a plain Array's slot, else the
/// general way.
pub(crate) fn length(cx: Cx, v: JSValue) -> Js<u32> {
    match unsafe { JS_FastArrayLength(v) } {
        n if n >= 0 => Ok(n as u32),
        _ => cx.length(v),
    }
}

/// `obj[atom]` as `if (obj.x)` reads it, through `slot` when it is an own data property
/// holding a number, boolean, null or undefined.
pub(crate) fn truthy(cx: Cx, obj: JSValue, atom: q::JSAtom, slot: &mut Slot) -> Js<bool> {
    let mut v = q::JS_UNDEFINED;
    if unsafe { JS_GetOwnDataCached(obj, atom, slot, &mut v) } == 1 {
        // No reference held by a number, boolean, null or undefined: nothing to free.
        return match unsafe { q::JS_ToBool(cx.0, v) } {
            r if r < 0 => Err(Thrown),
            r => Ok(r != 0),
        };
    }
    let v = cx.check(unsafe { q::JS_GetProperty(cx.0, obj, atom) })?;
    let r = unsafe { q::JS_ToBool(cx.0, v) };
    cx.free(v);
    if r < 0 {
        Err(Thrown)
    } else {
        Ok(r != 0)
    }
}

/// `obj[atom]` as a number (NaN when it is none), through `slot` as [`truthy`].
pub(crate) fn number(cx: Cx, obj: JSValue, atom: q::JSAtom, slot: &mut Slot) -> Js<f64> {
    let mut v = q::JS_UNDEFINED;
    let held = unsafe { JS_GetOwnDataCached(obj, atom, slot, &mut v) } == 1;
    if !held {
        v = cx.check(unsafe { q::JS_GetProperty(cx.0, obj, atom) })?;
    }
    let mut d = f64::NAN;
    let r = if unsafe { q::JS_IsNumber(v) } {
        unsafe { q::JS_ToFloat64(cx.0, &mut d, v) }
    } else {
        0
    };
    if !held {
        cx.free(v);
    }
    if r < 0 {
        Err(Thrown)
    } else {
        Ok(d)
    }
}

/// Longest text kept for the next message: a larger one is made and freed each time,
/// so one long message does not pin its size in a VU for the run.
const KEEP_MAX: usize = 4096;

/// The message string handed to the socket's handlers, kept between messages.
pub(crate) struct MessageString {
    /// The kept string (its one reference), or undefined.
    value: JSValue,
    /// The length the kept string's block has room for.
    cap: u32,
    /// Whether the string handed out last was made with room (`JS_ReuseAsciiString`),
    /// so that it may be rewritten; a string made the general way has no room to spare.
    roomy: bool,
}

impl MessageString {
    /// None kept yet.
    pub(crate) const fn new() -> Self {
        MessageString {
            value: q::JS_UNDEFINED,
            cap: 0,
            roomy: false,
        }
    }

    /// `text` as a JavaScript string (a new reference the caller hands back with
    /// [`MessageString::done`]): the kept string rewritten when it is ASCII, fits and
    /// no one else holds it; else a new one.
    pub(crate) fn make(&mut self, cx: Cx, text: &str) -> Js<JSValue> {
        let old = core::mem::replace(&mut self.value, q::JS_UNDEFINED);
        self.roomy = text.len() <= KEEP_MAX && text.is_ascii();
        if !self.roomy {
            cx.free(old);
            return cx.string(text);
        }
        let (p, n) = (text.as_ptr() as *const c_char, text.len() as q::size_t);
        let made = cx.check(unsafe { JS_ReuseAsciiString(cx.0, old, p, n, &mut self.cap) });
        self.roomy = made.is_ok();
        made
    }

    /// Takes the string back after the handlers: kept for the next message when it is
    /// small enough, freed otherwise (a handler that kept it holds its own reference,
    /// and the next [`MessageString::make`] then leaves it alone).
    pub(crate) fn done(&mut self, cx: Cx, v: JSValue) {
        if core::mem::take(&mut self.roomy) && self.cap as usize <= KEEP_MAX {
            cx.free(core::mem::replace(&mut self.value, v));
        } else {
            cx.free(v);
        }
    }
}
