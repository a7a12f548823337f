#!/usr/bin/env python3
"""Where a running host's memory is, by kind, from /proc/PID/smaps.

Usage: bench/memory-kinds.py PID [--json] [--slots]

Each mapping of the process is put in one kind by its shape, since wasmtime's pools
are anonymous mappings with no name:

- linear memory, image: the plugin's data segments, mapped copy-on-write from the
  compiled file (a writable private mapping of a .cwasm or a memfd); its dirty pages
  are the data the guest wrote to.
- linear memory, below the image: the anonymous, writable part of a memory slot right
  before an image (a Rust guest links its shadow stack first, so this is the stack).
- linear memory, above the image: the writable part right after an image (the rest
  of the data: .bss, then the heap that `memory.grow` added).
- fiber stack: a writable anonymous mapping of the fiber stack size (FIBER_STACK_BYTES,
  1 MiB unless told) right after a one-page guard: the pooling allocator's async stacks.
- table pool: the one writable anonymous mapping larger than 1 GiB (every table slot
  of the pool; only the pages of tables in use are resident).
- host heap and threads: every other anonymous mapping ([heap], malloc's arenas,
  thread stacks).
- files: everything backed by a file (the host binary, libraries, the compiled code).

With --slots it also prints, per live linear memory, how many pages of each part are
resident and how many dirty (a histogram), which shows what one VU's guest touched.
"""

import json
import os
import re
import sys
from collections import Counter, defaultdict

HEADER = re.compile(r"^([0-9a-f]+)-([0-9a-f]+) (\S{4}) \S+ \S+ \S+\s*(.*)$")
PAGE = 4096
FIBER = int(os.environ.get("FIBER_STACK_BYTES", str(1 << 20)))


def read(pid):
    """The mappings of `pid`, in address order, each a dict of its smaps fields (kB)."""
    maps = []
    for line in open(f"/proc/{pid}/smaps"):
        m = HEADER.match(line)
        if m:
            maps.append(
                {
                    "start": int(m.group(1), 16),
                    "end": int(m.group(2), 16),
                    "perms": m.group(3),
                    "path": m.group(4).strip(),
                }
            )
            continue
        key, _, rest = line.partition(":")
        parts = rest.split()
        if maps and len(parts) == 2 and parts[1] == "kB":
            maps[-1][key] = int(parts[0])
    return maps


def is_image(m):
    """A memory image: a private writable mapping of compiled code's data."""
    return m["perms"] == "rw-p" and (m["path"].endswith(".cwasm") or m["path"].startswith("/memfd:"))


def classify(maps):
    """The kind of every mapping (a list parallel to `maps`)."""
    kinds = [None] * len(maps)
    for i, m in enumerate(maps):
        size = m["end"] - m["start"]
        if is_image(m):
            kinds[i] = "linear memory: image (data, copy-on-write)"
            before = maps[i - 1] if i else None
            after = maps[i + 1] if i + 1 < len(maps) else None
            if before and before["end"] == m["start"] and before["perms"] == "rw-p" and not before["path"]:
                kinds[i - 1] = "linear memory: below the image (shadow stack)"
            if after and after["start"] == m["end"] and after["perms"] == "rw-p" and not after["path"]:
                kinds[i + 1] = "linear memory: above the image (bss, heap)"
        elif kinds[i] is None and m["perms"] == "rw-p" and not m["path"] and size == FIBER:
            prev = maps[i - 1] if i else None
            if prev and prev["end"] == m["start"] and prev["perms"] == "---p" and prev["end"] - prev["start"] == PAGE:
                kinds[i] = "fiber stack"
    for i, m in enumerate(maps):
        if kinds[i]:
            continue
        size = m["end"] - m["start"]
        if m["path"] and not m["path"].startswith("["):
            kinds[i] = "files (binary, libraries, compiled code)"
        elif m["perms"] == "rw-p" and not m["path"] and size > (1 << 30):
            kinds[i] = "table pool"
        elif m["perms"] == "---p":
            kinds[i] = "reserved, inaccessible"
        else:
            kinds[i] = "host heap and threads"
    return kinds


def summary(pid):
    """Per kind: mappings, Rss, Pss and private dirty, in KiB; and the slots' pages."""
    maps = read(pid)
    kinds = classify(maps)
    out = defaultdict(lambda: Counter())
    for m, k in zip(maps, kinds):
        c = out[k]
        c["mappings"] += 1
        c["rss_kib"] += m.get("Rss", 0)
        c["pss_kib"] += m.get("Pss", 0)
        c["private_dirty_kib"] += m.get("Private_Dirty", 0)
        c["anon_kib"] += m.get("Anonymous", 0)
    status = {}
    for line in open(f"/proc/{pid}/status"):
        key, _, rest = line.partition(":")
        if key in ("VmRSS", "VmPTE", "RssAnon", "RssFile"):
            status[key] = int(rest.split()[0])
    return {"mappings": len(maps), "status": status, "kinds": {k: dict(v) for k, v in out.items()}}, maps, kinds


def slots(maps, kinds):
    """Histograms, over the live memory slots and fiber stacks, of resident/dirty pages."""
    hist = defaultdict(Counter)
    for m, k in zip(maps, kinds):
        if k.startswith("linear memory") or k == "fiber stack":
            hist[k][(m.get("Rss", 0) // 4, m.get("Private_Dirty", 0) // 4)] += 1
    return hist


def main():
    pid = sys.argv[1]
    s, maps, kinds = summary(pid)
    if "--json" in sys.argv:
        print(json.dumps(s))
        return
    print(f"mappings {s['mappings']}; " + ", ".join(f"{k} {v} kB" for k, v in s["status"].items()))
    print(f"{'kind':48} {'maps':>7} {'Rss KiB':>10} {'Pss KiB':>10} {'dirty KiB':>10}")
    for k, c in sorted(s["kinds"].items(), key=lambda kv: -kv[1]["rss_kib"]):
        print(f"{k:48} {c['mappings']:7} {c['rss_kib']:10} {c['pss_kib']:10} {c['private_dirty_kib']:10}")
    if "--slots" in sys.argv:
        for k, h in slots(maps, kinds).items():
            print(f"{k}: (resident pages, dirty pages) x count: " + ", ".join(f"{r}/{d} x{n}" for (r, d), n in h.most_common(6)))


if __name__ == "__main__":
    main()
