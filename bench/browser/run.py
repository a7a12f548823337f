#!/usr/bin/env python3
"""The same k6 browser script (signin.js) under k6 1.1.0 and under `host run`.

Run by hand: `bench/browser/run.py` (prints a Markdown table to paste into
results/browser.md). Needs Debian's `chromium`, k6 1.1.0 (K6=/path/to/k6) and the host
and demo target built (`cargo build -p host -p demo-target`; HOST_BIN and DEMO_BIN name
them, target/debug by default).

For each tool and each VU count (VUS_LIST, "10 50"), one run of signin.js with ITERS
iterations per VU (per-vu-iterations) against the demo target on 127.0.0.1:PORT:
- memory: PSS of the tool's whole process tree (the tool, its browsers and every
  helper they start: zygotes, renderers, GPU and network services), the sum of
  /proc/PID/smaps_rollup over the tree every SAMPLE seconds; peak and mean reported;
- CPU: user + system seconds of the whole tree, from getrusage(RUSAGE_CHILDREN) around
  the run. This script makes itself a child subreaper, so a helper whose parent exits
  first is still reaped here and its CPU counted;
- iterations: completed as the tool counts them, the sign-ins the demo target recorded
  (its /metrics), and failed checks; CPU per iteration is the tree's CPU-seconds over
  the completed iterations;
- processes left: any of the tool's processes still alive 5 s after it exited (then
  killed);
- a tool that brings the machine under MIN_AVAILABLE_MIB (3072) of available memory
  is stopped (the machine is shared), and its row says so.

Both tools get K6_BROWSER_EXECUTABLE_PATH=/usr/bin/chromium and
K6_BROWSER_ARGS=no-sandbox (as root Chromium's sandbox will not start), headless.
Environment: VUS_LIST ("10 50"), ITERS (5), PORT (18095), SAMPLE (0.5),
HOST_BIN, DEMO_BIN, K6 (k6), CHROMIUM (/usr/bin/chromium), TOOLS ("k6 host"),
HOST_BROWSER_ARGS (the host's K6_BROWSER_ARGS, "no-sandbox": to try Chromium switches).
"""

import ctypes
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
TARGET = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
HOST = os.environ.get("HOST_BIN", str(TARGET / "debug/host"))
DEMO = os.environ.get("DEMO_BIN", str(TARGET / "debug/demo-target"))
K6 = os.environ.get("K6", "k6")
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
PORT = int(os.environ.get("PORT", "18095"))
ITERS = int(os.environ.get("ITERS", "5"))
SAMPLE = float(os.environ.get("SAMPLE", "0.5"))
VUS_LIST = [int(v) for v in os.environ.get("VUS_LIST", "10 50").split()]
MIN_AVAILABLE_MIB = int(os.environ.get("MIN_AVAILABLE_MIB", "3072"))
TOOLS = os.environ.get("TOOLS", "k6 host").split()
BASE = f"http://127.0.0.1:{PORT}"
WORK = Path(tempfile.mkdtemp(prefix="bench-browser-"))
PR_SET_CHILD_SUBREAPER = 36


def children_map():
    """Parent pid → child pids, from /proc."""
    kids = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = open(f"/proc/{entry}/stat").read()
        except OSError:
            continue
        # The command name may hold spaces and parentheses: fields follow the last ')'.
        ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        kids.setdefault(ppid, []).append(int(entry))
    return kids


def tree(root, skip=()):
    """`root` and every descendant of it, less the subtrees of `skip`."""
    kids = children_map()
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        if pid in skip:
            continue
        out.append(pid)
        todo.extend(kids.get(pid, []))
    return out


def kind(pid):
    """What a process of the tree is: the tool itself, the browser's main process, or
    a Chromium helper by its --type (renderer, gpu-process, utility, zygote)."""
    try:
        # Chromium rewrites its command line as one string: split on spaces too.
        raw = open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\0", b" ")
    except OSError:
        return "gone"
    args = raw.decode(errors="replace").split()
    for a in args:
        if a.startswith("--type="):
            t = a[len("--type="):]
            if t == "utility":
                sub = next((x for x in args if x.startswith("--utility-sub-type=")), "")
                return "utility " + sub.rsplit(".", 1)[-1] if sub else "utility"
            return t
    name = os.path.basename(args[0]) if args else "?"
    return "browser" if "chrom" in name else name


def pss_by_pid(pids):
    out = {}
    for pid in pids:
        try:
            for line in open(f"/proc/{pid}/smaps_rollup"):
                if line.startswith("Pss:"):
                    out[pid] = int(line.split()[1])
                    break
        except OSError:
            pass  # ended between the listing and the read
    return out


def breakdown(by_pid):
    """PSS (KiB) and count by process kind."""
    kinds = {}
    for pid, kib in by_pid.items():
        k = kind(pid)
        total, n = kinds.get(k, (0, 0))
        kinds[k] = (total + kib, n + 1)
    return kinds


def mem_available_kib():
    for line in open("/proc/meminfo"):
        if line.startswith("MemAvailable:"):
            return int(line.split()[1])
    return 0


def demo_logins():
    with urllib.request.urlopen(BASE + "/metrics", timeout=5) as r:
        for line in r.read().decode().splitlines():
            if line.startswith("demo_survey_logins_total "):
                return int(float(line.split()[1]))
    sys.exit("the demo target has no demo_survey_logins_total")


def start_demo():
    proc = subprocess.Popen([DEMO, "--listen", f"127.0.0.1:{PORT}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(100):
        try:
            demo_logins()
            return proc
        except OSError:
            time.sleep(0.1)
    sys.exit("the demo target did not start")


def command(tool, vus, out):
    env = ["-e", f"BASE={BASE}", "-e", f"VUS={vus}", "-e", f"ITERS={ITERS}"]
    if tool == "k6":
        return [K6, "run", "--quiet", "--no-usage-report", "--no-color", *env,
                "--summary-export", str(out / "k6.json"), "signin.js"]
    return [HOST, "run", "signin.js", *env, "--quiet", "--out", str(out)]


def counts(tool, out):
    """(iterations completed, checks failed) as the tool reported them."""
    if tool == "k6":
        m = json.loads((out / "k6.json").read_text())["metrics"]
        return int(m["iterations"]["count"]), int(m.get("checks", {}).get("fails", 0))
    summary = json.loads(next(out.glob("*/summary.json")).read_text())
    its = int(summary["metrics"].get("iterations", {}).get("count", 0))
    fails = sum(int(c["fails"]) for c in summary.get("checks", []))
    return its, fails


def reap_orphans():
    """Reaps helpers reparented to this subreaper that have exited."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def run(tool, vus, demo):
    out = WORK / f"{tool}-{vus}"
    out.mkdir()
    args = os.environ.get("HOST_BROWSER_ARGS", "no-sandbox") if tool == "host" else "no-sandbox"
    env = dict(os.environ, K6_BROWSER_EXECUTABLE_PATH=CHROMIUM, K6_BROWSER_ARGS=args,
               K6_BROWSER_HEADLESS="true")
    logins0 = demo_logins()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    proc = subprocess.Popen(command(tool, vus, out), cwd=HERE, env=env,
                            stdout=open(out / "stdout.txt", "w"), stderr=subprocess.STDOUT)
    samples, peak_procs, peak_kinds = [], 0, {}
    stop = threading.Event()

    aborted = []

    def sampler():
        nonlocal peak_procs
        while not stop.is_set():
            pids = tree(os.getpid(), skip={demo.pid})
            pids = [p for p in pids if p != os.getpid()]
            peak_procs = max(peak_procs, len(pids))
            by_pid = pss_by_pid(pids)
            total = sum(by_pid.values())
            if total > max(samples or [0]):
                peak_kinds.clear()
                peak_kinds.update(breakdown(by_pid))
            samples.append(total)
            # The machine is shared: a tool that would exhaust it is stopped, and the
            # row says so, rather than the kernel's OOM killer picking a neighbour.
            if mem_available_kib() < MIN_AVAILABLE_MIB * 1024:
                aborted.append(f"stopped: under {MIN_AVAILABLE_MIB} MiB left on the machine")
                for pid in pids:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except OSError:
                        pass
                return
            stop.wait(SAMPLE)

    t = threading.Thread(target=sampler)
    t.start()
    code = proc.wait()
    wall = time.monotonic() - started
    stop.set()
    t.join()
    # What the tool left: its processes still alive 5 s later (reparented here).
    left = []
    for _ in range(50):
        reap_orphans()
        left = [p for p in tree(os.getpid(), skip={demo.pid}) if p != os.getpid()]
        if not left:
            break
        time.sleep(0.1)
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    time.sleep(0.2)
    reap_orphans()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    its, fails = counts(tool, out) if code in (0, 99) else (0, 0)
    if code not in (0, 99):
        print((out / "stdout.txt").read_text()[-3000:], file=sys.stderr)
    return {
        "tool": tool, "vus": vus, "exit": code, "wall": wall, "cpu": cpu,
        "iterations": its, "planned": vus * ITERS, "check_fails": fails,
        "signins": demo_logins() - logins0, "peak_pss": max(samples or [0]),
        "mean_pss": sum(samples) / max(len(samples), 1), "peak_procs": peak_procs,
        "left": len(left), "aborted": "; ".join(aborted), "peak_kinds": peak_kinds,
    }


def mib(kib):
    return f"{kib / 1024:,.0f}"


def main():
    for need in (HOST, DEMO, CHROMIUM):
        if not Path(need).exists():
            sys.exit(f"missing {need}: cargo build -p host -p demo-target; apt-get install chromium")
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        sys.exit("prctl(PR_SET_CHILD_SUBREAPER) failed")
    # The host builds the script once; that build (cached) is not part of the runs.
    subprocess.run([HOST, "build", str(HERE / "signin.js")], cwd=HERE, check=True,
                   stdout=subprocess.DEVNULL)
    (HERE / "signin.wasm").unlink(missing_ok=True)
    load = open("/proc/loadavg").read().split()[:3]
    demo = start_demo()
    rows = []
    try:
        for vus in VUS_LIST:
            for tool in TOOLS:
                r = run(tool, vus, demo)
                rows.append(r)
                print(json.dumps(r), file=sys.stderr)
    finally:
        demo.terminate()
        demo.wait()
    print(f"date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; "
          f"load average before: {' '.join(load)}; ITERS={ITERS} per VU")
    print()
    print("| tool | VUs | iterations (planned) | sign-ins seen by the server | failed checks "
          "| wall s | peak PSS MiB | mean PSS MiB | processes (peak) | CPU s | CPU s / iteration "
          "| left behind |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        per = r["cpu"] / r["iterations"] if r["iterations"] else float("nan")
        print(f"| {r['tool']} | {r['vus']} | {r['iterations']} ({r['planned']}) | {r['signins']} "
              f"| {r['check_fails']} | {r['wall']:.1f} | {mib(r['peak_pss'])} | "
              f"{mib(r['mean_pss'])} | {r['peak_procs']} | {r['cpu']:.1f} | {per:.2f} | "
              f"{r['left']}{' (' + r['aborted'] + ')' if r['aborted'] else ''} |")
    print()
    print("At each run's peak, PSS by process kind (MiB, and how many):")
    print()
    for r in rows:
        parts = sorted(r["peak_kinds"].items(), key=lambda kv: -kv[1][0])
        shown = ", ".join(f"{k} {mib(v[0])} ({v[1]})" for k, v in parts)
        print(f"- {r['tool']}, {r['vus']} VUs: {shown}")
    print()
    by = {(r["tool"], r["vus"]): r for r in rows}
    for vus in VUS_LIST:
        k, h = by.get(("k6", vus)), by.get(("host", vus))
        if not (k and h and k["iterations"] and h["iterations"]):
            continue
        print(f"- {vus} VUs: host/k6 peak PSS {h['peak_pss'] / k['peak_pss']:.2f}, mean PSS "
              f"{h['mean_pss'] / k['mean_pss']:.2f}, CPU per iteration "
              f"{(h['cpu'] / h['iterations']) / (k['cpu'] / k['iterations']):.2f}")


if __name__ == "__main__":
    main()
