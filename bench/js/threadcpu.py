#!/usr/bin/env python3
"""A command's CPU by thread: runs it (on core 1, as bench/k6-parity/run.py's
`measured` does), polls /proc/<pid>/task/* every POLL seconds while it runs and prints,
per thread name (threads of one name summed: k6's Go threads, tokio's workers), the
CPU seconds (user + system), the context switches (voluntary / involuntary) and the
threads' count; then the process's whole CPU from wait4 (user and system apart, and its
context switches), so the polled share that a thread's exit between two polls lost is
visible as the difference.

Why: capacity's CPU per pushed message is what issue #53's goal 2 measures, and which of
the host's threads spends it (the VU thread that wakes per message, tokio's workers,
the epoch ticker, the metrics sink) says whether the cost is the wake-up itself or
work beside it.

Run by hand: `bench/js/threadcpu.py <command> [args...]`
With TIMELINE=1 it also prints the process's CPU in each second of the run (user +
system, from /proc/<pid>/stat), so a start-up or an end that costs more than the steady
part shows apart from it.
Environment: POLL (0.2 s), CORES (taskset's list, "1"), TIMELINE (0), THREADCPU_OUT (a file for the
table instead of stdout; bench/k6-parity/capacity_ab.py's THREADS=1 sets it).
"""
import os
import subprocess
import sys
import threading
import time
from collections import defaultdict

POLL = float(os.environ.get("POLL", "0.2"))
CORES = os.environ.get("CORES", "1")
TICK = os.sysconf("SC_CLK_TCK")


def tasks(pid):
    """{tid: (name, cpu seconds, voluntary, involuntary)} of pid's threads now."""
    out = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        try:
            stat = open(f"/proc/{pid}/task/{tid}/stat").read()
            status = open(f"/proc/{pid}/task/{tid}/status").read()
        except OSError:
            continue
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2:].split()
        cpu = (int(fields[11]) + int(fields[12])) / TICK
        switches = {k: int(v) for k, v in (line.split(":") for line in status.splitlines()
                                           if line.startswith(("voluntary_ctxt", "nonvoluntary_ctxt")))}
        out[tid] = (name, cpu, switches.get("voluntary_ctxt_switches", 0),
                    switches.get("nonvoluntary_ctxt_switches", 0))
    return out


def main():
    proc = subprocess.Popen(["taskset", "-c", CORES, *sys.argv[1:]], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    last = {}
    timeline = []  # (seconds since the start, the process's CPU seconds so far)
    done = threading.Event()
    started = time.monotonic()

    def poll():
        while not done.is_set():
            last.update(tasks(proc.pid))
            try:
                fields = open(f"/proc/{proc.pid}/stat").read().rsplit(")", 1)[1].split()
                timeline.append((time.monotonic() - started, (int(fields[11]) + int(fields[12])) / TICK))
            except (OSError, IndexError):
                pass
            time.sleep(POLL)

    poller = threading.Thread(target=poll, daemon=True)
    poller.start()
    _, status, usage = os.wait4(proc.pid, 0)
    done.set()
    poller.join()
    err = proc.stderr.read().decode(errors="replace")
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        print(f"exit {code}:\n{err[-2000:]}", file=sys.stderr)
    by_name = defaultdict(lambda: [0.0, 0, 0, 0])
    for name, cpu, vol, invol in last.values():
        row = by_name[name]
        row[0] += cpu
        row[1] += vol
        row[2] += invol
        row[3] += 1
    whole = usage.ru_utime + usage.ru_stime
    polled = sum(r[0] for r in by_name.values())
    lines = [f"{'thread':<20} {'CPU s':>8} {'share':>6} {'vol cs':>9} {'invol cs':>9} {'threads':>7}"]
    for name, (cpu, vol, invol, count) in sorted(by_name.items(), key=lambda kv: -kv[1][0]):
        lines.append(f"{name:<20} {cpu:>8.2f} {cpu / whole if whole else 0:>6.1%} {vol:>9} {invol:>9} {count:>7}")
    lines.append(f"polled {polled:.2f} s of the process's {whole:.2f} s (wait4: user "
                 f"{usage.ru_utime:.2f}, system {usage.ru_stime:.2f}; switches voluntary "
                 f"{usage.ru_nvcsw}, involuntary {usage.ru_nivcsw})")
    if os.environ.get("TIMELINE") == "1" and timeline:
        per_second, mark, before = [], 1.0, 0.0
        for at, cpu in timeline:
            if at >= mark:
                per_second.append(cpu - before)
                before, mark = cpu, mark + 1.0
        per_second.append(whole - before)
        lines.append("CPU per second of the run (s): " + " ".join(f"{c:.2f}" for c in per_second))
    out = os.environ.get("THREADCPU_OUT")
    if out:
        with open(out, "w") as f:
            f.write("\n".join(lines) + "\n")
    else:
        print("\n".join(lines))
    sys.exit(code)


if __name__ == "__main__":
    main()
