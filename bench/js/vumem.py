#!/usr/bin/env python3
"""Where a JavaScript VU's memory goes: /proc/PID/smaps of `host run` by kind of mapping.

Run by hand: `bench/js/vumem.py idle.js [VUS]` (from any directory; scripts resolve in
bench/js). Starts `host run SCRIPT --vus 1` and `--vus VUS` (200), reads /proc/PID/smaps
SAMPLE seconds (6) into a 9 s run, and prints per kind of mapping the RSS, PSS and private
dirty bytes at 1 and at VUS VUs and per VU = (at VUS − at 1) / (VUS − 1):

- guest image: each instance's linear memory where wasmtime maps the component's
  initialised snapshot copy-on-write (`/memfd:wasm-memory-image`); private dirty there is
  the snapshot pages a VU wrote;
- guest anon: the rest of the linear-memory slots (pages past the image: heap growth);
- stacks: the pooling allocator's fiber stacks (1 MiB each, a guard page between);
- other pool: the pool's other reservations (tables, instance records);
- host heap: [heap] and the host's anonymous mappings outside the pool;
- code and files: the binary, libraries, compiled modules.

With PAGES=1 it also prints, for the last instance's image at VUS VUs, which 64 KiB
ranges of the snapshot that VU made private (from /proc/PID/pagemap: a page of a private
file mapping that is no longer the file's page is anonymous), and the count at 1 VU.

Environment: HOST_BIN (target/release/host), SAMPLE (6).
"""

import os
import re
import struct
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
HOST = str(ROOT / os.environ.get("HOST_BIN", "target/release/host"))
SAMPLE = float(os.environ.get("SAMPLE", "6"))
PAGE = 4096

HEADER = re.compile(r"^([0-9a-f]+)-([0-9a-f]+) (\S{4}) (\S+) (\S+) (\d+)\s*(.*)$")


def smaps(pid):
    """The mappings of `pid`: dicts with start, end, perms, name and the KiB fields."""
    maps = []
    for line in open(f"/proc/{pid}/smaps"):
        m = HEADER.match(line)
        if m:
            maps.append({"start": int(m[1], 16), "end": int(m[2], 16), "perms": m[3], "name": m[7].strip()})
            continue
        key, _, rest = line.partition(":")
        parts = rest.split()
        if len(parts) == 2 and parts[1] == "kB":
            maps[-1][key] = int(parts[0])
    return maps


def chains(maps):
    """Runs of address-contiguous mappings (a pool reservation is one run)."""
    out, cur = [], []
    for m in maps:
        if cur and m["start"] != cur[-1]["end"]:
            out.append(cur)
            cur = []
        cur.append(m)
    if cur:
        out.append(cur)
    return out


def classify(maps):
    """KiB per kind: {kind: [rss, pss, private_dirty]}, and the image mappings."""
    kinds = {}
    images = []

    def is_image(name):
        return name.endswith(".cwasm") or name.startswith("/memfd:wasm-memory-image")

    def add(kind, m):
        k = kinds.setdefault(kind, [0, 0, 0])
        k[0] += m.get("Rss", 0)
        k[1] += m.get("Pss", 0)
        k[2] += m.get("Private_Dirty", 0)

    for i, m in enumerate(maps):
        name, size = m["name"], m["end"] - m["start"]
        prev = maps[i - 1] if i else None
        after = maps[i + 1] if i + 1 < len(maps) else None
        guarded = prev is not None and prev["perms"] == "---p" and prev["end"] == m["start"]
        if is_image(name) and m["perms"] == "rw-p":
            # wasmtime maps the snapshot copy-on-write: from the compiled file when it
            # loaded the component from one (the compile cache), from a memfd when it
            # compiled it in this run.
            add("guest image (snapshot, CoW)", m)
            images.append(m)
        elif not name and after is not None and is_image(after["name"]) and after["perms"] == "rw-p" \
                and after["start"] == m["end"]:
            add("guest below image (shadow stack)", m)
        elif not name and prev is not None and is_image(prev["name"]) and prev["perms"] == "rw-p" \
                and prev["end"] == m["start"]:
            add("guest past image (heap growth)", m)
        elif name and not name.startswith("["):
            add("code and files", m)
        elif name == "[heap]":
            add("host heap", m)
        elif name.startswith("["):
            add("host other " + name, m)
        elif m["perms"] == "rw-p" and guarded and size == (1 << 20):
            add("fiber stacks (1 MiB)", m)
        elif m["perms"] == "rw-p" and guarded and size == (2 << 20):
            add("host thread stacks (2 MiB)", m)
        else:
            add("host anon (malloc arenas, other)", m)
    return kinds, images


def dirty_pages(pid, m):
    """Page indexes of mapping `m` that are present and anonymous (made private)."""
    n = (m["end"] - m["start"]) // PAGE
    out = []
    with open(f"/proc/{pid}/pagemap", "rb") as f:
        f.seek(m["start"] // PAGE * 8)
        data = f.read(n * 8)
    for i in range(n):
        (v,) = struct.unpack_from("<Q", data, i * 8)
        present = v >> 63 & 1
        file_or_shared = v >> 61 & 1
        if present and not file_or_shared:
            out.append(i)
    return out


def run(script, vus):
    cmd = [HOST, "run", script, "--vus", str(vus), "--duration", "9s", "--quiet", "--out", "/tmp/vumem-out"]
    proc = subprocess.Popen(cmd, cwd=HERE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(SAMPLE)
    maps = smaps(proc.pid)
    kinds, images = classify(maps)
    pages = None
    if os.environ.get("PAGES") == "1" and images:
        # The image mapping with the highest address: one instance's snapshot.
        m = max(images, key=lambda m: m["start"])
        pages = (m, dirty_pages(proc.pid, m))
    proc.wait()
    return kinds, images, pages


def ranges(pages, bin_pages=16):
    """Dirty pages per 64 KiB bin of the image: "offset KiB: pages"."""
    bins = {}
    for p in pages:
        bins[p // bin_pages] = bins.get(p // bin_pages, 0) + 1
    return ", ".join(f"{b * bin_pages * 4}K:{c}" for b, c in sorted(bins.items()))


def main():
    script = sys.argv[1]
    vus = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    one, img1, pages1 = run(script, 1)
    many, imgs, pages = run(script, vus)
    print(f"{script}: per kind, KiB (RSS / PSS / private dirty); per VU = (at {vus} − at 1) / {vus - 1}")
    print(f"{'kind':44} {'at 1':>22} {'at ' + str(vus):>24} {'per VU':>22}")
    tot1, totn = [0, 0, 0], [0, 0, 0]
    for kind in sorted(set(one) | set(many)):
        a, b = one.get(kind, [0, 0, 0]), many.get(kind, [0, 0, 0])
        per = [(y - x) / (vus - 1) for x, y in zip(a, b)]
        for i in range(3):
            tot1[i] += a[i]
            totn[i] += b[i]
        print(f"{kind:44} {a[0]:7} {a[1]:7} {a[2]:7} {b[0]:8} {b[1]:7} {b[2]:7} {per[0]:7.1f} {per[1]:7.1f} {per[2]:7.1f}")
    per = [(y - x) / (vus - 1) for x, y in zip(tot1, totn)]
    print(f"{'total':44} {tot1[0]:7} {tot1[1]:7} {tot1[2]:7} {totn[0]:8} {totn[1]:7} {totn[2]:7} {per[0]:7.1f} {per[1]:7.1f} {per[2]:7.1f}")
    if imgs:
        sizes = sorted({(m["end"] - m["start"]) // 1024 for m in imgs})
        print(f"image mappings at {vus}: {len(imgs)}, sizes KiB {sizes}")
    for label, pg in (("1 VU", pages1), (f"{vus} VUs, last instance", pages)):
        if pg:
            m, dirty = pg
            print(f"{label}: {len(dirty)} of {(m['end'] - m['start']) // PAGE} image pages private; per 64 KiB: {ranges(dirty)}")


if __name__ == "__main__":
    main()
