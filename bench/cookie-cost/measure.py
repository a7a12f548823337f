#!/usr/bin/env python3
"""The measuring half of bench/cookie-cost/run.sh (which starts nginx and sets the
environment): prints markdown tables of instructions and CPU per request for A and B."""
import glob
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

out = sys.argv[1]
env = os.environ
url = env["URL"].rstrip("/")
vus = env.get("VUS", "10")
tools = {"A": (env["A_BIN"], env["A_PLUGIN"]), "B": (env["B_BIN"], env["B_PLUGIN"])}


def host_cmd(tool, iterations, results):
    binary, plugin = tools[tool]
    return [binary, "run", plugin, "--vus", vus, "--iterations", str(iterations),
            "-e", f"BASE_URL={url}", "--out", results, "--quiet"]


def requests_of(results):
    summary = json.load(open(glob.glob(results + "/*/summary.json")[0]))
    return summary["metrics"]["http_reqs"]["count"]


def run(cmd):
    """Runs cmd on core 1; (exit code, user + system CPU seconds) of that process."""
    proc = subprocess.Popen(["taskset", "-c", env.get("GEN_CPU", "1"), *cmd], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    err = proc.stderr.read().decode(errors="replace")
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        sys.exit(f"{' '.join(cmd)} exited {code}:\n{err[-3000:]}")
    return usage.ru_utime + usage.ru_stime


def callgrind(tool, iterations):
    results = tempfile.mkdtemp(dir=out)
    cg = f"{out}/callgrind.{tool}.{iterations}"
    run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={cg}", *host_cmd(tool, iterations, results)])
    text = open(cg).read()
    # `summary:` (or `totals:`) carries the program's total Ir, all threads.
    m = re.search(r"^(?:summary|totals): (\d+)", text, re.M)
    return int(m.group(1)), requests_of(results)


def cpu(tool, iterations):
    results = tempfile.mkdtemp(dir=out)
    secs = run(host_cmd(tool, iterations, results))
    return secs, requests_of(results)


def loadavg():
    return " ".join(open("/proc/loadavg").read().split()[:3])


cg_short, cg_long = int(env.get("CG_SHORT", "2000")), int(env.get("CG_LONG", "8000"))
rows = {}
for tool in ("A", "B") if env.get("CALLGRIND", "1") == "1" else ():
    # Warm the compilation cache under valgrind first: valgrind's emulated CPU has other
    # features than the real one, so its compiled code is cached under another key, and
    # the first run under valgrind would pay a compile the second does not.
    callgrind(tool, 10)
    (i1, r1), (i2, r2) = callgrind(tool, cg_short), callgrind(tool, cg_long)
    rows[tool] = (i1, r1, i2, r2, (i2 - i1) / (r2 - r1))
    print(f"callgrind {tool}: {i1} Ir / {r1} req, {i2} Ir / {r2} req -> {rows[tool][4]:.0f} Ir/req "
          f"(load {loadavg()})", flush=True)
if rows:
    print()
    print(f"| build | Ir, {cg_short} it. | requests | Ir, {cg_long} it. | requests | Ir per request (difference) |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
for tool, (i1, r1, i2, r2, per) in rows.items():
    print(f"| {tool} | {i1:,} | {r1:.0f} | {i2:,} | {r2:.0f} | {per:,.0f} |")
if rows:
    print(f"\nB / A instructions per request: {rows['B'][4] / rows['A'][4]:.4f}\n", flush=True)

c_short, c_long = int(env.get("CPU_SHORT", "5000")), int(env.get("CPU_LONG", "150000"))
rounds = int(env.get("ROUNDS", "3"))
per = {"A": [], "B": []}
for tool in ("A", "B"):
    # Warm the compilation cache, so neither measured run pays a compile.
    cpu(tool, 100)
print("| round | build | CPU s short | requests | CPU s long | requests | µs CPU per request | load |")
print("| --- | --- | ---: | ---: | ---: | ---: | ---: | --- |")
for r in range(rounds):
    order = ("A", "B") if r % 2 == 0 else ("B", "A")
    for tool in order:
        (s1, n1), (s2, n2) = cpu(tool, c_short), cpu(tool, c_long)
        us = 1e6 * (s2 - s1) / (n2 - n1)
        per[tool].append(us)
        print(f"| {r + 1} | {tool} | {s1:.2f} | {n1:.0f} | {s2:.2f} | {n2:.0f} | {us:.2f} | {loadavg()} |", flush=True)
ma, mb = statistics.median(per["A"]), statistics.median(per["B"])
ratios = [b / a for a, b in zip(per["A"], per["B"])]
print(f"\nmedian µs CPU per request: A {ma:.2f}, B {mb:.2f}; B / A {mb / ma:.4f} "
      f"(per round: {', '.join(f'{x:.3f}' for x in ratios)})")
