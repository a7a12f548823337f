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
 * 3. The arenas with free blocks are taken off the allocator's free lists, so new
 *    small blocks are carved from new arenas instead of snapshot pages.
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

static void js_freeze_block(JSMallocBlockHeader *b)
{
    /* a non-hashed shape, marked by JS_FreezeSnapshot below, keeps its count */
    if (b->mark && b->gc_obj_type == JS_GC_OBJ_TYPE_SHAPE)
        return;
    b->ref_count = JS_RC_IMMORTAL;
}

/* Called once, at the end of the Wizer init (plugins/js-runtime/src/lib.rs). */
void JS_FreezeSnapshot(JSRuntime *rt)
{
    struct list_head *el;
    JSGCObjectHeader *gp;
    int i;

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
    if (!list_empty(&rt->gc_obj_list)) {
        struct list_head *first = rt->gc_obj_list.next, *last = rt->gc_obj_list.prev;
        struct list_head *head = &js_frozen_obj_list;
        last->next = head->next;
        head->next->prev = last;
        head->next = first;
        first->prev = head;
        init_list_head(&rt->gc_obj_list);
    }

    /* 3. Arenas with free blocks: off the free lists (a self-linked free_link, so a
       later list_del on it, when the arena empties, is harmless). */
    for (i = 0; i < JS_ARENA_BLOCK_SIZE_COUNT; i++) {
        struct list_head *head = &rt->arena_state.free_arena_list[i];
        while (!list_empty(head)) {
            el = head->next;
            list_del(el);
            init_list_head(el);
        }
    }
}
