//! Values between QuickJS and the contract's Rust types (wit-bindgen's), in the shapes
//! the vendored componentize-qjs runtime gives the k6 layer: numbers, strings, `null`
//! for an absent option, `{tag, val}` for variants and nested results, arrays for tuples
//! and lists (typed arrays for lists of numbers), objects with lowerCamelCase keys for
//! records, WIT case names (kebab-case) for enums, and imported resources as objects of
//! a class holding the handle. A top-level `result` of an import returns its `ok` value
//! and throws an `Error` carrying the `err` value as `payload`.
//!
//! Errors are JavaScript exceptions: a conversion that fails throws in the context and
//! returns [`Thrown`]; the caller returns `JS_EXCEPTION` to QuickJS.

use core::ffi::{c_char, c_int};
use rquickjs_sys as q;
use std::mem::ManuallyDrop;

extern "C" {
    /// A one-byte string of `len` ASCII bytes, without JS_NewStringLen's scan
    /// (c/strings.c).
    fn JS_NewAsciiStringLen(ctx: *mut q::JSContext, buf: *const c_char, len: q::size_t) -> JSValue;
}

pub use q::JSValue;

/// An exception is pending in the context.
#[derive(Debug)]
pub struct Thrown;

/// A conversion's outcome.
pub type Js<T> = Result<T, Thrown>;

/// The context every conversion runs in.
#[derive(Clone, Copy)]
pub struct Cx(pub *mut q::JSContext);

/// The property holding an imported resource's handle (the vendored runtime's name).
pub const HANDLE_KEY: &core::ffi::CStr = c"__cqjs_handle";

/// [`HANDLE_KEY`]'s atom, made on first use and never freed (so it stays valid, and in
/// the Wizer snapshot): reading a handle by name would hash and look the name up in
/// QuickJS's atom table at every call passing a resource (a prepared request's send).
static mut HANDLE_ATOM: q::JSAtom = 0;

impl Cx {
    /// [`HANDLE_KEY`] as an atom.
    fn handle_atom(self) -> q::JSAtom {
        unsafe {
            if HANDLE_ATOM == 0 {
                HANDLE_ATOM = q::JS_NewAtom(self.0, HANDLE_KEY.as_ptr());
            }
            HANDLE_ATOM
        }
    }

    /// Throws a `TypeError` with `msg`.
    pub fn type_error(self, msg: &str) -> Thrown {
        let text = std::ffi::CString::new(msg.replace('\0', " ")).unwrap_or_default();
        unsafe { q::JS_ThrowTypeError(self.0, c"%s".as_ptr(), text.as_ptr()) };
        Thrown
    }

    /// `v` unless it is the exception marker.
    pub fn check(self, v: JSValue) -> Js<JSValue> {
        if unsafe { q::JS_IsException(v) } {
            Err(Thrown)
        } else {
            Ok(v)
        }
    }

    /// Releases a reference.
    pub fn free(self, v: JSValue) {
        unsafe { q::JS_FreeValue(self.0, v) }
    }

    /// A new plain object.
    pub fn object(self) -> Js<JSValue> {
        self.check(unsafe { q::JS_NewObject(self.0) })
    }

    /// A string value.
    pub fn string(self, s: &str) -> Js<JSValue> {
        let (p, n) = (s.as_ptr() as *const c_char, s.len() as _);
        // Plain ASCII (a WebSocket message's JSON, most response bodies) checked a word
        // at a time here skips JS_NewStringLen's byte-at-a-time scan (c/strings.c).
        self.check(unsafe {
            if s.is_ascii() {
                JS_NewAsciiStringLen(self.0, p, n)
            } else {
                q::JS_NewStringLen(self.0, p, n)
            }
        })
    }

    /// Property `key` of `obj` (a new reference).
    pub fn prop(self, obj: JSValue, key: &core::ffi::CStr) -> Js<JSValue> {
        self.check(unsafe { q::JS_GetPropertyStr(self.0, obj, key.as_ptr()) })
    }

    /// Property `key` of `obj`, converted.
    pub fn field<T: FromJs>(self, obj: JSValue, key: &core::ffi::CStr) -> Js<T> {
        let v = self.prop(obj, key)?;
        let out = T::from_js(self, v);
        self.free(v);
        out
    }

    /// Sets `obj[key]`, taking `val`'s reference.
    pub fn set(self, obj: JSValue, key: &core::ffi::CStr, val: JSValue) -> Js<()> {
        if unsafe { q::JS_SetPropertyStr(self.0, obj, key.as_ptr(), val) } < 0 {
            Err(Thrown)
        } else {
            Ok(())
        }
    }

    /// Sets `obj[key]` to `val` converted; frees `obj` when that fails.
    pub fn put<T: ToJs>(self, obj: JSValue, key: &core::ffi::CStr, val: T) -> Js<()> {
        match val.to_js(self).and_then(|v| self.set(obj, key, v)) {
            Ok(()) => Ok(()),
            Err(t) => {
                self.free(obj);
                Err(t)
            }
        }
    }

    /// `{tag, val}` (no `val` when `val` is none).
    pub fn tagged(self, tag: &str, val: Option<JSValue>) -> Js<JSValue> {
        let o = self.object()?;
        self.put(o, c"tag", tag)?;
        if let Some(v) = val {
            if let Err(t) = self.set(o, c"val", v) {
                self.free(o);
                return Err(t);
            }
        }
        Ok(o)
    }

    /// The `tag` of a `{tag, val}` object.
    pub fn tag(self, v: JSValue) -> Js<String> {
        if !unsafe { q::JS_IsObject(v) } {
            return Err(self.type_error("expected an object with a `tag`"));
        }
        self.field(v, c"tag")
    }

    /// An imported resource's object: `proto`'s instance holding `handle`.
    pub fn resource(self, proto: JSValue, handle: u32) -> Js<JSValue> {
        let o = self.check(unsafe { q::JS_NewObjectProto(self.0, proto) })?;
        self.put(o, HANDLE_KEY, handle)?;
        Ok(o)
    }

    /// The handle an imported resource's object holds (one it no longer holds throws).
    pub fn handle(self, v: JSValue) -> Js<u32> {
        if !unsafe { q::JS_IsObject(v) } {
            return Err(self.type_error("expected a resource object"));
        }
        let h = self.check(unsafe { q::JS_GetProperty(self.0, v, self.handle_atom()) })?;
        if unsafe { q::JS_IsUndefined(h) || q::JS_IsNull(h) } {
            return Err(self.type_error("the resource was already disposed of"));
        }
        let out = u32::from_js(self, h);
        self.free(h);
        out
    }

    /// Borrows the resource `v` holds as the binding's type, for one call.
    pub fn borrow<R: Handle>(self, v: JSValue) -> Js<ManuallyDrop<R>> {
        Ok(ManuallyDrop::new(unsafe {
            R::from_handle(self.handle(v)?)
        }))
    }

    /// Takes the resource `v` holds (an owned handle passed to the host): the object
    /// holds it no longer.
    pub fn take<R: Handle>(self, v: JSValue) -> Js<R> {
        let h = self.handle(v)?;
        self.set(v, HANDLE_KEY, q::JS_UNDEFINED)?;
        Ok(unsafe { R::from_handle(h) })
    }

    /// Throws `val` (taking its reference).
    pub fn throw(self, val: JSValue) -> Thrown {
        unsafe { q::JS_Throw(self.0, val) };
        Thrown
    }

    /// Throws an `Error` for a failed import: its message the payload (a string) or its
    /// text with " (see error.payload)", the payload as `payload`, as the vendored
    /// runtime throws an `err` result.
    pub fn throw_err<E: ToJs>(self, err: E) -> Thrown {
        let payload = match err.to_js(self) {
            Ok(p) => p,
            Err(t) => return t,
        };
        let message = if unsafe { q::JS_IsString(payload) } {
            self.text(payload)
        } else {
            let s = unsafe { q::JS_ToString(self.0, payload) };
            let text = self.text(s);
            self.free(s);
            text.map(|t| format!("{t} (see error.payload)"))
        };
        let message = match message {
            Ok(m) => m,
            Err(t) => {
                self.free(payload);
                return t;
            }
        };
        let e = unsafe { q::JS_NewError(self.0) };
        if self.put(e, c"message", message.as_str()).is_err() {
            self.free(payload);
            return Thrown;
        }
        if self.set(e, c"payload", payload).is_err() {
            return Thrown;
        }
        self.throw(e)
    }

    /// A string's text (other values converted by `String(v)`).
    pub fn text(self, v: JSValue) -> Js<String> {
        let mut len: q::size_t = 0;
        let p = unsafe { q::JS_ToCStringLen2(self.0, &mut len, v, false) };
        if p.is_null() {
            return Err(Thrown);
        }
        let bytes = unsafe { core::slice::from_raw_parts(p as *const u8, len as usize) };
        let s = String::from_utf8_lossy(bytes).into_owned();
        unsafe { q::JS_FreeCString(self.0, p) };
        Ok(s)
    }

    /// The UTF-8 bytes of a string as QuickJS encodes them (no replacement: a lone
    /// surrogate stays as its three bytes).
    pub fn utf8(self, v: JSValue) -> Js<Vec<u8>> {
        let mut len: q::size_t = 0;
        let p = unsafe { q::JS_ToCStringLen2(self.0, &mut len, v, false) };
        if p.is_null() {
            return Err(Thrown);
        }
        let bytes = unsafe { core::slice::from_raw_parts(p as *const u8, len as usize) }.to_vec();
        unsafe { q::JS_FreeCString(self.0, p) };
        Ok(bytes)
    }

    /// The length of an array (`JS_GetLength`: its `length` read as any object's).
    pub fn length(self, v: JSValue) -> Js<u32> {
        let mut n: i64 = 0;
        if unsafe { q::JS_GetLength(self.0, v, &mut n) } < 0 {
            return Err(Thrown);
        }
        Ok(n as u32)
    }

    /// The bytes of a typed array, array buffer or DataView, if `v` is one.
    fn bytes(self, v: JSValue) -> Option<&'static [u8]> {
        unsafe {
            let mut size: q::size_t = 0;
            if q::JS_IsArrayBuffer(v) {
                let p = q::JS_GetArrayBuffer(self.0, &mut size, v);
                return (!p.is_null()).then(|| core::slice::from_raw_parts(p, size as usize));
            }
            if q::JS_GetTypedArrayType(v) < 0 {
                return None;
            }
            let (mut off, mut len, mut per): (q::size_t, q::size_t, q::size_t) = (0, 0, 0);
            let buf = q::JS_GetTypedArrayBuffer(self.0, v, &mut off, &mut len, &mut per);
            if q::JS_IsException(buf) {
                q::JS_FreeValue(self.0, q::JS_GetException(self.0));
                return None;
            }
            let p = q::JS_GetArrayBuffer(self.0, &mut size, buf);
            q::JS_FreeValue(self.0, buf);
            if p.is_null() {
                return None;
            }
            Some(core::slice::from_raw_parts(
                p.add(off as usize),
                len as usize,
            ))
        }
    }
}

/// A JavaScript value into a Rust value (borrows `v`).
pub trait FromJs: Sized {
    /// Converts `v`.
    fn from_js(cx: Cx, v: JSValue) -> Js<Self>;

    /// A list of these: an array, or for numbers a typed array too.
    fn list_from_js(cx: Cx, v: JSValue) -> Js<Vec<Self>> {
        array_from_js(cx, v)
    }
}

/// A Rust value into a new JavaScript value.
pub trait ToJs {
    /// Converts `self`.
    fn to_js(self, cx: Cx) -> Js<JSValue>;

    /// A list of these: an array, for numbers a typed array.
    fn list_to_js(list: Vec<Self>, cx: Cx) -> Js<JSValue>
    where
        Self: Sized,
    {
        let arr = cx.check(unsafe { q::JS_NewArray(cx.0) })?;
        for (i, x) in list.into_iter().enumerate() {
            let v = match x.to_js(cx) {
                Ok(v) => v,
                Err(t) => {
                    cx.free(arr);
                    return Err(t);
                }
            };
            if unsafe { q::JS_SetPropertyUint32(cx.0, arr, i as u32, v) } < 0 {
                cx.free(arr);
                return Err(Thrown);
            }
        }
        Ok(arr)
    }
}

fn array_from_js<T: FromJs>(cx: Cx, v: JSValue) -> Js<Vec<T>> {
    if !unsafe { q::JS_IsArray(v) } {
        return Err(cx.type_error("expected an array"));
    }
    let n = cx.length(v)?;
    let mut out = Vec::with_capacity(n as usize);
    for i in 0..n {
        let e = cx.check(unsafe { q::JS_GetPropertyUint32(cx.0, v, i) })?;
        let x = T::from_js(cx, e);
        cx.free(e);
        out.push(x?);
    }
    Ok(out)
}

/// An imported resource type of the bindings.
pub trait Handle {
    /// The binding's value owning `handle`.
    ///
    /// # Safety
    /// `handle` must be a live handle of this type.
    unsafe fn from_handle(handle: u32) -> Self;
}

impl FromJs for bool {
    fn from_js(cx: Cx, v: JSValue) -> Js<Self> {
        match unsafe { q::JS_ToBool(cx.0, v) } {
            r if r < 0 => Err(Thrown),
            r => Ok(r != 0),
        }
    }
}

impl ToJs for bool {
    fn to_js(self, _cx: Cx) -> Js<JSValue> {
        Ok(if self { q::JS_TRUE } else { q::JS_FALSE })
    }
}

fn number(cx: Cx, v: JSValue) -> Js<f64> {
    let mut d = 0.0;
    if unsafe { q::JS_ToFloat64(cx.0, &mut d, v) } < 0 {
        return Err(Thrown);
    }
    Ok(d)
}

/// A JS number as an integer of the contract: wrapped as the vendored runtime's `as`
/// casts from i32 do (`-1` for a u32 is 4294967295); fractions are cut.
trait FromNumber {
    fn from_number(d: f64) -> Self;
}

macro_rules! integers_from_numbers {
    ($($t:ty),*) => {$(
        impl FromNumber for $t {
            fn from_number(d: f64) -> Self {
                if d < 0.0 { d as i64 as $t } else { d as u64 as $t }
            }
        }
    )*};
}
integers_from_numbers!(u8, i8, u16, i16, u32, i32);

// Floats keep their fraction (a latitude of 52.52 or a Trend's 1.5 must not become 52
// or 1).
impl FromNumber for f32 {
    fn from_number(d: f64) -> Self {
        d as f32
    }
}
impl FromNumber for f64 {
    fn from_number(d: f64) -> Self {
        d
    }
}

macro_rules! numbers {
    ($($t:ty => $kind:ident),*) => {$(
        impl FromJs for $t {
            fn from_js(cx: Cx, v: JSValue) -> Js<Self> {
                Ok(<$t as FromNumber>::from_number(number(cx, v)?))
            }
            fn list_from_js(cx: Cx, v: JSValue) -> Js<Vec<Self>> {
                // A string as bytes is its UTF-8 (the k6 layer hands a request's text
                // body over as it is): QuickJS encodes it in C, a lone surrogate as its
                // three bytes, as the layer's own `utf8Encode` does.
                if q::$kind == q::JSTypedArrayEnum_JS_TYPED_ARRAY_UINT8 && unsafe { q::JS_IsString(v) } {
                    return Ok(cx.utf8(v)?.iter().map(|&x| x as $t).collect());
                }
                match cx.bytes(v) {
                    Some(b) if unsafe { q::JS_GetTypedArrayType(v) } == q::$kind as i32
                        || (q::$kind == q::JSTypedArrayEnum_JS_TYPED_ARRAY_UINT8 && unsafe { q::JS_IsArrayBuffer(v) }) => {
                        let n = b.len() / core::mem::size_of::<$t>();
                        let mut out = Vec::<$t>::with_capacity(n);
                        unsafe {
                            core::ptr::copy_nonoverlapping(b.as_ptr(), out.as_mut_ptr() as *mut u8, n * core::mem::size_of::<$t>());
                            out.set_len(n);
                        }
                        Ok(out)
                    }
                    Some(b) if q::$kind == q::JSTypedArrayEnum_JS_TYPED_ARRAY_UINT8 => {
                        Ok(b.iter().map(|&x| x as $t).collect())
                    }
                    _ => array_from_js(cx, v),
                }
            }
        }
        impl ToJs for $t {
            fn to_js(self, _cx: Cx) -> Js<JSValue> {
                Ok(unsafe { q::JS_NewNumber(_cx.0, self as f64) })
            }
            fn list_to_js(list: Vec<Self>, cx: Cx) -> Js<JSValue> {
                typed(cx, q::$kind, list.as_ptr() as *const u8, list.len(), core::mem::size_of::<$t>())
            }
        }
    )*};
}

numbers!(
    u8 => JSTypedArrayEnum_JS_TYPED_ARRAY_UINT8,
    i8 => JSTypedArrayEnum_JS_TYPED_ARRAY_INT8,
    u16 => JSTypedArrayEnum_JS_TYPED_ARRAY_UINT16,
    i16 => JSTypedArrayEnum_JS_TYPED_ARRAY_INT16,
    u32 => JSTypedArrayEnum_JS_TYPED_ARRAY_UINT32,
    i32 => JSTypedArrayEnum_JS_TYPED_ARRAY_INT32,
    f32 => JSTypedArrayEnum_JS_TYPED_ARRAY_FLOAT32,
    f64 => JSTypedArrayEnum_JS_TYPED_ARRAY_FLOAT64
);

// 64-bit integers as numbers (a BigInt64Array would hand the layer BigInts), their
// lists as arrays.
macro_rules! wide {
    ($($t:ty),*) => {$(
        impl FromJs for $t {
            fn from_js(cx: Cx, v: JSValue) -> Js<Self> {
                Ok(number(cx, v)? as $t)
            }
        }
        impl ToJs for $t {
            fn to_js(self, cx: Cx) -> Js<JSValue> {
                Ok(unsafe { q::JS_NewNumber(cx.0, self as f64) })
            }
        }
    )*};
}
wide!(u64, i64);

/// A typed array of `len` elements of `size` bytes copied from `data`.
fn typed(
    cx: Cx,
    kind: q::JSTypedArrayEnum,
    data: *const u8,
    len: usize,
    size: usize,
) -> Js<JSValue> {
    if kind == q::JSTypedArrayEnum_JS_TYPED_ARRAY_UINT8 {
        return cx.check(unsafe { q::JS_NewUint8ArrayCopy(cx.0, data, len as _) });
    }
    let mut n = unsafe { q::JS_NewNumber(cx.0, len as f64) };
    let arr = cx.check(unsafe { q::JS_NewTypedArray(cx.0, 1, &mut n, kind) })?;
    match cx.bytes(arr) {
        Some(b) => {
            unsafe { core::ptr::copy_nonoverlapping(data, b.as_ptr() as *mut u8, len * size) };
            Ok(arr)
        }
        None => {
            cx.free(arr);
            Err(cx.type_error("cannot make a typed array"))
        }
    }
}

impl FromJs for char {
    fn from_js(cx: Cx, v: JSValue) -> Js<Self> {
        let s = cx.text(v)?;
        let mut it = s.chars();
        match (it.next(), it.next()) {
            (Some(c), None) => Ok(c),
            _ => Err(cx.type_error("expected one character")),
        }
    }
}

impl ToJs for char {
    fn to_js(self, cx: Cx) -> Js<JSValue> {
        cx.string(self.encode_utf8(&mut [0; 4]))
    }
}

impl FromJs for String {
    fn from_js(cx: Cx, v: JSValue) -> Js<Self> {
        cx.text(v)
    }
}

impl ToJs for String {
    fn to_js(self, cx: Cx) -> Js<JSValue> {
        cx.string(&self)
    }
}

impl ToJs for &str {
    fn to_js(self, cx: Cx) -> Js<JSValue> {
        cx.string(self)
    }
}

impl<T: FromJs> FromJs for Vec<T> {
    fn from_js(cx: Cx, v: JSValue) -> Js<Self> {
        T::list_from_js(cx, v)
    }
}

impl<T: ToJs> ToJs for Vec<T> {
    fn to_js(self, cx: Cx) -> Js<JSValue> {
        T::list_to_js(self, cx)
    }
}

impl<T: FromJs> FromJs for Option<T> {
    fn from_js(cx: Cx, v: JSValue) -> Js<Self> {
        if unsafe { q::JS_IsNull(v) || q::JS_IsUndefined(v) } {
            Ok(None)
        } else {
            T::from_js(cx, v).map(Some)
        }
    }
}

impl<T: ToJs> ToJs for Option<T> {
    fn to_js(self, cx: Cx) -> Js<JSValue> {
        match self {
            None => Ok(q::JS_NULL),
            Some(x) => x.to_js(cx),
        }
    }
}

/// `()` as a result's empty side.
impl FromJs for () {
    fn from_js(_cx: Cx, _v: JSValue) -> Js<Self> {
        Ok(())
    }
}

impl ToJs for () {
    fn to_js(self, _cx: Cx) -> Js<JSValue> {
        Ok(q::JS_UNDEFINED)
    }
}

impl<T: FromJs, E: FromJs> FromJs for Result<T, E> {
    fn from_js(cx: Cx, v: JSValue) -> Js<Self> {
        let tag = cx.tag(v)?;
        if tag == "ok" {
            cx.field(v, c"val").map(Ok)
        } else {
            cx.field(v, c"val").map(Err)
        }
    }
}

impl<T: ToJs + IsUnit, E: ToJs + IsUnit> ToJs for Result<T, E> {
    fn to_js(self, cx: Cx) -> Js<JSValue> {
        match self {
            Ok(x) => {
                let v = if T::UNIT { None } else { Some(x.to_js(cx)?) };
                cx.tagged("ok", v)
            }
            Err(e) => {
                let v = if E::UNIT { None } else { Some(e.to_js(cx)?) };
                cx.tagged("err", v)
            }
        }
    }
}

/// Whether a result's side is empty (then its object has no `val`).
pub trait IsUnit {
    /// True for `()`.
    const UNIT: bool = false;
}

impl IsUnit for () {
    const UNIT: bool = true;
}

macro_rules! not_unit {
    ($($t:ty),*) => {$( impl IsUnit for $t {} )*};
}
not_unit!(bool, u8, i8, u16, i16, u32, i32, u64, i64, f32, f64, char, String);
impl<T> IsUnit for Vec<T> {}
impl<T> IsUnit for Option<T> {}
impl<T, E> IsUnit for Result<T, E> {}

macro_rules! tuples {
    ($(($($n:tt $t:ident),*)),*) => {$(
        impl<$($t: FromJs),*> FromJs for ($($t,)*) {
            fn from_js(cx: Cx, v: JSValue) -> Js<Self> {
                if !unsafe { q::JS_IsArray(v) } {
                    return Err(cx.type_error("expected an array for a tuple"));
                }
                Ok(($({
                    let e = cx.check(unsafe { q::JS_GetPropertyUint32(cx.0, v, $n) })?;
                    let x = $t::from_js(cx, e);
                    cx.free(e);
                    x?
                },)*))
            }
        }
        impl<$($t: ToJs),*> ToJs for ($($t,)*) {
            fn to_js(self, cx: Cx) -> Js<JSValue> {
                let arr = cx.check(unsafe { q::JS_NewArray(cx.0) })?;
                $(
                    let v = match self.$n.to_js(cx) { Ok(v) => v, Err(t) => { cx.free(arr); return Err(t); } };
                    if unsafe { q::JS_SetPropertyUint32(cx.0, arr, $n, v) } < 0 { cx.free(arr); return Err(Thrown); }
                )*
                Ok(arr)
            }
        }
        impl<$($t),*> IsUnit for ($($t,)*) {}
    )*};
}
tuples!((0 A), (0 A, 1 B), (0 A, 1 B, 2 C), (0 A, 1 B, 2 C, 3 D));

/// The arguments of a call from JavaScript.
pub struct Args {
    argc: c_int,
    argv: *mut JSValue,
}

impl Args {
    /// QuickJS's argument vector.
    pub fn new(argc: c_int, argv: *mut JSValue) -> Self {
        Args { argc, argv }
    }

    /// Argument `i` (`undefined` past the end), borrowed.
    pub fn at(&self, i: c_int) -> JSValue {
        if i < self.argc {
            unsafe { *self.argv.add(i as usize) }
        } else {
            q::JS_UNDEFINED
        }
    }

    /// Argument `i` converted.
    pub fn get<T: FromJs>(&self, cx: Cx, i: c_int) -> Js<T> {
        T::from_js(cx, self.at(i))
    }
}

/// Runs a bridged call: its value, or `JS_EXCEPTION` with the exception pending.
pub fn call(f: impl FnOnce() -> Js<JSValue>) -> JSValue {
    f().unwrap_or(q::JS_EXCEPTION)
}

/// A top-level `result` returned to JavaScript: its `ok` value, or its `err` thrown.
pub fn ret_result<T: ToJs, E: ToJs>(cx: Cx, r: Result<T, E>) -> Js<JSValue> {
    match r {
        Ok(x) => x.to_js(cx),
        Err(e) => Err(cx.throw_err(e)),
    }
}
