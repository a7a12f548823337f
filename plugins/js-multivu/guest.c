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
    /* The iteration's `this` and argument: the layer's `plugin` and its scenario name
     * (layer mode, mv_init_layer), or undefined and none (a global `iteration`). */
    JSValue self;
    JSValue arg;
    uint32_t iterations;
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
        vu->self = JS_UNDEFINED;
        vu->arg = JS_UNDEFINED;
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
    int argc = JS_IsUndefined(vu->arg) ? 0 : 1;
    JSValue r = JS_Call(vu->ctx, vu->iteration, vu->self, argc, &vu->arg);
    vu->iterations++;
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

/* ------------------------------------------------------------------------------------
 * Layer mode (issue #53, step 1): each VU's context evaluates the module `host build`
 * evaluates for a script (the k6 layer with the script's bundle appended, an ES module
 * importing the contract's interfaces as `loadtest:...` modules), and an iteration is
 * the layer's own `plugin.iteration('default')`.
 *
 * The contract's interfaces are stand-ins (prelude below): `vu.sleep` suspends the VU,
 * `vu.info` answers the VU's number and iteration, `shared-data.publish` and
 * `vu.data-len`/`vu.data-get` keep a SharedArray's records once per instance (here in
 * C, where the host keeps them today), and every other function does nothing and
 * returns undefined. Enough for the memory comparison (scripts that sleep, hold state
 * and read a SharedArray), not for requests.
 */

/* A SharedArray's records, published once (by the describe context), read by every VU. */
typedef struct {
    char *key;
    uint32_t n;
    char **rows;
    size_t *lens;
} Shared;
static Shared *shared;
static uint32_t shared_count;
static size_t shared_bytes;

static const Shared *shared_find(const char *key)
{
    for (uint32_t i = 0; i < shared_count; i++)
        if (!strcmp(shared[i].key, key))
            return &shared[i];
    return NULL;
}

static JSValue n_sleep(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv)
{
    return js_sleep(ctx, this_val, argc, argv);
}

static JSValue n_iter(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv)
{
    return JS_NewUint32(ctx, vus ? vus[current].iterations : 0);
}

static JSValue n_publish(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv)
{
    const char *key = JS_ToCString(ctx, argv[0]);
    if (!key)
        return JS_EXCEPTION;
    if (shared_find(key)) {
        JS_FreeCString(ctx, key);
        return JS_ThrowTypeError(ctx, "already exists");
    }
    int64_t n;
    if (JS_GetLength(ctx, argv[1], &n)) {
        JS_FreeCString(ctx, key);
        return JS_EXCEPTION;
    }
    shared = realloc(shared, (shared_count + 1) * sizeof(Shared));
    Shared *s = &shared[shared_count++];
    s->key = strdup(key);
    JS_FreeCString(ctx, key);
    s->n = (uint32_t)n;
    s->rows = malloc(n * sizeof(char *));
    s->lens = malloc(n * sizeof(size_t));
    for (int64_t i = 0; i < n; i++) {
        JSValue v = JS_GetPropertyInt64(ctx, argv[1], i);
        size_t len;
        const char *t = JS_ToCStringLen(ctx, &len, v);
        JS_FreeValue(ctx, v);
        if (!t)
            return JS_EXCEPTION;
        s->rows[i] = malloc(len);
        memcpy(s->rows[i], t, len);
        s->lens[i] = len;
        shared_bytes += len;
        JS_FreeCString(ctx, t);
    }
    return JS_UNDEFINED;
}

static JSValue n_data_len(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv)
{
    const char *key = JS_ToCString(ctx, argv[0]);
    if (!key)
        return JS_EXCEPTION;
    const Shared *s = shared_find(key);
    JS_FreeCString(ctx, key);
    return s ? JS_NewUint32(ctx, s->n) : JS_NULL;
}

static JSValue n_data_get(JSContext *ctx, JSValueConst this_val, int argc, JSValueConst *argv)
{
    const char *key = JS_ToCString(ctx, argv[0]);
    uint32_t i;
    if (!key)
        return JS_EXCEPTION;
    const Shared *s = shared_find(key);
    JS_FreeCString(ctx, key);
    if (!s || JS_ToUint32(ctx, &i, argv[1]) || i >= s->n)
        return JS_ThrowRangeError(ctx, "no such record");
    return JS_NewStringLen(ctx, s->rows[i], s->lens[i]);
}

/* Per context: the stand-ins of the contract's interfaces, over the natives above. */
static const char PRELUDE[] =
    "(function (n, vu) {\n"
    "  const noop = function () {};\n"
    "  const own = {\n"
    "    vu: {\n"
    "      sleep: (ms) => n.sleep(Number(ms) / 1000),\n"
    "      log: (level, text) => n.log(String(text)),\n"
    "      reportPanic: (m) => n.log(String(m)),\n"
    "      info: () => { const it = n.iter(); return { vuId: vu, vuIdInScenario: vu,"
    " iteration: it, iterationInScenario: it, scenario: 'default' }; },\n"
    "      env: () => null,\n"
    "      dataLen: (key) => n.dataLen(key),\n"
    "      dataGet: (key, i) => n.dataGet(key, i),\n"
    "    },\n"
    "    'shared-data': { publish: (key, rows) => n.publish(key, rows) },\n"
    "  };\n"
    "  globalThis.__mvhost = (name) => {\n"
    "    const t = own[String(name).replace(/^[^/]*\\//, '').replace(/@.*$/, '')] || {};\n"
    "    return new Proxy(t, { get(t, p) { return p in t ? t[p] : noop; } });\n"
    "  };\n"
    "})";

/* `loadtest:...` modules: `export default __mvhost(name)`, made in the importing context. */
static JSModuleDef *mv_load_module(JSContext *ctx, const char *name, void *opaque)
{
    if (strncmp(name, "loadtest:", 9)) {
        JS_ThrowReferenceError(ctx, "module %s is not bundled", name);
        return NULL;
    }
    char src[256];
    int len = snprintf(src, sizeof src, "export default __mvhost('%s');", name);
    if (len < 0 || (size_t)len >= sizeof src) {
        JS_ThrowRangeError(ctx, "module name too long");
        return NULL;
    }
    JSValue m = JS_Eval(ctx, src, len, name, JS_EVAL_TYPE_MODULE | JS_EVAL_FLAG_COMPILE_ONLY);
    if (JS_IsException(m))
        return NULL;
    JSModuleDef *def = JS_VALUE_GET_PTR(m);
    JS_FreeValue(ctx, m);
    return def;
}

/* The layer module compiled once, without its functions' source text, when the
 * driver asked for it (mv_init_layer's `flags` bit 0): each VU's context reads it
 * instead of parsing the text. QuickJS keeps every function's source text for
 * Function.prototype.toString, nested functions' again inside their parents', which
 * is most of a parsed context's bytes. */
static uint8_t *layer_bytecode;
static size_t layer_bytecode_len;

/* A context for VU `vu` (0: the describe context) that evaluated the layer module
 * (from `layer_bytecode` when set, else from `src`); `*plugin` its `plugin` export.
 * NULL on failure (logged). */
/* A new context for VU `vu` (0: the describe context) with the contract's stand-ins
 * (PRELUDE over the natives); NULL on failure (logged, the context freed). */
static JSContext *vu_context(uint32_t vu)
{
    JSContext *ctx = JS_NewContext(rt);
    ctx->random_state = 0x9E3779B97F4A7C15ull * (vu + 1) ^ js__gettimeofday_us();
    JSValue global = JS_GetGlobalObject(ctx);
    JSValue n = JS_NewObject(ctx);
    JS_SetPropertyStr(ctx, n, "sleep", JS_NewCFunction(ctx, n_sleep, "sleep", 1));
    JS_SetPropertyStr(ctx, n, "log", JS_NewCFunction(ctx, js_log, "log", 1));
    JS_SetPropertyStr(ctx, n, "iter", JS_NewCFunction(ctx, n_iter, "iter", 0));
    JS_SetPropertyStr(ctx, n, "publish", JS_NewCFunction(ctx, n_publish, "publish", 2));
    JS_SetPropertyStr(ctx, n, "dataLen", JS_NewCFunction(ctx, n_data_len, "dataLen", 1));
    JS_SetPropertyStr(ctx, n, "dataGet", JS_NewCFunction(ctx, n_data_get, "dataGet", 2));
    JSValue make = JS_Eval(ctx, PRELUDE, sizeof PRELUDE - 1, "prelude.js", JS_EVAL_TYPE_GLOBAL);
    JSValue args[2] = {n, JS_NewUint32(ctx, vu)};
    JSValue r = JS_IsException(make) ? JS_EXCEPTION : JS_Call(ctx, make, JS_UNDEFINED, 2, args);
    JS_FreeValue(ctx, make);
    JS_FreeValue(ctx, n);
    JS_FreeValue(ctx, global);
    if (JS_IsException(r)) {
        log_exception(ctx);
        JS_FreeContext(ctx);
        return NULL;
    }
    JS_FreeValue(ctx, r);
    return ctx;
}

static JSContext *layer_context(uint32_t vu, const char *src, size_t len, JSValue *plugin)
{
    JSContext *ctx = vu_context(vu);
    if (!ctx)
        return NULL;
    JSValue m = layer_bytecode
        ? JS_ReadObject(ctx, layer_bytecode, layer_bytecode_len, JS_READ_OBJ_BYTECODE)
        : JS_Eval(ctx, src, len, "script.js", JS_EVAL_TYPE_MODULE | JS_EVAL_FLAG_COMPILE_ONLY);
    if (JS_IsException(m))
        goto fail;
    if (layer_bytecode && JS_ResolveModule(ctx, m) < 0) {
        JS_FreeValue(ctx, m);
        goto fail;
    }
    JSModuleDef *def = JS_VALUE_GET_PTR(m);
    JSValue p = JS_EvalFunction(ctx, m);
    if (JS_IsException(p))
        goto fail;
    JSContext *job;
    while (JS_ExecutePendingJob(rt, &job) > 0) {
    }
    if (JS_PromiseState(ctx, p) == JS_PROMISE_REJECTED) {
        JS_Throw(ctx, JS_PromiseResult(ctx, p));
        JS_FreeValue(ctx, p);
        goto fail;
    }
    JS_FreeValue(ctx, p);
    JSValue ns = JS_GetModuleNamespace(ctx, def);
    *plugin = JS_GetPropertyStr(ctx, ns, "plugin");
    JS_FreeValue(ctx, ns);
    return ctx;
fail:
    log_exception(ctx);
    return NULL;
}

#ifdef MV_SHARED_REALM
/* Flags bit 1 (build.sh's patched quickjs.c only): `script` is the layer as a function
 * expression returning its `plugin` (the driver's --shared). It is compiled once, in the
 * describe context, which is kept; each VU's context makes its own closure of that one
 * bytecode and calls it, so the layer's functions, their code and constants exist once
 * per instance while every VU's objects and globals are its own. */
static JSFunctionBytecode *layer_fn;

static JSContext *shared_context(uint32_t vu, JSValue *plugin)
{
    JSContext *ctx = vu_context(vu);
    if (!ctx)
        return NULL;
    JSValue f = js_closure(ctx, js_dup(JS_MKPTR(JS_TAG_FUNCTION_BYTECODE, layer_fn)), NULL, NULL);
    JSValue p = JS_IsException(f) ? JS_EXCEPTION : JS_Call(ctx, f, JS_UNDEFINED, 0, NULL);
    JS_FreeValue(ctx, f);
    if (JS_IsException(p)) {
        log_exception(ctx);
        return NULL;
    }
    *plugin = p;
    return ctx;
}

/* The describe context of shared mode: compiles the wrapped layer, keeps its bytecode. */
static JSContext *shared_template(const char *src, size_t len, JSValue *plugin)
{
    JSContext *ctx = vu_context(0);
    if (!ctx)
        return NULL;
    JSValue f = JS_Eval(ctx, src, len, "script.js", JS_EVAL_TYPE_GLOBAL);
    if (JS_IsException(f) || JS_VALUE_GET_TAG(f) != JS_TAG_OBJECT) {
        log_exception(ctx);
        return NULL;
    }
    layer_fn = JS_VALUE_GET_OBJ(f)->u.func.function_bytecode;
    js_dup(JS_MKPTR(JS_TAG_FUNCTION_BYTECODE, layer_fn));
    JSValue p = JS_Call(ctx, f, JS_UNDEFINED, 0, NULL);
    JS_FreeValue(ctx, f);
    if (JS_IsException(p)) {
        log_exception(ctx);
        return NULL;
    }
    *plugin = p;
    return ctx;
}
#endif

/* Calls `plugin[method](arg)` (arg a string, or none when NULL); 0 or -1 (logged). */
static int call_plugin(JSContext *ctx, JSValue plugin, const char *method, const char *arg)
{
    JSValue f = JS_GetPropertyStr(ctx, plugin, method);
    JSValue a = arg ? JS_NewString(ctx, arg) : JS_UNDEFINED;
    JSValue r = JS_Call(ctx, f, plugin, arg ? 1 : 0, &a);
    JS_FreeValue(ctx, f);
    JS_FreeValue(ctx, a);
    if (JS_IsException(r)) {
        log_exception(ctx);
        return -1;
    }
    JS_FreeValue(ctx, r);
    return 0;
}

/*
 * As mv_init, in layer mode: `script` is the layer module. A describe context runs
 * `plugin.describe()` first (a SharedArray publishes its records) and is freed; then
 * each VU's context evaluates `vu_script` (the same module, or one whose bundled files
 * were left out: the driver's choice) and runs `plugin.init('null')` (the script's
 * init code). Returns 0, or the VU whose context failed (the describe context: n + 1).
 */
__attribute__((export_name("mv_init_layer"))) uint32_t mv_init_layer(uint32_t n, const char *script,
                                                                     size_t len, const char *vu_script,
                                                                     size_t vu_len, uint32_t stack_kib,
                                                                     uint32_t buf_kib, uint32_t flags)
{
    rt = JS_NewRuntime();
    JS_SetModuleLoaderFunc(rt, NULL, mv_load_module, NULL);
    vus = calloc(n, sizeof(Vu));
    vu_count = n;
    vu_stack_size = (size_t)stack_kib * 1024;
    vu_buf_size = (size_t)buf_kib * 1024;
    JSValue plugin;
    bool shared = flags & 2;
#ifdef MV_SHARED_REALM
    JSContext *d = shared ? shared_template(script, len, &plugin) : layer_context(0, script, len, &plugin);
#else
    if (shared) {
        static const char m[] = "--shared needs the guest built with the patched quickjs.c (build.sh)";
        host_log(m, sizeof m - 1);
        return n + 1;
    }
    JSContext *d = layer_context(0, script, len, &plugin);
#endif
    if (!d || call_plugin(d, plugin, "describe", NULL))
        return n + 1;
    JS_FreeValue(d, plugin);
    if (flags & 1) {
        /* Compiled once (in the describe context, which is freed: the bytes are plain
         * memory), read by each VU's context. */
        JSValue m = JS_Eval(d, vu_script, vu_len, "script.js",
                            JS_EVAL_TYPE_MODULE | JS_EVAL_FLAG_COMPILE_ONLY);
        if (JS_IsException(m)) {
            log_exception(d);
            return n + 1;
        }
        uint8_t *b = JS_WriteObject(d, &layer_bytecode_len, m,
                                    JS_WRITE_OBJ_BYTECODE | JS_WRITE_OBJ_STRIP_SOURCE);
        JS_FreeValue(d, m);
        if (!b) {
            log_exception(d);
            return n + 1;
        }
        layer_bytecode = malloc(layer_bytecode_len);
        memcpy(layer_bytecode, b, layer_bytecode_len);
        js_free(d, b);
    }
    /* The shared layer's bytecode keeps its context as its realm: kept. */
    if (!shared)
        JS_FreeContext(d);
    for (uint32_t i = 0; i < n; i++) {
        Vu *vu = &vus[i];
        current = i;
#ifdef MV_SHARED_REALM
        JSContext *ctx = shared ? shared_context(i + 1, &plugin)
                                : layer_context(i + 1, vu_script, vu_len, &plugin);
#else
        JSContext *ctx = layer_context(i + 1, vu_script, vu_len, &plugin);
#endif
        if (!ctx || call_plugin(ctx, plugin, "init", "null"))
            return i + 1;
        vu->ctx = ctx;
        vu->self = plugin;
        vu->iteration = JS_GetPropertyStr(ctx, plugin, "iteration");
        vu->arg = JS_NewString(ctx, "default");
        vu->stack = malloc(vu_stack_size);
        vu->stack_top = ((uintptr_t)vu->stack + vu_stack_size) & ~(uintptr_t)15;
        vu->buf = malloc(vu_buf_size);
    }
    return 0;
}

/* The runtime's memory by kind (JS_ComputeMemoryUsage, 26 int64 fields in quickjs.h's
 * order) and the SharedArray records' bytes: the driver's breakdown per VU. */
static struct {
    JSMemoryUsage u;
    int64_t shared_bytes;
} usage;
__attribute__((export_name("mv_memory_usage"))) void *mv_memory_usage(void)
{
    JS_ComputeMemoryUsage(rt, &usage.u);
    usage.shared_bytes = (int64_t)shared_bytes;
    return &usage;
}
