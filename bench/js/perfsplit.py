#!/usr/bin/env python3
"""Splits a `perf record -g` profile of `host run` by where each sample's leaf frame is:
the guest (QuickJS's interpreter loop, its C, its allocator, the runtime's Rust), the
kernel, and the host by crate (wasmtime, tokio, hyper, net, metrics, ...).

Run by hand: `bench/js/perfsplit.py perf.data` (perf, root). Record the host with
`HOST_PERF_MAP=1` so wasmtime names its JIT code (/tmp/perf-PID.map): the guest's
functions then read `wasm[0]::function[N]::NAME` (the source-built runtime keeps its
name section). The host binary is built without frame pointers, so a libc leaf (malloc,
memmove) is attributed to a crate only when the call chain perf unwound names one.
Prints a Markdown table of shares of all samples.
"""
import collections
import re
import subprocess
import sys

# (pattern in the first frames of the chain, class), first match wins; guest leaves first.
HOST_CLASSES = [
    ("hdrhistogram", "host: metrics (hdrhistogram, series)"),
    ("metrics", "host: metrics (hdrhistogram, series)"),
    ("wasmtime", "host: wasmtime (calls in and out, lift/lower, fibers, epoch)"),
    ("hyper", "host: hyper (HTTP/1 client)"),
    ("host::net", "host: net (pools, exchange)"),
    ("tokio", "host: tokio (tasks, IO readiness, timers)"),
    ("mio", "host: tokio (tasks, IO readiness, timers)"),
    ("host::plugin", "host: plugin imports (slots, checks)"),
    ("host::executor", "host: executor (the iteration loop)"),
]


def classify(frames):
    """The class of one sample, from its (symbol, dso) frames, leaf first."""
    sym, dso = frames[0]
    if ".cwasm" in dso:
        if "JS_CallInternal" in sym:
            return "guest: QuickJS interpreter loop (JS_CallInternal)"
        if re.search(r"js_runtime|bridge|wit_bindgen|cabi_|loadtest:|_ZN", sym):
            return "guest: the runtime's Rust (bridge lift/lower, export glue)"
        if re.search(r"malloc|free|realloc|memcpy|memmove|memset|memcmp", sym):
            return "guest: allocator and mem*"
        return "guest: QuickJS C (objects, shapes, atoms, properties)"
    if "kernel" in dso:
        return "kernel (TCP on loopback, syscalls, scheduling)"
    chain = " ".join(s for s, _ in frames[:12])
    for key, name in HOST_CLASSES:
        if key in chain:
            return name
    if "libc" in dso:
        return "host: libc (malloc, memmove), caller not unwound"
    if "vdso" in dso:
        return "host: clock reads (vdso)"
    return "host: other"


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    text = subprocess.run(["perf", "script", "-i", sys.argv[1], "-F", "ip,sym,dso"],
                          capture_output=True, text=True, check=True).stdout
    counts = collections.Counter()
    total = 0
    for sample in text.split("\n\n"):
        frames = []
        for line in sample.strip().splitlines():
            m = re.match(r"\s*[0-9a-f]+\s+(.*)\s+\((.*)\)$", line)
            if m:
                frames.append((m.group(1), m.group(2)))
        if frames:
            total += 1
            counts[classify(frames)] += 1
    print(f"| where ({total} samples) | share |")
    print("| --- | ---: |")
    for name, n in sorted(counts.items(), key=lambda kv: -kv[1]):
        print(f"| {name} | {100 * n / total:.1f} % |")


if __name__ == "__main__":
    main()
