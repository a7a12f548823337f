#!/usr/bin/env python3
"""Which host allocations the host-heap pages of a WebSocket message's wake-up hold:
bench/js/wsregions.py's touched host-heap pages (DUMP) matched with a log of every
malloc and free the host made (bench/js/mlog.c, preloaded into the host only), so each
touched page is named by the allocations live on it during the window, each allocation
by the Rust frames that made it.

Run by hand (root, a swap device on: see wsregions.py):

    gcc -O2 -shared -fPIC -o /tmp/mlog.so bench/js/mlog.c -lpthread
    SKIP_IDLE=1 DUMP=/tmp/dump.json HOST_ENV="LD_PRELOAD=/tmp/mlog.so MLOG_FILE=/tmp/mlog.bin" \\
      HOST_BIN=$HOST bench/js/wsregions.py            # (or CAPACITY=js|rust ...)
    HOST_BIN=$HOST VUS=200 bench/js/wsheap.py /tmp/dump.json /tmp/mlog.bin

A debug host names its frames best (nothing inlined); the allocations are the same.
A page holds several allocations: each touched page counts once for every site with an
allocation on it ("pages with"), and is shared out among its sites by the bytes each
holds there ("page share"); both per VU. Pages with no live allocation are glibc's own
(free chunks, arena headers, tcache).
Environment: HOST_BIN (the host that ran), VUS (200: the divisor), WINDOW_INDEX (-1:
which dumped window), DEPTH (3: Rust frames named per site), TOP (40).
"""
import bisect
import collections
import json
import os
import struct
import subprocess
import sys

PAGE = 4096
VUS = int(os.environ.get("VUS", "200"))
DEPTH = int(os.environ.get("DEPTH", "3"))
TOP = int(os.environ.get("TOP", "40"))
BIN = os.environ.get("HOST_BIN", "target/debug/host")
# Frames that only pass an allocation on: skipped when naming a site.
PLUMBING = ("alloc::", "core::", "std::", "<alloc::", "<core::", "<std::", "hashbrown::",
            "<hashbrown::", "__rust", "__rdl", "__rg", "_$LT$alloc", "??", "malloc", "calloc",
            "realloc", "posix_memalign", "smallvec::", "<smallvec::", "bytes::", "<bytes::",
            "indexmap::", "<indexmap::")


def records(path):
    b = open(path, "rb").read()
    i = 0
    while i + 32 <= len(b):
        op, nf, t, ptr, size = struct.unpack_from("<IIQQQ", b, i)
        frames = struct.unpack_from(f"<{nf}Q", b, i + 32)
        i += 32 + 8 * nf
        yield op, t, ptr, size, frames


def exe_base(maps, exe):
    for line in maps.splitlines():
        parts = line.split()
        if len(parts) >= 6 and os.path.realpath(parts[5]) == exe and int(parts[2], 16) == 0:
            return int(parts[0].split("-")[0], 16)
    raise SystemExit(f"{exe} not in the dumped maps")


def symbolize(addrs, base, exe):
    """address -> the function names there (innermost first, inlined frames included)."""
    addrs = sorted(addrs)
    inside = [a for a in addrs if a >= base]
    out = {a: ["??"] for a in addrs}
    if not inside:
        return out
    # A return address points after the call: look up the byte before it.
    text = "\n".join(f"{a - base - 1:x}" for a in inside)
    got = subprocess.run(["addr2line", "-f", "-C", "-i", "-a", "-e", exe], input=text,
                         capture_output=True, text=True).stdout.splitlines()
    cur = None
    by_vaddr = {a - base - 1: a for a in inside}
    i = 0
    while i < len(got):
        line = got[i]
        if line.startswith("0x"):
            cur = by_vaddr.get(int(line, 16))
            out[cur] = []
            i += 1
            continue
        out[cur].append(line)
        i += 2  # function, then file:line
    return out


def site_name(frames, names):
    chain = []
    for f in frames:
        for fn in names.get(f, ["??"]):
            if fn.startswith(PLUMBING):
                continue
            short = fn.split("::{{closure}}")[0]
            # Drop generic arguments' detail: keep the path.
            depth = 0
            kept = ""
            for ch in short:
                if ch == "<":
                    depth += 1
                    if depth == 1:
                        kept += "<…>"
                elif ch == ">":
                    depth -= 1
                elif depth == 0:
                    kept += ch
            if not chain or chain[-1] != kept:
                chain.append(kept)
            if len(chain) >= DEPTH:
                return " ← ".join(chain)
    return " ← ".join(chain) or "(no Rust frame)"


def main():
    dump, log = sys.argv[1], sys.argv[2]
    windows = json.load(open(dump))
    w = windows[int(os.environ.get("WINDOW_INDEX", "-1"))]
    exe = os.path.realpath(BIN)
    base = exe_base(w["maps"], exe)
    start, end = w["start_ns"], w["end_ns"]
    touched = sorted(a // PAGE for a in w["heap_pages"])
    touched_set = set(touched)
    live = {}  # ptr -> (size, frames)
    in_window = []  # allocations made during the window (live at its start are in `live`)
    at_start = None
    n = 0
    for op, t, ptr, size, frames in records(log):
        n += 1
        if t > end:
            break
        if at_start is None and t >= start:
            at_start = dict(live)
        if op == 1:
            live[ptr] = (size, frames)
            if t >= start:
                in_window.append((ptr, size, frames))
        else:
            live.pop(ptr, None)
    if at_start is None:
        raise SystemExit("the log ends before the window")
    candidates = [(p, s, f) for p, (s, f) in at_start.items()] + in_window
    on_page = collections.defaultdict(list)  # page -> [(bytes on it, frames)]
    for p, s, f in candidates:
        lo, hi = p // PAGE, (p + max(s, 1) - 1) // PAGE
        i = bisect.bisect_left(touched, lo)
        while i < len(touched) and touched[i] <= hi:
            pg = touched[i]
            share = min(p + s, (pg + 1) * PAGE) - max(p, pg * PAGE)
            on_page[pg].append((max(share, 1), f))
            i += 1
    addrs = {a for lst in on_page.values() for _, f in lst for a in f}
    names = symbolize(addrs, base, exe)
    with_site = collections.Counter()
    share = collections.Counter()
    sizes = collections.defaultdict(collections.Counter)
    for pg in touched:
        allocs = on_page.get(pg)
        if not allocs:
            with_site["(no live allocation: glibc's free chunks, headers)"] += 1
            share["(no live allocation: glibc's free chunks, headers)"] += 1
            continue
        total = sum(b for b, _ in allocs)
        seen = set()
        for b, f in allocs:
            name = site_name(f, names)
            share[name] += b / total
            if name not in seen:
                seen.add(name)
                with_site[name] += 1
    for p, s, f in candidates:
        if any((p // PAGE) <= pg <= (p + max(s, 1) - 1) // PAGE for pg in [p // PAGE] if pg in touched_set):
            sizes[site_name(f, names)][s] += 1
    print(f"{len(touched)} touched host-heap pages ({len(touched) / VUS:.2f} per VU), "
          f"{len(at_start)} allocations live at the window's start, {len(in_window)} made in it, "
          f"{n} log records read\n")
    print("| site (Rust frames that allocated, innermost first) | page share per VU | pages with per VU | sizes (count) |")
    print("| --- | ---: | ---: | --- |")
    for name, v in share.most_common(TOP):
        sz = ", ".join(f"{s} B ({c})" for s, c in sizes[name].most_common(3))
        print(f"| {name} | {v / VUS:.2f} | {with_site[name] / VUS:.2f} | {sz} |")
    rest = sum(v for k, v in share.most_common()[TOP:])
    print(f"| (the rest) | {rest / VUS:.2f} | | |")


if __name__ == "__main__":
    main()
