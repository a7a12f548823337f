#!/usr/bin/env python3
"""Requests per CPU-second of hello.js under k6 and under two host builds, rounds
interleaved: bench/js/run.py's throughput part, for a before/after comparison of the k6
layer in one run (the VM's speed moves between rounds; only ratios within one run hold).

Run by hand: `BEFORE=<host> AFTER=<host> bench/js/ab.py` (root, Debian, nginx, k6).
Environment: BEFORE, AFTER (host binaries; required unless HOSTS="NAME=PATH ..." names
two or more builds instead, a row "host NAME" each), RUST=1 (also the Rust `hello`
plugin, plugins/target/wasm32-wasip2/release/hello.wasm, under each build: a row "NAME
rust" per build, in the same interleaved rounds), and run.py's own: ROUNDS, DURATION,
K6, PORT, TARGET_CPU, GEN_CPU. Prints each round and a Markdown table of medians.
"""
import os
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run  # noqa: E402

if os.environ.get("HOSTS"):
    BINS = {f"host {k}": v for k, v in (item.split("=", 1) for item in os.environ["HOSTS"].split())}
else:
    BINS = {"host before": os.environ["BEFORE"], "host after": os.environ["AFTER"]}
RUST = os.environ.get("RUST") == "1"

# Each build compiles the script once before the rounds, so no round pays for it.
for binary in BINS.values():
    subprocess.run([binary, "build", "hello.js"], cwd=run.HERE, check=True, stdout=subprocess.DEVNULL)
    (run.HERE / "hello.wasm").unlink()

target = run.nginx()
# `host build` caches the component, not its native compile for `host run`'s engine:
# one unmeasured iteration per build fills that cache too (as run.py does), so the
# first round of neither build carries the compile (~1-2 CPU-s of an 8-s round).
for binary in BINS.values():
    subprocess.run([binary, "run", "hello.js", "--vus", "1", "--iterations", "1", "--quiet",
                    "-e", f"BASE_URL={run.BASE}", "--out", str(run.WORK / "warm")],
                   cwd=run.HERE, check=True, stdout=subprocess.DEVNULL)
    if RUST:
        subprocess.run([binary, "run", str(run.RUST_HELLO), "--vus", "1", "--iterations", "1", "--quiet",
                        "-e", f"BASE_URL={run.BASE}", "--out", str(run.WORK / "warm")],
                       cwd=run.HERE, check=True, stdout=subprocess.DEVNULL)
rows = {tool: [] for tool in ["k6", *BINS, *(f"{b} rust" for b in BINS if RUST)]}
try:
    for n in range(run.ROUNDS):
        for tool in rows:
            if tool == "k6":
                reqs, cpu, _ = run.throughput_round("k6", n)
            elif tool.endswith(" rust"):
                run.HOST = BINS[tool.removesuffix(" rust")]
                reqs, cpu, _ = run.throughput_round("host rust", n)
            else:
                run.HOST = BINS[tool]
                reqs, cpu, _ = run.throughput_round("host js", n)
            rows[tool].append(reqs / cpu)
            print(f"round {n} {tool}: {reqs:.0f} requests, {cpu:.2f} CPU s, {reqs / cpu:.0f}/CPU-s", flush=True)
finally:
    target.terminate()
    target.wait()

k6 = statistics.median(rows["k6"])
print("| tool | median requests per CPU-s | × k6 | rounds |")
print("| --- | ---: | ---: | --- |")
for tool, rates in rows.items():
    m = statistics.median(rates)
    print(f"| {tool} | {m:,.0f} | {m / k6:.2f} | {' / '.join(f'{r:,.0f}' for r in rates)} |")
