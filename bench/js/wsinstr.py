#!/usr/bin/env python3
"""Instructions per WebSocket message received, counted by callgrind, split between the
guest (the JS component) and the host: bench/js/wsrecv.js with one VU against
bench/js/wspush.py, under `host run` in valgrind, once with RATE pushes a second and
once with none (same DURATION); per message = (pushed - idle) / messages received.

Instruction counts do not depend on the machine's load (bench/js/wsrecv.py's CPU
figures do), so this is the figure to compare layer and host builds by on a shared
machine. RATE (100) is one message per 10-ms burst of the pusher, so (as in capacity.js)
each message is a wake-up of its own; the cache misses that make a cold wake-up cost
more than its instructions are not counted here.

Run by hand: `HOST_BINS="before=... after=..." bench/js/wsinstr.py` (valgrind, root).
Environment: HOST_BINS (name=path, space-separated), RATE (100), DURATION (8),
PORT (18093), TOP (guest functions listed, 10), HOST_TOP (host functions listed, 0;
exclusive, the 1-s ticks' included, so noisier than the total).
"""
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from instructions import PerfMap, annotate  # noqa: E402

os.environ.setdefault("PORT", "18093")
import wsrecv  # noqa: E402  (its pusher and stop, on PORT)

RATE = int(os.environ.get("RATE", "100"))
DURATION = int(os.environ.get("DURATION", "8"))
TOP = int(os.environ.get("TOP", "10"))
HOST_TOP = int(os.environ.get("HOST_TOP", "0"))
BINS = dict(kv.split("=", 1) for kv in os.environ.get("HOST_BINS", "host=target/release/host").split())
WORK = Path(tempfile.mkdtemp(prefix="wsinstr-"))


def profile(binary, rate):
    """(guest, host, ticks, messages, guest functions) of one run under callgrind."""
    # A results folder and a profile of its own per run: `host run` keeps a runs
    # database in its --out folder, and a run that creates it costs ~2 M instructions
    # more than one that adds to it, which the per-message difference would carry.
    out = Path(tempfile.mkstemp(dir=WORK, prefix=f"cg.{rate}.")[1])
    res = Path(tempfile.mkdtemp(dir=WORK, prefix=f"out.{rate}."))
    cmd = ["taskset", "-c", "1", "valgrind", "--tool=callgrind", "--smc-check=all-non-file",
           f"--callgrind-out-file={out}", binary, "run", str(HERE / "wsrecv.js"),
           "-e", f"WS_URL=ws://127.0.0.1:{wsrecv.PORT}/ws", "-e", f"HOLD_MS={DURATION * 1000}",
           "--vus", "1", "--duration", f"{DURATION}s", "--quiet", "--out", str(res)]
    push = wsrecv.pusher(rate)
    try:
        p = subprocess.run(cmd, env=dict(os.environ, HOST_PERF_MAP="1"), capture_output=True, text=True)
    finally:
        wsrecv.stop(push)
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{p.stderr[-3000:]}")
    summary = json.loads(next(res.glob("*/summary.json")).read_text())["metrics"]
    messages = summary.get("ws_msgs_received", {}).get("count", 0)
    pid = re.search(r"^pid: (\d+)", out.read_text(errors="replace"), re.M).group(1)
    perf = PerfMap(f"/tmp/perf-{pid}.map")
    guest, host, funcs, hfuncs = 0, 0, {}, {}
    for cost, fn in annotate(str(out), False):
        m = re.search(r"\?\?\?:0x([0-9a-f]+)", fn)
        name = perf.name(int(m.group(1), 16)) if m else None
        if name and name.startswith("wasm["):
            guest += cost
            funcs[name] = funcs.get(name, 0) + cost
        else:
            host += cost
            hfuncs[name or fn] = hfuncs.get(name or fn, 0) + cost
    ticks = 0
    for cost, fn in annotate(str(out), True):
        if re.search(r"host::run::drive(::\{\{closure\}\})? \[", fn):
            ticks = max(ticks, cost)
    os.unlink(f"/tmp/perf-{pid}.map")
    return guest, host - ticks, messages, funcs, hfuncs


def per_message(idle, pushed, n):
    """Each function's (pushed - idle) instructions per message, the costliest first."""
    return sorted((((pushed.get(f, 0) - idle.get(f, 0)) / n, f) for f in set(idle) | set(pushed)), reverse=True)


def main():
    print(f"instructions per message, 1 VU, {RATE} messages/s, {DURATION} s, (pushed - idle) / received\n")
    print("| build | messages | guest | host (ticks left out) | guest + host |")
    print("| --- | ---: | ---: | ---: | ---: |")
    tops = []
    for label, binary in BINS.items():
        profile(binary, 0)  # the compile cache for valgrind's CPU
        g0, h0, _, f0, hf0 = profile(binary, 0)
        g1, h1, n, f1, hf1 = profile(binary, RATE)
        g, h = (g1 - g0) / n, (h1 - h0) / n
        print(f"| {label} | {n:,} | {g:,.0f} | {h:,.0f} | {g + h:,.0f} |", flush=True)
        tops.append((label, per_message(f0, f1, n)[:TOP], per_message(hf0, hf1, n)[:HOST_TOP]))
    for label, funcs, hfuncs in tops:
        print(f"\n{label}: the guest's functions (exclusive instructions per message)")
        for cost, f in funcs:
            print(f"  {cost:10,.0f}  {f}")
        if hfuncs:
            print(f"\n{label}: the host's functions (exclusive instructions per message, ticks included)")
            for cost, f in hfuncs:
                print(f"  {cost:10,.0f}  {f[:160]}")


if __name__ == "__main__":
    main()
