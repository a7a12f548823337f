/*
 * A string made from text the runtime already knows is plain ASCII (issue #53 goal 2):
 * appended to QuickJS-ng's quickjs.c by plugins/js-runtime/build.rs, after snapshot.c,
 * to reach its static js_new_string8_len.
 *
 * JS_NewStringLen scans its UTF-8 one byte at a time to learn the string's kind before
 * copying it (utf8_scan: ~5 instructions a byte, most of a WebSocket message's
 * JS_NewStringLen); the Rust side (src/js.rs, `Cx::string`) checks for ASCII a word at
 * a time and calls this for such text, JS_NewStringLen for any other.
 */

/* A one-byte string of the `len` bytes at `buf`, all below 0x80 (the caller checked):
   what JS_NewStringLen makes of them, without its scan. */
JSValue JS_NewAsciiStringLen(JSContext *ctx, const char *buf, size_t len)
{
    if (len == 0)
        return js_empty_string(ctx->rt);
    if (len > JS_STRING_LEN_MAX)
        return JS_ThrowRangeError(ctx, "invalid string length");
    return js_new_string8_len(ctx, buf, (int)len);
}
