//! Compiles QuickJS-ng's C (the sources of the `rquickjs-sys` crate this crate depends
//! on, 0.14.0) with the edits below and `c/snapshot.c` (and `c/strings.c`, a faster
//! ASCII string, and `c/fast.c`, the per-message natives' shortcuts) appended, so a VU's instance
//! writes fewer of the snapshot's pages (issue #53; results/js.md, "Snapshot pages a VU
//! makes private"). The Rust bindings stay rquickjs-sys's (its pregenerated ones): the
//! edits change no declaration of quickjs.h.
//!
//! rquickjs-sys's build script compiles the unedited C too, into its own rlib; this
//! crate's library is on the link line first and defines every symbol the code uses,
//! so the linker takes none of that copy (a symbol it did take would fail the link as a
//! duplicate, not pick silently).
//!
//! The compiler, archiver and flags are the ones plugins/.cargo/config.toml gives
//! rquickjs-sys (`CC_wasm32_wasip2`, Debian's clang and wasi-libc), read by `cc`.

use std::path::{Path, PathBuf};

/// rquickjs-sys's version: its C sources are edited by exact text below.
const RQUICKJS_SYS: &str = "rquickjs-sys-0.14.0";

/// The edits to quickjs.c, each applied to exactly the count of places given (a source
/// that differs fails the build, naming the edit). Why each is there:
/// snapshot.c's header comment.
const EDITS: &[Edit] = &[
    // 1. The immortal reference count and the counting that leaves it alone, defined
    //    right after the block header's accessors, and the declaration of snapshot.c's
    //    js_arena_blocks (edit 4 calls it).
    Edit {
        what: "define JS_RC_IMMORTAL, JS_RC_INC and js_rc_dec after JS_GC_MARK",
        find: "#define JS_GC_MARK(p)   (js_rc(p)->mark)\n",
        replace: "#define JS_GC_MARK(p)   (js_rc(p)->mark)\n\
/* loadtest: a count at or above JS_RC_IMMORTAL_MIN marks a block frozen with the\n\
   Wizer snapshot (JS_FreezeSnapshot, appended from plugins/js-runtime/c/snapshot.c):\n\
   never counted, never freed, so a VU reading it does not write its page. */\n\
#define JS_RC_IMMORTAL (1 << 30)\n\
#define JS_RC_IMMORTAL_MIN (1 << 29)\n\
#define JS_RC_INC(p) ((void)(unlikely(js_rc(p)->ref_count >= JS_RC_IMMORTAL_MIN) ? 0 : js_rc(p)->ref_count++))\n\
static inline int js_rc_dec(const void *p)\n\
{\n\
    JSMallocBlockHeader *h = js_rc(p);\n\
    int rc = h->ref_count;\n\
    if (unlikely(rc >= JS_RC_IMMORTAL_MIN))\n\
        return rc;\n\
    h->ref_count = --rc;\n\
    return rc;\n\
}\n\
static int js_arena_blocks(JSRuntime *rt, int block_size_idx, int n_blocks);\n",
        count: 1,
    },
    // 4. The count of blocks of a new arena asked of snapshot.c: after the freeze, the
    //    first arena of a size class is 1 KiB instead of 4 (an idle VU's few objects of
    //    nine size classes took nine mostly empty 4 KiB arenas).
    Edit {
        what: "arena_new asks js_arena_blocks for its count of blocks",
        find: "    n_blocks = (JS_ARENA_SIZE - sizeof(JSArena)) / block_size;\n",
        replace: "    n_blocks = js_arena_blocks(rt, block_size_idx,\n\
                               (JS_ARENA_SIZE - sizeof(JSArena)) / block_size);\n",
        count: 1,
    },
    // 5. Two shape hash tables after the freeze: the snapshot's, never written again,
    //    and the VU's own, where the shapes a VU makes are linked. A VU linking its
    //    shapes into the snapshot's table wrote its buckets (a page each), and once its
    //    shapes outgrew the table, resize_shape_hash relinked every hashed shape of the
    //    snapshot (their `shape_hash_next`: a write on every page holding one). The
    //    lookups search the VU's table, then the snapshot's (snapshot.c keeps it).
    Edit {
        what: "find_hashed_shape_proto searches a table it is given",
        find: "static JSShape *find_hashed_shape_proto(JSRuntime *rt, JSObject *proto)\n{",
        replace: "static JSShape *find_hashed_shape_proto1(JSShape **tab, int tab_bits,\n\
                                        JSObject *proto)\n{",
        count: 1,
    },
    Edit {
        what: "find_hashed_shape_prop searches a table it is given",
        find: "static JSShape *find_hashed_shape_prop(JSRuntime *rt, JSShape *sh,\n",
        replace: "static JSShape *find_hashed_shape_prop1(JSShape **tab, int tab_bits,\n\
                                        JSShape *sh,\n",
        count: 1,
    },
    Edit {
        what: "the two lookups' bucket from the table they are given",
        find: concat!(
            "    h1 = get_shape_hash(h, rt->shape_hash_bits);\n",
            "    for(sh1 = rt->shape_hash[h1]; sh1 != NULL; sh1 = sh1->shape_hash_next) {\n",
        ),
        replace: concat!(
            "    h1 = get_shape_hash(h, tab_bits);\n",
            "    for(sh1 = tab[h1]; sh1 != NULL; sh1 = sh1->shape_hash_next) {\n",
        ),
        count: 2,
    },
    Edit {
        what: "find_hashed_shape_proto and _prop: the VU's table, then the snapshot's",
        find: "static __maybe_unused void JS_DumpShape(JSRuntime *rt, int i, JSShape *sh)\n",
        replace: "/* loadtest: the snapshot's shape hash table, set by JS_FreezeSnapshot (NULL before) */\n\
static JSShape **js_frozen_shape_hash;\n\
static int js_frozen_shape_hash_bits;\n\
\n\
static JSShape *find_hashed_shape_proto(JSRuntime *rt, JSObject *proto)\n\
{\n\
    JSShape *sh = find_hashed_shape_proto1(rt->shape_hash, rt->shape_hash_bits, proto);\n\
    if (!sh && js_frozen_shape_hash)\n\
        sh = find_hashed_shape_proto1(js_frozen_shape_hash, js_frozen_shape_hash_bits, proto);\n\
    return sh;\n\
}\n\
\n\
static JSShape *find_hashed_shape_prop(JSRuntime *rt, JSShape *sh,\n\
                                       JSAtom atom, int prop_flags)\n\
{\n\
    JSShape *sh1 = find_hashed_shape_prop1(rt->shape_hash, rt->shape_hash_bits, sh, atom, prop_flags);\n\
    if (!sh1 && js_frozen_shape_hash)\n\
        sh1 = find_hashed_shape_prop1(js_frozen_shape_hash, js_frozen_shape_hash_bits, sh, atom,\n\
                                      prop_flags);\n\
    return sh1;\n\
}\n\
\n\
static __maybe_unused void JS_DumpShape(JSRuntime *rt, int i, JSShape *sh)\n",
        count: 1,
    },
    Edit {
        what: "js_shape_hash_link grows the table it links into when it is full",
        find: concat!(
            "static void js_shape_hash_link(JSRuntime *rt, JSShape *sh)\n",
            "{\n",
            "    uint32_t h;\n",
        ),
        replace: concat!(
            "static void js_shape_hash_link(JSRuntime *rt, JSShape *sh)\n",
            "{\n",
            "    uint32_t h;\n",
            "    /* loadtest: a VU's table starts at 2 buckets (snapshot.c) and a VU may link\n",
            "       its shapes by add_property alone (never js_new_shape2, which grew it) */\n",
            "    if (unlikely(2 * (rt->shape_hash_count + 1) > rt->shape_hash_size))\n",
            "        resize_shape_hash(rt, rt->shape_hash_bits + 1);\n",
        ),
        count: 1,
    },
    Edit {
        what: "resize_shape_hash makes at least 64 buckets",
        find: "    new_shape_hash_size = 1 << new_shape_hash_bits;\n",
        replace: concat!(
            "    /* loadtest: from snapshot.c's 2 buckets straight to init_shape_hash's 64 (the\n",
            "       steps between took arenas of 3 more size classes: a page per VU, measured) */\n",
            "    if (new_shape_hash_bits < 6)\n",
            "        new_shape_hash_bits = 6;\n",
            "    new_shape_hash_size = 1 << new_shape_hash_bits;\n",
        ),
        count: 1,
    },
    Edit {
        what: "a shape table of 2 buckets (snapshot.c's static one) is not freed",
        find: "    js_free_rt(rt, rt->shape_hash);\n",
        replace: concat!(
            "    /* loadtest: 2 buckets: the VU's first table, snapshot.c's static one */\n",
            "    if (rt->shape_hash_size > 2)\n",
            "        js_free_rt(rt, rt->shape_hash);\n",
        ),
        count: 2,
    },
    Edit {
        what: "js_shape_hash_unlink leaves a shape of the snapshot's table alone",
        find: concat!(
            "    while (*psh != sh)\n",
            "        psh = &(*psh)->shape_hash_next;\n",
            "    *psh = sh->shape_hash_next;\n",
            "    rt->shape_hash_count--;\n",
        ),
        replace: concat!(
            "    while (*psh != sh) {\n",
            "        /* loadtest: not in the VU's table: the snapshot's, whose shapes are\n",
            "           immortal (never freed, never changed in place): never reached */\n",
            "        if (unlikely(*psh == NULL))\n",
            "            return;\n",
            "        psh = &(*psh)->shape_hash_next;\n",
            "    }\n",
            "    *psh = sh->shape_hash_next;\n",
            "    rt->shape_hash_count--;\n",
        ),
        count: 1,
    },
    // 6. `String.prototype.indexOf` searches forward as `split` and `replace` do
    //    (string_indexof: the first character found by memchr for a one-byte string,
    //    the rest compared only there), not with a string_cmp call at every position:
    //    a WebSocket handler's `text.indexOf('"note.')` over a JSON message (capacity.js,
    //    once per push) spent ~1.4 k instructions in those calls. Same result: the first
    //    i >= start with i + v_len <= len where the strings match.
    Edit {
        what: "indexOf searches forward with string_indexof",
        find: concat!(
            "    ret = -1;\n",
            "    if (len >= v_len && inc * (stop - start) >= 0) {\n",
        ),
        replace: concat!(
            "    ret = -1;\n",
            "    if (inc == 1) {\n",
            "        /* loadtest: the forward search by first character (edit 6) */\n",
            "        if (len >= v_len && stop >= start)\n",
            "            ret = string_indexof(p, p1, start);\n",
            "    } else if (len >= v_len && inc * (stop - start) >= 0) {\n",
        ),
        count: 1,
    },
    Edit {
        what: "string_indexof_char finds a byte with memchr",
        find: concat!(
            "        if ((c & ~0xff) == 0) {\n",
            "            for (i = from; i < len; i++) {\n",
            "                if (str8(p)[i] == (uint8_t)c)\n",
            "                    return i;\n",
            "            }\n",
            "        }\n",
        ),
        replace: concat!(
            "        if ((c & ~0xff) == 0 && from < len) {\n",
            "            /* loadtest: wasi-libc's memchr reads a word at a time (edit 6) */\n",
            "            const uint8_t *q = memchr(str8(p) + from, c, len - from);\n",
            "            if (q)\n",
            "                return q - str8(p);\n",
            "        }\n",
        ),
        count: 1,
    },
    Edit {
        what: "string_cmp compares two one-byte strings through their bytes",
        find: concat!(
            "static int string_cmp(JSString *p1, JSString *p2, int x1, int x2, int len)\n",
            "{\n",
            "    int i, c1, c2;\n",
        ),
        replace: concat!(
            "static int string_cmp(JSString *p1, JSString *p2, int x1, int x2, int len)\n",
            "{\n",
            "    int i, c1, c2;\n",
            "    /* loadtest: two one-byte strings (a WebSocket message and the text an\n",
            "       `indexOf` looks for, per message): their bytes found once, not per\n",
            "       character through string_get's width test and strv's kind switch; the\n",
            "       same result (the first difference, or 0) */\n",
            "    if (!p1->is_wide_char && !p2->is_wide_char) {\n",
            "        const uint8_t *a = str8(p1) + x1, *b = str8(p2) + x2;\n",
            "        for (i = 0; i < len; i++) {\n",
            "            if (a[i] != b[i])\n",
            "                return a[i] - b[i];\n",
            "        }\n",
            "        return 0;\n",
            "    }\n",
        ),
        count: 1,
    },
];

/// The counting edits (2 and 3): every `JS_REF_COUNT(x)++` becomes `JS_RC_INC(x)` and
/// every `--JS_REF_COUNT(x)` / `JS_REF_COUNT(x)--` becomes `js_rc_dec(x)`; the counts
/// are what quickjs.c 0.16.2 (rquickjs-sys 0.14.0) holds, so a new site is not missed
/// silently.
const INCREMENTS: usize = 19;
const DECREMENTS: usize = 9;

struct Edit {
    what: &'static str,
    find: &'static str,
    replace: &'static str,
    count: usize,
}

fn main() {
    let src = quickjs_dir();
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("set by cargo"));
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let snapshot_c = manifest.join("c/snapshot.c");
    let strings_c = manifest.join("c/strings.c");
    let fast_c = manifest.join("c/fast.c");
    println!("cargo:rerun-if-changed={}", snapshot_c.display());
    println!("cargo:rerun-if-changed={}", strings_c.display());
    println!("cargo:rerun-if-changed={}", fast_c.display());
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=RQUICKJS_SYS_DIR");

    let (mut text, inc, dec) = edit_counts(&read(&src.join("quickjs.c")));
    if inc != INCREMENTS || dec != DECREMENTS {
        panic!(
            "quickjs.c: {inc} reference-count increments and {dec} decrements, expected \
             {INCREMENTS} and {DECREMENTS}: check each new site against snapshot.c's \
             rules, then update the counts in build.rs"
        );
    }
    for e in EDITS {
        let n = text.matches(e.find).count();
        if n != e.count {
            panic!(
                "quickjs.c edit '{}': found {n} places, expected {} ({} changed?)",
                e.what, e.count, RQUICKJS_SYS
            );
        }
        text = text.replace(e.find, e.replace);
    }
    text.push_str("\n/* ---- appended by plugins/js-runtime/build.rs ---- */\n");
    text.push_str(&read(&snapshot_c));
    text.push_str(&read(&strings_c));
    text.push_str(&read(&fast_c));
    let edited = out.join("quickjs.c");
    std::fs::write(&edited, text).expect("cannot write the edited quickjs.c");

    let mut cc = cc::Build::new();
    cc.extra_warnings(false)
        .warnings(false)
        .include(&src)
        // rquickjs-sys's defines for WASI targets (its build.rs: "pretend we're emscripten").
        .define("_GNU_SOURCE", None)
        .define("EMSCRIPTEN", "1")
        .define("FE_DOWNWARD", "0")
        .define("FE_UPWARD", "0")
        // QuickJS's asserts off, as rquickjs-sys's `disable-assertions` does for its own
        // copy (issue #53, hello53: part of the −23 % of guest instructions per request
        // with opt-level 3, plugins/Cargo.toml).
        .define("NDEBUG", None)
        .file(&edited);
    for f in ["libregexp.c", "libunicode.c", "dtoa.c"] {
        cc.file(src.join(f));
    }
    cc.compile("quickjs_loadtest");
}

/// Applies the counting edits; the edited text and the increments and decrements found.
fn edit_counts(text: &str) -> (String, usize, usize) {
    const CALL: &str = "JS_REF_COUNT(";
    let mut out = String::with_capacity(text.len() + 4096);
    let (mut inc, mut dec) = (0, 0);
    let mut rest = text;
    while let Some(at) = rest.find(CALL) {
        let args_start = at + CALL.len();
        let Some(close) = rest[args_start..].find(')') else {
            break;
        };
        let arg = &rest[args_start..args_start + close];
        let after = &rest[args_start + close + 1..];
        let prefix_dec = rest[..at].ends_with("--");
        if arg.contains('(') {
            // a nested call: not a counting site (none of those nests)
            out.push_str(&rest[..args_start]);
            rest = &rest[args_start..];
        } else if prefix_dec {
            out.push_str(&rest[..at - 2]);
            out.push_str(&format!("js_rc_dec({arg})"));
            dec += 1;
            rest = after;
        } else if let Some(tail) = after.strip_prefix("++") {
            out.push_str(&rest[..at]);
            out.push_str(&format!("JS_RC_INC({arg})"));
            inc += 1;
            rest = tail;
        } else if let Some(tail) = after.strip_prefix("--") {
            out.push_str(&rest[..at]);
            out.push_str(&format!("js_rc_dec({arg})"));
            dec += 1;
            rest = tail;
        } else {
            out.push_str(&rest[..args_start]);
            rest = &rest[args_start..];
        }
    }
    out.push_str(rest);
    (out, inc, dec)
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// rquickjs-sys's `quickjs/` folder: `RQUICKJS_SYS_DIR` (the crate's folder, for a
/// vendored checkout), else cargo's registry, where cargo unpacked it as this crate's
/// dependency.
fn quickjs_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("RQUICKJS_SYS_DIR") {
        let dir = PathBuf::from(dir).join("quickjs");
        if dir.join("quickjs.c").exists() {
            return dir;
        }
        panic!(
            "RQUICKJS_SYS_DIR has no quickjs/quickjs.c: set it to the {RQUICKJS_SYS} crate's folder"
        );
    }
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))
        .expect("neither CARGO_HOME nor HOME is set");
    let registry = home.join("registry/src");
    let found = std::fs::read_dir(&registry).ok().and_then(|entries| {
        entries
            .flatten()
            .map(|e| e.path().join(RQUICKJS_SYS).join("quickjs"))
            .find(|d| d.join("quickjs.c").exists())
    });
    found.unwrap_or_else(|| {
        panic!(
            "cannot find {RQUICKJS_SYS}'s C sources under {}: run `cargo fetch` in plugins/, \
             or set RQUICKJS_SYS_DIR to that crate's folder",
            registry.display()
        )
    })
}
