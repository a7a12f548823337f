#!/usr/bin/env python3
"""Which pages a WebSocket message's wake-up touches, by region: bench/js/wspages.py's
run (bench/js/wsrecv.js, VUS sockets, RATE pushes a second each) with the host
process's memory split into the regions a wake-up can touch, and the wasm linear
memories split by offset.

This kernel has neither soft-dirty bits nor idle-page tracking, so a page's accesses
cannot be read from pagemap. Instead, in each window every private page of the host
process is paged out (`process_madvise(MADV_PAGEOUT)`, twice: the second pass is quick
and starts the window), and WINDOW seconds later the pages present again and mapped by
this process only (pagemap bits 63 and 56) are the pages it touched, read or written,
by address. Root must have turned a swap device on first (a zram device will do:
`echo 2G > /sys/block/zramN/disksize; mkswap /dev/zramN; swapon /dev/zramN`). Pages
shared with other mappings (a memory image's never-written pages, the binary's) are
never paged out: for those, each mapping's `Referenced` from `/proc/PID/smaps`
(accessed bits cleared with `/proc/PID/clear_refs` at the window's start).

Regions (the host's mappings, told apart by their shape in /proc/PID/maps):
- `memory below image`: a linear memory's zero pages below its image (the shadow
  stack, for a module linked stack-first);
- `memory image`: a linear memory's pages mapped from the wasm memory image (the
  .cwasm or a memfd, copy-on-write: the snapshot's data, QuickJS's heap as the
  snapshot left it);
- `memory past image`: the rest of a linear memory's accessible bytes (anonymous:
  the heap grown after the snapshot);
- `fiber stacks`: the pooling allocator's async stacks (one per instance, 1 MiB
  read-write after a guard page);
- `host heap`: glibc's arenas and `[heap]` (the host's Rust allocations: per-socket
  state, the stores' data, wasmtime's instances and VMContexts);
- `thread stacks`, `other anonymous (tables, ...)`, `host binary`, `compiled wasm code
  and data`, `other files`.
Touched pages inside linear memories are split further by offset (the core module's
layout when LAYOUT names the wasm before its snapshot: the shadow stack below the stack
pointer's start, static data, the heap above; and the memory's image end).

Run by hand (root): `LAYOUT=plugins/target/wasm32-wasip2/release/js_runtime.wasm
HOST_BIN=... bench/js/wsregions.py`
HOST_ENV (the host's extra environment, "K=V K=V") and DUMP (a JSON file of each
window's touched host-heap page addresses) serve bench/js/wsheap.py.
Environment: HOST_BIN, VUS (200), RATE (20), WARM (8), WINDOW (1.0), ROUNDS (2),
PORT (18096), SCRIPT (bench/js/wsrecv.js), RUN (a whole command instead: `{port}`
replaced), SKIP_IDLE (1: no idle run), TOP (10: most touched offsets listed), LAYOUT, CAPACITY (`js` or `rust`:
capacity's VUS sockets and 20 editors against demo-target instead, on
bench/k6-parity/capacity.js or plugins/capacity; DEMO_TARGET_BIN, PLUGINS: the folder
of capacity.wasm).
"""
import collections
import ctypes
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
os.environ.setdefault("PORT", "18096")
sys.path.insert(0, str(HERE))
import wsrecv  # noqa: E402  (its pusher and stop, on PORT)
from wasmbin import leb  # noqa: E402

VUS = int(os.environ.get("VUS", "200"))
RATE = int(os.environ.get("RATE", "20"))
WARM = float(os.environ.get("WARM", "8"))
WINDOW = float(os.environ.get("WINDOW", "1.0"))
ROUNDS = int(os.environ.get("ROUNDS", "2"))
TOP = int(os.environ.get("TOP", "10"))
BIN = os.environ.get("HOST_BIN", "target/release/host")
SCRIPT = os.environ.get("SCRIPT", str(HERE / "wsrecv.js"))
RUN = os.environ.get("RUN")
CAPACITY = os.environ.get("CAPACITY", "")  # "js" or "rust": capacity's sockets instead
# For bench/js/wsheap.py: the host's own extra environment ("K=V K=V", e.g. a malloc
# log preloaded) and a file where each window's touched host-heap pages are written.
HOST_ENV = dict(kv.split("=", 1) for kv in os.environ.get("HOST_ENV", "").split())
DUMP = os.environ.get("DUMP")
DUMPED = []
PAGE = 4096
IMAGE_END = {}  # a memory's base -> the end of its image (offset)
WORK = Path(tempfile.mkdtemp(prefix="wsregions-"))


class Vma:
    """One line of /proc/PID/maps, with what smaps and pagemap say of it."""

    def __init__(self, line):
        parts = line.split(maxsplit=5)
        lo, hi = parts[0].split("-")
        self.lo, self.hi = int(lo, 16), int(hi, 16)
        self.perm = parts[1]
        self.name = parts[5].strip() if len(parts) > 5 else ""
        self.kind = None
        self.slot = None  # (slot base) for a linear memory's mappings
        self.referenced = 0  # KiB
        self.rss = 0  # KiB
        self.dirty = []  # addresses of the pages touched in the window
        self.stayed = 0  # pages not paged out (shared): their touches unknown

    @property
    def size(self):
        return self.hi - self.lo


def read_smaps(pid):
    vmas, cur = [], None
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            first = line.split(" ", 1)[0]
            if "-" in first and not first.endswith(":"):
                cur = Vma(line)
                vmas.append(cur)
            elif first == "Referenced:":
                cur.referenced = int(line.split()[1])
            elif first == "Rss:":
                cur.rss = int(line.split()[1])
    return vmas


def classify(vmas, exe):
    """Sets each mapping's kind; a linear memory's mappings get their memory's base.

    The pooling allocator reserves the linear memories in one PROT_NONE run with each
    memory's accessible bytes opened in it; a memory's image is mapped from the
    compiled file (or a memfd) over its data, so a memory is: zero pages below the
    image (the shadow stack, stack-first), the image, anonymous pages past it (heap
    grown since the snapshot). The stack pool is read-write stacks each above a 4-KiB
    guard; a glibc arena starts 64-MiB-aligned; a thread stack sits above a guard."""
    named = lambda v: v.name and not v.name.startswith("[")  # noqa: E731
    for i, v in enumerate(vmas):
        prev = vmas[i - 1] if i else None
        nxt = vmas[i + 1] if i + 1 < len(vmas) else None
        touching = lambda w: w is not None and (w.hi == v.lo or w.lo == v.hi)  # noqa: E731
        if v.perm.startswith("---"):
            v.kind = "guard or reservation"
        elif named(v) and v.perm.startswith("rw") and v.name != exe and "/lib" not in v.name:
            v.kind = "memory image"
        elif v.name == exe:
            v.kind = "host binary"
        elif named(v) and v.name.endswith(".cwasm"):
            v.kind = "compiled wasm code and data"
        elif named(v):
            v.kind = "other files (libc, ...)"
        elif v.name == "[heap]":
            v.kind = "host heap"
        elif v.name.startswith("[stack"):
            v.kind = "thread stacks"
        elif v.name.startswith("["):
            v.kind = "kernel (vdso, vvar)"
        elif touching(nxt) and nxt.kind is None and named(nxt) and nxt.perm.startswith("rw") \
                and nxt.name.endswith(".cwasm"):
            v.kind = "memory below image"
        elif touching(prev) and prev.kind in ("memory image", "memory past image"):
            v.kind = "memory past image"
        elif v.lo % (64 << 20) == 0 and (v.size < (64 << 20) or v.size == (64 << 20)):
            v.kind = "host heap"  # a glibc arena (its read-write part)
        elif touching(prev) and prev.perm.startswith("---") and prev.size == PAGE and v.size == (1 << 20):
            v.kind = "fiber stacks"
        elif touching(prev) and prev.perm.startswith("---") and v.size >= (64 << 10):
            v.kind = "thread stacks"
        else:
            v.kind = "other anonymous (tables, ...)"
    # The memories' bases and image ends.
    base = None
    for v in vmas:
        if v.kind == "memory below image":
            base = v.lo
        elif v.kind == "memory image":
            if base is None or base > v.lo:
                base = v.lo
            IMAGE_END[base] = v.hi - base
        elif v.kind != "memory past image":
            base = None
            continue
        v.slot = base


def pagemap(pid, vmas):
    """Each accessible mapping's pagemap entries (an array of 64-bit words)."""
    import array
    got = {}
    with open(f"/proc/{pid}/pagemap", "rb") as f:
        for v in vmas:
            if v.perm.startswith("---") or v.name in ("[vvar]", "[vdso]", "[vsyscall]", "[vvar_vclock]"):
                continue
            f.seek(v.lo // PAGE * 8)
            a = array.array("Q")
            a.frombytes(f.read(v.size // PAGE * 8))
            got[v.lo] = a
    return got


PRESENT, EXCLUSIVE = 1 << 63, 1 << 56
PASSES = []  # (first, second) page-out pass durations, seconds
libc = ctypes.CDLL(None, use_errno=True)
SYS_PIDFD_OPEN, SYS_PROCESS_MADVISE, MADV_PAGEOUT = 434, 440, 21


class Iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


def page_out(pid, vmas):
    """Reclaims every private page of the process's accessible mappings (anonymous
    pages to swap: root must have turned a swap device on); pages shared with other
    mappings (the memory images' untouched pages, the binary's) stay."""
    fd = libc.syscall(SYS_PIDFD_OPEN, pid, 0)
    if fd < 0:
        raise OSError(ctypes.get_errno(), "pidfd_open")
    try:
        ranges = [(v.lo, v.size) for v in vmas
                  if not v.perm.startswith("---") and v.rss and not v.name.startswith("[v")]
        # One range a call: a call stops at the first range that fails (a mapping that
        # changed since maps was read), and the rest would be left in memory.
        for lo, n in ranges:
            iov = Iovec(lo, n)
            libc.syscall(SYS_PROCESS_MADVISE, fd, ctypes.byref(iov), 1, MADV_PAGEOUT, 0)
    finally:
        os.close(fd)


def offset_class(off, layout, slot):
    """Names a linear memory's offset by the core module's layout (LAYOUT: the
    runtime's wasm before its snapshot) and the memory's image."""
    image_end = IMAGE_END.get(slot, 0)
    if layout:
        sp, data_end, _ = layout
        if off < sp:
            return "shadow stack (below the stack pointer's start)"
        if off < data_end:
            return "static data"
    if off < image_end:
        return "heap in the snapshot image" if layout else "in the image"
    return "heap grown past the image" if layout else "past the image"


def window(pid, exe):
    """The pages the process touched (read or wrote) in WINDOW seconds: its private
    pages are paged out to swap first, and those present again at the end were faulted
    back in by an access. Also the mappings' `Referenced` (accessed bits cleared at the
    start), which counts shared pages too."""
    vmas = read_smaps(pid)
    # Twice: the first pass takes long (it compresses the whole process into swap),
    # and what the process touched meanwhile is back; the second pass is quick, so
    # the window starts at its end.
    t0 = time.monotonic()
    page_out(pid, vmas)
    t1 = time.monotonic()
    page_out(pid, vmas)
    t2 = time.monotonic()
    PASSES.append((t1 - t0, t2 - t1))
    with open(f"/proc/{pid}/clear_refs", "w") as f:
        f.write("1")
    start = time.monotonic_ns()
    time.sleep(WINDOW)
    after = pagemap(pid, vmas)
    end = time.monotonic_ns()
    ref = {v.lo: v for v in read_smaps(pid)}
    for v in vmas:
        if v.lo in ref:
            v.referenced = ref[v.lo].referenced
        a = after.get(v.lo)
        if a is None:
            continue
        for i, y in enumerate(a):
            if not y & PRESENT:
                continue
            if y & EXCLUSIVE:
                # Mapped here only, so it was paged out: present again means touched.
                v.dirty.append(v.lo + i * PAGE)
            else:
                v.stayed += 1  # shared with other mappings: never paged out, unknown
    classify(vmas, exe)
    if DUMP:
        DUMPED.append({"pid": pid, "start_ns": start, "end_ns": end,
                       "heap_pages": [a for v in vmas if v.kind == "host heap" for a in v.dirty],
                       "maps": Path(f"/proc/{pid}/maps").read_text()})
        Path(DUMP).write_text(json.dumps(DUMPED))
    return vmas


def report(samples, wakeups, layout):
    """One table of regions: referenced and written pages per VU (medians of windows)."""
    def med(xs):
        xs = sorted(xs)
        return xs[len(xs) // 2] if xs else 0

    kinds = sorted({v.kind for vmas in samples for v in vmas})
    print(f"| region | referenced KiB (windows) | referenced pages per VU | touched private pages per VU | shared pages (unknown) per VU |")
    print("| --- | --- | ---: | ---: | ---: |")
    tot_r, tot_w = [0] * len(samples), [0] * len(samples)
    for k in kinds:
        refs = [sum(v.referenced for v in vmas if v.kind == k) for vmas in samples]
        wr = [sum(len(v.dirty) for v in vmas if v.kind == k) for vmas in samples]
        st = [sum(v.stayed for v in vmas if v.kind == k) for vmas in samples]
        if not any(refs) and not any(wr):
            continue
        for i in range(len(samples)):
            tot_r[i] += refs[i]
            tot_w[i] += wr[i]
        print(f"| {k} | {', '.join(map(str, refs))} | {med(refs) / 4 / VUS:.2f} | {med(wr) / VUS:.2f} | "
              f"{med(st) / VUS:.2f} |")
    print(f"| all | {', '.join(map(str, tot_r))} | {med(tot_r) / 4 / VUS:.2f} | {med(tot_w) / VUS:.2f} | |")
    print(f"\n(about {wakeups:.0f} wake-ups per VU in a window; page-out passes "
          f"{', '.join(f'{a:.2f} + {b:.2f} s' for a, b in PASSES)})\n")
    PASSES.clear()
    # Written pages in linear memories, by offset within the memory.
    last = samples[-1]
    slots = {v.slot for v in last if v.slot is not None}
    by_off = collections.Counter()
    by_class = collections.Counter()
    for v in last:
        if v.slot is None:
            continue
        for a in v.dirty:
            off = a - v.slot
            by_off[off] += 1
            by_class[offset_class(off, layout, v.slot)] += 1
    per_slot = collections.defaultdict(collections.Counter)
    for v in last:
        if v.slot is not None:
            for a in v.dirty:
                per_slot[v.slot][offset_class(a - v.slot, layout, v.slot)] += 1
    print(f"Linear memories: {len(slots)}; touched private pages by offset class (last window):\n")
    print("| class | pages per memory (mean) | median over memories |")
    print("| --- | ---: | ---: |")
    for c, n in sorted(by_class.items(), key=lambda kv: -kv[1]):
        print(f"| {c} | {n / max(len(slots), 1):.2f} | {med([per_slot[b][c] for b in slots])} |")
    print(f"| all | {sum(by_class.values()) / max(len(slots), 1):.2f} | "
          f"{med([sum(per_slot[b].values()) for b in slots])} |")
    print(f"\nThe {TOP} offsets touched in most memories (last window):\n")
    print("| offset | memories touched |")
    print("| ---: | ---: |")
    for off, n in by_off.most_common(TOP):
        print(f"| {off:#x} ({offset_class(off, layout, max(IMAGE_END, key=IMAGE_END.get))}) | {n} |")
    # Fiber stacks: which pages below each stack's top a wake-up touches (a stack
    # grows down from its top; the frames a resumed fiber runs sit at the bottom of the
    # used part).
    depth = collections.Counter()
    stacks = [v for v in last if v.kind == "fiber stacks"]
    used = [v for v in stacks if v.dirty]
    for v in stacks:
        for a in v.dirty:
            depth[(v.hi - a) // PAGE] += 1
    print(f"\nFiber stacks: {len(stacks)}, {len(used)} touched; touched pages by page below the top "
          f"(page: stacks): " + ", ".join(f"{d}: {n}" for d, n in sorted(depth.items())))
    print()


def run_cmd(port):
    if RUN:
        return RUN.replace("{port}", str(port)).split()
    hold = int((WARM + ROUNDS * (WINDOW + 0.5) + 4) * 1000)
    out = Path(tempfile.mkdtemp(dir=WORK))
    return [BIN, "run", SCRIPT, "-e", f"WS_URL=ws://127.0.0.1:{port}/ws", "-e", f"HOLD_MS={hold}",
            "--vus", str(VUS), "--duration", f"{hold // 1000 + 2}s", "--quiet", "--out", str(out)]


def capacity_cmd():
    """capacity's sockets (200 VUs) and editors (20 VUs: the pushes' source) with one
    reader, on the JS route (bench/k6-parity/capacity.js) or the Rust plugin
    (plugins/capacity), against demo-target (run.Target, DEMO_TARGET_BIN)."""
    import run as parity
    hold = int((WARM + ROUNDS * (WINDOW + 0.5) + 6) * 1000)
    out = Path(tempfile.mkdtemp(dir=WORK))
    env = {"BROWSE_VUS": "1", "WRITE_VUS": "20", "SOCKET_VUS": str(VUS), "PAUSE_MIN_MS": "500",
           "PAUSE_MAX_MS": "1500", "DRAIN_MS": "1000"}
    if CAPACITY == "js":
        args = [str(HERE.parent / "k6-parity" / "capacity.js"), "-e", f"BASE_URL={parity.BASE}",
                "-e", f"DURATION={hold // 1000}s", "-e", f"HOLD_MS={hold}"]
        for k, v in env.items():
            args += ["-e", f"{k}={v}"]
        return [BIN, "run", *args, "--out", str(out), "--quiet"]
    toml = (HERE.parent / "k6-parity" / "capacity.toml").read_text().replace('"25s"', f'"{hold // 1000}s"')
    toml = toml.replace("vus = 80", "vus = 1").replace("vus = 200", f"vus = {VUS}")
    config = out / "capacity.toml"
    config.write_text(toml)
    wasm = Path(os.environ.get("PLUGINS", HERE.parent.parent / "plugins/target/wasm32-wasip2/release"))
    return [BIN, "run", str(wasm / "capacity.wasm"), "--config", str(config), "-e", f"BASE_URL={parity.BASE}",
            "--out", str(out), "--quiet"]


def sample(rate):
    if CAPACITY:
        sys.path.insert(0, str(HERE.parent / "k6-parity"))
        import run as parity
        push = parity.Target([])
    else:
        push = wsrecv.pusher(rate)
    proc = subprocess.Popen(["taskset", "-c", "1", *(capacity_cmd() if CAPACITY else run_cmd(wsrecv.PORT))],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, **HOST_ENV})
    got = []
    try:
        time.sleep(WARM)
        exe = os.path.realpath(f"/proc/{proc.pid}/exe")
        for _ in range(ROUNDS):
            got.append(window(proc.pid, exe))
            time.sleep(0.5)
    finally:
        proc.terminate()
        proc.wait()
        if CAPACITY:
            push.stop()
        else:
            wsrecv.stop(push)
    return got


def module_layout(path):
    """(stack pointer's start, end of the static data, end of the memory image) of the
    first core module in a wasm file or component that defines a memory: global 0's
    i32.const, the end of the first active data segment's run, the end of the last."""
    b = Path(path).read_bytes()

    def walk(b):
        i = 8
        while i < len(b):
            sid = b[i]
            size, j = leb(b, i + 1)
            body = b[j:j + size]
            yield sid, body
            i = j + size

    def core(m):
        sp = None
        segs = []
        for sid, body in walk(m):
            if sid == 6 and sp is None:  # globals: the first is __stack_pointer
                _, k = leb(body, 0)
                k += 2  # valtype, mut
                if body[k] == 0x41:
                    v, _ = leb(body, k + 1)
                    sp = v
            if sid == 11:
                n, k = leb(body, 0)
                for _ in range(n):
                    flag, k = leb(body, k)
                    if flag == 2:
                        _, k = leb(body, k)
                    off = None
                    if flag in (0, 2):
                        assert body[k] == 0x41
                        off, k = leb(body, k + 1)
                        assert body[k] == 0x0B
                        k += 1
                    ln, k = leb(body, k)
                    if off is not None:
                        segs.append((off, off + ln))
                    k += ln
        return sp, sorted(segs)

    found = []

    def scan(b):
        for sid, body in walk(b):
            if b[4:8] != b"\x01\x00\x00\x00" and sid == 1:  # a component's core module
                found.append(core(body))
            elif b[4:8] != b"\x01\x00\x00\x00" and sid == 4:  # nested component
                scan(body)
    if b[4:8] == b"\x01\x00\x00\x00":
        found.append(core(b))
    else:
        scan(b)
    for sp, segs in found:
        if segs:
            # Static data: the first segments up to a gap of more than a page (a
            # snapshot's segments are its non-zero pages, gaps between them).
            end = segs[0][1]
            for lo, hi in segs[1:]:
                if lo - end > PAGE:
                    break
                end = max(end, hi)
            return sp, end, segs[-1][1]
    return None


def main():
    layout = module_layout(os.environ["LAYOUT"]) if os.environ.get("LAYOUT") else None
    if layout:
        print(f"layout: stack pointer starts at {layout[0]:#x}, static data to {layout[1]:#x}, "
              f"image data to {layout[2]:#x}")
    print(f"{VUS} VUs, {RATE} pushes/s each, {WINDOW} s windows after {WARM} s; "
          f"load average {open('/proc/loadavg').read().split()[0]}\n")
    if CAPACITY:
        report(sample(RATE), RATE * WINDOW, layout)
        return
    if not RUN:
        warm = wsrecv.pusher(0)
        try:
            subprocess.run([BIN, "run", SCRIPT, "-e", f"WS_URL=ws://127.0.0.1:{wsrecv.PORT}/ws",
                            "-e", "HOLD_MS=100", "--vus", "1", "--iterations", "1", "--quiet",
                            "--out", str(WORK / "warm")], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        finally:
            wsrecv.stop(warm)
    # SKIP_IDLE=1: only the pushed run (the idle one is the default's baseline).
    for rate in (RATE,) if os.environ.get("SKIP_IDLE") else (0, RATE):
        print(f"### {rate} pushes/s per VU\n")
        report(sample(rate), rate * WINDOW, layout)


if __name__ == "__main__":
    main()
