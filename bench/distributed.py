#!/usr/bin/env python3
"""Distributed-run benchmark: 1, 2 and 4 local workers against the demo target.

Measures the merged throughput (http_reqs / s from the coordinator's summary.json) and
the coordinator's own CPU (user + system, from wait4's rusage) per worker-second.
Usage: bench/distributed.py HOST_BINARY PLUGIN.wasm [DURATION_S]
"""
import json, os, subprocess, sys, tempfile, time, glob

host, plugin = sys.argv[1], sys.argv[2]
duration = int(sys.argv[3]) if len(sys.argv) > 3 else 10
target = subprocess.Popen([host, "target", "--listen", "127.0.0.1:18080"],
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
target.stdout.readline()
rows = []
try:
    for n in (1, 2, 4):
        out = tempfile.mkdtemp()
        coord = subprocess.Popen(
            [host, "coordinate", plugin, "--workers", str(n), "--listen", "127.0.0.1:17878",
             "--vus", "4", "--duration", f"{duration}s", "-e", "BASE_URL=http://127.0.0.1:18080",
             "--out", out, "--quiet"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        for line in coord.stderr:
            if "listening" in line:
                break
        workers = [subprocess.Popen([host, "worker", "--coordinator", "127.0.0.1:17878",
                                     "--out", out + f"/w{i}"],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                   for i in range(n)]
        _, status, usage = os.wait4(coord.pid, 0)
        for w in workers:
            w.wait()
        summary = json.load(open(glob.glob(out + "/*/summary.json")[0]))
        reqs = summary["metrics"]["http_reqs"]["count"]
        secs = summary["duration_s"]
        cpu = usage.ru_utime + usage.ru_stime
        rows.append((n, reqs, secs, reqs / secs, cpu, 100.0 * cpu / (n * secs)))
finally:
    target.terminate()
print("| workers | http_reqs | duration s | merged req/s | coordinator CPU s | CPU % of a core per worker |")
print("| --- | --- | --- | --- | --- | --- |")
for n, reqs, secs, rate, cpu, per in rows:
    print(f"| {n} | {reqs:.0f} | {secs:.1f} | {rate:.0f} | {cpu:.2f} | {per:.2f} |")
