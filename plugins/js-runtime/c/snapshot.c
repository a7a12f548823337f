/*
 * Freezing the heap of a Wizer snapshot (issue #53): appended to QuickJS-ng's quickjs.c
 * by plugins/js-runtime/build.rs, so it sees quickjs.c's structures and static
 * functions. See build.rs for the edits made to quickjs.c itself and
 * results/js.md ("Snapshot pages a VU makes private") for the measurement behind them.
 *
 * Every VU is one wasm instance over the same copy-on-write snapshot of the runtime's
 * memory; a page any VU writes becomes that VU's own copy. QuickJS writes the objects it
 * only reads: reference counts (in the 8-byte block header before every allocation),
 * the cycle collector's marks and list links, and the arena allocator's free lists when
 * a VU's new object takes a free block inside a snapshot page. JS_FreezeSnapshot, run
 * once at the end of the Wizer init, stops those writes for everything alive then:
 *
 * 1. Reference-counted blocks alive then become immortal (their count set to
 *    JS_RC_IMMORTAL): the edited increments and decrements leave such a count alone,
 *    so they are never freed. What a VU allocates later is counted and freed as before.
 * 2. The cycle collector's list (rt->gc_obj_list) is moved to a list of its own that
 *    JS_RunGC never walks: frozen objects are roots, as values held by C code are.
 *    A cycle a VU makes among its own objects is still collected; objects a frozen one
 *    references are kept, as they would be by any live holder.
 * 3. The snapshot's arenas are taken off the allocator's lists, so new small blocks
 *    are carved from new arenas instead of snapshot pages, and linking a new arena
 *    writes no snapshot arena's list link.
 *
 * 4. dlmalloc's free chunks in the snapshot (wasi-libc's malloc, which QuickJS's arenas
 *    and large blocks and the Rust code share) are taken by malloc and kept, so what a
 *    VU allocates later comes from the top chunk, pages no other VU maps, instead of
 *    holes scattered over shared pages (measured: a VU's arenas in ~15 snapshot pages).
 *
 * 5. The shape hash table becomes the snapshot's (js_frozen_shape_hash, edit 5 of
 *    build.rs): never written again, searched after a table of the VU's own, where the
 *    shapes a VU makes are linked. Its frozen shapes are immortal, so never unlinked.
 *    The atom hash table is grown now if a VU's few new atoms would grow it: growing
 *    it relinks every atom (their `hash_next`, a write on every atom's page).
 *
 * 6. The atom array's free slots (where a VU's new atoms are written) start on a page of
 *    their own: the snapshot's freed slots and the array's tail shared a page with the
 *    entries and objects every message reads, and a VU's first new atom copied it
 *    (measured: one of the 14 pages every WebSocket message touched, results/js.md,
 *    branch pages53b).
 *
 * After it, the first arena of a size class is 1 KiB, not 4 (js_arena_blocks): a VU
 * that keeps a few objects of many sizes then fills one page instead of one per size.
 *
 * Before that, every property QuickJS creates on first use (JS_PROP_AUTOINIT: `Math`,
 * `JSON`, a function's `prototype`, ...) is created, so that no VU makes its own copy
 * of the same objects, atoms and shapes (measured: `Math` and its ~40 functions in
 * each idle VU, the layer's first `Math.random`).
 *
 * What stays mutable: a non-hashed shape is owned by one object and modified in place
 * when that object gains a property (add_property asserts its count is 1), so those
 * keep their count; they are still moved off the collector's list (their owner is
 * frozen and keeps them alive). Large strings (over 504 bytes, their own dlmalloc chunk,
 * reachable from no list) keep their count too: correct, only not spared the writes.
 *
 * The leak this allows is bounded: a frozen object that becomes unreachable is never
 * freed, but the frozen objects are the snapshot's, a fixed set.
 */

/* Frozen GC objects (see 2): a list head of its own so that list_del on a frozen
   object (a non-hashed shape resized, an object freed after all) stays valid. */
static struct list_head js_frozen_obj_list = { &js_frozen_obj_list, &js_frozen_obj_list };

/* Set by JS_FreezeSnapshot: the arenas made since are a VU's own. */
static bool js_heap_frozen;

/* The first arena of a size class a VU makes: 1 KiB (at least one block). */
#define JS_ARENA_FIRST_SIZE 1024

/* How many blocks arena_new gives a new arena of class `block_size_idx` (edit 4 of
   build.rs): `n_blocks` (a 4 KiB arena's) unless the heap is frozen and the class has
   no arena of the VU's yet. */
static int js_arena_blocks(JSRuntime *rt, int block_size_idx, int n_blocks)
{
    int n;
    if (!js_heap_frozen || !list_empty(&rt->arena_state.arena_list[block_size_idx]))
        return n_blocks;
    n = (JS_ARENA_FIRST_SIZE - (int)sizeof(JSArena)) / arena_block_sizes[block_size_idx];
    if (n < 1)
        n = 1;
    return n < n_blocks ? n : n_blocks;
}

/* The snapshot's arenas (see 3). */
static struct list_head js_frozen_arena_list = { &js_frozen_arena_list, &js_frozen_arena_list };

/* Moves every element of the list `from` to the list `to` (both proper lists). */
static void js_freeze_splice(struct list_head *from, struct list_head *to)
{
    struct list_head *first, *last;
    if (list_empty(from))
        return;
    first = from->next;
    last = from->prev;
    last->next = to->next;
    to->next->prev = last;
    to->next = first;
    first->prev = to;
    init_list_head(from);
}

/* Creates every property still to be created on first use (JS_PROP_AUTOINIT) of every
   object, the objects those create included (they are added at the list's end). */
static void js_freeze_autoinit(JSContext *ctx)
{
    struct list_head *el;
    list_for_each(el, &ctx->rt->gc_obj_list) {
        JSGCObjectHeader *gp = list_entry(el, JSGCObjectHeader, link);
        JSObject *p;
        JSShape *sh;
        JSShapeProperty *prs;
        int i;
        if (JS_GC_TYPE(gp) != JS_GC_OBJ_TYPE_JS_OBJECT)
            continue;
        p = (JSObject *)gp;
    again:
        sh = p->shape;
        prs = get_shape_prop(sh);
        for (i = 0; i < sh->prop_count; i++, prs++) {
            if (prs->atom != JS_ATOM_NULL && (prs->flags & JS_PROP_TMASK) == JS_PROP_AUTOINIT) {
                /* the property is no longer AUTOINIT after this, even when it failed;
                   its shape may have been replaced: scan the object again */
                if (JS_AutoInitProperty(ctx, p, prs->atom, &p->prop[i], prs) < 0)
                    JS_FreeValue(ctx, JS_GetException(ctx));
                goto again;
            }
        }
    }
}

static void js_freeze_block(JSMallocBlockHeader *b)
{
    /* a non-hashed shape, marked by JS_FreezeSnapshot below, keeps its count */
    if (b->mark && b->gc_obj_type == JS_GC_OBJ_TYPE_SHAPE)
        return;
    b->ref_count = JS_RC_IMMORTAL;
}

/* wasm-ld's symbol: where dlmalloc's heap starts (wasi-libc adds the memory from here
   to the end as its first segment). */
extern unsigned char __heap_base;

/* dlmalloc (wasi-libc's, 32-bit): a chunk's head is the word at +4: size | CINUSE (2) |
   PINUSE (1); chunks are 16-byte aligned at +8; the top chunk ends the heap. Fills
   `sizes` with the sizes of the free chunks below the top chunk; returns their count, or
   -1 when the walk does not add up (then nothing is drained). */
static int js_heap_free_chunks(size_t *sizes, int max, uintptr_t *top)
{
    uintptr_t base = (uintptr_t)&__heap_base;
    uintptr_t end = (uintptr_t)__builtin_wasm_memory_size(0) * 65536;
    uintptr_t c = base + ((16 - ((base + 8) & 15)) & 15);
    int n = 0;
    if (!(*(size_t *)(c + 4) & 1))
        return -1; /* the first chunk always has PINUSE */
    for (;;) {
        size_t size = *(size_t *)(c + 4) & ~(size_t)7;
        uintptr_t next = c + size;
        if (size < 16 || next > end)
            return -1;
        if (next + 8 > end || end - next < 64) {
            *top = c; /* the top chunk reaches the end, bar dlmalloc's footer */
            return n;
        }
        if (!(*(size_t *)(next + 4) & 1) && n < max)
            sizes[n++] = size; /* next chunk's PINUSE clear: this one is free */
        c = next;
    }
}

/* Takes every free chunk below the top chunk with malloc and keeps it (see 4). */
static void js_heap_drain(void)
{
    size_t sizes[256];
    int pass, i, n;
    uintptr_t top = 0;
    for (pass = 0; pass < 64; pass++) {
        n = js_heap_free_chunks(sizes, 256, &top);
        if (n <= 0)
            return;
        for (i = 0; i < n; i++) {
            /* a request of size - 8 is a chunk of `size` (16 bytes, the smallest, too:
               asked for 16 bytes, dlmalloc gave 24 and the 16-byte chunks stayed free,
               for a VU's first short Rust strings to take, writing three snapshot
               pages: measured); a chunk dlmalloc splits off instead is found by the
               next pass */
            void *p = malloc(sizes[i] - 8);
            if (p && (uintptr_t)p >= top) {
                free(p); /* from the top chunk: none of that size is left below */
            }
        }
    }
}

/* The atoms a VU may add before the atom hash table grows (see 5). */
#define JS_ATOM_HEADROOM 4096

/* Grows the atom hash table until JS_ATOM_HEADROOM more atoms fit (see 5). */
static void js_freeze_atom_hash(JSRuntime *rt)
{
    while (rt->atom_count_resize - rt->atom_count < JS_ATOM_HEADROOM) {
        if (JS_ResizeAtomHash(rt, rt->atom_hash_size * 2))
            return;
    }
}

/* Free slots of the atom array given a VU before the array grows (see 6). */
#define JS_ATOM_SLOTS_HEADROOM 1024

/* The atom array's free slots, where a VU's new atoms go, start on a page of their own
   (see 6): the array grown by two pages and the headroom, its free list restarted at
   the first slot that begins a page. The free slots left before it (the snapshot's
   freed atoms, the gap) stay marked free on no list, so no VU reuses them. */
static void js_freeze_atom_array(JSRuntime *rt)
{
    const uint32_t per_page = 4096 / sizeof(JSAtomStruct *);
    uint32_t size = rt->atom_size, new_size, start, i;
    JSAtomStruct **a;
    new_size = size + 2 * per_page + JS_ATOM_SLOTS_HEADROOM;
    if (new_size > JS_ATOM_MAX)
        return;
    a = js_realloc_rt(rt, rt->atom_array, sizeof(*a) * new_size);
    if (!a)
        return;
    rt->atom_array = a;
    start = size + (uint32_t)((4096 - ((uintptr_t)&a[size] & 4095)) & 4095) / sizeof(*a);
    for (i = size; i < start; i++)
        a[i] = atom_set_free(0);
    for (i = start; i < new_size; i++)
        a[i] = atom_set_free(i + 1 < new_size ? i + 1 : 0);
    rt->atom_size = new_size;
    rt->atom_free_index = start;
}

/* The VU's shape hash table until its first shape: two empty buckets. Its count starts
   at 1, so that the first js_new_shape2 grows it: the table then comes from the VU's
   own heap. Allocated here, it took a block of an arena the freeze itself made, on a
   snapshot page of its own that every VU then copied (measured). */
static JSShape *js_vu_shape_hash0[2];

/* The shape hash table becomes the snapshot's; the VU's own starts empty (see 5). */
static void js_freeze_shape_hash(JSRuntime *rt)
{
    js_frozen_shape_hash = rt->shape_hash;
    js_frozen_shape_hash_bits = rt->shape_hash_bits;
    rt->shape_hash = js_vu_shape_hash0;
    rt->shape_hash_bits = 1;
    rt->shape_hash_size = 2;
    rt->shape_hash_count = 1;
}

/* Called once, at the end of the Wizer init (plugins/js-runtime/src/lib.rs). */
void JS_FreezeSnapshot(JSContext *ctx)
{
    JSRuntime *rt = ctx->rt;
    struct list_head *el;
    JSGCObjectHeader *gp;
    int i;

    js_freeze_autoinit(ctx);
    /* what the init left unreachable is freed, not frozen */
    JS_RunGC(rt);

    /* Non-hashed shapes: marked, to be skipped below (marks are 0 outside a GC). */
    list_for_each(el, &rt->gc_obj_list) {
        gp = list_entry(el, JSGCObjectHeader, link);
        if (JS_GC_TYPE(gp) == JS_GC_OBJ_TYPE_SHAPE && !((JSShape *)gp)->is_hashed)
            JS_GC_MARK(gp) = 1;
    }

    /* 1. Every block in use in every arena: objects, strings, atoms, shapes, bigints;
       blocks that are not reference counted carry an unused count, harmless to set.
       A stale mark/type on such a block only leaves it mortal (always safe). */
    for (i = 0; i < JS_ARENA_BLOCK_SIZE_COUNT; i++) {
        list_for_each(el, &rt->arena_state.arena_list[i]) {
            JSArena *ar = list_entry(el, JSArena, link);
            unsigned int bs = arena_block_sizes[ar->block_size_idx];
            unsigned int k;
            for (k = 0; k < ar->n_blocks; k++) {
                JSMallocBlockHeader *b = arena_get_block(ar, k, bs);
                if (b->u.block_idx == k)
                    js_freeze_block(b);
            }
        }
    }
    /* ... GC objects in large blocks, and every atom (large ones included) */
    list_for_each(el, &rt->gc_obj_list) {
        js_freeze_block(js_rc(list_entry(el, JSGCObjectHeader, link)));
    }
    for (i = 0; i < rt->atom_size; i++) {
        JSAtomStruct *p = rt->atom_array[i];
        if (p && !atom_is_free(p))
            js_freeze_block(js_rc(p));
    }

    /* the non-hashed shapes' marks back to 0 */
    list_for_each(el, &rt->gc_obj_list) {
        JS_GC_MARK(list_entry(el, JSGCObjectHeader, link)) = 0;
    }

    /* 2. The collector's list, moved whole to the frozen list. */
    js_freeze_splice(&rt->gc_obj_list, &js_frozen_obj_list);

    /* 3. The arenas: off the free lists (a self-linked free_link, so a later list_del
       on it, when the arena empties, is harmless) and onto a list of their own. */
    for (i = 0; i < JS_ARENA_BLOCK_SIZE_COUNT; i++) {
        struct list_head *head = &rt->arena_state.free_arena_list[i];
        js_freeze_splice(&rt->arena_state.arena_list[i], &js_frozen_arena_list);
        while (!list_empty(head)) {
            el = head->next;
            list_del(el);
            init_list_head(el);
        }
    }
    /* 5. The atom hash grown first, so the table it replaces is drained below; 6. the
       atom array's free slots on pages of their own, its old block drained too. */
    js_freeze_atom_hash(rt);
    js_freeze_atom_array(rt);
    js_heap_frozen = true;
    js_heap_drain();
    js_freeze_shape_hash(rt);
}
