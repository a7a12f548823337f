#!/usr/bin/env python3
"""Start-up of many JavaScript VUs: start.js (per-vu-iterations, one empty iteration per
VU) under k6 and under one or more hosts, rounds interleaved, medians and ratios of the
same run (issue #53, goal 3's second half).

Per run: wall seconds, CPU seconds (user + system, from the child's rusage), peak PSS
(bench/js/smaps.py's rss_pss every SAMPLE s, 0.2 by default, with the peak RSS beside
it; SAMPLE=0 reads none: reading smaps_rollup of a host with 10,000 VUs takes ~50 ms of
CPU and the host's mmap lock, so times are best taken without it), the iterations
done (k6's --summary-export, the host's summary.json) and, for a host, the seconds its
summary says the VUs took to initialise (`vus_init_s`). Each host runs the script once
with one VU first, so the build and the native compile are cached.

    K6=/path/to/k6 HOSTS=before=/path/a,after=/path/b VUS=10000,1000 ROUNDS=3 \\
        python3 bench/js/start.py

Runs one tool at a time (a 10,000-VU run takes GiBs: never two at once). Prints a
Markdown table per VU count.
"""

import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from smaps import rss_pss

HERE = Path(__file__).resolve().parent
SCRIPT = HERE / "start.js"
K6 = os.environ.get("K6", "k6")
HOSTS = [tuple(h.split("=", 1)) for h in os.environ.get("HOSTS", "host=host").split(",")]
VUS = [int(v) for v in os.environ.get("VUS", "10000,1000").split(",")]
ROUNDS = int(os.environ.get("ROUNDS", "3"))
SAMPLE = float(os.environ.get("SAMPLE", "0.2"))
WORK = Path(tempfile.mkdtemp(prefix="bench-start-"))


def measure(command, env=None):
    """Runs `command`; returns (wall s, user s, system s, peak RSS KiB, peak PSS KiB)."""
    started = time.monotonic()
    proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    peak_rss = peak_pss = 0
    while True:
        if SAMPLE:
            try:
                rss, pss = rss_pss(proc.pid)
            except ProcessLookupError:  # ended, not yet reaped
                rss = pss = None
            if rss is not None:
                peak_rss, peak_pss = max(peak_rss, rss), max(peak_pss, pss)
        # wait4 with WNOHANG: the rusage of this child alone.
        pid, status, usage = os.wait4(proc.pid, 0 if not SAMPLE else os.WNOHANG)
        if pid:
            break
        time.sleep(SAMPLE)
    wall = time.monotonic() - started
    err = proc.stderr.read().decode(errors="replace")
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{' '.join(command)} failed:\n{err[-2000:]}")
    return wall, usage.ru_utime, usage.ru_stime, peak_rss, peak_pss


def k6(vus, n):
    export = WORK / f"k6-{vus}-{n}.json"
    env = dict(os.environ, K6_NO_USAGE_REPORT="true")
    figures = measure([K6, "run", "--quiet", "--no-color", "--no-usage-report", "-e", f"VUS={vus}",
                       "--summary-export", str(export), str(SCRIPT)], env)
    iterations = json.loads(export.read_text())["metrics"]["iterations"]["count"]
    return figures + (iterations, None)


def host(binary, vus, n):
    out = WORK / f"{Path(binary).name}-{vus}-{n}"
    figures = measure([binary, "run", str(SCRIPT), "-e", f"VUS={vus}", "--quiet", "--out", str(out)])
    summary = json.loads(next(out.rglob("summary.json")).read_text())
    iterations = summary["metrics"]["iterations"]["count"]
    return figures + (iterations, summary.get("vus_init_s"))


def main():
    tools = [("k6", lambda v, n: k6(v, n))] + [
        (name, lambda v, n, b=binary: host(b, v, n)) for name, binary in HOSTS]
    for _, binary in HOSTS:
        host(binary, 1, "warm")
    print(f"uptime at start: {os.popen('uptime').read().strip()}", flush=True)
    for vus in VUS:
        rows = {name: [] for name, _ in tools}
        for n in range(ROUNDS):
            for name, run in tools:
                r = run(vus, n)
                rows[name].append(r)
                print(f"{vus} VUs round {n} {name}: wall {r[0]:.1f} s, CPU {r[1]:.2f}+{r[2]:.2f} s, "
                      f"peak RSS {r[3] / 1024:.0f} MiB, peak PSS {r[4] / 1024:.0f} MiB, "
                      f"iterations {r[5]}, VUs init {r[6]}", flush=True)
        print(f"uptime: {os.popen('uptime').read().strip()}")
        med = lambda name, f: statistics.median(f(r) for r in rows[name])
        k6_wall = med("k6", lambda r: r[0])
        k6_cpu = med("k6", lambda r: r[1] + r[2])
        k6_pss = med("k6", lambda r: r[4]) or 1
        print(f"\n**{vus:,} VUs** (medians of {ROUNDS} rounds)\n")
        print("| tool | wall s | × k6 | CPU s (user + system) | × k6 | peak PSS MiB | × k6 | peak RSS MiB "
              "| iterations | VUs init s | walls |")
        print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
        for name, _ in tools:
            wall = med(name, lambda r: r[0])
            user, system = med(name, lambda r: r[1]), med(name, lambda r: r[2])
            cpu = med(name, lambda r: r[1] + r[2])
            pss, rss = med(name, lambda r: r[4]), med(name, lambda r: r[3])
            its = "/".join(str(int(r[5])) for r in rows[name])
            init = "" if name == "k6" else f"{med(name, lambda r: r[6] or 0):.1f}"
            walls = " / ".join(f"{r[0]:.1f}" for r in rows[name])
            print(f"| {name} | {wall:.1f} | {wall / k6_wall:.2f} | {cpu:.2f} ({user:.2f} + {system:.2f}) "
                  f"| {cpu / k6_cpu:.2f} | {pss / 1024:,.0f} | {pss / k6_pss:.2f} | {rss / 1024:,.0f} "
                  f"| {its} | {init} | {walls} |")
        print(flush=True)


if __name__ == "__main__":
    main()
