#!/usr/bin/env python3
"""capacity.js under two host builds (and k6), rounds interleaved, a fresh demo-target
on core 0 per run and the tool on core 1: CPU seconds (wait4 rusage), requests,
WebSocket messages received and pushes counted by the script, and CPU per message.
A shorter, A/B form of `run.py capacity` (which runs each tool once and rewrites
results/scenarios.md).

Run by hand: `BEFORE=<host> AFTER=<host> [K6=<k6>] bench/k6-parity/capacity_ab.py`
Environment: BEFORE, AFTER (or HOSTS="name=path ...": any number of host builds; an
entry `name=path@script` runs that build on another script: a variant of capacity.js
(the same `-e` values), or plugins' capacity.wasm, which runs with capacity.toml at
DURATION and no lead or tail, so its counts are its own), K6 (optional), DEMO_TARGET_BIN (demo-target), DURATION (30),
ROUNDS (2), PORT (18090), LEAD_MS (2000), TAIL_MS (6000), PACED (1), THREADS (0; 1 runs
each host build through bench/js/threadcpu.py and prints its CPU by thread before the
round's line: the poller's own CPU is then in the host's, so use it for the split, not
for the ratios).

The counts are made comparable between the tools (results/js.md, branch count53): the
script seeds each VU's pauses with its slot in its scenario, so both tools' editors
draw the same pauses; and the sockets start LEAD_MS before the readers and editors and
are held TAIL_MS past the end of the DURATION, longer than an editor's last iteration
(at most 3 x 1.5 s plus its requests), so every change is pushed to all the sockets:
messages = the subscription answers + changes x sockets, whatever each tool's start-up
speed. With PACED=1 a pause is measured from when it was due, not from the step's
response, so the steps that fit in the DURATION do not hang on each tool's latency on
a busy machine either. The sockets' idle LEAD_MS and TAIL_MS are in every tool's CPU
alike. Each line also says whether every push the server sent (its
demo_ws_pushes_total) reached the script's counter, how many sockets the server cut off
for a full push queue (demo_ws_slow_disconnects_total), and each tool's requests, messages
and changes as a ratio of the first tool's (k6's when K6 is set).
"""
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run  # noqa: E402

DURATION = int(os.environ.get("DURATION", "30"))
ROUNDS = int(os.environ.get("ROUNDS", "2"))
LEAD_MS = int(os.environ.get("LEAD_MS", "2000"))
TAIL_MS = int(os.environ.get("TAIL_MS", "6000"))
ENV = {"BROWSE_VUS": "80", "WRITE_VUS": "20", "SOCKET_VUS": "200", "PAUSE_MIN_MS": "500",
       "PAUSE_MAX_MS": "1500", "DURATION": f"{DURATION}s", "LEAD_MS": str(LEAD_MS),
       "PACED": os.environ.get("PACED", "1"), "HOLD_MS": str(LEAD_MS + DURATION * 1000 + TAIL_MS),
       "BASE_URL": run.BASE}
ARGS = [a for k, v in ENV.items() for a in ("-e", f"{k}={v}")]
WORK = Path(tempfile.mkdtemp(prefix="capab-"))
SCRIPT = str(run.HERE / "capacity.js")


# The Rust plugin's load (capacity.toml) at DURATION, written once for every round.
WASM_CONFIG = WORK / "capacity.toml"
WASM_CONFIG.write_text((run.HERE / "capacity.toml").read_text().replace('"25s"', f'"{DURATION}s"'))
THREADS = os.environ.get("THREADS") == "1"
THREADCPU = Path(__file__).resolve().parent.parent / "js" / "threadcpu.py"


def host(binary, script=SCRIPT):
    out = Path(tempfile.mkdtemp(dir=WORK))
    if script.endswith(".wasm"):
        cmd = [binary, "run", script, "--config", str(WASM_CONFIG), "-e", f"BASE_URL={run.BASE}",
               "--out", str(out), "--quiet"]
    else:
        cmd = [binary, "run", script, *ARGS, "--out", str(out), "--quiet"]
    if THREADS:
        os.environ["THREADCPU_OUT"] = str(out / "threads.txt")
        cmd = [sys.executable, str(THREADCPU), *cmd]
    _, cpu, rss, err = run.measured(cmd)
    if THREADS:
        print((out / "threads.txt").read_text(), end="", flush=True)
    m = json.loads(next(out.glob("*/summary.json")).read_text())["metrics"]
    c = lambda n: int(m.get(n, {}).get("count", 0))  # noqa: E731
    return cpu, c("http_reqs"), c("ws_msgs_received"), c("pushes_received"), writes(c)


def writes(c):
    """The editors' changes, each pushed to every socket subscribed at that moment."""
    return c("notes_created") + c("notes_updated") + c("notes_deleted")


def k6():
    export = WORK / "k6.json"
    _, cpu, rss, err = run.measured([os.environ["K6"], "run", "--quiet", "--no-usage-report",
                                     "--summary-export", str(export), *ARGS, SCRIPT])
    m = json.loads(export.read_text())["metrics"]
    c = lambda n: int(m.get(n, {}).get("count", 0))  # noqa: E731
    return cpu, c("http_reqs"), c("ws_msgs_received"), c("pushes_received"), writes(c)


# HOSTS="name=path ..." compares any number of host builds; BEFORE and AFTER are two.
HOSTS = [kv.split("=", 1) for kv in os.environ.get("HOSTS", "").split()] or [
    ("before", os.environ["BEFORE"]), ("after", os.environ["AFTER"])]
SCRIPTS = {}
for i, (name, binary) in enumerate(HOSTS):
    binary, _, script = binary.partition("@")
    HOSTS[i] = (name, binary)
    SCRIPTS[name] = str(Path(script).resolve()) if script else SCRIPT
# Each build runs through a wrapper that gives it a JS build cache of its own: two builds
# with different runtimes sharing one would rebuild the script inside timed runs.
for i, (name, binary) in enumerate(HOSTS):
    wrapper = WORK / f"{name}.sh"
    wrapper.write_text(f'#!/bin/sh\nHOST_CACHE_DIR="{WORK / ("cache-" + name)}" exec "{binary}" "$@"\n')
    wrapper.chmod(0o755)
    HOSTS[i] = (name, str(wrapper))
tools = [(name, lambda b=binary, s=SCRIPTS[name]: host(b, s)) for name, binary in HOSTS]
if os.environ.get("K6"):
    tools.insert(0, ("k6", k6))
for name, binary in HOSTS:
    run.warm_host_js(binary, SCRIPTS[name], WORK)  # a .wasm's native compile is cached too
print(f"load average {open('/proc/loadavg').read().split()[0]}, {DURATION} s per run "
      f"(sockets {LEAD_MS} ms before and {TAIL_MS} ms after)", flush=True)
for n in range(ROUNDS):
    first = None
    for label, fn in tools:
        target = run.Target([])
        try:
            cpu, reqs, received, counted, changes = fn()
            served = target.metrics()
            sent = sum(v for k, v in served.items() if k.startswith("demo_ws_pushes_total"))
            # A socket whose push queue filled (its VU fell behind) is cut off by the server.
            slow = sum(v for k, v in served.items() if k.startswith("demo_ws_slow_disconnects_total"))
        finally:
            target.stop()
        first = first or (reqs, received, changes)
        vs = (f" ({first[0] and reqs / first[0]:.4f} / {first[1] and received / first[1]:.4f} / "
              f"{first[2] and changes / first[2]:.4f} x {tools[0][0]}'s requests / messages / changes)")
        print(f"round {n} {label}: CPU {cpu:.2f} s, requests {reqs}, ws messages {received}, "
              f"pushes counted {counted} of {sent:.0f} sent, sockets cut off as slow {slow:.0f}, "
              f"changes {changes} "
              f"({counted / changes if changes else float('nan'):.1f} pushes each), "
              f"requests per CPU-s {reqs / cpu:.0f}, "
              f"{cpu / received * 1e6 if received else float('nan'):.1f} us CPU per message{vs}", flush=True)
