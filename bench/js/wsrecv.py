#!/usr/bin/env python3
"""CPU per WebSocket message received: bench/js/wsrecv.js (capacity.js's live views
alone) against bench/js/wspush.py, under `host run` (each HOST_BINS entry) and k6.

The push server runs on core 0, each tool on core 1 (taskset); CPU is the tool's own
(wait4 rusage, user + system). Each case is VUS sockets receiving RATE messages a
second each for DURATION (so VUS x RATE messages a second in all); a case's line gives
the messages the tool received (`ws_msgs_received`), the script counted
(`pushes_received`, which must equal them), CPU seconds and microseconds of CPU per
message. The idle cost of holding the sockets is measured apart (RATE=0) and printed.

Run by hand: `HOST_BINS="before=/tmp/host-before after=target/release/host" bench/js/wsrecv.py`
Environment: HOST_BINS (name=path, space-separated), K6 (a k6 binary; empty: no k6),
CASES ("1x4000 200x20": VUSxRATE, space-separated), DURATION (20), ROUNDS (1),
PORT (18092), PERF (a folder: `perf record -g` each host run there, with
HOST_PERF_MAP=1).
"""
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
PORT = int(os.environ.get("PORT", "18092"))
DURATION = int(os.environ.get("DURATION", "20"))
ROUNDS = int(os.environ.get("ROUNDS", "1"))
CASES = [tuple(int(x) for x in c.split("x")) for c in os.environ.get("CASES", "1x4000 200x20").split()]
BINS = dict(kv.split("=", 1) for kv in os.environ.get("HOST_BINS", "host=target/release/host").split())
K6 = os.environ.get("K6", "")
PERF = os.environ.get("PERF")
WORK = Path(tempfile.mkdtemp(prefix="wsrecv-"))


def pusher(rate):
    proc = subprocess.Popen(["taskset", "-c", "0", sys.executable, str(HERE / "wspush.py"), str(PORT), str(rate)],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "listening"
    return proc


def stop(proc):
    proc.terminate()
    line = proc.stdout.read().strip()
    proc.wait()
    return int(line.split()[-1]) if line.startswith("sent") else None


def measured(cmd, env=None):
    proc = subprocess.Popen(["taskset", "-c", "1", *cmd], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    err = proc.stderr.read().decode(errors="replace")
    if os.waitstatus_to_exitcode(status) != 0:
        print(f"{cmd[0]} exited {os.waitstatus_to_exitcode(status)}:\n{err[-2000:]}", file=sys.stderr)
    return usage.ru_utime + usage.ru_stime


def script_env(vus):
    return ["-e", f"WS_URL=ws://127.0.0.1:{PORT}/ws", "-e", f"HOLD_MS={DURATION * 1000}"]


def host_metric(summary, name):
    return summary["metrics"].get(name, {}).get("count", 0)


def run_host(label, binary, vus):
    out = Path(tempfile.mkdtemp(dir=WORK, prefix=f"out-{label}-{vus}-"))
    cmd = [binary, "run", str(HERE / "wsrecv.js"), *script_env(vus), "--vus", str(vus),
           "--duration", f"{DURATION}s", "--out", str(out), "--quiet"]
    env = None
    if PERF:
        Path(PERF).mkdir(parents=True, exist_ok=True)
        env = dict(os.environ, HOST_PERF_MAP="1")
        cmd = ["perf", "record", "-g", "-o", f"{PERF}/{label}-{vus}.data", "--", *cmd]
    cpu = measured(cmd, env)
    summary = json.loads(next(out.glob("*/summary.json")).read_text())
    return cpu, host_metric(summary, "ws_msgs_received"), host_metric(summary, "pushes_received")


def run_k6(vus):
    export = WORK / f"k6-{vus}.json"
    cpu = measured([K6, "run", "--quiet", "--no-usage-report", "--summary-export", str(export),
                    *script_env(vus), "--vus", str(vus), "--duration", f"{DURATION}s", str(HERE / "wsrecv.js")])
    m = json.loads(export.read_text())["metrics"]
    return cpu, m.get("ws_msgs_received", {}).get("count", 0), m.get("pushes_received", {}).get("count", 0)


def main():
    tools = [(label, lambda vus, b=b, label=label: run_host(label, b, vus)) for label, b in BINS.items()]
    if K6:
        tools.append(("k6", run_k6))
    # One unmeasured run per host binary first: the first `host run` of the script
    # builds its component and compiles it (~2.7 CPU s), which the idle run that comes
    # first would otherwise carry and the per-message figure then subtract.
    for binary in BINS.values():
        warm = pusher(0)
        try:
            measured([binary, "run", str(HERE / "wsrecv.js"), "-e", f"WS_URL=ws://127.0.0.1:{PORT}/ws",
                      "-e", "HOLD_MS=100", "--vus", "1", "--iterations", "1", "--quiet",
                      "--out", str(WORK / "warm")])
        finally:
            stop(warm)
    print(f"load average {open('/proc/loadavg').read().split()[0]}, {DURATION} s per run", flush=True)
    for n in range(ROUNDS):
        for vus, rate in CASES:
            for label, run in tools:
                idle = pusher(0)
                try:
                    idle_cpu, _, _ = run(vus)
                finally:
                    stop(idle)
                push = pusher(rate)
                try:
                    cpu, received, counted = run(vus)
                finally:
                    sent = stop(push)
                per = (cpu - idle_cpu) / received * 1e6 if received else float("nan")
                print(f"round {n} {vus}x{rate} {label}: sent {sent}, received {received}, counted {counted}, "
                      f"CPU {cpu:.2f} s (idle {idle_cpu:.2f}), {per:.1f} us/message", flush=True)


if __name__ == "__main__":
    main()
