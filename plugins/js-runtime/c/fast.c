/*
 * The native WebSocket receive loop's reads of the layer's state, and its message
 * string, without QuickJS's general paths (issue #53 goal 2): appended to QuickJS-ng's
 * quickjs.c by plugins/js-runtime/build.rs, after strings.c, to reach its object,
 * shape and string layouts.
 *
 * A pushed message wakes one VU among hundreds, so its instance's memory is cold:
 * what a message costs follows the cache lines it touches more than its instructions.
 * Per message the loop (src/natives.rs, `recv_loop`) asked JS_GetProperty for five
 * properties (the socket entry's `open`, the timers' `last`, three queues' `length`),
 * each a hash of the atom, a walk of the object's shape table and a generic `length`
 * conversion, and made a new string for the text (an allocation, and a free after the
 * handlers). Here: an array's length read from its `length` slot, an own data
 * property read from the slot its shape gave last time (the shape and the slot's atom
 * checked, so a changed object takes the general path), and the last message's string
 * rewritten in place when nothing else holds it.
 */

/* The length of `v` when it is a plain Array (its `length` is always its first
   property, kept as an int up to 2^31 - 1); -1 for anything else, which the caller
   reads the general way. */
int64_t JS_FastArrayLength(JSValueConst v)
{
    JSObject *p;
    JSValue len;
    if (JS_VALUE_GET_TAG(v) != JS_TAG_OBJECT)
        return -1;
    p = JS_VALUE_GET_OBJ(v);
    if (p->class_id != JS_CLASS_ARRAY)
        return -1;
    len = p->prop[0].u.value;
    if (JS_VALUE_GET_TAG(len) != JS_TAG_INT)
        return -1;
    return JS_VALUE_GET_INT(len);
}

/* Where an own data property was found last time: the shape it was found in and its
   slot. One per call site, per VU (the instance's memory). */
typedef struct JSOwnSlotCache {
    JSShape *shape;
    uint32_t slot;
} JSOwnSlotCache;

/* Reads own data property `atom` of object `obj` into `*out` (not duplicated: for
   numbers and booleans, which hold no reference; the caller must not free it) and
   returns 1; returns 0 when `obj` is not an object, or the property is not an own,
   plain data property holding a number, boolean, null or undefined: the caller then
   reads it the general way. The slot is trusted only while the object's shape is the
   cached one and that shape's slot still names `atom` (a shape freed and another made
   at its address would fail the second test unless it has the same property there). */
int JS_GetOwnDataCached(JSValueConst obj, JSAtom atom, JSOwnSlotCache *cache, JSValue *out)
{
    JSObject *p;
    JSShape *sh;
    JSShapeProperty *prs;
    JSProperty *pr;
    JSValue v;
    int tag;
    if (JS_VALUE_GET_TAG(obj) != JS_TAG_OBJECT)
        return 0;
    p = JS_VALUE_GET_OBJ(obj);
    sh = p->shape;
    if (sh == cache->shape && cache->slot < (uint32_t)sh->prop_count) {
        prs = &get_shape_prop(sh)[cache->slot];
        if (prs->atom == atom && (prs->flags & JS_PROP_TMASK) == 0) {
            pr = &p->prop[cache->slot];
            goto found;
        }
    }
    prs = find_own_property(&pr, p, atom);
    if (!prs || (prs->flags & JS_PROP_TMASK) != 0)
        return 0;
    cache->shape = sh;
    cache->slot = (uint32_t)(prs - get_shape_prop(sh));
 found:
    v = pr->u.value;
    tag = JS_VALUE_GET_NORM_TAG(v);
    if (tag != JS_TAG_INT && tag != JS_TAG_FLOAT64 && tag != JS_TAG_BOOL
        && tag != JS_TAG_NULL && tag != JS_TAG_UNDEFINED)
        return 0;
    *out = v;
    return 1;
}

/* The message string: `old` (the previous message's, or JS_UNDEFINED) rewritten with
   the `len` ASCII bytes at `buf` when nothing but the caller holds it (one reference,
   not an atom, a plain one-byte string) and its block has room (`*cap`, the length it
   was made for); else `old` is freed and a new string made with room for at least 256
   bytes, `*cap` set to its room. Immutable as JavaScript sees it: a string nobody
   else references cannot be observed changing. */
JSValue JS_ReuseAsciiString(JSContext *ctx, JSValue old, const char *buf, size_t len,
                            uint32_t *cap)
{
    JSString *str;
    uint32_t room;
    if (JS_VALUE_GET_TAG(old) == JS_TAG_STRING) {
        str = JS_VALUE_GET_STRING(old);
        if (js_rc(str)->ref_count == 1 && str->atom_type == 0 && !str->is_wide_char
            && str->kind == JS_STRING_KIND_NORMAL && len <= *cap) {
            memcpy(str8(str), buf, len);
            str8(str)[len] = '\0';
            str->len = (uint32_t)len;
            str->hash = 0;
            return old;
        }
        JS_FreeValue(ctx, old);
    }
    if (len > JS_STRING_LEN_MAX)
        return JS_ThrowRangeError(ctx, "invalid string length");
    room = len < 256 ? 256 : (uint32_t)len;
    str = js_alloc_string(ctx, (int)room, 0);
    if (!str)
        return JS_EXCEPTION;
    memcpy(str8(str), buf, len);
    str8(str)[len] = '\0';
    str->len = (uint32_t)len;
    *cap = room;
    return JS_MKPTR(JS_TAG_STRING, str);
}
