#!/usr/bin/env python3
"""PSS per idle JavaScript VU: the multi-VU prototype (issue #53) beside `host run` and k6.

Run by hand: `bench/js/multivu.py` (prints a markdown table). Three tools, each at 1 and
at VUS VUs, ROUNDS rounds interleaved, medians:
- "prototype": host/examples/js_multivu (MULTIVU_BIN) over plugins/js-multivu's guest
  (GUEST), every VU a context of one QuickJS runtime in one wasm instance, looping
  multivu-idle.js (`sleep(1)`);
- "host run": today's JS route, idle.js (`export default function () { sleep(1) }`),
  one wasm instance per VU over the component's snapshot;
- "k6": idle.js under k6 (K6_BIN), `--no-usage-report`.
Then what Asyncify costs the interpreter: multivu-cpu.js (objects, strings, JSON; no
waits) on one VU for 4 s through the guest before `wasm-opt --asyncify` (PLAIN) and
after (GUEST), ROUNDS × 2 interleaved, iterations per CPU-second (user + system of the
driver, from wait4), medians.
Each process's PSS and RSS (/proc/PID/smaps_rollup) are read SAMPLE seconds (10) into a
run of DURATION seconds (14), after its VUs have all started and slept at least once;
per VU = (at VUS - at 1) / (VUS - 1). The generator is pinned to core GEN_CPU (1).

With SSPROBE (target/debug/examples/js_multivu_ss, host/examples/js_multivu_ss.rs) a
fourth tool, "stack switching": the guest before Asyncify switched by wasm stack
switching (SCHED, plugins/js-multivu/switch-probe/sched.wat), in the memory table and
the CPU table.
SCRIPT=state compares state.js (a 1,000-row table per VU) and multivu-state.js instead;
CPU=0 leaves the CPU part out.

LAYER=1 (issue #53, step 1) measures instead the k6 layer loaded in every VU's context:
for each of SCRIPTS (idle.js, fewstate.js, shared.js: a 10,000-row SharedArray, its
users.json made here when missing), the stack-switching driver on the host's wasmtime
(SS_BIN, host/examples/js_multivu_ss.rs: `--layer`, each context evaluating what
`host build` evaluates for the script) beside k6 running the same script, and `host
run` with HOST_RUN=1. MODES (default "shared bytecode") says how each context gets the
layer: `shared` (one compiled layer per instance, a closure of it per context),
`bytecode` (compiled once, read into each context), `text` (parsed per context). The
driver's PSS is read SAMPLE s after it printed `ready` (its
VUs' init code done), k6's and the host's SAMPLE s after their start; the driver also
prints QuickJS's heap by kind (JS_ComputeMemoryUsage), shown per script.

SS_BINS="NAME=PATH ..." runs several stack-switching drivers side by side (builds of two
branches: the layer each evaluates is its `host::js_module_text`).
HOST_BINS="NAME=PATH ..." adds a `host run` row per host binary (builds of two branches, the
same runtime: what the host itself holds per VU); "NAME=PATH:RUNTIME" runs that binary
with LOADTEST_JS_RUNTIME=RUNTIME (a branch's k6 layer, which the host embeds, on main's
runtime beside another host's layer and runtime).
HOST_RUNTIMES="NAME=PATH ..." adds a `host run` row per QuickJS runtime component (the
host's LOADTEST_JS_RUNTIME), e.g. main's plugins/js-runtime beside a branch's: the same
host binary, only the runtime differs. MODES="" leaves the stack-switching driver out.

Environment: VUS (1000), ROUNDS (2), HOST_BIN (target/debug/host), K6_BIN (k6),
MULTIVU_BIN (target/debug/examples/js_multivu), GUEST
(plugins/js-multivu/target/js-multivu/guest.wasm), SAMPLE, DURATION, GEN_CPU.
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from smaps import rss_pss
from users import ensure_users

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
TGT = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
VUS = int(os.environ.get("VUS", "1000"))
ROUNDS = int(os.environ.get("ROUNDS", "2"))
SAMPLE = float(os.environ.get("SAMPLE", "10"))
DURATION = int(os.environ.get("DURATION", "14"))
GEN_CPU = os.environ.get("GEN_CPU", "1")
HOST = os.environ.get("HOST_BIN", str(TGT / "debug/host"))
K6 = os.environ.get("K6_BIN", "k6")
MULTIVU = os.environ.get("MULTIVU_BIN", str(TGT / "debug/examples/js_multivu"))
GUEST = os.environ.get("GUEST", str(ROOT / "plugins/js-multivu/target/js-multivu/guest.wasm"))
PLAIN = os.environ.get("PLAIN", str(Path(GUEST).parent / "obj/guest-plain.wasm"))
SCRIPT = os.environ.get("SCRIPT", "idle")
SSPROBE = os.environ.get("SSPROBE")
SCHED = os.environ.get("SCHED", str(ROOT / "plugins/js-multivu/switch-probe/sched.wat"))
CPU = os.environ.get("CPU", "1") != "0"
LAYER = os.environ.get("LAYER") == "1"
SS = os.environ.get("SS_BIN", str(TGT / "debug/examples/js_multivu_ss"))
# SS_BINS="before=PATH after=PATH": several drivers (e.g. builds of two branches, whose
# `host::js_module_text` differs) side by side, each a tool "stack switching, NAME, layer MODE".
SS_BINS = [b.split("=", 1) for b in os.environ.get("SS_BINS", "").split()] or [["", SS]]
SCRIPTS = os.environ.get("SCRIPTS", "idle fewstate shared").split()
HOST_RUN = os.environ.get("HOST_RUN") == "1"
MODES = os.environ.get("MODES", "shared bytecode").split()
HOST_RUNTIMES = [b.split("=", 1) for b in os.environ.get("HOST_RUNTIMES", "").split()]
HOST_BINS = dict(b.split("=", 1) for b in os.environ.get("HOST_BINS", "").split())
WORK = Path(tempfile.mkdtemp(prefix="bench-multivu-"))


def command(tool, vus):
    if tool == "k6":
        return [K6, "run", "--quiet", "--no-usage-report", "--no-color", "--vus", str(vus),
                "--duration", f"{DURATION}s", f"{SCRIPT}.js"]
    if tool == "host run":
        return [HOST, "run", f"{SCRIPT}.js", "--vus", str(vus), "--duration", f"{DURATION}s",
                "--quiet", "--out", str(WORK / "out")]
    if tool == "stack switching":
        return [SSPROBE, PLAIN, SCHED, f"multivu-{SCRIPT}.js", "--vus", str(vus), "--duration", str(DURATION)]
    return [MULTIVU, GUEST, f"multivu-{SCRIPT}.js", "--vus", str(vus), "--duration", str(DURATION)]


def sample(cmd, ready=False, env=None):
    """Starts `cmd`, reads its RSS and PSS (KiB) SAMPLE s later (after it printed
    `ready` on stderr, when `ready`), waits for its end."""
    proc = subprocess.Popen(["taskset", "-c", GEN_CPU] + cmd, cwd=HERE, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    early = []
    if ready:
        for line in proc.stderr:
            early.append(line)
            if line.startswith("ready"):
                break
    time.sleep(SAMPLE)
    rss, pss = rss_pss(proc.pid)
    out, err = proc.communicate()
    err = "".join(early) + err
    if rss is None or proc.returncode != 0:
        sys.exit(f"{' '.join(cmd)} ended before it was sampled or failed ({proc.returncode}):\n{err[-2000:]}")
    return rss, pss, out.strip()


def cpu_rate(guest):
    """Iterations per CPU-second of multivu-cpu.js through `guest`, one VU, 4 s."""
    driver = [SSPROBE, PLAIN, SCHED] if guest == "ss" else [MULTIVU, guest]
    proc = subprocess.Popen(["taskset", "-c", GEN_CPU, *driver, "multivu-cpu.js", "--vus", "1",
                             "--duration", "4"], cwd=HERE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    if status != 0:
        sys.exit(f"{guest}: multivu-cpu.js failed")
    iterations = int(out.split()[3])
    return iterations / (usage.ru_utime + usage.ru_stime)


def layer_main():
    """LAYER=1: PSS per VU with the k6 layer in every context, beside k6 (and `host run`)."""
    ensure_users()
    ss_bins = dict(SS_BINS)
    tools = [f"stack switching, {n + ', ' if n else ''}layer {m}" for n, _ in SS_BINS for m in MODES]
    tools += ["k6"] + (["host run"] if HOST_RUN else [])
    runtimes = {f"host run, runtime {n}": p for n, p in HOST_RUNTIMES}
    tools += list(runtimes)
    binaries = {f"host run, host {n}": p.split(":", 1)[0] for n, p in HOST_BINS.items()}
    runtimes.update({f"host run, host {n}": p.split(":", 1)[1] for n, p in HOST_BINS.items() if ":" in p})
    tools += list(binaries)

    def env(tool):
        """The environment of `tool`: a runtime row's LOADTEST_JS_RUNTIME."""
        e = dict(os.environ)
        e.pop("LOADTEST_JS_RUNTIME", None)
        if tool in runtimes:
            e["LOADTEST_JS_RUNTIME"] = runtimes[tool]
        return e

    def cmd(tool, script, vus):
        if tool.startswith("stack"):
            mode = tool.split()[-1]
            name = tool.split(", ")[1] if tool.count(", ") == 2 else ""
            flag = [] if mode == "text" else [f"--{mode}"]
            return [ss_bins[name], PLAIN, SCHED, f"{script}.js", "--layer", *flag, "--vus", str(vus),
                    "--duration", str(DURATION)]
        if tool == "k6":
            return [K6, "run", "--quiet", "--no-usage-report", "--no-color", "--vus", str(vus),
                    "--duration", f"{DURATION}s", f"{script}.js"]
        return [binaries.get(tool, HOST), "run", f"{script}.js", "--vus", str(vus), "--duration",
                f"{DURATION}s", "--quiet", "--out", str(WORK / "out")]

    for tool in [t for t in tools if t.startswith("host run")]:
        for script in SCRIPTS:  # builds and caches each script's component
            subprocess.run([binaries.get(tool, HOST), "run", f"{script}.js", "--vus", "1", "--iterations", "1",
                            "--quiet", "--out", str(WORK / "warm")], cwd=HERE, check=True,
                           env=env(tool), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    got = {(s, t, v): [] for s in SCRIPTS for t in tools for v in (1, VUS)}
    heap = {}
    load = [open("/proc/loadavg").read().split()[:3]]
    for r in range(ROUNDS):
        for script in SCRIPTS:
            for t in tools:
                for v in (1, VUS):
                    rss, pss, out = sample(cmd(t, script, v), ready=t.startswith("stack"), env=env(t))
                    got[(script, t, v)].append((rss, pss))
                    if t.startswith("stack"):
                        heap[(script, t, v)] = out
                    print(f"round {r} {script} {t} {v} VUs: RSS {rss} KiB, PSS {pss} KiB",
                          file=sys.stderr)
    load.append(open("/proc/loadavg").read().split()[:3])
    med = statistics.median
    print(f"Load average {' '.join(load[0])} at the start, {' '.join(load[1])} at the end; "
          f"{ROUNDS} rounds, medians; sampled {SAMPLE:g} s into {DURATION} s runs "
          f"(the driver: {SAMPLE:g} s after its init).\n")
    print(f"| script | tool | PSS at 1 | PSS at {VUS} | PSS per VU | × k6 (PSS) |")
    print("| --- | --- | ---: | ---: | ---: | ---: |")
    for script in SCRIPTS:
        per = {}
        for t in tools:
            p1 = med([p for _, p in got[(script, t, 1)]])
            pn = med([p for _, p in got[(script, t, VUS)]])
            per[t] = ((pn - p1) / (VUS - 1), p1, pn)
        for t in tools:
            pv, p1, pn = per[t]
            print(f"| {script}.js | {t} | {p1 / 1024:.1f} MiB | {pn / 1024:.1f} MiB | {pv:.0f} KiB | "
                  f"{pv / per['k6'][0]:.2f} |")
    for script in SCRIPTS:
        for t in tools:
            if t.startswith("stack"):
                print(f"\n{script}.js, {t}, at {VUS} VUs: {heap.get((script, t, VUS), '')}")


def main():
    if LAYER:
        return layer_main()
    # Warm each tool once (the host's compile cache; the prototype compiles its module
    # each run, which the 1-VU baseline takes out).
    subprocess.run(command("host run", 1)[:3] + ["--vus", "1", "--iterations", "1", "--quiet",
                   "--out", str(WORK / "warm")], cwd=HERE, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    tools = ["prototype", "host run", "k6"] + (["stack switching"] if SSPROBE else [])
    got = {(t, v): [] for t in tools for v in (1, VUS)}
    notes = {}
    load = [open("/proc/loadavg").read().split()[:3]]
    for r in range(ROUNDS):
        for t in tools:
            for v in (1, VUS):
                rss, pss, out = sample(command(t, v))
                got[(t, v)].append((rss, pss))
                if t == "prototype":
                    notes[v] = out
                print(f"round {r} {t} {v} VUs: RSS {rss} KiB, PSS {pss} KiB", file=sys.stderr)
    rates = {"before Asyncify": [], "after Asyncify": []}
    if SSPROBE:
        rates["before Asyncify, stack switching"] = []
    for r in range(ROUNDS * 2 if CPU else 0):
        if r == 0:
            cpu_rate(GUEST)  # compiles and caches GUEST.cwasm
            cpu_rate(PLAIN)
        rates["before Asyncify"].append(cpu_rate(PLAIN))
        rates["after Asyncify"].append(cpu_rate(GUEST))
        if SSPROBE:
            rates["before Asyncify, stack switching"].append(cpu_rate("ss"))
    load.append(open("/proc/loadavg").read().split()[:3])
    med = lambda xs: statistics.median(xs)
    print(f"Load average {' '.join(load[0])} at the start, {' '.join(load[1])} at the end; "
          f"{ROUNDS} rounds, medians; sampled {SAMPLE:g} s into {DURATION} s runs.\n")
    print(f"| tool | PSS at 1 | PSS at {VUS} | PSS per VU | RSS per VU | × k6 (PSS) |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    per = {}
    for t in tools:
        p1 = med([p for _, p in got[(t, 1)]])
        pn = med([p for _, p in got[(t, VUS)]])
        r1 = med([r for r, _ in got[(t, 1)]])
        rn = med([r for r, _ in got[(t, VUS)]])
        per[t] = ((pn - p1) / (VUS - 1), (rn - r1) / (VUS - 1), p1, pn)
    for t in tools:
        pv, rv, p1, pn = per[t]
        print(f"| {t} | {p1 / 1024:.1f} MiB | {pn / 1024:.1f} MiB | {pv:.0f} KiB | {rv:.0f} KiB | "
              f"{pv / per['k6'][0]:.2f} |")
    print(f"\nprototype at {VUS} VUs: {notes.get(VUS, '')}")
    if not CPU:
        return
    print("\n| guest module (one VU, multivu-cpu.js) | iterations per CPU-second | × before |")
    print("| --- | ---: | ---: |")
    base = med(rates["before Asyncify"])
    for k, v in rates.items():
        print(f"| {k} | {med(v):.0f} | {med(v) / base:.2f} |")
    print("\nEach round, " + " / ".join(rates) + ": " + ", ".join(
        " / ".join(f"{x:.0f}" for x in row) for row in zip(*rates.values())))


if __name__ == "__main__":
    main()
