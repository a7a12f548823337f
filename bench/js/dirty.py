#!/usr/bin/env python3
"""Which writes make a JavaScript VU's snapshot pages private, on the real route.

Run by hand: `bench/js/dirty.py idle.js [VUS]` (scripts resolve in bench/js). Starts
`host run SCRIPT --vus VUS` (8), waits SAMPLE seconds (6), and for every VU's instance
compares the pages it made private in its copy-on-write snapshot (/proc/PID/pagemap:
present and anonymous) with the snapshot itself (the mapped file, read through
/proc/PID/map_files), word by word. Each changed word is attributed by where it lies in
the runtime's memory as the snapshot laid it out:

- the shadow stack (below the data, `STACK_TOP`) and the static data (up to the heap);
- dlmalloc's heap, walked chunk by chunk from its state (`_gm_`, found by its shape:
  the top chunk's head equals `topsize | PINUSE`): chunk headers, chunks free in the
  snapshot (reused by the VU), other in-use chunks (Rust, wasi-libc);
- QuickJS-ng's arena allocator inside those chunks (quickjs.c, `JSArena`: 4 KiB arenas of
  one block size, 24-byte header; every block starts with `JSMallocBlockHeader`: block
  index, size class, GC type and mark, reference count): the arena's header, a block's
  index/type/mark, its reference count, a GC object's list link (`JSGCObjectHeader`, the
  first 8 bytes of a block that is on a GC list: both neighbours point back), the rest
  of a GC object's body, the body of a non-GC block (strings, property arrays,
  bytecode), blocks free in the snapshot (reused); large blocks (> 504 bytes) are their
  own dlmalloc chunk with the same 8-byte header.

A page whose bytes are all equal to the snapshot's was written and restored (a reference
count up and down, a mark set and cleared): it is counted apart, by what it holds.

Prints per cause the changed bytes, the pages where it appears and the pages where it is
the only cause, per VU (mean over the instances). Environment: HOST_BIN
(target/release/host), SAMPLE (6), DURATION (12s), STACK_TOP (1047552, the runtime's
`-zstack-size` for plugins: wasm addresses below it are the shadow stack), DETAIL (a
cause's text: print that cause's changed words in the last instance, with the snapshot
range holding each; "written back": the ranges each unchanged private page holds), DEBUG (1: print dlmalloc's state as found), and
LOADTEST_JS_RUNTIME (passed to the host: the runtime component to build on).
"""

import bisect
import os
import re
import struct
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

from users import ensure_users

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
HOST = str(ROOT / os.environ.get("HOST_BIN", "target/release/host"))
SAMPLE = float(os.environ.get("SAMPLE", "6"))
DURATION = os.environ.get("DURATION", "12s")
STACK_TOP = int(os.environ.get("STACK_TOP", "1047552"))
DETAIL = os.environ.get("DETAIL", "")
PAGE = 4096

# quickjs.c (rquickjs-sys 0.14.0): arena_block_sizes, JS_ARENA_SIZE, sizeof(JSArena).
BLOCK_SIZES = [16, 24, 32, 40, 48, 56, 64, 72, 80, 88, 96, 104, 112, 120, 128,
               144, 160, 176, 192, 208, 224, 240, 256,
               288, 320, 352, 384, 416, 448, 480, 512]
ARENA_SIZE = 4096
ARENA_HEADER = 24
GC_TYPES = ["object", "bytecode", "shape", "var_ref", "async function", "context"]

MAPS = re.compile(r"^([0-9a-f]+)-([0-9a-f]+) (\S{4}) ([0-9a-f]+) \S+ \d+\s*(.*)$")


def maps(pid):
    out = []
    for line in open(f"/proc/{pid}/maps"):
        m = MAPS.match(line)
        out.append({"start": int(m[1], 16), "end": int(m[2], 16), "perms": m[3],
                    "offset": int(m[4], 16), "name": m[5].strip()})
    return out


def is_image(m):
    return m["perms"] == "rw-p" and (m["name"].endswith(".cwasm") or m["name"].startswith("/memfd:wasm-memory-image"))


def private_pages(pid, m):
    n = (m["end"] - m["start"]) // PAGE
    with open(f"/proc/{pid}/pagemap", "rb") as f:
        f.seek(m["start"] // PAGE * 8)
        data = f.read(n * 8)
    out = []
    for i in range(n):
        (v,) = struct.unpack_from("<Q", data, i * 8)
        if v >> 63 & 1 and not v >> 61 & 1:
            out.append(i)
    return out


class Snapshot:
    """The snapshot image as wasm memory: `base` is the wasm address of its first byte."""

    def __init__(self, data, base):
        self.data, self.base = data, base

    def u32(self, addr):
        o = addr - self.base
        if 0 <= o <= len(self.data) - 4:
            return struct.unpack_from("<I", self.data, o)[0]
        return None

    def u16(self, addr):
        o = addr - self.base
        if 0 <= o <= len(self.data) - 2:
            return struct.unpack_from("<H", self.data, o)[0]
        return None

    def u8(self, addr):
        o = addr - self.base
        return self.data[o] if 0 <= o < len(self.data) else None


def find_heap(s, lo, hi):
    """dlmalloc's state: (least_addr, top) found by its shape in [lo, hi)."""
    best = None
    for a in range(lo - lo % 4, hi, 4):
        topsize, least, top = s.u32(a + 12), s.u32(a + 16), s.u32(a + 24)
        if not top or not least or not lo <= least < top < hi or top % 8:
            continue
        head = s.u32(top + 4)
        if head is not None and head & ~7 == topsize and head & 1 and topsize > 0:
            if best is None or least < best[0]:
                best = (least, top)
    if best and os.environ.get("DEBUG"):
        print(f"dlmalloc state: least_addr {best[0]:#x}, top {best[1]:#x}")
    return best


def walk_chunks(s, least, top):
    """dlmalloc chunks from the heap's start to `top`: (addr, size, in_use)."""
    for first in range(least, least + 32, 4):
        chunks, c, ok = [], first, True
        while c < top:
            head = s.u32(c + 4)
            if head is None or head & ~7 < 16:
                ok = False
                break
            size = head & ~7
            nxt = s.u32(c + size + 4) if c + size <= top else None
            if nxt is None:
                ok = False
                break
            chunks.append((c, size, bool(nxt & 1)))  # the next chunk's PINUSE: this one in use
            c += size
        if ok and c == top:
            chunks.append((top, s.u32(top + 4) & ~7, False))
            return chunks
    raise SystemExit("cannot walk dlmalloc's chunks from %#x to %#x" % (least, top))


class Layout:
    """What each wasm address held in the snapshot: a label per byte range."""

    def __init__(self, s, least, top):
        self.s = s
        self.least = least
        self.ranges = []  # (start, end, kind, gc_type or None)
        self.gc_bodies = 0
        for c, size, used in walk_chunks(s, least, top):
            self.ranges.append((c, c + 8, "dlmalloc chunk header", None))
            u, end = c + 8, c + size
            if not used:
                self.ranges.append((u, end, "dlmalloc free chunk (reused)", None))
                continue
            if self.arena(u, end):
                continue
            if s.u16(u) == 0xFFFF and s.u8(u + 2) == 0xFF:
                self.block(u, end, large=True)
            else:
                self.ranges.append((u, end, "other malloc data (Rust, wasi-libc)", None))
        self.ranges.sort()
        self.starts = [r[0] for r in self.ranges]

    def arena(self, u, end):
        s = self.s
        idx = s.u8(u + 16)
        if idx is None or idx >= len(BLOCK_SIZES):
            return False
        bs = BLOCK_SIZES[idx]
        n = s.u16(u + 20)
        # 4 KiB arenas, or smaller ones (the runtime's first arena of a class after the
        # freeze is 1 KiB): n blocks fill the chunk.
        if not 1 <= n <= (ARENA_SIZE - ARENA_HEADER) // bs or s.u16(u + 18) > n \
                or not -4 <= end - u - ARENA_HEADER - n * bs < 24:
            return False
        self.ranges.append((u, u + ARENA_HEADER, "arena header (lists, counters)", None))
        for i in range(n):
            b = u + ARENA_HEADER + i * bs
            if s.u16(b) == i and s.u8(b + 2) == idx:
                self.block(b, b + bs, large=False)
            else:
                self.ranges.append((b, b + bs, "arena block free in the snapshot (reused)", None))
        return True

    def block(self, b, end, large):
        s = self.s
        what = "large block" if large else "block"
        gct = s.u8(b + 3) & 0x7F
        user = b + 8
        prev, nxt = s.u32(user), s.u32(user + 4)
        is_gc = (gct < len(GC_TYPES) and prev and nxt and s.u32(nxt) == user and s.u32(prev + 4) == user)
        kind = GC_TYPES[gct] if is_gc else None
        self.ranges.append((b, b + 4, f"{what} header: index, class, GC type/mark", kind))
        self.ranges.append((b + 4, b + 8, f"reference count ({kind or 'non-GC: string, atom, other'})", kind))
        if is_gc:
            self.gc_bodies += 1
            self.ranges.append((user, user + 8, f"GC list link ({kind})", kind))
            self.ranges.append((user + 8, end, f"GC object body ({kind})", kind))
        else:
            self.ranges.append((user, end, f"non-GC {what} body (strings, arrays, bytecode, ...)", None))

    def where(self, addr):
        """The snapshot range holding `addr`: (start, end, kind)."""
        i = bisect.bisect_right(self.starts, addr) - 1
        if i >= 0 and self.ranges[i][0] <= addr < self.ranges[i][1]:
            return self.ranges[i][:3]
        return None

    def label(self, addr):
        if addr < STACK_TOP:
            return "shadow stack"
        if addr < self.least:
            return "static data (QuickJS, Rust, wasi-libc)"
        i = bisect.bisect_right(self.starts, addr) - 1
        if i >= 0 and self.ranges[i][0] <= addr < self.ranges[i][1]:
            return self.ranges[i][2]
        return "heap past the snapshot's top chunk"


def analyse(pid):
    ms = maps(pid)
    images = [(i, m) for i, m in enumerate(ms) if is_image(m)]
    if not images:
        raise SystemExit("no snapshot mappings in the host (is it the JS route?)")
    # wasm address 0 is the start of the rw-p anonymous mapping right below the image
    # (the linear memory's pages below the snapshot), else the image itself.
    first_i, first = images[0]
    prev = ms[first_i - 1]
    image_base = first["start"] - prev["start"] if prev["perms"] == "rw-p" and not prev["name"] and prev["end"] == first["start"] else 0
    with open(f"/proc/{pid}/map_files/{first['start']:x}-{first['end']:x}", "rb") as f:
        f.seek(first["offset"])
        snap = f.read(first["end"] - first["start"])
    s = Snapshot(snap, image_base)
    found = find_heap(s, max(image_base, STACK_TOP), image_base + len(snap))
    if not found:
        raise SystemExit("dlmalloc's state not found in the snapshot")
    least, top = found
    layout = Layout(s, least, top)
    per_cause = defaultdict(lambda: [0, 0, 0])  # bytes, pages present, pages sole cause
    zero_pages = defaultdict(int)
    n_private = 0
    region_pages = defaultdict(int)
    mem = open(f"/proc/{pid}/mem", "rb")
    for _, m in images:
        for p in private_pages(pid, m):
            n_private += 1
            mem.seek(m["start"] + p * PAGE)
            now = mem.read(PAGE)
            old = snap[p * PAGE:(p + 1) * PAGE]
            addr0 = image_base + p * PAGE
            region_pages[layout.label(addr0) if addr0 < least else "heap"] += 1
            causes = defaultdict(int)
            for w in range(0, PAGE, 4):
                if now[w:w + 4] != old[w:w + 4]:
                    nb = sum(1 for k in range(4) if now[w + k] != old[w + k])
                    causes[layout.label(addr0 + w)] += nb
            if not causes:
                kinds = defaultdict(int)
                for w in range(0, PAGE, 64):
                    kinds[layout.label(addr0 + w)] += 1
                zero_pages[max(kinds, key=kinds.get)] += 1
                if DETAIL == "written back" and m is images[-1][1]:
                    held = sorted({layout.where(addr0 + w) for w in range(0, PAGE, 64)} - {None})
                    print(f"  page {addr0:#x} written back; holds " + ", ".join(
                        f"{r[0]:#x}+{r[1] - r[0]} {r[2]}" for r in held[:6]))
                continue
            if DETAIL and m is images[-1][1]:
                for w in range(0, PAGE, 4):
                    a = addr0 + w
                    if now[w:w + 4] != old[w:w + 4] and DETAIL in layout.label(a):
                        r = layout.where(a)
                        (o,) = struct.unpack_from("<I", old, w)
                        (n_,) = struct.unpack_from("<I", now, w)
                        at = f"{r[0]:#x}+{a - r[0]} (range of {r[1] - r[0]})" if r else ""
                        print(f"  {a:#x} {at}: {o:#010x} -> {n_:#010x}")
            for c, nb in causes.items():
                per_cause[c][0] += nb
                per_cause[c][1] += 1
            if len(causes) == 1:
                per_cause[next(iter(causes))][2] += 1
    return len(images), n_private, per_cause, zero_pages, region_pages, (least, top, layout.gc_bodies)


def main():
    script = sys.argv[1]
    vus = int(sys.argv[2]) if len(sys.argv) > 2 else 8
    cmd = [HOST, "run", script, "--vus", str(vus), "--duration", DURATION, "--quiet", "--out", "/tmp/dirty-out"]
    ensure_users()
    err = open("/tmp/dirty-host.stderr", "w+b")
    proc = subprocess.Popen(cmd, cwd=HERE, stdout=subprocess.DEVNULL, stderr=err)
    try:
        time.sleep(SAMPLE)
        if proc.poll() is not None:
            # A run that ended before the sample has no instances to read: say why.
            err.seek(0)
            tail = err.read().decode(errors="replace").strip().splitlines()[-5:]
            raise SystemExit(f"the host exited ({proc.returncode}) before the sample at {SAMPLE} s:\n" + "\n".join(tail))
        n, n_private, per_cause, zero_pages, regions, (least, top, gcs) = analyse(proc.pid)
    finally:
        proc.kill()
        proc.wait()
    print(f"{script}, {vus} VUs, sampled at {SAMPLE} s: {n} instances, {n_private / n:.1f} private snapshot pages per VU")
    print(f"heap (dlmalloc) from {least:#x} to its top chunk at {top:#x}; {gcs} GC objects in the snapshot")
    print("private pages per VU by region: " + ", ".join(f"{k} {v / n:.1f}" for k, v in sorted(regions.items())))
    print()
    print(f"| cause (what the changed bytes were in the snapshot) | changed bytes per VU | pages with it per VU | pages with only it per VU |")
    print("| --- | ---: | ---: | ---: |")
    for c, (nb, pages, sole) in sorted(per_cause.items(), key=lambda kv: -kv[1][1]):
        print(f"| {c} | {nb / n:.0f} | {pages / n:.1f} | {sole / n:.1f} |")
    for c, pages in sorted(zero_pages.items(), key=lambda kv: -kv[1]):
        print(f"| no byte changed (written back); the page mostly holds: {c} | 0 | {pages / n:.1f} | {pages / n:.1f} |")


if __name__ == "__main__":
    main()
