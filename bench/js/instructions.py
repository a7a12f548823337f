#!/usr/bin/env python3
"""Instructions per iteration of k6 scripts under `host run`, counted by callgrind, split
between the guest (the JS component: QuickJS, its runtime, wit-dylib's glue) and the host.

Run by hand: `bench/js/instructions.py SCRIPT.js...` (root, Debian, valgrind, nginx).
Instruction counts do not depend on the machine's load, so this is the figure to compare
builds by on a shared machine (bench/js/run.py's requests per CPU-second are the goal's).

Each script runs under `valgrind --tool=callgrind` three times, with one VU against nginx
on 127.0.0.1 (one worker, core 0; the host on core 1): once with one iteration (it fills
the compile cache for valgrind's CPU, whose features differ from the machine's), then
with N1 and N2 iterations. Per iteration = (cost at N2 - cost at N1) / (N2 - N1): start-up,
the build and shutdown cancel out. HOST_PERF_MAP=1 makes wasmtime write the JIT code's
names (/tmp/perf-PID.map), which name the addresses callgrind reports. The QuickJS
runtime (`wasm[2]`) carries no name section: only its exports (wit-dylib's callbacks) are
named, from the runtime's own file; its other functions stay `wasm[2]::function[N]`.

The host's per-second work (the 1 s metrics tick, results files, the resource sampler)
grows with wall time, which valgrind stretches ~50 times: it is counted apart ("ticks":
the inclusive cost of `host::run::drive`) and left out of the host column, so that the
columns are the cost of the iterations. With a debug host only the guest column holds
(its wasmtime is built at opt-level 3, so the guest's code is the release build's).

Environment: N1 (300), N2 (1300), HOST_BIN (target/release/host), PORT (18091), ENV
(more `-e KEY=VALUE` for the scripts, space-separated), TOP (guest functions listed per
script, 12), KEEP (a folder to keep the callgrind files in), WARM (1; 0 skips the
warm-up run when the compile cache already holds the scripts' builds for valgrind),
HOST_CPU (1: the core the host is pinned to), DEMO_TARGET_BIN (a demo-target binary to
serve in place of nginx, for bench/k6-parity/capacity-http.js).
"""

import bisect
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
N1 = int(os.environ.get("N1", "300"))
N2 = int(os.environ.get("N2", "1300"))
HOST = str(ROOT / os.environ.get("HOST_BIN", "target/release/host"))
PORT = int(os.environ.get("PORT", "18091"))
TOP = int(os.environ.get("TOP", "12"))
KEEP = os.environ.get("KEEP")
RUNTIME = ROOT / "host/assets/quickjs/runtime-sync.wasm"
WORK = Path(tempfile.mkdtemp(prefix="js-instructions-"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from wasmbin import leb  # noqa: E402
BASE = f"http://127.0.0.1:{PORT}"


def nginx():
    """nginx with one worker on core 0, serving 13 bytes."""
    www = WORK / "www"
    www.mkdir()
    (www / "index.html").write_text("hello, world\n")
    os.chmod(WORK, 0o755)
    conf = WORK / "nginx.conf"
    conf.write_text(f"""
worker_processes 1;
daemon off;
pid {WORK}/nginx.pid;
error_log {WORK}/error.log;
events {{ worker_connections 1024; }}
http {{
    access_log off;
    keepalive_requests 100000000;
    keepalive_timeout 600s;
    server {{
        listen 127.0.0.1:{PORT};
        root {www};
        location / {{ index index.html; }}
    }}
}}
""")
    proc = subprocess.Popen(["taskset", "-c", "0", "nginx", "-p", str(WORK), "-c", str(conf)])
    for _ in range(50):
        if subprocess.run(["curl", "-fsS", "-o", "/dev/null", BASE + "/"]).returncode == 0:
            return proc
        time.sleep(0.1)
    sys.exit("nginx did not start")


def demo_target():
    """A fresh demo-target on core 0 (its notes, tokens and WebSocket pushes)."""
    proc = subprocess.Popen(["taskset", "-c", "0", os.environ["DEMO_TARGET_BIN"], "--listen",
                             f"127.0.0.1:{PORT}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(100):
        if subprocess.run(["curl", "-fsS", "-o", "/dev/null", BASE + "/health"]).returncode == 0:
            return proc
        time.sleep(0.1)
    sys.exit("demo-target did not start")


def runtime_exports():
    """Function index -> export name of the QuickJS runtime (wit-dylib's callbacks)."""
    b = RUNTIME.read_bytes()
    i, out = 8, {}
    while i < len(b):
        sid = b[i]
        size, i = leb(b, i + 1)
        if sid == 7:
            n, j = leb(b, i)
            for _ in range(n):
                ln, j = leb(b, j)
                nm = b[j : j + ln].decode()
                kind = b[j + ln]
                idx, j = leb(b, j + ln + 1)
                if kind == 0:
                    out.setdefault(idx, nm)
        i += size
    return out


RT_NAMES = runtime_exports()


class PerfMap:
    """Addresses of JIT code -> wasmtime's names for it."""

    def __init__(self, path):
        spans = {}
        for line in Path(path).read_text().splitlines():
            parts = line.split(" ", 2)
            if len(parts) == 3:
                spans[int(parts[0], 16)] = (int(parts[1], 16), parts[2])
        self.starts = sorted(spans)
        self.spans = [spans[s] for s in self.starts]

    def name(self, addr):
        k = bisect.bisect_right(self.starts, addr) - 1
        if k >= 0 and addr < self.starts[k] + self.spans[k][0]:
            name = self.spans[k][1]
            m = re.fullmatch(r"wasm\[2\]::function\[(\d+)\]", name)
            if m and int(m.group(1)) in RT_NAMES:
                name = f"{name}::{RT_NAMES[int(m.group(1))]}"
            return name
        return None


LINE = re.compile(r"^\s*([\d,]+) \([^)]*\)\s+(.*)$")


def annotate(path, inclusive):
    """(cost, function) rows of callgrind_annotate."""
    args = ["callgrind_annotate", "--auto=no", "--threshold=100"]
    if inclusive:
        args.append("--inclusive=yes")
    text = subprocess.run(args + [path], capture_output=True, text=True, check=True).stdout
    rows = []
    for line in text.splitlines():
        m = LINE.match(line)
        if m and "PROGRAM TOTALS" not in m.group(2):
            rows.append((int(m.group(1).replace(",", "")), m.group(2)))
    return rows


def profile(script, n):
    """Runs `script` for n iterations under callgrind; returns (costs by part, guest functions)."""
    out = WORK / f"cg.{Path(script).stem}.{n}"
    env = dict(os.environ, HOST_PERF_MAP="1")
    extra = []
    for kv in os.environ.get("ENV", "").split():
        extra += ["-e", kv]
    cmd = ["taskset", "-c", os.environ.get("HOST_CPU", "1"), "valgrind", "--tool=callgrind", "--smc-check=all-non-file",
           f"--callgrind-out-file={out}", HOST, "run", script, "-e", f"BASE_URL={BASE}", *extra,
           "--vus", "1", "--iterations", str(n), "--quiet", "--out", str(WORK / "out")]
    shutil.rmtree(WORK / "out", ignore_errors=True)
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{p.stderr[-3000:]}")
    pid = re.search(r"^pid: (\d+)", out.read_text(errors="replace"), re.M).group(1)
    perf = PerfMap(f"/tmp/perf-{pid}.map")
    parts = {"guest": 0, "host": 0}
    guest = {}
    for cost, fn in annotate(str(out), False):
        m = re.search(r"\?\?\?:0x([0-9a-f]+)", fn)
        name = perf.name(int(m.group(1), 16)) if m else None
        if name and name.startswith("wasm["):
            parts["guest"] += cost
            guest[name] = guest.get(name, 0) + cost
        else:
            parts["host"] += cost
    ticks = 0
    for cost, fn in annotate(str(out), True):
        if re.search(r"host::run::drive(::\{\{closure\}\})? \[", fn):
            ticks = max(ticks, cost)
    parts["ticks"] = ticks
    parts["host"] -= ticks
    if KEEP:
        tag = "-".join(kv.replace("=", "_") for kv in os.environ.get("ENV", "").split())
        keep = Path(KEEP) / (out.name + (f".{tag}" if tag else ""))
        keep.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(out, keep)
        shutil.copy(f"/tmp/perf-{pid}.map", f"{keep}.perf-map")
    os.unlink(f"/tmp/perf-{pid}.map")
    return parts, guest


def main():
    scripts = sys.argv[1:]
    if not scripts:
        sys.exit(__doc__)
    proc = demo_target() if os.environ.get("DEMO_TARGET_BIN") else nginx()
    try:
        rows = []
        for script in scripts:
            if os.environ.get("WARM", "1") != "0":
                profile(script, 1)
            a, ga = profile(script, N1)
            b, gb = profile(script, N2)
            d = N2 - N1
            per = {k: (b[k] - a[k]) / d for k in a}
            funcs = sorted(((gb.get(f, 0) - ga.get(f, 0)) / d, f) for f in set(ga) | set(gb))
            rows.append((script, per, funcs[::-1][:TOP]))
        print(f"instructions per iteration, (N{N2} - N{N1}) / {N2 - N1}, host {HOST}\n")
        print("| script | guest + host | guest | host | (ticks, left out) |")
        print("| --- | ---: | ---: | ---: | ---: |")
        for script, per, _ in rows:
            print(f"| {script} | {per['guest'] + per['host']:,.0f} | {per['guest']:,.0f} | "
                  f"{per['host']:,.0f} | {per['ticks']:,.0f} |")
        for script, _, funcs in rows:
            print(f"\n{script}: the guest's functions (exclusive instructions per iteration)")
            for cost, f in funcs:
                print(f"  {cost:10,.0f}  {f}")
    finally:
        proc.terminate()
        proc.wait()
        shutil.rmtree(WORK, ignore_errors=True)


if __name__ == "__main__":
    main()
