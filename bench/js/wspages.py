#!/usr/bin/env python3
"""Pages a WebSocket message's wake-up touches: bench/js/wsrecv.js with VUS sockets
receiving RATE pushes a second each (bench/js/wspush.py), under `host run` (each
HOST_BINS entry); once the sockets are live, the kernel's accessed bits of the host
process are cleared (`/proc/PID/clear_refs`), and WINDOW seconds later
`/proc/PID/smaps` says how much of its memory was touched since (`Referenced`).

The machine has no hardware counters (perf's dTLB and cache events are "not
supported" in this VM), so the cold-instance cost of a wake-up is shown by its working
set instead: with 200 VUs each woken RATE x WINDOW times in the window, the pages
referenced per VU are the distinct pages one VU's wake-ups touch (its own instance's,
and its share of the host's); the same run with no pushes (RATE=0 in the idle line)
gives what the window costs without messages.

Run by hand (root, for clear_refs): `HOST_BINS="before=... after=..." bench/js/wspages.py`
Environment: HOST_BINS (name=path, space-separated), VUS (200), RATE (20),
WARM (6: seconds before the window), WINDOW (1.0), ROUNDS (3), PORT (18094).
"""
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
os.environ.setdefault("PORT", "18094")
sys.path.insert(0, str(HERE))
import wsrecv  # noqa: E402  (its pusher and stop, on PORT)

VUS = int(os.environ.get("VUS", "200"))
RATE = int(os.environ.get("RATE", "20"))
WARM = float(os.environ.get("WARM", "6"))
WINDOW = float(os.environ.get("WINDOW", "1.0"))
ROUNDS = int(os.environ.get("ROUNDS", "3"))
BINS = dict(kv.split("=", 1) for kv in os.environ.get("HOST_BINS", "host=target/release/host").split())
WORK = Path(tempfile.mkdtemp(prefix="wspages-"))


def referenced(pid):
    """KiB referenced in `pid`'s mappings by kind: anonymous (the instances' linear
    memories, their stacks, the host's heap), memfd (wasm memory images shared
    copy-on-write), the host binary, other files."""
    kinds = {"anon": 0, "memfd": 0, "binary": 0, "files": 0}
    kind = "anon"
    exe = os.path.realpath(f"/proc/{pid}/exe")
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            first = line.split(" ", 1)[0]
            if "-" in first and not first.endswith(":"):
                parts = line.split(maxsplit=5)
                name = parts[5].strip() if len(parts) > 5 else ""
                if not name or name.startswith("["):
                    kind = "anon"
                elif name.startswith("/memfd:"):
                    kind = "memfd"
                elif name == exe:
                    kind = "binary"
                else:
                    kind = "files"
            elif first == "Referenced:":
                kinds[kind] += int(line.split()[1])
    return kinds


def sample(binary, rate):
    """KiB referenced (all, anonymous) in each of ROUNDS windows of one run."""
    hold = int((WARM + ROUNDS * (WINDOW + 0.5) + 4) * 1000)
    out = Path(tempfile.mkdtemp(dir=WORK))
    cmd = ["taskset", "-c", "1", binary, "run", str(HERE / "wsrecv.js"), "-e",
           f"WS_URL=ws://127.0.0.1:{wsrecv.PORT}/ws", "-e", f"HOLD_MS={hold}", "--vus", str(VUS),
           "--duration", f"{hold // 1000 + 2}s", "--quiet", "--out", str(out)]
    push = wsrecv.pusher(rate)
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    got = []
    try:
        time.sleep(WARM)
        for _ in range(ROUNDS):
            with open(f"/proc/{proc.pid}/clear_refs", "w") as f:
                f.write("1")
            time.sleep(WINDOW)
            got.append(referenced(proc.pid))
            time.sleep(0.5)
    finally:
        proc.terminate()
        proc.wait()
        wsrecv.stop(push)
    return got


def main():
    print(f"{VUS} VUs, {RATE} pushes/s each, {WINDOW} s windows after {WARM} s; "
          f"load average {open('/proc/loadavg').read().split()[0]}\n")
    print("| build | pushes/s per VU | anon KiB (each window) | memfd KiB | binary KiB | anon pages per VU |")
    print("| --- | ---: | --- | --- | --- | ---: |")
    for label, binary in BINS.items():
        # The first `host run` of the script builds and compiles its component: not
        # inside the windows.
        warm = wsrecv.pusher(0)
        try:
            subprocess.run([binary, "run", str(HERE / "wsrecv.js"), "-e", f"WS_URL=ws://127.0.0.1:{wsrecv.PORT}/ws",
                            "-e", "HOLD_MS=100", "--vus", "1", "--iterations", "1", "--quiet",
                            "--out", str(WORK / "warm")], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        finally:
            wsrecv.stop(warm)
        for rate in (0, RATE):
            got = sample(binary, rate)
            anon = sorted(k["anon"] for k in got)
            med = anon[len(anon) // 2]
            cell = lambda key: ", ".join(str(k[key]) for k in got)  # noqa: E731
            print(f"| {label} | {rate} | {cell('anon')} | {cell('memfd')} | {cell('binary')} | "
                  f"{med / VUS / 4:.1f} |", flush=True)


if __name__ == "__main__":
    main()
