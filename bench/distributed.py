#!/usr/bin/env python3
"""Distributed-run benchmark: 1, 2 and 4 local workers, the merged throughput and the
coordinator's CPU per worker-second.

The workers' own CPU (wait4) gives requests per worker CPU-second, a figure that does not
depend on how much of the shared cores the processes were given.

For each worker count the same test runs twice, SHORT and LONG seconds long. The merged
throughput is http_reqs / s of the coordinator's summary.json (long run). The
coordinator's CPU (user + system from wait4's rusage) covers its whole life: loading the
plugin, setup(), writing the results, and the merging of one tick a second per worker.
The difference of the two runs leaves only what grows with time, the merging:
(CPU(LONG) - CPU(SHORT)) / (workers x (LONG - SHORT)) is its CPU per worker-second.

Usage: bench/distributed.py HOST_BINARY PLUGIN.wasm [SHORT_S [LONG_S]]
Environment:
  BASE_URL    the server to load (bench/distributed-nginx.sh sets it to its nginx);
              without it, `HOST target` on 127.0.0.1:18080 is started as before.
  VUS         VUs per worker (4); the run has VUS x workers.
  GEN_CPUS    cores for the coordinator and the workers (taskset list; unset: not pinned).
  PORT        the coordinator's port (17878).
  HOST_CLUSTER_TOKEN  the cluster token (default: a random one, made here): the
              coordinator and the workers inherit it, so the figures include TLS and
              the proofs, as a run beyond loopback has them.
"""
import glob
import json
import os
import secrets
import subprocess
import sys
import tempfile

host, plugin = sys.argv[1], sys.argv[2]
short = int(sys.argv[3]) if len(sys.argv) > 3 else 5
long = int(sys.argv[4]) if len(sys.argv) > 4 else 25
vus_per_worker = int(os.environ.get("VUS", "4"))
pin = ["taskset", "-c", os.environ["GEN_CPUS"]] if os.environ.get("GEN_CPUS") else []
port = os.environ.get("PORT", "17878")
os.environ.setdefault("HOST_CLUSTER_TOKEN", secrets.token_hex(32))
base_url = os.environ.get("BASE_URL")
target = None
if not base_url:
    base_url = "http://127.0.0.1:18080"
    target = subprocess.Popen([host, "target", "--listen", "127.0.0.1:18080"],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    target.stdout.readline()


def loadavg():
    return " ".join(open("/proc/loadavg").read().split()[:3])


def run(n, duration):
    """One coordinated run of n workers; (http_reqs, seconds, coordinator CPU s, workers' CPU s)."""
    out = tempfile.mkdtemp(prefix="dist-bench.")
    # taskset execs the host, so wait4 on this pid is the coordinator's own rusage.
    coord = subprocess.Popen(
        [*pin, host, "coordinate", plugin, "--workers", str(n), "--listen", f"127.0.0.1:{port}",
         "--vus", str(vus_per_worker * n), "--duration", f"{duration}s", "-e", f"BASE_URL={base_url}",
         "--out", out, "--quiet"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    for line in coord.stderr:
        if "listening" in line:
            break
    workers = [subprocess.Popen([*pin, host, "worker", "--coordinator", f"127.0.0.1:{port}",
                                 "--out", out + f"/w{i}"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
               for i in range(n)]
    _, status, usage = os.wait4(coord.pid, 0)
    workers_cpu = 0.0
    for w in workers:
        _, w_status, wu = os.wait4(w.pid, 0)
        workers_cpu += wu.ru_utime + wu.ru_stime
        # Reaped here, so Popen must not wait for it again.
        w.returncode = os.waitstatus_to_exitcode(w_status)
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        sys.exit(f"coordinator exited {code}: {coord.stderr.read()[-2000:]}")
    summary = json.load(open(glob.glob(out + "/*/summary.json")[0]))
    return (summary["metrics"]["http_reqs"]["count"], summary["duration_s"], usage.ru_utime + usage.ru_stime,
            workers_cpu)


rows = []
try:
    for n in (1, 2, 4):
        _, _, cpu_s, _ = run(n, short)
        reqs, secs, cpu_l, w_cpu = run(n, long)
        rows.append((n, reqs, secs, reqs / secs, reqs / w_cpu, cpu_s, cpu_l,
                     100.0 * (cpu_l - cpu_s) / (n * (long - short)), loadavg()))
        print(f"{n} workers done (load {rows[-1][-1]})", file=sys.stderr, flush=True)
finally:
    if target:
        target.terminate()
print(f"| workers | VUs | http_reqs ({long} s run) | duration s | merged req/s | req per worker CPU-s "
      f"| coordinator CPU s, {short} s run "
      f"| coordinator CPU s, {long} s run | merging: % of a core per worker | load average after |")
print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
for n, reqs, secs, rate, per_cpu, cpu_s, cpu_l, per, load in rows:
    print(f"| {n} | {vus_per_worker * n} | {reqs:.0f} | {secs:.1f} | {rate:.0f} | {per_cpu:.0f} | {cpu_s:.2f} | {cpu_l:.2f} "
          f"| {per:.3f} | {load} |")
