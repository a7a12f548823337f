/*
 * Several JavaScript VUs in one wasm instance (issue #53, prototype).
 *
 * One QuickJS-ng runtime, one JSContext per VU (its own globals, its own `__VU`, its own
 * Math.random state). A VU's `sleep(s)` calls the host import `host.sleep`, which the
 * driver turns into a suspension with Binaryen's Asyncify (build.sh runs
 * `wasm-opt --asyncify` on this module): the VU's wasm call stack is saved into its own
 * asyncify buffer and the export returns, so the driver can start or resume another VU.
 *
 * What a switch must move besides the wasm stack, because QuickJS keeps it per runtime:
 * - the C shadow stack: each VU has its own (the driver sets `__stack_pointer`, sp.s);
 * - `rt->current_stack_frame`, the head of the chain of JS frames (error stacks,
 *   `arguments.callee`, the caller's strictness read it): saved per VU;
 * - `rt->stack_top`/`stack_limit`, the recursion guard: set to the VU's own stack
 *   (QuickJS leaves it off on WASI; without it a deep recursion runs past the VU's
 *   stack into the heap).
 * Those fields are private to quickjs.c, hence the source is included here, whole.
 *
 * The driver (host/examples/js_multivu.rs) calls, per VU:
 *   start:  mv_set_sp(mv_vu_stack_top(i)); mv_enter(i, 1); mv_iterate(i)
 *   resume: mv_set_sp(saved sp); mv_enter(i, 0); asyncify_start_rewind(buf); mv_iterate(i)
 *   after a suspension: asyncify_stop_unwind(); mv_leave()
 */
#include "quickjs.c"

/* The host's blocking wait: seconds. Listed in `asyncify-imports` (build.sh), so a call
 * can unwind. */
__attribute__((import_module("host"), import_name("sleep"))) extern void host_sleep(double s);
/* A line of text for the driver's output (an iteration's exception). Never unwinds. */
__attribute__((import_module("host"), import_name("log"))) extern void host_log(const char *p,
                                                                             size_t n);

/* One VU: its context, its shadow stack, its asyncify buffer, its saved JS frame chain. */
typedef struct {
    JSContext *ctx;
    JSValue iteration;
    uintptr_t stack_top;
    uint8_t *stack;
    uint8_t *buf;
    JSStackFrame *frame;
} Vu;

static JSRuntime *rt;
static Vu *vus;
static uint32_t vu_count;
static uint32_t current;
static size_t vu_stack_size;
static size_t vu_buf_size;

/* Bytes the C code of a call may use below the JS recursion guard. */
#define STACK_MARGIN (16 * 1024)

static JSValue js_sleep(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv)
{
    double s = 0;
    if (argc > 0 && JS_ToFloat64(ctx, &s, argv[0]))
        return JS_EXCEPTION;
    if (!(s >= 0))
        s = 0;
    host_sleep(s);
    return JS_UNDEFINED;
}

/* `log(text)`: a line for the driver's output (tests and debugging). */
static JSValue js_log(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv)
{
    const char *msg = argc > 0 ? JS_ToCString(ctx, argv[0]) : NULL;
    if (!msg)
        return JS_EXCEPTION;
    host_log(msg, strlen(msg));
    JS_FreeCString(ctx, msg);
    return JS_UNDEFINED;
}

static void log_exception(JSContext *ctx)
{
    JSValue e = JS_GetException(ctx);
    const char *msg = JS_ToCString(ctx, e);
    if (msg) {
        host_log(msg, strlen(msg));
        JS_FreeCString(ctx, msg);
    }
    JS_FreeValue(ctx, e);
}

/* Memory for the script's text, written by the driver. */
__attribute__((export_name("mv_alloc"))) void *mv_alloc(size_t n) { return malloc(n); }

/*
 * Makes the runtime and `n` VUs, each a context that ran `script` (its init code) and
 * whose global `iteration` is the function an iteration calls. Per VU: a shadow stack of
 * `stack_kib` KiB and an asyncify buffer of `buf_kib` KiB (only the pages a VU touches
 * become resident). Returns 0, or the 1-based VU whose init failed.
 */
__attribute__((export_name("mv_init"))) uint32_t mv_init(uint32_t n, const char *script,
                                                         size_t len, uint32_t stack_kib,
                                                         uint32_t buf_kib)
{
    rt = JS_NewRuntime();
    vus = calloc(n, sizeof(Vu));
    vu_count = n;
    vu_stack_size = (size_t)stack_kib * 1024;
    vu_buf_size = (size_t)buf_kib * 1024;
    for (uint32_t i = 0; i < n; i++) {
        Vu *vu = &vus[i];
        JSContext *ctx = JS_NewContext(rt);
        vu->ctx = ctx;
        /* Each VU its own Math.random sequence (contexts made in the same microsecond
         * would share the clock's seed). */
        ctx->random_state = 0x9E3779B97F4A7C15ull * (i + 1) ^ js__gettimeofday_us();
        JSValue global = JS_GetGlobalObject(ctx);
        JS_SetPropertyStr(ctx, global, "sleep", JS_NewCFunction(ctx, js_sleep, "sleep", 1));
        JS_SetPropertyStr(ctx, global, "log", JS_NewCFunction(ctx, js_log, "log", 1));
        JS_SetPropertyStr(ctx, global, "__VU", JS_NewInt32(ctx, (int32_t)(i + 1)));
        JSValue r = JS_Eval(ctx, script, len, "script.js", JS_EVAL_TYPE_GLOBAL);
        if (JS_IsException(r)) {
            log_exception(ctx);
            JS_FreeValue(ctx, global);
            return i + 1;
        }
        JS_FreeValue(ctx, r);
        vu->iteration = JS_GetPropertyStr(ctx, global, "iteration");
        JS_FreeValue(ctx, global);
        if (!JS_IsFunction(ctx, vu->iteration)) {
            static const char m[] = "the script defines no function `iteration`";
            host_log(m, sizeof m - 1);
            return i + 1;
        }
        vu->stack = malloc(vu_stack_size);
        vu->stack_top = ((uintptr_t)vu->stack + vu_stack_size) & ~(uintptr_t)15;
        vu->buf = malloc(vu_buf_size);
    }
    return 0;
}

/* Where VU `i`'s shadow stack starts (it grows down). */
__attribute__((export_name("mv_vu_stack_top"))) uintptr_t mv_vu_stack_top(uint32_t i)
{
    return vus[i].stack_top;
}

/* VU `i`'s asyncify buffer and its size in bytes. */
__attribute__((export_name("mv_vu_buf"))) uint8_t *mv_vu_buf(uint32_t i) { return vus[i].buf; }
__attribute__((export_name("mv_vu_buf_size"))) uint32_t mv_vu_buf_size(void)
{
    return (uint32_t)vu_buf_size;
}

/* Makes VU `i` the runtime's current one: its JS frame chain (none when `fresh`: a new
 * iteration; else the chain its suspension left), its recursion guard. */
__attribute__((export_name("mv_enter"))) void mv_enter(uint32_t i, uint32_t fresh)
{
    current = i;
    if (fresh)
        vus[i].frame = NULL;
    rt->current_stack_frame = vus[i].frame;
    rt->stack_top = vus[i].stack_top;
    /* Set here, not by update_stack_limit(): QuickJS turns its guard off on WASI (one
     * shadow stack whose bounds it does not know); each VU's bounds are known. */
    rt->stack_limit = vus[i].stack_top - (vu_stack_size - STACK_MARGIN);
}

/* Saves the current VU's JS frame chain after it suspended. */
__attribute__((export_name("mv_leave"))) void mv_leave(void)
{
    vus[current].frame = rt->current_stack_frame;
    rt->current_stack_frame = NULL;
}

/* Runs one iteration of VU `i`: 0 done, 1 the script threw (logged). When the VU
 * suspends in `sleep`, the return value is meaningless (the driver knows). */
__attribute__((export_name("mv_iterate"))) uint32_t mv_iterate(uint32_t i)
{
    Vu *vu = &vus[i];
    JSValue r = JS_Call(vu->ctx, vu->iteration, JS_UNDEFINED, 0, NULL);
    if (JS_IsException(r)) {
        log_exception(vu->ctx);
        return 1;
    }
    JS_FreeValue(vu->ctx, r);
    return 0;
}

/* Bytes of the JS heap in use (all VUs), for the driver's summary. */
__attribute__((export_name("mv_heap_used"))) uint64_t mv_heap_used(void)
{
    JSMemoryUsage u;
    JS_ComputeMemoryUsage(rt, &u);
    return (uint64_t)u.malloc_size;
}
