//! A per-instance scratch buffer for a result the runtime consumes at once (issue #53
//! goal 2): a WebSocket message's text, which `recvLoop` (natives.rs) copies into a
//! JavaScript string and drops before it receives the next one.
//!
//! The canonical ABI lowers a string result by calling the guest's `cabi_realloc` for
//! its bytes; the runtime's was wit-bindgen's, i.e. dlmalloc's `malloc`, and dropping
//! the Rust `String` afterwards was a `free`. Here `cabi_realloc` is the runtime's own:
//! inside [`lend`] its first allocation that fits is the scratch buffer (no allocator
//! work, the same bytes at every message), and the global allocator ([`Alloc`]) treats a
//! free of the buffer as giving it back. Every other allocation, and any inside `lend`
//! once the buffer is taken or when it does not fit, is `malloc`'s as before, so a
//! result that is kept (or an unexpected second allocation of the same lowering) is
//! never overwritten: the buffer is lent to one allocation at a time.

use core::alloc::{GlobalAlloc, Layout};
use core::cell::{Cell, UnsafeCell};
use std::alloc::System;

/// The buffer's size: a message longer than this takes `malloc`'s path (the demo
/// target's pushes are ~190 bytes).
const SIZE: usize = 1024;

/// The buffer and its state. The runtime is single-threaded (one wasm instance per VU,
/// no threads), so plain cells are enough.
struct Scratch {
    /// The bytes lent.
    buf: UnsafeCell<[u64; SIZE / 8]>,
    /// Set by [`lend`]: `cabi_realloc` may lend the buffer to its next allocation.
    armed: Cell<bool>,
    /// The buffer is lent (until the allocation holding it is freed or grown).
    lent: Cell<bool>,
}

// SAFETY: wasm32-wasip2 without threads: one thread touches it.
unsafe impl Sync for Scratch {}

static SCRATCH: Scratch = Scratch {
    buf: UnsafeCell::new([0; SIZE / 8]),
    armed: Cell::new(false),
    lent: Cell::new(false),
};

/// The buffer's first byte.
fn base() -> *mut u8 {
    SCRATCH.buf.get().cast()
}

/// Whether `ptr` is the lent buffer.
fn is_scratch(ptr: *mut u8) -> bool {
    ptr == base()
}

/// Runs `f` (an import call whose result the caller consumes and drops before it
/// calls `lend` again) with the buffer offered to the first allocation the lowering of
/// its result makes.
pub(crate) fn lend<T>(f: impl FnOnce() -> T) -> T {
    SCRATCH.armed.set(true);
    let r = f();
    SCRATCH.armed.set(false);
    r
}

/// The canonical ABI's allocation function (the component's `cabi_realloc` export),
/// as wit-bindgen's but lending the scratch buffer when armed.
///
/// # Safety
/// Called by the host (or wit-bindgen's glue) with the canonical ABI's arguments:
/// `old_ptr` allocated by this function with `old_len` and `align`.
#[no_mangle]
pub unsafe extern "C" fn cabi_realloc(
    old_ptr: *mut u8,
    old_len: usize,
    align: usize,
    new_len: usize,
) -> *mut u8 {
    if old_len == 0 {
        if new_len == 0 {
            return align as *mut u8;
        }
        if SCRATCH.armed.get() && !SCRATCH.lent.get() && new_len <= SIZE && align <= 8 {
            SCRATCH.armed.set(false);
            SCRATCH.lent.set(true);
            return base();
        }
    }
    // SAFETY: the canonical ABI's sizes and alignments (a power of two) make a layout.
    let layout = unsafe { Layout::from_size_align_unchecked(old_len.max(new_len), align) };
    let ptr = unsafe {
        if old_len == 0 {
            std::alloc::alloc(Layout::from_size_align_unchecked(new_len, align))
        } else {
            std::alloc::realloc(
                old_ptr,
                Layout::from_size_align_unchecked(old_len, align),
                new_len,
            )
        }
    };
    if ptr.is_null() {
        std::alloc::handle_alloc_error(layout);
    }
    ptr
}

/// The runtime's global allocator: the system's (wasi-libc's `malloc`), except that
/// freeing the lent scratch buffer gives it back, and growing it moves the bytes to a
/// `malloc` block.
pub(crate) struct Alloc;

unsafe impl GlobalAlloc for Alloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if is_scratch(ptr) {
            SCRATCH.lent.set(false);
        } else {
            unsafe { System.dealloc(ptr, layout) }
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if !is_scratch(ptr) {
            return unsafe { System.realloc(ptr, layout, new_size) };
        }
        // SAFETY: `new_size` with the old alignment is a valid layout (GlobalAlloc's
        // contract for realloc).
        let moved =
            unsafe { System.alloc(Layout::from_size_align_unchecked(new_size, layout.align())) };
        if !moved.is_null() {
            unsafe { core::ptr::copy_nonoverlapping(ptr, moved, layout.size().min(new_size)) };
            SCRATCH.lent.set(false);
        }
        moved
    }
}
